"""Where a sweep's work runs: here, in worker processes, or on a dask cluster.

Conversations (or, with fewer conversations than cores, families of their
configs: the sweep says which) go to worker processes, one per core by
default, or to a dask.distributed cluster. Every unit runs the same function (the sweep's
``rows``, given here), so every way gives the same frame, row for row. With
a summarizer, a worker's summary calls come back to the calling process
(``_Asker`` there, ``_Answering`` here): the provider stays where it is. A
judge's calls (``convlab.tuning.probes``) take the same channel: the
worker's judge is a ``Relayed`` one that marks its requests.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import multiprocessing
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..collector import paused as collector_paused  # the pause is written once, in convlab.collector
from ..errors import ProviderError
from ..replaying.plan import ExactCounts, Plan
from .probes import Relayed

if TYPE_CHECKING:
    import concurrent.futures
    import multiprocessing.context
    import multiprocessing.queues
    import multiprocessing.sharedctypes

    import distributed

    from ..replaying.model import Summarize

#: The summary channel a worker is given: the requests queue, one answers queue per worker, the next index.
Channel = tuple["multiprocessing.queues.Queue[Any]", list["multiprocessing.queues.Queue[Any]"],
                "multiprocessing.sharedctypes.Synchronized[int]"]

__all__ = ["jobs_for", "units", "run_processes", "run_files", "run_dask", "collector_paused", "WAITING", "FORKS", "Measured", "Packed", "packed", "Relay"]

#: What a unit of work gives back: ``(config index, measures)`` per config of one conversation.
Measured = list[tuple[int, dict[str, Any]]]
#: The sweep's ``rows(plan, counts, setups, agent, *, summarize=, knobs=)``: what every unit runs (a setup: ``forks.Setup``).
Rows = Callable[..., Measured]
#: A unit's rows as a worker sends them back (``packed``): the keys once, and each row's values in their order.
Packed = tuple[tuple[str, ...], list[tuple[int, tuple[Any, ...]]]]
#: Told each unit's result as it comes: ``done(conversation index, measured)`` (packed where a worker ran it).
Done = Callable[[int, "Measured | Packed"], None]


def packed(measured: Measured) -> Measured | Packed:
    """A unit's rows for the trip back from a worker: the keys once and each row's values in their order, one tuple
    of values a row object (the configs that share a replay share its row, ``forks.rows``: pickled once), when every
    row has the first one's keys (as a unit's nearly always do; else the rows as they are). Dicts are most of what
    the calling process unpickles, on a core the workers need: a real sweep's 114,900 rows are 1,438 distinct ones.

    >>> one = {"calls": 3, "usd": 0.5}
    >>> keys, values = packed([(0, one), (4, {"calls": 2, "usd": 0.25}), (7, one)])
    >>> keys, values, values[0][1] is values[2][1]
    (('calls', 'usd'), [(0, (3, 0.5)), (4, (2, 0.25)), (7, (3, 0.5))], True)
    """
    if not measured:
        return measured
    keys = tuple(measured[0][1])
    seen: dict[int, tuple[Any, ...]] = {}  # by the row object (all alive in ``measured``): equal values of other types stay apart
    out = []
    for j, row in measured:
        values = seen.get(id(row))
        if values is None:
            if tuple(row) != keys:
                return measured
            values = seen[id(row)] = tuple(row.values())
        out.append((j, values))
    return keys, out


def jobs_for(jobs: int | None) -> int:
    """How many processes: ``jobs``, or every core this process may use."""
    if jobs is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            return os.cpu_count() or 1
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be a positive whole number (1: one process, no workers) or None (every core), got {jobs!r}")
    return jobs


def units(plans: list[Plan], n_configs: int, chunk: int | None, jobs: int) -> list[tuple[int, list[int]]]:
    """The units of work: ``(conversation, config indices)``.

    By default a conversation with all its configs (they share the most);
    with fewer conversations than jobs, each conversation's configs in as
    many runs as keep every job busy. ``chunk`` configs a unit when given.
    The longest conversations go first, so that none is left to run alone
    at the end.
    """
    if chunk is None:
        parts = max(1, -(-jobs // max(1, len(plans))))
        chunk = max(1, -(-n_configs // parts))
    tasks = [(i, list(range(k, min(k + chunk, n_configs)))) for i in range(len(plans)) for k in range(0, n_configs, chunk)]
    tasks.sort(key=lambda t: -len(plans[t[0]].nodes) * len(t[1]))
    return tasks


#: Whether worker processes are forked (Linux): they start with what this process holds, unpickled.
FORKS = "fork" in multiprocessing.get_all_start_methods()

#: Worker processes per job when a sweep's summary calls go to a real model: a
#: worker waiting for a summary (seconds, on the network) leaves its core to another.
WAITING = 4

@dataclass(frozen=True)
class Relay:
    """What a worker's channel carries: its summary calls (``summaries``), a judge's calls (``judge_window``:
    the judge's window, None without a judge) and how many ``probes`` the judge asks per compaction."""

    summaries: bool = True
    judge_window: int | None = None
    probes: int = 5


_WORK: tuple | None = None  # in a worker process: (rows, plans, counts, configs, agent, knobs, summarize, bases, judging), from _start_worker


def _start_worker(rows: Callable[..., Any], plans: list[Plan], counts: ExactCounts, configs: list[Any], agent: str,
                  knobs: dict[str, Any], channel: Channel | None, bases: Mapping[int, Any], relay: Relay = Relay()) -> None:
    global _WORK
    # forked while the calling process paused its collector (``tune``): a worker runs with it on between its
    # units, paused through each one (``_task``)
    gc.enable()
    asker = None if channel is None else _Asker(*channel)
    judge = None if asker is None or relay.judge_window is None else Relayed(asker, relay.judge_window)
    _WORK = (rows, plans, counts, configs, agent, knobs, asker if relay.summaries else None, bases,
             {} if judge is None else {"judge": judge, "probes": relay.probes})


def _task(i: int, js: list[int]) -> tuple[int, Measured | Packed]:
    """One unit of work in a worker process, the collector paused through it and left to its own thresholds after
    (a full collection at the end of every unit walked the worker's heap a thousand times in a sweep of many short
    conversations: a third of the worker's time; a finished replay is freed by reference counting)."""
    rows, plans, counts, configs, agent, knobs, summarize, bases, judging = _WORK  # type: ignore[misc]  # set by _start_worker before any task
    counts.prime(plans[i].texts())  # once per worker: a text it counted before is not counted again
    with collector_paused(collect=False):
        return i, packed(rows(plans[i], counts, [(j, configs[j]) for j in js], agent, summarize=summarize, knobs=knobs,
                              base=bases.get(i), **judging))


class _Stopped(Exception):
    """The calling process stopped the sweep while a worker waited for a summary."""


class _Asker:
    """In a worker process: summary requests go to the calling process, which
    holds the summarizer and the cache, and wait for its answer."""

    def __init__(self, requests: multiprocessing.queues.Queue[Any], answers: list[multiprocessing.queues.Queue[Any]],
                 taken: multiprocessing.sharedctypes.Synchronized[int]) -> None:
        with taken.get_lock():
            self.index = taken.value
            taken.value += 1
        self.requests, self.answer = requests, answers[self.index]

    def __call__(self, request: Mapping[str, Any], tokens: int, guessed: bool) -> dict[str, Any] | None:
        self.requests.put((self.index, dict(request), tokens, guessed))
        kind, payload = self.answer.get()
        if kind == "reply":
            return payload
        if kind == "refused":
            raise ProviderError(*payload)
        raise _Stopped("the sweep was stopped")


class _Answering:
    """In the calling process: answers the workers' summary requests from the
    summarizer and the cache, a few at a time (they wait on the network), and
    keeps the first error that is not a refusal to raise it here."""

    def __init__(self, ctx: multiprocessing.context.BaseContext, jobs: int, ask: Summarize) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.requests = ctx.Queue()
        self.answers = [ctx.Queue() for _ in range(jobs)]
        self.taken = ctx.Value("i", 0)
        self.ask = ask
        self.failed: list[BaseException] = []
        self.calls = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="convlab-summaries")
        self.thread = threading.Thread(target=self._serve, name="convlab-summaries", daemon=True)
        self.thread.start()

    @property
    def channel(self) -> Channel:
        return (self.requests, self.answers, self.taken)

    def _serve(self) -> None:
        while True:
            item = self.requests.get()
            if item is None:
                return
            self.calls.submit(self._answer, *item)

    def _answer(self, index: int, request: dict[str, Any], tokens: int, guessed: bool) -> None:
        answer: tuple[str, object]  # ("reply", the reply), ("refused", (kind, message)) or ("stop", None)
        try:
            answer = ("reply", self.ask(request, tokens, guessed))
        except ProviderError as err:
            answer = ("refused", (err.kind, str(err)))
        except BaseException as err:  # the summarizer's own fault: the sweep stops with it, here
            self.failed.append(err)
            answer = ("stop", None)
        self.answers[index].put(answer)

    def close(self, stopping: bool) -> None:
        if stopping:
            for q in self.answers:  # a worker still waiting stops too
                q.put(("stop", None))
        self.requests.put(None)
        self.thread.join()
        self.calls.shutdown(wait=True)


def run_processes(rows: Rows, plans: list[Plan], counts: ExactCounts, parsed: list[Any], agent: str,
                  knobs: dict[str, Any], tasks: list[tuple[int, list[int]]], jobs: int, done: Done,
                  ask: Summarize | None = None, bases: Mapping[int, Any] | None = None, relay: Relay = Relay()) -> None:
    """The tasks (``units``) on ``jobs`` worker processes of this machine, each running ``rows``;
    ``ask`` answers the workers' summary calls here (None: the stand-in), and a judge's when
    ``relay`` says the sweep has one. ``bases``: per conversation, its baseline replay run here
    already (``rows``' ``base``; forked workers only).

    Workers are forked where the platform can (Linux: they start in
    milliseconds with the tokenizer and the plans already loaded), else
    spawned. A worker gets the plans once, when it starts, and sends back
    only rows. With a summarizer, a worker's summary calls come back here
    (``_Answering``): the provider and the cache stay in this process, and
    the provider is never pickled.
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    jobs = min(jobs, len(tasks))
    ctx = mp.get_context("fork" if FORKS else "spawn")
    answering = None if ask is None else _Answering(ctx, jobs, ask)
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_start_worker,
                               initargs=(rows, plans, counts, parsed, agent, knobs, None if answering is None else answering.channel,
                                         bases or {}, relay))
    stopping = True
    try:
        # forked workers start with everything this process holds; frozen, the
        # collector never walks it, so a worker copies only the pages it writes
        gc.freeze()
        try:
            futures = [pool.submit(_task, *tasks[0])]  # with fork: every worker starts here
        finally:
            gc.unfreeze()
        futures += [pool.submit(_task, i, js) for i, js in tasks[1:]]
        for future in as_completed(futures):
            done(*future.result())
        stopping = False
    except _Stopped:
        if answering is None or not answering.failed:
            raise  # pragma: no cover - only the summarizer's own error stops a worker
    except KeyboardInterrupt:  # a notebook's interrupt signals this process only: its workers are stopped now
        _stop_workers(pool)
        raise
    finally:
        if answering is not None:
            answering.close(stopping)
        pool.shutdown(wait=True, cancel_futures=True)
    if answering is not None and answering.failed:
        raise answering.failed[0]


_FILES: Any = None  # in a worker process of a streamed sweep: (sweep_file, its Unit), from _start_files


def _start_files(sweep_file: Callable[..., Any], unit: object) -> None:
    global _FILES
    _FILES = (sweep_file, unit)


def _file_task(item: tuple[int, object]) -> object:
    sweep_file, unit = _FILES
    index, path = item
    return sweep_file(path, unit, paused=True, index=index)


def _stop_workers(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Terminate a process pool's workers and wait for them (a worker blocked on the pool's queue, or busy, would
    keep ``shutdown`` and the interpreter's exit waiting)."""
    processes = list(getattr(pool, "_processes", None) or {})
    procs = [pool._processes[pid] for pid in processes if pid in pool._processes] if processes else []
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(timeout=5)
        if proc.is_alive():  # pragma: no cover - a worker that ignores SIGTERM
            proc.kill()
            proc.join()


def run_files(sweep_file: Callable[..., Any], unit: object, paths: Sequence[tuple[int, object]], jobs: int,
              done: Callable[[Any], None]) -> None:
    """A streamed sweep's files (``convlab.tuning.files``) on ``jobs`` worker processes, the largest first, each
    running ``sweep_file(path, unit, index=i)`` for each ``(i, path)``; ``done`` is told each file's rows as they come. A worker starts with
    what this process holds (forked where the platform can), which in a streamed sweep is no conversation."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = mp.get_context("fork" if FORKS else "spawn")
    jobs = min(jobs, len(paths))
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_start_files, initargs=(sweep_file, unit))
    queue = iter(paths)
    try:
        # forked workers start with what this process holds; frozen, a worker's collections (one per
        # conversation, collector_paused) never walk it
        gc.freeze()
        try:
            pending = {pool.submit(_file_task, next(queue))}  # with fork: every worker starts here
        finally:
            gc.unfreeze()
        # a few files in flight a worker, not all of them: a finished file's rows are let go as soon as they are
        # told (a future keeps its result), and a stop cancels little
        for path in itertools.islice(queue, 2 * jobs - 1):
            pending.add(pool.submit(_file_task, path))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                done(future.result())
                next_path = next(queue, None)
                if next_path is not None:
                    pending.add(pool.submit(_file_task, next_path))
            del finished, future
    except BaseException:
        # stopped (Ctrl-C, a notebook's interrupt, which signals this process only): the workers are stopped now,
        # not after the files they are on (minutes, for a large one); what they swept is kept already
        # (convlab.tuning.files keeps each conversation's rows as it is swept)
        _stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_DASK_COUNTS: tuple[str, ExactCounts] | None = None  # in a dask worker process: the texts it counted for one sweep


#: Batches of units a dask worker thread: enough that none waits at the end, few enough that the scheduler's
#: per-task cost stays small.
BATCHES = 8


@dataclass(frozen=True)
class _Sealed:
    """A value a dask task takes as it is: dask walks every list, tuple, set and dict in a task's arguments
    looking for futures, and serializes a list's items one by one (a second each for a sweep's thousand
    plans and hundred thousand (unit, config) pairs); an object of its own is pickled once, whole."""

    value: Any


def _dask_batch(rows: Rows, plans: _Sealed | list[_Sealed], configs: _Sealed, setups: _Sealed, agent: str,
                knobs: dict[str, Any], sweep: str) -> _Sealed:
    """A batch of units on a dask worker, each as ``_task`` runs one in a local worker process (``setups``: each
    unit's config indices into ``configs``, the sweep's, sent to every worker once): the worker counts
    its own conversations' texts (once each, whatever batch brings them), and the cyclic collector is paused
    while a unit's replays run. ``sweep`` names the sweep: a worker of a long-lived cluster keeps the counts of
    the newest sweep only."""
    global _DASK_COUNTS
    if _DASK_COUNTS is None or _DASK_COUNTS[0] != sweep:
        _DASK_COUNTS = (sweep, ExactCounts())
    counts = _DASK_COUNTS[1]
    parsed = configs.value
    out = []
    for plan, js in zip(plans.value if isinstance(plans, _Sealed) else [p.value for p in plans], setups.value, strict=True):
        counts.prime(plan.texts())
        # no full collection after: a dask worker holds the cluster's own state, which a collection a unit would
        # walk again and again (12 times slower); what the replays left goes with the worker's own collections
        with collector_paused(collect=False):
            out.append(packed(rows(plan, counts, [(j, parsed[j]) for j in js], agent, knobs=knobs)))
    return _Sealed(out)  # one pickle back, not one a row


def _batches(tasks: list[tuple[int, list[int]]], costs: list[int], n: int) -> list[list[tuple[int, list[int]]]]:
    """``tasks`` (longest first, their estimated ``costs`` beside) in ``n`` batches of about equal cost: each to
    the batch that holds least so far. Batch ``k`` starts with the ``k``-th longest unit, and a long one is
    left alone in its batch while the short ones fill the others (a unit added to a long one's batch would
    run after it, at the end of the sweep).

    >>> _batches([(0, [0]), (1, [0]), (2, [0]), (3, [0])], [10, 4, 3, 2], 2)
    [[(0, [0])], [(1, [0]), (2, [0]), (3, [0])]]
    """
    batches: list[list[tuple[int, list[int]]]] = [[] for _ in range(n)]
    held = [(0, k) for k in range(n)]  # (cost so far, batch): a heap
    for task, cost in zip(tasks, costs, strict=True):
        load, k = heapq.heappop(held)
        batches[k].append(task)
        heapq.heappush(held, (load + cost, k))
    return batches


def run_dask(rows: Rows, plans: list[Plan], counts: ExactCounts, parsed: list[Any], agent: str,
             knobs: dict[str, Any], tasks: list[tuple[int, list[int]]], client: distributed.Client | str | None,
             done: Done) -> None:
    """The tasks (``units``) on a dask.distributed cluster (``client``: a Client, an address, or None for
    the current one), each running ``rows``; the plans are scattered once, and each worker counts the texts
    of the conversations it is given (``_dask_batch``), as a local worker process does."""
    try:
        import distributed
    except ImportError as err:  # pragma: no cover - an install problem
        raise ImportError("scheduler='dask' needs dask.distributed: pip install 'convlab[dask]'") from err
    own = False
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError as err:
            raise ValueError("scheduler='dask' needs a client: pass client=<distributed.Client or address>, or start one first") from err
    elif isinstance(client, str):
        client = distributed.Client(client)
        own = True
    try:
        # units go in batches, a few per worker thread: a dask task costs milliseconds of the scheduler's time (on a
        # small machine, time the workers lose), and a sweep of many short conversations is thousands of units
        threads = sum(client.nthreads().values()) or 1
        n = max(1, min(len(tasks), BATCHES * threads))
        batches = _batches(tasks, [len(plans[i].nodes) * len(js) for i, js in tasks], n)
        sweep = uuid.uuid4().hex
        held = list(dict.fromkeys(i for i, _ in tasks))
        if len(held) == len(tasks):  # a conversation a unit: a batch's plans scattered together, beside its task
            given: list[Any] = client.scatter([_Sealed([plans[i] for i, _ in batch]) for batch in batches], broadcast=False, hash=False)
        else:  # a conversation's configs in chunks, in several batches: each plan scattered once, not once a batch
            one = dict(zip(held, client.scatter([_Sealed(plans[i]) for i in held], broadcast=False, hash=False), strict=True))
            given = [[one[i] for i, _ in batch] for batch in batches]
        configs = client.scatter(_Sealed(parsed), broadcast=True, hash=False)  # once to every worker, not once a batch
        where: dict[Any, list[tuple[int, list[int]]]] = {}  # a future's key -> its batch

        def submit(k: int) -> distributed.Future:
            future = client.submit(_dask_batch, rows, given[k], configs, _Sealed([js for _, js in batches[k]]),
                                   agent, knobs, sweep, pure=False, priority=n - k)
            where[future.key] = batches[k]
            return future

        # a batch in flight a worker thread, the next given to the first one free, in the batches' order (longest
        # first): submitted at once, dask queued batches behind a worker's long one (a 4-second conversation of
        # the real corpus) while the other worker ran out of work
        order = iter(range(n))
        running = distributed.as_completed([submit(k) for k in itertools.islice(order, threads)])
        for future in running:
            k = next(order, None)
            if k is not None:  # before this one's rows come back: the worker is free now
                running.add(submit(k))
            for (i, _), measured in zip(where.pop(future.key), future.result().value, strict=True):
                done(i, measured)
    finally:
        if own:
            client.close()
