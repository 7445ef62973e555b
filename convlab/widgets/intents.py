"""What a person does in a widget, as protocol input on the Session.

Every widget turns a click into one of these functions; each builds the
client input the protocol defines (PROTOCOL.md 2), submits it through the
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

Widgets redraw on session events. ``hold(session)`` coalesces: inside it,
listeners only mark their widget dirty, and each dirty widget redraws once
when the outermost hold ends.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..errors import Refused
from ..tree import MESSAGE_KEYS, children, newest_leaf

__all__ = [
    "agent_of", "hold", "listener", "view_of", "look_target", "look", "continue_from",
    "edit", "regenerate", "siblings", "switch_sibling", "send_message", "interrupt",
    "decide", "pending_input", "refusal_text",
]

_held: dict[int, list[Any]] = {}  # id(session) -> [depth, {dirty widgets}]


@contextlib.contextmanager
def hold(session: Any) -> Iterator[None]:
    """Coalesce widget redraws until the block ends."""
    key = id(session)
    entry = _held.setdefault(key, [0, {}])
    entry[0] += 1
    try:
        yield
    finally:
        entry[0] -= 1
        if entry[0] == 0:
            dirty = entry[1]
            del _held[key]
            for widget in dirty.values():
                _redraw(widget)


def _redraw(widget: Any) -> None:
    try:
        widget.refresh()
    except Exception as err:  # a drawing bug must not break the engine's event loop
        widget.status = f"display error: {type(err).__name__}: {err}"


def listener(widget: Any, prefixes: Iterable[str]) -> Callable[[Mapping[str, Any]], None]:
    """A ``session.subscribe`` callback that redraws ``widget`` on events whose type starts with a prefix."""
    prefixes = tuple(prefixes)

    def on_event(event: Mapping[str, Any]) -> None:
        if not str(event.get("type", "")).startswith(prefixes):
            return
        entry = _held.get(id(widget.session))
        if entry is not None:
            entry[1][id(widget)] = widget
        else:
            _redraw(widget)

    return on_event


def agent_of(session: Any) -> str:
    """The session's agent id (from its ``session.started`` event)."""
    for event in session.events[:1]:
        if event.get("type") == "session.started" and event.get("agent"):
            return event["agent"]
    return session.snapshot()["agent"]


def refusal_text(err: Refused) -> str:
    """A refusal as one readable line; a 409 names the running turn."""
    status = getattr(err, "status", None)
    text = f"Refused ({status}): {err}"
    turn = getattr(err, "turn_id", None)
    if status == 409:
        if turn and turn not in str(err):
            text += f" (turn {turn} is running)"
        text += ". Interrupt it first, or send with queue / merge."
    return text


def _submit(session: Any, payload: dict[str, Any]) -> dict[str, Any]:
    payload = {"agent_id": agent_of(session), **payload}
    try:
        with hold(session):
            receipt = session.submit(payload)
    except Refused as err:
        return {"ok": False, "status": err.status, "turn_id": getattr(err, "turn_id", None),
                "message": refusal_text(err)}
    return {"ok": True, "receipt": receipt, "message": ""}


def view_of(session: Any, node_id: str | None) -> list[dict[str, Any]]:
    """The view root -> ``node_id``: every message with its id (a head-only view)."""
    nodes = session.tree.nodes
    ids = []
    cur = node_id
    while cur is not None:
        ids.append(cur)
        cur = nodes[cur]["parent"]
    ids.reverse()
    return [_message(nodes[i]) for i in ids]


def _message(node: Mapping[str, Any], *, with_id: bool = True) -> dict[str, Any]:
    msg = {"role": node["role"], "content": node["content"]}
    if with_id:
        msg = {"id": node["id"], **msg}
    for key in MESSAGE_KEYS:
        if node.get(key) is not None:
            msg[key] = node[key]
    return msg


def look_target(session: Any, node_id: str) -> str | None:
    """Where looking at ``node_id`` puts the head: the newest leaf under it if
    that is an assistant reply, else the nearest assistant message above that
    leaf; ``None`` when there is none."""
    nodes = session.tree.nodes
    cur: str | None = newest_leaf(session.tree, node_id)
    while cur is not None and nodes[cur]["role"] != "assistant":
        cur = nodes[cur]["parent"]
    return cur


def _turn(session: Any, turn_id: str | None) -> Mapping[str, Any] | None:
    for turn in reversed(session.turns):
        if turn["id"] == turn_id:
            return turn
    return None


def _finish_look(session: Any, turn_id: str | None) -> None:
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


def look(session: Any, node_id: str) -> dict[str, Any]:
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
    with hold(session):
        outcome = _submit(session, {"type": "client.messages", "messages": view_of(session, target)})
        if outcome["ok"]:
            _finish_look(session, outcome["receipt"].get("turn_id"))
    outcome["head"] = target
    leaf = newest_leaf(session.tree, node_id)
    if outcome["ok"] and leaf != target:
        outcome["message"] = (f"{leaf} has no reply yet: the head is on {target}, the last reply above it. "
                              f"'Continue from here' on {leaf} makes the model answer it.")
    return outcome


def continue_from(session: Any, node_id: str) -> dict[str, Any]:
    """Move the head exactly to ``node_id``; its turn runs as the worker decides (it may reply)."""
    if node_id not in session.tree:
        return {"ok": False, "message": f"{node_id!r} is not in the tree"}
    return _submit(session, {"type": "client.messages", "messages": view_of(session, node_id)})


def edit(session: Any, index: int, content: Any) -> dict[str, Any]:
    """Send the view with message ``index`` of the active path changed and without an id: a new branch.

    The messages after it are left out (the page's example): for a user
    message the model answers the edited one.
    """
    path = session.path()
    view = [_message(n) for n in path[:index]] + [{**_message(path[index], with_id=False), "content": content}]
    return _submit(session, {"type": "client.messages", "messages": view})


def regenerate(session: Any, index: int) -> dict[str, Any]:
    """Send the view without the assistant reply at ``index``: a new reply beside it."""
    path = session.path()
    if path[index]["role"] != "assistant":
        return {"ok": False, "message": f"{path[index]['id']} is not an assistant reply"}
    if index == 0:
        return {"ok": False, "message": "a reply at the top of the tree has nothing to regenerate from"}
    return _submit(session, {"type": "client.messages", "messages": [_message(n) for n in path[:index]]})


def siblings(session: Any, node_id: str) -> list[str]:
    """``node_id`` and its siblings in creation order (top-level messages are siblings)."""
    graph = session.tree
    parent = graph.nodes[node_id]["parent"]
    if parent is None:
        roots = [n for n, a in graph.nodes(data=True) if a["parent"] is None]
        return sorted(roots, key=lambda n: graph.nodes[n]["seq"])
    return children(graph, parent)


def switch_sibling(session: Any, node_id: str, step: int) -> dict[str, Any]:
    """Look at the sibling ``step`` places from ``node_id`` (a head-only view to its newest leaf)."""
    sibs = siblings(session, node_id)
    k = sibs.index(node_id) + step
    if not 0 <= k < len(sibs):
        return {"ok": False, "message": "no sibling there"}
    return look(session, sibs[k])


def send_message(session: Any, text: str, queue: str = "none", state: Any = None,
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


def interrupt(session: Any) -> dict[str, Any]:
    """``client.interrupt``: cancel the running turn."""
    return _submit(session, {"type": "client.interrupt"})


def decide(session: Any, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer the pending decision."""
    try:
        with hold(session):
            session.decide(actions)
    except Refused as err:
        return {"ok": False, "status": err.status, "message": refusal_text(err)}
    return {"ok": True, "message": ""}


def pending_input(messages: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The input the model must still answer (PROTOCOL.md 5.3 ``kept``): the
    messages after the last assistant message; when the first of them is a tool
    result, from the assistant message whose tool calls they answer.

    >>> pending_input([{"id": "u1", "role": "user", "content": "a"},
    ...                {"id": "a1", "role": "assistant", "content": "b"},
    ...                {"id": "u2", "role": "user", "content": "c"}])
    [{'id': 'u2', 'role': 'user', 'content': 'c'}]
    """
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    start = last + 1
    if start < len(messages) and messages[start].get("role") == "tool" and last >= 0:
        start = last
    return [dict(m) for m in messages[start:]]
