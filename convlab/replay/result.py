"""What a replay returns: ``Replay``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine import Session

__all__ = ["Replay"]


@dataclass
class Replay:
    """What ``convlab.replay`` returns: the Session that re-enacted the log, and what it saw.

    - ``session``: the ``Session`` (its tree, events, turns, ``path()``, ...);
    - ``map``: ``{imported id: session id}``; after a strategy's
      ``context.replace`` a kept message maps to its copy and the replaced
      head to the new head (where the log goes on);
    - ``stale``: imported ids of the logged replies that no longer apply
      (answered on a strategy's new history, or never given because their
      turn failed);
    - ``calls``: one dict per model call (summary calls not included):
      ``count`` (the engine's), ``first_call``, ``idle_for``, ``read`` (what
      the provider read: the log's usage where it applies, else ``exact +
      overhead``), ``exact`` (the transcript the model read, o200k_base),
      ``overhead`` (the hidden overhead: observed where the log's usage
      applies, else carried from the last call where it did), ``logged`` (the
      log's input tokens or None), ``applies``, ``refused``, ``reply``
      (imported id), ``call_id``, ``checked``;
    - ``limits``: one dict per ``context.limit``: ``reason``, ``strategy``,
      ``tokens``, ``call`` (1-based index of the held model call), ``replaced``,
      ``first_call``, ``idle_for``, and ``summary_tokens`` (the exact length of
      the summary it recorded, when it recorded one);
    - ``compactions``: one dict per compaction the log itself holds (a summary
      root, replayed as ``context.replace``): ``id`` (the summary's session
      id) and ``call`` (1-based index of the first model call that reads the
      compacted history; one past the last call when none does).
    """

    session: Session
    map: dict[str, str]
    stale: list[str]
    calls: list[dict[str, Any]]
    limits: list[dict[str, Any]]
    conversation_id: str = ""
    compactions: list[dict[str, Any]] = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"Replay(conversation={self.conversation_id!r}, calls={len(self.calls)}, "
                f"limits={len(self.limits)}, stale={len(self.stale)}, head={self.session.head!r})")
