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

``convlab.presets`` is the function ``presets`` (this module is ``convlab.tuning.presets``).

Each preset is also measured against its agent's own log (the shared sessions in
``../shared/data/agents``, tests/test_presets.py): replayed on its own session,
at the window that log records, with that log's compaction left out, it fires
where the agent compacted, within a call or two; where it cannot (a rule the
log does not show), its docstring says by how much and why. ``AUTO`` among
``convlab.tune``'s configs is the preset of the agent that wrote each log
(``for_log``), at the window that log records.

>>> import convlab
>>> [(p.name, p.config.strategies[0].over_tokens, p.worker) for p in convlab.presets("all", window=200_000)]
[('claude-code', 167000, None), ('codex', 180000, None), ('gemini-cli', 100000, summary_tail(keep_tokens=0.3)), ('pi', 183616, summary_tail(keep_tokens=20000))]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ..context import ContextConfig, Strategy
from ..errors import ConfigError
from .compact import Compaction, summary_tail

if TYPE_CHECKING:
    from ..conversation import Conversation

__all__ = ["presets", "Preset", "NAMES", "claude_code", "codex", "gemini_cli", "pi", "AUTO", "Auto", "AGENTS", "for_log",
           "window_of", "by_agent", "no_preset", "MODELLED", "AUTO_ROW", "AUTO_LABEL"]


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

    On a real log: the one compaction the shared Claude Code sessions record
    (``../shared/data/real``) was a person's ``/compact`` (``compactMetadata``:
    trigger ``manual``, preTokens 142,431), 24,569 tokens below this
    threshold: no rule predicts a manual compaction, and the preset rightly
    does not fire before it. No shared session holds an automatic one.

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

    Where it cannot fire as Codex did: the shared Codex session
    (gpt-5.3-codex, its log's ``model_context_window`` 258,400, 95% of the
    model's 272,000) compacted before call 185, after a call that read
    209,950 tokens and wrote 2,184: at 212,134 (82% of 258,400). At that
    window the preset fires above 232,560 (90%), about 20,400 tokens later,
    so on that session not at all (Codex's own 90% of 272,000 is 244,800,
    later still). Codex took its limit from outside the log (the model
    catalog its server sends, ``auto_compact_token_limit``, or the person's
    ``model_auto_compact_token_limit``), which no count made from the log can
    see: to fire where it did, give ``over_tokens = 212000`` in a config of
    your own.

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

    Not measurable on a log: the CLI's chat recording does not record a
    compression (its result is a UI event). The shared sessions read at most
    43,494 tokens, far below half of their models' windows: the CLI did not
    compress, and the preset does not fire.

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

    On pi's own log (the shared session, claude-opus-4-5 at 200,000): pi
    compacted automatically once, at 185,014 tokens (``tokensBefore``: the
    input plus the output of the call before), before the prompt after call
    303; the preset fires at call 303 itself, one call earlier. pi checks
    only when the agent's run ends or before a prompt
    (``agent-session.ts``, ``_checkCompaction``), the preset at every call:
    the count passed 183,616 mid-run, with the results of call 302's tools.
    The session's other compaction, at 175,004 (below pi's threshold), was a
    person's ``/compact``: no rule fires there, and the preset does not.

    >>> pi(window=128_000).config.strategies[0].over_tokens
    111616
    """
    over = window - 16_384 if isinstance(window, int) and not isinstance(window, bool) else window
    return _preset("pi", window, over, summary_tail(keep_tokens=20_000))


#: The presets by name, in the order ``"all"`` gives them.
NAMES = {"claude-code": claude_code, "codex": codex, "gemini-cli": gemini_cli, "pi": pi}

#: The agent whose preset fits a log, by the log's format (``Conversation.format``).
AGENTS = {"claude_code": "claude-code", "codex": "codex", "gemini_cli": "gemini-cli", "pi": "pi"}


class Auto(NamedTuple):
    """``AUTO``: the preset of the agent that wrote each log, at the window that log records (``for_log``). It is not
    a config: ``convlab.tune`` resolves it conversation by conversation (``by_agent``)."""

    name: str = "auto"


#: Each log's own agent's preset, among ``convlab.tune``'s configs (``convlab tune --preset auto``).
AUTO = Auto()

#: The ``preset`` a tune frame gives ``AUTO``'s rows: ``"auto: codex"``, each row the preset its log's agent ran.
AUTO_ROW = "auto: {}"
#: ``AUTO``'s ``preset`` over a corpus whose logs ran different presets (``ranking.totals``): no one preset ran.
AUTO_LABEL = "auto: each log its agent's preset"


def no_preset(conversation: Conversation) -> str:
    """Why ``AUTO`` has no preset for ``conversation``: the agent that wrote it, and the agents presets model.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> no_preset(Conversation(Tree(), id="c", format="copilot_cli"))
    'written by copilot_cli, an agent no preset models (the presets model claude_code, codex, gemini_cli and pi)'
    """
    return f"written by {conversation.format or 'an unknown agent'}, an agent no preset models ({MODELLED})"


#: The agents the presets model, said where a log's agent is not one of them.
MODELLED = f"the presets model {', '.join(list(AGENTS)[:-1])} and {list(AGENTS)[-1]}"


def presets(name: str | Sequence[str] = "all", window: int | None = None) -> list[Preset]:
    """The presets named (one of ``NAMES``, a comma-separated list, a list, or
    ``"all"``), each at ``window`` tokens (default: each peer's usual model's:
    200,000; Gemini CLI's 1,000,000). Each log's own agent's preset is ``AUTO``,
    which only a sweep can resolve (it needs the log).

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
    if "auto" in names:
        raise ConfigError("presets", "'auto' is the preset of the agent that wrote each log, which needs the log: give "
                                     "convlab.tuning.presets.AUTO among convlab.tune's configs (convlab tune --preset auto)")
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise ConfigError("presets", f"unknown preset {(unknown or [str(name)])[0]!r} (known: {', '.join(NAMES)}, or all)")
    return [NAMES[n]() if window is None else NAMES[n](window=window) for n in names]


def window_of(conversation: Conversation) -> int | None:
    """The window a log records its model had: Codex's ``model_context_window``; else, for pi and Gemini CLI, the
    window genai-prices gives the log's last model it knows one for; None when neither says (Claude Code's logs
    name a model whose 1M-token beta genai-prices lists, not the 200,000 window Claude Code gives it by default).

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> window_of(Conversation(Tree(), id="c", format="codex", metadata={"model_context_window": 258400}))
    258400
    >>> window_of(Conversation(Tree(), id="c", format="pi", metadata={"models": ["claude-opus-4-5"]}))
    200000
    """
    recorded = conversation.metadata.get("model_context_window")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        return recorded
    if conversation.format not in ("pi", "gemini_cli"):
        return None
    from ..errors import PriceError
    from ..replaying.prices import resolve

    models = conversation.metadata.get("models")
    for model in reversed(models if isinstance(models, list) else []):
        try:
            window = resolve(str(model))[1].context_window
        except PriceError:
            continue
        if isinstance(window, int) and window > 0:
            return window
    return None


def for_log(conversation: Conversation, window: int | None = None) -> Preset | None:
    """The preset of the agent that wrote ``conversation`` (``AGENTS``, by its format), at ``window`` (default:
    the window the log records, ``window_of``, else the preset's own); None for a log no preset is of.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> p = for_log(Conversation(Tree(), id="c", format="codex", metadata={"model_context_window": 258400}))
    >>> p.name, p.config.window, p.config.strategies[0].over_tokens
    ('codex', 258400, 232560)
    >>> for_log(Conversation(Tree(), id="c", format="chatgpt")) is None
    True
    """
    name = AGENTS.get(str(conversation.format))
    if name is None:
        return None
    window = window if window is not None else window_of(conversation)
    return NAMES[name]() if window is None else NAMES[name](window=window)


_C = TypeVar("_C")


def by_agent(conversations: Sequence[Conversation], configs: Sequence[_C]) -> list[tuple[list[Conversation], list[_C | Preset]]]:
    """``configs`` for each group of ``conversations`` that share one agent's preset (at one window), ``AUTO``
    replaced by that preset: what ``convlab.tune`` sweeps when ``AUTO`` is among its configs. A log no agent's
    preset fits (``for_log``: None) is a ``ConfigError`` naming it."""
    groups: dict[tuple[str, int], tuple[list[Conversation], Preset]] = {}
    for c in conversations:
        preset = for_log(c)
        if preset is None:
            raise ConfigError("presets.auto", f"conversation {c.id!r} was {no_preset(c)}: leave it out, or name the "
                                              f"presets to sweep it with (convlab.presets('codex'), ...)")
        window = preset.config.window
        assert window is not None, "a preset has a window"
        groups.setdefault((preset.name, window), ([], preset))[0].append(c)
    return [(convs, [preset if isinstance(x, Auto) else x for x in configs]) for convs, preset in groups.values()]
