"""AnthropicChat on the exact Messages wire (shapes: tests/providers_wire.py).

Issue 12: "Messages map both ways without loss: roles, string and part-list
content, ... tool_use / tool_result blocks (Anthropic), system messages
(Anthropic's top-level system), names"; "Anthropic's input_tokens exclude
cache_creation_input_tokens and cache_read_input_tokens, which must be added.
Keep the cached fields on the node"; "Anthropic's 400 whose message says the
prompt is too long" is ``too_long``.
"""

from __future__ import annotations

import math

import httpx2
import pytest

import convlab
from convlab.providers.anthropic_chat import anthropic_messages
from providers_wire import (ANTHROPIC_TOO_LONG, KEY, MockAPI, anthropic_error, anthropic_llm, anthropic_message, anthropic_stream,
                            anthropic_usage, fail, ok, sse)

pytestmark = pytest.mark.disable_socket

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
CALL_1 = {"id": "toolu_01A", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "boardwalk"}'}}
CALL_2 = {"id": "toolu_01B", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
CONVERSATION = [
    {"id": "s1", "role": "system", "content": "You are terse."},
    {"id": "u1", "role": "user", "name": "ann", "content": [{"type": "text", "text": "What is in this image?"}, IMAGE]},
    {"id": "e1", "role": "assistant", "content": "Let me look.", "metadata": {"model": "claude"}, "tool_calls": [CALL_1, CALL_2]},
    {"id": "t1", "role": "tool", "tool_call_id": "toolu_01A", "content": "A wooden boardwalk."},
    {"id": "t2", "role": "tool", "tool_call_id": "toolu_01B", "content": [{"type": "text", "text": "sunny"}]},
    {"id": "s2", "role": "system", "content": "Answer in one line."},
    {"id": "e2", "role": "assistant", "content": "A boardwalk in the sun."},
    {"id": "u2", "role": "user", "content": "Thanks"},
]


def test_the_request_is_the_apis_own_shape():
    """System messages -> the top-level system (several: text blocks, in order);
    tool_calls -> tool_use blocks after the assistant's text; consecutive tool
    messages -> tool_result blocks in one user turn; part lists as given;
    ids, names and metadata stay home; max_tokens, which the API requires."""
    api = MockAPI(httpx2, [ok(anthropic_message("ok"))])
    anthropic_llm(api).complete({"model": None, "messages": CONVERSATION, "stream": False, "summary": False})
    assert api.requests[0]["url"] == "https://api.anthropic.com/v1/messages"
    assert api.bodies[0] == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Answer in one line."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is in this image?"}, IMAGE]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_01A", "name": "lookup", "input": {"q": "boardwalk"}},
                {"type": "tool_use", "id": "toolu_01B", "name": "weather", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "A wooden boardwalk."},
                {"type": "tool_result", "tool_use_id": "toolu_01B", "content": [{"type": "text", "text": "sunny"}]}]},
            {"role": "assistant", "content": "A boardwalk in the sun."},
            {"role": "user", "content": "Thanks"},
        ],
    }


def test_one_system_message_is_the_system_string():
    system, messages = anthropic_messages([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    assert system == "Be brief." and messages == [{"role": "user", "content": "hi"}]
    assert anthropic_messages([{"role": "user", "content": "hi"}])[0] is None


def test_a_reply_maps_back_and_goes_out_again_as_it_came():
    """Both ways without loss: thinking, text and tool_use blocks -> a node (the
    thinking and text blocks as parts, the tool_use as tool_calls) -> the next
    request carries the same blocks in the same order."""
    thinking = {"type": "thinking", "thinking": "The user wants the weather; call the tool.", "signature": "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve"}
    text = {"type": "text", "text": "I'll check the current weather in Paris for you."}
    tool_use = {"type": "tool_use", "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "name": "get_weather", "input": {"location": "Paris", "unit": None}}
    api = MockAPI(httpx2, [ok(anthropic_message([thinking, text, tool_use], usage=anthropic_usage(377, 65))),
                           ok(anthropic_message("18C and sunny."))])
    s = convlab.Session(llm=anthropic_llm(api), worker=lambda d: [{"type": "llm.call", "stream": False}] if d["type"] == "turn.start" else [])
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "Weather in Paris?"}})
    node = s.path()[-1]
    assert node["content"] == [thinking, text]
    assert node["tool_calls"] == [{"id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "type": "function",
                                   "function": {"name": "get_weather", "arguments": '{"location": "Paris", "unit": null}'}}]
    assert node["metadata"] == {"id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "model": "claude-sonnet-4-5-20250929", "stop_reason": "tool_use"}
    s.submit({"type": "client.message", "agent_id": "bot",
              "message": {"id": "r1", "role": "tool", "tool_call_id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "content": "18C"}})
    assert api.bodies[1]["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [thinking, text, tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "content": "18C"}]},
    ]


def test_a_streamed_tool_use_adds_up_its_partial_json():
    """The SDK's tool_use_response fixture: input_json_delta pieces add up to the
    tool's input; only text is a delta."""
    events = anthropic_stream(["I", "'ll check the current weather in Paris for you."],
                              tool_use={"id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "name": "get_weather", "input": {"location": "Paris"}},
                              partial_json=['{"locati', 'on": "P', "ar", 'is"}'], usage=anthropic_usage(377, 65),
                              model="claude-sonnet-4-20250514")
    s = convlab.Session(llm=anthropic_llm(MockAPI(httpx2, [ok(sse(events))])))
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "Weather in Paris?"}})
    node = s.path()[-1]
    assert [e["text"] for e in got if e["type"] == "llm.delta"] == ["I", "'ll check the current weather in Paris for you."]
    assert node["content"] == "I'll check the current weather in Paris for you."
    assert node["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"location": "Paris"}'}
    assert node["usage"] == {"input_tokens": 377, "output_tokens": 65, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def test_the_cache_fields_are_kept_and_the_count_adds_them():
    """PROTOCOL 5.1: "Anthropic's input_tokens + cache_creation_input_tokens +
    cache_read_input_tokens, the sum"."""
    api = MockAPI(httpx2, [ok(anthropic_message("ok", usage=anthropic_usage(21, 393, cache_creation=188086, cache_read=0))),
                           ok(sse(anthropic_stream(["ok"], usage=anthropic_usage(9, 2, cache_creation=40, cache_read=188086))))])
    s = convlab.Session(llm=anthropic_llm(api), worker=lambda d: [{"type": "llm.call", "stream": d["trigger"]["message_ids"] == ["u2"]}] if d["type"] == "turn.start" else [])
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "long document"}})
    assert s.path()[-1]["usage"] == {"input_tokens": 21, "output_tokens": 393, "cache_creation_input_tokens": 188086, "cache_read_input_tokens": 0}
    assert s.tokens() == 21 + 188086 + math.ceil(len("ok") / 4)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u2", "role": "user", "content": "and?"}})
    assert s.path()[-1]["usage"]["cache_read_input_tokens"] == 188086
    assert s.tokens() == 9 + 40 + 188086 + math.ceil(len("ok") / 4)


def test_prompt_too_long_is_too_long():
    llm = anthropic_llm(MockAPI(httpx2, [fail(400, ANTHROPIC_TOO_LONG)]))
    with pytest.raises(convlab.ProviderError) as info:
        llm.complete({"messages": [{"role": "user", "content": "x"}]})
    assert info.value.kind == "too_long"
    assert str(info.value) == ("anthropic claude-sonnet-4-5: HTTP 400 invalid_request_error: "
                               "prompt is too long: 208310 tokens > 200000 maximum")


def test_another_bad_request_is_failed_with_the_apis_message():
    body = anthropic_error("invalid_request_error", "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens")
    llm = anthropic_llm(MockAPI(httpx2, [fail(400, body)]), params={"max_tokens": 64001})
    with pytest.raises(convlab.ProviderError) as info:
        list(llm.stream({"messages": [{"role": "user", "content": "x"}]}))
    assert info.value.kind == "failed" and "max_tokens: 64001 > 64000" in str(info.value)


def test_overloaded_is_retried_by_the_sdk_then_failed():
    retry = {"retry-after-ms": "1"}
    body = anthropic_error("overloaded_error", "Overloaded")
    api = MockAPI(httpx2, [fail(529, body, **retry)] * 3)
    with pytest.raises(convlab.ProviderError) as info:
        anthropic_llm(api, max_retries=2).complete({"messages": [{"role": "user", "content": "x"}]})
    assert len(api.requests) == 3 and info.value.kind == "failed"
    assert str(info.value) == "anthropic claude-sonnet-4-5: HTTP 529 overloaded_error: Overloaded"


def test_an_error_event_in_the_stream_fails_the_call_and_records_nothing():
    """The streaming page: "we may occasionally send errors in the event stream"
    (event: error, overloaded_error); PROTOCOL 7: a failed call records nothing."""
    events = anthropic_stream(["Hel", "lo"], error={"type": "overloaded_error", "message": "Overloaded"})
    s = convlab.Session(llm=anthropic_llm(MockAPI(httpx2, [ok(sse(events))])))
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    [delta] = [e for e in got if e["type"] == "llm.delta"]
    [failed] = [e for e in s.events if e["type"] == "llm.failed"]
    assert delta["text"] == "Hel" and failed["error"] == "failed"
    assert failed["message"] == "anthropic claude-sonnet-4-5: overloaded_error: Overloaded"
    assert s.path()[-1]["id"] == "u1" and delta["message_id"] not in s.tree


def no_credentials(monkeypatch, home) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))  # no profile on disk either


def test_no_credentials_is_a_failed_call_that_says_what_to_set(monkeypatch, tmp_path):
    """The SDK looks for credentials in several places and finds none only when it
    sends: the call fails, saying what to set, and nothing is sent."""
    no_credentials(monkeypatch, tmp_path)
    api = MockAPI(httpx2, [])
    llm = convlab.AnthropicChat("claude-sonnet-4-5", http_client=httpx2.Client(transport=httpx2.MockTransport(api)))
    with pytest.raises(convlab.ProviderError) as info:
        llm.complete({"messages": [{"role": "user", "content": "x"}]})
    assert info.value.kind == "failed" and "ANTHROPIC_API_KEY" in str(info.value) and api.requests == []


def test_a_credential_source_that_does_not_work_is_a_clear_error_at_once(monkeypatch, tmp_path):
    no_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_PROFILE", "work")
    with pytest.raises(ValueError, match=r"AnthropicChat\('claude-sonnet-4-5'\): Config file not found .*profile 'work'"):
        convlab.provider("anthropic:claude-sonnet-4-5")


def test_the_key_from_the_environment_is_used_and_kept_out_of_the_repr(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = MockAPI(httpx2, [ok(anthropic_message("hi"))])
    llm = convlab.AnthropicChat("claude-haiku-4-5", http_client=httpx2.Client(transport=httpx2.MockTransport(api)))
    assert llm.complete({"messages": [{"role": "user", "content": "x"}]})["content"] == "hi"
    assert any(KEY in v for v in api.requests[0]["headers"].values()) and KEY not in repr(llm)


def test_system_is_not_a_parameter():
    """The system prompt belongs to the conversation (a system message), where the tree keeps it."""
    with pytest.raises(ValueError, match=r"params\['system'\].*system message"):
        convlab.AnthropicChat("claude-sonnet-4-5", api_key="-", params={"system": "Be brief."})


def test_tool_arguments_that_are_not_json_go_as_their_text_and_an_unanswered_call_as_text():
    """Issue 34 (4): a log's tool call whose arguments are not a JSON object (a model's cut-off call) is sent with
    its text kept (``input: {"arguments": text}``), not a failed call; a call whose result the request does not
    hold, and a result whose call it does not hold, are said in text: the API would refuse either as a block."""
    bad = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}
    _, msgs = anthropic_messages([{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [bad]},
                                  {"role": "tool", "tool_call_id": "call_1", "content": "error: bad arguments"}])
    assert msgs[1] == {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "f", "input": {"arguments": "{not json"}}]}
    assert msgs[2]["content"][0]["tool_use_id"] == "call_1"
    _, lone = anthropic_messages([{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [bad]},
                                  {"role": "tool", "tool_call_id": "elsewhere", "content": "42"}])
    assert lone[1:] == [{"role": "assistant", "content": "[tool call f {not json]"},
                        {"role": "user", "content": "[result of a tool call not in this request: elsewhere]\n42"}]


