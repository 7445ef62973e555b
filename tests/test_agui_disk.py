"""A real full disk under `convlab serve` (issue 19, part 2, the server's side): a log write that
fails refuses the input with RUN_ERROR 507 and applies nothing, a new thread gets the same (never a 200
with an empty body), no thread 409s for good, and when space comes back every thread goes on, its
log equal to its memory.

The disk is a 256 kB tmpfs mounted for the test (needs root and mount; skipped with the reason
otherwise, a failure under CI=true)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

import convlab
from agui_support import SlowLLM, body, client, m, reply_of, run, served, snapshot, sse, types
from ci_support import cannot_run

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def disk(tmp_path):
    """A 256 kB tmpfs of its own, unmounted after."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        cannot_run("a real full disk needs a tmpfs mounted as root: run the test as root (a container, CI)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        cannot_run(f"mount -t tmpfs is not allowed here ({done.stderr.strip() or done.returncode}): "
                   "a container needs CAP_SYS_ADMIN for the full-disk test")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(disk: Path) -> Path:
    """Fill the disk to the last byte; the filler, to delete when space should come back."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass
    return filler


def refused_507(events: list[dict]) -> dict:
    assert events, "a run answered with an empty body"
    assert events[-1]["type"] == "RUN_ERROR", events
    error = events[-1]
    assert error["code"] == "507" and "could not be written" in error["message"], error
    assert "free some space" in error["message"] and "Traceback" not in error["message"]
    return error


#: More than a tmpfs page (4 kB): a log line this long needs a new page, so a full disk refuses it
#: (a short line may still fit in the last page of the file).
LONG = "a question of some length, " * 400


def loaded(log: Path) -> dict:
    return convlab.Session.load(log, append=False).snapshot()


def test_a_full_disk_refuses_with_507_writes_nothing_and_the_thread_goes_on_after(disk):
    logs = disk / "logs"
    with served(logs) as (app, server):
        url = server.url
        history = [m("u1", "hi")]
        history.append(reply_of(run(url, "t", history)))
        filler = fill(disk)

        for attempt in range(3):  # again and again: a 507 each time, never a 409
            error = refused_507(run(url, "t", history + [m("u2", LONG)]))
            assert error["metadata"]["status"] == 507 and error["metadata"]["thread"] == "t"
        live = app.session("t").snapshot()
        assert loaded(logs / "t.jsonl") == live, "memory equals the log"
        assert [n["id"] for n in live["nodes"]] == ["u1", "e1"] and app.session("t").running is None
        assert snapshot(url, "t")["running"] is None

        refused_507(run(url, "fresh", [m("u1", LONG)]))  # a new thread: never a 200 with an empty body
        with client() as c:
            assert c.get(url + "threads").status_code == 200

        filler.unlink()  # space comes back
        events = run(url, "t", history + [m("u2", LONG)])
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
        fresh = run(url, "fresh", [m("u1", LONG)])
        assert fresh[-1]["type"] == "RUN_FINISHED"
        for thread in ("t", "fresh"):
            assert loaded(logs / f"{thread}.jsonl") == app.session(thread).snapshot()
        assert [n["id"] for n in app.session("t").path()] == ["u1", "e1", "u2", "e2"]


def test_a_disk_that_fills_during_a_streamed_reply_fails_that_turn_and_frees_the_thread(disk):
    """The reply cannot be recorded: RUN_ERROR 507 for that run; the turn it leaves is ended by the next
    run (507 again while the disk is full), never a thread that answers 409 for good."""
    logs = disk / "logs"
    slow = SlowLLM(pause=0.15, pieces=6)
    with served(logs, llm=slow) as (app, server):
        url = server.url
        history = [m("u1", "hi")]
        history.append(reply_of(run(url, "t", history)))
        filler = None
        with client() as c, c.stream("POST", url, json=body("t", history + [m("u2", LONG)])) as r:
            events = []
            for ev in sse(r.iter_lines()):
                events.append(ev)
                if ev["type"] == "TEXT_MESSAGE_CONTENT" and filler is None:
                    filler = fill(disk)
        refused_507(events)
        assert types(events).count("RUN_ERROR") == 1 and "RUN_FINISHED" not in types(events)
        assert loaded(logs / "t.jsonl") == app.session("t").snapshot(), "memory equals the log"
        while_full = run(url, "t", history + [m("u3", LONG)])
        refused_507(while_full)
        assert loaded(logs / "t.jsonl") == app.session("t").snapshot()

        filler.unlink()
        slow.pause = 0.0
        after = run(url, "t", history + [m("u3", LONG)])
        assert after[-1]["type"] == "RUN_FINISHED" and after[-1]["outcome"] == {"type": "success"}, after[-3:]
        s = app.session("t")
        assert s.running is None and [n["role"] for n in s.path()] == ["user", "assistant", "user", "assistant"]
        assert s.path()[-1]["content"] == "echo: " + LONG
        assert loaded(logs / "t.jsonl") == s.snapshot()
