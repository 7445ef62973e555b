"""`make lab` (the README's first quickstart command) starts JupyterLab at the project root, on the tour.

Started with --no-browser on a free port under a timeout, and without
--allow-root: on this project's machines and CI images the tests run as root
(issue 15: "`make lab` works as root ... without the user adding
`--allow-root`"). The test checks the server answers, serves the tour, and
that the pictures the README and the tour show resolve inside the Lab (a 404
there before: the Lab's root was notebooks/), then stops it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pictures(markdown: str) -> list[str]:
    """The targets of the markdown images in ``markdown``.

    >>> pictures("a ![x](docs/lab.png) b ![y](../docs/y.png)")
    ['docs/lab.png', '../docs/y.png']
    """
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", markdown)


def tour_markdown() -> str:
    nb = json.loads((ROOT / "notebooks" / "01-tour.ipynb").read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.slow
def test_make_lab_serves_the_tour_and_the_readme_pictures(tmp_path):
    """Issue 15: "`make lab` works as root; README pictures resolve from inside the Lab"."""
    port, token = _free_port(), "convlab-test"
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
    )
    args = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token={token}"  # no --allow-root
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )

    said: list[str] = []  # what make lab prints, read as it comes (the pipe never fills)
    import threading

    reader = threading.Thread(target=lambda: said.extend(line.decode(errors="replace") for line in proc.stdout), daemon=True)
    reader.start()

    def get(path: str) -> bytes:
        url = f"http://127.0.0.1:{port}{path}{'&' if '?' in path else '?'}token={token}"
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read()

    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status = json.loads(get("/api/status"))
                break
            except OSError:
                time.sleep(0.5)
        assert status is not None, f"JupyterLab did not answer (running as uid {os.geteuid()}); output:\n{''.join(said)}"
        # issue 34 (5): on a headless machine the URL printed is the one to open: the tour, not the Launcher
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("/lab/tree/notebooks/01-tour.ipynb?token=" in line for line in said):
            time.sleep(0.2)
        printed = [line for line in said if f"127.0.0.1:{port}/" in line]
        assert printed and all(f"127.0.0.1:{port}/lab/tree/notebooks/01-tour.ipynb?token=" in line for line in printed), said
        listing = json.loads(get("/api/contents/notebooks/01-tour.ipynb?content=0"))
        assert listing["type"] == "notebook" and listing["name"] == "01-tour.ipynb"
        # every picture of the README (at the root) and of the tour (in notebooks/), as the Lab's
        # markdown renderer asks for it: the file under the server root, relative to the document
        wanted = [("README.md", p) for p in pictures((ROOT / "README.md").read_text(encoding="utf-8"))]
        wanted += [("notebooks/01-tour.ipynb", p) for p in pictures(tour_markdown())]
        assert ("README.md", "docs/lab.png") in wanted and ("notebooks/01-tour.ipynb", "../docs/lab.png") in wanted
        for document, picture in wanted:
            if "://" in picture:
                continue
            served = os.path.normpath(os.path.join(os.path.dirname(document), picture))
            assert not served.startswith(".."), f"{document}: {picture} is outside the Lab's root"
            body = get("/files/" + urllib.parse.quote(served))
            assert body == (ROOT / served).read_bytes(), f"{document}: {picture} served something else"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=20)
                break
            except subprocess.TimeoutExpired:
                continue
