"""PROTOCOL.md 7 (rev 3), streaming: ``llm.delta`` while a call with ``stream: true`` runs."""

from __future__ import annotations

import io
import json

import convlab
from session_support import PAGE_CONFIG, RecordingLLM, config, m, make, message, of_type, reply


def deltas_of(got: list[dict]) -> list[dict]:
    return [e for e in got if e["type"] == "llm.delta"]


def test_deltas_arrive_in_order_join_to_the_reply_and_name_its_id():
    """"emits llm.delta {call_id, message_id, text} to subscribers as the provider's chunks arrive (in order;
    their texts join to the reply's content)"; "message_id is the id the reply will be recorded under"."""
    s = make()
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "hello there big world")))
    deltas = deltas_of(got)
    [started] = of_type(s, "llm.started")
    [new] = [e for e in of_type(s, "message.new") if e["message"]["role"] == "assistant"]
    assert len(deltas) > 1, "EchoLLM streams its reply in a few chunks"
    assert "".join(d["text"] for d in deltas) == new["message"]["content"] == "echo: hello there big world"
    assert {d["call_id"] for d in deltas} == {started["call_id"]}
    assert {d["message_id"] for d in deltas} == {new["message"]["id"]}
    assert {d["turn_id"] for d in deltas} == {"t1"}
    # between llm.started and llm.completed, in that order
    kinds = [e["type"] for e in got]
    first, last = kinds.index("llm.delta"), len(kinds) - 1 - kinds[::-1].index("llm.delta")
    assert kinds.index("llm.started") < first and last < kinds.index("llm.completed")


def test_deltas_are_not_events_and_not_in_the_log(tmp_path):
    """"They are not written to the session log (the recorded message.new holds the whole reply)"."""
    log = tmp_path / "s.jsonl"
    s = convlab.Session(log=log)
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "a b c d e f")))
    assert deltas_of(got) and not of_type(s, "llm.delta")
    assert "llm.delta" not in log.read_text()
    assert [e for e in got if e["type"] != "llm.delta"] == s.events[1:]
    assert all("seq" not in d for d in deltas_of(got))  # not a change: no place in the event order


def test_a_call_with_stream_false_gives_no_deltas():
    s = make(worker=lambda d: [{"type": "llm.call", "stream": False}] if d["type"] == "turn.start" else [])
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "one two three")))
    assert s.path()[-1]["content"] == "echo: one two three" and deltas_of(got) == []


def test_a_provider_that_cannot_stream_gives_one_delta_with_the_whole_reply():
    """"A provider that cannot stream gives one delta with the whole reply." """
    s = make(llm=RecordingLLM([reply("all at once")]))
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "q")))
    assert [d["text"] for d in deltas_of(got)] == ["all at once"]
    assert RecordingLLM.__dict__.get("stream") is None


def test_a_failed_call_records_nothing_and_its_message_id_is_never_reused():
    """rev 4: "once an id has been announced in llm.delta it belongs to that reply: the next message takes
    the next id" (rev 3 let the next message take it); a loaded log knows it too."""

    class Breaks:
        def stream(self, request):
            yield "partial "
            raise convlab.ProviderError("failed", "the connection dropped")

        def complete(self, request):  # pragma: no cover - the engine streams
            raise AssertionError

    s = make(llm={"breaks": Breaks(), "echo": convlab.EchoLLM()})
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "q")))
    assert [d["text"] for d in deltas_of(got)] == ["partial "]
    promised = deltas_of(got)[0]["message_id"]
    assert s.turns[-1]["status"] == "failed" and promised not in s.tree
    assert of_type(s, "llm.started")[0]["message_id"] == promised  # the log holds the announced id
    s.submit(message({"role": "user", "content": "again"}))
    assert promised not in s.tree and promised not in [n["id"] for n in s.snapshot()["nodes"]]
    loaded = convlab.Session.load(io.BytesIO("".join(json.dumps(e) + "\n" for e in s.events).encode()),
                                  llm={"echo": convlab.EchoLLM()})
    loaded.submit(message({"role": "user", "content": "once more"}, ))
    assert promised not in loaded.tree


def test_summary_calls_are_never_streamed():
    """"Summary calls are never streamed." """
    cfg = config({"use": "summarize", "over_tokens": 20})
    s = make(config=cfg)
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "x " * 60)))
    s.submit(message(m("u2", "y " * 60)))
    summary_calls = {e["call_id"] for e in of_type(s, "llm.started") if e["summary"]}
    assert summary_calls, "a summary call ran"
    assert summary_calls.isdisjoint(d["call_id"] for d in deltas_of(got))
    assert deltas_of(got)  # the answers themselves did stream


def test_a_reply_may_carry_tool_calls_and_they_are_recorded():
    """A provider's reply carries what the model made beside its text (tool calls), kept on the message."""
    calls = [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"LA\"}"}}]
    s = make(llm=RecordingLLM([{"content": "", "tool_calls": calls, "usage": {"input_tokens": 3, "output_tokens": 5}}]))
    s.submit(message(m("u1", "weather?")))
    last = s.path()[-1]
    assert last["role"] == "assistant" and last["tool_calls"] == calls and last["usage"]["input_tokens"] == 3
    assert json.loads(json.dumps(s.snapshot()))["nodes"][-1]["tool_calls"] == calls


def test_the_page_config_streams_through_a_held_call():
    """A held call keeps its stream flag (5.3) and streams when it runs again."""
    s = make(config=PAGE_CONFIG)
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(message(m("u1", "hi")))
    s.advance(3600)
    s.submit(message(m("u2", "back after an hour")))
    [limited] = of_type(s, "context.limited")
    held = limited["call_id"]
    assert [d["call_id"] for d in deltas_of(got)][-1] == held
