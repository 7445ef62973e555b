"""Text renderings (convlab.text): the tree as a git graph, the active path, readable labels for parts
that are not text, and no line wider than asked, whatever the data."""

from __future__ import annotations

import re

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.text import brief, cells, fit, preview, render_events, render_path, render_summary, render_tree
from convlab.tree import Tree

from realdata import log_files, require


def tree_of(rows, head=None):
    """A Tree from (id, parent, role, content) rows, parents first."""
    t = Tree()
    for mid, parent, role, content in rows:
        t.add({"id": mid, "role": role, "content": content}, parent)
    t.head = head
    return t


FORKED = tree_of(
    [
        ("u1", None, "user", "weather in NYC?"),
        ("a1", "u1", "assistant", "Sunny."),
        ("u2", "a1", "user", "and tomorrow?"),
        ("a2", "u2", "assistant", "Rain."),
        ("u3", "a1", "user", "and in Boston?"),
        ("e1", "u1", "user", "weather in LA instead"),
        ("e2", "e1", "assistant", "Warm."),
        ("e3", "e1", "assistant", "Hot."),
    ],
    head="e3",
)


def test_the_tree_reads_like_git_log_graph():
    """Issue 15: indent only where the tree branches; the active path is one straight column (●), side
    branches fork one column to the right (├─) just above the child that continues, their own forks one
    further (the tree view's layout in text)."""
    assert render_tree(FORKED.graph, "e3", width=60) == """\
● u1 user: weather in NYC?
├─○ a1 assistant: Sunny.
│ ├─○ u2 user: and tomorrow?
│ │ ○ a2 assistant: Rain.
│ ○ u3 user: and in Boston?
● e1 user: weather in LA instead
├─○ e2 assistant: Warm.
● e3 assistant: Hot.  ◀ head"""


def test_the_path_alone_says_where_branches_leave_it():
    """Issue 15: a compact mode prints only the active path; it names how many branches leave each message."""
    assert render_path(FORKED.graph, "e3", width=60) == """\
● u1 user (+1 branch): weather in NYC?
● e1 user (+1 branch): weather in LA instead
● e3 assistant: Hot.  ◀ head"""
    assert render_summary(FORKED.graph, "e3", width=80) == "head e3 (3 on the active path); 8 messages, 3 branch points, 0 summaries"


def test_a_long_linear_session_stays_in_one_column():
    """Issue 15: a long session does not indent one step per message (the old rendering ran to lines of
    900+ characters and lost the text past ~15 messages)."""
    rows = [(f"m{i}", f"m{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant", f"message number {i}") for i in range(600)]
    text = render_tree(tree_of(rows).graph, "m599", width=40)
    lines = text.splitlines()
    assert len(lines) == 600 and all(line.startswith(f"● m{i} ") for i, line in enumerate(lines))
    assert lines[-1] == "● m599 assistant: message numbe…  ◀ head" and len(lines[-1]) == 40


def test_other_roots_fork_before_the_path_that_continues():
    """A compaction makes a new root: the old history is a side branch of the root (┌─ first), the summary
    path is the column; replaces and copies are spelled out with short ids."""
    t = tree_of([("u1", None, "user", "old"), ("a1", "u1", "assistant", "reply")])
    t.add({"id": "s1", "role": "user", "content": "the summary", "kind": "summary", "replaces": "a1"}, None)
    t.add({"id": "c1", "role": "user", "content": "old", "copied_from": "u1"}, "s1")
    t.head = "c1"
    assert render_tree(t.graph, "c1", width=60) == """\
┌─○ u1 user: old
│ ○ a1 assistant: reply
● s1 user [summary] (replaces a1): the summary
● c1 user (copy of u1): old  ◀ head"""
    assert render_path(t.graph, "c1", width=72).splitlines()[0] == "● s1 user [summary] (replaces a1) (+1 other root): the summary"


def test_ids_are_cut_like_git_hashes_to_a_unique_prefix():
    """Long ids (uuids) print as their shortest unique prefix of at least 8 characters, everywhere."""
    a, b = "0123456789-aaaa", "0123456789-bbbb"
    t = tree_of([(a, None, "user", "x"), (b, a, "assistant", "y")], head=b)
    assert render_tree(t.graph, b, width=40) == "● 0123456789-a user: x\n● 0123456789-b assistant: y  ◀ head"
    t = tree_of([("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", None, "user", "x")], head="f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
    assert render_tree(t.graph, t.head, width=40) == "● f81d4fae user: x  ◀ head"


def test_parts_that_are_not_text_print_as_short_labels():
    """Issue 15: thinking, tool use, tool results, images print as short readable labels, not raw JSON."""
    content = [
        {"type": "text", "text": "\n\n"},
        {"type": "thinking", "thinking": "t" * 1234, "signature": "sig"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la", "description": "list files"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/home/someone/projects/a/very/deep/tree/of/folders/lib/module.ex"}},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r" * 3400},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "boom"}], "is_error": True},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" * 1000}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "document", "title": "spec.pdf"},
        {"type": "redacted_thinking", "data": "xxx"},
        {"content_type": "user_editable_context", "user_profile": ""},
    ]
    assert brief(content) == (
        "[thinking 1.2k chars] Let me look. [tool_use Bash: ls -la] "
        "[tool_use Read: …jects/a/very/deep/tree/of/folders/lib/module.ex] [tool_result 3.4k chars] "
        "[tool_result error 4 chars] [image] [image] [file spec.pdf] [thinking redacted] [user_editable_context]"
    )
    assert "{" not in brief(content)


def test_tool_messages_and_tool_calls_name_the_tool():
    """A tool message says it is a result, of which tool (found by its call id), and how long; an
    OpenAI-style assistant message with tool_calls lists them."""
    t = Tree()
    t.add({"id": "u1", "role": "user", "content": "files?"}, None)
    t.add({"id": "a1", "role": "assistant", "content": "",
           "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "ls"}'}}]}, "u1")
    t.add({"id": "r1", "role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_1"}, "a1")
    t.head = "r1"
    assert render_tree(t.graph, "r1", width=80).splitlines()[1:] == [
        "● a1 assistant: [tool_call shell: ls]",
        "● r1 tool: [tool_result shell 11 chars] a.txt b.txt  ◀ head",
    ]
    # issue 20: a result whose is_error is true says so ("[tool_result Bash error 89 chars]")
    t.add({"id": "r2", "role": "tool", "content": "Exit code 1", "tool_call_id": "call_1", "metadata": {"is_error": True}}, "a1")
    assert render_tree(t.graph, "r2", width=80).splitlines()[-1] == "● r2 tool: [tool_result shell error 11 chars] Exit code 1  ◀ head"


def test_text_is_one_clean_line():
    """Newlines fold, terminal escapes are dropped and unprintable characters (a lone surrogate, a NUL)
    become spaces, so a line neither breaks nor colours the terminal nor fails to encode."""
    assert brief("\x1b[2mCompacted\x1b[22m\n\tdone\x00 \ud800 ok") == "Compacted done ok"
    assert preview("a  b\nc", 10) == "a b c"


def test_width_counts_terminal_cells():
    """A wide character takes two cells; a line cut to a width never passes it."""
    assert cells("日本語") == 6 and fit("日本語です", 7) == "日本語…" and cells(fit("日本語です", 7)) <= 7
    t = tree_of([("u1", None, "user", "这是一个很长的中文句子，用来测试宽度是否被正确地计算和截断。" * 3)], head="u1")
    line = render_tree(t.graph, "u1", width=40)
    assert cells(line) <= 40 and line.endswith("…  ◀ head")


def test_wrong_arguments_say_what_was_expected():
    """Public functions given the wrong kind of argument say what they expected."""
    c = convlab.Conversation(FORKED, id="c")
    with pytest.raises(TypeError, match=r"render_tree takes a message tree, a networkx DiGraph, got Conversation .*render_tree\(x\.tree, x\.head\)"):
        render_tree(c)
    with pytest.raises(ValueError, match="render_path: head 'nope' is not a message of the tree"):
        render_path(FORKED.graph, "nope")
    with pytest.raises(ValueError, match="width must be an integer of at least 20, got 5"):
        render_tree(FORKED.graph, "e3", width=5)
    with pytest.raises(TypeError, match=r"render_events takes a list of event dicts, got Session \(a Session's: render_events\(s\.events\)\)"):
        render_events(convlab.Session())


def test_an_empty_tree_and_no_head():
    """An empty tree says so; with the head at the root the tree is drawn with nothing on the path."""
    assert render_tree(nx.DiGraph()) == "(empty tree)"
    assert render_tree(FORKED.graph, None, width=40).splitlines()[0] == "○ u1 user: weather in NYC?"
    assert render_path(FORKED.graph, None, width=40) == "(no active path: the head is at the root)"


# ----------------------------------------------------------------------
# properties: the text is the tree
# ----------------------------------------------------------------------
ROW = re.compile(r"^((?:│ |  )*)(├─|┌─)?([●○]) (\S+) ")


def parents_from_text(text):
    """Read the tree back from the drawing: a row continues the nearest row above in its column; a fork
    (├─, ┌─) hangs from the nearest row above in the column to its left (none: a top-level message)."""
    above: list[tuple[int, str]] = []  # (lane, id) of every row so far
    parents, marks = {}, {}
    for line in text.splitlines():
        m = ROW.match(line)
        assert m, line
        lane = len(m.group(1)) // 2 + (1 if m.group(2) else 0)
        looking = lane - 1 if m.group(2) else lane
        parent = next((nid for ln, nid in reversed(above) if ln == looking), None)
        if m.group(2) is None and lane > 0:
            assert parent is not None, line
        parents[m.group(4)] = parent
        marks[m.group(4)] = m.group(3)
        above.append((lane, m.group(4)))
    return parents, marks


@st.composite
def trees(draw):
    n = draw(st.integers(1, 40))
    rows = []
    for i in range(n):
        parent = draw(st.one_of(st.none(), st.sampled_from([r[0] for r in rows]))) if rows else None
        rows.append((f"m{i}", parent, draw(st.sampled_from(["user", "assistant"])), draw(st.text(max_size=30))))
    head = draw(st.one_of(st.none(), st.sampled_from([r[0] for r in rows])))
    return tree_of(rows, head), draw(st.integers(20, 120))


@settings(max_examples=200, deadline=None)
@given(trees())
def test_the_drawing_is_the_tree(case):
    """Every message is drawn once; the columns give back every parent; ● marks exactly the active path;
    the active path is column 0; no line is wider than the width."""
    t, width = case
    text = render_tree(t.graph, t.head, width=width)
    assert all(cells(line) <= width for line in text.splitlines())
    parents, marks = parents_from_text(text)
    assert parents == {n: t.graph.nodes[n]["parent"] for n in t.graph}
    path = set(t.path_ids(t.head)) if t.head else set()
    assert {n for n, mark in marks.items() if mark == "●"} == path
    for line in text.splitlines():  # the active path's mark (not a ● in a message's text) is in column 0
        if ROW.match(line).group(3) == "●":
            assert line.startswith("●")


@settings(max_examples=200, deadline=None)
@given(trees())
def test_the_text_and_the_tree_view_draw_the_same_rows_and_lanes(case):
    """Issue 21: one lane rule (convlab.tree.lane_child): render_tree's rows and columns are the tree view's
    rows and lanes (everything shown), on any tree and head; off the active path the child whose subtree
    holds the newest leaf continues the lane."""
    from convlab.widgets.treeview import layout

    t, width = case
    drawn = [ROW.match(line) for line in render_tree(t.graph, t.head, width=max(width, 60)).splitlines()]
    text_rows = [(m.group(4), len(m.group(1)) // 2 + (1 if m.group(2) else 0)) for m in drawn]
    laid = layout(t.nodes_in_order(), t.head, max_depth=10**6, budget=10**6)["nodes"]
    assert text_rows == [(n["id"][:len(m)], n["lane"]) for n, (m, _) in zip(laid, text_rows)]


# ----------------------------------------------------------------------
# every real log
# ----------------------------------------------------------------------
@pytest.mark.realdata
@pytest.mark.parametrize("name", log_files())
def test_no_line_is_wider_than_asked_on_any_real_log(name):
    """Issue 15: --width respected everywhere, whatever the data: every real log, tree and path, at widths
    from the narrowest allowed up; and no part prints as raw JSON."""
    import warnings

    real = require()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        convs = convlab.read(real / name, progress=False)
    for width in (20, 41, 100, 160):
        for c in convs:
            for render in (render_tree, render_path, render_summary):
                for line in render(c.tree, c.head, width=width).splitlines():
                    assert cells(line) <= width, (name, c.id, width, line)
                    assert '{"type":' not in line and "{'type':" not in line, line
