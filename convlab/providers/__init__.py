"""Model providers: the shipped fakes and the official SDKs' chat APIs.

A provider is any object with ``complete(request) -> reply`` that raises
``ProviderError("too_long" | "failed")`` to refuse.

- ``request`` is ``{"model", "messages", "stream", "summary"}``; ``summary``
  is true for the engine's own summary calls (never streamed). ``model`` is
  None when the call names none: the provider's own model answers.
- ``messages`` is a read-only ``Sequence`` of read-only ``Mapping``s. The
  path a call reads is a ``convlab.tree.PathView`` over the tree: nothing is
  copied until it is read, and a provider pays for what it reads (the last
  message, ``len``, ``view.tokens()`` are O(1)). A provider that must
  serialise the path reads it once per call (``list(messages)``, or
  ``[dict(m) for m in messages]`` for plain dicts: ``json.dumps`` takes only
  those); the view never changes, so it may be kept. The engine's summary
  calls, and calls whose ``llm.call`` names its own ``messages``, get a list
  of fresh dicts.
- ``reply`` is ``{"content", "usage"}`` plus, where the model made them,
  ``tool_calls``, ``name`` and ``metadata`` (kept on the recorded message).
  ``usage`` has ``input_tokens`` (all the input read, or split out as
  Anthropic's cache fields, which the count adds up) and ``output_tokens``.
- A provider that can stream also has ``stream(request)``: an iterator of
  text deltas (``str``) as they arrive, whose last item is the reply. The
  engine calls it for a call with ``stream: true`` and passes each delta on
  as ``llm.delta``; a provider without it gives one delta with the whole
  reply. Refusing works the same way: raise ``ProviderError``.
- ``latency`` (seconds, default 0), read after each call, is how far the
  session's clock moves for it: simulated for the fakes, measured for a
  real model.

The fakes (``EchoLLM``, ``ScriptedLLM``) live in ``convlab.providers.fakes``
(``ReplayLLM``, the logged replies a replay answers with, in
``convlab.replaying.model``); ``OpenAIChat`` and ``AnthropicChat`` each in the
module of their SDK, which is imported only when one is made.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeGuard

from ..errors import CallCancelled, ProviderError
from ..inputs import reply_from
from ..tokens import content_text
from .fakes import EchoLLM, ScriptedLLM, chunks
from .sdk import redact

if TYPE_CHECKING:  # each SDK's module is imported when one of its providers is made
    from .anthropic_chat import AnthropicChat
    from .local_chat import LocalChat
    from .openai_chat import OpenAIChat

__all__ = ["EchoLLM", "ScriptedLLM", "ProviderError", "chunks", "provider", "named", "call", "secrets_of",
           "Provider", "StreamingProvider", "LLM", "can_stream", "cut_at_limit"]


#: How a reply says it stopped at the token limit, in its ``metadata``: Chat Completions' (and llama.cpp's
#: server's) ``finish_reason``, Anthropic's ``stop_reason``.
CUT = {"finish_reason": "length", "stop_reason": "max_tokens"}


def cut_at_limit(message: Mapping[str, Any]) -> bool:
    """Whether a recorded reply stopped at the token limit (``max_completion_tokens``, ``max_tokens``): it
    is incomplete, and what shows it says so.

    >>> cut_at_limit({"role": "assistant", "content": "Paris is the", "metadata": {"finish_reason": "length"}})
    True
    >>> cut_at_limit({"role": "assistant", "content": "Paris.", "metadata": {"stop_reason": "end_turn"}})
    False
    """
    meta = message.get("metadata")
    return isinstance(meta, Mapping) and any(meta.get(key) == value for key, value in CUT.items())


class Provider(Protocol):
    """A provider as the engine calls it: ``complete(request)``, whose reply ``call`` checks.
    ``stream``, ``latency`` and ``secrets`` are optional: read where a provider has them."""

    def complete(self, request: Mapping[str, Any], /) -> object: ...


class StreamingProvider(Provider, Protocol):
    """A provider that can stream: ``stream(request)`` gives text deltas, then the reply."""

    def stream(self, request: Mapping[str, Any], /) -> Iterable[object]: ...


#: What ``Session(llm=...)`` takes (``named``): None (an ``EchoLLM``), one provider, or ``{name: provider}``.
LLM: TypeAlias = Provider | Mapping[str, Provider] | None


def can_stream(provider: Provider) -> TypeGuard[StreamingProvider]:
    """Whether ``provider`` has ``stream(request)`` (else it answers a streamed call in one delta)."""
    return hasattr(provider, "stream")


SPECS = "echo, local, local:<model.gguf>, openai:<model> or anthropic:<model>"


def provider(spec: str) -> EchoLLM | LocalChat | OpenAIChat | AnthropicChat:
    """The provider a spec names: ``echo``, ``local`` (``LocalChat``: a real small
    model on this machine; ``local:<path>`` another GGUF file), ``openai:<model>``
    or ``anthropic:<model>``.

    One syntax for every CLI and notebook. Base URLs and keys come from the
    SDKs' own environment variables (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
    ``ANTHROPIC_API_KEY``, ...); the model name is everything after the first
    colon, so ``openai:qwen2.5:7b`` names the model ``qwen2.5:7b``.

    >>> provider("echo")
    EchoLLM(window=None, latency=0.0)
    >>> provider("local")
    LocalChat('SmolLM2-135M-Instruct.Q4_1', n_ctx=8192, threads=1)
    >>> provider("gpt-4.1-mini")
    Traceback (most recent call last):
    ...
    ValueError: provider spec 'gpt-4.1-mini': unknown; use echo, local, local:<model.gguf>, openai:<model> or anthropic:<model>
    """
    if not isinstance(spec, str):
        raise ValueError(f"provider spec must be a string ({SPECS}), got {spec!r}")
    kind, colon, model = spec.partition(":")
    if kind == "echo":
        if colon:
            raise ValueError(f"provider spec {spec!r}: echo takes no model; use echo")
        return EchoLLM()
    if kind == "local":
        if colon and not model.strip():
            raise ValueError(f"provider spec {spec!r}: names no model file; use local, or local:<path to a GGUF file>")
        from .local_chat import LocalChat

        return LocalChat(model_path=model or None)
    if kind not in ("openai", "anthropic"):
        raise ValueError(f"provider spec {spec!r}: unknown; use {SPECS}")
    if not model.strip():
        raise ValueError(f"provider spec {spec!r}: names no model; use {kind}:<model>, e.g. {kind}:{_EXAMPLE[kind]}")
    if kind == "openai":
        from .openai_chat import OpenAIChat

        return OpenAIChat(model)
    from .anthropic_chat import AnthropicChat

    return AnthropicChat(model)


_EXAMPLE = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-5"}


def named(llm: LLM) -> dict[str, Provider]:
    """``{name: provider}`` from what ``Session(llm=...)`` takes: None (an
    ``EchoLLM``), one provider (named ``default``) or a mapping of them.

    >>> named(None)
    {'default': EchoLLM(window=None, latency=0.0)}
    >>> named("echo")
    Traceback (most recent call last):
    ...
    ValueError: llm must be a provider (with complete(request)) or {name: provider}, got 'echo': for a spec, llm=convlab.provider('echo')
    """
    if llm is None:
        return {"default": EchoLLM()}
    if isinstance(llm, Mapping):
        if not llm:
            raise ValueError("llm: give at least one provider")
        for name, p in llm.items():
            if not hasattr(p, "complete"):
                raise ValueError(f"llm[{name!r}] has no complete(request) method")
        return dict(llm)
    if not hasattr(llm, "complete"):
        hint = f": for a spec, llm=convlab.provider({llm!r})" if isinstance(llm, str) else ""
        raise ValueError(f"llm must be a provider (with complete(request)) or {{name: provider}}, got {llm!r}{hint}")
    return {"default": llm}


def call(provider: Provider, request: Mapping[str, Any], on_delta: Callable[[str], None] | None = None,
         took: Callable[[float], None] | None = None) -> dict[str, Any]:
    """One call through the provider protocol: the provider's reply, checked
    (``inputs.reply_from``). ``took(latency)`` is told how long the call took
    as soon as it returns or fails. With ``on_delta`` the call streams: a
    provider with ``stream(request)`` gives its deltas as they come; any other
    gives one delta with the whole reply, once it is checked.

    This is the one place a model call can fail: whatever the provider raises
    (an SDK's ``AssertionError`` on a malformed reply, an ``AttributeError``,
    a transport's ``RuntimeError``) comes out as ``ProviderError("failed")``
    naming it, and every error's text is redacted (``redact``) so that no
    credential leaves it. Only ``CallCancelled`` (a call stopped on purpose)
    passes as it is.

    >>> seen = []
    >>> call(EchoLLM(), {"model": None, "messages": [{"role": "user", "content": "hi"}]}, seen.append)["content"]
    'echo: hi'
    >>> "".join(seen)
    'echo: hi'
    >>> class Broken:
    ...     def complete(self, request):
    ...         raise RuntimeError("transport closed (Authorization: Bearer sk-live-0123456789)")
    >>> call(Broken(), {"model": None, "messages": []})
    Traceback (most recent call last):
    ...
    convlab.errors.ProviderError: RuntimeError: transport closed (Authorization: Bearer ***)
    """
    streaming = provider if on_delta is not None and can_stream(provider) else None
    try:
        try:
            result = _streamed(streaming.stream(request), on_delta) if streaming is not None and on_delta is not None \
                else provider.complete(request)
        finally:
            if took is not None:
                took(_latency(provider))
        reply = reply_from(result)
    except CallCancelled:
        raise
    except ProviderError as err:
        raise ProviderError(err.kind, redact(str(err), secrets_of(provider))) from None
    except Exception as err:
        raise ProviderError("failed", redact(f"{type(err).__name__}: {err}", secrets_of(provider))) from None
    if on_delta is not None and streaming is None:
        text = content_text(reply["content"])
        if text:
            on_delta(text)
    return reply


def secrets_of(provider: object) -> list[str]:
    """The credentials a provider holds (its ``secrets()``), to keep out of every text; [] when it says none."""
    secrets = getattr(provider, "secrets", None)
    if not callable(secrets):
        return []
    try:
        found = secrets()
    except Exception:
        return []
    return [s for s in found if isinstance(s, str)] if isinstance(found, (list, tuple)) else []


def _latency(provider: object) -> float:
    latency = getattr(provider, "latency", 0.0) or 0.0
    return float(latency) if isinstance(latency, (int, float)) and math.isfinite(latency) and latency > 0 else 0.0


def _streamed(items: Iterable[object], on_delta: Callable[[str], None]) -> object:
    """Run a provider's stream: text deltas (passed on as they come), then the reply."""
    reply = None
    for item in items:
        if isinstance(item, str):
            if item:
                on_delta(item)
        else:
            reply = item
    return reply
