"""Measures: one row of a sweep, read from a ``Replay`` (what each figure sums, written once).

Every figure of a row sums the same calls: the model calls the provider
answered, the summary calls it answered (one it refused as too long, or
failed, reads, caches and costs nothing), and the ``lost`` calls (logged
replies the replay never gave: their turn failed, or its worker ended it,
first), each counted at its figure in ``baseline`` (``Replay.figures()`` of
the baseline replay: the log as it was; without one a lost call counts
nothing). A config that makes turns fail so reads and pays, for those turns,
what the log did. ``convlab.tune`` documents each column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..replaying.result import Figures, ModelCall, Replay, SummaryCall
from .retention import facts_kept

if TYPE_CHECKING:
    from ..replaying.plan import Plan
    from ..replaying.prices import Prices

__all__ = ["measures", "cost_measures", "against_usage", "USAGE_COLUMNS"]

#: Each conversation's baseline against its log's own usage (``against_usage``), columns of a tune frame.
USAGE_COLUMNS = ("usage_usd", "usage_usd_replayed", "usage_cached", "usage_cached_replayed",
                 "usage_cache_write", "usage_cache_write_replayed")


def measures(replay: Replay, baseline: Mapping[str, Figures] | None = None) -> dict[str, Any]:
    """The measures of a sweep's row for ``replay`` (see the module), its lost calls at ``baseline``'s figures.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.driver import replay
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9, "output_tokens": 1}}, "u1")
    >>> t.head = "a1"
    >>> m = measures(replay(Conversation(t, id="c")))
    >>> m["calls"], m["tokens_read"], m["stale"], m["lost_calls"], m["err_usage_mean"]  # the count of "hi" (1) against the log's 9
    (1, 9, 0, 0, -8.0)
    """
    answered, summaries, lost = _summed(replay, baseline)
    tokens_read = _read(answered, summaries, lost)
    counts = [c.count for c in replay.calls] + [x.tokens for x in replay.limits]
    err_exact = [c.count - c.exact for c in answered]
    err_usage = [c.count - logged for c in answered if c.applies and (logged := c.logged) is not None]
    return {**_events(replay, len(answered), counts), "tokens_read": tokens_read,
            "err_exact_mean": _mean(err_exact), "err_exact_p95": _p95(err_exact),
            "err_usage_mean": _mean(err_usage), "err_usage_p95": _p95(err_usage),
            **_costs(replay, answered, summaries, lost, tokens_read), "facts_kept": facts_kept(replay)}


def cost_measures(replay: Replay, baseline: Mapping[str, Figures] | None = None) -> dict[str, Any]:
    """What the calls cost, as a sweep's columns, over the calls ``measures`` sums: ``cached`` and
    ``cache_write`` (predicted, summed over the model calls and the summary calls: a summary call sent
    as the engine sends it reads the session's warm prefix, ``cost.price``), ``logged_cached`` (the log's
    cache reads, where its usage applies), ``err_cached_mean`` and ``err_cached_p95`` (predicted
    less logged, per answered call where the log has a figure), ``cached_share`` (``cached`` over
    every input token the row counts: ``tokens_read``), ``usd`` (every call and summary call; NaN
    without a model). NaN or 0 where the replay was not priced.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.driver import replay
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 3000, "time": 0.0}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "ok", "time": 1.0, "usage": {"input_tokens": 3010}}, "u1")
    >>> _ = t.add({"id": "u2", "role": "user", "content": "more", "time": 2.0}, "a1")
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "sure", "time": 3.0, "usage": {"input_tokens": 3020}}, "u2")
    >>> t.head = "a2"
    >>> m = cost_measures(replay(Conversation(t, id="c"), model="claude-sonnet-4-5"))
    >>> m["cached"], m["cache_write"], round(m["usd"], 6), round(m["cached_share"], 3)
    (3018, 3012, 0.01223, 0.5)
    """
    answered, summaries, lost = _summed(replay, baseline)
    return _costs(replay, answered, summaries, lost, _read(answered, summaries, lost))


def against_usage(replay: Replay, p: Plan, prices: Prices | None) -> dict[str, Any]:
    """A replay's dollars against its log's own, over the answered calls whose logged usage applies (the
    calls the log says what they cost): ``usage_usd`` (the log's usage priced at ``prices``: its input,
    cache reads, cache writes and output as it records them), ``usage_usd_replayed`` (the replay's dollars
    there), ``usage_cached`` / ``usage_cached_replayed`` and ``usage_cache_write`` /
    ``usage_cache_write_replayed`` (the log's cache reads and writes, and the replay's predicted). The
    replay takes each call's input and output from the log, so the cache is all they can differ by. NaN each
    without ``prices`` or such a call. What ``tune`` carries from each conversation's baseline, and
    ``rank`` checks (``ranking.USAGE_OFF``).

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.driver import replay
    >>> from convlab.replaying.plan import plan
    >>> from convlab.replaying.prices import Prices
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 3000, "time": 0.0}, None)
    >>> usage = {"input_tokens": 10, "cache_creation_input_tokens": 3000, "output_tokens": 5}  # Anthropic's: 3,010 in all
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "ok", "time": 1.0, "usage": usage}, "u1")
    >>> _ = t.add({"id": "u2", "role": "user", "content": "more", "time": 2.0}, "a1")
    >>> usage = {"input_tokens": 10, "cache_creation_input_tokens": 3010, "output_tokens": 5}  # a second write: a miss
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "sure", "time": 3.0, "usage": usage}, "u2")
    >>> t.head = "a2"
    >>> c = Conversation(t, id="c")
    >>> m = against_usage(replay(c, model="claude-sonnet-4-5"), plan(c), Prices("claude-sonnet-4-5"))
    >>> m["usage_cached"], m["usage_cached_replayed"], m["usage_cache_write"], m["usage_cache_write_replayed"]
    (0, 3018, 6010, 3012)
    >>> round(m["usage_usd"], 5), round(m["usage_usd_replayed"], 5)
    (0.02275, 0.01235)
    """
    calls = [c for c in replay.answered() if c.applies and c.logged is not None and c.priced and c.usd is not None]
    if prices is None or not calls:
        return dict.fromkeys(USAGE_COLUMNS, math.nan)
    usd = replayed = 0.0
    cached = cached_replayed = written = written_replayed = 0
    for c in calls:
        node = p.nodes.get(str(c.reply))
        usage = node.get("usage") if node is not None else None
        wrote = usage.get("cache_creation_input_tokens") if isinstance(usage, Mapping) else None
        logged_read = min(c.logged_cached or 0, c.read)
        logged_write = min(wrote if isinstance(wrote, int) and not isinstance(wrote, bool) and wrote > 0 else 0, c.read - logged_read)
        out = c.output or 0
        usd += prices.usd(c.read, logged_read, logged_write, out)
        replayed += c.usd or 0.0
        cached, cached_replayed = cached + logged_read, cached_replayed + (c.cached or 0)
        written, written_replayed = written + logged_write, written_replayed + (c.cache_write or 0)
    return {"usage_usd": usd, "usage_usd_replayed": replayed, "usage_cached": cached,
            "usage_cached_replayed": cached_replayed, "usage_cache_write": written, "usage_cache_write_replayed": written_replayed}


def _summed(replay: Replay, baseline: Mapping[str, Figures] | None) -> tuple[list[ModelCall], list[SummaryCall], list[Figures]]:
    """The calls a row sums: the answered model calls, the answered summary calls, the lost calls' figures."""
    lost = [baseline[r] for r in replay.lost if r in baseline] if baseline is not None else []
    return replay.answered(), [s for s in replay.summary_calls if s.answered], lost


def _read(answered: Sequence[ModelCall], summaries: Sequence[SummaryCall], lost: Sequence[Figures]) -> int:
    return sum(c.read for c in answered) + sum(s.read for s in summaries) + sum(f.read for f in lost)


def _events(replay: Replay, answered: int, counts: list[int]) -> dict[str, Any]:
    """What happened: the calls, the limits and what answering them did, the turns that failed."""
    limits = replay.limits
    reasons = [x.reason for x in limits]
    lengths = [x.summary_tokens for x in limits if x.summary_tokens is not None]
    return {
        "calls": answered,
        "lost_calls": len(replay.lost),
        "summary_calls": len(replay.summary_calls),
        "limits_full": reasons.count("full"),
        "limits_idle": reasons.count("idle"),
        "limits_overflow": reasons.count("overflow"),
        "summaries": sum(1 for x in limits if x.replaced and x.strategy == "summarize"),
        "summary_tokens": sum(lengths),
        "summary_tokens_max": max(lengths, default=0),
        "resets": sum(1 for x in limits if x.replaced and x.strategy == "reset"),
        "overflows": sum(1 for c in replay.calls if c.refused),
        "failed_turns": sum(1 for t in replay.session.turns if t["status"] == "failed"),
        "stale": len(replay.stale),
        "first_limit_call": limits[0].call if limits else None,
        "max_count": max(counts) if counts else 0,
    }


def _costs(replay: Replay, answered: Sequence[ModelCall], summaries: Sequence[SummaryCall], lost: Sequence[Figures],
           read: int) -> dict[str, Any]:
    priced = [c for c in answered if c.priced]
    warm = _warm(replay)
    if not priced and not lost:  # not priced, or no model call at all (a priced replay of no call costs its summaries)
        usd = sum(s.usd or 0.0 for s in summaries) if replay.priced else math.nan
        return {"cached": 0, "cache_write": 0, "logged_cached": math.nan, "err_cached_mean": math.nan,
                "err_cached_p95": math.nan, "cached_share": math.nan, "usd": usd, **warm}
    logged = [(c.cached or 0, c.logged_cached) for c in priced if c.logged_cached is not None]
    errors = [cached - log for cached, log in logged]
    cached = sum(c.cached or 0 for c in priced) + sum(s.cached or 0 for s in summaries) + sum(f.cached for f in lost)
    written = sum(c.cache_write or 0 for c in priced) + sum(s.cache_write or 0 for s in summaries) + sum(f.cache_write for f in lost)
    usd = math.nan
    if replay.priced:
        usd = sum(c.usd or 0.0 for c in priced) + sum(s.usd or 0.0 for s in summaries) + sum(f.usd for f in lost)
    return {"cached": cached, "cache_write": written,
            "logged_cached": sum(log for _, log in logged) if logged else math.nan,
            "err_cached_mean": _mean(errors), "err_cached_p95": _p95(errors),
            "cached_share": cached / read if read else math.nan, "usd": usd, **warm}


def _warm(replay: Replay) -> dict[str, Any]:
    """The config's compactions (a limit whose answer rewrote the history) that fell on a warm prompt cache:
    the model call right after found the cache still holding what the call before it read
    (``ModelCall.cache_alive``), so the compaction threw a warm prefix away; ``warm_rewrite_usd``: what those
    calls paid beyond reading their input from the cache (``ModelCall.miss_usd``; NaN without a model). Both
    NaN, unknown, where compactions were made but no cache rule priced the calls after them."""
    calls = replay.calls
    after = [calls[i] for x in replay.limits if x.replaced
             and 0 <= (i := x.call if x.reason == "overflow" else x.call - 1) < len(calls)]
    warm = [c for c in after if c.cache_alive and not c.refused]
    usd = sum(c.miss_usd or 0.0 for c in warm) if replay.priced else math.nan
    if after and all(c.cache_alive is None for c in after):  # no cache rule priced them: unknown, never 0
        return {"compactions_warm": math.nan, "warm_rewrite_usd": math.nan}
    return {"compactions_warm": len(warm), "warm_rewrite_usd": usd}


def _p95(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    v = sorted(abs(x) for x in values)
    # nearest rank: the smallest value with at least 95% of the values at or below it
    return float(v[max(0, math.ceil(0.95 * len(v)) - 1)])


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan
