"""Running a session: ``run`` and ``step`` (the turn's runner: whatever goes wrong in a step
fails that turn only), the worker asked for its answer (``_ask_worker``) or a caller's answer taken
(``decide``), the answer made the answer in flight (``_on_answer``), and its actions run one a step
(``_run_action``)."""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from .. import inputs
from ..errors import CallCancelled, LogError, Refused
from ..tree import PathView, new_node
from .calls import Calls
from .journal import Answer
from .workers import chat_worker

MAX_STEPS = 100_000  # a run() that takes more steps has a worker that never ends its turns


class Decisions(Calls):
    """``run``, ``step``, ``decide``: the worker's answers and their actions."""

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

    def _on_answer(self, actions: list[dict[str, Any]]) -> None:
        """Take the worker's answer: it becomes the answer in flight. An answer to
        ``context.limit`` that will not run a ``context.replace`` (none before a
        ``turn.end``) settles it right away (``context.kept``)."""
        answering_limit = (self._asked or {}).get("type") == "context.limit"
        self._emit("decision.answered", turn_id=self._running, actions=actions)
        self._answer = Answer(deque(actions))
        if answering_limit and not _replaces(actions):
            self._settle_limit()

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


def _replaces(actions: Sequence[Mapping[str, Any]]) -> bool:
    """The answer runs a ``context.replace`` (one before any ``turn.end``)."""
    for a in actions:
        if a["type"] == "turn.end":
            return False
        if a["type"] == "context.replace":
            return True
    return False
