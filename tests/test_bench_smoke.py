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

import warnings

import pytest

import convlab

ROOT = Path(__file__).resolve().parent.parent
ROWS = ("match", "count", "load", "tokens", "sweep", "lazy", "peer", "treeview", "export", "export_memory", "agui", "lab",
        "lab-growth", "drive", "drive-long", "replay", "replay_memory", "tune-scale", "tune-usd", "retention", "find",
        *(f"read-{f}" for f in ("chatgpt", "claude_ai", "claude_code", "codex", "copilot_cli", "gemini_cli", "librechat",
                                "oasst", "openwebui", "pi")),
        "real-sweep", "stream-memory", "cluster")


@pytest.mark.browser
@pytest.mark.realdata
@pytest.mark.timeout(420)
def test_bench_smoke_gives_every_row_a_finite_ratio(tmp_path):
    """Every row, the real logs' rows (``bench/reallogs.py``: one read row a format, the real sweep) included."""
    from agentdata import require as require_agents
    from realdata import require

    require(), require_agents()
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("the TreeView row needs /usr/bin/chromium (make browser)")
    out = tmp_path / "results.json"
    env = {**os.environ, "CONVLAB_BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
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


@pytest.mark.realdata
def test_the_chatgpt_export_generator_is_checked_against_the_real_exports(monkeypatch, tmp_path):
    """The heavy user's export is generated in the real exports' keys and shapes, and the check
    that says so fails when a shape goes missing, changes type, or a message kind is unexplained."""
    from realdata import require

    require()
    monkeypatch.syspath_prepend(str(ROOT))
    from bench import chatgpt_export

    generated = list(chatgpt_export.conversations(80, seed=3))
    verdict = chatgpt_export.check(generated)
    assert verdict["ok"], verdict
    assert verdict["beyond_real"] == ["message<assistant:code>", "message<tool:execution_output>",
                                      "message<tool:multimodal_text>", "message<user:multimodal_text>"]
    roots = {next(iter(c["mapping"])) for c in generated}
    assert "client-created-root" in roots and len(roots) > 1  # and older random-id placeholders
    assert any(len(e["children"]) > 1 for c in generated for e in c["mapping"].values())  # branches
    path = tmp_path / "conversations.json"
    info = chatgpt_export.write(path, 80, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", convlab.ReadWarning)
        convs = convlab.read(path, progress=False)
    assert (len(convs), sum(len(c) for c in convs)) == (info["conversations"], info["messages"])
    assert sum(c.head != max(c.tree.nodes, key=lambda n: c.tree.nodes[n]["seq"]) for c in convs) >= 1  # a head on an older branch
    for conv in generated:
        for entry in conv["mapping"].values():
            if entry["message"] is not None:
                entry["message"].pop("recipient", None)
    assert chatgpt_export.check(generated)["missing"]
    generated = list(chatgpt_export.conversations(20, seed=3))
    next(e for e in generated[0]["mapping"].values() if e["message"])["message"]["create_time"] = "yesterday"
    assert chatgpt_export.check(generated)["mismatched"]
    generated = list(chatgpt_export.conversations(20, seed=3))
    next(e for e in generated[0]["mapping"].values() if e["message"])["message"]["author"]["role"] = "critic"
    assert chatgpt_export.check(generated)["unexplained"]
    assert not chatgpt_export.check(generated, ROOT / "nowhere")["ok"]
