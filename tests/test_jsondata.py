"""convlab.jsondata: what is recorded is JSON data, checked as it comes in and copied without sharing."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from convlab.jsondata import MAX_DEPTH, _clean, _repair, copy, problem, repaired

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


def test_repaired_makes_what_json_cannot_carry_carryable_and_counts_it():
    deep: object = "x"
    for _ in range(150):
        deep = [deep]
    value = {"text": "ok \udc80 end", "n": [math.nan, -math.inf, 2**70, 7], "\ud800k": deep, "fine": "é😀"}
    fixed, count = repaired(value)
    assert problem(fixed, "v") is None and count == 6
    assert fixed["text"] == "ok \ufffd end" and fixed["n"] == [None, None, str(2**70), 7] and fixed["fine"] == "é😀"
    assert "\ufffdk" in fixed and "nested deeper than 100 levels" in json.dumps(fixed["\ufffdk"])
    clean = {"a": [1, 2.5, "b"]}
    assert repaired(clean) == (clean, 0) and repaired(clean)[0] is clean


def test_a_file_that_holds_what_json_cannot_carry_is_read_repaired_and_says_so(tmp_path):
    import warnings

    import convlab

    def row(kind, uuid, parent, second, message):
        return ('{"type": "%s", "uuid": "%s", "parentUuid": %s, "sessionId": "s", "timestamp": "2025-01-01T00:00:0%dZ", '
                '"message": %s}' % (kind, uuid, "null" if parent is None else f'"{parent}"', second, message))

    lines = [
        row("user", "u1", None, 0, '{"role": "user", "content": "lone \\udc00 here"}'),
        row("assistant", "a1", "u1", 1, '{"role": "assistant", "id": "m1", "content": [{"type": "tool_use", "id": "t1", '
            '"name": "run", "input": {"n": 123456789012345678901234567890, "x": NaN}}], '
            '"usage": {"input_tokens": 10, "output_tokens": 1}}'),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [c] = convlab.read(path)
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, convlab.ReadWarning))
    assert "JSON cannot carry" in said, said
    first, reply = c.path()
    assert first["content"] == "lone \ufffd here"
    assert reply["content"][0]["input"] == {"n": "123456789012345678901234567890", "x": None}
    assert all(problem(n, "node") is None for _, n in c.tree.nodes(data=True))
    r = convlab.replay(c)  # the engine takes every message of it
    assert r.stale == [] and r.session.path()[0]["content"] == "lone \ufffd here"


@given(json_values, st.one_of(st.none(), hostile_leaves), st.integers(0, 3), st.booleans(), st.integers(0, 2))
def test_repaired_skips_the_walk_only_when_the_walk_would_change_nothing(value, bad, depth, as_key, deep):
    """``repaired`` looks first without building anything (``_clean``, what makes reading a clean log fast);
    it says clean exactly when the repair's walk would change nothing, wherever what JSON cannot carry hides
    (a lone surrogate in a value or a key, NaN, an integer past 64 bits, nesting past the limit), and a
    clean value comes back itself."""
    hidden: object = value if bad is None else ({bad: 1} if as_key and isinstance(bad, str) else bad)
    for _ in range(depth):
        hidden = [value, {"k": hidden}]
    for _ in range(deep * (MAX_DEPTH // 2) + (deep == 2)):  # 0, 50 or 101 more levels
        hidden = {"n": hidden}
    whole = {"v": hidden, "w": value}
    walked = _repair(whole)
    assert _clean(whole, 0) == (walked[1] == 0)
    fixed, count = repaired(whole)
    assert count == walked[1] and fixed == walked[0] if count else fixed is whole
    assert problem(fixed, "v") is None


def test_repaired_takes_what_is_not_json_from_python_as_the_walk_does():
    """Tuples and subclasses (what a Python caller may hand in) take the walk: the same answer as before."""
    class Text(str):
        pass

    assert repaired((1, "a")) == ((1, "a"), 0) and repaired({"t": Text("x")})[1] == 0
    assert repaired(("\ud800",)) == (["\ufffd"], 1)


@given(st.text(alphabet=st.characters(codec=None, categories=["Cs", "Lu", "Ll", "So", "Nd", "Zs"]), max_size=40)
       | st.text(max_size=40))
def test_a_text_is_carried_exactly_when_it_holds_no_surrogate(text):
    """``_utf8``, the fast check every read makes of every text it keeps: true exactly when no code point of
    ``text`` is a surrogate (U+D800 to U+DFFF), astral characters and mixed text alike."""
    from convlab.jsondata import _utf8

    assert _utf8(text) == (not any(0xD800 <= ord(c) <= 0xDFFF for c in text))
    assert (repaired(text)[1] == 0) == _utf8(text)
