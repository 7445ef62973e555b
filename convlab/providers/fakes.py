"""The shipped fakes, like httpx's MockTransport: deterministic, offline providers.

What a provider is (``complete``, ``stream``, ``latency``, refusing with
``ProviderError``): the docstring of ``convlab.providers``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..tokens import content_text, count_tokens, get_encoding
from ..tree import PathView

__all__ = ["EchoLLM", "ScriptedLLM", "ProviderError", "chunks", "stand_in", "summarized", "checked_replies"]


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


def summarized(messages: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
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
    body = summarized(messages)
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


class _Streams:
    """``stream(request)`` for a fake: its ``complete`` reply in a few chunks, then the reply."""

    if TYPE_CHECKING:  # each fake this is mixed into has it
        def complete(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def stream(self, request: Mapping[str, Any]) -> Iterator[Any]:
        reply = self.complete(request)
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


def checked_replies(replies: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
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
        self.replies = checked_replies(replies)
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
