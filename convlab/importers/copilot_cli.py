"""GitHub Copilot CLI sessions: ``~/.copilot/session-state/<session>/events.jsonl`` and the older
``~/.copilot/history-session-state/session_<id>.json`` timeline.

The CLI is closed source; its session events are the public schema of
github/copilot-sdk (``nodejs/src/generated/session-events.ts``). One event per
line, ``{"type", "data", "id", "timestamp", "parentId"}``: ``parentId`` is the
event before (a chain of events, not of messages), so the conversation is the
file's order, one branch per agent.

- ``system.message`` is the system prompt (read once: the CLI writes it again
  before every prompt; a different one is read where it changes).
- ``user.message``: what the model read, ``transformedContent`` (the typed
  text with the CLI's wrapping), else ``content``; the typed text is
  ``metadata.display``. One the person did not type (autopilot's nudge, with
  no ``content``, or ``isAutopilotContinuation``) has ``metadata.injected``.
- ``assistant.message`` is a reply: ``reasoningText`` as a ``thinking`` part,
  ``content``, ``toolRequests`` as ``tool_use`` parts (and ``tool_calls``);
  its ``outputTokens`` is the usage the file records per call (the input is
  only in the ``assistant.usage`` events the CLI does not write to disk; one
  that is there is the usage of the reply before it). The model is the
  session's (``session.model_change``). ``tool.execution_complete`` is a
  ``tool`` message (``result.content``, what the model reads), paired by
  ``toolCallId``.
- ``session.compaction_complete`` (successful) is the log's own compaction: a
  ``kind: "summary"`` root (``summaryContent``) replacing the message before
  it, then copies of the newest ``preCompactionMessagesLength -
  messagesRemoved`` messages it kept; its ``session.compaction_start``
  (trigger, tokens) is in ``metadata.compaction``. No public sample holds one:
  which messages the CLI keeps is read from those two counts.
- Events of a sub-agent (``agentId``) are a conversation of their own,
  ``<session>/agent-<agentId>``.
- The session's totals (``session.shutdown``'s ``modelMetrics``,
  ``currentTokens``) are the conversation's ``metadata``.

The older timeline (``{sessionId, startTime, chatMessages, timeline}``):
``user`` and ``copilot`` items are messages, a ``tool_call_completed`` item
is a call of the reply before it and its result; ``info`` items are the CLI's
notes, not read. It records no tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..conversation import Conversation
from ..tree import usage_problem
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, as_text, conversation, kept_copy, summary_root, to_time

NAME = "copilot_cli"
_PREFIXES = ("session.", "user.", "assistant.", "tool.", "system.", "subagent.", "hook.", "skill.", "permission.")


def _event(x: object) -> bool:
    return (isinstance(x, MAPPING) and isinstance(x.get("type"), str) and x["type"].startswith(_PREFIXES)
            and isinstance(x.get("data"), MAPPING) and "id" in x)


def _timeline(x: object) -> bool:
    return isinstance(x, MAPPING) and "sessionId" in x and isinstance(x.get("timeline"), list) and "chatMessages" in x


def detect(doc: Document) -> bool:
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    if not rows:
        return False
    if doc.kind == "object":
        return _timeline(rows[0])
    return doc.kind == "lines" and all(_event(r) for r in rows) and any(r["type"] == "session.start" for r in rows[:3])


def parse(doc: Document) -> list[Conversation]:
    rows = list(doc.items)
    if doc.kind == "object":
        return [_read_timeline(rows[0], doc.source)]
    events = [r for r in rows if _event(r)]
    start: Mapping[str, Any] = next((e["data"] for e in events if e["type"] == "session.start"), {})
    session = str(start.get("sessionId") or PurePath(doc.source.split("!")[-1]).parent.name or "copilot")
    groups: dict[str | None, list[Mapping[str, Any]]] = {}
    for e in events:
        agent = e.get("agentId")
        groups.setdefault(str(agent) if isinstance(agent, (str, int)) and agent != "" else None, []).append(e)
    out = []
    for agent, group in groups.items():
        cid = session if agent is None else f"{session}/agent-{agent}"
        out.append(_Events(doc.source, cid, start).conversation(group, agent))
    return out


def _count(v: object) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 2**63 else None


def _tool_result(result: object) -> str:
    if isinstance(result, MAPPING):
        content = result.get("content")
        return as_text(content)
    return as_text(result)


class _Events:
    """The records of one agent's events, in the file's order."""

    def __init__(self, source: str, cid: str, start: Mapping[str, Any]) -> None:
        self.source, self.id, self.start = source, cid, start
        self.problems = Problems(source, cid)
        self.records: list[ImportedMessage] = []
        self.last: str | None = None
        self.model: str | None = None
        self.models: list[str] = []
        self.system: object = None
        self.compacting: Mapping[str, Any] = {}
        self.meta: dict[str, Any] = {k: start[k] for k in ("sessionId", "copilotVersion", "producer", "startTime", "context")
                                     if start.get(k) is not None}

    def add(self, rec: ImportedMessage) -> ImportedMessage:
        self.records.append(rec)
        self.last = rec.id
        return rec

    def conversation(self, events: list[Mapping[str, Any]], agent: str | None) -> Conversation:
        for e in events:
            kind, data, eid, time = e["type"], e["data"], str(e["id"]), to_time(e.get("timestamp"))
            if kind == "session.model_change" and isinstance(data.get("newModel"), str):
                self.model = data["newModel"]
            elif kind == "system.message" and data.get("content") != self.system:
                self.system = data.get("content")
                self.add(ImportedMessage(eid, self.last, {"role": "system", "content": str(self.system or ""), "time": time}))
            elif kind == "user.message":
                self.user(eid, data, time)
            elif kind == "assistant.message":
                self.reply(eid, data, time)
            elif kind == "assistant.usage":
                self.usage(data)
            elif kind == "tool.execution_complete":
                meta: dict[str, Any] = {} if data.get("success") is not False else {"is_error": True}
                self.add(ImportedMessage(eid, self.last, {"role": "tool", "content": _tool_result(data.get("result")),
                                                          "tool_call_id": str(data.get("toolCallId") or ""), "time": time, "metadata": meta}))
            elif kind == "session.compaction_start":
                self.compacting = data
            elif kind == "session.compaction_complete" and data.get("success") is not False:
                self.compaction(eid, data, time)
            elif kind == "session.shutdown":
                self.meta.update({k: data[k] for k in ("modelMetrics", "currentTokens", "totalPremiumRequests") if k in data})
        self.meta["models"] = self.models
        if agent is not None:
            self.meta["agent_id"] = agent
        return conversation(self.records, self.problems, id=self.id, title=None, format=NAME, source=self.source,
                            head=self.last, metadata=self.meta)

    def user(self, eid: str, data: Mapping[str, Any], time: float | None) -> None:
        typed = str(data["content"]) if isinstance(data.get("content"), str) else ""
        sent = str(data["transformedContent"]) if isinstance(data.get("transformedContent"), str) else typed
        meta: dict[str, Any] = {"display": typed} if sent != typed else {}
        if not typed.strip() or data.get("isAutopilotContinuation") is True:
            meta["injected"] = True
        self.add(ImportedMessage(eid, self.last, {"role": "user", "content": sent, "time": time, "metadata": meta}))

    def reply(self, eid: str, data: Mapping[str, Any], time: float | None) -> None:
        parts: list[Any] = []
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
            parts.append({"type": "thinking", "thinking": data["reasoningText"]})
        if isinstance(data.get("content"), str) and data["content"]:
            parts.append({"type": "text", "text": data["content"]})
        calls = []
        for r in data.get("toolRequests") or []:
            if isinstance(r, MAPPING):
                cid, name = str(r.get("toolCallId") or ""), str(r.get("name") or "")
                parts.append({"type": "tool_use", "id": cid, "name": name, "input": r.get("arguments")})
                calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": r.get("arguments")}})
        model = data.get("model") if isinstance(data.get("model"), str) else self.model
        if model and model not in self.models:
            self.models.append(model)
        out = data.get("outputTokens")  # as written: records.build leaves out a count no provider reports, and says it
        meta = {k: v for k, v in {"model": model, "message_id": data.get("messageId"), "request_id": data.get("requestId")}.items()
                if v is not None}
        node: dict[str, Any] = {"role": "assistant", "content": parts, "time": time, "metadata": meta,
                                "usage": {"output_tokens": out} if out is not None else None}
        if calls:
            node["tool_calls"] = calls
        self.add(ImportedMessage(eid, self.last, node))

    def usage(self, data: Mapping[str, Any]) -> None:
        """An ``assistant.usage`` event (the CLI keeps them off disk; a log that has one): the usage of the reply before it."""
        reply = next((r for r in reversed(self.records) if r.node["role"] == "assistant"), None)
        if reply is None:
            return
        usage = dict(reply.node.get("usage") or {})
        for ours, theirs in (("input_tokens", "inputTokens"), ("cache_read_input_tokens", "cacheReadTokens"),
                             ("cache_creation_input_tokens", "cacheWriteTokens"), ("output_tokens", "outputTokens")):
            if data.get(theirs) is not None:
                usage[ours] = data[theirs]  # as written: records.build leaves out a count no provider reports
        if "input_tokens" in usage and usage_problem(usage) is None:  # Copilot's inputTokens counts the cached input: keep only the rest apart
            usage["input_tokens"] = max(0, usage["input_tokens"] - usage.get("cache_read_input_tokens", 0)
                                        - usage.get("cache_creation_input_tokens", 0))
        reply.node["usage"] = usage

    def compaction(self, eid: str, data: Mapping[str, Any], time: float | None) -> None:
        """A compaction: the summary, then copies of the newest messages it kept (the count the event gives)."""
        by_id = {r.id: r for r in self.records}
        path: list[ImportedMessage] = []  # the messages since the last compaction, the system prompt left out
        at = self.last
        while at is not None and by_id[at].node.get("kind") != "summary":
            if by_id[at].node["role"] != "system":
                path.append(by_id[at])
            at = by_id[at].parent
        path.reverse()
        before, removed = _count(data.get("preCompactionMessagesLength")), _count(data.get("messagesRemoved"))
        keep = max(0, before - removed) if before is not None and removed is not None else 0
        meta = {"compaction": {**self.compacting, **{k: v for k, v in data.items() if k != "summaryContent"}}}
        last = self.add(summary_root(eid, self.last, str(data.get("summaryContent") or ""), time, meta)).id
        for r in path[len(path) - keep:] if keep else []:
            origin = by_id.get(r.node["copied_from"], r) if r.node.get("copied_from") else r
            last = self.add(kept_copy(origin, f"{r.id}@{eid}", last, time)).id
        self.compacting = {}


# -- the older timeline ---------------------------------------------------------------


def _read_timeline(doc: Mapping[str, Any], source: str) -> Conversation:
    cid = str(doc.get("sessionId") or PurePath(source.split("!")[-1]).name.split(".")[0])
    problems = Problems(source, cid)
    records: list[ImportedMessage] = []
    last: str | None = None
    reply: dict[str, Any] | None = None
    results: list[ImportedMessage] = []

    def flush() -> None:
        nonlocal last
        for r in results:
            r.parent = last
            records.append(r)
            last = r.id
        results.clear()

    for k, item in enumerate(x for x in doc["timeline"] if isinstance(x, MAPPING)):
        kind, time = item.get("type"), to_time(item.get("timestamp"))
        iid = str(item.get("id") or f"t{k}")
        if kind in ("user", "copilot"):
            flush()
            text = str(item.get("text") or "")
            if kind == "user":
                reply = None
                records.append(ImportedMessage(iid, last, {"role": "user", "content": text, "time": time}))
            else:
                reply = {"role": "assistant", "content": [{"type": "text", "text": text}] if text else [], "time": time}
                records.append(ImportedMessage(iid, last, reply))
            last = iid
        elif kind == "tool_call_completed":
            if reply is None:  # calls with no text before them: a reply of calls alone
                reply = {"role": "assistant", "content": [], "time": time}
                records.append(ImportedMessage(f"{iid}#call", last, reply))
                last = f"{iid}#call"
            cid_, name = str(item.get("callId") or iid), str(item.get("name") or "")
            reply["content"].append({"type": "tool_use", "id": cid_, "name": name, "input": item.get("arguments")})
            reply.setdefault("tool_calls", []).append({"id": cid_, "type": "function",
                                                       "function": {"name": name, "arguments": item.get("arguments")}})
            result = item.get("result")
            log = result.get("log") if isinstance(result, MAPPING) else result
            error = {"is_error": True} if isinstance(result, MAPPING) and result.get("type") not in (None, "success") else {}
            results.append(ImportedMessage(iid, None, {"role": "tool", "content": as_text(log),
                                                       "tool_call_id": cid_, "time": time, "metadata": error}))
    flush()
    meta = {k: doc[k] for k in ("sessionId", "startTime") if doc.get(k) is not None}
    meta["chat_messages"] = len(doc["chatMessages"]) if isinstance(doc.get("chatMessages"), list) else 0
    return conversation(records, problems, id=cid, title=None, format=NAME, source=source, head=last, metadata=meta)
