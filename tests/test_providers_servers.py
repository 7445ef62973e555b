"""Issue 24: what real OpenAI-compatible servers answer, and no mock showed before.

Each mock here answers as the server named does, byte for byte where it was
measured (llama.cpp's own server through xllamacpp on this machine) or read
from its source (llama-cpp-python's server): tests/providers_wire.py.

1. A streamed reply cut at the token limit (``finish_reason: "length"``): the
   SDK's ``get_final_completion()`` raises ``LengthFinishReasonError``; the reply
   is recorded, with its ``finish_reason`` in the metadata.
2. ``api_key="-"`` (what a local server is given): a key is redacted only when it
   is long enough to be a secret (8 characters), so error texts stay readable.
3. llama-cpp-python's server answers a too-long streamed request with HTTP 200
   and an empty stream (the SDK raised a bare ``AssertionError``); it sends no
   usage chunk either.
"""

from __future__ import annotations

import math

import httpx
import pytest

import convlab
from convlab.providers.sdk import redact
from providers_wire import (LLAMA_CPP_PYTHON_TOO_LONG, LLAMACPP_TOO_LONG, MockAPI, fail, ok, openai_llm, openai_stream,
                            llama_cpp_python_stream, llamacpp_stream, openai_usage, sse)

pytestmark = pytest.mark.disable_socket

CONFIG = """
[agent.bot.context]
window = 100000
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 90000
"""


def say(text: str, id: str | None = None) -> dict:
    return {"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": text, **({"id": id} if id else {})}}


def of(s: convlab.Session, kind: str) -> list[dict]:
    return [e for e in s.events if e["type"] == kind]


# -- 1. cut at the token limit -------------------------------------------------
CUT = {
    "llama.cpp": ok(sse(llamacpp_stream(["Paris", " is", " the", " capital"], finish="length", prompt=31))),
    "openai": ok(sse(openai_stream(["Paris is the capital"], usage=openai_usage(31, 4))[:-3]
                     + [b'data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini-2025-04-14",'
                        b'"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}\n\n']
                     + openai_stream([], usage=openai_usage(31, 4))[-2:])),
}


@pytest.mark.parametrize("server", sorted(CUT))
def test_a_streamed_reply_cut_at_the_token_limit_is_recorded_with_its_finish_reason(server):
    """Before: every streamed turn that reached max_completion_tokens failed (ProviderError "failed")."""
    api = MockAPI(httpx, [CUT[server]])
    s = convlab.Session(llm=openai_llm(api, params={"max_completion_tokens": 4}))
    seen: list[dict] = []
    s.subscribe(seen.append)
    s.submit(say("What is the capital of France?", "u1"))
    reply = s.path()[-1]
    assert not of(s, "llm.failed") and s.turns[-1]["status"] == "completed"
    assert reply["role"] == "assistant" and reply["content"] == "Paris is the capital"
    assert reply["metadata"]["finish_reason"] == "length"
    assert reply["usage"]["input_tokens"] == 31 and reply["usage"]["output_tokens"] == 4
    assert "".join(e["text"] for e in seen if e["type"] == "llm.delta") == "Paris is the capital"
    assert api.bodies[0]["max_completion_tokens"] == 4


def test_a_cut_reply_keeps_a_long_chat_going_through_overflow_and_summary():
    """The issue's 6-turn story, shortened: a cut reply, then too long -> overflow -> a
    summary -> the call again, and the turn completes (before, the cut turns failed and
    there was nothing to summarize)."""
    api = MockAPI(httpx, [ok(sse(llamacpp_stream(["A", " long", " answer"], finish="length"))),
                          fail(400, LLAMACPP_TOO_LONG),
                          ok({"id": "chatcmpl-s", "object": "chat.completion", "created": 0, "model": "SmolLM2-135M-Instruct",
                              "choices": [{"index": 0, "finish_reason": "length",
                                           "message": {"role": "assistant", "content": "The user asked twice."}}],
                              "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}}),
                          ok(sse(llamacpp_stream(["Short", "."])))])
    s = convlab.Session(config=CONFIG, llm=openai_llm(api))
    s.submit(say("First question?", "u1"))
    s.submit(say("Second question?", "u2"))
    assert [t["status"] for t in s.turns] == ["completed", "completed"]
    assert [e["error"] for e in of(s, "llm.failed")] == ["too_long"] and of(s, "context.replaced")
    assert of(s, "llm.failed")[0]["message"] == ("openai gpt-4.1-mini: HTTP 400 exceed_context_size_error: request (9412 tokens) "
                                                 "exceeds the available context size (8192 tokens), try increasing it")
    assert s.path()[0]["kind"] == "summary" and s.path()[0]["content"].endswith("The user asked twice.")
    assert s.path()[-1]["content"] == "Short." and s.path()[-1]["metadata"]["finish_reason"] == "stop"


# -- 2. short keys ---------------------------------------------------------------
@pytest.mark.parametrize("key", ["-", "x", "none", "EMPTY", "sk-1234"])
def test_a_short_key_is_not_redacted_and_error_texts_stay_whole(key):
    """Before: api_key="-" turned every "-" of an error text into "***" (chatcmpl***abc)."""
    message = "Invalid 'messages[1].tool_call_id': 'chatcmpl-abc-123' is not a known id (see model gpt-4.1-mini)."
    api = MockAPI(httpx, [fail(400, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})])
    with pytest.raises(convlab.ProviderError) as info:
        openai_llm(api, key=key).complete({"messages": [{"role": "user", "content": "hi"}]})
    assert str(info.value) == f"openai gpt-4.1-mini: HTTP 400 invalid_request_error: {message}"


@pytest.mark.parametrize("key", ["12345678", "local-server-key", "sk-test-Zq8R2mX4vN7pL1wK9sT3yB6c"])
def test_a_key_of_eight_characters_or_more_is_redacted(key):
    api = MockAPI(httpx, [fail(401, {"error": {"message": f"bad key {key} given", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})])
    with pytest.raises(convlab.ProviderError) as info:
        openai_llm(api, key=key).complete({"messages": [{"role": "user", "content": "hi"}]})
    assert key not in str(info.value) and "bad key *** given" in str(info.value)


def test_redact_leaves_short_secrets_and_replaces_long_ones():
    assert redact("chatcmpl-abc x-y", ["-", "", "abc"]) == "chatcmpl-abc x-y"
    assert redact("key=hunter2hunter2!", ["hunter2hunter2"]) == "key=***!"


# -- 3. llama-cpp-python's server ----------------------------------------------------
@pytest.mark.parametrize("empty", [b"", b"data: [DONE]\r\n\r\n", b": ping - 2026-12-01 00:00:00\r\n\r\n"], ids=["nothing", "done", "ping"])
def test_an_empty_200_stream_asks_once_more_unstreamed_and_too_long_is_too_long(empty):
    """Before: the SDK's bare AssertionError escaped convlab (and the session). The same
    request, not streamed, gets the server's real answer: here its context_length_exceeded."""
    api = MockAPI(httpx, [ok(empty), fail(400, LLAMA_CPP_PYTHON_TOO_LONG)])
    llm = openai_llm(api)
    with pytest.raises(convlab.ProviderError) as info:
        list(llm.stream({"messages": [{"role": "user", "content": "word " * 2000}]}))
    assert info.value.kind == "too_long" and "maximum context length is 512 tokens" in str(info.value)
    assert [b.get("stream") for b in api.bodies] == [True, None]
    assert "stream_options" not in api.bodies[1] and api.bodies[1]["messages"] == api.bodies[0]["messages"]


def test_an_empty_stream_in_a_session_overflows_summarizes_and_runs_the_call_again():
    api = MockAPI(httpx, [ok(sse(llama_cpp_python_stream(["First", " answer."]))),
                          ok(b""), fail(400, LLAMA_CPP_PYTHON_TOO_LONG),
                          ok({"id": "chatcmpl-s", "object": "chat.completion", "created": 0, "model": "qwen",
                              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Summary."}}]}),
                          ok(sse(llama_cpp_python_stream(["Second", " answer."])))])
    s = convlab.Session(config=CONFIG, llm=openai_llm(api))
    s.submit(say("First question?", "u1"))
    s.submit(say("Second question?", "u2"))
    assert [t["status"] for t in s.turns] == ["completed", "completed"]
    assert [e["error"] for e in of(s, "llm.failed")] == ["too_long"] and of(s, "context.limited")[0]["reason"] == "overflow"
    assert [m["content"] for m in s.path()][-2:] == ["Second question?", "Second answer."]


def test_an_empty_stream_whose_unstreamed_answer_is_a_reply_records_it_as_one_delta():
    completion = {"id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "qwen",
                  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello."}}],
                  "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}}
    api = MockAPI(httpx, [ok(b""), ok(completion)])
    s = convlab.Session(llm=openai_llm(api))
    seen: list[dict] = []
    s.subscribe(seen.append)
    s.submit(say("hi", "u1"))
    assert s.path()[-1]["content"] == "Hello." and s.path()[-1]["usage"] == {"input_tokens": 9, "output_tokens": 2}
    assert [e["text"] for e in seen if e["type"] == "llm.delta"] == ["Hello."]


def test_an_empty_stream_answered_empty_again_is_a_failed_call_that_says_so():
    api = MockAPI(httpx, [ok(b""), ok({"id": "chatcmpl-3", "object": "chat.completion", "created": 0, "model": "qwen", "choices": []})])
    s = convlab.Session(llm=openai_llm(api))
    s.submit(say("hi", "u1"))
    [failed] = of(s, "llm.failed")
    assert failed["error"] == "failed" and "stream was empty" in failed["message"] and "no choices" in failed["message"]
    assert s.turns[-1]["status"] == "failed" and s.path()[-1]["id"] == "u1"


def test_no_usage_chunk_records_the_reply_and_the_count_estimates_from_the_last_usage():
    """llama-cpp-python sends no usage chunk: no usage is made up; the count (PROTOCOL 5.1)
    starts from the last call that had usage and adds chars/4 for what came after."""
    api = MockAPI(httpx, [ok(sse(llamacpp_stream(["Hi", "!"], prompt=30))), ok(sse(llama_cpp_python_stream(["Hello", " there"])))])
    s = convlab.Session(llm=openai_llm(api))
    s.submit(say("hi", "u1"))
    assert s.tokens() == 30 + math.ceil(len("Hi!") / 4)
    s.submit(say("again", "u2"))
    reply = s.path()[-1]
    assert reply["content"] == "Hello there" and reply["usage"] == {} and reply["metadata"]["finish_reason"] == "stop"
    assert s.tokens() == 30 + math.ceil(len("Hi!" + "again" + "Hello there") / 4)
    assert api.bodies[1]["stream_options"] == {"include_usage": True}  # asked for, not sent
