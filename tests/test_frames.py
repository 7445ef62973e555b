"""convlab.frame and convlab.conversations_frame on real and synthetic conversations."""

from __future__ import annotations

import networkx as nx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.frames import CONVERSATION_COLUMNS, FRAME_COLUMNS
from convlab.tokens import content_chars, count_tokens
from convlab.tree import Tree

from realdata import log_files, real, require, stats  # noqa: F401  (real: the fixture)


def tree_conversation(edges, head, usage=None):
    """A Conversation from (id, parent, role) triples; content is the id."""
    t = Tree()
    for nid, parent, role in edges:
        t.add({"id": nid, "role": role, "content": f"text of {nid}", "usage": (usage or {}).get(nid)}, parent)
    t.head = head
    return convlab.Conversation(t, id="c", title="T", format="openai")


# u1 - a1 - u2 - a2          (leaf 0: a2)
#         \ u3 - a3          (leaf 1: a3)
#              \ a3b         (leaf 2: a3b, the head)
# s1 (a second root: a summary) - a4   (leaf 3: a4)
# Branches follow the lane rule: u1, a1, u3 are in the lane of the path, to a3b (2).
EDGES = [
    ("u1", None, "user"), ("a1", "u1", "assistant"), ("u2", "a1", "user"), ("a2", "u2", "assistant"),
    ("u3", "a1", "user"), ("a3", "u3", "assistant"), ("a3b", "u3", "assistant"),
    ("s1", None, "user"), ("a4", "s1", "assistant"),
]


def test_frame_columns_and_rows():
    c = tree_conversation(EDGES, "a3b")
    df = convlab.frame(c)
    assert list(df.columns) == list(FRAME_COLUMNS)
    assert df.id.tolist() == [e[0] for e in EDGES]  # seq order
    assert df.parent.tolist() == [e[1] for e in EDGES]
    assert df.depth.tolist() == [1, 2, 3, 4, 3, 4, 4, 1, 2]
    assert df[df.on_path].id.tolist() == ["u1", "a1", "u3", "a3b"]
    assert df.branch.tolist() == [2, 2, 0, 0, 2, 1, 2, 3, 3]
    assert df.turn.tolist() == [1, 1, 2, 2, 2, 2, 2, 1, 1]
    assert df.chars.tolist() == [len(f"text of {e[0]}") for e in EDGES]
    assert df.tokens.tolist() == [count_tokens(f"text of {e[0]}") for e in EDGES]
    assert df.input_tokens.isna().all() and df.output_tokens.isna().all()


def test_branch_definition_holds_on_a_real_tree_with_forks(real):
    """Branch k is a chain: the messages whose lane (the lane rule) ends at leaf k, leaves
    numbered depth-first, children oldest first; the active path is one branch."""
    from convlab.tree import lane_child, newest_leaves, nodes_in_order

    for name in ("chatgpt/chatgpt-tree.librechat.json", "librechat/librechat-tree.json"):
        [c] = convlab.read(real / name)
        df = convlab.frame(c)
        g = c.tree
        leaves = [n for n in nx.dfs_preorder_nodes(_rooted(g), "") if n and g.out_degree(n) == 0]
        assert sorted(df.branch.unique()) == list(range(len(leaves)))
        branch = dict(zip(df.id, df.branch))
        path = [m["id"] for m in c.path()]
        on = dict(zip(path, path[1:]))
        assert len({branch[n] for n in path}) == 1
        newest = newest_leaves(nodes_in_order(g))
        for k, leaf in enumerate(leaves):
            part = df[df.branch == k].sort_values("depth").id.tolist()
            assert part[-1] == leaf and [g.nodes[n]["parent"] for n in part[1:]] == part[:-1]  # a chain down to leaf k
            parent = g.nodes[part[0]]["parent"]
            if parent is not None:  # it forks off its parent's lane
                kids = sorted(g.successors(parent), key=lambda n: g.nodes[n]["seq"])
                assert lane_child(kids, newest, on.get(parent)) != part[0]


def test_usage_columns_sum_cached_input():
    usage = {"a1": {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 7},
             "a2": {"input_tokens": 30, "output_tokens": 4}}
    df = convlab.frame(tree_conversation(EDGES, "a2", usage)).set_index("id")
    assert df.loc["a1", "input_tokens"] == 1105 and df.loc["a1", "output_tokens"] == 7
    assert df.loc["a2", "input_tokens"] == 30 and df.loc["a2", "output_tokens"] == 4
    assert pd.isna(df.loc["u1", "input_tokens"])
    assert str(df.input_tokens.dtype) == "Int64"


def test_frame_of_an_empty_conversation():
    df = convlab.frame(convlab.Conversation(Tree(), id="empty"))
    assert list(df.columns) == list(FRAME_COLUMNS) and len(df) == 0


def test_frame_of_a_session():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    df = convlab.frame(s)
    assert df.id.tolist() == [n["id"] for n in s.path()]
    assert df.on_path.all() and df.turn_id.tolist() == ["t1", "t1"]
    reply = s.tree.nodes[s.head]
    assert df.input_tokens.iloc[-1] == reply["usage"]["input_tokens"]


@pytest.mark.realdata
@pytest.mark.parametrize("name", [f for f in log_files() if not f.startswith("claude_code/")])
def test_conversations_frame_equals_stats(name):
    real = require()
    want = stats()[name]
    convs = convlab.read(real / name, progress=False)
    df = convlab.conversations_frame(convs)
    assert list(df.columns) == list(CONVERSATION_COLUMNS)
    assert len(df) == want["conversations"]
    assert df.messages.sum() == want["message_nodes"]
    assert df.branch_points.sum() == want["branch_points"]
    assert df.longest_path.max() == want["max_path_msgs"]
    assert (df.head_depth == [len(c.path()) for c in convs]).all()
    assert df.id.tolist() == [c.id for c in convs] and set(df.format) == {convs[0].format}


@pytest.mark.realdata
def test_message_frames_agree_with_stats_and_the_path(real):
    name = "oasst/oasst1-en-trees-001-060.jsonl"
    convs = convlab.read(real / name, progress=False)
    frames = [convlab.frame(c) for c in convs]
    assert sum(len(f) for f in frames) == stats()[name]["message_nodes"]
    for c, f in zip(convs, frames):
        assert f[f.on_path].id.tolist() == [m["id"] for m in c.path()]
        assert f.chars.tolist() == [content_chars(c.tree.nodes[n]["content"]) for n in f.id]
    # exact tokens: STATS.json counted o200k tokens on the root-to-leaf path with the most characters
    paths = [f[f.id.isin([m["id"] for m in c.message_tree.path(leaf)])]
             for c, f in zip(convs, frames) for leaf in f.id if c.tree.out_degree(leaf) == 0]
    widest = max(paths, key=lambda p: p.chars.sum())
    assert widest.chars.sum() == stats()[name]["max_path_chars"]
    assert widest.tokens.sum() == stats()[name]["max_path_o200k_tokens"]


def test_the_wrong_kind_of_argument_says_what_to_pass():
    """Issue 15: "public functions given the wrong kind of argument say what they expected"."""
    t = Tree()
    t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    c = convlab.Conversation(t, id="c")
    with pytest.raises(TypeError, match=r"frame takes one Conversation or Session, got a list: convlab.read\(\) returns a list"):
        convlab.frame([c])
    with pytest.raises(TypeError, match="conversations_frame takes a list of Conversations"):
        convlab.conversations_frame(c)
    with pytest.raises(TypeError, match=r"tune takes Conversations \(what convlab.read\(path\) returns\), got a int"):
        convlab.tune([1], "")
    # a path is a log file or folder to sweep a file at a time (issue 39): one that is not there says so
    with pytest.raises(convlab.ReadError, match="chat.json: no such file or folder"):
        convlab.tune("chat.json", "")


def _rooted(g):
    """The graph under one root ("") above the top-level messages, edges in ``seq`` order, for
    a depth-first walk in the frame's leaf order (networkx walks successors as they were added)."""
    r = nx.DiGraph()
    r.add_node("")
    for n in sorted(g.nodes, key=lambda n: g.nodes[n]["seq"]):
        r.add_edge(g.nodes[n]["parent"] or "", n)
    return r


@st.composite
def forest(draw):
    """A random tree (several top-level messages, forks anywhere) and a head in it (or none)."""
    n = draw(st.integers(1, 40))
    parents = [None] + [draw(st.one_of(st.none(), st.integers(0, i - 1))) for i in range(1, n)]
    head = draw(st.one_of(st.none(), st.integers(0, n - 1)))
    return parents, head


@settings(max_examples=60, deadline=None)
@given(forest())
def test_the_frame_the_text_graph_and_the_tree_view_agree_on_lanes(spec):
    """A child is in its parent's branch in the frame exactly when render_tree draws it in
    its parent's lane (no fork) and the tree view's layout gives it its parent's lane."""
    from convlab.text import render_tree
    from convlab.widgets.treeview import layout

    parents, head = spec
    t = Tree()
    for i, p in enumerate(parents):
        t.add({"id": f"n{i}", "role": "user", "content": f"m{i}"}, None if p is None else f"n{p}")
    t.head = None if head is None else f"n{head}"
    df = convlab.frame(convlab.Conversation(t, id="c"))
    branch = dict(zip(df.id, df.branch))
    forks = {}
    for line in render_tree(t.graph, head=t.head, width=200).splitlines():
        mark = line.index("●") if "●" in line else line.index("○")
        forks[line[mark + 2:].split(" ", 1)[0]] = "├─" in line[:mark] or "┌─" in line[:mark]
    lanes = {n["id"]: n["lane"] for n in layout(t.nodes_in_order(), t.head, max_depth=10**6, budget=10**6)["nodes"]}
    assert set(forks) == set(lanes) == set(branch)
    for i, p in enumerate(parents):
        if p is not None:
            n, up = f"n{i}", f"n{p}"
            assert (branch[n] == branch[up]) == (not forks[n]) == (lanes[n] == lanes[up]), (n, up)
