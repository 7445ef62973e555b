"""The message tree (PROTOCOL.md section 1) on a networkx DiGraph.

One node per recorded message, keyed by its id, edge parent -> child. The
root is not a message and not a node: top-level messages have ``parent``
``None``. The tree only grows.

Beside the graph the tree keeps, per node, what the count of PROTOCOL.md 5.1
needs so that counting never re-reads the path: the node's characters, the
characters from the root to it (inclusive), and the nearest node at or above
it whose ``usage`` came from a model reply. Matching a view uses the id index
(the graph's node dict) and one parent check per message: it never walks the
tree.

This module knows nothing of turns, decisions or the engine.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Iterable, Iterator, NotRequired, TypedDict

import networkx as nx

from . import jsondata
from .tokens import content_chars, estimate

__all__ = [
    "Tree",
    "PathView",
    "Node",
    "Message",
    "ROLES",
    "RECORDED",
    "MESSAGE_KEYS",
    "ViewError",
    "input_tokens",
    "new_node",
    "message_of",
    "newest_leaf",
    "nodes_in_order",
    "children",
    "path_to",
    "newest_leaves",
    "lane_child",
    "lane_from",
]

ROLES = ("system", "user", "assistant", "tool")


class Message(TypedDict):
    """A message as a client sends it and a model reads it (PROTOCOL.md 1)."""

    id: NotRequired[str]
    role: str  # one of ROLES
    content: str | list[Any]  # a string, or parts ({"type": "text", "text"} or any other part)
    name: NotRequired[str]
    tool_calls: NotRequired[list[Any]]
    tool_call_id: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


class Node(TypedDict):
    """A recorded message: the one node schema of every tree (docs/wire.md).

    Sessions, lazy logs, importers, replay and widgets all build nodes with
    ``new_node`` and read messages out of them with ``message_of``.
    """

    id: str
    parent: str | None  # None: a top-level message (the root is not a node)
    role: str
    content: str | list[Any]
    seq: int  # creation order, 1, 2, ...
    time: float | None
    turn_id: str | None
    copied_from: str | None
    kind: str  # "message" or "summary"
    usage: dict[str, Any] | None  # a model reply's {"input_tokens", "output_tokens", ...}
    state: dict[str, Any] | None  # worker state set at this node
    replaces: str | None  # on the first node of a context.replace: the head it replaced
    name: NotRequired[str]
    tool_calls: NotRequired[list[Any]]
    tool_call_id: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


#: Keys a message carries through to the model, beyond id/role/content (present only
#: when set), each with the JSON type it must have.
MESSAGE_KEYS: dict[str, type] = {"name": str, "tool_calls": list, "tool_call_id": str, "metadata": dict}

#: Attributes the engine owns on a node. A client may send them on a new
#: message; they are ignored, never recorded (PROTOCOL.md 1, gap).
RECORDED = tuple(k for k in Node.__annotations__ if k not in MESSAGE_KEYS)

_DEFAULTS: dict[str, Any] = {k: None for k in RECORDED} | {"content": "", "kind": "message"}


class ViewError(ValueError):
    """A view that cannot be matched against the tree (the engine answers 400)."""


def input_tokens(usage: Mapping[str, Any] | None) -> int | None:
    """All the input a provider reported reading, cached input included.

    >>> input_tokens({"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5})
    100
    """
    if not usage:
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    if not any(k in usage for k in keys):
        return None
    return sum(int(usage.get(k) or 0) for k in keys)


def new_node(fields: Mapping[str, Any], **recorded: Any) -> Node:
    """The node that ``fields`` (a message, or a node's attributes) make, with
    ``recorded`` attributes over them and every other recorded attribute at its
    default. Shares the values it is given: they are trusted (checked and copied
    at the edge), never copied again.

    >>> new_node({"role": "user", "content": "hi", "name": "sam", "seq": 9}, id="u1", seq=1)
    {'id': 'u1', 'parent': None, 'role': 'user', 'content': 'hi', 'seq': 1, 'time': None, 'turn_id': None, 'copied_from': None, 'kind': 'message', 'usage': None, 'state': None, 'replaces': None, 'name': 'sam'}
    """
    node = {k: recorded[k] if k in recorded else fields.get(k, d) for k, d in _DEFAULTS.items()}
    if node["kind"] is None:
        node["kind"] = "message"
    for key in MESSAGE_KEYS:
        if fields.get(key) is not None:
            node[key] = fields[key]
    return node  # type: ignore[return-value]


def message_of(node: Mapping[str, Any], *, with_id: bool = True) -> Message:
    """The message a model reads for a node: id (unless ``with_id=False``), role,
    content and the message keys; a fresh copy, the caller's to keep.

    >>> message_of({"id": "a1", "role": "assistant", "content": "ok", "seq": 2, "usage": {"input_tokens": 1}})
    {'id': 'a1', 'role': 'assistant', 'content': 'ok'}
    """
    content = node["content"]
    msg: dict[str, Any] = {"id": node["id"]} if with_id else {}
    msg["role"] = node["role"]
    msg["content"] = content if content.__class__ is str else jsondata.copy(content)
    get = node.get
    for key in MESSAGE_KEYS:
        value = get(key)
        if value is not None:
            msg[key] = value if value.__class__ is str else jsondata.copy(value)
    return msg  # type: ignore[return-value]


def nodes_in_order(graph: nx.DiGraph) -> list[dict[str, Any]]:
    """Every node's attributes (the graph's own dicts, not copies) in creation (``seq``)
    order: parents before their children.

    >>> t = Tree(); _ = t.add({"id": "b", "role": "user", "content": ""}, None); _ = t.add({"id": "a", "role": "user", "content": ""}, "b")
    >>> [n["id"] for n in nodes_in_order(t.graph)]
    ['b', 'a']
    """
    return sorted((attrs for _, attrs in graph.nodes(data=True)), key=lambda a: a["seq"])


def children(graph: nx.DiGraph, node: str | None, roots: list[str] | None = None) -> list[str]:
    """Children of ``node`` in creation order (``None``: the top-level messages, given ``roots``)."""
    if node is None:
        return list(roots or [])
    return sorted(graph.successors(node), key=lambda n: graph.nodes[n]["seq"])


def newest_leaf(graph: nx.DiGraph, node: str | None = None) -> str | None:
    """The newest (highest ``seq``) leaf at or under ``node`` (``None``: in the whole
    tree, ``None`` when it is empty): where checking out a branch lands.

    >>> t = Tree(); _ = t.add({"id": "a", "role": "user", "content": "x"}, parent=None)
    >>> _ = t.add({"id": "b", "role": "assistant", "content": "y"}, parent="a")
    >>> newest_leaf(t.graph, "a"), newest_leaf(t.graph), newest_leaf(Tree().graph)
    ('b', 'b', None)
    """
    nodes = graph.nodes if node is None else nx.dfs_preorder_nodes(graph, node)
    best, best_seq = node, -1
    for n in nodes:
        if graph.out_degree(n) == 0 and graph.nodes[n]["seq"] > best_seq:
            best, best_seq = n, graph.nodes[n]["seq"]
    return best


def path_to(nodes: Mapping[str, Mapping[str, Any]], head: str | None) -> list[str]:
    """The ids from the root to ``head``, up the parent links: the walk every view of a path
    makes (``head`` the tree's head: the active path). ``nodes`` is a graph's ``nodes`` or
    any mapping of id -> node; the walk stops at an id it does not hold.

    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": ""}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": ""}, "u1")
    >>> path_to(t.graph.nodes, "a1"), path_to(t.graph.nodes, None)
    (['u1', 'a1'], [])
    """
    path: list[str] = []
    n = head
    while n is not None and n in nodes:
        path.append(n)
        n = nodes[n].get("parent")
    path.reverse()
    return path


def newest_leaves(nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per node, the ``seq`` of the newest leaf at or under it: what the lane rule reads.
    ``nodes`` are node dicts in ``seq`` order (parents before children), one pass.

    >>> t = Tree()
    >>> for nid, parent in [("u1", None), ("a1", "u1"), ("a2", "u1"), ("u2", "a1")]:
    ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
    >>> newest_leaves(nodes_in_order(t.graph))
    {'u2': 4, 'a1': 4, 'a2': 3, 'u1': 4}
    """
    newest: dict[str, int] = {}
    for a in reversed(list(nodes)):
        nid, parent = a["id"], a.get("parent")
        mine = newest.setdefault(nid, a["seq"])
        if parent is not None and mine > newest.get(parent, -1):
            newest[parent] = mine
    return newest


def lane_child(kids: Sequence[str], newest: Mapping[str, int], on_path: str | None = None) -> str | None:
    """The lane rule: which of a node's children (``kids``) continues its lane in a drawing of
    the tree (the text graph, the tree view). On the active path, the child on it
    (``on_path``); elsewhere the child whose subtree holds the newest leaf (``newest``, from
    ``newest_leaves``): where looking at the node lands (``newest_leaf``), so following the
    lane from a node is the path a checkout of it gives. The other children fork off it.

    >>> lane_child(["a1", "a2"], {"a1": 4, "a2": 3}), lane_child(["a1", "a2"], {"a1": 4, "a2": 3}, on_path="a2")
    ('a1', 'a2')
    """
    if not kids:
        return None
    if on_path is not None and on_path in kids:
        return on_path
    return max(kids, key=newest.__getitem__)


def lane_from(graph: nx.DiGraph, node: str, newest: Mapping[str, int]) -> list[str]:
    """The ids from ``node`` down its lane to the newest leaf under it (``node`` first): the
    rest of the path a checkout of ``node`` gives.

    >>> t = Tree()
    >>> for nid, parent in [("u1", None), ("a1", "u1"), ("a2", "u1"), ("u2", "a1")]:
    ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
    >>> lane_from(t.graph, "u1", newest_leaves(nodes_in_order(t.graph)))
    ['u1', 'a1', 'u2']
    """
    out = [node]
    kids = list(graph.successors(node))
    while kids:
        node = lane_child(kids, newest)  # type: ignore[assignment]
        out.append(node)
        kids = list(graph.successors(node))
    return out


class PathView(Sequence):
    """The messages of the path root -> ``head`` (``message_of`` each), made when read.

    What the built-in worker reads of a decision: the last message, in O(1)
    (``view[-1]`` is the head's message, with no walk); anything else walks the
    path once.
    """

    def __init__(self, tree: "Tree", head: str | None) -> None:
        self._tree, self._head = tree, head
        self._ids: list[str] | None = None

    def _path(self) -> list[str]:
        if self._ids is None:
            self._ids = self._tree.path_ids(self._head) if self._head is not None else []
        return self._ids

    def __bool__(self) -> bool:
        return self._head is not None

    def __len__(self) -> int:
        return len(self._path())

    def __getitem__(self, i):  # type: ignore[override]
        if i == -1 and self._head is not None:
            return message_of(self._tree.node(self._head))
        if isinstance(i, slice):
            return [message_of(self._tree.node(n)) for n in self._path()[i]]
        return message_of(self._tree.node(self._path()[i]))


class Tree:
    """A message tree with a head.

    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "weather in NYC?"}, parent=None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "Sunny."}, parent="u1")
    >>> t.head = "a1"
    >>> [n["id"] for n in t.path()]
    ['u1', 'a1']
    >>> t.match([{"id": "u1", "role": "user", "content": "?"}, {"role": "user", "content": "LA?"}])
    (1, 'u1')

    The storage primitives (``_has``, ``_parent_of``, ``_attrs``, ``_state_of``
    and the count's bookkeeping) are all that ``convlab.lazy.LazyTree``
    overrides to keep contents in the session log instead of in memory.
    """

    def __init__(self) -> None:
        self._graph = nx.DiGraph()
        self.roots: list[str] = []
        self.head: str | None = None
        self.seq = 0
        # per node, for the count (PROTOCOL.md 5.1) without re-reading the path
        self._chars: dict[str, int] = {}
        self._cum: dict[str, int] = {}
        self._last_call: dict[str, str | None] = {}
        self._stated: set[str] = set()  # nodes with worker state: state_at is O(1) without any
        # id -> the graph's own attribute dict: a walk up the path reads a plain dict, not a NodeView
        self._node: dict[str, dict[str, Any]] = {}

    @property
    def graph(self) -> nx.DiGraph:
        """The tree as a ``networkx.DiGraph``: one node per message, edge parent -> child."""
        return self._graph

    # -- storage primitives ------------------------------------------
    def _has(self, node_id: object) -> bool:
        return node_id in self._graph

    def _parent_of(self, node_id: str) -> str | None:
        return self._node[node_id]["parent"]

    def _attrs(self, node_id: str) -> dict[str, Any]:
        return self._node[node_id]

    def _state_of(self, node_id: str) -> Any:
        return self._node[node_id]["state"]

    def _input_of(self, node_id: str) -> int:
        return input_tokens(self._node[node_id]["usage"])

    # -- reading -------------------------------------------------------
    def __contains__(self, node_id: object) -> bool:
        return self._has(node_id)

    def __len__(self) -> int:
        return self.seq

    def node(self, node_id: str) -> dict[str, Any]:
        return self._attrs(node_id)

    def ancestors(self, node_id: str | None) -> Iterator[str]:
        """``node_id`` and its ancestors, head first (up the parent links)."""
        parent_of = self._parent_of
        while node_id is not None:
            yield node_id
            node_id = parent_of(node_id)

    def path_ids(self, head: str | None = None) -> list[str]:
        ids = list(self.ancestors(self.head if head is None else head))
        ids.reverse()
        return ids

    def path(self, head: str | None = None) -> list[dict[str, Any]]:
        """Node dicts root -> head (copies that share nothing with the tree)."""
        return [jsondata.copy(self._attrs(n)) for n in self.path_ids(head)]

    def children(self, node_id: str | None) -> list[str]:
        return children(self.graph, node_id, self.roots)

    def _chars_of(self, node_id: str) -> int:
        return self._chars[node_id]

    def _cum_of(self, node_id: str) -> int:
        return self._cum[node_id]

    def _last_of(self, node_id: str) -> str | None:
        return self._last_call[node_id]

    def messages(self, head: str | None = None) -> list[dict[str, Any]]:
        """The messages root -> ``head`` as the model reads them (fresh dicts)."""
        head = self.head if head is None else head
        return [message_of(self._attrs(n)) for n in self.path_ids(head)] if head is not None else []

    def _any_state(self) -> bool:
        return bool(self._stated)

    def count(self, head: str | None = None) -> int:
        """PROTOCOL.md 5.1 for the path root -> ``head`` (default: the head), O(1).

        Reported input of the last model reply on the path plus ceil(chars/4)
        of what was written since, that reply included.
        """
        head = self.head if head is None else head
        if head is None:
            return 0
        last = self._last_of(head)
        if last is None:
            return estimate(self._cum_of(head))
        since = self._cum_of(head) - self._cum_of(last) + self._chars_of(last)
        return self._input_of(last) + estimate(since)

    # -- matching a view (PROTOCOL.md 2) ------------------------------
    def match(self, view: list[Mapping[str, Any]]) -> tuple[int, str | None]:
        """Match a view from the root: ``(new_from, last matched id or None)``.

        O(len(view)): an id lookup and one parent check per message.
        Raises ``ViewError`` when the known ids are not a path of the tree, or
        when a message in the rest reuses a recorded id or an id twice.
        """
        has, parent_of = self._has, self._parent_of
        parent: str | None = None
        k = 0
        for k, msg in enumerate(view):
            mid = msg.get("id")
            if mid is None or not has(mid):
                break
            if parent_of(mid) != parent:
                where = "a top-level message" if parent is None else f"a child of {parent!r}"
                raise ViewError(f"messages[{k}]: {mid!r} is not {where}: the view is not a path of the tree")
            parent = mid
        else:
            return len(view), parent
        seen: set[str] = set()
        for j in range(k, len(view)):
            mid = view[j].get("id")
            if mid is None:
                continue
            if has(mid):
                raise ViewError(f"messages[{j}]: id {mid!r} is already recorded; a new message needs a new id or none")
            if mid in seen:
                raise ViewError(f"messages[{j}]: id {mid!r} appears twice in the view")
            seen.add(mid)
        return k, parent

    # -- writing -------------------------------------------------------
    def _check_new(self, nid: str, parent: str | None) -> None:
        if self._has(nid):
            raise ValueError(f"id {nid!r} is already recorded")
        if parent is not None and not self._has(parent):
            raise ValueError(f"parent {parent!r} is not recorded")

    def add(self, node: Mapping[str, Any], parent: str | None) -> dict[str, Any]:
        """Record ``node`` under ``parent`` and return the stored attributes.

        ``node`` carries ``id``, ``role``, ``content`` and any recorded
        attributes; ``seq`` is given here. The head does not move.
        """
        nid = node["id"]
        self._check_new(nid, parent)
        self.seq += 1
        attrs = new_node(node, parent=parent, seq=self.seq)
        self._graph.add_node(nid, **attrs)
        self._node[nid] = stored = self._graph.nodes[nid]
        if parent is None:
            self.roots.append(nid)
        else:
            self._graph.add_edge(parent, nid)
        self._book(nid, parent, content_chars(attrs["content"]), attrs["role"] == "assistant" and input_tokens(attrs["usage"]) is not None)
        if attrs["state"] is not None:
            self._stated.add(nid)
        return stored

    def _book(self, nid: str, parent: str | None, chars: int, is_call: bool) -> None:
        self._chars[nid] = chars
        self._cum[nid] = chars + (self._cum[parent] if parent is not None else 0)
        if is_call:
            self._last_call[nid] = nid
        else:
            self._last_call[nid] = self._last_call[parent] if parent is not None else None

    def set_state(self, node_id: str, state: Any) -> None:
        self._attrs(node_id)["state"] = jsondata.copy(state)
        self._stated.add(node_id)

    def state_at(self, head: str | None = None) -> dict[str, Any]:
        """The worker state nearest the head on the path (PROTOCOL.md 6); ``{}`` if none."""
        if not self._any_state():
            return {}
        for n in self.ancestors(self.head if head is None else head):
            st = self._state_of(n)
            if st is not None:
                return jsondata.copy(st)
        return {}

    # -- whole tree ----------------------------------------------------
    def nodes_in_order(self) -> list[dict[str, Any]]:
        return [dict(a) for a in nodes_in_order(self.graph)]

