"""OpenAIChat: OpenAI's Chat Completions API through the official ``openai`` SDK,
and so every OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, LM
Studio, LiteLLM's proxy) that ``OPENAI_BASE_URL`` points at.

Messages go in this API's shape whatever shape a log wrote them in
(``convlab.providers.shapes``: an Anthropic log's ``tool_use`` and
``tool_result`` parts become ``tool_calls`` and ``tool`` messages, thinking is
left out, a part the API has no place for is said in text); a subclass whose
server knows no tools sets ``tools = False`` (every message plain text). The SDK is
imported when the first ``OpenAIChat`` is made, never by ``import convlab``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..tokens import content_text
from .sdk import SDKChat
from .shapes import openai_messages

if TYPE_CHECKING:  # the SDK is imported when the first OpenAIChat is made
    import openai
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessageToolCallUnion

__all__ = ["OpenAIChat", "openai_messages", "openai_reply", "openai_usage"]

# local servers say "too long" in their own words (vLLM: "This model's maximum
# context length is 4096 tokens. However, you requested ..."; llama.cpp's
# server: type exceed_context_size_error, "request (9412 tokens) exceeds the
# available context size (8192 tokens)")
TOO_LONG_CODES = ("context_length_exceeded", "exceed_context_size_error")
TOO_LONG_WORDS = ("maximum context length", "exceeds the available context size")


def openai_usage(usage: CompletionUsage | None) -> dict[str, Any]:
    """The API's usage as convlab records it: ``input_tokens`` is ``prompt_tokens``,
    which already holds the cached prompt tokens (kept as ``cached_tokens``, never
    added again); ``output_tokens`` is ``completion_tokens`` (``reasoning_tokens``
    kept). ``{}`` when the server reported none."""
    if usage is None:
        return {}
    out = {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens}
    prompt = getattr(usage, "prompt_tokens_details", None)
    if prompt is not None and prompt.cached_tokens is not None:
        out["cached_tokens"] = prompt.cached_tokens
    completion = getattr(usage, "completion_tokens_details", None)
    if completion is not None and completion.reasoning_tokens is not None:
        out["reasoning_tokens"] = completion.reasoning_tokens
    return out


def openai_reply(completion: ChatCompletion) -> dict[str, Any]:
    """A chat completion (or the one a stream adds up to) as a convlab reply.

    ``content`` is the text (``""`` when the model only called tools); a
    refusal is kept as the API's own ``{"type": "refusal"}`` part, so it goes
    back as it came. ``tool_calls`` as the API gave them; ``metadata`` the
    completion's ``id``, the ``model`` that answered and its ``finish_reason``.
    """
    if not completion.choices:
        raise ProviderError("failed", f"the server answered a completion with no choices (id {completion.id!r})")
    choice = completion.choices[0]
    message = choice.message
    content: Any = message.content if message.content is not None else ""
    if message.refusal:
        content = ([{"type": "text", "text": message.content}] if message.content else []) + [{"type": "refusal", "refusal": message.refusal}]
    reply: dict[str, Any] = {"content": content, "usage": openai_usage(completion.usage)}
    if message.tool_calls:
        reply["tool_calls"] = [_tool_call(tc) for tc in message.tool_calls]
    meta = {"id": completion.id, "model": completion.model, "finish_reason": choice.finish_reason}
    reply["metadata"] = {k: v for k, v in meta.items() if v is not None}
    return reply


def _tool_call(call: ChatCompletionMessageToolCallUnion) -> dict[str, Any]:
    if call.type == "function":
        return {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}
    return call.to_dict(mode="json")


class OpenAIChat(SDKChat["openai.OpenAI"]):
    """A chat model through the official ``openai`` SDK: OpenAI, or any
    OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio, LiteLLM).

    ``client`` is a ready ``openai.OpenAI`` (a test passes one on a mock
    transport); otherwise ``client_kwargs`` make one, and the SDK reads what
    they leave out from ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.
    ``params`` go with every call (``temperature``, ``tools``,
    ``max_completion_tokens``, ...). A streamed call asks for the final usage
    chunk (``stream_options.include_usage``). Context too long
    (``context_length_exceeded``, or a local server's own words for it) is
    ``ProviderError("too_long")``; any other error, after the SDK's own
    retries, ``ProviderError("failed")`` with the server's message.

    >>> import httpx, openai
    >>> def server(request):   # what the API answers (offline, as in the tests)
    ...     return httpx.Response(200, json={"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
    ...         "model": "gpt-4.1-mini", "choices": [{"index": 0, "finish_reason": "stop",
    ...         "message": {"role": "assistant", "content": "Hello!", "refusal": None}}],
    ...         "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}})
    >>> llm = OpenAIChat("gpt-4.1-mini", client=openai.OpenAI(
    ...     api_key="-", base_url="https://api.openai.com/v1", http_client=httpx.Client(transport=httpx.MockTransport(server))))
    >>> llm
    OpenAIChat('gpt-4.1-mini', base_url='https://api.openai.com/v1')
    >>> llm.complete({"messages": [{"role": "user", "content": "hi"}]})["usage"]
    {'input_tokens': 9, 'output_tokens': 2}
    """

    sdk = "openai"
    client_class = "openai.OpenAI"
    client_call = ("chat", "completions", "create")
    #: whether the server takes tool calls and ``tool`` messages (False: they are said in text)
    tools = True

    def __init__(self, model: str, client: openai.OpenAI | None = None, *, params: Mapping[str, Any] | None = None,
                 **client_kwargs: Any):
        super().__init__(model, client, params, client_kwargs)

    def make_client(self, options: dict[str, Any]) -> openai.OpenAI:
        try:
            import openai
        except ImportError:
            raise ImportError("OpenAIChat needs the openai SDK: pip install 'convlab[openai]'") from None
        try:
            return self.sdk_client(openai.OpenAI, options)
        except openai.OpenAIError as err:
            raise ValueError(
                f"OpenAIChat({self.model!r}): {err} (a local server that takes no key: set OPENAI_API_KEY to any value)"
            ) from None

    def call(self, model: str, messages: list[Mapping[str, Any]]) -> dict[str, Any]:
        completion = self.client.chat.completions.create(
            model=model, messages=openai_messages(messages, self.tools),  # type: ignore[arg-type]  # the API's JSON, not the SDK's TypedDicts
            **self.params)
        return openai_reply(completion)

    def call_streaming(self, model: str, messages: list[Mapping[str, Any]]) -> Iterator[Any]:
        """The text deltas, then the reply the stream adds up to: the SDK's snapshot of it,
        not ``get_final_completion()``, which raises on ``finish_reason`` ``"length"`` or
        ``"content_filter"`` (a reply cut at ``max_completion_tokens`` is a reply, its
        ``finish_reason`` in the metadata). A stream with no chunk at all goes to ``unstreamed``."""
        import openai

        params = dict(self.params)
        options = {**(params.pop("stream_options", None) or {}), "include_usage": True}
        chunks = 0
        with self.client.chat.completions.stream(
                model=model, messages=openai_messages(messages, self.tools),  # type: ignore[arg-type]  # the API's JSON, not the SDK's TypedDicts
                stream_options=options, **params) as stream:  # type: ignore[arg-type]  # params' own stream_options: JSON as given
            try:
                for event in stream:
                    if event.type == "chunk":
                        chunks += 1
                    elif event.type == "content.delta" and event.delta:
                        yield event.delta
            except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError):
                pass  # raised mid-stream only with parseable tools: what came is the reply
            completion = stream.current_completion_snapshot if chunks else None
        if completion is None:
            yield from self.unstreamed(model, messages)
            return
        yield openai_reply(completion)

    def unstreamed(self, model: str, messages: list[Mapping[str, Any]]) -> Iterator[Any]:
        """After an empty stream (HTTP 200 and no chunk: llama-cpp-python's server, when a
        request fails after its response started, e.g. one too long for its context), the same
        request once more, not streamed: the server then says what is wrong (a 400 with
        ``context_length_exceeded`` is ``too_long``), or answers, as one delta."""
        try:
            reply = self.call(model, messages)
        except ProviderError as err:
            raise self.failed(f"the server's stream was empty (HTTP 200, no chunk), and unstreamed: {err}", model, err.kind) from None
        text = content_text(reply["content"])
        if text:
            yield text
        yield reply

    def refusal(self, err: BaseException, model: str) -> ProviderError | None:
        import openai

        if not isinstance(err, openai.OpenAIError):
            return None
        status = getattr(err, "status_code", None)
        body = getattr(err, "body", None)
        said = body.get("message") if isinstance(body, dict) else None
        message = said if isinstance(said, str) else str(getattr(err, "message", None) or err)
        code = getattr(err, "code", None)
        code = None if code is None or str(code).isdigit() else code  # llama.cpp's server repeats the HTTP status as its code
        kind = getattr(err, "type", None)
        too_long = code in TOO_LONG_CODES or kind in TOO_LONG_CODES or any(w in message.lower() for w in TOO_LONG_WORDS)
        label = " ".join(str(x) for x in (f"HTTP {status}" if status and status >= 400 else None, code or kind) if x)
        return self.failed(f"{label}: {message}" if label else message, model, "too_long" if too_long else "failed")

    def secrets(self) -> list[str]:
        key = getattr(self.client, "api_key", None)
        return [key] if isinstance(key, str) else []
