"""JSON data: what messages, state, events and decisions are made of.

Everything the engine records goes to the session log as JSON, so it must be
JSON data (dicts with string keys, lists, strings, numbers, booleans, None),
and it is checked as it comes in. Copying such data needs no memo and no
dispatch on arbitrary types, so ``copy`` is several times faster than
``copy.deepcopy``; a tuple becomes a list, as it would through the log.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["copy", "problem", "MAX_DEPTH", "MAX_INT"]

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


def problem(value: Any, where: str) -> str | None:
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
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        v, at, depth = stack.pop()
        t = type(v)
        if t is str:
            found = _text_problem(v)
            if found:
                return f"{at}: {found}"
        elif t is dict or t is list or t is tuple or isinstance(v, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                return f"{at}: nested deeper than {MAX_DEPTH} levels"
            if isinstance(v, dict):
                items = []
                for k, x in v.items():
                    if not isinstance(k, str):
                        return f"{at}: key {k!r} is not a string"
                    found = _text_problem(k)
                    if found:
                        return f"{at}: key {ascii(k)}: {found}"
                    items.append((x, f"{at}.{k}", depth + 1))
            else:
                items = [(x, f"{at}[{i}]", depth + 1) for i, x in enumerate(v)]
            stack.extend(reversed(items))  # depth first, in order: the first problem is named
        elif t is bool or v is None:
            continue
        elif isinstance(v, float):
            if not math.isfinite(v):
                return f"{at}: {v!r} is not a JSON number"
        elif isinstance(v, int):
            if not -MAX_INT <= v < MAX_INT:
                return f"{at}: an integer of {v.bit_length()} bits is not a JSON number (at most 64 bits)"
        elif isinstance(v, str):
            found = _text_problem(v)
            if found:
                return f"{at}: {found}"
        else:
            return f"{at}: a {type(v).__name__} is not JSON data"
    return None


def _text_problem(text: str) -> str | None:
    if text.isascii():
        return None
    m = _SURROGATE.search(text)
    return None if m is None else f"a lone surrogate (U+{ord(m.group()):04X}) is not text JSON can carry"
