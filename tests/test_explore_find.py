"""convlab.find: every matching message of a Session, a Conversation or a replay, with its path and branch."""

from __future__ import annotations

import collections
import gzip
import json
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

import convlab
from convlab.tree import Tree

from agentdata import agents  # noqa: F401  (the fixture)
from realdata import real  # noqa: F401  (the fixture)

# u1 - a1 - u2 - a2
#         \ u3 - a3 (tool call)
#              \ t3 (tool result) - a3b   (head)
EDGES = [
    ("u1", None, "user", "What is the weather in NYC?"),
    ("a1", "u1", "assistant", "Sunny in New York."),
    ("u2", "a1", "user", "And tomorrow?"),
    ("a2", "u2", "assistant", "Rain."),
    ("u3", "a1", "user", "Straße in München?"),
    ("a3", "u3", "assistant", [{"type": "text", "text": "Let me look."},
                               {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "grep -r Straße ."}}]),
    ("t3", "a3", "tool", "found 3 files"),
    ("a3b", "t3", "assistant", "Three files mention it."),
]


def conversation(head: str = "a3b") -> convlab.Conversation:
    t = Tree()
    for nid, parent, role, content in EDGES:
        extra = {"metadata": {"tool_name": "Bash"}, "tool_call_id": "c1"} if role == "tool" else {}
        t.add({"id": nid, "role": role, "content": content, **extra}, parent)
    t.head = head
    return convlab.Conversation(t, id="c", title="T", format="openai")


def test_text_is_found_case_insensitive_with_path_branch_and_on_path():
    df = convlab.find(conversation(), "new york")
    assert df["id"].tolist() == ["a1"]
    row = df.iloc[0]
    assert row["path"] == ("u1", "a1") and row["depth"] == 2 and bool(row["on_path"]) is True
    assert row["match"] == "Sunny in New York."
    frame = convlab.frame(conversation()).set_index("id")
    assert row["branch"] == frame.loc["a1", "branch"]


def test_a_match_off_the_active_path_says_so_and_names_its_branch():
    c = conversation()
    df = convlab.find(c, "rain")
    assert df["id"].tolist() == ["a2"] and not df["on_path"].iloc[0]
    assert df["branch"].iloc[0] == convlab.frame(c).set_index("id").loc["a2", "branch"]


def test_tool_parts_are_searched_with_their_characters_and_tool_finds_calls_and_results():
    c = conversation()
    assert convlab.find(c, "grep -r straße")["id"].tolist() == ["a3"]
    assert convlab.find(c, tool="Bash")["id"].tolist() == ["a3", "t3"]
    assert convlab.find(c, tool="Bash", role="tool")["id"].tolist() == ["t3"]
    assert convlab.find(c, tool="Read").empty


def test_roles_regex_and_every_condition_together():
    c = conversation()
    assert convlab.find(c, role=["user"])["id"].tolist() == ["u1", "u2", "u3"]
    assert convlab.find(c, r"\b(Sunny|Rain)\b", regex=True)["id"].tolist() == ["a1", "a2"]
    assert convlab.find(c, r"sunny", regex=True).empty  # a regular expression is searched as written
    assert convlab.find(c, "in", role="assistant", regex=False)["id"].tolist() == ["a1", "a2", "a3"]  # a3: "input"
    assert len(convlab.find(c)) == len(c)


def test_no_match_is_an_empty_frame_with_the_columns():
    df = convlab.find(conversation(), "nothing like this")
    assert df.empty and tuple(df.columns) == convlab.explore.matches.FIND_COLUMNS


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"text": "("}, "text: '(' is not a regular expression"),
    ({"text": ""}, "text: a non-empty string"),
    ({"text": 3}, "text: a non-empty string"),
    ({"role": "robot"}, "role: 'robot' is not a role"),
    ({"role": 5}, "role: a role or a list of roles"),
    ({"tool": ""}, "tool: a tool's name"),
])
def test_bad_arguments_are_explore_errors_naming_them(kwargs, says):
    regex = kwargs.get("text") == "("
    with pytest.raises(convlab.ExploreError, match=says.replace("(", r"\(")):
        convlab.find(conversation(), **kwargs, regex=regex)


def test_a_source_that_is_no_tree_is_an_explore_error():
    with pytest.raises(convlab.ExploreError, match=r"convlab\.read returns a list"):
        convlab.find([conversation()], "x")
    with pytest.raises(convlab.ExploreError, match="got a str"):
        convlab.find("conversations.json", "x")


def test_a_session_and_a_replay_of_it_are_searched_alike():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "weather in NYC?"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "weather in LA?"}]})
    assert convlab.find(s, "weather", role="user")["id"].tolist() == ["u1", "e2"]
    c = convlab.Conversation(s.message_tree, id="s", format="convlab")
    r = convlab.replay(c)
    found = convlab.find(r, "weather", role="user")
    assert len(found) == 2 and found["on_path"].tolist() == [False, True]


def test_labels_show_in_their_column():
    c = conversation()
    c.message_tree.set_label("u3", "the German question")
    df = convlab.find(c, role="user")
    assert df.set_index("id")["label"].to_dict() == {"u1": None, "u2": None, "u3": "the German question"}


def test_a_result_that_carries_only_its_call_id_is_found_by_its_call_tool_name():
    """Claude Code, Codex, Gemini CLI and Copilot CLI results name no tool: only the id of the call they answer."""
    t = Tree()
    t.add({"id": "u1", "role": "user", "content": "list the files"}, None)
    t.add({"id": "a1", "role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "exec_command", "arguments": "{}"}}]}, "u1")
    t.add({"id": "r1", "role": "tool", "tool_call_id": "call_1", "content": "a.txt"}, "a1")
    t.add({"id": "a2", "role": "assistant", "content": [{"type": "tool_use", "id": "tu_2", "name": "Read", "input": {}}]}, "r1")
    t.add({"id": "r2", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_2", "content": "hello"}]}, "a2")
    t.add({"id": "r3", "role": "tool", "tool_call_id": "nobody_called_me", "content": "?"}, "r2")
    t.head = "r3"
    c = convlab.Conversation(t, id="c")
    assert convlab.find(c, tool="exec_command")["id"].tolist() == ["a1", "r1"]
    assert convlab.find(c, tool="Read")["id"].tolist() == ["a2", "r2"]  # a user message of tool_result parts
    assert convlab.find(c, tool="Read", role="user")["id"].tolist() == ["r2"]
    assert convlab.find(c, "hello", tool="Read")["id"].tolist() == ["r2"]


def _claude_code_results(path) -> collections.Counter:
    """Per tool name, the tool_result blocks of a raw Claude Code log that answer a tool_use of that name."""
    rows = [json.loads(line) for line in gzip.open(path, "rt") if line.strip()]
    blocks = [p for r in rows for p in ((r.get("message") or {}).get("content") or ()) if isinstance(p, dict)]
    named = {p["id"]: p["name"] for p in blocks if p.get("type") == "tool_use"}
    return collections.Counter(named.get(p["tool_use_id"]) for p in blocks if p.get("type") == "tool_result")


def _codex_results(path) -> collections.Counter:
    """Per tool name, the function and custom tool call outputs of a raw Codex rollout that answer a call of that name."""
    items = [r["payload"] for r in map(json.loads, open(path, encoding="utf-8").read().splitlines())
             if r.get("type") == "response_item"]
    named = {p["call_id"]: p["name"] for p in items if p.get("type") in ("function_call", "custom_tool_call")}
    return collections.Counter(named.get(p["call_id"]) for p in items
                               if p.get("type") in ("function_call_output", "custom_tool_call_output"))


@pytest.mark.realdata
def test_on_a_real_claude_code_session_tool_finds_every_result_the_raw_log_holds(real):  # noqa: F811
    path = real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
    raw = _claude_code_results(path)
    assert raw["Bash"] > 100  # the session ran Bash 120 times
    c = max(convlab.read(path, progress=False), key=len)
    for tool in ("Bash", "Edit", "Read"):
        found = convlab.find(c, tool=tool)
        results = found[found["role"] == "tool"]
        assert len(results) == raw[tool], tool
        assert all(c.message_tree.node(i)["tool_call_id"] for i in results["id"])
        assert (found["role"] == "assistant").sum() > 0


@pytest.mark.realdata
def test_on_a_real_codex_session_tool_finds_every_output_the_raw_rollout_holds(agents):  # noqa: F811
    path = agents / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    raw = _codex_results(path)
    assert raw["exec_command"] > 200
    c = max(convlab.read(path, progress=False), key=len)
    for tool in ("exec_command", "apply_patch", "write_stdin"):
        found = convlab.find(c, tool=tool, role="tool")
        assert len(found) == raw[tool], tool


def test_many_matches_down_one_long_chain_have_their_own_paths_branches_and_depths():
    """An agent session's shape: one chain (and a side branch), a match in every message; each match's path, depth,
    branch and on_path are the tree's and frame's, however the walks share the chain (bench row ``find`` times it)."""
    t = Tree()
    parent = None
    for i in range(3000):
        parent = t.add({"id": f"m{i}", "role": ("user", "assistant")[i % 2], "content": f"step {i} of the plan"}, parent)["id"]
    t.add({"id": "side", "role": "user", "content": "a plan B"}, "m1499")
    t.head = parent
    df = convlab.find(t, "plan")
    assert len(df) == 3001
    frame = convlab.frame(convlab.Conversation(t, id="c")).set_index("id")
    for row in df.iloc[::250].itertuples():
        assert row.path == tuple(t.path_ids(row.id)) and row.depth == len(row.path)
        assert row.branch == frame.loc[row.id, "branch"] and row.on_path == frame.loc[row.id, "on_path"]
    side = df.set_index("id").loc["side"]
    assert side["path"][-2:] == ("m1499", "side") and not side["on_path"] and side["depth"] == 1501


@st.composite
def trees(draw):
    n = draw(st.integers(1, 30))
    t = Tree()
    for i in range(n):
        parent = None if i == 0 or draw(st.integers(0, 9)) == 0 else f"n{draw(st.integers(0, i - 1))}"
        t.add({"id": f"n{i}", "role": draw(st.sampled_from(["user", "assistant"])), "content": draw(st.sampled_from(["alpha", "beta", "alpha beta", ""]))}, parent)
    t.head = f"n{draw(st.integers(0, n - 1))}"
    return convlab.Conversation(t, id="g")


@given(trees(), st.sampled_from(["alpha", "beta", "ALPHA BETA"]))
def test_find_agrees_with_frame_and_the_tree_on_any_tree(c, word):
    df = convlab.find(c, word)
    frame = convlab.frame(c).set_index("id")
    want = [n["id"] for n in c.message_tree.nodes_in_order() if word.casefold() in n["content"]]
    assert df["id"].tolist() == want
    for row in df.itertuples():
        assert row.path == tuple(c.message_tree.path_ids(row.id)) and row.path[-1] == row.id
        assert row.branch == frame.loc[row.id, "branch"] and row.on_path == frame.loc[row.id, "on_path"]
        assert row.depth == frame.loc[row.id, "depth"]


@pytest.mark.realdata
def test_on_a_real_openassistant_forest_every_tree_is_searched(real):  # noqa: F811
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        convs = convlab.read(real / "oasst")
    hits = [convlab.find(c, "python") for c in convs]
    assert sum(len(h) for h in hits) > 0
    for c, h in zip(convs, hits, strict=True):
        assert all(c.message_tree.path_ids(i) == list(p) for i, p in zip(h["id"], h["path"], strict=True))
