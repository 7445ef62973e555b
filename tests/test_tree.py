"""convlab.tree: the one node schema, the count's bookkeeping, view matching, state, newest leaves.

The engine-level rules (PROTOCOL.md 1, 2, 5.1, 6) are tested through the Session in
tests/test_session_*.py; this file tests the tree's own functions, and with Hypothesis
that its O(1) answers equal walking the path.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convlab.store import MemoryStore
from convlab.tokens import content_chars
from convlab.tree import (
    MESSAGE_KEYS,
    RECORDED,
    Node,
    Tree,
    ViewError,
    children,
    input_tokens,
    message_of,
    new_node,
    newest_leaf,
)


def chain(*specs):
    """A tree from (id, parent, role, content[, usage]) tuples."""
    t = Tree()
    for spec in specs:
        nid, parent, role, content = spec[:4]
        t.add({"id": nid, "role": role, "content": content, **({"usage": spec[4]} if len(spec) > 4 else {})}, parent)
    return t


def test_new_node_is_the_one_schema_every_attribute_present():
    """docs/wire.md: a node has every recorded attribute; message keys only when set."""
    node = new_node({"role": "user", "content": "hi"}, id="u1", seq=1)
    assert tuple(k for k in node if k not in MESSAGE_KEYS) == RECORDED
    assert set(Node.__required_keys__) == set(RECORDED)
    assert set(Node.__optional_keys__) == set(MESSAGE_KEYS)
    assert node["kind"] == "message" and node["parent"] is None and "name" not in node
    tool = new_node({"role": "tool", "content": "x", "tool_call_id": "c1", "name": None}, id="t1")
    assert tool["tool_call_id"] == "c1" and "name" not in tool


def test_new_node_takes_recorded_attributes_over_the_fields_and_shares_values():
    content = [{"type": "text", "text": "a"}]
    node = new_node({"role": "user", "content": content, "seq": 9, "kind": None}, id="u1", seq=2, kind="summary")
    assert node["seq"] == 2 and node["kind"] == "summary"
    assert node["content"] is content  # trusted data is passed, not copied again


def test_message_of_is_a_fresh_message_without_engine_attributes():
    node = new_node({"role": "assistant", "content": [{"type": "text", "text": "x"}], "tool_calls": [{"id": "c"}],
                     "usage": {"input_tokens": 3}}, id="a1", seq=1)
    msg = message_of(node)
    assert msg == {"id": "a1", "role": "assistant", "content": [{"type": "text", "text": "x"}], "tool_calls": [{"id": "c"}]}
    msg["content"][0]["text"] = "changed"
    msg["tool_calls"].append({})
    assert node["content"][0]["text"] == "x" and len(node["tool_calls"]) == 1
    assert "id" not in message_of(node, with_id=False)


def test_add_refuses_a_known_id_or_an_unknown_parent_and_keeps_seq():
    t = chain(("u1", None, "user", "a"))
    with pytest.raises(ValueError, match="already recorded"):
        t.add({"id": "u1", "role": "user", "content": "b"}, None)
    with pytest.raises(ValueError, match="not recorded"):
        t.add({"id": "u2", "role": "user", "content": "b"}, "nope")
    t.add({"id": "u2", "role": "user", "content": "b"}, "u1")
    assert [t.node(n)["seq"] for n in ("u1", "u2")] == [1, 2] and len(t) == 2


def test_match_a_path_a_branch_and_refusals():
    t = chain(("u1", None, "user", "a"), ("a1", "u1", "assistant", "b"), ("u2", "a1", "user", "c"))
    assert t.match([{"id": "u1"}, {"id": "a1"}]) == (2, "a1")
    assert t.match([{"id": "u1"}, {"role": "user", "content": "edit"}]) == (1, "u1")
    assert t.match([{"id": "new", "role": "user", "content": "x"}]) == (0, None)
    with pytest.raises(ViewError, match=r"messages\[1\]: 'u2' is not a child of 'u1'"):
        t.match([{"id": "u1"}, {"id": "u2"}])
    with pytest.raises(ViewError, match="already recorded"):
        t.match([{"id": "u1"}, {"id": "x"}, {"id": "a1"}])
    with pytest.raises(ViewError, match="appears twice"):
        t.match([{"id": "x"}, {"id": "x"}])


def test_count_is_the_last_reported_input_plus_chars_since():
    """5.1: reported input of the last call on the path plus ceil(chars/4) written since (its reply included)."""
    t = chain(("u1", None, "user", "a" * 40), ("a1", "u1", "assistant", "b" * 8, {"input_tokens": 100, "cache_read_input_tokens": 20}),
              ("u2", "a1", "user", "c" * 5))
    assert t.count("u1") == 10
    assert t.count("a1") == 120 + 2
    assert t.count("u2") == 120 + math.ceil(13 / 4)
    assert Tree().count() == 0


def test_state_is_the_nearest_on_the_path_and_a_copy():
    t = chain(("u1", None, "user", "a"), ("a1", "u1", "assistant", "b"), ("a2", "u1", "assistant", "c"))
    t.set_state("a1", {"k": [1]})
    assert t.state_at("a1") == {"k": [1]} and t.state_at("a2") == {} and t.state_at("u1") == {}
    t.state_at("a1")["k"].append(2)
    assert t.state_at("a1") == {"k": [1]}


def test_children_and_newest_leaf_in_creation_order():
    t = chain(("u1", None, "user", "a"), ("a1", "u1", "assistant", "b"), ("u9", None, "user", "z"), ("a2", "u1", "assistant", "c"))
    assert t.children(None) == ["u1", "u9"] and t.children("u1") == ["a1", "a2"]
    assert children(t.graph, "u1") == ["a1", "a2"]
    assert newest_leaf(t.graph, "u1") == "a2" and newest_leaf(t.graph) == "a2" and newest_leaf(t.graph, "a1") == "a1"


def test_nodes_in_order_rebuild_the_same_tree():
    t = chain(("u1", None, "user", "a"), ("a1", "u1", "assistant", "b", {"input_tokens": 7}))
    t.head = "a1"
    again = Tree()
    for n in t.nodes_in_order():
        again.add(n, n["parent"])
    again.head = "a1"
    assert again.nodes_in_order() == t.nodes_in_order() and again.count() == t.count()


def test_input_tokens_sums_cached_input():
    assert input_tokens({"input_tokens": 1, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3}) == 6
    assert input_tokens({"output_tokens": 4}) is None and input_tokens(None) is None


# -- properties -----------------------------------------------------------
@st.composite
def trees(draw):
    """A random tree: each message under a random earlier one (or the root), some replies with usage."""
    t = Tree()
    ids: list[str] = []
    for i in range(draw(st.integers(1, 40))):
        parent = draw(st.sampled_from([None, *ids]))
        role = draw(st.sampled_from(["user", "assistant", "tool"]))
        content = draw(st.one_of(st.text(max_size=30), st.lists(st.just({"type": "text", "text": "xy"}), max_size=2),
                                 st.just([{"type": "image", "url": "u"}])))
        usage = {"input_tokens": draw(st.integers(0, 10_000))} if role == "assistant" and draw(st.booleans()) else None
        t.add({"id": f"n{i}", "role": role, "content": content, "usage": usage}, parent)
        ids.append(f"n{i}")
    return t, ids


@settings(max_examples=100)
@given(trees(), st.data())
def test_count_equals_walking_the_path(tree_ids, data):
    """The O(1) count equals PROTOCOL 5.1 computed by walking the path."""
    t, ids = tree_ids
    head = data.draw(st.sampled_from(ids))
    path = t.path(head)
    last = max((i for i, n in enumerate(path) if n["role"] == "assistant" and input_tokens(n["usage"]) is not None), default=None)
    if last is None:
        expected = math.ceil(sum(content_chars(n["content"]) for n in path) / 4)
    else:
        expected = input_tokens(path[last]["usage"]) + math.ceil(sum(content_chars(n["content"]) for n in path[last:]) / 4)
    assert t.count(head) == expected
    assert len(path) == len(t.path_ids(head))


@settings(max_examples=100)
@given(trees(), st.data())
def test_a_path_view_matches_whole_and_a_new_message_starts_a_branch(tree_ids, data):
    t, ids = tree_ids
    head = data.draw(st.sampled_from(ids))
    view = t.messages(head)
    assert t.match(view) == (len(view), head)
    cut = data.draw(st.integers(0, len(view)))
    edited = view[:cut] + [{"role": "user", "content": "new"}]  # an edit: the changed message, nothing after it
    assert t.match(edited) == (cut, view[cut - 1]["id"] if cut else None)


@settings(max_examples=100)
@given(trees(), st.data())
def test_newest_leaf_is_the_highest_seq_leaf_below(tree_ids, data):
    t, ids = tree_ids
    node = data.draw(st.sampled_from(ids))
    below = [n for n in ids if node in t.path_ids(n)]
    leaves = [n for n in below if not t.children(n)]
    assert newest_leaf(t.graph, node) == max(leaves, key=lambda n: t.node(n)["seq"])


def test_a_path_view_reads_the_head_without_walking_and_equals_the_messages():
    from convlab.tree import PathView

    t = chain(("u1", None, "user", "a"), ("a1", "u1", "assistant", "b"), ("u2", "a1", "user", "c"))
    view = PathView(t, "u2")
    assert view[-1] == {"id": "u2", "role": "user", "content": "c"} and view._ids is None  # no walk for the last message
    assert list(view) == t.messages("u2") and len(view) == 3 and view[0:2] == t.messages("a1")
    assert not PathView(t, None) and len(PathView(t, None)) == 0


# -- the path a model call reads: a read-only view -----------------------------
def _both_kinds(tmp_path_factory=None):
    """A Tree and a LazyTree (messages added in memory, as after loading) built alike."""
    from convlab.lazy import LazyTree

    return [Tree(), LazyTree("/nonexistent/never-read.jsonl")]


@st.composite
def grown(draw, kind):
    """A random tree of ``kind`` (0: Tree, 1: LazyTree) with worker state set on some
    nodes, some of them inner ones (after their children were added)."""
    t = _both_kinds()[kind]
    ids: list[str] = []
    for i in range(draw(st.integers(1, 30))):
        parent = draw(st.sampled_from([None, *ids]))
        role = draw(st.sampled_from(["user", "assistant", "tool"]))
        content = draw(st.one_of(st.text(max_size=20), st.lists(st.just({"type": "text", "text": "x y"}), max_size=2)))
        state = {"at": i} if draw(st.integers(0, 5)) == 0 else None
        t.add({"id": f"n{i}", "role": role, "content": content, "state": state}, parent)
        ids.append(f"n{i}")
        if draw(st.integers(0, 4)) == 0:
            t.set_state(draw(st.sampled_from(ids)), {"set": i})
    return t, ids


def _walked_state(t, head):
    for n in t.ancestors(head):
        if t.node(n)["state"] is not None:
            return t.node(n)["state"]
    return {}


@settings(max_examples=60)
@given(st.data())
def test_state_at_is_the_nearest_state_walking_up_on_both_trees(data):
    """state_at is O(1) from per-node bookkeeping, also after state set on an inner node:
    it equals walking up, on a Tree and on a LazyTree."""
    for kind in (0, 1):
        t, ids = data.draw(grown(kind))
        for head in ids:
            assert t.state_at(head) == _walked_state(t, head)


@settings(max_examples=60)
@given(trees(), st.data())
def test_a_path_view_reads_as_the_messages_however_it_is_read(tree_ids, data):
    from convlab.tokens import count_tokens
    from convlab.tree import PathView

    t, ids = tree_ids
    head = data.draw(st.sampled_from(ids))
    messages = t.messages(head)
    view = PathView(t, head)
    n = len(messages)
    assert len(view) == n and bool(view) and view.head == head
    i = data.draw(st.integers(-n, n - 1))
    assert PathView(t, head)[i] == messages[i]  # an index, from a fresh view: a walk up or the path once
    assert list(reversed(view)) == messages[::-1] and view[1:-1] == messages[1:-1]
    assert view == messages and messages == view and list(view) == messages
    assert view.tokens() == count_tokens(messages)
    assert PathView(t, head).tokens(count=lambda m: len(m["id"])) == sum(len(m["id"]) for m in messages)
    with pytest.raises(IndexError, match=f"path index {n} out of range"):
        view[n]


def test_the_running_exact_count_reads_only_what_it_has_not_counted(monkeypatch):
    from convlab.tokens import count_tokens

    t = chain(*[(f"n{i}", f"n{i - 1}" if i else None, "user", f"message number {i}") for i in range(200)])
    assert t.exact_count("n199") == count_tokens(t.messages("n199"))
    read = []
    original = MemoryStore.attrs
    monkeypatch.setattr(MemoryStore, "attrs", lambda self, n: read.append(n) or original(self, n))
    t.add({"id": "x", "role": "assistant", "content": "a reply"}, "n199")
    t.add({"id": "y", "role": "user", "content": "and a branch"}, "n150")
    x, y = t.exact_count("x"), t.exact_count("y")
    assert read == ["x", "y"]  # one new message each: the rest was counted before
    monkeypatch.undo()
    assert (x, y) == (count_tokens(t.messages("x")), count_tokens(t.messages("y")))


def test_a_path_view_is_read_only_and_the_reader_owns_what_it_reads():
    import copy
    import pickle

    from convlab.tree import MessageView, PathView

    t = chain(("u1", None, "user", [{"type": "text", "text": "a"}]), ("a1", "u1", "assistant", "b"), ("u2", "a1", "user", "c"))
    view = PathView(t, "u2")
    first = view[0]
    assert isinstance(first, MessageView) and view._ids is None  # first, last and len: no walk
    assert len(view) == 3 and view[-1]["content"] == "c" and view._ids is None
    with pytest.raises(TypeError):
        first["content"] = "changed"  # type: ignore[index]
    first["content"][0]["text"] = "mine"  # the reader's copy: the tree does not see it
    assert t.node("u1")["content"] == [{"type": "text", "text": "a"}] and view[0]["content"][0]["text"] == "a"
    with pytest.raises(AttributeError):
        view.append({"role": "user", "content": "x"})  # type: ignore[attr-defined]
    plain = copy.deepcopy(view)
    assert type(plain) is list and all(type(m) is dict for m in plain) and plain == t.messages("u2")
    assert pickle.loads(pickle.dumps(view)) == plain and type(pickle.loads(pickle.dumps(first))) is dict
    assert copy.copy(view) is view and type(copy.deepcopy(first)) is dict
    t.add({"id": "u3", "role": "user", "content": "later"}, "u2")  # the tree grows: the view does not change
    assert view == plain and len(view) == 3 and repr(view) == "PathView(3 messages, head='u2')"
    assert PathView(t, None) == [] and not PathView(t, None)


# -- the one walk and the lane rule (issue 21) over the flat maps (issue 26) ----------
@settings(max_examples=60)
@given(st.data())
def test_the_walk_and_the_lanes_read_the_graph_as_the_flat_maps_hold_it(data):
    """path_to, nodes_in_order, children, newest_leaves and lane_from over ``Tree.graph`` (built
    when first asked for, part way through, then kept up to date) say what the tree's own flat
    maps say, on a Tree and on a LazyTree; following a lane lands where a checkout does."""
    from convlab.tree import lane_child, lane_from, newest_leaves, nodes_in_order, path_to

    for kind in (0, 1):
        t, ids = data.draw(grown(kind))
        graph = t.graph  # built now, from the flat maps
        more = data.draw(st.integers(0, 5))
        for i in range(more):  # added after: the graph follows
            nid = f"m{i}"
            t.add({"id": nid, "role": "user", "content": "later"}, data.draw(st.sampled_from([None, *ids])))
            ids.append(nid)
        assert t.graph is graph and set(graph.nodes) == set(ids)
        assert [a["id"] for a in nodes_in_order(graph)] == [a["id"] for a in t.nodes_in_order()] == ids
        newest = newest_leaves(nodes_in_order(graph))
        for nid in [None, *ids]:
            assert children(graph, nid, t.roots) == t.children(nid)
        for nid in ids:
            assert path_to(graph.nodes, nid) == t.path_ids(nid)
            assert newest[nid] == graph.nodes[newest_leaf(graph, nid)]["seq"]
            lane = lane_from(graph, nid, newest)
            assert lane[-1] == newest_leaf(graph, nid) and path_to(graph.nodes, lane[-1])[-len(lane):] == lane
            kids = t.children(nid)
            assert lane_child(kids, newest, on_path=kids[-1] if kids else None) == (kids[-1] if kids else None)
