"""JSON data: what messages, state, events and decisions are made of.

Everything the engine records goes to the session log as JSON, so it must be
JSON data (dicts with string keys, lists, strings, numbers, booleans, None),
and it is checked as it comes in. Copying such data needs no memo and no
dispatch on arbitrary types, so ``copy`` is several times faster than
``copy.deepcopy``; a tuple becomes a list, as it would through the log.
"""

from __future__ import annotations

from typing import Any

__all__ = ["copy", "problem"]

_LEAVES = (str, int, float, bool, type(None))


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


def problem(value: Any, where: str) -> str | None:
    """Why ``value`` is not JSON data (naming the place), or None when it is.

    >>> problem({"a": [1, {2, 3}]}, "state")
    'state.a[1]: a set is not JSON data'
    >>> problem({1: "x"}, "state") is None
    False
    """
    if isinstance(value, _LEAVES):
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{where}: key {k!r} is not a string"
            found = problem(v, f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = problem(v, f"{where}[{i}]")
            if found:
                return found
        return None
    return f"{where}: a {type(value).__name__} is not JSON data"
