"""Claude Code session transcripts (``~/.claude/projects/*/<session>.jsonl``, maybe gzipped).

One JSON row per line, linked by ``uuid``/``parentUuid``. Only ``user`` and
``assistant`` rows with a ``message`` are messages; the other rows (progress,
system, snapshots) are links in the chain and are walked through.

- One API response is written as several rows (one per content block) that
  share ``message.id``: they are ONE reply, role assistant, whose content is
  the list of the blocks in the order written, ``usage`` that of its last row,
  and ``tool_calls`` naming its ``tool_use`` blocks. The node id is the uuid
  of its first row; ``metadata.rows`` lists every row.
- A user row's ``tool_result`` blocks become ``tool`` messages with
  ``tool_call_id``. The results of one reply's parallel tool calls follow each
  other in the order they were written (reply -> result 1 -> result 2), so a
  reply split over rows leaves no fork that was never there.
- A ``compact_boundary`` row (``parentUuid`` null, ``logicalParentUuid`` the
  message before the compaction) starts a new root: the compact summary under
  it becomes a ``kind: "summary"`` root whose ``replaces`` is that logical
  parent (as ``context.replace`` records it), ``compactMetadata`` in its
  ``metadata``. A boundary without a summary row is itself that root.
- Sidechain rows (``isSidechain``; sub-agents, grouped by ``agentId``) are
  separate conversations, ``<sessionId>/agent-<agentId>``; a sub-agent file
  is one. Their first message's parent lives in the parent session, so it is
  a root there without a warning.
- The head is the message of the last message row in the file.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from ..conversation import Conversation
from ._common import Problems, Record, conversation, to_time, usage_of

NAME = "claude_code"
_ROW_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot", "queue-operation"}


def detect(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    hits = 0
    for row in value[:50]:
        if not isinstance(row, Mapping):
            continue
        if "parentUuid" in row and "sessionId" in row:
            return True
        if _typed(row) and ("uuid" in row or "leafUuid" in row or "messageId" in row):
            hits += 1
    return hits >= 1 and all(not isinstance(r, Mapping) or _typed(r) for r in value[:50])


def _typed(row: Mapping[str, Any]) -> bool:
    kind = row.get("type")
    return isinstance(kind, str) and kind in _ROW_TYPES


def _is_message(row: Mapping[str, Any]) -> bool:
    return row.get("type") in ("user", "assistant") and isinstance(row.get("message"), Mapping)


def _is_boundary(row: Mapping[str, Any]) -> bool:
    return row.get("type") == "system" and row.get("subtype") == "compact_boundary"


def _group(row: Mapping[str, Any]) -> str | None:
    if row.get("isSidechain") is True:
        return str(row.get("agentId") or "sidechain")
    return None


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def _tool_calls(blocks: list[Any]) -> list[dict[str, Any]] | None:
    calls = [
        {"id": b.get("id"), "type": "function", "function": {"name": b.get("name"), "arguments": b.get("input")}}
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    ]
    return calls or None


def parse(value: Any, source: str, iterate: Callable[[list[Any]], Iterable[Any]]) -> list[Conversation]:
    rows = [r for r in value if isinstance(r, Mapping)]
    session = next((str(r["sessionId"]) for r in rows if r.get("sessionId")), None)
    if session is None:
        session = source.split("!")[-1].rsplit("/", 1)[-1].split(".")[0]
    file_problems = Problems(source, session)
    by_uuid: dict[str, Mapping[str, Any]] = {}
    for r in rows:
        u = r.get("uuid")
        if isinstance(u, str):
            if u in by_uuid:
                file_problems.add(u, "row uuid appears twice; the later row left out")
                continue
            by_uuid[u] = r
    rows = [r for r in rows if not isinstance(r.get("uuid"), str) or by_uuid.get(r["uuid"]) is r]

    # Which boundaries have a compact summary row under them (then that row is the summary root).
    summarised = {
        r["parentUuid"] for r in rows if _is_message(r) and r.get("isCompactSummary") and isinstance(r.get("parentUuid"), str)
    }

    # Node ids for every message row, before any parent is resolved (rows may come out of order).
    node_of: dict[str, str] = {}  # row uuid -> node id (a split reply: its first row's uuid)
    group_of: dict[str, str | None] = {}  # node id -> group
    reply_node: dict[tuple[str | None, str], str] = {}
    groups: list[str | None] = []
    for r in rows:
        u = r.get("uuid")
        if not isinstance(u, str):
            continue
        g = _group(r)
        if _is_message(r) and r["type"] == "assistant":
            key = (g, str(r["message"].get("id") or u))
            nid = reply_node.setdefault(key, u)
        elif _is_message(r):
            nid = u
            blocks = r["message"].get("content")
            n_results = sum(1 for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result") if isinstance(blocks, list) else 0
            others = isinstance(blocks, list) and any(not (isinstance(b, Mapping) and b.get("type") == "tool_result") for b in blocks)
            if n_results > 1 or (n_results and others):
                nid = f"{u}#text" if others else f"{u}#{n_results}"
        elif _is_boundary(r) and u not in summarised:
            nid = u
        else:
            continue
        node_of[u] = nid
        group_of[nid] = g
        if g not in groups:
            groups.append(g)

    def resolve(parent: Any, group: str | None) -> tuple[str, Any]:
        """Walk up through non-message rows: ("node", id) | ("root", None) | ("boundary", row) | ("outside", uuid) | ("dangling", uuid) | ("loop", uuid)."""
        seen: set[str] = set()
        while isinstance(parent, str):
            if parent in seen:
                return "loop", parent
            seen.add(parent)
            if parent in node_of:
                nid = node_of[parent]
                return ("node", nid) if group_of[nid] == group else ("outside", parent)
            row = by_uuid.get(parent)
            if row is None:
                return "dangling", parent
            if _is_boundary(row):
                return "boundary", row
            parent = row.get("parentUuid")
        return "root", None

    out: list[Conversation] = []
    title = next((str(r["summary"]) for r in rows if r.get("type") == "summary" and r.get("summary")), None)
    for g in groups:
        cid = session if g is None else f"{session}/agent-{g}"
        problems = Problems(source, cid)
        if g is None:
            problems.items.extend(file_problems.items)
        records: list[Record] = []
        rec_of: dict[str, Record] = {}
        tail: dict[str, str] = {}  # reply node -> the last tool result chained under it
        reply_of_tool: dict[str, str] = {}
        head: str | None = None
        first = True
        models: list[str] = []

        def add(nid: str, parent: str | None, node: dict[str, Any]) -> None:
            rec = Record(nid, parent, node)
            records.append(rec)
            rec_of[nid] = rec

        def parent_for(r: Mapping[str, Any], nid: str) -> tuple[str | None, dict[str, Any]]:
            """The parent node of a message row, and the attributes a compaction adds."""
            nonlocal first
            extra: dict[str, Any] = {}
            kind, found = resolve(r.get("parentUuid"), g)
            is_first, first = first, False
            if kind == "node":
                return found, extra
            if kind == "boundary":
                row = found
                if r.get("isCompactSummary") and row.get("uuid") in summarised:
                    extra = _summary_attrs(row, resolve(row.get("logicalParentUuid"), g))
                    return None, extra
                # a second row under a boundary whose summary is another row: under that summary
                summary = next((node_of[x["uuid"]] for x in rows if _is_message(x) and x.get("isCompactSummary")
                                and x.get("parentUuid") == row.get("uuid") and x["uuid"] in node_of), None)
                return summary, extra
            if kind == "outside" or (kind == "dangling" and g is not None and is_first):
                extra = {"metadata_spawned_from": found}
                return None, extra
            if kind == "dangling":
                problems.add(nid, f"parentUuid {found!r} is not in the file; kept as a top-level message")
            elif kind == "loop":
                problems.add(nid, f"parentUuid chain loops at {found!r}; kept as a top-level message")
            return None, extra

        for r in iterate(rows) if g is None else rows:
            u = r.get("uuid")
            if not isinstance(u, str) or u not in node_of or group_of[node_of[u]] != g:
                continue
            nid = node_of[u]
            msg = r.get("message") if isinstance(r.get("message"), Mapping) else {}
            meta: dict[str, Any] = {}
            if _is_boundary(r):  # a boundary with no summary row: it is the summary root
                parent, extra = None, _summary_attrs(r, resolve(r.get("logicalParentUuid"), g))
                first = False
                add(nid, parent, {"role": "user", "content": str(r.get("content") or "Conversation compacted"),
                                  "time": to_time(r.get("timestamp")), **_pop_meta(extra, meta)})
                head = nid
                continue
            if r["type"] == "assistant":
                blocks = _blocks(msg.get("content"))
                if nid in rec_of:  # a later row of the same reply
                    node = rec_of[nid].node
                    node["content"].extend(blocks)
                    node["metadata"]["rows"].append(u)
                    if usage_of(msg.get("usage")) is not None:
                        node["usage"] = usage_of(msg.get("usage"))
                    if msg.get("stop_reason"):
                        node["metadata"]["stop_reason"] = msg["stop_reason"]
                    node["tool_calls"] = _tool_calls(node["content"])
                    head = nid
                    continue
                parent, extra = parent_for(r, nid)
                meta = {"message_id": msg.get("id"), "model": msg.get("model"), "stop_reason": msg.get("stop_reason"),
                        "request_id": r.get("requestId"), "rows": [u]}
                if msg.get("model") and msg["model"] not in models:
                    models.append(msg["model"])
                add(nid, parent, {
                    "role": "assistant",
                    "content": blocks,
                    "time": to_time(r.get("timestamp")),
                    "usage": usage_of(msg.get("usage")),
                    "tool_calls": _tool_calls(blocks),
                    **_pop_meta(extra, meta),
                })
                head = nid
                continue
            # a user row: tool results, and/or what the person (or Claude Code) wrote
            content = msg.get("content")
            results = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"] if isinstance(content, list) else []
            rest = [b for b in content if not (isinstance(b, Mapping) and b.get("type") == "tool_result")] if isinstance(content, list) else None
            parent, extra = parent_for(r, u)
            for flag in ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly"):
                if r.get(flag):
                    meta[flag] = True
            time = to_time(r.get("timestamp"))
            if results:
                reply = parent if parent is not None and rec_of.get(parent) and rec_of[parent].node["role"] == "assistant" else reply_of_tool.get(parent or "")
                if reply is not None:
                    parent = tail.get(reply, parent)
                for k, b in enumerate(results):
                    tid = u if k == 0 else f"{u}#{k + 1}"
                    tmeta = {"is_error": True} if b.get("is_error") else {}
                    bc = b.get("content")
                    add(tid, parent, {
                        "role": "tool",
                        "content": bc if isinstance(bc, (str, list)) else "" if bc is None else str(bc),
                        "tool_call_id": b.get("tool_use_id"),
                        "time": time,
                        **({"metadata": tmeta} if tmeta else {}),
                        **(_pop_meta(extra, {}) if k == 0 else {}),
                    })
                    if reply is not None:
                        tail[reply] = tid
                        reply_of_tool[tid] = reply
                    parent = tid
                if rest:
                    add(f"{u}#text", parent, {"role": "user", "content": rest, "time": time, "metadata": meta})
                head = node_of[u]
                continue
            add(u, parent, {
                "role": "user",
                "content": content if isinstance(content, (str, list)) else "" if content is None else str(content),
                "time": time,
                **_pop_meta(extra, meta),
            })
            head = u

        for rec in records:
            if not rec.node.get("metadata"):
                rec.node.pop("metadata", None)
        meta = {"session_id": session, "models": models}
        for key in ("version", "cwd", "gitBranch", "slug"):
            v = next((r.get(key) for r in rows if r.get(key) and _group(r) == g), None)
            if v is not None:
                meta[key] = v
        if g is not None:
            meta["agent_id"] = g
        out.append(conversation(records, problems, id=cid, title=title if g is None else None, format=NAME,
                                source=source, head=head, metadata=meta))
    return out


def _summary_attrs(boundary: Mapping[str, Any], replaced: tuple[str, Any]) -> dict[str, Any]:
    kind, found = replaced
    compact = boundary.get("compactMetadata") if isinstance(boundary.get("compactMetadata"), Mapping) else {}
    return {
        "kind": "summary",
        "replaces": found if kind == "node" else None,
        "metadata_compact": dict(compact),
        "metadata_logical_parent": boundary.get("logicalParentUuid"),
        "metadata_boundary": boundary.get("uuid"),
    }


def _pop_meta(extra: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """Node attributes from ``extra``, its ``metadata_*`` keys folded into ``metadata``."""
    attrs: dict[str, Any] = {}
    meta = dict(meta)
    for k, v in extra.items():
        if k.startswith("metadata_"):
            if v is not None:
                meta[k[len("metadata_"):]] = v
        else:
            attrs[k] = v
    attrs["metadata"] = {k: v for k, v in meta.items() if v is not None}
    return attrs
