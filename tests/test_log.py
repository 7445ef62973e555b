"""convlab.log: the append-only JSONL log, read back in one streamed pass (PROTOCOL.md 8).

Loading a whole session from its log is tested in tests/test_session_log.py; here the
log's own functions: lines with their numbers and offsets, a torn tail, the writer.
"""

from __future__ import annotations

import io
import json

import pytest

import convlab

from convlab.errors import LogError, LogWarning
from convlab.log import LogWriter, parse_event, read_lines


def test_read_lines_gives_numbers_offsets_and_raw_lines_skipping_blank_ones(tmp_path):
    path = tmp_path / "l.jsonl"
    raw = b'{"type": "a"}\n\n{"type": "b"}\n'
    path.write_bytes(raw)
    lines = list(read_lines(path))
    assert [(n, off) for n, off, _ in lines] == [(1, 0), (3, raw.index(b'{"type": "b"}'))]
    assert [parse_event(r)["type"] for *_, r in lines] == ["a", "b"]
    assert list(read_lines(io.BytesIO(raw))) == lines


def test_a_torn_last_line_is_dropped_and_cut_off_only_when_repairing(tmp_path):
    """8: "A last line that does not parse (a crash while writing) is dropped with a convlab.LogWarning"."""
    path = tmp_path / "l.jsonl"
    path.write_bytes(b'{"type": "a"}\n{"type": "b", "x"')
    with pytest.warns(LogWarning, match="line 2 is torn"):
        assert len(list(read_lines(path))) == 1
    assert path.read_bytes().endswith(b'"x"')  # left alone
    with pytest.warns(LogWarning):
        list(read_lines(path, repair=True))
    assert path.read_bytes() == b'{"type": "a"}\n'


def test_parse_event_wants_an_object_with_a_type():
    assert parse_event(b'{"type": "x", "seq": 1}') == {"type": "x", "seq": 1}
    for bad in (b"[1]", b'{"seq": 1}', b'{"type": 3}', b"nope"):
        with pytest.raises(ValueError):
            parse_event(bad)


def test_a_missing_log_is_a_log_error(tmp_path):
    with pytest.raises(LogError, match="cannot read the session log"):
        list(read_lines(tmp_path / "missing.jsonl"))


def test_the_writer_appends_one_flushed_line_per_event_and_refuses_a_non_empty_log(tmp_path):
    path = tmp_path / "l.jsonl"
    w = LogWriter(path)
    w.write({"type": "a", "text": "é"})
    assert path.read_text(encoding="utf-8") == '{"type":"a","text":"é"}\n'  # flushed, UTF-8, compact
    w.close()
    with pytest.raises(LogError, match="is not empty"):
        LogWriter(path)
    LogWriter(path, new=False).write({"type": "b"})
    assert [json.loads(x)["type"] for x in path.read_text().splitlines()] == ["a", "b"]
    with pytest.raises(LogError, match="cannot write"):
        LogWriter(tmp_path / "no" / "such" / "dir.jsonl")


def test_continuing_a_log_whose_last_line_has_no_newline_starts_a_new_line(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_bytes(b'{"type": "a"}')  # a log cut by a copy, or edited by hand
    w = LogWriter(path, new=False)
    w.write({"type": "b"})
    w.close()
    assert [parse_event(r)["type"] for *_, r in read_lines(path)] == ["a", "b"]
    LogWriter(path, new=False).close()  # one that ends with a newline gets no second one
    assert path.read_bytes() == b'{"type": "a"}\n{"type":"b"}\n'


def test_event_at_names_the_line_that_is_not_an_event():
    from convlab.log import event_at

    with pytest.raises(LogError, match=r"s.jsonl: line 7 is not a valid event") as err:
        event_at("s.jsonl", (7, 0, b'"just a string"'))
    assert err.value.line == 7


def test_read_tree_is_the_tree_session_load_rebuilds_without_a_session(tmp_path):
    """Issue 21: importers never need the engine: a session log's tree is read by convlab.log.read_tree,
    node for node the tree Session.load rebuilds (branches, a summary, worker state, a torn last line)."""
    import io
    import warnings

    from convlab.log import read_tree

    path = tmp_path / "s.jsonl"
    cfg = '[agent.helper.context]\n[[agent.helper.context.strategy]]\nuse = "summarize"\nover_tokens = 12\n'
    s = convlab.Session(log=path, config=cfg, agent="helper")
    say = lambda mid, text, **extra: s.submit({"type": "client.message", "agent_id": "helper",  # noqa: E731
                                               "message": {"id": mid, "role": "user", "content": text}, **extra})
    say("u1", "weather in NYC?")
    s.submit({"type": "client.messages", "agent_id": "helper", "messages": [
        {"id": "u1", "role": "user", "content": "weather in NYC?"}, {"id": "u2", "role": "user", "content": "LA instead"}]})
    say("u3", "and tomorrow, in a lot more detail please?", state={"city": "LA"})
    s.submit({"type": "client.messages", "agent_id": "helper", "messages": s.view("u1")})  # back to the first branch
    s.close() if hasattr(s, "close") else None
    with open(path, "ab") as f:
        f.write(b'{"type": "message.ne')  # a torn last line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = convlab.Session.load(io.BytesIO(path.read_bytes()))
    with pytest.warns(convlab.LogWarning, match="torn"):
        tree, agent = read_tree(io.BytesIO(path.read_bytes()))
    assert agent == "helper" and tree.head == loaded.head
    assert tree.nodes_in_order() == loaded.snapshot()["nodes"] and tree.count() == loaded.tokens()
    assert any(n["kind"] == "summary" for n in tree.nodes_in_order()) and len(tree.children("u1")) == 3
    with pytest.raises(convlab.LogError, match="line 1 is 'message.new', not session.started"):
        read_tree(io.BytesIO(b'{"type": "message.new", "message": {}}\n'))
    with pytest.raises(convlab.LogError, match="the log is empty"):
        read_tree(io.BytesIO(b""))


def test_a_line_nested_thousands_deep_is_a_log_error_naming_it(tmp_path):
    """Issue 40 (3): untrusted JSON is damage, never a crash: a session log line nested 5,000 deep."""
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps({"type": "session.started", "agent": "bot", "seq": 1, "time": 0}) + "\n"
                    + '{"type": "note", "x": ' + "[" * 5000 + "]" * 5000 + "}\n"
                    + json.dumps({"type": "note", "seq": 3, "time": 0}) + "\n")
    with pytest.raises(LogError, match="line 2 is not a valid event: nested deeper than Python's JSON reader") as err:
        convlab.Session.load(path, append=False)
    assert err.value.line == 2
