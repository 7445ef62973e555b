"""The two APIs' wire formats, for the provider tests: what each server answers,
byte for byte, on a mock transport (no test reaches the network).

Where the shapes come from:

- OpenAI Chat Completions: the official OpenAPI spec (openai/openai-openapi,
  ``openapi.yaml``: the chat completion object of the "Default" example, with
  ``usage.prompt_tokens_details.cached_tokens``; the "Functions" example's
  ``tool_calls`` reply with ``content: null``; the "Streaming" example's
  ``chat.completion.chunk`` lines; ``ChatCompletionStreamOptions``: with
  ``include_usage`` "an additional chunk will be streamed before the
  ``data: [DONE]`` message ... the choices field will always be an empty
  array"), and the SDK's own recorded streams (openai/openai-python,
  ``.inline-snapshot/external/2018feb66ae1*.bin``: tool-call deltas, the
  ``finish_reason`` chunk, the usage chunk, ``data: [DONE]``). The error body
  ``{"error": {"message", "type", "param", "code"}}`` with
  ``code: context_length_exceeded`` is the API's answer to a prompt over the
  window; llama.cpp's server answers ``type: exceed_context_size_error``.
- Anthropic Messages: the API reference (a Message with ``usage.input_tokens``,
  ``cache_creation_input_tokens``, ``cache_read_input_tokens``; "Streaming
  messages": ``message_start``, ``content_block_start`` / ``_delta`` /
  ``_stop``, ``ping``, ``message_delta`` with cumulative usage,
  ``message_stop``, and ``event: error`` in a stream), the SDK's own fixtures
  (anthropics/anthropic-sdk-python, ``tests/lib/streaming/fixtures/
  basic_response.txt`` and ``tool_use_response.txt``: ``input_json_delta``
  with ``partial_json``), and the errors page (``{"type": "error", "error":
  {"type", "message"}, "request_id"}``; a prompt over the window is a 400
  ``invalid_request_error`` "prompt is too long: 208310 tokens > 200000 maximum").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai

import convlab

#: an API key shaped like a real one; it must reach the server and nowhere else
KEY = "sk-test-Zq8R2mX4vN7pL1wK9sT3yB6c"

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"


# -- answers: (status, body, headers); body is a dict (JSON), bytes or an iterator of bytes (SSE)
def ok(body: Any, **headers: str) -> tuple[int, Any, dict[str, str]]:
    return 200, body, headers


def fail(status: int, body: Any, **headers: str) -> tuple[int, Any, dict[str, str]]:
    return status, body, headers


class MockAPI:
    """A server on a mock transport: answers in order, records every request.

    ``http`` is the module whose ``Response`` it answers with (``httpx`` for
    openai, ``httpx2`` for anthropic 2.x). Running out of answers is a test
    failure, not a quiet 500.
    """

    def __init__(self, http: Any, answers: Iterable[Any] = ()):
        self.http = http
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []

    def add(self, *answers: Any) -> "MockAPI":
        self.answers.extend(answers)
        return self

    def __call__(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        self.requests.append({"method": request.method, "url": str(request.url), "headers": dict(request.headers), "json": body})
        assert self.answers, f"the mock server got an unexpected request {request.method} {request.url}: {body}"
        answer = self.answers.pop(0)
        if callable(answer):
            answer = answer(request)
        status, payload, headers = answer
        if isinstance(payload, (bytes, Iterator)):
            return self.http.Response(status, headers={"content-type": "text/event-stream", **headers}, content=payload)
        return self.http.Response(status, json=payload, headers=headers)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["json"] for r in self.requests]


# -- OpenAI ------------------------------------------------------------------
def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }


def openai_completion(content: str | None = "Hello! How can I assist you today?", *, usage: dict | None = None,
                      tool_calls: list | None = None, model: str = "gpt-4.1-mini-2025-04-14",
                      id: str = "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", refusal: str | None = None) -> dict[str, Any]:
    """A chat completion object, as the OpenAPI spec's examples show it."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal, "annotations": []}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": id,
        "object": "chat.completion",
        "created": 1741569952,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": usage or openai_usage(19, 10),
        "service_tier": "default",
    }


def openai_tool_call(id: str = "call_abc123", name: str = "get_current_weather", arguments: str = '{\n"location": "Boston, MA"\n}') -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _chunk(choices: list, usage: dict | None = None, model: str = "gpt-4.1-mini-2025-04-14") -> bytes:
    chunk = {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190, "model": model,
             "system_fingerprint": "fp_44709d6fcb", "choices": choices}
    if usage is not None:
        chunk["usage"] = usage
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def openai_stream(texts: list[str], *, usage: dict | None = None, tool_call: dict | None = None, arguments: list[str] | None = None,
                  include_usage: bool = True) -> list[bytes]:
    """A streamed chat completion, one SSE event per item: the role chunk, a
    content delta per text, tool-call deltas, the finish_reason chunk, the
    usage chunk (empty choices) when asked for, ``data: [DONE]``."""
    events = [_chunk([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": None}, "logprobs": None, "finish_reason": None}])]
    for text in texts:
        events.append(_chunk([{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}]))
    if tool_call is not None:
        head = {"index": 0, "id": tool_call["id"], "type": "function", "function": {"name": tool_call["function"]["name"], "arguments": ""}}
        events.append(_chunk([{"index": 0, "delta": {"tool_calls": [head]}, "logprobs": None, "finish_reason": None}]))
        for piece in arguments or [tool_call["function"]["arguments"]]:
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
            events.append(_chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]))
    finish = "tool_calls" if tool_call is not None else "stop"
    events.append(_chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}]))
    if include_usage:
        events.append(_chunk([], usage=usage or openai_usage(19, 10)))
    events.append(b"data: [DONE]\n\n")
    return events


def openai_error(message: str, type: str = "invalid_request_error", code: Any = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


OPENAI_TOO_LONG = openai_error(
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. "
    "Please reduce the length of the messages.", param="messages", code="context_length_exceeded")
LLAMACPP_TOO_LONG = {"error": {"code": 400, "type": "exceed_context_size_error",
                               "message": "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it",
                               "n_prompt_tokens": 9412, "n_ctx": 8192}}


# -- local OpenAI-compatible servers, as they answer (docs/protocol.md: the providers) --
def llamacpp_stream(texts: list[str], *, finish: str = "stop", prompt: int = 32, cached: int = 0,
                    model: str = "SmolLM2-135M-Instruct", id: str = "chatcmpl-SyUciQ4jjMwDZJAYRJSXwWJw8bdc6VT1") -> list[bytes]:
    """llama.cpp's own server (``llama-server``, xllamacpp 2026.10) streaming, as measured on this
    machine: the role chunk with ``content: null``, a chunk per token, the ``finish_reason`` chunk
    (``"length"`` when ``max_completion_tokens`` cut it), the usage chunk (``choices: []``, usage
    with ``cached_tokens`` and a non-standard ``timings``), ``data: [DONE]``."""
    head = {"created": 1796172360, "id": id, "model": model, "system_fingerprint": "b0-unknown", "object": "chat.completion.chunk"}

    def event(chunk: dict) -> bytes:
        return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    events = [event({"choices": [{"finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}}], **head})]
    events += [event({"choices": [{"finish_reason": None, "index": 0, "delta": {"content": t}}], **head}) for t in texts]
    events.append(event({"choices": [{"finish_reason": finish, "index": 0, "delta": {}}], **head}))
    usage = {"completion_tokens": len(texts), "prompt_tokens": prompt, "total_tokens": prompt + len(texts),
             "prompt_tokens_details": {"cached_tokens": cached}}
    timings = {"cache_n": cached, "prompt_n": prompt - cached, "prompt_ms": 33.852, "prompt_per_token_ms": 33.852,
               "prompt_per_second": 29.54, "predicted_n": len(texts), "predicted_ms": 88.153,
               "predicted_per_token_ms": 22.04, "predicted_per_second": 45.38}
    events.append(event({"choices": [], **head, "usage": usage, "timings": timings}))
    return events + [b"data: [DONE]\n\n"]


def llama_cpp_python_stream(texts: list[str], *, finish: str = "stop", model: str = "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
                            id: str = "chatcmpl-6c1e9d8a-2f4b-4c0e-9d57-0a8f3b1c2e4d") -> list[bytes]:
    """llama-cpp-python's server (``llama_cpp.server``) streaming: its chunks as
    ``_convert_text_completion_chunks_to_chat`` makes them (the role chunk has no
    ``content``, the last chunk ``delta: {}`` with the ``finish_reason``) and no usage
    chunk at all (it ignores ``stream_options``), then ``data: [DONE]``; sse-starlette
    ends each line with CRLF."""
    head = {"id": id, "model": model, "created": 1741569952, "object": "chat.completion.chunk"}
    deltas = [({"role": "assistant"}, None)] + [({"content": t}, None) for t in texts] + [({}, finish)]
    events = [b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": f}]}).encode() + b"\r\n\r\n"
              for d, f in deltas]
    return events + [b"data: [DONE]\r\n\r\n"]


#: llama-cpp-python's server, too long and not streamed (``RouteErrorHandler``'s
#: ``context_length_exceeded`` formatter; ``max_tokens`` not given is ``None``); streamed, the
#: same request gets HTTP 200 and an empty body: the error is raised after the response started.
LLAMA_CPP_PYTHON_TOO_LONG = {"error": {
    "message": "This model's maximum context length is 512 tokens. However, you requested 2031 tokens "
               "(2031 in the messages, None in the completion). Please reduce the length of the messages or completion.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


def openai_client(api: MockAPI, *, max_retries: int = 0, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=OPENAI_URL, max_retries=max_retries,
                         http_client=httpx.Client(transport=httpx.MockTransport(api)))


def openai_llm(api: MockAPI, model: str = "gpt-4.1-mini", *, max_retries: int = 0, key: str = KEY, **kw: Any) -> convlab.OpenAIChat:
    return convlab.OpenAIChat(model, client=openai_client(api, max_retries=max_retries, key=key), **kw)


# -- Anthropic -----------------------------------------------------------------
def anthropic_usage(input: int, output: int, cache_creation: int = 0, cache_read: int = 0) -> dict[str, Any]:
    return {"input_tokens": input, "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read,
            "output_tokens": output, "service_tier": "standard"}


def anthropic_message(content: list[dict] | str = "Hello! How can I help?", *, usage: dict | None = None,
                      model: str = "claude-sonnet-4-5-20250929", id: str = "msg_013Zva2CMHLNnXjNJJKqJ2EF",
                      stop_reason: str | None = None) -> dict[str, Any]:
    """A Message object, as the API reference shows it."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": id, "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": usage or anthropic_usage(11, 6)}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def anthropic_stream(texts: list[str], *, usage: dict | None = None, tool_use: dict | None = None,
                     partial_json: list[str] | None = None, model: str = "claude-sonnet-4-5-20250929",
                     error: dict | None = None) -> list[bytes]:
    """A streamed Message, one SSE event per item, as the SDK's fixtures have
    it: message_start (usage so far), a text block (start, ping, deltas,
    stop), a tool_use block with input_json_delta pieces, message_delta
    (stop_reason, cumulative output_tokens), message_stop. With ``error``,
    the stream breaks off after the first text delta with ``event: error``."""
    usage = usage or anthropic_usage(11, 6)
    start_usage = {**usage, "output_tokens": 1}
    events = [_event("message_start", {"type": "message_start", "message": {
        "id": "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})]
    index = 0
    if texts:
        events.append(_event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        events.append(b'event: ping\ndata: {"type": "ping"}\n\n')
        for i, text in enumerate(texts):
            events.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}))
            if error is not None and i == 0:
                events.append(_event("error", {"type": "error", "error": error}))
                return events
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if tool_use is not None:
        block = {"type": "tool_use", "id": tool_use["id"], "name": tool_use["name"], "caller": {"type": "direct"}, "input": {}}
        events.append(_event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
        for piece in [""] + (partial_json or [json.dumps(tool_use["input"])]):
            events.append(_event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                         "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if tool_use is not None else "end_turn"
    events.append(_event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                           "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(_event("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}, "request_id": "req_011CVQe1dLrGNMJyE1ghG1av"}


ANTHROPIC_TOO_LONG = anthropic_error("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")


def anthropic_client(api: MockAPI, *, max_retries: int = 0, key: str = KEY) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url=ANTHROPIC_URL, max_retries=max_retries,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(api)))


def anthropic_llm(api: MockAPI, model: str = "claude-sonnet-4-5", *, max_retries: int = 0, **kw: Any) -> convlab.AnthropicChat:
    return convlab.AnthropicChat(model, client=anthropic_client(api, max_retries=max_retries), **kw)


def sse(events: list[bytes], log: list[str] | None = None) -> Iterator[bytes] | bytes:
    """The events as one body, or (with ``log``) as a generator that notes
    ``sent <i>`` in ``log`` as it hands each event to the client: a test
    then sees whether a delta reached a subscriber before the next event
    was even sent."""
    if log is None:
        return b"".join(events)

    def gen() -> Iterator[bytes]:
        for i, event in enumerate(events):
            log.append(f"sent {i}")
            yield event

    return gen()


# -- the two APIs behind one face, for the tests that hold for both ------------------
class Wire:
    """One API's answers, so a behaviour test runs over both providers."""

    name = ""
    http: Any = None
    first_text_event = 0  # which event of a stream carries the first text delta
    too_long: dict[str, Any] = {}

    def api(self, *answers: Any) -> MockAPI:
        return MockAPI(self.http, answers)

    def llm(self, api: MockAPI, **kw: Any) -> Any:
        raise NotImplementedError

    def reply(self, text: str, input: int = 19, output: int = 10, cached: int = 0) -> tuple:
        raise NotImplementedError

    def stream(self, texts: list[str], input: int = 19, output: int = 10, cached: int = 0, log: list[str] | None = None) -> tuple:
        raise NotImplementedError

    def tool_reply(self, call_id: str, name: str, args: dict[str, Any], text: str = "") -> tuple:
        raise NotImplementedError

    def server_error(self, status: int = 500, **headers: str) -> tuple:
        raise NotImplementedError

    def read(self, cached: int, input: int) -> int:
        """All the input a reply with these figures says the model read."""
        raise NotImplementedError

    def sent_texts(self, body: dict[str, Any]) -> list[str]:
        """The text of each message a request sent, in order (system included)."""
        raise NotImplementedError


class OpenAIWire(Wire):
    name = "openai"
    http = httpx
    first_text_event = 1  # after the role chunk
    too_long = OPENAI_TOO_LONG

    def llm(self, api: MockAPI, **kw: Any) -> convlab.OpenAIChat:
        return openai_llm(api, **kw)

    def reply(self, text: str, input: int = 19, output: int = 10, cached: int = 0) -> tuple:
        return ok(openai_completion(text, usage=openai_usage(input, output, cached)))

    def stream(self, texts: list[str], input: int = 19, output: int = 10, cached: int = 0, log: list[str] | None = None) -> tuple:
        return ok(sse(openai_stream(texts, usage=openai_usage(input, output, cached)), log))

    def tool_reply(self, call_id: str, name: str, args: dict[str, Any], text: str = "") -> tuple:
        return ok(sse(openai_stream([text] if text else [], tool_call=openai_tool_call(call_id, name, json.dumps(args)))))

    def server_error(self, status: int = 500, **headers: str) -> tuple:
        return fail(status, openai_error("The server had an error while processing your request. Sorry about that!", "server_error"), **headers)

    def read(self, cached: int, input: int) -> int:
        return input  # prompt_tokens already holds the cached tokens

    def sent_texts(self, body: dict[str, Any]) -> list[str]:
        return [convlab.content_text(m["content"]) for m in body["messages"]]


class AnthropicWire(Wire):
    name = "anthropic"
    http = httpx2
    first_text_event = 3  # after message_start, content_block_start, ping
    too_long = ANTHROPIC_TOO_LONG

    def llm(self, api: MockAPI, **kw: Any) -> convlab.AnthropicChat:
        return anthropic_llm(api, **kw)

    def reply(self, text: str, input: int = 19, output: int = 10, cached: int = 0) -> tuple:
        return ok(anthropic_message(text, usage=anthropic_usage(input, output, cache_read=cached)))

    def stream(self, texts: list[str], input: int = 19, output: int = 10, cached: int = 0, log: list[str] | None = None) -> tuple:
        return ok(sse(anthropic_stream(texts, usage=anthropic_usage(input, output, cache_read=cached)), log))

    def tool_reply(self, call_id: str, name: str, args: dict[str, Any], text: str = "") -> tuple:
        return ok(sse(anthropic_stream([text] if text else [], tool_use={"id": call_id, "name": name, "input": args})))

    def server_error(self, status: int = 500, **headers: str) -> tuple:
        return fail(status, anthropic_error("api_error", "Internal server error"), **headers)

    def read(self, cached: int, input: int) -> int:
        return input + cached  # input_tokens leaves out what was read from the cache

    def sent_texts(self, body: dict[str, Any]) -> list[str]:
        system = body.get("system")
        texts = [convlab.content_text(system)] if system else []
        return texts + [convlab.content_text(m["content"]) for m in body["messages"]]


WIRES = [OpenAIWire(), AnthropicWire()]


class Loopback:
    """A real HTTP server on 127.0.0.1 (a free port, a thread of its own) that answers every POST with
    ``answer(path, body, headers) -> (status, body)`` (a dict as JSON, or bytes as they are), keeping each
    request's path, body and headers (their names in lower case) in ``requests``. ``url`` is its base URL (``.../v1``); use it in a
    ``with`` block, which stops it."""

    def __init__(self, answer: Any) -> None:
        import http.server
        import threading

        requests = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                headers = {k.lower(): v for k, v in self.headers.items()}
                requests.append((self.path, body, headers))
                status, out = answer(self.path, body, headers)
                raw = out if isinstance(out, bytes) else json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
