"""The session's state and the one way it changes: the base every part of ``Session`` is built on.

Every change is an event, and every event changes the model through one
function, ``_apply`` (the reducer). The live session emits events into
``_apply``; loading a log feeds the same events through it. So a loaded
session equals the live one by construction, and the log alone rebuilds it.
``_apply`` only records: it never decides, asks or builds what a worker sees.

What is not in the events is the answer in flight (``Answer``): the actions
of the worker's answer not run yet. It is the engine's work in flight; a log
that ends mid-answer loses it (docs/protocol.md 8), except a decision that was
waiting, which the log holds whole. What the events say about model calls
(ids taken, calls held, the open ``context.limit``) lives in one ``CallBook``.

Failures stay small (docs/protocol.md, rev 4). An event is written to the log
before ``_apply`` sees it, and each entry point (``submit``, ``decide``,
``step``, ``run``) happens whole or not at all: when a write fails, the log is
cut back and the session returns to where the entry point found it
(``_atomic``), so memory always equals the log and a refused input wrote
nothing. Whatever a provider raises is a failed call (``providers.call``);
whatever else goes wrong inside a step fails that turn only (``step``).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .. import jsondata, providers
from ..context import ContextConfig
from ..errors import CallCancelled, LogError
from ..lazy import LazyEvents, LazyTree
from ..log import TREE_EVENTS, LogWriter, apply_tree_event, checked_event, event_at, read_lines
from ..tree import Message, Tree
from ..wire import Decision, Event, Turn
from .workers import WorkerLike

#: How a turn can end (docs/protocol.md 3).
TURN_ENDS = ("turn.completed", "turn.failed", "turn.cancelled")


@dataclass
class Answer:
    """The worker's answer being run: its actions not run yet, and the last reply a
    call in it recorded. When the actions are used up the engine asks
    ``llm.result`` with that reply, or completes the turn when there is none
    (docs/protocol.md 4). A held call or ``turn.end`` ends the answer: the running
    turn drops it (``Session._answer = None``), nothing else changes it."""

    actions: deque
    reply: Message | None = None


@dataclass
class CallBook:
    """What the events say about model calls, changed only by ``_apply``.

    ``ids``: call ids taken (``llm-N`` never repeats). ``held``: per call held
    by ``context.limited``, its ``llm`` and ``model`` and whether a provider
    refused it as too long (a held call is not held again; refused twice, the
    turn fails). ``open_limit``: the held call whose ``context.limit`` is not
    settled yet by ``context.replaced`` or ``context.kept``. ``called``: the
    running turn has made a model call (``idle_secs`` applies only before).
    ``announced``: the id each streamed call announced for its reply
    (``llm.started``'s ``message_id``) that no message holds yet: a call that
    failed or was cancelled keeps its id for good (docs/protocol.md, rev 4), so
    no other message ever takes it.
    """

    ids: set[str] = field(default_factory=set)
    held: dict[str, dict[str, Any]] = field(default_factory=dict)
    open_limit: str | None = None
    called: bool = False
    announced: dict[str, str | None] = field(default_factory=dict)  # streamed reply id -> its turn, until recorded

    def started(self, ev: Mapping[str, Any]) -> None:
        self.ids.add(ev["call_id"])
        if not ev.get("summary"):
            self.called = True
        if ev.get("message_id"):
            self.announced[ev["message_id"]] = ev.get("turn_id")

    def limited(self, ev: Mapping[str, Any]) -> None:
        call_id = ev["call_id"]
        self.ids.add(call_id)
        self.called = True
        entry = self.held.setdefault(call_id, {"llm": ev.get("llm"), "model": ev.get("model"), "overflowed": False})
        entry["overflowed"] = entry["overflowed"] or ev["reason"] == "overflow"
        self.open_limit = call_id

    def turn_started(self) -> None:
        self.called = False
        self.open_limit = None


class Journal:
    """A session's state (``_setup``), the events that change it (``_emit``, ``_apply``), who is told of
    them (``_tell``), an entry point whole or not at all (``_atomic``), a log read back through the reducer
    (``_replay_log``), and the ids it hands out."""

    def _setup(self, agent: str, config: ContextConfig, llm: providers.LLM, worker: WorkerLike, autorun: bool,
               clock: float | None, keep_events: int | None = None) -> None:
        """Everything a new or a loaded session starts from (the one constructor both use)."""
        if keep_events is not None and (not isinstance(keep_events, int) or isinstance(keep_events, bool) or keep_events < 1):
            raise ValueError(f"keep_events takes a whole number of events, 1 or more (or None: all), got {keep_events!r}")
        if not isinstance(agent, str) or not agent:
            raise ValueError(f"agent must be a non-empty string, got {agent!r}")
        if worker not in ("chat", "manual") and not callable(worker):
            raise ValueError(f"worker must be 'chat', 'manual' or a callable, got {worker!r}")
        self.agent = agent
        self.config = config
        self.llms = providers.named(llm)
        self.worker = worker
        self.autorun = bool(autorun)
        self.clock = _time(clock or 0.0, "clock")
        self._tree: Tree = Tree()
        self._keep_events = keep_events
        # LazyEvents: a lazy session's, read from its log, or with keep_events the older ones in a scratch file
        self.events: list[Event] | LazyEvents = [] if keep_events is None else LazyEvents(keep=keep_events)
        self.turns: list[Turn] = []
        self._turn_of: dict[str, Turn] = {}
        self._queue: list[str] = []
        self._running: str | None = None
        self.last_turn_end: float | None = None
        self._waiting_ids: set[str] = set()  # message ids in queued turns
        self._calls = CallBook()
        self._asked: dict[str, Any] | None = None  # the waiting decision as logged
        self._pending: Decision | None = None  # ... as the worker sees it, built on first use
        self._answer: Answer | None = None
        self._e_next = 1
        self._llm_next = 1
        self._subscribers: tuple[tuple[Callable[[Mapping[str, Any]], None], frozenset[str] | None], ...] = ()  # (fn, types)
        # per event type, who wants it: made from one tuple of subscribers (a new tuple: a new map)
        self._told: tuple[object, dict[str, tuple[Callable[[Mapping[str, Any]], None], ...]]] = ((), {})
        self._log: LogWriter | None = None
        self._atomic_depth = 0

    def _emit(self, type_: str, turn_id: str | None = None, **fields: Any) -> Event:
        """Record an event: written to the log (and flushed) first, then applied,
        then shown to subscribers (docs/protocol.md, rev 4: written before applied). A
        write that fails raises ``LogError`` with nothing applied; the entry
        point that emitted it then undoes what it had applied (``_atomic``).
        Its fields are trusted: checked and copied at the edge (``inputs``), or
        built here; nothing keeps a reference to change them."""
        event: dict[str, Any] = {"seq": len(self.events) + 1, "time": self.clock, "type": type_}
        if turn_id is not None:
            event["turn_id"] = turn_id
        event.update(fields)
        if self._log is not None:
            self._log.write(event)
        self._apply(event)
        # an Event is seq, time, type and the fields its type has (wire.EVENT_FIELDS): more keys than its
        # TypedDict names, which mypy cannot say yet (no open TypedDicts, PEP 728)
        made = cast(Event, event)
        self.events.append(made)
        self._tell(made)
        return made

    def _tell(self, event: Mapping[str, Any]) -> None:
        """Show an event (or a notice: ``llm.delta``, ``session.restored``) to every
        subscriber that wants it. A subscriber that raises is its own bug: it is
        named in a ``RuntimeWarning`` and the session goes on."""
        kind = event["type"]
        subscribers, told = self._told
        if subscribers is not self._subscribers:  # (un)subscribed since: a new tuple, so a new map
            subscribers, told = self._told = (self._subscribers, {})
        fns = told.get(kind)
        if fns is None:
            fns = told[kind] = tuple(fn for fn, types in subscribers if types is None or kind in types)
        for fn in fns:  # a tuple: (un)subscribing while it runs makes a new one
            try:
                fn(event)
            except CallCancelled:
                raise
            except Exception as err:
                warnings.warn(f"a subscriber ({getattr(fn, '__qualname__', fn)!s}) raised on {event['type']}: "
                              f"{type(err).__name__}: {err}", RuntimeWarning, stacklevel=3)

    @contextlib.contextmanager
    def _atomic(self) -> Iterator[None]:
        """An entry point (``submit``, ``decide``, ``step``, ``run``) happens whole or
        not at all. When a log write fails inside it, the log is cut back to where
        the entry point found it and the session returns to that state (its answer
        in flight included); subscribers are told with ``session.restored`` (not an
        event: no ``seq`` of its own, never logged), and the ``LogError`` is raised.
        Called again once the log takes writes, it goes on. Nested entry points
        (``submit`` running ``run``) are one."""
        if self._atomic_depth:
            yield
            return
        answer = None if self._answer is None else (list(self._answer.actions), self._answer.reply)
        mark = (len(self.events), self.clock, answer, self._log.size if self._log is not None else 0)
        self._atomic_depth = 1
        try:
            yield
        except LogError as err:
            self._restore(*mark)
            self._tell({"time": self.clock, "type": "session.restored", "seq": mark[0], "error": str(err)})
            raise
        finally:
            self._atomic_depth = 0

    def _restore(self, n_events: int, clock: float, answer: tuple[list, Any] | None, log_size: int) -> None:
        """The session as its first ``n_events`` events make it (the log cut back to
        them), the clock and the answer in flight as they were."""
        if len(self.events) > n_events:
            kept_events = self.events[:n_events]
            log, subscribers = self._log, self._subscribers
            lazy = isinstance(self._tree, LazyTree)
            self._setup(self.agent, self.config, self.llms, self.worker, self.autorun, None, self._keep_events)
            self._log, self._subscribers = log, subscribers
            if lazy and log is not None:  # a lazy session reads its contents from the log: read it again
                log.cut(log_size)
                lines = read_lines(log.path)
                self._replay_log(str(log.path), next(lines), lines, lazy=log.path)
            else:
                for ev in kept_events:
                    self._apply(ev)
                    self.events.append(ev)
        if self._log is not None:
            self._log.cut(log_size)
        self.clock = clock
        self._answer = None if answer is None else Answer(deque(answer[0]), answer[1])

    def _apply(self, ev: Mapping[str, Any]) -> None:
        """The reducer: change the model by one event (live, or read from a log)."""
        t = ev["type"]
        if t in TREE_EVENTS:
            apply_tree_event(self._tree, ev)
            if t == "message.new":
                mid = ev["message"]["id"]
                self._waiting_ids.discard(mid)
                self._calls.announced.pop(mid, None)
        elif t.startswith("turn."):
            self._apply_turn(t, ev)
        elif t == "decision.requested":
            self._asked, self._pending = ev["decision"], None
        elif t == "decision.answered":
            self._asked = self._pending = None
        elif t == "llm.started":
            self._calls.started(ev)
        elif t == "context.limited":
            self._calls.limited(ev)
        elif t in ("context.replaced", "context.kept"):
            self._calls.open_limit = None

    def _apply_turn(self, t: str, ev: Mapping[str, Any]) -> None:
        if t == "turn.queued":
            turn = self._keep_turn(ev["turn"])
            self._queue.append(turn["id"])
            self._waiting_ids.update(m["id"] for m in turn["messages"] if m.get("id"))
        elif t == "turn.merged":
            turn = self._turn_of[ev["turn_id"]]
            turn["messages"] = [*turn["messages"], *ev["messages"]]  # replaced whole (see _keep_turn)
            if ev.get("client_state") is not None:
                turn["client_state"] = ev["client_state"]
            self._waiting_ids.update(m["id"] for m in ev["messages"] if m.get("id"))
        elif t == "turn.started":
            tid = ev["turn_id"]
            if tid in self._turn_of:
                self._queue.remove(tid)
                turn = self._turn_of[tid]
            else:
                turn = self._keep_turn(ev["turn"])
            # the event's own trigger, shared (see _request); its messages now in the tree
            turn["status"], turn["trigger"], turn["started"] = "running", ev["trigger"], ev["time"]
            if turn["messages"]:  # an empty list stays: the one the event's turn holds (_keep_turn)
                turn["messages"] = []
            self._running = tid
            self._calls.turn_started()
        elif t in TURN_ENDS:
            turn = self._turn_of[ev["turn_id"]]
            turn["status"], turn["ended"] = t.split(".")[1], ev["time"]
            if t == "turn.failed":
                turn["error"] = ev.get("error")
            elif t == "turn.cancelled":
                turn["reason"] = ev.get("reason")
            if self._running == ev["turn_id"]:
                self._running = None
            self.last_turn_end = ev["time"]
            self._asked = self._pending = None
            self._calls.open_limit = None

    def _keep_turn(self, logged: Mapping[str, Any]) -> Turn:
        """The session's own turn, from the turn an event logs: a copy of its top level
        that shares what is under it (trigger, client_state, messages) with the event.
        The session changes a turn only by replacing a field whole, never a value in
        place, so the event stays as logged; like ``_request``'s sharing, it keeps
        fewer objects for each of Python's full collections to visit."""
        turn = cast(Turn, dict(logged))
        self.turns.append(turn)
        self._turn_of[turn["id"]] = turn
        return turn

    def _replay_log(self, name: str, head: tuple[int, int, bytes], lines: Iterable[tuple[int, int, bytes]], *,
                    lazy: str | os.PathLike | None = None) -> None:
        """Every logged event through the reducer, in order. With ``lazy`` (the log's path), into a lazy tree
        and events over that log, made the session's own: only the tree's structure and the active path's
        contents stay in memory (``convlab.lazy``)."""
        lazily = None
        if lazy is not None:
            lazily = LazyTree(lazy), LazyEvents(lazy, keep=self._keep_events)
            self._tree, self.events = lazily
        for item in itertools.chain([head], lines):
            ev = event_at(name, item)
            if lazily is not None:
                lazily[0].offset = item[1]
            self._replay_event(name, item[0], ev, kept=lazily is None)
            if lazily is not None:
                lazily[1].add_logged(item[1])
        if lazily is not None:
            lazily[0].offset = -1
            lazily[0].warm(lazily[0].path_ids())

    def _replay_events(self, name: str, events: Iterable[Mapping[str, Any]], *, copied: bool = True) -> None:
        """Every event of ``events`` through the reducer, in order, each a copy (``jsondata.copy``: what its
        log line reads back as, so the session shares nothing with them), or itself (``copied=False``: a
        caller that changes none of them): a log read back without its lines."""
        for number, ev in enumerate(events, 1):
            try:
                event = checked_event(jsondata.copy(ev) if copied else ev)
            except ValueError as err:
                raise LogError(f"{name}: event {number} is not a valid event: {err}", line=number) from None
            self._replay_event(name, number, event)

    def _replay_event(self, name: str, number: int, ev: dict[str, Any], *, kept: bool = True) -> None:
        """One logged event (line ``number`` of the log ``name``) through the reducer, and into ``events``
        unless a lazy log keeps them (``kept=False``); an event that does not fit is a ``LogError`` naming it."""
        try:
            self._apply(ev)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise LogError(f"{name}: line {number}: the {ev['type']} event does not fit the session ({err!r})", line=number) from None
        if kept:
            self.events.append(cast(Event, ev))  # a logged event, checked by event_at (or _replay_events)

    # ------------------------------------------------------------------
    # ids
    # ------------------------------------------------------------------
    def _new_ids(self, n: int, given: Iterable[str] = ()) -> list[str]:
        """``n`` engine ids ``eN``: in order, skipping any recorded, waiting or ``given`` id.

        Nothing is reserved: an id is taken once its message is recorded, so a
        loaded session hands out the same ids as the live one would have.
        """
        taken, waiting, announced, given = self._tree, self._waiting_ids, self._calls.announced, set(given)
        k = self._e_next
        while f"e{k}" in taken or f"e{k}" in waiting or f"e{k}" in announced:
            k += 1
        self._e_next = k  # every id below k is taken for good
        out: list[str] = []
        while len(out) < n:
            cand = f"e{k}"
            k += 1
            if cand not in taken and cand not in waiting and cand not in announced and cand not in given:
                out.append(cand)
        return out

    def _ids_for(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """The id each message is recorded under: its own, or the next engine id."""
        fresh = iter(self._new_ids(sum(1 for m in messages if not m.get("id")), (m["id"] for m in messages if m.get("id"))))
        return [m.get("id") or next(fresh) for m in messages]

    def _new_call_id(self) -> str:
        k = self._llm_next
        while f"llm-{k}" in self._calls.ids:
            k += 1
        self._llm_next = k
        return f"llm-{k}"

    def _known(self, message_id: str | None) -> bool:
        """Recorded, waiting in a queued turn, or announced for a streamed reply."""
        return message_id is not None and (message_id in self._tree or message_id in self._waiting_ids
                                           or message_id in self._calls.announced)



def _time(value: float, what: str) -> float:
    """A clock reading: a finite number of seconds (a log cannot hold NaN or infinities)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{what} takes a finite number of seconds, got {value!r}")
    return float(value)
