"""Presets: configs (and workers) that fire as the field's agents auto-compact.

``convlab.presets(name, window=...)`` gives, for each peer named, a ``Preset``:
its ``name``, the ``config`` (a ``ContextConfig`` whose strategy fires where
the peer compacts: ``summarize`` where it writes a summary, ``reset`` where
it only edits) and the ``worker`` (the compaction it makes: a
``convlab.compact`` worker, or None for the engine's own summary). ``name``
is one of ``NAMES``, a comma-separated list of them, a list, a group
(``GROUPS``: ``"agents"``, the coding agents' own; ``"providers"``,
Anthropic's and OpenAI's API compactions and context editing; ``"papers"``,
Deep Agents and the Complexity Trap's masking, summary and hybrid), or
``"all"``. The numbers and where they come from are in each preset's
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
>>> [(p.name, p.config.strategies[0].over_tokens, p.worker) for p in convlab.presets("agents", window=200_000)]
[('claude-code', 167000, None), ('codex', 180000, None), ('gemini-cli', 100000, gemini_cli_compression()), ('pi', 183616, summary_tail(keep_tokens=20000))]
>>> [p.name for p in convlab.presets("providers")]
['anthropic-compaction', 'anthropic-on-demand', 'anthropic-clear-tool-uses', 'anthropic-clear-thinking', 'openai-compact', 'openai-compaction']
>>> [p.name for p in convlab.presets("papers")]
['deep-agents', 'masking', 'masking-summary', 'masking-hybrid']
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ..context import ContextConfig, Strategy
from ..errors import ConfigError
from .compact import (
    Compaction,
    clear_thinking,
    clear_tool_results,
    gemini_cli_compression,
    masking_with_summary,
    observation_masking,
    offloaded_summary,
    openai_compact as openai_compact_worker,
    summary_steps,
    summary_tail,
    summary_turns,
)

if TYPE_CHECKING:
    from ..conversation import Conversation

__all__ = ["presets", "Preset", "NAMES", "claude_code", "codex", "gemini_cli", "pi", "anthropic_compaction", "anthropic_on_demand",
           "anthropic_clear_tool_uses", "anthropic_clear_thinking", "openai_compact", "openai_compaction", "deep_agents",
           "masking", "masking_summary", "masking_hybrid", "EVERY_CALL", "GROUPS", "AUTO", "Auto", "AGENTS", "for_log",
           "window_of", "by_agent", "no_preset", "MODELLED", "AUTO_ROW", "AUTO_LABEL"]


class Preset(NamedTuple):
    """One peer's auto-compaction: its ``name``, the ``config`` that fires where it
    compacts, the ``worker`` that compacts as it does (None: the engine's summary)."""

    name: str
    config: ContextConfig
    worker: Compaction | None


def _preset(name: str, window: int, over: int, worker: Compaction | None, *more: Strategy, use: str = "summarize",
            prompt: str | None = None) -> Preset:
    try:
        first = Strategy(use, over_tokens=over, prompt=prompt) if use == "summarize" else Strategy(use, over_tokens=over)
        config = ContextConfig(window=window, strategies=(first, *more))
    except ConfigError as e:
        raise ConfigError(f"presets.{name}.{e.key}", f"{e.message} (window={window!r})") from None
    return Preset(name, config, worker)


#: A threshold that every call passes: the preset of a rule the provider applies to every request fires at every call.
EVERY_CALL = 1


def _whole(name: str, key: str, value: object, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"presets.{name}.{key}", f"must be a whole number of tokens{f' (at least {least:,})' if least else ''}, "
                                                   f"got {value!r}")
    return value


def _worker(name: str, make: Callable[[], Compaction]) -> Compaction:
    """The preset's worker, made with its knobs: a bad knob is a ``ConfigError`` naming the preset."""
    try:
        return make()
    except ValueError as err:
        raise ConfigError(f"presets.{name}", str(err)) from None


def _share(window: object, share: float) -> object:
    return int(window * share) if isinstance(window, int) and not isinstance(window, bool) else window


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
    """Gemini CLI: a compression once the last prompt passes 50% of the window:
    a snapshot of the older history, the newest 30% verbatim (by characters,
    cut before a user message), older tool outputs past 50,000 tokens cut to
    30 lines, two model calls (the snapshot, a self-check), sent bare.

    google-gemini/gemini-cli, packages/core/src/context/chatCompressionService.ts
    (commit 1bbee037): ``DEFAULT_COMPRESSION_TOKEN_THRESHOLD`` 0.5 (0.7 in
    earlier releases and in the docs' ``compressionThreshold``, 0.2 for a
    while) against ``tokenLimit(model)``; the rest is the worker's,
    ``compact.gemini_cli_compression``, whose docstring says each rule and
    the two places it differs (the summary covers the engine's ``kept``
    span; characters are counted on each message's role and content). The
    threshold is on the engine's count of what the model would read, where
    the CLI reads the last prompt's usage.

    Not measurable on a log: the CLI's chat recording does not record a
    compression (its result is a UI event). The shared sessions read at most
    43,494 tokens, far below half of their models' windows: the CLI did not
    compress, and the preset does not fire.

    >>> gemini_cli(window=1_000_000).config.strategies[0].over_tokens
    500000
    """
    over = window // 2 if isinstance(window, int) and not isinstance(window, bool) else window
    return _preset("gemini-cli", window, over, gemini_cli_compression())


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


def anthropic_compaction(window: int = 200_000, trigger: int = 150_000, instructions: str | None = None,
                         pause_after_compaction: bool = False) -> Preset:
    """Anthropic's server compaction, ``compact_20260112`` (beta ``compact-2026-01-12``;
    anthropic-sdk-python ``types/beta/beta_compact_20260112_edit_param.py``,
    ``beta_compaction_block.py``, ``beta_usage.py``): once a request's input
    passes ``trigger`` tokens (150,000 by default, 50,000 at least), the API
    first summarizes the conversation (``instructions`` replaces its
    summary prompt: the strategy's ``prompt`` here), puts the ``compaction``
    block first and drops what precedes it, then answers.

    Billing: the summary pass is an iteration of the same request
    (``usage.iterations[]``), outside the top-level usage: it reads what the
    request reads, so while the cache is warm it reads that prefix from it
    (a replay's summary call sent ``shared``, priced with its cache reads);
    the answer then reads the new history, whose prefix it writes to the
    cache. ``pause_after_compaction`` returns control after the compaction
    (``stop_reason: "compaction"``) so the client can add to the history
    before the answer: the same two passes, billed as two requests; the
    counts do not change, and it is accepted as the source has it.

    Where it differs: the engine's summary covers the history before
    ``kept`` (the input the model must still answer), which follows the
    summary verbatim; the API's block covers all of it. With server tools
    the API checks at every sampling, so one request can compact twice; the
    engine checks before each call.

    >>> anthropic_compaction(trigger=100_000).config.strategies[0].over_tokens
    100000
    """
    _whole("anthropic-compaction", "trigger", trigger, 50_000)
    if not isinstance(pause_after_compaction, bool):
        raise ConfigError("presets.anthropic-compaction.pause_after_compaction", f"must be true or false, got {pause_after_compaction!r}")
    return _preset("anthropic-compaction", window, trigger, None, prompt=instructions)


def anthropic_on_demand(window: int = 200_000, over_tokens: int = 150_000, keep_turns: int = 0) -> Preset:
    """Anthropic's on-demand compaction (beta ``compact-2026-09-04``;
    platform.claude.com, build-with-claude/compaction-on-demand): the client
    decides when (here above ``over_tokens``), sends the messages with
    ``compaction: {type: "summarize"}``, gets one block of readable summary
    and puts it first in place of them (``summary_turns(keep_turns=0)``:
    the engine's own summary), or keeps the newest ``keep_turns`` turns
    verbatim after it (the variant that keeps recent turns). The call is a
    request of its own on the session's model: a summary call, priced with
    its cache reads (``summary_request``).

    >>> anthropic_on_demand(keep_turns=2).worker
    summary_turns(keep_turns=2)
    """
    _whole("anthropic-on-demand", "over_tokens", over_tokens, 1)
    worker = _worker("anthropic-on-demand", lambda: summary_turns(keep_turns)) if keep_turns != 0 else None
    return _preset("anthropic-on-demand", window, over_tokens, worker)


def anthropic_clear_tool_uses(window: int = 200_000, trigger: int = 100_000, keep: int = 3, clear_at_least: int = 0,
                              exclude_tools: Sequence[str] = (), clear_tool_inputs: bool | Sequence[str] = False) -> Preset:
    """Anthropic's context editing, ``clear_tool_uses_20250919`` (anthropic-sdk-python
    ``types/beta/beta_clear_tool_uses_20250919_edit_param.py``; docs.claude.com,
    build-with-claude/context-editing): once the input passes ``trigger``
    (100,000 by default), every tool result but the newest ``keep`` is
    cleared, unless it frees fewer than ``clear_at_least`` tokens; results
    of ``exclude_tools`` stay; ``clear_tool_inputs`` clears the calls'
    inputs too (``compact.clear_tool_results``). No model call: a ``reset``
    strategy raises the limit and the worker answers it (a clear counts in
    a row's ``resets``; no summary call is made).

    The API applies it to each request and the client keeps the full
    history; the docs say a clear writes the cleared prefix to the cache
    once and later requests read it from there, so the edit is kept here
    as a rewrite of the history, and the trigger is on what the model would
    read after the edits. On the cache: the prefix before the first result
    cleared is still read from it.

    >>> p = anthropic_clear_tool_uses(keep=5)
    >>> p.config.strategies[0].use, p.config.strategies[0].over_tokens, p.worker
    ('reset', 100000, clear_tool_results(keep=5))
    """
    _whole("anthropic-clear-tool-uses", "trigger", trigger, 1)
    worker = _worker("anthropic-clear-tool-uses", lambda: clear_tool_results(
        keep=keep, clear_at_least=clear_at_least, exclude_tools=exclude_tools, clear_tool_inputs=clear_tool_inputs))
    return _preset("anthropic-clear-tool-uses", window, trigger, worker, use="reset")


def anthropic_clear_thinking(window: int = 200_000, keep: int | str = 1) -> Preset:
    """Anthropic's context editing, ``clear_thinking_20251015``: the thinking of
    all but the newest ``keep`` turns cleared (``"all"``: none; unset, the
    API keeps the last turn's), at every request (``compact.clear_thinking``):
    its ``reset`` strategy fires at every call. Clearing breaks the cached
    prefix where it clears; ``keep="all"`` keeps it whole.

    >>> anthropic_clear_thinking(keep="all").worker
    clear_thinking(keep='all')
    """
    return _preset("anthropic-clear-thinking", window, EVERY_CALL, _worker("anthropic-clear-thinking", lambda: clear_thinking(keep)),
                   use="reset")


def openai_compact(window: int = 400_000, over_tokens: int | None = None) -> Preset:
    """OpenAI's ``/responses/compact`` called by the client above ``over_tokens``
    (default 90% of the window, as Codex calls it): every user message kept
    verbatim, one compaction item for the rest (``compact.openai_compact``),
    the pass priced as a call of its own on the session's model.

    >>> openai_compact(window=400_000).config.strategies[0].over_tokens
    360000
    """
    over = over_tokens if over_tokens is not None else _share(window, 0.9)
    return _preset("openai-compact", window, over, openai_compact_worker())  # type: ignore[arg-type]


def openai_compaction(window: int = 400_000, compact_threshold: int = 200_000) -> Preset:
    """OpenAI's server-side compaction, ``context_management: [{type: "compaction",
    compact_threshold: N}]`` (developers.openai.com, the compaction guide):
    when the input passes ``compact_threshold`` the response carries an
    opaque ``compaction`` item and the client may drop what precedes it (not
    when it chains with ``previous_response_id``): the engine's summary, then
    ``kept``. The pass runs inside the request on the request's model: a
    summary call sent ``shared``.

    >>> openai_compaction(compact_threshold=150_000).config.strategies[0].over_tokens
    150000
    """
    _whole("openai-compaction", "compact_threshold", compact_threshold, 1)
    return _preset("openai-compaction", window, compact_threshold, None)


def deep_agents(window: int = 200_000, trigger: float = 0.85, keep: float = 0.10) -> Preset:
    """Deep Agents' summarization middleware (langchain-ai/deepagents,
    libs/deepagents/deepagents/middleware/summarization.py; its docstring's
    example: trigger ``("fraction", 0.85)``, keep ``("fraction", 0.10)``):
    a summary once the context passes ``trigger`` of the window, the newest
    ``keep`` of the window kept verbatim, the evicted messages offloaded to
    a file the summary cites by path (``compact.offloaded_summary``).

    >>> p = deep_agents(window=200_000)
    >>> p.config.strategies[0].over_tokens, p.worker
    (170000, offloaded_summary(keep_tokens=20000))
    """
    for key, value in (("trigger", trigger), ("keep", keep)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise ConfigError(f"presets.deep-agents.{key}", f"must be a share of the window (0 < x < 1), got {value!r}")
    kept = _share(window, keep)
    worker = offloaded_summary(keep_tokens=kept if isinstance(kept, int) and kept >= 1 else keep)
    return _preset("deep-agents", window, _share(window, trigger), worker)  # type: ignore[arg-type]


def masking(window: int = 200_000, keep: int = 10) -> Preset:
    """Observation masking as "The Complexity Trap" runs it (arXiv 2508.21433):
    at every call, every tool observation but the newest ``keep`` (the
    paper's M = 10) reads a placeholder (``compact.observation_masking``).
    No model call. With ``"masking-summary"`` and ``"masking-hybrid"`` a
    sweep makes the paper's comparison on a user's own logs.

    >>> masking(keep=5).worker
    observation_masking(keep=5)
    """
    return _preset("masking", window, EVERY_CALL, _worker("masking", lambda: observation_masking(keep)), use="reset")


def masking_summary(window: int = 200_000, keep_steps: int = 10, over_tokens: int | None = None) -> Preset:
    """The Complexity Trap's LLM summary: above ``over_tokens`` (default 75% of
    the window: the paper fires at a number of turns, a strategy on tokens),
    a summary of the older steps and the newest ``keep_steps`` of the agent's
    steps verbatim (``compact.summary_steps``).

    >>> masking_summary(window=200_000).config.strategies[0].over_tokens
    150000
    """
    over = over_tokens if over_tokens is not None else _share(window, 0.75)
    return _preset("masking-summary", window, over, _worker("masking-summary", lambda: summary_steps(keep_steps)))  # type: ignore[arg-type]


def masking_hybrid(window: int = 200_000, keep: int = 10, keep_steps: int = 10, over_tokens: int | None = None) -> Preset:
    """The Complexity Trap's hybrid: masking at every call and, above
    ``over_tokens`` (default 75% of the window), the summary
    (``compact.masking_with_summary``): its config's ``summarize`` strategy
    comes first, so above the threshold the summary wins, and a ``reset``
    strategy that fires at every call masks.

    >>> [s.use for s in masking_hybrid().config.strategies]
    ['summarize', 'reset']
    """
    over = over_tokens if over_tokens is not None else _share(window, 0.75)
    return _preset("masking-hybrid", window, over, _worker("masking-hybrid", lambda: masking_with_summary(keep, keep_steps)),  # type: ignore[arg-type]
                   Strategy("reset", over_tokens=EVERY_CALL))


#: The presets by name, in the order ``"all"`` gives them: the agents', then the providers', then the paper's.
NAMES = {"claude-code": claude_code, "codex": codex, "gemini-cli": gemini_cli, "pi": pi,
         "anthropic-compaction": anthropic_compaction, "anthropic-on-demand": anthropic_on_demand,
         "anthropic-clear-tool-uses": anthropic_clear_tool_uses, "anthropic-clear-thinking": anthropic_clear_thinking,
         "openai-compact": openai_compact, "openai-compaction": openai_compaction, "deep-agents": deep_agents,
         "masking": masking, "masking-summary": masking_summary, "masking-hybrid": masking_hybrid}

#: Names that stand for several presets.
GROUPS = {"agents": ("claude-code", "codex", "gemini-cli", "pi"),
          "providers": ("anthropic-compaction", "anthropic-on-demand", "anthropic-clear-tool-uses", "anthropic-clear-thinking",
                        "openai-compact", "openai-compaction"),
          "papers": ("deep-agents", "masking", "masking-summary", "masking-hybrid"),
          "all": tuple(NAMES)}

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
    >>> presets("cursor")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: presets: unknown preset 'cursor' (known: claude-code, codex, gemini-cli, pi, ...; groups: agents, providers, papers, all)
    """
    names = name.split(",") if isinstance(name, str) else list(name) if isinstance(name, Sequence) else [name]
    names = [n.strip() if isinstance(n, str) else n for n in names]
    names = list(dict.fromkeys(m for n in names for m in (GROUPS[n] if isinstance(n, str) and n in GROUPS else (n,))))
    if "auto" in names:
        raise ConfigError("presets", "'auto' is the preset of the agent that wrote each log, which needs the log: give "
                                     "convlab.tuning.presets.AUTO among convlab.tune's configs (convlab tune --preset auto)")
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        wrong = (unknown or [str(name)])[0]
        close = difflib.get_close_matches(str(wrong), [*NAMES, *GROUPS], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError("presets", f"unknown preset {wrong!r} ({hint}known: {', '.join(NAMES)}; groups: {', '.join(GROUPS)})")
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
