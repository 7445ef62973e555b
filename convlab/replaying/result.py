"""What a replay returns: ``Replay``, and the measures a sweep reads from it.

A sweep's row is computed here, from the ``Replay`` alone (its session's
events and turns, its calls, limits and stale replies), so nothing reaches
into the driver that made it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..engine import Session
from ..tuning.retention import facts_kept

__all__ = ["Replay", "Figures"]


class Figures(NamedTuple):
    """What one model call read and cost: ``read`` (its input tokens, cached ones included), ``cached``
    and ``cache_write`` (the prompt cache predicted), ``usd`` (NaN when the replay was not priced)."""

    read: int
    cached: int
    cache_write: int
    usd: float


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
    - ``lost``: imported ids of the logged replies never given: their turn
      ended before them (it failed: the provider refused a call as too long
      and nothing made room; or a worker ended it). Also in ``stale``;
    - ``calls``: one dict per model call made (summary calls not included;
      a call the provider refused as too long is one, ``refused``, and so is
      the same call run again after room was made; ``answered()`` leaves the
      refused ones out):
      ``count`` (the engine's), ``first_call``, ``idle_for``, ``read`` (what
      the provider read: the log's usage where it applies, else ``exact +
      overhead``), ``exact`` (the transcript the model read, o200k_base),
      ``overhead`` (the hidden overhead: observed where the log's usage
      applies, else carried from the last call where it did), ``logged`` (the
      log's input tokens or None), ``applies``, ``refused``, ``reply``
      (imported id), ``call_id``, ``checked``, ``time`` (the clock when it
      ran) and ``head`` (the last message it read); and, when the replay was
      costed (``replay(..., model=...)``, or a log whose own model has a cache
      rule), ``cached`` and ``cache_write`` (the prompt cache predicted:
      ``convlab.replaying.cost``), ``logged_cached`` (the log's cache read where
      its usage applies, else None), ``output`` (the logged reply's output
      tokens) and ``usd`` (genai-prices' price of the call, None without a
      model);
    - ``summary_calls``: one dict per summary call: ``read``, ``refused``,
      ``output``, ``stand_in`` (the replay wrote its summary itself: no
      summarizer, or the summarizer gave none) (and ``usd`` when costed);
    - ``limits``: one dict per ``context.limit``: ``reason``, ``strategy``,
      ``tokens``, ``call`` (1-based index of the held model call), ``replaced``,
      ``first_call``, ``idle_for``, ``worker`` (the repr of the worker that
      answered it, None for the engine's proposal), and ``summary_tokens`` (the
      exact length of the summary it recorded, when it recorded one);
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
    lost: list[str] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    summary_calls: list[dict[str, Any]] = field(default_factory=list)
    #: whether its calls carry dollars (a model was given)
    priced: bool = False

    def __repr__(self) -> str:
        return (f"Replay(conversation={self.conversation_id!r}, calls={len(self.calls)}, "
                f"limits={len(self.limits)}, stale={len(self.stale)}, head={self.session.head!r})")

    def answered(self) -> list[dict[str, Any]]:
        """The model calls the provider answered (``calls`` less the ones it refused as too long): the
        calls every figure of a sweep's row sums. A refused call reads nothing and costs nothing."""
        return [c for c in self.calls if not c["refused"]]

    def figures(self) -> dict[str, Figures]:
        """What each answered call read and cost, by the logged reply it gave: what a sweep counts a
        config's ``lost`` calls at when this is the baseline (``measures``).

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replay import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9}}, "u1")
        >>> t.head = "a1"
        >>> replay(Conversation(t, id="c"), prompt_cache=None).figures()
        {'a1': Figures(read=9, cached=0, cache_write=0, usd=nan)}
        """
        return {c["reply"]: Figures(int(c["read"]), int(c.get("cached", 0)), int(c.get("cache_write", 0)),
                                    _usd(c.get("usd")) if self.priced else math.nan)
                for c in self.answered() if c.get("reply") is not None}

    def measures(self, baseline: Mapping[str, Figures] | None = None) -> dict[str, Any]:
        """The measures of a sweep's row (``convlab.tune`` documents each column).

        Every figure sums the same calls: the model calls the provider answered, the summary calls it
        answered, and the ``lost`` calls (logged replies this replay never gave: their turn failed, or
        its worker ended it, first), each counted at its figure in ``baseline`` (``figures()`` of the
        baseline replay: the log as it was; without one a lost call counts nothing). A config that
        makes turns fail so reads and pays, for those turns, what the log did: never a saving.

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replay import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9, "output_tokens": 1}}, "u1")
        >>> t.head = "a1"
        >>> m = replay(Conversation(t, id="c")).measures()
        >>> m["calls"], m["tokens_read"], m["stale"], m["lost_calls"], m["err_usage_mean"]  # the count of "hi" (1) against the log's 9
        (1, 9, 0, 0, -8.0)
        """
        limits = self.limits
        answered = self.answered()
        summaries = [s for s in self.summary_calls if not s["refused"]]
        lost = [baseline[r] for r in self.lost if r in baseline] if baseline is not None else []
        tokens_read = (sum(int(c["read"]) for c in answered) + sum(int(s["read"]) for s in summaries)
                       + sum(f.read for f in lost))
        overflows = sum(1 for c in self.calls if c["refused"])
        counts = [c["count"] for c in self.calls] + [x["tokens"] for x in limits]
        err_exact = [c["count"] - c["exact"] for c in answered]
        err_usage = [c["count"] - c["logged"] for c in answered if c["applies"] and c["logged"] is not None]
        return {**self._base_measures(len(self.summary_calls), overflows, counts), "tokens_read": tokens_read,
                "err_exact_mean": _mean(err_exact), "err_exact_p95": _p95(err_exact),
                "err_usage_mean": _mean(err_usage), "err_usage_p95": _p95(err_usage),
                **self._cost_measures(answered, summaries, lost, tokens_read), "facts_kept": facts_kept(self)}

    def _base_measures(self, summary_calls: int, overflows: int, counts: list[int]) -> dict[str, Any]:
        limits = self.limits
        reasons = [x["reason"] for x in limits]
        lengths = [x["summary_tokens"] for x in limits if "summary_tokens" in x]
        return {
            "calls": len(self.answered()),
            "lost_calls": len(self.lost),
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
        }

    def cost_measures(self, baseline: Mapping[str, Figures] | None = None) -> dict[str, Any]:
        """What the calls cost, as a sweep's columns, over the calls ``measures`` sums: ``cached`` and
        ``cache_write`` (predicted, summed; a summary call reads uncached), ``logged_cached`` (the log's
        cache reads, where its usage applies), ``err_cached_mean`` and ``err_cached_p95`` (predicted
        less logged, per answered call where the log has a figure), ``cached_share`` (``cached`` over
        every input token the row counts: ``tokens_read``), ``usd`` (every call and summary call; NaN
        without a model). NaN or 0 where the replay was not costed.

        >>> from convlab.tree import Tree
        >>> from convlab.conversation import Conversation
        >>> from convlab.replay import replay
        >>> t = Tree()
        >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 3000, "time": 0.0}, None)
        >>> _ = t.add({"id": "a1", "role": "assistant", "content": "ok", "time": 1.0, "usage": {"input_tokens": 3010}}, "u1")
        >>> _ = t.add({"id": "u2", "role": "user", "content": "more", "time": 2.0}, "a1")
        >>> _ = t.add({"id": "a2", "role": "assistant", "content": "sure", "time": 3.0, "usage": {"input_tokens": 3020}}, "u2")
        >>> t.head = "a2"
        >>> m = replay(Conversation(t, id="c"), model="claude-sonnet-4-5").cost_measures()
        >>> m["cached"], m["cache_write"], round(m["usd"], 6), round(m["cached_share"], 3)
        (3010, 3012, 0.012252, 0.499)
        """
        answered = self.answered()
        summaries = [s for s in self.summary_calls if not s["refused"]]
        lost = [baseline[r] for r in self.lost if r in baseline] if baseline is not None else []
        read = sum(int(c["read"]) for c in answered) + sum(int(s["read"]) for s in summaries) + sum(f.read for f in lost)
        return self._cost_measures(answered, summaries, lost, read)

    def _cost_measures(self, answered: list[dict[str, Any]], summaries: list[dict[str, Any]], lost: list[Figures],
                       read: int) -> dict[str, Any]:
        costed = [c for c in answered if "cached" in c]
        if not costed and not lost:  # not costed, or no model call at all (a priced replay of no call costs its summaries)
            usd = sum(_usd(s.get("usd")) for s in summaries) if self.priced else math.nan
            return {"cached": 0, "cache_write": 0, "logged_cached": math.nan, "err_cached_mean": math.nan,
                    "err_cached_p95": math.nan, "cached_share": math.nan, "usd": usd}
        logged = [c for c in costed if c["logged_cached"] is not None]
        errors = [c["cached"] - c["logged_cached"] for c in logged]
        cached = sum(c["cached"] for c in costed) + sum(f.cached for f in lost)
        usd = math.nan
        if self.priced:
            usd = sum(_usd(c["usd"]) for c in costed) + sum(_usd(s.get("usd")) for s in summaries) + sum(f.usd for f in lost)
        return {"cached": cached, "cache_write": sum(c["cache_write"] for c in costed) + sum(f.cache_write for f in lost),
                "logged_cached": sum(c["logged_cached"] for c in logged) if logged else math.nan,
                "err_cached_mean": _mean(errors), "err_cached_p95": _p95(errors),
                "cached_share": cached / read if read else math.nan, "usd": usd}

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


def _usd(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _p95(values: list[float]) -> float:
    if not values:
        return math.nan
    v = sorted(abs(x) for x in values)
    # nearest rank: the smallest value with at least 95% of the values at or below it
    return float(v[max(0, math.ceil(0.95 * len(v)) - 1)])


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan
