"""Issue 12: a real provider in a Session behaves as the fakes do, for both SDKs.

Each test runs over OpenAIChat (openai SDK on an ``httpx`` mock transport) and
AnthropicChat (anthropic SDK on an ``httpx2`` mock transport); the servers
answer in each API's documented wire format (tests/providers_wire.py says
where each shape comes from). Sockets are disabled: nothing reaches the
network.
"""

from __future__ import annotations

import json
import math
import time

import pytest

import convlab
from providers_wire import KEY, WIRES, MockAPI, fail

pytestmark = pytest.mark.disable_socket

AGENT = "bot"


def say(text: str, id: str | None = None) -> dict:
    msg = {"role": "user", "content": text}
    if id:
        msg["id"] = id
    return {"type": "client.message", "agent_id": AGENT, "message": msg}


def view(messages: list[dict]) -> dict:
    return {"type": "client.messages", "agent_id": AGENT, "messages": messages}


def of(s, kind: str) -> list[dict]:
    return [e for e in s.events if e["type"] == kind]


@pytest.fixture(params=WIRES, ids=lambda w: w.name)
def wire(request):
    return request.param


def test_a_branching_session_edit_and_regenerate(wire):
    """Issue 12 "Done when": a user can "branch a real conversation": every
    reply is the model's, recorded with its usage, and each call reads the
    active path (PROTOCOL 2: regenerate records a new reply beside the old;
    an edit branches)."""
    api = wire.api(wire.stream(["Paris ", "is sunny."], input=12, output=4),
                   wire.stream(["Still ", "sunny."], input=12, output=3),
                   wire.stream(["Lyon ", "is rainy."], input=13, output=4))
    s = convlab.Session(llm=wire.llm(api))
    s.submit(say("Weather in Paris?", "u1"))
    first = s.path()[-1]
    assert first["role"] == "assistant" and first["content"] == "Paris is sunny."
    assert first["usage"]["input_tokens"] == 12 and first["usage"]["output_tokens"] == 4
    assert first["metadata"]["model"].startswith(("gpt-4.1-mini", "claude-sonnet-4-5"))

    # regenerate: the view without the reply
    s.submit(view([{"id": "u1", "role": "user", "content": "Weather in Paris?"}]))
    again = s.path()[-1]
    assert again["content"] == "Still sunny." and again["id"] != first["id"]
    assert sorted(s.tree.successors("u1")) == sorted([first["id"], again["id"]])

    # edit: a new first message instead of u1
    s.submit(view([{"role": "user", "content": "Weather in Lyon?"}]))
    edited = s.path()
    assert [m["content"] for m in edited] == ["Weather in Lyon?", "Lyon is rainy."]
    assert edited[0]["parent"] is None and edited[0]["id"] != "u1"

    # what each call read: the active path at that moment, nothing of convlab's own
    assert [wire.sent_texts(b) for b in api.bodies] == [["Weather in Paris?"], ["Weather in Paris?"], ["Weather in Lyon?"]]
    for body in api.bodies:
        assert body["stream"] is True
        assert all(set(m) == {"role", "content"} for m in body["messages"])  # no id, no metadata


def test_the_count_equals_what_the_provider_read_cached_input_included(wire):
    """Issue 12: "usage ... mapped so that the engine's count (PROTOCOL 5.1: it sums
    cached input) equals what the provider read"; "Keep the cached fields on the node"."""
    read, cached = 1200, 1024
    if wire.name == "openai":  # prompt_tokens already holds the cached tokens
        answer = wire.stream(["A reply of some length."], input=read, cached=cached)
    else:  # input_tokens leaves out what was read from the cache
        answer = wire.stream(["A reply of some length."], input=read - cached, cached=cached)
    s = convlab.Session(llm=wire.llm(wire.api(answer)))
    s.submit(say("x" * 40, "u1"))
    reply = s.path()[-1]
    assert s.tokens() == read + math.ceil(len("A reply of some length.") / 4)
    cached_field = "cached_tokens" if wire.name == "openai" else "cache_read_input_tokens"
    assert reply["usage"][cached_field] == cached
    [completed] = of(s, "llm.completed")
    assert completed["usage"] == reply["usage"]


def test_streaming_deltas_arrive_in_order_as_the_server_sends_them(wire):
    """PROTOCOL 7 (rev 3): "the engine emits llm.delta {call_id, message_id, text}
    to subscribers as the provider's chunks arrive (in order; their texts join to
    the reply's content)". Each delta reaches the subscriber before the server
    has sent the next event: the SDK's streaming API, not a buffered reply."""
    texts = ["The ", "quick ", "brown ", "fox."]
    log: list[str] = []
    api = wire.api(wire.stream(texts, log=log))
    s = convlab.Session(llm=wire.llm(api))
    s.subscribe(lambda e: log.append("delta " + e["text"]) if e["type"] == "llm.delta" else None)
    s.submit(say("Tell me about the fox.", "u1"))
    deltas = [x[len("delta "):] for x in log if x.startswith("delta ")]
    reply = s.path()[-1]
    assert deltas == texts and "".join(deltas) == reply["content"]
    for i, text in enumerate(texts[:-1]):
        # the event carrying text i+1 left the server only after text i reached the subscriber
        assert log.index("delta " + text) < log.index(f"sent {wire.first_text_event + i + 1}"), log


def test_a_call_with_stream_false_uses_the_plain_api_and_gives_no_deltas(wire):
    """PROTOCOL 4: ``llm.call {stream}``; without streaming the provider's plain call answers."""
    api = wire.api(wire.reply("Plain answer."))
    s = convlab.Session(llm=wire.llm(api), worker=lambda d: [{"type": "llm.call", "stream": False}] if d["type"] == "turn.start" else [])
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit(say("hi", "u1"))
    assert s.path()[-1]["content"] == "Plain answer."
    assert "stream" not in api.bodies[0] and not [e for e in got if e["type"] == "llm.delta"]


def test_a_reply_with_tool_calls_is_recorded_and_its_result_goes_back(wire):
    """Issue 12: "A reply may carry tool_calls (the engine records them on the
    message)"; the tool result the client sends next reaches the model as a
    result of that call (the exact wire shapes: test_providers_openai/_anthropic)."""
    call_id = "call_4XzlGBLtUe9dy3GVNV4jhq7h" if wire.name == "openai" else "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    api = wire.api(wire.tool_reply(call_id, "get_weather", {"city": "Paris"}, text="I'll check."),
                   wire.stream(["It is 18C in Paris."]))
    s = convlab.Session(llm=wire.llm(api))
    s.submit(say("Weather in Paris?", "u1"))
    asked = s.path()[-1]
    assert asked["content"] == "I'll check."
    assert asked["tool_calls"] == [{"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    s.submit({"type": "client.message", "agent_id": AGENT, "message": {"id": "r1", "role": "tool", "tool_call_id": call_id, "content": "18C"}})
    assert s.path()[-1]["content"] == "It is 18C in Paris."
    assert json.dumps(api.bodies[1]).count(call_id) == 2  # the call and its result


CONFIG = """
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "summarize"
model = "small-summarizer"
"""


def test_too_long_overflows_summarizes_and_the_call_runs_once_more(wire):
    """PROTOCOL 5.5: "When the provider refuses a call as too long, the engine asks
    context.limit with reason overflow ... and a summary in proposed ... The call
    runs once more when the worker's answer runs it (accepting proposed does)";
    5.3: the summary call uses the strategy's model and is not streamed."""
    api = wire.api(wire.stream(["First answer."]),
                   fail(400, wire.too_long),
                   wire.reply("Summary: the user asked a question and got the first answer."),
                   wire.stream(["Second answer."]))
    s = convlab.Session(config=CONFIG, llm=wire.llm(api))
    s.submit(say("First question?", "u1"))
    s.submit(say("Second question?", "u2"))
    [failed] = of(s, "llm.failed")
    [limited] = of(s, "context.limited")
    assert failed["error"] == "too_long" and limited["reason"] == "overflow" and limited["call_id"] == failed["call_id"]
    assert of(s, "context.replaced") and s.turns[-1]["status"] == "completed"
    started = [e for e in of(s, "llm.started") if not e["summary"]]
    assert started[-1]["call_id"] == failed["call_id"]  # the same call, once more
    assert [m["content"] for m in s.path()][-2:] == ["Second question?", "Second answer."]
    assert s.path()[0]["kind"] == "summary"
    summary_body = api.bodies[2]
    assert summary_body["model"] == "small-summarizer" and "stream" not in summary_body
    assert wire.sent_texts(summary_body)[:2] == ["First question?", "First answer."]
    assert wire.sent_texts(api.bodies[3])[-1] == "Second question?"
    assert "Summary: the user asked" in json.dumps(api.bodies[3])


def test_too_long_again_fails_the_turn(wire):
    """PROTOCOL 5.5: "if the provider refuses it again, the turn fails (turn.failed)"."""
    api = wire.api(wire.stream(["First answer."]), fail(400, wire.too_long), wire.reply("Summary."), fail(400, wire.too_long))
    s = convlab.Session(llm=wire.llm(api))
    s.submit(say("First question?", "u1"))
    s.submit(say("Second question?", "u2"))
    assert [e["error"] for e in of(s, "llm.failed")] == ["too_long", "too_long"]
    [turn_failed] = of(s, "turn.failed")
    assert "too long again" in turn_failed["error"] and s.turns[-1]["status"] == "failed"


def test_a_server_error_is_retried_by_the_sdk_then_succeeds(wire):
    """Issue 12: failed only "after the SDK's own retries": a 500 then a reply is a reply."""
    api = wire.api(wire.server_error(500, **{"retry-after-ms": "1"}), wire.stream(["Recovered."]))
    s = convlab.Session(llm=wire.llm(api, max_retries=2))
    s.submit(say("hi", "u1"))
    assert s.path()[-1]["content"] == "Recovered." and len(api.requests) == 2 and not of(s, "llm.failed")


def test_a_call_that_keeps_failing_fails_the_turn_with_the_providers_message(wire):
    """PROTOCOL 4: "A provider error failed emits llm.failed and fails the turn";
    issue 12: "anything else, after the SDK's own retries -> ProviderError("failed")
    with the provider's message"."""
    retry = {"retry-after-ms": "1"}
    api = wire.api(*[wire.server_error(500, **retry)] * 3)
    s = convlab.Session(llm=wire.llm(api, max_retries=2))
    s.submit(say("hi", "u1"))
    assert len(api.requests) == 3  # the first try and the SDK's two retries
    [failed] = of(s, "llm.failed")
    provider_says = "The server had an error" if wire.name == "openai" else "Internal server error"
    assert failed["error"] == "failed" and provider_says in failed["message"] and "HTTP 500" in failed["message"]
    [turn_failed] = of(s, "turn.failed")
    assert provider_says in turn_failed["error"] and s.path()[-1]["id"] == "u1"


def test_a_client_error_is_not_retried(wire):
    """A 404 (an unknown model) is final: one request, the API's message."""
    body = ({"error": {"message": "The model `gpt-nope` does not exist or you do not have access to it.", "type": "invalid_request_error",
                       "param": None, "code": "model_not_found"}}
            if wire.name == "openai" else
            {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}, "request_id": "req_1"})
    api = wire.api(fail(404, body))
    s = convlab.Session(llm=wire.llm(api, max_retries=2))
    s.submit(say("hi", "u1"))
    [failed] = of(s, "llm.failed")
    assert len(api.requests) == 1 and failed["error"] == "failed"
    assert ("does not exist" in failed["message"]) if wire.name == "openai" else ("model: claude-nope" in failed["message"])


def test_a_connection_error_is_a_failed_call(wire):
    def unreachable(request):
        raise wire.http.ConnectError("connection refused", request=request)

    api = MockAPI(wire.http, [unreachable])
    s = convlab.Session(llm=wire.llm(api))
    s.submit(say("hi", "u1"))
    [failed] = of(s, "llm.failed")
    # the SDK's own words, which change between its versions ("Connection error.", "Connection to ... failed")
    assert failed["error"] == "failed" and failed["message"].startswith(wire.name) and "connection" in failed["message"].lower()


def test_a_real_call_moves_the_session_clock_by_its_measured_duration(wire):
    """Issue 12: "a real call's measured duration moves the session's clock (as
    latency does for the fakes), so idle_secs keeps its meaning"."""
    def slow(request):
        time.sleep(0.05)
        return wire.stream(["Slow."])

    llm = wire.llm(wire.api(slow))
    s = convlab.Session(llm=llm, clock=1000.0)
    s.submit(say("hi", "u1"))
    [started] = [e for e in of(s, "llm.started")]
    reply = s.path()[-1]
    assert llm.latency >= 0.05
    assert reply["time"] - started["time"] == pytest.approx(llm.latency, abs=1e-9)
    assert s.clock == pytest.approx(1000.0 + llm.latency, abs=1e-9)


def test_the_key_never_leaks(wire, tmp_path):
    """Issue 12: "API keys ... never appear in the session log, a snapshot, a repr,
    an event or an error message" -- even when the provider's own error text holds it."""
    if wire.name == "openai":
        leaky = fail(401, {"error": {"message": f"Incorrect API key provided: {KEY}. You can find your API key at "
                                                "https://platform.openai.com/account/api-keys.",
                                     "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})
        masked = fail(401, {"error": {"message": f"Incorrect API key provided: {KEY[:8]}{'*' * 20}{KEY[-4:]}.",
                                      "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})
    else:
        leaky = fail(401, {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"}, "request_id": "req_1"})
        masked = fail(401, {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY[:8]}***{KEY[-4:]}"}, "request_id": "req_2"})
    api = wire.api(leaky, masked, wire.stream(["Fine now."]))
    llm = wire.llm(api)
    log = tmp_path / "s.jsonl"
    s = convlab.Session(llm=llm, log=log)
    seen: list[dict] = []
    s.subscribe(seen.append)
    for i in range(3):
        s.submit(say(f"try {i}", f"u{i}"))
    errors = []
    for answer in (leaky, masked):
        api.add(answer)
        with pytest.raises(convlab.ProviderError) as info:
            llm.complete({"messages": [{"role": "user", "content": "hi"}]})
        errors.append(info.value)
    texts = {
        "log": log.read_text(),
        "snapshot": json.dumps(s.snapshot()),
        "events": json.dumps(s.events) + json.dumps(seen),
        "turns": json.dumps(s.turns),
        "reprs": repr(llm) + repr(s) + repr(llm.client.base_url),
        "errors": " ".join(str(e) + repr(e) for e in errors),
    }
    assert len(of(s, "llm.failed")) == 2 and s.path()[-1]["content"] == "Fine now."
    assert "Incorrect API key provided" in texts["errors"] or "invalid x-api-key" in texts["errors"]
    for where, text in texts.items():
        assert KEY not in text, f"the key is in the {where}"
        assert KEY[-4:] not in text, f"the key's tail (what a masked key shows) is in the {where}"
    # the key was in play: every request carried it to the server
    assert all(any(KEY in value for value in r["headers"].values()) for r in api.requests)
