"""convlab.store: where a tree keeps its nodes (the NodeStore protocol and MemoryStore), issue 36's split of tree.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from convlab.store import MemoryStore, NodeStore, Record
from convlab.tree import Tree, new_node


@st.composite
def shapes(draw):
    """A tree's parent links in creation order: each node's parent is an earlier node or None."""
    n = draw(st.integers(1, 30))
    return [None] + [draw(st.one_of(st.none(), st.integers(0, i - 1))) for i in range(1, n)]


def filled(parents: list[int | None], built_first: bool) -> MemoryStore:
    s = MemoryStore()
    if built_first:
        s.graph()  # the graph made before any node: put keeps it up to date
    for i, p in enumerate(parents):
        parent = None if p is None else f"n{p}"
        s.put(new_node({"role": "user", "content": f"m{i}"}, id=f"n{i}", seq=i + 1, parent=parent),
              Record(1 if p is None else 0, f"n{i}", i, i, None, None))
    return s


@given(shapes(), st.booleans())
def test_a_store_keeps_what_it_was_given_and_its_graph_agrees(parents, built_first):
    s = filled(parents, built_first)
    ids = [f"n{i}" for i in range(len(parents))]
    assert all(i in s for i in ids) and "nope" not in s
    assert [s.parent(i) for i in ids] == [None if p is None else f"n{p}" for p in parents]
    for k, i in enumerate(ids):  # children oldest first, exactly the nodes that named it
        assert s.children(i) == [f"n{j}" for j, p in enumerate(parents) if p == k]
        assert s.record(i) == Record(1 if parents[k] is None else 0, i, k, k, None, None)
    g = s.graph()
    assert list(g.nodes) == ids and sorted(g.edges) == sorted((f"n{p}", f"n{j}") for j, p in enumerate(parents) if p is not None)
    assert all(g.nodes[i] is s.attrs(i) for i in ids)  # one dict per node, the graph's
    assert [a["id"] for a in s.nodes_in_order()] == ids and s.nodes_in_order()[0] is not s.attrs("n0")  # copies


def test_state_and_the_nearest_state_are_kept_without_loading_a_node():
    s = filled([None, 0, 1], built_first=False)
    assert s.state("n1") is None and s.near("n2") is None
    s.set_state("n1", {"k": 1})
    s.set_near("n2", "n1")
    assert s.state("n1") == {"k": 1} and s.attrs("n1")["state"] == {"k": 1} and s.near("n2") == "n1"


def test_a_tree_over_a_store_is_the_protocols_one_user():
    store: NodeStore = MemoryStore()
    t = Tree(store)
    _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
    assert t.depth("a1") == 2 and t.root_of("a1") == "u1" and list(t.ancestors("a1")) == ["a1", "u1"]
    assert store.parent("a1") == "u1" and store.children("u1") == ["a1"] and store.record("a1").depth == 2
