"""Load and faults on a live ``convlab serve`` (issue 13, "Real parts"), loopback only, bounded in count and
time: 20 clients x 50 runs on 20 threads plus 5 clients racing on one thread; SIGKILL mid-run and a
restart; a second server on the same log dir refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings

import pytest

import convlab
from agui_support import REPO, body, client, serving, snapshot, sse, start_serve, stop_serve, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


class Client:
    """One chat client: its own history of one thread, a run at a time; what was accepted and refused."""

    def __init__(self, url: str, thread: str, name: str):
        self.url, self.thread, self.name = url, thread, name
        self.history: list[dict] = []
        self.accepted: list[tuple[str, str]] = []  # (user message id, reply id)
        self.refused: list[tuple[str, str]] = []  # (user message id, RUN_ERROR message)
        self.errors: list[str] = []

    def runs(self, n: int, deadline: float) -> None:
        with client() as c:
            for i in range(n):
                if time.monotonic() > deadline:
                    self.errors.append(f"out of time after {i} runs")
                    return
                mid = f"{self.name}-{i}-{uuid.uuid4().hex[:6]}"
                message = {"id": mid, "role": "user", "content": f"{self.name} says {i}"}
                try:
                    with c.stream("POST", self.url, json=body(self.thread, self.history + [message])) as r:
                        events = list(sse(r.iter_lines()))
                except Exception as err:  # noqa: BLE001 - a killed server: counted by the test
                    self.errors.append(f"{type(err).__name__}: {err}")
                    return
                last = events[-1]
                if last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "success":
                    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
                    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
                    self.history += [message, {"id": start["messageId"], "role": "assistant", "content": text}]
                    self.accepted.append((mid, start["messageId"]))
                elif last["type"] == "RUN_ERROR":
                    self.refused.append((mid, last["message"]))
                else:
                    self.errors.append(f"run {i} ended with {last}")


def drive(clients: list[Client], runs: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=c.runs, args=(runs, deadline)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 30)


def test_twenty_clients_fifty_runs_and_five_racing_on_one_thread(tmp_path):
    """"every accepted run is in the log, every refused one got a RUN_ERROR, no message lost or doubled,
    every log reloads equal to its live session"."""
    logs = tmp_path / "threads"
    with serving(logs) as serve:
        solo = [Client(serve.url, f"solo-{i}", f"c{i}") for i in range(20)]
        racers = [Client(serve.url, "shared", f"r{i}") for i in range(5)]
        t0 = time.monotonic()
        drive(solo, runs=50, seconds=90)
        drive(racers, runs=20, seconds=60)
        took = time.monotonic() - t0
        live = {c.thread: snapshot(serve.url, c.thread) for c in solo + racers}
    for c in solo + racers:
        assert not c.errors, (c.name, c.errors[:3])
    for c in solo:  # alone on its thread: every run accepted
        assert len(c.accepted) == 50 and not c.refused, (c.name, c.refused[:3])
    refused = [r for c in racers for r in c.refused]
    accepted = [a for c in racers for a in c.accepted]
    assert accepted and len(accepted) + len(refused) == 100
    assert all("is running" in msg for _, msg in refused), refused[:3]
    for thread, clients in [(c.thread, [c]) for c in solo] + [("shared", racers)]:
        snap = live[thread]
        ids = [n["id"] for n in snap["nodes"]]
        assert len(ids) == len(set(ids)), f"{thread}: a message doubled"
        kept = {mid for c in clients for pair in c.accepted for mid in pair}
        assert kept == set(ids), f"{thread}: accepted runs and the tree differ"  # nothing lost, nothing extra
        assert not {mid for c in clients for mid, _ in c.refused} & set(ids), f"{thread}: a refused run wrote"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loaded = convlab.Session.load(logs / f"{thread}.jsonl", append=False).snapshot()
        assert {k: loaded[k] for k in ("head", "nodes", "turns")} == {k: snap[k] for k in ("head", "nodes", "turns")}
    print(f"1,000 + 100 runs in {took:.1f} s")


def test_sigkill_mid_run_then_every_thread_loads_and_goes_on(tmp_path):
    """"Kill the server with SIGKILL mid-run and start it again: every thread loads (a torn last line is
    dropped with a warning) and the next run continues the same tree." Killed under load (whatever state that
    leaves), plus the two states a crash can leave made sure of: a log cut mid-turn and a torn last line."""
    logs = tmp_path / "threads"
    serve = start_serve(logs)
    clients = [Client(serve.url, f"k{i}", f"k{i}") for i in range(6)]
    worker = threading.Thread(target=drive, args=(clients, 10_000, 60))
    worker.start()
    wait_for(lambda: sum(len(c.accepted) for c in clients) >= 30, timeout=60, what="30 runs before the kill")
    os.killpg(serve.proc.pid, signal.SIGKILL)
    serve.proc.wait(10)
    worker.join(60)
    assert sum(len(c.accepted) for c in clients) > 10, "the load never ran"
    # what a crash can leave, for sure: a turn cut off after its user message, and a torn last line
    cut, torn = logs / "k0.jsonl", logs / "k1.jsonl"
    lines = cut.read_text().splitlines(keepends=True)
    last_started = max(i for i, line in enumerate(lines) if json.loads(line)["type"] == "turn.started")
    cut.write_text("".join(lines[: last_started + 2]))  # turn.started, message.new (the user message): running
    with open(torn, "a") as f:
        f.write('{"seq": 99999, "type": "message.ne')

    again = start_serve(logs)
    try:
        for c in clients:
            snap = snapshot(again.url, c.thread)
            assert snap["running"] is None, (c.thread, snap["running"])  # the turn in flight was interrupted
            history = [{"id": n["id"], "role": n["role"], "content": n["content"]} for n in _path(snap)]
            nodes = len(snap["nodes"])
            with client() as http, http.stream("POST", again.url, json=body(c.thread, history + [
                    {"id": f"after-{c.thread}", "role": "user", "content": "still there?"}])) as r:
                events = list(sse(r.iter_lines()))
            assert events[-1]["type"] == "RUN_FINISHED", (c.thread, events[-1])
            after = snapshot(again.url, c.thread)
            assert len(after["nodes"]) == nodes + 2 and after["nodes"][:nodes] == snap["nodes"]
            assert after["head"] == next(e for e in events if e["type"] == "TEXT_MESSAGE_START")["messageId"]
        cancelled = [t for t in snapshot(again.url, "k0")["turns"] if t["status"] == "cancelled"]
        assert cancelled, "the cut turn was loaded as running and interrupted"
    finally:
        stop_serve(again)
    assert "k1.jsonl: line" in again.output() and "torn" in again.output()


def _path(snap):
    nodes = {n["id"]: n for n in snap["nodes"]}
    out, cur = [], snap["head"]
    while cur is not None:
        out.append(nodes[cur])
        cur = nodes[cur]["parent"]
    return out[::-1]


def test_a_second_server_on_the_same_log_dir_refuses_to_start(tmp_path):
    """"One server per log dir: a second convlab serve on the same DIR refuses to start (an OS file lock)"."""
    logs = tmp_path / "threads"
    with serving(logs):
        second = subprocess.run([sys.executable, "-m", "convlab.cli", "serve", "--log-dir", str(logs), "--port", "0"],
                                cwd=REPO, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and "another convlab server" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
    from convlab import agui

    agui.app(logs).close()  # the lock went with the process
