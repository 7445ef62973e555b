"""Session logs: loading one against json.loads of its lines, and the lazy
open of a huge log against the eager one (peak memory).

The load row reads a log written by a live ``Session`` (decision events and
all: what users have on disk). The lazy row needs a million-message log: it
is generated straight to JSONL (``corpus.write_log``, checked against a live
session) and cached; each mode is measured in its own fresh interpreter
(``python -m bench.lazyprobe``) so the two never share a heap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import hashlib
from pathlib import Path

from . import corpus
from .harness import Row, log, once, paired


def live_log(messages: int, path_len: int) -> Path:
    """A log written by a live Session running a generated agent script (cached)."""
    src = Path(corpus.__file__).read_bytes()
    key = hashlib.sha256(repr((messages, path_len)).encode() + src).hexdigest()[:16]
    path = corpus.cache_dir() / f"live-{messages}-{path_len}-{key}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        if tmp.exists():
            tmp.unlink()
        s = corpus.drive(corpus.script(messages, path_len=path_len, seed=6), log=tmp)
        s._log.close()
        os.replace(tmp, path)
    return path


def _load(path: Path) -> None:
    import convlab

    s = convlab.Session.load(path)
    s._log.close()


def _json_lines(path: Path) -> None:
    with open(path, "rb") as f:
        [json.loads(line) for line in f]


def run_load(smoke: bool) -> Row:
    messages, path_len = (300, 20) if smoke else (3_000, 100)
    path = live_log(messages, path_len)
    size = path.stat().st_size
    row = Row("load", f"loading a session log ({messages:,} messages, {size / 1e6:.0f} MB) / json.loads of its lines", 3, "<=",
              num_label="Session.load", den_label="json.loads")
    num, den, a, b = paired(lambda: once(lambda: _load(path)), lambda: once(lambda: _json_lines(path)), 3 if smoke else 5)
    row.finish(num, den)
    # the same script without decision events: how much of the cost the decisions are
    gen = corpus.cache_dir() / f"gen-{path.stem}.jsonl"
    if not gen.exists():
        corpus.write_log(corpus.script(messages, path_len=path_len, seed=6), gen)
    gnum, gden, _, _ = paired(lambda: once(lambda: _load(gen)), lambda: once(lambda: _json_lines(gen)), 3)
    row.note = (f"a live Session's log (decision events repeat the path); "
                f"without decision events ({gen.stat().st_size / 1e6:.0f} MB): {gnum / gden:.2f}")
    row.extra = {"samples_num": a, "samples_den": b, "bytes": size, "no_decisions_ratio": gnum / gden,
                 "no_decisions_seconds": [gnum, gden]}
    return row


def probe(path: Path, mode: str, timeout: float) -> dict:
    """Run ``python -m bench.lazyprobe`` in a fresh interpreter; its JSON answer."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "bench.lazyprobe", str(path), mode], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=root)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"{mode}: exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def run_lazy(smoke: bool) -> Row:
    messages = 10_000 if smoke else 1_000_000
    path, info = corpus.cached_log(messages, path_len=100)
    row = Row("lazy", f"lazy open of a {info['messages']:,}-message log (100-message active path): peak memory / eager", 0.1, "<=",
              unit="B", num_label="lazy", den_label="eager")
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
    row.note = (f"peak RSS growth ({lazy['method']}) during Session.load + path() + tokens(), fresh interpreter per mode; "
                f"log {info['bytes'] / 1e9:.2f} GB, {info['turns']:,} turns; open in {lazy['seconds']:.1f} s lazy / "
                f"{eager['seconds']:.1f} s eager; same head, path and count: {same}")
    if not same:
        row.error = "lazy and eager disagree on the head, path or count"
    row.extra = {"lazy": lazy, "eager": eager, "log": info}
    return row
