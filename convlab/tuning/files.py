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
from .columns import Rows
from .forks import Setup, rows
from .results import ResultCache, Stopped, conversation_key, rows_of
from .workers import collector_paused, run_files

__all__ = ["Swept", "Unit", "Streamed", "sweep_file", "sweep_paths"]


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
    index: int = 0  # the file's place among the sweep's (a file given twice is two places)
    conversations: list[tuple[Any, str | None, str | None, dict[int, dict[str, Any]], list[tuple[int, dict[str, Any]]]]] = \
        field(default_factory=list)
    said: list[tuple[str, str | None, type[Warning]]] = field(default_factory=list)  # (warning, passed over, its class)
    passed_over: bool = False
    not_log: bool = False  # a file that holds no chat log convlab reads (a read of its folder passes it over quietly)
    unwritable: str | None = None  # why the result cache could not be written, if it could not


def sweep_file(path: Path, unit: Unit, paused: bool = False, index: int = 0) -> Swept:
    """Read ``path``, and replay each of its conversations under every setup its kept rows do not answer
    (``paused``: the cyclic collector off while a conversation's replays run, as in a worker process of a sweep)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    out = Swept(str(path), size, index)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            convs = read_file(path)
        except ReadError as err:  # one file that cannot be read never stops the others
            out.said.append((f"{err}; passed over", str(path), ReadWarning))
            out.passed_over = True
            convs = None
    out.said[:0] = [(str(w.message), getattr(w.message, "passed_over", None), w.category) for w in caught]
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
            unit.cache.keep(key, {unit.setup_keys[j]: row for j, row in measured}, quiet=True)
            out.unwritable = unit.cache.unwritable
        out.conversations.append((c.id, c.source, key, kept, measured))
        del c, p
    return out


class Streamed:
    """A streamed sweep's results as they come, a file at a time in any order: per file its conversations and their
    rows (packed into ``table``, the frame's order restored by ``assemble``), what an earlier run kept, the files with
    no chat log, and the one warning of a result cache that cannot be written."""

    def __init__(self, files: Sequence[Path], n_configs: int, cache: ResultCache | None) -> None:
        self.files, self.n_configs, self.cache = files, n_configs, cache
        self.table = Rows()
        self.per_file: dict[int, tuple[list[tuple[Any, Any]], list[tuple[Any, ...]]]] = {}
        self.kept = 0
        self.unwritable: str | None = None
        self.not_logs: list[str] = []
        self.unread: dict[int, str] = {}  # a file that could not be read, by its place: why

    def done(self, swept: Swept) -> None:
        for text, passed_over, category in swept.said:  # as the read said it, in the sweep's process
            if issubclass(category, ReadWarning):
                warnings.warn(ReadWarning(text, passed_over=passed_over), stacklevel=5)
            else:
                warnings.warn(text, category, stacklevel=5)
        if swept.unwritable is not None and self.unwritable is None and self.cache is not None:  # said once
            self.unwritable = swept.unwritable
            self.cache.say_unwritable(swept.unwritable, stacklevel=5)
        metas, values = [], []
        for cid, source, _key, earlier, measured in swept.conversations:
            now = dict(measured)
            metas.append((cid, source))
            values += [self.table.pack(earlier[j] if j in earlier else now[j]) for j in range(self.n_configs)]
            self.kept += len(earlier)
        self.per_file[swept.index] = (metas, values)
        if swept.not_log:
            self.not_logs.append(swept.path)
        if swept.passed_over:
            self.unread[swept.index] = swept.said[-1][0].removesuffix("; passed over")

    def assemble(self) -> list[tuple[Any, Any]]:
        """Every file's rows into ``table`` in the files' order; the conversations' (id, source), in that order."""
        conversations: list[tuple[Any, Any]] = []
        for i in range(len(self.files)):
            metas, values = self.per_file.pop(i, ([], []))
            conversations += metas
            self.table.extend(values)
        return conversations

    def stopped(self, in_workers: bool) -> str:
        """What a sweep stopped halfway says: how far it got and what is kept."""
        said, cache = f"tune stopped after {len(self.per_file):,} of the {len(self.files):,} files", self.cache
        unwritable = self.unwritable or (cache.unwritable if cache is not None else None)
        if cache is None:
            return said + ": nothing was kept (no result cache), a new run starts over"
        if unwritable is not None:
            return said + f": none of them could be kept in {cache.folder} ({unwritable}), a new run starts over"
        if not (in_workers or cache.kept):  # in workers, what they kept of the files they were on is not known here
            return said + f": none of them could be kept in {cache.folder} (none finished), a new run starts over"
        return said + (f"; the rows of every conversation swept so far are kept in {cache.folder} (each as it was "
                       "swept): run it again to go on from there")


def sweep_paths(files: Sequence[Path], unit: Unit, jobs: int, show: bool) -> Streamed:
    """Sweep ``files`` under ``unit``, the largest first, in ``jobs`` worker processes (one: here), a progress bar
    of their bytes when ``show``; a stop raises ``results.Stopped`` saying how far it got and what is kept."""
    from tqdm.auto import tqdm

    sizes = [_size(f) for f in files]
    got = Streamed(files, len(unit.setups), unit.cache)
    bar = tqdm(total=sum(sizes), desc="tune", unit="B", unit_scale=True, unit_divisor=1024, disable=not show)

    def done(swept: Swept) -> None:
        got.done(swept)
        bar.update(swept.size)

    order = sorted(range(len(files)), key=lambda i: -sizes[i])  # the largest first: none left to run alone at the end
    in_workers = jobs > 1 and len(files) > 1
    try:
        if in_workers:
            run_files(sweep_file, unit, [(i, files[i]) for i in order], jobs, done)
        else:
            for i in order:
                done(sweep_file(files[i], unit, index=i))
    except KeyboardInterrupt as err:
        raise Stopped(got.stopped(in_workers)) from err
    finally:
        bar.close()
    return got


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
