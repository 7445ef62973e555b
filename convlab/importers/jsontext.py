"""JSON text as deep as a file may nest it, read without recursion, and how deep it nests.

Python's ``json`` parses nested values by recursion: a valid file nested a
thousand levels deep (a LibreChat export of a 500-message chain, an
OpenAssistant tree 900 replies deep) raises ``RecursionError``. ``decode``
reads such text with an explicit stack instead, strings through ``json``'s own
``scanstring`` (its C scanner), so it reads exactly what ``json.loads`` reads,
only slower; convlab uses it where ``json`` gives up.

How deep a file may nest is capped (``MAX_DEPTH``, ``read(max_depth=)``):
``decode`` refuses text deeper than the cap with ``TooDeep``, and
``DepthScanner`` finds how deep a stream of bytes nests as it is read, so the
streaming parser (whose memory grows with the square of the depth) never sees
text deeper than the cap. An integer longer than Python converts
(``sys.get_int_max_str_digits()``, 4,300 digits) is ``TooLong``.
"""

from __future__ import annotations

import json
import re
import sys
from itertools import accumulate
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's own decoder uses it; typeshed leaves it out
from typing import Any

__all__ = ["MAX_DEPTH", "SHALLOW", "decode", "loads", "nests_deeper", "TooDeep", "TooLong", "DepthScanner"]

#: How many levels of arrays and objects a file may nest (a chain of 5,000 messages a recursive export nests
#: two levels each fits; the streaming parser's memory at this depth is about 250 MB).
MAX_DEPTH = 10_000


#: JSON at most this deep is read by ``json`` itself, and any message in it can go anywhere in convlab (the
#: engine, the log, the widgets copy and write messages by recursion). In deeper JSON a message may nest at
#: most this deep (``nests_deeper``): a deep tree of shallow messages is read, a deep message is refused.
SHALLOW = 400


def nests_deeper(value: object, limit: int = SHALLOW) -> bool:
    """Whether a JSON value nests more than ``limit`` levels of arrays and objects (without recursion).

    >>> nests_deeper([[["x"]]], 3), nests_deeper([[["x"]]], 2)
    (False, True)
    """
    todo = [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (list, dict)):
            if d >= limit:
                return True
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, (list, dict)))
    return False


class TooDeep(ValueError):
    """JSON nested deeper than the cap ``limit``: ``depth``, the level reached, and where (in the message)."""

    def __init__(self, depth: int, limit: int, where: str) -> None:
        super().__init__(f"nests more than {limit:,} levels deep ({where})")
        self.depth, self.limit = depth, limit


class TooLong(ValueError):
    """An integer with more digits than Python converts."""

    def __init__(self, digits: int, position: int | None = None) -> None:
        where = f" at character {position:,}" if position is not None else ""
        super().__init__(f"holds an integer of {digits:,} digits{where} (convlab reads up to {sys.get_int_max_str_digits():,})")
        self.digits = digits


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_CONSTANTS = {"null": None, "true": True, "false": False, "NaN": float("nan"), "Infinity": float("inf"),
              "-Infinity": float("-inf")}


def _fail(what: str, s: str, i: int) -> json.JSONDecodeError:
    return json.JSONDecodeError(what, s, i)


def _skip(s: str, i: int) -> int:
    """The position after the white space at ``i`` (``_WS`` matches the empty string too, so it always matches)."""
    m = _WS.match(s, i)
    return m.end() if m is not None else i


def _key(s: str, i: int) -> tuple[str, int]:
    """An object's key and the position after its colon (and the white space after it)."""
    if not s.startswith('"', i):
        raise _fail("Expecting property name enclosed in double quotes", s, i)
    key, i = scanstring(s, i + 1)
    i = _skip(s, i)
    if not s.startswith(":", i):
        raise _fail("Expecting ':' delimiter", s, i)
    return key, _skip(s, i + 1)


def _scalar(s: str, i: int) -> tuple[Any, int]:
    """A string, number or constant at ``i``."""
    if s.startswith('"', i):
        return scanstring(s, i + 1)
    m = _NUMBER.match(s, i)
    if m is not None and m.end() > i:
        whole, frac, exp = m.groups()
        if frac or exp:
            return float(whole + (frac or "") + (exp or "")), m.end()
        if len(whole.lstrip("-")) > sys.get_int_max_str_digits():
            raise TooLong(len(whole.lstrip("-")), i)
        return int(whole), m.end()
    for name, value in _CONSTANTS.items():
        if s.startswith(name, i):
            return value, i + len(name)
    raise _fail("Expecting value", s, i)


def decode(s: str, i: int = 0, max_depth: int = MAX_DEPTH) -> tuple[Any, int]:
    """The JSON value that starts at ``i`` (after white space) and where it ends, as
    ``json.JSONDecoder().raw_decode`` gives them, at any depth up to ``max_depth``.

    >>> text = "[" * 5000 + "]" * 5000
    >>> value, end = decode(text)
    >>> end, len(value)
    (10000, 1)
    >>> decode('{"a": [1, 2.5, "x", null, NaN]} tail')
    ({'a': [1, 2.5, 'x', None, nan]}, 31)
    """
    stack: list[list[Any]] = []  # [container, its key waiting for a value]
    value: Any
    i = _skip(s, i)
    while True:
        c = s[i:i + 1]
        if c == "{" or c == "[":
            if len(stack) >= max_depth:
                raise TooDeep(len(stack) + 1, max_depth, f"at character {i:,}")
            i = _skip(s, i + 1)
            if s.startswith("}" if c == "{" else "]", i):
                value, i = ({} if c == "{" else []), i + 1
            elif c == "{":
                key, i = _key(s, i)
                stack.append([{}, key])
                continue
            else:
                stack.append([[], None])
                continue
        else:
            value, i = _scalar(s, i)
        while True:  # the value goes into the container it closes, and on up while they close
            if not stack:
                return value, i
            top = stack[-1]
            container = top[0]
            if top[1] is None:
                container.append(value)
            else:
                container[top[1]] = value
            i = _skip(s, i)
            c = s[i:i + 1]
            if c == ",":
                i = _skip(s, i + 1)
                if top[1] is not None:
                    top[1], i = _key(s, i)
                break
            if c == ("]" if top[1] is None else "}"):
                stack.pop()
                value, i = container, i + 1
                continue
            raise _fail("Expecting ',' delimiter", s, i)


def loads(s: str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` at any depth up to ``max_depth`` (``TooDeep`` beyond it).

    >>> loads(' {"a": 1} ')
    {'a': 1}
    """
    value, end = decode(s, 0, max_depth)
    end = _skip(s, end)
    if end != len(s):
        raise _fail("Extra data", s, end)
    return value


_KEEP = b'"[]{}'
_NOT_KEPT = bytes(b for b in range(256) if b not in _KEEP)
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class DepthScanner:
    """How deep a stream of JSON bytes nests, fed chunk by chunk as it is read; ``feed`` raises
    ``TooDeep`` at the first chunk that goes deeper than ``max_depth``.

    Brackets inside strings do not count, and a string may run over any number of chunks. Only
    bytes methods run per chunk (an escaped backslash and an escaped quote are dropped, every byte
    but quotes and brackets is dropped, two quotes side by side are dropped, the rest split at the
    quotes: what is between every other pair is inside a string), so it reads hundreds of megabytes
    a second, with no parse.

    >>> scan = DepthScanner(4)
    >>> scan.feed(b'[{"a": "[[[[", "b": [["x \\\\'); scan.deepest  # a string open at the end, a backslash pending
    4
    >>> scan.feed(b'"" ]]}]'); scan.depth
    0
    >>> scan.feed(b"[[[[[")
    Traceback (most recent call last):
    ...
    convlab.importers.jsontext.TooDeep: nests more than 4 levels deep (within its first 38 bytes)
    """

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        self.max_depth = max_depth
        self.depth = 0
        self.deepest = 0
        self.read = 0  # bytes fed so far
        self._in_string = False
        self._pending = b""  # an odd backslash at the end of the last chunk: it escapes the next byte

    def feed(self, chunk: bytes) -> None:
        data = self._pending + chunk
        run = len(data) - len(data.rstrip(b"\\"))
        self._pending = b"\\" if run % 2 else b""
        if run:
            data = data[:-run]
        # escapes that could hide a quote go first, left to right as JSON pairs them; then only quotes and brackets
        if b"\\\\" in data:  # a search is several times faster than a replace: most chunks hold none
            data = data.replace(b"\\\\", b"")
        if b'\\"' in data:
            data = data.replace(b'\\"', b"")
        kept = data.translate(None, _NOT_KEPT)
        # two quotes side by side (a string with no bracket in it, most of them) change nothing: dropped at C speed
        pieces = kept.replace(b'""', b"").split(b'"')
        outside = b"".join(pieces[1 if self._in_string else 0::2])
        if len(pieces) % 2 == 0:  # an odd number of quotes: in a string now if not before, and out if in
            self._in_string = not self._in_string
        if outside:
            levels = list(accumulate(map(_STEP.__getitem__, outside), initial=self.depth))
            deepest = max(levels)
            if deepest > self.max_depth:
                raise TooDeep(deepest, self.max_depth, f"within its first {self.read + len(chunk):,} bytes")
            self.deepest = max(self.deepest, deepest)
            self.depth = levels[-1]
        self.read += len(chunk)
