"""Messages between convlab and AG-UI, both ways, said once.

The server reads a run's ``messages`` through ``from_agui`` (the view it
submits) and sends the active path through ``to_agui`` (``MESSAGES_SNAPSHOT``);
the client sends a request's messages through ``to_agui`` and the importer
reads recorded messages through ``from_agui``. Both work on wire dicts (AG-UI's
camelCase JSON), so this module needs neither ``ag_ui`` nor a server.

What does not map one to one (decided here, the AG-UI spec and docs/protocol.md are
silent):

- AG-UI ``developer`` messages are recorded as ``system`` (convlab's roles are
  system, user, assistant, tool); ``activity`` and ``reasoning`` messages are
  what a front end shows, not what the model reads: they are left out.
- Assistant content on the AG-UI side is text: a convlab assistant message
  with parts is sent as its text (``convlab.content_text``). User and tool
  content keeps its parts; a part AG-UI does not know (not text, image, audio,
  video or document) is sent as a text part holding its JSON.
- Tool calls are OpenAI-shaped on both sides (``{"id", "type": "function",
  "function": {"name", "arguments"}}``); arguments that are not a string are
  sent as their JSON. A tool message's ``error`` is kept as ``metadata["error"]``.
- ``encryptedValue`` and ``subagentRunId`` are not kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..tokens import content_text

__all__ = ["from_agui", "to_agui", "AGUI_PARTS"]

#: Content part types AG-UI 1.0 knows (ag_ui.core.ContentPart).
AGUI_PARTS = ("text", "image", "audio", "video", "document")

_UI_ONLY = ("activity", "reasoning")


def from_agui(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The convlab message for an AG-UI message (a wire dict), or None for a
    message the model does not read (``activity``, ``reasoning``).

    >>> from_agui({"id": "m1", "role": "developer", "content": "Be brief."})
    {'id': 'm1', 'role': 'system', 'content': 'Be brief.'}
    >>> from_agui({"id": "a1", "role": "assistant", "toolCalls": [
    ...     {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    {'id': 'a1', 'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{}'}}]}
    """
    role = message.get("role")
    if role in _UI_ONLY:
        return None
    out: dict[str, Any] = {"id": message.get("id"), "role": "system" if role == "developer" else role}
    content = message.get("content")
    out["content"] = "" if content is None else content
    if message.get("name") is not None:
        out["name"] = message["name"]
    calls = message.get("toolCalls")
    if calls:
        out["tool_calls"] = [
            {"id": c.get("id"), "type": c.get("type", "function"),
             "function": {"name": c.get("function", {}).get("name"), "arguments": c.get("function", {}).get("arguments", "")}}
            for c in calls
        ]
    if message.get("toolCallId") is not None:
        out["tool_call_id"] = message["toolCallId"]
    metadata = dict(message.get("metadata") or {})
    if message.get("error") is not None:
        metadata["error"] = message["error"]
    if metadata:
        out["metadata"] = metadata
    return out


def to_agui(message: Mapping[str, Any], id: str | None = None) -> dict[str, Any]:
    """The AG-UI message (a wire dict) for a convlab message, under ``id``
    (default: the message's own id).

    >>> to_agui({"id": "e1", "role": "assistant", "content": [{"type": "text", "text": "hi"}]})
    {'id': 'e1', 'role': 'assistant', 'content': 'hi'}
    >>> to_agui({"id": "u1", "role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]})["content"][1]
    {'type': 'text', 'text': '{"type": "image_url", "image_url": {"url": "x"}}'}
    """
    role = message["role"]
    out: dict[str, Any] = {"id": message.get("id") if id is None else id, "role": role}
    content = message.get("content")
    if role in ("user", "tool"):
        out["content"] = content if isinstance(content, str) else [_part(p) for p in content or []]
    else:
        text = content_text(content)
        if text or role != "assistant" or not message.get("tool_calls"):
            out["content"] = text
    if message.get("name") is not None and role != "tool":
        out["name"] = message["name"]
    if role == "assistant" and message.get("tool_calls"):
        calls = [_tool_call(c) for c in message["tool_calls"]]
        out["toolCalls"] = [c for c in calls if c is not None]
    if role == "tool":
        out["toolCallId"] = message.get("tool_call_id") or ""
    metadata = message.get("metadata")
    if isinstance(metadata, Mapping) and metadata:
        out["metadata"] = dict(metadata)
    return out


def _part(part: object) -> dict[str, Any]:
    if isinstance(part, Mapping) and part.get("type") in AGUI_PARTS:
        return dict(part)
    return {"type": "text", "text": part if isinstance(part, str) else json.dumps(part)}


def _tool_call(call: object) -> dict[str, Any] | None:
    """An OpenAI-shaped tool call as AG-UI's; None for one of another shape (no id or no function name)."""
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    if not call.get("id") or not isinstance(function, Mapping) or not function.get("name"):
        return None
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": arguments}}
