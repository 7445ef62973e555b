"""What a replay returns: ``Replay``, and the measures a sweep reads from it.

A sweep's row is computed here, from the ``Replay`` alone (its session's
events and turns, its calls, limits and stale replies), so nothing reaches
into the driver that made it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from ..engine import Session
from ..tree import input_tokens

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

    def measures(self) -> dict[str, Any]:
        """The measures of a sweep's row (``convlab.tune`` documents each column).

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replay import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9, "output_tokens": 1}}, "u1")
        >>> t.head = "a1"
        >>> m = replay(Conversation(t, id="c")).measures()
        >>> m["calls"], m["tokens_read"], m["stale"], m["err_usage_mean"]  # the count of "hi" (1) against the log's 9
        (1, 9, 0, -8.0)
        """
        limits = self.limits
        reasons = [x["reason"] for x in limits]
        lengths = [x["summary_tokens"] for x in limits if "summary_tokens" in x]
        summary_calls = tokens_read = overflows = 0
        for ev in self.session.events:
            t = ev["type"]
            if t == "llm.started" and ev.get("summary"):
                summary_calls += 1
            elif t == "llm.completed":
                tokens_read += input_tokens(ev.get("usage")) or 0
            elif t == "llm.failed" and ev.get("error") == "too_long" and not ev.get("summary"):
                overflows += 1
        counts = [c["count"] for c in self.calls] + [x["tokens"] for x in limits]
        err_exact = [c["count"] - c["exact"] for c in self.calls]
        err_usage = [c["count"] - c["logged"] for c in self.calls if c["applies"] and c["logged"] is not None]
        return {
            "calls": len(self.calls),
            "summary_calls": summary_calls,
            "limits_full": reasons.count("full"),
            "limits_idle": reasons.count("idle"),
            "limits_overflow": reasons.count("overflow"),
            "summaries": sum(1 for x in limits if x["replaced"] and x["strategy"] == "summarize"),
            "summary_tokens": sum(lengths),
            "summary_tokens_max": max(lengths, default=0),
            "resets": sum(1 for x in limits if x["replaced"] and x["strategy"] == "reset"),
            "overflows": overflows,
            "failed_turns": sum(1 for t in self.session.turns if t["status"] == "failed"),
            "stale": len(self.stale),
            "first_limit_call": limits[0]["call"] if limits else None,
            "max_count": max(counts) if counts else 0,
            "tokens_read": tokens_read,
            "err_exact_mean": _mean(err_exact),
            "err_exact_p95": _p95(err_exact),
            "err_usage_mean": _mean(err_usage),
            "err_usage_p95": _p95(err_usage),
        }

    def hidden_overhead(self) -> dict[str, int]:
        """The hidden prompt the log shows, as a sweep's ``overhead`` and ``overhead_calls``: the
        median, over the calls whose logged usage applies and whose history is whole, of the logged
        input less the exact count of the transcript, and how many calls that is. Only when no such
        call has a whole history (a parent the file lost is above each), the median over those calls,
        which leans high (their usage counts messages the file no longer holds), and 0 calls; 0 and 0
        when the log has no usage.

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replay import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9, "output_tokens": 1}}, "u1")
        >>> t.head = "a1"
        >>> replay(Conversation(t, id="c")).hidden_overhead()  # 9 logged, 1 exact ("hi")
        {'overhead': 8, 'overhead_calls': 1}
        """
        observed = [c for c in self.calls if c["applies"] and c["logged"] is not None]
        whole = [c["overhead"] for c in observed if c["whole"]]
        rests_on = whole or [c["overhead"] for c in observed]  # the calls whose usage counts lost messages, only if no other
        return {"overhead": statistics.median_low(rests_on) if rests_on else 0, "overhead_calls": len(whole)}


def _p95(values: list[float]) -> float:
    if not values:
        return math.nan
    v = sorted(abs(x) for x in values)
    # nearest rank: the smallest value with at least 95% of the values at or below it
    return float(v[max(0, math.ceil(0.95 * len(v)) - 1)])


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan
