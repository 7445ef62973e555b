"""What a person does in a widget, as protocol input on the Session.

Every widget turns a click into one of these functions; each builds the
client input the protocol defines (docs/protocol.md 2), submits it through the
public Session surface and returns an outcome dict:
``{"ok": bool, "message": str, "receipt"?: dict, "status"?: int, "turn_id"?: str}``.
A refusal (``convlab.Refused``) becomes a readable ``message``, never a
traceback.

Looking is not replying. Checking out a branch ("look") sends a head-only
``client.messages`` view, and every accepted view starts a turn; the built-in
chat worker calls the model unless the path ends with an assistant message.
So a look lands on an assistant reply: the newest leaf under the clicked
message if it is one, else the nearest assistant message above that leaf. The
look's own turn is then finished without a model call: under autorun the
chat worker has already ended it (the path ends with a reply); whenever its
``turn.start`` decision is still waiting (a person is the worker,
``worker="manual"``, or ``autorun=False``) the look answers it with
``turn.end``; it never steps another turn. Nothing is recorded: the events
are ``head.moved``, ``turn.started``, ``decision.requested``,
``decision.answered``, ``turn.completed``. A look during a running turn
cancels that turn (``turn.cancelled``), as the protocol says for any view
that changes branches. When no assistant message is on
the way up (a conversation that was never answered), the head does not move
and the outcome says to use "Continue from here", which moves the head
exactly there and may start a reply, as the protocol says. A custom callable
worker decides for itself what the look's turn does.

Widgets redraw on session events, coalesced (``convlab.widgets.live``): these
functions draw nothing themselves, so a script may call them in a loop; a
widget's button that calls one draws the widgets of its session once, when
it is done.

An imported conversation (``convlab.Conversation``) is read-only: looking at a
branch moves its head in memory (``ReadOnly.move_head``) to the newest leaf
under the clicked message, and every input that would change it says so.

A session another driver steps (``Session.driver``: one the AG-UI server
serves, under its own locks and with ``autorun=False``) is only watched: every
input, a look too, is refused with a message naming that driver, and nothing is
sent. An input from here would change it outside the server's locks, and its
turn would wait for steps no one takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import Refused
from ..tree import ancestors, newest_leaf
from .source import REPLAY_HINT, ReadOnly, Source

if TYPE_CHECKING:
    from ..engine import Session

__all__ = [
    "agent_of", "look_target", "look", "continue_from", "edit", "regenerate", "siblings",
    "switch_sibling", "send_message", "interrupt", "decide", "refusal_text", "READ_ONLY",
]

#: The outcome message of an input given to a read-only conversation.
READ_ONLY = f"read-only: an imported conversation takes no input here ({REPLAY_HINT})"


def agent_of(session: Session) -> str:
    """The session's agent id (from its ``session.started`` event)."""
    for event in session.events[:1]:
        started: Mapping[str, Any] = event  # an event's other fields depend on its type (convlab.wire.EVENT_FIELDS)
        if started.get("type") == "session.started" and started.get("agent"):
            return started["agent"]
    return session.snapshot()["agent"]


def refusal_text(err: Refused) -> str:
    """A refusal as one readable line; a 409 names the running turn."""
    status = getattr(err, "status", None)
    text = f"Refused ({status}): {err}"
    turn = getattr(err, "turn_id", None)
    if status == 409 and turn:  # a turn is running (a 409 with no turn, "nothing to interrupt", says it all)
        if turn not in str(err):
            text += f" (turn {turn} is running)"
        if "interrupt" not in str(err):  # (the engine's own words may say what to do already)
            text += ". Interrupt it first, or send with queue / merge."
    return text


def _read_only() -> dict[str, Any]:
    return {"ok": False, "message": READ_ONLY}


def _elsewhere(session: Source) -> dict[str, Any] | None:
    """The outcome of an input to a session another driver steps (``Session.driver``): refused, nothing sent."""
    if isinstance(session, ReadOnly) or session.driver is None:
        return None
    return {"ok": False, "message": f"watching only: {session.driver}"}


def _submit(session: Source, payload: dict[str, Any]) -> dict[str, Any]:
    if isinstance(session, ReadOnly):
        return _read_only()
    elsewhere = _elsewhere(session)
    if elsewhere is not None:
        return elsewhere
    payload = {"agent_id": agent_of(session), **payload}
    try:
        receipt = session.submit(payload)
    except Refused as err:
        return {"ok": False, "status": err.status, "turn_id": getattr(err, "turn_id", None),
                "message": refusal_text(err)}
    return {"ok": True, "receipt": receipt, "message": ""}


def look_target(session: Source, node_id: str) -> str | None:
    """Where looking at ``node_id`` puts the head: the newest leaf under it if
    that is an assistant reply, else the nearest assistant message above that
    leaf; ``None`` when there is none. On a read-only conversation: the newest leaf."""
    leaf = newest_leaf(session.tree, node_id)
    if isinstance(session, ReadOnly):
        return leaf
    nodes = session.tree.nodes
    return next((n for n in ancestors(nodes, leaf) if nodes[n]["role"] == "assistant"), None)


def _turn(session: Session, turn_id: str | None) -> Mapping[str, Any] | None:
    for turn in reversed(session.turns):
        if turn["id"] == turn_id:
            return turn
    return None


def _finish_look(session: Session, turn_id: str | None) -> None:
    """Run the look's own turn to its end without a model call (see module docstring)."""
    for _ in range(100):
        turn = _turn(session, turn_id)
        if turn is None or turn["status"] not in ("running", "queued"):
            return
        pending = session.pending
        if pending is not None:
            if pending.get("turn_id") == turn_id and pending.get("type") == "turn.start":
                session.decide([{"type": "turn.end"}])
                continue
            return  # some other decision: the person answers it
        if turn["status"] != "running":
            return  # queued behind others: never runs their turns
        session.step()


def look(session: Source, node_id: str) -> dict[str, Any]:
    """Check out the branch of ``node_id`` without making the model reply."""
    if node_id not in session.tree:
        return {"ok": False, "message": f"{node_id!r} is not in the tree"}
    target = look_target(session, node_id)
    if target is None:
        return {"ok": False, "message": (
            f"{node_id} has no reply on its branch: looking would make the model reply. "
            "Use 'Continue from here' to move the head there.")}
    if target == session.head:
        return {"ok": True, "message": "", "head": target}
    if isinstance(session, ReadOnly):
        session.move_head(target)
        return {"ok": True, "message": "", "head": target}
    outcome = _submit(session, {"type": "client.messages", "messages": session.view(target)})
    if outcome["ok"]:
        _finish_look(session, outcome["receipt"].get("turn_id"))
    outcome["head"] = target
    leaf = newest_leaf(session.tree, node_id)
    if outcome["ok"] and leaf != target:
        outcome["message"] = (f"{leaf} has no reply yet: the head is on {target}, the last reply above it. "
                              f"'Continue from here' on {leaf} makes the model answer it.")
    return outcome


def continue_from(session: Source, node_id: str) -> dict[str, Any]:
    """Move the head exactly to ``node_id``; its turn runs as the worker decides (it may reply)."""
    if node_id not in session.tree:
        return {"ok": False, "message": f"{node_id!r} is not in the tree"}
    if isinstance(session, ReadOnly):
        return _read_only()
    return _submit(session, {"type": "client.messages", "messages": session.view(node_id)})


def edit(session: Source, index: int, content: str | list[Any]) -> dict[str, Any]:
    """Send the view with message ``index`` of the active path changed and without an id: a new branch.

    The messages after it are left out (the page's example): for a user
    message the model answers the edited one.
    """
    if isinstance(session, ReadOnly):
        return _read_only()
    view = session.view(session.path()[index]["id"])
    changed = {k: v for k, v in view[-1].items() if k != "id"}
    changed["content"] = content
    return _submit(session, {"type": "client.messages", "messages": [*view[:-1], changed]})


def regenerate(session: Source, index: int) -> dict[str, Any]:
    """Send the view without the assistant reply at ``index``: a new reply beside it."""
    if isinstance(session, ReadOnly):
        return _read_only()
    path = session.path()
    if path[index]["role"] != "assistant":
        return {"ok": False, "message": f"{path[index]['id']} is not an assistant reply"}
    if index == 0:
        return {"ok": False, "message": "a reply at the top of the tree has nothing to regenerate from"}
    return _submit(session, {"type": "client.messages", "messages": session.view(path[index - 1]["id"])})


def siblings(session: Source, node_id: str) -> list[str]:
    """``node_id`` and its siblings in creation order (top-level messages are siblings)."""
    return session.children(session.message_tree.parent(node_id))


def switch_sibling(session: Source, node_id: str, step: int) -> dict[str, Any]:
    """Look at the sibling ``step`` places from ``node_id`` (a head-only view to its newest leaf)."""
    if node_id not in session.message_tree:
        return {"ok": False, "message": f"{node_id!r} is not in the tree"}
    sibs = siblings(session, node_id)
    k = sibs.index(node_id) + step
    if not 0 <= k < len(sibs):
        return {"ok": False, "message": "no sibling there"}
    return look(session, sibs[k])


def send_message(session: Source, text: str, queue: str = "none", state: object = None,
                 message_id: str | None = None) -> dict[str, Any]:
    """``client.message`` with a user message; ``queue`` is ``"none"``, ``"queue"`` or ``"merge"``."""
    message: dict[str, Any] = {"role": "user", "content": text}
    if message_id:
        message = {"id": message_id, **message}
    payload: dict[str, Any] = {"type": "client.message", "message": message}
    if queue == "queue":
        payload["queue"] = True
    elif queue == "merge":
        payload["queue"] = "merge"
    elif queue != "none":
        raise ValueError(f"queue must be 'none', 'queue' or 'merge', not {queue!r}")
    if state is not None:
        payload["state"] = state
    return _submit(session, payload)


def interrupt(session: Source) -> dict[str, Any]:
    """``client.interrupt``: cancel the running turn."""
    return _submit(session, {"type": "client.interrupt"})


def decide(session: Source, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer the pending decision."""
    if isinstance(session, ReadOnly):
        return _read_only()
    elsewhere = _elsewhere(session)
    if elsewhere is not None:
        return elsewhere
    try:
        session.decide(actions)
    except Refused as err:
        return {"ok": False, "status": err.status, "message": refusal_text(err)}
    return {"ok": True, "message": ""}
