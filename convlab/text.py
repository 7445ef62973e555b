"""Plain-text renderings of a tree and of events, at a fixed width.

Notebooks, the CLI and golden-string tests print these: they are stable (no
ids of objects, no times unless asked) so nbval can compare them strictly.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

import networkx as nx

from .tokens import content_text

__all__ = ["render_tree", "render_events", "preview"]


def preview(content: Any, width: int) -> str:
    """One line of ``content``: whitespace folded, cut with an ellipsis.

    >>> preview("a  b\\nc", 10), preview("x" * 20, 8)
    ('a b c', 'xxxxxxx…')
    """
    text = " ".join(content_text(content).split())
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _roots(graph: nx.DiGraph) -> list[str]:
    return sorted((n for n, a in graph.nodes(data=True) if a.get("parent") is None), key=lambda n: graph.nodes[n]["seq"])


def render_tree(graph: nx.DiGraph, head: str | None = None, width: int = 88) -> str:
    """The tree as indented text, oldest child first.

    ``*`` marks the active path (root -> ``head``), ``◀ head`` the head;
    summaries, copies (``copy of``) and ``replaces`` links are spelled out.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for mid, parent, role, text in [("u1", None, "user", "weather in NYC?"), ("a1", "u1", "assistant", "Sunny."),
    ...                                 ("u2", "a1", "user", "and tomorrow?"), ("e1", "u1", "user", "weather in LA instead")]:
    ...     _ = t.add({"id": mid, "role": role, "content": text}, parent)
    >>> print(render_tree(t.graph, head="e1", width=60))
    * u1 user: weather in NYC?
      ├─ a1 assistant: Sunny.
      │  └─ u2 user: and tomorrow?
    * └─ e1 user: weather in LA instead  ◀ head
    """
    nodes = graph.nodes
    active: set[str] = set()
    n = head
    while n is not None:
        active.add(n)
        n = nodes[n]["parent"]
    lines: list[str] = []

    def label(nid: str) -> str:
        a = nodes[nid]
        tags = []
        if a.get("kind") == "summary":
            tags.append("[summary]")
        if a.get("copied_from"):
            tags.append(f"(copy of {a['copied_from']})")
        if a.get("replaces"):
            tags.append(f"(replaces {a['replaces']})")
        return f"{nid} {a['role']}{(' ' + ' '.join(tags)) if tags else ''}: "

    def walk(nid: str, prefix: str, last: bool, top: bool) -> None:
        mark = "* " if nid in active else "  "
        branch = "" if top else ("└─ " if last else "├─ ")
        head_mark = "  ◀ head" if nid == head else ""
        start = f"{mark}{prefix}{branch}{label(nid)}"
        room = width - len(start) - len(head_mark)
        lines.append(f"{start}{preview(nodes[nid]['content'], room)}{head_mark}".rstrip())
        kids = sorted(graph.successors(nid), key=lambda k: nodes[k]["seq"])
        child_prefix = prefix if top else prefix + ("   " if last else "│  ")
        for i, k in enumerate(kids):
            walk(k, child_prefix, i == len(kids) - 1, False)

    roots = _roots(graph)
    if not roots:
        return "(empty tree)"
    for r in roots:
        walk(r, "", True, True)
    return "\n".join(lines)


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
    out = []
    for ev in events:
        when = f"{ev['time']:>8.1f}s " if times else ""
        line = f"{ev['seq']:>3} {when}{ev.get('turn_id', ''):<3} {ev['type']:<18} {_brief(ev, width)}"
        out.append(line[:width].rstrip())
    return "\n".join(out)
