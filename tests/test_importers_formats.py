"""LibreChat, Open WebUI, Claude.ai, OpenAssistant, OpenAI lists and convlab's own session log."""

from __future__ import annotations

import json
import re
import warnings

import pytest

import convlab

from realdata import real  # noqa: F401  (the fixture)

# -- LibreChat -------------------------------------------------------------------


@pytest.mark.realdata
def test_librechat_tree_keeps_both_forks_and_the_head(real):
    [c] = convlab.read(real / "librechat/librechat-tree.json")
    assert (c.id, c.title) == ("4a86c40e-e627-4454-b158-889680e23ad3", "Troubleshooting Python Virtual Environment Activation Issue")
    g = c.tree
    first_reply = "4c395510-fdfd-4556-b034-f9440f025e91"
    # the edit fork: "thanks" and "lol" under the first reply
    kids = c.message_tree.children(first_reply)
    assert [g.nodes[n]["content"] for n in kids] == ["thanks", "lol"]
    # the regeneration fork: two replies to "thanks"
    regen = c.message_tree.children(kids[0])
    assert [g.nodes[n]["role"] for n in regen] == ["assistant", "assistant"]
    # no current node in LibreChat: the head is the latest sibling at every fork
    assert c.head == "1f062c99-ff0a-4cf4-a1cf-7150261a24e2"
    assert [m["content"] for m in c.path()][:3] == [g.nodes[c.roots[0]]["content"], g.nodes[first_reply]["content"], "lol"]
    # tokenCount kept; promptTokens is the reply's input
    assert g.nodes[c.roots[0]]["metadata"]["tokenCount"] == 59
    head = g.nodes[c.head]
    assert head["usage"] == {"input_tokens": 586} and head["role"] == "assistant"


@pytest.mark.realdata
def test_librechat_flat_export(real):
    [c] = convlab.read(real / "librechat/librechat-linear.json")
    path = c.path()
    assert [m["role"] for m in path] == ["user", "assistant"] and path[0]["content"] == "tell me a long story"
    assert path[0]["time"] == pytest.approx(1716942783.661)


def test_librechat_recursive_without_parent_ids_and_content_parts(tmp_path):
    doc = {"conversationId": "c", "title": "t", "recursive": True, "messages": [
        {"messageId": "u", "isCreatedByUser": True, "text": "hi", "children": [
            {"messageId": "a", "isCreatedByUser": False, "text": "",
             "content": [{"type": "text", "text": {"value": "hello"}}, {"type": "tool_call", "tool_call": {"name": "x"}}],
             "children": []}]}]}
    p = tmp_path / "lc.json"
    p.write_text(json.dumps(doc))
    [c] = convlab.read(p)
    assert [m["id"] for m in c.path()] == ["u", "a"]
    assert c.tree.nodes["a"]["content"] == [{"type": "text", "text": "hello"}, {"type": "tool_call", "tool_call": {"name": "x"}}]


# -- Open WebUI -------------------------------------------------------------------


@pytest.mark.realdata
def test_openwebui_history_and_current_id(real):
    [c] = convlab.read(real / "openwebui/webui-goldwater.owi.json")
    assert c.title == "🧠 Goldwater Rule Ethics" and c.format == "openwebui"
    assert c.head == "a9436447-add3-4bd8-a25f-6ce54b73903c"
    reply = c.tree.nodes[c.head]
    assert reply["usage"]["input_tokens"] == 26 and reply["usage"]["output_tokens"] == 310
    assert reply["metadata"]["model"] == "deepseek/deepseek-chat:free"


def test_openwebui_export_all_list_with_a_fork(tmp_path):
    msgs = {
        "u": {"id": "u", "parentId": None, "childrenIds": ["a", "b"], "role": "user", "content": "hi", "timestamp": 1},
        "a": {"id": "a", "parentId": "u", "childrenIds": [], "role": "assistant", "content": "one", "timestamp": 2},
        "b": {"id": "b", "parentId": "u", "childrenIds": [], "role": "assistant", "content": "two", "timestamp": 3},
    }
    doc = [{"id": "chat-1", "title": "T", "chat": {"history": {"messages": msgs, "currentId": "a"}}}]
    p = tmp_path / "all.json"
    p.write_text(json.dumps(doc))
    [c] = convlab.read(p)
    assert (c.id, c.title, c.head, len(c)) == ("chat-1", "T", "a", 3)
    doc[0]["chat"]["history"]["currentId"] = "zzz"
    p.write_text(json.dumps(doc))
    with pytest.warns(convlab.ReadWarning, match=r"all\.json, conversation 'chat-1': current node 'zzz'"):
        [c] = convlab.read(p)
    assert c.head == "b"


# -- Claude.ai ---------------------------------------------------------------------


@pytest.mark.realdata
def test_claude_ai_export(real):
    convs = convlab.read(real / "claude_ai/claude-export-redacted.owi.json")
    empties = [c for c in convs if len(c) == 0]
    assert len(empties) == 2 and all(c.head is None and c.path() == [] for c in empties)
    c = max(convs, key=len)
    assert len(c) == 42 and len(c.path()) == 42
    assert [m["role"] for m in c.path()[:2]] == ["user", "assistant"]
    raw = json.loads((real / "claude_ai/claude-export-redacted.owi.json").read_text())
    assert [x.id for x in convs] == [r["uuid"] for r in raw] and [x.title for x in convs] == [r["name"] for r in raw]
    assert [m["id"] for m in c.path()] == [m["uuid"] for r in raw if r["uuid"] == c.id for m in r["chat_messages"]]


def test_claude_ai_parent_message_uuid_builds_the_tree(tmp_path):
    root = "00000000-0000-4000-8000-000000000000"
    doc = [{"uuid": "c", "name": "n", "current_leaf_message_uuid": "a1", "chat_messages": [
        {"uuid": "u1", "sender": "human", "text": "q", "content": [{"type": "text", "text": "q", "citations": []}], "parent_message_uuid": root},
        {"uuid": "a1", "sender": "assistant", "text": "", "content": [
            {"type": "text", "text": "x"}, {"type": "tool_use", "name": "search", "input": {}}], "parent_message_uuid": "u1"},
        {"uuid": "a2", "sender": "assistant", "text": "y", "content": [], "parent_message_uuid": "u1"},
    ]}]
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(doc))
    [c] = convlab.read(p)
    assert (c.format, c.head, c.roots) == ("claude_ai", "a1", ["u1"])
    assert sorted(c.tree.successors("u1")) == ["a1", "a2"]
    assert c.tree.nodes["u1"]["content"] == "q"
    assert c.tree.nodes["a1"]["content"] == [{"type": "text", "text": "x"}, {"type": "tool_use", "name": "search", "input": {}}]
    assert c.tree.nodes["a2"]["content"] == "y"


# -- OpenAssistant -----------------------------------------------------------------


@pytest.mark.realdata
def test_oasst_head_follows_the_best_ranked_reply(real):
    convs = convlab.read(real / "oasst/oasst1-en-trees-001-060.jsonl", progress=False)
    lines = (real / "oasst/oasst1-en-trees-001-060.jsonl").read_text().splitlines()
    for c, line in zip(convs, lines):
        tree = json.loads(line)
        assert c.id == tree["message_tree_id"] and c.roots == [tree["prompt"]["message_id"]]
        m, want = tree["prompt"], [tree["prompt"]["message_id"]]
        while m["replies"]:
            ranked = [r for r in m["replies"] if r.get("rank") is not None]
            m = min(ranked, key=lambda r: r["rank"]) if ranked else m["replies"][0]
            want.append(m["message_id"])
        assert [x["id"] for x in c.path()] == want
        assert c.path()[0]["role"] == "user"


# -- OpenAI lists ----------------------------------------------------------------


def test_openai_json_list_with_tools(tmp_path):
    msgs = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "usage": {"prompt_tokens": 30, "completion_tokens": 2}},
    ]
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(msgs))
    [c] = convlab.read(p)
    path = c.path()
    assert [m["role"] for m in path] == ["system", "user", "assistant", "tool", "assistant"]
    assert [m["id"] for m in path] == ["m1", "m2", "m3", "m4", "m5"] and c.head == "m5" and c.id == "chat"
    assert path[2]["tool_calls"][0]["id"] == "c1" and path[2]["content"] == ""
    assert path[3]["tool_call_id"] == "c1"
    assert path[4]["usage"]["input_tokens"] == 30 and path[4]["usage"]["output_tokens"] == 2


def test_openai_jsonl_of_conversations_and_of_messages(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_text("\n".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}) for i in range(3)))
    convs = convlab.read(p)
    assert [c.id for c in convs] == ["train#0", "train#1", "train#2"]
    assert [m["content"] for m in convs[2].path()] == ["q2", "a2"]
    q = tmp_path / "one.jsonl"
    q.write_text("\n".join(json.dumps({"id": f"x{i}", "role": "user" if i % 2 == 0 else "assistant", "content": str(i)}) for i in range(4)))
    [c] = convlab.read(q)
    assert [m["id"] for m in c.path()] == ["x0", "x1", "x2", "x3"]


def test_openai_duplicate_ids_get_fresh_ones(tmp_path):
    p = tmp_path / "dup.json"
    p.write_text(json.dumps([{"id": "a", "role": "user", "content": "1"}, {"id": "a", "role": "assistant", "content": "2"}]))
    [c] = convlab.read(p)
    assert [m["id"] for m in c.path()] == ["a", "m2"]


def test_openai_cut_in_the_middle(tmp_path):
    p = tmp_path / "chat.jsonl"
    text = "\n".join(json.dumps({"role": "user", "content": f"message {i}"}) for i in range(10))
    p.write_text(text[: len(text) // 2 - 3])
    with pytest.warns(convlab.ReadWarning, match=r"chat\.jsonl: the last line \(5\) is cut short"):
        [c] = convlab.read(p)
    assert len(c) == 4


# -- convlab's own session log ------------------------------------------------------


def _session_log(tmp_path):
    log = tmp_path / "session.jsonl"
    s = convlab.Session(log=log)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"id": "u1", "role": "user", "content": "hi"}, {"role": "user", "content": "hey"}]})
    return s, log


def test_session_log_reads_as_the_session(tmp_path):
    s, log = _session_log(tmp_path)
    before = log.read_bytes()
    [c] = convlab.read(log)
    assert c.format == "convlab" and c.id == "session" and c.head == s.head
    assert [dict(a) for _, a in sorted(c.tree.nodes(data=True), key=lambda x: x[1]["seq"])] == s.snapshot()["nodes"]
    assert c.path() == s.path()
    assert log.read_bytes() == before  # reading never changes the log


def test_session_log_torn_tail_warns_and_leaves_the_file_alone(tmp_path):
    s, log = _session_log(tmp_path)
    torn = log.read_bytes() + b'{"seq": 99, "type": "message.n'
    log.write_bytes(torn)
    with pytest.warns(convlab.ReadWarning, match=r"session\.jsonl: line \d+ is torn"):
        [c] = convlab.read(log)
    assert len(c) == len(s.tree)
    assert log.read_bytes() == torn


def test_session_log_bad_middle_line_is_a_read_error_naming_file_and_line(tmp_path):
    _, log = _session_log(tmp_path)
    lines = log.read_text().splitlines()
    lines[2] = "{broken"
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(convlab.ReadError, match=r"session\.jsonl.*line 3"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", convlab.ReadWarning)
            convlab.read(log)


def test_session_log_in_an_archive_is_loaded_from_memory_naming_the_member(tmp_path):
    """A session log is loaded from its bytes (Session.load of a file object): nothing is written, and
    what is wrong with it names the archive member."""
    import io
    import zipfile

    s, log = _session_log(tmp_path)
    torn = log.read_bytes() + b'{"seq": 99, "type": "message.n'
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("logs/session.jsonl", torn)
    archive = tmp_path / "logs.zip"
    archive.write_bytes(buf.getvalue())
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.warns(convlab.ReadWarning, match=rf"^{archive}!logs/session\.jsonl: line \d+ is torn"):
        [c] = convlab.read(archive)
    assert (c.format, c.id, c.source) == ("convlab", "session", f"{archive}!logs/session.jsonl")
    assert c.path() == s.path()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# -- the generic id/parentMessageId tree (issue 20) -----------------------------------


def generic_export(n=175, key="parentMessageId"):
    """An export of the shape several chat apps write: LibreChat's, keyed id/parentMessageId; every sixth
    message is a regeneration or an edit (a second child of an earlier message)."""
    messages = []
    for i in range(n):
        parent = None if i == 0 else f"m{i - 1}" if i % 6 else f"m{i - 3}"
        messages.append({"id": f"m{i}", key: parent, "isCreatedByUser": i % 2 == 0, "sender": "User" if i % 2 == 0 else "GPT-4",
                         "text": f"message {i}", "createdAt": f"2024-05-01T10:{i // 60:02d}:{i % 60:02d}Z"})
    return {"conversationId": "conv-1", "title": "A branched chat", "messages": messages}


@pytest.mark.parametrize("key", ["parentMessageId", "parentId"])
def test_an_id_parent_export_reads_as_its_tree(tmp_path, key):
    """Issue 20: "An export shaped like LibreChat's but keyed id/parentMessageId (175 messages, 29 branch points)
    is detected as LibreChat today ... the result is 0 messages with exit status 0". Read it."""
    p = tmp_path / "export.json"
    p.write_text(json.dumps(generic_export(key=key)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [c] = convlab.read(p, progress=False)
    assert (c.format, c.id, c.title, len(c)) == ("generic", "conv-1", "A branched chat", 175)
    forks = [n for n in c.tree.nodes if c.tree.out_degree(n) > 1]
    assert len(forks) == 29
    assert c.tree.nodes["m7"]["parent"] == "m6" and c.tree.nodes["m6"]["parent"] == "m3"
    assert [c.tree.nodes[n]["role"] for n in ("m0", "m1")] == ["user", "assistant"]
    assert c.tree.nodes["m1"]["content"] == "message 1" and c.tree.nodes["m1"]["time"] == 1714557601.0
    # no current node recorded: the latest reply at every fork, as such a UI shows it
    assert c.head == "m174"


def test_a_bare_list_of_id_parent_records_keeps_its_branches(tmp_path):
    """A list of messages with parentId would read as one OpenAI branch, its forks lost: it is the generic tree."""
    records = [{"id": "q", "parentId": None, "role": "user", "content": "hi"},
               {"id": "a1", "parentId": "q", "role": "assistant", "content": "hello"},
               {"id": "a2", "parentId": "q", "role": "assistant", "content": "hey"}]
    for name, text in [("list.json", json.dumps(records)), ("lines.jsonl", "\n".join(map(json.dumps, records)))]:
        p = tmp_path / name
        p.write_text(text)
        [c] = convlab.read(p, progress=False)
        assert c.format == "generic" and sorted(c.tree.successors("q")) == ["a1", "a2"] and c.head == "a2"


def test_a_detected_format_that_yields_nothing_is_a_read_error_naming_it(tmp_path):
    """Issue 20: "A detected format that yields no message from N records must be a ReadError naming the format it
    tried, never an empty result"."""
    p = tmp_path / "broken.json"
    p.write_text(json.dumps({"conversationId": "c", "messages": [{"messageId": None, "text": f"m{i}"} for i in range(175)]}))
    with pytest.warns(convlab.ReadWarning, match="has no messageId"):
        with pytest.raises(convlab.ReadError, match=r"broken\.json: read as librechat, its 175 'messages' gave no message"):
            convlab.read(p, progress=False)
    q = tmp_path / "junk.jsonl"
    q.write_text("\n".join(json.dumps({"type": "progress", "uuid": f"u{i}", "parentUuid": None, "sessionId": "s"}) for i in range(4)))
    with pytest.raises(convlab.ReadError, match=r"junk\.jsonl: read as claude_code, its 4 lines gave no message"):
        convlab.read(q, progress=False)
    # in a folder: that file is named and passed over, the others read
    (tmp_path / "good.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    with pytest.warns(convlab.ReadWarning) as caught:
        convs = convlab.read(tmp_path, progress=False)
    assert [c.format for c in convs] == ["openai"]
    said = [str(w.message) for w in caught]
    assert any(re.search(r"broken\.json: read as librechat, its 175 'messages' gave no message.*; passed over", t) for t in said)
    assert any(re.search(r"junk\.jsonl: read as claude_code, its 4 lines gave no message.*; passed over", t) for t in said)
