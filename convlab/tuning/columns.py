"""A sweep's frame, built a column at a time: its measured columns (``COLUMNS``), its rows kept compactly (``Rows``)
and the frame itself (``frame``): what a config says once per config, what a replay measured once per row.

A sweep of a folder of real logs is hundreds of thousands of rows: a dict each, and a row at a time into pandas,
were most of a sweep's memory and a second of its time per hundred thousand rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..context import ContextConfig
from .measures import USAGE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from .forks import Setup

__all__ = ["COLUMNS", "Rows", "MISSING", "frame", "strategies"]

#: The measured columns of a tune frame, in order (after conversation, source, config and the grid keys).
COLUMNS = (
    "window",
    "strategies",
    "worker",
    "threshold",
    "calls",
    "lost_calls",
    "summary_calls",
    "limits_full",
    "limits_idle",
    "limits_overflow",
    "summaries",
    "summary_tokens",
    "summary_tokens_max",
    "resets",
    "overflows",
    "failed_turns",
    "stale",
    "first_limit_call",
    "max_count",
    "tokens_read",
    "baseline_tokens_read",
    "saved",
    "overhead",
    "overhead_calls",
    "usage_growth",
    "cached",
    "cache_write",
    "logged_cached",
    "err_cached_mean",
    "err_cached_p95",
    "cached_share",
    "compactions_warm",
    "warm_rewrite_usd",
    "usd",
    "baseline_usd",
    "usd_saved",
    "facts_kept",
    "err_exact_mean",
    "err_exact_p95",
    "err_usage_mean",
    "err_usage_p95",
    *USAGE_COLUMNS,  # last: each conversation's baseline against its log's own usage, the same on each of its rows
)


def strategies(cfg: ContextConfig) -> str:
    """A config's strategies by name, in order (the frame's ``strategies`` column)."""
    return ",".join(s.use for s in cfg.strategies)


MISSING = object()  # a measure a row does not hold

#: A measured row: its measures by name, or (names, values) as a worker packs it (``workers.packed``).
Row = Mapping[str, Any] | tuple[tuple[str, ...], tuple[Any, ...]]


class Rows:
    """Measured rows kept compactly, in order: one tuple a row over the keys the rows hold (a sweep of a folder
    of real logs holds hundreds of thousands of rows; a dict each would be most of its memory)."""

    def __init__(self) -> None:
        self.keys: tuple[str, ...] = ()
        self._at: dict[str, int] = {}
        self.values: list[tuple[Any, ...]] = []
        #: whether a row may lack a key (``MISSING`` in a column): a row of other keys than the first was packed
        self.gaps = False
        self._columns: list[tuple[Any, ...]] | None = None  # the values a column at a time, made when first asked
        self._given: tuple[str, ...] | None = None  # the keys of the last packed row that matched ``keys``

    def pack(self, row: Row) -> tuple[Any, ...]:
        """``row`` as a tuple over ``keys`` (a key new to the table added at its end)."""
        if isinstance(row, tuple):  # (keys, values): a worker's row, packed (``workers.packed``)
            names, values = row
            if names is self._given or names == self.keys:  # a unit's rows share their keys: one comparison a unit
                self._given = names
                return values
            row = dict(zip(names, values, strict=True))
        if tuple(row) == self.keys:  # nearly every row: the keys of the first, in its order
            return tuple(row.values())
        self.gaps = self.gaps or bool(self.keys)
        for k in row:
            if k not in self._at:
                self._at[k] = len(self.keys)
                self.keys += (k,)
        return tuple(row.get(k, MISSING) for k in self.keys)

    def add(self, row: Row) -> None:
        self.values.append(self.pack(row))
        self._columns = None

    def extend(self, packed: list[tuple[Any, ...]]) -> None:
        """Rows this table ``pack``ed, at its end."""
        self.values += packed
        self._columns = None

    def column(self, name: str) -> list[Any] | None:
        """Every row's ``name`` (``MISSING`` where a row lacks it), or None when no row holds it."""
        i = self._at.get(name)
        if i is None:
            return None
        if self._columns is None:  # every column at once, transposed at C speed (a row older than a key lacks it)
            width = len(self.keys)
            self._columns = list(zip(*(t if len(t) == width else t + (MISSING,) * (width - len(t)) for t in self.values),
                                     strict=True)) or [()] * width
        return list(self._columns[i])


def _typed(values: list[Any]) -> Any:
    """A column of plain Python ints (each in 64 bits), floats, or both, as the numpy array pandas would infer for
    it, made at C speed (pandas converts a list of objects one value at a time: most of the time of a sweep's frame
    of 114,900 rows); any other column (text, None, a bool, a numpy scalar, an integer past 64 bits) as it is, for
    pandas to infer (an int past 64 bits among floats makes an object column, not a float one)."""
    import numpy as np

    kinds = set(map(type, values))
    try:
        if kinds == {int}:
            return np.array(values, dtype=np.int64)
        if kinds == {float}:
            return np.array(values, dtype=np.float64)
        if kinds == {int, float}:
            np.array([v for v in values if v.__class__ is int], dtype=np.int64)  # each int in 64 bits, or pandas'
            return np.array(values, dtype=np.float64)
    except OverflowError:  # past 64 bits: pandas' own inference says what it becomes
        pass
    return values


def frame(configs: Sequence[Setup], labels: Sequence[tuple[Any, ...]], grid_keys: Sequence[str], judged: bool,
          conversations: Sequence[tuple[Any, Any]], table: Rows) -> pd.DataFrame:
    """The sweep's frame: one row per (conversation, config), ``COLUMNS`` after the grid keys; ``configs`` its setups,
    ``labels`` each one's grid values (``grid_keys``), ``judged`` whether a judge scored it (a ``retained`` column),
    ``conversations`` the (id, source) of each, ``table`` their measured rows in (conversation, config) order."""
    import pandas as pd

    keys = [k for k in grid_keys if k not in COLUMNS]
    columns = list(COLUMNS)
    if judged:  # with a judge: retained, after facts_kept
        columns.insert(columns.index("facts_kept") + 1, "retained")
    # built a column at a time: what a config says once per config, what a replay measured once per row
    per_config = []
    for j, cfg in enumerate(configs):
        said = dict(zip(grid_keys, labels[j], strict=True))
        said.update(window=cfg.config.window,  # a grid over window: the same value
                    strategies=strategies(cfg.config), worker=None if cfg.worker is None else repr(cfg.worker),
                    threshold=cfg.config.threshold)
        per_config.append(said)
    n_configs, n = len(configs), len(conversations)
    data: dict[str, list[Any]] = {
        "conversation": [c for c, _ in conversations for _ in range(n_configs)],
        "source": [src for _, src in conversations for _ in range(n_configs)],
        "config": list(range(n_configs)) * n,
    }
    for name in (*keys, *columns):
        col = table.column(name)
        if name in per_config[0]:  # the config's, unless its replay measured it (presets.AUTO: each log's window)
            data[name] = ([said[name] for said in per_config] * n if col is None else
                          [said[name] if v is MISSING else v
                           for v, said in zip(col, itertools.cycle(per_config), strict=False)])
        else:
            data[name] = ([None] * (n * n_configs) if col is None else
                          [None if v is MISSING else v for v in col] if table.gaps else col)
    df = pd.DataFrame({k: _typed(v) for k, v in data.items()}, columns=["conversation", "source", "config", *keys, *columns])
    for col_name in ("first_limit_call", "window", "threshold"):
        df[col_name] = df[col_name].astype("Int64")
    df["saved"] = 1 - df["tokens_read"] / df["baseline_tokens_read"].where(df["baseline_tokens_read"] > 0)
    df["usd_saved"] = df["baseline_usd"] - df["usd"]
    return df
