"""What a replay returns: ``Replay``, and its records, one per thing that happened.

- ``ModelCall``: one model call, everything about it in one record: what the
  engine counted when it started, what the provider read and answered (the
  logged reply, the logged usage), and, once priced (``cost.price``), what the
  prompt cache read and wrote and the dollars;
- ``SummaryCall``: one summary call (what it read, what it wrote, who wrote it);
- ``ContextLimit``: one ``context.limit`` the engine raised, and what answering it did;
- ``LogCompaction``: one compaction the log itself holds, as the replay made it.

Each is built once, where it happens (``driver.Replayer``), and never changed:
pricing gives new records. They read as mappings too (``call["read"]``,
``dict(call)``). What a sweep makes of a ``Replay`` (its rows) is
``convlab.tuning.measures``'; a ``Replay`` says what happened, it scores nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..engine import Session
    from .fit import Fit

__all__ = ["Replay", "ModelCall", "SummaryCall", "ContextLimit", "LogCompaction", "Figures"]


@functools.cache
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


class _Record(Mapping[str, Any]):
    """A frozen record that reads as a read-only mapping of its fields too (``call["read"]``,
    ``dict(call)``, equal to a dict of the same items), as the dicts a replay recorded before."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key not in _names(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_names(type(self)))

    def __len__(self) -> int:
        return len(_names(type(self)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in _names(type(self)))})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ModelCall(_Record):
    """One model call of a replay (summary calls are ``SummaryCall``s).

    When it started, the engine's side: ``call_id``, ``count`` (the engine's
    count of what the call reads), ``first_call`` (the turn's first),
    ``idle_for`` (how long the session had been idle), ``checked`` (the
    engine checked it against its config: a held call runs again unchecked),
    ``time`` (the clock) and ``head`` (the last message it reads).

    What the provider read and answered (``ReplayLLM``): ``reply`` (the
    imported id of the logged reply it gave), ``applies`` (the logged reply
    still answers what the model read), ``read`` (the input tokens: the log's
    usage where it applies, else ``exact + overhead``), ``exact`` (the
    transcript it read, o200k_base), ``overhead`` (``read - exact``: observed
    where the log's usage applies, else what the log's fit says a call on this
    history reads beyond its transcript, ``convlab.replaying.fit``; below 0
    only for a provider whose tokenizer counts fewer tokens than o200k_base), ``logged`` (the log's input
    tokens, or None), ``refused`` (the provider refused it as too long: it
    read nothing), ``whole`` (the file holds all the history the log's usage
    counts).

    ``limit``: the ``context.limit`` this call raised, as an index into
    ``Replay.limits`` (the call the engine held before it ran, or the call the
    provider refused: the limit's ``call``), None when it raised none.

    What it cost, once priced (``cost.price``; None before, or on a replay not
    priced): ``cached`` and ``cache_write`` (the prompt cache predicted),
    ``logged_cached`` (the log's cache read where its usage applies),
    ``output`` (the logged reply's output tokens) and ``usd`` (None without a
    model). A refused call costs 0 of each. ``cache_alive``: the cache still
    held what the previous call of its model read (the time since that call
    within the cache's lifetime; None for a provider with no cache rule, or
    the first call). ``miss_usd``: what it paid beyond reading all its input
    from the cache (its writes and fresh input against cached reads; None
    without a model): after a compaction, what rewriting the prefix cost.
    """

    call_id: str
    count: int
    first_call: bool
    idle_for: float | None
    checked: bool
    time: float
    head: str | None
    reply: str | None
    applies: bool
    read: int
    exact: int
    overhead: int
    logged: int | None
    refused: bool
    whole: bool
    limit: int | None = None
    cached: int | None = None
    cache_write: int | None = None
    logged_cached: int | None = None
    output: int | None = None
    usd: float | None = None
    cache_alive: bool | None = None
    miss_usd: float | None = None

    @property
    def priced(self) -> bool:
        """Whether ``cost.price`` gave it its cache figures."""
        return self.cached is not None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SummaryCall(_Record):
    """One summary call: ``read`` (the input tokens it sent: with ``shared``, the agent's hidden prompt
    and what the log's fit says its messages read, as a model call's; else their exact count),
    ``refused`` (refused as too long, by the window or by the summarizer, whose context may be smaller:
    it read nothing), ``failed`` (the summarizer failed it, an error of the provider's: it read nothing),
    ``output`` (the summary's tokens), ``stand_in`` (the replay wrote the summary itself: no summarizer,
    or the summarizer gave none). A refused or failed call is in no sum of a row: it reads, caches and
    costs nothing (``answered``: neither).

    Where it ran, for the prompt cache: ``time`` (the clock), ``head`` (the last message it
    summarized, when what it sent is the session's path from its root to there, then the prompt: the
    prefix the session's own calls read; None when it is not), ``reply`` (the logged reply the
    session's next call gets: whose log root and model it reads under), ``shared`` (it was sent as
    the engine sends it, with the agent's system prompt and tools; False: bare, the summary prompt
    and messages alone, ``Options.summary_request``), ``kind`` (``"summary"``, or ``"verify"``: a
    compaction's second pass, as Gemini CLI's self-check, which the replay prices but does not run), ``call``
    (1-based index of the model call it came before: the held call; one past the last when none came after),
    ``exact`` (the exact count of what it sent, o200k_base) and ``prompt`` (of its prompt alone).

    Once priced (``cost.price``): ``cached`` and ``cache_write`` (what the prompt cache read and wrote
    for it: a shared request on the session's model reads the session's warm prefix; a bare one, or
    one on another model, reads nothing cached; a refused or failed one, 0 each) and ``usd`` (None without a
    model; $0 for a refused or failed one: no provider bills a call it refused or failed)."""

    read: int
    refused: bool
    output: int = 0
    stand_in: bool = False
    usd: float | None = None
    time: float | None = None
    head: str | None = None
    reply: str | None = None
    shared: bool = False
    kind: str = "summary"
    call: int | None = None
    exact: int = 0
    prompt: int = 0
    cached: int | None = None
    cache_write: int | None = None
    failed: bool = False

    @property
    def answered(self) -> bool:
        """The provider answered it (neither refused nor failed): a call a row's figures sum."""
        return not (self.refused or self.failed)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ContextLimit(_Record):
    """One ``context.limit``: ``reason`` (full, idle, overflow), ``strategy``, ``tokens`` (the count),
    ``call`` (1-based index of the call it holds: the one that runs after it, or for an overflow the one
    the provider refused), ``first_call`` and ``idle_for`` (as the call's), ``worker`` (the repr of the
    worker that answered it, None for the engine's proposal), ``replaced`` (the answer rewrote the
    history) and ``summary_tokens`` (the exact length of the summary it recorded; None for none)."""

    reason: str
    strategy: str | None
    tokens: int
    call: int
    first_call: bool
    idle_for: float | None
    worker: str | None
    replaced: bool = False
    summary_tokens: int | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class LogCompaction(_Record):
    """A compaction the log itself holds (a summary root), replayed as ``context.replace``: ``id`` (the
    summary's session id) and ``call`` (1-based index of the first model call that reads the compacted
    history; one past the last call when none does)."""

    id: str
    call: int


class Figures(NamedTuple):
    """What one model call read and cost: ``read`` (its input tokens, cached ones included), ``cached``
    and ``cache_write`` (the prompt cache predicted), ``usd`` (NaN when the replay was not priced)."""

    read: int
    cached: int
    cache_write: int
    usd: float


@dataclass
class Replay:
    """What ``convlab.replay`` returns: the Session that re-enacted the log, and what happened.

    - ``session``: the ``Session`` (its tree, events, turns, ``path()``, ...);
    - ``map``: ``{imported id: session id}``; after a strategy's
      ``context.replace`` a kept message maps to its copy and the replaced
      head to the new head (where the log goes on);
    - ``stale``: imported ids of the logged replies that no longer apply
      (answered on a strategy's new history, or never given because their
      turn failed);
    - ``lost``: imported ids of the logged replies never given: their turn
      ended before them (it failed: the provider refused a call as too long
      and nothing made room; or a worker ended it). Also in ``stale``;
    - ``calls``: one ``ModelCall`` per model call made (summary calls not included;
      a call the provider refused as too long is one, ``refused``, and so is
      the same call run again after room was made; ``answered()`` leaves the
      refused ones out); priced when the replay was (``replay(...,
      model=...)``, or a log whose own model has a cache rule);
    - ``summary_calls``: one ``SummaryCall`` per summary call;
    - ``limits``: one ``ContextLimit`` per ``context.limit``;
    - ``compactions``: one ``LogCompaction`` per compaction the log itself holds.
    """

    session: Session
    map: dict[str, str]
    stale: list[str]
    calls: list[ModelCall]
    limits: list[ContextLimit]
    conversation_id: str = ""
    lost: list[str] = field(default_factory=list)
    compactions: list[LogCompaction] = field(default_factory=list)
    summary_calls: list[SummaryCall] = field(default_factory=list)
    #: whether its calls carry dollars (a model was given)
    priced: bool = False
    #: what the log says its calls read beyond the transcript (``convlab.replaying.fit``); None: not known
    fit: Fit | None = None

    def __repr__(self) -> str:
        return (f"Replay(conversation={self.conversation_id!r}, calls={len(self.calls)}, "
                f"limits={len(self.limits)}, stale={len(self.stale)}, head={self.session.head!r})")

    def answered(self) -> list[ModelCall]:
        """The model calls the provider answered (``calls`` less the ones it refused as too long): the
        calls every figure of a sweep's row sums. A refused call reads nothing and costs nothing."""
        return [c for c in self.calls if not c.refused]

    def figures(self) -> dict[str, Figures]:
        """What each answered call read and cost, by the logged reply it gave: what a sweep counts a
        config's ``lost`` calls at when this is the baseline (``convlab.tuning.measures``).

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replaying.driver import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9}}, "u1")
        >>> t.head = "a1"
        >>> replay(Conversation(t, id="c"), prompt_cache=None).figures()
        {'a1': Figures(read=9, cached=0, cache_write=0, usd=nan)}
        """
        return {c.reply: Figures(c.read, c.cached or 0, c.cache_write or 0,
                                 (c.usd or 0.0) if self.priced else math.nan)
                for c in self.answered() if c.reply is not None}

    def hidden_overhead(self) -> dict[str, int]:
        """The hidden prompt the log shows, as a sweep's ``overhead`` and ``overhead_calls``: the
        fitted ``hidden`` of the log's calls (``Fit.hidden_prompt``: per log root and model, the
        logged input as ``hidden + ratio * exact``, weighted by calls, over the histories the file
        holds whole) and how many calls it rests on. Not the logged input less the exact count: that
        holds the provider's tokenizer surplus too, which grows with the history (42k against a
        fitted 26k on a real Claude Code session on Haiku). Without a fit, the median of that
        difference over the calls whose logged usage applies and whose history is whole; 0 and 0
        when the log has no usage.

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replaying.driver import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9, "output_tokens": 1}}, "u1")
        >>> t.head = "a1"
        >>> replay(Conversation(t, id="c")).hidden_overhead()  # 9 logged, 1 exact ("hi")
        {'overhead': 8, 'overhead_calls': 1}
        """
        fitted = self.fit.hidden_prompt() if self.fit is not None else None
        if fitted is not None:
            return {"overhead": fitted[0], "overhead_calls": fitted[1]}
        observed = [c for c in self.calls if c.applies and c.logged is not None]
        whole = [c.overhead for c in observed if c.whole]
        rests_on = whole or [c.overhead for c in observed]  # the calls whose usage counts lost messages, only if no other
        return {"overhead": statistics.median_low(rests_on) if rests_on else 0, "overhead_calls": len(whole)}
