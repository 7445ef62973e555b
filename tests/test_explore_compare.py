"""convlab.compare: two branches from their common ancestor, aligned, with what differs and what each costs."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

import convlab
from convlab.explore.branches import COMPARE_COLUMNS, common_ancestor, word_diff
from convlab.tree import Tree

from realdata import real  # noqa: F401  (the fixture)


def session_with_an_edit_and_a_regeneration():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u2", "role": "user", "content": "weather in NYC?"}})
    # edit u2: a view up to e1, then the changed message
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [
        {"id": "u1", "role": "user", "content": "hi"}, {"id": "e1", "role": "assistant", "content": "echo: hi"},
        {"role": "user", "content": "weather in LA?"}]})
    # regenerate the last reply: the view without it
    path = s.view(s.head)[:-1]
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": path})
    return s


def test_an_edit_reads_as_its_edit_and_the_rows_are_the_two_paths_below_the_ancestor():
    s = session_with_an_edit_and_a_regeneration()
    df = convlab.compare(s, "e2", "e4")
    assert tuple(df.columns) == COMPARE_COLUMNS
    assert df.attrs["ancestor"] == "e1"
    assert df["a_id"].tolist() == ["u2", "e2"] and df["b_id"].tolist() == ["e3", "e4"]
    assert df["change"].tolist() == ["edited", "differs"]
    assert df["diff"].iloc[0] == "weather in [-NYC?-] {+LA?+}"
    assert df.attrs["a"]["messages"] == 2 and df.attrs["a"]["count"] == s.message_tree.count("e2")


def test_a_regenerated_reply_sits_beside_the_original():
    s = session_with_an_edit_and_a_regeneration()
    df = convlab.compare(s, "e4", "e5")
    assert df.attrs["ancestor"] == "e3" and df["change"].tolist() == ["regenerated"]
    assert df["a_role"].tolist() == df["b_role"].tolist() == ["assistant"]


def test_a_leaf_against_its_own_ancestor_has_only_one_side():
    s = session_with_an_edit_and_a_regeneration()
    df = convlab.compare(s, "u1", "e2")
    assert df["change"].tolist() == ["only b"] * 3 and df["a_id"].isna().all()
    assert df.attrs["a"]["messages"] == 0 and df.attrs["b"]["messages"] == 3
    assert "u1 and e2 diverge after u1" in df.attrs["summary"]
    assert convlab.compare(s, "e2", "e2").empty


def test_word_diff_marks_what_went_and_what_came():
    assert word_diff("a b c", "a c d") == "a [-b-] c {+d+}"
    assert word_diff("a\n b", "a b") == "a b"
    assert word_diff("", "new") == "{+new+}"


@pytest.mark.parametrize(("a", "b", "says"), [("nope", "e2", "a: 'nope' is no message"), ("e2", 7, "b: a message id"),])
def test_ids_the_tree_does_not_hold_are_explore_errors(a, b, says):
    with pytest.raises(convlab.ExploreError, match=says):
        convlab.compare(session_with_an_edit_and_a_regeneration(), a, b)


@st.composite
def trees(draw):
    n = draw(st.integers(1, 25))
    t = Tree()
    for i in range(n):
        parent = None if i == 0 or draw(st.integers(0, 12)) == 0 else f"n{draw(st.integers(0, i - 1))}"
        t.add({"id": f"n{i}", "role": draw(st.sampled_from(["user", "assistant"])), "content": f"text {i % 3}"}, parent)
    return t, f"n{draw(st.integers(0, n - 1))}", f"n{draw(st.integers(0, n - 1))}"


@given(trees())
def test_on_any_tree_the_rows_rebuild_both_paths(case):
    t, a, b = case
    df = convlab.compare(t, a, b)
    ancestor = df.attrs["ancestor"]
    prefix = [] if ancestor is None else t.path_ids(ancestor)
    assert prefix + [i for i in df["a_id"] if i is not None] == t.path_ids(a)
    assert prefix + [i for i in df["b_id"] if i is not None] == t.path_ids(b)
    assert common_ancestor(t, b, a)[0] == ancestor
    assert df.attrs["a"]["tokens"] == int(df["a_tokens"].sum()) and df.attrs["b"]["count"] == t.count(b)


@pytest.mark.realdata
def test_the_real_chatgpt_export_with_an_edit_and_a_regeneration(real):  # noqa: F811
    c = convlab.read(real / "chatgpt" / "chatgpt-tree.librechat.json")[0]
    leaves = [n for n in c.tree if c.tree.out_degree(n) == 0]
    assert len(leaves) == 3
    frames = {(a, b): convlab.compare(c, a, b) for a in leaves for b in leaves if a < b}
    changes = {df["change"].iloc[0] for df in frames.values()}
    assert changes == {"edited", "regenerated"}
    for df in frames.values():
        assert df.attrs["summary"].startswith(c.id + ": ")


@pytest.mark.realdata
def test_a_real_openassistant_tree_compares_its_sibling_replies(real):  # noqa: F811
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        c = max(convlab.read(real / "oasst"), key=len)
    forks = [n for n in c.tree if c.tree.out_degree(n) > 1]
    kids = sorted(c.tree.successors(forks[0]), key=lambda k: c.tree.nodes[k]["seq"])
    df = convlab.compare(c, kids[0], kids[1])
    assert df.attrs["ancestor"] == forks[0] and len(df) == 1
    assert df["change"].iloc[0] in ("edited", "regenerated") and df["diff"].iloc[0]


def test_a_branch_that_starts_a_new_history_is_replaced_not_edited():
    s = convlab.Session(worker="manual")
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "one"}})
    s.decide([{"type": "llm.call"}])
    s.decide([])
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u2", "role": "user", "content": "two"}})
    s.decide([{"type": "context.replace", "summary": "we said one", "messages": [{"id": "u2", "role": "user", "content": "two"}]},
              {"type": "llm.call"}])
    s.decide([])
    df = convlab.compare(s, "e1", s.head)
    assert df.attrs["ancestor"] is None and df["change"].iloc[0] == "replaced"
