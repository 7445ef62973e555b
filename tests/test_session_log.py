"""PROTOCOL.md 8: the JSONL session log: written as it happens, Session.load, torn tail, bad lines."""

from __future__ import annotations

import json

import pytest

from session_support import (
    PAGE_CONFIG,
    a,
    interrupt,
    m,
    make,
    message,
    refused,
    reply,
    running,
    view,
)

import convlab


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def lived(tmp_path, **kw):
    log = tmp_path / "session.jsonl"
    kw.setdefault("llm", convlab.ScriptedLLM([reply(f"r{i}", input_tokens=10 * i) for i in range(1, 30)]))
    s = make(log=str(log), config=PAGE_CONFIG, clock=1000.0, **kw)
    return s, log


def test_every_event_is_written_as_it_happens(tmp_path):
    """8: "convlab writes every event to an append-only JSONL log." Each event is on disk as soon as it
    happens (a subscriber, called after every event, already finds it in the file)."""
    s, log = lived(tmp_path)
    on_disk_when_seen = []
    s.subscribe(lambda e: e["type"] == "llm.delta" or on_disk_when_seen.append(lines(log)[-1] == e))
    assert lines(log) == s.events
    assert lines(log)[0]["type"] == "session.started"
    s.submit(message(m("u1", "hello")))
    assert lines(log) == s.events
    s.submit(view([m("u1"), m("x", "edit")]))
    assert lines(log) == s.events
    assert on_disk_when_seen and all(on_disk_when_seen)


def test_load_gives_the_same_snapshot(tmp_path):
    """8: "Loading the log gives the same snapshot as the live session." """
    s, log = lived(tmp_path)
    s.submit(message(m("u1", "hello")))
    s.submit(view([m("u1"), m("x", "edit")]))
    s.advance(4000)
    s.submit(message(m("u2", "after an hour")))  # idle: reset
    s.submit(message(m("u3", "queued?"), queue=True))
    loaded = convlab.Session.load(str(log))
    assert loaded.snapshot() == s.snapshot()
    assert loaded.head == s.head
    assert loaded.state == s.state
    assert loaded.tokens() == s.tokens()
    assert loaded.last_turn_end == s.last_turn_end


def test_load_continues_appending(tmp_path):
    """API.md: "Session.load continues a log"; the loaded session keeps writing to the same file."""
    s, log = lived(tmp_path)
    s.submit(message(m("u1", "hello")))
    n = len(lines(log))
    loaded = convlab.Session.load(str(log), llm=convlab.ScriptedLLM([reply("later")]))
    loaded.submit(message(m("u2", "more")))
    assert len(lines(log)) > n
    assert lines(log)[:n] == s.events
    seqs = [e["seq"] for e in lines(log)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # one log, in order
    again = convlab.Session.load(str(log))
    assert again.snapshot() == loaded.snapshot()
    assert [n["content"] for n in again.path()][-2:] == ["more", "later"]


def test_loaded_session_hands_out_the_next_ids(tmp_path):
    """1: ids are unique in a session: a loaded session goes on with the next eN/tN."""
    s, log = lived(tmp_path)
    s.submit(message(m(None, "hello")))
    loaded = convlab.Session.load(str(log))
    loaded.submit(message(m(None, "again")))
    ids = [n["id"] for n in loaded.snapshot()["nodes"]]
    assert len(ids) == len(set(ids))
    assert [t["id"] for t in loaded.turns] == ["t1", "t2"]


def test_running_turn_loads_as_running(tmp_path):
    """8: "A turn that was running when the log ends is loaded as running (a model call in flight is lost):
    new submits get 409 until an interrupt." """
    s, log = lived(tmp_path, worker="manual")
    s.submit(message(m("u1", "hello")))
    assert running(s) == ["t1"]
    loaded = convlab.Session.load(str(log))
    assert running(loaded) == ["t1"]
    assert loaded.snapshot() == s.snapshot()
    err = refused(loaded, message(m("u2", "x")), 409, "t1")
    assert err.turn_id == "t1"
    loaded.submit(interrupt())
    assert loaded.submit(message(m("u2", "x")))["status"] == 200


def test_torn_last_line_is_dropped_with_a_warning(tmp_path):
    """8: "A last line that does not parse (a crash while writing) is dropped with a convlab.LogWarning" """
    s, log = lived(tmp_path)
    s.submit(message(m("u1", "hello")))
    snap = s.snapshot()
    with open(log, "a") as f:
        f.write('{"seq": 999, "time": 1000.0, "type": "message.n')
    with pytest.warns(convlab.LogWarning):
        loaded = convlab.Session.load(str(log))
    assert loaded.snapshot() == snap


def test_bad_earlier_line_raises_log_error_with_its_number(tmp_path):
    """8: "a bad line before it raises convlab.LogError whose message says line N and whose .line is N." """
    s, log = lived(tmp_path)
    s.submit(message(m("u1", "hello")))
    text = log.read_text().splitlines()
    assert len(text) >= 4
    text[2] = text[2][: len(text[2]) // 2]  # line 3 torn in the middle of the log
    log.write_text("\n".join(text) + "\n")
    with pytest.raises(convlab.LogError) as info:
        convlab.Session.load(str(log))
    assert info.value.line == 3
    assert "line 3" in str(info.value)


def test_bad_first_line_is_line_1(tmp_path):
    s, log = lived(tmp_path)
    s.submit(message(m("u1", "hello")))
    text = log.read_text().splitlines()
    text[0] = "not json"
    log.write_text("\n".join(text) + "\n")
    with pytest.raises(convlab.LogError) as info:
        convlab.Session.load(str(log))
    assert info.value.line == 1 and "line 1" in str(info.value)


def test_new_session_on_a_non_empty_log_raises(tmp_path):
    """API.md: log = "path of a new JSONL session log ... (an existing non-empty file raises
    convlab.LogError: Session.load continues a log)". """
    s, log = lived(tmp_path)
    before = log.read_text()
    with pytest.raises(convlab.LogError):
        make(log=str(log))
    assert log.read_text() == before  # nothing appended


def test_new_session_on_an_empty_existing_file_is_fine(tmp_path):
    log = tmp_path / "empty.jsonl"
    log.write_text("")
    s = make(log=str(log))
    assert lines(log) == s.events


def test_config_in_session_started_is_the_parsed_context_table(tmp_path):
    """8: "The config in session.started is the agent's parsed context table". """
    s, log = lived(tmp_path)
    first = lines(log)[0]
    assert first["type"] == "session.started"
    assert first["agent"] == "bot"
    assert first["config"]["window"] == 200000
    loaded = convlab.Session.load(str(log))
    assert loaded.events[0]["config"] == first["config"]


def test_loaded_session_keeps_the_config(tmp_path):
    """The loaded session applies the config of its session.started (an hour idle resets)."""
    s, log = lived(tmp_path)
    s.submit(message(m("u1", "hello")))
    loaded = convlab.Session.load(str(log), llm=convlab.ScriptedLLM([reply("a"), reply("b")]))
    loaded.advance(3600)
    loaded.submit(message(m("u2", "back")))
    assert [e["reason"] for e in loaded.events if e["type"] == "context.limited"] == ["idle"]


def test_load_reloads_other_branches(tmp_path):
    """8: "every other branch stays in the session log, and a view that names a message on another branch
    loads it again." """
    s, log = lived(tmp_path, worker=lambda d: [])
    s.submit(view([m("u1", "q"), a("a1", "x"), m("u2", "y")]))
    s.submit(view([m("u1"), m("b1", "other")]))
    loaded = convlab.Session.load(str(log), worker=lambda d: [])
    loaded.submit(view([m("u1"), a("a1"), m("u2")]))
    assert [n["id"] for n in loaded.path()] == ["u1", "a1", "u2"]
    assert [n["content"] for n in loaded.path()] == ["q", "x", "y"]


def test_lazy_load_reloads_other_branches(tmp_path):
    """8: "The engine keeps the active branch in memory; every other branch stays in the session log, and a
    view that names a message on another branch loads it again." (lazy=True is convlab's form of it.)"""
    s, log = lived(tmp_path, worker=lambda d: [])
    s.submit(view([m("u1", "q"), a("a1", "x"), m("u2", "y")]))
    s.submit(view([m("u1"), m("b1", "other")]))
    try:
        loaded = convlab.Session.load(str(log), lazy=True, worker=lambda d: [])
    except TypeError:
        pytest.skip("Session.load has no lazy=True")
    assert loaded.snapshot() == s.snapshot()
    loaded.submit(view([m("u1"), a("a1"), m("u2")]))
    assert [n["content"] for n in loaded.path()] == ["q", "x", "y"]
    s.submit(view([m("u1"), a("a1"), m("u2")]))
    assert loaded.snapshot() == s.snapshot()


def test_loaded_running_turn_then_interrupt_runs_the_queue(tmp_path):
    """8: a running turn loads as running; 2: after the interrupt, "Queued turns stay queued and run in order"."""
    s, log = lived(tmp_path, worker="manual")
    s.submit(message(m("u1", "hello")))
    s.submit(message(m("u2", "next"), queue=True))
    loaded = convlab.Session.load(str(log), worker="manual")
    assert {t["id"]: t["status"] for t in loaded.turns} == {"t1": "running", "t2": "queued"}
    loaded.submit(interrupt())
    loaded.run()
    assert {t["id"]: t["status"] for t in loaded.turns} == {"t1": "cancelled", "t2": "running"}
    assert [n["id"] for n in loaded.path()] == ["u1", "u2"]


def test_load_from_a_file_object_equals_loading_the_path(tmp_path):
    """Session.load takes a binary file object too (bytes in memory, an archive member): same session, nothing written."""
    import io

    log = tmp_path / "s.jsonl"
    s = make(log=log)
    s.submit(message(m("u1", "hello")))
    s.submit(view([m("u1"), m(None, "edit")]))
    raw = log.read_bytes()
    loaded = convlab.Session.load(io.BytesIO(raw))
    assert loaded.snapshot() == convlab.Session.load(log, append=False).snapshot() == s.snapshot()
    assert loaded.events == s.events
    loaded.submit(message(m("u9", "goes on in memory")))
    assert log.read_bytes() == raw
    with pytest.raises(ValueError, match="needs the log's path"):
        convlab.Session.load(io.BytesIO(raw), append=True)
    with pytest.raises(ValueError, match="needs the log's path"):
        convlab.Session.load(io.BytesIO(raw), lazy=True)


def test_a_torn_last_line_of_a_file_object_is_dropped_with_a_warning(tmp_path):
    import io

    s = make()
    s.submit(message(m("u1", "hello")))
    raw = "".join(json.dumps(e) + "\n" for e in s.events).encode() + b'{"seq": 99, "ty'
    with pytest.warns(convlab.LogWarning, match="torn"):
        loaded = convlab.Session.load(io.BytesIO(raw))
    assert loaded.snapshot() == s.snapshot()


def test_from_events_is_load_of_the_same_log_and_shares_nothing():
    """A replay's fork loads its parent's events from memory (``Session.from_events``): the session its log's
    lines would load, event for event, sharing no object with the events it was given; a bad event is named."""
    import io

    from convlab.engine import Session
    from convlab.errors import LogError

    s = Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}})
    raw = "".join(json.dumps(e) + "\n" for e in s.events).encode()
    loaded, made = Session.load(io.BytesIO(raw)), Session.from_events(s.events)
    assert made.snapshot() == loaded.snapshot() and list(made.events) == list(loaded.events)
    made.path()[0]["content"][0]["text"] = "changed"
    assert made.message_tree.node(made.head) is not s.message_tree.node(s.head)
    assert all(a is not b for a, b in zip(made.events, s.events, strict=True))
    assert Session.from_events(s.events, shared=True).events[1] is s.events[1]  # a fork's: its parent's, uncopied
    with pytest.raises(LogError, match="event 2 is not a valid event"):
        Session.from_events([s.events[0], ["not", "an", "event"]])
    with pytest.raises(LogError, match=r"not session\.started"):
        Session.from_events(s.events[1:])
