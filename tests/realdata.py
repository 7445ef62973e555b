"""The real chat logs, for the importer, frame, replay and CLI tests.

Where they are: ``$CONVLAB_REAL_LOGS`` when it is set, else ``../shared/data/real``
beside the project (the workspace's copy). A clone without them still passes: a test
that needs them skips with one line saying how to get them, except under ``CI=true``,
where it fails (a run that skipped them proved nothing).

Imported by those tests (not a conftest: other engineers append to
tests/conftest.py). A test that needs the data takes the ``real`` fixture or calls
``require()``. Tests using it are also marked ``realdata`` (the lead's conftest hook
turns their skips into failures in CI as well).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ci_support import cannot_run

#: the real logs: $CONVLAB_REAL_LOGS, else ../shared/data/real relative to the project root
REAL = Path(os.environ.get("CONVLAB_REAL_LOGS") or Path(__file__).parents[1] / ".." / "shared" / "data" / "real").expanduser().resolve()

#: how to get them, said by every skip
HOW = ("set CONVLAB_REAL_LOGS to a folder of real chat logs with its STATS.json "
       "(the workspace keeps one at ../shared/data/real)")

#: Files in REAL that are about the data, not data.
NOT_LOGS = ("README.md", "MANIFEST.json", "STATS.json")

MISSING = "<the real logs are missing>"


def available() -> bool:
    return (REAL / "STATS.json").is_file()


def stats() -> dict:
    """STATS.json's per-file counts (empty when the data is missing)."""
    if not available():
        return {}
    return json.loads((REAL / "STATS.json").read_text())["files"]


def log_files() -> list[str]:
    """Every chat log in REAL, relative to it (``MISSING`` alone when the data is missing,
    so parametrized tests still run and fail in CI)."""
    if not available():
        return [MISSING]
    return sorted(
        str(p.relative_to(REAL))
        for p in REAL.rglob("*")
        if p.is_file() and p.name not in NOT_LOGS and "LICENSES" not in p.relative_to(REAL).parts
    )


def require() -> Path:
    """REAL, or skip (fail under CI=true) when it is missing, saying how to get it."""
    if not available():
        cannot_run(f"real chat logs not found at {REAL.resolve()}: {HOW}")
    return REAL


@pytest.fixture
def real() -> Path:
    """The real-data folder (skips locally, fails in CI, when missing)."""
    return require()
