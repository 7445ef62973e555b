"""Notebook 03 runs on whatever logs are there, under strict nbval either way; notebooks 07 and 08 need the
real logs (they skip without them, except in CI).

With the real logs (``$CONVLAB_REAL_LOGS``, else ``../shared/data/real``; the
rule of ``tests/realdata.py``) its committed outputs are compared. Without them
the notebook reads the project's own ``data/`` instead, and each code cell's
outputs are compared with ``03-tune-context.generated.json``: what the same
cells printed on that corpus (``python notebooks/generated_outputs.py`` writes
it). Under ``CI=true`` the real logs must be there: nothing is swapped, so a
run without them fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
NOTEBOOK = "03-tune-context.ipynb"
GENERATED = HERE / "03-tune-context.generated.json"
REAL = Path(os.environ.get("CONVLAB_REAL_LOGS") or HERE.parent / ".." / "shared" / "data" / "real").expanduser().resolve()


def real_logs_here() -> bool:
    return (REAL / "STATS.json").is_file()


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


#: Notebooks that need the real logs and have no generated stand-in: without them (and not in CI,
#: where they fail) their cells skip, saying how to get the logs.
REAL_ONLY = ("07-what-the-model-still-knows.ipynb", "08-explore-a-tree.ipynb")


def pytest_collection_modifyitems(config, items):
    if real_logs_here() or in_ci():
        return
    import pytest

    for item in items:
        if Path(str(item.fspath)).name in REAL_ONLY:
            item.add_marker(pytest.mark.skip(reason=f"real chat logs not found at {REAL.resolve()}: set CONVLAB_REAL_LOGS "
                                                    "to a folder of real chat logs with its STATS.json"))
    cells = [item for item in items if Path(str(item.fspath)).name == NOTEBOOK and hasattr(item, "cell_num")]
    if not cells:
        return
    outputs = json.loads(GENERATED.read_text(encoding="utf-8"))
    for item in cells:
        item.cell.outputs = [nbformat.from_dict(o) for o in outputs[item.cell_num]]
