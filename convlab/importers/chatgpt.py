"""ChatGPT data export (``conversations.json``, also inside the export .zip).

Each conversation is a ``mapping`` of id -> ``{id, message, parent, children}``
with a ``current_node``. Records without a message are not messages: the
placeholder root (a random id in older exports, ``client-created-root`` since
2025) and any other message-less record are skipped, and their children hang
from the nearest message above them. Every record that carries a message is a
node, hidden ones included (the empty system message, ``user_editable_context``,
tool output): ``metadata.hidden`` says which ones ChatGPT does not show.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, fields, role_of, table, text_or_parts, to_time

NAME = "chatgpt"


def detect(doc: Document) -> bool:
    return isinstance(doc.first, MAPPING) and isinstance(doc.first.get("mapping"), MAPPING)


def parse(doc: Document) -> Iterator[Conversation]:
    return doc.each(parse_one)


def content_of(raw: object) -> str | list[Any]:
    """ChatGPT ``content`` as protocol content: text parts joined, other parts kept as given."""
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, MAPPING):
        return ""
    parts = raw.get("parts")
    if isinstance(parts, list):
        return text_or_parts(parts)
    if isinstance(raw.get("text"), str):  # code, execution_output, ...
        return raw["text"]
    return [dict(raw)]


def _hidden(message: Mapping[str, Any]) -> bool:
    meta = message.get("metadata")
    return bool(isinstance(meta, MAPPING) and meta.get("is_visually_hidden_from_conversation"))


def parse_one(conv: object, source: str, index: int) -> Conversation:
    if not isinstance(conv, MAPPING):
        problems = Problems(source, f"#{index}")
        problems.add(None, f"item {index} is a {type(conv).__name__}, not a conversation; read as empty")
        return conversation([], problems, id=f"#{index}", title=None, format=NAME, source=source)
    cid = str(conv.get("conversation_id") or conv.get("id") or f"#{index}")
    problems = Problems(source, cid)
    mapping = conv.get("mapping")
    if not isinstance(mapping, MAPPING):
        problems.add(None, "no mapping; read as empty")
        mapping = {}

    parent_of: dict[str, str | None] = {}
    message_ids: set[str] = set()
    nodes: dict[str, dict[str, Any]] = {}
    for key, entry in mapping.items():
        key = str(key)
        if not isinstance(entry, MAPPING):
            problems.add(key, f"record is a {type(entry).__name__}; left out")
            parent_of[key] = None
            continue
        parent = entry.get("parent")
        parent_of[key] = str(parent) if parent is not None else None
        message = entry.get("message")
        if not isinstance(message, MAPPING):
            continue
        author = table(message, "author")
        role = role_of(author.get("role"), problems, key)
        if role is None:
            continue
        meta: dict[str, Any] = {"content_type": table(message, "content").get("content_type")}
        if _hidden(message):
            meta["hidden"] = True
        for k in ("recipient", "status", "end_turn", "weight", "channel"):
            if message.get(k) is not None:
                meta[k] = message[k]
        raw_meta = table(message, "metadata")
        if raw_meta.get("model_slug"):
            meta["model"] = raw_meta["model_slug"]
        if not isinstance(message.get("content"), (str, Mapping)):
            problems.no_text(key, "no content object; read empty")
        node: dict[str, Any] = {
            "role": role,
            "content": content_of(message.get("content")),
            "time": to_time(message.get("create_time")),
            "metadata": {k: v for k, v in meta.items() if v is not None},
        }
        if author.get("name"):
            node["name"] = author["name"]
        nodes[key] = node
        message_ids.add(key)

    def nearest_message(pid: str | None) -> str | None:
        seen: set[str] = set()
        while pid is not None and pid in parent_of and pid not in message_ids and pid not in seen:
            seen.add(pid)
            pid = parent_of[pid]
        if pid in seen:  # a loop of message-less records
            return None
        return pid

    records = [ImportedMessage(k, nearest_message(parent_of[k]), nodes[k]) for k in nodes]

    current = conv.get("current_node")
    head: str | None = None
    if current is not None:
        head = str(current)
        if head not in message_ids and head in parent_of:  # a message-less record: its nearest message
            nearest = nearest_message(head)
            head = nearest if nearest in message_ids else None
    return conversation(
        records,
        problems,
        id=cid,
        title=conv.get("title"),
        format=NAME,
        source=source,
        head=head,
        metadata=fields(conv, "create_time", "update_time", "default_model_slug"),
    )
