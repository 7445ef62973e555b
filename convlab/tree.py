"""The message tree (docs/protocol.md section 1), shown as a networkx DiGraph.

One node per recorded message, keyed by its id, edge parent -> child. The
root is not a message and not a node: top-level messages have ``parent``
``None``. The tree only grows. It keeps its nodes in a store (``convlab.store``:
``NodeStore``, the storage protocol: a node's attributes, parent, children,
worker state and fixed ``Record``); the default ``MemoryStore`` keeps flat maps, and the
``networkx.DiGraph`` that ``Tree.graph`` (and ``Session.tree``) shows is built the
first time it is asked for and kept up to date from then on. ``convlab.lazy``
supplies a store that keeps contents in the session log; every rule is here.

Beside the graph the tree keeps, per node, what the count of docs/protocol.md 5.1
needs so that counting never re-reads the path (its ``Record``): the node's
characters, the characters from the root to it (inclusive), and the nearest node
at or above it whose ``usage`` came from a model reply; for a ``PathView`` (what
a model call reads), the node's depth and its top-level message; the nearest
node with worker state at or above it (``state_at``); and the running exact
count of the paths counted so far (``exact_count``). Matching a view uses the
id index and one parent check per message: it never walks the tree.

This module knows nothing of turns, decisions or the engine.
"""

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NotRequired, TypedDict, overload

import networkx as nx

from . import jsondata
from .store import MemoryStore, NodeStore, Record, as_record
from .tokens import content_chars, content_text, count_tokens, estimate

__all__ = [
    "Tree", "PathView", "MessageView", "Node", "Message", "ROLES", "RECORDED", "MESSAGE_KEYS", "ViewError", "input_tokens", "usage_problem",
    "MAX_USAGE", "new_node", "message_of", "newest_leaf", "nodes_in_order", "children", "ancestors", "path_to", "newest_leaves", "lane_child", "lane_from",
]

ROLES = ("system", "user", "assistant", "tool")


class Message(TypedDict):
    """A message as a client sends it and a model reads it (docs/protocol.md 1)."""

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
#: message; they are ignored, never recorded (docs/protocol.md 1, gap).
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
    get = usage.get  # three lookups, no loop: this runs for every model reply a tree records
    fresh, written, read = get("input_tokens"), get("cache_creation_input_tokens"), get("cache_read_input_tokens")
    if fresh is None and written is None and read is None and not any(k in usage for k in keys):
        return None
    return int(fresh or 0) + int(written or 0) + int(read or 0)


#: More tokens than any model reads or writes in one call (the largest windows hold a few million): a
#: usage reporting more is no provider's.
MAX_USAGE = 100_000_000


def usage_problem(usage: object) -> str | None:
    """Why ``usage`` is no usage a provider could report, naming the field; None when it could be.

    A usage is an object whose token counts (its keys ending in ``_tokens``, and
    Ollama's ``prompt_eval_count`` and ``eval_count``) are each left out, None, or
    an integer from 0 to ``MAX_USAGE``. Other keys (a cost, a service tier, nested
    details) are not counts and are not read. The importers and the session log
    leave a usage with a problem out of its message, saying this.

    >>> usage_problem({"input_tokens": 12, "output_tokens": 3, "service_tier": "standard", "cost": 0.25}) is None
    True
    >>> usage_problem({"input_tokens": 12.5})
    'usage.input_tokens is 12.5, not an integer'
    >>> usage_problem({"input_tokens": 12, "cache_read_input_tokens": -1000000})
    'usage.cache_read_input_tokens is -1000000: a count of tokens is never negative'
    >>> usage_problem({"input_tokens": 10**30})
    'usage.input_tokens is 1e+30: more tokens than any model reads or writes in a call (100,000,000)'
    >>> usage_problem([3, 4])
    'usage is a list, not an object of token counts'
    """
    if not isinstance(usage, Mapping):
        return f"usage is a {type(usage).__name__}, not an object of token counts"
    for key, value in usage.items():  # a count as providers write one (an int in range) needs no closer look
        if (value.__class__ is not int or not 0 <= value <= MAX_USAGE) and isinstance(key, str) and (
                key.endswith("_tokens") or key in ("prompt_eval_count", "eval_count")):
            why = _count_problem(value)
            if why is not None:
                return f"usage.{key} {why}"
    return None


def _count_problem(value: object) -> str | None:
    """Why one token count is none a provider reports (None: it is one, or it is not given)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = repr(value) if isinstance(value, (bool, str)) and len(repr(value)) <= 40 else f"a {type(value).__name__}"
        return f"is {shown}, not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"is {value}, not a number"
    if isinstance(value, float) or abs(value) < 10**15:
        shown = f"{value:.3g}" if isinstance(value, float) else str(value)
    else:  # an integer of any length: its sign and how many digits (str() refuses past 4,300 of them)
        digits = f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
        shown = f"{value:.3g}" if value.bit_length() <= 1000 else f"a negative {digits[3:]}" if value < 0 else digits
    if value < 0:
        return f"is {shown}: a count of tokens is never negative"
    if value > MAX_USAGE:
        return f"is {shown}: more tokens than any model reads or writes in a call ({MAX_USAGE:,})"
    if isinstance(value, float):
        return f"is {value!r}, not an integer"
    return None


def new_node(fields: Mapping[str, Any], **recorded: Any) -> Node:
    """The node that ``fields`` (a message, or a node's attributes) make, with
    ``recorded`` attributes over them and every other recorded attribute at its
    default. Shares the values it is given: they are trusted (checked and copied
    at the edge), never copied again.

    >>> new_node({"role": "user", "content": "hi", "name": "sam", "seq": 9}, id="u1", seq=1)
    {'id': 'u1', 'parent': None, 'role': 'user', 'content': 'hi', 'seq': 1, 'time': None, 'turn_id': None, 'copied_from': None, 'kind': 'message', 'usage': None, 'state': None, 'replaces': None, 'name': 'sam'}
    """
    node = _DEFAULTS.copy()  # the schema's keys in its order: a value set below keeps its key's place
    for values in (fields, recorded):  # the keys given, not the schema's: a message holds a few of its thirteen
        for key in values:
            if key in _DEFAULTS:
                node[key] = values[key]
    if node["kind"] is None:
        node["kind"] = "message"
    for key in MESSAGE_KEYS:  # after the schema, in MESSAGE_KEYS' order, when set
        if fields.get(key) is not None:
            node[key] = fields[key]
    return node  # type: ignore[return-value]  # built key by key from _DEFAULTS (the Node schema): mypy cannot follow


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
    return msg  # type: ignore[return-value]  # a Message built key by key (MESSAGE_KEYS): mypy cannot follow


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


def ancestors(nodes: Mapping[str, Mapping[str, Any]], head: str | None) -> Iterator[str]:
    """``head`` and its ancestors, head first, up the parent links: the one walk to the root every
    view of a path makes, lazily (a reader that stops early walks no further). ``nodes`` is a
    graph's ``nodes`` or any mapping of id -> node; the walk stops at an id it does not hold.

    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": ""}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": ""}, "u1")
    >>> list(ancestors(t.graph.nodes, "a1")), next(ancestors(t.graph.nodes, "a1"))
    (['a1', 'u1'], 'a1')
    """
    n = head
    while n is not None and n in nodes:
        yield n
        n = nodes[n].get("parent")


def path_to(nodes: Mapping[str, Mapping[str, Any]], head: str | None) -> list[str]:
    """The ids from the root to ``head`` (``ancestors``, root first; ``head`` the tree's head: the
    active path).

    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": ""}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": ""}, "u1")
    >>> path_to(t.graph.nodes, "a1"), path_to(t.graph.nodes, None)
    (['u1', 'a1'], [])
    """
    path = list(ancestors(nodes, head))
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
        node = lane_child(kids, newest)  # type: ignore[assignment]  # never None for kids that are not empty
        out.append(node)
        kids = list(graph.successors(node))
    return out


class MessageView(Mapping):
    """One message of a ``PathView``, as a model call or a worker reads it: a
    read-only mapping (``message_of`` the node, made when it was read). What it
    holds is the reader's own copy, so nothing it does reaches the tree and
    nothing the tree does changes it. ``dict(m)``, ``copy.copy`` and
    ``copy.deepcopy`` give a plain dict; so does unpickling.

    >>> m = MessageView({"id": "u1", "role": "user", "content": "hi"})
    >>> m["role"], m.get("name"), dict(m) == m, m
    ('user', None, True, {'id': 'u1', 'role': 'user', 'content': 'hi'})
    >>> m["role"] = "assistant"
    Traceback (most recent call last):
    ...
    TypeError: 'MessageView' object does not support item assignment
    """

    __slots__ = ("_m",)

    def __init__(self, message: Mapping[str, Any]) -> None:
        self._m = message

    def __getitem__(self, key: str) -> Any:
        return self._m[key]

    def get(self, key: str, default: object = None) -> Any:
        return self._m.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._m

    def __iter__(self) -> Iterator[str]:
        return iter(self._m)

    def __len__(self) -> int:
        return len(self._m)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageView):
            return self._m == other._m
        return self._m == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a list is: typeshed's object.__hash__ is not Optional

    def __repr__(self) -> str:
        return repr(self._m)

    def __copy__(self) -> dict[str, Any]:
        return dict(self._m)

    def __deepcopy__(self, memo: dict) -> dict[str, Any]:
        return jsondata.copy(self._m)

    def __reduce__(self) -> tuple:
        return dict, (jsondata.copy(self._m),)


#: How far up from the head ``PathView[i]`` walks before it reads the whole path once.
_WALK = 32


class PathView(Sequence[MessageView]):
    """The path root -> ``head`` as a model call and the built-in worker read it: a
    read-only ``Sequence`` of read-only messages (``MessageView``), each made when
    it is read, so a reader pays only for what it reads.

    A path never changes (the tree only grows), so a view holds for good, and
    whatever reads it sees the same messages. O(1): ``len``, ``bool``, the
    first and the last message, and ``tokens()`` (the tree's running count);
    ``reversed`` walks up only as far as it is read, as does an index near
    the end; anything else reads the path once. ``list(view)`` materialises
    it (what a provider that must serialise the path does, once per call);
    ``copy.deepcopy`` and pickling give a list of plain dicts.

    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
    >>> view = PathView(t, "a1")
    >>> len(view), view[0]["content"], view[-1]["role"], [m["id"] for m in reversed(view)], view.tokens()
    (2, 'hi', 'assistant', ['a1', 'u1'], 2)
    >>> view == [{"id": "u1", "role": "user", "content": "hi"}, {"id": "a1", "role": "assistant", "content": "hello"}]
    True
    """

    __slots__ = ("_head", "_ids", "_tree")

    def __init__(self, tree: "Tree", head: str | None) -> None:
        self._tree, self._head = tree, head
        self._ids: list[str] | None = None

    def _path(self) -> list[str]:
        if self._ids is None:
            self._ids = self._tree.path_ids(self._head) if self._head is not None else []
        return self._ids

    def _at(self, node_id: str) -> MessageView:
        return MessageView(message_of(self._tree.node(node_id)))

    def __bool__(self) -> bool:
        return self._head is not None

    def __len__(self) -> int:
        return 0 if self._head is None else self._tree.depth(self._head)

    @overload
    def __getitem__(self, i: int) -> MessageView: ...
    @overload
    def __getitem__(self, i: slice) -> list[MessageView]: ...
    def __getitem__(self, i: int | slice) -> MessageView | list[MessageView]:
        if isinstance(i, slice):
            return [self._at(n) for n in self._path()[i]]
        n = len(self)
        k = i + n if i < 0 else i
        if not 0 <= k < n or self._head is None:  # (an empty path has no head)
            raise IndexError(f"path index {i} out of range (the path has {n} messages)")
        if k == 0:
            return self._at(self._tree.root_of(self._head))
        up = n - 1 - k
        if self._ids is None and up <= _WALK:
            node = self._head
            for _ in range(up):
                parent = self._tree.parent(node)
                assert parent is not None, "a node above the head, below the root, has a parent"
                node = parent
            return self._at(node)
        return self._at(self._path()[k])

    def __iter__(self) -> Iterator[MessageView]:
        for n in self._path():
            yield self._at(n)

    def __reversed__(self) -> Iterator[MessageView]:
        ids = reversed(self._ids) if self._ids is not None else self._tree.ancestors(self._head)
        for n in ids:
            yield self._at(n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PathView) and other._tree is self._tree and other._head == self._head:
            return True
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a list is: typeshed's object.__hash__ is not Optional

    def __repr__(self) -> str:
        return f"PathView({len(self)} messages, head={self._head!r})"

    def __copy__(self) -> "PathView":
        return self

    def __deepcopy__(self, memo: dict) -> list[Message]:
        return [message_of(self._tree.node(n)) for n in self._path()]

    def __reduce__(self) -> tuple:
        return list, (self.__deepcopy__({}),)

    @property
    def head(self) -> str | None:
        """The id of the path's last message (None: the empty path)."""
        return self._head

    def tokens(self, count: Callable[[Mapping[str, Any]], int] | None = None) -> int:
        """The exact tokens of the path: ``count(message)`` summed over its messages
        (default: the o200k_base count of each message's text, as ``count_tokens``
        counts a list), kept running by the tree (``Tree.exact_count``): each
        message is counted once, however many calls read it."""
        return self._tree.exact_count(self._head, count)


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

    Its nodes live in a ``store`` (a ``NodeStore``; default: a ``MemoryStore``);
    ``convlab.lazy.LazyTree`` is a ``Tree`` over a store that keeps contents in the
    session log. Every rule is here, written once, whatever the store.
    """

    def __init__(self, store: NodeStore | None = None) -> None:
        self.roots: list[str] = []
        self.head: str | None = None
        self.seq = 0
        self._store: NodeStore = MemoryStore() if store is None else store
        self._stated = False  # any worker state set: state_at is O(1) without any
        # the running exact count (exact_count): per node counted, the tokens root -> it, and by what
        self._exact: dict[str, int] = {}
        self._exact_by: Any = None
        #: The labels people put on messages (id -> text, in the order they were set): marks on the tree,
        #: not content, so a label never changes what a model reads. ``set_label`` changes them.
        self.labels: dict[str, str] = {}

    @property
    def graph(self) -> nx.DiGraph:
        """The tree as a ``networkx.DiGraph``: one node per message, edge parent -> child.

        Built on first use, then kept up to date; its node dicts are the tree's
        own (what ``node`` returns), so a change of state shows in both."""
        return self._store.graph()

    # -- reading -------------------------------------------------------
    def __contains__(self, node_id: object) -> bool:
        return node_id in self._store

    def __len__(self) -> int:
        return self.seq

    def node(self, node_id: str) -> dict[str, Any]:
        return self._store.attrs(node_id)

    def parent(self, node_id: str) -> str | None:
        """The parent of a recorded message (None: a top-level one)."""
        return self._store.parent(node_id)

    def depth(self, node_id: str) -> int:
        """How many messages the path root -> ``node_id`` holds (1: a top-level one), O(1)."""
        return self._store.record(node_id).depth

    def root_of(self, node_id: str) -> str:
        """The top-level message the path to ``node_id`` starts with, O(1)."""
        return self._store.record(node_id).top

    def ancestors(self, node_id: str | None) -> Iterator[str]:
        """``node_id`` and its ancestors, head first (up the parent links)."""
        parent_of = self._store.parent
        while node_id is not None:
            yield node_id
            node_id = parent_of(node_id)

    def up_to(self, node_id: str | None, stop: Callable[[str], bool]) -> tuple[list[str], str | None]:
        """The walk up from ``node_id`` (``ancestors``) to the first node ``stop`` accepts: the nodes passed
        (``node_id`` first) and that node (None: the walk passed the root). What a view that draws a path
        already walks to bring it up to a new head: only as far as what it drew.

        >>> t = Tree()
        >>> for nid, parent in [("u1", None), ("a1", "u1"), ("u2", "a1")]:
        ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
        >>> t.up_to("u2", lambda n: n == "u1"), t.up_to("u2", lambda n: False)
        ((['u2', 'a1'], 'u1'), (['u2', 'a1', 'u1'], None))
        """
        passed: list[str] = []
        for n in self.ancestors(node_id):
            if stop(n):
                return passed, n
            passed.append(n)
        return passed, None

    def fork(self, a: str, b: str) -> tuple[str | None, list[str], list[str]]:
        """Where the paths to ``a`` and ``b`` part: their last shared message (None: only the root), and each
        path's ids below it (what comparing two branches and merging one back read). ``t.fork("a1", "u2")``
        on u1 -> a1, u1 -> a2 -> u2 is ``('u1', ['a1'], ['a2', 'u2'])``."""
        pa, pb = self.path_ids(a), self.path_ids(b)
        shared = next((k for k, (x, y) in enumerate(zip(pa, pb, strict=False)) if x != y), min(len(pa), len(pb)))
        return (pa[shared - 1] if shared else None), pa[shared:], pb[shared:]

    def path_ids(self, head: str | None = None) -> list[str]:
        ids = list(self.ancestors(self.head if head is None else head))
        ids.reverse()
        return ids

    def path(self, head: str | None = None) -> list[dict[str, Any]]:
        """Node dicts root -> head (copies that share nothing with the tree)."""
        attrs = self._store.attrs
        return [jsondata.copy(attrs(n)) for n in self.path_ids(head)]

    def children(self, node_id: str | None) -> list[str]:
        """Children of a node (None: the top-level messages), oldest first."""
        return list(self.roots) if node_id is None else self._store.children(node_id)

    def messages(self, head: str | None = None) -> list[Message]:
        """The messages root -> ``head`` as the model reads them (fresh dicts)."""
        head = self.head if head is None else head
        attrs = self._store.attrs
        return [message_of(attrs(n)) for n in self.path_ids(head)] if head is not None else []

    def exact_count(self, head: str | None = None, count: Callable[[Mapping[str, Any]], int] | None = None) -> int:
        """The exact tokens of the messages root -> ``head`` (default: the head):
        ``count(message)`` summed over them (``count`` gets each as a read-only
        ``MessageView``; default: the o200k_base count of the message's text, as
        ``count_tokens`` counts a list of messages).

        Kept running: the total root -> each node is remembered, so a call reads
        only the messages not counted yet (those since the last count, on a
        path that goes on), never the whole path again. A different ``count``
        starts the totals afresh (the tree keeps one counter's).

        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hello world"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hi"}, "u1")
        >>> t.exact_count("a1"), t.exact_count("u1"), t.exact_count("a1", count=lambda m: len(m["content"]))
        (3, 2, 13)
        """
        head = self.head if head is None else head
        if head is None:
            return 0
        if count != self._exact_by:
            self._exact, self._exact_by = {}, count
        done = self._exact
        todo: list[str] = []
        node: str | None = head
        parent_of = self._store.parent
        while node is not None and node not in done:
            todo.append(node)
            node = parent_of(node)
        total = 0 if node is None else done[node]
        attrs = self._store.attrs
        for n in reversed(todo):
            if count is None:
                content = attrs(n)["content"]
                text = content if content.__class__ is str else content_text(content)
                total += count_tokens(text) if text else 0
            else:
                total += count(MessageView(message_of(attrs(n))))
            done[n] = total
        return total

    def count(self, head: str | None = None) -> int:
        """docs/protocol.md 5.1 for the path root -> ``head`` (default: the head), O(1).

        Reported input of the last model reply on the path plus ceil(chars/4)
        of what was written since, that reply included.
        """
        head = self.head if head is None else head
        if head is None:
            return 0
        rec = self._store.record(head)
        if rec.last_call is None:
            return estimate(rec.cum)
        last = rec if rec.last_call == head else self._store.record(rec.last_call)
        return last.reported + estimate(rec.cum - last.cum + last.chars)  # type: ignore[operator]  # a last_call has reported input

    # -- matching a view (docs/protocol.md 2) ------------------------------
    def match(self, view: list[Mapping[str, Any]]) -> tuple[int, str | None]:
        """Match a view from the root: ``(new_from, last matched id or None)``.

        O(len(view)): an id lookup and one parent check per message.
        Raises ``ViewError`` when the known ids are not a path of the tree, or
        when a message in the rest reuses a recorded id or an id twice.
        """
        store = self._store
        parent_of = store.parent
        parent: str | None = None
        k = 0
        for k, msg in enumerate(view):
            mid = msg.get("id")
            if mid is None or mid not in store:
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
            if mid in store:
                raise ViewError(f"messages[{j}]: id {mid!r} is already recorded; a new message needs a new id or none")
            if mid in seen:
                raise ViewError(f"messages[{j}]: id {mid!r} appears twice in the view")
            seen.add(mid)
        return k, parent

    # -- writing -------------------------------------------------------
    def add(self, node: Mapping[str, Any], parent: str | None) -> dict[str, Any]:
        """Record ``node`` under ``parent`` and return the stored attributes.

        ``node`` carries ``id``, ``role``, ``content`` and any recorded
        attributes; ``seq`` is given here. The head does not move.
        """
        nid = node["id"]
        store = self._store
        if nid in store:
            raise ValueError(f"id {nid!r} is already recorded")
        if parent is not None and parent not in store:
            raise ValueError(f"parent {parent!r} is not recorded")
        self.seq += 1
        attrs: dict[str, Any] = new_node(node)  # type: ignore[assignment]  # a Node is a dict
        attrs["parent"], attrs["seq"] = parent, self.seq  # the tree's own, over any the message gives
        stored = store.put(attrs, self._record(nid, parent, attrs))

        if parent is None:
            self.roots.append(nid)
        if attrs["state"] is not None:
            self._stated = True
            store.set_near(nid, nid)
        elif parent is not None and self._stated:  # no state in the tree yet: the store's None is every node's nearest
            store.set_near(nid, store.near(parent))
        return stored

    def _record(self, nid: str, parent: str | None, attrs: Mapping[str, Any]) -> Record:
        """The new node's ``Record``, from its parent's."""
        content = attrs["content"]
        chars = len(content) if content.__class__ is str else content_chars(content)
        reported = input_tokens(attrs["usage"]) if attrs["role"] == "assistant" else None
        call = nid if reported is not None else None
        if parent is None:
            return as_record((1, nid, chars, chars, call, reported))
        depth, top, _, cum, last_call, _ = self._store.record(parent)
        return as_record((depth + 1, top, chars, chars + cum, last_call if call is None else call, reported))

    def set_state(self, node_id: str, state: Mapping[str, Any]) -> None:
        self._store.set_state(node_id, jsondata.copy(state))
        self._stated = True
        self._renear(node_id)

    def _renear(self, node_id: str) -> None:
        """The nearest node with state, at or above ``node_id`` and each node under it,
        after ``node_id``'s state changed. O(1) for a leaf (the head, as a rule); else
        the nodes under it down to the next ones with state of their own."""
        store = self._store
        todo = [node_id]
        while todo:
            n = todo.pop()
            if n != node_id and store.state(n) is not None:
                continue  # its own state is nearest for all under it
            parent = store.parent(n)
            store.set_near(n, n if store.state(n) is not None else None if parent is None else store.near(parent))
            todo.extend(store.children(n))

    def state_at(self, head: str | None = None) -> dict[str, Any]:
        """The worker state nearest the head on the path (docs/protocol.md 6); ``{}`` if
        none. O(1): each node knows the nearest node with state at or above it."""
        if not self._stated:
            return {}
        head = self.head if head is None else head
        near = None if head is None else self._store.near(head)
        return {} if near is None else jsondata.copy(self._store.state(near))

    def set_label(self, node_id: str, text: str | None) -> None:
        """Put ``text`` on a recorded message as its label (one a message: a new one replaces it), or take it off
        (``None``): what a session logs as ``label.set`` and ``label.removed``."""
        if node_id not in self:
            raise KeyError(node_id)
        self.labels.pop(node_id, None)
        if text is not None:
            self.labels[node_id] = text

    # -- whole tree ----------------------------------------------------
    def nodes_in_order(self) -> list[dict[str, Any]]:
        """Every node's attributes (copies of the top level) in creation (``seq``) order."""
        return self._store.nodes_in_order()
