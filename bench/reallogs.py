"""Rows on real logs (issue 39): reading each format, and a 100-config sweep, on a corpus of the real logs.

The corpus is ``realcorpus``'s: the shared real chat logs and coding-agent
sessions copied with fresh ids and their own texts up to a size per format.
Without the real logs (a clone without ``../shared``) these rows say so and
have no ratio.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from . import realcorpus
from .harness import Row, log, once, paired
from .sweep import BASE, GRID

#: bytes of each format: what the read rows read (full, smoke: one copy of each source file)
READ_BYTES = (20 << 20, 0)
#: bytes of each format in the sweep's corpus (full); the smoke sweep takes the shortest conversation of each format
SWEEP_BYTES = 1 << 20
READ_GOAL = 3
#: the bench's MB (its table prints bytes in 2**20 and 2**30)
MB = 1 << 20


def run_read(smoke: bool) -> list[Row]:
    """One row per format: ``convlab.read`` of the format's folder over ``json.loads`` of its files."""
    import convlab

    try:
        folder, info = realcorpus.build(READ_BYTES[1 if smoke else 0], progress=log)
    except realcorpus.Missing as err:
        return [Row("real-read", "reading real logs, each format / json.loads", READ_GOAL, "<=", error=f"not available: {err}")]
    rows = []
    for fmt, held in sorted(info.items()):
        files = list(realcorpus.files(folder, fmt))
        row = Row(f"read-{fmt}", f"reading real {fmt} logs ({held['bytes'] / MB:.1f} MB, {held['files']:,} files) / "
                                 "json.loads of the same files", READ_GOAL, "<=", num_label="convlab.read", den_label="json.loads")
        out: dict[str, list] = {}

        def read(fmt: str = fmt, out: dict[str, list] = out) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # what the real logs hold that convlab repairs is said once per file
                out["convs"] = convlab.read(folder / fmt, progress=False)

        def loads(files: list[Path] = files) -> None:
            for p in files:
                realcorpus.json_loads(p)

        read()  # warm up: the importer's modules
        num, den, a, b = paired(lambda: once(read), lambda: once(loads), 3 if smoke else 5)
        row.finish(num, den)
        convs = out["convs"]
        messages = sum(len(c.tree) for c in convs)
        row.note = (f"{len(convs):,} conversations, {messages:,} messages ({held['copies']:,} copies of "
                    f"{len(held['sources'])} real file{'s' if len(held['sources']) > 1 else ''}, fresh ids and texts); "
                    f"{num / max(messages, 1) * 1e6:.1f} µs a message read, {den / max(messages, 1) * 1e6:.1f} µs parsed; "
                    f"both sides read the files; best of {3 if smoke else 5}, alternating")
        if {c.format for c in convs} != {fmt}:
            row.error = f"read as {sorted({c.format for c in convs})}, not {fmt}"
        row.extra = {"samples_num": a, "samples_den": b, "corpus": {k: v for k, v in held.items() if k != "sources"},
                     "conversations": len(convs), "messages": messages}
        rows.append(row)
    return rows


def corpus(smoke: bool) -> list:
    """The sweep's conversations: every format's corpus (full), the shortest conversation of each (smoke)."""
    import convlab

    folder, info = realcorpus.build(0 if smoke else SWEEP_BYTES, progress=log)
    convs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fmt in sorted(info):
            got = convlab.read(folder / fmt, progress=False)
            convs += sorted(got, key=lambda c: len(c.tree))[:1] if smoke else got  # smoke: the shortest of each
    return convs


def sweep_grid(smoke: bool) -> dict:
    """The real-log sweeps' grid: the ``sweep`` row's (100 configs), a corner of it in the smoke mode."""
    return GRID if not smoke else {k: v[:2] for k, v in GRID.items() if k != "strategy[0].idle_secs"}


def run_sweep(smoke: bool) -> Row:
    """A 100-config sweep of the real corpus over one replay of each of its conversations (the ``sweep`` row's
    grid and measure, on real logs)."""
    import convlab

    row = Row("real-sweep", "a 100-config sweep / one replay of the same corpus, on real logs of every format", 3, "<=",
              num_label="tune", den_label="replay")
    try:
        convs, grid = corpus(smoke), sweep_grid(smoke)
    except realcorpus.Missing as err:
        row.error = f"not available: {err}"
        return row
    frames = []

    def sweep() -> None:
        frames.append(convlab.tune(convs, BASE, grid=grid, progress=False, result_cache=False))

    def replay_all() -> None:
        for c in convs:
            convlab.replay(c)

    replay_all()  # warm up (imports, the tokenizer)
    repeats = 1 if smoke else 3
    num, den, a, b = paired(lambda: once(sweep), lambda: once(replay_all), repeats)
    df = frames[-1]
    row.finish(num, den)
    messages = sum(len(c.tree) for c in convs)
    row.name = (f"a {len(df) // len(convs)}-config sweep / one replay of the same corpus, on real logs "
                f"({len(convs):,} conversations of {len({c.format for c in convs})} formats, {messages:,} messages)")
    fired = int((df["limits_full"] + df["limits_idle"] + df["limits_overflow"] > 0).sum())
    row.note = (f"convlab.tune over the sweep row's grid (window, reset idle_secs, summarize over_tokens) in worker processes, "
                f"one per core (the default), no result cache, best of {repeats} alternating; {fired:,} of {len(df):,} "
                f"(conversation, config) rows hold a call; denominator: convlab.replay of each conversation, one after the other")
    row.extra = {"samples_num": a, "samples_den": b, "rows": len(df), "fired": fired, "messages": messages,
                 "formats": sorted({c.format for c in convs})}
    return row


#: the coding agents' formats: what a year of sessions in one folder holds (~/.claude/projects, ~/.codex/sessions)
AGENT_FORMATS = {"claude_code", "codex", "pi", "gemini_cli", "copilot_cli"}
#: bytes of each agent format in the memory row's corpus: 5 x 200 MB = 1 GB (full); one copy of each file (smoke)
STREAM_BYTES = (200 << 20, 0)
#: the smaller corpus the note compares with, to show the memory does not grow with the folder
STREAM_SMALL = (20 << 20, 0)


def run_stream_memory(smoke: bool) -> Row:
    """Peak memory of ``convlab.tune(folder)`` over a 1 GB folder of real coding-agent sessions, against 1 GB."""
    from .logs import probe

    row = Row("stream-memory", "a streamed sweep of a 1 GB folder of real agent sessions: peak memory / 1 GB", 1, "<=",
              unit="B", num_label="tune(folder)", den_label="1 GB")
    try:
        big, big_info = realcorpus.build(STREAM_BYTES[1 if smoke else 0], formats=AGENT_FORMATS, progress=log)
        small, small_info = realcorpus.build(STREAM_SMALL[1 if smoke else 0], formats=AGENT_FORMATS, progress=log)
    except realcorpus.Missing as err:
        row.error = f"not available: {err}"
        return row
    timeout = 300 if smoke else 3600
    got = probe(big, "stream", timeout, module="bench.sweepprobe")
    if "error" in got:
        row.error = got["error"]
        return row
    few = probe(small, "stream", timeout, module="bench.sweepprobe") if not smoke else got
    eager = probe(small, "read", timeout, module="bench.sweepprobe") if not smoke else got  # smoke: the streamed run only
    size = sum(v["bytes"] for v in big_info.values())
    small_size = sum(v["bytes"] for v in small_info.values())
    row.name = (f"a streamed sweep of a {size / (1 << 30):.2f} GB folder of real agent sessions ({got['conversations']:,} "
                f"conversations, {sum(v['files'] for v in big_info.values()):,} files): peak memory / 1 GB")
    row.finish(got["bound"], 1 << 30)  # the bench's GB, as its table prints bytes: 2**30
    row.note = (f"convlab.tune(folder) over window x summarize over_tokens (4 configs: bench/sweepprobe.py) in {got['jobs']} "
                f"worker processes, in a fresh interpreter, no result cache, {got['seconds']:.0f} s; the figure is the "
                f"calling process's peak (VmHWM) {got['peak'] / MB:.0f} MB + {got['jobs']} x the largest worker's peak "
                f"{got['worker'] / MB:.0f} MB (ru_maxrss; forked workers share the caller's pages, counted twice). "
                f"At {small_size / MB:.0f} MB: {few['peak'] / MB:.0f} MB + {few['jobs']} x {few['worker'] / MB:.0f} MB; "
                f"tune(convlab.read(folder)) of that {eager['peak'] / MB:.0f} MB + {eager['jobs']} x "
                f"{eager['worker'] / MB:.0f} MB (every conversation read first, and every worker forked with them)")
    row.extra = {"stream": got, "stream_small": few, "read_small": eager, "bytes": size, "small_bytes": small_size}
    return row


def run_cluster(smoke: bool) -> Row:
    """The real sweep (``real-sweep``'s corpus and grid) on a ``distributed.LocalCluster`` of worker processes over the
    same sweep on local worker processes: equal frames, and no slower."""
    import os

    import pandas as pd

    import convlab

    row = Row("cluster", "the real-log sweep on a dask LocalCluster of worker processes / on local worker processes",
              1, "<=", num_label="dask", den_label="local")
    try:
        import distributed
    except ImportError as err:
        row.error = f"not available: {err}"
        return row
    try:
        convs, grid = corpus(smoke), sweep_grid(smoke)
    except realcorpus.Missing as err:
        row.error = f"not available: {err}"
        return row
    jobs = len(os.sched_getaffinity(0))
    frames: dict[str, object] = {}
    with distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:

        def remote() -> None:
            frames["dask"] = convlab.tune(convs, BASE, grid=grid, progress=False, result_cache=False, scheduler="dask",
                                          client=client)

        def local() -> None:
            frames["local"] = convlab.tune(convs, BASE, grid=grid, progress=False, result_cache=False, jobs=jobs)

        remote()  # warm up: the workers' imports
        repeats = 1 if smoke else 3
        num, den, a, b = paired(lambda: once(remote), lambda: once(local), repeats)
    row.finish(num, den)
    try:
        pd.testing.assert_frame_equal(frames["dask"], frames["local"])
        equal = True
    except AssertionError as err:
        equal = False
        row.error = f"the cluster's frame differs from the local one: {str(err)[:200]}"
    row.note = (f"convlab.tune(scheduler='dask') on distributed.LocalCluster(n_workers={jobs}, threads_per_worker=1, "
                f"processes=True) against jobs={jobs} worker processes, {len(convs):,} conversations x "
                f"{len(frames['local']) // max(len(convs), 1)} configs, no result cache, best of {repeats} alternating "
                f"(the cluster started and warmed up before); equal frames, row for row: {equal}")
    row.extra = {"samples_num": a, "samples_den": b, "equal": equal}
    return row
