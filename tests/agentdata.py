"""The real coding-agent session logs (Codex CLI, Gemini CLI, Copilot CLI, pi), for the importer, replay and
preset tests.

Where they are: ``$CONVLAB_AGENT_LOGS`` when it is set, else ``../shared/data/agents`` beside the project (the
workspace's copy, with its MANIFEST.json, FORMATS.md and STATS.json). A clone without them still passes: a test that
needs them skips saying how to get them, except under ``CI=true``, where it fails (as ``realdata`` does).
They are ground truth to test against, read by path, never copied into the project.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ci_support import cannot_run

#: the agents' logs: $CONVLAB_AGENT_LOGS, else ../shared/data/agents relative to the project root
AGENTS = Path(os.environ.get("CONVLAB_AGENT_LOGS") or Path(__file__).parents[1] / ".." / "shared" / "data" / "agents").expanduser().resolve()

HOW = ("set CONVLAB_AGENT_LOGS to a folder of real coding-agent logs with its STATS.json "
       "(the workspace keeps one at ../shared/data/agents)")

#: Files in AGENTS that are about the data, not data.
NOT_LOGS = ("README.md", "MANIFEST.json", "STATS.json", "FORMATS.md")

MISSING = "<the agents' logs are missing>"

#: STATS.json's format names -> convlab's importer names
FORMATS = {"codex_rollout": "codex", "pi_session": "pi", "gemini_cli_json": "gemini_cli", "gemini_cli_jsonl": "gemini_cli",
           "copilot_cli_events": "copilot_cli", "copilot_cli_timeline_json": "copilot_cli"}


def available() -> bool:
    return (AGENTS / "STATS.json").is_file()


def stats() -> dict:
    """STATS.json's per-file counts (empty when the data is missing)."""
    if not available():
        return {}
    return json.loads((AGENTS / "STATS.json").read_text())["files"]


def log_files() -> list[str]:
    """Every log in AGENTS, relative to it (``MISSING`` alone when the data is missing, so parametrized tests still
    run, and fail in CI)."""
    if not available():
        return [MISSING]
    return sorted(str(p.relative_to(AGENTS)) for p in AGENTS.rglob("*")
                  if p.is_file() and p.name not in NOT_LOGS and "LICENSES" not in p.relative_to(AGENTS).parts)


def require() -> Path:
    """AGENTS, or skip (fail under CI=true) when it is missing, saying how to get it."""
    if not available():
        cannot_run(f"the agents' logs not found at {AGENTS.resolve()}: {HOW}")
    return AGENTS


@pytest.fixture
def agents() -> Path:
    """The agents' logs folder (skips locally, fails in CI, when missing)."""
    return require()
