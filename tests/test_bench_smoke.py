"""bench/: the benchmark suite keeps working (benchmarks are not tests).

Runs ``python -m bench --smoke`` as CI does (small sizes, goals not enforced)
over the rows on generated inputs and checks that every row of the table is
there with a finite ratio (the real logs' rows: test_bench_smoke_real.py). The
TreeView row needs Chromium: without it the test skips (and under CI=true a
skipped browser test fails, see conftest.py).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import benchsmoke
import convlab

ROOT = Path(__file__).resolve().parent.parent
#: the rows on generated inputs; the real logs' rows are tests/test_bench_smoke_real.py's
ROWS = ("match", "count", "load", "tokens", "sweep", "lazy", "peer", "treeview", "export", "export_memory", "agui", "lab",
        "lab-growth", "drive", "drive-long", "replay", "replay_memory", "tune-scale", "tune-usd", "retention", "find")


@pytest.mark.browser
@pytest.mark.timeout(900)
def test_bench_smoke_gives_every_row_a_finite_ratio(tmp_path):
    """Every row on generated inputs (``drive`` gives two rows: drive and drive-long)."""
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("the TreeView row needs /usr/bin/chromium (make browser)")
    benchsmoke.run(tmp_path, ROWS, only=tuple(r for r in ROWS if r != "drive-long"), timeout=840)


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
