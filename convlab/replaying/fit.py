"""What a log says each call read beyond its transcript: the hidden prompt and the tokenizer's ratio.

A log's usage counts what the provider read: a system prompt and tool
definitions no log line holds, and every message in the provider's own
tokenizer, not o200k_base. Per log root (a compaction starts another) and
model (a cache is per model; tokenizers differ), the logged input of each
call is fitted as ``hidden + ratio * exact`` (least squares; ``exact`` the
o200k_base count of its path): a message then reads ``ratio`` times its exact
count, and the hidden prompt is ``hidden`` (``docs/cache.md`` gives the
figures on real Claude Code sessions: ratios 1.06 to 1.49).

Two readers use it, so that they agree: the replay's model
(``convlab.replaying.model``), for what a call on a history a strategy rewrote
reads (the log has no usage for it), and the cost model
(``convlab.replaying.cost``), for the blocks of each call's prompt cache.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..tokens import content_text
from ..tree import input_tokens
from .plan import ExactCounts, Plan

__all__ = ["Fit", "fit"]

#: the tokenizer ratios a fit may give (provider tokens per o200k_base token); outside them, or with fewer
#: than ``_MIN_POINTS`` calls, the fit is not trusted and the ratio is 1 (real Claude models: 1.06 to 1.49)
_RATIOS = (0.8, 2.0)
_MIN_POINTS = 3

Segment = tuple[str, str]  # (log root, model)

#: A cache read past the warm prefix by more than this many tokens is a hit (OpenAI reads in steps of 128).
_HIT = 128


@dataclass(frozen=True)
class Fit:
    """What the log says each call's input is, beyond the transcript: per ``(log root, model)`` the
    ``hidden`` prompt and the tokenizer's ``ratio``; per model the ``warm`` tokens the first call found
    cached; the ``root`` and ``model`` of each logged reply; the default for a call the log has no
    figures for (``fallback``: the hidden overhead, ratio 1); per segment the ``calls`` it was fitted
    on, which segments hold a ``whole`` history (not under a parent the file lost), and its ``slope``:
    how many tokens its logged input grows by per transcript token, as fitted on 3 calls or more
    (``growth``), and which segments were ``trusted``: fitted on 3 calls or more, a ratio within
    ``_RATIOS`` and a hidden prompt of 0 or more (the others hold the median difference, ratio 1); per
    model the ``lifetimes`` its prompt cache showed (``lifetime``)."""

    segments: Mapping[Segment, tuple[float, float]]
    warm: Mapping[str, int]
    roots: Mapping[str, str]
    models: Mapping[str, str]
    fallback: tuple[float, float]
    calls: Mapping[Segment, int] = field(default_factory=dict)
    whole: frozenset[Segment] = frozenset()
    slopes: Mapping[Segment, float] = field(default_factory=dict)
    trusted: frozenset[Segment] = frozenset()
    lifetimes: Mapping[str, float] = field(default_factory=dict)

    def segment(self, reply: str | None) -> Segment:
        """The ``(log root, model)`` of the call answered by the logged ``reply``."""
        if reply is None:
            return "", ""
        return self.roots.get(reply, ""), self.models.get(reply, "")

    def of(self, reply: str | None) -> tuple[str, str, float, float, int]:
        """``(root, model, hidden, ratio, warm)`` for the call answered by the logged ``reply``."""
        root, model = self.segment(reply)
        hidden, ratio = self.segments.get((root, model), self.fallback)
        return root, model, hidden, ratio, min(self.warm.get(model, 0), int(hidden))

    def reads(self, reply: str | None, exact: int) -> int | None:
        """What a call answered by ``reply`` reads when its path counts ``exact`` (o200k_base):
        ``hidden + ratio * exact`` of its segment; None when that segment's fit is not ``trusted`` (too
        few calls: the most recent observation says more than a median). A segment under a parent the
        file lost counts messages the file does not hold in its ``hidden``: a whole trusted segment of
        the same model answers for it, the one fitted on the most calls, when there is one."""
        key = self.segment(reply)
        if key not in self.whole:
            whole = sorted(k for k in self.whole & self.trusted if k[1] == key[1])  # sorted: no set order decides
            key = max(whole, key=lambda k: self.calls.get(k, 0)) if whole else key
        if key not in self.trusted:
            return None
        hidden, ratio = self.segments[key]
        return max(0, round(hidden + ratio * exact))

    def given(self, overhead: int) -> Fit:
        """This fit, with ``overhead`` the hidden prompt of a call the log has no figures for."""
        return replace(self, fallback=(float(overhead), 1.0))

    def growth(self) -> float | None:
        """How many tokens the logged input grows by per transcript token (o200k_base), on the segment
        fitted on the most calls (a whole one first): about 1 to 1.5, the provider's tokenizer against
        o200k_base; above ``_RATIOS``' top (2), the log reads content its file does not hold (a Codex
        rollout's encrypted reasoning), so what a call on a rewritten history reads is a guess. None
        when no segment had 3 calls with histories of different lengths."""
        keys = [k for k in self.slopes if k in self.whole] or list(self.slopes)
        return self.slopes[max(keys, key=lambda k: self.calls.get(k, 0))] if keys else None

    def hidden_prompt(self) -> tuple[int, int] | None:
        """The hidden prompt the log shows and how many calls it rests on: the trusted segments'
        ``hidden``, weighted by their calls, over the segments whose history is whole; over the others,
        resting on 0 calls, when none is whole; None when no segment is trusted."""
        whole = sorted(k for k in self.trusted if k in self.whole)  # sorted: the sum's order is never a set's
        keys = whole or sorted(self.trusted)
        n = sum(self.calls.get(k, 0) for k in keys)
        if not n:
            return None
        return round(sum(self.segments[k][0] * self.calls.get(k, 0) for k in keys) / n), (n if whole else 0)


def _model_of(node: Mapping[str, Any]) -> str:
    meta = node.get("metadata")
    model = meta.get("model") if isinstance(meta, Mapping) else None
    return model if isinstance(model, str) else ""


def _least_squares(points: list[tuple[int, int]]) -> tuple[float, float, float | None, bool]:
    """``(hidden, ratio, slope, trusted)`` with ``total ~ hidden + ratio * exact`` over ``(exact, total)`` points. Too
    few points, exact counts that do not vary, a ratio outside ``_RATIOS`` or a negative hidden prompt give
    ratio 1 and the median difference instead; ``slope`` is the ratio found on enough points that vary,
    trusted or not (else None); ``trusted``: the fit was kept."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    ratio = sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0
    hidden = my - ratio * mx
    slope = ratio if len(points) >= _MIN_POINTS and var else None
    if len(points) < _MIN_POINTS or not _RATIOS[0] <= ratio <= _RATIOS[1] or hidden < 0:
        return float(max(0, statistics.median_low([y - x for x, y in points]))), 1.0, slope, False
    return hidden, ratio, slope, True


#: The lifetimes a log's cache may show, in seconds: OpenAI's "5 to 10 minutes of inactivity", its "up to
#: one hour" off-peak, and its extended 24-hour retention (``prompt_cache_retention``).
LIFETIMES = (300.0, 600.0, 3600.0, 86400.0)

#: How many calls after an idle gap past the shortest lifetime a lifetime rests on, at least.
_MIN_GAPS = 3


def lifetime(gaps: list[tuple[float, bool]]) -> float | None:
    """The cache lifetime that ``gaps`` show: ``(idle seconds before a call, whether it read more than the
    warm prefix from the cache)`` for the calls after a gap past the shortest of ``LIFETIMES``. The lifetime
    of ``LIFETIMES`` that says the most of them right (a hit within it, a miss past it; the shortest on a
    tie); None on fewer than ``_MIN_GAPS`` such calls or when none of them hit (the shortest says it all).

    >>> lifetime([(1400, True), (1600, True), (5000, False), (900, True)])  # hits after 25 minutes, a miss after 80
    3600.0
    >>> lifetime([(1400, False), (1600, False), (900, False)]) is None
    True
    """
    gaps = [(g, hit) for g, hit in gaps if g > LIFETIMES[0]]
    if len(gaps) < _MIN_GAPS or not any(hit for _, hit in gaps):
        return None
    return max(LIFETIMES, key=lambda ttl: (sum(hit == (g <= ttl) for g, hit in gaps), -ttl))


def fit(p: Plan, counts: ExactCounts, overhead: int = 0) -> Fit:
    """The log's figures for ``p``'s calls (see the module), in one pass over its nodes.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.plan import plan
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 100}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "ok", "metadata": {"model": "m"},
    ...            "usage": {"input_tokens": 10, "cache_read_input_tokens": 500, "cache_creation_input_tokens": 1700}}, "u1")
    >>> t.head = "a1"
    >>> f = fit(plan(Conversation(t, id="c")), ExactCounts())
    >>> f.of("a1")  # one call: hidden is the 2,210 logged less the 101 exact; the first call found 500 warm
    ('u1', 'm', 2109.0, 1.0, 500)
    >>> f.reads("a1", 50), f.hidden_prompt()  # one call is too few to trust: no fitted read, no hidden prompt
    (None, None)
    """
    nodes = p.nodes
    exact_to: dict[str, int] = {}
    roots: dict[str, str] = {}
    models: dict[str, str] = {}
    points: dict[Segment, list[tuple[int, int]]] = {}
    warm: dict[str, int] = {}
    first_read: dict[str, int] = {}
    last_time: dict[str, float] = {}
    after_gaps: dict[str, list[tuple[float, int]]] = {}  # per model: (idle seconds, its logged cache read)
    for nid, node in nodes.items():  # creation order: a parent before its children
        parent = node.get("parent")
        roots[nid] = roots.get(str(parent), nid) if parent is not None else nid
        exact_to[nid] = (exact_to.get(parent, 0) if parent is not None else 0) + counts.tokens(content_text(node.get("content")))
        if node.get("role") != "assistant":
            continue
        model = models[nid] = _model_of(node)
        usage = node.get("usage")
        total = input_tokens(usage)
        if total is None:
            continue
        points.setdefault((roots[nid], model), []).append((exact_to.get(parent, 0) if parent is not None else 0, total))
        got = usage.get("cache_read_input_tokens") if isinstance(usage, Mapping) else None
        read = got if isinstance(got, int) and not isinstance(got, bool) else None
        if model not in first_read and read is not None:
            first_read[model] = read
        time = node.get("time")
        if isinstance(time, (int, float)) and not isinstance(time, bool) and time == time:
            if read is not None and model in last_time and time - last_time[model] > LIFETIMES[0]:
                after_gaps.setdefault(model, []).append((time - last_time[model], read))
            last_time[model] = max(time, last_time.get(model, time))
    fitted = {k: _least_squares(v) for k, v in points.items()}
    segments = {k: (hidden, ratio) for k, (hidden, ratio, _, _) in fitted.items()}
    for (_root, model), (hidden, _ratio) in segments.items():
        if model in first_read and model not in warm:
            warm[model] = first_read[model] if first_read[model] <= hidden else 0
    lifetimes = {model: ttl for model, gaps in after_gaps.items()
                 if (ttl := lifetime([(g, read > warm.get(model, 0) + _HIT) for g, read in gaps])) is not None}
    return Fit(segments, warm, roots, models, (float(overhead), 1.0), lifetimes=lifetimes,
               calls={k: len(v) for k, v in points.items()},
               whole=frozenset(k for k in points if k[0] not in p.lost),
               slopes={k: s for k, (_, _, s, _) in fitted.items() if s is not None},
               trusted=frozenset(k for k, (_, _, _, kept) in fitted.items() if kept))
