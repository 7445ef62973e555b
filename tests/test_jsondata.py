"""convlab.jsondata: what is recorded is JSON data, checked as it comes in and copied without sharing."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from convlab.jsondata import copy, problem

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
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
    assert problem(math.inf, "f") is None  # a float; json writes it as Infinity, as Python reads it back
