"""AG-UI runs per second through the whole HTTP/SSE stack: ``convlab serve`` / pydantic-ai's AG-UI adapter.

Both servers run in processes of their own, served the same way (uvicorn from
``convlab.agui.serving`` on a loopback socket with ``TCP_NODELAY``): convlab
with its default fake model (``EchoLLM``, exact counts with tiktoken, a log
written per thread), the peer (``bench.agui_peer``) with pydantic-ai's
``AGUIAdapter`` and its offline ``TestModel``. The client is the same for both:
one keep-alive HTTP/1.1 connection on a raw socket, conversations of 10
turns, each run sending the whole history plus a new user message and the
reply going back into the history of the next run, as a chat UI does. A sample
is ``runs`` runs; the row compares the best sample of each side, taken in
alternation. Time to first event (from sending the request to the first
``data:`` byte) is the median over every run of each side.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .harness import Row, log, paired

ROOT = Path(__file__).resolve().parent.parent
TURNS = 10  # runs per conversation


class Endpoint:
    """A server in its own process and one keep-alive connection to it."""

    def __init__(self, name: str, cmd: list[str], marker: str):
        self.name = name
        self.log = tempfile.NamedTemporaryFile(prefix=f"agui-bench-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            text = Path(self.log.name).read_text(errors="replace")
            if marker in text:
                url = text.split(marker, 1)[1].split()[0]
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{name} did not start: {text[-1500:]}")
            time.sleep(0.05)
        host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        self.address = (host, int(port))
        self.sock = None
        self.used = 0.0
        self.first_event: list[float] = []
        self.events = 0

    def run(self, thread: str, history: list[dict]) -> dict:
        """One run; the reply (the client keeps it in its history)."""
        body = json.dumps({"threadId": thread, "runId": uuid.uuid4().hex, "messages": history, "state": {},
                           "tools": [], "context": [], "forwardedProps": {}}).encode()
        host = f"{self.address[0]}:{self.address[1]}".encode()  # convlab serve answers only its own Host (421)
        request = (b"POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
                   b"Content-Length: %d\r\n\r\n" % (host, len(body))) + body
        if self.sock is None or time.monotonic() - self.used > 2.0:  # uvicorn closes a connection idle 5 s
            self._connect()
        t0 = time.perf_counter()
        self.sock.sendall(request)
        data = b""
        first = None
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, data = data.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"{self.name}: {head[:200]!r}")
        body_out = []
        while True:  # chunked transfer
            while b"\r\n" not in data:
                data += self._recv()
            size_line, data = data.split(b"\r\n", 1)
            size = int(size_line, 16)
            while len(data) < size + 2:
                data += self._recv()
            chunk, data = data[:size], data[size + 2:]
            if size == 0:
                break
            if first is None and b"data:" in chunk:
                first = time.perf_counter() - t0
            body_out.append(chunk)
        self.first_event.append(first if first is not None else float("nan"))
        reply_id, text = None, []
        for line in b"".join(body_out).split(b"\n"):
            if not line.startswith(b"data:"):
                continue
            self.events += 1
            if b'"TEXT_MESSAGE_' not in line:
                continue
            ev = json.loads(line[5:])
            if ev["type"] == "TEXT_MESSAGE_START":
                reply_id = ev["messageId"]
            elif ev["type"] == "TEXT_MESSAGE_CONTENT":
                text.append(ev["delta"])
        if reply_id is None:
            raise RuntimeError(f"{self.name}: a run without a reply: {b''.join(body_out)[-500:]!r}")
        self.used = time.monotonic()
        return {"id": reply_id, "role": "assistant", "content": "".join(text)}

    def _connect(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = socket.create_connection(self.address)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _recv(self) -> bytes:
        got = self.sock.recv(65536)
        if not got:
            raise RuntimeError(f"{self.name} closed the connection")
        return got

    def conversations(self, runs: int) -> float:
        """Seconds for ``runs`` runs, in conversations of TURNS turns on new threads."""
        t0 = time.perf_counter()
        done = 0
        while done < runs:
            thread = f"b-{uuid.uuid4().hex[:12]}"
            history: list[dict] = []
            for turn in range(min(TURNS, runs - done)):
                history.append({"id": uuid.uuid4().hex, "role": "user",
                                "content": f"A question about the weather and the plans for the day, number {turn}."})
                history.append(self.run(thread, history))
                done += 1
        return time.perf_counter() - t0

    def stop(self) -> None:
        if getattr(self, "sock", None) is not None:
            self.sock.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        os.unlink(self.log.name)


def run(smoke: bool) -> Row:
    runs, repeats = (20, 2) if smoke else (300, 5)
    row = Row("agui", "AG-UI runs per second through HTTP/SSE: convlab serve / pydantic-ai's AGUIAdapter (TestModel)",
              1.0, ">=", unit="runs/s", num_label="convlab", den_label="pydantic-ai")
    try:
        import pydantic_ai  # noqa: F401
        import convlab.agui.server  # noqa: F401
    except ImportError as err:
        row.error = f"not available: {err} (pip install 'convlab[agui,bench]')"
        return row
    logs = tempfile.TemporaryDirectory(prefix="agui-bench-logs-")
    ours = peer = None
    try:
        ours = Endpoint("convlab", [sys.executable, "-m", "convlab.cli", "serve", "--log-dir", logs.name, "--port", "0"],
                        "convlab serve: ")
        peer = Endpoint("pydantic-ai", [sys.executable, "-m", "bench.agui_peer"], "peer: ")
        for side in (ours, peer):  # warm up: imports, tiktoken's data, pydantic's validators
            side.conversations(2 if smoke else TURNS)
            side.first_event.clear()
            side.events = 0
        a_best, b_best, a, b = paired(lambda: ours.conversations(runs), lambda: peer.conversations(runs), repeats)
        log(f"  convlab {runs / a_best:.0f} runs/s, pydantic-ai {runs / b_best:.0f} runs/s")
        row.finish(runs / a_best, runs / b_best)
        ttfe = {side.name: statistics.median(side.first_event) * 1000 for side in (ours, peer)}
        per_run = {side.name: side.events / (runs * repeats) for side in (ours, peer)}
        row.note = (f"time to first event (median): convlab {ttfe['convlab']:.2f} ms, pydantic-ai {ttfe['pydantic-ai']:.2f} ms; "
                    f"{TURNS}-turn conversations (history up to {2 * TURNS - 1} messages), {runs} runs a sample, best of "
                    f"{repeats}; events per run: convlab {per_run['convlab']:.0f} (each engine event also as CUSTOM), "
                    f"pydantic-ai {per_run['pydantic-ai']:.0f}; both on the same uvicorn setup, one keep-alive connection")
        row.extra = {"samples_num_s": a, "samples_den_s": b, "runs": runs, "ttfe_ms": ttfe, "events_per_run": per_run}
    finally:
        for side in (ours, peer):
            if side is not None:
                side.stop()
        logs.cleanup()
    return row
