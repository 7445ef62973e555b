"""Where a tree keeps its nodes: the storage protocol (``NodeStore``), the fixed ``Record`` of a node,
and the default store in memory (``MemoryStore``).

``convlab.tree.Tree`` owns every rule (ids, the count, worker state, views, lanes) and
asks a store only for what ``NodeStore`` lists; ``convlab.lazy`` supplies a store that
keeps contents in the session log. This module knows nothing of the rules.
"""

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple, Protocol

import networkx as nx

__all__ = ["Record", "as_record", "NodeStore", "MemoryStore"]


class Record(NamedTuple):
    """What recording a node fixes for good (the tree only grows), kept per node so
    that nothing per turn re-reads the path: the count of docs/protocol.md 5.1 and a
    ``PathView`` read it. ``Tree`` computes it once, from the parent's; a store
    keeps it."""

    depth: int  # messages root -> the node (1: a top-level one)
    top: str  # the top-level message its path starts with
    chars: int  # its characters (content_chars)
    cum: int  # the characters root -> it, inclusive
    last_call: str | None  # the nearest model reply (with reported input) at or above it
    reported: int | None  # its reported input, if it is a model reply (input_tokens)


#: A ``Record`` from the tuple of its fields, made by ``tuple``'s own constructor: a NamedTuple's ``__new__`` is
#: Python code, twice the cost (a message added makes one and reads its parent's).
as_record: Callable[[tuple], Record] = partial(tuple.__new__, Record)


class NodeStore(Protocol):
    """Where a ``Tree`` keeps its nodes: the storage protocol. ``Tree`` owns every
    rule (ids, the count, worker state, views, lanes) and asks a store only for
    these. ``MemoryStore`` (the default) keeps all in memory; ``convlab.lazy``
    supplies one that keeps contents in the session log.

    - ``node in store``: whether ``node`` is recorded;
    - ``put(attrs, record)``: record a new node (``attrs`` from ``new_node``, its
      ``parent`` recorded already; its ``near`` None) and return its stored attribute dict;
    - ``attrs(node)``: its attribute dict (loaded on demand: the tree's own, which
      ``Tree.node`` gives); ``parent(node)``; ``record(node)``: its ``Record``;
    - ``children(node)``: its children, oldest first;
    - ``state(node)`` / ``set_state(node, state)``: its worker state (``state``
      already the store's own copy), without loading the node;
    - ``near(node)`` / ``set_near(node, near)``: the nearest node with worker state
      at or above it (``None``: none), what ``Tree.state_at`` reads;
    - ``nodes_in_order()``: every node's attributes (copies of the top level) in
      ``seq`` order; ``graph()``: the whole tree as a ``networkx.DiGraph`` whose node
      dicts are the attribute dicts from then on, kept up to date by ``put``.
    """

    def __contains__(self, node_id: object) -> bool: ...
    def put(self, attrs: dict[str, Any], record: Record) -> dict[str, Any]: ...
    def attrs(self, node_id: str) -> dict[str, Any]: ...
    def parent(self, node_id: str) -> str | None: ...
    def record(self, node_id: str) -> Record: ...
    def children(self, node_id: str) -> list[str]: ...
    def state(self, node_id: str) -> dict[str, Any] | None: ...
    def set_state(self, node_id: str, state: dict[str, Any]) -> None: ...
    def near(self, node_id: str) -> str | None: ...
    def set_near(self, node_id: str, near: str | None) -> None: ...
    def nodes_in_order(self) -> list[dict[str, Any]]: ...
    def graph(self) -> nx.DiGraph: ...


class MemoryStore:
    """A ``NodeStore`` in memory, ``Tree``'s default: flat maps of ids (id -> attribute
    dict, first child, next sibling, record, nearest state), no container per node
    beyond its attributes and record. The ``networkx.DiGraph`` is built the first
    time it is asked for: until then a session that never asks for it (a script, a
    replay's own bookkeeping) keeps three containers fewer a message for the
    collector to walk. A record is kept as a plain tuple and made a ``Record`` when
    read: a tuple of numbers and strings is one Python's collector stops tracking,
    a ``NamedTuple`` (a subclass) one it walks in every full collection for good.

    >>> from convlab.tree import new_node
    >>> s = MemoryStore(); _ = s.put(new_node({"role": "user"}, id="u1", seq=1), Record(1, "u1", 0, 0, None, None))
    >>> "u1" in s, s.parent("u1"), s.record("u1").depth, s.children("u1")
    (True, None, 1, [])
    """

    def __init__(self) -> None:
        self._node: dict[str, dict[str, Any]] = {}  # in creation order
        self._rec: dict[str, tuple] = {}  # Record's fields, as a plain tuple (see above)
        self._near: dict[str, str | None] = {}
        self._first_kid: dict[str, str] = {}
        self._last_kid: dict[str, str] = {}
        self._next_kid: dict[str, str] = {}
        self._built: nx.DiGraph | None = None

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._node

    def put(self, attrs: dict[str, Any], record: Record) -> dict[str, Any]:
        nid, parent = attrs["id"], attrs["parent"]
        stored = attrs
        if self._built is not None:
            self._built.add_node(nid, **attrs)
            stored = self._built.nodes[nid]
            if parent is not None:
                self._built.add_edge(parent, nid)
        self._node[nid] = stored
        self._rec[nid] = tuple(record)
        self._near[nid] = None
        if parent is not None:
            last = self._last_kid.get(parent)
            if last is None:
                self._first_kid[parent] = nid
            else:
                self._next_kid[last] = nid
            self._last_kid[parent] = nid
        return stored

    def attrs(self, node_id: str) -> dict[str, Any]:
        return self._node[node_id]

    def parent(self, node_id: str) -> str | None:
        return self._node[node_id]["parent"]

    def record(self, node_id: str) -> Record:
        return as_record(self._rec[node_id])

    def children(self, node_id: str) -> list[str]:
        out = []
        kid = self._first_kid.get(node_id)
        while kid is not None:
            out.append(kid)
            kid = self._next_kid.get(kid)
        return out

    def state(self, node_id: str) -> dict[str, Any] | None:
        return self._node[node_id]["state"]

    def set_state(self, node_id: str, state: dict[str, Any]) -> None:
        self._node[node_id]["state"] = state

    def near(self, node_id: str) -> str | None:
        return self._near[node_id]

    def set_near(self, node_id: str, near: str | None) -> None:
        self._near[node_id] = near

    def nodes_in_order(self) -> list[dict[str, Any]]:
        return [dict(a) for a in self._node.values()]

    def graph(self) -> nx.DiGraph:
        if self._built is None:
            g: nx.DiGraph = nx.DiGraph()
            for nid, attrs in self._node.items():
                g.add_node(nid, **attrs)
                self._node[nid] = g.nodes[nid]
                if attrs["parent"] is not None:
                    g.add_edge(attrs["parent"], nid)
            self._built = g
        return self._built
