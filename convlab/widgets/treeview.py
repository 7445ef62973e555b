"""The tree view: Python lays the tree out, a small ES module draws it.

The layout is a git graph: one row per visible message (preorder), a lane
per branch. At each node the child that continues the active path (or, off
the path, the oldest child) stays in the parent's lane and comes last; the
other children fork one lane to the right just above their rows. So the
active path is one straight line in lane 0 and side branches never cross.

Trees of thousands of messages stay small on the wire: the active path is
always shown, the branches off it only down to ``max_depth`` levels and
``budget`` messages in all (nearest the path first); the rest sits behind a
toggle marker (``+N``) that the person can expand. Everything here is O(n)
in the tree and the payload is O(visible rows).
"""

from __future__ import annotations

import pathlib
from collections import deque
from typing import Any, Iterable, Mapping

import anywidget
import traitlets

from ..tokens import content_text
from . import intents

__all__ = ["TreeView", "layout", "PREVIEW_CHARS"]

#: Characters of a message sent to the browser for its row label and hover preview.
PREVIEW_CHARS = 280

_STATIC = pathlib.Path(__file__).parent / "static"


def _preview(content: Any) -> str:
    text = content_text(content)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


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
) -> dict[str, Any]:
    """Lay out a message tree for the tree view: the JSON the browser draws.

    ``nodes`` are node dicts (``id, parent, role, seq, kind, copied_from,
    replaces, turn_id, content``), parents before children. ``expanded`` and
    ``collapsed`` hold ids whose off-path children are forced shown or hidden
    (``None`` is the root). A dashed link (``copied_from``, ``replaces``) is
    sent only when both of its ends are shown.

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

    # the active path, and which child of each path node continues it
    path: list[str] = []
    cur = head
    while cur is not None and cur in attrs:
        path.append(cur)
        cur = attrs[cur].get("parent")
    path.reverse()
    on_path = set(path)
    next_on_path: dict[str | None, str] = {}
    prev: str | None = None
    for nid in path:
        next_on_path[prev] = nid
        prev = nid

    # subtree sizes (children come after parents in seq order)
    size = {nid: 1 for nid in attrs}
    for nid in reversed(list(attrs)):
        parent = attrs[nid].get("parent")
        if parent is not None:
            size[parent] += size[nid]

    # which nodes are visible: the path, then off-path nodes nearest it first
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

    # rows and lanes: preorder, the continuing child last in the parent's lane
    out_nodes: list[dict[str, Any]] = []
    markers: list[dict[str, Any]] = []
    row = 1  # row 0 is the root
    max_lane = 0

    def main_child(nid: str | None, shown: list[str]) -> str | None:
        if not shown:
            return None
        nxt = next_on_path.get(nid)
        if nxt is not None and (nid is None or nid in on_path):
            return nxt
        return shown[0]

    # stack items: ("node", id, lane) | ("marker", parent, lane)
    stack: list[tuple[str, str | None, int]] = []

    def push_children(nid: str | None, lane: int) -> None:
        shown = [c for c in kids.get(nid, ()) if c in visible]
        main = main_child(nid, shown)
        if main is not None:
            stack.append(("node", main, lane))
        has_off_path_shown = any(c != main for c in shown)
        if nid in hidden or (nid in expanded and has_off_path_shown):
            stack.append(("marker", nid, lane + 1))
        for c in reversed(shown):
            if c != main:
                stack.append(("node", c, lane + 1))

    push_children(None, 0)
    while stack:
        what, nid, lane = stack.pop()
        max_lane = max(max_lane, lane)
        if what == "marker":
            markers.append({
                "id": nid, "row": row, "lane": lane,
                "hidden": hidden.get(nid, 0),
                "expanded": nid in expanded and nid not in hidden,
            })
            row += 1
            continue
        a = attrs[nid]
        tid = a.get("turn_id")
        out_nodes.append({
            "id": nid,
            "parent": a.get("parent"),
            "row": row,
            "lane": lane,
            "role": a.get("role"),
            "kind": a.get("kind") or "message",
            "path": nid in on_path,
            "head": nid == head,
            "copy": a.get("copied_from") is not None,
            "replaces": a.get("replaces") is not None,
            "status": turn_status.get(tid, "") if tid else "",
            "turn": tid,
            "text": _preview(a.get("content")),
        })
        row += 1
        push_children(nid, lane)

    links = []
    for n in out_nodes:
        a = attrs[n["id"]]
        for key in ("copied_from", "replaces"):
            target = a.get(key)
            if target is not None and target in visible:
                links.append({"from": n["id"], "to": target, "type": key})

    return {
        "rows": row,
        "lanes": max_lane + 1,
        "total": len(attrs),
        "head": head,
        "selected": selected,
        "status": status,
        "nodes": out_nodes,
        "markers": markers,
        "links": links,
    }


#: Events after which the tree view redraws.
_REDRAW = ("message.new", "head.moved", "turn.", "context.replaced", "state.changed")


class TreeView(anywidget.AnyWidget):
    """The whole message tree as an SVG git graph, live.

    Click a message to look at its branch (the head moves to the newest
    reply under it, see ``convlab.widgets.intents.look``); "Continue from
    here" moves the head exactly to the selected message; ``+N`` markers
    expand collapsed branches.

    >>> import convlab
    >>> s = convlab.Session()
    >>> TreeView(s)
    TreeView(agent='bot', messages=0, shown=0, head=None)
    """

    _esm = _STATIC / "treeview.js"
    _css = _STATIC / "treeview.css"
    data = traitlets.Dict().tag(sync=True)

    def __init__(self, session: Any, *, max_depth: int = 6, budget: int = 400, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.max_depth = max_depth
        self.budget = budget
        self.expanded: set[str | None] = set()
        self.collapsed: set[str | None] = set()
        self.selected: str | None = None
        self.status = ""
        self.last: dict[str, Any] | None = None  # the outcome of the last intent
        self.on_msg(self._on_msg)
        self._unsubscribe = session.subscribe(intents.listener(self, _REDRAW))
        self.refresh()

    # -- drawing -----------------------------------------------------------
    def refresh(self) -> None:
        """Lay the tree out again from the session and sync it to the browser."""
        s = self.session
        graph = s.tree
        statuses = {t["id"]: t["status"] for t in s.turns if t.get("status") in ("cancelled", "failed", "running")}
        nodes = (dict(a) for _, a in graph.nodes(data=True))
        self.data = layout(
            nodes, s.head, turn_status=statuses, expanded=self.expanded, collapsed=self.collapsed,
            max_depth=self.max_depth, budget=self.budget, selected=self.selected, status=self.status,
        )

    # -- intents from the browser ------------------------------------------
    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind, nid = content.get("type"), content.get("id")
        if kind == "checkout" and isinstance(nid, str):
            self.checkout(nid)
        elif kind == "continue" and isinstance(nid, str):
            self.continue_from(nid)
        elif kind == "toggle" and (nid is None or isinstance(nid, str)):
            self.toggle(nid)

    def _done(self, outcome: dict[str, Any]) -> dict[str, Any]:
        self.last = outcome
        self.status = outcome.get("message", "")
        self.refresh()
        return outcome

    def checkout(self, node_id: str) -> dict[str, Any]:
        """Select ``node_id`` and look at its branch (never makes the model reply)."""
        self.selected = node_id
        return self._done(intents.look(self.session, node_id))

    def continue_from(self, node_id: str) -> dict[str, Any]:
        """Move the head exactly to ``node_id`` (the turn runs as the worker decides)."""
        self.selected = node_id
        return self._done(intents.continue_from(self.session, node_id))

    def toggle(self, node_id: str | None) -> None:
        """Expand the hidden branches under ``node_id`` (``None``: the root), or collapse them again."""
        hidden = any(m["id"] == node_id and not m["expanded"] for m in self.data.get("markers", ()))
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

    def close(self) -> None:
        self._unsubscribe()
        super().close()

    def __repr__(self) -> str:
        d = self.data or {}
        return (f"TreeView(agent={intents.agent_of(self.session)!r}, messages={d.get('total', 0)}, "
                f"shown={len(d.get('nodes', ()))}, head={self.session.head!r})")
