"""``convlab.read`` of a recorded AG-UI event stream (issue 13: "convlab.read also reads a recorded AG-UI
event stream (JSONL, one event a line) into a Conversation"): every history a client held is a path."""

from __future__ import annotations

import json
import warnings

import pytest

import convlab
from agui_support import SUMMARIZE_AT_60, U1, U2, ToolLLM, m, reply_of, run, served

pytestmark = pytest.mark.timeout(60)


def record(path, events):
    with open(path, "a", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def shape(tree):
    return {n: (a["parent"], a["role"], a["content"]) for n, a in tree.nodes(data=True)}


def test_a_recorded_stream_of_a_convlab_server_reads_as_its_tree(tmp_path):
    """Runs with an edit, a regenerate, a branch switch and a summary (MESSAGES_SNAPSHOT): the read tree has
    the served session's ids, parents, roles and contents, and its head."""
    stream = tmp_path / "stream.jsonl"
    config = SUMMARIZE_AT_60
    with served(tmp_path / "logs", config=config) as (app, server):
        u1 = m("u1", U1)
        a1 = reply_of(events := run(server.url, "t1", [u1]))
        record(stream, events)
        for history in ([m("u1b", "Sam had 150 ml at seven.")], [u1], [u1, a1]):
            record(stream, run(server.url, "t1", history))
        u2 = m("u2", U2)
        record(stream, events := run(server.url, "t1", [u1, a1, u2]))
        assert any(e["type"] == "MESSAGES_SNAPSHOT" for e in events)
        record(stream, run(server.url, "other", [m("x1", "a second thread")]))
        s = app.session("t1")
    [conv, other] = convlab.read(stream)
    assert conv.format == "agui" and conv.id == "t1" and other.id == "other"
    assert shape(conv.tree) == shape(s.tree) and conv.head == s.head
    assert [n["id"] for n in conv.path()] == [n["id"] for n in s.path()]
    summary = conv.path()[0]
    assert summary["content"].startswith("The earlier conversation was summarized")
    # usage: RUN_FINISHED.usage on the run's one reply
    reply = conv.tree.nodes[a1["id"]]
    assert reply["usage"]["input_tokens"] == s.tree.nodes[a1["id"]]["usage"]["input_tokens"]
    assert [n["content"] for n in other.path()] == ["a second thread", "echo: a second thread"]


def test_tool_calls_and_results_and_run_inputs_written_as_lines(tmp_path):
    """TOOL_CALL_START/ARGS make the reply's tool_calls; a RunAgentInput line (as a recording proxy writes the
    request) sets the history; a TOOL_CALL_RESULT appends the tool's message."""
    lines = [
        {"threadId": "w", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "weather?"}]},
        {"type": "RUN_STARTED", "threadId": "w", "runId": "r1", "timestamp": 1700000000000},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "weather", "parentMessageId": "a1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"city": '},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"NYC"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "sunny"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "It is "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "sunny."},
        {"type": "TEXT_MESSAGE_END", "messageId": "a2"},
        {"type": "RUN_FINISHED", "threadId": "w", "runId": "r1"},
    ]
    path = tmp_path / "rec.jsonl"
    record(path, lines)
    [c] = convlab.read(path)
    assert [(n["id"], n["role"]) for n in c.path()] == [("u1", "user"), ("a1", "assistant"), ("t1", "tool"), ("a2", "assistant")]
    call = c.tree.nodes["a1"]["tool_calls"][0]
    assert call["function"] == {"name": "weather", "arguments": '{"city": "NYC"}'}
    assert c.tree.nodes["t1"]["tool_call_id"] == "c1" and c.tree.nodes["a2"]["content"] == "It is sunny."
    assert c.tree.nodes["a1"]["time"] == 1700000000.0


def test_a_served_tool_call_stream_reads_back(tmp_path):
    stream = tmp_path / "tools.jsonl"
    with served(tmp_path / "logs", llm=ToolLLM()) as (app, server):
        record(stream, run(server.url, "t", [m("u1", "talk and call")]))
        s = app.session("t")
    [c] = convlab.read(stream)
    assert shape(c.tree) == shape(s.tree)
    assert c.tree.nodes[s.head]["tool_calls"][0]["id"] == s.path()[-1]["tool_calls"][0]["id"]


def test_damage_is_named_and_the_rest_kept(tmp_path):
    """A line that is not an event is left out with a ReadWarning; a torn last line too; a message that shows
    up under another parent keeps its first."""
    path = tmp_path / "bad.jsonl"
    good = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": {"threadId": "t", "runId": "r", "messages": [
            {"id": "u1", "role": "user", "content": "hi"}]}},
        {"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "hello"},
        {"nonsense": True},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "x", "role": "user", "content": "x"}, {"id": "a1", "role": "assistant", "content": "hello"}]},
    ]
    record(path, good)
    with open(path, "a") as f:
        f.write('{"type": "TEXT_MESS')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [c] = convlab.read(path)
    said = " | ".join(str(w.message) for w in caught if issubclass(w.category, convlab.ReadWarning))
    assert "cut short" in said and "line 4 is not an AG-UI event" in said and "'a1': comes under 'x' after 'u1'" in said
    assert c.tree.nodes["a1"]["parent"] == "u1" and c.tree.nodes["a1"]["content"] == "hello"
    assert c.head == "a1"


def test_detection_does_not_take_other_formats():
    from convlab.importers import detect

    assert detect([{"type": "RUN_STARTED", "threadId": "t"}, {"type": "RUN_FINISHED"}], lines=True) == "agui"
    assert detect({"type": "TEXT_MESSAGE_START", "messageId": "a"}) == "agui"
    assert detect([{"role": "user", "content": "hi"}]) == "openai"
    assert detect([{"type": {"x": 1}}, {"type": ["RUN_STARTED"]}], lines=True) != "agui"  # junk types: not a crash
    assert detect([{"type": "session.started", "agent": "bot"}], lines=True) == "convlab"
    assert detect([{"type": "user", "message": {"role": "user", "content": "x"}, "uuid": "1", "sessionId": "s"}], lines=True) != "agui"
