"""convlab.Conversation: an imported tree with a head, read-only, with a Session's reading methods."""

from __future__ import annotations

import pytest

import convlab
from convlab.tree import Tree


def conv():
    t = Tree()
    for nid, parent, role in [("u1", None, "user"), ("a1", "u1", "assistant"), ("a2", "u1", "assistant")]:
        t.add({"id": nid, "role": role, "content": nid, "tool_calls": [{"id": "c"}] if nid == "a2" else None}, parent)
    t.head = "a1"
    return convlab.Conversation(t, id="c", title="T", format="openai", source="x.json")


def test_path_view_and_children_read_like_a_sessions():
    c = conv()
    assert [n["id"] for n in c.path()] == ["u1", "a1"] and [n["id"] for n in c.path("a2")] == ["u1", "a2"]
    assert c.view("a2") == [{"id": "u1", "role": "user", "content": "u1"},
                            {"id": "a2", "role": "assistant", "content": "a2", "tool_calls": [{"id": "c"}]}]
    assert c.children(None) == ["u1"] and c.children("u1") == ["a1", "a2"] and c.roots == ["u1"]
    with pytest.raises(KeyError, match="no node 'zz'"):
        c.path("zz")
    assert len(c) == 3 and repr(c) == "Conversation(id='c', title='T', format='openai', messages=3, head='a1')"


def test_paths_are_copies():
    c = conv()
    c.path()[0]["content"] = "changed"
    c.view("a2")[1]["tool_calls"].append({})
    assert c.tree.nodes["u1"]["content"] == "u1" and c.tree.nodes["a2"]["tool_calls"] == [{"id": "c"}]


def test_a_conversation_wraps_a_tree_whose_head_is_a_node():
    t = Tree()
    with pytest.raises(TypeError, match="wraps a convlab.tree.Tree"):
        convlab.Conversation(t.graph, id="c")
    t.head = "ghost"
    with pytest.raises(ValueError, match="head 'ghost' is not a node"):
        convlab.Conversation(t, id="c")
    assert convlab.Conversation(Tree(), id="empty").path() == []


def test_checkout_moves_the_head_in_memory_and_tokens_follow():
    c = conv()
    # the contents are the ids: "u1" + "a2" is 4 characters, one token by the estimate
    c.checkout("a2")
    assert c.head == "a2" and [n["id"] for n in c.path()] == ["u1", "a2"] and c.tokens() == 1
    with pytest.raises(KeyError, match="no node 'zz'"):
        c.checkout("zz")
    assert c.head == "a2"


def test_merge_and_summarize_on_a_conversation_say_the_way_through_a_session():
    """A log has no engine: the methods a Session has for them name the way, never a bare AttributeError."""
    c = conv()
    with pytest.raises(convlab.ExploreError, match=r"no engine to merge through\. convlab\.merge\(c, leaf\)"):
        c.merge("a2")
    with pytest.raises(convlab.ExploreError, match=r"convlab\.summarize\(c, start\) gives the proposal"):
        c.summarize("u1")
