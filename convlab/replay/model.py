"""The model a replay's Session calls: ``ReplayLLM``, the logged replies in order.

What each call read (the log's usage where it applies, else the exact count
plus the hidden overhead), the stand-in summaries and the cost model's knobs
(``summary_size``, ``overhead``) are its own; the docstring says each rule.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Callable, Iterable

from ..errors import ProviderError
from ..providers.fakes import checked_replies, stand_in, summarized
from ..tokens import count_tokens
from ..tree import input_tokens

__all__ = ["ReplayLLM"]


def _size(value: Any) -> Any:
    """``summary_size`` checked: None, a ratio in (0, 1], or a whole number of tokens."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"summary_size must be a ratio of what a summary summarizes (a float, 0 < r <= 1), "
                         f"a whole number of tokens, or None (the stand-in's own lines), got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"summary_size as tokens must be at least 1, got {value!r}")
        return value
    if not 0 < value <= 1:
        raise ValueError(f"summary_size as a ratio must be more than 0 and at most 1, got {value!r}"
                         + (f" (for {int(value)} tokens, give the whole number {int(value)})" if value > 1 and value.is_integer() else ""))
    return float(value)


def _overhead(value: Any) -> Any:
    """``overhead`` checked: None (measured from the log) or a whole number of tokens, 0 or more."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"overhead must be a whole number of tokens (0 or more), or None to measure it from the log, got {value!r}")
    return value


#: What a logged reply gives back beside its content (a provider's reply keeps them on the message).
_REPLY_KEYS = ("tool_calls", "name", "metadata")


class ReplayLLM:
    """Answers each model call with the next logged reply (what ``convlab.replay`` drives).

    ``replies`` is a list, consumed in order, of ``{"content", "usage"?,
    "id"?, "time"?, "error"?}``, and the logged reply's ``tool_calls``,
    ``name`` and ``metadata``, given back with it. A reply is consumed when it is given out
    (or its ``error`` raised); a call refused as too long gets the same reply
    when it runs again.

    - ``usage``: the logged usage when the reply *applies* (``applies(request)``,
      default always) and the log has it. Otherwise the call is taken to read
      the exact count of its messages plus the *hidden overhead*:
      ``{"input_tokens": count(messages) + overhead, "output_tokens": count of
      the reply}``. A logged reply no longer applies when the model reads a
      history the log never had (after a strategy rewrote it).
    - The hidden overhead is what a provider reads beyond the transcript (a
      system prompt and tool definitions no log line holds, and its own
      tokenizer's surplus over ``count``): at a call whose logged usage
      applies, ``max(0, logged input - count(messages))``, observed; at any
      other call, the overhead of the most recent earlier call whose logged
      usage applied (``seen[-1]["overhead"]``), 0 when there is none (a log
      with no usage at all). Not the logged call a stale reply stands in for:
      that call read the log's longer history, and its overhead grows with
      it. The overhead carried past a rewrite still holds the tokenizer's
      surplus on the history the rewrite shortened, so the usage of a stale
      reply leans high rather than low.
    - ``overhead`` (a whole number of tokens) is the hidden overhead given
      instead: every call the log's usage does not answer reads ``exact +
      overhead`` (a log with no usage at all: every call). A call whose
      logged usage applies still reads the logged input, and its ``overhead``
      in ``seen`` is still the one observed. Default None: measured from the
      log, as above.
    - ``window``: refuse (``too_long``) a call that reads more, by that same
      measure (the logged input, or the exact count plus the overhead).
    - ``time`` with ``clock`` (a callable giving the session's clock): the
      call's ``latency`` brings the clock to the reply's logged time (never
      back).
    - Summary calls get a deterministic stand-in for a summary of what they
      read (``stand_in``): a log holds no reply for a summary it never asked
      for. Its size is ``summary_size``: None (default) for the stand-in's
      own lines (one short line per message summarized, about 10 to 15
      tokens each, as ``EchoLLM`` writes it), a ratio (a float, 0 < r <= 1)
      of the exact tokens it summarizes, or a whole number of tokens. What
      every later call reads starts from it, so it decides every later count.
      Their usage is the exact count of what they read, no overhead: a
      summary call carries its strategy's prompt, not the agent's hidden one.
    - ``count``: how to count messages exactly (default ``count_tokens``).

    ``used`` lists the ids of the replies given out, ``stale`` those given
    out that did not apply, ``seen`` one dict per (non-summary) call: ``reply``,
    ``applies``, ``read`` (the logged input where it applies, else ``exact +
    overhead``), ``exact``, ``overhead``, ``logged``, ``refused``;
    ``summaries`` one dict per summary call: ``read``, ``refused``.

    >>> llm = ReplayLLM([{"id": "a1", "content": "hello", "usage": {"input_tokens": 40, "output_tokens": 1}},
    ...                  {"id": "a2", "content": "hi again"}],
    ...                 applies=lambda request: len(request["messages"]) == 1)
    >>> llm.complete({"messages": [{"role": "user", "content": "hi"}]})  # the log's usage: 39 hidden tokens
    {'content': 'hello', 'usage': {'input_tokens': 40, 'output_tokens': 1}}
    >>> llm.complete({"messages": [{"role": "user", "content": "summary"}, {"role": "user", "content": "hello world"}]})
    {'content': 'hi again', 'usage': {'input_tokens': 42, 'output_tokens': 2}}
    >>> [(x["exact"], x["overhead"], x["read"]) for x in llm.seen], llm.stale
    ([(1, 39, 40), (3, 39, 42)], ['a2'])
    >>> given = ReplayLLM([{"id": "a1", "content": "hi"}], overhead=500, summary_size=0.5)
    >>> given.complete({"messages": [{"role": "user", "content": "hello world"}]})["usage"]
    {'input_tokens': 502, 'output_tokens': 1}
    >>> history = [{"role": "user", "content": "word " * 400}, {"role": "user", "content": "Summarize."}]
    >>> count_tokens(given.complete({"messages": history, "summary": True})["content"])  # half of 400
    200
    """

    def __init__(
        self,
        replies: Iterable[Mapping[str, Any]] = (),
        window: int | None = None,
        *,
        clock: Callable[[], float] | None = None,
        applies: Callable[[Mapping[str, Any]], bool] | None = None,
        count: Callable[[list], int] | None = None,
        summary_size: int | float | None = None,
        overhead: int | None = None,
    ):
        if window is not None and (not isinstance(window, int) or window <= 0):
            raise ValueError(f"window must be a positive integer, got {window!r}")
        self.summary_size = _size(summary_size)
        self.overhead = _overhead(overhead)
        self.replies = checked_replies(replies)
        self.window = window
        self.latency = 0.0
        self.clock = clock
        self.applies = applies
        self.count = count or count_tokens
        self.used: list[Any] = []
        self.stale: list[Any] = []
        self.seen: list[dict[str, Any]] = []
        self.summaries: list[dict[str, Any]] = []
        self.last_applied = True

    def __repr__(self) -> str:
        return f"ReplayLLM({len(self.used)}/{len(self.replies)} replies used)"

    def _carried(self) -> int:
        """The hidden overhead of a call the log's usage does not answer."""
        if self.overhead is not None:
            return self.overhead
        return self.seen[-1]["overhead"] if self.seen else 0

    def _stand_in(self, messages: list[Mapping[str, Any]]) -> str:
        size = self.summary_size
        if isinstance(size, float):
            size = max(1, round(size * self.count(summarized(messages))))
        return stand_in(messages, size)

    def _latency_to(self, time: Any) -> float:
        if self.clock is None or not isinstance(time, (int, float)):
            return 0.0
        return max(0.0, float(time) - float(self.clock()))

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        messages = list(request.get("messages") or [])
        self.latency = 0.0
        if request.get("summary"):
            read = self.count(messages)
            refused = self.window is not None and read > self.window
            self.summaries.append({"read": read, "refused": refused})
            if refused:
                raise ProviderError("too_long", f"{read} tokens is more than the window of {self.window}")
            content = self._stand_in(messages)
            return {"content": content, "usage": {"input_tokens": read, "output_tokens": self.count([{"content": content}])}}
        n = len(self.used)
        if n >= len(self.replies):
            raise ProviderError("failed", f"ReplayLLM has no logged reply left for call {n + 1}")
        reply = self.replies[n]
        applies = True if self.applies is None else bool(self.applies(request))
        logged = input_tokens(reply.get("usage"))
        exact = self.count(messages)
        if applies and logged is not None:
            overhead = max(0, logged - exact)
            read = logged
        else:
            overhead = self._carried()
            read = exact + overhead
        seen = {"reply": reply.get("id"), "applies": applies, "read": read, "exact": exact, "overhead": overhead,
                "logged": logged, "refused": False}
        self.seen.append(seen)
        if self.window is not None and read > self.window:
            seen["refused"] = True
            raise ProviderError("too_long", f"{read} tokens is more than the window of {self.window}")
        self.used.append(reply.get("id"))
        self.last_applied = applies
        if not applies:
            self.stale.append(reply.get("id"))
        self.latency = self._latency_to(reply.get("time"))
        if "error" in reply:
            raise ProviderError(reply["error"], reply.get("message"))
        if applies and logged is not None:
            usage = dict(reply["usage"])
        else:
            usage = {"input_tokens": read, "output_tokens": self.count([{"content": reply["content"]}])}
        keys = {k: copy.deepcopy(reply[k]) for k in _REPLY_KEYS if reply.get(k) is not None}
        return {"content": copy.deepcopy(reply["content"]), "usage": usage, **keys}
