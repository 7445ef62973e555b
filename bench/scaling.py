"""A turn costs the same at the 8,000th as at the first, driven or replayed, and a replay's memory is a
small multiple of its log (four rows).

- ``drive``: a fresh ``Session`` (``EchoLLM``, the chat worker, no strategy)
  and N submits, one turn each (what a notebook that simulates a long session
  does): CPU seconds per turn at 8,000 turns over at 1,000.
- ``replay``: ``convlab.replay`` of a plain conversation (a generated agent
  session: user, tool-call rounds with results of 0.8 to 4 KB, an answer;
  replies carry the log's ``usage``), built with ``Tree.add`` as an importer
  builds one: CPU seconds per message at 16,000 messages over at 2,000 (the
  first 2,000 of the same conversation).
- ``replay_memory``: the peak memory of ``convlab.replay`` of an id/parentId
  log of 100,000 regenerations of one reply (63 MB), over the file's size.
- ``tune-scale``: ``convlab.tune`` of one 8,000-message conversation of that
  kind over 20 configs (``WINDOWS`` x ``OVER``: which window, and when to
  summarize before it fills), as a user runs it (worker processes, one per
  core), over one ``convlab.replay`` of the same conversation; wall time,
  since the sweep's point is to use both cores.

CPU time (``time.process_time``: this process, every thread) for the two
scaling rows: the machine is shared, and the ratio is the engine's own work.
Each side alternates with the other, best of ``REPEATS``; the collector runs,
as users run.
"""

from __future__ import annotations

import contextlib
import gc
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

from convlab.replaying.driver import EVENTS_KEPT

from .corpus import agent_messages, cache_dir
from .harness import Row, once, paired
from .logs import probe

#: (small, large) per row, full and smoke
SIZES = {"drive": ((1_000, 8_000), (100, 800)), "replay": ((2_000, 16_000), (200, 1_600)), "tune": (8_000, 400)}
REPEATS = {"drive": 5, "replay": 3, "tune": 3}

BASE = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "summarize"
"""
WINDOWS = [64_000, 128_000, 200_000, 400_000, 1_000_000]
OVER = [None, 50_000, 100_000, 150_000]
SMOKE_WINDOWS = [20_000, 24_000, 32_000, 64_000, 1_000_000]
SMOKE_OVER = [None, 4_000, 8_000, 12_000]


@contextlib.contextmanager
def own_heap() -> Iterator[None]:
    """What the process holds before a sample (the interpreter, every module the rows before this one
    imported, their leftovers) frozen out of the cyclic collector while it runs: a full collection then
    walks what the sample made, as in a process that holds only the session. Without it a row's figure
    depended on the rows that ran before it (a full run read 1.67 for ``drive`` where ``--only drive``
    read 1.44). The collector's thresholds still count the frozen heap, as a user's own heap counts in a
    notebook: the first full collection comes when a quarter as many objects as it holds have survived
    since (the Lab rows, which compare two sides near that point, start the thresholds afresh)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def cpu(fn: Callable[[], Any]) -> float:
    """CPU seconds of this process (all its threads) for one call of ``fn``, after a full collection,
    with what the process held before it frozen out of the collector (``own_heap``)."""
    with own_heap():
        t0 = time.process_time()
        fn()
        return time.process_time() - t0


# ----------------------------------------------------------------------
# driving a session
# ----------------------------------------------------------------------
def drive(turns: int) -> Any:
    """A fresh session driven ``turns`` turns (EchoLLM, chat worker, no strategy)."""
    import convlab

    s = convlab.Session()
    for i in range(turns):
        s.submit({"type": "client.message", "agent_id": "bot",
                  "message": {"role": "user", "content": f"message {i}: how is it going?"}})
    return s


def drive_probe(turns: int) -> dict:
    """One sample of driving ``turns`` turns in a fresh interpreter (``python -m bench.driveprobe``): as users
    run a session, the collector on and nothing frozen."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}
    proc = subprocess.run([sys.executable, "-m", "bench.driveprobe", str(turns)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=root, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench.driveprobe {turns}: exit {proc.returncode}: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_drive(smoke: bool) -> list[Row]:
    """Two rows: a turn's CPU at 8,000 turns over at 1,000, and at 16,000 over 2,000, each size driven in a fresh
    interpreter as users run a session (collector on, nothing frozen), alternating, best of ``REPEATS``."""
    small, big = SIZES["drive"][1 if smoke else 0]
    done = drive(50)  # the script still does what it says
    assert len(done.turns) == 50 and done.path()[-1]["content"] == "echo: message 49: how is it going?"
    repeats = 1 if smoke else REPEATS["drive"]
    rows = []
    for key, (lo, hi) in (("drive", (small, big)), ("drive-long", (2 * small, 2 * big))):
        row = Row(key, f"driving a session as users run it: per turn at {hi:,} turns / at {lo:,}", 1.3, "<=",
                  num_label=f"a turn ({hi:,})", den_label=f"a turn ({lo:,})")
        samples: dict[int, list[dict]] = {lo: [], hi: []}

        def side(n: int, samples: dict[int, list[dict]] = samples) -> float:
            got = drive_probe(n)
            samples[n].append(got)
            return got["seconds"] / n

        num, den, a, b = paired(lambda: side(hi), lambda: side(lo), repeats)  # noqa: B023 - called here, in the loop
        row.finish(num, den)
        best = {n: min(samples[n], key=lambda g: g["seconds"]) for n in (lo, hi)}
        row.note = (f"convlab.Session() (EchoLLM, chat worker, no strategy), N submits of one user message, each a turn "
                    f"with one streamed call, in a fresh interpreter per sample (python -m bench.driveprobe: the "
                    f"collector on, nothing frozen, as users run a session); CPU seconds, best of {repeats}, "
                    f"alternating: {hi:,} turns {best[hi]['seconds']:.2f} s, {lo:,} turns {best[lo]['seconds']:.2f} s; "
                    f"full collections {best[hi]['full']} ({best[hi]['full_seconds']:.2f} s) / {best[lo]['full']} "
                    f"({best[lo]['full_seconds']:.2f} s); tracked objects at the end {best[hi]['tracked']:,} / {best[lo]['tracked']:,}")
        row.extra = {"seconds_per_turn_big": a, "seconds_per_turn_small": b, "turns": [lo, hi], "samples": samples}
        rows.append(row)
    return rows


# ----------------------------------------------------------------------
# replaying a plain conversation
# ----------------------------------------------------------------------
def conversation(n: int, *, seed: int = 2, name: str = "plain") -> Any:
    """A plain agent conversation of ``n`` messages as an importer would give it: a ``Tree``
    built with ``Tree.add``, the log's times (seconds between messages, minutes between
    turns, now and then hours) and its usage."""
    from convlab.conversation import Conversation
    from convlab.tree import Tree

    rng = random.Random(seed + 1000)
    tree = Tree()
    parent = None
    clock = 1_700_000_000.0
    for m in agent_messages(n, seed=seed):
        if m["role"] == "user":
            clock += rng.choice([rng.uniform(20, 600)] * 9 + [rng.uniform(3_600, 50_000)])
        else:
            clock += rng.uniform(2, 40)
        node = {k: v for k, v in m.items() if k != "tool_call"}
        tree.add({**node, "time": round(clock, 3)}, parent)
        parent = m["id"]
    tree.head = parent
    return Conversation(tree, id=f"{name}-{n}", title=f"a generated agent session of {n:,} messages", format="convlab")


def run_replay(smoke: bool) -> Row:
    import convlab

    small, big = SIZES["replay"][1 if smoke else 0]
    row = Row("replay", f"replaying a plain conversation: per message at {big:,} messages / at {small:,}", 1.3, "<=",
              num_label=f"a message ({big:,})", den_label=f"a message ({small:,})")
    short, long = conversation(small), conversation(big)
    assert [n["content"] for n in short.path()] == [n["content"] for n in long.path()[:small]]  # the same start
    convlab.replay(conversation(60))  # warm up
    results = {}

    def one(conv):
        results[len(conv)] = convlab.replay(conv)

    num, den, a, b = paired(lambda: cpu(lambda: one(long)) / big, lambda: cpu(lambda: one(short)) / small,
                            REPEATS["replay"])
    r = results[big]
    assert len(r.session.path()) == big and not r.stale
    assert len(r.calls) == sum(1 for m in long.path() if m["role"] == "assistant")
    row.finish(num, den)
    row.note = (f"convlab.replay (no config) of a generated agent session built as an importer builds one "
                f"(user, tool-call rounds with results of 0.8 to 4 KB, an answer; the log's usage and times), "
                f"the first {small:,} messages of it against all {big:,}; each replay tokenizes its messages once; "
                f"CPU seconds, best of {REPEATS['replay']}, alternating: {num * big:.2f} s / {den * small:.2f} s; "
                f"{len(r.calls):,} model calls, the last one reading {r.calls[-1]['exact']:,} tokens")
    row.extra = {"seconds_per_message_big": a, "seconds_per_message_small": b, "messages": [small, big]}
    return row


# ----------------------------------------------------------------------
# a sweep over one long conversation
# ----------------------------------------------------------------------
def run_tune(smoke: bool) -> Row:
    import convlab

    n = SIZES["tune"][1 if smoke else 0]
    windows, over = (SMOKE_WINDOWS, SMOKE_OVER) if smoke else (WINDOWS, OVER)
    grid = {"window": windows, "strategy[0].over_tokens": over}
    row = Row("tune-scale", f"a 20-config sweep of one {n:,}-message conversation / one replay of it", 4, "<=",
              num_label="tune", den_label="replay")
    conv = conversation(n, seed=7, name="long")
    convlab.replay(conversation(60))  # warm up
    frames = []

    def sweep():
        frames.append(convlab.tune([conv], BASE, grid=grid, progress=False, result_cache=False))

    num, den, a, b = paired(lambda: once(sweep), lambda: once(lambda: convlab.replay(conv)), REPEATS["tune"])
    df = frames[-1]
    assert len(df) == 20
    fired = df["limits_full"] + df["limits_idle"] + df["limits_overflow"]
    distinct = len(df[["calls", "limits_full", "summaries", "stale", "tokens_read", "first_limit_call"]].drop_duplicates())
    row.finish(num, den)
    row.note = (f"convlab.tune over window {[f'{w // 1000}k' for w in windows]} x summarize over_tokens "
                f"{[None if o is None else f'{o // 1000}k' for o in over]} in worker processes, one per core "
                f"(the default); {int((fired > 0).sum())} of 20 configs hold a call, {distinct} distinct replays, "
                f"the first held call between call {int(df['first_limit_call'].min())} and "
                f"{int(df['first_limit_call'].max())} of {int(df['calls'].max()):,}; denominator: convlab.replay "
                f"of the conversation once; wall seconds, best of {REPEATS['tune']}, alternating")
    row.extra = {"samples_num": a, "samples_den": b, "distinct_replays": distinct}
    return row


# ----------------------------------------------------------------------
# the memory of a replay of a log of many regenerations
# ----------------------------------------------------------------------
#: how many regenerations of one reply the log holds, full and smoke
SIBLINGS = (100_000, 2_000)


def siblings_log(n: int, folder: Path | None = None) -> Path:
    """An id/parentId log (``{"messages": [...], "currentId"}``) of one user message and ``n`` regenerations of
    its reply, each about 600 bytes with the log's usage: the widest tree a chat UI's regenerate button makes.
    Written once into ``folder`` (default: the bench cache); the same bytes every time (nothing drawn)."""
    path = (cache_dir() if folder is None else folder) / f"siblings-{n}.json"
    if not path.exists():
        rows = [{"id": "u0", "parentId": None, "role": "user", "content": "hello " * 20}]
        rows += [{"id": f"a{i}", "parentId": "u0", "role": "assistant", "content": f"reply {i} " + "word " * 100,
                  "usage": {"input_tokens": 30, "output_tokens": 110}} for i in range(n)]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"messages": rows, "currentId": f"a{n - 1}"}))
        tmp.replace(path)
    return path


def run_replay_memory(smoke: bool) -> Row:
    n = SIBLINGS[1 if smoke else 0]
    path = siblings_log(n)
    size = path.stat().st_size
    row = Row("replay_memory", f"replaying a log of {n:,} regenerations of one reply ({size / (1 << 20):.0f} MB): "
              f"peak memory / file size", 8, "<=", unit="B", num_label="convlab.replay", den_label="file")
    got = probe(path, "replay", 120 if smoke else 900, module="bench.replayprobe")
    if "error" in got:
        row.error = got["error"]
        return row
    row.finish(got["peak"], size)
    row.note = (f"peak RSS growth ({got['method']}) during convlab.replay in a fresh interpreter, the read conversation "
                f"kept (reading it peaked at {got['read_peak'] / size:.2f}x the file), {got['seconds']:.1f} s; "
                f"{got['calls']:,} model calls, {got['events']:,} events, of which the newest "
                f"{EVENTS_KEPT:,} to {2 * EVENTS_KEPT:,} in memory")
    if got["calls"] != n or got["stale"]:
        row.error = f"replayed {got['calls']} calls ({got['stale']} stale), the log has {n} replies"
    row.extra = got
    return row
