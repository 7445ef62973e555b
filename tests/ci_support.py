"""What a test does when a real part it needs is missing (Chromium, node, the real logs, ...):
it skips on a developer's machine, and fails under ``CI=true``, where a test that did not run
proved nothing."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def cannot_run(reason: str) -> None:
    """Skip, or under CI=true fail, saying why the test cannot run."""
    if in_ci():
        pytest.fail(f"CI=true: the test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)
