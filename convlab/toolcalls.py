"""Tool calls and their results, in both shapes a message can hold them.

OpenAI's: an assistant message's ``tool_calls`` (``{"id", "function": {"name",
"arguments"}}``), answered by ``role: "tool"`` messages with a ``tool_call_id``.
Anthropic's (and Claude Code's logs): ``tool_use`` parts (``{"id", "name",
"input"}``) in an assistant message's content, answered by a user message of
``tool_result`` parts (``{"tool_use_id", "content"}``). Whatever keeps or cuts
messages (``kept``, the worker-side compactions, replay) asks here which
messages are results and which call they answer, so a result never loses its
call, whatever the shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["calls", "answers", "is_result"]


def calls(message: Mapping[str, Any]) -> dict[str, str | None]:
    """The tool calls an assistant message makes: ``{call id: tool name}``, in order.

    >>> calls({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
    ...        "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{}"}}]})
    {'c2': 'search', 't1': 'Bash'}
    """
    if message.get("role") != "assistant":
        return {}
    out: dict[str, str | None] = {}
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            fn = call.get("function")
            out[call["id"]] = fn.get("name") if isinstance(fn, Mapping) else call.get("name")
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("tool_use", "server_tool_use") and isinstance(part.get("id"), str):
                out[part["id"]] = part.get("name")
    return out


def answers(message: Mapping[str, Any]) -> list[str]:
    """The call ids a message gives results for (a ``tool`` message, or a user
    message's ``tool_result`` parts); ``[]`` for any other message.

    >>> answers({"role": "tool", "tool_call_id": "c2", "content": "42"})
    ['c2']
    >>> answers({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]})
    ['t1']
    """
    if message.get("role") == "tool":
        tid = message.get("tool_call_id")
        return [tid] if isinstance(tid, str) else []
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return []
    return [p["tool_use_id"] for p in content
            if isinstance(p, Mapping) and p.get("type") == "tool_result" and isinstance(p.get("tool_use_id"), str)]


def is_result(message: Mapping[str, Any]) -> bool:
    """A message that answers tool calls: a ``tool`` message, or a user message
    whose every part is a ``tool_result``.

    >>> is_result({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]})
    True
    >>> is_result({"role": "user", "content": "thanks"})
    False
    """
    if message.get("role") == "tool":
        return True
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, list) and bool(content)
            and all(isinstance(p, Mapping) and p.get("type") == "tool_result" for p in content))
