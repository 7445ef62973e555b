"""The trade-off of a sweep: its configs ranked over every conversation, and what misleads.

A sweep's frame (``convlab.tune``) has a row per (conversation, config). What
a person decides on is a config, so ``rank`` sums each config over the
conversations and sets what it saves (the tokens it did not read, against
the same conversations replayed with no strategy) against what it costs
(summaries and resets that rewrote the history, logged replies that no
longer apply). The smallest window always reads the least, so no single
column ranks: the configs that nothing beats on both (the Pareto configs)
come first.

Some figures mislead, and saying so is the point: a config whose threshold
sits below the hidden prompt the provider reads at every call summarizes
again right after each summary, whatever the conversation says; a config
that makes turns fail reads nothing for them. ``rank`` names each such
config in a ``TuneWarning``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..context import MARGIN, ContextConfig
from ..errors import TuneWarning
from ..tables import plain
from .measures import USAGE_COLUMNS
from .presets import EVERY_CALL

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["rank", "totals", "usage_off", "USAGE_OFF", "RANK_COLUMNS", "grid_keys", "config_label", "short_keys"]

#: The columns of ``rank``'s frame (after ``config`` and the grid keys).
RANK_COLUMNS = (
    "window",
    "strategies",
    "worker",
    "threshold",
    "conversations",
    "calls",
    "lost_calls",
    "limits",
    "summaries",
    "resets",
    "stale",
    "failed_turns",
    "tokens_read",
    "baseline_tokens_read",
    "saved",
    "pareto",
    "warning",
)


def grid_keys(df: pd.DataFrame) -> list[str]:
    """The grid keys of a tune frame: its columns between ``config`` and ``window``.

    >>> import pandas as pd
    >>> from convlab.tuning.sweep import COLUMNS
    >>> grid_keys(pd.DataFrame(columns=["conversation", "source", "config", "strategy[0].idle_secs", *COLUMNS]))
    ['strategy[0].idle_secs']
    """
    columns = list(df.columns)
    for name in ("config", "window"):
        if name not in columns:
            raise KeyError(f"not a frame of convlab.tune: it has no column {name!r}")
    return columns[columns.index("config") + 1:columns.index("window")]


def config_label(row: pd.Series | Mapping[str, Any], keys: Sequence[str], names: Mapping[str, str] | None = None) -> str:
    """A config as a person names it: its index, its window and its grid keys' values
    (each key as ``names`` shows it, e.g. ``short_keys(keys)``).

    >>> row = {"config": 3, "window": 64000, "strategy[0].idle_secs": 600}
    >>> config_label(row, ["strategy[0].idle_secs"]), config_label(row, ["strategy[0].idle_secs"], short_keys(["strategy[0].idle_secs"]))
    ('config 3 (window=64000, strategy[0].idle_secs=600)', 'config 3 (window=64000, idle_secs=600)')
    """
    import pandas as pd

    names = names or {}
    shown = ([] if "window" in keys or "window" not in row or pd.isna(row["window"]) else ["window"]) + list(keys)
    worker = row["worker"] if "worker" in row and "worker" not in keys else None
    values = ", ".join([f"{names.get(k, k)}={plain(row[k])}" for k in shown]
                       + ([f"worker={worker}"] if isinstance(worker, str) else []))
    return f"config {int(row['config'])}" + (f" ({values})" if values else "")


def short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Grid keys in few characters, still apart: the key's last part, with the strategy's
    index where two strategies share it.

    >>> short_keys(["window", "strategy[0].idle_secs", "strategy[0].over_tokens", "strategy[1].over_tokens"])
    {'window': 'window', 'strategy[0].idle_secs': 'idle_secs', 'strategy[0].over_tokens': '[0].over_tokens', 'strategy[1].over_tokens': '[1].over_tokens'}
    """
    last = {k: k.rsplit(".", 1)[-1] for k in keys}
    taken = list(last.values())
    return {k: (name if taken.count(name) == 1 else k.removeprefix("strategy")) for k, name in last.items()}


#: How ``totals`` sums each column of a tune frame over the conversations (a column not named here is a
#: label, the same in every row of a config: its first value).
SUMMED = ("calls", "lost_calls", "summary_calls", "limits_full", "limits_idle", "limits_overflow", "summaries",
          "summary_tokens", "resets", "overflows", "failed_turns", "stale", "tokens_read", "baseline_tokens_read",
          "overhead_calls", "cached", "cache_write", "logged_cached", "compactions_warm", "usd", "baseline_usd", "usd_saved",
          "warm_rewrite_usd", *USAGE_COLUMNS)
#: the largest over the conversations, and the earliest
LARGEST, EARLIEST = ("summary_tokens_max", "max_count", "err_exact_p95", "err_usage_p95", "err_cached_p95"), ("first_limit_call",)
#: means over the conversations, each weighted by its model calls (an error's mean is per call)
PER_CALL = ("overhead", "err_exact_mean", "err_usage_mean", "err_cached_mean")
#: means over the conversations that have one (NaN rows not counted): a score per conversation
SCORES = ("facts_kept", "retained")


def totals(df: pd.DataFrame) -> pd.DataFrame:
    """Each config of a sweep over every conversation: one row per config (index ``config``), each column
    of the tune frame made one figure for the whole corpus, by one rule per kind of column:

    - counts, tokens and dollars (``SUMMED``: ``calls``, ``tokens_read``, ``usd``, ...) are summed (NaN
      only where every conversation's is);
    - shares come from those sums: ``saved`` is ``1 - tokens_read / baseline_tokens_read`` and
      ``cached_share`` is ``cached / tokens_read`` (so a long conversation weighs as much as it reads);
    - ``summary_tokens_max``, ``max_count`` and the ``*_p95`` errors are the largest over the
      conversations (a bound on the corpus's 95th percentile), ``first_limit_call`` the earliest;
    - ``overhead`` and the ``*_mean`` errors are means weighted by each conversation's model calls;
    - scores (``facts_kept``, ``retained``) are means over the conversations that have one;
    - the config's labels (``window``, ``strategies``, grid keys, ...) are its first row's, where its rows
      agree; where they differ (``presets.AUTO``: each log ran its own agent's preset, at its own window) a
      label is missing (NA), never one row's, but for ``preset``: ``"auto: each log its agent's preset"``
      (``presets.AUTO_LABEL``).

    What ``rank``, ``convlab.search`` (its objective and constraints) and the plots read, so the number a
    person reads for a config is the one its ``tune`` rows add up to.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"conversation": ["a", "b"], "config": [0, 0], "window": [64000] * 2, "calls": [10, 30],
    ...                    "tokens_read": [100, 200], "baseline_tokens_read": [200, 200], "usd": [1.0, 2.5],
    ...                    "err_exact_mean": [10.0, 2.0], "facts_kept": [0.5, float("nan")]})
    >>> totals(df)[["calls", "tokens_read", "saved", "usd", "err_exact_mean", "facts_kept"]].to_dict("records")
    [{'calls': 40, 'tokens_read': 300, 'saved': 0.25, 'usd': 3.5, 'err_exact_mean': 4.0, 'facts_kept': 0.5}]
    """
    import pandas as pd

    if "config" not in df.columns:
        raise KeyError("not a frame of convlab.tune: it has no column 'config'")
    groups = df.groupby("config", sort=True)
    out = groups.first()
    present = list(df.columns)
    summed = [c for c in SUMMED if c in present]
    if summed:
        out[summed] = groups[summed].sum(min_count=1)
    for c in LARGEST:
        if c in present:
            out[c] = groups[c].max()
    for c in EARLIEST:
        if c in present:
            out[c] = groups[c].min()
    calls = df["calls"].astype(float) if "calls" in present else pd.Series(1.0, index=df.index)
    for c in PER_CALL:
        if c in present:
            values = df[c].astype(float)
            weight = calls.where(values.notna(), 0.0)
            total = weight.groupby(df["config"]).sum()
            out[c] = (values.fillna(0.0) * weight).groupby(df["config"]).sum() / total.where(total > 0)
    for c in SCORES:
        if c in present:
            out[c] = groups[c].mean()
    if "tokens_read" in present and "baseline_tokens_read" in present:
        base = out["baseline_tokens_read"].astype(float)
        out["saved"] = 1 - out["tokens_read"] / base.where(base > 0)
    if "cached" in present and "tokens_read" in present and "cached_share" in present:
        read = out["tokens_read"].astype(float)
        out["cached_share"] = (out["cached"] / read.where(read > 0)).where(df.groupby("config")["cached_share"].count() > 0)
    for c in ("conversation", "source"):
        if c in out.columns:
            out = out.drop(columns=c)
    out = _labels_that_hold(out, df)
    if "conversation" in present:
        out.insert(0, "conversations", groups.size())
    return out


#: How ``totals`` makes each column: what is not named here is a label (``_labels_that_hold``).
_MADE = (*SUMMED, *LARGEST, *EARLIEST, *PER_CALL, *SCORES, "saved", "cached_share", "conversations")


def _labels_that_hold(out: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """``out`` (``df``'s configs) with each label that a config's rows do not share made missing (``preset``:
    ``AUTO_LABEL``)."""
    import pandas as pd

    from .presets import AUTO_LABEL

    labels = [c for c in out.columns if c not in _MADE]
    if not labels:
        return out
    differ = df.groupby("config", sort=True)[labels].nunique(dropna=False) > 1
    for c in labels:
        mixed = differ[c].reindex(out.index, fill_value=False).astype(bool)
        if mixed.any():
            out[c] = out[c].astype(object).where(~mixed, AUTO_LABEL if c == "preset" else pd.NA)
            if c in ("window", "threshold"):
                out[c] = out[c].astype("Int64")
    return out


#: What ``rank`` can rank by: the share of tokens read that a config saved, or of dollars (``by="usd"``).
BY = ("tokens", "usd")


#: The floors ``rank`` can require, each a column of the tune frame (a share, from 0 to 1).
FLOORS = ("retained", "facts_kept")


def rank(df: pd.DataFrame, by: str = "tokens", *, min_retained: float | None = None, min_facts_kept: float | None = None,
         failed: bool = False):
    """The configs of a sweep ranked by what they save against what they cost, over every conversation.

    ``df`` is what ``convlab.tune`` returns (or that frame read back from its
    CSV). One row per config, the best first (index ``rank``, from 1):
    ``config`` and the grid keys, ``window``, ``strategies``, ``worker`` and
    ``threshold`` as in the tune frame; ``conversations``; summed over them,
    ``calls``, ``lost_calls``, ``limits`` (context.limit decisions, every
    reason), ``summaries``, ``resets``, ``stale`` (logged replies that no
    longer apply), ``failed_turns``, ``tokens_read`` and ``baseline_tokens_read``
    (the same conversations replayed with no strategy); ``saved``, the share
    of the baseline's tokens the config did not read, ``1 - tokens_read /
    baseline_tokens_read`` (negative when its summary calls read more than
    it saved); ``pareto``, True when no other config saves at least as much
    with at most as many summaries and resets (and does better on one of
    the two); ``warning``, why its figures mislead ("" when nothing does).

    ``by="usd"`` ranks by dollars instead, for a sweep made with ``model=``
    (``convlab.tune(..., model="claude-sonnet-4-5")``): the frame gains
    ``usd`` and ``baseline_usd`` (summed), ``usd_saved`` (``baseline_usd -
    usd``, dollars) and ``saved_usd`` (``1 - usd / baseline_usd``), and the
    Pareto front and the order read ``saved_usd`` where they read ``saved``
    (with a prompt cache a config can read fewer tokens and cost more:
    every summary makes the next call write the cache again).
    ``ranked.attrs["by"]`` says which.

    A config that breaks turns never wins: one with failed turns (a call
    the provider refused as too long, and nothing made room) or lost calls
    (logged replies it never gave: their turn failed, or its worker ended
    it) is left out, and ``ranked.attrs["left_out"]`` says why, in a
    ``TuneWarning`` too (its ``left_out`` attribute holds them). Its figures
    count each lost call at the log's own figure (``convlab.tune``), so it
    never looks like a saving, but a config you cannot run is no answer.
    ``failed=True`` ranks such configs after every other, never on the
    Pareto front, their ``warning`` saying why. ``ranked.attrs["broken"]``
    maps every config that broke turns to how (left out or not), and
    ``attrs["failed"]`` says which way it was ranked.

    Floors: ``min_retained`` and ``min_facts_kept`` (a share from 0 to 1)
    leave out every config whose mean over its conversations of that column
    (``retained``, from ``tune(..., judge=...)``; ``facts_kept``; NaN rows
    not counted) is below the floor, or NaN (nothing counted); the rest are
    ranked among themselves, with that mean as a column after ``saved`` (and
    the dollar columns). ``ranked.attrs["left_out"]`` maps each config left
    out to why (``"retained 0.5 < 0.9"``).

    The order: the Pareto configs first, then the others, each by ``saved``
    (most first), then fewer summaries and resets, fewer stale replies, and
    the config's index; with ``failed=True``, the configs that broke turns
    last, in the same order among themselves. The smallest window always reads the least, so
    ``saved`` alone does not rank: read it against ``summaries``, ``resets``
    and ``stale`` (``convlab.tuning.plots.sweep_pareto`` draws it).

    A ``TuneWarning`` for each config that

    - fires at most model calls: more context limits than half its calls;
    - or, in a conversation where it fired on size (``limits_full``), has a
      ``threshold`` (its ``over_tokens``, or ``window - 16000``) below the
      conversation's hidden ``overhead``: the system prompt and tool
      definitions the provider reads at every call, which no log line
      holds (the warning says how many calls it was measured at:
      ``overhead_calls``). Right after a summary the count is small, but the next call's
      usage holds the whole overhead, so the count passes the threshold
      again and again: the config summarizes at nearly every other call,
      whatever the conversation says (neither is said of a config whose
      threshold is ``presets.EVERY_CALL``: a rule the provider applies to
      every request, as context editing and masking, fires at every call
      by design);
    - or, ranked with ``failed=True``, made turns fail (a call the provider
      refused as too long, and nothing made room) or left logged calls
      unmade: each such call counts at the log's own figure, so its
      ``saved`` says nothing of a config that works.

    >>> import warnings
    >>> import pandas as pd
    >>> df = pd.DataFrame({"conversation": ["c"] * 3, "source": ["c.jsonl"] * 3, "config": [0, 1, 2],
    ...                    "window": [64000, 128000, 200000], "strategies": ["summarize"] * 3,
    ...                    "threshold": [20000, 112000, 184000], "calls": [200] * 3, "limits_full": [120, 2, 0],
    ...                    "limits_idle": [0] * 3, "limits_overflow": [0] * 3, "summaries": [120, 2, 0], "resets": [0] * 3,
    ...                    "stale": [190, 40, 0], "tokens_read": [4e6, 7.5e6, 10e6], "baseline_tokens_read": [10e6] * 3,
    ...                    "failed_turns": [0] * 3, "overhead": [30000] * 3, "overhead_calls": [180] * 3})
    >>> with warnings.catch_warnings(record=True) as said:
    ...     warnings.simplefilter("always")
    ...     ranked = rank(df)
    >>> ranked[["config", "saved", "summaries", "pareto"]].values.tolist()
    [[0, 0.6, 120, True], [1, 0.25, 2, True], [2, 0.0, 0, True]]
    >>> print(said[0].message)
    config 0 (window=64000): fires at most model calls: 120 context limits in 200 calls; its threshold (over_tokens = 20,000) is below the hidden prompt of c (30,000 tokens, measured at 180 calls), which the provider reads at every call: each call after a summary passes it again (120 summaries in 200 calls there)
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"rank takes the frame convlab.tune returns, got {type(df).__name__}"
                        + (" (a dry run's cost: run the sweep without dry_run)" if hasattr(df, "estimated") else ""))
    if by not in BY:
        raise ValueError(f"rank: by must be one of {BY}, got {by!r}")
    if by == "usd" and ("usd" not in df.columns or "baseline_usd" not in df.columns or df["usd"].isna().all()):
        raise ValueError("rank(df, by='usd') needs a sweep priced in dollars: convlab.tune(..., model='claude-sonnet-4-5') "
                         "(the frame's usd column is missing or empty)")
    needed = ("conversation", "config", "window", "strategies", "threshold", "calls", "limits_full", "limits_idle", "limits_overflow",
              "summaries", "resets", "stale", "failed_turns", "tokens_read", "baseline_tokens_read", "overhead")
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise KeyError(f"rank takes the frame convlab.tune returns; this one has no column {', '.join(map(repr, missing))}")
    if not isinstance(failed, bool):
        raise TypeError(f"rank: failed is True (rank the configs that broke turns, last) or False, got {failed!r}")
    keys = grid_keys(df)
    if "lost_calls" not in df.columns:  # a frame from before the column: no call was lost, or nothing says so
        df = df.assign(lost_calls=0)
    floors = _floors(df, {"retained": min_retained, "facts_kept": min_facts_kept})
    df, left_out = _floored(df, floors)
    broken = _broken(df)
    whole = df
    if not failed and broken:
        df = df[~df["config"].isin(list(broken))]
        left_out.update(broken)
    rows = df.assign(limits=df["limits_full"] + df["limits_idle"] + df["limits_overflow"])
    if "worker" not in rows.columns:  # a frame from before workers were swept: the engine's proposal
        rows = rows.assign(worker=None)
    out = totals(rows).reset_index()
    out["limits"] = out["limits_full"] + out["limits_idle"] + out["limits_overflow"]
    measure = "saved"
    if by == "usd":
        dollars = out["baseline_usd"].astype(float)
        out["usd_saved"] = dollars - out["usd"]
        out["saved_usd"] = 1 - out["usd"] / dollars.where(dollars > 0)
        measure = "saved_usd"
    rewrites = out["summaries"] + out["resets"]
    works = ~out["config"].isin(list(broken))
    out["pareto"] = _undominated(out[measure].where(works), rewrites)
    by_config = dict(iter(rows.groupby("config", sort=False)))  # each config's rows, found once (not a scan per config)
    out["warning"] = [_warning(row, by_config[row["config"]]) for row in _records(out)]
    out = out.assign(_rewrites=rewrites, _broken=~works, _front=~out["pareto"], _saved=-out[measure].fillna(-math.inf))
    out = out.sort_values(["_broken", "_front", "_saved", "_rewrites", "stale", "config"], kind="stable")
    # (a frame from an older convlab, read back from its CSV, has no warm columns: ranked all the same)
    warm = [c for c in ("compactions_warm", "warm_rewrite_usd") if c in out.columns]
    extra = (["usd", "baseline_usd", "usd_saved", "saved_usd", *warm] if by == "usd" else []) + list(floors)
    columns = [*RANK_COLUMNS[:RANK_COLUMNS.index("saved") + 1], *extra, *RANK_COLUMNS[RANK_COLUMNS.index("saved") + 1:]]
    out = out[["config", *keys, *columns]].reset_index(drop=True)
    out.index = pd.RangeIndex(1, len(out) + 1, name="rank")
    out.attrs["by"] = by
    out.attrs["left_out"] = left_out
    out.attrs["failed"] = failed
    out.attrs["broken"] = broken
    if broken and not failed:
        labels = {int(r["config"]): r for r in _records(whole.drop_duplicates("config"))}
        shown = "; ".join(f"{config_label(labels[c], keys) if c in labels else f'config {c}'}: {why}"
                          for c, why in sorted(broken.items())[:3])
        more = f"; and {len(broken) - 3} more" if len(broken) > 3 else ""
        warnings.warn(TuneWarning(f"{_count(len(broken), 'config')} left out of the ranking, because a config that breaks turns "
                                  f"is no answer: {shown}{more} (rank(df, failed=True) ranks them last)",
                                  {c: broken[c] for c in broken}), stacklevel=2)
    said: dict[str, list[Any]] = {}  # one warning per reason, naming the configs it holds for (the first SHOWN)
    for row in _records(out[["config", *keys, "window", "worker", "warning"]]):
        if row["warning"]:
            said.setdefault(row["warning"], []).append(row)
    for text, configs in said.items():
        numbers = sorted(int(r["config"]) for r in configs)
        more = f" and {len(numbers) - SHOWN:,} more (ranked.warning says which)" if len(numbers) > SHOWN else ""
        who = (config_label(configs[0], keys) if len(configs) == 1
               else "configs " + ", ".join(map(str, numbers[:SHOWN])) + more)
        warnings.warn(f"{who}: {text}", TuneWarning, stacklevel=2)
    guessed = _guessed(whole)
    if guessed:
        warnings.warn(TuneWarning(guessed), stacklevel=2)
    note, off = usage_off(whole)
    out.attrs["usage_off"], out.attrs["usage_note"] = off, note
    if note:
        warnings.warn(TuneWarning(note, usage=off), stacklevel=2)
    return out


#: the share by which a conversation's baseline dollars may differ from its log's own usage priced the same
#: before ``rank`` says so (the goal the prompt cache's prediction meets on every real Claude Code session
#: with the log's calls in hand: docs/cache.md)
USAGE_OFF = 0.10


def usage_off(df: pd.DataFrame) -> tuple[str, dict[str, dict[str, Any]]]:
    """What a ranking says of the conversations whose baseline (no strategy) dollars differ by more than
    ``USAGE_OFF`` from their log's own usage priced at the same prices (``measures.against_usage``, over the
    calls the log records usage for): one note naming each one's two figures and the cause, the cache reads
    and writes the replay predicts against the log's, the one further apart first (relatively: a log that
    missed the cache where the replay reads it wrote what the replay did not, 4.30M tokens against 0.32M on
    pi's large session, while its reads differ by 9%), and each one's figures (``ranked.attrs["usage_off"]``:
    the conversation's id -> ``usd_replayed``, ``usd_logged``, ``off`` (replayed over logged, less 1),
    ``cause``: ``"cache writes"`` or ``"cache reads"``, the one further apart). The replay takes each call's
    input and output from the log: what it predicts of the prompt cache is all they can differ by, and every
    config's dollars there rest on that prediction. ("", {}) for a frame with no such conversation, or none
    priced.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"conversation": ["pi", "cc"], "source": ["pi.jsonl", "cc.jsonl"],
    ...                    "usage_usd": [30.33, 6.60], "usage_usd_replayed": [16.61, 6.67],
    ...                    "usage_cached": [43_230_000, 16_550_000], "usage_cached_replayed": [47_210_000, 16_530_000],
    ...                    "usage_cache_write": [4_300_000, 240_000], "usage_cache_write_replayed": [320_000, 260_000]})
    >>> note, off = usage_off(df)
    >>> print(note)
    the replay with no strategy costs more than 10% more or less than the log's own usage priced the same (input, cache reads and writes, output as the log records them, on the calls it records them for) in 1 conversation: pi, $16.61 replayed against $30.33 logged (-45%), furthest apart its cache writes: 0.32M tokens predicted, 4.30M logged (cache reads: 47.21M predicted, 43.23M logged). Over all 2 conversations with usage: $23.28 replayed against $36.93 logged (-37%). The calls' input and output are the log's, so the prompt cache the replay predicts is all the two differ by, and every config's dollars there rest on it
    >>> off["pi"]["cause"], round(off["pi"]["off"], 3)
    ('cache writes', -0.452)
    """
    if any(c not in df.columns for c in ("conversation", *USAGE_COLUMNS)):  # a frame from before the columns
        return "", {}
    per = df.drop_duplicates(["source", "conversation"] if "source" in df.columns else ["conversation"])
    per = per[(per["usage_usd"] > 0) & per["usage_usd_replayed"].notna()]
    off: dict[str, dict[str, Any]] = {}
    said, uncached = [], False
    for r in _records(per[["conversation", *USAGE_COLUMNS]]):
        replayed, logged = float(r["usage_usd_replayed"]), float(r["usage_usd"])
        if abs(replayed / logged - 1) <= USAGE_OFF or str(r["conversation"]) in off:
            continue
        sides = {"cache reads": (r["usage_cached_replayed"], r["usage_cached"]),
                 "cache writes": (r["usage_cache_write_replayed"], r["usage_cache_write"])}
        cause = "cache writes" if _apart(*sides["cache writes"]) > _apart(*sides["cache reads"]) else "cache reads"
        other = next(k for k in sides if k != cause)
        off[str(r["conversation"])] = {"usd_replayed": replayed, "usd_logged": logged, "off": replayed / logged - 1, "cause": cause}
        (main, main_log), (then, then_log) = _tokens(*sides[cause]), _tokens(*sides[other])
        besides = f" ({other}: {then} predicted, {then_log} logged)" if any(sides[other]) else ""
        none = not any(sides["cache reads"][:1] + sides["cache writes"][:1]) and bool(sides["cache reads"][1])
        uncached |= none
        said.append(f"{r['conversation']}, ${replayed:,.2f} replayed against ${logged:,.2f} logged ({replayed / logged - 1:+.0%}), "
                    f"furthest apart its {cause}: {main} tokens predicted, {main_log} logged{besides}"
                    + (", no prompt cache predicted at all" if none else ""))
    if not off:
        return "", {}
    shown = "; ".join(said[:3]) + (f"; and {len(said) - 3} more (ranked.attrs['usage_off'] names them)" if len(said) > 3 else "")
    total = ""
    if len(per) > 1:
        replayed, logged = float(per["usage_usd_replayed"].sum()), float(per["usage_usd"].sum())
        total = (f". Over all {_count(len(per), 'conversation')} with usage: ${replayed:,.2f} replayed against ${logged:,.2f} "
                 f"logged ({replayed / logged - 1:+.0%})")
    rule = (". Where it predicts no prompt cache at all, convlab has no cache rule for the model (it has Anthropic's and "
            "OpenAI's: prompt_cache)") if uncached else ""
    return (f"the replay with no strategy costs more than {USAGE_OFF:.0%} more or less than the log's own usage priced the same "
            f"(input, cache reads and writes, output as the log records them, on the calls it records them for) in "
            f"{_count(len(off), 'conversation')}: {shown}{total}. The calls' input and output are the log's, so the prompt "
            f"cache the replay predicts is all the two differ by, and every config's dollars there rest on it{rule}"), off


def _apart(predicted: float, logged: float) -> float:
    """How far apart two counts are, as a share of the larger (0 when both are 0)."""
    most = max(abs(float(predicted)), abs(float(logged)))
    return abs(float(predicted) - float(logged)) / most if most else 0.0


def _tokens(predicted: float, logged: float) -> tuple[str, str]:
    """Two counts of tokens in few characters, in one unit (0 as itself): ``("0.32M", "4.30M")``, ``("16.9k", "0")``."""
    most = max(abs(float(predicted)), abs(float(logged)))
    unit, size, places = ("M", 1e6, 2) if most >= 1e6 else ("k", 1e3, 1) if most >= 1e3 else ("", 1, 0)
    return tuple(f"{float(n) / size:,.{places}f}{unit}" if n else "0" for n in (predicted, logged))  # type: ignore[return-value]


#: above this many tokens of logged input per transcript token, a log reads content its file does not hold
GROWTH = 2.0


def _guessed(df: pd.DataFrame) -> str:
    """What a ranking says of the conversations whose usage grows faster than their transcript
    (``usage_growth`` above ``GROWTH``) where some config rewrote the history (``stale`` calls)."""
    if "usage_growth" not in df.columns:  # a frame from before the column
        return ""
    hit = df[(df["usage_growth"] > GROWTH) & (df["stale"] > 0)].drop_duplicates("conversation")
    if hit.empty:
        return ""
    shown = "; ".join(f"{r['conversation']} ({r['usage_growth']:.1f})" for r in _records(hit[["conversation", "usage_growth"]][:3]))
    more = f"; and {len(hit) - 3} more" if len(hit) > 3 else ""
    return (f"the logged input grows by more than {GROWTH:g} tokens per transcript token (a provider's own tokenizer gives 1 to "
            f"1.5) in {shown}{more}: the log reads content its file does not hold (encrypted reasoning, images), so what a "
            "call reads after a strategy rewrote the history is a guess: every config's figures there that rewrote it are unreliable")


#: How many configs a warning names before it says how many more (a grid of thousands would list them all).
SHOWN = 50


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts: read in one pass (``iterrows`` makes a Series a row, a cost that a grid of
    thousands of configs feels)."""
    return [{str(k): v for k, v in r.items()} for r in df.to_dict("records")]


def _floors(df: pd.DataFrame, given: Mapping[str, object]) -> dict[str, float]:
    """The floors given, checked: each a number from 0 to 1, on a column the frame has."""
    floors = {}
    for column, floor in given.items():
        if floor is None:
            continue
        if not isinstance(floor, (int, float)) or isinstance(floor, bool) or math.isnan(floor) or not 0 <= floor <= 1:
            raise ValueError(f"rank: min_{column} must be a share from 0 to 1, got {floor!r}")
        if column not in df.columns or df[column].isna().all():
            how = "tune(..., judge=llm)" if column == "retained" else "convlab.tune"
            has = ("has none" if column not in df.columns else "has only NaN there (unknown: no config compacted "
                   "anything of its own that a model then read, or only with stand-in summaries; give a summarizer)")
            raise ValueError(f"rank(df, min_{column}=...) needs scores in the frame's {column!r} column ({how} makes them); this frame {has}")
        floors[column] = float(floor)
    return floors


def _floored(df: pd.DataFrame, floors: Mapping[str, float]) -> tuple[pd.DataFrame, dict[int, str]]:
    """The rows of the configs every floor keeps, and why each other config is left out."""
    if not floors:
        return df, {}
    means = df.groupby("config", sort=True)[list(floors)].mean()
    left_out: dict[int, str] = {}
    for config, row in zip(means.index, means.to_dict("records"), strict=True):
        why = [f"{c} {'NaN (nothing counted)' if math.isnan(row[c]) else f'{row[c]:.3g} < {f:g}'}"
               for c, f in floors.items() if math.isnan(row[c]) or row[c] < f]
        if why:
            left_out[int(config)] = "; ".join(why)
    return df[~df["config"].isin(list(left_out))], left_out


def _undominated(saved: pd.Series, rewrites: pd.Series) -> list[bool]:
    """For each config, whether no other saves at least as much with at most as many rewrites, and does
    better on one (NaN saved: never). In one sort, not a comparison of every pair: a config is dominated
    when one with fewer rewrites saves at least as much (the best saved below its rewrites), or one with
    as many saves more (the best saved at its rewrites).

    >>> import pandas as pd
    >>> _undominated(pd.Series([0.5, 0.4, 0.5, 0.6, float("nan")]), pd.Series([1, 1, 1, 3, 0]))
    [True, False, True, True, False]
    """
    values = list(zip(saved.tolist(), rewrites.tolist(), strict=True))
    counted = sorted((r, s) for s, r in values if not math.isnan(s))
    best_at: dict[Any, float] = {}  # rewrites -> the most saved at exactly that many
    best_below: dict[Any, float] = {}  # rewrites -> the most saved with fewer
    most = -math.inf
    for k, (r, s) in enumerate(counted):
        if k == 0 or r != counted[k - 1][0]:
            best_below[r] = most
        best_at[r] = max(best_at.get(r, -math.inf), s)
        most = max(most, s)
    return [not math.isnan(s) and best_below[r] < s and best_at[r] <= s for s, r in values]


def _warning(config: Mapping[str, Any], rows: pd.DataFrame) -> str:
    """Why a config's figures mislead (see ``rank``), "" when nothing does."""
    import pandas as pd

    said = []
    logged = int(config["calls"]) + int(config.get("lost_calls", 0) or 0)  # the calls of the log, made or not
    thresholds = rows["threshold"].to_numpy(dtype=float, na_value=math.nan)
    every_call = bool((thresholds <= EVERY_CALL).all())  # a rule applied to every request (a preset's): firing is its design
    if config["limits"] * 2 > logged and not every_call:
        said.append(f"fires at most model calls: {config['limits']:,} context limits in {logged:,} calls")
    # each row against its own threshold (presets.AUTO: each log its own preset's); the rows' arrays compared: a grid
    # of thousands of configs asks this of each
    if not pd.isna(thresholds).all() and not every_call:
        below = rows[(rows["overhead"].to_numpy(dtype=float, na_value=math.nan) > thresholds) & (rows["limits_full"].to_numpy() > 0)]
        if len(below):
            threshold, window = below["threshold"].iloc[0], below["window"].iloc[0]
            by_window = not pd.isna(window) and threshold == ContextConfig(window=int(window)).limit
            what = f"window - {MARGIN} =" if by_window else "over_tokens ="
            which = _which(below, _hidden)
            said.append(f"its threshold ({what} {int(threshold):,}) is below the hidden prompt of {which}, which the "
                        f"provider reads at every call: each call after a summary passes it again "
                        f"({int(below['summaries'].sum()):,} summaries in {int(below['calls'].sum()):,} calls there)")
    broke = _breaks(int(config["failed_turns"]), int(config.get("lost_calls", 0) or 0), rows)
    if broke:
        said.append(f"{broke}: its figures count each call it never made at the log's own, so its saving says nothing "
                    f"of a config that works")
    return "; ".join(said)


def _breaks(failed_turns: int, lost_calls: int, rows: pd.DataFrame) -> str:
    """How a config broke turns, over its ``rows`` (its conversations); "" when it did not."""
    if failed_turns:
        where = rows[rows["failed_turns"] > 0]
        return (f"{_count(failed_turns, 'turn')} failed in {_which(where)} (the provider refused a call as too long and "
                f"nothing made room; {_count(lost_calls, 'logged call')} never made)")
    if lost_calls:
        where = rows[rows["lost_calls"] > 0]
        return f"its worker ended turns before their replies in {_which(where)} ({_count(lost_calls, 'logged call')} never made)"
    return ""


def _broken(df: pd.DataFrame) -> dict[int, str]:
    """The configs of a tune frame that broke turns (failed turns or lost calls), each with how."""
    sums = df.groupby("config", sort=True)[["failed_turns", "lost_calls"]].sum()
    hit = sums[(sums["failed_turns"] > 0) | (sums["lost_calls"] > 0)]
    rows = dict(iter(df[df["config"].isin(hit.index)].groupby("config", sort=False)))  # once, not a scan per config
    out = {}
    for config, row in zip(hit.index, hit.to_dict("records"), strict=True):
        how = _breaks(int(row["failed_turns"]), int(row["lost_calls"]), rows[config])
        if how:
            out[int(config)] = how
    return out


def _hidden(row: Mapping[str, Any]) -> str:
    """`` (30,000 tokens, measured at 180 calls)``: a conversation's hidden prompt and what it rests on."""
    import pandas as pd

    n = row.get("overhead_calls", "")  # a frame from before the column: the tokens alone
    rests = ("" if isinstance(n, str) else ", as given" if pd.isna(n)
             else ", measured only at calls whose history the file lost part of" if n == 0 else f", measured at {_count(n, 'call')}")
    return f" ({int(row['overhead']):,} tokens{rests})"


def _which(rows: pd.DataFrame, detail: Callable[[Mapping[str, Any]], str] = lambda r: "") -> str:
    """The conversations of ``rows`` named, the first three: ``c (detail)`` or ``3 conversations: a; b; c; and 2 more``."""
    read = [c for c in ("conversation", "overhead", "overhead_calls") if c in rows.columns]  # what a detail reads
    shown = "; ".join(f"{r['conversation']}{detail(r)}" for r in _records(rows[read][:3]))
    more = f"; and {len(rows) - 3} more" if len(rows) > 3 else ""
    return shown if len(rows) == 1 else f"{len(rows)} conversations: {shown}{more}"


def _count(n: float, what: str) -> str:
    n = int(n)
    return f"{n:,} {what}" if n == 1 else f"{n:,} {what}s"
