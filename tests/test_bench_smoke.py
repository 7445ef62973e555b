"""bench/: the benchmark suite keeps working (benchmarks are not tests).

Runs ``python -m bench --smoke`` as CI does (small sizes, goals not enforced)
and checks that every row of the table is there with a finite ratio. The
TreeView row needs Chromium: without it the test skips (and under CI=true a
skipped browser test fails, see conftest.py).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROWS = ("match", "count", "load", "tokens", "sweep", "lazy", "peer", "treeview")


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_bench_smoke_gives_every_row_a_finite_ratio(tmp_path):
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("the TreeView row needs /usr/bin/chromium (make browser)")
    out = tmp_path / "results.json"
    env = {**os.environ, "CONVLAB_BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["mode"] == "smoke"
    assert result["machine"]["nproc"] >= 1 and result["machine"]["python"]
    rows = {r["key"]: r for r in result["rows"]}
    assert tuple(rows) == ROWS
    for key, r in rows.items():
        assert r["error"] is None, f"{key}: {r['error']}\n{proc.stderr[-3000:]}"
        assert isinstance(r["ratio"], (int, float)) and math.isfinite(r["ratio"]) and r["ratio"] > 0, (key, r["ratio"])
        assert math.isfinite(r["num"]) and math.isfinite(r["den"]), key
        assert r["status"] in ("PASS", "MISS"), key
        assert r["goal"] > 0 and r["op"] in ("<=", ">=")
    # the table printed is the JSON's table
    for r in rows.values():
        assert r["name"] in proc.stdout
