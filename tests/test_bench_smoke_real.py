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
