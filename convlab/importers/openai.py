"""Plain OpenAI-style message lists, as JSON or JSONL.

Shapes: a list of messages (``[{"role", "content"}, ...]``); an object with
``messages`` (and maybe ``id``/``title``); a list of such objects; JSONL with a
message per line (one conversation) or a ``{"messages": [...]}`` per line (a
conversation per line, as in fine-tuning files). Messages follow each other:
the list is one branch, its last message the head. ``developer`` reads as
``system`` and ``function`` as ``tool``; ``name``, ``tool_calls``,
``tool_call_id`` and ``usage`` are kept. A message without an ``id`` gets
``m1``, ``m2``, ... by position.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from ..conversation import Conversation
from ..tree import MESSAGE_KEYS
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, role_of, to_time, usage_of

NAME = "openai"


def is_message(x: object) -> bool:
    return isinstance(x, MAPPING) and isinstance(x.get("role"), str) and ("content" in x or "tool_calls" in x)


def _is_conversation(x: object) -> bool:
    return isinstance(x, MAPPING) and isinstance(x.get("messages"), list) and any(is_message(m) for m in x["messages"][:5])


def _first_mapping(doc: Document) -> Any:
    return next((v for v in doc.head if isinstance(v, MAPPING)), None)


def detect(doc: Document) -> bool:
    if doc.kind == "object":
        return _is_conversation(doc.first)
    first = _first_mapping(doc)
    return is_message(first) or _is_conversation(first)


def parse(doc: Document) -> Iterable[Conversation]:
    stem = PurePath(doc.source.split("!")[-1]).name.split(".")[0] or "conversation"
    if doc.kind == "object":
        return [parse_one(doc.first, doc.source, stem)]
    if is_message(_first_mapping(doc)):  # one conversation: the list is its messages
        return [parse_one({"messages": list(doc.items)}, doc.source, stem)]
    return doc.each(lambda item, source, i: parse_one(item, source, f"{stem}#{i}"))


def parse_one(item: object, source: str, default_id: str) -> Conversation:
    cid = str(item.get("id") or default_id) if isinstance(item, MAPPING) else default_id
    problems = Problems(source, cid)
    messages = item.get("messages") if isinstance(item, MAPPING) else None
    if not isinstance(messages, list):
        problems.add(None, "no messages list; read as empty")
        messages = []
    records: list[ImportedMessage] = []
    used: set[str] = set()
    previous: str | None = None
    for i, m in enumerate(messages):
        if not isinstance(m, MAPPING):
            problems.add(None, f"messages[{i}] is a {type(m).__name__}, not a message; left out")
            continue
        given = m.get("id")
        mid = str(given) if isinstance(given, (str, int)) and str(given) not in used else None
        if mid is None:
            n = i + 1
            while f"m{n}" in used:
                n += 1
            mid = f"m{n}"
        used.add(mid)
        role = role_of(m.get("role"), problems, mid)
        if role is None:
            continue
        content = m.get("content")
        node: dict[str, Any] = {
            "role": role,
            "content": content if isinstance(content, (str, list)) else "" if content is None else str(content),
            "time": to_time(m.get("created_at") or m.get("timestamp")),
            "usage": usage_of(m.get("usage")),
        }
        for key in MESSAGE_KEYS:
            if m.get(key) is not None:
                node[key] = m[key]
        records.append(ImportedMessage(mid, previous, node))
        previous = mid
    return conversation(records, problems, id=cid, title=item.get("title") if isinstance(item, MAPPING) else None,
                        format=NAME, source=source, head=previous)
