"""A generic message tree: records keyed ``id`` that name their parent as ``parentMessageId`` or ``parentId``.

The shape several chat apps export (LibreChat's, keyed ``id`` instead of
``messageId``): ``{"title"?, "messages": [...]}``, a list of such objects,
or the list of records itself (JSON or JSON lines). A record whose parent is
``null``, missing, empty or the all-zero uuid is a top-level message; records
may also hold their replies as ``children`` (objects), a reply without a
parent key hanging from the record that holds it.

- role: ``role``, else ``isCreatedByUser`` (true: user, false: assistant),
  else ``sender`` or ``author``; the names exports use (``User``, ``Human``,
  ``Claude``, ``AI``, ``model``, ``bot``) read as user or assistant,
  ``developer`` as system;
- content: ``content`` (a string or parts), else ``text``, ``message`` or ``body``; a message with none of
  them (its text under another key, or nested in an object) reads empty and is said, and a file where most
  messages do is refused (``convlab.read``: read right or refused);
- time: ``createdAt``, ``created_at``, ``timestamp`` or ``time``;
- usage: ``usage``, else ``promptTokens``/``tokenCount`` as LibreChat writes them;
- the head: the record ``currentId`` / ``currentMessageId`` names, else the
  latest reply at every fork from the last top-level message (what such UIs
  show).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import (
    MAPPING,
    ImportedMessage,
    Problems,
    conversation,
    fields,
    latest,
    parent_of,
    role_of,
    text_or_parts,
    to_time,
    usage_of,
    walk,
)

NAME = "generic"
PARENT_KEYS = ("parentMessageId", "parentId")
_TIME_KEYS = ("createdAt", "created_at", "timestamp", "time")
_HEAD_KEYS = ("currentId", "currentMessageId", "current_node")


def is_record(x: object) -> bool:
    """A message record of this shape: an ``id`` and a parent key, and not LibreChat's ``messageId``."""
    return isinstance(x, MAPPING) and "id" in x and "messageId" not in x and any(k in x for k in PARENT_KEYS)


def _is_conversation(x: object) -> bool:
    if not isinstance(x, MAPPING) or not isinstance(x.get("messages"), list):
        return False
    return any(is_record(m) for m in x["messages"][:5])


def detect(doc: Document) -> bool:
    first = next((v for v in doc.head if isinstance(v, MAPPING)), None)
    if doc.kind == "object":
        return _is_conversation(first)
    return is_record(first) or _is_conversation(first)


def parse(doc: Document) -> Iterable[Conversation]:
    stem = PurePath(doc.source.split("!")[-1]).name.split(".")[0] or "conversation"
    if doc.kind == "object":
        return [parse_one(doc.first, doc.source, stem)]
    if is_record(next((v for v in doc.head if isinstance(v, MAPPING)), None)):  # the records themselves
        return [parse_one({"messages": list(doc.items)}, doc.source, stem)]
    return doc.each(lambda item, source, i: parse_one(item, source, f"{stem}#{i}"))


_TEXT_KEYS = ("text", "message", "body")


def _role(m: Mapping[str, Any], problems: Problems, mid: str) -> str | None:
    if "role" not in m and isinstance(m.get("isCreatedByUser"), bool):  # LibreChat's: its sender is a model's name
        return "user" if m["isCreatedByUser"] else "assistant"
    key = next((k for k in ("role", "sender", "author") if isinstance(m.get(k), str)), "role")
    return role_of(m.get(key), problems, mid)


def _content(m: Mapping[str, Any]) -> str | list[Any] | None:
    """The message's content; None when none of the keys holds text (the file keeps it elsewhere)."""
    content = m.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return text_or_parts(content)
    return next((m[k] for k in _TEXT_KEYS if isinstance(m.get(k), str)), None)


def _usage(m: Mapping[str, Any], role: str) -> dict[str, Any] | None:
    found = usage_of(m.get("usage"))
    if found is None and role == "assistant" and m.get("promptTokens") is not None:
        found = usage_of({"input_tokens": m.get("promptTokens"), "output_tokens": m.get("tokenCount")})
    return found


def _records(messages: list[Any], problems: Problems) -> list[ImportedMessage]:
    records: list[ImportedMessage] = []
    for m, mid, holder in walk(messages, problems, "id"):
        role = _role(m, problems, mid)
        if role is not None:
            meta = {k: m[k] for k in ("model", "sender", "name") if isinstance(m.get(k), str)}
            content = _content(m)
            if content is None:
                problems.no_text(mid, "no text under content, text, message or body; read empty")
            records.append(ImportedMessage(mid, parent_of(m, PARENT_KEYS, holder), {
                "role": role, "content": content if content is not None else "", "time": next((to_time(m[k]) for k in _TIME_KEYS if k in m), None),
                "usage": _usage(m, role), "metadata": meta}))
    return records


def _named(item: object, keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` that ``item`` holds as a string or an integer, as a string."""
    if not isinstance(item, MAPPING):
        return None
    return next((str(item[k]) for k in keys if isinstance(item.get(k), (str, int)) and not isinstance(item[k], bool)), None)


def parse_one(item: object, source: str, default_id: str) -> Conversation:
    """One conversation: ``{"messages": [...], "title"?, "id"?, "currentId"?}``."""
    cid = _named(item, ("conversationId", "id", "chatId")) or default_id
    problems = Problems(source, cid)
    messages = item.get("messages") if isinstance(item, MAPPING) else None
    if not isinstance(messages, list):
        problems.add(None, "no messages list; read as empty")
        messages = []
    records = _records(messages, problems)
    head = _named(item, _HEAD_KEYS)
    return conversation(records, problems, id=cid, title=item.get("title") if isinstance(item, MAPPING) else None,
                        format=NAME, source=source, head=head if head is not None else latest,
                        metadata=fields(item, "createdAt", "updatedAt", "model"))
