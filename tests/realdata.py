"""The real chat logs in ../shared/data/real, for the importer and frame tests.

Imported by those tests (not a conftest: other engineers append to
tests/conftest.py). A test that needs the data takes the ``real`` fixture:
it skips when the folder is missing, except under ``CI=true``, where it fails.
Tests using it are also marked ``realdata`` (the lead's conftest hook turns
their skips into failures in CI as well).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ci_support import in_ci

#: ../shared/data/real relative to the project root, found from this file.
REAL = Path(__file__).parents[1] / ".." / "shared" / "data" / "real"

#: Files in REAL that are about the data, not data.
NOT_LOGS = ("README.md", "MANIFEST.json", "STATS.json")

MISSING = "<../shared/data/real is missing>"


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
    """REAL, or skip (fail under CI=true) when it is missing."""
    if available():
        return REAL
    message = f"real data not found at {REAL.resolve()}"
    if in_ci():
        pytest.fail(f"CI=true: {message}; real-data tests must run in CI")
    pytest.skip(message)


@pytest.fixture
def real() -> Path:
    """The real-data folder (skips locally, fails in CI, when missing)."""
    return require()
