"""Cline and Roo Code task folders (VS Code's ``globalStorage/saoudrizwan.claude-dev/tasks/<task id>/``, the
Cline CLI's ``~/.cline/data/tasks/<task id>/``).

A task folder holds (cline/cline, ``apps/vscode/src/core/storage/disk.ts``, ``GlobalFileNames``):

- ``api_conversation_history.json``: what the model read, a list of Anthropic
  messages (``ClineStorageMessage``, ``apps/vscode/src/shared/messages/content.ts``):
  ``role``, ``content`` (a string or ``text``, ``image``, ``tool_use``,
  ``tool_result``, ``thinking`` blocks), and on newer builds ``ts``,
  ``modelInfo`` {modelId, providerId} and ``metrics`` {tokens: {prompt (cached
  included), completion, cached}, cost}.
- ``ui_messages.json``: what the person saw, ``ClineMessage`` rows
  (``apps/vscode/src/shared/ExtensionMessage.ts``): ``{ts, type: "say"|"ask",
  say|ask, text, ...}``. A ``say: "api_req_started"`` row whose ``text`` (a
  ``ClineApiReqInfo``) carries ``tokensIn`` is one model call's usage:
  ``tokensIn`` (uncached), ``cacheReads``, ``cacheWrites``, ``tokensOut``,
  ``cost``.

Read as one conversation (the task), from the api history: a user message; a
user message's ``tool_result`` blocks as ``tool`` messages paired by
``tool_use_id`` (its other blocks a user message after them); an assistant
message as a reply, its ``tool_use`` blocks also as ``tool_calls``. A reply's
usage is its ``metrics``, else the usage row of the same call in
``ui_messages.json`` beside it (the k-th usage row for the k-th reply; when
the two files do not hold as many, the usage is left out, and said). Older
Cline writes tools as XML in the text and results as ``[tool] Result:`` text:
read as the text the model read.

``ui_messages.json`` read alone (no history beside it) is read from what the
person saw: the ``task`` and ``user_feedback`` rows are prompts; each usage
row starts a reply with that usage, and the ``text``, ``reasoning`` and
``completion_result`` rows after it are its text (reasoning as thinking);
tool rows (``tool``, ``command``, ``use_mcp_server``, ...) are its calls and
``command_output`` rows their results. Reading a folder, a ``ui_messages.json``
beside its history is read with it, once (``companion``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from ..conversation import Conversation
from .documents import Document, NotJSON, parse_bytes
from .records import MAPPING, ImportedMessage, Problems, conversation, logged_counts, to_time

NAME = "cline"
HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"
_MARKS = ("<task>", "<environment_details>", "<feedback>", "<user_message>")
#: ui rows that are a call of the reply under way (``ask`` or ``say``)
_CALL_ROWS = ("tool", "command", "use_mcp_server", "browser_action_launch", "use_subagents")


def _ui_row(x: object) -> bool:
    return (isinstance(x, MAPPING) and isinstance(x.get("ts"), (int, float)) and not isinstance(x.get("ts"), bool)
            and x.get("type") in ("say", "ask"))


def _texts(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text")) for b in content if isinstance(b, MAPPING) and isinstance(b.get("text"), str))
    return ""


def _api_message(x: object) -> bool:
    return isinstance(x, MAPPING) and x.get("role") in ("user", "assistant") and "content" in x


def detect(doc: Document) -> bool:
    if doc.kind != "array":
        return False
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    if not rows:
        return False
    if all(_ui_row(r) for r in rows):
        return True
    if not all(_api_message(r) for r in rows):
        return False
    return any(k in r for r in rows for k in ("metrics", "modelInfo")) or any(m in _texts(rows[0].get("content")) for m in _MARKS)


def companion(path: Path) -> bool:
    """Whether ``path`` is read with another file of its folder (a ``ui_messages.json`` beside its history)."""
    return path.name == UI and (path.parent / HISTORY).is_file()


def parse(doc: Document) -> list[Conversation]:
    rows = list(doc.items)
    folder = _folder(doc.source)
    task = folder.name if folder is not None else PurePath(doc.source.split("!")[-1]).stem
    if all(_ui_row(r) for r in rows if isinstance(r, MAPPING)):
        history = _sibling(folder, HISTORY)
        if history is None:
            return [_from_ui(rows, doc.source, task)]
        return [_from_history(history, rows, doc.source, task)]
    return [_from_history(rows, _sibling(folder, UI) or [], doc.source, task)]


def _folder(source: str) -> Path | None:
    """The task folder of a file read from disk (None: a member of an archive, or a value)."""
    return None if "!" in source or source.startswith("<") else Path(source).parent


def _sibling(folder: Path | None, name: str) -> list[Any] | None:
    """The items of the task folder's other file, read with the same caps as any file (None: not there)."""
    if folder is None or not (folder / name).is_file():
        return None
    try:
        doc = parse_bytes((folder / name).read_bytes(), os.fspath(folder / name), False)
    except (NotJSON, OSError):
        return None
    items = list(doc.items)
    return items if doc.kind == "array" else None


def _info(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``api_req_started`` row's ``ClineApiReqInfo``."""
    try:
        info = json.loads(row["text"]) if isinstance(row.get("text"), str) else None
    except ValueError:
        return {}
    return info if isinstance(info, MAPPING) else {}


def _ui_usage(info: Mapping[str, Any]) -> dict[str, Any]:
    usage, _sound = logged_counts(info, {"input_tokens": "tokensIn", "output_tokens": "tokensOut",  # as written: build checks
                                         "cache_read_input_tokens": "cacheReads", "cache_creation_input_tokens": "cacheWrites"})
    if isinstance(info.get("cost"), (int, float)) and not isinstance(info.get("cost"), bool):
        usage["cost"] = info["cost"]
    return usage


def _usage_rows(ui: list[Any]) -> list[Mapping[str, Any]]:
    """The ``api_req_started`` rows that carry a call's usage (``tokensIn``), in order."""
    return [r for r in ui if _ui_row(r) and r.get("say") == "api_req_started" and _info(r).get("tokensIn") is not None]


def _metrics(m: Mapping[str, Any]) -> dict[str, Any] | None:
    tokens = m.get("metrics", {}).get("tokens") if isinstance(m.get("metrics"), MAPPING) else None
    if not isinstance(tokens, MAPPING) or tokens.get("prompt") is None:
        return None
    usage, sound = logged_counts(tokens, {"input_tokens": "prompt", "cache_read_input_tokens": "cached", "output_tokens": "completion"})
    if sound:  # the uncached input apart from the cached; counts no provider reports as written, for build to say
        cached = min(usage["cache_read_input_tokens"], usage["input_tokens"])
        usage.update(input_tokens=usage["input_tokens"] - cached, cache_read_input_tokens=cached)
    cost = m["metrics"].get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        usage["cost"] = cost
    return usage


def _from_history(history: list[Any], ui: list[Any], source: str, task: str) -> Conversation:
    problems = Problems(source, task)
    messages = [(i, m) for i, m in enumerate(history) if _api_message(m)]
    replies = [m for _, m in messages if m["role"] == "assistant"]
    rows = _usage_rows(ui)
    paired = rows if len(rows) == len(replies) else []
    if rows and not paired and not all(_metrics(m) for m in replies):
        problems.add(None, f"{UI} holds {len(rows)} calls' usage for {len(replies)} replies: their usage left out")
    records: list[ImportedMessage] = []
    last: str | None = None
    models: list[str] = []
    k = 0
    for i, m in messages:
        time = to_time(m.get("ts"))
        content = m["content"]
        if m["role"] == "assistant":
            row = paired[k] if paired else None
            k += 1
            blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
            calls = [{"id": str(b.get("id")), "type": "function", "function": {"name": b.get("name"), "arguments": b.get("input")}}
                     for b in blocks if isinstance(b, MAPPING) and b.get("type") == "tool_use"]
            info = m.get("modelInfo") if isinstance(m.get("modelInfo"), MAPPING) else (row or {}).get("modelInfo")
            model = info.get("modelId") if isinstance(info, MAPPING) else None
            if isinstance(model, str) and model not in models:
                models.append(model)
            node: dict[str, Any] = {"role": "assistant", "content": list(blocks), "time": time or (to_time(row["ts"]) if row else None),
                                    "usage": _metrics(m) or (_ui_usage(_info(row)) if row else None),
                                    "metadata": {"model": model} if isinstance(model, str) else {}}
            if calls:
                node["tool_calls"] = calls
            records.append(ImportedMessage(f"m{i}", last, node))
            last = f"m{i}"
            continue
        parts = content if isinstance(content, list) else None
        results = [b for b in parts or [] if isinstance(b, MAPPING) and b.get("type") == "tool_result"]
        for j, b in enumerate(results):
            tid = f"m{i}" if j == 0 else f"m{i}#{j + 1}"
            records.append(ImportedMessage(tid, last, {"role": "tool", "content": b.get("content") if isinstance(b.get("content"), (str, list)) else "",
                                                       "tool_call_id": str(b.get("tool_use_id") or ""), "time": time,
                                                       "metadata": {"is_error": True} if b.get("is_error") else {}}))
            last = tid
        rest = [b for b in parts if not (isinstance(b, MAPPING) and b.get("type") == "tool_result")] if parts is not None else content
        if rest or not results:
            nid = f"m{i}#text" if results else f"m{i}"
            records.append(ImportedMessage(nid, last, {"role": "user", "content": rest if isinstance(rest, (str, list)) else str(rest),
                                                       "time": time}))
            last = nid
    return conversation(records, problems, id=task, title=None, format=NAME, source=source, head=last,
                        metadata={"task_id": task, "models": models, "ui_messages": len(ui)})


def _from_ui(rows: list[Any], source: str, task: str) -> Conversation:
    """What the person saw: prompts, a reply per usage row with its text and calls, command output as results."""
    problems = Problems(source, task)
    records: list[ImportedMessage] = []
    last: str | None = None
    reply: dict[str, Any] | None = None
    call: str | None = None
    for n, r in enumerate(x for x in rows if _ui_row(x)):
        kind, text, time = r.get("say") or r.get("ask"), r.get("text") if isinstance(r.get("text"), str) else "", to_time(r["ts"])
        nid = f"ui{n}"
        if r.get("partial"):
            continue
        if kind in ("task", "user_feedback"):
            reply, call = None, None
            records.append(ImportedMessage(nid, last, {"role": "user", "content": text, "time": time}))
            last = nid
        elif kind == "api_req_started":
            info = _info(r)
            if info.get("tokensIn") is None:
                continue
            reply, call = {"role": "assistant", "content": [], "time": time, "usage": _ui_usage(info)}, None
            records.append(ImportedMessage(nid, last, reply))
            last = nid
        elif reply is not None and kind in ("text", "completion_result") and text:
            reply["content"].append({"type": "text", "text": text})
        elif reply is not None and kind == "reasoning" and text:
            reply["content"].append({"type": "thinking", "thinking": text})
        elif reply is not None and kind in _CALL_ROWS:
            try:
                args: Any = json.loads(text)
            except ValueError:
                args = text
            call = nid
            reply["content"].append({"type": "tool_use", "id": nid, "name": kind, "input": args})
            reply.setdefault("tool_calls", []).append({"id": nid, "type": "function", "function": {"name": kind, "arguments": text}})
        elif kind == "command_output" and call is not None:
            records.append(ImportedMessage(nid, last, {"role": "tool", "content": text, "tool_call_id": call, "time": time}))
            last, call = nid, None
    return conversation(records, problems, id=task, title=None, format=NAME, source=source, head=last,
                        metadata={"task_id": task, "read_from": UI})
