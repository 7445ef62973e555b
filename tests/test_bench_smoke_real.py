"""bench/reallogs.py: the rows on the real logs keep working (``python -m bench --smoke``, goals not enforced).

One test a group of rows, each in its own ``python -m bench`` run, so a row
that breaks or runs long is named by the test that fails. Needs the shared
real logs and agent sessions (under CI=true a skipped real-data test fails).
"""

from __future__ import annotations

import pytest

import benchsmoke

FORMATS = ("chatgpt", "claude_ai", "claude_code", "codex", "copilot_cli", "gemini_cli", "librechat", "oasst", "openwebui", "pi")


@pytest.fixture(autouse=True)
def _logs():
    from agentdata import require as require_agents
    from realdata import require

    require(), require_agents()


@pytest.mark.realdata
@pytest.mark.timeout(480)
def test_a_read_row_for_every_format_and_the_real_sweep(tmp_path):
    """One read row a format found in the shared logs, and the 100-config sweep's row (a corner of it)."""
    benchsmoke.run(tmp_path, (*(f"read-{f}" for f in FORMATS), "real-sweep"), only=("real-read", "real-sweep"), timeout=450)


@pytest.mark.realdata
@pytest.mark.timeout(480)
def test_the_streamed_sweep_measures_its_memory(tmp_path):
    benchsmoke.run(tmp_path, ("stream-memory",), timeout=450)


@pytest.mark.realdata
@pytest.mark.timeout(480)
def test_the_cluster_row_sweeps_on_a_local_dask_cluster(tmp_path):
    benchsmoke.run(tmp_path, ("cluster",), timeout=450)


@pytest.mark.realdata
def test_a_copy_in_the_real_corpus_reads_as_its_source(tmp_path, monkeypatch):
    """The corpus's copies are the real logs with fresh ids: each format's copy reads to conversations of the
    same sizes, with as many warnings, as its source (the UUIDs that mean "no parent", LibreChat's nil UUID and
    Claude.ai's root, are no ids and kept)."""
    import warnings

    import convlab

    monkeypatch.setenv("CONVLAB_BENCH_CACHE", str(tmp_path))
    monkeypatch.syspath_prepend(str(benchsmoke.ROOT))
    from bench import realcorpus

    def read(path):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            convs = convlab.read(path, progress=False)
        return sorted(len(c) for c in convs), len(caught)

    folder, info = realcorpus.build(0)
    assert set(info) == set(FORMATS)
    for fmt in FORMATS:
        sources = [read(p) for p in map(realcorpus.Path, info[fmt]["sources"])]
        copied = read(folder / fmt)
        assert copied == (sorted(n for sizes, _ in sources for n in sizes), sum(w for _, w in sources)), fmt
