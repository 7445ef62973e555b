"""convlab.write: read(write(x)) gives the same tree, for every format, on generated trees and every real log."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.explore.writing import ATIF_VERSION, TREE_FORMATS, calls_of
from convlab.tree import Tree

from realdata import MISSING, REAL, log_files, require


def parts_of(content):
    """Content as a list of parts, text runs merged, tool_use parts left out (they are in calls_of)."""
    raw = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    out = []
    for p in raw:
        if isinstance(p, dict) and p.get("type") == "tool_use":
            continue
        if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)):
            text = p if isinstance(p, str) else p["text"]
            if out and isinstance(out[-1], str):
                out[-1] += text
            elif text:
                out.append(text)
        elif isinstance(p, dict) and p.get("type") == "thinking":
            out.append(("thinking", str(p.get("thinking") or "")))
        else:
            out.append(json.dumps(p, sort_keys=True))
    return [p for p in out if p != ""]


def shape(tree: Tree, fmt: str):
    """What ``fmt`` keeps of a tree (KEEPS), in a form two trees can be compared in."""
    if fmt == "convlab":
        return [dict(n) for n in tree.nodes_in_order()], tree.head, dict(tree.labels)
    nodes = tree.path() if fmt == "openai" else tree.nodes_in_order()
    rows = []
    for i, n in enumerate(nodes):
        parent = (nodes[i - 1]["id"] if i else None) if fmt == "openai" else n["parent"]
        row = [n["id"], parent, n["role"], parts_of(n["content"]), [(c[0], c[1], c[2]) for c in calls_of(n)]]
        if fmt != "chatgpt":
            row.append(n.get("tool_call_id"))
        if fmt in ("chatgpt", "openai"):
            row.append(n.get("name"))
        rows.append(row)
    head = nodes[-1]["id"] if fmt == "openai" and nodes else tree.head
    return rows, head, dict(tree.labels) if fmt == "pi" else None


def round_trip(c, fmt, folder: Path):
    path = convlab.write(c, folder / f"out.{fmt}.{'jsonl' if fmt in ('convlab', 'pi') else 'json'}", format=fmt, overwrite=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        (back,) = convlab.read(path)
    return back


def tree_source(c):
    return c.message_tree if isinstance(c, convlab.Conversation) else c


# -- generated trees ----------------------------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
PART = st.one_of(
    TEXT.map(lambda t: {"type": "text", "text": t}),
    TEXT.map(lambda t: {"type": "thinking", "thinking": t}),
    st.builds(lambda n, i: {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": n}}, TEXT, st.none()),
)


@st.composite
def conversations(draw):
    n = draw(st.integers(0, 14))
    t = Tree()
    calls: list[str] = []
    for i in range(n):
        nid = draw(st.sampled_from([f"n{i}", f"id-{i}-é", f"{i:08x}"]))
        parent = None if i == 0 or draw(st.integers(0, 8)) == 0 else t.nodes_in_order()[draw(st.integers(0, i - 1))]["id"]
        role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
        node = {"id": nid, "role": role, "content": draw(st.one_of(TEXT, st.lists(PART, max_size=3)))}
        if role == "assistant" and draw(st.booleans()):
            cid = f"call{i}"
            calls.append(cid)
            if draw(st.booleans()):
                node["content"] = [*(node["content"] if isinstance(node["content"], list) else []),
                                   {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": draw(TEXT)}}]
            else:
                node["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": "read", "arguments": json.dumps({"p": draw(TEXT)})}}]
        if role == "tool":
            node["tool_call_id"] = calls[-1] if calls else "c0"
            node["metadata"] = {"tool_name": "read"}
        if role == "user" and draw(st.booleans()):
            node["name"] = "sam"
        t.add(node, parent)
    ids = [x["id"] for x in t.nodes_in_order()]
    t.head = draw(st.sampled_from(ids)) if ids else None
    for nid in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)) if ids else []:
        t.set_label(nid, draw(TEXT.filter(str.strip)))
    return convlab.Conversation(t, id="gen", title=draw(st.one_of(st.none(), TEXT.filter(str.strip))), format="generated")


@pytest.mark.parametrize("fmt", TREE_FORMATS)
@settings(max_examples=60)
@given(c=conversations())
def test_read_of_write_is_the_same_tree_on_generated_trees(tmp_path_factory, fmt, c):
    if not len(c):
        return  # convlab.read refuses a file with no message (never an empty result)
    folder = tmp_path_factory.mktemp("w")
    back = round_trip(c, fmt, folder)
    assert shape(back.message_tree, fmt) == shape(c.message_tree, fmt)
    if fmt in ("pi", "chatgpt"):
        assert back.title == c.title
    again = round_trip(back, fmt, folder)  # a second trip changes nothing more
    assert shape(again.message_tree, fmt) == shape(back.message_tree, fmt)


def test_a_session_written_as_its_log_loads_as_the_same_session(tmp_path):
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "hello"}]})
    s.label("e1", "first answer")
    path = convlab.write(s, tmp_path / "s.jsonl")
    loaded = convlab.Session.load(path, append=False)
    assert loaded.snapshot() == s.snapshot() and loaded.labels() == s.labels() and loaded.events == s.events


def test_a_conversation_written_as_a_session_log_loads_as_a_session(tmp_path):
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    c = convlab.Conversation(s.message_tree, id="c")
    c.checkout("u1")
    c.label("u1", "start")
    loaded = convlab.Session.load(convlab.write(c, tmp_path / "c.jsonl"), append=False)
    assert loaded.head == "u1" and loaded.labels() == {"u1": "start"} and [n["id"] for n in loaded.snapshot()["nodes"]] == ["u1", "e1"]


def test_a_replay_writes_its_session(tmp_path):
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    r = convlab.replay(convlab.Conversation(s.message_tree, id="c", format="convlab"))
    (back,) = convlab.read(convlab.write(r, tmp_path / "r.jsonl", format="pi"))
    assert [m["role"] for m in back.path()] == ["user", "assistant"]


def test_pi_files_end_at_the_head_even_when_it_has_children(tmp_path):
    t = Tree()
    for nid, parent in [("u1", None), ("a1", "u1"), ("u2", "a1")]:
        t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": nid}, parent)
    t.head = "a1"
    path = convlab.write(convlab.Conversation(t, id="c"), tmp_path / "c.jsonl", format="pi")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[-1]["type"] == "custom" and rows[-1]["parentId"] == "a1"
    assert convlab.read(path)[0].head == "a1"


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"format": "docx"}, "format: 'docx' is not a format convlab writes"),
    ({"path": 3}, "path: a file path"),
])
def test_bad_arguments_are_explore_errors(tmp_path, kwargs, says):
    s = convlab.Session()
    args = {"path": tmp_path / "x.jsonl", "format": "convlab", **kwargs}
    with pytest.raises(convlab.ExploreError, match=says):
        convlab.write(s, args["path"], format=args["format"])


def test_an_existing_file_a_folder_and_an_unwritable_place_are_refused_leaving_nothing(tmp_path):
    s = convlab.Session()
    existing = tmp_path / "x.jsonl"
    existing.write_text("mine")
    with pytest.raises(convlab.ExploreError, match="exists"):
        convlab.write(s, existing)
    assert existing.read_text() == "mine"
    with pytest.raises(convlab.ExploreError, match="is a folder"):
        convlab.write(s, tmp_path)
    with pytest.raises(convlab.ExploreError, match="cannot write in"):
        convlab.write(s, tmp_path / "missing" / "x.jsonl")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(convlab.ExploreError):
            convlab.write(s, ro / "x.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


# -- every real log -----------------------------------------------------------------------------------


@pytest.mark.realdata
@pytest.mark.parametrize("name", log_files())
def test_every_real_log_round_trips_in_every_format(tmp_path, name):
    if name == MISSING:
        require()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        convs = convlab.read(REAL / name)
    assert convs
    for c in convs:
        for fmt in TREE_FORMATS:
            if not len(c):
                continue
            back = round_trip(c, fmt, tmp_path)
            assert shape(back.message_tree, fmt) == shape(c.message_tree, fmt), (c.id, fmt)
        check_atif(c, tmp_path)


def test_a_written_file_has_the_mode_open_gives_and_pi_starts_when_the_conversation_did(tmp_path):
    t = Tree()
    t.add({"id": "u1", "role": "user", "content": "hi", "time": 1_700_000_000.0}, None)
    t.head = "u1"
    old = os.umask(0o022)
    try:
        path = convlab.write(convlab.Conversation(t, id="c"), tmp_path / "c.jsonl", format="pi")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert json.loads(path.read_text().splitlines()[0])["timestamp"] == "2023-11-14T22:13:20Z"


# -- ATIF: written only --------------------------------------------------------------------------------------


def check_atif(c, folder: Path) -> dict:
    """An ATIF trajectory of ``c``'s active path, checked against the schema's rules and against the path."""
    path = convlab.write(c, folder / "t.trajectory.json", format="atif", overwrite=True)
    t = json.loads(path.read_text())
    assert t["schema_version"] == ATIF_VERSION and t["session_id"] == getattr(c, "id", getattr(c, "agent", None)) and t["agent"]["name"]
    steps = t["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert all(s["source"] in ("user", "agent", "system") and isinstance(s["message"], str) for s in steps)
    for s in steps:  # every observation answers a call of its own step
        calls = {call["tool_call_id"] for call in s.get("tool_calls", [])}
        assert all(isinstance(call["arguments"], dict) for call in s.get("tool_calls", []))
        assert all(r["source_call_id"] in calls for r in s.get("observation", {}).get("results", [])), s
    ids = [s["extra"]["message_id"] for s in steps]
    path_ids = [m["id"] for m in c.path()]
    assert ids == [i for i in path_ids if i in set(ids)]  # in path order, results folded into their calls' steps
    assert t["final_metrics"]["total_steps"] == len(steps)
    return t


@settings(max_examples=60)
@given(c=conversations())
def test_atif_of_any_path_keeps_the_schemas_rules(tmp_path_factory, c):
    check_atif(c, tmp_path_factory.mktemp("a"))


def test_atif_folds_tool_results_into_the_step_that_called_and_sums_usage(tmp_path):
    s = convlab.Session(worker="manual")
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "list"}})
    s.decide([{"type": "message.add", "message": {"id": "a1", "role": "assistant", "content": [
        {"type": "thinking", "thinking": "ls it"}, {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}}]}},
        {"type": "message.add", "message": {"id": "t1", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"}]}},
        {"type": "llm.call"}])
    s.decide([])
    t = check_atif(s, tmp_path)
    assert [st["source"] for st in t["steps"]] == ["user", "agent", "agent"]
    agent = t["steps"][1]
    assert agent["message"] == "Looking." and agent["reasoning_content"] == "ls it"
    assert agent["tool_calls"] == [{"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": "ls"}}]
    assert agent["observation"] == {"results": [{"source_call_id": "c1", "content": "a.txt"}]}
    reply = s.path()[-1]
    assert t["steps"][2]["metrics"]["prompt_tokens"] == reply["usage"]["input_tokens"]
    assert t["final_metrics"]["total_completion_tokens"] == reply["usage"]["output_tokens"]
