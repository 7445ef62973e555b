"""Timing, rows, the table and the machine description.

Every row is a ratio of two measurements taken in the same process, in
alternation (numerator, denominator, numerator, ...), so slow drift of a
shared machine hits both sides alike. A row reports the best of each side (``paired``).
"""

from __future__ import annotations

import gc
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable


@dataclass
class Row:
    """One line of the table: ``ratio = num / den`` against ``goal``."""

    key: str
    name: str
    goal: float
    op: str  # "<=" or ">="
    num: float | None = None  # seconds (or bytes, see unit)
    den: float | None = None
    unit: str = "s"
    num_label: str = ""
    den_label: str = ""
    ratio: float | None = None
    note: str = ""
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def finish(self, num: float, den: float, ratio: float | None = None) -> "Row":
        self.num, self.den = num, den
        self.ratio = ratio if ratio is not None else num / den
        return self

    @property
    def status(self) -> str:
        if self.ratio is None or not math.isfinite(self.ratio):
            return "n/a"
        ok = self.ratio <= self.goal if self.op == "<=" else self.ratio >= self.goal
        return "PASS" if ok else "MISS"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status
        return d


def once(fn: Callable[[], Any]) -> float:
    """Seconds for one call of ``fn`` (after a full collection)."""
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def per_call(fn: Callable[[], Any], *, min_time: float = 0.05) -> float:
    """Seconds per call of a fast ``fn``: calls in a loop for at least ``min_time``."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n
        n *= 2 if dt <= 0 else max(2, min(100, int(min_time / dt * 1.2) + 1))


def paired(num: Callable[[], float], den: Callable[[], float], repeats: int) -> tuple[float, float, list[float], list[float]]:
    """Run ``num`` and ``den`` alternately ``repeats`` times each (each returns
    seconds); the best of each side and the samples.

    The best, not the median: the work is deterministic, so the spread is
    other processes taking the CPU, and a long run is hit more often than a
    short one (the machine this ran on is shared).
    """
    a: list[float] = []
    b: list[float] = []
    for i in range(repeats):
        # alternate which side goes first so neither always runs on a warmer cache
        if i % 2 == 0:
            a.append(num())
            b.append(den())
        else:
            b.append(den())
            a.append(num())
    return min(a), min(b), a, b


class FullCollections:
    """A ``gc.callbacks`` entry that counts the full (generation 2) collections and their CPU seconds."""

    def __init__(self) -> None:
        self.count, self.seconds, self._started = 0, 0.0, 0.0

    def reset(self) -> None:
        self.count, self.seconds = 0, 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.process_time()
        else:
            self.count += 1
            self.seconds += time.process_time() - self._started


def machine() -> dict[str, Any]:
    """nproc, CPU model, memory, OS and Python: where the numbers came from."""
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in open("/proc/meminfo", encoding="utf-8"):
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    chromium = None
    try:
        chromium = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True, timeout=20).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    versions = {}
    for mod in ("tiktoken", "langchain_core", "networkx", "playwright"):
        try:
            from importlib import metadata

            versions[mod] = metadata.version(mod.replace("_", "-"))
        except Exception:
            versions[mod] = None
    commit = dirty = None
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20).stdout.strip() or None
        status = subprocess.run(["git", "status", "--porcelain", "--", "convlab"], cwd=root, capture_output=True, text=True, timeout=20).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": mem,
        "python": platform.python_version(),
        "os": platform.platform(),
        "chromium": chromium,
        "load_at_start": load,
        "convlab_commit": commit,
        "convlab_uncommitted_changes": dirty,
        **{f"{k}_version": v for k, v in versions.items()},
    }


def fmt_num(x: float | None, unit: str) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if unit == "B":
        for u, f in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
            if x >= f:
                return f"{x / f:.1f} {u}"
        return f"{x:.0f} B"
    if unit == "s":
        if x >= 1:
            return f"{x:.2f} s"
        if x >= 1e-3:
            return f"{x * 1e3:.1f} ms"
        return f"{x * 1e6:.1f} µs"
    if unit == "tok/s":
        return f"{x / 1e6:.2f} M tok/s"
    return f"{x:.3g} {unit}"


def fmt_ratio(r: float | None) -> str:
    if r is None or not math.isfinite(r):
        return "-"
    if r >= 100:
        return f"{r:,.0f}"
    if r >= 10:
        return f"{r:.1f}"
    return f"{r:.2f}"


def table(rows: list[Row]) -> str:
    """The table as GitHub markdown (it reads fine in a terminal too)."""
    head = ["measurement", "ratio", "goal", "result", "numerator", "denominator", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for r in rows:
        num = f"{fmt_num(r.num, r.unit)}{' ' + r.num_label if r.num_label else ''}"
        den = f"{fmt_num(r.den, r.unit)}{' ' + r.den_label if r.den_label else ''}"
        note = r.note if not r.error else (r.note + " " if r.note else "") + r.error
        cells = [r.name, fmt_ratio(r.ratio), f"{r.op} {r.goal:g}", r.status, num, den, note.replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
