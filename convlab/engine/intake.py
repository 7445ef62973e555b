"""Client input (docs/protocol.md 2 and 3). ``submit`` takes one input, checked and copied once
at the edge (``inputs.validate``): new messages start a turn, or queue or merge one behind the running
turn; a view starts a turn where it ends (one that adds nothing and ends elsewhere moves the head first); an
interrupt cancels the running turn. A refused input writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import inputs
from ..errors import Refused
from ..tree import ViewError
from ..wire import Receipt, Turn, receipt
from .decisions import Decisions


class Intake(Decisions):
    """``submit``: client messages, views and interrupts, and the queue."""

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
