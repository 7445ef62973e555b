"""A turn's life (docs/protocol.md 3): it starts (``_start``: its messages recorded as a
chain under where it runs from, then the ``turn.start`` decision), the worker is asked in it
(``_request``: the one way a decision is requested), and it ends (``_end_turn``: the one way a turn
ends, however it ends; the open ``context.limit`` is settled and the next queued turn starts at once)."""

from __future__ import annotations

from typing import Any

from ..tree import Message, new_node
from ..wire import Turn
from .reading import Reading


class Turns(Reading):
    """Starting and ending turns, and asking the worker in them."""

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

    def _settle_limit(self) -> None:
        """``context.kept`` for the open ``context.limit``, if any: with
        ``context.replaced`` (emitted by the replace itself) the one event that
        settles it (docs/protocol.md 5.3)."""
        if self._calls.open_limit is not None:
            self._emit("context.kept", turn_id=self._running, call_id=self._calls.open_limit)
