"""OpenAIChat on the exact Chat Completions wire (shapes: tests/providers_wire.py).

Issue 12: "Messages map both ways without loss: roles, string and part-list
content, tool_calls / tool_call_id (OpenAI) ..., names"; OpenAI's
``prompt_tokens`` "already include prompt_tokens_details.cached_tokens";
streaming "with a final usage chunk via stream_options include_usage";
``context_length_exceeded`` is ``too_long``; OPENAI_BASE_URL reaches any
OpenAI-compatible server.
"""

from __future__ import annotations

import json
import math

import httpx
import pytest

import convlab
from convlab.providers.openai_chat import openai_messages
from convlab.tree import input_tokens
from providers_wire import (KEY, LLAMACPP_TOO_LONG, OPENAI_TOO_LONG, MockAPI, fail, ok, openai_completion, openai_error,
                            openai_llm, openai_stream, openai_tool_call, openai_usage, sse)

pytestmark = pytest.mark.disable_socket

CONVERSATION = [
    {"id": "s1", "role": "system", "content": "You are terse."},
    {"id": "u1", "role": "user", "name": "ann", "content": [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/boardwalk.jpg"}}]},
    {"id": "e1", "role": "assistant", "content": "", "metadata": {"model": "gpt-4.1-mini-2025-04-14"},
     "tool_calls": [openai_tool_call("call_1", "lookup", '{"q": "boardwalk"}'), openai_tool_call("call_2", "weather", "{}")]},
    {"id": "t1", "role": "tool", "tool_call_id": "call_1", "content": "A wooden boardwalk."},
    {"id": "t2", "role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "sunny"}]},
    {"id": "e2", "role": "assistant", "name": "bot", "content": "A boardwalk in the sun."},
    {"id": "u2", "role": "user", "content": "Thanks"},
]


def test_the_request_is_the_apis_own_shape():
    """Every role, string and part-list content, names, tool_calls (content null
    when the assistant only called tools) and tool_call_id go as the API takes them;
    convlab's ids and metadata stay home."""
    api = MockAPI(httpx, [ok(openai_completion("ok"))])
    openai_llm(api).complete({"model": None, "messages": CONVERSATION, "stream": False, "summary": False})
    assert api.requests[0]["url"] == "https://api.openai.com/v1/chat/completions"
    assert api.bodies[0] == {"model": "gpt-4.1-mini", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "name": "ann", "content": CONVERSATION[1]["content"]},
        {"role": "assistant", "content": None, "tool_calls": CONVERSATION[2]["tool_calls"]},
        {"role": "tool", "tool_call_id": "call_1", "content": "A wooden boardwalk."},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "sunny"}]},
        {"role": "assistant", "name": "bot", "content": "A boardwalk in the sun."},
        {"role": "user", "content": "Thanks"},
    ]}


def test_a_reply_maps_back_and_goes_out_again_as_it_came():
    """Both ways without loss: the API's assistant message -> a recorded node -> the
    next request carries the same message (tool calls, their ids and arguments)."""
    call = openai_tool_call()  # the spec's "Functions" example: arguments with newlines
    api = MockAPI(httpx, [ok(openai_completion(None, tool_calls=[call])), ok(openai_completion("It is 22C in Boston."))])
    s = convlab.Session(llm=openai_llm(api), worker=lambda d: [{"type": "llm.call", "stream": False}] if d["type"] == "turn.start" else [])
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "Weather in Boston?"}})
    node = s.path()[-1]
    assert node["content"] == "" and node["tool_calls"] == [call]
    assert node["metadata"] == {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "model": "gpt-4.1-mini-2025-04-14", "finish_reason": "tool_calls"}
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "r1", "role": "tool", "tool_call_id": "call_abc123", "content": "22C"}})
    assert api.bodies[1]["messages"] == [
        {"role": "user", "content": "Weather in Boston?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_abc123", "content": "22C"},
    ]
    result = {"role": "tool", "tool_call_id": "call_abc123", "content": "22C"}
    assert openai_messages([node, result])[0] == {"role": "assistant", "content": None, "tool_calls": [call]}
    # a call whose result the request does not hold (a slice a summary call sends) is said in text: the API refuses it
    assert openai_messages([node]) == [{"role": "assistant", "content": '[tool call get_current_weather {\n"location": "Boston, MA"\n}]'}]


def test_a_streamed_tool_call_adds_up_its_argument_pieces():
    """The SDK's recorded stream: a tool call's arguments arrive in pieces; the
    recorded call holds them whole; only text is a delta."""
    call = openai_tool_call("call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather", '{"city":"New York City"}')
    events = openai_stream([], tool_call=call, arguments=['{"', "city", '":"', "New", " York", " City", '"}'], usage=openai_usage(44, 16))
    api = MockAPI(httpx, [ok(sse(events))])
    s = convlab.Session(llm=openai_llm(api))
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "what's the weather in NYC?"}})
    node = s.path()[-1]
    assert node["tool_calls"] == [call] and node["content"] == ""
    assert node["usage"] == {"input_tokens": 44, "output_tokens": 16, "cached_tokens": 0, "reasoning_tokens": 0}
    assert [e for e in got if e["type"] == "llm.delta"] == []


def test_streaming_asks_for_the_usage_chunk_and_keeps_given_stream_options():
    """"with stream: true use the SDK's streaming API (OpenAI with a final usage chunk
    via stream_options include_usage)"; params go with every call."""
    api = MockAPI(httpx, [ok(sse(openai_stream(["Hi"], usage=openai_usage(30, 1, cached=0))))])
    llm = openai_llm(api, params={"temperature": 0.2, "stream_options": {"include_obfuscation": False}})
    assert list(llm.stream({"messages": [{"role": "user", "content": "hi"}]}))[-1]["usage"]["input_tokens"] == 30
    body = api.bodies[0]
    assert body["stream"] is True and body["temperature"] == 0.2
    assert body["stream_options"] == {"include_obfuscation": False, "include_usage": True}


def test_a_server_that_sends_no_usage_chunk_leaves_usage_empty_and_the_count_estimates():
    """A local server may ignore include_usage: no usage is made up; the count
    (PROTOCOL 5.1, no call with usage on the path) is chars/4 over the path."""
    api = MockAPI(httpx, [ok(sse(openai_stream(["Hello there"], include_usage=False)))])
    s = convlab.Session(llm=openai_llm(api))
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    assert s.path()[-1]["usage"] == {} and s.tokens() == math.ceil(len("hi" + "Hello there") / 4)


def test_cached_prompt_tokens_are_not_counted_twice():
    """"OpenAI prompt_tokens already include prompt_tokens_details.cached_tokens": the
    count reads prompt_tokens; cached_tokens is kept beside it."""
    llm = openai_llm(MockAPI(httpx, [ok(openai_completion("ok", usage=openai_usage(2006, 300, cached=1920)))]))
    usage = llm.complete({"messages": [{"role": "user", "content": "x"}]})["usage"]
    assert usage == {"input_tokens": 2006, "output_tokens": 300, "cached_tokens": 1920, "reasoning_tokens": 0}
    assert input_tokens(usage) == 2006  # what the engine's count reads


def test_a_refusal_is_kept_as_the_apis_refusal_part():
    api = MockAPI(httpx, [ok(openai_completion(None, refusal="I can't help with that."))])
    reply = openai_llm(api).complete({"messages": [{"role": "user", "content": "x"}]})
    assert reply["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]
    assert openai_messages([{"role": "assistant", **reply}])[0]["content"] == reply["content"]


@pytest.mark.parametrize("body", [OPENAI_TOO_LONG, LLAMACPP_TOO_LONG,
                                  {"object": "error", "type": "BadRequestError", "code": 400, "param": None,
                                   "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
                                              "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."}],
                         ids=["openai", "llama.cpp", "vllm"])
def test_context_too_long_is_too_long_on_openai_and_local_servers(body):
    llm = openai_llm(MockAPI(httpx, [fail(400, body)]))
    with pytest.raises(convlab.ProviderError) as info:
        llm.complete({"messages": [{"role": "user", "content": "x"}]})
    assert info.value.kind == "too_long" and "HTTP 400" in str(info.value)


def test_another_bad_request_is_failed_with_the_apis_message_naming_the_model_called():
    body = openai_error("Invalid value for 'temperature'.", param="temperature", code="invalid_value")
    llm = openai_llm(MockAPI(httpx, [fail(400, body), fail(400, body)]))
    with pytest.raises(convlab.ProviderError) as info:
        llm.complete({"messages": [{"role": "user", "content": "x"}]})
    assert info.value.kind == "failed"
    assert str(info.value) == "openai gpt-4.1-mini: HTTP 400 invalid_value: Invalid value for 'temperature'."
    with pytest.raises(convlab.ProviderError, match=r"^openai gpt-4.1-nano: HTTP 400"):  # a summary strategy's model, say
        llm.complete({"model": "gpt-4.1-nano", "messages": [{"role": "user", "content": "x"}]})


def test_an_error_in_the_middle_of_a_stream_fails_the_call_and_records_nothing():
    """PROTOCOL 7: "a call that fails records nothing and its message_id stays unused"."""
    events = openai_stream(["Half "])[:2] + [b'data: {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}\n\n']
    api = MockAPI(httpx, [ok(sse(events))])
    s = convlab.Session(llm=openai_llm(api))
    got: list[dict] = []
    s.subscribe(got.append)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    [delta] = [e for e in got if e["type"] == "llm.delta"]
    [failed] = [e for e in s.events if e["type"] == "llm.failed"]
    assert delta["text"] == "Half " and failed["error"] == "failed" and "server had an error" in failed["message"]
    assert s.path()[-1]["id"] == "u1" and delta["message_id"] not in s.tree


def test_a_local_server_through_openai_base_url(monkeypatch):
    """Issue 12: the SDK "reads OPENAI_BASE_URL and OPENAI_API_KEY": a local
    OpenAI-compatible server (vLLM, Ollama, llama.cpp) is the same provider."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    api = MockAPI(httpx, [ok(openai_completion("Hi from qwen", model="qwen2.5:7b"))])
    llm = convlab.OpenAIChat("qwen2.5:7b", http_client=httpx.Client(transport=httpx.MockTransport(api)))
    assert repr(llm) == "OpenAIChat('qwen2.5:7b', base_url='http://127.0.0.1:8000/v1')"
    assert llm.complete({"messages": [{"role": "user", "content": "hi"}]})["metadata"]["model"] == "qwen2.5:7b"
    assert api.requests[0]["url"] == "http://127.0.0.1:8000/v1/chat/completions"
    assert api.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"


def test_no_key_is_a_clear_error_at_once(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        convlab.OpenAIChat("gpt-4.1-mini")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        convlab.provider("openai:gpt-4.1-mini")


def test_a_summary_call_is_a_plain_call_with_the_prompt_last():
    """PROTOCOL 5.3: summary calls "are not streamed"; the engine's request is
    mapped like any other (its prompt is the last user message)."""
    api = MockAPI(httpx, [ok(openai_completion("A summary."))])
    reply = openai_llm(api).complete({"model": "gpt-4.1-nano", "summary": True, "stream": False,
                                      "messages": [{"id": "u1", "role": "user", "content": "a"}, {"role": "user", "content": "Summarize."}]})
    assert reply["content"] == "A summary."
    assert api.bodies[0] == {"model": "gpt-4.1-nano", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "Summarize."}]}
    assert json.dumps(api.bodies[0]).count("stream") == 0
