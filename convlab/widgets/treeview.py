"""The tree view: Python lays the tree out, a small ES module draws it.

The layout is a git graph: one row per visible message (preorder), a lane
per branch. At each node one child continues the parent's lane and comes
last (the lane rule, ``convlab.tree.lane_child``): on the active path the
child that continues it, elsewhere the child whose subtree holds the newest
leaf (where looking at the node lands). The
other children fork one lane to the right just above their rows. So the
active path is one straight line in lane 0, side branches never cross, and
a branch keeps its row order when the head leaves it (after a summary the
new root goes below; the old rows stay where they were).

Trees of thousands of messages stay small on the wire: the active path is
always shown, the branches off it only down to ``max_depth`` levels and
``budget`` messages in all (nearest the path first); the rest sits behind a
toggle marker (``+N``) that the person can expand. The layout is O(n) in
the tree and the payload is O(visible rows).

The browser gets the layout once (the ``snapshot`` trait) and then only what
changed, as versioned patches (custom messages): the rows that are new or
different, the rows no longer shown, the header. When the session only grows
at its head (a reply, a scripted loop) the patch is built without laying the
tree out again: the new messages are the last rows, in lane 0. Anything else
(a branch switch, a summary, a toggle) lays the tree out again and sends the
difference. A view that missed a patch asks for the snapshot again.
"""

from __future__ import annotations

import pathlib
from collections import ChainMap, deque
from collections.abc import Callable, Container, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import anywidget
import traitlets

from ..errors import ExploreError
from ..text import brief
from ..tree import lane_child, newest_leaves, path_to
from . import intents
from .chat import merged_leaf
from .live import INTERVAL, Live, hold, kinds
from .source import Given, Source, source_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TreeView", "layout", "PREVIEW_CHARS", "Marks"]

#: Characters of a message sent to the browser for its row label and hover preview.
PREVIEW_CHARS = 280

_STATIC = pathlib.Path(__file__).parent / "static"


def _preview(content: str | list[Any] | None) -> str:
    text = brief(content)  # thinking, tool calls and results as short labels, not JSON
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _row(a: Mapping[str, Any], row: int, lane: int, path: bool, head: bool,
         turn_status: Mapping[str, str], marks: Marks | None = None) -> dict[str, Any]:
    """One drawn row: what the browser needs of a message (its label and whether a search found it: ``marks``;
    ``merged``: the leaf of the branch it merged back, drawn beside it)."""
    tid = a.get("turn_id")
    marks = marks or _NO_MARKS
    return {
        "id": a["id"],
        "parent": a.get("parent"),
        "row": row,
        "lane": lane,
        "role": a.get("role"),
        "kind": a.get("kind") or "message",
        "path": path,
        "head": head,
        "copy": a.get("copied_from") is not None,
        "replaces": a.get("replaces") is not None,
        "status": turn_status.get(tid, "") if tid else "",
        "turn": tid,
        "text": _preview(a.get("content")),
        "label": marks.labels.get(a["id"]),
        "match": a["id"] in marks.matches,
        "merged": merged_leaf(a),
    }


class Marks(NamedTuple):
    """What a row shows beside the message: the labels (``Tree.labels``) and the search's matches."""

    labels: Mapping[str, str]
    matches: Container[str]


_NO_MARKS = Marks({}, frozenset())
#: The header of a tree view with no search and nothing picked.
_NO_SEARCH: dict[str, Any] = {"query": "", "matches": 0, "match_at": None, "focus": None, "marked": None,
                              "picking": False}


def _links(a: Mapping[str, Any], shown: Container[str]) -> list[dict[str, Any]]:
    """The dashed links from a drawn message to the shown message it copies or replaced, or the leaf of the
    branch it merged back."""
    links = [{"from": a["id"], "to": a[key], "type": key}
             for key in ("copied_from", "replaces") if a.get(key) is not None and a[key] in shown]
    leaf = merged_leaf(a)
    if leaf is not None and leaf in shown:
        links.append({"from": a["id"], "to": leaf, "type": "merged_from"})
    return links


def layout(
    nodes: Iterable[Mapping[str, Any]],
    head: str | None,
    *,
    turn_status: Mapping[str, str] | None = None,
    expanded: Iterable[str | None] = (),
    collapsed: Iterable[str | None] = (),
    max_depth: int = 6,
    budget: int = 400,
    selected: str | None = None,
    status: str = "",
    readonly: bool = False,
    marks: Marks | None = None,
    explore: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Lay out a message tree for the tree view: the JSON the browser draws.

    ``nodes`` are node dicts (``id, parent, role, seq, kind, copied_from,
    replaces, turn_id, content``), parents before children. ``expanded`` and
    ``collapsed`` hold ids whose off-path children are forced shown or hidden
    (``None`` is the root). A dashed link (``copied_from``, ``replaces``) is
    sent only when both of its ends are shown. ``readonly`` marks an imported
    conversation (the browser offers no "Continue from here"). ``marks``: the labels and a search's
    matches, drawn on their rows; ``explore``: the search and the comparison the header shows (``query``,
    ``matches``, ``match_at``, ``focus``: the match scrolled to, ``marked``: the first side picked).

    >>> nodes = [{"id": "u1", "parent": None, "role": "user", "seq": 1, "content": "hi"},
    ...          {"id": "a1", "parent": "u1", "role": "assistant", "seq": 2, "content": "yo"},
    ...          {"id": "a2", "parent": "u1", "role": "assistant", "seq": 3, "content": "hey"}]
    >>> d = layout(nodes, "a1")
    >>> [(n["id"], n["row"], n["lane"], n["path"]) for n in d["nodes"]]
    [('u1', 1, 0, True), ('a2', 2, 1, False), ('a1', 3, 0, True)]
    """
    turn_status = turn_status or {}
    expanded = set(expanded)
    collapsed = set(collapsed)
    attrs: dict[str, Mapping[str, Any]] = {}
    kids: dict[str | None, list[str]] = {None: []}
    for n in sorted(nodes, key=lambda n: n["seq"]):
        nid = n["id"]
        attrs[nid] = n
        kids[nid] = []
        kids.setdefault(n.get("parent"), []).append(nid)
    path = path_to(attrs, head)  # the active path
    visible, hidden = _visible(attrs, kids, path, expanded, collapsed, max_depth, budget)
    out_nodes, markers, row, max_lane = _rows(attrs, kids, path, visible, hidden, expanded, head, turn_status, marks)
    links = [link for n in out_nodes for link in _links(attrs[n["id"]], visible)]

    return {
        "rows": row,
        "lanes": max_lane + 1,
        "total": len(attrs),
        "head": head,
        "selected": selected,
        "status": status,
        "readonly": readonly,
        **_NO_SEARCH, **(explore or {}),
        "nodes": out_nodes,
        "markers": markers,
        "links": links,
    }


#: Events that change what the tree shows.
_EVENTS = ("message.new", "head.moved", "turn.", "context.replaced", "label.")
#: Turn statuses a row shows (a completed or queued turn shows none).
_SHOWN_STATUS = {"turn.started": "running", "turn.cancelled": "cancelled", "turn.failed": "failed",
                 "turn.completed": None}
_EMPTY = object()  # the tail of an empty tree


def _visible(attrs: Mapping[str, Mapping[str, Any]], kids: Mapping[str | None, list[str]], path: list[str],
             expanded: set[str | None], collapsed: set[str | None], max_depth: int,
             budget: int) -> tuple[set[str], dict[str | None, int]]:
    """Which nodes are shown: the path, then off-path nodes nearest it first (``max_depth``
    levels, ``budget`` in all); and per node, how many messages its toggle marker hides."""
    size = {nid: 1 for nid in attrs}  # subtree sizes (children come after parents in seq order)
    for child_id in reversed(list(attrs)):
        parent = attrs[child_id].get("parent")
        if parent is not None:
            size[parent] += size[child_id]
    on_path = set(path)
    visible: set[str] = set(path)
    depth: dict[str | None, int] = {None: 0}
    depth.update((nid, 0) for nid in path)
    hidden: dict[str | None, int] = {}
    left = budget
    queue: deque[str | None] = deque([None, *path])
    while queue:
        nid = queue.popleft()
        d = depth[nid]
        for child in kids.get(nid, ()):
            if child in on_path:
                continue
            if nid in collapsed:
                show = False
            elif nid in expanded:
                show, cd = True, 1
            elif d + 1 <= max_depth and left > 0:
                show, cd = True, d + 1
                left -= 1
            else:
                show = False
            if show:
                visible.add(child)
                depth[child] = cd
                queue.append(child)
            else:
                hidden[nid] = hidden.get(nid, 0) + size[child]
    return visible, hidden


def _rows(attrs: Mapping[str, Mapping[str, Any]], kids: Mapping[str | None, list[str]], path: list[str], visible: set[str],
          hidden: Mapping[str | None, int], expanded: set[str | None], head: str | None,
          turn_status: Mapping[str, str], marks: Marks | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """Rows and lanes: preorder, the child that continues the lane (``lane_child``) last in its
    parent's lane, the others forking one lane right just above it; the toggle markers."""
    on_path = set(path)
    next_on_path = dict(zip([None, *path], path, strict=False))
    newest = newest_leaves(attrs.values())
    out_nodes: list[dict[str, Any]] = []
    markers: list[dict[str, Any]] = []
    row = 1  # row 0 is the root
    max_lane = 0
    stack: list[tuple[str, str | None, int]] = []  # ("node", id, lane) | ("marker", parent, lane)

    def push_children(nid: str | None, lane: int) -> None:
        shown = [c for c in kids.get(nid, ()) if c in visible]
        main = lane_child(shown, newest, next_on_path.get(nid) if nid is None or nid in on_path else None)
        if main is not None:
            stack.append(("node", main, lane))
        if nid in hidden or (nid in expanded and any(c != main for c in shown)):
            stack.append(("marker", nid, lane + 1))
        for c in reversed(shown):
            if c != main:
                stack.append(("node", c, lane + 1))

    push_children(None, 0)
    while stack:
        what, nid, lane = stack.pop()
        max_lane = max(max_lane, lane)
        if what == "marker":
            markers.append({"id": nid, "row": row, "lane": lane, "hidden": hidden.get(nid, 0),
                            "expanded": nid in expanded and nid not in hidden})
        else:
            out_nodes.append(_row(attrs[nid], row, lane, nid in on_path, nid == head, turn_status, marks))  # type: ignore[index]  # a "node" entry's id is never None (only a root marker's parent is)
            push_children(nid, lane)
        row += 1
    return out_nodes, markers, row, max_lane


class TreeView(Live, anywidget.AnyWidget):
    """The whole message tree as an SVG git graph, live.

    Click a message to look at its branch (the head moves to the newest
    reply under it, see ``convlab.widgets.intents.look``); "Continue from
    here" moves the head exactly to the selected message; ``+N`` markers
    expand collapsed branches. The selection follows the head when
    something else moves it. Given an imported ``convlab.Conversation``
    it is read-only: a click moves the conversation's head (in memory) to
    the newest leaf under the message.

    >>> import convlab
    >>> s = convlab.Session()
    >>> TreeView(s)
    TreeView(agent='bot', messages=0, shown=0, head=None)
    """

    EVENTS = kinds(_EVENTS)

    _esm = _STATIC / "treeview.js"
    _css = _STATIC / "treeview.css"
    #: The layout when the widget was made (or last re-sent whole), with its ``version``; patches follow it.
    snapshot = traitlets.Dict().tag(sync=True)

    def __init__(self, session: Given, *, max_depth: int = 6, budget: int = 400, interval: float = INTERVAL,
                 **kwargs: Any) -> None:
        source = source_of(session, "TreeView")  # a wrong argument raises before anything is built
        self._unsubscribe: Any = None
        super().__init__(**kwargs)
        try:
            self._bind(source)
            self.max_depth = max_depth
            self.budget = budget
            self.expanded: set[str | None] = set()
            self.collapsed: set[str | None] = set()
            self.selected: str | None = None
            self.status = ""
            self.last: dict[str, Any] | None = None  # the outcome of the last intent
            self._acting = False  # inside this view's own intent: the selection stays
            self._anchor = source.head  # the head the selection was made against
            self._status: dict[str, str] = {} if self.readonly else {
                t["id"]: t["status"] for t in self.live.turns if t.get("status") in ("cancelled", "failed", "running")}
            self._added: list[str] = []  # messages recorded since the last draw
            self._turns: set[str] = set()  # turns whose status changed since the last draw
            # turn id -> its shown rows: tuples of ids, which Python's collector stops tracking (a list
            # a turn is one more container for every full collection of a long run to walk)
            self._turn_rows: dict[str, tuple[str, ...]] = {}
            self._relayout = True
            self._version = 0
            self._rows: dict[str, dict[str, Any]] = {}  # what the browser shows: id -> row
            self._meta: dict[str, Any] = {}
            self._markers: list[dict[str, Any]] = []
            self._links: list[dict[str, Any]] = []
            self._tail: Any = None  # the last row when it is the head and a leaf: new replies append below it
            self._live = False  # patches follow the snapshot
            #: The search (``search``): its text, the ids it found in order, which one is focused.
            self.query = ""
            self.matches: list[str] = []
            self.match_at: int | None = None
            #: The message picked as the first side of a comparison (``mark``), the last comparison made; ``picking``:
            #: a click on a message picks it (``pick``) instead of looking at its branch, so picking changes nothing.
            self.marked: str | None = None
            self.picking = False
            self.compared: pd.DataFrame | None = None
            self._on_compare: list[Callable[[pd.DataFrame], None]] = []
            self._on_summarize: list[Callable[[str], None]] = []
        except BaseException:
            self.close()
            raise
        self._start(source, interval, first=self._first)

    def _first(self) -> None:
        self.on_msg(self.home.wrap(self._on_msg, self))
        self._sync()
        self.snapshot = self.data
        self._live = True

    # -- what the browser holds ------------------------------------------------
    @property
    def data(self) -> dict[str, Any]:
        """The layout as drawn (the snapshot with every patch applied): ``layout``'s dict and its ``version``."""
        return {**self._meta, "nodes": sorted(self._rows.values(), key=lambda n: n["row"]),
                "markers": self._markers, "links": self._links, "version": self._version}

    # -- following the session ---------------------------------------------------
    def _on_event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type", "")
        if kind == "message.new":
            self._added.append(event["message"]["id"])
        elif kind in _SHOWN_STATUS:
            tid = event.get("turn_id")
            if tid is None:  # (a turn's event always names it)
                return
            status = _SHOWN_STATUS[kind]
            if status is None:
                self._status.pop(tid, None)
            else:
                self._status[tid] = status
            self._turns.add(tid)
        elif kind.startswith("label."):
            self._relayout = True  # a row's label changed
        elif not kind.startswith(_EVENTS):
            return
        self.redraw.touch(kind)

    def refresh(self) -> None:
        """Lay the tree out again from the session and send what changed."""
        self._relayout = True
        self.redraw.now()

    def _show_error(self, text: str) -> None:
        self._relayout = True
        self.status = text
        self._patch({}, [], {**self._meta, "status": text}, None, None)

    def _sync(self) -> None:
        src = self.source
        head = src.head
        if head != self._anchor:
            if self.selected is not None and not self._acting:  # moved by something else: follow it
                self.selected, self.status = head, ""
            self._anchor = head
        added, self._added = self._added, []
        turns, self._turns = self._turns, set()
        chain = None if self._relayout else self._appended(head, added)
        if chain is None:
            self._relayout = False
            self._layout_again(head)
        else:
            self._append(head, chain, turns)
        if not len(src.message_tree):
            self._tail = _EMPTY
        else:
            self._tail = head if head is not None and not src.children(head) else None

    def _appended(self, head: str | None, added: list[str]) -> list[str] | None:
        """The messages added since the last draw, root first, when they are one chain from the
        last row (the head, a leaf) to the head now; None when the tree must be laid out again."""
        if not added and head == self._meta.get("head"):
            return []
        if not added or self._tail is None:
            return None
        new = set(added)
        tree = self.source.message_tree
        chain, cur = tree.up_to(head, lambda n: n not in new)
        below = None if self._tail is _EMPTY else self._tail
        if len(chain) != len(new) or cur != below:
            return None
        chain.reverse()
        return chain

    def _append(self, head: str | None, chain: list[str], turns: set[str]) -> None:
        tree = self.source.message_tree
        meta = {**self._meta, "head": head, "selected": self.selected, "status": self.status,
                "rows": self._meta["rows"] + len(chain), "total": self._meta["total"] + len(chain)}
        sets: dict[str, dict[str, Any]] = {}
        old = self._meta.get("head")
        if chain and old in self._rows:
            sets[old] = {**self._rows[old], "head": False}
        links = list(self._links)
        shown = ChainMap(sets, self._rows)  # (live: sees the rows this loop sets)
        first, marks = self._meta["rows"], self._marks()
        for k, nid in enumerate(chain):
            a = tree.node(nid)
            sets[nid] = _row(a, first + k, 0, True, nid == head, self._status, marks)
            if a.get("turn_id"):
                self._turn_rows[a["turn_id"]] = (*self._turn_rows.get(a["turn_id"], ()), nid)
            if a.get("copied_from") is not None or a.get("replaces") is not None or a.get("metadata"):
                links += _links(a, shown)
        for tid in turns:
            status = self._status.get(tid, "")
            for nid in self._turn_rows.get(tid, ()):
                row = sets.get(nid) or self._rows.get(nid)
                if row is not None and row["status"] != status:
                    sets[nid] = {**row, "status": status}
        self._patch(sets, [], meta, None, links if len(links) != len(self._links) else None)

    def _layout_again(self, head: str | None) -> None:
        src = self.source
        d = layout(
            src.message_tree.nodes_in_order(), head, turn_status=self._status,
            expanded=self.expanded, collapsed=self.collapsed, max_depth=self.max_depth, budget=self.budget,
            selected=self.selected, status=self.status, readonly=self.readonly, marks=self._marks(),
            explore=self._explore_meta(),
        )
        rows = {n["id"]: n for n in d.pop("nodes")}
        sets = {nid: n for nid, n in rows.items() if self._rows.get(nid) != n}
        drop = [nid for nid in self._rows if nid not in rows]
        markers, links = d.pop("markers"), d.pop("links")
        self._turn_rows = {}
        for n in rows.values():
            if n["turn"]:
                self._turn_rows[n["turn"]] = (*self._turn_rows.get(n["turn"], ()), n["id"])
        self._patch(sets, drop, d, markers if markers != self._markers else None,
                   links if links != self._links else None)

    def _patch(self, sets: dict[str, dict[str, Any]], drop: list[str], meta: dict[str, Any],
              markers: list | None, links: list | None) -> None:
        """Apply a change to what the browser holds and send it as one patch (nothing when nothing changed)."""
        if not sets and not drop and meta == self._meta and markers is None and links is None:
            return
        self._rows.update(sets)
        for nid in drop:
            del self._rows[nid]
        self._meta = meta
        patch: dict[str, Any] = {"type": "patch", "base": self._version, "version": self._version + 1,
                                 "set": list(sets.values()), "drop": drop, "meta": meta}
        if markers is not None:
            self._markers = patch["markers"] = markers
        if links is not None:
            self._links = patch["links"] = links
        self._version += 1
        if self._live:
            self.send(patch)

    # -- intents from the browser ------------------------------------------
    def _on_msg(self, _widget: object, content: object, _buffers: object) -> None:
        if not isinstance(content, dict):
            return
        kind, nid = content.get("type"), content.get("id")
        if kind == "checkout" and isinstance(nid, str):
            self.checkout(nid)
        elif kind == "continue" and isinstance(nid, str):
            self.continue_from(nid)
        elif kind == "toggle" and (nid is None or isinstance(nid, str)):
            self.toggle(nid)
        elif kind in ("search", "step", "mark", "pick", "picking", "compare", "summarize"):
            self._explore_intent(kind, content)
        elif kind == "sync":
            self.flush()
            if content.get("version") != self._version:
                self.send({"type": "snapshot", "data": self.data})

    def _act(self, intent: Callable[[Source, str], dict[str, Any]], node_id: str) -> dict[str, Any]:
        self.selected = node_id
        self._acting = True
        try:
            with hold(self.source):
                outcome = intent(self.source, node_id)
                self.last = outcome
                self.status = outcome.get("message", "")
                self._anchor = self.source.head
                self.redraw.touch()
        finally:
            self._acting = False
        return outcome

    def checkout(self, node_id: str) -> dict[str, Any]:
        """Select ``node_id`` and look at its branch (never makes the model reply)."""
        return self._act(intents.look, node_id)

    def continue_from(self, node_id: str) -> dict[str, Any]:
        """Move the head exactly to ``node_id`` (the turn runs as the worker decides)."""
        return self._act(intents.continue_from, node_id)

    def toggle(self, node_id: str | None) -> None:
        """Expand the hidden branches under ``node_id`` (``None``: the root), or collapse them again."""
        self.flush()
        hidden = any(m["id"] == node_id and not m["expanded"] for m in self._markers)
        if node_id in self.collapsed:
            self.collapsed.discard(node_id)
        elif hidden:
            self.expanded.add(node_id)
        elif node_id in self.expanded:
            self.expanded.discard(node_id)
            self.collapsed.add(node_id)
        else:
            self.collapsed.add(node_id)
        self.refresh()


    # -- find and compare (convlab.find, convlab.compare) ------------------------
    def _marks(self) -> Marks:
        return Marks(self.source.message_tree.labels, frozenset(self.matches))

    def _explore_meta(self) -> dict[str, Any]:
        focus = self.matches[self.match_at] if self.match_at is not None else None
        return {"query": self.query, "matches": len(self.matches), "match_at": self.match_at, "focus": focus,
                "marked": self.marked, "picking": self.picking}

    def _explorable(self) -> Any:  # Any: the Session or the Conversation shown, what convlab.find takes
        return self.conversation if self.readonly else self.live

    def search(self, text: str | None = None, *, role: str | None = None, tool: str | None = None,
               regex: bool = False) -> pd.DataFrame:
        """Find messages (``convlab.find``) and mark them in the tree; the first is focused (its branch
        shown, scrolled to); ``step`` moves through them. Nothing to find (no text, role or tool) clears
        the search. Returns ``find``'s frame; a bad pattern is a ``convlab.ExploreError``."""
        from ..explore.matches import find

        self.flush()
        if not text and role is None and tool is None:
            df = find(self._explorable(), role=[])
            self.query, self.matches, self.match_at = "", [], None
        else:
            df = find(self._explorable(), text or None, role=role, tool=tool, regex=regex)
            self.query, self.matches = text or "", df["id"].tolist()
            self.match_at = 0 if self.matches else None
            n = len(self.matches)
            self.status = f"{n} match{'' if n == 1 else 'es'}" + (f" for {text!r}" if text else "")
            self._reveal()
        self.refresh()
        return df

    def step(self, by: int = 1) -> str | None:
        """Focus the next match (``by=-1``: the one before), round the end; its id (None: no matches)."""
        self.flush()
        if not self.matches or self.match_at is None:
            return None
        self.match_at = (self.match_at + by) % len(self.matches)
        self.status = f"match {self.match_at + 1} of {len(self.matches)}"
        if self._reveal():
            self.refresh()
        else:  # the match is drawn already: only the header changes (which match is focused), no layout again
            self._header()
        return self.matches[self.match_at]

    def _header(self) -> None:
        """Send what the header says (the selection, the status, the search, what is picked) and no rows: what
        changes when the rows drawn stay as they are."""
        self._patch({}, [], {**self._meta, "selected": self.selected, "status": self.status, **self._explore_meta()},
                    None, None)

    def _reveal(self) -> bool:
        """Show the focused match: every branch on the way to it expanded, unless its row is drawn already.
        Whether the tree must be laid out again (a branch was opened)."""
        if self.match_at is None:
            return False
        focus = self.matches[self.match_at]
        if focus in self._rows:
            return False
        for n in [None, *self.source.message_tree.path_ids(focus)[:-1]]:
            self.collapsed.discard(n)
            self.expanded.add(n)
        return True

    def mark(self, node_id: str | None) -> None:
        """Pick ``node_id`` as the first side of a comparison (None: unpick, and stop picking); a click on another
        message then picks the second (``pick``) and compares them. Nothing of the session changes."""
        self.flush()
        self.marked = node_id if node_id is None or node_id in self.source.message_tree else None
        self.picking = self.marked is not None
        self.status = "" if self.marked is None else f"picked {self.marked}: click another message to compare (nothing moves)"
        self._header()

    def start_picking(self, on: bool = True) -> None:
        """"Pick to compare" with nothing selected: the next two messages clicked are the two sides (``pick``), and
        clicking them never looks at their branches, so the session does not change (``on=False``: stop)."""
        self.flush()
        self.picking, self.marked = bool(on), None
        self.status = "click the first message to compare (nothing moves)" if on else ""
        self._header()

    def pick(self, node_id: str) -> pd.DataFrame | None:
        """A message clicked while picking: the first side (``mark``), or the second, which compares them
        (``compare``) and stops picking; the comparison, or None when only the first side is picked."""
        if node_id not in self.source.message_tree:
            raise ExploreError(f"pick: {node_id[:80]!r} is no message of this tree")
        if self.marked is None:
            self.mark(node_id)
            return None
        if node_id == self.marked:
            self.flush()
            self.status = f"picked {node_id}: click another message to compare (nothing moves)"
            self._header()
            return None
        return self.compare(self.marked, node_id)

    def compare(self, a: str, b: str) -> pd.DataFrame:
        """The two branches ending at ``a`` and ``b`` side by side (``convlab.compare``), told to every
        function given to ``on_compare`` (the Lab's compare panel); a bad id is a ``convlab.ExploreError``."""
        from ..explore.branches import compare

        self.flush()
        df = compare(self._explorable(), a, b)
        self.compared, self.marked, self.picking = df, None, False
        self.status = f"compared {a} with {b}"
        for fn in list(self._on_compare):
            fn(df)
        self._header()
        return df

    def summarize_from(self, node_id: str) -> None:
        """"Summarize from here": tell every function given to ``on_summarize`` (the Lab's decision panel, which
        proposes ``Session.summarize``); a view with none says so."""
        if not self._on_summarize:
            self._show_error("summarize from here: show this session in a Lab (its decision panel proposes the summary)")
            return
        for fn in list(self._on_summarize):
            fn(node_id)

    def on_summarize(self, fn: Callable[[str], None]) -> None:
        """Call ``fn(node_id)`` when the person asks to summarize from a message."""
        self._on_summarize.append(fn)

    def on_compare(self, fn: Callable[[pd.DataFrame], None]) -> None:
        """Call ``fn(frame)`` after every comparison made in this view."""
        self._on_compare.append(fn)

    def _explore_intent(self, kind: str, content: Mapping[str, Any]) -> None:
        """A search box, a step, a pick or a comparison from the browser; what goes wrong is said in the status line."""
        try:
            if kind == "search" and isinstance(content.get("text"), str):
                self.search(content["text"].strip() or None, regex=content.get("regex") is True)
            elif kind == "step" and content.get("by") in (1, -1):
                self.step(content["by"])
            elif kind == "mark" and (content.get("id") is None or isinstance(content.get("id"), str)):
                self.mark(content.get("id"))
            elif kind == "pick" and isinstance(content.get("id"), str):
                self.pick(content["id"])
            elif kind == "picking" and isinstance(content.get("on"), bool):
                self.start_picking(content["on"])
            elif kind == "compare" and isinstance(content.get("a"), str) and isinstance(content.get("b"), str):
                self.compare(content["a"], content["b"])
            elif kind == "summarize" and isinstance(content.get("id"), str):
                self.summarize_from(content["id"])
        except ExploreError as err:
            self._show_error(str(err))

    def __repr__(self) -> str:
        self.flush()
        d = self._meta
        who = (f"conversation={self.conversation.id!r}" if self.readonly
               else f"agent={intents.agent_of(self.live)!r}")
        return f"TreeView({who}, messages={d.get('total', 0)}, shown={len(self._rows)}, head={self.source.head!r})"
