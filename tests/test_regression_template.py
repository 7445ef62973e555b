"""Issue 34 (5): "Run regression notebooks in CI" is for the user's own project, and nothing said how. The README
("Pin your engine's behaviour in your own CI") and notebook 04 say it: build a wheel from a clone of convlab, install
it with nbval in the project's own environment, and run a copy of notebook 04 under strict nbval. This test does
exactly those commands, in a scratch project with a virtual environment of its own (uv, as make test installs it:
the packages come from its cache, the wheel from this checkout)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def uv() -> list[str]:
    """uv, as the Makefile finds it (on PATH, else the module beside the Python that made the venv)."""
    found = shutil.which("uv")
    if found:
        return [found]
    for python in ("python3", sys.executable):
        if subprocess.run([python, "-m", "uv", "--version"], capture_output=True).returncode == 0:
            return [python, "-m", "uv"]
    pytest.fail("uv is not installed: make test installs it (python3 -m pip install uv)")


def run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")})
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_another_project_installs_convlab_and_runs_the_regression_notebook_under_nbval(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Pin your engine's behaviour in your own CI"):]
    section = section[:section.index("\n## ", 3)]
    # the commands the README gives, in this order
    for said in ("uv build --wheel", "pip install dist/convlab-0.1.0-py3-none-any.whl nbval",
                 "pytest --nbval --nbval-current-env notebooks/04-regression.ipynb"):
        assert said in section, said
    dist = tmp_path / "dist"
    run([*uv(), "build", "--wheel", "--out-dir", str(dist), str(ROOT)], cwd=tmp_path)
    [wheel] = dist.glob("convlab-*.whl")
    project = tmp_path / "my-engine"  # the user's own project: a notebooks/ folder and a data/ folder beside it
    (project / "notebooks").mkdir(parents=True)
    (project / "data").mkdir()
    shutil.copy(ROOT / "notebooks" / "04-regression.ipynb", project / "notebooks")
    run([*uv(), "venv", "--quiet", ".venv"], cwd=project)
    python = str(project / ".venv" / "bin" / "python")
    run([*uv(), "pip", "install", "--quiet", "--python", python, str(wheel), "nbval", "pytest"], cwd=project)
    out = run([python, "-c", "import convlab, pathlib; print(pathlib.Path(convlab.__file__).parent)"], cwd=project)
    assert str(project) in out  # convlab from the project's own environment, not this clone
    out = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
               "notebooks/04-regression.ipynb"], cwd=project)
    assert " passed" in out and "failed" not in out, out
    assert (project / "data" / "regression-session.jsonl").is_file()  # the scenario it pins, written in the project
    # and the day the engine's behaviour changes, the build fails: a pinned figure edited to what it is not
    notebook = project / "notebooks" / "04-regression.ipynb"
    notebook.write_text(notebook.read_text().replace("assert session.head == \\\"e10\\\"", "assert session.head == \\\"e11\\\""))
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
                           str(notebook)], cwd=project, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "e11" in done.stdout
