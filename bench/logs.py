"""Session logs: loading one against json.loads of its lines, and the lazy
open of a huge log against the eager one (peak memory).

Both rows read agent-session logs generated straight to JSONL
(``corpus.write_log``: equal, line for line, to what a live ``Session``
writes for the same script; the lazy row checks that on every run) and
cached; each mode is measured in its own fresh interpreter
(``python -m bench.lazyprobe``) so the two never share a heap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from . import corpus
from .harness import Row, once, paired


def _load(path: Path) -> None:
    import convlab

    s = convlab.Session.load(path)
    s._log.close()


def _json_lines(path: Path) -> None:
    with open(path, "rb") as f:
        [json.loads(line) for line in f]


def run_load(smoke: bool) -> Row:
    messages = 1_000 if smoke else 20_000
    path, info = corpus.cached_log(messages, path_len=100, seed=6)
    size = info["bytes"]
    row = Row("load", f"loading a session log ({info['messages']:,} messages, {size / 1e6:.0f} MB) / json.loads of its lines", 3, "<=",
              num_label="Session.load", den_label="json.loads")
    num, den, a, b = paired(lambda: once(lambda: _load(path)), lambda: once(lambda: _json_lines(path)), 3 if smoke else 5)
    row.finish(num, den)
    row.note = (f"an agent session's log as Session(log=...) writes it ({info['events']:,} events, {info['turns']:,} turns; "
                f"the generator is checked line for line against a live Session); both sides read the file")
    row.extra = {"samples_num": a, "samples_den": b, "log": info}
    return row


def probe(path: Path, mode: str, timeout: float, module: str = "bench.lazyprobe", args: Sequence[str] = ()) -> dict:
    """Run ``python -m <module> PATH MODE [ARGS...]`` (a probe) in a fresh interpreter; its JSON answer."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", module, str(path), mode, *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=root)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"{mode}: exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def run_lazy(smoke: bool) -> Row:
    messages = 10_000 if smoke else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        check = corpus.check_generator(tmp)
    path, info = corpus.cached_log(messages, path_len=100)
    row = Row("lazy", f"lazy open of a {info['messages']:,}-message log (100-message active path): peak memory / eager", 0.1, "<=",
              unit="B", num_label="lazy", den_label="eager")
    if not (check["same_lines"] and check["same_snapshot"]):
        row.error = f"the generator no longer writes what a live Session writes: {check['first_diff']}"
    timeout = 120 if smoke else 900
    lazy = probe(path, "lazy", timeout)
    if "error" in lazy:
        row.error = "not available: " + lazy["error"]
        row.extra = {"lazy": lazy, "log_bytes": info["bytes"]}
        return row
    eager = probe(path, "eager", timeout)
    if "error" in eager:
        row.error = eager["error"]
        row.extra = {"lazy": lazy, "eager": eager}
        return row
    same = all(lazy[k] == eager[k] for k in ("head", "path", "tokens"))
    row.finish(lazy["peak"], eager["peak"])
    row.note = (f"generated log equal line for line to a live Session's on a 400-message script; peak RSS growth ({lazy['method']}) during Session.load + path() + tokens(), fresh interpreter per mode; "
                f"log {info['bytes'] / 1e9:.2f} GB, {info['turns']:,} turns; open in {lazy['seconds']:.1f} s lazy / "
                f"{eager['seconds']:.1f} s eager; same head, path and count: {same}")
    if not same:
        row.error = "lazy and eager disagree on the head, path or count"
    if not (check["same_lines"] and check["same_snapshot"]):
        row.error = f"the generator no longer writes what a live Session writes: {check['first_diff']}"
    row.extra = {"lazy": lazy, "eager": eager, "log": info}
    return row
