"""Open WebUI chat export: one chat, or the "export all chats" list.

The tree is ``history.messages`` (id -> ``{id, parentId, childrenIds, role,
content, ...}``) with ``history.currentId`` as the head. The flat ``messages``
list beside it is only the active path and is not read. In the "export all"
list each item wraps the chat as ``{"id", "title", "chat": {...}}``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, fields, role_of, text_or_parts, to_time, usage_of

NAME = "openwebui"


def _chat(item: object) -> Mapping[str, Any] | None:
    if not isinstance(item, MAPPING):
        return None
    if isinstance(item.get("history"), MAPPING):
        return item
    chat = item.get("chat")
    if isinstance(chat, MAPPING) and isinstance(chat.get("history"), MAPPING):
        return chat
    return None


def detect(doc: Document) -> bool:
    return _chat(doc.first) is not None


def parse(doc: Document) -> Iterator[Conversation]:
    return doc.each(parse_one)


def content_of(raw: object) -> str | list[Any]:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return text_or_parts(raw)
    return "" if raw is None else str(raw)


def parse_one(item: object, source: str, index: int) -> Conversation:
    chat = _chat(item)
    outer = item if isinstance(item, MAPPING) else {}
    cid = str(outer.get("id") or (chat or {}).get("id") or f"#{index}")
    problems = Problems(source, cid)
    if chat is None:
        problems.add(None, "no history.messages; read as empty")
        return conversation([], problems, id=cid, title=None, format=NAME, source=source)
    history = chat["history"]
    messages = history.get("messages")
    if not isinstance(messages, MAPPING):
        problems.add(None, "history.messages is not an object; read as empty")
        messages = {}
    records: list[ImportedMessage] = []
    for key, m in messages.items():
        key = str(key)
        if not isinstance(m, MAPPING):
            problems.add(key, f"message is a {type(m).__name__}; left out")
            continue
        role = role_of(m.get("role"), problems, key)
        if role is None:
            continue
        parent = m.get("parentId")
        meta = {k: m[k] for k in ("model", "modelName", "done", "error") if m.get(k) is not None}
        if m.get("content") is None:
            problems.no_text(key, "no content; read empty")
        node: dict[str, Any] = {
            "role": role,
            "content": content_of(m.get("content")),
            "time": to_time(m.get("timestamp")),
            "usage": usage_of(m.get("usage") or (m.get("info") if isinstance(m.get("info"), MAPPING) else None)),
            "metadata": meta,
        }
        records.append(ImportedMessage(key, str(parent) if parent is not None else None, node))
    current = history.get("currentId")
    title = outer.get("title") or chat.get("title")
    return conversation(
        records,
        problems,
        id=cid,
        title=title,
        format=NAME,
        source=source,
        head=str(current) if current is not None else None,
        metadata=fields(chat, "models", "timestamp"),
    )
