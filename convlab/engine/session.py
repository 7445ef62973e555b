"""Session: an executable, deterministic model of one agent's session in the engine.

Every change is an event, and every event changes the model through one
function, ``_apply`` (the reducer). The live session emits events into
``_apply``; loading a log feeds the same events through it. So a loaded
session equals the live one by construction, and the log alone rebuilds it.
``_apply`` only records: it never decides, asks or builds what a worker sees.

What is not in the events is the answer in flight (``_Answer``): the actions
of the worker's answer not run yet. It is the engine's work in flight; a log
that ends mid-answer loses it (docs/protocol.md 8), except a decision that was
waiting, which the log holds whole. What the events say about model calls
(ids taken, calls held, the open ``context.limit``) lives in one ``_CallBook``.

Failures stay small (docs/protocol.md, rev 4). An event is written to the log
before ``_apply`` sees it, and each entry point (``submit``, ``decide``,
``step``, ``run``) happens whole or not at all: when a write fails, the log is
cut back and the session returns to where the entry point found it
(``_atomic``), so memory always equals the log and a refused input wrote
nothing. Whatever a provider raises is a failed call (``providers.call``);
whatever else goes wrong inside a step fails that turn only (``step``).

Rules are docs/protocol.md's; where it is silent this module decides, and the
docstring of the method says so ("gap").
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
from types import MappingProxyType
from typing import Any, BinaryIO, TypeAlias, cast

from .. import inputs, jsondata, providers
from ..context import DEFAULT_PROMPT, ConfigLike, ContextConfig, Strategy, applies, coerce, kept
from ..errors import CallCancelled, LogError, ProviderError, Refused
from ..lazy import LazyEvents, LazyTree
from ..log import TREE_EVENTS, LogWriter, apply_tree_event, event_at, read_lines
from ..tokens import content_chars, content_text, estimate
from ..tree import Message, PathView, Tree, ViewError, message_of, new_node
from ..wire import EVENT_FIELDS, Decision, Event, Receipt, Snapshot, Turn, receipt

__all__ = ["Session", "Worker", "chat_worker", "SUMMARY_PREFIX"]

#: How a summary message opens: it says the earlier conversation was summarized.
SUMMARY_PREFIX = "The earlier conversation was summarized:\n\n"

MAX_STEPS = 100_000  # a run() that takes more steps has a worker that never ends its turns

#: How a turn can end (docs/protocol.md 3).
TURN_ENDS = ("turn.completed", "turn.failed", "turn.cancelled")

#: A worker (``Session(worker=...)``, a replay's ``worker``): the decision request as it sees it
#: (``Session.pending``) -> its actions, which the engine checks as they come back (``inputs.validate_actions``).
Worker: TypeAlias = Callable[[Decision], list[dict[str, Any]]]

#: What ``Session(worker=...)`` takes: ``"chat"``, ``"manual"`` or a worker; a worker typed to take a
#: plain ``dict`` too (a decision is one at run time: PEP 589 makes no TypedDict a ``dict`` to a type checker).
WorkerLike: TypeAlias = str | Worker | Callable[[dict], list]


def chat_worker(decision: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The built-in worker: call the model unless the path ends with an assistant
    message; end the turn on a result; accept what ``context.limit`` proposes.

    >>> chat_worker({"type": "turn.start", "messages": [{"role": "user", "content": "hi"}]})
    [{'type': 'llm.call'}]
    """
    kind = decision["type"]
    if kind == "turn.start":
        messages = decision["messages"]
        if messages and messages[-1]["role"] == "assistant":
            return []
        return [{"type": "llm.call"}]
    if kind == "context.limit":
        return list(decision["proposed"])
    return []


@dataclass
class _Answer:
    """The worker's answer being run: its actions not run yet, and the last reply a
    call in it recorded. When the actions are used up the engine asks
    ``llm.result`` with that reply, or completes the turn when there is none
    (docs/protocol.md 4). A held call or ``turn.end`` ends the answer: the running
    turn drops it (``Session._answer = None``), nothing else changes it."""

    actions: deque
    reply: Message | None = None


@dataclass
class _CallBook:
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


class Session:
    """One agent's session: the tree, the head, turns and the queue, decisions,
    the context count and strategies, and the session log.

    >>> s = Session()
    >>> s.submit({"type": "client.message", "agent_id": "bot",
    ...           "message": {"id": "u1", "role": "user", "content": "hi"}})
    {'status': 200, 'turn_id': 't1', 'queued': False, 'merged': False, 'duplicate': False}
    >>> [(m["id"], m["role"], m["content"]) for m in s.path()]
    [('u1', 'user', 'hi'), ('e1', 'assistant', 'echo: hi')]
    """

    #: The event types a session records (docs/wire.md), and the notices it only tells
    #: its subscribers (no ``seq``, never logged): what ``subscribe(types=...)`` picks from.
    EVENTS: tuple[str, ...] = tuple(EVENT_FIELDS)
    NOTICES: tuple[str, ...] = ("llm.delta", "session.restored")

    def __init__(
        self,
        config: ConfigLike = None,
        agent: str = "bot",
        llm: providers.LLM = None,
        worker: WorkerLike = "chat",
        autorun: bool = True,
        log: str | os.PathLike | None = None,
        clock: float | None = None,
    ):
        self._setup(agent, coerce(config, agent), llm, worker, autorun, clock)
        self._log: LogWriter | None = LogWriter(log) if log is not None else None
        self._emit("session.started", agent=agent, config=self.config.to_dict())

    def _setup(self, agent: str, config: ContextConfig, llm: providers.LLM, worker: WorkerLike, autorun: bool,
               clock: float | None) -> None:
        """Everything a new or a loaded session starts from (the one constructor both use)."""
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
        self.events: list[Event] | LazyEvents = []  # LazyEvents: a lazy session's, read from its log
        self.turns: list[Turn] = []
        self._turn_of: dict[str, Turn] = {}
        self._queue: list[str] = []
        self._running: str | None = None
        self.last_turn_end: float | None = None
        self._waiting_ids: set[str] = set()  # message ids in queued turns
        self._calls = _CallBook()
        self._asked: dict[str, Any] | None = None  # the waiting decision as logged
        self._pending: Decision | None = None  # ... as the worker sees it, built on first use
        self._answer: _Answer | None = None
        self._e_next = 1
        self._llm_next = 1
        self._subscribers: tuple[tuple[Callable[[Mapping[str, Any]], None], frozenset[str] | None], ...] = ()  # (fn, types)
        # per event type, who wants it: made from one tuple of subscribers (a new tuple: a new map)
        self._told: tuple[object, dict[str, tuple[Callable[[Mapping[str, Any]], None], ...]]] = ((), {})
        self._log = None
        self._atomic_depth = 0

    def __repr__(self) -> str:
        return (
            f"Session(agent={self.agent!r}, messages={len(self._tree)}, head={self.head!r}, "
            f"turns={len(self.turns)}, running={self._running!r}, queued={len(self._queue)})"
        )

    # ------------------------------------------------------------------
    # reading
    # ------------------------------------------------------------------
    @property
    def tree(self):
        """The message tree: a ``networkx.DiGraph``, one node per message, edge parent -> child."""
        return self._tree.graph

    @property
    def message_tree(self) -> Tree:
        """The underlying :class:`convlab.tree.Tree`, as ``Conversation.message_tree``: a node's
        attributes (``node``), ``parent``, ``children``, depths and counts, read without building
        the ``networkx`` graph ``tree`` gives (once built, that graph is kept up to date with every
        message: a widget that follows a long run reads this instead). Read it; the session changes it."""
        return self._tree

    @property
    def head(self) -> str | None:
        return self._tree.head

    @property
    def running(self) -> str | None:
        """The running turn's id, or None."""
        return self._running

    @property
    def queued(self) -> list[str]:
        """Ids of the queued turns, in the order they will run."""
        return list(self._queue)

    @property
    def state(self) -> dict[str, Any]:
        """The worker state along the active path (docs/protocol.md 6)."""
        return self._tree.state_at()

    @property
    def idle_for(self) -> float | None:
        """Seconds since the previous turn ended (what ``idle_secs`` measures); None before any turn ended."""
        return None if self.last_turn_end is None else self.clock - self.last_turn_end

    @property
    def pending(self) -> Decision | None:
        """The waiting decision request, as the worker sees it (the path root ->
        its head as ``messages``: fresh dicts, the worker's to keep), or None."""
        if self._pending is None and self._asked is not None:
            self._pending = self._worker_view(self._asked)
        return self._pending

    @property
    def decision(self) -> Mapping[str, Any] | None:
        """The waiting decision request as the log holds it, or None: ``pending``
        without the path (its ``head`` names it; ``call.request`` has no
        ``messages``). O(1), nothing is copied: read it, do not change it.
        For a caller that looks at what waits (its ``type``, ``proposed``, the
        ``reply``) and never reads the path.

        >>> s = Session(worker="manual")
        >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
        >>> s.decision["type"], s.decision["head"], "messages" in s.decision, len(s.pending["messages"])
        ('turn.start', 'u1', False, 1)
        """
        return None if self._asked is None else MappingProxyType(self._asked)

    def path(self, node_id: str | None = None) -> list[dict[str, Any]]:
        """Node dicts root -> head (or root -> ``node_id``): what the model reads."""
        if node_id is not None and node_id not in self._tree:
            raise KeyError(f"no message {node_id!r} in the tree")
        return self._tree.path(node_id)

    def tokens(self) -> int:
        """The count of docs/protocol.md 5.1 for the active path (O(1))."""
        return self._tree.count()

    def children(self, node_id: str | None) -> list[str]:
        """Children of a node (None: the top-level messages), oldest first."""
        return self._tree.children(node_id)

    def view(self, node_id: str) -> list[Message]:
        """The view root -> ``node_id``, every message with its id: submitted as
        ``client.messages`` it moves the head there and writes nothing."""
        if node_id not in self._tree:
            raise KeyError(f"no message {node_id!r} in the tree")
        return self._tree.messages(node_id)

    def snapshot(self) -> Snapshot:
        """The whole tree as JSON: agent, head, every node with its attributes, turns."""
        return {
            "agent": self.agent,
            "head": self.head,
            "nodes": jsondata.copy(self._tree.nodes_in_order()),
            "turns": jsondata.copy(self.turns),
        }

    def subscribe(self, fn: Callable[[Mapping[str, Any]], None], types: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``fn(event)`` after every event, and on every ``llm.delta``
        while a call streams; returns a function that unsubscribes. With
        ``types`` (event types, notices included), only for those: a widget
        that shows a few kinds is not called for the rest.

        >>> s = Session(); seen = []
        >>> stop = s.subscribe(lambda e: seen.append(e["type"]), types={"turn.started", "turn.completed"})
        >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        >>> stop(); seen
        ['turn.started', 'turn.completed']
        """
        entry = (fn, None if types is None else frozenset(types))
        self._subscribers += (entry,)
        self._told = (self._subscribers, {})

        def unsubscribe() -> None:
            self._subscribers = tuple(e for e in self._subscribers if e is not entry)
            self._told = (self._subscribers, {})  # the map held the listener: let it go with it

        return unsubscribe

    def advance(self, seconds: float) -> None:
        """Move the simulated clock forward."""
        self.clock += _seconds(seconds, "advance")

    # ------------------------------------------------------------------
    # events: the one way the model changes
    # ------------------------------------------------------------------
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
            self._setup(self.agent, self.config, self.llms, self.worker, self.autorun, None)
            self._log, self._subscribers = log, subscribers
            if lazy and log is not None:  # a lazy session reads its contents from the log: read it again
                log.cut(log_size)
                lazily = LazyTree(log.path), LazyEvents(log.path)
                self._tree, self.events = lazily
                lines = read_lines(log.path)
                self._replay_log(str(log.path), next(lines), lines, lazily)
                lazily[0].offset = -1
                lazily[0].warm(lazily[0].path_ids())
            else:
                for ev in kept_events:
                    self._apply(ev)
                    self.events.append(ev)
        if self._log is not None:
            self._log.cut(log_size)
        self.clock = clock
        self._answer = None if answer is None else _Answer(deque(answer[0]), answer[1])

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

    # ------------------------------------------------------------------
    # client input (docs/protocol.md 2 and 3)
    # ------------------------------------------------------------------
    def submit(self, message: Mapping[str, Any]) -> Receipt:
        """Take one client input. Returns the receipt, or raises ``Refused``
        (400, 404, 409). A refused input writes nothing, moves nothing and
        emits nothing."""
        inp = inputs.validate(message, self.agent)
        kind = inp["type"]
        left_out = self._leave_out(inp) if "messages" in inp else []
        with self._atomic():
            if kind == "client.interrupt":
                taken = self._interrupt()
            elif kind == "client.messages":
                taken = self._submit_view(inp)
            else:
                taken = self._submit_messages(inp)
            if self.autorun:
                self.run()
        if left_out:
            taken["left_out"] = left_out
        return taken

    def _leave_out(self, inp: dict[str, Any]) -> list[str]:
        """Take out of the input's messages every reply whose id a streamed call
        announced and no message holds (a stopped reply a client kept, docs/protocol.md
        rev 4, gap): it is not an answer, so the view goes on from its parent.
        Returns their ids. Another role under such an id is refused (400)."""
        announced = self._calls.announced
        if not announced:
            return []
        out = []
        for i, m in enumerate(inp["messages"]):
            if m.get("id") in announced:
                if m["role"] != "assistant":
                    raise Refused(400, f"messages[{i}].id: {m['id']!r} is the id of a streamed reply that was stopped; "
                                       "give this message another id")
                out.append(m["id"])
        inp["left_out"] = out
        if out:
            inp["messages"] = [m for m in inp["messages"] if m.get("id") not in announced]
            if not inp["messages"] and inp["type"] == "client.messages":
                raise Refused(400, f"messages: every message is a stopped reply ({', '.join(out)}); the view is empty")
        return out

    def _refuse_busy(self) -> None:
        raise Refused(409, f"turn {self._running} is running: send queue: true to wait, or interrupt it first", turn_id=self._running)

    def _submit_messages(self, inp: dict[str, Any]) -> Receipt:
        kind, msgs, queue = inp["type"], inp["messages"], inp.get("queue")
        fresh = [m for m in msgs if not self._known(m.get("id"))]
        if not fresh:  # a retry: every message already recorded or waiting (checked before 409)
            first = msgs[0]["id"] if msgs else inp["left_out"][0]
            return receipt(200, self._turn_that_took(first), duplicate=True)
        if self._running is not None and queue is None:
            self._refuse_busy()
        if queue is not None and (self._running is not None or self._queue):
            last = self._turn_of[self._queue[-1]] if self._queue else None
            if queue == "merge" and last is not None and last["queue"] == "merge":
                self._emit("turn.merged", turn_id=last["id"], messages=fresh, client_state=inp.get("state"))
                return receipt(202, last["id"], queued=True, merged=True)
            turn = self._new_turn({"type": kind, "message_ids": []}, inp, fresh, queue="merge" if queue == "merge" else "queue")
            turn["status"] = "queued"
            self._emit("turn.queued", turn_id=turn["id"], turn=turn)
            return receipt(202, turn["id"], queued=True)
        turn = self._new_turn({"type": kind, "message_ids": []}, inp, fresh)
        self._start(turn, fresh, under=self.head)
        return receipt(200, turn["id"])

    def _turn_that_took(self, mid: str) -> str | None:
        if mid in self._tree:
            return self._tree.node(mid)["turn_id"]
        if mid in self._calls.announced:
            return self._calls.announced[mid]
        return next((tid for tid in self._queue if any(m.get("id") == mid for m in self._turn_of[tid]["messages"])), None)

    def _new_turn(self, trigger: dict[str, Any], inp: Mapping[str, Any], messages: list, queue: str | None = None) -> Turn:
        """A turn for an accepted input (its trigger's ``message_ids`` are named when it starts)."""
        return {
            "id": f"t{len(self.turns) + 1}",
            "status": "running",
            "trigger": trigger,
            "queue": queue,
            "client_state": inp.get("state") or {},
            "messages": messages if queue else [],  # a queued turn holds its messages until it starts
            "created": self.clock,
            "started": None,
            "ended": None,
            "error": None,
        }

    def _submit_view(self, inp: dict[str, Any]) -> Receipt:
        view = inp["messages"]
        try:
            new_from, last = self._tree.match(view)
        except ViewError as err:
            raise Refused(400, str(err)) from None
        rest = view[new_from:]
        moves = last != self.head
        if self._running is not None and (rest or not moves):
            self._refuse_busy()
        turn = self._new_turn({"type": "client.messages", "new_from": new_from}, inp, rest)
        if not rest and moves:
            self._emit("head.moved", turn_id=turn["id"], **{"from": self.head, "to": last})
        if self._running is not None:  # a head-only view during a turn: it runs next, ahead of the queue
            self._end_turn("turn.cancelled", then_queue=False, reason=f"the head moved to {last} (turn {turn['id']})")
        self._start(turn, rest, under=last)
        return receipt(200, turn["id"], new_from=new_from)

    def _interrupt(self) -> Receipt:
        if self._running is None:
            raise Refused(409, "no turn is running: nothing to interrupt")
        tid = self._running
        self._end_turn("turn.cancelled", reason="interrupted")
        return receipt(200, tid)

    # ------------------------------------------------------------------
    # turns
    # ------------------------------------------------------------------
    def _start(self, turn: Turn, messages: list[Message], *, under: str | None) -> None:
        """Start ``turn``: ``turn.started``, its messages as a chain under
        ``under``, then the ``turn.start`` decision."""
        tid = turn["id"]
        messages = [m for m in messages if not (m.get("id") and m["id"] in self._tree)]
        ids = self._ids_for(messages)
        trigger = turn["trigger"]
        if "message_ids" in trigger:
            trigger = {**trigger, "message_ids": ids}
        queued = tid in self._turn_of
        self._emit("turn.started", turn_id=tid, trigger=trigger, **({} if queued else {"turn": turn}))
        for m, mid in zip(messages, ids, strict=True):
            self._emit("message.new", turn_id=tid, message=new_node(m, id=mid, parent=under, seq=self._tree.seq + 1,
                                                                    time=self.clock, turn_id=tid))
            under = mid
        self._request("turn.start")

    def _start_next(self) -> bool:
        """Start the first queued turn, if any: its messages go under the head now."""
        if not self._queue:
            return False
        turn = self._turn_of[self._queue[0]]
        self._start(turn, turn["messages"], under=self.head)
        return True

    def _end_turn(self, kind: str, *, then_queue: bool = True, **fields: Any) -> None:
        """End the running turn, however it ends: the open ``context.limit`` is
        settled (``context.kept``), the answer in flight is dropped, and the next
        queued turn starts at once (rev 3: a queue never waits while no turn runs),
        except when a head-only view cancels the turn: its own turn runs next."""
        self._settle_limit()
        self._answer = None
        self._emit(kind, turn_id=self._running, **fields)
        if then_queue:
            self._start_next()

    def _fail(self, error: str) -> None:
        self._end_turn("turn.failed", error=error)

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------
    def run(self) -> None:
        """Run until no turn runs or waits in the queue, or a decision waits."""
        with self._atomic():
            for _ in range(MAX_STEPS):
                if not self.step():
                    return
        raise RuntimeError(f"run() took more than {MAX_STEPS} steps: does the worker ever end its turns?")

    def step(self) -> bool:
        """One engine step: answer a decision, or run one action. Returns False
        when there is nothing to do (or a decision waits for ``decide``).

        The turn's runner: whatever goes wrong inside a step fails that turn
        and only it (docs/protocol.md, rev 4). A provider's exception is already a
        failed call (``providers.call``); a call stopped on purpose
        (``CallCancelled``) cancels the turn; anything else (a bug) fails the
        turn with ``internal error`` and a ``RuntimeWarning``. Only ``LogError``
        leaves a step, which then applied nothing (``_atomic``)."""
        with self._atomic():
            try:
                return self._step()
            except LogError:
                raise
            except CallCancelled as err:
                if self._running is None:
                    raise
                self._end_turn("turn.cancelled", reason=str(err) or "the call was cancelled")
                return True
            except Exception as err:
                if self._running is None:
                    raise
                error = f"internal error: {type(err).__name__}: {err}"
                warnings.warn(f"turn {self._running} failed on a bug in the engine or a callback: {error}", RuntimeWarning,
                              stacklevel=2)
                self._end_turn("turn.failed", error=error)
                return True

    def _step(self) -> bool:
        if self._running is None:
            return self._start_next()  # only a log written before rev 3 can leave a queue waiting
        if self._asked is not None:
            return self._ask_worker(self._asked)
        if self._answer is None:
            return False  # a turn loaded from a log mid-answer: it waits for an interrupt
        if self._answer.actions:
            self._run_action(self._answer.actions.popleft())
        elif self._answer.reply is not None:
            self._request("llm.result", reply=self._answer.reply)
        else:
            self._end_turn("turn.completed")
        return True

    def _ask_worker(self, asked: dict[str, Any]) -> bool:
        worker = self.worker
        if worker == "manual":
            return False
        if isinstance(worker, str):  # "chat" (_setup takes no other name): it reads only the path's last message,
            actions = chat_worker({**asked, "messages": PathView(self._tree, asked["head"])})  # a view, not a copy
        else:
            decision = self.pending
            assert decision is not None  # ``asked`` waits: this is its view
            try:
                actions = worker(decision)  # type: ignore[arg-type]  # a worker typed (dict) -> list takes it: see WorkerLike
            except (CallCancelled, LogError):
                raise
            except Exception as err:  # the worker's bug fails its turn, never the session
                self._emit("decision.answered", turn_id=self._running, actions=[])
                name = getattr(self.worker, "__qualname__", None) or type(self.worker).__name__
                self._fail(f"the worker {name} raised {type(err).__name__}: {err}")
                return True
        try:
            actions = inputs.validate_actions(actions)
        except Refused as err:
            self._emit("decision.answered", turn_id=self._running, actions=[])
            self._fail(f"the worker's answer is not a list of actions: {err}")
            return True
        self._on_answer(actions)
        return True

    def decide(self, actions: list[dict[str, Any]]) -> None:
        """Answer the waiting decision with a list of actions.

        Refused (400, naming the action and field) when the answer's shape is
        wrong or an ``llm.call`` names a provider the session does not have:
        nothing runs and the decision still waits. An answer of the right shape
        runs; its actions fail the turn where docs/protocol.md says so (an empty
        ``context.replace``, 5.4).
        """
        if self._asked is None:
            raise Refused(409, "no decision is waiting")
        actions = inputs.validate_actions(actions)
        for i, a in enumerate(actions):
            if a["type"] == "llm.call" and a.get("llm") is not None and a["llm"] not in self.llms:
                raise Refused(400, f"actions[{i}].llm: no provider named {a['llm']!r} (known: {', '.join(self.llms)})")
        with self._atomic():
            self._on_answer(actions)
            if self.autorun:
                self.run()

    def _request(self, kind: str, **extra: Any) -> None:
        """Ask the worker. The event names the head instead of holding the path
        (the path of a node never changes), so a decision costs O(1) in the log
        however long the conversation. It shares the turn's ``trigger`` and
        ``client_state`` (the engine replaces them whole, never changes them in
        place): every object a session keeps is one more for each of Python's
        full collections to visit, which a long session pays per turn."""
        assert self._running is not None, "the worker is asked in the running turn"
        turn = self._turn_of[self._running]
        decision = {
            "type": kind,
            "turn_id": turn["id"],
            "trigger": turn["trigger"],
            "head": self.head,
            "state": self._tree.state_at(),
            "client_state": turn["client_state"],
            **extra,
        }
        self._emit("decision.requested", turn_id=turn["id"], decision=decision)

    def _worker_view(self, logged: Mapping[str, Any]) -> Decision:
        """The decision request a worker sees: the logged one plus the path
        root -> its head as ``messages`` (fresh dicts, the worker's to keep)."""
        decision = jsondata.copy(dict(logged))
        decision["messages"] = self._tree.messages(decision["head"])
        call = decision.get("call")
        if call is not None and call["request"].get("messages") is None:
            call["request"]["messages"] = self._tree.messages(decision["head"])
        return decision

    def _on_answer(self, actions: list[dict[str, Any]]) -> None:
        """Take the worker's answer: it becomes the answer in flight. An answer to
        ``context.limit`` that will not run a ``context.replace`` (none before a
        ``turn.end``) settles it right away (``context.kept``)."""
        answering_limit = (self._asked or {}).get("type") == "context.limit"
        self._emit("decision.answered", turn_id=self._running, actions=actions)
        self._answer = _Answer(deque(actions))
        if answering_limit and not _replaces(actions):
            self._settle_limit()

    def _settle_limit(self) -> None:
        """``context.kept`` for the open ``context.limit``, if any: with
        ``context.replaced`` (emitted by the replace itself) the one event that
        settles it (docs/protocol.md 5.3)."""
        if self._calls.open_limit is not None:
            self._emit("context.kept", turn_id=self._running, call_id=self._calls.open_limit)

    def _run_action(self, action: dict[str, Any]) -> None:
        kind = action["type"]
        tid = self._running
        if kind == "llm.call":
            self._call(action)
        elif kind == "message.add":
            msg = action["message"]
            if self._known(msg.get("id")):
                self._fail(f"message.add: id {msg['id']!r} is already recorded")
                return
            (mid,) = self._ids_for([msg])
            self._emit("message.new", turn_id=tid, message=new_node(msg, id=mid, parent=self.head, seq=self._tree.seq + 1,
                                                                    time=self.clock, turn_id=tid))
        elif kind == "state.set":  # a running turn always has a head: every turn records or moves to a message
            self._emit("state.changed", turn_id=tid, node=self.head, state=action["state"])
        elif kind == "context.replace":
            self._replace(action)
        elif kind == "turn.end":
            self._end_turn("turn.completed")

    # ------------------------------------------------------------------
    # model calls and making room (docs/protocol.md 5)
    # ------------------------------------------------------------------
    def _call(self, action: dict[str, Any]) -> None:
        """One ``llm.call``: checked against the strategies unless it was held
        before, then run; the reply is recorded under the head."""
        tid = self._running
        assert tid is not None, "a call runs in the running turn"
        call_id = action.get("id") or self._new_call_id()
        held = self._calls.held.get(call_id)
        llm_name = action.get("llm") or (held or {}).get("llm") or next(iter(self.llms))
        model = action.get("model") or (held or {}).get("model")
        if llm_name not in self.llms:
            self._fail(f"llm.call: no provider named {llm_name!r} (known: {', '.join(self.llms)})")
            return
        stream = action.get("stream", True)
        given = action.get("messages")
        call = {"id": call_id, "llm": llm_name, "model": model, "messages": given, "stream": stream}
        if held is None:
            tokens = self._tree.count() if given is None else estimate(sum(content_chars(m["content"]) for m in given))
            limit = applies(self.config, tokens, first_call=not self._calls.called, idle_for=self.idle_for)
            if limit is not None:
                self._hold(call, limit.reason, limit.strategy, tokens)
                return
        (mid,) = self._new_ids(1)  # exact: nothing else is recorded while the call runs
        announce = {"message_id": mid} if stream else {}  # streamed: llm.delta shows the id, so it is taken for good
        self._emit("llm.started", turn_id=tid, call_id=call_id, summary=False, llm=llm_name, model=model, **announce)
        # the path: a read-only view, read only where the provider reads it; messages the action names: its own copy
        messages = jsondata.copy(given) if given is not None else PathView(self._tree, self.head)
        request = {"model": model, "messages": messages, "stream": stream, "summary": False}
        try:
            reply = self._complete(self.llms[llm_name], request, self._delta_to(tid, call_id, mid) if stream else None)
        except ProviderError as err:
            self._emit("llm.failed", turn_id=tid, call_id=call_id, error=err.kind, message=str(err))
            if err.kind == "too_long" and not (held or {}).get("overflowed"):
                self._hold(call, "overflow", self.config.summarize_strategy(), self._tree.count())
            elif err.kind == "too_long":
                self._fail(f"the provider refused call {call_id} as too long again")
            else:
                self._fail(f"call {call_id} failed: {err}")
            return
        self._emit("llm.completed", turn_id=tid, call_id=call_id, usage=reply["usage"])
        node = new_node({"role": "assistant", **reply}, id=mid, parent=self.head, seq=self._tree.seq + 1, time=self.clock, turn_id=tid)
        self._emit("message.new", turn_id=tid, message=node)
        assert self._answer is not None, "the call runs in the answer in flight"
        self._answer.reply = message_of(node)

    def _delta_to(self, turn_id: str, call_id: str, message_id: str) -> Callable[[str], None]:
        """What passes a streamed chunk on as ``llm.delta`` (docs/protocol.md 7, rev 3): to
        subscribers only, never to ``events`` or the log, so it has no ``seq``."""

        def on_delta(text: str) -> None:
            self._tell({"time": self.clock, "type": "llm.delta", "turn_id": turn_id, "call_id": call_id,
                        "message_id": message_id, "text": text})

        return on_delta

    def _complete(self, provider: providers.Provider, request: dict[str, Any],
                  on_delta: Callable[[str], None] | None = None) -> dict[str, Any]:
        """One model call (``providers.call``); its ``latency`` moves the clock, whatever its outcome."""
        return providers.call(provider, request, on_delta, took=self._took)

    def _took(self, seconds: float) -> None:
        self.clock += seconds

    def _hold(self, call: dict[str, Any], reason: str, strategy: Strategy, tokens: int) -> None:
        """Hold the call (docs/protocol.md 5.3): ``context.limited``, the plan (with its
        summary calls), then the ``context.limit`` decision. Holding ends the
        answer in flight: its remaining actions are dropped (gap), the answer to
        ``context.limit`` takes their place."""
        tid = self._running
        self._answer = None
        self._emit("context.limited", turn_id=tid, reason=reason, strategy=strategy.use, tokens=tokens,
                   window=self.config.window, call_id=call["id"], llm=call["llm"], model=call["model"])
        self._request(
            "context.limit",
            reason=reason,
            strategy=strategy.use,
            tokens=tokens,
            window=self.config.window,
            call={"id": call["id"], "llm": call["llm"], "request": {"model": call["model"], "messages": call["messages"]},
                  "stream": call["stream"]},
            proposed=self._plan(call["id"], strategy),
        )

    def _plan(self, call_id: str, strategy: Strategy) -> list[dict[str, Any]]:
        """``proposed``: replace the history with ``kept`` (and a summary of what
        precedes it), then run the call; the call as it was when that would leave
        the model nothing new (nothing precedes ``kept``, an empty ``kept`` for a
        reset, or no summary could be made)."""
        tree = self._tree
        keep = kept(tree.node(n) for n in tree.ancestors(self.head))
        path = tree.path_ids()
        before = [tree.node(n) for n in path[: len(path) - len(keep)]]
        as_was = [{"type": "llm.call", "id": call_id}]
        if not before or (strategy.use == "reset" and not keep):
            return as_was
        kept_messages = [message_of(n) for n in keep]
        if strategy.use == "reset":
            return [{"type": "context.replace", "messages": kept_messages}, *as_was]
        summary = self._summarize(before, strategy)
        if summary is None:
            return as_was
        return [{"type": "context.replace", "summary": summary, "messages": kept_messages}, *as_was]

    def _summarize(self, before: Sequence[Mapping[str, Any]], strategy: Strategy) -> str | None:
        """Run the summary call(s) over ``before``; None when there is nothing to
        summarize or the call fails (the call is then proposed as it was)."""
        front = before[:1] if before and before[0]["kind"] == "summary" else []
        rest = before[len(front):]
        if not rest or (strategy.llm is not None and strategy.llm not in self.llms):
            return None
        llm_name = strategy.llm or next(iter(self.llms))
        prompt = strategy.prompt or DEFAULT_PROMPT
        tid = self._running
        for _ in range(3):
            call_id = self._new_call_id()
            self._emit("llm.started", turn_id=tid, call_id=call_id, summary=True, llm=llm_name, model=strategy.model)
            request = {
                "model": strategy.model,
                "messages": [*(message_of(n) for n in (*front, *rest)), {"role": "user", "content": prompt}],
                "stream": False,
                "summary": True,
            }
            try:
                reply = self._complete(self.llms[llm_name], request)
            except ProviderError as err:
                self._emit("llm.failed", turn_id=tid, call_id=call_id, error=err.kind, message=str(err), summary=True)
                if err.kind != "too_long":
                    return None
                rest = rest[max(1, len(rest) // 2):]
                if not rest:
                    return None
                continue
            self._emit("llm.completed", turn_id=tid, call_id=call_id, usage=reply["usage"], summary=True)
            return content_text(reply["content"])
        return None

    def _replace(self, action: dict[str, Any]) -> None:
        """context.replace (docs/protocol.md 5.4): a new branch at the root."""
        tid = self._running
        summary, messages = action.get("summary"), action.get("messages") or []
        if not summary and not messages:
            self._fail("context.replace needs a summary or messages: it has neither")
            return
        old_head = self.head
        nodes: list[dict[str, Any]] = []
        if summary:
            nodes.append({"role": "user", "content": SUMMARY_PREFIX + summary, "kind": "summary"})
        for m in messages:
            if m.get("id") and m["id"] in self._tree:
                nodes.append({**message_of(self._tree.node(m["id"]), with_id=False), "copied_from": m["id"]})
            elif m.get("id") in self._calls.announced:  # a stopped reply's id stays its own: a new message
                nodes.append({k: v for k, v in m.items() if k != "id"})
            else:
                nodes.append(m)
        first = {"replaces": old_head, "state": self._tree.state_at() or None}
        parent = None
        for n, mid in zip(nodes, self._ids_for(nodes), strict=True):
            node = new_node(n, id=mid, parent=parent, seq=self._tree.seq + 1, time=self.clock, turn_id=tid,
                            kind=n.get("kind", "message"), copied_from=n.get("copied_from"), **first)
            self._emit("message.new", turn_id=tid, message=node, **({"copied_from": n["copied_from"]} if n.get("copied_from") else {}))
            parent, first = mid, {}
        self._emit("context.replaced", turn_id=tid, **{"from": old_head, "to": self.head})

    # ------------------------------------------------------------------
    # the log
    # ------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        source: str | os.PathLike | BinaryIO,
        *,
        config: ConfigLike = None,
        agent: str | None = None,
        llm: providers.LLM = None,
        worker: WorkerLike = "chat",
        autorun: bool = True,
        clock: float | None = None,
        append: bool | None = None,
        lazy: bool = False,
    ) -> Session:
        """Rebuild a session from its log, in one pass, and go on appending to it.

        ``source`` is the log's path, or a binary file object open on it (a
        member of an archive, bytes in memory: ``io.BytesIO(raw)``).
        ``append`` (default: True for a path) goes on writing to the log;
        ``append=False`` loads without writing: the session goes on in memory
        only (a fork of the log), and a torn last line is left in the file. A
        file object is never written. ``lazy=True`` (a path only) keeps only
        the tree's structure and the active path's contents in memory; other
        contents (and the events) are read from the log when asked for
        (``convlab.lazy``). Every result equals eager loading. ``config``
        replaces the logged config; ``agent``, when given, must be the log's.

        A torn last line is dropped (``LogWarning``) and cut off the file; a
        bad earlier line raises ``LogError`` with ``.line``. A turn that was
        running when the log ends is loaded as running: new submits get 409
        until an interrupt (a decision that was waiting still waits).

        >>> import io, json
        >>> s = Session(); _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        >>> raw = "".join(json.dumps(e) + "\\n" for e in s.events).encode()
        >>> Session.load(io.BytesIO(raw)).snapshot() == s.snapshot()
        True
        """
        path = None if hasattr(source, "read") else cast("str | os.PathLike[str]", source)
        is_file = path is None
        name = getattr(source, "name", "the log") if path is None else os.fspath(path)
        if append is None:
            append = not is_file
        if is_file and (append or lazy):
            raise ValueError(f"Session.load of a file object: {'append' if append else 'lazy'}=True needs the log's path")
        lines = read_lines(source, repair=append)
        head = next(lines, None)
        if head is None:
            raise LogError(f"{name}: the log is empty", line=1)
        first = event_at(name, head)
        if first.get("type") != "session.started":
            raise LogError(f"{name}: line {head[0]} is {first.get('type')!r}, not session.started", line=head[0])
        logged_agent = first.get("agent")
        if not isinstance(logged_agent, str):
            raise LogError(f"{name}: line {head[0]}: session.started names no agent (agent: {logged_agent!r})", line=head[0])
        if agent is not None and agent != logged_agent:
            raise LogError(f"{name}: the log is agent {logged_agent!r}, not {agent!r}")
        logged = {"agent": {logged_agent: {"context": first.get("config") or {}}}}
        self = cls.__new__(cls)
        self._setup(logged_agent, coerce(logged if config is None else config, logged_agent), llm, worker, autorun, None)
        lazily = None
        if lazy and path is not None:  # (a file object with lazy=True was refused above)
            lazily = LazyTree(path), LazyEvents(path)
            self._tree, self.events = lazily
        self._replay_log(name, head, lines, lazily)
        if lazily is not None:
            lazily[0].offset = -1
            lazily[0].warm(lazily[0].path_ids())
        self.clock = max(float(self.events[-1]["time"]), float(clock or 0.0))
        if append and path is not None:  # (likewise)
            self._log = LogWriter(path, new=False)
        return self

    def _replay_log(self, name: str, head: tuple[int, int, bytes], lines: Iterable[tuple[int, int, bytes]],
                    lazily: tuple[LazyTree, LazyEvents] | None) -> None:
        """Every logged event through the reducer, in order (``lazily``: into the lazy tree and events, as the session's own)."""
        for item in itertools.chain([head], lines):
            ev = event_at(name, item)
            if lazily is not None:
                lazily[0].offset = item[1]
            try:
                self._apply(ev)
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                raise LogError(f"{name}: line {item[0]}: the {ev['type']} event does not fit the session ({err!r})", line=item[0]) from None
            if lazily is not None:
                lazily[1].add_logged(item[1])
            else:
                self.events.append(cast(Event, ev))  # a logged event, checked by event_at


def _replaces(actions: Sequence[Mapping[str, Any]]) -> bool:
    """The answer runs a ``context.replace`` (one before any ``turn.end``)."""
    for a in actions:
        if a["type"] == "turn.end":
            return False
        if a["type"] == "context.replace":
            return True
    return False


def _time(value: float, what: str) -> float:
    """A clock reading: a finite number of seconds (a log cannot hold NaN or infinities)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{what} takes a finite number of seconds, got {value!r}")
    return float(value)


def _seconds(value: float, what: str) -> float:
    """A step of the clock: a finite, non-negative number of seconds."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} takes a finite, non-negative number of seconds, got {value!r}")
    return float(value)
