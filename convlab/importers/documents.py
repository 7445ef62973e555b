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

import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, BinaryIO

from ..conversation import Conversation
from ..errors import ReadError
from . import jsontext
from .jsontext import MAX_DEPTH, SHALLOW, DepthScanner, TooDeep, TooLong
from .records import read_error, warn

__all__ = ["Document", "Limits", "Restart", "NotJSON", "parse_bytes", "stream_array", "gunzip", "bar", "HEAD",
           "PROGRESS_DELAY", "MAX_DEPTH", "INFLATE_RATIO", "INFLATE_FLOOR", "INFLATE_CEILING"]

#: How many items detection looks at.
HEAD = 50

#: Seconds of work before a progress bar shows.
PROGRESS_DELAY = 1.0

#: Python's recursion limit up to which ``json`` may read a text before it is measured (the default is 1,000).
_JSON_RECURSION = 3000

#: The first character that is not white space (``str.strip``'s).
_TEXT = re.compile(r"\S")

#: How a JSON text (or JSON lines) ends, nothing after it but a line break.
_JSON_ENDS = ("]", "}", "]\n", "}\n", "]\r\n", "}\r\n")

#: The same, as bytes: a file's JSON lines are split before they are decoded (``_byte_lines``).
_JSON_ENDS_BYTES = tuple(end.encode() for end in _JSON_ENDS)
_BYTE_TEXT = re.compile(rb"\S")
_BOM = b"\xef\xbb\xbf"

#: Bytes ijson reads at a time.
_CHUNK = 1 << 16


#: How much compressed data (gzip, a zip member) may inflate by default: this many times its compressed size,
#: at least ``INFLATE_FLOOR`` and at most ``INFLATE_CEILING`` bytes (chat logs inflate 5 to 20 times).
INFLATE_RATIO = 100
INFLATE_FLOOR = 16 << 20
INFLATE_CEILING = 2 << 30


@dataclass(frozen=True)
class Limits:
    """What a read refuses beyond: ``depth``, how deep JSON may nest (``MAX_DEPTH``), and
    ``inflated``, how many bytes compressed data may inflate to (None: ``INFLATE_RATIO`` times
    its compressed size, within ``INFLATE_FLOOR`` and ``INFLATE_CEILING``).

    >>> Limits().inflate_cap(1 << 20) == 100 << 20, Limits(inflated=5).inflate_cap(1 << 20)
    (True, 5)
    """

    depth: int = MAX_DEPTH
    inflated: int | None = None

    def __post_init__(self) -> None:
        for name in ("depth", "inflated"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"max_{name} must be a positive whole number, got {value!r}")

    def inflate_cap(self, compressed: int) -> int:
        if self.inflated is not None:
            return self.inflated
        return min(INFLATE_CEILING, max(INFLATE_FLOOR, INFLATE_RATIO * compressed))

    def too_big(self, source: str, compressed: int) -> Exception:
        return read_error(source, f"inflates to more than {self.inflate_cap(compressed):,} bytes from {compressed:,} "
                                  f"(read(max_inflated=) reads more)")


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
    counts them). ``raw`` holds the file's bytes where they were read whole (JSON lines, one object).
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
        position = self._position
        streamed = position is not None
        progress = bar(total=self._size if streamed else self._count, unit="B" if streamed else "conversation",
                       desc=os.path.basename(self.source), enabled=self._progress)
        try:
            for i, item in enumerate(self.items):
                yield parse_one(item, self.source, i)
                if progress is None:
                    continue
                if position is not None:
                    progress.set_postfix_str(f"{i + 1} conversations", refresh=False)
                    progress.update(position() - progress.n)
                else:
                    progress.update(1)
        finally:
            if progress is not None:
                progress.close()


# -- whole documents ---------------------------------------------------------------


def gunzip(raw: bytes, source: str, limits: Limits = Limits()) -> bytes:
    """Gzip data decompressed (every member), never past ``limits.inflate_cap`` (a ``ReadError`` beyond);
    cut short: what decompresses, with a warning."""
    cap = limits.inflate_cap(len(raw))
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = raw
    while True:
        try:
            out += d.decompress(data, cap + 1 - len(out))
        except zlib.error as err:
            if not out:
                raise read_error(source, f"not a readable gzip file ({err})") from None
            break
        if len(out) > cap:
            raise limits.too_big(source, len(raw))
        data = d.unconsumed_tail
        if d.eof:
            data = d.unused_data.lstrip(b"\0")
            if data[:2] != b"\x1f\x8b":  # no other member after this one
                return bytes(out)
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif not data:
            break
    if not out:
        raise read_error(source, "gzip file cut short before any data")
    warn(f"{source}: gzip data cut short; read the {len(out)} bytes before the cut")
    return bytes(out)


def _loads(text: str, depth: int, fast: bool) -> Any:
    """``text`` parsed: by ``json`` when it is ``fast`` (known to nest no deeper than ``SHALLOW`` and
    ``depth``), else without recursion up to ``depth`` (``TooDeep`` beyond); an integer too long for
    Python is ``TooLong``."""
    if not fast:
        return jsontext.loads(text, depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError):  # an integer too long for Python: jsontext says where
        return jsontext.loads(text, depth)


def _shallow(text: str, depth: int, cap: int) -> bool:
    """Whether JSON ``text`` nests no deeper than ``SHALLOW`` nor ``depth``. A text with no more brackets than that
    cannot; any other is measured (``TooDeep`` past ``cap``)."""
    limit = min(SHALLOW, depth)
    if text.count("[") + text.count("{") <= limit:
        return True
    scan = DepthScanner(cap)
    scan.feed(text.encode("utf-8", "surrogatepass"))
    return scan.deepest <= limit


def _parsed(text: str, depth: int, cap: int) -> Any:
    """JSON ``text`` parsed, ``json``'s way when it nests no deeper than ``SHALLOW``, else without recursion
    (``TooDeep`` past ``depth``; the measure's own ``TooDeep`` past ``cap``). Where the cap is past what
    ``json`` can recurse to, ``json`` reads first and the text is measured only if it could not: JSON that
    ``json`` reads whole is within the cap, and read the same either way (unless a program raised Python's
    recursion limit past ``_JSON_RECURSION``: ``json`` would recurse in C as deep as it lets it)."""
    if depth >= sys.getrecursionlimit() <= _JSON_RECURSION:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise
        except (RecursionError, ValueError):  # too deep for json, or an integer too long for Python: measured
            pass
    return _loads(text, depth, _shallow(text, depth, cap))


def _line(line: str, depth: int) -> Any:
    """One JSON line: ``json``'s if it is shallow, else read without recursion (``TooDeep`` past ``depth``)."""
    return _parsed(line, depth, depth)


def _array_prefix(text: str, source: str, err: json.JSONDecodeError, depth: int, fast: bool) -> list[Any]:
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
            item, i = dec.raw_decode(text, i) if fast else jsontext.decode(text, i, depth)
        except (json.JSONDecodeError, TooDeep, TooLong, RecursionError, ValueError):
            break
        items.append(item)
    if not items:
        raise read_error(source, f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno} (cut short?)")
    warn(f"{source}: JSON breaks at line {err.lineno} column {err.colno} ({err.msg}; cut short?); "
         f"kept the {len(items)} complete item(s) before it")
    return items


def _json_lines(lines: Sequence[str | bytes], source: str, depth: int, start: int = 0) -> tuple[list[Any], str | None]:
    """The records of JSON lines (split at line feeds only: a JSON string may hold U+2028), and what was left out.

    ``lines`` are the text's lines, or the file's bytes split at line feeds (``_byte_lines``), each decoded here:
    a line of a few kB decodes faster than the file whole, whose text of tens of MB is then split again
    (OpenAssistant's 21 MB: 42 + 31 ms against 5). Text that is not UTF-8 is the file's ``ReadError``, as a
    whole file's (``start``: the bytes before the first line, a BOM)."""
    records: list[Any] = []
    bad: list[int] = []
    hostile: list[str] = []  # lines refused for what they hold, not for their syntax
    for k, given in enumerate(lines):
        if isinstance(given, str):
            line = given
        else:
            try:
                line = given.decode("utf-8")
            except UnicodeDecodeError as err:
                at = start + sum(len(b) + 1 for b in lines[:k]) + err.start
                raise read_error(source, f"not UTF-8 text (byte {at})") from None
        if not line or line.isspace():
            continue
        try:
            records.append(_line(line, depth))
        except json.JSONDecodeError:
            bad.append(k + 1)
        except (TooDeep, TooLong) as err:
            hostile.append(f"line {k + 1} {err}")
    if not records:
        raise read_error(source, "no line is valid JSON" + (f" ({'; '.join(hostile[:3])})" if hostile else ""))
    said = []
    if bad:
        last = next(k for k in range(len(lines) - 1, -1, -1) if not _blank(lines[k]))
        torn = bad == [last + 1]
        said.append(f"the last line ({last + 1}) is cut short" if torn else
                    "lines " + ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "") + " are not valid JSON")
    said.extend(hostile[:10])
    return records, f"{source}: {'; '.join(said)}; left out" if said else None


def _blank(line: str | bytes) -> bool:
    """Whether a line holds nothing but white space (``str.isspace``'s, a line of bytes decoded: every line was)."""
    text = line.decode("utf-8") if isinstance(line, bytes) else line
    return not text or text.isspace()


def _byte_lines(raw: bytes, depth: int) -> tuple[list[bytes], int] | None:
    """JSON lines told from the bytes, split at line feeds (and how many bytes a BOM took), where that reads what
    the decoded text would: the file starts with an object (after a BOM), ends as JSON does (so ``str.strip``
    would take nothing but its last line feed), and its first line is an object with more lines after it. None
    where only the text can tell (white space before or after the JSON, a line cut short at the end, a first line
    that is not UTF-8): ``parse_bytes`` decodes it whole. Property-tested against the text's read."""
    start = 3 if raw[:3] == _BOM else 0
    if raw[start:start + 1] != b"{" or not raw.endswith(_JSON_ENDS_BYTES):
        return None
    end = raw.find(b"\n", start)
    if end < 0 or _BYTE_TEXT.search(raw, end) is None:  # one line (the file ends in a bracket: what follows is text)
        return None
    try:
        first = raw[start:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not _first_is_object(first.strip(), depth):
        return None
    return (raw[start:] if start else raw).split(b"\n"), start


def _looks_like_lines(text: str, depth: int) -> bool:
    """JSON lines: more than one line, the first an object (or one convlab refuses for what it holds)."""
    end = text.find("\n")
    if end < 0 or _TEXT.search(text, end) is None:  # one line, and white space after it
        return False
    return _first_is_object(text[:end].strip(), depth)


def _first_is_object(first: str, depth: int) -> bool:
    """Whether the first line of JSON lines is an object (or one convlab refuses for what it holds)."""
    try:
        return isinstance(_line(first, depth), dict)
    except json.JSONDecodeError:
        return False
    except (TooDeep, TooLong):
        return first.startswith("{")


def parse_bytes(raw: bytes, source: str, progress: bool, limits: Limits = Limits()) -> Document:
    """A file's (decompressed) bytes, parsed whole: JSON lines, one JSON value, or an array's complete items.

    JSON no deeper than ``SHALLOW`` is read by ``json``, deeper JSON without recursion, and past
    ``limits.depth`` a document is refused (a JSON line is left out, with a warning). How deep a text
    nests is measured (``DepthScanner``, a pass at a few hundred MB/s) only where it could be deep: a
    text (a JSON line, or the whole value) with no more brackets than that cannot be, and its brackets
    are counted at C speed."""
    depth = limits.depth
    lines = _byte_lines(raw, depth)
    if lines is not None:
        records, problem = _json_lines(lines[0], source, depth, lines[1])
        return Document(source, "lines", records, raw=raw, count=len(records), problem=problem, progress=progress)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:  # the byte of the file: past its BOM (the codec counts from after it)
        raise read_error(source, f"not UTF-8 text (byte {err.start + (3 if raw[:3] == _BOM else 0)})") from None
    first = _TEXT.search(text)
    if first is None:
        raise read_error(source, "the file is empty")
    if text[first.start()] not in "[{":
        raise NotJSON(f"{source}: not a JSON object, array or JSON lines")
    # white space around the JSON is JSON's own but for a rare other kind: the text is copied without it only then
    stripped = text if first.start() == 0 and text.endswith(_JSON_ENDS) else text.strip()
    if _looks_like_lines(stripped, depth):  # a whole object, and more after it: no one JSON value, each line its own
        records, problem = _json_lines(stripped.split("\n"), source, depth)
        return Document(source, "lines", records, raw=raw, count=len(records), problem=problem, progress=progress)
    try:
        value = _parsed(stripped, depth, sys.maxsize)  # measured only: the parser says where it is too deep
    except json.JSONDecodeError as err:
        if stripped[0] == "[":
            items = _array_prefix(stripped, source, err, depth, _shallow(stripped, depth, sys.maxsize))
            return Document(source, "array", items, count=len(items), progress=progress)
        raise read_error(source, f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno} (cut short?)") from None
    except (TooDeep, TooLong) as err:
        hint = " (read(max_depth=) reads deeper)" if isinstance(err, TooDeep) else ""
        raise read_error(source, f"{err}{hint}") from None
    if isinstance(value, list):
        return Document(source, "array", value, count=len(value), progress=progress)
    return Document(source, "object", [value], raw=raw, count=1, progress=progress)


# -- a streamed array -----------------------------------------------------------------


def stream_array(f: BinaryIO, source: str, size: int | None, progress: bool, limits: Limits = Limits()) -> Document:
    """A JSON array read from ``f`` item by item (``f`` starts at the array, maybe after a BOM and white space).

    The items are parsed as they are read; reading them raises :class:`Restart`
    where the stream and ``json`` could disagree, and ``ReadError`` when the
    data ends before the first item is complete, or nests deeper than
    ``limits.depth`` (every chunk is measured before the parser sees it: its
    memory grows with the square of the depth).
    """
    import ijson

    start = f.tell()
    if f.read(3) != b"\xef\xbb\xbf":
        f.seek(start)
    counter = _Counted(f, DepthScanner(limits.depth), source)

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
        except ReadError:  # deeper than the cap (_Counted)
            raise
        except (ijson.JSONError, ValueError) as err:  # ValueError: an integer too long for Python (json says so)
            raise Restart(str(err)) from None

    return Document(source, "array", items(), size=size, position=counter.position, progress=progress)


class _Counted:
    """A binary file that counts the bytes read from it (what the progress bar shows), and measures
    how deep they nest before the parser sees them (a ``ReadError`` past the cap)."""

    def __init__(self, f: BinaryIO, scan: DepthScanner, source: str) -> None:
        self._f = f
        self._read = 0
        self.scan = scan
        self.source = source

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._read += len(data)
        try:
            self.scan.feed(data)
        except TooDeep as err:
            raise read_error(self.source, f"{err} (read(max_depth=) reads deeper)") from None
        return data

    def position(self) -> int:
        return self._read
