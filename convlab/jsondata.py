"""JSON data: what messages, state, events and decisions are made of.

Everything the engine records goes to the session log as JSON, so it must be
JSON data (dicts with string keys, lists, strings, numbers, booleans, None),
and it is checked as it comes in. Copying such data needs no memo and no
dispatch on arbitrary types, so ``copy`` is several times faster than
``copy.deepcopy``; a tuple becomes a list, as it would through the log.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["copy", "problem", "repaired", "write_whole", "MAX_DEPTH", "MAX_INT"]

def copy(value: Any) -> Any:
    """A copy of JSON data that shares nothing mutable with ``value``.

    >>> a = {"x": [1, {"y": "z"}], "t": (1, 2)}
    >>> b = copy(a); b["x"][1]["y"] = "changed"
    >>> a["x"][1]["y"], b["t"]
    ('z', [1, 2])
    """
    t = type(value)
    if t is dict:
        return {k: copy(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [copy(v) for v in value]
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if isinstance(value, dict):
        return {k: copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy(v) for v in value]
    return value


#: How deep JSON data may nest. Deeper data is refused where it comes in: JSON
#: readers (Python's own among them) recurse, and a few thousand levels crash them.
MAX_DEPTH = 100

#: The integers JSON carries between programs: 64-bit ones. A longer one is
#: refused (Python reads at most 4,300 digits; JavaScript rounds past 2**53).
MAX_INT = 2**63

_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> bool:
    """Whether ``text`` holds no surrogate (the one thing a str holds that UTF-8, and so JSON, cannot carry):
    told by encoding it, four times as fast as searching it for one (a read checks every text it keeps)."""
    try:
        str.encode(text, "utf-8")  # str's own: a subclass's encode says nothing of its code points
    except UnicodeEncodeError:
        return False
    return True


def problem(value: object, where: str) -> str | None:
    """Why ``value`` is not JSON data (naming the place), or None when it is.

    JSON data is dicts with string keys, lists, strings, numbers, booleans
    and None, nested at most ``MAX_DEPTH`` deep. Strings hold no lone
    surrogate (UTF-8 cannot carry one), floats are finite (``NaN`` and
    ``Infinity`` are not JSON), integers fit in 64 bits.

    >>> problem({"a": [1, {2, 3}]}, "state")
    'state.a[1]: a set is not JSON data'
    >>> problem({1: "x"}, "state") is None
    False
    >>> problem({"t": "\\ud800"}, "state")
    'state.t: a lone surrogate (U+D800) is not text JSON can carry'
    >>> problem([1.0, float("nan")], "metadata")
    'metadata[1]: nan is not a JSON number'
    """
    return _problem(value, where, 0)


def _problem(v: Any, at: str, depth: int) -> str | None:
    # recursive, but never deeper than MAX_DEPTH: deeper data is refused where it starts
    t = type(v)
    if t is str:
        return None if v.isascii() else _located(at, _text_problem(v))
    if t is dict or (t is not list and t is not tuple and isinstance(v, dict)):
        if depth >= MAX_DEPTH:
            return f"{at}: nested deeper than {MAX_DEPTH} levels"
        for k, x in v.items():
            if type(k) is not str and not isinstance(k, str):
                return f"{at}: key {k!r} is not a string"
            if not k.isascii():
                found = _text_problem(k)
                if found:
                    return f"{at}: key {k!a}: {found}"
            tx = type(x)
            if tx is str:
                if not x.isascii():
                    found = _text_problem(x)
                    if found:
                        return f"{at}.{k}: {found}"
            elif tx is bool or x is None or (tx is int and -MAX_INT <= x < MAX_INT):
                continue
            else:
                found = _problem(x, f"{at}.{k}", depth + 1)
                if found:
                    return found
        return None
    if t is list or t is tuple or isinstance(v, (list, tuple)):
        if depth >= MAX_DEPTH:
            return f"{at}: nested deeper than {MAX_DEPTH} levels"
        for i, x in enumerate(v):
            found = _problem(x, f"{at}[{i}]", depth + 1)
            if found:
                return found
        return None
    if t is bool or v is None:
        return None
    if isinstance(v, float):
        return None if math.isfinite(v) else f"{at}: {v!r} is not a JSON number"
    if isinstance(v, int):
        return None if -MAX_INT <= v < MAX_INT else f"{at}: an integer of {v.bit_length()} bits is not a JSON number (at most 64 bits)"
    if isinstance(v, str):
        return _located(at, _text_problem(v))
    return f"{at}: a {type(v).__name__} is not JSON data"


def _located(at: str, found: str | None) -> str | None:
    return None if found is None else f"{at}: {found}"


def _text_problem(text: str) -> str | None:
    if text.isascii() or _utf8(text):
        return None
    m = _SURROGATE.search(text)
    return None if m is None else f"a lone surrogate (U+{ord(m.group()):04X}) is not text JSON can carry"


def repaired(value: object) -> tuple[Any, int]:
    """``value`` made JSON data every reader can carry, and how many values that
    changed (0: ``value`` itself comes back). For what is read from outside files
    (Python's ``json`` reads ``NaN``, and ``\\udXXX`` escapes can hold what UTF-8
    cannot): a lone surrogate becomes U+FFFD, ``NaN`` and infinities become None,
    an integer past 64 bits becomes its digits as a string, and what nests past
    ``MAX_DEPTH`` becomes the string ``"[nested deeper than 100 levels]"``.

    >>> repaired({"content": "ok \\ud800", "n": [1, float("nan"), 2**70]})
    ({'content': 'ok \ufffd', 'n': [1, None, '1180591620717411303424']}, 3)
    """
    if _clean(value, 0):  # the common case, checked without building anything
        return value, 0
    return _repair(value)


def _repair(value: object) -> tuple[Any, int]:
    """``repaired``'s walk: every value looked at, containers built anew (``value`` itself back when nothing changed)."""
    count = 0

    def fix(v: Any, depth: int) -> Any:
        nonlocal count
        if isinstance(v, str):
            if v.isascii() or _utf8(v):
                return v
            count += 1
            return _SURROGATE.sub("\ufffd", v)
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            count += 1
            return None
        if isinstance(v, int):
            if -MAX_INT <= v < MAX_INT:
                return v
            count += 1
            return str(v) if v.bit_length() < 14000 else f"[an integer of {v.bit_length()} bits]"
        if isinstance(v, (dict, list, tuple)) and depth >= MAX_DEPTH:
            count += 1
            return f"[nested deeper than {MAX_DEPTH} levels]"
        if isinstance(v, dict):
            return {fix(k, depth) if isinstance(k, str) else k: fix(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [fix(x, depth + 1) for x in v]
        return v

    fixed = fix(value, 0)
    return (fixed, count) if count else (value, 0)


_FINE = (bool, type(None))


def _clean_keys(v: dict) -> bool:
    """Whether every key of ``v`` is text JSON carries: nearly always ASCII strings, told by one join."""
    try:
        if "".join(v).isascii():
            return True
    except TypeError:  # a key that is not a string
        return False
    return all(k.__class__ is str and (k.isascii() or _utf8(k)) for k in v)


def _clean(v: Any, depth: int) -> bool:
    """Whether ``repaired`` would change nothing in ``v``: JSON's own types walked without building
    anything (a read log is nearly always clean, and this is a third of the cost of the repair's walk);
    any other type says no, and the repair's walk decides."""
    t = type(v)
    if t is dict:
        if depth >= MAX_DEPTH or not _clean_keys(v):
            return False
        values = v.values()
    elif t is list:
        if depth >= MAX_DEPTH:
            return False
        values = v
    elif t is str:
        return v.isascii() or _utf8(v)
    elif t is int:
        return -MAX_INT <= v < MAX_INT
    elif t is float:
        return math.isfinite(v)
    else:
        return t in _FINE
    for x in values:  # the leaves here, inline (a call each would be most of the cost); containers one level down
        tx = type(x)
        if tx is str:
            if not (x.isascii() or _utf8(x)):
                return False
        elif tx is int:
            if not -MAX_INT <= x < MAX_INT:
                return False
        elif tx in _FINE:
            continue
        elif tx is float:
            if not math.isfinite(x):
                return False
        elif not _clean(x, depth + 1):
            return False
    return True


def write_whole(path: Path, value: object, default: Callable[[Any], Any] | None = None) -> None:
    """``value`` as JSON into ``path``, whole: written to a temporary name beside it and renamed into place, so a
    reader sees the old file or the whole new one, never half of one, and two writers leave one whole file.
    Raises what writing raises (``OSError``; ``TypeError`` or ``ValueError`` for a value JSON cannot write),
    leaving no temporary file behind. ``default`` is ``json.dumps``': what writes a value JSON does not."""
    text = json.dumps(value, ensure_ascii=False, default=default)  # dumps, not dump: json.dump encodes in Python, ten times slower
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:8]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
