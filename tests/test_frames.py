"""convlab.frame and convlab.conversations_frame on real and synthetic conversations."""

from __future__ import annotations

import pandas as pd
import pytest

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


# u1 - a1 - u2 - a2          (branch 0)
#         \ u3 - a3          (branch 1)
#              \ a3b         (branch 2)
# s1 (a second root: a summary) - a4   (branch 3)
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
    assert df.branch.tolist() == [0, 0, 0, 0, 1, 1, 2, 3, 3]
    assert df.turn.tolist() == [1, 1, 2, 2, 2, 2, 2, 1, 1]
    assert df.chars.tolist() == [len(f"text of {e[0]}") for e in EDGES]
    assert df.tokens.tolist() == [count_tokens(f"text of {e[0]}") for e in EDGES]
    assert df.input_tokens.isna().all() and df.output_tokens.isna().all()


def test_branch_definition_holds_on_a_real_tree_with_forks(real):
    """Branch k is a chain: the part of leaf k's root path that branches 0..k-1 do not share."""
    for name in ("chatgpt/chatgpt-tree.librechat.json", "librechat/librechat-tree.json"):
        [c] = convlab.read(real / name)
        df = convlab.frame(c)
        g = c.tree
        leaves = [n for n in df.id if g.out_degree(n) == 0]
        assert sorted(df.branch.unique()) == list(range(len(leaves)))
        seen: set[str] = set()
        # leaves in branch order = depth-first order, children oldest first
        for k in range(len(leaves)):
            part = df[df.branch == k]
            leaf = part.id.iloc[part.depth.argmax()]
            assert g.out_degree(leaf) == 0
            root_path = [m["id"] for m in c.path(leaf)]
            assert set(part.id) == set(root_path) - seen
            assert part.sort_values("depth").id.tolist() == [n for n in root_path if n not in seen]
            seen |= set(root_path)


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
    with pytest.raises(TypeError, match=r"tune takes Conversations \(what convlab.read\(path\) returns\), got a str"):
        convlab.tune("chat.json", "")
