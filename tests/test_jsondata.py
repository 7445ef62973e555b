"""convlab.jsondata: what is recorded is JSON data, checked as it comes in and copied without sharing."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from convlab.jsondata import MAX_DEPTH, copy, problem

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_copy_equals_and_shares_nothing_mutable(value):
    out = copy(value)
    assert out == value and problem(value, "v") is None

    def containers(v):
        if isinstance(v, (dict, list)):
            yield id(v)
            for x in (v.values() if isinstance(v, dict) else v):
                yield from containers(x)

    assert not set(containers(out)) & set(containers(value))


def test_problem_names_the_place_of_what_is_not_json_data():
    assert problem({"a": [1, {"b": {1, 2}}]}, "state") == "state.a[1].b: a set is not JSON data"
    assert problem({"a": object()}, "x").startswith("x.a: a object is not JSON data")
    assert problem({1: "x"}, "state") == "state: key 1 is not a string"
    assert problem((1, 2), "t") is None and copy((1, [2])) == [1, [2]]


# what JSON cannot carry, drawn: a lone surrogate (in a value or a key), a float
# that is not finite, an integer past 64 bits
hostile_leaves = (
    st.characters(categories=["Cs"]).map(lambda c: f"a{c}b")
    | st.sampled_from([math.nan, math.inf, -math.inf])
    | st.integers(min_value=2**63, max_value=10**5000) | st.integers(max_value=-(2**63) - 1, min_value=-(10**400))
)


@given(json_values, hostile_leaves, st.integers(0, 3), st.booleans())
def test_problem_finds_what_json_cannot_carry_wherever_it_hides(value, bad, depth, as_key):
    hidden: object = {bad: 1} if as_key and isinstance(bad, str) else bad
    for _ in range(depth):
        hidden = [value, {"k": hidden}]
    found = problem({"v": hidden}, "state")
    assert found is not None and found.startswith("state.v")
    assert ("surrogate" in found) if isinstance(bad, str) else ("JSON number" in found)
    # and what it names is what json itself cannot write strictly
    try:
        json.dumps(hidden, ensure_ascii=False, allow_nan=False).encode("utf-8")
        wrote = not (isinstance(bad, int) and not isinstance(bad, bool))
    except (ValueError, UnicodeEncodeError):
        wrote = False
    assert not wrote


def test_problem_refuses_non_finite_floats_big_integers_and_surrogates():
    assert problem(math.inf, "f") == "f: inf is not a JSON number"
    assert problem({"x": -math.inf}, "m") == "m.x: -inf is not a JSON number"
    assert problem([math.nan], "m") == "m[0]: nan is not a JSON number"
    assert problem(2**63 - 1, "n") is None and problem(-(2**63), "n") is None
    assert problem(10**5000, "n").startswith("n: an integer of 16610 bits")
    assert problem({"\udc00": 1}, "s") == "s: key '\\udc00': a lone surrogate (U+DC00) is not text JSON can carry"
    assert problem("\U0001F600 fine", "s") is None  # a real astral character is not a surrogate


def test_problem_refuses_deep_nesting_without_recursing():
    deep: object = "x"
    for _ in range(100_000):
        deep = [deep]
    assert problem(deep, "state") == "state" + "[0]" * MAX_DEPTH + ": nested deeper than 100 levels"
    ok: object = "x"
    for _ in range(MAX_DEPTH):
        ok = {"a": ok}
    assert problem(ok, "s") is None and copy(ok) == ok
