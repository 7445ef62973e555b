"""`make lab` (the README's first quickstart command) starts JupyterLab on notebooks/.

Started with --no-browser on a free port under a timeout; the test checks the
server answers and serves the tour notebook, then stops it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_make_lab_serves_the_notebooks(tmp_path):
    port, token = _free_port(), "convlab-test"
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
    )
    args = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token={token} --allow-root"
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2) as r:
                    status = json.load(r)
                    break
            except OSError:
                time.sleep(0.5)
        assert status is not None, f"JupyterLab did not answer; output:\n{proc.stdout.read().decode() if proc.poll() is not None else ''}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/01-tour.ipynb?content=0&token={token}", timeout=5) as r:
            listing = json.load(r)
        assert listing["type"] == "notebook" and listing["name"] == "01-tour.ipynb"
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
