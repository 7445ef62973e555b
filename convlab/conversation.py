"""An imported conversation: a message tree with a head, read from an outside log.

A ``Conversation`` wraps a :class:`convlab.tree.Tree` built with ``Tree.add``,
so its nodes carry exactly the attributes of a Session's nodes (docs/wire.md)
and the same count bookkeeping. It holds no engine state: it is what a log
says happened, ready to be framed, shown or replayed.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from .errors import ExploreError
from .tree import Message, Tree

__all__ = ["Conversation", "LOST_PARENT", "NO_CALL", "LOG_ROWS", "LOG_FORKS", "KEPT"]

#: The metadata key of an imported message whose log names a parent the file does not hold (a lost line, or a
#: parent chain that loops back to it): kept as a top-level message, it names that parent. The history under it
#: is not whole: what the log's model read before it is not in the file.
LOST_PARENT = "lost_parent"

#: The metadata key of an imported assistant message that no model call wrote: an agent's own notice in the
#: model's place (Claude Code's ``<synthetic>`` rows: "API Error: 500 ...", "No response requested."). It is on
#: the path, but it carries no usage (it is no provider's report, so the count goes on from the last real one)
#: and replay makes no model call for it (the worker records it: ``message.add``). Its value says why.
NO_CALL = "no_call"

#: The ``Conversation.metadata`` key of how many rows of its log were read as its messages, where that is not one
#: message a row (Claude Code writes one reply over several rows, one per content block, and several tool results in
#: one row): what a count made from the log's raw rows counts, beside ``len(conversation)``.
LOG_ROWS = "log_rows"

#: The ``Conversation.metadata`` key, beside ``LOG_ROWS``, of how many of those rows have two or more of them under
#: them (through the log's rows that are no message): the forks a count made from the raw rows counts, which are
#: no branch where they fall within one message (Claude Code writes a tool result under one row of a reply whose
#: next row hangs there too).
LOG_FORKS = "log_forks"

#: The metadata key of an imported message that a log's own compaction put in its new history without it being a
#: copy of an earlier message of the log (Codex keeps a reply's final text alone, not the whole reply): the id of
#: that compaction's summary root. A copy names its original in ``copied_from`` instead. Replay gives both to the
#: compaction's ``context.replace`` (``convlab.replaying.plan``), never to a model call.
KEPT = "kept_by"


class Conversation:
    """One conversation read from a log: ``id``, ``title``, ``tree``, ``head``, ``path()``.

    ``format`` names the importer that read it (``"chatgpt"``, ``"claude_code"``,
    ...), ``source`` the file it came from (``"export.zip!conversations.json"``
    for a member of an archive).

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, parent=None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, parent="u1")
    >>> t.head = "a1"
    >>> c = Conversation(t, id="c1", title="Greeting", format="openai")
    >>> [m["content"] for m in c.path()]
    ['hi', 'hello']
    >>> c
    Conversation(id='c1', title='Greeting', format='openai', messages=2, head='a1')
    """

    def __init__(
        self,
        tree: Tree,
        *,
        id: str,
        title: str | None = None,
        format: str | None = None,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        left_out: list[str] | None = None,
        no_text: list[str] | None = None,
    ) -> None:
        if not isinstance(tree, Tree):
            raise TypeError(f"Conversation wraps a convlab.tree.Tree, got {type(tree).__name__}")
        if tree.head is not None and tree.head not in tree:
            raise ValueError(f"conversation {id!r}: head {tree.head!r} is not a node of the tree")
        self._tree = tree
        self.id = str(id)
        self.title = title
        self.format = format
        self.source = source
        #: What the log says about the conversation beyond id and title (model, times, ...).
        self.metadata: dict[str, Any] = dict(metadata or {})
        #: The log's messages its importer could not read (an unknown role, not a message, an id used twice):
        #: one line each, as the ``ReadWarning`` said them. ``convlab.read`` refuses a file that loses most of its
        #: messages so, or every message of one speaker.
        self.left_out: list[str] = list(left_out or [])
        #: The messages (ids) read with no text because the importer found none where its format keeps a message's
        #: text (a key it does not read, an object where text goes), each said in a ``ReadWarning``. ``convlab.read``
        #: refuses a file in which most messages, or most of one speaker's, read empty so.
        self.no_text: list[str] = list(no_text or [])

    @property
    def tree(self) -> nx.DiGraph:
        """The message tree as a networkx DiGraph (edge parent -> child, node attributes per docs/wire.md)."""
        return self._tree.graph

    @property
    def message_tree(self) -> Tree:
        """The underlying :class:`convlab.tree.Tree` (roots, counts, paths to any node)."""
        return self._tree

    @property
    def head(self) -> str | None:
        """The log's current node (ChatGPT ``current_node``, Open WebUI ``currentId``, ...); ``None`` when empty."""
        return self._tree.head

    @property
    def roots(self) -> list[str]:
        """The top-level messages in creation order (more than one after a compaction)."""
        return list(self._tree.roots)

    def path(self, head: str | None = None) -> list[dict[str, Any]]:
        """The node dicts from the root to ``head`` (default: the conversation's head), copies."""
        if head is not None and head not in self._tree:
            raise KeyError(f"conversation {self.id!r} has no node {head!r}")
        if head is None and self._tree.head is None:
            return []
        return self._tree.path(head)

    def view(self, node_id: str) -> list[Message]:
        """The view root -> ``node_id``: the messages as a client sends them, every one with its id."""
        if node_id not in self._tree:
            raise KeyError(f"conversation {self.id!r} has no node {node_id!r}")
        return self._tree.messages(node_id)

    def children(self, node_id: str | None) -> list[str]:
        """Children of a node (None: the top-level messages), oldest first."""
        return self._tree.children(node_id)

    def checkout(self, node_id: str) -> None:
        """Move the head to ``node_id`` (in memory: a log is only read, never written).

        A Session changes branches through a view; a conversation read from a
        log has no engine, so looking at another branch only moves its head.
        """
        if node_id not in self._tree:
            raise KeyError(f"conversation {self.id!r} has no node {node_id!r}")
        self._tree.head = node_id

    def labels(self) -> dict[str, str]:
        """The labels on the conversation's messages, ``{id: text}`` (a log's own, as pi's ``label`` entries, and
        any set since), in the order they were set (a copy)."""
        return dict(self._tree.labels)

    def label(self, node_id: str, text: str) -> None:
        """Label a message (in memory, as ``checkout`` moves the head: a log is only read). A Session records
        its labels in its log (``Session.label``); ``convlab.write`` writes a conversation's out with it. An
        unknown node or an empty text: ``convlab.ExploreError``.

        >>> from convlab.tree import Tree
        >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> c = Conversation(t, id="c"); c.label("u1", "start"); c.labels()
        {'u1': 'start'}
        """
        self._labelled(node_id)
        if not isinstance(text, str) or not text.strip():
            raise ExploreError(f"label: a non-empty text was expected, got {text!r}")
        self._tree.set_label(node_id, text)

    def unlabel(self, node_id: str) -> None:
        """Take the label off a message (in memory)."""
        self._tree.set_label(self._labelled(node_id), None)

    def _labelled(self, node_id: object) -> str:
        if not isinstance(node_id, str) or node_id not in self._tree:
            raise ExploreError(f"node: {node_id!r} is no message of conversation {self.id!r}")
        return node_id

    # -- what changes a tree goes through an engine: a log has none ---------------------------------------------
    def merge(self, *_args: object, **_kwargs: object) -> None:
        """A conversation read from a log has no engine, and convlab never edits a tree behind an engine's back:
        ``convlab.merge(c, leaf)`` merges it in a new Session holding it, and returns that Session.

        >>> from convlab.tree import Tree
        >>> Conversation(Tree(), id="c").merge("a2")
        Traceback (most recent call last):
        ...
        convlab.errors.ExploreError: conversation 'c' is read from a log: it has no engine to merge through. convlab.merge(c, leaf) merges it in a new Session holding it (and returns it); Session.load(convlab.write(c, path)) keeps that session in a log
        """
        raise ExploreError(f"conversation {self.id!r} is read from a log: it has no engine to merge through. "
                           "convlab.merge(c, leaf) merges it in a new Session holding it (and returns it); "
                           "Session.load(convlab.write(c, path)) keeps that session in a log")

    def summarize(self, *_args: object, **_kwargs: object) -> None:
        """A conversation has no decision to answer with a summary: ``convlab.summarize(c, start)`` gives the
        proposal a session of it would make; it runs in such a session (``Session.load(convlab.write(c, path))``)."""
        raise ExploreError(f"conversation {self.id!r} is read from a log: it has no decision to answer with a "
                           "summary. convlab.summarize(c, start) gives the proposal; it runs in a session of it, "
                           "Session.load(convlab.write(c, path)), answering a waiting decision")

    def tokens(self) -> int:
        """The count of docs/protocol.md 5.1 for the path to the head (the log's usage where it has it)."""
        return self._tree.count()

    def __len__(self) -> int:
        return len(self._tree)

    def __repr__(self) -> str:
        return (
            f"Conversation(id={self.id!r}, title={self.title!r}, format={self.format!r}, "
            f"messages={len(self)}, head={self.head!r})"
        )
