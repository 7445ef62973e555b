"""The model a replay's Session calls: ``ReplayLLM``, the logged replies in order.

What each call read (the log's usage where it applies, else the exact count
plus the hidden overhead), the stand-in summaries and the cost model's knobs
(``summary_size``, ``overhead``) are its own; the docstring says each rule.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from .. import jsondata
from ..errors import ProviderError
from ..providers.fakes import checked_replies, stand_in, summarized
from ..tokens import content_text, count_tokens
from ..tree import PathView, input_tokens
from .fit import Fit, fit
from .options import check_overhead, check_summary_request, check_summary_size
from .plan import ExactCounts, Plan
from .result import SummaryCall

if TYPE_CHECKING:
    from ..engine import Session

__all__ = ["ReplayLLM", "Read"]


#: What a logged reply gives back beside its content (a provider's reply keeps them on the message).
_REPLY_KEYS = ("tool_calls", "name", "metadata")


#: What answers a replay's summary calls: ``summarize(request, tokens, guessed)``, the reply
#: (None: the stand-in); ``tokens`` is the exact count of what it reads (see ``ReplayLLM``).
Summarize: TypeAlias = Callable[[Mapping[str, Any], int, bool], dict[str, Any] | None]

#: The prompt of a compaction's second pass (``ReplayLLM.verify_pass``): Gemini CLI's self-check, in convlab's
#: words, about as long as the CLI's own (chatCompressionService.ts).
VERIFY_PROMPT = ("Check the <state_snapshot> you just wrote against the history above. If it leaves out a technical "
                 "detail, a file path, a tool result or a constraint the user gave, or says one less precisely than it "
                 "could, write a final, better <state_snapshot>. If nothing is missing, write the same snapshot again.")


class Read(NamedTuple):
    """What one call read, as the model saw it (its half of a ``result.ModelCall``; ``ReplayLLM`` documents
    each rule): ``reply`` (the logged reply's id), ``applies``, ``read``, ``exact``, ``overhead``,
    ``logged``, ``refused``, ``whole``."""

    reply: str | None
    applies: bool
    read: int
    exact: int
    overhead: int
    logged: int | None
    refused: bool
    whole: bool


@dataclass(frozen=True)
class _State:
    """Where a model stands between calls: what ``mark()`` gives and ``until`` goes on from."""

    next: int = 0  # the index in ``replies`` of the reply the next call gets
    given: int = 0  # replies given out
    carry: tuple[int, bool] | None = None  # the overhead later calls carry, and whether a whole history showed it
    stand_ins: int = 0
    compacted: int = 0  # how many of the log's compactions were recorded (``compacted``)


class ReplayLLM:
    """Answers each model call with the next logged reply (what ``convlab.replay`` drives).

    ``replies`` is a list, consumed in order, of ``{"content", "usage"?,
    "id"?, "time"?, "error"?}``, and the logged reply's ``tool_calls``,
    ``name`` and ``metadata``, given back with it. A reply is consumed when
    it is given out (or its ``error`` raised); a call refused as too long
    gets the same reply when it runs again. ``expect(id)`` names the reply
    the next call is for (a replay says it before each call, so a reply no
    call asked for, its turn failed, never shifts the later ones).

    - ``usage``: the logged usage when the reply *applies* (``applies(request)``,
      default always) and the log has it. Otherwise the call is taken to read
      the exact count of its messages plus the *hidden overhead*:
      ``{"input_tokens": count(messages) + overhead, "output_tokens": count of
      the reply}``. A logged reply no longer applies when the model reads a
      history the log never had (after a strategy rewrote it).
    - The hidden overhead is what a provider reads beyond the transcript (a
      system prompt and tool definitions no log line holds, and its own
      tokenizer's surplus over ``count``): at a call whose logged usage
      applies, ``max(0, logged input - count(messages))``, observed. A call
      the log's usage does not answer, in a replay of a plan (``for_plan``),
      reads what the log's own calls say a call on that history reads:
      ``hidden + ratio * count(messages)`` for the log root and model of the
      reply it stands in for (``fit()``, ``convlab.replaying.fit``; the cost
      model prices the same figure, block by block), and its overhead is
      that less the exact count. Not the logged call's overhead: that call
      read the log's longer history, and the tokenizer's surplus grows with
      it (on a real Claude Code session on Haiku, ratio 1.49, the surplus
      on the history a summary dropped is ~16k tokens a call). Where the log
      gave that root and model no figures (a log with no usage; a model of
      replies alone), the overhead of the most recent earlier call whose
      logged usage applied and whose history is whole, 0 when there is none.
      A reply marked ``"whole": False`` answered a history the file lost part
      of (a parent not in the file): the logged input counts messages the
      transcript no longer holds, so its observed overhead is carried on only
      while no call with a whole history has been seen.
    - ``overhead`` (a whole number of tokens) is the hidden overhead given
      instead: every call the log's usage does not answer reads ``exact +
      overhead`` (a log with no usage at all: every call). A call whose
      logged usage applies still reads the logged input, and its ``overhead``
      in ``last`` is still the one observed. Default None: measured from the
      log, as above.
    - ``window``: refuse (``too_long``) a call that reads more, by that same
      measure (the logged input, or the exact count plus the overhead). Not
      a call whose logged usage applies to a history the file does not hold
      whole (``"whole": False``: its first message's parent is in another
      file, as a Claude Code compaction sub-agent's is): what it read is the
      log's, which no config of this replay could have shortened, so it is
      read as the log read it.
    - ``time``: the call's ``latency`` brings the session's clock to the
      reply's logged time (never back).
    - Summary calls get a deterministic stand-in for a summary of what they
      read (``stand_in``): a log holds no reply for a summary it never asked
      for. Its size is ``summary_size``: None (default) for the stand-in's
      own lines (one short line per message summarized, about 10 to 15
      tokens each, as ``EchoLLM`` writes it), a ratio (a float, 0 < r <= 1)
      of the exact tokens it summarizes, or a whole number of tokens. What
      every later call reads starts from it, so it decides every later count.
      What they read depends on how they are sent (``summary_request``):
      ``"shared"`` (default), as the engine sends them, with the agent's
      system prompt and tools: what the log's fit says a call on that history
      reads (``hidden + ratio * exact``, as a call the log's usage does not
      answer; the carried overhead where the fit is not trusted);
      ``"bare"``: the exact count of the messages and the prompt, no
      overhead.
    - ``summarize(request, tokens, guessed)``: what answers the summary
      calls instead of the stand-in (``tokens``: the exact count of what the
      request sends; ``guessed``: this model already wrote a stand-in, so the
      request may not be what a real run sends): a reply, a
      ``ProviderError``, or None for the stand-in (counted in ``stand_ins``).

    A replay's model answers for one Session (``bind``): it reads the
    session's clock, counts what each call reads exactly by the session's
    ids (``counts``, an ``ExactCounts``; a copy counts as its original), and
    a logged reply applies unless the history's first message starts a
    branch a strategy's ``context.replace`` made (its ``replaces`` is set and
    it is not one of the log's own compactions, which the driver names with
    ``compacted``). On its own (no session) it counts with ``count_tokens``,
    ``applies(request)`` says whether a reply applies (default always) and
    ``clock()`` gives the time the latency runs to.

    The exact count adds up message by message: the path a call reads (a
    ``PathView``) is counted with ``count([m])`` for each message, once, in
    the tree's running count (``PathView.tokens``), so a call never re-reads
    the path; a list of messages is counted whole.

    It keeps no list of its calls: what the latest one read is ``last`` (a
    ``Read``: ``reply``, ``applies``, ``read`` (the logged input where it
    applies, else ``exact + overhead``), ``exact``, ``overhead``, ``logged``,
    ``refused``, ``whole``), and the latest summary call's ``last_summary``
    (a ``result.SummaryCall``); whoever drives it records them (a replay's
    ``Replayer`` makes each a ``result.ModelCall``). Between calls it holds only
    where it stands: the next reply, how many it gave (``given``), the
    overhead later calls carry, ``stand_ins`` (the summaries the stand-in
    wrote although ``summarize`` was asked) and the log's compactions
    recorded; ``until(mark)`` gives a model that goes on from a ``mark()``
    (what a fork of a replay starts from).

    >>> llm = ReplayLLM([{"id": "a1", "content": "hello", "usage": {"input_tokens": 40, "output_tokens": 1}},
    ...                  {"id": "a2", "content": "hi again"}],
    ...                 applies=lambda request: len(request["messages"]) == 1)
    >>> llm.complete({"messages": [{"role": "user", "content": "hi"}]})  # the log's usage: 39 hidden tokens
    {'content': 'hello', 'usage': {'input_tokens': 40, 'output_tokens': 1}}
    >>> llm.complete({"messages": [{"role": "user", "content": "summary"}, {"role": "user", "content": "hello world"}]})
    {'content': 'hi again', 'usage': {'input_tokens': 42, 'output_tokens': 2}}
    >>> llm.last
    Read(reply='a2', applies=False, read=42, exact=3, overhead=39, logged=None, refused=False, whole=True)
    >>> given = ReplayLLM([{"id": "a1", "content": "hi"}], overhead=500, summary_size=0.5)
    >>> given.complete({"messages": [{"role": "user", "content": "hello world"}]})["usage"]
    {'input_tokens': 502, 'output_tokens': 1}
    >>> history = [{"role": "user", "content": "word " * 400}, {"role": "user", "content": "Summarize."}]
    >>> count_tokens(given.complete({"messages": history, "summary": True})["content"])  # half of 400
    200
    """

    def __init__(
        self,
        replies: Iterable[Mapping[str, Any]] = (),
        window: int | None = None,
        *,
        clock: Callable[[], float] | None = None,
        applies: Callable[[Mapping[str, Any]], bool] | None = None,
        summary_size: int | float | None = None,
        overhead: int | None = None,
        summarize: Summarize | None = None,
        counts: ExactCounts | None = None,
        summary_request: str = "shared",
    ):
        if window is not None and (not isinstance(window, int) or window <= 0):
            raise ValueError(f"window must be a positive integer, got {window!r}")
        self.summary_size = check_summary_size(summary_size)
        self.overhead = check_overhead(overhead)
        self.summary_request = check_summary_request(summary_request)
        self.worker_request: str | None = None  # how the worker's source sends its summary calls (``Compaction``), else None
        self.replies = checked_replies(replies)
        self.window = window
        self.latency = 0.0
        self.clock = clock
        self.applies = applies
        self.summarize = summarize
        self.counts = counts
        self._session: Session | None = None
        self._exact: dict[str, int] = {}  # session id -> exact tokens (a bound model's cache)
        self._index = {r["id"]: i for i, r in enumerate(self.replies) if r.get("id") is not None}
        self._state = _State()
        self._logs: list[str] = []  # the log's own compactions recorded (their summaries' session ids), in order
        self.last: Read | None = None
        self.last_summary: SummaryCall | None = None
        self._fit: list[Any] = [None, None]  # [the plan, its Fit once made]: shared by this model's copies (``until``)

    @classmethod
    def for_plan(cls, plan: Plan, window: int | None, **kwargs: Any) -> ReplayLLM:
        """The model of a replay of ``plan``: its logged replies, in the order they are replayed."""
        replies = []
        for nid in plan.calls:
            node = plan.nodes[nid]
            keys = {k: node[k] for k in _REPLY_KEYS if node.get(k) is not None}
            replies.append({"id": nid, "content": node["content"], "usage": node.get("usage"), "time": node.get("time"),
                            "whole": nid not in plan.lost, **keys})
        model = cls(replies, window, **kwargs)
        model._fit[0] = plan
        return model

    def fit(self) -> Fit | None:
        """The log's fit of what its calls read beyond the transcript (``convlab.replaying.fit``),
        made once for the plan this model replays and shared by its copies; None for a model made
        from replies alone."""
        plan, made = self._fit
        if made is None and plan is not None:
            made = self._fit[1] = fit(plan, self.counts if self.counts is not None else ExactCounts())
        return made

    def __repr__(self) -> str:
        return f"ReplayLLM({self.given}/{len(self.replies)} replies used)"

    @property
    def given(self) -> int:
        """How many logged replies it gave out."""
        return self._state.given

    @property
    def stand_ins(self) -> int:
        """How many summaries the stand-in wrote although ``summarize`` was asked."""
        return self._state.stand_ins

    def expect(self, reply_id: str) -> None:
        """The next call is for the logged reply ``reply_id`` (and so is a call refused as too long
        that runs again): what a replay says before each call, so that a reply no call asked for
        (its turn failed) never shifts a later call onto another reply."""
        if reply_id not in self._index:
            raise ValueError(f"ReplayLLM has no logged reply {reply_id!r}")
        self._state = replace(self._state, next=self._index[reply_id])

    # -- one session -------------------------------------------------------
    def bind(self, session: Session) -> None:
        """Answer for ``session``: its clock, its ids (see the class docstring). Once, before its first call."""
        if self.clock is not None or self.applies is not None:
            raise ValueError("a ReplayLLM bound to a session reads its clock and history there: give no clock= or applies=")
        self._session = session

    def unbind(self) -> None:
        """Let go of the session ``bind`` gave (the replay is over)."""
        self._session = None

    def compacted(self, summary_id: str) -> None:
        """The log's own compaction recorded its summary ``summary_id``: the history under it is the log's."""
        self._logs.append(summary_id)
        self._state = replace(self._state, compacted=len(self._logs))

    def mark(self) -> _State:
        """Where the model stands: what ``until`` goes on from."""
        return self._state

    def until(self, mark: _State, window: int | None) -> ReplayLLM:
        """A model, for a new session (``bind`` it), that stands where this one stood at ``mark``
        (a ``mark()`` of this model), with the same replies, knobs, ``summarize`` and counts,
        refusing above ``window``."""
        new = copy.copy(self)
        new.window, new.latency, new._session, new._exact = window, 0.0, None, {}
        new._state, new._logs = mark, self._logs[:mark.compacted]
        new.last = new.last_summary = None
        return new

    # -- what a call reads ---------------------------------------------------
    def _read_exact(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """``count`` of what a call reads; for a path view, the tree's running count message by
        message (``count([m])`` each: only the messages not counted yet)."""
        if not isinstance(messages, PathView):
            return self.count(list(messages))
        return messages.tokens(None if self._session is None and self.counts is None else self._count_one)

    def _count_one(self, message: Mapping[str, Any]) -> int:
        return self.count([message])

    def _exact_of(self, sid: str) -> int:
        """Exact tokens of the session message ``sid`` (a copy counts as its original)."""
        n = self._exact.get(sid)
        if n is None:
            assert self._session is not None  # only a bound model counts by the session's ids
            node = self._session.message_tree.node(sid)  # the Tree, not its networkx graph (never built in a replay)
            n = self._exact_of(node["copied_from"]) if node.get("copied_from") else self._tokens(content_text(node["content"]))
            self._exact[sid] = n
        return n

    def _tokens(self, text: str) -> int:
        return self.counts.tokens(text) if self.counts is not None else count_tokens(text)

    def count(self, messages: list[Mapping[str, Any]]) -> int:
        """The exact count of ``messages`` (o200k_base): by the bound session's ids where it has them."""
        if self._session is None and self.counts is None:
            return count_tokens(list(messages))
        tree = self._session.message_tree if self._session is not None else ()
        total = 0
        for m in messages:
            mid = m.get("id")
            if mid is not None and mid in tree:
                total += self._exact_of(mid)
            else:
                text = content_text(m.get("content"))
                total += self._tokens(text) if text else 0
        return total

    def _reads_logged(self, request: Mapping[str, Any]) -> bool:
        """Whether the logged reply applies: the model reads logged history (see the class docstring)."""
        if self._session is None:
            return True if self.applies is None else bool(self.applies(request))
        messages = request.get("messages") or []
        first = messages[0].get("id") if messages else None
        tree = self._session.message_tree
        node = tree.node(first) if first is not None and first in tree else None
        return node is None or node["replaces"] is None or first in self._logs

    def _carried(self) -> int:
        """The hidden overhead of a call the log's usage does not answer."""
        if self.overhead is not None:
            return self.overhead
        return self._state.carry[0] if self._state.carry is not None else 0

    def _carry(self, overhead: int, observed: bool, whole: bool) -> tuple[int, bool]:
        """What later calls carry after this one: its observed overhead if its history is whole (or no
        earlier call's was), else what the calls before it carried; and whether that came from a whole one."""
        before = self._state.carry if self._state.carry is not None else (overhead, False)
        if observed and (whole or not before[1]):
            return overhead, whole
        return before

    def _stand_in(self, messages: list[Mapping[str, Any]]) -> str:
        size = self.summary_size
        if isinstance(size, float):
            size = max(1, round(size * self.count(summarized(messages))))
        return stand_in(messages, size)

    def _latency_to(self, time: object) -> float:
        now = self._session.clock if self._session is not None else self.clock() if self.clock is not None else None
        if now is None or not isinstance(time, (int, float)):
            return 0.0
        return max(0.0, float(time) - float(now))

    # -- the calls -------------------------------------------------------------
    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        messages = request.get("messages") or []  # the path a session hands it: a PathView, read where needed
        self.latency = 0.0
        self.last = self.last_summary = None
        if request.get("summary"):
            return self._summary(request, list(messages))
        state = self._state
        if state.next >= len(self.replies):
            raise ProviderError("failed", f"ReplayLLM has no logged reply left for call {state.next + 1}")
        reply = self.replies[state.next]
        applies = self._reads_logged(request)
        logged = input_tokens(reply.get("usage"))
        exact = self._read_exact(messages)
        whole = reply.get("whole", True) is not False
        observed = applies and logged is not None
        if applies and logged is not None:  # (observed)
            overhead = max(0, logged - exact)
            read = logged
        else:
            fitted = self.fit() if self.overhead is None else None
            read_as = fitted.reads(reply.get("id"), exact) if fitted is not None else None
            if read_as is not None:  # what the log's own calls say a call on this history reads
                read, overhead = read_as, read_as - exact
            else:
                overhead = self._carried()
                read = exact + overhead
        carry = self._carry(overhead, observed, whole)
        refused = self.window is not None and read > self.window and (whole or not applies)
        self.last = Read(reply.get("id"), applies, read, exact, overhead, logged, refused, whole)
        if refused:
            self._state = replace(state, carry=carry)
            raise ProviderError("too_long", f"{read} tokens is more than the window of {self.window}")
        self._state = replace(state, next=state.next + 1, given=state.given + 1, carry=carry)
        self.latency = self._latency_to(reply.get("time"))
        if "error" in reply:
            raise ProviderError(reply["error"], reply.get("message"))
        if applies and logged is not None:
            usage = dict(reply["usage"])
        else:
            usage = {"input_tokens": read, "output_tokens": self.count([{"content": reply["content"]}])}
        # a copy of the logged reply (the plan's stays as logged): JSON data, so jsondata's copy, several times faster
        # than deepcopy (a sweep gives every logged reply once per replay)
        keys = {k: jsondata.copy(reply[k]) for k in _REPLY_KEYS if reply.get(k) is not None}
        return {"content": jsondata.copy(reply["content"]), "usage": usage, **keys}

    def _summary(self, request: Mapping[str, Any], messages: list[Mapping[str, Any]]) -> dict[str, Any]:
        """A summary call: the window's check, then ``summarize``'s reply or the stand-in."""
        exact = self.count(messages)
        where = self._summary_where(messages)
        where["exact"], where["prompt"] = exact, self.count(messages[-1:])
        read = exact if not where["shared"] else self._shared_read(where["reply"], exact)
        refused = self.window is not None and read > self.window
        self.last_summary = SummaryCall(read, refused, **where)  # what it read, whatever happens next (a summarizer may fail)
        if refused:
            raise ProviderError("too_long", f"{read} tokens is more than the window of {self.window}")
        if self.summarize is not None:
            try:
                real = self.summarize(request, exact, self._state.stand_ins > 0)
            except ProviderError as err:  # the summarizer refused it as too long, or failed it: it read nothing
                too_long = err.kind == "too_long"
                self.last_summary = SummaryCall(read, too_long, failed=not too_long, **where)
                raise
            if real is not None:
                out = (real.get("usage") or {}).get("output_tokens")
                output = out if isinstance(out, int) and not isinstance(out, bool) and out >= 0 else \
                    self.count([{"content": real.get("content")}])
                self.last_summary = SummaryCall(read, False, output, False, **where)
                return real
            self._state = replace(self._state, stand_ins=self._state.stand_ins + 1)
        content = self._stand_in(messages)
        self.last_summary = SummaryCall(read, False, self.count([{"content": content}]), True, **where)
        return {"content": content, "usage": {"input_tokens": read, "output_tokens": self.last_summary.output}}

    def _summary_where(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Where a summary call runs (``SummaryCall``'s ``time``, ``head``, ``reply``, ``shared``): ``head`` when
        what it sends before its prompt is the session's path from its root (the prefix the session's calls read)."""
        head = None
        if self._session is not None and len(messages) >= 2:
            last = messages[-2].get("id")
            tree = self._session.message_tree
            if isinstance(last, str) and last in tree and tree.depth(last) == len(messages) - 1 \
                    and messages[0].get("id") == tree.root_of(last):
                head = last
        replies = self.replies
        reply = replies[min(self._state.next, len(replies) - 1)].get("id") if replies else None
        time = self._session.clock if self._session is not None else self.clock() if self.clock is not None else None
        return {"time": time, "head": head, "reply": reply, "shared": (self.worker_request or self.summary_request) == "shared"}

    def verify_pass(self, made: SummaryCall) -> SummaryCall:
        """The second pass a compaction's source makes over its summary (Gemini CLI's self-check), priced, not
        run: it reads what ``made`` read, the summary and ``VERIFY_PROMPT``, and writes a summary as long."""
        prompt = self._tokens(VERIFY_PROMPT)
        read = made.read + made.output + prompt
        return replace(made, read=read, kind="verify", head=None, exact=made.exact + made.output + prompt, prompt=prompt)

    def _shared_read(self, reply: str | None, exact: int) -> int:
        """What a summary call sent as the engine sends it reads: the log's fit of a call on that history,
        else the exact count and the overhead later calls carry."""
        fitted = self.fit() if self.overhead is None else None
        read_as = fitted.reads(reply, exact) if fitted is not None else None
        return read_as if read_as is not None else exact + self._carried()
