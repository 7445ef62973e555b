"""Merge a branch back and summarize from a point, on any source (``convlab.merge``, ``convlab.summarize``).

A ``Session`` does both itself (``Session.merge``, ``Session.summarize``), through the protocol. An imported
``Conversation`` has no engine: a log is only read, and convlab never edits a tree behind an engine's back. So
it is loaded into a new ``Session`` in memory (``session_of``: every message with its id, parent and
attributes, the head and the labels, as ``convlab.write`` writes the session log and ``Session.load`` reads it
back), and the merge goes through that session, which is returned; the conversation is left as it is. A
``Replay`` is its session.
"""

from __future__ import annotations

import io
import json
from typing import Any

from ..conversation import Conversation
from ..engine import Session
from ..engine.branches import Summarizer
from ..errors import ExploreError, LogError, Refused
from ..replaying.result import Replay
from .sources import Source, name_of, node_of, tree_of
from .writing import log_events

__all__ = ["session_of", "merge", "summarize"]


def session_of(source: Source, **load: Any) -> Session:
    """The Session that changes ``source``'s tree: a Session itself, a Replay's session, or for a Conversation
    (or a bare Tree) a new Session holding it, in memory (``load``: ``Session.load``'s keyword arguments,
    ``worker``, ``llm``, ``config``, ...; nothing is written: ``Session.load(convlab.write(c, path))`` keeps it
    in a log). What cannot be loaded: ``convlab.ExploreError``.

    >>> from convlab.tree import Tree
    >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None); t.head = "u1"
    >>> s = session_of(Conversation(t, id="c")); s.head, [m["content"] for m in s.path()]
    ('u1', ['hi'])
    """
    if isinstance(source, Replay):
        source = source.session
    if isinstance(source, Session):
        if load:
            raise ExploreError(f"{', '.join(sorted(load))}: a Session is changed as it is (Session.load's arguments "
                               "are for a Conversation loaded into a new one)")
        return source
    tree = tree_of(source)
    agent = source.metadata.get("agent") if isinstance(source, Conversation) else None
    raw = "".join(json.dumps(e, ensure_ascii=False) + "\n"
                  for e in log_events(tree, agent if isinstance(agent, str) and agent else "bot")).encode()
    try:
        return Session.load(io.BytesIO(raw), **{**load, "append": False})
    except (LogError, ValueError, TypeError) as err:
        raise ExploreError(f"{name_of(source)!r} cannot be loaded into a session: {err}") from None


def merge(source: Source, leaf: str, into: str | None = None, summarizer: Summarizer = None, **load: Any) -> Session:
    """Merge the branch that ends at ``leaf`` back into the branch that ends at ``into`` (default: the head), as
    ``Session.merge`` does (what the branch did as one user message, ``metadata["merged_from"]``, submitted as a
    view), in the Session of ``source`` (``session_of``: for a Conversation, a new one holding it, which
    ``load`` goes to), and return that Session. Merging a branch the target's path already holds adds nothing.
    An unknown node, a leaf on the target's own path, a turn running: ``convlab.ExploreError``.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for nid, parent in [("u1", None), ("a1", "u1"), ("a2", "u1")]:
    ...     _ = t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": nid}, parent)
    >>> t.head = "a1"
    >>> s = merge(Conversation(t, id="c"), "a2", summarizer="a2 said hello", worker="manual")
    >>> s.path()[-1]["metadata"]["merged_from"], s.pending["type"], len(t)
    ({'leaf': 'a2', 'ancestor': 'u1'}, 'turn.start', 3)
    """
    tree = tree_of(source)
    node_of(tree, leaf, "leaf")
    if into is not None:
        node_of(tree, into, "into")
    s = session_of(source, **load)
    try:
        s.merge(leaf, into, summarizer)
    except Refused as err:
        raise ExploreError(str(err)) from None
    return s


def summarize(source: Source, start: str, end: str | None = None, summarizer: Summarizer = None) -> list[dict[str, Any]]:
    """"Summarize from here" on ``source``'s active path: the proposal ``Session.summarize`` makes (a
    ``context.replace`` that summarizes the messages from ``start`` to ``end``, default the head, and keeps the
    others verbatim). A proposal changes nothing: it runs as the answer to a decision of the session, with what that
    turn waits on kept after it (for a Conversation, a session of it: ``Session.load(convlab.write(c, path))``). An
    unknown node, one off the active path, an ``end`` above ``start``: ``convlab.ExploreError``.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for nid, parent in [("u1", None), ("a1", "u1"), ("u2", "a1")]:
    ...     _ = t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": nid}, parent)
    >>> t.head = "u2"
    >>> [m.get("id") for m in summarize(Conversation(t, id="c"), "a1", "a1", summarizer="one answer")[0]["messages"]]
    ['u1', None, 'u2']
    """
    tree = tree_of(source)
    node_of(tree, start, "start")
    if end is not None:
        node_of(tree, end, "end")
    try:
        return session_of(source).summarize(start, end, summarizer)
    except Refused as err:
        raise ExploreError(str(err)) from None
