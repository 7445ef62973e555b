"""The read surface of a ``Session``: the tree, the head, paths, the count, views, the
snapshot, the waiting decision (as logged and as the worker sees it), and ``subscribe`` and
``advance`` beside them. Nothing here changes the tree."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from .. import jsondata
from ..tree import Message, Tree
from ..wire import Decision, Snapshot
from .journal import Journal


class Reading(Journal):
    """What a session shows (every public property and reading method of ``Session``)."""

    @property
    def tree(self):
        """The message tree: a ``networkx.DiGraph``, one node per message, edge parent -> child."""
        return self._tree.graph

    @property
    def message_tree(self) -> Tree:
        """The underlying :class:`convlab.tree.Tree`, as ``Conversation.message_tree``: a node's
        attributes (``node``), ``parent``, ``children``, depths and counts, read without building
        the ``networkx`` graph ``tree`` gives (once built, that graph is kept up to date with every
        message: a widget that follows a long run reads this instead). Read it; the session changes it."""
        return self._tree

    @property
    def head(self) -> str | None:
        return self._tree.head

    @property
    def running(self) -> str | None:
        """The running turn's id, or None."""
        return self._running

    @property
    def queued(self) -> list[str]:
        """Ids of the queued turns, in the order they will run."""
        return list(self._queue)

    @property
    def state(self) -> dict[str, Any]:
        """The worker state along the active path (docs/protocol.md 6)."""
        return self._tree.state_at()

    @property
    def idle_for(self) -> float | None:
        """Seconds since the previous turn ended (what ``idle_secs`` measures); None before any turn ended."""
        return None if self.last_turn_end is None else self.clock - self.last_turn_end

    @property
    def pending(self) -> Decision | None:
        """The waiting decision request, as the worker sees it (the path root ->
        its head as ``messages``: fresh dicts, the worker's to keep), or None."""
        if self._pending is None and self._asked is not None:
            self._pending = self._worker_view(self._asked)
        return self._pending

    @property
    def decision(self) -> Mapping[str, Any] | None:
        """The waiting decision request as the log holds it, or None: ``pending``
        without the path (its ``head`` names it; ``call.request`` has no
        ``messages``). O(1), nothing is copied: read it, do not change it.
        For a caller that looks at what waits (its ``type``, ``proposed``, the
        ``reply``) and never reads the path.

        >>> from convlab import Session
        >>> s = Session(worker="manual")
        >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
        >>> s.decision["type"], s.decision["head"], "messages" in s.decision, len(s.pending["messages"])
        ('turn.start', 'u1', False, 1)
        """
        return None if self._asked is None else MappingProxyType(self._asked)

    def path(self, node_id: str | None = None) -> list[dict[str, Any]]:
        """Node dicts root -> head (or root -> ``node_id``): what the model reads."""
        if node_id is not None and node_id not in self._tree:
            raise KeyError(f"no message {node_id!r} in the tree")
        return self._tree.path(node_id)

    def tokens(self) -> int:
        """The count of docs/protocol.md 5.1 for the active path (O(1))."""
        return self._tree.count()

    def children(self, node_id: str | None) -> list[str]:
        """Children of a node (None: the top-level messages), oldest first."""
        return self._tree.children(node_id)

    def view(self, node_id: str) -> list[Message]:
        """The view root -> ``node_id``, every message with its id: submitted as
        ``client.messages`` it moves the head there and writes nothing."""
        if node_id not in self._tree:
            raise KeyError(f"no message {node_id!r} in the tree")
        return self._tree.messages(node_id)

    def snapshot(self) -> Snapshot:
        """The whole tree as JSON: agent, head, every node with its attributes, turns."""
        return {
            "agent": self.agent,
            "head": self.head,
            "nodes": jsondata.copy(self._tree.nodes_in_order()),
            "turns": jsondata.copy(self.turns),
        }

    def subscribe(self, fn: Callable[[Mapping[str, Any]], None], types: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``fn(event)`` after every event, and on every ``llm.delta``
        while a call streams; returns a function that unsubscribes. With
        ``types`` (event types, notices included), only for those: a widget
        that shows a few kinds is not called for the rest.

        >>> from convlab import Session
        >>> s = Session(); seen = []
        >>> stop = s.subscribe(lambda e: seen.append(e["type"]), types={"turn.started", "turn.completed"})
        >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        >>> stop(); seen
        ['turn.started', 'turn.completed']
        """
        entry = (fn, None if types is None else frozenset(types))
        self._subscribers += (entry,)
        self._told = (self._subscribers, {})

        def unsubscribe() -> None:
            self._subscribers = tuple(e for e in self._subscribers if e is not entry)
            self._told = (self._subscribers, {})  # the map held the listener: let it go with it

        return unsubscribe

    def advance(self, seconds: float) -> None:
        """Move the simulated clock forward."""
        self.clock += _seconds(seconds, "advance")

    def _worker_view(self, logged: Mapping[str, Any]) -> Decision:
        """The decision request a worker sees: the logged one plus the path
        root -> its head as ``messages`` (fresh dicts, the worker's to keep)."""
        decision = jsondata.copy(dict(logged))
        decision["messages"] = self._tree.messages(decision["head"])
        call = decision.get("call")
        if call is not None and call["request"].get("messages") is None:
            call["request"]["messages"] = self._tree.messages(decision["head"])
        return decision


def _seconds(value: float, what: str) -> float:
    """A step of the clock: a finite, non-negative number of seconds."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} takes a finite, non-negative number of seconds, got {value!r}")
    return float(value)
