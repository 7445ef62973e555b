"""PROTOCOL.md rev 4 (issue 19, parts 1 and 2): one failure fails one turn; a refused input writes
nothing; memory always equals the log.

- Whatever a provider raises fails the call as ``ProviderError("failed")`` (``llm.failed``, then
  ``turn.failed``), its text redacted; the next submit works. A worker that raises fails its turn,
  naming the worker. A subscriber that raises is named in a warning; the session goes on.
- Every event is written (and flushed) before it is applied. A write that fails refuses the whole
  entry point with ``LogError``: the log is cut back and the session is where it was, equal to
  ``Session.load(log)``; once the log takes writes again the session goes on. Checked on a real
  full disk (a tmpfs, as root) and read-only file system.
- Values JSON cannot carry (lone surrogates, NaN and infinities, integers past 64 bits, nesting
  past 100 levels) are refused at the door (400) and nothing is written.
- A streamed reply's id is never reused, and a stopped reply a client sends back is left out.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import subprocess

import pytest
from ci_support import cannot_run
from session_support import KEY, PAGE_CONFIG, Raises, StreamRaises, config, frozen, m, make, message, of_type, refused, view

import convlab
import convlab.log

EXCEPTIONS = [
    AssertionError(),  # the openai SDK on a 200 stream with no chunks
    AttributeError("'NoneType' object has no attribute 'message'"),  # {"choices": []}
    ValueError("bad value"),
    KeyError("choices"),
    RuntimeError(f"transport closed; request headers: {{'Authorization': 'Bearer {KEY}'}}"),
    TypeError(f"x-api-key: {KEY}"),
]


@pytest.mark.parametrize("streams", [True, False], ids=["stream", "complete"])
@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_any_exception_from_a_provider_fails_the_call_and_only_its_turn(exc, streams, tmp_path):
    log = tmp_path / "s.jsonl"
    s = make(llm=StreamRaises(exc) if streams else Raises(exc), log=log)
    s.submit(message(m("u1", "q")))
    failed = of_type(s, "llm.failed")
    assert [e["error"] for e in failed] == ["failed"]
    assert failed[0]["message"].startswith(type(exc).__name__)
    turn = s.turns[-1]
    assert turn["status"] == "failed" and s.running is None and turn["error"].startswith("call llm-1 failed")
    assert KEY not in log.read_text() and KEY not in json.dumps(s.snapshot()) and KEY not in repr(s.events)
    s.submit(message(m("u2", "again")))  # the next submit works
    assert s.turns[-1]["status"] == "completed" and s.path()[-1]["content"] == "echo: again"
    assert convlab.Session.load(log, append=False).snapshot() == s.snapshot()


def test_a_summary_call_that_raises_fails_the_summary_and_the_call_runs_as_it_was():
    """5.3: "When the summary call fails, proposed is the call as it was" — whatever the provider raised."""

    class SummaryBreaks(convlab.EchoLLM):
        def complete(self, request):
            if request.get("summary"):
                raise KeyError("usage")
            return super().complete(request)

    s = make(config=config({"use": "summarize", "over_tokens": 5}), llm=SummaryBreaks())
    s.submit(message(m("u1", "a long enough question to count")))
    s.submit(message(m("u2", "and a second one")))
    limit = [e["decision"] for e in of_type(s, "decision.requested") if e["decision"]["type"] == "context.limit"][0]
    assert limit["proposed"] == [{"type": "llm.call", "id": limit["call"]["id"]}]
    assert {e["message"] for e in of_type(s, "llm.failed")} == {"KeyError: 'usage'"}
    assert s.turns[-1]["status"] == "completed"


def test_a_worker_that_raises_fails_its_turn_naming_the_worker_and_the_next_submit_works():
    def my_worker(decision):
        if decision["type"] == "turn.start" and decision["messages"][-1]["content"] == "boom":
            raise ZeroDivisionError("division by zero")
        return convlab.chat_worker(decision)

    s = make(worker=my_worker)
    s.submit(message(m("u1", "boom")))
    assert s.turns[-1]["status"] == "failed" and s.running is None and s.pending is None
    assert "my_worker raised ZeroDivisionError: division by zero" in s.turns[-1]["error"]
    assert of_type(s, "decision.answered")[-1]["actions"] == []
    s.submit(message(m("u2", "fine")))
    assert s.turns[-1]["status"] == "completed"


def test_a_bug_inside_a_step_fails_the_turn_with_a_warning_never_wedges_it(monkeypatch):
    s = make(autorun=False)
    s.submit(message(m("u1", "q")))
    monkeypatch.setattr(s, "_run_action", lambda action: (_ for _ in ()).throw(IndexError("a bug")))
    with pytest.warns(RuntimeWarning, match="turn t1 failed on a bug .*IndexError: a bug"):
        s.run()
    assert s.turns[-1]["status"] == "failed" and s.turns[-1]["error"] == "internal error: IndexError: a bug"
    monkeypatch.undo()
    s.submit(message(m("u2", "next")))
    s.run()
    assert s.turns[-1]["status"] == "completed"


def test_a_subscriber_that_raises_is_named_and_the_session_goes_on():
    s = make()

    def watcher(event):
        raise LookupError("the widget broke")

    s.subscribe(watcher)
    with pytest.warns(RuntimeWarning, match="a subscriber .*watcher.* raised on .*LookupError: the widget broke"):
        s.submit(message(m("u1", "q")))
    assert s.turns[-1]["status"] == "completed" and s.path()[-1]["content"] == "echo: q"


def test_a_call_cancelled_on_purpose_cancels_the_turn_and_records_nothing():
    class StopsMidway:
        def complete(self, request):  # pragma: no cover - the engine streams
            raise AssertionError

        def stream(self, request):
            yield "par"
            raise convlab.CallCancelled("interrupted: the client went away")

    s = make(llm=StopsMidway())
    s.submit(message(m("u1", "q")))
    turn = s.turns[-1]
    assert turn["status"] == "cancelled" and turn["reason"] == "interrupted: the client went away"
    assert [n["id"] for n in s.path()] == ["u1"] and not of_type(s, "llm.failed")


# -- rev 4: a streamed id is never reused; a stopped reply sent back is left out -----------------

def _stopped_once():
    class Once:
        calls = 0

        def complete(self, request):  # pragma: no cover
            raise AssertionError

        def stream(self, request):
            Once.calls += 1
            if Once.calls == 1:
                yield "Hello, I am"
                raise convlab.CallCancelled("stopped")
            yield from convlab.EchoLLM().stream(request)

    return Once()


def test_a_stopped_reply_sent_back_under_its_id_is_left_out_and_never_read_as_an_answer(tmp_path):
    s = make(llm=_stopped_once(), log=tmp_path / "s.jsonl")
    seen = []
    s.subscribe(seen.append)
    s.submit(message(m("u1", "hi")))
    [announced] = {e["message_id"] for e in seen if e["type"] == "llm.delta"}
    # what an AG-UI front end sends next: the partial text under the id it was streamed as, and a question
    sent = [m("u1", "hi"), m(announced, "Hello, I am", role="assistant"), m("u2", "go on")]
    receipt = s.submit(view(sent))
    assert receipt["left_out"] == [announced] and receipt["new_from"] == 1
    assert [n["id"] for n in s.path()][:2] == ["u1", "u2"] and announced not in s.tree
    assert all("Hello, I am" not in json.dumps(n["content"]) for n in s.path())
    assert s.path()[-1]["id"] != announced and s.path()[-1]["content"] == "echo: go on"
    # the same after a reload: the log holds the announced id
    loaded = convlab.Session.load(tmp_path / "s.jsonl", append=False)
    again = loaded.submit(view([m("u1", "hi"), m(announced, "Hello, I am", role="assistant")]))
    assert again["left_out"] == [announced] and announced not in loaded.tree
    assert loaded.path()[0]["id"] == "u1" and loaded.path()[-1]["content"] == "echo: hi"
    # another role cannot take the id
    refused(s, message(m(announced, "mine now")), 400, "streamed reply that was stopped")


def test_only_a_stopped_reply_sent_again_is_a_duplicate_of_its_turn():
    s = make(llm=_stopped_once())
    s.submit(message(m("u1", "hi")))
    eid = of_type(s, "llm.started")[0]["message_id"]
    before = frozen(s)
    receipt = s.submit(message(m(eid, "Hello, I am", role="assistant")))
    assert receipt["duplicate"] and receipt["turn_id"] == "t1" and receipt["left_out"] == [eid]
    assert frozen(s) == before


# -- values JSON cannot carry --------------------------------------------------------------------

def _nested(depth: int) -> list:
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


HOSTILE = {
    "a lone surrogate in content": message(m("u1", "bad \ud800 text")),
    "a lone surrogate in an id": message(m("u\udfff", "x")),
    "a lone surrogate in a name": message(m("u1", "x", name="ann\ud83d")),
    "a lone surrogate in a part": message(m("u1", [{"type": "text", "text": "\udc00"}])),
    "a lone surrogate in a key": message(m("u1", "x", metadata={"\ud800": 1})),
    "NaN in metadata": message(m("u1", "x", metadata={"score": math.nan})),
    "Infinity in state": message(m("u1", "x"), state={"t": math.inf}),
    "a surrogate in state": message(m("u1", "x"), state={"t": "\ud800"}),
    "a 5,000-digit integer": message(m("u1", "x", metadata={"n": 10**5000})),
    "nesting 1,000 deep": message(m("u1", "x"), state={"deep": _nested(1000)}),
    "a surrogate in a view": view([m("u1", "ok"), m(None, "\ud800")]),
}


@pytest.mark.parametrize("inp", HOSTILE.values(), ids=HOSTILE.keys())
def test_values_json_cannot_carry_are_refused_at_the_door_and_nothing_is_written(inp, tmp_path):
    log = tmp_path / "s.jsonl"
    s = make(log=log)
    s.submit(message(m("u0", "fine")))
    size = log.stat().st_size
    err = refused(s, inp, 400)
    assert any(word in str(err) for word in ("surrogate", "JSON number", "nested deeper"))
    assert log.stat().st_size == size
    assert convlab.Session.load(log, append=False).snapshot() == s.snapshot()


def test_a_summary_or_action_json_cannot_carry_is_refused_and_the_decision_still_waits():
    s = make(worker="manual")
    s.submit(message(m("u1", "q")))
    before = frozen(s)
    for bad in ([{"type": "context.replace", "summary": "so far \ud800"}],
                [{"type": "state.set", "state": {"x": math.nan}}],
                [{"type": "llm.call", "model": "m\udc00"}],
                [{"type": "message.add", "message": m(None, "x", role="tool", metadata={"t": -math.inf})}]):
        with pytest.raises(convlab.Refused) as info:
            s.decide(bad)
        assert info.value.status == 400 and frozen(s) == before


def test_a_clock_json_cannot_carry_is_refused():
    s = make()
    for bad in (math.nan, math.inf, -1, "5"):
        with pytest.raises(ValueError, match="finite, non-negative number of seconds"):
            s.advance(bad)
    assert s.clock == 0.0
    with pytest.raises(ValueError, match="clock takes a finite"):
        make(clock=math.nan)


class Answers:
    def __init__(self, reply):
        self.reply = reply

    def complete(self, request):
        return self.reply


def test_a_provider_reply_json_cannot_carry_fails_the_call():
    for bad in ({"content": "x\ud800", "usage": {}}, {"content": "x", "usage": {"input_tokens": math.nan}},
                {"content": "x", "usage": {}, "metadata": {"n": 10**30}}):
        s = make(llm=Answers(bad))
        s.submit(message(m("u1", "q")))
        assert s.turns[-1]["status"] == "failed" and "not JSON data" in of_type(s, "llm.failed")[0]["message"]


# -- written before applied: a write that fails applies nothing -------------------------------------

class Faults:
    """Makes the log's writes fail (``convlab.log.write_fd`` raising ``err``) from the ``after``-th write on, for
    ``count`` writes; ``partial`` writes half of the first failing line first (a torn line)."""

    def __init__(self, monkeypatch, *, after: int = 0, count: int = 10**9, err: int = errno.ENOSPC, partial: bool = False):
        self.seen = 0
        self.left = count
        real = convlab.log.write_fd

        def write(fd, data):
            self.seen += 1
            if self.seen > after and self.left > 0:
                self.left -= 1
                if partial and len(data) > 2:
                    real(fd, bytes(data[: len(data) // 2]))
                raise OSError(err, os.strerror(err))
            return real(fd, data)

        monkeypatch.setattr(convlab.log, "write_fd", write)


def _equal_to_its_log(s, log):
    loaded = convlab.Session.load(log, append=False)
    assert loaded.snapshot() == s.snapshot() and list(loaded.events) == list(s.events)
    assert json.loads(log.read_text().splitlines()[-1]) == s.events[-1]  # no torn line


@pytest.mark.parametrize("after", range(0, 7))
@pytest.mark.parametrize("partial", [False, True], ids=["nothing", "torn"])
def test_a_write_that_fails_anywhere_in_a_submit_refuses_it_whole(monkeypatch, tmp_path, after, partial):
    log = tmp_path / "s.jsonl"
    s = make(log=log)
    s.submit(message(m("u1", "first")))
    before, size = frozen(s), log.stat().st_size
    seen = []
    s.subscribe(seen.append)
    faults = Faults(monkeypatch, after=after, partial=partial)
    with pytest.raises(convlab.LogError, match="cannot write the session log .*No space left on device"):
        s.submit(message(m("u2", "second")))
    assert frozen(s) == before and log.stat().st_size == size
    _equal_to_its_log(s, log)
    assert seen[-1]["type"] == "session.restored" and seen[-1]["seq"] == len(s.events)
    faults.left = 0  # space is back: the same submit goes on
    s.submit(message(m("u2", "second")))
    assert [n["content"] for n in s.path()] == ["first", "echo: first", "second", "echo: second"]
    _equal_to_its_log(s, log)


def test_a_step_that_cannot_write_is_undone_and_runs_again_once_it_can(monkeypatch, tmp_path):
    """The server's way: autorun=False, one step at a time; a failed step keeps the answer in flight."""
    log = tmp_path / "s.jsonl"
    s = make(log=log, autorun=False, llm=convlab.EchoLLM(latency=2.0))
    s.submit(message(m("u1", "q")))
    s.step()  # the worker answers turn.start: the llm.call waits in the answer in flight
    before, clock = frozen(s), s.clock
    faults = Faults(monkeypatch, after=1, err=errno.EIO)  # llm.started goes, the reply does not
    with pytest.raises(convlab.LogError, match="Input/output error"):
        s.step()
    assert frozen(s) == before and s.clock == clock and s.running == "t1"
    _equal_to_its_log(s, log)
    faults.left = 0
    s.run()
    assert s.turns[-1]["status"] == "completed" and s.path()[-1]["content"] == "echo: q"
    _equal_to_its_log(s, log)


def test_a_decide_that_cannot_write_is_refused_and_the_decision_still_waits(monkeypatch, tmp_path):
    log = tmp_path / "s.jsonl"
    s = make(log=log, worker="manual")
    s.submit(message(m("u1", "q")))
    before = frozen(s)
    faults = Faults(monkeypatch)
    with pytest.raises(convlab.LogError):
        s.decide([{"type": "llm.call"}])
    assert frozen(s) == before and s.pending is not None
    faults.left = 0
    s.decide([{"type": "llm.call"}])
    s.decide([])
    assert s.turns[-1]["status"] == "completed"
    _equal_to_its_log(s, log)


def test_a_lazy_session_that_cannot_write_is_undone_too(monkeypatch, tmp_path):
    log = tmp_path / "s.jsonl"
    s = make(log=log)
    for i in range(5):
        s.submit(message(m(f"u{i}", f"q{i}")))
    lazy = convlab.Session.load(log, lazy=True)
    before = frozen(lazy)
    faults = Faults(monkeypatch, after=2, partial=True)
    with pytest.raises(convlab.LogError):
        lazy.submit(message(m("u9", "more")))
    assert frozen(lazy) == before
    faults.left = 0
    lazy.submit(message(m("u9", "more")))
    assert convlab.Session.load(log, append=False).snapshot() == lazy.snapshot()


# -- a real full disk and a real read-only file system (root; a failure under CI=true otherwise) ------

@contextlib.contextmanager
def tmpfs(path, size="48k"):
    path.mkdir()
    if os.geteuid() != 0:
        cannot_run("mounting a tmpfs needs root: the full-disk test runs as root (CI runs as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        cannot_run(f"mount -t tmpfs is not allowed here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(disk) -> "os.PathLike":
    """Fill the file system up to its last bytes; returns the filler file (unlink it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (4096, 512, 64, 8, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"x" * size)
    finally:
        os.close(fd)
    return filler


def test_a_real_full_disk_refuses_the_input_keeps_memory_equal_to_the_log_and_goes_on(tmp_path):
    with tmpfs(tmp_path / "disk") as disk:
        log = disk / "s.jsonl"
        s = make(log=log, config=PAGE_CONFIG)
        s.submit(message(m("u1", "a first question")))
        filler = _fill(disk)
        before = frozen(s)
        with pytest.raises(convlab.LogError, match="No space left on device"):
            s.submit(message(m("u2", "a question the disk has no room for " * 40)))
        assert frozen(s) == before
        _equal_to_its_log(s, log)
        with pytest.raises(convlab.LogError, match="No space left on device"):  # still full: still nothing
            s.submit(message(m("u2", "again, and still longer than the log's last page can hold " * 80)))
        assert frozen(s) == before
        with pytest.raises(convlab.LogError, match="No space left on device"):  # a new session cannot start
            make(log=disk / "other.jsonl")
        filler.unlink()  # space comes back: the session goes on
        s.submit(message(m("u2", "a question the disk has no room for " * 40)))
        assert s.turns[-1]["status"] == "completed" and s.running is None
        _equal_to_its_log(s, log)


def test_a_log_on_a_real_read_only_file_system_is_refused_clearly_and_read_as_it_is(tmp_path):
    """A file system goes read-only while nothing writes to it (a file open for writing keeps a remount
    from happening; a session whose log goes read-only under it gets EROFS from a write, as the faults
    above inject)."""
    with tmpfs(tmp_path / "disk", size="1m") as disk:
        log = disk / "s.jsonl"
        s = make(log=log)
        s.submit(message(m("u1", "q")))
        s._log.close()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        try:
            with pytest.raises(convlab.LogError, match="Read-only file system"):
                convlab.Session.load(log)  # goes on writing: refused, saying why
            with pytest.raises(convlab.LogError, match="Read-only file system"):
                make(log=disk / "new.jsonl")
            assert convlab.Session.load(log, append=False).snapshot() == s.snapshot()  # reading is fine
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)


def test_a_read_only_log_under_a_running_session_refuses_and_goes_on_once_writable(monkeypatch, tmp_path):
    log = tmp_path / "s.jsonl"
    s = make(log=log)
    s.submit(message(m("u1", "q")))
    before = frozen(s)
    faults = Faults(monkeypatch, err=errno.EROFS)
    with pytest.raises(convlab.LogError, match="Read-only file system"):
        s.submit(message(m("u2", "q2")))
    assert frozen(s) == before
    faults.left = 0
    s.submit(message(m("u2", "q2")))
    _equal_to_its_log(s, log)
