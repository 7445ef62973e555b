"""Anthropic Managed Agents session event streams (``GET /v1/sessions/{id}/events``, saved as JSON lines, a
JSON list, or a page ``{"data": [...]}``).

The events are defined by the API (anthropics/anthropic-sdk-typescript,
``src/resources/beta/sessions/events.ts``): ``{id, type, processed_at, ...}``,
``type`` one of ``user.*``, ``agent.*``, ``session.*``, ``span.*``, ``system.*``.

- ``user.message`` and ``user.define_outcome`` (its ``description``, the task)
  are prompts; ``system.message`` a system message.
- A model request is ``span.model_request_start`` ... ``span.model_request_end``:
  what the agent wrote between them (``agent.message`` text,
  ``agent.tool_use``, ``agent.mcp_tool_use``, ``agent.custom_tool_use``) is
  ONE reply, its usage ``model_usage`` (Anthropic's own fields:
  ``input_tokens`` uncached beside ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens``). A stream without spans: each run of agent
  output between inputs is a reply, without usage.
- ``agent.tool_result``, ``agent.mcp_tool_result``, ``user.tool_result`` and
  ``user.custom_tool_result`` are ``tool`` messages, paired by the id of the
  event that called the tool.
- ``agent.thread_context_compacted`` is the log's own compaction: the stream
  says it happened, not what it kept or the summary's text, so it is a
  ``kind: "summary"`` root with no text replacing the message before it.
- Events a sub-agent's thread cross-posts (``session_thread_id``) are that
  thread's conversation, ``<session>/thread-<id>``; status, error and outcome
  events are not messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, summary_root, to_time, usage_of

NAME = "managed_agents"
_DOMAINS = ("user.", "agent.", "session.", "span.", "system.")
_CALLS = {"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"}
#: result event -> the key naming the event that called the tool
_RESULTS = {"agent.tool_result": "tool_use_id", "agent.mcp_tool_result": "mcp_tool_use_id", "user.tool_result": "tool_use_id",
            "user.custom_tool_result": "custom_tool_use_id"}


def _event(x: object) -> bool:
    return (isinstance(x, MAPPING) and isinstance(x.get("type"), str) and x["type"].startswith(_DOMAINS)
            and "processed_at" in x and "data" not in x)


def _events(doc: Document) -> list[Any] | None:
    """The document's events (None: not a stream of them)."""
    first = doc.first
    if doc.kind == "object" and isinstance(first, MAPPING) and isinstance(first.get("data"), list):
        return first["data"] if first["data"][:1] and all(_event(e) for e in first["data"][:5]) else None
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    return [] if doc.kind in ("lines", "array") and rows and all(_event(r) for r in rows) else None


def detect(doc: Document) -> bool:
    return _events(doc) is not None


def parse(doc: Document) -> list[Conversation]:
    events = [e for e in (_events(doc) or list(doc.items)) if _event(e)]
    stem = PurePath(doc.source.split("!")[-1]).name.split(".")[0]
    session = next((str(e["session_id"]) for e in events if isinstance(e.get("session_id"), str)), stem)
    threads: dict[str | None, list[Mapping[str, Any]]] = {}
    for e in events:
        thread = e.get("session_thread_id")
        threads.setdefault(thread if isinstance(thread, str) and thread else None, []).append(e)
    return [_Stream(doc.source, session if t is None else f"{session}/thread-{t}").conversation(group)
            for t, group in threads.items()]


def _blocks(content: object) -> str | list[Any]:
    if not isinstance(content, list):
        return "" if content is None else str(content)
    if all(isinstance(b, MAPPING) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in content):
        return "".join(b["text"] for b in content)
    return [b for b in content if b is not None]


class _Stream:
    """The records of one thread's events, in order: a reply per model request."""

    def __init__(self, source: str, cid: str) -> None:
        self.source, self.id = source, cid
        self.problems = Problems(source, cid)
        self.records: list[ImportedMessage] = []
        self.last: str | None = None
        self.reply: dict[str, Any] | None = None
        self.spanned = False  # inside span.model_request_start ... _end

    def add(self, nid: str, node: dict[str, Any]) -> dict[str, Any]:
        self.records.append(ImportedMessage(nid, self.last, node))
        self.last = nid
        return node

    def conversation(self, events: list[Mapping[str, Any]]) -> Conversation:
        for e in events:
            kind, eid, time = e["type"], str(e.get("id") or f"e{len(self.records)}"), to_time(e.get("processed_at"))
            if kind == "span.model_request_start":
                self.reply, self.spanned = None, True
            elif kind == "span.model_request_end":
                if self.reply is None:  # a request that wrote nothing the stream shows
                    self.reply = self.add(eid, {"role": "assistant", "content": [], "time": time})
                self.reply["usage"] = usage_of(e.get("model_usage"))
                if e.get("is_error"):
                    self.reply.setdefault("metadata", {})["is_error"] = True
                self.reply, self.spanned = None, False
            elif kind == "agent.message" or kind in _CALLS:
                self.output(eid, e, time)
            elif kind in _RESULTS:
                if not self.spanned:
                    self.reply = None
                content = _blocks(e.get("content"))
                self.add(eid, {"role": "tool", "content": content, "tool_call_id": str(e.get(_RESULTS[kind]) or ""), "time": time,
                               "metadata": {"is_error": True} if e.get("is_error") else {}})
            elif kind in ("user.message", "user.define_outcome", "system.message"):
                self.reply = None
                text = _blocks(e.get("content")) if kind != "user.define_outcome" else str(e.get("description") or "")
                self.add(eid, {"role": "system" if kind == "system.message" else "user", "content": text, "time": time,
                               "metadata": {"outcome": e.get("outcome_id")} if kind == "user.define_outcome" else {}})
            elif kind == "agent.thread_context_compacted":
                self.reply = None
                self.records.append(summary_root(eid, self.last, "", time, {"compacted": eid}))
                self.last = eid
        return conversation(self.records, self.problems, id=self.id, title=None, format=NAME, source=self.source,
                            head=self.last, metadata={"session_id": self.id.split("/")[0]})

    def output(self, eid: str, e: Mapping[str, Any], time: float | None) -> None:
        """What the agent wrote: a part of the reply of the model request under way."""
        if self.reply is None:
            self.reply = self.add(eid, {"role": "assistant", "content": [], "time": time})
        if e["type"] == "agent.message":
            content = _blocks(e.get("content"))
            self.reply["content"].extend([{"type": "text", "text": content}] if isinstance(content, str) and content else
                                         content if isinstance(content, list) else [])
            return
        name = str(e.get("name") or "")
        self.reply["content"].append({"type": "tool_use", "id": eid, "name": name, "input": e.get("input")})
        self.reply.setdefault("tool_calls", []).append({"id": eid, "type": "function",
                                                        "function": {"name": name, "arguments": e.get("input")}})
