"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.json`` and ``.jsonl``) and
``gemini --output-format stream-json`` output.

A recording is a ``ConversationRecord`` (google-gemini/gemini-cli,
``packages/core/src/services/chatRecordingTypes.ts``): ``{sessionId,
projectHash, startTime, lastUpdated, messages, summary?, kind}``, written
whole as one JSON object (the older layout) or appended as JSON lines (the
metadata first, then message records, ``{"$set": {...}}`` patches and
``{"$rewindTo": <id>}``). As the CLI loads the lines
(``chatRecordingService.ts``): a later line with the same message ``id``
replaces the earlier one where it stood, ``$rewindTo`` drops that message and
every one after it, and a ``$set`` holding ``messages`` starts them again.

- ``user`` messages are prompts (``content``: what the model read; the
  ``displayContent`` a person saw is ``metadata.display``); the CLI's own
  ``System: Please continue.`` is read with ``metadata.injected``. ``info``,
  ``error`` and ``warning`` messages are the CLI's notes to the person, never
  sent to the model: not read.
- A ``gemini`` message is one model call's reply: its ``thoughts`` as
  ``thinking`` parts, its text, its ``toolCalls`` as ``tool_use`` parts (and
  ``tool_calls``); each call's ``result`` (``functionResponse`` parts) is a
  ``tool`` message after it, paired by the call's id. ``model`` is
  ``metadata.model``.
- Usage: ``tokens`` per call. ``input`` (``promptTokenCount``) includes
  ``cached``: read as ``input_tokens`` less ``cache_read_input_tokens``, so
  the usage's input is all the call read. ``output_tokens`` is ``output`` and
  ``thoughts`` together (Gemini bills the thinking as output);
  ``thoughts_tokens`` keeps the thinking apart.
- The CLI records no compression in the file (its result is a UI event):
  nothing here replaces history.

A checkpoint (``/chat save <tag>``, ``~/.gemini/tmp/<project>/checkpoint-<tag>.json``,
``packages/core/src/core/logger.ts``) is the model's history itself,
``{"history": [Content]}`` (older: the list alone): ``model`` turns are replies
(``thought`` parts as thinking, ``functionCall`` as tool calls), a user turn's
``functionResponse`` parts are ``tool`` messages (paired by the call's id, else
its name); it records no usage and no times. Ids are ``h<index>``.

stream-json (``packages/core/src/output/types.ts``): events ``init``
(``session_id``, ``model``), ``message`` (``role``, ``content``, ``delta``),
``tool_use``, ``tool_result``, ``error``, ``result`` (the run's ``stats``).
Each ``init`` starts a conversation. The ``delta`` rows of one reply are ONE
message (their text joined), with the ``tool_use`` rows that follow them as
its calls, until a tool's result or the next prompt; ``tool_result`` is a
``tool`` message. The run's token totals (``result.stats``) are the
conversation's ``metadata["stats"]``: stream-json reports no usage per call.
Ids are ``L<line>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, as_text, conversation, logged_counts, to_time

NAME = "gemini_cli"
_TYPES = {"user", "gemini", "info", "error", "warning"}
_EVENTS = {"init", "message", "tool_use", "tool_result", "error", "result"}
#: what the CLI sends when the model stopped but should go on (``nextSpeakerChecker``): not a person's prompt
CONTINUE = "System: Please continue."


def _message(x: object) -> bool:
    return isinstance(x, MAPPING) and isinstance(x.get("type"), str) and x["type"] in _TYPES and isinstance(x.get("id"), str)


def _header(x: object) -> bool:
    return isinstance(x, MAPPING) and "sessionId" in x and ("projectHash" in x or "startTime" in x)


def _event(x: object) -> bool:
    return isinstance(x, MAPPING) and isinstance(x.get("type"), str) and x["type"] in _EVENTS and "timestamp" in x


def _content(x: object) -> bool:
    """A Gemini ``Content``: a checkpoint's turn."""
    return isinstance(x, MAPPING) and x.get("role") in ("user", "model") and isinstance(x.get("parts"), list) and "content" not in x


def _checkpoint(doc: Document) -> list[Any] | None:
    """A checkpoint's history (None: the document is not one)."""
    first = doc.first
    if doc.kind == "object" and isinstance(first, MAPPING) and isinstance(first.get("history"), list) and \
            all(_content(c) for c in first["history"][:5]):
        return first["history"]
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    if doc.kind == "array" and rows and all(_content(r) for r in rows) and any(r["role"] == "model" for r in rows):
        return []  # the items are the history (read as they come)
    return None


def detect(doc: Document) -> bool:
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    if not rows:
        return False
    if _checkpoint(doc) is not None:
        return True
    if doc.kind == "object":
        messages = rows[0].get("messages")
        return _header(rows[0]) and isinstance(messages, list) and all(_message(m) for m in messages[:5])
    if doc.kind != "lines":
        return False
    if _header(rows[0]):
        return all(_message(r) or "$set" in r or "$rewindTo" in r for r in rows[1:])
    return all(_event(r) for r in rows) and any(r["type"] in ("init", "tool_use", "tool_result", "result") for r in rows)


def parse(doc: Document) -> list[Conversation]:
    history = _checkpoint(doc)
    if history is not None:
        return [_read_checkpoint(history or list(doc.items), doc.source)]
    rows = list(doc.items)
    if doc.kind == "lines" and not _header(next((r for r in rows if isinstance(r, MAPPING)), None)):
        return _stream(rows, doc.source)
    header, messages = _recording(rows)
    return [_Recording(doc.source, header).conversation(messages)]


def _recording(rows: list[Any]) -> tuple[dict[str, Any], list[Mapping[str, Any]]]:
    """The metadata and the messages of a recording, as the CLI loads them (the last line of an id wins where
    the first stood; ``$rewindTo`` drops from that message on; ``$set`` patches, its ``messages`` start again)."""
    header: dict[str, Any] = {}
    messages: dict[str, Mapping[str, Any]] = {}
    for r in rows:
        if not isinstance(r, MAPPING):
            continue
        if isinstance(r.get("$rewindTo"), str):
            ids = list(messages)
            cut = ids.index(r["$rewindTo"]) if r["$rewindTo"] in messages else 0
            for mid in ids[cut:]:
                del messages[mid]
        elif _message(r):
            messages[r["id"]] = r
        elif isinstance(r.get("$set"), MAPPING):
            patch = r["$set"]
            if isinstance(patch.get("messages"), list):
                messages = {m["id"]: m for m in patch["messages"] if _message(m)}
            header.update({k: v for k, v in patch.items() if k != "messages"})
        elif _header(r):
            header.update({k: v for k, v in r.items() if k != "messages"})
            if isinstance(r.get("messages"), list):
                messages.update({m["id"]: m for m in r["messages"] if _message(m)})
    return header, list(messages.values())


def _parts(content: object) -> str | list[Any]:
    """Gemini parts (``[{"text": ...}, {"inlineData": ...}]``) as the protocol's content: one string when all are text."""
    if isinstance(content, str):
        return content
    if isinstance(content, MAPPING):
        content = [content]
    if not isinstance(content, list):
        return ""
    out = [{"type": "text", "text": p["text"]} if isinstance(p, MAPPING) and isinstance(p.get("text"), str) else
           {"type": "text", "text": p} if isinstance(p, str) else p for p in content if p is not None]
    if all(isinstance(p, MAPPING) and p.get("type") == "text" for p in out):
        return "".join(p["text"] for p in out)
    return out


def _text(content: object) -> str:
    found = _parts(content)
    return found if isinstance(found, str) else ""


def _usage(tokens: object) -> dict[str, Any] | None:
    """A message's ``tokens`` as a node's usage: the uncached input apart from the cached, the thoughts in the
    output; counts no provider reports kept as they are, for ``records.build`` to leave out and say."""
    if not isinstance(tokens, MAPPING) or "input" not in tokens:
        return None
    usage, sound = logged_counts(tokens, {"input_tokens": "input", "cache_read_input_tokens": "cached", "output_tokens": "output",
                                          "thoughts_tokens": "thoughts", **({"tool_tokens": "tool"} if "tool" in tokens else {})})
    if sound:
        cached = min(usage["cache_read_input_tokens"], usage["input_tokens"])
        usage.update(input_tokens=usage["input_tokens"] - cached, cache_read_input_tokens=cached,
                     output_tokens=usage["output_tokens"] + usage["thoughts_tokens"])
    return usage


def _result(result: object) -> tuple[str | list[Any], bool]:
    """A tool call's ``result`` parts as the tool message's content (the ``functionResponse`` output, or error)."""
    parts = result if isinstance(result, list) else [result] if result is not None else []
    texts: list[Any] = []
    error = False
    for p in parts:
        response = p.get("functionResponse", {}).get("response") if isinstance(p, MAPPING) and isinstance(p.get("functionResponse"), MAPPING) else None
        if isinstance(response, MAPPING):
            if isinstance(response.get("output"), str):
                texts.append(response["output"])
            elif isinstance(response.get("error"), str):
                texts.append(response["error"])
                error = True
            else:
                texts.append(as_text(response))
        elif isinstance(p, MAPPING) and isinstance(p.get("text"), str):
            texts.append(p["text"])
        elif p is not None:
            texts.append(p)
    if all(isinstance(t, str) for t in texts):
        return "\n".join(texts), error
    return [{"type": "text", "text": t} if isinstance(t, str) else t for t in texts], error


class _Recording:
    """The records of one recording, message by message (one branch, in the order the CLI loads them)."""

    def __init__(self, source: str, header: Mapping[str, Any]) -> None:
        self.source = source
        self.header = header
        self.id = str(header.get("sessionId") or PurePath(source.split("!")[-1]).name.split(".")[0])
        self.problems = Problems(source, self.id)
        self.records: list[ImportedMessage] = []
        self.last: str | None = None
        self.models: list[str] = []

    def add(self, rec: ImportedMessage) -> None:
        self.records.append(rec)
        self.last = rec.id

    def conversation(self, messages: Iterable[Mapping[str, Any]]) -> Conversation:
        for m in messages:
            time = to_time(m.get("timestamp"))
            if m["type"] == "user":
                meta: dict[str, Any] = {"injected": True} if _text(m.get("content")).strip() == CONTINUE else {}
                if m.get("displayContent") is not None:
                    meta["display"] = _parts(m["displayContent"])
                self.add(ImportedMessage(m["id"], self.last, {"role": "user", "content": _parts(m.get("content")), "time": time,
                                                              "metadata": meta}))
            elif m["type"] == "gemini":
                self.reply(m, time)
        meta = {k: self.header[k] for k in ("projectHash", "startTime", "lastUpdated", "kind", "directories")
                if self.header.get(k) is not None}
        meta["session_id"] = self.id
        meta["models"] = self.models
        return conversation(self.records, self.problems, id=self.id, title=self.header.get("summary"), format=NAME,
                            source=self.source, head=self.last, metadata=meta)

    def reply(self, m: Mapping[str, Any], time: float | None) -> None:
        parts: list[Any] = []
        for t in m.get("thoughts") or []:
            if isinstance(t, MAPPING):
                parts.append({"type": "thinking", "thinking": "\n".join(str(t[k]) for k in ("subject", "description") if t.get(k))})
        text = _parts(m.get("content"))
        if isinstance(text, str):
            parts.extend([{"type": "text", "text": text}] if text else [])
        else:
            parts.extend(text)
        calls = [c for c in m.get("toolCalls") or [] if isinstance(c, MAPPING)]
        tool_calls = []
        for c in calls:
            cid, name = str(c.get("id") or ""), str(c.get("name") or "")
            parts.append({"type": "tool_use", "id": cid, "name": name, "input": c.get("args")})
            tool_calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": c.get("args")}})
        model = m.get("model")
        if isinstance(model, str) and model not in self.models:
            self.models.append(model)
        node: dict[str, Any] = {"role": "assistant", "content": parts, "time": time, "usage": _usage(m.get("tokens")),
                                "metadata": {"model": model} if isinstance(model, str) else {}}
        if tool_calls:
            node["tool_calls"] = tool_calls
        self.add(ImportedMessage(m["id"], self.last, node))
        for c in calls:
            if "result" not in c or c.get("result") is None:
                continue
            content, error = _result(c["result"])
            meta = {"status": c["status"]} if isinstance(c.get("status"), str) else {}
            if error or c.get("status") == "error":
                meta["is_error"] = True
            self.add(ImportedMessage(f"{m['id']}/{c.get('id')}", self.last, {
                "role": "tool", "content": content, "tool_call_id": str(c.get("id") or ""),
                "time": to_time(c.get("timestamp")) or time, "metadata": meta}))


# -- stream-json --------------------------------------------------------------------


def _stream(rows: list[Any], source: str) -> list[Conversation]:
    """One conversation per ``init`` (the events before the first belong to the first)."""
    runs: list[list[tuple[int, Mapping[str, Any]]]] = []
    for line, r in enumerate(rows, 1):
        if not _event(r):
            continue
        if r["type"] == "init" or not runs:
            runs.append([])
        runs[-1].append((line, r))
    stem = PurePath(source.split("!")[-1]).name.split(".")[0]
    out = []
    for k, run in enumerate(runs):
        init = next((r for _, r in run if r["type"] == "init"), {})
        cid = str(init.get("session_id") or stem) + (f"#{k + 1}" if len(runs) > 1 else "")
        out.append(_StreamJsonRun(source, cid, init).conversation(run))
    return out


class _StreamJsonRun:
    """The records of one stream-json run: a reply grows with its delta rows and calls until a result or a prompt."""

    def __init__(self, source: str, cid: str, init: Mapping[str, Any]) -> None:
        self.source, self.id = source, cid
        self.model = init.get("model") if isinstance(init.get("model"), str) else None
        self.problems = Problems(source, cid)
        self.records: list[ImportedMessage] = []
        self.last: str | None = None
        self.reply: dict[str, Any] | None = None
        self.meta: dict[str, Any] = {"session_id": init.get("session_id"), "models": [self.model] if self.model else []}

    def add(self, nid: str, node: dict[str, Any]) -> dict[str, Any]:
        self.records.append(ImportedMessage(nid, self.last, node))
        self.last = nid
        return node

    def conversation(self, run: list[tuple[int, Mapping[str, Any]]]) -> Conversation:
        for line, r in run:
            kind, time = r["type"], to_time(r.get("timestamp"))
            if kind == "message" and r.get("role") == "assistant":
                if self.reply is None:
                    self.reply = self.add(f"L{line}", {"role": "assistant", "content": [], "time": time,
                                                       "metadata": {"model": self.model} if self.model else {}})
                self.text(str(r.get("content") or ""))
            elif kind == "message":
                self.reply = None
                self.add(f"L{line}", {"role": "user", "content": str(r.get("content") or ""), "time": time})
            elif kind == "tool_use":
                self.call(line, r, time)
            elif kind == "tool_result":
                self.reply = None
                error = r.get("error")
                content = r.get("output") if isinstance(r.get("output"), str) else \
                    str(error.get("message")) if isinstance(error, MAPPING) else ""
                self.add(f"L{line}", {"role": "tool", "content": content, "tool_call_id": str(r.get("tool_id") or ""),
                                      "time": time, "metadata": {"is_error": True} if r.get("status") == "error" else {}})
            elif kind == "result" and isinstance(r.get("stats"), MAPPING):
                self.meta["stats"] = dict(r["stats"])
        return conversation(self.records, self.problems, id=self.id, title=None, format=NAME, source=self.source,
                            head=self.last, metadata={k: v for k, v in self.meta.items() if v is not None})

    def text(self, delta: str) -> None:
        assert self.reply is not None
        parts = self.reply["content"]
        if parts and parts[-1].get("type") == "text":
            parts[-1]["text"] += delta
        elif delta:
            parts.append({"type": "text", "text": delta})

    def call(self, line: int, r: Mapping[str, Any], time: float | None) -> None:
        if self.reply is None:
            self.reply = self.add(f"L{line}", {"role": "assistant", "content": [], "time": time,
                                               "metadata": {"model": self.model} if self.model else {}})
        cid, name = str(r.get("tool_id") or f"L{line}"), str(r.get("tool_name") or "")
        self.reply["content"].append({"type": "tool_use", "id": cid, "name": name, "input": r.get("parameters")})
        self.reply.setdefault("tool_calls", []).append(
            {"id": cid, "type": "function", "function": {"name": name, "arguments": r.get("parameters")}})


# -- a checkpoint ------------------------------------------------------------------------


def _read_checkpoint(history: list[Any], source: str) -> Conversation:
    """The model's own history: a reply per model turn, a user turn's function responses as tool messages."""
    name = PurePath(source.split("!")[-1]).name
    cid = name.removeprefix("checkpoint-").rsplit(".", 1)[0] or "checkpoint"
    problems = Problems(source, cid)
    records: list[ImportedMessage] = []
    last: str | None = None
    calls: dict[str, list[str]] = {}  # a call's name -> the ids of its calls not answered yet
    for i, turn in enumerate(history):
        if not _content(turn):
            problems.left_out(f"h{i}", "not a Gemini Content (role user or model, parts); left out")
            continue
        node: dict[str, Any] = {"role": "assistant" if turn["role"] == "model" else "user", "content": []}
        for k, p in enumerate(q for q in turn["parts"] if isinstance(q, MAPPING)):
            if isinstance(p.get("functionCall"), MAPPING):
                fc = p["functionCall"]
                fid, fname = str(fc.get("id") or f"h{i}.{k}"), str(fc.get("name") or "")
                calls.setdefault(fname, []).append(fid)
                node["content"].append({"type": "tool_use", "id": fid, "name": fname, "input": fc.get("args")})
                node.setdefault("tool_calls", []).append({"id": fid, "type": "function",
                                                          "function": {"name": fname, "arguments": fc.get("args")}})
            elif isinstance(p.get("functionResponse"), MAPPING):
                fr = p["functionResponse"]
                pending = calls.get(str(fr.get("name") or ""), [])
                fid = str(fr["id"]) if fr.get("id") else pending[0] if pending else f"h{i}.{k}"
                if fid in pending:
                    pending.remove(fid)
                content, error = _result([p])
                records.append(ImportedMessage(f"h{i}.{k}", last, {"role": "tool", "content": content, "tool_call_id": fid,
                                                                   "metadata": {"is_error": True} if error else {}}))
                last = f"h{i}.{k}"
            elif isinstance(p.get("text"), str):
                node["content"].append({"type": "thinking", "thinking": p["text"]} if p.get("thought") is True else
                                       {"type": "text", "text": p["text"]})
            else:
                node["content"].append(dict(p))
        if node["content"] or node["role"] == "assistant":
            if all(c.get("type") == "text" for c in node["content"]) and node["role"] == "user":
                node["content"] = "".join(c["text"] for c in node["content"])
            records.append(ImportedMessage(f"h{i}", last, node))
            last = f"h{i}"
    return conversation(records, problems, id=cid, title=None, format=NAME, source=source, head=last,
                        metadata={"checkpoint": cid})
