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

from pathlib import PurePath
from typing import Any, Callable, Iterable, Mapping

from ..conversation import Conversation
from ._common import Problems, Record, conversation, role_of, to_time, usage_of

NAME = "openai"


def is_message(x: Any) -> bool:
    return isinstance(x, Mapping) and isinstance(x.get("role"), str) and ("content" in x or "tool_calls" in x)


def _is_conversation(x: Any) -> bool:
    return isinstance(x, Mapping) and isinstance(x.get("messages"), list) and any(is_message(m) for m in x["messages"][:5])


def detect(value: Any) -> bool:
    if isinstance(value, list):
        first = next((v for v in value if isinstance(v, Mapping)), None)
        return is_message(first) or _is_conversation(first)
    return _is_conversation(value)


def parse(value: Any, source: str, iterate: Callable[[list[Any]], Iterable[Any]]) -> list[Conversation]:
    stem = PurePath(source.split("!")[-1]).name.split(".")[0] or "conversation"
    if isinstance(value, Mapping):
        return [parse_one(value, source, stem)]
    first = next((v for v in value if isinstance(v, Mapping)), None)
    if is_message(first):  # one conversation: the list is its messages
        return [parse_one({"messages": value}, source, stem)]
    return [parse_one(item, source, f"{stem}#{i}") for i, item in enumerate(iterate(value))]


def parse_one(item: Any, source: str, default_id: str) -> Conversation:
    cid = str(item.get("id") or default_id) if isinstance(item, Mapping) else default_id
    problems = Problems(source, cid)
    messages = item.get("messages") if isinstance(item, Mapping) else None
    if not isinstance(messages, list):
        problems.add(None, "no messages list; read as empty")
        messages = []
    records: list[Record] = []
    used: set[str] = set()
    previous: str | None = None
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
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
        for key in ("name", "tool_calls", "tool_call_id", "metadata"):
            if m.get(key) is not None:
                node[key] = m[key]
        records.append(Record(mid, previous, node))
        previous = mid
    title = item.get("title") if isinstance(item, Mapping) else None
    return conversation(records, problems, id=cid, title=title if isinstance(title, str) else None,
                        format=NAME, source=source, head=previous)
