"""Replay: re-enact an imported conversation through the protocol.

A log says what happened; replay turns it back into the client inputs and
worker answers that would have made it, so that the engine model (and a
context config) can be tried on real history.

Why it is split in two: the *plan* (which turn each logged message belongs
to, and how that turn starts) depends only on the conversation, so it is made
once and reused by every config of a sweep (``convlab.tune``). The *driver*
runs one plan through one ``Session``; it only looks at imported ids and a
map to the session's ids, so when a strategy rewrites the history the rest of
the log goes on from the new history.

How the log becomes protocol traffic (creation order, ``seq``):

- a user (or system) message starts a turn: ``client.message`` (or
  ``client.append`` for a chain of them) when it hangs under the head, else a
  ``client.messages`` view (an edit, or a new top-level message);
- an assistant reply is one ``llm.call`` answered by ``ReplayLLM`` with the
  logged reply; inside a turn it follows the tool results before it, which
  are ``message.add`` actions in the same answer (a tool loop). A reply
  whose parent is not the head (a regeneration, or a reply after a branch
  switch) starts its turn with a head-only view to its parent;
- a summary root (a Claude Code compaction, ``kind: "summary"``) is a turn
  that moves the head to the message it ``replaces`` and answers with
  ``context.replace {summary: <the logged text>}``, as the engine records a
  summary: a ``kind: "summary"`` node whose content is ``SUMMARY_PREFIX``
  (the engine's line saying the earlier conversation was summarized) and the
  logged text (a convlab log's summary already opens with it, and keeps its
  content as it was; a logged summary with no text, which the engine would
  refuse, gets ``EMPTY_SUMMARY``), then the messages the compaction kept
  (pi's kept entries, Codex's replacement history): a copy of an earlier
  message names its original, which the engine copies again, any other kept
  message (``conversation.KEPT``) is given as it is. The messages the log has straight under
  the summary (a reply, tool results: Claude Code goes on after an automatic
  compaction with no user message between) are that turn's: the same answer
  goes on with their ``message.add`` and ``llm.call`` after the replace. A
  summary that is the log's very first message has no history to replace and
  no turn to replace it in: it is submitted as the first message (``kind:
  "message"``);
- at the end, a head-only view moves the head to the log's head if needed.

Times: before a turn starts the clock moves to its first message's logged
``time``; a reply's time is reached through ``ReplayLLM``'s latency. A
missing time (``None``) or one earlier than the clock leaves the clock where
it is: no time passes, so a missing time never makes a turn idle.

Where the log compacted itself (a summary root) and a strategy fires too,
the log's compaction is replayed as the log did it, whatever the strategy
did before: its ``context.replace`` replaces the history the replay has
at that point (the strategy's, if one rewrote it) with the log's summary,
so from there on the model reads what the log's model read, the logged
usage applies again and those replies are not stale. The strategy fires
only on what follows, by the same rules as anywhere (an idle strategy at
the first call after the summary proposes the call as it was: nothing
precedes what it must keep). A reply the log gives straight after its
summary is the compaction's own turn: ``[context.replace, llm.call]`` in
one answer.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..context import ConfigLike, ContextConfig, coerce
from ..conversation import Conversation
from ..engine import SUMMARY_PREFIX, Session, Worker
from ..tokens import content_text
from ..tree import Message, message_of
from . import cost
from .cost import Pricing
from .fit import fit
from .model import ReplayLLM, Summarize
from .options import Options, check_worker, options_of, takes_options
from .plan import ExactCounts, Plan, PlannedTurn, plan
from .result import ContextLimit, LogCompaction, ModelCall, Replay, SummaryCall

__all__ = ["replay", "Replayer", "EMPTY_SUMMARY"]

_ENGINE_ID = re.compile(r"e\d+$")

#: How many of its newest events a replay's session keeps in memory; the older go to a scratch file
#: (``Session(keep_events=)``), so a replay of a long log does not hold every event it made.
EVENTS_KEPT = 16_384

#: The text a logged summary with none is replayed with (the engine records no empty summary).
EMPTY_SUMMARY = "(the log's summary has no text)"


@dataclass
class _Start:
    """Where a replay stood when one of its turns started: what ``Replayer.fork`` goes on from."""

    events: int  # events so far
    record: tuple[int, ...]  # the length of each of the record's lists (``_RecordBook.lengths``)
    map: int  # writes to the id map so far (``_IdMap.at`` rebuilds the map as it was)
    model: Any  # ReplayLLM.mark()
    clock: float  # the session's clock (a loaded session's starts at 0 at the least: a log's times may be earlier)

    @property
    def consulted(self) -> int:
        """How many points the replay had consulted its config at (``Replayer.record.consulted``)."""
        return self.record[-1]


class _IdMap(dict):
    """The replay's id map (imported id -> session id), remembering its writes in
    order: where a turn started is the number of writes so far, not a copy of the
    map (a copy a turn made the replay quadratic), and ``at(n)`` is the map as it
    was then, journaling on (what a fork starts from)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[str, str]] = []

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        self.writes.append((key, value))

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def at(self, n: int) -> _IdMap:
        new = _IdMap()
        new.update(self.writes[:n])
        return new


@dataclass(frozen=True)
class _Started:
    """The engine's side of a model call, when it started (the first half of a ``ModelCall``)."""

    call_id: str
    count: int
    first_call: bool
    idle_for: float | None
    checked: bool
    time: float
    head: str | None


@dataclass
class _RecordBook:
    """The book of what a replay records, one owner: each list grows as the replay runs (records are never changed,
    but for a limit's outcome, known once it is answered) and ``until`` cuts them all at a turn."""

    map: _IdMap = field(default_factory=_IdMap)  # imported id -> session id (where the log goes on)
    stale: list[str] = field(default_factory=list)  # imported ids of the logged replies that no longer apply
    lost: list[str] = field(default_factory=list)  # imported ids of the logged replies never given (their turn ended first)
    calls: list[ModelCall] = field(default_factory=list)  # one per model call (not summary calls)
    summary_calls: list[SummaryCall] = field(default_factory=list)
    limits: list[ContextLimit] = field(default_factory=list)  # context.limit decisions, with what answering them did
    compactions: list[LogCompaction] = field(default_factory=list)  # the log's own, as replayed
    consulted: list[tuple] = field(default_factory=list)  # (turn, kind, *data): see Replayer

    def lengths(self) -> tuple[int, ...]:
        return (len(self.stale), len(self.lost), len(self.calls), len(self.summary_calls), len(self.limits),
                len(self.compactions), len(self.consulted))

    def until(self, at: _Start) -> _RecordBook:
        """The record as it was when the turn of ``at`` started."""
        stale, lost, calls, summaries, limits, compactions, consulted = at.record
        return _RecordBook(self.map.at(at.map), self.stale[:stale], self.lost[:lost], self.calls[:calls],
                       self.summary_calls[:summaries], self.limits[:limits], self.compactions[:compactions],
                       self.consulted[:consulted])


#: Event types a fork leaves out: between turns no decision waits, so they change nothing.
_NOT_FORKED = ("decision.requested", "decision.answered")


class Replayer:
    """Runs a ``Plan`` through a new ``Session`` (``worker="manual"``).

    It records one ``ModelCall`` per model call, built in one place (``_on_event``,
    when the call ends): the engine's side, taken when the call started (its
    count, whether it was the turn's first call, how long the session had
    been idle), and the model's (``ReplayLLM.last``: what it read, exactly
    and by the log). Use ``replay()``; this is the machinery it shares with
    ``tune``. What each protocol step recorded is read from the events that
    step emitted, never from side channels. Everything recorded is
    ``record``'s (a ``_RecordBook``); the model holds only where it stands
    between calls. ``result()`` is the ``Replay``, priced, and ``fork`` cuts
    the record and the model at a turn (``until``), patching nothing.

    For sweeps it also records ``record.consulted``: every point where the replay
    depended on its config, in order, as ``(turn, kind, *data)``:
    ``("limit", count, first_call, idle_for)`` where the engine asked which
    strategy applies, ``("read", tokens, refused)`` where the model read
    (refused: more than the window), ``("overflow",)`` where the model refused
    a call as too long and the config's summarize strategy made room. Another
    config that says the same at each of them makes the same replay, event for
    event; one that says something else first in turn ``k`` makes the same
    replay until turn ``k`` starts, so it can go on from there (``fork``).
    """

    def __init__(
        self,
        plan: Plan,
        config: ConfigLike = None,
        *,
        counts: ExactCounts | None = None,
        agent: str = "bot",
        summarize: Summarize | None = None,
        summary_size: int | float | None = None,
        overhead: int | None = None,
        summary_request: str = "shared",
        worker: Worker | None = None,
        pricing: Pricing | None = None,
    ):
        """``summarize`` answers the summary calls, ``summary_size``,
        ``overhead`` and ``summary_request`` are the cost model's knobs: ``ReplayLLM`` documents them;
        they go to every fork. ``counts`` (default: new) are shared by every
        replay of a sweep. ``worker`` answers each ``context.limit`` (None:
        with what the engine proposes; see ``replay``). ``pricing`` says how
        the calls are costed (``cost.Pricing``; None: not at all)."""
        config = coerce(config, agent)
        self.worker = check_worker(worker)
        self.pricing = pricing
        counts = counts if counts is not None else ExactCounts()
        model = ReplayLLM.for_plan(plan, config.window, summarize=summarize, counts=counts, summary_size=summary_size,
                                   overhead=overhead, summary_request=summary_request)
        self._setup(plan, config, agent, model, _RecordBook(), None)

    def _setup(self, plan: Plan, config: ContextConfig, agent: str, model: ReplayLLM, record: _RecordBook,
               start: tuple[list[Mapping[str, Any]], float] | None) -> None:
        """The replay of ``plan`` under ``config`` with ``model`` and ``record`` as they are; its Session
        new, or loaded from ``start`` (events ending between turns, and the clock there)."""
        self.plan, self.config, self.agent, self.llm, self.record = plan, config, agent, model, record
        self.counts: ExactCounts = model.counts if model.counts is not None else ExactCounts()  # a replay's model has them
        self.starts: dict[int, _Start] = {}  # per turn this replayer ran, where it stood when it started
        self.turn = 0  # the plan's turn running now
        self._turn_calls = 0
        self._started: _Started | None = None  # the model call under way (not a summary call)
        self._held: int | None = None  # the limit (an index into record.limits) that holds the next call
        self._held_ids: set[str] = set()
        self._compacting: str | None = None  # the log's summary whose context.replace is under way
        self._limit_summaries = 0  # how many summary calls were recorded when the latest context.limit came
        llm = {"replay": model}
        if start is None:
            first = next((n.get("time") for n in plan.nodes.values() if n.get("time") is not None), None)
            self.session = Session(config=config, agent=agent, llm=llm, worker="manual", clock=first, keep_events=EVENTS_KEPT)
        else:
            # shared, uncopied: the events a fork loads are its parent's, which nothing changes once recorded
            self.session = Session.from_events(start[0], config=config, agent=agent, llm=llm, worker="manual",
                                               keep_events=EVENTS_KEPT, shared=True)
            self.session.clock = start[1]
        model.bind(self.session)
        model.worker_request = getattr(self.worker, "summary_request", None)  # a compaction whose source sends its own way
        self._unsubscribe = self.session.subscribe(self._on_event)

    def close(self) -> None:
        """Done running: the session stops telling this replayer its events and the model lets go of the
        session, so no cycle links the three and a dropped replay is freed at once, not by the cyclic
        collector (a sweep makes hundreds). It can still ``fork``; take its ``result()`` before."""
        self._unsubscribe()
        self._unsubscribe = _nothing  # the subscription's closure holds the bound method: no cycle through it either
        self.llm.unbind()

    def fork(self, turn: int, config: ConfigLike = None, worker: Worker | None = None) -> Replayer:
        """A replay of the same plan under ``config`` (and ``worker``) that starts
        where this one stood when its turn ``turn`` started (it must have run that
        turn): the session loaded from the events so far, and the model's and the
        driver's records as they were. ``run(turn)`` goes on from there. Until that
        turn the two are the same replay when ``config`` says what this replay's
        config said at every point it was consulted before it (and no
        ``context.limit`` was answered by a worker that differs)."""
        config = coerce(config, self.agent)
        new = Replayer.__new__(Replayer)
        new.worker = check_worker(worker)
        new.pricing = self.pricing
        if turn == 0:
            new._setup(self.plan, config, self.agent, self.llm.until(ReplayLLM().mark(), config.window), _RecordBook(), None)
            return new
        at = self.starts[turn]
        new._setup(self.plan, config, self.agent, self.llm.until(at.model, config.window), self.record.until(at),
                   (self._events_until(at.events), at.clock))
        return new

    def _events_until(self, n: int) -> list[Mapping[str, Any]]:
        """The session's first ``n`` events as a fork loads them (``Session.from_events``): read from memory,
        not written as log lines and read back (several times faster for a long log)."""
        return [ev for ev in self.session.events[:n] if ev["type"] not in _NOT_FORKED]

    # -- what the session says at the moment a call starts, ends or is held ------
    def _on_event(self, ev: Mapping[str, Any]) -> None:
        t = ev["type"]
        rec = self.record
        if t == "llm.started" and not ev.get("summary"):
            s = self.session
            checked = ev["call_id"] not in self._held_ids  # a held call runs again unchecked
            # when it ran, and the last message it reads (what the prompt cache looks at)
            self._started = _Started(ev["call_id"], s.tokens(), self._turn_calls == 0, s.idle_for, checked, s.clock, s.head)
            if checked:
                rec.consulted.append((self.turn, "limit", self._started.count, self._started.first_call, self._started.idle_for))
            self._turn_calls += 1
        elif t in ("llm.completed", "llm.failed"):
            self._ended(bool(ev.get("summary")))
        elif t == "context.limited":
            self._limited(ev)
        elif t == "turn.started":
            self._turn_calls = 0
        elif t == "message.new" and self._compacting is not None and ev["message"]["kind"] == "summary":
            # the log's own compaction recorded its summary: the next model call reads the compacted history
            sid = ev["message"]["id"]
            rec.map[self._compacting] = sid
            rec.compactions.append(LogCompaction(sid, len(rec.calls) + 1))
            self.llm.compacted(sid)
            self._compacting = None

    def _ended(self, summary: bool) -> None:
        """A call ended: its record, built here and only here (the engine's side from when it started, the
        model's from what it read), and what the model read, and whether the window refused it, is a point
        where the replay consulted its config. A call the model never read (none left to give) records nothing."""
        rec = self.record
        if summary:
            made = self.llm.last_summary
            if made is not None:
                made = dataclasses.replace(made, call=len(rec.calls) + 1)  # the model call it comes before
                rec.summary_calls.append(made)
                rec.consulted.append((self.turn, "read", made.read, made.refused))
                if getattr(self.worker, "verify", False) and made.answered:
                    rec.summary_calls.append(self.llm.verify_pass(made))
            return
        started, read = self._started, self.llm.last
        self._started = None
        if started is None or read is None:
            return
        limit, self._held = self._held, None
        rec.calls.append(ModelCall(**vars(started), **read._asdict(), limit=limit))
        rec.consulted.append((self.turn, "read", read.read, read.refused))

    def _limited(self, ev: Mapping[str, Any]) -> None:
        """A ``context.limit``: its record, and the call it names (the held one runs after it; an overflow's
        is the call the provider just refused) says so in its ``limit``."""
        rec = self.record
        overflow = ev["reason"] == "overflow"
        index = len(rec.limits)
        limit = ContextLimit(ev["reason"], ev["strategy"], ev["tokens"], len(rec.calls) + (0 if overflow else 1),
                      self._turn_calls == 0, self.session.idle_for, None if self.worker is None else repr(self.worker))
        rec.limits.append(limit)
        self._limit_summaries = len(rec.summary_calls)  # the summary calls this limit makes come after
        if overflow:
            if rec.calls:
                rec.calls[-1] = dataclasses.replace(rec.calls[-1], limit=index)
            rec.consulted.append((self.turn, "overflow"))
        else:
            self._held = index
            rec.consulted.append((self.turn, "limit", limit.tokens, limit.first_call, limit.idle_for))
        self._held_ids.add(ev["call_id"])
        self._turn_calls += 1

    # -- running --------------------------------------------------------
    def _sid(self, imported: str | None) -> str | None:
        if imported is None:
            return None
        return self.record.map.get(imported, self.session.head)

    def _message(self, nid: str) -> Message:
        """A logged node as a client sends it: with its id unless the session cannot take it
        (an id of the engine's own form, or one it already has)."""
        return message_of(self.plan.nodes[nid], with_id=not _ENGINE_ID.match(nid) and nid not in self.session.message_tree)

    def _advance_to(self, time: float | None) -> None:
        if time is not None and time > self.session.clock:
            self.session.advance(time - self.session.clock)

    def run(self, start: int = 0) -> Replayer:
        """Run the plan's turns from turn ``start`` (all of them by default) to the end."""
        for k in range(start, len(self.plan.turns)):
            self.turn = k
            rec = self.record
            self.starts[k] = _Start(len(self.session.events), rec.lengths(), len(rec.map.writes), self.llm.mark(),
                                    self.session.clock)
            self._run_turn(self.plan.turns[k])
        return self

    def result(self) -> Replay:
        """The finished replay as a ``Replay`` (its calls priced when the replay has a ``pricing``)."""
        rec = self.record
        calls, summary_calls = list(rec.calls), list(rec.summary_calls)
        fitted = self.llm.fit() or fit(self.plan, self.counts)  # the model's, made once for the plan (for_plan)
        if self.pricing is not None:
            calls, summary_calls = cost.price(calls, summary_calls, self.session, self.plan, self.counts,
                                              fitted.given(self.llm.overhead or 0), self.pricing)
        return Replay(
            session=self.session,
            map=dict(rec.map),
            stale=list(dict.fromkeys(rec.stale)),
            lost=list(dict.fromkeys(rec.lost)),
            calls=calls,
            limits=list(rec.limits),
            conversation_id=self.plan.conversation_id,
            compactions=list(rec.compactions),
            summary_calls=summary_calls,
            priced=self.pricing is not None and self.pricing.model is not None,
            fit=fitted,
        )

    def _recorded(self, act: Callable[[], Any]) -> list[str]:
        """Ids of the messages recorded while ``act`` ran (read from its events)."""
        return [e["message"]["id"] for e in self._during(act) if e["type"] == "message.new"]

    def _during(self, act: Callable[[], Any]) -> Sequence[Mapping[str, Any]]:
        """The events ``act`` made (read as mappings: an event's fields beyond its type depend on the type)."""
        events = self.session.events
        start = len(events)
        act()
        return events[start:]

    def _submit(self, inp: dict[str, Any]) -> list[str]:
        return self._recorded(lambda: self.session.submit({**inp, "agent_id": self.agent}))

    def _view_to(self, sid: str | None, extra: Sequence[Mapping[str, Any]] = ()) -> list[str]:
        view = self.session.view(sid) if sid is not None else []
        return self._submit({"type": "client.messages", "messages": [*view, *extra]})

    def _run_turn(self, turn: PlannedTurn) -> None:
        self._advance_to(turn.time)
        first: list[dict[str, Any]] = []  # what the turn's first answer starts with
        kept: list[str] = []  # the messages its context.replace records after the summary (imported ids)
        if turn.start == "submit":
            self._start_submit(turn)
        elif turn.start == "compact":
            first, kept = self._start_compact(turn)
        elif self._sid(turn.parent) is None:  # a move to the root: nothing to do
            return
        else:
            self._view_to(self._sid(turn.parent))
        self._run_steps(turn.steps, first, kept)
        self._compacting = None

    def _start_submit(self, turn: PlannedTurn) -> None:
        s = self.session
        parent = self._sid(turn.parent)
        msgs = [self._message(n) for n in turn.nodes]
        if parent == s.head and (parent is not None or len(s.message_tree) == 0):
            created = self._submit({"type": "client.message", "message": msgs[0]} if len(msgs) == 1
                                   else {"type": "client.append", "messages": msgs})
        else:
            created = self._view_to(parent, msgs)
        self.record.map.update(zip(turn.nodes, created, strict=False))

    def _start_compact(self, turn: PlannedTurn) -> tuple[list[dict[str, Any]], list[str]]:
        """The log's own compaction, as the engine records one (see the module docstring):
        the turn starts at the replaced message, and its first answer opens with the
        ``context.replace`` (returned, with the imported ids of the messages it keeps),
        so a reply the log gives right after the summary is that answer's ``llm.call``,
        in the same turn."""
        summary = self.plan.nodes[turn.nodes[0]]
        parent = self._sid(turn.parent)
        if parent is None:
            created = self._view_to(None, [self._message(n) for n in turn.nodes])
            self.record.map.update(zip(turn.nodes, created, strict=False))
            return [], []
        self._view_to(parent)
        self._compacting = summary["id"]
        text = content_text(summary["content"]).removeprefix(SUMMARY_PREFIX)  # a convlab log's own summary
        kept = turn.nodes[1:]
        return [{"type": "context.replace", "summary": text or EMPTY_SUMMARY, "messages": [self._kept(n) for n in kept]}], kept

    def _kept(self, nid: str) -> Message:
        """A message the log's compaction kept, as its ``context.replace`` gives it: a copy names the
        session's message of its original (the engine copies it, ``copied_from``), any other is new."""
        original = self.plan.nodes[nid].get("copied_from")
        sid = self.record.map.get(original) if original is not None else None
        tree = self.session.message_tree
        if sid is not None and sid in tree:
            node = tree.node(sid)
            return {"id": sid, "role": node["role"], "content": node["content"]}
        return self._message(nid)

    def _run_steps(self, steps: list[tuple[str, str]], first: list[dict[str, Any]], kept: list[str]) -> None:
        """The worker's answers: ``message.add`` for tool results, one ``llm.call`` per
        logged reply, then an empty answer that ends the turn. ``first`` opens the
        first answer (the log's compaction), which records ``kept`` (imported ids) first."""
        s = self.session
        actions: list[dict[str, Any]] = list(first)
        adds: list[str] = list(kept)
        for kind, nid in steps:
            if s.decision is None:  # the turn failed: the rest of its replies are not given
                if kind == "call":
                    self._lose(nid)
                continue
            if kind == "add":
                actions.append({"type": "message.add", "message": self._message(nid)})
                adds.append(nid)
                continue
            actions.append({"type": "llm.call", "llm": "replay"})
            self.llm.expect(nid)  # by id: a reply its failed turn never gave shifts no later call
            self._answer(actions, adds)
            waiting = s.decision
            if waiting is not None and waiting["type"] == "llm.result":
                self.record.map[nid] = waiting["reply"]["id"]
                if not self.record.calls[-1].applies:  # the call that gave it
                    self.record.stale.append(nid)
            else:  # the turn ended without this reply (it failed, or a worker ended it)
                self._lose(nid)
            actions, adds = [], []
        if s.decision is not None:
            self._answer(actions, adds)

    def _lose(self, nid: str) -> None:
        """The logged reply ``nid`` is never given: its turn ended before it (stale, and lost)."""
        self.record.stale.append(nid)
        self.record.lost.append(nid)

    def _answer(self, actions: list[dict[str, Any]], adds: list[str]) -> None:
        """Answer with ``actions``; the tool results they add (``adds``, imported ids) map to
        the messages recorded, in order (the log's summary, recorded first, is mapped apart)."""
        created = self._decide(actions)
        logs = {c.id for c in self.record.compactions}  # the log's summary, recorded while deciding
        created = [sid for sid in created if sid not in logs]
        self.record.map.update(zip(adds, created, strict=False))

    def _decide(self, actions: list[dict[str, Any]]) -> list[str]:
        """Answer the waiting decision, then every context.limit that follows it
        with what it proposes, until the turn waits for a result or ends.
        Returns the ids of the messages recorded, in order."""
        s = self.session
        created = self._recorded(lambda: s.decide(actions))
        while s.decision is not None and s.decision["type"] == "context.limit":
            old_head = s.head
            answer = self._limit_answer()  # decide checks and copies what it is given
            events = self._during(functools.partial(s.decide, answer))
            made = _made_by_replace(events)
            if made:
                first = s.message_tree.node(made[0])
                length = None
                if first["kind"] == "summary":  # how long the summary is, in exact tokens
                    length = self.counts.tokens(content_text(first["content"]).removeprefix(SUMMARY_PREFIX))
                limits = self.record.limits
                limits[-1] = dataclasses.replace(limits[-1], replaced=True, summary_tokens=length)  # what answering it did
                self._remap(old_head, made)
            created += [e["message"]["id"] for e in events if e["type"] == "message.new"]
        return created

    def _limit_answer(self) -> list[dict[str, Any]]:
        """The answer to the waiting ``context.limit``: what the engine proposes, or the worker's (given
        the decision as a worker sees it, the path included: ``Session.pending``)."""
        if self.worker is None:
            waiting = self.session.decision
            assert waiting is not None, "a context.limit waits"
            return waiting["proposed"]
        decision = self.session.pending
        assert decision is not None, "a context.limit waits"
        try:
            answer = self.worker(decision)
            if getattr(self.worker, "summary_only_when_kept", False) and \
                    not any(a.get("type") == "context.replace" and a.get("summary") for a in answer):
                # its source makes a summary call only where it keeps the summary: the engine's here were never made
                del self.record.summary_calls[self._limit_summaries:]
            return answer
        except Exception as err:  # a worker's bug, named: the replay cannot go on without its answer
            raise ValueError(f"replay: the worker {self.worker!r} raised {type(err).__name__} at the context.limit "
                             f"of call {decision['call']['id']} (turn {self.turn + 1} of the plan): {err}") from err

    def _remap(self, old_head: str | None, made: list[str]) -> None:
        """After a strategy's context.replace the log goes on from the new history:
        a kept message's original now stands for its copy, the old head for the new head."""
        tree = self.session.message_tree  # (its networkx graph is never built in a replay)
        origs = [tree.node(m).get("copied_from") for m in made]
        wanted = {*origs, old_head}  # the map read backwards only where it is asked: a long log's map is long
        back = {sid: imp for imp, sid in self.record.map.items() if sid in wanted}
        for m, orig in zip(made, origs, strict=True):
            if orig in back:
                self.record.map[back[orig]] = m
        if old_head in back:
            self.record.map[back[old_head]] = made[-1]


def _nothing() -> None:
    pass


def _made_by_replace(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids a ``context.replace`` recorded among ``events``: the ``message.new``
    events before its ``context.replaced`` (none when there was no replace)."""
    made: list[str] = []
    for e in events:
        if e["type"] == "context.replaced":
            return made
        if e["type"] == "message.new":
            made.append(e["message"]["id"])
    return []


@takes_options
def replay(conversation: Conversation, config: ConfigLike = None, options: Options | None = None, **knobs: Any) -> Replay:
    """Re-enact an imported conversation through the protocol: a ``Replay``.

    Each logged assistant reply is one model call, answered by ``ReplayLLM``
    with the logged reply and the log's usage. Where that usage no longer
    applies (or the log has none) the call's usage is the exact o200k_base
    count of what the model read plus the hidden overhead (the system prompt
    and tool definitions the transcript does not hold): the logged input
    minus the exact count of the transcript at the most recent call whose
    logged usage applied, 0 when the log has no usage (see ``ReplayLLM``).
    With no strategy firing the replayed tree equals the imported one
    through ``Replay.map`` (shape, roles, kinds and content; a summary's
    content opens with the engine's ``SUMMARY_PREFIX``). Where a strategy
    fires the replay goes on from the new history; the logged replies
    answered there (and any that could not be given) are listed in
    ``Replay.stale``. ``Replay`` documents what else it holds.

    Where the log compacted itself and a strategy fires too, the log's
    compaction is replayed as the log did it (the module says how).

    The knobs (``options``, an ``Options``, or its fields by name: ``Options``
    documents each; ``model=`` prices every call in dollars,
    ``summarizer=`` sends the summary calls to a provider, ``worker=``
    answers each ``context.limit``, ``summary_size=`` and ``overhead=`` are
    the cost model's): checked before any work. A worker that raises is a
    ``ValueError`` naming it and the call. Summary calls get a stand-in
    summary (the log has none) unless a summarizer makes them: replies still
    come from the log, summaries from that model, each made once and kept in
    the summary cache (``summary_cache``; ``convlab.replaying.summaries``).
    With a model, or a log whose own model has a prompt cache rule, each call
    is priced: the prompt cache's reads and writes predicted
    (``convlab.replaying.cost``), and dollars with a model.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi", "time": 0.0}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "time": 1.0,
    ...            "usage": {"input_tokens": 9, "output_tokens": 1}}, "u1")
    >>> t.head = "a1"
    >>> r = replay(Conversation(t, id="c"))
    >>> r
    Replay(conversation='c', calls=1, limits=0, stale=0, head='e1')
    >>> r.map, [(m["role"], m["content"]) for m in r.session.path()], r.stale
    ({'u1': 'u1', 'a1': 'e1'}, [('user', 'hi'), ('assistant', 'hello')], [])
    """
    if not isinstance(conversation, Conversation):
        what = "a list" if isinstance(conversation, (list, tuple)) else f"a {type(conversation).__name__}"
        hint = ": convlab.read() returns a list, replay each one (or tune them all)" if isinstance(conversation, (list, tuple)) else ""
        raise TypeError(f"replay takes one Conversation, got {what}{hint}")
    chosen = options_of(options, knobs, "replay")
    summaries = chosen.summaries()
    p = plan(conversation)
    counts = ExactCounts()
    summarize = None if summaries is None else (lambda request, tokens, guessed: summaries.complete(request))
    replayer = Replayer(p, config, counts=counts, agent=chosen.agent, summarize=summarize, worker=chosen.worker,
                        **chosen.replaying())  # the config checked before any work too
    counts.prime(p.texts())  # one batch, as a sweep does
    result = replayer.run().result()
    replayer.close()  # the session it returns no longer holds the replayer (its plan, its records) through a subscription
    if summaries is not None:
        summaries.warn_failed()
    return result
