"""What the AG-UI tests share: a served app on a free loopback port, a plain SSE
client (httpx, no AG-UI code of ours), fake models that are slow or make tool
calls, and readers for the events."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import httpx

import convlab
from convlab import agui

REPO = Path(__file__).resolve().parent.parent

SUMMARIZE_AT_60 = """
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 60
"""

#: Two user messages: U1, its echo, then U2 are past SUMMARIZE_AT_60's 60 tokens.
U1 = "Sam had 120 ml of formula at seven in the morning, then slept."
U2 = "Then a nap from half past nine until a quarter past ten, forty five minutes long, and she woke up once in the middle."


@contextlib.contextmanager
def served(log_dir: Path, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """``(app, server)``: ``agui.app(log_dir, **kwargs)`` served on 127.0.0.1; both stopped after."""
    app = agui.app(log_dir, **kwargs)
    try:
        with agui.start(app) as server:
            yield app, server
    finally:
        app.close()


def client() -> httpx.Client:
    transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.Client(transport=transport, timeout=30)


def m(mid: str | None, content: str, role: str = "user", **extra: Any) -> dict[str, Any]:
    out = {"role": role, "content": content, **extra}
    out["id"] = mid if mid is not None else uuid.uuid4().hex
    return out


def body(thread: str, messages: list[dict], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": messages, "state": {}, "tools": [],
            "context": [], "forwardedProps": {}, **extra}


def sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The events of an SSE response (each ``data:`` payload as JSON)."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []
    if data:
        yield json.loads("\n".join(data))


def run(url: str, thread: str, messages: list[dict], headers: dict | None = None, **extra: Any) -> list[dict[str, Any]]:
    """POST one run; every event it streamed."""
    with client() as c, c.stream("POST", url, json=body(thread, messages, **extra), headers=headers or {}) as r:
        assert r.status_code == 200, (r.status_code, r.read())
        assert r.headers["content-type"].startswith("text/event-stream")
        return list(sse(r.iter_lines()))


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def agui_only(events: list[dict]) -> list[dict]:
    """Events without the CUSTOM copies of engine events."""
    return [e for e in events if e["type"] != "CUSTOM"]


def custom(events: list[dict]) -> list[dict]:
    """The engine events a run carried as CUSTOM (their values)."""
    return [e["value"] for e in events if e["type"] == "CUSTOM"]


def reply_of(events: list[dict]) -> dict[str, Any]:
    """The assistant message a client builds from a run's TEXT_MESSAGE events."""
    [start] = [e for e in events if e["type"] == "TEXT_MESSAGE_START"]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    return {"id": start["messageId"], "role": "assistant", "content": text}


def last(events: list[dict]) -> dict[str, Any]:
    return events[-1]


def snapshot(url: str, thread: str, headers: dict | None = None) -> dict[str, Any]:
    with client() as c:
        r = c.get(f"{url}threads/{thread}", headers=headers or {})
        assert r.status_code == 200, r.text
        return r.json()


def path_ids(snap: dict[str, Any]) -> list[str]:
    nodes = {n["id"]: n for n in snap["nodes"]}
    out, cur = [], snap["head"]
    while cur is not None:
        out.append(cur)
        cur = nodes[cur]["parent"]
    return out[::-1]


def children(snap: dict[str, Any], parent: str | None) -> list[str]:
    return [n["id"] for n in snap["nodes"] if n["parent"] == parent]


class SlowLLM:
    """Echoes like EchoLLM, streaming its reply in ``pieces`` chunks ``pause`` seconds apart."""

    def __init__(self, pause: float = 0.05, pieces: int = 8):
        self.pause = pause
        self.pieces = pieces
        self.echo = convlab.EchoLLM()
        self.streams = 0

    def complete(self, request: dict) -> dict:
        return self.echo.complete(request)

    def stream(self, request: dict) -> Iterator[Any]:
        self.streams += 1
        reply = self.complete(request)
        text = reply["content"]
        size = max(1, -(-len(text) // self.pieces))
        for i in range(0, len(text), size):
            time.sleep(self.pause)
            yield text[i:i + size]
        yield reply


class ToolLLM:
    """Replies with a tool call (and text when the user says so); after a tool result, with text."""

    def complete(self, request: dict) -> dict:
        msgs = request["messages"]
        usage = {"input_tokens": convlab.count_tokens(msgs), "output_tokens": 3}
        if request.get("summary") or msgs[-1]["role"] == "tool":
            return {"content": f"The tool said {convlab.content_text(msgs[-1]['content'])}.", "usage": usage}
        text = "Checking the weather." if "talk" in convlab.content_text(msgs[-1]["content"]) else ""
        call = {"id": f"call-{len(msgs)}", "type": "function",
                "function": {"name": "weather", "arguments": json.dumps({"city": "NYC"})}}
        return {"content": text, "tool_calls": [call], "usage": usage}


def wait_for(predicate, timeout: float = 10.0, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"{what} did not happen in {timeout} s")


def in_thread(fn, *args: Any) -> tuple[threading.Thread, dict]:
    """Run ``fn(*args)`` in a thread; its result (or error) lands in the dict."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as err:  # noqa: BLE001 - handed to the test
            out["error"] = err

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, out


# -- `convlab serve` in its own process ---------------------------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402


@dataclass
class Serve:
    url: str
    proc: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_serve(log_dir: Path, *args: str, log: Path | None = None, timeout: float = 30.0) -> Serve:
    """``convlab serve --log-dir log_dir --port 0 *args`` in a new process; returns once /health answers."""
    log = log or log_dir.with_name(log_dir.name + f"-serve-{time.monotonic_ns()}.log")
    out = open(log, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "convlab.cli", "serve", "--log-dir", str(log_dir), "--port", "0", *args],
                            stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
    out.close()
    deadline = time.monotonic() + timeout
    url = None
    while url is None:
        text = log.read_text(errors="replace")
        if "convlab serve: http" in text:
            url = text.split("convlab serve: ", 1)[1].split()[0].split("?")[0]
        elif proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"convlab serve did not start (exit {proc.poll()}): {text[-2000:]}")
        else:
            time.sleep(0.05)
    return Serve(url, proc, log)


def stop_serve(serve: Serve) -> None:
    if serve.proc.poll() is None:
        serve.proc.terminate()
        try:
            serve.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            serve.proc.kill()
            serve.proc.wait(timeout=10)


@contextlib.contextmanager
def serving(log_dir: Path, *args: str) -> Iterator[Serve]:
    serve = start_serve(log_dir, *args)
    try:
        yield serve
    finally:
        stop_serve(serve)


# -- headless Chromium in a thread of its own -----------------------------------------------------------

import queue  # noqa: E402

CHROMIUM = os.environ.get("CONVLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


class Chromium:
    """Debian's Chromium through Playwright's sync API (never ``playwright install``), driven from a
    thread of its own: Playwright allows one sync API per thread, and tests/browser keeps one open in
    the main thread for the whole session. ``run(fn, *args)`` calls ``fn(browser, *args)`` there."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._ready = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="chromium", daemon=True)
        self._thread.start()
        self._ready.wait(60)
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        try:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                self._ready.set()
                while True:
                    job = self._jobs.get()
                    if job is None:
                        break
                    fn, args, done = job
                    try:
                        done["value"] = fn(browser, *args)
                    except BaseException as err:  # noqa: BLE001 - handed to the test's thread
                        done["error"] = err
                    finally:
                        done["event"].set()
                browser.close()
        except BaseException as err:  # noqa: BLE001
            self.error = err
            self._ready.set()

    def run(self, fn, *args: Any, timeout: float = 120.0) -> Any:
        done: dict[str, Any] = {"event": threading.Event()}
        self._jobs.put((fn, args, done))
        if not done["event"].wait(timeout):
            raise AssertionError(f"the browser step took more than {timeout} s")
        if "error" in done:
            raise done["error"]
        return done.get("value")

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(30)


def open_chromium() -> Chromium:
    """Chromium for a module's tests, or the reason they cannot run (a skip; a failure under CI=true)."""
    from ci_support import cannot_run

    if not os.path.exists(CHROMIUM):
        cannot_run(f"no Chromium at {CHROMIUM} (apt-get install chromium; never `playwright install`)")
    try:
        import playwright  # noqa: F401
    except ImportError as err:
        cannot_run(f"Playwright is not installed: {err}")
    return Chromium()
