"""LibreChat conversation export (``{"conversationId", "title", "messages": [...]}``).

Two shapes: ``recursive`` (each message holds its ``children``) and flat (every
message names its ``parentMessageId``). A message's ``parentMessageId`` is its
parent when it has one; in the recursive shape a message without one hangs
from the message that holds it. ``null`` and the all-zero uuid mean the root.

LibreChat records no current node. Its UI shows the latest sibling at every
fork, so the head is found the same way (``records.latest``): from the last
top-level message, follow the last child down to a leaf. ``tokenCount`` (LibreChat's own count of
the message) is kept in ``metadata``; an assistant message's ``promptTokens``
becomes its ``usage.input_tokens``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

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

NAME = "librechat"


def _is_export(item: object) -> TypeGuard[Mapping[str, Any]]:
    if not isinstance(item, MAPPING) or not isinstance(item.get("messages"), list):
        return False
    first = next((m for m in item["messages"] if isinstance(m, MAPPING)), None)
    return first is not None and "messageId" in first  # keyed "id": the generic tree (``generic``)


def detect(doc: Document) -> bool:
    return _is_export(doc.first)


def parse(doc: Document) -> Iterator[Conversation]:
    return doc.each(parse_one)


def content_of(m: Mapping[str, Any]) -> str | list[Any]:
    parts = m.get("content")
    if isinstance(parts, list) and parts:
        fixed = []
        for p in parts:
            if isinstance(p, MAPPING) and p.get("type") == "text" and isinstance(p.get("text"), MAPPING):
                p = {"type": "text", "text": str(p["text"].get("value", ""))}
            fixed.append(p)
        return text_or_parts(fixed)
    text = m.get("text")
    return text if isinstance(text, str) else ""


def parse_one(item: object, source: str, index: int) -> Conversation:
    cid = str(item.get("conversationId") or f"#{index}") if isinstance(item, MAPPING) else f"#{index}"
    problems = Problems(source, cid)
    records: list[ImportedMessage] = []
    if not _is_export(item):
        problems.add(None, "no messages list; read as empty")
        return conversation([], problems, id=cid, title=None, format=NAME, source=source)

    for m, mid, holder in walk(item["messages"], problems, "messageId"):
        by_user = m.get("isCreatedByUser")
        role = "user" if by_user is True else "assistant" if by_user is False else role_of(m.get("role"), problems, mid)
        if role is None:
            continue
        meta = {k: m[k] for k in ("sender", "model", "endpoint", "tokenCount", "finish_reason", "error", "unfinished") if m.get(k) is not None}
        usage = None
        if role == "assistant" and m.get("promptTokens") is not None:
            usage = usage_of({"input_tokens": m.get("promptTokens"), "output_tokens": m.get("tokenCount")})
        if not (isinstance(m.get("content"), list) and m["content"]) and not isinstance(m.get("text"), str):
            problems.no_text(mid, "no text under content or text; read empty")
        records.append(ImportedMessage(mid, parent_of(m, ("parentMessageId",), holder), {
            "role": role,
            "content": content_of(m),
            "time": to_time(m.get("createdAt")),
            "usage": usage,
            "metadata": meta,
        }))

    title = item.get("title")
    return conversation(
        records,
        problems,
        id=cid,
        title=title,
        format=NAME,
        source=source,
        head=latest,
        metadata=fields(item, "endpoint", "exportAt"),
    )
