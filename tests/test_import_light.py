"""STYLE.md / API.md: "`import convlab` must not import ipywidgets, pandas plotting or tiktoken data:
import them where they are used." Checked in a fresh interpreter, so nothing else has imported them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("ipywidgets", "tiktoken", "pandas")


def modules_after(code: str) -> set[str]:
    script = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("heavy", HEAVY)
def test_import_convlab_is_light(heavy):
    loaded = modules_after("import convlab")
    assert heavy not in loaded
    assert not any(name.startswith(heavy + ".") for name in loaded)


def test_the_check_can_fail():
    """A test that cannot fail is a defect: the probe does see a module that was imported."""
    assert "json" in modules_after("import convlab, json")
    assert "tiktoken" in modules_after("import convlab; convlab.count_tokens('hello world')")
