"""The shapes the engine sends and records (docs/wire.md), as TypedDicts.

A node and a message are ``convlab.tree.Node`` and ``convlab.tree.Message``
(the one node schema). Here: what a client gets back (``Receipt``), a turn,
an event, a decision request and a snapshot. ``tests/test_wire.py`` checks
every event, decision, turn and snapshot a session makes against these.
"""

from typing import Any, NotRequired, TypedDict

from .tree import Message, Node

__all__ = ["Receipt", "Turn", "Event", "Decision", "Call", "Snapshot", "EVENT_FIELDS", "receipt"]


class Receipt(TypedDict):
    """What ``Session.submit`` returns for an accepted input (docs/protocol.md 3)."""

    status: int  # 200, or 202 when queued
    turn_id: str | None
    new_from: NotRequired[int]  # client.messages only
    queued: bool
    merged: bool
    duplicate: bool
    left_out: NotRequired[list[str]]  # stopped replies the input brought back, left out (docs/protocol.md, rev 4)


def receipt(status: int, turn_id: str | None, *, new_from: int | None = None, queued: bool = False,
            merged: bool = False, duplicate: bool = False) -> Receipt:
    """A ``Receipt``, its keys always in the same order (``new_from`` only for ``client.messages``).

    >>> receipt(202, "t2", queued=True)
    {'status': 202, 'turn_id': 't2', 'queued': True, 'merged': False, 'duplicate': False}
    """
    made: dict[str, Any] = {"status": status, "turn_id": turn_id}
    if new_from is not None:
        made["new_from"] = new_from
    made.update(queued=queued, merged=merged, duplicate=duplicate)
    return made  # type: ignore[return-value]  # a Receipt built key by key, in its wire order: mypy cannot follow


class Turn(TypedDict):
    """One turn (``Session.turns``, ``snapshot()["turns"]``)."""

    id: str
    status: str  # queued, running, completed, failed, cancelled
    trigger: dict[str, Any]  # {"type", "message_ids"} or {"type": "client.messages", "new_from"}
    queue: str | None  # None, "queue" or "merge"
    client_state: dict[str, Any]
    messages: list[Message]  # a queued turn's messages, until it starts; then []
    created: float
    started: float | None
    ended: float | None
    error: str | None
    reason: NotRequired[str | None]  # a cancelled turn's (None: the client gave none)


class Event(TypedDict):
    """One event (``Session.events``, one line of the session log). Its other
    fields depend on ``type``: ``EVENT_FIELDS``."""

    seq: int
    time: float
    type: str
    turn_id: NotRequired[str]


#: Per event type: the fields it always has, and those it may have, beyond seq/time/type/turn_id.
EVENT_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    t: (frozenset(required), frozenset(optional))
    for t, required, optional in [
        ("session.started", ("agent", "config"), ()),
        ("message.new", ("message",), ("copied_from",)),
        ("head.moved", ("from", "to"), ()),
        ("state.changed", ("node", "state"), ()),
        ("turn.queued", ("turn",), ()),
        ("turn.merged", ("messages", "client_state"), ()),
        ("turn.started", ("trigger",), ("turn",)),
        ("turn.completed", (), ()),
        ("turn.failed", ("error",), ()),
        ("turn.cancelled", ("reason",), ()),
        ("decision.requested", ("decision",), ()),
        ("decision.answered", ("actions",), ()),
        ("llm.started", ("call_id", "summary", "llm", "model"), ("message_id",)),
        ("llm.completed", ("call_id", "usage"), ("summary",)),
        ("llm.failed", ("call_id", "error", "message"), ("summary",)),
        ("context.limited", ("reason", "strategy", "tokens", "window", "call_id", "llm", "model"), ()),
        ("context.replaced", ("from", "to"), ()),
        ("context.kept", ("call_id",), ()),
        ("label.set", ("node", "label"), ()),
        ("label.removed", ("node",), ()),
    ]
}


class Call(TypedDict):
    """The held call of a ``context.limit`` decision."""

    id: str
    llm: str
    request: dict[str, Any]  # {"model", "messages"}
    stream: bool


class Decision(TypedDict):
    """A decision request as the worker sees it (``Session.pending``, docs/protocol.md 4)."""

    type: str  # turn.start, llm.result, context.limit
    turn_id: str
    trigger: dict[str, Any]
    head: str | None
    messages: list[Message]  # the path root -> head
    state: dict[str, Any]
    client_state: dict[str, Any]
    reply: NotRequired[Message]  # llm.result
    reason: NotRequired[str]  # context.limit: idle, full, overflow
    strategy: NotRequired[str]
    tokens: NotRequired[int]
    window: NotRequired[int | None]
    call: NotRequired[Call]
    proposed: NotRequired[list[dict[str, Any]]]


class Snapshot(TypedDict):
    """``Session.snapshot()``: the whole tree as JSON."""

    agent: str
    head: str | None
    nodes: list[Node]  # in seq order
    turns: list[Turn]
