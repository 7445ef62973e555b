"""Issue 35: OpenCode's sessions, read from the layouts anomalyco/opencode's source defines (its JSON storage and
its SQLite database). No real OpenCode session is in the shared data: the sessions are generated from that layout
(tests/agent_samples.py, ``opencode_sessions``, which names the source files and commits read)."""

from __future__ import annotations

import io
import shutil
import warnings
import zipfile

import pytest

import convlab
from agent_samples import opencode_database, opencode_storage
from convlab.cli import main
from convlab.tree import input_tokens, nodes_in_order
from replay_invariant import assert_replays_exactly


def _read(path) -> dict[str, convlab.Conversation]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", convlab.ReadWarning)  # nothing repaired, nothing passed over loudly
        return {c.id: c for c in convlab.read(path, progress=False)}


def test_the_data_folder_and_the_storage_folder_find_every_session(tmp_path):
    store = opencode_storage(tmp_path / "opencode")
    for folder in (tmp_path / "opencode", store, store / "session"):  # ~/.local/share/opencode, its storage, its sessions
        convs = _read(folder)
        assert sorted(convs) == ["ses_1", "ses_2"] and {c.format for c in convs.values()} == {"opencode"}, folder
    assert convs["ses_2"].metadata["parent_session"] == "ses_1"  # a sub-agent's session: its own conversation
    assert convs["ses_1"].title == "fix the parser"
    assert convlab.importers.log_files(tmp_path) == sorted((store / "session" / "p1").glob("*.json"))


def test_messages_parts_usage_and_the_compaction_are_what_opencode_sends(tmp_path):
    c = _read(opencode_storage(tmp_path / "opencode"))["ses_1"]
    nodes = {a["id"]: a for a in nodes_in_order(c.tree)}
    # each step of an assistant message is a model call; its tool results follow it
    chain = ["msg_01", "msg_02", "prt_024", "msg_02#2", "msg_03", "msg_05", "prt_052", "msg_05#2", "msg_06", "msg_07"]
    assert [nodes[n]["parent"] for n in chain[1:]] == chain[:-1]
    assert [nodes[n]["role"] for n in chain] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool",
                                                 "assistant", "user", "assistant"]
    # the attached file's text is the synthetic text part; the text/plain file part itself is not sent
    assert nodes["msg_01"]["content"] == "why does parse() fail?Called the Read tool with the following input: parser.py"
    assert nodes["msg_02"]["content"] == [{"type": "thinking", "thinking": "Read it first."}, {"type": "text", "text": "Let me read it."},
                                          {"type": "tool_use", "id": "call_1", "name": "read", "input": {"filePath": "/w/parser.py"}}]
    assert nodes["msg_02"]["tool_calls"][0]["id"] == "call_1" and nodes["prt_024"]["tool_call_id"] == "call_1"
    assert nodes["prt_024"]["content"] == "def parse(): return None"
    assert nodes["prt_052"]["content"] == "file changed since it was read" and nodes["prt_052"]["metadata"]["is_error"]
    # per-call usage from each step-finish: the uncached input beside cache reads and writes; reasoning apart
    assert nodes["msg_02"]["usage"] == {"input_tokens": 100, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 50,
                                        "output_tokens": 20, "reasoning_output_tokens": 5, "cost": 0.01}
    calls = ["msg_02", "msg_02#2", "msg_05", "msg_05#2", "msg_07", "msg_09"]
    assert [input_tokens(nodes[n]["usage"]) for n in calls] == [1150, 1180, 1240, 1320, 1500, 110]
    assert nodes["msg_02"]["metadata"] == {"model": "claude-sonnet-4-5", "provider": "anthropic", "agent": "build", "finish": "stop"}
    assert nodes["msg_02"]["time"] == 1_760_000_002.0
    # the failed reply is where it stood, a dead end: OpenCode sends it to no later call; it reported no usage
    assert nodes["msg_04"]["parent"] == "msg_03" and nodes["msg_04"].get("usage") is None and nodes["msg_04"]["metadata"]["error"] == "APIError"
    # the compaction: the request and the summarising call, then the summary as the log's own compaction
    assert nodes["msg_06"]["content"] == "What did we do so far?"
    root = nodes["prt_061@compaction"]
    assert (root["kind"], root["parent"], root["replaces"], root["content"]) == ("summary", None, "msg_07", "We fixed parse().")
    assert root["metadata"]["compaction"] == {"auto": True, "request": "msg_06", "summary": "msg_07"}
    assert c.head == "msg_09" and [a["id"] for a in c.path()] == ["prt_061@compaction", "msg_08", "msg_09"]
    r = assert_replays_exactly(c)
    reads = [x["read"] for x in r.calls]  # msg_04, the failed call, logged no usage: convlab's own count stands for it
    assert reads[:2] + reads[3:] == [1150, 1180, 1240, 1320, 1500, 110] and [x["reply"] for x in r.calls][2] == "msg_04"
    assert [(x.id, x.call) for x in r.compactions] == [(r.map["prt_061@compaction"], 7)]  # before the 7th call, msg_09's


def test_a_compaction_keeping_a_tail_copies_it_after_the_summary(tmp_path):
    c = _read(opencode_storage(tmp_path / "opencode", tail="msg_03"))["ses_1"]
    path = c.path()
    assert [a["id"] for a in path] == ["prt_061@compaction", "msg_03@prt_061@compaction", "msg_05@prt_061@compaction",
                                       "prt_052@prt_061@compaction", "msg_05#2@prt_061@compaction", "msg_08", "msg_09"]
    assert [a.get("copied_from") for a in path[1:5]] == ["msg_03", "msg_05", "prt_052", "msg_05#2"]
    assert c.tree.nodes["prt_061@compaction"]["metadata"]["compaction"]["tail_start_id"] == "msg_03"
    assert_replays_exactly(c)


def test_a_storage_file_named_alone_reads_its_session(tmp_path):
    store = opencode_storage(tmp_path / "opencode")
    whole = _read(store)["ses_1"]
    for f in (store / "session" / "p1" / "ses_1.json", store / "message" / "ses_1" / "msg_03.json", store / "part" / "msg_02" / "prt_024.json"):
        [c] = convlab.read(f, progress=False)
        assert (c.id, c.path()) == ("ses_1", whole.path()), f
    shutil.rmtree(store / "message" / "ses_2")
    with pytest.raises(convlab.ReadError, match=r"ses_2\.json: an OpenCode session with no message folder: message/ses_2/ is not in"):
        convlab.read(store / "session" / "p1" / "ses_2.json", progress=False)
    alone = tmp_path / "msg_03.json"
    alone.write_bytes((store / "message" / "ses_1" / "msg_03.json").read_bytes())
    with pytest.raises(convlab.ReadError, match=r"a message\) of session 'ses_1': its session file session/<project>/ses_1\.json is not in"):
        convlab.read(alone, progress=False)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("ses_1.json", (store / "session" / "p1" / "ses_1.json").read_text())
    (tmp_path / "a.zip").write_bytes(archive.getvalue())
    with pytest.raises(convlab.ReadError, match=r"an OpenCode storage file \(a session\) read alone: its session is assembled from"):
        convlab.read(tmp_path / "a.zip", progress=False)


def test_the_database_reads_as_the_storage_does(tmp_path):
    store = _read(opencode_storage(tmp_path / "json" / "opencode"))
    db = opencode_database(tmp_path / "db" / "opencode" / "opencode.db")
    convs = _read(db)
    assert sorted(convs) == ["ses_1", "ses_2"]
    for sid, c in convs.items():
        assert c.path() == store[sid].path() and c.source == f"{db}!{sid}"
        assert {n: a for n, a in c.tree.nodes(data=True)}.keys() == store[sid].tree.nodes.keys()
    assert_replays_exactly(convs["ses_1"])
    # ~/.local/share/opencode after OpenCode moved its storage into the database: each session once, from the database
    opencode_storage(tmp_path / "db" / "opencode")
    both = convlab.read(tmp_path / "db" / "opencode", progress=False)
    assert sorted((c.id, c.source) for c in both) == [("ses_1", f"{db}!ses_1"), ("ses_2", f"{db}!ses_2")]
    other = tmp_path / "other.db"  # an SQLite file that is not OpenCode's: no chat log
    import sqlite3
    sqlite3.connect(other).executescript("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
    with pytest.raises(convlab.ReadError, match="not a chat log convlab can read"):
        convlab.read(other, progress=False)


def test_show_on_the_folder_lists_the_sessions(tmp_path, capsys):
    opencode_storage(tmp_path / "opencode")
    assert main(["show", str(tmp_path / "opencode"), "--width", "100", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "conversation ses_1: 'fix the parser'" in out and "conversation ses_2: 'find the tests (@general subagent)'" in out
    assert "14 messages, 1 branch point, 1 summary" in out
