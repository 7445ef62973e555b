"""convlab.importers.jsontext: JSON at any depth without recursion, and a stream's depth as it is read (issue 20 part 3)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convlab.importers.jsontext import DepthScanner, TooDeep, TooLong, decode, loads

#: Text full of what trips a scanner: quotes, backslashes, brackets, escapes, non-ASCII, lone surrogates.
TRICKY = st.text(st.sampled_from('"\\[]{}abn/\u00e9\u2028\U0001f600\ud800 \n\t'), max_size=8)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats(allow_nan=True) | TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
    max_leaves=30,
)


def depth(value) -> int:
    """The nesting depth of a JSON value (a scalar 0, ``[]`` 1), without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d + 1)
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def same(a, b) -> bool:
    return json.dumps(a) == json.dumps(b) or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


@given(VALUES, st.booleans(), st.sampled_from([None, 0, 2]))
def test_decode_reads_what_json_reads(value, ascii, indent):
    text = json.dumps(value, ensure_ascii=ascii, indent=indent)
    assert same(loads(text), json.loads(text))
    assert decode(text + "  rest")[1] == len(text)


@given(VALUES, st.booleans(), st.lists(st.integers(1, 40), max_size=20))
def test_the_scanner_finds_the_depth_however_the_bytes_are_cut(value, ascii, cuts):
    raw = json.dumps(value, ensure_ascii=ascii).encode("utf-8", "surrogatepass")
    scan = DepthScanner(10_000)
    i = 0
    for n in cuts + [len(raw)]:
        scan.feed(raw[i:i + n])
        i += n
    assert (scan.deepest, scan.depth) == (depth(value), 0)
    shallow = DepthScanner(max(depth(value) - 1, 0))
    if depth(value):
        with pytest.raises(TooDeep):
            shallow.feed(raw)


def test_deep_text_reads_and_too_deep_text_is_refused():
    text = '{"a": ' * 20_000 + "1" + "}" * 20_000
    value = loads(text, 30_000)
    assert depth(value) == 20_000
    with pytest.raises(TooDeep, match=r"nests more than 10,000 levels deep \(at character 60,000\)"):
        loads(text, 10_000)
    with pytest.raises(json.JSONDecodeError, match="Expecting ',' delimiter"):
        loads("[" * 3000 + "1 2" + "]" * 3000)


def test_an_integer_past_what_python_converts_is_too_long():
    with pytest.raises(TooLong, match="holds an integer of 5,000 digits at character 1 "):
        loads("[" + "9" * 5000 + "]")
    assert loads("[" + "9" * 4000 + "]")[0] == int("9" * 4000)
