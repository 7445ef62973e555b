"""Presets: configs (and workers) that fire as the field's agents auto-compact.

``convlab.presets(name, window=...)`` gives, for each peer named, a ``Preset``:
its ``name``, the ``config`` (a ``ContextConfig`` whose ``summarize``
strategy fires where the peer compacts) and the ``worker`` (the compaction
it makes: a ``convlab.compact`` worker, or None for the engine's own
summary). ``name`` is one of ``NAMES``, a comma-separated list of them, a
list, or ``"all"``. The numbers and where they come from are in each preset's
docstring; where convlab only approximates the peer, it says so. One rule
holds for them all: the engine's count is its own (about a token per four
characters, docs/protocol.md 5.1), not the peer's tokenizer, and the engine's own
headroom still applies (a strategy fires above ``window - 16000`` whatever
its ``over_tokens``), so a preset that would fire later than that fires there.

The module is callable: ``convlab.presets("pi")`` is ``convlab.presets.presets("pi")``.

>>> import convlab
>>> [(p.name, p.config.strategies[0].over_tokens, p.worker) for p in convlab.presets("all", window=200_000)]
[('claude-code', 167000, None), ('codex', 180000, None), ('gemini-cli', 100000, summary_tail(keep_tokens=0.3)), ('pi', 183616, summary_tail(keep_tokens=20000))]
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import NamedTuple

from .compact import Compaction, summary_tail
from .context import ContextConfig, Strategy
from .errors import ConfigError

__all__ = ["presets", "Preset", "NAMES", "claude_code", "codex", "gemini_cli", "pi"]


class Preset(NamedTuple):
    """One peer's auto-compaction: its ``name``, the ``config`` that fires where it
    compacts, the ``worker`` that compacts as it does (None: the engine's summary)."""

    name: str
    config: ContextConfig
    worker: Compaction | None


def _preset(name: str, window: int, over: int, worker: Compaction | None) -> Preset:
    try:
        config = ContextConfig(window=window, strategies=(Strategy("summarize", over_tokens=over),))
    except ConfigError as e:
        raise ConfigError(f"presets.{name}.{e.key}", f"{e.message} (window={window!r})") from None
    return Preset(name, config, worker)


def claude_code(window: int = 200_000, max_output: int = 32_000) -> Preset:
    """Claude Code: a summary of the whole history once the context passes
    ``window - min(max_output, 20000) - 13000`` (167,000 at 200,000).

    Claude Code is not open source; the numbers are the deobfuscated CLI's, as
    anthropics/claude-code#31806 quotes them ("effectiveWindow - 13000", the
    effective window being the window less the reply's reserve of
    ``min(max output tokens, 20000)``; ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` can
    only lower it). Approximate: the threshold moves between CLI versions (the
    same issue tracker reports 33k to 45k reserved), and Claude Code counts
    with the provider's usage, not characters. Its summary replaces all of the
    history (it then re-reads recent files, which no replay can); the engine's
    own summary keeps the input the model must still answer (``kept``).

    >>> claude_code(window=200_000).config.strategies[0].over_tokens
    167000
    """
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < 0:
        raise ConfigError("presets.claude-code.max_output", f"must be a whole number of tokens, got {max_output!r}")
    over = window - min(max_output, 20_000) - 13_000 if isinstance(window, int) and not isinstance(window, bool) else window
    return _preset("claude-code", window, over, None)


def codex(window: int = 200_000) -> Preset:
    """Codex: a summary once the context passes 90% of the window.

    openai/codex, codex-rs/protocol/src/openai_models.rs: the auto-compact limit
    defaults to ``context_window * 9 / 10`` (``model_auto_compact_token_limit``
    in config.toml overrides it). Approximate: Codex's new history keeps the
    recent user messages (up to about 20,000 tokens) beside the summary
    (codex-rs/core/src/compact.rs); here the engine's own summary keeps what it
    keeps (``kept``). Below a 160,000 window the engine's headroom fires first.

    >>> codex(window=400_000).config.strategies[0].over_tokens
    360000
    """
    over = window * 9 // 10 if isinstance(window, int) and not isinstance(window, bool) else window
    return _preset("codex", window, over, None)


def gemini_cli(window: int = 1_000_000) -> Preset:
    """Gemini CLI: a summary of the older history once the context passes 50% of
    the window, keeping the newest 30% verbatim.

    google-gemini/gemini-cli, packages/core/src/services/chatCompressionService.ts:
    ``DEFAULT_COMPRESSION_TOKEN_THRESHOLD`` (0.5 in current releases; 0.7 in
    earlier ones and in the docs' ``compressionThreshold``, 0.2 for a while)
    and ``COMPRESSION_PRESERVE_THRESHOLD = 0.3`` (``findCompressSplitPoint``
    keeps the last 30% of the history by characters, cut at a user message).
    Approximate: here the 30% is of the tokens the model would read
    (``summary_tail(keep_tokens=0.3)``), cut where no tool result loses its call.

    >>> gemini_cli(window=1_000_000).config.strategies[0].over_tokens
    500000
    """
    over = window // 2 if isinstance(window, int) and not isinstance(window, bool) else window
    return _preset("gemini-cli", window, over, summary_tail(keep_tokens=0.3))


def pi(window: int = 200_000) -> Preset:
    """pi (badlogic/pi-mono's coding agent): a summary once the context passes
    ``window - 16384``, keeping about the newest 20,000 tokens verbatim.

    badlogic/pi-mono, packages/coding-agent/docs/compaction.md: auto-compaction
    when ``contextTokens > model.contextWindow - settings.compaction.reserveTokens``,
    ``reserveTokens`` 16,384 and ``keepRecentTokens`` 20,000 by default; the cut
    never falls mid-turn. Close to exact: the engine's headroom (16,000) is
    below pi's reserve, so the preset's threshold is the one that fires.

    >>> pi(window=128_000).config.strategies[0].over_tokens
    111616
    """
    over = window - 16_384 if isinstance(window, int) and not isinstance(window, bool) else window
    return _preset("pi", window, over, summary_tail(keep_tokens=20_000))


#: The presets by name, in the order ``"all"`` gives them.
NAMES = {"claude-code": claude_code, "codex": codex, "gemini-cli": gemini_cli, "pi": pi}


def presets(name: str | Sequence[str] = "all", window: int | None = None) -> list[Preset]:
    """The presets named (one of ``NAMES``, a comma-separated list, a list, or
    ``"all"``), each at ``window`` tokens (default: each peer's usual model's:
    200,000; Gemini CLI's 1,000,000).

    >>> [p.name for p in presets("pi,codex", window=128_000)]
    ['pi', 'codex']
    >>> presets("cursor")
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: presets: unknown preset 'cursor' (known: claude-code, codex, gemini-cli, pi, or all)
    """
    names = name.split(",") if isinstance(name, str) else list(name) if isinstance(name, Sequence) else [name]
    names = [n.strip() if isinstance(n, str) else n for n in names]
    if names == ["all"]:
        names = list(NAMES)
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise ConfigError("presets", f"unknown preset {(unknown or [str(name)])[0]!r} (known: {', '.join(NAMES)}, or all)")
    return [NAMES[n]() if window is None else NAMES[n](window=window) for n in names]


class _CallableModule(types.ModuleType):
    """``convlab.presets(...)`` calls ``presets``: the module and its one verb share a name."""

    def __call__(self, name: str | Sequence[str] = "all", window: int | None = None) -> list[Preset]:
        return presets(name, window)


sys.modules[__name__].__class__ = _CallableModule
