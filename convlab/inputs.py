"""Checking what comes in: client inputs, messages and a worker's actions.

Everything is checked before anything is written, so a refused input writes
nothing. Errors name the field (``messages[2].role``). The checked forms are
clean copies: engine-owned attributes a client sent on a message are dropped
here (docs/protocol.md 1, gap), never recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import jsondata
from .errors import ProviderError, Refused
from .tree import MESSAGE_KEYS, ROLES, usage_problem

__all__ = ["validate", "validate_message", "validate_actions", "reply_from", "INPUT_TYPES", "ACTION_TYPES"]

INPUT_TYPES = ("client.message", "client.append", "client.messages", "client.interrupt")
ACTION_TYPES = ("llm.call", "context.replace", "message.add", "state.set", "turn.end")

def _bad(where: str, why: str) -> Refused:
    return Refused(400, f"{where}: {why}")


def validate_message(m: object, where: str) -> dict[str, Any]:
    """A clean copy of one message, or ``Refused(400)`` naming the field."""
    if not isinstance(m, Mapping):
        raise _bad(where, f"a message must be an object, got {type(m).__name__}")
    mid = m.get("id")
    if mid is not None and (not isinstance(mid, str) or not mid):
        raise _bad(f"{where}.id", f"must be a non-empty string, got {mid!r}")
    if "role" not in m:
        raise _bad(f"{where}.role", "is missing")
    if m["role"] not in ROLES:
        raise _bad(f"{where}.role", f"must be one of {', '.join(ROLES)}, got {m['role']!r}")
    if "content" not in m:
        raise _bad(f"{where}.content", "is missing")
    content = m["content"]
    if isinstance(content, list):
        for i, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise _bad(f"{where}.content[{i}]", f"a part must be an object, got {type(part).__name__}")
            if part.get("type") == "text" and not isinstance(part.get("text"), str):
                raise _bad(f"{where}.content[{i}].text", "a text part needs a string text")
    elif not isinstance(content, str):
        raise _bad(f"{where}.content", f"must be a string or a list of parts, got {type(content).__name__}")
    out: dict[str, Any] = {"role": m["role"], "content": jsondata.copy(content)}
    if mid is not None:
        out["id"] = mid
    for key, kind in MESSAGE_KEYS.items():
        if m.get(key) is not None:
            if not isinstance(m[key], kind):
                raise _bad(f"{where}.{key}", f"must be a {kind.__name__}, got {type(m[key]).__name__}")
            out[key] = jsondata.copy(m[key])
    found = jsondata.problem(out, where)
    if found:
        raise Refused(400, found)
    return out


def _messages(value: object, where: str, *, empty_ok: bool = False) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _bad(where, f"must be a list of messages, got {type(value).__name__}")
    if not value and not empty_ok:
        raise _bad(where, "is empty")
    out = [validate_message(m, f"{where}[{i}]") for i, m in enumerate(value)]
    seen: set[str] = set()
    for i, m in enumerate(out):
        if "id" in m:
            if m["id"] in seen:
                raise _bad(f"{where}[{i}].id", f"{m['id']!r} appears twice")
            seen.add(m["id"])
    return out


def validate(inp: object, agent: str) -> dict[str, Any]:
    """A checked client input, or ``Refused`` (400 malformed, 404 unknown agent)."""
    if not isinstance(inp, Mapping):
        raise Refused(400, f"an input must be an object, got {type(inp).__name__}")
    kind = inp.get("type")
    if kind is None:
        raise _bad("type", "is missing")
    if "agent_id" not in inp:
        raise _bad("agent_id", "is missing")
    if not isinstance(inp["agent_id"], str):
        raise _bad("agent_id", f"must be a string, got {type(inp['agent_id']).__name__}")
    if inp["agent_id"] != agent:
        raise Refused(404, f"unknown agent {inp['agent_id']!r}: this session is agent {agent!r}")
    if kind not in INPUT_TYPES:
        raise _bad("type", f"unknown input type {kind!r} (known: {', '.join(INPUT_TYPES)})")
    out: dict[str, Any] = {"type": kind, "agent_id": agent}
    if "queue" in inp:
        if kind not in ("client.message", "client.append"):
            raise _bad("queue", f"only client.message and client.append take queue, not {kind}")
        q = inp["queue"]
        if q not in (True, False, "merge") or (q != "merge" and not isinstance(q, bool)):
            raise _bad("queue", f"must be true, false or \"merge\", got {q!r}")
        out["queue"] = q if q else None
    if "state" in inp and kind != "client.interrupt":
        if not isinstance(inp["state"], Mapping):
            raise _bad("state", f"must be an object, got {type(inp['state']).__name__}")
        found = jsondata.problem(inp["state"], "state")
        if found:
            raise Refused(400, found)
        out["state"] = jsondata.copy(dict(inp["state"]))
    if kind == "client.message":
        if "message" not in inp:
            raise _bad("message", "is missing")
        out["messages"] = [validate_message(inp["message"], "message")]
    elif kind in ("client.append", "client.messages"):
        if "messages" not in inp:
            raise _bad("messages", "is missing")
        out["messages"] = _messages(inp["messages"], "messages")
    return out


def validate_actions(actions: object) -> list[dict[str, Any]]:
    """A checked list of actions, or ``Refused(400)`` naming the action and field."""
    if not isinstance(actions, list):
        raise _bad("actions", f"must be a list, got {type(actions).__name__}")
    out = []
    for i, a in enumerate(actions):
        where = f"actions[{i}]"
        if not isinstance(a, Mapping):
            raise _bad(where, f"an action must be an object, got {type(a).__name__}")
        kind = a.get("type")
        if kind not in ACTION_TYPES:
            raise _bad(f"{where}.type", f"unknown action {kind!r} (known: {', '.join(ACTION_TYPES)})")
        clean: dict[str, Any] = {"type": kind}
        if kind == "llm.call":
            for key in ("id", "llm", "model"):
                if a.get(key) is not None:
                    if not isinstance(a[key], str) or not a[key]:
                        raise _bad(f"{where}.{key}", f"must be a non-empty string, got {a[key]!r}")
                    clean[key] = a[key]
            if a.get("messages") is not None:
                clean["messages"] = _messages(a["messages"], f"{where}.messages")
            if a.get("stream") is not None:
                if not isinstance(a["stream"], bool):
                    raise _bad(f"{where}.stream", "must be true or false")
                clean["stream"] = a["stream"]
        elif kind == "context.replace":
            if a.get("summary") is not None:
                if not isinstance(a["summary"], str):
                    raise _bad(f"{where}.summary", f"must be a string, got {type(a['summary']).__name__}")
                clean["summary"] = a["summary"]
            clean["messages"] = _messages(a.get("messages") or [], f"{where}.messages", empty_ok=True)
        elif kind == "message.add":
            if "message" not in a:
                raise _bad(f"{where}.message", "is missing")
            clean["message"] = validate_message(a["message"], f"{where}.message")
        elif kind == "state.set":
            if not isinstance(a.get("state"), Mapping):
                raise _bad(f"{where}.state", "must be an object")
            found = jsondata.problem(a["state"], f"{where}.state")
            if found:
                raise Refused(400, found)
            clean["state"] = jsondata.copy(dict(a["state"]))
        found = jsondata.problem(clean, where)  # ids, names, a summary: text JSON can carry
        if found:
            raise Refused(400, found)
        out.append(clean)
    return out


def reply_from(result: object) -> dict[str, Any]:
    """A provider's reply, checked and copied once: ``{"content", "usage"}`` plus any of
    ``name``, ``tool_calls``, ``metadata``. A reply of another shape is a failed call
    (``ProviderError("failed")``) that says what is wrong; a usage whose counts no provider
    could report (``tree.usage_problem``) is left out (the reply counts as having none).

    >>> reply_from({"content": "hi", "usage": {"input_tokens": 3}, "tool_calls": [{"id": "c1"}]})
    {'content': 'hi', 'usage': {'input_tokens': 3}, 'tool_calls': [{'id': 'c1'}]}
    """
    if not isinstance(result, Mapping) or "content" not in result:
        raise ProviderError("failed", f"the provider answered {result!r}, not {{'content', 'usage'}}")
    found = jsondata.problem(dict(result), "reply")
    if found:
        raise ProviderError("failed", f"the provider's reply is not JSON data: {found}")
    usage = result.get("usage") or {}
    if not isinstance(usage, Mapping):
        raise ProviderError("failed", f"the provider's reply.usage must be an object, got {type(usage).__name__}")
    if usage_problem(usage) is not None:  # counts no provider reports (negative, past any window): the reply has no usage
        usage = {}
    try:
        reply = validate_message({"role": "assistant", **{k: v for k, v in result.items() if k != "usage"}}, "reply")
    except Refused as err:
        raise ProviderError("failed", f"the provider's reply is not a message: {err}") from None
    reply.pop("role")
    reply.pop("id", None)
    return {"content": reply.pop("content"), "usage": jsondata.copy(dict(usage)), **reply}
