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
  a root there without a warning (``metadata.spawned_from``). The compaction
  fork (agent id ``acompact-...``) is Claude Code's own summary call: it
  reads the parent's whole history, which its file does not hold, so its
  first message also names that parent as ``lost_parent`` (the history
  under it is not whole: a replay reads its call as the log did).
- A reply row Claude Code wrote itself (model ``<synthetic>``, or
  ``isApiErrorMessage``: "API Error: 500 ...", "No response requested.") is
  an assistant message marked ``no_call`` (``convlab.conversation.NO_CALL``)
  with no usage: its all-zero usage is no provider's report, so the count
  goes on from the last real call, and no model call wrote it.
- The head is the message of the last message row in the file.
- Ids are strings; integer ids (a transcript another tool wrote) are read as
  their decimal strings. The title is the first ``summary`` row whose
  ``leafUuid`` is a row of the file (a summary row about another session's
  leaf says nothing about this one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..conversation import LOG_FORKS, LOG_ROWS, LOST_PARENT, NO_CALL, Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, table, to_time, usage_of

NAME = "claude_code"

#: The model Claude Code names on a row it wrote itself in the model's place (an API error, "No response
#: requested."): its all-zero usage is no provider's report, and no model call wrote it (``NO_CALL``).
SYNTHETIC = "<synthetic>"

#: The agent id prefix of Claude Code's compaction fork (``subagents/agent-acompact-<id>.jsonl``): one call that
#: reads the parent session's whole history (the file holds only the summary prompt) and writes the summary.
COMPACTION_AGENT = "acompact"
_ROW_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot", "queue-operation"}
_USER_FLAGS = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")


def detect(doc: Document) -> bool:
    if doc.kind == "array":
        return False
    hits = 0
    for row in doc.head:
        if not isinstance(row, MAPPING):
            continue
        if "parentUuid" in row and "sessionId" in row:
            return True
        if _typed(row) and ("uuid" in row or "leafUuid" in row or "messageId" in row):
            hits += 1
    return hits >= 1 and all(not isinstance(r, MAPPING) or _typed(r) for r in doc.head)


def parse(doc: Document) -> list[Conversation]:
    """The session and each sub-agent (sidechain group) in it: one conversation each."""
    index = RowIndex(list(doc.items), doc.source)
    return [_Builder(index, group).conversation() for group in index.groups]


# -- rows ------------------------------------------------------------------------


_ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid")


def _text_ids(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row with integer ids (a transcript some tool wrote) as strings, as Claude Code writes them."""
    if not any(isinstance(row.get(k), int) and not isinstance(row.get(k), bool) for k in _ID_KEYS):
        return row
    return {**row, **{k: str(row[k]) for k in _ID_KEYS if isinstance(row.get(k), int) and not isinstance(row[k], bool)}}


def _typed(row: Mapping[str, Any]) -> bool:
    kind = row.get("type")
    return isinstance(kind, str) and kind in _ROW_TYPES


def _is_message(row: Mapping[str, Any]) -> bool:
    return row.get("type") in ("user", "assistant") and isinstance(row.get("message"), MAPPING)


def _is_boundary(row: Mapping[str, Any]) -> bool:
    return row.get("type") == "system" and row.get("subtype") == "compact_boundary"


def _group(row: Mapping[str, Any]) -> str | None:
    if row.get("isSidechain") is True:
        return str(row.get("agentId") or "sidechain")
    return None


def _blocks(content: object) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def _is_result(block: object) -> bool:
    return isinstance(block, MAPPING) and block.get("type") == "tool_result"


def _tool_calls(blocks: list[Any]) -> list[dict[str, Any]] | None:
    calls = [
        {"id": b.get("id"), "type": "function", "function": {"name": b.get("name"), "arguments": b.get("input")}}
        for b in blocks
        if isinstance(b, MAPPING) and b.get("type") == "tool_use"
    ]
    return calls or None


def _text(content: object) -> str | list[Any]:
    return content if isinstance(content, (str, list)) else "" if content is None else str(content)


# -- the row index ---------------------------------------------------------------------


class RowIndex:
    """Every row of one transcript file, indexed once: what the per-row handlers look up.

    ``node_of`` maps a message row's uuid to the id of the node it becomes (a
    reply split over rows: its first row's uuid; a row of several tool
    results: the last of them), ``group_of`` a node to its group (None: the
    session; an agent id: a sidechain), ``groups`` lists the groups in the
    order they first appear. ``resolve`` walks a parent uuid up to a node.
    """

    def __init__(self, rows: list[Any], source: str) -> None:
        self.source = source
        rows = [_text_ids(r) for r in rows if isinstance(r, MAPPING)]
        session = next((str(r["sessionId"]) for r in rows if r.get("sessionId")), None)
        self.session = session or source.split("!")[-1].rsplit("/", 1)[-1].split(".")[0]
        self.problems = Problems(source, self.session)  # about the file: told with the session
        self.by_uuid: dict[str, Mapping[str, Any]] = {}
        for r in rows:
            u = r.get("uuid")
            if isinstance(u, str):
                if u in self.by_uuid:
                    self.problems.add(u, "row uuid appears twice; the later row left out")
                    continue
                self.by_uuid[u] = r
        self.rows = [r for r in rows if not isinstance(r.get("uuid"), str) or self.by_uuid.get(r["uuid"]) is r]
        # boundaries with a compact summary row under them (that row is then the summary root)
        self.summarised = {r["parentUuid"] for r in self.rows
                           if _is_message(r) and r.get("isCompactSummary") and isinstance(r.get("parentUuid"), str)}
        self.node_of: dict[str, str] = {}
        self.group_of: dict[str, str | None] = {}
        self.groups: list[str | None] = []
        self._index_nodes()
        # under a boundary, the node of its (first) compact summary row
        self.summary_under: dict[str, str] = {}
        for r in self.rows:
            u = r.get("uuid")
            if _is_message(r) and r.get("isCompactSummary") and isinstance(r.get("parentUuid"), str) and isinstance(u, str) and u in self.node_of:
                self.summary_under.setdefault(r["parentUuid"], self.node_of[u])
        # a summary row titles the session it ends in: one whose leafUuid is not in the file says nothing about it
        self.title = next((str(r["summary"]) for r in self.rows if r.get("type") == "summary" and r.get("summary")
                           and r.get("leafUuid") in self.by_uuid), None)

    def _index_nodes(self) -> None:
        """Node ids for every message row, before any parent is resolved (rows may come out of order)."""
        reply_node: dict[tuple[str | None, str], str] = {}
        for r in self.rows:
            u = r.get("uuid")
            if not isinstance(u, str):
                continue
            g = _group(r)
            if _is_message(r) and r["type"] == "assistant":
                nid = reply_node.setdefault((g, str(r["message"].get("id") or u)), u)
            elif _is_message(r):
                nid = u
                blocks = r["message"].get("content")
                if isinstance(blocks, list):
                    results = sum(1 for b in blocks if _is_result(b))
                    others = any(not _is_result(b) for b in blocks)
                    if results > 1 or (results and others):
                        nid = f"{u}#text" if others else f"{u}#{results}"
            elif _is_boundary(r) and u not in self.summarised:
                nid = u
            else:
                continue
            self.node_of[u] = nid
            self.group_of[nid] = g
            if g not in self.groups:
                self.groups.append(g)

    def resolve(self, parent: object, group: str | None) -> tuple[str, Any]:
        """Walk up through rows that are not messages: ``("node", id)``, ``("root", None)``,
        ``("boundary", row)``, ``("outside", uuid)`` (a node of another group),
        ``("dangling", uuid)`` or ``("loop", uuid)``."""
        seen: set[str] = set()
        while isinstance(parent, str):
            if parent in seen:
                return "loop", parent
            seen.add(parent)
            if parent in self.node_of:
                nid = self.node_of[parent]
                return ("node", nid) if self.group_of[nid] == group else ("outside", parent)
            row = self.by_uuid.get(parent)
            if row is None:
                return "dangling", parent
            if _is_boundary(row):
                return "boundary", row
            parent = row.get("parentUuid")
        return "root", None

    def message_row_above(self, row: Mapping[str, Any]) -> str | None:
        """The uuid of the message row ``row`` hangs under, through the rows that are no message (progress, hooks);
        None for a row under none (a root, a boundary, a row not in the file, a loop)."""
        seen: set[str] = set()
        parent = row.get("parentUuid")
        while isinstance(parent, str) and parent not in seen:
            seen.add(parent)
            above = self.by_uuid.get(parent)
            if above is None or _is_boundary(above):
                return None
            if _is_message(above):
                return parent
            parent = above.get("parentUuid")
        return None

    def first_value(self, key: str, group: str | None) -> Any:
        """The first truthy ``key`` of a row of ``group`` (version, cwd, ...)."""
        return next((r.get(key) for r in self.rows if r.get(key) and _group(r) == group), None)


# -- one conversation, row by row ------------------------------------------------------


@dataclass
class _Link:
    """Where a message hangs: its parent node, and what a compaction or a sub-agent's start adds to it."""

    parent: str | None
    attrs: dict[str, Any] = field(default_factory=dict)  # node attributes: kind, replaces
    meta: dict[str, Any] = field(default_factory=dict)  # metadata: compact, logical_parent, boundary, spawned_from


def _summary(boundary: Mapping[str, Any], replaced: tuple[str, Any]) -> _Link:
    """A compaction's summary root: it replaces the message before the boundary."""
    kind, found = replaced
    compact = table(boundary, "compactMetadata")
    return _Link(None, {"kind": "summary", "replaces": found if kind == "node" else None},
                 {"compact": dict(compact), "logical_parent": boundary.get("logicalParentUuid"), "boundary": boundary.get("uuid")})


class _Builder:
    """The records of one group (the session, or one sub-agent), built row by row."""

    def __init__(self, index: RowIndex, group: str | None) -> None:
        self.index = index
        self.group = group
        self.id = index.session if group is None else f"{index.session}/agent-{group}"
        self.problems = Problems(index.source, self.id)
        if group is None:
            self.problems.items.extend(index.problems.items)
        self.records: list[ImportedMessage] = []
        self.rec_of: dict[str, ImportedMessage] = {}
        self.tail: dict[str, str] = {}  # reply node -> the last tool result chained under it
        self.reply_of_tool: dict[str, str] = {}
        self.head: str | None = None
        self.first = True  # no message placed yet
        self.models: list[str] = []

    def conversation(self) -> Conversation:
        node_of, group_of = self.index.node_of, self.index.group_of
        rows = 0
        under: Counter[str] = Counter()  # per message row, the message rows under it (what a count of raw rows forks at)
        for r in self.index.rows:
            u = r.get("uuid")
            if not isinstance(u, str) or u not in node_of or group_of[node_of[u]] != self.group:
                continue
            if _is_boundary(r):
                self.boundary(r, u)
                continue
            rows += 1
            above = self.index.message_row_above(r)
            if above is not None:
                under[above] += 1
            if r["type"] == "assistant":
                self.assistant(r, u)
            else:
                self.user(r, u)
        meta: dict[str, Any] = {"session_id": self.index.session, "models": self.models, LOG_ROWS: rows,
                                LOG_FORKS: sum(1 for n in under.values() if n > 1)}
        for key in ("version", "cwd", "gitBranch", "slug"):
            value = self.index.first_value(key, self.group)
            if value is not None:
                meta[key] = value
        if self.group is not None:
            meta["agent_id"] = self.group
        return conversation(self.records, self.problems, id=self.id, title=self.index.title if self.group is None else None,
                            format=NAME, source=self.index.source, head=self.head, metadata=meta)

    def add(self, nid: str, link: _Link, node: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in {**meta, **link.meta}.items() if v is not None}
        rec = ImportedMessage(nid, link.parent, {**node, **link.attrs, "metadata": metadata})
        self.records.append(rec)
        self.rec_of[nid] = rec
        return rec.node

    def link(self, r: Mapping[str, Any], nid: str) -> _Link:
        """Where a message row's node hangs (the first message of a sub-agent hangs from outside it)."""
        kind, found = self.index.resolve(r.get("parentUuid"), self.group)
        is_first, self.first = self.first, False
        if kind == "node":
            return _Link(found)
        if kind == "boundary":
            if r.get("isCompactSummary") and found.get("uuid") in self.index.summarised:
                return _summary(found, self.index.resolve(found.get("logicalParentUuid"), self.group))
            # a second row under a boundary whose summary is another row: under that summary
            return _Link(self.index.summary_under.get(found.get("uuid")))
        if kind == "outside" or (kind == "dangling" and self.group is not None and is_first):
            if self.group is not None and str(self.group).startswith(COMPACTION_AGENT):
                # the compaction's fork reads its parent session's whole history, which this file does not hold
                return _Link(None, meta={"spawned_from": found, LOST_PARENT: found})
            return _Link(None, meta={"spawned_from": found})
        if kind == "dangling":
            self.problems.add(nid, f"parentUuid {found!r} is not in the file; kept as a top-level message")
        elif kind == "loop":
            self.problems.add(nid, f"parentUuid chain loops at {found!r}; kept as a top-level message")
        return _Link(None, meta={LOST_PARENT: found} if kind in ("dangling", "loop") else {})

    # -- the handlers, one per kind of row ---------------------------------------------

    def boundary(self, r: Mapping[str, Any], u: str) -> None:
        """A compaction boundary with no summary row: it is the summary root."""
        link = _summary(r, self.index.resolve(r.get("logicalParentUuid"), self.group))
        self.first = False
        self.add(u, link, {"role": "user", "content": str(r.get("content") or "Conversation compacted"),
                           "time": to_time(r.get("timestamp"))}, {})
        self.head = u

    def assistant(self, r: Mapping[str, Any], u: str) -> None:
        """A row of a reply: the reply's node, or one more row of it (same ``message.id``)."""
        nid = self.index.node_of[u]
        msg = r["message"]
        blocks = _blocks(msg.get("content"))
        self.head = nid
        if nid in self.rec_of:
            node = self.rec_of[nid].node
            node["content"].extend(blocks)
            node["metadata"]["rows"].append(u)
            if usage_of(msg.get("usage")) is not None and NO_CALL not in node["metadata"]:
                node["usage"] = usage_of(msg.get("usage"))
            if msg.get("stop_reason"):
                node["metadata"]["stop_reason"] = msg["stop_reason"]
            node["tool_calls"] = _tool_calls(node["content"])
            return
        link = self.link(r, nid)
        synthetic = msg.get("model") == SYNTHETIC or r.get("isApiErrorMessage") is True
        if msg.get("model") and msg["model"] not in self.models and not synthetic:
            self.models.append(msg["model"])
        self.add(nid, link, {"role": "assistant", "content": blocks, "time": to_time(r.get("timestamp")),
                             "usage": None if synthetic else usage_of(msg.get("usage")), "tool_calls": _tool_calls(blocks)},
                 {"message_id": msg.get("id"), "model": msg.get("model"), "stop_reason": msg.get("stop_reason"),
                  "request_id": r.get("requestId"), "rows": [u],
                  NO_CALL: ("an API error Claude Code wrote" if r.get("isApiErrorMessage") else "Claude Code's own notice")
                  if synthetic else None})

    def user(self, r: Mapping[str, Any], u: str) -> None:
        """A user row: what the person (or Claude Code) wrote, and/or tool results."""
        content = r["message"].get("content")
        link = self.link(r, u)
        meta = {flag: True for flag in _USER_FLAGS if r.get(flag)}
        time = to_time(r.get("timestamp"))
        results = [b for b in content if _is_result(b)] if isinstance(content, list) else []
        if not results:
            self.add(u, link, {"role": "user", "content": _text(content), "time": time}, meta)
            self.head = u
            return
        parent = self.results(u, link, results, time)
        rest = [b for b in content if not _is_result(b)]
        if rest:
            self.add(f"{u}#text", _Link(parent), {"role": "user", "content": rest, "time": time}, meta)
        self.head = self.index.node_of[u]

    def results(self, u: str, link: _Link, results: list[Mapping[str, Any]], time: float | None) -> str | None:
        """A row's tool results as tool messages, one after the other under the reply that called
        them (after the results already there from its other rows); the last one's id."""
        parent = link.parent
        called = parent is not None and parent in self.rec_of and self.rec_of[parent].node["role"] == "assistant"
        reply = parent if called else self.reply_of_tool.get(parent or "")
        if reply is not None:
            parent = self.tail.get(reply, parent)
        for k, b in enumerate(results):
            tid = u if k == 0 else f"{u}#{k + 1}"
            placed = _Link(parent, link.attrs, link.meta) if k == 0 else _Link(parent)
            self.add(tid, placed, {"role": "tool", "content": _text(b.get("content")), "tool_call_id": b.get("tool_use_id"),
                                   "time": time}, {"is_error": True} if b.get("is_error") else {})
            if reply is not None:
                self.tail[reply] = tid
                self.reply_of_tool[tid] = reply
            parent = tid
        return parent
