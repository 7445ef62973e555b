"""Plain-text renderings of a tree and of events, at a fixed width.

Notebooks, the CLI and golden-string tests print these: they are stable (no
ids of objects, no times unless asked) so nbval can compare them strictly.

The tree reads like ``git log --graph``, with the tree view's layout
(``convlab.widgets.treeview.layout``) in text: one row per message in
preorder; at each message the child that continues its lane
(``convlab.tree.lane_child``: on the active path the child on it, off the
path the child whose subtree holds the newest leaf) stays in the parent's
column and comes last, the other children fork one column to the right just
above it. So the active
path is one straight column at the left, indented only where the tree
branches, and a 600-message session stays as narrow as its branching.

Width is counted in terminal cells (a wide CJK character or emoji is two) and
no line is wider than asked, whatever the data: message text is folded to one
line, stripped of terminal escapes and cut with an ellipsis, and parts that
are not text (thinking, tool calls and results, images) print as short labels
instead of JSON.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx

from .tokens import content_text
from .tree import lane_child, newest_leaves, nodes_in_order, path_to

__all__ = ["render_tree", "render_path", "render_summary", "render_events", "preview", "brief", "readable", "fit", "cells"]

#: The narrowest width the tree renderings accept.
MIN_WIDTH = 20

#: A shown id is the shortest prefix, at least this long, that keeps the tree's ids apart (as git abbreviates hashes).
ID_CHARS = 8

#: Characters of a tool call's argument shown in its label.
ARG_CHARS = 48

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")


def cells(text: str) -> int:
    """Terminal cells ``text`` takes: two for a wide (East Asian, emoji) character, one for any other.

    >>> cells("abc"), cells("日本"), cells("◀ head")
    (3, 4, 6)
    """
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def fit(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` cells, with an ellipsis where it was cut.

    >>> fit("abcdef", 4), fit("abc", 4), fit("日本語", 5)
    ('abc…', 'abc', '日本…')
    """
    if cells(text) <= width:
        return text
    if width <= 0:
        return ""
    room = width - 1
    used = 0
    for i, ch in enumerate(text):
        used += cells(ch)
        if used > room:
            return text[:i] + "…"
    return text  # pragma: no cover - cells(text) > width means the loop returns


def _clean(text: str) -> str:
    """One line: terminal escapes dropped, other unprintable characters and all whitespace folded to one space."""
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else " " for ch in text)
    return " ".join(text.split())


def _size(chars: int) -> str:
    if chars < 1000:
        return f"{chars} chars"
    if chars < 9950:
        return f"{chars / 1000:.1f}k chars"
    if chars < 999_500:
        return f"{chars / 1000:.0f}k chars"
    return f"{chars / 1_000_000:.1f}M chars"


_ARG_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "prompt", "description", "code")


def _argument(args: object) -> str:
    """The one argument of a tool call worth showing: its command, file, pattern, ... or its first string."""
    if isinstance(args, str):
        text = args
        try:
            args = json.loads(text)
        except ValueError:
            return fit(_clean(text), ARG_CHARS)
    if isinstance(args, Mapping):
        for key in _ARG_KEYS:
            v = args.get(key)
            if isinstance(v, str) and v.strip():
                v = _clean(v)
                if key in ("file_path", "path") and cells(v) > ARG_CHARS:  # a path's end names the file
                    return "…" + v[-(ARG_CHARS - 1):]
                return fit(v, ARG_CHARS)
        for v in args.values():
            if isinstance(v, str) and v.strip():
                return fit(_clean(v), ARG_CHARS)
    if not args:
        return ""
    return fit(_clean(json.dumps(args, ensure_ascii=False, default=str)), ARG_CHARS)


def _tool_label(kind: str, name: object, args: object) -> str:
    name = _clean(str(name)) if name else "?"
    arg = _argument(args)
    return f"[{kind} {name}: {arg}]" if arg else f"[{kind} {name}]"


def _part(part: object) -> str:
    """One content part as text (a text part) or a short label."""
    if isinstance(part, str):
        return _clean(part)
    if not isinstance(part, Mapping):
        return f"[{type(part).__name__}]"
    kind = part.get("type") or part.get("content_type") or "part"
    if kind == "text" and isinstance(part.get("text"), str):
        return _clean(part["text"])
    if kind == "thinking":
        return f"[thinking {_size(len(str(part.get('thinking') or '')))}]"
    if kind == "redacted_thinking":
        return "[thinking redacted]"
    if kind in ("tool_use", "server_tool_use"):
        return _tool_label("tool_use", part.get("name"), part.get("input"))
    if kind == "tool_result" or str(kind).endswith("_tool_result"):
        error = " error" if part.get("is_error") else ""
        inner = part.get("content")
        return f"[tool_result{error} {_size(len(content_text(inner) if isinstance(inner, (str, list)) else ''))}]"
    if kind in ("image", "image_url", "input_image", "image_asset_pointer"):
        return "[image]"
    if kind in ("audio", "input_audio"):
        return "[audio]"
    if kind in ("document", "file", "input_file"):
        name = part.get("filename") or part.get("title") or part.get("name")
        return f"[file {_clean(str(name))}]" if name else "[file]"
    return f"[{_clean(str(kind))}]"


def brief(content: object) -> str:
    """``content`` as one readable line: text folded, every other part a short label.

    >>> brief("a  b\\nc")
    'a b c'
    >>> brief([{"type": "thinking", "thinking": "x" * 1234}, {"type": "text", "text": "Let me look."},
    ...        {"type": "tool_use", "name": "Bash", "input": {"command": "ls -la", "description": "list"}}])
    '[thinking 1.2k chars] Let me look. [tool_use Bash: ls -la]'
    >>> brief([{"type": "tool_result", "content": "y" * 3400}, {"type": "image_url", "image_url": {"url": "..."}}])
    '[tool_result 3.4k chars] [image]'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return _clean(content)
    if isinstance(content, Mapping):
        return _part(content)
    if not isinstance(content, (list, tuple)):
        return _clean(str(content))
    return " ".join(p for p in map(_part, content) if p)


def readable(content: object) -> str:
    """``content`` as a person reads it: text as written (its lines kept), every
    other part a short label (see ``brief``) on a line of its own.

    >>> print(readable([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Two files:"},
    ...                 {"type": "text", "text": " a and b."}, {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]))
    [thinking 3 chars]
    Two files: a and b.
    [tool_use Bash: ls]
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, (list, tuple)):
        return str(content)
    out: list[Any] = []  # text (merged) and parts, in order
    text = False
    for p in content:
        if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)):
            piece = p if isinstance(p, str) else p["text"]
            if text:
                out[-1] += piece
            else:
                out.append(piece)
            text = True
        else:
            label = _part(p)
            if label:
                out.append(label)
            text = False
    return "\n".join(out)


def preview(content: object, width: int) -> str:
    """One line of ``content`` (see ``brief``) cut to ``width`` cells with an ellipsis.

    >>> preview("a  b\\nc", 10), preview("x" * 20, 8)
    ('a b c', 'xxxxxxx…')
    """
    return fit(brief(content), width)


# -- trees -------------------------------------------------------------------


def _check(graph: object, head: object, width: object, name: str) -> None:
    if not isinstance(graph, nx.DiGraph):
        what = type(graph).__name__
        hint = f" (a {what}'s tree: {name}(x.tree, x.head))" if hasattr(graph, "tree") and hasattr(graph, "head") else ""
        raise TypeError(f"{name} takes a message tree, a networkx DiGraph, got {what}{hint}")
    if head is not None and head not in graph:
        raise ValueError(f"{name}: head {head!r} is not a message of the tree")
    if not isinstance(width, int) or isinstance(width, bool) or width < MIN_WIDTH:
        raise ValueError(f"{name}: width must be an integer of at least {MIN_WIDTH}, got {width!r}")


def _seq(graph: nx.DiGraph):
    nodes = graph.nodes
    return lambda n: nodes[n]["seq"]


def _roots(graph: nx.DiGraph) -> list[str]:
    return sorted((n for n, a in graph.nodes(data=True) if a.get("parent") is None), key=_seq(graph))


def _id_length(ids: Iterable[Any]) -> int:
    """The shortest prefix length, at least ``ID_CHARS``, that keeps these ids apart."""
    ids = {str(i) for i in ids}
    longest = max(map(len, ids), default=0)
    k = ID_CHARS
    while k < longest and len({i[:k] for i in ids}) < len(ids):
        k += 1
    return k


class _Labels:
    """How one tree's messages are named on a row: short ids, role, tags, and the body text."""

    def __init__(self, graph: nx.DiGraph, marks: Mapping[str, str] | None = None) -> None:
        self.nodes = graph.nodes
        self.marks = marks or {}  # a person's labels on messages (Tree.labels)
        self.k = _id_length(graph.nodes)
        self.tools: dict[str, str] = {}  # tool call id -> tool name
        for _, a in graph.nodes(data=True):
            for call in a.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    self.tools[str(call.get("id"))] = str(call["function"].get("name"))
            content = a.get("content")
            if isinstance(content, list):
                for part in content:
                    if isinstance(part, Mapping) and part.get("type") == "tool_use":
                        self.tools[str(part.get("id"))] = str(part.get("name"))

    def id(self, nid: object) -> str:
        return _clean(str(nid)[: self.k])

    def head(self, nid: str, *tags: str) -> str:
        a = self.nodes[nid]
        tags_ = []
        if a.get("kind") == "summary":
            tags_.append("[summary]")
        if a.get("copied_from"):
            tags_.append(f"(copy of {self.id(a['copied_from'])})")
        if a.get("replaces"):
            tags_.append(f"(replaces {self.id(a['replaces'])})")
        if nid in self.marks:
            tags_.append(f"[label: {fit(_clean(self.marks[nid]), 40)}]")
        tags_.extend(tags)
        return f"{self.id(nid)} {_clean(str(a.get('role')))}{(' ' + ' '.join(tags_)) if tags_ else ''}:"

    def body(self, nid: str) -> str:
        a = self.nodes[nid]
        content = a.get("content")
        text = brief(content)
        if a.get("role") == "tool":
            name = self.tools.get(str(a.get("tool_call_id")))
            size = _size(len(content_text(content)) if isinstance(content, (str, list)) else 0)
            meta = a.get("metadata")
            error = "error " if isinstance(meta, Mapping) and meta.get("is_error") is True else ""  # the tool failed
            text = f"[tool_result {_clean(name) + ' ' if name else ''}{error}{size}] {text}"
        calls = a.get("tool_calls") or ()
        if calls and "[tool_use " not in text:
            labels = []
            for call in calls:
                fn = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(fn, Mapping):
                    labels.append(_tool_label("tool_call", fn.get("name"), fn.get("arguments")))
            text = " ".join(t for t in (text, *labels) if t)
        return text.strip()


def _line(start: str, body: str, tail: str, width: int) -> str:
    """``start body tail`` in ``width`` cells: the body is cut first, then (an absurdly deep row) the start."""
    room = width - cells(start) - cells(tail) - 1
    if room >= 1:
        return f"{start} {fit(body, room)}".rstrip() + tail if body else start + tail
    if cells(tail) < width:
        return fit(start, width - cells(tail)) + tail
    return fit(start + tail, width)


_HEAD = "  ◀ head"


def render_tree(graph: nx.DiGraph, head: str | None = None, width: int = 88, labels: Mapping[str, str] | None = None) -> str:
    """The tree as text that reads like ``git log --graph``, oldest first.

    The active path (root -> ``head``, marked ``●``) is one straight column;
    where the tree branches, the other children (``○``, off the path) fork
    one column to the right (``├─``) just above the child that continues, so
    text is indented only by how deeply branches nest. ``◀ head`` marks the
    head; summaries, copies (``copy of``) and ``replaces`` links are spelled
    out, and so are ``labels`` (id -> text: ``Tree.labels``, ``[label: ...]``,
    at most 40 cells of it); ids are cut, as git cuts hashes, to the shortest prefix (at least
    8 characters) that keeps them apart. No line is wider than ``width``
    cells (at least 20).

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for mid, parent, role, text in [("u1", None, "user", "weather in NYC?"), ("a1", "u1", "assistant", "Sunny."),
    ...                                 ("u2", "a1", "user", "and tomorrow?"), ("e1", "u1", "user", "weather in LA instead"),
    ...                                 ("e2", "e1", "assistant", "Warm.")]:
    ...     _ = t.add({"id": mid, "role": role, "content": text}, parent)
    >>> print(render_tree(t.graph, head="e2", width=60, labels={"a1": "NYC"}))
    ● u1 user: weather in NYC?
    ├─○ a1 assistant [label: NYC]: Sunny.
    │ ○ u2 user: and tomorrow?
    ● e1 user: weather in LA instead
    ● e2 assistant: Warm.  ◀ head
    """
    _check(graph, head, width, "render_tree")
    if not graph:
        return "(empty tree)"
    names = _Labels(graph, labels)
    seq = _seq(graph)
    path = path_to(graph.nodes, head)
    on_path = set(path)
    continues = dict(zip([None, *path], path, strict=False))  # path node (None: the root) -> the next one
    newest = newest_leaves(nodes_in_order(graph))
    lines: list[str] = []
    stack: list[tuple[str, int, bool]] = []  # (id, lane, forks off the lane to its left)
    pending: Counter[int] = Counter()  # lane -> rows still to come in it (a lane with any is drawn │)

    def push_children(nid: str | None, lane: int) -> None:
        kids = _roots(graph) if nid is None else sorted(graph.successors(nid), key=seq)
        if not kids:
            return
        main = lane_child(kids, newest, continues.get(nid) if nid is None or nid in on_path else None)
        assert main is not None  # kids is not empty
        stack.append((main, lane, False))
        pending[lane] += 1
        for k in reversed(kids):
            if k != main:
                stack.append((k, lane + 1, True))
                pending[lane + 1] += 1

    push_children(None, 0)
    while stack:
        nid, lane, fork = stack.pop()
        pending[lane] -= 1
        left = lane - 1 if fork else lane
        graph_part = "".join("│ " if pending[j] else "  " for j in range(left))
        if fork:
            graph_part += "├─" if lines else "┌─"
        mark = "●" if nid in on_path else "○"
        lines.append(_line(f"{graph_part}{mark} {names.head(nid)}", names.body(nid), _HEAD if nid == head else "", width))
        push_children(nid, lane)
    return "\n".join(lines)


def render_path(graph: nx.DiGraph, head: str | None = None, width: int = 88, labels: Mapping[str, str] | None = None) -> str:
    """Only the active path (root -> ``head``), one message a line, as ``render_tree`` draws it.

    Where other branches leave the path, ``(+N branches)`` says how many
    (``(+N other roots)`` at the first message, after a compaction); ``labels`` as ``render_tree`` shows them.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for mid, parent, role, text in [("u1", None, "user", "weather in NYC?"), ("a1", "u1", "assistant", "Sunny."),
    ...                                 ("e1", "u1", "user", "weather in LA instead")]:
    ...     _ = t.add({"id": mid, "role": role, "content": text}, parent)
    >>> print(render_path(t.graph, head="e1", width=60))
    ● u1 user (+1 branch): weather in NYC?
    ● e1 user: weather in LA instead  ◀ head
    """
    _check(graph, head, width, "render_path")
    if not graph:
        return "(empty tree)"
    path = path_to(graph.nodes, head)
    if not path:
        return "(no active path: the head is at the root)"
    names = _Labels(graph, labels)
    lines = []
    for i, nid in enumerate(path):
        nxt = path[i + 1] if i + 1 < len(path) else None
        tags = []
        if i == 0 and len(_roots(graph)) > 1:
            n = len(_roots(graph)) - 1
            tags.append(f"(+{n} other root{'s' if n > 1 else ''})")
        others = sum(1 for k in graph.successors(nid) if k != nxt)
        if others:
            tags.append(f"(+{others} branch{'es' if others > 1 else ''})")
        lines.append(_line(f"● {names.head(nid, *tags)}", names.body(nid), _HEAD if nid == head else "", width))
    return "\n".join(lines)


def render_summary(graph: nx.DiGraph, head: str | None = None, width: int = 88) -> str:
    """One line: the head, how many messages lead to it, and how many messages, branch points and summaries in all.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for mid, parent in [("u1", None), ("a1", "u1"), ("a2", "u1")]:
    ...     _ = t.add({"id": mid, "role": "user", "content": "x"}, parent)
    >>> render_summary(t.graph, "a2")
    'head a2 (2 on the active path); 3 messages, 1 branch point, 0 summaries'
    """
    _check(graph, head, width, "render_summary")

    def count(n: int, what: str, plural: str) -> str:
        return f"{n} {what if n == 1 else plural}"

    branch_points = sum(1 for n in graph if graph.out_degree(n) > 1)
    summaries = sum(1 for _, a in graph.nodes(data=True) if a.get("kind") == "summary")
    where = f"head {_clean(str(head)[: _id_length(graph)])}" if head is not None else "head at the root"
    text = f"{where} ({len(path_to(graph.nodes, head))} on the active path); " + ", ".join([
        count(len(graph), "message", "messages"),
        count(branch_points, "branch point", "branch points"),
        count(summaries, "summary", "summaries"),
    ])
    return fit(text, width)


_SKIP = {"seq", "time", "type", "turn_id"}


def _brief(ev: Mapping[str, Any], width: int) -> str:
    t = ev["type"]
    if t == "message.new":
        m = ev["message"]
        extra = f" copied_from={m['copied_from']}" if m.get("copied_from") else ""
        if m.get("kind") == "summary":
            extra += " kind=summary"
        if m.get("replaces"):
            extra += f" replaces={m['replaces']}"
        return f"{m['id']} {m['role']} under {m['parent'] or 'root'}{extra}"
    if t == "decision.requested":
        d = ev["decision"]
        extra = ""
        if d["type"] == "context.limit":
            extra = f" reason={d['reason']} proposed=[{', '.join(a['type'] for a in d['proposed'])}]"
        return f"{d['type']}{extra}"
    if t == "decision.answered":
        return "[" + ", ".join(a["type"] for a in ev["actions"]) + "]"
    if t == "turn.queued":
        return f"merge={ev['turn']['queue'] == 'merge'}"
    parts = []
    for k, v in ev.items():
        if k in _SKIP or k in ("turn", "message") or v is None or (k == "llm" and v == "default"):
            continue
        if k == "usage":
            v = v.get("input_tokens")
            k = "input_tokens"
        parts.append(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}")
    return " ".join(parts)


def render_events(events: Iterable[Mapping[str, Any]], width: int = 100, times: bool = False) -> str:
    """One line per event: seq, turn, type and what matters about it.

    >>> print(render_events([{"seq": 1, "time": 0, "type": "head.moved", "turn_id": "t2", "from": "a1", "to": "u1"}]))
      1 t2  head.moved         from=a1 to=u1
    """
    if isinstance(events, (str, bytes, Mapping)) or not isinstance(events, Iterable):
        hint = " (a Session's: render_events(s.events))" if hasattr(events, "events") else ""
        raise TypeError(f"render_events takes a list of event dicts, got {type(events).__name__}{hint}")
    out = []
    for ev in events:
        when = f"{ev['time']:>8.1f}s " if times else ""
        line = f"{ev['seq']:>3} {when}{ev.get('turn_id', ''):<3} {ev['type']:<18} {_brief(ev, width)}"
        out.append(line[:width].rstrip())
    return "\n".join(out)
