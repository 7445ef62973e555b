"""The plan of a replay: which turn each logged message belongs to, and how that turn starts.

It depends only on the conversation, so it is made once and reused by every
config of a sweep (``convlab.tune``); ``ExactCounts`` tokenizes every message
text of a sweep once. How the log becomes protocol traffic: ``convlab.replaying.driver``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import toolcalls
from ..conversation import KEPT, LOST_PARENT, NO_CALL, Conversation
from ..tokens import content_text, count_batch, count_tokens

__all__ = ["plan", "Plan", "PlannedTurn", "ExactCounts"]


# ----------------------------------------------------------------------
# exact counts, each distinct text tokenized once
# ----------------------------------------------------------------------
class ExactCounts:
    """Exact o200k_base token counts of message texts, each distinct text tokenized once.

    One instance is shared by every replay of a sweep: ``prime`` tokenizes a
    batch of texts (only those not seen yet), ``tokens`` answers from the cache
    (tokenizing a text it has not seen, e.g. a new summary).

    >>> counts = ExactCounts()
    >>> counts.prime(["hello world", "hi"]); counts.tokens("hello world"), counts.tokenized
    (2, 2)
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        self.encoding = encoding
        self._by_text: dict[str, int] = {}
        self.tokenized = 0  # distinct texts tokenized so far

    def prime(self, texts: Iterable[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._by_text))
        if missing:
            # one text (a new summary, mid-replay): no batch, whose thread pool costs more than the text
            counted = count_batch(missing, self.encoding) if len(missing) > 1 else [count_tokens(missing[0], self.encoding)]
            for t, n in zip(missing, counted, strict=True):
                self._by_text[t] = n
            self.tokenized += len(missing)

    def tokens(self, text: str) -> int:
        n = self._by_text.get(text)
        if n is None:
            self.prime([text])
            n = self._by_text[text]
        return n

    def __len__(self) -> int:
        return len(self._by_text)


# ----------------------------------------------------------------------
# the plan (config-independent)
# ----------------------------------------------------------------------
@dataclass
class PlannedTurn:
    """One turn of a replay: how it starts and the worker's steps.

    ``start`` is ``"submit"`` (record ``nodes`` under ``parent``), ``"move"``
    (a head-only view to ``parent``) or ``"compact"`` (move to ``parent``, then
    ``context.replace`` recording the summary ``nodes[0]`` and the messages the
    compaction kept, ``nodes[1:]``: copies, or messages ``KEPT`` names it in). ``steps`` are
    ``("add", id)`` (``message.add``: a tool result, or an assistant message
    no model call wrote, ``NO_CALL``) and ``("call", id)`` (one ``llm.call``
    answered with the logged reply ``id``), in order.
    """

    start: str
    parent: str | None
    nodes: list[str] = field(default_factory=list)
    steps: list[tuple[str, str]] = field(default_factory=list)
    time: float | None = None


@dataclass
class Plan:
    """What a conversation replays as: its turns, the log's head, the logged nodes."""

    conversation_id: str
    turns: list[PlannedTurn]
    head: str | None
    nodes: dict[str, dict[str, Any]]
    #: ids of the messages whose history is not whole: at or under a message whose parent the file lost
    lost: frozenset[str] = frozenset()

    @property
    def calls(self) -> list[str]:
        """Ids of the logged replies, in the order they are replayed."""
        return [nid for t in self.turns for kind, nid in t.steps if kind == "call"]

    def texts(self) -> list[str]:
        """The text of every logged message (what a replay counts exactly)."""
        return [content_text(n["content"]) for n in self.nodes.values()]


def plan(conversation: Conversation) -> Plan:
    """The replay plan of a conversation (anything with ``.message_tree``, ``.head``, ``.id``).

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> t = Tree()
    >>> for i, (role, parent) in enumerate([("user", None), ("assistant", "n0"), ("assistant", "n0")]):
    ...     _ = t.add({"id": f"n{i}", "role": role, "content": f"m{i}"}, parent)
    >>> t.head = "n1"
    >>> p = plan(Conversation(t, id="c"))
    >>> [(x.start, x.parent, x.nodes, x.steps) for x in p.turns]
    [('submit', None, ['n0'], [('call', 'n1')]), ('move', 'n0', [], [('call', 'n2')]), ('move', 'n1', [], [])]
    """
    nodes = conversation.message_tree.nodes_in_order()  # copies, from the Tree: no networkx graph is built
    by_id = {n["id"]: n for n in nodes}
    turns: list[PlannedTurn] = []
    vhead: str | None = None  # where the log's head is, as the replay goes
    turn: PlannedTurn | None = None
    for n in nodes:
        nid, parent, role = n["id"], n["parent"], n["role"]
        if n.get("kind") == "summary" and parent is None:
            target = n.get("replaces") if n.get("replaces") in by_id else vhead
            turn = PlannedTurn("compact", target, [nid], time=n.get("time"))
            turns.append(turn)
        elif turn is not None and turn.start == "compact" and not turn.steps and parent == vhead and _kept(n, turn.nodes[0]):
            turn.nodes.append(nid)  # the history the compaction kept: its context.replace's messages, never a call
        elif role == "assistant" and parent is not None:
            if turn is None or parent != vhead:
                turn = PlannedTurn("move", parent, time=n.get("time"))
                turns.append(turn)
            turn.steps.append(("add" if _no_call(n) else "call", nid))
        elif toolcalls.is_result(n) and turn is not None and parent == vhead:
            turn.steps.append(("add", nid))
        elif turn is not None and turn.start == "submit" and not turn.steps and parent == vhead and role != "assistant":
            turn.nodes.append(nid)  # a chain of inputs: one client.append
        else:
            turn = PlannedTurn("submit", parent, [nid], time=n.get("time"))
            turns.append(turn)
        vhead = nid
    head = getattr(conversation, "head", None)
    if head is not None and head != vhead:
        turns.append(PlannedTurn("move", head))
    return Plan(str(getattr(conversation, "id", "")), turns, head, by_id, _lost(nodes))


def _no_call(node: Mapping[str, Any]) -> bool:
    """An assistant message no model call wrote (``NO_CALL``): the worker records it."""
    meta = node.get("metadata")
    return isinstance(meta, Mapping) and bool(meta.get(NO_CALL))


def _kept(node: Mapping[str, Any], summary: str) -> bool:
    """Whether ``node``, right under a compaction's summary (or under what it kept), is part of the history the
    compaction kept: a copy of an earlier message, or a message the log says it kept (``KEPT``)."""
    meta = node.get("metadata")
    return node.get("copied_from") is not None or (isinstance(meta, Mapping) and meta.get(KEPT) == summary)


def _lost(nodes: list[dict[str, Any]]) -> frozenset[str]:
    """The messages (in creation order) at or under one whose parent the file lost (``LOST_PARENT``)."""
    lost: set[str] = set()
    for n in nodes:
        meta = n.get("metadata")
        if n["parent"] in lost or (n["parent"] is None and isinstance(meta, Mapping) and meta.get(LOST_PARENT) is not None):
            lost.add(n["id"])
    return frozenset(lost)
