"""Compactions: what each rewrite of a replay's history dropped, and how much of what it stated is still there.

Why: dollars say what a config costs; this says what it loses, offline and
for every compaction a replay made. A compaction is read from what the
``Replay`` records (its session's ``context.replaced`` events, its
``limits``, ``summary_calls`` and ``compactions``), never from the driver.

What the score means (``retention``; ``convlab.tuning.facts`` is the rule for a
fact):

- ``dropped``: the messages of the old history (root to the head before the
  replace) that the new history does not carry: a message the new history
  keeps is a copy that names its original (``copied_from``); a changed one
  (a cleared tool result) is new, so its original is dropped;
- ``facts``: the facts the dropped messages state (``facts_of``);
- ``facts_kept``: the share of those facts the new context still holds
  (``holds``), the new context being the whole new history: the summary,
  if any, and every kept message, as text; 1.0 when nothing was dropped, NaN
  when what was dropped states no fact.

A sweep's ``facts_kept`` (and ``retained``) is a mean over the compactions
the config made that a model then read (``scored``): never the log's own,
never a stand-in summary; NaN (unknown) when none counts.

So a reset keeps what the kept tail happens to repeat (0 when it repeats
nothing), a replace that keeps every message keeps 1, ``clear_tool_results``
keeps exactly the facts of the cleared results that the rest of the history
also states, and a summary is scored on its text. Tokens here are counted the
engine's way (about one per four characters), as ``convlab.compact`` counts.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine import SUMMARY_PREFIX
from ..replaying.options import check_probes, renamed
from ..replaying.result import ContextLimit, Replay, SummaryCall
from ..replaying.summaries import SummaryFolder
from ..tokens import content_chars, content_text, estimate
from .facts import KINDS, Fact, facts_of, holds, message_text, normal
from .probes import Asking, Judge, JudgeCost, Probed, judge_for, probe

if TYPE_CHECKING:
    import pandas as pd

    from ..engine import Session
    from ..providers import Provider

__all__ = ["Rewrite", "compactions", "retention", "retention_cost", "facts_kept", "retained", "scored", "RETENTION_COLUMNS",
           "PROBE_COLUMNS", "LOST_SHOWN"]

#: The columns of ``retention``'s frame, in order.
RETENTION_COLUMNS = ("compaction", "call", "source", "strategy", "summary", "tokens_before", "dropped_messages",
                     "dropped_tokens", "tokens_after", "facts", "facts_kept", "lost")

#: The columns ``retention`` adds with a judge, after ``RETENTION_COLUMNS``.
PROBE_COLUMNS = ("probes", "correct_full", "correct_compacted", "retained", "probe_note")

#: How many lost facts a row of ``retention`` shows.
LOST_SHOWN = 5


@dataclass(frozen=True, eq=False)  # eq=False: two compactions are two events, however alike
class Rewrite:
    """One rewrite of a replay's history (a ``context.replace``).

    - ``call``: the 1-based index of the model call that first reads the new
      history (the held call, for a strategy's or a worker's);
    - ``source``: ``"strategy"`` (the engine's proposal answered the
      ``context.limit``), ``"worker"`` (a worker's own compaction answered it)
      or ``"log"`` (the log's own compaction, replayed);
    - ``strategy``: the strategy that fired (``"summarize"``, ``"reset"``),
      None for the log's;
    - ``summary``: the summary's text (without the engine's prefix), None when
      the new history has none; ``summary_by``: ``"stand-in"`` (the replay
      wrote it, no summarizer), ``"model"`` (a summarizer wrote it),
      ``"log"`` (the log's), ``"worker"`` (a worker wrote it with no summary
      call), None with no summary;
    - ``old`` and ``new``: the history before and after, root to head (node dicts,
      read from the session when first asked for).
    """

    call: int
    source: str
    strategy: str | None
    summary: str | None
    summary_by: str | None
    _session: Session = field(repr=False)
    _ends: tuple[str | None, str | None] = field(repr=False)  # the old head and the new one

    @functools.cached_property
    def old(self) -> tuple[Mapping[str, Any], ...]:
        head = self._ends[0]
        return tuple(self._session.path(head)) if head is not None else ()

    @functools.cached_property
    def new(self) -> tuple[Mapping[str, Any], ...]:
        head = self._ends[1]
        return tuple(self._session.path(head)) if head is not None else ()

    def dropped(self) -> list[Mapping[str, Any]]:
        """The messages of ``old`` that ``new`` does not carry (a kept one is a copy: ``copied_from``)."""
        return list(self._dropped)

    def facts(self) -> frozenset[Fact]:
        """The facts the dropped messages state."""
        return self._facts

    def kept(self) -> frozenset[Fact]:
        """The facts of ``facts()`` the new context (the whole new history, as text) still holds."""
        return self._kept

    @functools.cached_property
    def _dropped(self) -> tuple[Mapping[str, Any], ...]:
        carried = {m.get("copied_from") for m in self.new}
        return tuple(m for m in self.old if m["id"] not in carried)

    @functools.cached_property
    def _facts(self) -> frozenset[Fact]:
        return facts_of(self._dropped)

    @functools.cached_property
    def _kept(self) -> frozenset[Fact]:
        if not self._facts:
            return frozenset()
        context = normal("\n".join(message_text(m) for m in self.new))
        return frozenset(f for f in self._facts if holds(context, f))

    def facts_kept(self) -> float:
        """The share of ``facts()`` that ``kept()`` holds: 1.0 when nothing was dropped, NaN when no fact was."""
        if not self._dropped:
            return 1.0
        return len(self._kept) / len(self._facts) if self._facts else math.nan


def compactions(replay: Replay) -> list[Rewrite]:
    """Every compaction ``replay`` made, in order (``Rewrite``).

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.driver import replay as run
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "deploy to /srv/app at 12:30"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "done"}, "u1")
    >>> _ = t.add({"id": "s", "role": "user", "content": "Deployed /srv/app.", "kind": "summary", "replaces": "a1"}, None)
    >>> t.head = "s"
    >>> [(c.source, c.call, c.summary, c.summary_by, len(c.dropped()), c.facts_kept()) for c in compactions(run(Conversation(t, id="c")))]
    [('log', 2, 'Deployed /srv/app.', 'log', 2, 0.5)]
    """
    if not isinstance(replay, Replay):
        what = type(replay).__name__
        hint = ": replay it first, convlab.retention(convlab.replay(conversation))" if what == "Conversation" else ""
        raise TypeError(f"retention scores a Replay (what convlab.replay returns), got a {what}{hint}")
    s = replay.session
    logs = {c.id: c.call for c in replay.compactions}
    out: list[Rewrite] = []
    limit = -1  # the latest context.limited, as an index into limits
    first: Mapping[str, Any] | None = None  # the latest top-level message: a context.replace's new history starts there
    events: Sequence[Mapping[str, Any]] = s.events  # read by type, as the driver reads them
    for ev in events:
        t = ev["type"]
        if t == "message.new" and ev["message"]["parent"] is None:
            first = ev["message"]
        elif t == "context.limited":
            limit += 1
        elif t == "context.replaced":
            out.append(_compaction(replay, ev, first if ev.get("to") is not None else None, logs, limit))
    return out


def _summary_call(replay: Replay, x: ContextLimit) -> SummaryCall | None:
    """The summary call that wrote the summary answering the limit ``x``: the last one the provider answered
    before the call the limit holds (``SummaryCall.call``; an overflow's comes before the call run again), a
    first pass, not a second (``kind``); None when none did (the worker wrote its summary itself)."""
    before = x.call + 1 if x.reason == "overflow" else x.call
    made = [c for c in replay.summary_calls if c.call == before and c.kind == "summary" and c.answered]
    return made[-1] if made else None


def _compaction(replay: Replay, ev: Mapping[str, Any], first: Mapping[str, Any] | None, logs: Mapping[str, int],
                limit: int) -> Rewrite:
    ends = (ev.get("from"), ev.get("to"))
    summary = None
    if first is not None and first.get("kind") == "summary":
        summary = content_text(first["content"]).removeprefix(SUMMARY_PREFIX)
    if first is not None and first["id"] in logs:
        return Rewrite(logs[first["id"]], "log", None, summary, "log" if summary is not None else None, replay.session, ends)
    x: ContextLimit | None = replay.limits[limit] if 0 <= limit < len(replay.limits) else None
    by = None
    if summary is not None:
        made = _summary_call(replay, x) if x is not None else None
        by = "worker" if made is None else "stand-in" if made.stand_in else "model"
    if x is None:  # a rewrite no limit asked for (a replay's log holds no other): as the engine's own
        return Rewrite(0, "strategy", None, summary, by, replay.session, ends)
    return Rewrite(x.call, "worker" if x.worker is not None else "strategy", x.strategy, summary, by, replay.session, ends)


def _tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    return estimate(sum(content_chars(m.get("content")) for m in messages))


def _order(f: Fact) -> tuple[int, str]:
    return (KINDS.index(f.kind), f.normal)


def _row(i: int, c: Rewrite) -> dict[str, Any]:
    dropped = c.dropped()
    facts = c.facts()
    lost = sorted(facts - c.kept(), key=_order)
    return {"compaction": i, "call": c.call, "source": c.source, "strategy": c.strategy, "summary": c.summary_by,
            "tokens_before": _tokens(c.old), "dropped_messages": len(dropped), "dropped_tokens": _tokens(dropped),
            "tokens_after": _tokens(c.new), "facts": len(facts), "facts_kept": c.facts_kept(),
            "lost": "; ".join(f.text for f in lost[:LOST_SHOWN])}


def retention(replay: Replay, judge: Provider | Judge | None = None, probes: int = 5, judge_cache: SummaryFolder = None,
              **earlier: Any) -> pd.DataFrame:
    """What each compaction of ``replay`` dropped and how much of what it stated the new context still
    holds: one row per compaction (``compactions``), columns ``RETENTION_COLUMNS``:

    ``compaction`` (1-based, in order), ``call`` (the first model call that reads the new history),
    ``source`` (``"strategy"``, ``"worker"`` or ``"log"``), ``strategy`` (the one that fired; None for
    the log's), ``summary`` (``"stand-in"``: the replay made the summary with no summarizer, so its
    score says nothing of a model; ``"model"``: a summarizer made it; ``"log"``: the log's own;
    ``"worker"``: a worker wrote it; None: no summary), ``tokens_before`` / ``dropped_tokens`` /
    ``tokens_after`` (the old history, what was dropped, the new history; about a token per four
    characters), ``dropped_messages``, ``facts`` (how many the dropped messages state), ``facts_kept``
    (the share the new context still holds: 1.0 when nothing was dropped, NaN when no fact was) and
    ``lost`` (a few lost facts, ``"; "``-joined, for reading). The module docstring pins what each means.

    With ``judge`` (a provider, e.g. ``convlab.LocalChat()``, or a ``convlab.tuning.probes.Judge``), each
    compaction is probed too (``convlab.tuning.probes``): one call asks the judge for up to ``probes``
    question/answer pairs about the dropped span (JSON, checked, asked again once when it is not
    JSON); each question is asked in a prompt of its own, once after the full history before the
    compaction and once after the compacted one; each answer is graded against the reference (the
    judge only when a string match cannot say). The frame gains ``PROBE_COLUMNS``: ``probes`` (the
    questions asked), ``correct_full`` and ``correct_compacted`` (answered right with the full history,
    and with both), ``retained`` (``correct_compacted / correct_full``: 1.0 when nothing was dropped,
    NaN when ``correct_full`` is 0) and ``probe_note`` (why a compaction has fewer probes: no JSON
    twice, the judge failed, ...). A stand-in summary is probed too, and its row says so
    (``summary``): a mean leaves it out (``retained``). Every judge call is cached on disk (``cache``:
    None for ``$XDG_CACHE_HOME/convlab/judge``, a folder, or False for memory only), keyed by the
    model, the prompt and the exact input, and made in this process; ``df.attrs["judge_cost"]`` (a
    ``JudgeCost``) says what was spent. What it would cost first: ``retention_cost``.

    >>> import convlab
    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for i in range(4):
    ...     _ = t.add({"id": f"u{i}", "role": "user", "content": f"Step {i}: read src/step{i}.py " + "x" * 400}, f"a{i - 1}" if i else None)
    ...     _ = t.add({"id": f"a{i}", "role": "assistant", "content": f"ok {i}"}, f"u{i}")
    >>> t.head = "a3"
    >>> cfg = "[agent.bot.context]\\nwindow = 100000\\n[[agent.bot.context.strategy]]\\nuse = 'reset'\\nover_tokens = 250"
    >>> df = retention(convlab.replay(convlab.Conversation(t, id="c"), cfg))
    >>> df[["call", "source", "strategy", "summary", "dropped_messages", "facts", "facts_kept"]].to_dict("records")[0]
    {'call': 4, 'source': 'strategy', 'strategy': 'reset', 'summary': None, 'dropped_messages': 6, 'facts': 3, 'facts_kept': 0.0}
    """
    import pandas as pd

    cache = _judge_cache(judge_cache, earlier, "retention")
    found = compactions(replay)
    rows = [_row(i, c) for i, c in enumerate(found, 1)]
    if judge is None:
        if cache is not None:
            raise ValueError("judge_cache= is where a judge's calls are kept: give judge= too")
        return pd.DataFrame(rows, columns=list(RETENTION_COLUMNS))
    j = judge_for(judge, cache)
    n = check_probes(probes)
    for row, c in zip(rows, found, strict=True):
        row.update(_probed(probe(c.dropped(), c.old, c.new, j, n)))
    df = pd.DataFrame(rows, columns=[*RETENTION_COLUMNS, *PROBE_COLUMNS])
    df.attrs["judge_cost"] = j.cost()
    return df


def _judge_cache(judge_cache: SummaryFolder, earlier: Mapping[str, Any], where: str) -> SummaryFolder:
    """``judge_cache``, or its earlier name ``cache`` (a ``DeprecationWarning``); any other keyword a ``TypeError``."""
    given = renamed(earlier, {"cache": "judge_cache"}, where, stacklevel=4)
    unknown = [k for k in given if k != "judge_cache"]
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    return given.get("judge_cache", judge_cache)


def _probed(p: Probed) -> dict[str, Any]:
    return {"probes": p.probes, "correct_full": p.correct_full, "correct_compacted": p.correct_compacted,
            "retained": p.retained, "probe_note": p.note}


def retention_cost(replay: Replay, judge: Provider | Judge, probes: int = 5, judge_cache: SummaryFolder = None,
                   **earlier: Any) -> JudgeCost:
    """What ``retention(replay, judge, probes, judge_cache)`` would cost, calling nothing and writing nothing: a
    ``JudgeCost`` (the calls not in the cache and the exact o200k_base count of what each would send,
    the ``cached`` ones). A question the cache does not hold yet is not known, so its two answer calls
    are counted on a stand-in question (``estimated``); grade calls are counted only where the cache
    holds the answers (a grade is asked only when a string match cannot say).

    >>> import convlab
    >>> from convlab.providers import EchoLLM
    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for i in range(4):
    ...     _ = t.add({"id": f"u{i}", "role": "user", "content": f"Step {i}: read src/step{i}.py " + "x" * 400}, f"a{i - 1}" if i else None)
    ...     _ = t.add({"id": f"a{i}", "role": "assistant", "content": f"ok {i}"}, f"u{i}")
    >>> t.head = "a3"
    >>> cfg = "[agent.bot.context]\\nwindow = 100000\\n[[agent.bot.context.strategy]]\\nuse = 'reset'\\nover_tokens = 250"
    >>> r = convlab.replay(convlab.Conversation(t, id="c"), cfg)
    >>> cost = retention_cost(r, EchoLLM(), probes=2, judge_cache=False)
    >>> cost.calls, cost.estimated, cost.cached  # one questions call, two answer calls per question
    (5, 4, 0)
    """
    j = judge_for(judge, _judge_cache(judge_cache, earlier, "retention_cost"), dry_run=True)
    n = check_probes(probes)
    for c in compactions(replay):
        probe(c.dropped(), c.old, c.new, j, n)
    return j.cost()


def retained(replay: Replay, judge: Asking, probes: int = 5) -> float:
    """The mean ``retained`` over the compactions of ``replay`` that count (``scored``; only those are probed),
    with ``judge`` (a ``Judge``, or in a sweep's worker process a ``Relayed`` one), NaN scores left out: a
    sweep's ``retained``; NaN (unknown) when none counts."""
    return _mean(probe(c.dropped(), c.old, c.new, judge, probes).retained for c in scored(replay))


def facts_kept(replay: Replay) -> float:
    """The mean ``facts_kept`` over the compactions of ``replay`` that count (``scored``), NaN scores left out:
    a sweep's ``facts_kept``; NaN (unknown, never 0) when none counts: nothing to measure.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.driver import replay as run
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "deploy to /srv/app at 12:30"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "done"}, "u1")
    >>> _ = t.add({"id": "s", "role": "user", "content": "Deployed /srv/app.", "kind": "summary", "replaces": "a1"}, None)
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "ok"}, "s")
    >>> t.head = "a2"
    >>> r = run(Conversation(t, id="c"))
    >>> [(c.source, c.facts_kept()) for c in compactions(r)], facts_kept(r)  # the log's own: not the config's doing
    ([('log', 0.5)], nan)
    """
    return _mean(c.facts_kept() for c in scored(replay))


def scored(replay: Replay) -> list[Rewrite]:
    """The compactions a sweep's ``facts_kept`` and ``retained`` count: the ones the config made (a strategy's
    or its worker's) that a model then read, each

    - not the log's own (``source == "log"``: the log compacted there under every config, and in the
      baseline, so its score says nothing of this config; ``retention`` still lists it);
    - not a stand-in summary (the replay wrote it with no summarizer: its score says nothing of a model);
    - followed by an answered call: the model call it made room for (``call``) was not refused as too long
      (a compaction no model read kept nothing for anyone; a row whose turns all failed answered none).

    None counts (NaN): the config compacted nothing, or only with stand-in summaries, or no model read it.
    """
    calls = replay.calls
    return [c for c in compactions(replay) if c.source != "log" and c.summary_by != "stand-in"
            and 0 < c.call <= len(calls) and not calls[c.call - 1].refused]


def _mean(scores: Iterable[float]) -> float:
    """The mean of the scores that are not NaN; NaN when none is."""
    kept = [x for x in scores if not math.isnan(x)]
    return sum(kept) / len(kept) if kept else math.nan
