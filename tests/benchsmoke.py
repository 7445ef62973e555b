"""Running ``python -m bench --smoke --only ROWS`` from a test, and what a failure shows.

The bench's own progress log (stderr) goes to a file beside the results, so a
run that fails, or is stopped by its timeout, says which row it was in and how
long each row before it took.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, rows: tuple[str, ...], *, timeout: float, only: tuple[str, ...] | None = None) -> dict:
    """Run the smoke bench over ``only`` (the runners' keys; default ``rows``) and check that it gives exactly
    ``rows``, each with a finite ratio, a status and a goal, and that the table it prints names each one."""
    out, log = tmp_path / "results.json", tmp_path / "bench.log"
    env = {**os.environ, "CONVLAB_BENCH_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "bench", "--smoke", "--only", ",".join(only or rows), "--out", str(out)]
    with log.open("w") as err:
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the smoke bench ran past {timeout:.0f} s; its log ends:\n{_tail(log)}") from None
    assert proc.returncode == 0, _tail(log)
    result = json.loads(out.read_text())
    assert result["mode"] == "smoke"
    assert result["machine"]["nproc"] >= 1 and result["machine"]["python"]
    got = {r["key"]: r for r in result["rows"]}
    assert tuple(got) == rows, _tail(log)
    for key, r in got.items():
        assert r["error"] is None, f"{key}: {r['error']}\n{_tail(log)}"
        assert isinstance(r["ratio"], (int, float)) and math.isfinite(r["ratio"]) and r["ratio"] > 0, (key, r["ratio"])
        assert math.isfinite(r["num"]) and math.isfinite(r["den"]), key
        assert r["status"] in ("PASS", "MISS"), key
        assert r["goal"] > 0 and r["op"] in ("<=", ">=")
        assert r["name"] in proc.stdout, key  # the table printed is the JSON's table
    return result


def _tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
