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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import toolcalls
from ..context import kept
from ..tokens import content_chars, estimate

__all__ = ["clear_tool_results", "summary_tail", "sliding_window", "Compaction", "PLACEHOLDER"]

#: What a cleared tool result reads instead of its content (as LangChain's ``ClearToolUsesEdit``).
PLACEHOLDER = "[cleared]"

Message = Mapping[str, Any]


class Compaction:
    """A worker whose answer to ``context.limit`` is its own compaction (subclasses say which)."""

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


def _instructions(path: Sequence[Message]) -> int:
    """How many messages open the path with role ``system``: kept by every compaction."""
    n = 0
    while n < len(path) and path[n]["role"] == "system":
        n += 1
    return n


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
        replace: dict[str, Any] = {"type": "context.replace", "messages": [_copy(m) for m in path[:head] + path[start:]]}
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

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, default in
                        (("clear_at_least", 0), ("exclude_tools", ()), ("placeholder", PLACEHOLDER)) if getattr(self, k) != default)
        return f"clear_tool_results(keep={self.keep}{extra})"

    def replace(self, path: list[Message], decision: Mapping[str, Any]) -> dict[str, Any] | None:
        cleared = {i for i in self.cleared(path) if i < _kept_start(path)}  # what the model must answer stays
        freed = sum(_tokens([path[i]]) - estimate(len(self.placeholder)) for i in cleared)
        if not cleared or freed < max(1, self.clear_at_least):
            return None
        messages = [self.clear(m) if i in cleared else _copy(m) for i, m in enumerate(path)]
        return {"type": "context.replace", "messages": messages}

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


def clear_tool_results(keep: int = 3, clear_at_least: int = 0, exclude_tools: Sequence[str] = (),
                       placeholder: str = PLACEHOLDER) -> Compaction:
    """Clear old tool results, keep everything else: Anthropic's context editing
    (``clear_tool_uses_20250919``) as LangChain's ``ClearToolUsesEdit`` mirrors its
    knobs. Every tool result but the newest ``keep`` reads ``placeholder``
    instead of its content; results of ``exclude_tools`` are never cleared, nor
    the results the model has still to answer (the engine's ``kept``); when
    clearing would free fewer than ``clear_at_least`` tokens, nothing is
    cleared (the call runs as it was). Tool calls and their ids stay, so every
    call still has its result.

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
    return _ClearToolResults(keep, clear_at_least, tuple(exclude_tools), placeholder)
