"""Conversations as pandas DataFrames: one row per message, or one row per conversation.

Everything is computed in one pass over the nodes in ``seq`` order (parents
come before their children), plus one depth-first walk and one pass back for the branches;
exact token counts go through ``count_batch``, which encodes each distinct
text once. pandas is imported here, never by ``import convlab``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import networkx as nx

from .tokens import content_chars, content_text, count_batch
from .tree import input_tokens, lane_child, newest_leaves, nodes_in_order

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["frame", "conversations_frame", "branches", "FRAME_COLUMNS", "CONVERSATION_COLUMNS"]

#: The columns of ``frame``, in order.
FRAME_COLUMNS = (
    "id", "parent", "role", "kind", "seq", "time", "chars", "tokens", "depth",
    "on_path", "branch", "turn", "turn_id", "input_tokens", "output_tokens",
)

#: The columns of ``conversations_frame``, in order.
CONVERSATION_COLUMNS = (
    "id", "title", "format", "source", "messages", "branch_points", "longest_path", "head", "head_depth",
)


class HasTree(Protocol):
    """A Conversation, a Session: anything with a message ``tree`` (networkx), a ``head`` and ``path()``."""

    @property
    def tree(self) -> nx.DiGraph: ...

    @property
    def head(self) -> str | None: ...

    def path(self) -> list[dict[str, Any]]: ...


def _depths(nodes: list[dict[str, Any]]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for a in nodes:  # seq order: a parent is always before its children
        p = a["parent"]
        depth[a["id"]] = 1 if p is None else depth[p] + 1
    return depth


def branches(nodes: list[dict[str, Any]], path: list[str], of: Iterable[str] | None = None) -> dict[str, int]:
    """The ``branch`` column of ``frame`` (and of ``convlab.find``), per node of ``nodes`` (in ``seq`` order;
    ``path``: the active path's ids), or only per node of ``of`` (a search's matches: each lane is followed
    down from it to its leaf, or to a message a lane followed before passed, so that the walks together pass
    each message at most once, however many matches lie down one long chain). Branch index per node: the
    number of the leaf its lane ends at (the lane rule, ``convlab.tree.lane_child``, followed down from it),
    leaves numbered in a depth-first walk, children oldest first.

    A node's children are kept as its first child and, only for a node with several, the list of them: a
    long chain (an agent's session) makes no list a message."""
    first: dict[str | None, str] = {}  # a node -> its oldest child
    several: dict[str | None, list[str]] = {}  # a node with more than one child -> its children, oldest first
    for a in nodes:
        p, nid = a["parent"], a["id"]
        if p not in first:
            first[p] = nid
        elif p in several:
            several[p].append(nid)
        else:
            several[p] = [first[p], nid]
    number: dict[str, int] = {}
    stack = list(reversed(several[None])) if None in several else [first[None]] if None in first else []
    while stack:
        n = stack.pop()
        while n not in several and n in first:  # down a run of only children (a chain): next in preorder
            n = first[n]
        if n in several:
            stack.extend(reversed(several[n]))
        else:
            number[n] = len(number)
    newest = newest_leaves(nodes)
    continues = dict(itertools.pairwise(path))  # a node on the active path -> the next one

    def down(n: str) -> str | None:  # the child that continues n's lane (None: a leaf)
        return lane_child(several[n], newest, continues.get(n)) if n in several else first.get(n)

    if of is not None:
        starts = list(of)
        found: dict[str, int] = {}
        for start in starts:
            walked: list[str] = []
            n = start
            while n not in found:  # down the lane, to its leaf or to a message a lane before passed
                below = lane_child(several[n], newest, continues.get(n)) if n in several else first.get(n)
                if below is None:
                    break
                walked.append(n)
                n = below
            lane = found[n] if n in found else number[n]
            for w in (*walked, n):  # the lane from each message it passed ends at the same leaf
                found[w] = lane
        return {start: found[start] for start in starts}
    branch: dict[str, int] = {}
    for a in reversed(nodes):  # children before their parents
        n = a["id"]
        below = down(n)
        branch[n] = number[n] if below is None else branch[below]
    return branch


def _output_tokens(usage: object) -> int | None:
    v = usage.get("output_tokens") if isinstance(usage, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        return None
    return int(v)


def frame(conversation: HasTree, encoding: str = "o200k_base") -> pd.DataFrame:
    """One row per message node of a conversation (or a Session), in creation (``seq``) order.

    Columns:

    - ``id``, ``parent`` (``None`` for a top-level message), ``role``, ``kind``
      (``message`` or ``summary``), ``seq``, ``time``;
    - ``chars``: the characters the engine counts (docs/protocol.md 5.1);
      ``tokens``: the exact tiktoken count of the content's text (``encoding``);
    - ``depth``: messages from the root to this one, inclusive (a top-level
      message has depth 1, so the head's depth is ``len(path())``);
    - ``on_path``: on the active path, root -> head;
    - ``branch``: the lane of the drawn tree (``render_tree``, the tree view) the
      message is in. The lane rule (``convlab.tree.lane_child``: on the active
      path the child on it, elsewhere the child with the newest leaf) followed
      down from it ends at one leaf; ``branch`` is that leaf's number, leaves
      numbered 0, 1, 2, ... depth-first, children oldest first (not depending on
      the head). So branch k is a chain from where it forks off its parent's
      lane (or a top-level message) down to leaf k; the active path is one.
    - ``turn``: the user messages (summaries included) from the root to this
      message, inclusive: 0 before the first user message, then 1, 2, ...
      ``turn_id``: the engine's turn id where the tree records one;
    - ``input_tokens``: all the input the provider reported reading for a
      model reply (cached input included, ``convlab.tree.input_tokens``);
      ``output_tokens``: what it wrote; both ``<NA>`` where no usage was logged.

    >>> import convlab
    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello",
    ...            "usage": {"input_tokens": 1, "cache_read_input_tokens": 9, "output_tokens": 2}}, "u1")
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "hey"}, "u1")
    >>> t.head = "a2"
    >>> df = frame(convlab.Conversation(t, id="c"))
    >>> df[["id", "depth", "on_path", "branch", "turn"]].values.tolist()
    [['u1', 1, True, 1, 1], ['a1', 2, False, 0, 1], ['a2', 2, True, 1, 1]]
    >>> df["input_tokens"].tolist()
    [<NA>, 10, <NA>]
    """
    import pandas as pd

    if not all(hasattr(conversation, a) for a in ("tree", "head", "path")):
        hint = ": convlab.read() returns a list; frame each one, or conversations_frame(list)" if isinstance(conversation, (list, tuple)) else ""
        raise TypeError(f"frame takes one Conversation or Session, got a {type(conversation).__name__}{hint}")
    graph = conversation.tree
    nodes = nodes_in_order(graph)
    depth = _depths(nodes)
    path = [n["id"] for n in conversation.path()]
    branch = branches(nodes, path)
    on_path = set(path)
    turns: dict[str, int] = {}
    for a in nodes:
        p = a["parent"]
        turns[a["id"]] = (0 if p is None else turns[p]) + (a["role"] == "user")
    ids = [a["id"] for a in nodes]
    usage = [a.get("usage") for a in nodes]
    texts = [content_text(a["content"]) for a in nodes]
    df = pd.DataFrame(
        {
            "id": pd.Series(ids, dtype="object"),
            "parent": pd.Series([a["parent"] for a in nodes], dtype="object"),
            "role": pd.Series([a["role"] for a in nodes], dtype="object"),
            "kind": pd.Series([a.get("kind", "message") for a in nodes], dtype="object"),
            "seq": pd.Series([a["seq"] for a in nodes], dtype="int64"),
            "time": pd.Series([a.get("time") for a in nodes], dtype="float64"),
            "chars": pd.Series([content_chars(a["content"]) for a in nodes], dtype="int64"),
            "tokens": pd.Series(count_batch(texts, encoding) if texts else [], dtype="int64"),
            "depth": pd.Series([depth[i] for i in ids], dtype="int64"),
            "on_path": pd.Series([i in on_path for i in ids], dtype="bool"),
            "branch": pd.Series([branch[i] for i in ids], dtype="int64"),
            "turn": pd.Series([turns[i] for i in ids], dtype="int64"),
            "turn_id": pd.Series([a.get("turn_id") for a in nodes], dtype="object"),
            "input_tokens": pd.Series([input_tokens(u) for u in usage], dtype="Int64"),
            "output_tokens": pd.Series([_output_tokens(u) for u in usage], dtype="Int64"),
        },
        columns=list(FRAME_COLUMNS),
    )
    return df


def conversations_frame(conversations: Iterable[Any]) -> pd.DataFrame:
    """One row per conversation: ``id``, ``title``, ``format``, ``source``, ``messages``
    (message nodes), ``branch_points`` (messages with more than one child),
    ``longest_path`` (messages on the longest root-to-leaf path), ``head`` and
    ``head_depth`` (messages from the root to the head, inclusive; 0 with no head).

    >>> import convlab
    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for i, p in [("u1", None), ("a1", "u1"), ("a2", "u1"), ("u2", "a2")]:
    ...     _ = t.add({"id": i, "role": "user" if i[0] == "u" else "assistant", "content": i}, p)
    >>> t.head = "a1"
    >>> df = conversations_frame([convlab.Conversation(t, id="c", title="demo", format="openai")])
    >>> df[["id", "messages", "branch_points", "longest_path", "head", "head_depth"]].values.tolist()
    [['c', 4, 1, 3, 'a1', 2]]
    """
    import pandas as pd

    if hasattr(conversations, "tree") or isinstance(conversations, (str, bytes)):
        raise TypeError(f"conversations_frame takes a list of Conversations (what convlab.read() returns), "
                        f"got a {type(conversations).__name__}")
    rows = []
    for c in conversations:
        graph = c.tree
        nodes = nodes_in_order(graph)
        depth = _depths(nodes)
        head = c.head
        rows.append(
            {
                "id": getattr(c, "id", None),
                "title": getattr(c, "title", None),
                "format": getattr(c, "format", None),
                "source": getattr(c, "source", None),
                "messages": len(nodes),
                "branch_points": sum(1 for _, d in graph.out_degree() if d > 1),
                "longest_path": max(depth.values(), default=0),
                "head": head,
                "head_depth": depth.get(head, 0) if head is not None else 0,
            }
        )
    df = pd.DataFrame(rows, columns=list(CONVERSATION_COLUMNS))
    return df.astype({"messages": "int64", "branch_points": "int64", "longest_path": "int64", "head_depth": "int64"})
