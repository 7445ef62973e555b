"""Real-browser fixtures: one JupyterLab server per test session, headless Chromium.

The recipe is the one measured in shared/BROWSER-TESTS.md: JupyterLab on
127.0.0.1 with a token, a temp root, isolated config/runtime/settings/
workspaces dirs, autosave and news off, the app exposed as
``window.jupyterapp``; Playwright for Python (no pytest-playwright) drives
Debian's Chromium. After each test its kernels are shut down
(``DELETE /api/sessions/*``).

Under ``CI=true`` a browser test that cannot run (no Chromium, no
JupyterLab, no Playwright) fails instead of skipping.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest
from ci_support import cannot_run

CHROMIUM = os.environ.get("CONVLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
REPO = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_json(path: pathlib.Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@dataclass
class LabServer:
    url: str
    token: str
    root: pathlib.Path
    runtime: pathlib.Path
    proc: subprocess.Popen
    log: pathlib.Path

    def api(self, method: str, path: str, body: Any = None) -> Any:
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def write_notebook(self, name: str, cells: list[str]) -> str:
        nb = {
            "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                       "outputs": [], "source": src} for i, src in enumerate(cells)],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5,
        }
        (self.root / name).write_text(json.dumps(nb))
        return name

    def kernel(self, notebook: str, timeout: float = 30.0) -> "Kernel":
        """A client on the kernel of the notebook's session (its connection file in the runtime dir)."""
        from jupyter_client import BlockingKernelClient

        deadline = time.monotonic() + timeout
        while True:
            sessions = [s for s in self.api("GET", "/api/sessions") if s.get("path", "").endswith(notebook)]
            if sessions and sessions[0].get("kernel"):
                kid = sessions[0]["kernel"]["id"]
                conn = self.runtime / f"kernel-{kid}.json"
                if conn.exists():
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"no kernel for {notebook}: sessions {self.api('GET', '/api/sessions')}")
            time.sleep(0.2)
        client = BlockingKernelClient(connection_file=str(conn))
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=timeout)
        return Kernel(client)


@dataclass
class Kernel:
    """Reads the kernel's state with user_expressions (the page is not the only witness)."""

    client: Any
    log: list = field(default_factory=list)

    def values(self, **expressions: str) -> dict[str, Any]:
        """Evaluate ``json.dumps(expr)`` for each expression in the kernel and decode it."""
        wrapped = {k: f"__import__('json').dumps({v})" for k, v in expressions.items()}
        msg_id = self.client.execute("", silent=True, store_history=False, user_expressions=wrapped)
        deadline = time.monotonic() + 20
        while True:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        out = {}
        for key, res in reply["content"]["user_expressions"].items():
            if res.get("status") != "ok":
                raise AssertionError(f"kernel expression {expressions[key]!r} failed: {res.get('ename')}: {res.get('evalue')}")
            out[key] = json.loads(ast.literal_eval(res["data"]["text/plain"]))
        return out

    def value(self, expression: str) -> Any:
        return self.values(v=expression)["v"]

    def wait_for(self, expression: str, predicate, timeout: float = 15.0) -> Any:
        """Poll ``expression`` in the kernel until ``predicate(value)``; return the value."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.value(expression)
            if predicate(value):
                return value
            time.sleep(0.15)
        raise AssertionError(f"kernel: {expression} stayed {value!r}")


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory) -> Iterator[LabServer]:
    try:
        import jupyterlab  # noqa: F401
        import jupyter_client  # noqa: F401
    except ImportError as err:
        cannot_run(f"JupyterLab is not installed: {err}")
    if shutil.which("jupyter", path=str(pathlib.Path(sys.executable).parent)) is None and shutil.which("jupyter") is None:
        cannot_run("no jupyter command")
    base = tmp_path_factory.mktemp("lab")
    root, runtime = base / "root", base / "runtime"
    settings, workspaces, config, data = base / "settings", base / "workspaces", base / "config", base / "data"
    for d in (root, runtime, settings, workspaces, config, data):
        d.mkdir()
    _write_json(settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings",
                {"autosave": False})
    _write_json(settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    _write_json(settings / "@jupyterlab" / "extensionmanager-extension" / "plugin.jupyterlab-settings",
                {"enabled": False})
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime),
           "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(workspaces),
           "JUPYTER_DATA_DIR": str(data), "JUPYTER_PLATFORM_DIRS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("JUPYTER_PATH", None)
    port, token = _free_port(), secrets.token_hex(16)
    log = base / "lab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", "--allow-root", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--ServerApp.open_browser=False"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                                start_new_session=True)
    server = LabServer(f"http://127.0.0.1:{port}", token, root, runtime, proc, log)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            cannot_run(f"JupyterLab exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            server.api("GET", "/api/status")
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                cannot_run(f"JupyterLab did not answer /api/status in 60 s: {log.read_text()[-2000:]}")
            time.sleep(0.25)
    yield server
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as err:
        cannot_run(f"Playwright is not installed: {err}")
    if not os.path.exists(CHROMIUM):
        cannot_run(f"no Chromium at {CHROMIUM} (apt-get install chromium; never `playwright install`)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class Page:
    """A Playwright page with its console and page errors collected."""

    page: Any
    errors: list[str]
    server: LabServer

    def report(self) -> str:
        return "console/page errors:\n" + ("\n".join(self.errors) or "(none)")

    def open_notebook(self, name: str, *, wait_for: str = ".cl-tree .cl-node") -> None:
        """Open ``name`` in JupyterLab, run all its cells, wait until ``wait_for`` is drawn."""
        p = self.page
        # a fresh workspace per notebook: Lab must not restore the tabs of an earlier test
        workspace = name.replace(".", "-")
        p.goto(f"{self.server.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.server.token}")
        p.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60000)
        p.wait_for_function(
            """(name) => { const w = window.jupyterapp.shell.currentWidget;
                       return w && w.context && w.context.path === name
                              && w.sessionContext && w.sessionContext.session
                              && w.sessionContext.session.kernel
                              && w.sessionContext.session.kernel.connectionStatus === 'connected'
                              && w.content && w.content.widgets && w.content.widgets.length > 0; }""",
            arg=name, timeout=60000)
        p.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        try:
            p.wait_for_selector(wait_for, timeout=60000)
        except Exception as err:  # noqa: BLE001 - add what the page said
            ARTIFACTS.mkdir(exist_ok=True)
            shot = ARTIFACTS / f"failed-{name}.png"
            with contextlib.suppress(Exception):
                p.screenshot(path=str(shot), full_page=True)
            raise AssertionError(f"{wait_for} never appeared (page: {shot}): {err}\n{self.report()}") from None

    def screenshot(self, locator: Any, name: str, *also: pathlib.Path) -> pathlib.Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        locator.screenshot(path=str(path))
        for extra in also:
            extra.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, extra)
        return path


@pytest.fixture
def lab_page(browser, lab_server) -> Iterator[Page]:  # browser first: no Chromium fails before Lab starts
    context = browser.new_context(viewport={"width": 1500, "height": 1400})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    try:
        yield Page(page, errors, lab_server)
    finally:
        context.close()
        with contextlib.suppress(Exception):
            for s in lab_server.api("GET", "/api/sessions"):
                lab_server.api("DELETE", f"/api/sessions/{s['id']}")
