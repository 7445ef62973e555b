"""A sweep's results kept on disk: run ``tune`` again and only what is new is replayed.

A result is one (conversation, config)'s row of measures, kept under two keys:

- the conversation's: sha256 of what a replay reads of it (its id and its plan:
  every message with its usage and time, the calls, the turns), so a file
  that changed between runs is replayed again, and an unchanged one is not,
  wherever it moved;
- the config's: sha256 of the parsed config, the worker (its repr), the agent,
  the cost model's knobs (``Options.replaying``: ``summary_size``,
  ``overhead``, ``summary_request``, the pricing), what answers the summary
  calls and a judge's (``summaries.answerer``), and convlab itself (its
  version and a hash of its own source files: a change to convlab replays
  everything again).

Each conversation's results are one JSON file, ``<folder>/<key[:2]>/<key>.json``,
written to a temporary name and renamed into place after each unit of work
(a conversation's configs, or a part of them), so a sweep stopped halfway
(Ctrl-C, a killed kernel) keeps every unit it finished, and a file on disk is
always whole. An entry is read as untrusted: one that cannot be read, or
whose key or rows are not what this module writes (``ROW``: every measure a
sweep writes, each of its type, finite or NaN, not negative where the sweep's
figure never is, no larger than ``LARGEST``), is made again. A folder
that cannot be written (read-only, a full disk) loses nothing of the sweep:
one ``CacheWarning`` names it and why, and the results stay in memory.

A sweep with a summarizer or a judge keeps no rows: its summaries and the
judge's answers are kept in their own caches (``summary_cache``,
``judge_cache``), and a call that failed is made again by the next run, which
a kept row would hide.

The folder: ``result_cache=`` (``Options``; a path), or
``$XDG_CACHE_HOME/convlab/tune`` (default ``~/.cache/convlab/tune``);
``result_cache=False`` keeps nothing (``CONVLAB_RESULT_CACHE=off`` in the
environment makes that the default). Clear it with ``rm -rf`` of the folder.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import pickle
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CacheWarning
from ..jsondata import write_whole
from .measures import USAGE_COLUMNS

if TYPE_CHECKING:
    from ..replaying.plan import Plan
    from .forks import Setup

__all__ = ["ResultCache", "for_sweep", "default_folder", "conversation_key", "setup_key", "rows_of", "Stopped",
           "RESULT_HINT", "ROW", "LARGEST"]


#: How a caller gives the result cache a folder that can be written, or does without one: what the
#: ``CacheWarning`` of a folder that cannot be written says, to a caller of ``tune`` and a user of ``convlab tune``.
RESULT_HINT = ("result_cache=DIR to tune, --result-cache DIR to `convlab tune`, or XDG_CACHE_HOME=DIR (the default "
               "folder is under it); result_cache=False or --no-result-cache keeps none")


#: What a kept row holds: each measure a sweep writes (``measures.measures`` and the baseline's figures a row
#: carries, ``forks.rows``) and its kind: ``"count"`` a whole number, not negative (``"count?"``: or None);
#: ``"int"`` a whole number; ``"amount"`` a number, not negative, or NaN (unknown); ``"signed"`` a number or NaN.
ROW: dict[str, str] = {
    **dict.fromkeys(("calls", "lost_calls", "summary_calls", "limits_full", "limits_idle", "limits_overflow",
                     "summaries", "summary_tokens", "summary_tokens_max", "resets", "overflows", "failed_turns", "stale",
                     "max_count", "tokens_read", "cached", "cache_write", "baseline_tokens_read"), "count"),
    **dict.fromkeys(("first_limit_call", "overhead_calls"), "count?"),
    "overhead": "int",
    **dict.fromkeys(("logged_cached", "err_cached_p95", "err_exact_p95", "err_usage_p95", "cached_share", "usd",
                     "baseline_usd", "compactions_warm", "warm_rewrite_usd", "facts_kept"), "amount"),
    **dict.fromkeys(("err_exact_mean", "err_cached_mean", "err_usage_mean", "usage_growth"), "signed"),
    **dict.fromkeys(USAGE_COLUMNS, "amount"),  # the baseline against the log's own usage (NaN where it has none)
}
#: The largest figure a kept row may hold, either way (2^53: no sweep's tokens or dollars come near it; the
#: largest whole number a float holds exactly).
LARGEST = 2**53


def _figure(value: object, kind: str) -> bool:
    """Whether ``value`` is a figure of ``kind`` (``ROW``'s) as a sweep writes it."""
    if value is None:
        return kind == "count?"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    measured = kind in ("amount", "signed")  # a float: a count is always written whole
    if isinstance(value, float) and (not measured or math.isnan(value)):
        return measured
    return abs(value) <= LARGEST and (value >= 0 or kind in ("int", "signed"))  # abs: inf is past it


def _whole(row: object) -> bool:
    """Whether ``row`` is a row as a sweep writes it: ``ROW``'s measures and no other, each a figure of its kind."""
    return isinstance(row, dict) and row.keys() == ROW.keys() and all(_figure(row[k], kind) for k, kind in ROW.items())


class Stopped(KeyboardInterrupt):
    """A sweep stopped by the user (Ctrl-C, a notebook's interrupt): its message says what was kept."""


def for_sweep(folder: str | os.PathLike[str] | bool | None) -> ResultCache | None:
    """The ``ResultCache`` a sweep keeps its rows in (``Options.result_cache``): None for ``False`` (or no default
    folder: ``CONVLAB_RESULT_CACHE=off``), the default folder for None, else that folder."""
    if folder is False:
        return None
    where = default_folder() if folder is None or folder is True else Path(folder)
    return None if where is None else ResultCache(where)


def default_folder() -> Path | None:
    """Where a sweep's results are kept unless told otherwise: ``$XDG_CACHE_HOME/convlab/tune``; None when
    ``CONVLAB_RESULT_CACHE`` is ``off`` (or ``0``, ``false``, ``no``)."""
    if os.environ.get("CONVLAB_RESULT_CACHE", "").strip().lower() in ("off", "0", "false", "no"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "convlab" / "tune"


@functools.cache
def _code() -> str:
    """A hash of convlab's own source files (its version among them): what a result was measured by."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _digest(value: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False).encode()).hexdigest()


def conversation_key(conversation_id: str, plan: Plan) -> str:
    """The key of a conversation's results: what a replay reads of it (its plan), and its id."""
    return _digest({"id": conversation_id, "head": plan.head, "nodes": plan.nodes, "lost": sorted(plan.lost),
                    "turns": [[t.start, t.parent, t.nodes, t.steps, t.time] for t in plan.turns]})


def setup_key(setup: Setup, agent: str, knobs: Mapping[str, Any], answering: Mapping[str, Any]) -> str:
    """The key of a config's results: the config, its worker (its repr and, where it pickles, all its state),
    the agent, the knobs (the prices: the model, the cache rule and lifetime, genai-prices' version and the
    day, as prices change), who answers the summary and judge calls (``answering``), and convlab itself."""
    pricing = knobs.get("pricing")
    priced = None
    if pricing is not None:
        priced = {"model": pricing.model, "rule": pricing.rule, "ttl": pricing.ttl, "summarizer_model": pricing.summarizer_model}
        if pricing.model is not None:
            priced |= {"genai_prices": _version("genai-prices"), "day": datetime.date.today().isoformat()}
    return _digest({"config": setup.config.to_dict(), "worker": _worker(setup.worker), "agent": agent,
                    "knobs": {k: v for k, v in knobs.items() if k != "pricing"}, "pricing": priced,
                    "answering": dict(answering), "code": _code()})


def _worker(worker: object) -> str:
    """A worker as a key reads it: its repr, and the hash of its pickle where it pickles (a repr may leave out
    a knob that changes what it does)."""
    try:
        state = hashlib.sha256(pickle.dumps(worker, protocol=4)).hexdigest()
    except Exception:  # a worker that does not pickle runs in this process only: its repr is all there is
        state = ""
    return f"{worker!r} {state}"


@functools.cache
def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _plain(value: object) -> object:
    """What JSON does not write itself, as JSON keeps it (``json.dumps``' ``default``): numpy's bool as a bool,
    its numbers as Python's (its floats are Python floats already, NaN stays NaN); anything else a TypeError."""
    if type(value).__name__ == "bool_":  # numpy's
        return bool(value)
    try:
        number = float(value)  # type: ignore[arg-type]  # numpy's numbers
    except (TypeError, ValueError):
        raise TypeError(f"a {type(value).__name__} is not a number JSON can keep") from None
    return int(number) if number.is_integer() and "int" in type(value).__name__ else number


class ResultCache:
    """One sweep's results on disk (see the module): ``load`` a conversation's, ``keep`` a unit's."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).expanduser()
        self.unwritable: str | None = None
        self.kept = 0

    def __repr__(self) -> str:
        return f"ResultCache({str(self.folder)!r})"

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def load(self, key: str) -> dict[str, dict[str, Any]]:
        """The rows kept for the conversation ``key``, by config key; ``{}`` for none, or for an entry that is
        not whole or not what a sweep writes (any row of it: a figure missing, of another type, infinite, past
        ``LARGEST`` or negative where the sweep's never is): read as untrusted, it is replayed and written again."""
        try:
            with open(self._path(key), encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError, RecursionError):  # RecursionError: json's reader, on an entry nested thousands deep
            return {}
        rows = entry.get("rows") if isinstance(entry, dict) and entry.get("key") == key else None
        if not isinstance(rows, dict) or not all(isinstance(k, str) and _whole(r) for k, r in rows.items()):
            return {}
        return rows

    def keep(self, key: str, rows: Mapping[str, Mapping[str, Any]], quiet: bool = False) -> None:
        """``rows`` (by config key) added to the conversation ``key``'s entry, written whole. A folder that cannot
        be written: one ``CacheWarning`` (``quiet``: none; a worker process of a streamed sweep says it through
        its results, and the sweep warns once), and the sweep goes on with its results in memory."""
        if self.unwritable is not None:
            return
        merged = {**self.load(key), **rows}
        try:
            write_whole(self._path(key), {"key": key, "rows": merged}, default=_plain)  # a reader sees the old entry or the whole new one
        except (OSError, TypeError, ValueError) as err:  # a folder that cannot be written; a value JSON cannot write
            self.unwritable = (err.strerror if isinstance(err, OSError) else None) or str(err) or type(err).__name__
            if not quiet:
                self.say_unwritable(self.unwritable, stacklevel=4)
            return
        self.kept += len(rows)

    def say_unwritable(self, reason: str, stacklevel: int = 3) -> None:
        """The one ``CacheWarning`` of a folder that cannot be written."""
        warnings.warn(CacheWarning(
            f"the result cache {self.folder} cannot be written ({reason}): this sweep's results are used "
            f"but not kept, so a later run replays them again (give it a folder that can be written: {RESULT_HINT})",
            folder=str(self.folder), reason=reason), stacklevel=stacklevel)


def rows_of(entry: Mapping[str, Mapping[str, Any]], keys: Iterable[str]) -> dict[int, dict[str, Any]]:
    """The rows of ``entry`` for the config ``keys`` (by position), where it has them."""
    return {j: dict(entry[k]) for j, k in enumerate(keys) if k in entry}
