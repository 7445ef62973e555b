"""AnthropicChat: Anthropic's Messages API through the official ``anthropic`` SDK.

Messages go in this API's shape whatever shape a log wrote them in
(``convlab.providers.shapes``): system messages become the top-level
``system``; tool calls ``tool_use`` blocks and their results ``tool_result``
blocks (consecutive results in one user turn, as the API wants them); a
reply's ``tool_use`` blocks come back as ``tool_calls``
(``input`` as the JSON ``arguments``), its other blocks (thinking, citations,
server tools) as content parts that go back as they came. The SDK is
imported when the first ``AnthropicChat`` is made, never by ``import convlab``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from .sdk import SDKChat
from .shapes import anthropic_messages

if TYPE_CHECKING:  # the SDK is imported when the first AnthropicChat is made
    import anthropic
    from anthropic.types import Message, Usage

__all__ = ["AnthropicChat", "anthropic_messages", "anthropic_reply", "anthropic_usage", "MAX_TOKENS"]

MAX_TOKENS = 4096  # the API requires max_tokens; every current model takes this many; params={"max_tokens": n} for more
TOO_LONG_WORDS = "prompt is too long"  # the 400's message: "prompt is too long: 208310 tokens > 200000 maximum"


def anthropic_usage(usage: Usage) -> dict[str, Any]:
    """The API's usage as convlab records it: ``input_tokens`` (the uncached
    input), ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` as
    the API names them (the engine's count adds all three: all the input the
    model read), ``output_tokens``."""
    out = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(usage, key, None)
        if value is not None:
            out[key] = value
    return out


def anthropic_reply(message: Message) -> dict[str, Any]:
    """A Message (or the one a stream adds up to) as a convlab reply.

    ``tool_use`` blocks become ``tool_calls`` (``input`` as JSON
    ``arguments``); the other blocks are the content: one plain text block
    is a string, none is ``""``, anything else the blocks as the API gave
    them. ``metadata``: the message's ``id``, the ``model`` that answered and
    its ``stop_reason``.
    """
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "tool_use":
            calls.append({"id": block.id, "type": "function",
                          "function": {"name": block.name, "arguments": json.dumps(block.input, ensure_ascii=False)}})
            continue
        part = block.to_dict(mode="json", exclude_none=True)
        part.pop("parsed_output", None)  # the SDK's own parse of structured output, not the API's
        content.append(part)
    text: Any = content
    if not content:
        text = ""
    elif len(content) == 1 and content[0].get("type") == "text" and set(content[0]) == {"type", "text"}:
        text = content[0]["text"]
    reply: dict[str, Any] = {"content": text, "usage": anthropic_usage(message.usage)}
    if calls:
        reply["tool_calls"] = calls
    meta = {"id": message.id, "model": message.model, "stop_reason": message.stop_reason}
    reply["metadata"] = {k: v for k, v in meta.items() if v is not None}
    return reply


class AnthropicChat(SDKChat["anthropic.Anthropic"]):
    """A Claude model through the official ``anthropic`` SDK (2.x, on ``httpx2``).

    ``client`` is a ready ``anthropic.Anthropic`` (a test passes one on an
    ``httpx2`` mock transport); otherwise ``client_kwargs`` make one, and the
    SDK reads what they leave out from ``ANTHROPIC_API_KEY`` (and its other
    credential sources) and ``ANTHROPIC_BASE_URL``. ``params`` go with every
    call (``max_tokens``, default 4096; ``temperature``, ``tools``,
    ``thinking``, ...). Usage keeps the cache fields, which the engine's
    count adds to ``input_tokens``. A 400 whose message says the prompt is
    too long is ``ProviderError("too_long")``; any other error, after the
    SDK's own retries, ``ProviderError("failed")`` with the API's message.

    >>> import anthropic, httpx2
    >>> def server(request):   # what the API answers (offline, as in the tests)
    ...     return httpx2.Response(200, json={"id": "msg_1", "type": "message", "role": "assistant",
    ...         "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Hello!"}],
    ...         "stop_reason": "end_turn", "stop_sequence": None,
    ...         "usage": {"input_tokens": 3, "cache_read_input_tokens": 2048, "output_tokens": 2}})
    >>> llm = AnthropicChat("claude-sonnet-4-5", client=anthropic.Anthropic(
    ...     api_key="-", base_url="https://api.anthropic.com", http_client=httpx2.Client(transport=httpx2.MockTransport(server))))
    >>> llm
    AnthropicChat('claude-sonnet-4-5', base_url='https://api.anthropic.com')
    >>> llm.complete({"messages": [{"role": "user", "content": "hi"}]})["usage"]
    {'input_tokens': 3, 'output_tokens': 2, 'cache_read_input_tokens': 2048}
    """

    sdk = "anthropic"
    client_class = "anthropic.Anthropic"
    client_call = ("messages", "create")
    reserved = ("model", "messages", "stream", "system")

    def __init__(self, model: str, client: anthropic.Anthropic | None = None, *, params: Mapping[str, Any] | None = None,
                 **client_kwargs: Any):
        super().__init__(model, client, params, client_kwargs)

    @staticmethod
    def why_reserved(key: str) -> str:
        if key == "system":
            return "put a system message in the conversation instead (it becomes the top-level system, and the tree keeps it)"
        return SDKChat.why_reserved(key)

    def make_client(self, options: dict[str, Any]) -> anthropic.Anthropic:
        try:
            import anthropic
        except ImportError:
            raise ImportError("AnthropicChat needs the anthropic SDK: pip install 'convlab[anthropic]'") from None
        try:
            return self.sdk_client(anthropic.Anthropic, options)
        except anthropic.AnthropicError as err:  # a credential source named but unusable (a missing profile, ...)
            raise ValueError(f"AnthropicChat({self.model!r}): {err}") from None

    def _request(self, model: str, messages: list[Mapping[str, Any]]) -> dict[str, Any]:
        system, msgs = anthropic_messages(messages)
        request = {"model": model, "max_tokens": MAX_TOKENS, **self.params, "messages": msgs}
        if system is not None:
            request["system"] = system
        return request

    def call(self, model: str, messages: list[Mapping[str, Any]]) -> dict[str, Any]:
        return anthropic_reply(self.client.messages.create(**self._request(model, messages)))

    def call_streaming(self, model: str, messages: list[Mapping[str, Any]]) -> Iterator[Any]:
        with self.client.messages.stream(**self._request(model, messages)) as stream:
            yield from stream.text_stream
            message = stream.get_final_message()
        yield anthropic_reply(message)

    def refusal(self, err: BaseException, model: str) -> ProviderError | None:
        import anthropic

        if isinstance(err, TypeError) and "authentication" in str(err):
            # the SDK finds no credentials only when it sends: say what to set
            return self.failed("no credentials: set ANTHROPIC_API_KEY or pass api_key=... (or another credential the SDK takes)", model)
        if not isinstance(err, anthropic.AnthropicError):
            return None
        status = getattr(err, "status_code", None)
        message = getattr(err, "api_message", None) or getattr(err, "message", None) or str(err)
        kind = getattr(err, "type", None)
        too_long = TOO_LONG_WORDS in message.lower() and (status == 400 or kind == "invalid_request_error")
        label = " ".join(str(x) for x in (f"HTTP {status}" if status and status >= 400 else None, kind) if x)
        return self.failed(f"{label}: {message}" if label else message, model, "too_long" if too_long else "failed")

    def secrets(self) -> list[str]:
        return [s for s in (getattr(self.client, "api_key", None), getattr(self.client, "auth_token", None)) if isinstance(s, str)]
