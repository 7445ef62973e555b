"""Worker-side compactions: what the field's agents ship, as the page allows it.

The engine has two strategies of its own (reset, summarize). The page also
says "Any decision can return context.replace ... for your own compaction":
the compactions peers ship are exactly that, a worker's answer to
``context.limit``. Each function here returns such a worker. It answers every
decision as the built-in chat worker does, and ``context.limit`` with its own
``context.replace`` (the messages it keeps, as copies that name their
original in ``copied_from``; a message it changes, as a new one) followed by
the held call, ``llm.call {id}``. When its rule would keep everything as it
is, it runs the held call as it was.

What each keeps is counted the engine's way (about a token per four
characters, docs/protocol.md 5.1), and none ever keeps a tool result without the
call it answers (``convlab.toolcalls``). Messages with role ``system`` at the
start of the path (the instructions) are always kept.

A worker is a small frozen object: it pickles (a sweep sends it to worker
processes) and its repr says what it is (a sweep's frame names it).

>>> import convlab
>>> s = convlab.Session(config="[agent.bot.context]\\n[[agent.bot.context.strategy]]\\nuse = 'reset'\\nover_tokens = 30",
...                     worker=sliding_window(keep_turns=1))
>>> for i in range(3):
...     _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " * 8}})
>>> [m["content"][:11] for m in s.path()]
['question 2 ', 'echo: quest']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import toolcalls
from ..context import kept
from ..tokens import content_chars, content_text, estimate

__all__ = ["clear_tool_results", "clear_thinking", "observation_masking", "masking_with_summary", "summary_tail",
           "summary_turns", "summary_steps", "sliding_window", "openai_compact", "gemini_cli_compression", "offloaded_summary",
           "Compaction", "PLACEHOLDER", "MASKED", "GEMINI_ACK"]

#: How the engine's summary opens (``SUMMARY_PREFIX``): an earlier summary is not a person's message.
_SUMMARY_PREFIX = "The earlier conversation was summarized:"

#: What a cleared tool result reads instead of its content (as LangChain's ``ClearToolUsesEdit``).
PLACEHOLDER = "[cleared]"

Message = Mapping[str, Any]


class Compaction:
    """A worker whose answer to ``context.limit`` is its own compaction (subclasses say which).

    Three class attributes say how its summary calls run, where its source says so: ``summary_request``
    (None: as the sweep's ``summary_request`` option says; ``"bare"``: its source sends the summary
    request without the agent's system prompt and tools), ``verify`` (its source makes a second pass
    over each summary, as Gemini CLI's self-check: a replay prices that call too, ``SummaryCall.kind ==
    "verify"``) and ``summary_only_when_kept`` (its source makes a summary call only where it keeps the
    summary: one that edits (clearing, masking) never does, one that decides first (Gemini CLI, with no
    place to split) does not there; so where its answer keeps none, a replay drops the summary calls the
    engine made for that limit, as at an overflow, whose proposal carries a summary whatever the strategy)."""

    summary_request: str | None = None
    verify: bool = False
    summary_only_when_kept: bool = True

    def __call__(self, decision: Mapping[str, Any]) -> list[dict[str, Any]]:
        from ..engine import chat_worker  # the engine imports nothing of this module; the arrow points one way

        if decision["type"] != "context.limit":
            return chat_worker(decision)
        held = [{"type": "llm.call", "id": decision["call"]["id"]}]
        replace = self.replace(list(decision["messages"]), decision)
        return held if replace is None else [replace, *held]

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        """The ``context.replace`` this compaction makes of ``path``, or None: nothing to do."""
        raise NotImplementedError


def _copy(m: Message) -> dict[str, Any]:
    """A kept message as a replace names it: by id, so the engine records a copy (``copied_from``)."""
    return {"id": m["id"], "role": m["role"], "content": m["content"]}


def _tokens(messages: Sequence[Message]) -> int:
    return estimate(sum(content_chars(m["content"]) for m in messages))


def _is_summary(m: Message) -> bool:
    """An earlier summary the engine recorded (its text opens with ``SUMMARY_PREFIX``)."""
    return m["role"] == "user" and isinstance(m["content"], str) and m["content"].startswith(_SUMMARY_PREFIX)


def _instructions(path: Sequence[Message]) -> int:
    """How many messages open the path as its instructions, kept by every compaction: the messages with role
    ``system`` at its start, or right after an earlier summary (the engine puts a summary first, before the
    copies of the instructions it kept)."""
    n = 1 if len(path) > 1 and _is_summary(path[0]) and path[1]["role"] == "system" else 0
    while n < len(path) and path[n]["role"] == "system":
        n += 1
    return n


def _heading(path: Sequence[Message], head: int) -> list[dict[str, Any]]:
    """The opening a compaction that writes a new summary keeps: the instructions, as copies; not an earlier
    summary before them (the new one covers it: an earlier summary is part of what the next one reads)."""
    return [_copy(m) for m in path[:head] if m["role"] == "system"]


def _whole_calls(path: Sequence[Message], start: int) -> int:
    """``start`` moved back so that no kept tool result loses its call: past every
    result at the start to the assistant message whose calls they answer."""
    while 0 < start < len(path) and toolcalls.is_result(path[start]):
        start -= 1
    return start


@dataclass(frozen=True)
class _SlidingWindow(Compaction):
    keep_turns: int

    def __repr__(self) -> str:
        return f"sliding_window(keep_turns={self.keep_turns})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        head = _instructions(path)
        starts = [i for i in range(head, len(path)) if _opens_turn(path, i, head)]
        if len(starts) <= self.keep_turns:
            return None
        start = min(starts[-self.keep_turns], _kept_start(path))  # never less than the input the model must still answer
        if start <= head:
            return None
        return {"type": "context.replace", "messages": [_copy(m) for m in path[:head] + path[start:]]}


def _opens_turn(path: Sequence[Message], i: int, head: int) -> bool:
    """A user's message (not a tool result) after anything but another user's message: where a turn starts."""
    m = path[i]
    if m["role"] != "user" or toolcalls.is_result(m):
        return False
    return i == head or path[i - 1]["role"] != "user" or toolcalls.is_result(path[i - 1])


def sliding_window(keep_turns: int = 10) -> Compaction:
    """Keep the last ``keep_turns`` turns (a turn: the user's messages and all that
    follows them up to the user's next), drop the rest, write no summary: the
    simplest compaction agents ship (a chat UI's "last N messages"). It never
    keeps less than the input the model must still answer (``kept``).

    >>> sliding_window(keep_turns=2)
    sliding_window(keep_turns=2)
    """
    if not isinstance(keep_turns, int) or isinstance(keep_turns, bool) or keep_turns < 1:
        raise ValueError(f"sliding_window: keep_turns must be a positive integer, got {keep_turns!r}")
    return _SlidingWindow(keep_turns)


@dataclass(frozen=True)
class _SummaryTail(Compaction):
    keep_tokens: float

    def __repr__(self) -> str:
        return f"summary_tail(keep_tokens={self.keep_tokens!r})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        head = _instructions(path)
        budget = self.keep_tokens * decision["tokens"] if self.keep_tokens < 1 else self.keep_tokens
        start, used = len(path), 0
        while start > head and used + _tokens(path[start - 1:start]) <= budget:
            start -= 1
            used += _tokens(path[start:start + 1])
        start = max(head, _whole_calls(path, start))
        start = min(start, _kept_start(path))  # never less than the input the model must still answer
        summary = _proposed_summary(decision)
        if start <= head:  # the tail is all of it: nothing to compact
            return None
        opening = _heading(path, head) if summary is not None else [_copy(m) for m in path[:head]]
        replace: dict[str, Any] = {"type": "context.replace", "messages": [*opening, *(_copy(m) for m in path[start:])]}
        if summary is not None:
            replace["summary"] = summary
        return replace


def _kept_start(path: Sequence[Message]) -> int:
    """Where ``kept`` starts: the input the model must still answer (``convlab.kept``)."""
    return len(path) - len(kept(reversed(path)))


def _proposed_summary(decision: Mapping[str, Any]) -> str | None:
    proposed = decision.get("proposed") or []
    if proposed and proposed[0]["type"] == "context.replace":
        return proposed[0].get("summary")
    return None


def summary_tail(keep_tokens: float = 20000) -> Compaction:
    """A summary, then a verbatim tail of the newest messages: about
    ``keep_tokens`` of them (a number below 1 is a share of what the model would
    read). pi keeps 20,000 tokens (``keepRecentTokens``); Gemini CLI keeps the
    newest 30% of the history.

    The summary is the one the engine proposes (the strategy that fired: its
    ``prompt``, ``llm`` and ``model``, or replay's summarizer); it covers what
    precedes the engine's own ``kept``, so it may also tell what the tail keeps
    word for word. When the strategy proposes none (a reset), the tail alone is
    kept. The tail never starts at a tool result without its call, and never
    keeps less than the input the model must still answer.

    >>> summary_tail(keep_tokens=0.3)
    summary_tail(keep_tokens=0.3)
    """
    if not isinstance(keep_tokens, (int, float)) or isinstance(keep_tokens, bool) or not keep_tokens > 0:
        raise ValueError(f"summary_tail: keep_tokens must be a positive number (or a share below 1), got {keep_tokens!r}")
    return _SummaryTail(keep_tokens)


@dataclass(frozen=True)
class _ClearToolResults(Compaction):
    keep: int
    clear_at_least: int
    exclude_tools: tuple[str, ...]
    placeholder: str
    clear_tool_inputs: bool | tuple[str, ...] = False

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, default in
                        (("clear_at_least", 0), ("exclude_tools", ()), ("placeholder", PLACEHOLDER), ("clear_tool_inputs", False))
                        if getattr(self, k) != default)
        return f"clear_tool_results(keep={self.keep}{extra})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        cleared = {i for i in self.cleared(path) if i < _kept_start(path)}  # what the model must answer stays
        inputs = self.inputs_cleared(path, cleared)
        freed = sum(_tokens([path[i]]) - estimate(len(self.placeholder)) for i in cleared)
        freed += sum(_tokens([path[i]]) - _tokens([_without_inputs(path[i], ids)]) for i, ids in inputs.items())
        if not cleared or freed < max(1, self.clear_at_least):
            return None
        messages = [self.clear(m) if i in cleared else _without_inputs(m, inputs[i]) if i in inputs else _copy(m)
                    for i, m in enumerate(path)]
        return {"type": "context.replace", "messages": messages}

    def inputs_cleared(self, path: Sequence[Message], cleared: set[int]) -> dict[int, set[str]]:
        """With ``clear_tool_inputs``, per assistant message: the ids of its calls whose inputs are cleared
        (the calls whose results are cleared; of the tools named, when it names some)."""
        if not self.clear_tool_inputs:
            return {}
        ids = {c for i in cleared for c in toolcalls.answers(path[i])}
        out: dict[int, set[str]] = {}
        for i, m in enumerate(path):
            named = () if isinstance(self.clear_tool_inputs, bool) else self.clear_tool_inputs
            mine = {c for c, name in toolcalls.calls(m).items() if c in ids and (self.clear_tool_inputs is True or name in named)}
            if mine:
                changed = _without_inputs(m, mine)
                if changed["content"] != m["content"] or changed.get("tool_calls") != m.get("tool_calls"):
                    out[i] = mine  # (inputs cleared before are not cleared again)
        return out

    def cleared(self, path: Sequence[Message]) -> set[int]:
        """The positions of the tool results this clears: all but the newest ``keep``,
        except those of ``exclude_tools`` (and results already cleared)."""
        names: dict[str, str | None] = {}
        results: list[int] = []
        for i, m in enumerate(path):
            names.update(toolcalls.calls(m))
            if toolcalls.is_result(m):
                results.append(i)
        older = results[: max(0, len(results) - self.keep)]
        return {i for i in older
                if not any(names.get(c) in self.exclude_tools for c in toolcalls.answers(path[i]))
                and self.clear(path[i])["content"] != path[i]["content"]}

    def clear(self, m: Message) -> dict[str, Any]:
        """The result with its content replaced by the placeholder: a new message
        (its call id kept, so it still answers its call)."""
        out = {k: m[k] for k in ("role", "name", "tool_call_id") if m.get(k) is not None}
        content = m["content"]
        if m["role"] == "tool" or not isinstance(content, list):
            out["content"] = self.placeholder
        else:
            out["content"] = [{**p, "content": self.placeholder} if isinstance(p, Mapping) and p.get("type") == "tool_result" else p
                              for p in content]
        return out


def _without_inputs(m: Message, ids: set[str]) -> dict[str, Any]:
    """The assistant message ``m`` with the inputs of its tool calls ``ids`` cleared (an empty object): a new
    message, its calls and their ids kept, so every result still answers its call."""
    out = {k: m[k] for k in ("role", "name") if m.get(k) is not None}
    content = m["content"]
    out["content"] = [{**p, "input": {}} if isinstance(p, Mapping) and p.get("type") in ("tool_use", "server_tool_use")
                      and p.get("id") in ids and p.get("input") not in _EMPTY else p
                      for p in content] if isinstance(content, list) else content
    if m.get("tool_calls"):
        out["tool_calls"] = [{**c, "function": {**c["function"], "arguments": "{}"}}
                             if isinstance(c, Mapping) and c.get("id") in ids and isinstance(c.get("function"), Mapping)
                             and c["function"].get("arguments") not in _EMPTY else c
                             for c in m["tool_calls"]]
    return out


#: Inputs with nothing to clear (a call with no arguments, in either shape).
_EMPTY: tuple[Any, ...] = (None, {}, "", "{}")


def clear_tool_results(keep: int = 3, clear_at_least: int = 0, exclude_tools: Sequence[str] = (),
                       placeholder: str = PLACEHOLDER, clear_tool_inputs: bool | Sequence[str] = False) -> Compaction:
    """Clear old tool results, keep everything else: Anthropic's context editing
    (``clear_tool_uses_20250919``) as LangChain's ``ClearToolUsesEdit`` mirrors its
    knobs. Every tool result but the newest ``keep`` reads ``placeholder``
    instead of its content; results of ``exclude_tools`` are never cleared, nor
    the results the model has still to answer (the engine's ``kept``); when
    clearing would free fewer than ``clear_at_least`` tokens, nothing is
    cleared (the call runs as it was). Tool calls and their ids stay, so every
    call still has its result. ``clear_tool_inputs`` (True, or a list of tool
    names) clears the inputs of the calls whose results it clears too (of
    those tools only, for a list): each reads an empty object.

    Its ``trigger`` (input tokens, 100,000 by default) is the config's
    threshold: ``convlab.presets("anthropic-clear-tool-uses")`` pairs them.
    On the prompt cache: the provider reads the history up to the first
    result cleared as before (a replay finds that prefix cached: the copies
    share their originals' keys, ``convlab.replaying.cost``) and writes the
    rest again, once; the calls after it read the cleared history from the
    cache. ``clear_at_least`` is there so that a clear frees enough to be
    worth that write.

    >>> clear_tool_results(keep=1, exclude_tools=["Read"])
    clear_tool_results(keep=1, exclude_tools=('Read',))
    """
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
        raise ValueError(f"clear_tool_results: keep must be a whole number of results, got {keep!r}")
    if not isinstance(clear_at_least, int) or isinstance(clear_at_least, bool) or clear_at_least < 0:
        raise ValueError(f"clear_tool_results: clear_at_least must be a whole number of tokens, got {clear_at_least!r}")
    if isinstance(exclude_tools, str) or not all(isinstance(t, str) for t in exclude_tools):
        raise ValueError(f"clear_tool_results: exclude_tools must be a list of tool names, got {exclude_tools!r}")
    if not isinstance(placeholder, str) or not placeholder:
        raise ValueError(f"clear_tool_results: placeholder must be a non-empty string, got {placeholder!r}")
    inputs = _inputs(clear_tool_inputs, "clear_tool_results")
    return _ClearToolResults(keep, clear_at_least, tuple(exclude_tools), placeholder, inputs)


def _inputs(value: object, where: str) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(t, str) for t in value):
        raise ValueError(f"{where}: clear_tool_inputs must be True, False or a list of tool names, got {value!r}")
    return tuple(value)


def _turn_starts(path: Sequence[Message], head: int) -> list[int]:
    """Where each turn starts (a user's message, not a tool result, after anything but another user's message)."""
    return [i for i in range(head, len(path)) if _opens_turn(path, i, head)]


def _is_thinking(part: object) -> bool:
    return isinstance(part, Mapping) and part.get("type") in ("thinking", "redacted_thinking")


@dataclass(frozen=True)
class _ClearThinking(Compaction):
    keep: int | str

    def __repr__(self) -> str:
        return f"clear_thinking(keep={self.keep!r})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        if not isinstance(self.keep, int):  # "all": nothing cleared
            return None
        keep: int = self.keep
        starts = _turn_starts(path, _instructions(path))
        ends = [*starts[1:], len(path)][:len(starts)]
        replied = [a for a, b in zip(starts, ends, strict=True) if any(path[i]["role"] == "assistant" for i in range(a, b))]
        # the newest ``keep`` turns with a reply keep their thinking (the question still unanswered is no such turn)
        until = replied[-keep] if 0 < keep <= len(replied) else len(path) if keep == 0 else 0
        cleared = {i for i in range(until) if path[i]["role"] == "assistant" and isinstance(path[i]["content"], list)
                   and any(_is_thinking(p) for p in path[i]["content"])}
        if not cleared:
            return None
        messages = []
        for i, m in enumerate(path):
            if i not in cleared:
                messages.append(_copy(m))
                continue
            parts = [p for p in m["content"] if not _is_thinking(p)]
            out = {k: m[k] for k in ("role", "name", "tool_calls") if m.get(k) is not None}
            out["content"] = parts if parts else ""
            messages.append(out)
        return {"type": "context.replace", "messages": messages}


def clear_thinking(keep: int | str = 1) -> Compaction:
    """Clear the thinking of older turns: Anthropic's context editing
    ``clear_thinking_20251015`` (anthropic-sdk-python,
    ``types/beta/beta_clear_thinking_20251015_edit_param.py``; docs.claude.com,
    build-with-claude/context-editing). ``keep``: the newest assistant turns
    whose thinking stays (``{"type": "thinking_turns", "value": N}``), or ``"all"``
    (nothing cleared). Unset, the API keeps only the last turn's thinking:
    ``keep=1``. A turn here is the user's message and all that follows it (an
    agent's tool loop is one turn).

    It has no trigger: the API applies it to every request, so its preset
    fires at every call (``convlab.presets("anthropic-clear-thinking")``). On
    the prompt cache: clearing rewrites the history from the first message
    it clears on (the cache misses from there); ``keep="all"`` clears nothing
    and keeps the cache whole, which is why the docs advise it for cache hits.

    >>> clear_thinking(keep="all")
    clear_thinking(keep='all')
    """
    if keep != "all" and (not isinstance(keep, int) or isinstance(keep, bool) or keep < 0):
        raise ValueError(f"clear_thinking: keep must be a whole number of turns or 'all', got {keep!r}")
    return _ClearThinking(keep)


#: What a masked observation reads instead (convlab's words; the Complexity Trap's agents write a like placeholder).
MASKED = "[old tool output omitted]"


@dataclass(frozen=True)
class _Masking(_ClearToolResults):
    def __repr__(self) -> str:
        extra = f", placeholder={self.placeholder!r}" if self.placeholder != MASKED else ""
        return f"observation_masking(keep={self.keep}{extra})"


def observation_masking(keep: int = 10, placeholder: str = MASKED) -> Compaction:
    """Observation masking as "The Complexity Trap" runs it (Lindenbauer et al.,
    arXiv 2508.21433, JetBrains-Research/the-complexity-trap): the newest
    ``keep`` tool observations stay (the paper's window M = 10), every older
    one reads ``placeholder``; the calls, the reasoning and the user's
    messages all stay. The paper found it halves an agent's cost and matches
    an LLM summary's solve rate on SWE-bench Verified; ``convlab.presets("masking")``
    runs it at every call (the paper masks at every step) so a sweep
    compares it with a summary (``"masking-summary"``) and the hybrid
    (``"masking-hybrid"``) on a user's own logs. Each mask rewrites the
    history from the observation it masks on: the cache reads what precedes it.

    >>> observation_masking(keep=5)
    observation_masking(keep=5)
    """
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
        raise ValueError(f"observation_masking: keep must be a whole number of observations, got {keep!r}")
    if not isinstance(placeholder, str) or not placeholder:
        raise ValueError(f"observation_masking: placeholder must be a non-empty string, got {placeholder!r}")
    return _Masking(keep, 0, (), placeholder)


@dataclass(frozen=True)
class _SummaryTurns(Compaction):
    keep_turns: int

    def __repr__(self) -> str:
        return f"summary_turns(keep_turns={self.keep_turns})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        head = _instructions(path)
        summary = _proposed_summary(decision)
        if summary is None:
            return None  # no summary proposed (a reset): nothing of this compaction's to make
        starts = _turn_starts(path, head)
        start = starts[-self.keep_turns] if 0 < self.keep_turns <= len(starts) else head if self.keep_turns else len(path)
        start = min(start, _kept_start(path))
        if self.keep_turns and start <= head:
            return None
        return {"type": "context.replace", "summary": summary, "messages": [*_heading(path, head), *(_copy(m) for m in path[start:])]}


def summary_turns(keep_turns: int = 0) -> Compaction:
    """A summary, then the newest ``keep_turns`` turns verbatim: Anthropic's
    on-demand compaction (beta ``compact-2026-09-04``;
    platform.claude.com, build-with-claude/compaction-on-demand) in its
    "keep recent turns" variant, and the LLM summary of "The Complexity
    Trap"'s kind (a summary of the older turns, the newest kept). ``keep_turns=0``
    is the plain on-demand call: the summary replaces every message it was
    sent, and only the input the model must still answer follows. (The
    Complexity Trap's summary keeps the agent's newest steps: ``summary_steps``.)

    The summary is the one the engine proposes (it covers what precedes the
    engine's ``kept``, so it may also tell what the kept turns say).

    >>> summary_turns(keep_turns=2)
    summary_turns(keep_turns=2)
    """
    if not isinstance(keep_turns, int) or isinstance(keep_turns, bool) or keep_turns < 0:
        raise ValueError(f"summary_turns: keep_turns must be a whole number of turns, got {keep_turns!r}")
    return _SummaryTurns(keep_turns)


@dataclass(frozen=True)
class _SummarySteps(Compaction):
    keep_steps: int

    def __repr__(self) -> str:
        return f"summary_steps(keep_steps={self.keep_steps})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        summary = _proposed_summary(decision)
        if summary is None:
            return None
        head = _instructions(path)
        steps = [i for i in range(head, len(path)) if path[i]["role"] == "assistant"]
        start = steps[-self.keep_steps] if self.keep_steps <= len(steps) else head
        start = min(start, _kept_start(path))
        if start <= head:
            return None
        return {"type": "context.replace", "summary": summary, "messages": [*_heading(path, head), *(_copy(m) for m in path[start:])]}


def summary_steps(keep_steps: int = 10) -> Compaction:
    """A summary, then the newest ``keep_steps`` steps of the agent verbatim (a step: one reply of the model,
    with the tool results that answer it): "The Complexity Trap"'s LLM summary (arXiv 2508.21433), which keeps
    the newest M = 10 turns of the agent's trajectory and summarizes the rest. The tail starts at a reply, so
    no result loses its call, and never keeps less than the input the model must still answer.

    >>> summary_steps(keep_steps=5)
    summary_steps(keep_steps=5)
    """
    if not isinstance(keep_steps, int) or isinstance(keep_steps, bool) or keep_steps < 1:
        raise ValueError(f"summary_steps: keep_steps must be a positive whole number of steps, got {keep_steps!r}")
    return _SummarySteps(keep_steps)


@dataclass(frozen=True)
class _Hybrid(Compaction):
    masking: _Masking
    summary: _SummarySteps

    def __repr__(self) -> str:
        return f"masking_with_summary(keep={self.masking.keep}, keep_steps={self.summary.keep_steps})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        if decision.get("strategy") == "summarize":  # (an overflow's too: a summary makes room)
            return self.summary.replace(path, decision)
        return self.masking.replace(path, decision)


def masking_with_summary(keep: int = 10, keep_steps: int = 10) -> Compaction:
    """The Complexity Trap's hybrid: observation masking (``keep`` newest
    observations) at every call, and a summary (``keep_steps`` newest steps
    verbatim, ``summary_steps``) when a ``summarize`` strategy fires: a limit
    raised by a ``reset`` strategy masks, one raised by a ``summarize``
    strategy summarizes (``convlab.presets("masking-hybrid")`` orders them so).

    >>> masking_with_summary(keep=10, keep_steps=5)
    masking_with_summary(keep=10, keep_steps=5)
    """
    masking = observation_masking(keep)
    return _Hybrid(masking, summary_steps(keep_steps))  # type: ignore[arg-type]


def _is_prompt(m: Message) -> bool:
    """A person's message: role user, not a tool result, not an earlier summary."""
    return m["role"] == "user" and not toolcalls.is_result(m) and not (
        isinstance(m["content"], str) and m["content"].startswith(_SUMMARY_PREFIX))


@dataclass(frozen=True)
class _OpenAICompact(Compaction):
    def __repr__(self) -> str:
        return "openai_compact()"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        summary = _proposed_summary(decision)
        if summary is None:
            return None
        head, start = _instructions(path), _kept_start(path)
        users = [m for m in path[head:start] if _is_prompt(m)]
        return {"type": "context.replace", "summary": summary,
                "messages": [*_heading(path, head), *(_copy(m) for m in (*users, *path[start:]))]}


def openai_compact() -> Compaction:
    """OpenAI's ``/responses/compact`` (openai-python,
    ``types/responses/compacted_response.py``; developers.openai.com, the
    compaction guide): the new history is every user message, verbatim,
    and one opaque compaction item in place of everything else (the
    assistant's messages, tool calls and their results). Here the compaction
    item is the summary the engine proposes, and it comes first (the
    engine's ``context.replace`` puts a summary first; OpenAI's item follows
    the user messages): the cache misses from the first message either way.
    The compaction pass is a call of its own, on the session's model, with
    its usage: a replay prices it as a summary call.

    >>> openai_compact()
    openai_compact()
    """
    return _OpenAICompact()


#: What Gemini CLI's model says after the snapshot, so that the history alternates (chatCompressionService.ts).
GEMINI_ACK = "Got it. Thanks for the additional context!"


@dataclass(frozen=True)
class _GeminiCompression(Compaction):
    preserve: float = 0.3
    tool_budget: int = 50_000
    lines: int = 30

    summary_request = "bare"
    verify = True

    def __repr__(self) -> str:
        return "gemini_cli_compression()"

    def _compressed(self, path: list[Message], decision: Mapping[str, Any], history: list[Message]) -> list[dict[str, Any]] | None:
        """The messages after the snapshot (the model's "Got it", the newest 30% with its tool results cut), or
        None: no summary proposed, no place to split, or a new history longer than the old (the CLI's guard)."""
        summary = _proposed_summary(decision)
        head = _instructions(path)
        start = min(head + _split_point(history[head:], 1 - self.preserve), _kept_start(path))
        if summary is None or start <= head:
            return None
        kept: list[dict[str, Any]] = [dict(history[i]) if history[i] is not path[i] else _copy(path[i]) for i in range(start, len(path))]
        messages = [*_heading(path, head), {"role": "assistant", "content": GEMINI_ACK}, *kept]
        if _tokens([{"content": summary}, *messages]) > _tokens(path):
            return None
        return messages

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        history = self._budgeted(path)
        messages = self._compressed(path, decision, history)
        if messages is not None:
            return {"type": "context.replace", "summary": _proposed_summary(decision), "messages": messages}
        # no summary kept: the CLI then only truncates (its CONTENT_TRUNCATED), when that makes the history shorter
        before = _kept_start(path)
        cut = {i for i in range(before) if history[i] is not path[i]}
        if not cut:
            return None
        return {"type": "context.replace", "messages": [history[i] if i in cut else _copy(m) for i, m in enumerate(path)]}

    def _budgeted(self, path: Sequence[Message]) -> list[Message]:
        """The CLI's reverse token budget (``truncateHistoryToBudget``): tool results counted newest first; one
        that would take the count past ``tool_budget`` tokens keeps only its last ``lines`` lines (the CLI saves
        the whole output to a file and says where), and its short form counts instead."""
        out: list[Message] = list(path)
        used = 0
        for i in range(len(path) - 1, -1, -1):
            m = path[i]
            if not toolcalls.is_result(m):
                continue
            tokens = _tokens([m])
            if used + tokens <= self.tool_budget:
                used += tokens
                continue
            short = _tail_lines(m, self.lines)
            if _tokens([short]) < tokens:  # an output of few long lines is not made longer by its header
                out[i] = short
                tokens = _tokens([short])
            used += tokens
        return out


def _tail_lines(m: Message, lines: int) -> dict[str, Any]:
    """A tool result cut to its last ``lines`` lines, saying so: a new message that still answers its call."""
    def cut(text: str) -> str:
        kept = text.splitlines()[-lines:]
        return f"[output truncated to its last {lines} lines; the whole output was saved to a file]\n" + "\n".join(kept)

    out = {k: m[k] for k in ("role", "name", "tool_call_id") if m.get(k) is not None}
    content = m["content"]
    if m["role"] == "tool" or not isinstance(content, list):
        out["content"] = cut(content_text(content))
    else:
        out["content"] = [{**p, "content": cut(content_text(p.get("content")))}
                          if isinstance(p, Mapping) and p.get("type") == "tool_result" else p for p in content]
    return out


def _split_point(history: Sequence[Message], fraction: float) -> int:
    """Gemini CLI's ``findCompressSplitPoint``: the first user message (not a tool result) before which at
    least ``fraction`` of the history's characters lie; else all of it when it ends with a reply that calls no
    tool; else the last such user message (0: nothing to compress)."""
    chars = [len(json.dumps({"role": m["role"], "content": m["content"]}, ensure_ascii=False)) for m in history]
    target = sum(chars) * fraction
    last, seen = 0, 0
    for i, m in enumerate(history):
        if m["role"] == "user" and not toolcalls.is_result(m):
            if seen >= target:
                return i
            last = i
        seen += chars[i]
    if history and history[-1]["role"] == "assistant" and not toolcalls.calls(history[-1]):
        return len(history)
    return last


def gemini_cli_compression() -> Compaction:
    """Gemini CLI's chat compression, as its source runs it
    (google-gemini/gemini-cli, packages/core/src/context/chatCompressionService.ts,
    commit 1bbee037): tool results are counted newest first and, past
    50,000 tokens, cut to their last 30 lines (``truncateHistoryToBudget``);
    the history is split at the first user message (not a tool result) with
    70% of its characters before it (``findCompressSplitPoint``, JSON
    characters; all of it when it ends with a reply that calls no tool);
    the summary (a ``<state_snapshot>``) comes first, then the model's "Got
    it. Thanks for the additional context!", then the newest 30% with its
    cut tool results; a compression that would grow the history is dropped.
    Where no summary is kept, the worker only cuts the tool outputs (when
    that makes the history shorter: the CLI's ``CONTENT_TRUNCATED``), and a
    replay counts no summary call for that limit (``summary_only_when_kept``). Where
    the CLI finds no user message to split at, it calls no model; where
    its guard drops a summary it paid for it, once, and then calls no model
    again in that chat (``hasFailedCompressionAttempt``): a replay pays for
    no such attempt, and the worker, which keeps no state, tries again at
    the next limit where the CLI would only cut.

    Its summary calls are sent bare (the compression prompt is their system
    instruction: not the agent's, no tools, ``summary_request = "bare"``)
    and each compaction makes two (``verify``): the snapshot, then a
    self-check that reads the same history, the snapshot and a prompt, and
    writes the final snapshot. A replay runs the first and prices the
    second (it reads what the first read plus its snapshot and prompt, and
    writes a snapshot as long).

    Where it differs: the summary is the engine's proposal, which covers
    what precedes the engine's ``kept`` (so the newest 30% too), where the
    CLI summarizes only what it drops; the CLI counts characters as JSON of
    its own ``Content`` objects, here of each message's role and content;
    the CLI's ``collapseOlderFunctionResponses`` (older tool outputs cut to
    2 kB in its agent history provider) is not part of compression and is
    left out.

    >>> gemini_cli_compression()
    gemini_cli_compression()
    """
    return _GeminiCompression()


@dataclass(frozen=True)
class _Offloaded(Compaction):
    keep_tokens: float
    folder: str
    thread: str = "thread"

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, default in (("folder", "/conversation_history"), ("thread", "thread"))
                        if getattr(self, k) != default)
        return f"offloaded_summary(keep_tokens={self.keep_tokens!r}{extra})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        replace = _SummaryTail(self.keep_tokens).replace(path, decision)
        if replace is None or "summary" not in replace:
            return replace
        cite = f"\n\nThe full conversation before this summary was saved to {self.folder}/{self.thread}.md: read it for details."
        return {**replace, "summary": replace["summary"] + cite}


def offloaded_summary(keep_tokens: float = 0.10, folder: str = "/conversation_history", thread: str = "thread") -> Compaction:
    """Deep Agents' summarization (langchain-ai/deepagents,
    libs/deepagents/deepagents/middleware/summarization.py): a summary and
    the newest ``keep_tokens`` (a share of what the model would read below
    1; its docstring's example keeps 0.10 of the window), the evicted
    messages offloaded to ``{folder}/{thread}.md`` (one file a thread, each
    offload appended), which the summary cites by path so the agent can read
    them back. A replay writes no file: the citation's tokens are what the
    offload costs the model.

    >>> offloaded_summary()
    offloaded_summary(keep_tokens=0.1)
    """
    summary_tail(keep_tokens)  # checked there
    for name, value in (("folder", folder), ("thread", thread)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"offloaded_summary: {name} must be a non-empty string, got {value!r}")
    return _Offloaded(keep_tokens, folder, thread)
