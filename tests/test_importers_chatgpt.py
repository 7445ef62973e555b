"""ChatGPT exports: the real tree and the client-created-root export, synthetic conversations.json/.zip."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

import convlab

from realdata import require

TREE = "chatgpt/chatgpt-tree.librechat.json"
PHOTO = "chatgpt/chatgpt-photosynthesis.owi.json"


@pytest.mark.realdata
def test_real_tree_keeps_both_forks_and_the_head():
    [c] = convlab.read(require() / TREE)
    assert c.id == "d5dc5307-6807-41a0-8b04-4acee626eeb7" and c.title == "Assist user with summary"
    assert c.head == "f63b8e17-aa5c-4ca6-a1bf-d4d285e269b8"
    g = c.tree
    # the edit fork: two user messages under the first reply
    edit = sorted(g.successors("bda8a275-886d-4f59-b38c-d7037144f0d5"))
    assert edit == ["aaa236a3-cdfc-4eb1-b5c5-790c6641f880", "aaa24023-b02f-4d49-b568-5856b41750c0"]
    assert {g.nodes[n]["role"] for n in edit} == {"user"}
    # the regeneration fork: two replies to "tell me a joke"
    regen = sorted(g.successors("aaa20127-b9e3-44f6-afbe-a2475838625a"))
    assert regen == ["d0d2a7df-d2fc-4df9-bf0a-1c5121e227ae", "f63b8e17-aa5c-4ca6-a1bf-d4d285e269b8"]
    assert {g.nodes[n]["role"] for n in regen} == {"assistant"}
    # the active path: hidden system, hi there, hello, hi again, welcome back, joke, the second joke
    path = c.path()
    assert [m["content"] for m in path[1:4]] == ["hi there", "Hello! How can I assist you today?", "hi again"]
    assert [m["role"] for m in path] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    # the placeholder root is not a message
    assert "aaa1f70c-100e-46f0-999e-10c8565f047f" not in g
    assert path[0]["parent"] is None and path[0]["metadata"]["hidden"] is True
    assert path[1]["time"] == 1714585031.150442


@pytest.mark.realdata
def test_real_client_created_root_export():
    [c] = convlab.read(require() / PHOTO)
    assert "client-created-root" not in c.tree
    assert c.roots == ["e5529cf9-c042-40ea-aba9-f90efa479c28"]
    path = c.path()
    assert len(path) == 12 and path[-1]["id"] == c.head == "1dc131c9-3245-4687-a994-fdd42c0fedac"
    system, context, question = path[:3]
    assert system["role"] == "system" and system["content"] == "" and system["metadata"]["hidden"]
    # user_editable_context is hidden and kept as a part, as given
    assert context["role"] == "user" and context["metadata"]["content_type"] == "user_editable_context"
    assert isinstance(context["content"], list) and context["content"][0]["content_type"] == "user_editable_context"
    assert question["content"] == "Can you explain how photosynthesis works in simple terms?"


def _msg(mid, role, text, t, *, name=None, hidden=False, recipient="all", ctype="text"):
    content = {"content_type": ctype, "parts": [text]} if ctype == "text" else {"content_type": ctype, "text": text}
    return {
        "id": mid,
        "author": {"role": role, "name": name, "metadata": {}},
        "create_time": t,
        "content": content,
        "status": "finished_successfully",
        "recipient": recipient,
        "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {"model_slug": "gpt-4o"},
    }


def synthetic_export():
    """A 2025-style export: client-created-root, a hidden system message, a tool call and its output, a regeneration."""
    nodes = [
        ("client-created-root", None, None),
        ("sys", "client-created-root", _msg("sys", "system", "", None, hidden=True)),
        ("u1", "sys", _msg("u1", "user", "run 2+2 in python", 1.0)),
        ("a1", "u1", _msg("a1", "assistant", "print(2+2)", 2.0, recipient="python", ctype="code")),
        ("t1", "a1", _msg("t1", "tool", "4", 3.0, name="python", ctype="execution_output")),
        ("a2", "t1", _msg("a2", "assistant", "It is 4.", 4.0)),
        ("a2b", "t1", _msg("a2b", "assistant", "2+2 = 4.", 5.0)),
    ]
    mapping = {}
    for nid, parent, message in nodes:
        mapping[nid] = {"id": nid, "message": message, "parent": parent, "children": []}
    for nid, parent, _ in nodes:
        if parent:
            mapping[parent]["children"].append(nid)
    empty = {"id": "empty", "title": "nothing", "mapping": {"client-created-root": {"id": "client-created-root", "message": None, "parent": None, "children": []}}, "current_node": "client-created-root"}
    return [{"id": "conv-1", "conversation_id": "conv-1", "title": "Python", "mapping": mapping, "current_node": "a2"}, empty]


def test_synthetic_conversations_json(tmp_path):
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(synthetic_export()))
    c, empty = convlab.read(p)
    assert (c.id, c.title, c.format, c.head) == ("conv-1", "Python", "chatgpt", "a2")
    assert len(c) == 6 and c.roots == ["sys"]
    assert [m["id"] for m in c.path()] == ["sys", "u1", "a1", "t1", "a2"]
    tool = c.tree.nodes["t1"]
    assert (tool["role"], tool["name"], tool["content"]) == ("tool", "python", "4")
    assert c.tree.nodes["a1"]["metadata"]["recipient"] == "python" and c.tree.nodes["a1"]["content"] == "print(2+2)"
    assert sorted(c.tree.successors("t1")) == ["a2", "a2b"]
    assert c.tree.nodes["a2"]["metadata"]["model"] == "gpt-4o" and c.tree.nodes["a2"]["time"] == 4.0
    # an empty conversation: no nodes, no head, no warning
    assert (empty.id, len(empty), empty.head, empty.path()) == ("empty", 0, None, [])


def test_synthetic_export_zip(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", json.dumps(synthetic_export()))
        z.writestr("user.json", json.dumps({"id": "user-x"}))
        z.writestr("message_feedback.json", "[]")
        z.writestr("chat.html", "<html>...</html>")
    p = tmp_path / "export.zip"
    p.write_bytes(buf.getvalue())
    convs = convlab.read(p)
    assert [c.id for c in convs] == ["conv-1", "empty"]
    assert convs[0].source == f"{p}!conversations.json"


def test_current_node_missing_from_the_mapping(tmp_path):
    doc = synthetic_export()
    doc[0]["current_node"] = "vanished"
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(convlab.ReadWarning, match=r"conversations\.json, conversation 'conv-1': current node 'vanished' is not"):
        c, _ = convlab.read(p)
    assert c.head == "a2b"  # the newest leaf
    assert len(c) == 6


def test_current_node_on_a_message_less_record_is_its_nearest_message(tmp_path):
    doc = synthetic_export()
    m = doc[0]["mapping"]
    m["t1"]["message"] = None  # a record without a message between a1 and the replies
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(doc))
    c, _ = convlab.read(p)
    assert "t1" not in c.tree and sorted(c.tree.successors("a1")) == ["a2", "a2b"]


def test_a_loop_of_message_less_records_does_not_hang(tmp_path):
    doc = synthetic_export()
    m = doc[0]["mapping"]
    m["client-created-root"]["parent"] = "loop"
    m["loop"] = {"id": "loop", "message": None, "parent": "client-created-root", "children": []}
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(doc))
    c, _ = convlab.read(p)
    assert c.roots == ["sys"] and len(c) == 6


def test_unknown_author_role_is_left_out_and_named(tmp_path):
    doc = synthetic_export()
    doc[0]["mapping"]["a1"]["message"]["author"]["role"] = "critic"
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(convlab.ReadWarning, match=r"conversation 'conv-1': node 'a1': unknown role 'critic'"):
        c, _ = convlab.read(p)
    assert "a1" not in c.tree and c.tree.nodes["t1"]["parent"] == "u1"
