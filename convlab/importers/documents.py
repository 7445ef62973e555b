"""Bytes -> JSON documents: one JSON value, JSON lines, or a JSON array read item by item.

An export can be hundreds of megabytes of one JSON array (a ChatGPT
``conversations.json``). Parsed whole, the text, its bytes and every parsed
conversation are in memory at once, next to the trees built from them.
Streamed, one conversation's JSON is in memory at a time: a JSON array read
from a file is parsed item by item with ijson (its C backend, yajl2) and each
item is built into a conversation as it comes.

Where the stream and ``json`` could disagree, ``json`` decides: a stream that
breaks anywhere but at the end of the data (NaN, an integer past 64 bits,
bytes that are not UTF-8, text after the array) raises :class:`Restart`, and
the file is read whole with ``json``. A stream that ends inside an item (the
file was cut short) keeps its complete items and says so, as ``json`` does.
One difference remains: yajl2 reads a lone UTF-16 surrogate escape
(``"\\ud800"``) as ``"?"``, where ``json`` keeps it.

A document's ``each`` builds one conversation per item and drives the
progress bar: conversations when the items are in memory, bytes when they
are streamed. A bar shows only for work that takes longer than
``PROGRESS_DELAY`` seconds, and only in a terminal or a notebook (tqdm's
``delay`` and ``disable=None``).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from itertools import chain, islice
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from ..conversation import Conversation
from .records import read_error, warn

__all__ = ["Document", "Restart", "NotJSON", "parse_bytes", "stream_array", "gunzip", "bar", "HEAD", "PROGRESS_DELAY"]

#: How many items detection looks at.
HEAD = 50

#: Seconds of work before a progress bar shows.
PROGRESS_DELAY = 1.0

#: Bytes ijson reads at a time.
_CHUNK = 1 << 16


class Restart(Exception):
    """The stream broke where ``json`` may read on: read the file whole."""


class NotJSON(Exception):
    """Not a JSON object, array or JSON lines (in a folder: not a chat log, passed over)."""


def bar(*, total: int | None, unit: str, desc: str, enabled: bool) -> Any:
    """A tqdm bar (terminal or notebook) that shows only after ``PROGRESS_DELAY`` seconds; None when turned off."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, desc=desc, delay=PROGRESS_DELAY, disable=None,
                unit_scale=unit == "B", unit_divisor=1024 if unit == "B" else 1000)


class Document:
    """One file (or archive member) read as JSON: its items, read once.

    ``kind`` is ``"array"`` (the items are the array's elements), ``"object"``
    (one JSON value, the only item) or ``"lines"`` (JSON lines: the records).
    ``head`` is the first ``HEAD`` items (what ``detect`` looks at) and
    ``first`` the first of them; ``items`` yields every item, once (``given``
    counts them). ``raw``
    holds the file's bytes where they were read whole (JSON lines, one object).
    """

    def __init__(self, source: str, kind: str, items: Iterable[Any], *, raw: bytes | None = None, count: int | None = None,
                 size: int | None = None, position: Callable[[], int] | None = None, problem: str | None = None,
                 progress: bool = False) -> None:
        self.source = source
        self.kind = kind
        self.raw = raw
        self._count = count  # items, when they are in memory
        self._size = size  # bytes, when they are streamed
        self._position = position
        self._problem = problem  # bad JSON lines left out: warned when the items are read
        self._progress = progress
        rest = iter(items)
        self.head = list(islice(rest, HEAD))
        self._rest = rest
        self._taken = False
        self.given = 0  # items given out by ``items`` so far

    @property
    def first(self) -> Any:
        return self.head[0] if self.head else None

    @property
    def items(self) -> Iterator[Any]:
        if self._taken:
            raise RuntimeError(f"{self.source}: the items of a document are read once")
        self._taken = True
        if self._problem:
            warn(self._problem)
        return self._counted(chain(self.head, self._rest))

    def _counted(self, items: Iterator[Any]) -> Iterator[Any]:
        for item in items:
            self.given += 1
            yield item

    def each(self, parse_one: Callable[[Any, str, int], Conversation]) -> Iterator[Conversation]:
        """``parse_one(item, source, index)`` for every item: a format whose items are conversations."""
        streamed = self._position is not None
        progress = bar(total=self._size if streamed else self._count, unit="B" if streamed else "conversation",
                       desc=os.path.basename(self.source), enabled=self._progress)
        try:
            for i, item in enumerate(self.items):
                yield parse_one(item, self.source, i)
                if progress is None:
                    continue
                if streamed:
                    progress.set_postfix_str(f"{i + 1} conversations", refresh=False)
                    progress.update(self._position() - progress.n)  # type: ignore[misc]
                else:
                    progress.update(1)
        finally:
            if progress is not None:
                progress.close()


# -- whole documents ---------------------------------------------------------------


def gunzip(raw: bytes, source: str) -> bytes:
    """Gzip data decompressed; cut short: what decompresses, with a warning."""
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = d.decompress(raw)
        except zlib.error as err:
            raise read_error(source, f"not a readable gzip file ({err})") from None
        if not data:
            raise read_error(source, "gzip file cut short before any data") from None
        warn(f"{source}: gzip data cut short; read the {len(data)} bytes before the cut")
        return data


def _array_prefix(text: str, source: str, err: json.JSONDecodeError) -> list[Any]:
    """The complete items of a JSON array that was cut short (or broken) after them."""
    dec = json.JSONDecoder()
    i = text.index("[") + 1
    items: list[Any] = []
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            break
        try:
            item, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        items.append(item)
    if not items:
        raise read_error(source, f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno} (cut short?)")
    warn(f"{source}: JSON breaks at line {err.lineno} column {err.colno} ({err.msg}; cut short?); "
         f"kept the {len(items)} complete item(s) before it")
    return items


def _json_lines(text: str, source: str) -> tuple[list[Any], str | None]:
    records: list[Any] = []
    bad: list[int] = []
    lines = text.splitlines()
    last = max((k for k, line in enumerate(lines) if line.strip()), default=-1)
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad.append(k + 1)
    if not records:
        raise read_error(source, "no line is valid JSON")
    problem = None
    if bad:
        torn = bad == [last + 1]
        what = f"the last line ({last + 1}) is cut short" if torn else "lines " + ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "") + " are not valid JSON"
        problem = f"{source}: {what}; left out"
    return records, problem


def parse_bytes(raw: bytes, source: str, progress: bool) -> Document:
    """A file's (decompressed) bytes, parsed whole: one JSON value, JSON lines, or an array's complete items."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise read_error(source, f"not UTF-8 text (byte {err.start})") from None
    stripped = text.strip()
    if not stripped:
        raise read_error(source, "the file is empty")
    if stripped[0] not in "[{":
        raise NotJSON(f"{source}: not a JSON object, array or JSON lines")
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as err:
        first_line = stripped.split("\n", 1)[0]
        try:
            jsonl = "\n" in stripped and isinstance(json.loads(first_line), dict)
        except json.JSONDecodeError:
            jsonl = False
        if jsonl:
            records, problem = _json_lines(stripped, source)
            return Document(source, "lines", records, raw=raw, count=len(records), problem=problem, progress=progress)
        if stripped[0] == "[":
            items = _array_prefix(stripped, source, err)
            return Document(source, "array", items, count=len(items), progress=progress)
        raise read_error(source, f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno} (cut short?)") from None
    if isinstance(value, list):
        return Document(source, "array", value, count=len(value), progress=progress)
    return Document(source, "object", [value], raw=raw, count=1, progress=progress)


# -- a streamed array -----------------------------------------------------------------


def stream_array(f: BinaryIO, source: str, size: int | None, progress: bool) -> Document:
    """A JSON array read from ``f`` item by item (``f`` starts at the array, maybe after a BOM and white space).

    The items are parsed as they are read; reading them raises :class:`Restart`
    where the stream and ``json`` could disagree, and ``ReadError`` when the
    data ends before the first item is complete.
    """
    import ijson

    start = f.tell()
    if f.read(3) != b"\xef\xbb\xbf":
        f.seek(start)
    counter = _Counted(f)

    def items() -> Iterator[Any]:
        n = 0
        try:
            for item in ijson.items(counter, "item", use_float=True, buf_size=_CHUNK):
                yield item
                n += 1
        except ijson.IncompleteJSONError as err:
            if "premature EOF" not in str(err):
                raise Restart(str(err)) from None
            if not n:
                raise read_error(source, "not valid JSON: the data ends before the first item is complete (cut short?)") from None
            warn(f"{source}: JSON ends at byte {counter.position()} inside item {n + 1} (cut short?); "
                 f"kept the {n} complete item(s) before it")
        except ijson.JSONError as err:
            raise Restart(str(err)) from None

    return Document(source, "array", items(), size=size, position=counter.position, progress=progress)


class _Counted:
    """A binary file that counts the bytes read from it (what the progress bar shows)."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._read = 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._read += len(data)
        return data

    def position(self) -> int:
        return self._read
