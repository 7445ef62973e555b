"""A sweep of log files, each read where it is swept: a folder's conversations never all in memory at once.

``convlab.tune(path)`` (a log file or a folder of them, or a list of paths)
sweeps the files one at a time: a unit of work is one file, read, planned and
replayed under every config where it runs (a worker process), and only its
rows come back. The calling process holds the rows and never a conversation,
so a year of sessions (``~/.claude/projects``: hundreds of MB to a few GB)
sweeps in the memory of its largest file per worker, not of the folder. Every
file is read as ``convlab.read`` of its folder reads it (``log_files``,
``read_file``): a file that is not a log is passed over, one that cannot be
read is a warning, and the rows are the ones ``tune`` of the read
conversations gives, row for row (``forks.rows`` makes them either way).

Each unit counts its own texts (a new ``ExactCounts`` per file, dropped with
it), looks up the rows an earlier run kept (``results``) before it replays
anything, and keeps each conversation's rows as soon as it is swept, so a
sweep stopped in the middle of a large export goes on from the conversation
it stopped at.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ReadError, ReadWarning
from ..importers import read_file
from ..replaying.plan import ExactCounts, plan
from .forks import Setup, rows
from .results import ResultCache, conversation_key, rows_of
from .workers import collector_paused

__all__ = ["Swept", "Unit", "sweep_file"]


@dataclass(frozen=True)
class Unit:
    """What every file of a streamed sweep is swept under: the setups, the agent, the cost model's knobs, and where
    an earlier run's rows are kept (``cache``, with each setup's key; None: no result cache)."""

    setups: Sequence[Setup]
    agent: str
    knobs: Mapping[str, Any]
    cache: ResultCache | None = None
    setup_keys: Sequence[str] = ()


@dataclass
class Swept:
    """One file's rows: per conversation its id, source, key (None without a result cache), the rows an earlier
    run kept and the rows replayed now (``(config index, measures)`` each); what the read said (``said``: its
    warnings, and why a file that cannot be read was passed over) and the file's size."""

    path: str
    size: int
    conversations: list[tuple[Any, str | None, str | None, dict[int, dict[str, Any]], list[tuple[int, dict[str, Any]]]]] = \
        field(default_factory=list)
    said: list[tuple[str, str | None, bool]] = field(default_factory=list)  # (warning, passed over, a ReadWarning)
    passed_over: bool = False
    not_log: bool = False  # a file that holds no chat log convlab reads (a read of its folder passes it over quietly)
    kept: int = 0  # rows replayed here and kept in the result cache
    unwritable: str | None = None  # why the result cache could not be written, if it could not


def sweep_file(path: Path, unit: Unit, paused: bool = False) -> Swept:
    """Read ``path``, and replay each of its conversations under every setup its kept rows do not answer
    (``paused``: the cyclic collector off while a conversation's replays run, as in a worker process of a sweep)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    out = Swept(str(path), size)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            convs = read_file(path)
        except ReadError as err:  # one file that cannot be read never stops the others
            out.said.append((f"{err}; passed over", str(path), True))
            out.passed_over = True
            convs = None
    out.said[:0] = [(str(w.message), getattr(w.message, "passed_over", None), isinstance(w.message, ReadWarning)) for w in caught]
    if convs is None:
        out.not_log = not out.passed_over
        return out
    while convs:
        c = convs.pop(0)  # dropped once swept: a file's conversations leave memory one by one
        p = plan(c)
        key, kept = None, {}
        if unit.cache is not None:
            key = conversation_key(str(c.id), p)
            kept = rows_of(unit.cache.load(key), unit.setup_keys)
        todo = [(j, s) for j, s in enumerate(unit.setups) if j not in kept]
        measured: list[tuple[int, dict[str, Any]]] = []
        if todo:
            counts = ExactCounts()
            counts.prime(p.texts())
            with collector_paused() if paused else contextlib.nullcontext():
                measured = rows(p, counts, todo, unit.agent, knobs=unit.knobs)
        if unit.cache is not None and key is not None and measured:  # kept as each conversation is swept
            before = unit.cache.kept
            unit.cache.keep(key, {unit.setup_keys[j]: row for j, row in measured}, quiet=True)
            out.kept += unit.cache.kept - before
            out.unwritable = unit.cache.unwritable
        out.conversations.append((c.id, c.source, key, kept, measured))
        del c, p
    return out
