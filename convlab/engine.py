"""Session: an executable, deterministic model of one agent's session in the engine.

Every change is an event, and every event changes the model through one
function, ``_apply``. The live session emits events into ``_apply``; loading
a log feeds the same events through it. So a loaded session equals the live
one by construction, and the log alone rebuilds it.

What is not in the events is the running turn's program: the actions of the
answer being run. It is the engine's work in flight; a log that ends mid-turn
loses it (PROTOCOL.md 8), except a decision that was waiting, which the log
holds whole.

Rules are PROTOCOL.md's; where it is silent this module decides, and the
docstring of the method says so ("gap").
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Mapping

from . import inputs, jsondata
from .context import ContextConfig, DEFAULT_PROMPT, Strategy, applies, coerce, kept
from .errors import LogError, ProviderError, Refused
from .lazy import LazyEvents, LazyTree
from .log import LogWriter, parse_event, read_lines
from .providers import EchoLLM
from .tree import Tree, ViewError, message_of
from .tokens import content_chars, content_text, estimate

__all__ = ["Session", "chat_worker", "SUMMARY_PREFIX"]

#: How a summary message opens: it says the earlier conversation was summarized.
SUMMARY_PREFIX = "The earlier conversation was summarized:\n\n"

MAX_STEPS = 100_000  # a run() that takes more steps has a worker that never ends its turns


def chat_worker(decision: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The built-in worker: call the model unless the path ends with an assistant
    message; end the turn on a result; accept what ``context.limit`` proposes."""
    kind = decision["type"]
    if kind == "turn.start":
        messages = decision["messages"]
        if messages and messages[-1]["role"] == "assistant":
            return []
        return [{"type": "llm.call"}]
    if kind == "context.limit":
        return jsondata.copy(decision["proposed"])
    return []


@dataclass
class _Program:
    """The running turn's work in flight (not in the log)."""

    actions: deque = field(default_factory=deque)
    called: bool = False  # the answer being run had an llm.call
    reply: dict | None = None


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

    def __init__(
        self,
        config: Any = None,
        agent: str = "bot",
        llm: Any = None,
        worker: str | Callable[[dict], list] = "chat",
        autorun: bool = True,
        log: str | os.PathLike | None = None,
        clock: float | None = None,
    ):
        self._setup(agent, coerce(config, agent), llm, worker, autorun, clock)
        self._log: LogWriter | None = LogWriter(log) if log is not None else None
        self._emit("session.started", agent=agent, config=self.config.to_dict())

    def _setup(self, agent: str, config: ContextConfig, llm: Any, worker: Any, autorun: bool, clock: float | None) -> None:
        """Everything a new or a loaded session starts from (the one constructor both use)."""
        self.agent = agent
        self.config = config
        self.llms = self._providers(llm)
        if worker not in ("chat", "manual") and not callable(worker):
            raise ValueError(f"worker must be 'chat', 'manual' or a callable, got {worker!r}")
        self.worker = worker
        self.autorun = bool(autorun)
        self.clock = float(clock or 0.0)
        self._reset_model()
        self._subscribers: list[Callable[[dict], None]] = []
        self._log = None

    def _reset_model(self) -> None:
        self._tree = Tree()
        self.events: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self._turn_of: dict[str, dict[str, Any]] = {}
        self._queue: list[str] = []
        self._running: str | None = None
        self.pending: dict[str, Any] | None = None
        self._asked: dict[str, Any] | None = None  # the pending decision as logged
        self._loading = False
        self.last_turn_end: float | None = None
        self._waiting_ids: set[str] = set()  # message ids in queued turns
        self._call_ids: set[str] = set()
        self._held: set[str] = set()  # call ids held once (not held again)
        self._overflowed: set[str] = set()  # call ids refused as too long once
        self._held_calls: dict[str, dict] = {}
        self._limit_open: str | None = None  # call id of a context.limited not yet replaced/kept
        self._first_call_done = False
        self._e_next = 1
        self._llm_next = 1
        self._prog: _Program | None = None

    @staticmethod
    def _providers(llm: Any) -> dict[str, Any]:
        if llm is None:
            return {"default": EchoLLM()}
        if isinstance(llm, Mapping):
            if not llm:
                raise ValueError("llm: give at least one provider")
            for name, p in llm.items():
                if not hasattr(p, "complete"):
                    raise ValueError(f"llm[{name!r}] has no complete(request) method")
            return dict(llm)
        if not hasattr(llm, "complete"):
            raise ValueError(f"llm must be a provider (with complete(request)) or {{name: provider}}, got {llm!r}")
        return {"default": llm}

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
        """The worker state along the active path (PROTOCOL.md 6)."""
        return self._tree.state_at()

    def path(self, node_id: str | None = None) -> list[dict[str, Any]]:
        """Node dicts root -> head (or root -> ``node_id``): what the model reads."""
        if node_id is not None and node_id not in self._tree:
            raise KeyError(f"no message {node_id!r} in the tree")
        return self._tree.path(node_id)

    @property
    def idle_for(self) -> float | None:
        """Seconds since the previous turn ended (what ``idle_secs`` measures); None before any turn ended."""
        return None if self.last_turn_end is None else self.clock - self.last_turn_end

    def tokens(self) -> int:
        """The count of PROTOCOL.md 5.1 for the active path (O(1))."""
        return self._tree.count()

    def children(self, node_id: str | None) -> list[str]:
        """Children of a node (None: the top-level messages), oldest first."""
        return self._tree.children(node_id)

    def view(self, node_id: str) -> list[dict[str, Any]]:
        """The view root -> ``node_id``, every message with its id: submitted as
        ``client.messages`` it moves the head there and writes nothing."""
        if node_id not in self._tree:
            raise KeyError(f"no message {node_id!r} in the tree")
        return [message_of(n) for n in self._tree.path(node_id)]

    def snapshot(self) -> dict[str, Any]:
        """The whole tree as JSON: agent, head, every node with its attributes, turns."""
        return {
            "agent": self.agent,
            "head": self.head,
            "nodes": jsondata.copy(self._tree.nodes_in_order()),
            "turns": jsondata.copy(self.turns),
        }

    def subscribe(self, fn: Callable[[dict], None]) -> Callable[[], None]:
        """Call ``fn(event)`` after every event; returns a function that unsubscribes."""
        self._subscribers.append(fn)

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

        return unsubscribe

    def advance(self, seconds: float) -> None:
        """Move the simulated clock forward."""
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
            raise ValueError(f"advance takes a non-negative number of seconds, got {seconds!r}")
        self.clock += float(seconds)

    # ------------------------------------------------------------------
    # events: the one way the model changes
    # ------------------------------------------------------------------
    def _emit(self, type_: str, turn_id: str | None = None, **fields: Any) -> dict[str, Any]:
        event = {"seq": len(self.events) + 1, "time": self.clock, "type": type_}
        if type_ == "message.new":
            fields["message"]["seq"] = self._tree.seq + 1
        if turn_id is not None:
            event["turn_id"] = turn_id
        event.update(jsondata.copy(fields))
        self._apply(event)
        self.events.append(event)
        if self._log is not None:
            self._log.write(event)
        for fn in list(self._subscribers):
            fn(event)
        return event

    def _apply(self, ev: Mapping[str, Any]) -> None:
        t = ev["type"]
        tree = self._tree
        if t == "message.new":
            msg = ev["message"]
            tree.add(msg, msg.get("parent"))
            tree.head = msg["id"]
            self._waiting_ids.discard(msg["id"])
        elif t == "head.moved":
            tree.head = ev["to"]
        elif t == "state.changed":
            tree.set_state(ev["node"], ev["state"])
        elif t == "turn.queued":
            turn = jsondata.copy(ev["turn"])
            self.turns.append(turn)
            self._turn_of[turn["id"]] = turn
            self._queue.append(turn["id"])
            self._waiting_ids.update(m["id"] for m in turn["messages"] if m.get("id"))
        elif t == "turn.merged":
            turn = self._turn_of[ev["turn_id"]]
            turn["messages"].extend(jsondata.copy(ev["messages"]))
            if ev.get("client_state") is not None:
                turn["client_state"] = jsondata.copy(ev["client_state"])
            self._waiting_ids.update(m["id"] for m in ev["messages"] if m.get("id"))
        elif t == "turn.started":
            tid = ev["turn_id"]
            turn = self._turn_of.get(tid)
            if turn is None:
                turn = jsondata.copy(ev["turn"])
                self.turns.append(turn)
                self._turn_of[tid] = turn
            else:
                self._queue.remove(tid)
            turn["status"] = "running"
            turn["messages"] = []  # recorded now: the trigger names them
            turn["trigger"] = jsondata.copy(ev["trigger"])
            turn["started"] = ev["time"]
            self._running = tid
            self._first_call_done = False
            self._limit_open = None
        elif t in ("turn.completed", "turn.failed", "turn.cancelled"):
            turn = self._turn_of[ev["turn_id"]]
            turn["status"] = t.split(".")[1]
            turn["ended"] = ev["time"]
            if t == "turn.failed":
                turn["error"] = ev.get("error")
            if t == "turn.cancelled":
                turn["reason"] = ev.get("reason")
            if self._running == ev["turn_id"]:
                self._running = None
            self.last_turn_end = ev["time"]
            self.pending = self._asked = None
            self._limit_open = None
        elif t == "decision.requested":
            self._asked = ev["decision"]
            # loading builds only the decision still waiting at the end (load())
            self.pending = None if self._loading else self._pending_from(ev["decision"])
        elif t == "decision.answered":
            self.pending = self._asked = None
        elif t == "llm.started":
            self._call_ids.add(ev["call_id"])
            if not ev.get("summary"):
                self._first_call_done = True
        elif t == "context.limited":
            self._call_ids.add(ev["call_id"])
            self._first_call_done = True
            (self._overflowed if ev["reason"] == "overflow" else self._held).add(ev["call_id"])
            self._held_calls[ev["call_id"]] = {"llm": ev.get("llm"), "model": ev.get("model")}
            self._limit_open = ev["call_id"]
        elif t in ("context.replaced", "context.kept"):
            self._limit_open = None

    # ------------------------------------------------------------------
    # ids
    # ------------------------------------------------------------------
    def _new_ids(self, n: int, given: set[str] = frozenset()) -> list[str]:
        """``n`` engine ids ``eN``: in order, skipping any recorded or waiting id.

        Nothing is reserved: an id is taken once its message is recorded, so a
        loaded session hands out the same ids as the live one would have.
        """
        taken = self._tree
        waiting = self._waiting_ids
        k = self._e_next
        while f"e{k}" in taken or f"e{k}" in waiting:
            k += 1
        self._e_next = k  # every id below k is taken for good
        out: list[str] = []
        while len(out) < n:
            cand = f"e{k}"
            k += 1
            if cand not in taken and cand not in waiting and cand not in given:
                out.append(cand)
        return out

    def _new_call_id(self) -> str:
        k = self._llm_next
        while f"llm-{k}" in self._call_ids:
            k += 1
        self._llm_next = k
        return f"llm-{k}"

    # ------------------------------------------------------------------
    # client input
    # ------------------------------------------------------------------
    def submit(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Take one client input. Returns the receipt, or raises ``Refused``
        (400, 404, 409). A refused input writes nothing, moves nothing and
        emits nothing."""
        inp = inputs.validate(message, self.agent)
        kind = inp["type"]
        if kind == "client.interrupt":
            receipt = self._interrupt()
        elif kind == "client.messages":
            receipt = self._submit_view(inp)
        else:
            receipt = self._submit_messages(inp)
        if self.autorun:
            self.run()
        return receipt

    def _busy(self) -> bool:
        return self._running is not None

    def _refuse_busy(self) -> None:
        raise Refused(409, f"turn {self._running} is running: send queue: true to wait, or interrupt it first", turn_id=self._running)

    def _submit_messages(self, inp: dict[str, Any]) -> dict[str, Any]:
        kind, msgs, queue = inp["type"], inp["messages"], inp.get("queue")
        # a retry: every message already recorded or waiting (checked before 409)
        known = [m for m in msgs if m.get("id") is not None and (m["id"] in self._tree or m["id"] in self._waiting_ids)]
        if len(known) == len(msgs):
            return {"status": 200, "duplicate": True, "turn_id": self._turn_that_took(msgs[0]["id"]), "queued": False, "merged": False}
        fresh = [m for m in msgs if m not in known]
        client_state = inp.get("state")
        wants_queue = queue is True or queue == "merge"
        if self._busy() and not wants_queue:
            self._refuse_busy()
        if wants_queue and (self._busy() or self._queue):
            last = self._turn_of[self._queue[-1]] if self._queue else None
            if queue == "merge" and last is not None and last["queue"] == "merge":
                self._emit("turn.merged", turn_id=last["id"], messages=fresh, client_state=client_state)
                return {"status": 202, "turn_id": last["id"], "queued": True, "merged": True, "duplicate": False}
            turn = self._new_turn({"type": kind, "message_ids": []}, "merge" if queue == "merge" else "queue", client_state, fresh)
            turn["status"] = "queued"
            self._emit("turn.queued", turn_id=turn["id"], turn=turn)
            return {"status": 202, "turn_id": turn["id"], "queued": True, "merged": False, "duplicate": False}
        turn = self._new_turn({"type": kind, "message_ids": []}, None, client_state, fresh)
        self._start(turn, fresh)
        return {"status": 200, "turn_id": turn["id"], "queued": False, "merged": False, "duplicate": False}

    def _turn_that_took(self, mid: str) -> str | None:
        if mid in self._tree:
            return self._tree.node(mid)["turn_id"]
        for tid in self._queue:
            if any(m.get("id") == mid for m in self._turn_of[tid]["messages"]):
                return tid
        return None

    def _new_turn(self, trigger: dict, queue: str | None, client_state: Any, messages: list) -> dict[str, Any]:
        return {
            "id": f"t{len(self.turns) + 1}",
            "status": "running",
            "trigger": trigger,
            "queue": queue,
            "client_state": jsondata.copy(client_state) if client_state is not None else {},
            "messages": jsondata.copy(messages),
            "created": self.clock,
            "started": None,
            "ended": None,
            "error": None,
        }

    def _start(self, turn: dict[str, Any], messages: list[dict[str, Any]] | None = None, *, under: Any = ..., trigger: dict | None = None) -> None:
        """Start ``turn``: ``turn.started``, then its messages as a chain under
        the head (or ``under``), then the ``turn.start`` decision."""
        tid = turn["id"]
        messages = [m for m in (messages or []) if not (m.get("id") and m["id"] in self._tree)]
        ids = self._assign_ids(messages)
        if trigger is None:
            trigger = dict(turn["trigger"])
            if "message_ids" in trigger:
                trigger["message_ids"] = ids
        queued = tid in self._turn_of
        self._emit("turn.started", turn_id=tid, trigger=trigger, **({} if queued else {"turn": turn}))
        parent = self.head if under is ... else under
        for m, mid in zip(messages, ids):
            node = inputs.node_from(m, mid, parent=parent, time=self.clock, turn_id=tid)
            self._emit("message.new", turn_id=tid, message=node)
            parent = mid
        self._prog = _Program()
        self._request("turn.start")

    def _assign_ids(self, messages: list[dict[str, Any]]) -> list[str]:
        missing = sum(1 for m in messages if not m.get("id"))
        fresh = iter(self._new_ids(missing, {m["id"] for m in messages if m.get("id")}))
        return [m["id"] if m.get("id") else next(fresh) for m in messages]

    def _submit_view(self, inp: dict[str, Any]) -> dict[str, Any]:
        view = inp["messages"]
        try:
            new_from, last = self._tree.match(view)
        except ViewError as err:
            raise Refused(400, str(err)) from None
        rest = view[new_from:]
        client_state = inp.get("state")
        trigger = {"type": "client.messages", "new_from": new_from}
        if rest:
            if self._busy():
                self._refuse_busy()
            turn = self._new_turn(trigger, None, client_state, rest)
            self._start(turn, rest, under=last, trigger=trigger)
        else:
            moves = last != self.head
            if self._busy() and not moves:
                self._refuse_busy()
            turn = self._new_turn(trigger, None, client_state, [])
            if moves:
                self._emit("head.moved", turn_id=turn["id"], **{"from": self.head, "to": last})
            if self._busy():
                self._end_turn("turn.cancelled", reason=f"the head moved to {last} (turn {turn['id']})")
            self._start(turn, [], trigger=trigger)
        return {"status": 200, "turn_id": turn["id"], "new_from": new_from, "queued": False, "merged": False, "duplicate": False}

    def _interrupt(self) -> dict[str, Any]:
        if not self._busy():
            raise Refused(409, "no turn is running: nothing to interrupt")
        tid = self._running
        self._end_turn("turn.cancelled", reason="interrupted")
        return {"status": 200, "turn_id": tid, "queued": False, "merged": False, "duplicate": False}

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------
    def run(self) -> None:
        """Run until no turn runs or waits in the queue, or a decision waits."""
        for _ in range(MAX_STEPS):
            if not self.step():
                return
        raise RuntimeError(f"run() took more than {MAX_STEPS} steps: does the worker ever end its turns?")

    def step(self) -> bool:
        """One engine step: start a queued turn, answer a decision, or run one
        action. Returns False when there is nothing to do (or a decision waits
        for ``decide``)."""
        if self._running is None:
            if not self._queue:
                return False
            turn = self._turn_of[self._queue[0]]
            self._start(turn, turn["messages"])
            return True
        if self.pending is not None:
            if self.worker == "manual":
                return False
            worker = chat_worker if self.worker == "chat" else self.worker
            actions = worker(self.pending if worker is chat_worker else self._pending_from(self._asked))
            try:
                actions = inputs.validate_actions(actions)
            except Refused as err:
                self._emit("decision.answered", turn_id=self._running, actions=[])
                self._fail(f"the worker's answer is not a list of actions: {err}")
                return True
            self._answer(actions)
            return True
        if self._prog is None:
            return False  # a turn loaded from a log mid-flight: it waits for an interrupt
        if self._prog.actions:
            self._run_action(self._prog.actions.popleft())
            return True
        if self._prog.called:
            self._request("llm.result", reply=self._prog.reply)
        else:
            self._end_turn("turn.completed")
        return True

    def decide(self, actions: list[dict[str, Any]]) -> None:
        """Answer the waiting decision with a list of actions."""
        if self.pending is None:
            raise Refused(409, "no decision is waiting")
        self._answer(inputs.validate_actions(actions))
        if self.autorun:
            self.run()

    def _request(self, kind: str, **extra: Any) -> None:
        """Ask the worker. The event names the head instead of holding the path
        (the path of a node never changes), so a decision costs O(1) in the log
        however long the conversation; ``pending`` reads it as a ``PathView``."""
        turn = self._turn_of[self._running]
        decision = {
            "type": kind,
            "turn_id": turn["id"],
            "trigger": jsondata.copy(turn["trigger"]),
            "head": self.head,
            "state": self._tree.state_at(),
            "client_state": jsondata.copy(turn["client_state"]),
            **extra,
        }
        self._emit("decision.requested", turn_id=turn["id"], decision=decision)

    def _pending_from(self, logged: Mapping[str, Any]) -> dict[str, Any]:
        """The decision request a worker sees: the logged one plus the path
        root -> its head as ``messages`` (fresh dicts, the worker's to keep)."""
        decision = jsondata.copy(dict(logged))
        decision["messages"] = self._tree.messages(decision["head"])
        call = decision.get("call")
        if call is not None and call["request"].get("messages") is None:
            call["request"]["messages"] = [dict(m) for m in decision["messages"]]
        return decision

    def _answer(self, actions: list[dict[str, Any]]) -> None:
        decision = self.pending
        tid = self._running
        self._emit("decision.answered", turn_id=tid, actions=actions)
        self._prog = _Program(actions=deque(jsondata.copy(actions)))
        if decision["type"] == "context.limit":
            replaces = False
            for a in actions:
                if a["type"] == "turn.end":
                    break
                if a["type"] == "context.replace":
                    replaces = True
                    break
            if not replaces:
                self._emit("context.kept", turn_id=tid, call_id=decision["call"]["id"])

    def _end_turn(self, kind: str, **fields: Any) -> None:
        tid = self._running
        if self._limit_open is not None:
            self._emit("context.kept", turn_id=tid, call_id=self._limit_open)
        self._prog = None
        self._emit(kind, turn_id=tid, **fields)

    def _fail(self, error: str) -> None:
        self._end_turn("turn.failed", error=error)

    def _run_action(self, action: dict[str, Any]) -> None:
        kind = action["type"]
        tid = self._running
        if kind == "llm.call":
            self._prog.called = True
            self._call(action)
        elif kind == "message.add":
            msg = action["message"]
            if msg.get("id") and (msg["id"] in self._tree or msg["id"] in self._waiting_ids):
                self._fail(f"message.add: id {msg['id']!r} is already recorded")
                return
            (mid,) = self._assign_ids([msg])
            self._emit("message.new", turn_id=tid, message=inputs.node_from(msg, mid, parent=self.head, time=self.clock, turn_id=tid))
        elif kind == "state.set":
            if self.head is None:
                self._fail("state.set: there is no message to attach the state to")
                return
            self._emit("state.changed", turn_id=tid, node=self.head, state=action["state"])
        elif kind == "context.replace":
            self._replace(action)
        elif kind == "turn.end":
            self._prog.actions.clear()
            self._end_turn("turn.completed")

    # ------------------------------------------------------------------
    # model calls and making room (PROTOCOL.md 5)
    # ------------------------------------------------------------------
    def _provider(self, name: str | None) -> tuple[str, Any]:
        if name is None:
            name = next(iter(self.llms))
        if name not in self.llms:
            raise KeyError(name)
        return name, self.llms[name]

    def _call(self, action: dict[str, Any]) -> None:
        tid = self._running
        call_id = action.get("id") or self._new_call_id()
        known = self._held_calls.get(call_id, {})
        llm_name = action.get("llm") or known.get("llm")
        model = action.get("model") or known.get("model")
        try:
            llm_name, provider = self._provider(llm_name)
        except KeyError:
            self._fail(f"llm.call: no provider named {llm_name!r} (known: {', '.join(self.llms)})")
            return
        stream = action.get("stream", True)
        given = action.get("messages")
        messages = jsondata.copy(given) if given is not None else self._tree.messages()
        first_call = not self._first_call_done
        if call_id not in self._held and call_id not in self._overflowed:
            tokens = self._tree.count() if given is None else estimate(sum(content_chars(m.get("content")) for m in given))
            limit = applies(self.config, tokens, first_call=first_call, idle_for=self.idle_for)
            if limit is not None:
                self._hold(call_id, llm_name, model, given, stream, limit.reason, limit.strategy, tokens)
                return
        self._emit("llm.started", turn_id=tid, call_id=call_id, summary=False, llm=llm_name, model=model)
        (mid,) = self._new_ids(1)  # exact: nothing else is recorded while the call runs
        on_delta = self._delta_to(tid, call_id, mid) if stream else None
        try:
            result = self._complete(provider, {"model": model, "messages": messages, "stream": stream, "summary": False}, on_delta)
        except ProviderError as err:
            self._emit("llm.failed", turn_id=tid, call_id=call_id, error=err.kind, message=str(err))
            if err.kind == "too_long" and call_id not in self._overflowed:
                self._hold(call_id, llm_name, model, given, stream, "overflow", self.config.summarize_strategy(), self._tree.count())
            elif err.kind == "too_long":
                self._fail(f"the provider refused call {call_id} as too long again")
            else:
                self._fail(f"call {call_id} failed: {err}")
            return
        self._emit("llm.completed", turn_id=tid, call_id=call_id, usage=result["usage"])
        node = inputs.node_from({"role": "assistant", **result}, mid, parent=self.head, time=self.clock, turn_id=tid)
        node["usage"] = result["usage"]
        self._emit("message.new", turn_id=tid, message=node)
        self._prog.reply = message_of(self._tree.node(mid))

    def _delta_to(self, turn_id: str, call_id: str, message_id: str) -> Callable[[str], None]:
        """What passes a streamed chunk on as ``llm.delta`` (PROTOCOL.md 7, rev 3): to
        subscribers only, never to ``events`` or the log, so it has no ``seq``."""

        def on_delta(text: str) -> None:
            event = {"time": self.clock, "type": "llm.delta", "turn_id": turn_id, "call_id": call_id,
                     "message_id": message_id, "text": text}
            for fn in list(self._subscribers):
                fn(event)

        return on_delta

    def _complete(self, provider: Any, request: dict[str, Any], on_delta: Callable[[str], None] | None = None) -> dict[str, Any]:
        """One model call: the provider's checked reply. With ``on_delta`` the call
        streams: a provider with ``stream(request)`` gives its chunks as they come;
        any other gives one delta with the whole reply, once it is checked."""
        streams = on_delta is not None and hasattr(provider, "stream")
        try:
            result = _streamed(provider.stream(request), on_delta) if streams else provider.complete(request)
        finally:
            self.clock += float(getattr(provider, "latency", 0.0) or 0.0)
        reply = inputs.reply_from(result)
        if on_delta is not None and not streams:
            text = content_text(reply["content"])
            if text:
                on_delta(text)
        return reply

    def _hold(self, call_id: str, llm_name: str, model: str | None, messages: list | None, stream: bool, reason: str, strategy: Strategy, tokens: int) -> None:
        """Hold the call: ``context.limited``, the plan (with its summary
        calls), then the ``context.limit`` decision. ``messages`` are the
        call's own messages, None when it reads the active path."""
        tid = self._running
        self._emit(
            "context.limited", turn_id=tid, reason=reason, strategy=strategy.use, tokens=tokens,
            window=self.config.window, call_id=call_id, llm=llm_name, model=model,
        )
        tree = self._tree
        kept_ids = [n["id"] for n in kept(tree.node(n) for n in tree.ancestors(self.head))]
        keep = [message_of(tree.node(n)) for n in kept_ids]
        as_was = [{"type": "llm.call", "id": call_id}]
        if strategy.use == "reset":
            proposed = as_was if not keep else [{"type": "context.replace", "messages": keep}, *as_was]
        else:
            before = self._tree.path_ids()[: self._tree.depth(self.head) - len(kept_ids)] if self.head else []
            summary = self._summarize([self._tree.node(n) for n in before], strategy)
            proposed = as_was if summary is None else [{"type": "context.replace", "summary": summary, "messages": keep}, *as_was]
        self._prog.actions.clear()  # a held call ends its answer
        self._prog.called = False
        self._request(
            "context.limit",
            reason=reason,
            strategy=strategy.use,
            tokens=tokens,
            window=self.config.window,
            call={"id": call_id, "llm": llm_name, "request": {"model": model, "messages": messages}, "stream": stream},
            proposed=proposed,
        )

    def _summarize(self, before: list[dict[str, Any]], strategy: Strategy) -> str | None:
        """Run the summary call(s) over ``before``; None when there is nothing to
        summarize or the call fails (the call is then proposed as it was)."""
        front = before[:1] if before and before[0]["kind"] == "summary" else []
        rest = before[len(front):]
        if not rest:
            return None
        try:
            llm_name, provider = self._provider(strategy.llm)
        except KeyError:
            return None
        prompt = strategy.prompt or DEFAULT_PROMPT
        tid = self._running
        for _ in range(3):
            call_id = self._new_call_id()
            self._emit("llm.started", turn_id=tid, call_id=call_id, summary=True, llm=llm_name, model=strategy.model)
            request = {
                "model": strategy.model,
                "messages": [message_of(n) for n in front + rest] + [{"role": "user", "content": prompt}],
                "stream": False,
                "summary": True,
            }
            try:
                result = self._complete(provider, request)
            except ProviderError as err:
                self._emit("llm.failed", turn_id=tid, call_id=call_id, error=err.kind, message=str(err), summary=True)
                if err.kind != "too_long":
                    return None
                rest = rest[max(1, len(rest) // 2):]
                if not rest:
                    return None
                continue
            self._emit("llm.completed", turn_id=tid, call_id=call_id, usage=result["usage"], summary=True)
            content = result["content"]
            return content if isinstance(content, str) else content_text(content)
        return None

    def _replace(self, action: dict[str, Any]) -> None:
        """context.replace (PROTOCOL.md 5.4): a new branch at the root."""
        tid = self._running
        summary, messages = action.get("summary"), action.get("messages") or []
        if not summary and not messages:
            self._fail("context.replace needs a summary or messages: it has neither")
            return
        old_head = self.head
        state = self._tree.state_at()
        nodes: list[dict[str, Any]] = []
        if summary:
            nodes.append({"role": "user", "content": SUMMARY_PREFIX + summary, "kind": "summary"})
        for m in messages:
            mid = m.get("id")
            if mid and mid in self._tree:
                rec = self._tree.node(mid)
                copy_ = message_of(rec)
                del copy_["id"]
                copy_["copied_from"] = mid
                nodes.append(copy_)
            else:
                nodes.append(m)
        ids = self._assign_ids(nodes)
        parent = None
        for i, (n, mid) in enumerate(zip(nodes, ids)):
            node = inputs.node_from(n, mid, parent=parent, time=self.clock, turn_id=tid)
            node["kind"] = n.get("kind", "message")
            node["copied_from"] = n.get("copied_from")
            if i == 0:
                node["replaces"] = old_head
                node["state"] = state or None
            extra = {"copied_from": node["copied_from"]} if node["copied_from"] else {}
            self._emit("message.new", turn_id=tid, message=node, **extra)
            parent = mid
        self._emit("context.replaced", turn_id=tid, **{"from": old_head, "to": self.head})

    # ------------------------------------------------------------------
    # the log
    # ------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        source: str | os.PathLike | BinaryIO,
        *,
        config: Any = None,
        agent: str | None = None,
        llm: Any = None,
        worker: str | Callable[[dict], list] = "chat",
        autorun: bool = True,
        clock: float | None = None,
        append: bool | None = None,
        lazy: bool = False,
    ) -> "Session":
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

        >>> import io
        >>> s = Session(); _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        >>> raw = "".join(json.dumps(e) + "\\n" for e in s.events).encode()
        >>> Session.load(io.BytesIO(raw)).snapshot() == s.snapshot()
        True
        """
        is_file = hasattr(source, "read")
        name = getattr(source, "name", "the log") if is_file else os.fspath(source)
        if append is None:
            append = not is_file
        if is_file and (append or lazy):
            raise ValueError(f"Session.load of a file object: {'append' if append else 'lazy'}=True needs the log's path")
        lines = read_lines(source, repair=append)
        head = next(lines, None)
        if head is None:
            raise LogError(f"{name}: the log is empty", line=1)
        first = _event(name, head)
        if first.get("type") != "session.started":
            raise LogError(f"{name}: line {head[0]} is {first.get('type')!r}, not session.started", line=head[0])
        logged_agent = first.get("agent")
        if agent is not None and agent != logged_agent:
            raise LogError(f"{name}: the log is agent {logged_agent!r}, not {agent!r}")
        logged = {"agent": {logged_agent: {"context": first.get("config") or {}}}}
        self = cls.__new__(cls)
        self._setup(logged_agent, coerce(logged if config is None else config, logged_agent), llm, worker, autorun, None)
        self._loading = True
        if lazy:
            self._tree = LazyTree(source)
            self.events = LazyEvents(source)
            self.events.add_logged(head[1])
        else:
            self.events.append(first)
        self._apply(first)
        for item in lines:
            ev = _event(name, item)
            if lazy:
                self._tree.offset = item[1]
            try:
                self._apply(ev)
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                raise LogError(f"{name}: line {item[0]}: the {ev['type']} event does not fit the session ({err!r})", line=item[0]) from None
            if lazy:
                self.events.add_logged(item[1])
            else:
                self.events.append(ev)
        self._loading = False
        if self._asked is not None:
            self.pending = self._pending_from(self._asked)
        if lazy:
            self._tree.offset = -1
            self._tree.warm(self._tree.path_ids())
        self.clock = max(float(self.events[-1]["time"]), float(clock or 0.0))
        if self.pending is not None and self._running is not None:
            self._prog = _Program()
        if append:
            _end_with_newline(source)
            self._log = LogWriter(source, new=False)
        return self


def _streamed(chunks: Any, on_delta: Callable[[str], None]) -> Any:
    """Run a provider's stream: text deltas (passed on as they come), then the reply."""
    reply = None
    for chunk in chunks:
        if isinstance(chunk, str):
            if chunk:
                on_delta(chunk)
        else:
            reply = chunk
    return reply


def _event(path: Any, item: tuple[int, int, bytes]) -> dict[str, Any]:
    number, _offset, raw = item
    try:
        return parse_event(raw)
    except ValueError as err:
        raise LogError(f"{path}: line {number} is not a valid event: {err}", line=number) from None


def _end_with_newline(path: str | os.PathLike) -> None:
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            f.write(b"\n")
