"""Claude.ai data export (``conversations.json``: ``uuid``, ``name``, ``chat_messages``).

Messages are listed in order. When they carry ``parent_message_uuid`` (newer
exports) that is the tree, and the all-zero uuid means the root; otherwise
each message follows the one before it. The head is
``current_leaf_message_uuid`` when the export has it, else the newest leaf.
``content`` blocks are kept: text blocks as text parts (their citations and
timestamps dropped), every other block (tool use, tool result, thinking) as
given; a message with no blocks reads its ``text``. An empty conversation
(no messages) is a conversation with no nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, fields, role_of, text_or_parts, to_time

NAME = "claude_ai"
ROOT_IDS = (None, "", "00000000-0000-4000-8000-000000000000", "00000000-0000-0000-0000-000000000000")


def detect(doc: Document) -> bool:
    return isinstance(doc.first, MAPPING) and isinstance(doc.first.get("chat_messages"), list)


def parse(doc: Document) -> Iterator[Conversation]:
    return doc.each(parse_one)


def content_of(m: Mapping[str, Any]) -> str | list[Any]:
    blocks = m.get("content")
    if isinstance(blocks, list) and blocks:
        return text_or_parts(blocks)
    text = m.get("text")
    return text if isinstance(text, str) else ""


def parse_one(item: object, source: str, index: int) -> Conversation:
    cid = str(item.get("uuid") or f"#{index}") if isinstance(item, MAPPING) else f"#{index}"
    problems = Problems(source, cid)
    messages = item.get("chat_messages") if isinstance(item, MAPPING) else None
    if not isinstance(messages, list):
        problems.add(None, "no chat_messages list; read as empty")
        messages = []
    records: list[ImportedMessage] = []
    previous: str | None = None
    for i, m in enumerate(messages):
        if not isinstance(m, MAPPING):
            problems.add(None, f"chat_messages[{i}] is a {type(m).__name__}; left out")
            continue
        mid = str(m.get("uuid") or f"{cid}#{i}")
        role = role_of(m.get("sender"), problems, mid)
        if role is None:
            continue
        if "parent_message_uuid" in m:
            parent = m["parent_message_uuid"]
            parent = None if parent in ROOT_IDS else str(parent)
        else:
            parent = previous
        if not (isinstance(m.get("content"), list) and m["content"]) and not isinstance(m.get("text"), str):
            problems.no_text(mid, "no text under content or text; read empty")
        records.append(ImportedMessage(mid, parent, {
            "role": role,
            "content": content_of(m),
            "time": to_time(m.get("created_at")),
            "metadata": {k: m[k] for k in ("attachments", "files") if m.get(k)},
        }))
        previous = mid
    leaf = item.get("current_leaf_message_uuid") if isinstance(item, MAPPING) else None
    title = item.get("name") if isinstance(item, MAPPING) else None
    return conversation(
        records,
        problems,
        id=cid,
        title=title,
        format=NAME,
        source=source,
        head=str(leaf) if leaf else None,
        metadata=fields(item, "created_at", "updated_at"),
    )
