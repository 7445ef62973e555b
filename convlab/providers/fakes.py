"""The shipped fakes, like httpx's MockTransport: deterministic, offline providers.

What a provider is (``complete``, ``stream``, ``latency``, refusing with
``ProviderError``): the docstring of ``convlab.providers``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import ProviderError
from ..tokens import content_text, count_tokens, get_encoding
from ..tree import PathView, input_tokens

__all__ = ["EchoLLM", "ScriptedLLM", "ReplayLLM", "ProviderError", "chunks", "stand_in"]


def chunks(text: str, n: int = 3) -> list[str]:
    """``text`` in about ``n`` pieces cut after spaces, joined back exactly: how the
    fakes stream a reply.

    >>> chunks("echo: hello big world")
    ['echo: hello ', 'big world']
    >>> chunks("one two three")
    ['one ', 'two ', 'three']
    >>> "".join(chunks("x" * 10)), chunks("")
    ('xxxxxxxxxx', [])
    """
    if not text:
        return []
    words = text.split(" ")
    size = max(1, -(-len(words) // n))
    pieces = [" ".join(words[i:i + size]) for i in range(0, len(words), size)]
    return [p + " " for p in pieces[:-1]] + pieces[-1:]


def _summarized(messages: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """What a summary call summarizes: every message before its prompt (the last one)."""
    return messages[:-1] if len(messages) > 1 else messages


def stand_in(messages: list[Mapping[str, Any]], tokens: int | None = None) -> str:
    """A deterministic summary of what a summary call read (its last message is the
    prompt): what ``EchoLLM`` and ``ReplayLLM`` write instead of a model's summary.

    Without ``tokens``: a count of the messages, then one line per message with
    its role and first eight words (about 10 to 15 tokens a message). With
    ``tokens``: that many o200k_base tokens (give or take one where the text is
    cut), the same opening line and then the messages' own text from the oldest
    on, repeated if it runs short, so the text reads like the log (code counts
    more tokens per character than prose).

    >>> msgs = [{"role": "user", "content": "one two three four five six seven eight nine"},
    ...         {"role": "user", "content": "Summarize."}]
    >>> print(stand_in(msgs))
    Summary of 1 messages.
    user: one two three four five six seven eight ...
    >>> text = stand_in(msgs, tokens=40); count_tokens(text), text[:38]
    (40, 'Summary of 1 messages.\\nuser: one two t')
    """
    body = _summarized(messages)
    head = f"Summary of {len(body)} messages.\n"
    if tokens is None:
        lines = []
        for m in body:
            words = content_text(m.get("content")).split()
            lines.append(f"{m.get('role', '?')}: {' '.join(words[:8])}{' ...' if len(words) > 8 else ''}")
        return head + "\n".join(lines)
    enc = get_encoding("o200k_base")
    head_ids = enc.encode_ordinary(head)
    need = tokens - len(head_ids)
    if need <= 0:
        return enc.decode(head_ids[:tokens])
    text = "\n".join(f"{m.get('role', '?')}: {content_text(m.get('content'))}" for m in body)
    ids = enc.encode_ordinary(text[: 8 * need + 64])  # a prefix holds the tokens needed (at least 1 char a token)
    if len(ids) < need and len(text) > 8 * need + 64:  # pragma: no cover - text of more than 8 chars a token
        ids = enc.encode_ordinary(text)
    if not ids:
        ids = enc.encode_ordinary("summary")
    if len(ids) < need:  # a summary longer than what it summarizes: the text again, on a new line
        ids = (ids + enc.encode_ordinary("\n")) * -(-need // (len(ids) + 1))
    return head + enc.decode(ids[:need])


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


class _Streams:
    """``stream(request)`` for a fake: its ``complete`` reply in a few chunks, then the reply."""

    def stream(self, request: Mapping[str, Any]) -> Iterator[Any]:
        reply = self.complete(request)  # type: ignore[attr-defined]
        yield from chunks(content_text(reply["content"]))
        yield reply


def _read(messages: Sequence[Mapping[str, Any]]) -> int:
    """The exact o200k_base tokens of what a call reads: the tree's running count for
    the path (``PathView.tokens``: only the messages not counted yet are read), else
    ``count_tokens`` of the messages given."""
    if isinstance(messages, PathView):
        return messages.tokens()
    return count_tokens(list(messages))


def _last_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last user or tool message (read from the end: a path view walks
    up only that far)."""
    for m in reversed(messages):
        if m.get("role") in ("user", "tool"):
            return content_text(m.get("content"))
    return ""


def _checked(replies: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Scripted or logged replies: each ``{"content", ...}`` or ``{"error": kind}``."""
    out = [dict(r) for r in replies]
    for i, r in enumerate(out):
        if "error" in r:
            if r["error"] not in ProviderError.KINDS:
                raise ValueError(f"replies[{i}].error must be one of {ProviderError.KINDS}, got {r['error']!r}")
        elif "content" not in r:
            raise ValueError(f"replies[{i}] needs 'content' or 'error'")
    return out


class EchoLLM(_Streams):
    """Replies by echoing the last user (or tool) message; counts exactly; streams in a few chunks.

    ``usage.input_tokens`` is the exact o200k_base count of what it read
    (for the path a session hands it, a ``PathView``, the tree's running
    count: a call reads the messages up to the last user one and those not
    counted yet, never the whole path). With ``window`` it refuses a call that reads more (``too_long``). A summary
    call gets a deterministic, non-empty summary of what it read.

    >>> llm = EchoLLM()
    >>> llm.complete({"messages": [{"role": "user", "content": "hello world"}]})
    {'content': 'echo: hello world', 'usage': {'input_tokens': 2, 'output_tokens': 4}}
    """

    def __init__(self, window: int | None = None, latency: float = 0.0):
        if window is not None and (not isinstance(window, int) or window <= 0):
            raise ValueError(f"window must be a positive integer, got {window!r}")
        if latency < 0:
            raise ValueError(f"latency must not be negative, got {latency!r}")
        self.window = window
        self.latency = float(latency)
        self.calls = 0

    def __repr__(self) -> str:
        return f"EchoLLM(window={self.window!r}, latency={self.latency!r})"

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        messages = request.get("messages") or []
        read = _read(messages)
        if self.window is not None and read > self.window:
            raise ProviderError("too_long", f"{read} tokens is more than the window of {self.window}")
        self.calls += 1
        if request.get("summary"):
            content = stand_in(list(messages))
        else:
            text = _last_text(messages)
            content = f"echo: {text}" if text else "echo"
        return {"content": content, "usage": {"input_tokens": read, "output_tokens": count_tokens(content)}}


class ScriptedLLM(_Streams):
    """Answers with the given replies, in order.

    Each reply is ``{"content", "usage"?}`` (usage defaults to exact counts)
    or ``{"error": "too_long" | "failed"}``. ``requests`` records what each
    call read. Running out of replies is a ``failed`` call that says so. A
    streamed call gets the reply's text in a few chunks.

    >>> llm = ScriptedLLM([{"content": "hi", "usage": {"input_tokens": 7, "output_tokens": 1}}, {"error": "too_long"}])
    >>> llm.complete({"messages": []})["content"]
    'hi'
    >>> llm.complete({"messages": []})
    Traceback (most recent call last):
    ...
    convlab.errors.ProviderError: too_long
    """

    def __init__(self, replies: Iterable[Mapping[str, Any]], latency: float = 0.0):
        self.replies = _checked(replies)
        self.latency = float(latency)
        self.requests: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        return f"ScriptedLLM({len(self.requests)}/{len(self.replies)} replies used)"

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        n = len(self.requests)
        messages = request.get("messages") or []
        # a path view never changes: kept as it is (O(1)); messages given as a list: copied
        self.requests.append({**request, "messages": messages if isinstance(messages, PathView) else [dict(m) for m in messages]})
        if n >= len(self.replies):
            raise ProviderError("failed", f"ScriptedLLM has no reply left for call {n + 1} (it had {len(self.replies)})")
        reply = self.replies[n]
        if "error" in reply:
            raise ProviderError(reply["error"], reply.get("message"))
        usage = reply.get("usage")
        if usage is None:
            usage = {"input_tokens": _read(messages), "output_tokens": count_tokens(content_text(reply["content"]))}
        return {"content": copy.deepcopy(reply["content"]), "usage": dict(usage)}


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
    - ``count``: how to count messages exactly (default ``count_tokens``). It
      must add up message by message, as ``count_tokens`` does: the path a
      call reads (a ``PathView``) is counted with ``count([m])`` for each
      message, once, in the tree's running count (``PathView.tokens``), so a
      call never re-reads the path.

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
        self.replies = _checked(replies)
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
            size = max(1, round(size * self.count(_summarized(messages))))
        return stand_in(messages, size)

    def _latency_to(self, time: Any) -> float:
        if self.clock is None or not isinstance(time, (int, float)):
            return 0.0
        return max(0.0, float(time) - float(self.clock()))

    def _exact(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """``count`` of what a call reads; for a path view, the tree's running count
        message by message (``count([m])`` each: only the messages not counted yet)."""
        if not isinstance(messages, PathView):
            return self.count(list(messages))
        return messages.tokens(None if self.count is count_tokens else self._count_one)

    def _count_one(self, message: Mapping[str, Any]) -> int:
        return self.count([message])

    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        messages = request.get("messages") or []
        self.latency = 0.0
        if request.get("summary"):
            messages = list(messages)
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
        exact = self._exact(messages)
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
