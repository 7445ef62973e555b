"""OpenAssistant message trees (oasst1/oasst2 ``*_trees.jsonl``: one tree per line).

A tree is ``{"message_tree_id", "prompt": message}``; each message has
``message_id``, ``role`` (``prompter`` -> user, ``assistant``), ``text`` and
its ``replies``. OpenAssistant has no current node: the head follows the
best-ranked reply (lowest ``rank``; unranked replies after ranked ones, then
in order) from the prompt down to a leaf. ``rank``, ``lang``, ``synthetic``,
``model_name``, ``review_*`` and ``emojis`` are kept in ``metadata``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..conversation import Conversation
from ..tree import Tree
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, descend, fields, role_of

NAME = "oasst"
_META = ("rank", "lang", "synthetic", "model_name", "review_count", "review_result", "emojis", "deleted")


def _tree(item: object) -> Mapping[str, Any] | None:
    if isinstance(item, MAPPING) and isinstance(item.get("prompt"), MAPPING) and "message_id" in item["prompt"]:
        return item
    return None


def detect(doc: Document) -> bool:
    return _tree(doc.first) is not None or (isinstance(doc.first, MAPPING) and "message_tree_id" in doc.first)


def parse(doc: Document) -> Iterator[Conversation]:
    return doc.each(parse_one)


def _rank_key(m: object, position: int) -> tuple[int, float, int]:
    rank = m.get("rank") if isinstance(m, MAPPING) else None
    if isinstance(rank, (int, float)) and not isinstance(rank, bool):
        return (0, float(rank), position)
    return (1, 0.0, position)


#: Where a message is in its tree: ``"prompt"``, or (where the message holding it is, its index in ``replies``).
Place = str | tuple[Any, int]


def _where(at: Place) -> str:
    """A ``Place`` as text, made only for a problem's message (a read keeps the pairs, not a string a message).

    >>> _where((("prompt", 0), 2))
    'prompt.replies[0].replies[2]'
    """
    steps = []
    while isinstance(at, tuple):
        at, j = at
        steps.append(f".replies[{j}]")
    return at + "".join(reversed(steps))


def parse_one(item: object, source: str, index: int) -> Conversation:
    tid = str(item.get("message_tree_id") or f"#{index}") if isinstance(item, MAPPING) else f"#{index}"
    problems = Problems(source, tid)
    records: list[ImportedMessage] = []
    best_child: dict[str, str] = {}
    tree_doc = _tree(item)
    if tree_doc is None:
        problems.add(None, "no prompt message; read as empty")
    else:
        stack: list[tuple[Any, str | None, Place]] = [(tree_doc["prompt"], None, "prompt")]
        while stack:
            m, holder, where_ = stack.pop()
            if not isinstance(m, MAPPING) or m.get("message_id") is None:
                problems.add(None, f"{_where(where_)} is not a message; left out with its replies")
                continue
            mid = str(m["message_id"])
            parent = m.get("parent_id", holder)
            parent = str(parent) if parent is not None else None
            role = role_of(m.get("role"), problems, mid)
            if role is None:
                continue
            text = m.get("text")
            if not isinstance(text, str):
                problems.no_text(mid, "no text; read empty")
            records.append(ImportedMessage(mid, parent, {
                "role": role,
                "content": text if isinstance(text, str) else "",
                "metadata": {k: v for k in _META if (v := m.get(k)) is not None},
            }))
            replies = m.get("replies")
            if isinstance(replies, list) and replies:
                first = replies[0] if len(replies) == 1 else replies[min(range(len(replies)), key=lambda j: _rank_key(replies[j], j))]
                if isinstance(first, MAPPING) and first.get("message_id") is not None:
                    best_child[mid] = str(first["message_id"])
                stack.extend(reversed([(r, mid, (where_, j)) for j, r in enumerate(replies)]))

    def best_ranked(tree: Tree) -> str | None:
        return descend(tree, tree.roots[0] if tree.roots else None,
                       lambda node, kids: best_child[node] if best_child.get(node) in kids else kids[0])

    return conversation(records, problems, id=tid, title=None, format=NAME, source=source, head=best_ranked,
                        metadata=fields(item, "tree_state") or None)
