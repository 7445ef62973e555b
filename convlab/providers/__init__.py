"""Model providers: the shipped fakes and the official SDKs' chat APIs.

A provider is any object with ``complete(request) -> reply`` that raises
``ProviderError("too_long" | "failed")`` to refuse.

- ``request`` is ``{"model", "messages", "stream", "summary"}``; ``summary``
  is true for the engine's own summary calls (never streamed). ``model`` is
  None when the call names none: the provider's own model answers.
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

The fakes (``EchoLLM``, ``ScriptedLLM``, ``ReplayLLM``) live in
``convlab.providers.fakes``; ``OpenAIChat`` and ``AnthropicChat`` each in the
module of their SDK, which is imported only when one is made.
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from .fakes import EchoLLM, ReplayLLM, ScriptedLLM, chunks

__all__ = ["EchoLLM", "ScriptedLLM", "ReplayLLM", "ProviderError", "chunks", "provider"]

SPECS = "echo, openai:<model> or anthropic:<model>"


def provider(spec: str) -> Any:
    """The provider a spec names: ``echo``, ``openai:<model>`` or ``anthropic:<model>``.

    One syntax for every CLI and notebook. Base URLs and keys come from the
    SDKs' own environment variables (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
    ``ANTHROPIC_API_KEY``, ...); the model name is everything after the first
    colon, so ``openai:qwen2.5:7b`` names the model ``qwen2.5:7b``.

    >>> provider("echo")
    EchoLLM(window=None, latency=0.0)
    >>> provider("gpt-4.1-mini")
    Traceback (most recent call last):
    ...
    ValueError: provider spec 'gpt-4.1-mini': unknown; use echo, openai:<model> or anthropic:<model>
    """
    if not isinstance(spec, str):
        raise ValueError(f"provider spec must be a string ({SPECS}), got {spec!r}")
    kind, colon, model = spec.partition(":")
    if kind == "echo":
        if colon:
            raise ValueError(f"provider spec {spec!r}: echo takes no model; use echo")
        return EchoLLM()
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
