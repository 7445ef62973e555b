"""A run's messages as real front ends send them, read against the thread's tree.

docs/protocol.md 2 matches a view by id and refuses one that is not a path of the
tree. Real AG-UI front ends send views the page never imagined; what each
means here (decided, written down in the README's "Real front ends"):

- **No messages** (and no ``resume``): the front end asks what the thread
  holds (a page that was reloaded: CopilotKit's ``connect``, assistant-ui's
  history adapter). The run answers with the active path
  (``MESSAGES_SNAPSHOT``) and writes nothing (``connects``).
- **A known message out of place.** assistant-ui deletes an edited message on
  the client; switched back with ‹ to the original branch, it sends the reply
  without the question above it (``[e1, u4]``, or ``[u1, e1, e2, u5]`` with
  ``u2`` gone). When the messages before a known one are all its ancestors in
  the tree, the client only dropped what it no longer shows: the tree's path
  fills the gap (``fill_gaps``), so the tree keeps the original question and
  the model reads it. Any other order is still the engine's 400.
- **New input while a decision waits** (``brings_input``): the rule is the
  server's ``on_unanswered`` (``convlab serve --on-unanswered``).
- **A resume that brings a new message** (assistant-ui's ``useAgUiSteerAway``
  answers the interrupt ``cancelled`` and sends the next message with it): a
  resume's messages are still no view while the decision waits (issue 13);
  but when they are the active path followed by new messages (``steers``),
  those messages are taken once the answered turn has ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine import Session

__all__ = ["fill_gaps", "brings_input", "steers", "continued", "UNANSWERED"]

#: What a run that brings new input does while a decision waits (``--on-unanswered``):
#: refuse it (409), end the waiting turn as "End the turn" does and take the input, or
#: answer the decision with its default (what the engine proposed) and take the input after.
UNANSWERED = ("refuse", "end", "default")


def fill_gaps(view: Sequence[Mapping[str, Any]], session: Session) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The view with the tree's messages put back where a front end left out a
    known message's ancestors, and the ids put back (in order).

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> view, filled = fill_gaps([{"id": "e1", "role": "assistant", "content": "echo: hi"},
    ...                           {"id": "u2", "role": "user", "content": "more"}], s)
    >>> [m["id"] for m in view], filled
    (['u1', 'e1', 'u2'], ['u1'])
    """
    nodes = session.tree.nodes
    sent = {m.get("id") for m in view}
    out: list[Mapping[str, Any]] = []
    filled: list[str] = []
    for message in view:
        node = nodes.get(message.get("id"))
        above = out[-1].get("id") if out else None
        if node is not None and node["parent"] != above and (above is None or above in nodes):
            path = session.view(message["id"])[:-1]
            ids = [m["id"] for m in path]
            start = 0 if above is None else (ids.index(above) + 1 if above in ids else -1)
            if start >= 0 and not sent & set(ids[start:]):  # a message the view has elsewhere: a reorder, not a gap
                out.extend(path[start:])
                filled.extend(ids[start:])
        out.append(message)
    return out, filled


def brings_input(view: Sequence[Mapping[str, Any]], session: Session) -> bool:
    """Whether the view holds a message the tree does not (not counting an
    assistant message: a stopped reply the engine leaves out, docs/protocol.md, rev 4).

    >>> import convlab
    >>> s = convlab.Session()
    >>> brings_input([{"id": "u1", "role": "user", "content": "hi"}], s)
    True
    """
    nodes = session.tree.nodes
    return any(m.get("id") not in nodes and m.get("role") != "assistant" for m in view)


def steers(view: Sequence[Mapping[str, Any]], session: Session) -> bool:
    """Whether a resume's messages are the active path (or its start) followed by new
    messages only: the next message sent with the answer.

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> steers([{"id": "u1", "role": "user", "content": "hi"}, {"id": "u2", "role": "user", "content": "more"}], s)
    True
    >>> steers([{"id": "zzz", "role": "user", "content": "no path"}], s)
    False
    """
    nodes = session.tree.nodes
    known = 0
    while known < len(view) and view[known].get("id") in nodes:
        known += 1
    path = [m["id"] for m in session.view(session.head)] if session.head is not None else []
    return (0 < known < len(view) and [m["id"] for m in view[:known]] == path[:known]
            and brings_input(view[known:], session))


def continued(view: list[Mapping[str, Any]], session: Session) -> list[Mapping[str, Any]]:
    """The view to take once a waiting turn has ended: its new messages after the
    active path, when the view's last known message lies on that path (itself, or
    as the message a copy on it was made from: a summary replaced what came
    before), else the view as it is. The client did not see what the turn gave.

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> [m["id"] for m in continued([{"id": "u1", "role": "user", "content": "hi"},
    ...                              {"id": "u2", "role": "user", "content": "more"}], s)]
    ['u1', 'e1', 'u2']
    """
    nodes = session.tree.nodes
    known = [m["id"] for m in view if m.get("id") in nodes]
    if not known or session.head is None:
        return view
    path = session.view(session.head)
    on_path = {m["id"] for m in path} | {nodes[m["id"]].get("copied_from") for m in path}
    if known[-1] not in on_path:
        return view
    return [*path, *(m for m in view if m.get("id") not in nodes)]
