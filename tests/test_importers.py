"""convlab.read: detection, the real logs against STATS.json, damage, folders, progress.

Format details live in tests/test_importers_<format>.py.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import random
import re
import sys
import time
import warnings
import zipfile
from pathlib import Path

import networkx as nx
import pytest

import convlab
from convlab.importers import FORMATS, claude_ai, detect, librechat, oasst
from convlab.tree import RECORDED

from realdata import MISSING, log_files, require, stats

CLAUDE_CODE = "claude_code/"

#: What each real file is, by content (several are named after another format).
EXPECTED_FORMAT = {
    "chatgpt/chatgpt-photosynthesis.owi.json": "chatgpt",
    "chatgpt/chatgpt-tree.librechat.json": "chatgpt",
    "claude_ai/claude-export-redacted.owi.json": "claude_ai",
    "librechat/librechat-linear.json": "librechat",
    "librechat/librechat-tree.json": "librechat",
    "oasst/oasst1-en-trees-001-060.jsonl": "oasst",
    "openwebui/webui-goldwater.owi.json": "openwebui",
}


def branch_points(c: convlab.Conversation) -> int:
    return sum(1 for _, d in c.tree.out_degree() if d > 1)


def longest_path(c: convlab.Conversation) -> int:
    g = c.tree
    return max((len(nx.ancestors(g, n)) + 1 for n in g if g.out_degree(n) == 0), default=0)


# -- every real file -----------------------------------------------------------


@pytest.mark.realdata
@pytest.mark.parametrize("name", log_files())
def test_every_real_file_imports_without_a_warning(name):
    real = require()
    assert name != MISSING
    convs = convlab.read(real / name, progress=False)  # a ReadWarning would fail here (filterwarnings)
    assert convs, name
    for c in convs:
        assert isinstance(c, convlab.Conversation)
        assert c.format == EXPECTED_FORMAT.get(name, "claude_code")
        assert c.source == str(real / name)
        for _, attrs in c.tree.nodes(data=True):
            assert set(RECORDED) <= set(attrs), attrs["id"]
            assert attrs["role"] in ("system", "user", "assistant", "tool")
            assert attrs["kind"] in ("message", "summary")
        if len(c):
            assert c.head in c.tree
            path = c.path()
            assert path[-1]["id"] == c.head and path[0]["parent"] is None
            assert all(b["parent"] == a["id"] for a, b in zip(path, path[1:]))


@pytest.mark.realdata
def test_stats_covers_every_real_file():
    real = require()
    assert set(log_files()) == set(stats()), "a real file without counts, or counts without a file"
    assert set(EXPECTED_FORMAT) | {f for f in stats() if f.startswith(CLAUDE_CODE)} == set(stats())
    assert real.is_dir()


@pytest.mark.realdata
@pytest.mark.parametrize("name", [f for f in log_files() if not f.startswith(CLAUDE_CODE)])
def test_counts_equal_stats(name):
    real = require()
    assert name != MISSING
    want = stats()[name]
    convs = convlab.read(real / name, progress=False)
    assert len(convs) == want["conversations"]
    assert sum(len(c) for c in convs) == want["message_nodes"]
    assert sum(branch_points(c) for c in convs) == want["branch_points"]
    assert max(longest_path(c) for c in convs) == want["max_path_msgs"]
    assert sum(len(c.roots) for c in convs) == want["message_roots"]
    assert sum(1 for c in convs if branch_points(c)) == want["convs_with_branches"]


@pytest.mark.realdata
def test_reading_the_folder_reads_every_log_once_and_passes_over_the_rest():
    real = require()
    convs = convlab.read(real, progress=False)  # README, MANIFEST, STATS, LICENSES are passed over quietly
    s = stats()
    assert len(convs) == sum(v["conversations"] for v in s.values())
    assert {c.source for c in convs} == {str(real / f) for f in s}
    by_file = {}
    for c in convs:
        by_file.setdefault(c.source, []).append(c)
    for f, want in s.items():
        if not f.startswith(CLAUDE_CODE):
            assert sum(len(c) for c in by_file[str(real / f)]) == want["message_nodes"], f


# -- progress bars ---------------------------------------------------------------
# A bar counts the real work (files, conversations, or the bytes of a streamed
# export), shows only in a terminal or a notebook and only for work that takes
# longer than a second, and never with progress=False. Work is made slow here
# by slowing the importer's parse_one, so the real delay is what is tested.


class Terminal(io.StringIO):
    """A stream that says it is a terminal (as a console's stderr does)."""

    def isatty(self):
        return True


def as_terminal(monkeypatch):
    """stderr as a terminal, for the rest of the test (set in the test's body: pytest's capture
    puts its own stderr back between a fixture's setup and the test)."""
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


def slow(monkeypatch, module, seconds):
    """Make every conversation of ``module`` take ``seconds`` to build."""
    parse_one = module.parse_one

    def slowly(*args):
        time.sleep(seconds)
        return parse_one(*args)

    monkeypatch.setattr(module, "parse_one", slowly)


@pytest.mark.realdata
def test_a_read_under_a_second_prints_nothing_even_in_a_terminal(monkeypatch):
    """Progress bars ... do not print at all for work under a second (issue 15)."""
    real = require()
    terminal = as_terminal(monkeypatch)
    convs = convlab.read(real / "claude_ai" / "claude-export-redacted.owi.json", progress=True)
    assert len(convs) == 85 and terminal.getvalue() == ""
    assert convlab.read(real / "librechat", progress=True) and terminal.getvalue() == ""


@pytest.mark.realdata
def test_a_long_read_outside_a_terminal_prints_nothing(monkeypatch, capsys):
    """Progress bars ... do not print at all ... outside a terminal or notebook (issue 15)."""
    real = require()
    slow(monkeypatch, claude_ai, 0.02)
    assert len(convlab.read(real / "claude_ai" / "claude-export-redacted.owi.json", progress=True)) == 85
    assert capsys.readouterr().err == ""


@pytest.mark.realdata
def test_a_long_read_in_a_terminal_shows_the_conversations_read(monkeypatch):
    """A streamed export's bar counts its bytes and names the conversations read; progress=False shows none. (An
    export of up to 64 MB is parsed whole, its bar counting conversations; this one, 224 KB, is streamed here.)"""
    real = require()
    terminal = as_terminal(monkeypatch)
    path = real / "claude_ai" / "claude-export-redacted.owi.json"
    slow(monkeypatch, claude_ai, 0.02)
    convlab.read(path, progress=True)
    assert terminal.getvalue().strip().split("\r")[-1].startswith("claude-export-redacted.owi.json: 100%")
    assert "85/85" in terminal.getvalue().strip().split("\r")[-1]  # parsed whole: its conversations counted
    terminal.seek(0), terminal.truncate()
    monkeypatch.setattr(convlab.importers, "_STREAMED", 0)
    convlab.read(path, progress=True)
    out = terminal.getvalue()
    last = out.strip().split("\r")[-1]  # the bar as it stays on screen
    size = f"{path.stat().st_size / 1024:.0f}k"
    assert last.startswith("claude-export-redacted.owi.json: 100%") and f"{size}/{size}" in last, last
    assert last.endswith("85 conversations]"), last
    terminal.seek(0), terminal.truncate()
    convlab.read(path, progress=False)
    assert terminal.getvalue() == ""


@pytest.mark.realdata
def test_a_long_read_of_json_lines_counts_conversations(monkeypatch):
    real = require()
    terminal = as_terminal(monkeypatch)
    slow(monkeypatch, oasst, 0.03)
    convlab.read(real / "oasst" / "oasst1-en-trees-001-060.jsonl", progress=True)
    last = terminal.getvalue().strip().split("\r")[-1]
    assert last.startswith("oasst1-en-trees-001-060.jsonl: 100%") and "60/60" in last and "conversation/s" in last, last


@pytest.mark.realdata
def test_a_long_folder_read_counts_files(monkeypatch):
    real = require()
    terminal = as_terminal(monkeypatch)
    slow(monkeypatch, librechat, 0.6)
    convlab.read(real / "librechat", progress=True)
    last = terminal.getvalue().strip().split("\r")[-1]
    assert last.startswith("reading librechat: 100%") and "2/2" in last and ("file/s" in last or "s/file" in last), last  # a slow machine: s/file
    terminal.seek(0), terminal.truncate()
    convlab.read(real / "librechat", progress=False)
    assert terminal.getvalue() == ""


# -- detection by content ------------------------------------------------------


@pytest.mark.parametrize(
    "value, lines, name",
    [
        ({"mapping": {}, "current_node": None}, False, "chatgpt"),
        ([{"uuid": "c", "name": "", "chat_messages": []}], False, "claude_ai"),
        ({"history": {"messages": {}, "currentId": None}}, False, "openwebui"),
        ([{"id": "x", "chat": {"history": {"messages": {}}}}], False, "openwebui"),
        ({"conversationId": "c", "messages": [{"messageId": "m", "parentMessageId": None}]}, False, "librechat"),
        ({"conversationId": "c", "messages": [{"id": "m", "parentMessageId": None, "role": "user"}]}, False, "generic"),
        ([{"id": "m", "parentId": None, "role": "user", "content": "hi"}], False, "generic"),
        ([{"id": "m", "parentId": None, "role": "user", "content": "hi"}], True, "generic"),
        ({"message_tree_id": "t", "prompt": {"message_id": "p", "role": "prompter", "text": "q"}}, False, "oasst"),
        ([{"role": "user", "content": "hi"}], False, "openai"),
        ({"messages": [{"role": "user", "content": "hi"}]}, False, "openai"),
        ([{"role": "user", "content": "hi"}], True, "openai"),
        ([{"type": "session.started", "agent": "bot", "config": {}}], True, "convlab"),
        ([{"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "x"}}], True, "claude_code"),
        ({"some": "thing"}, False, None),
        ([1, 2, 3], False, None),
    ],
)
def test_detect_by_content(value, lines, name):
    assert detect(value, lines) == name


def test_file_names_do_not_decide_the_format(tmp_path):
    p = tmp_path / "conversations.json"  # a ChatGPT name, OpenAI content
    p.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert convlab.read(p)[0].format == "openai"


# -- what cannot be read -------------------------------------------------------


def test_unknown_shape_is_a_read_error_naming_the_file(tmp_path):
    p = tmp_path / "stats.json"
    p.write_text(json.dumps({"totals": {"conversations": 1}}))
    with pytest.raises(convlab.ReadError, match=r"stats\.json.*not a chat log"):
        convlab.read(p)


@pytest.mark.parametrize("text", ["", "   \n", "hello, not json", "{\"mapping\": {\"a\": ", "\x00\x01"])
def test_unreadable_files_are_read_errors(tmp_path, text):
    p = tmp_path / "broken.json"
    p.write_text(text)
    with pytest.raises(convlab.ReadError, match="broken.json"):
        convlab.read(p)


def test_missing_path_is_a_read_error(tmp_path):
    with pytest.raises(convlab.ReadError, match="no such file"):
        convlab.read(tmp_path / "nope.json")


def test_bad_format_name_is_refused(tmp_path):
    p = tmp_path / "a.json"
    p.write_text("[]")
    with pytest.raises(ValueError, match="format must be one of"):
        convlab.read(p, format="chatgtp")


def test_empty_list_is_no_conversations(tmp_path):
    p = tmp_path / "conversations.json"
    p.write_text("[]")
    assert convlab.read(p) == []


def test_format_override_reads_as_told(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert convlab.read(p, format="openai")[0].format == "openai"


def test_a_forced_format_of_no_shape_convlab_knows_is_a_read_error(tmp_path):
    p = tmp_path / "stats.json"
    p.write_text(json.dumps({"totals": {"conversations": 1}}))
    with pytest.raises(convlab.ReadError, match=r"stats\.json: does not fit format='chatgpt'.*not a chat log"):
        convlab.read(p, format="chatgpt")


@pytest.mark.realdata
@pytest.mark.parametrize("format", FORMATS)
def test_a_forced_format_that_does_not_fit_is_a_read_error(format):
    """A forced format= that does not fit the file is a ReadError that says so (issue 15)."""
    real = require()
    others = [name for name in log_files() if EXPECTED_FORMAT.get(name, "claude_code") != format and (name, format) not in ALSO_FITS]
    assert others
    for name in others:
        fits = EXPECTED_FORMAT.get(name, "claude_code")
        with pytest.raises(convlab.ReadError) as err:
            convlab.read(real / name, format=format, progress=False)
        assert str(err.value).startswith(f"{real / name}: does not fit format={format!r}: it reads as {fits} "), str(err.value)


#: Real files that fit a second format too, and what that format reads.
ALSO_FITS = {("openwebui/webui-goldwater.owi.json", "openai"), ("openwebui/webui-goldwater.owi.json", "generic")}


@pytest.mark.realdata
def test_a_file_that_fits_two_formats_reads_as_the_one_forced():
    """Open WebUI keeps the active path beside the tree as an OpenAI message list: format='openai' reads that list."""
    real = require()
    [tree] = convlab.read(real / "openwebui/webui-goldwater.owi.json")
    [flat] = convlab.read(real / "openwebui/webui-goldwater.owi.json", format="openai")
    assert (tree.format, flat.format) == ("openwebui", "openai")
    assert [m["content"] for m in flat.path()] == [m["content"] for m in tree.path()]


@pytest.mark.realdata
def test_a_forced_format_in_a_folder_passes_over_the_files_it_does_not_fit_and_says_so(tmp_path):
    real = require()
    with pytest.warns(convlab.ReadWarning) as record:
        convs = convlab.read(real / "librechat", format="claude_code", progress=False)
    assert convs == []
    text = "\n".join(str(w.message) for w in record)
    assert "librechat-tree.json: does not fit format='claude_code': it reads as librechat" in text and "passed over" in text
    assert "librechat-linear.json: does not fit format='claude_code'" in text


def test_a_folder_warns_about_a_broken_log_and_reads_the_rest(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "good.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    (tmp_path / "broken.json").write_text('{"mapping": {"a": ')
    (tmp_path / "notes.txt").write_text("not a log")
    (tmp_path / "other.json").write_text(json.dumps({"unrelated": True}))
    (tmp_path / ".hidden.json").write_text("{")
    with pytest.warns(convlab.ReadWarning, match=r"broken\.json.*passed over") as caught:
        convs = convlab.read(tmp_path, progress=False)
    assert [c.source for c in convs] == [str(tmp_path / "sub" / "good.json")]
    # issue 21: a program recognises the file left out by a field, not by the sentence
    assert [w.message.passed_over for w in caught] == [str(tmp_path / "broken.json")]


def test_gzip_cut_short_keeps_what_decompresses(tmp_path):
    lines = "\n".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 50}) for i in range(200))
    packed = gzip.compress(lines.encode())
    p = tmp_path / "chat.jsonl.gz"
    p.write_bytes(packed[: len(packed) // 2])
    with pytest.warns(convlab.ReadWarning) as record:
        [c] = convlab.read(p)
    text = " ".join(str(w.message) for w in record)
    assert "gzip data cut short" in text and "chat.jsonl.gz" in text
    assert 0 < len(c) < 200


def test_a_json_array_cut_short_keeps_its_complete_items(tmp_path):
    convs = [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]} for i in range(5)]
    text = json.dumps(convs, indent=1)
    p = tmp_path / "many.json"
    p.write_text(text[: text.index("q3") + 1])
    with pytest.warns(convlab.ReadWarning, match=r"many\.json.*kept the 3 complete item"):
        got = convlab.read(p)
    assert [c.path()[0]["content"] for c in got] == ["q0", "q1", "q2"]


def _openai_conversations(n):
    return [{"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}
            for i in range(n)]


def test_an_array_cut_inside_its_first_item_is_a_read_error(tmp_path):
    text = json.dumps(_openai_conversations(2))
    p = tmp_path / "many.json"
    p.write_text(text[:30])
    with pytest.raises(convlab.ReadError, match=r"many\.json: not valid JSON.*cut short"):
        convlab.read(p)


def test_text_after_the_array_keeps_every_item_with_a_warning(tmp_path):
    p = tmp_path / "many.json"
    p.write_text(json.dumps(_openai_conversations(3)) + " trailing")
    with pytest.warns(convlab.ReadWarning, match=r"many\.json: JSON breaks .*kept the 3 complete item"):
        convs = convlab.read(p)
    assert [c.id for c in convs] == ["c0", "c1", "c2"]


@pytest.mark.parametrize("value", ["NaN", "-Infinity", str(2**70), str(-(2**70))])
def test_what_json_reads_in_an_array_is_read_and_each_warning_given_once(tmp_path, value):
    """A streamed array reads what json.load reads: a value the stream cannot take (NaN, an integer
    past 64 bits), after conversations were already built, makes the file be read whole, and each
    warning is given once; such a value is read repaired, and said (rev 4: nothing JSON cannot carry)."""
    convs = _openai_conversations(60)
    convs[0]["messages"][1]["role"] = "critic"  # a warning for conversation c0
    convs.append({"id": "c60", "messages": [{"role": "user", "content": "x", "metadata": {"n": "VALUE"}}]})
    p = tmp_path / "many.json"
    p.write_text(json.dumps(convs).replace('"VALUE"', value))
    with pytest.warns(convlab.ReadWarning) as record:
        got = convlab.read(p)
    said = [str(w.message) for w in record]
    assert said[0] == f"{p}, conversation 'c0': node 'm2': unknown role 'critic'; message left out"
    assert len(said) == 2 and "conversation 'c60'" in said[1] and "JSON cannot carry" in said[1]  # each once
    assert [c.id for c in got] == [f"c{i}" for i in range(61)]
    # read repaired (jsondata.repaired): NaN and infinities as None, an integer past 64 bits as its digits
    assert got[60].path()[0]["metadata"]["n"] == (None if "N" in value or "I" in value else value)


def test_a_byte_order_mark_before_the_array(tmp_path):
    p = tmp_path / "many.json"
    p.write_bytes(b"\xef\xbb\xbf \n" + json.dumps(_openai_conversations(2)).encode())
    assert [c.id for c in convlab.read(p)] == ["c0", "c1"]


def test_escapes_read_as_json_reads_them(tmp_path):
    """Non-ASCII text written as \\u escapes (surrogate pairs included) and numbers read as json.load reads them."""
    doc = [{"id": "c", "messages": [{"role": "user", "content": "caf\u00e9 \u2014 \U0001F600", "created_at": 1714585031.148505}]}]
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(doc))
    [c] = convlab.read(p)
    [m] = c.path()
    assert m["content"] == doc[0]["messages"][0]["content"] and m["time"] == 1714585031.148505


def test_jsonl_bad_middle_line_is_left_out_with_a_warning(tmp_path):
    rows = [json.dumps({"role": "user", "content": "a"}), "{not json", json.dumps({"role": "assistant", "content": "b"})]
    p = tmp_path / "chat.jsonl"
    p.write_text("\n".join(rows))
    with pytest.warns(convlab.ReadWarning, match=r"chat\.jsonl: lines 2 are not valid JSON"):
        [c] = convlab.read(p)
    assert [m["content"] for m in c.path()] == ["a", "b"]


# -- zip archives ---------------------------------------------------------------


@pytest.mark.realdata
def test_a_zip_of_real_exports_reads_every_member(tmp_path):
    real = require()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.write(real / "chatgpt" / "chatgpt-tree.librechat.json", "export/conversations.json")
        z.write(real / "oasst" / "oasst1-en-trees-001-060.jsonl", "oasst.jsonl")
        z.writestr("export/user.json", json.dumps({"id": "user-1", "email": "x"}))
        z.writestr("export/chat.html", "<html></html>")
    p = tmp_path / "export.zip"
    p.write_bytes(buf.getvalue())
    convs = convlab.read(p, progress=False)
    assert [c.format for c in convs] == ["chatgpt"] + ["oasst"] * 60
    assert convs[0].source == f"{p}!export/conversations.json"


def test_a_zip_without_a_log_is_a_read_error(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "hello")
    p = tmp_path / "x.zip"
    p.write_bytes(buf.getvalue())
    with pytest.raises(convlab.ReadError, match=r"x\.zip.*no chat log"):
        convlab.read(p)


def test_a_truncated_zip_is_a_read_error(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("conversations.json", json.dumps([{"role": "user", "content": "x" * 5000}]))
    p = tmp_path / "x.zip"
    p.write_bytes(buf.getvalue()[:60])
    with pytest.raises(convlab.ReadError, match=r"x\.zip"):
        convlab.read(p)


# -- damaged real files, for every importer --------------------------------------
# Each damage is made here from a real file: the tree's parent link of one
# message points nowhere (dangling), two messages are each other's ancestors
# (a cycle), or the file is cut in the middle. Each gives a ReadWarning that
# names the file, the conversation and the node, or a ReadError naming the
# file; never another exception.


def _json(real, name):
    return json.loads((real / name).read_text())


def _mapping_nodes(conv):
    return [k for k, v in conv["mapping"].items() if v.get("message")]


def chatgpt_damage(real, how):
    doc = _json(real, "chatgpt/chatgpt-tree.librechat.json")
    conv = doc[0]
    m = conv["mapping"]
    if how == "dangling":
        m["aaa236a3-cdfc-4eb1-b5c5-790c6641f880"]["parent"] = "gone-0001"
        return doc, conv["conversation_id"], "aaa236a3-cdfc-4eb1-b5c5-790c6641f880"
    # cycle: "hi again" under its own descendant "tell me a joke"
    m["aaa236a3-cdfc-4eb1-b5c5-790c6641f880"]["parent"] = "aaa20127-b9e3-44f6-afbe-a2475838625a"
    return doc, conv["conversation_id"], "aaa236a3-cdfc-4eb1-b5c5-790c6641f880"


def claude_ai_damage(real, how):
    doc = _json(real, "claude_ai/claude-export-redacted.owi.json")
    conv = next(c for c in doc if len(c["chat_messages"]) >= 4)
    ms = conv["chat_messages"]
    prev = "00000000-0000-4000-8000-000000000000"
    for m in ms:
        m["parent_message_uuid"], prev = prev, m["uuid"]
    if how == "dangling":
        ms[2]["parent_message_uuid"] = "gone-0001"
    else:
        ms[1]["parent_message_uuid"] = ms[3]["uuid"]
    return doc, conv["uuid"], ms[2]["uuid"] if how == "dangling" else ms[1]["uuid"]


def openwebui_damage(real, how):
    doc = _json(real, "openwebui/webui-goldwater.owi.json")
    ms = doc["history"]["messages"]
    user, reply = list(ms)
    if how == "dangling":
        ms[reply]["parentId"] = "gone-0001"
        return doc, "#0", reply
    ms[user]["parentId"] = reply
    return doc, "#0", user


def librechat_damage(real, how):
    doc = _json(real, "librechat/librechat-tree.json")
    ms = doc["messages"]
    thanks = ms[0]["children"][0]["children"][0]
    if how == "dangling":
        thanks["parentMessageId"] = "gone-0001"
    else:
        thanks["parentMessageId"] = thanks["children"][1]["children"][0]["messageId"]
    return doc, doc["conversationId"], thanks["messageId"]


def oasst_damage(real, how):
    lines = (real / "oasst" / "oasst1-en-trees-001-060.jsonl").read_text().splitlines()
    k = next(k for k, line in enumerate(lines) if any(r["replies"] for r in json.loads(line)["prompt"]["replies"]))
    tree = json.loads(lines[k])
    reply = next(r for r in tree["prompt"]["replies"] if r["replies"])
    if how == "dangling":
        reply["parent_id"] = "gone-0001"
        node = reply["message_id"]
    else:
        tree["prompt"]["parent_id"] = reply["replies"][0]["message_id"]
        node = tree["prompt"]["message_id"]
    lines[k] = json.dumps(tree)
    return "\n".join(lines), tree["message_tree_id"], node


def claude_code_damage(real, how):
    rows = [json.loads(l) for l in (real / "claude_code" / "tool_heavy.jsonl").read_text().splitlines()]
    users = [r for r in rows if r.get("type") == "user" and isinstance(r["message"]["content"], str)]
    target = users[1]
    if how == "dangling":
        target["parentUuid"] = "gone-0001"
    else:  # a later message row becomes the parent of an earlier one
        later = [r for r in rows if r.get("type") == "user"][-1]
        target["parentUuid"] = later["uuid"]
    return "\n".join(json.dumps(r) for r in rows), rows[1]["sessionId"], target["uuid"]


DAMAGE = {
    "chatgpt": ("chatgpt/chatgpt-tree.librechat.json", chatgpt_damage, 12),
    "claude_ai": ("claude_ai/claude-export-redacted.owi.json", claude_ai_damage, None),
    "openwebui": ("openwebui/webui-goldwater.owi.json", openwebui_damage, 2),
    "librechat": ("librechat/librechat-tree.json", librechat_damage, 9),
    "oasst": ("oasst/oasst1-en-trees-001-060.jsonl", oasst_damage, None),
    "claude_code": ("claude_code/tool_heavy.jsonl", claude_code_damage, 17),
}


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", sorted(DAMAGE))
@pytest.mark.parametrize("how", ["dangling", "cycle"])
def test_broken_parent_links_warn_naming_file_conversation_and_node(tmp_path, fmt, how):
    real = require()
    name, damage, nodes = DAMAGE[fmt]
    doc, cid, node = damage(real, how)
    p = tmp_path / Path(name).name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.warns(convlab.ReadWarning) as record:
        convs = convlab.read(p, progress=False)
    message = "\n".join(str(w.message) for w in record if issubclass(w.category, convlab.ReadWarning))
    assert p.name in message and repr(cid) in message and repr(node) in message
    assert ("is not in the" in message) if how == "dangling" else ("loop" in message)
    c = next(c for c in convs if c.id == cid)
    assert node in c.tree and c.tree.nodes[node]["parent"] is None  # kept, as a top-level message
    assert nx.is_forest(c.tree) and c.head in c.tree
    if nodes is not None:
        assert len(c) == nodes  # nothing lost


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", sorted(DAMAGE))
def test_a_file_cut_in_the_middle_warns_or_names_the_file(tmp_path, fmt):
    real = require()
    name = DAMAGE[fmt][0]
    raw = (real / name).read_bytes()
    p = tmp_path / Path(name).name
    p.write_bytes(raw[: len(raw) // 2])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            convs = convlab.read(p, progress=False)
        except convlab.ReadError as err:
            assert p.name in str(err) and "cut short" in str(err)
            return
    texts = [str(w.message) for w in record if issubclass(w.category, convlab.ReadWarning)]
    assert texts and all(p.name in t for t in texts)
    assert "cut short" in texts[0]
    assert convs and sum(len(c) for c in convs) < sum(len(c) for c in convlab.read(real / name, progress=False))


# -- anything else: never a bare exception ----------------------------------------

JUNK = [None, 0, -1, 1.5, True, "", "x", [], {}, [None], {"a": None}, "00000000-0000-0000-0000-000000000000"]


def _mutate(value, rng):
    """Replace one randomly chosen value (at any depth) with junk, or delete a key."""
    value = copy.deepcopy(value)
    slots = []

    def walk(v):
        if isinstance(v, dict):
            for k in list(v):
                slots.append((v, k))
                walk(v[k])
        elif isinstance(v, list):
            for i in range(len(v)):
                slots.append((v, i))
                walk(v[i])

    walk(value)
    if not slots:
        return rng.choice(JUNK)
    holder, key = rng.choice(slots)
    if isinstance(holder, dict) and rng.random() < 0.3:
        del holder[key]
    else:
        holder[key] = rng.choice(JUNK)
    return value


FUZZ_FILES = [
    "chatgpt/chatgpt-tree.librechat.json",
    "chatgpt/chatgpt-photosynthesis.owi.json",
    "openwebui/webui-goldwater.owi.json",
    "librechat/librechat-tree.json",
    "librechat/librechat-linear.json",
    "claude_code/short.jsonl",
    "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
]


@pytest.mark.realdata
@pytest.mark.parametrize("name", FUZZ_FILES)
def test_random_damage_never_raises_anything_but_read_error(tmp_path, name):
    real = require()
    path = real / name
    if name.endswith(".jsonl"):
        original = [json.loads(l) for l in path.read_text().splitlines()]
    else:
        original = json.loads(path.read_text())
    rng = random.Random(name)
    p = tmp_path / path.name
    for _ in range(150):
        doc = _mutate(original, rng)
        for _ in range(rng.randint(0, 3)):
            doc = _mutate(doc, rng)
        if name.endswith(".jsonl") and isinstance(doc, list):
            p.write_text("\n".join(json.dumps(r) for r in doc))
        else:
            p.write_text(json.dumps(doc))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", convlab.ReadWarning)
            try:
                convs = convlab.read(p, progress=False)
            except convlab.ReadError as err:
                assert p.name in str(err)
                continue
        for c in convs:
            assert len(c) == 0 or nx.is_forest(c.tree)
            assert c.head is None or c.head in c.tree
            assert c.format in FORMATS


# -- the real-data fixture itself ---------------------------------------------------


def test_missing_real_data_skips_locally_and_fails_in_ci(monkeypatch, tmp_path):
    import realdata

    monkeypatch.setattr(realdata, "REAL", tmp_path / "nowhere")
    assert realdata.log_files() == [MISSING] and realdata.stats() == {}
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        realdata.require()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        realdata.require()


# -- shapes that once crashed (found by fuzzing) ---------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        # an unhashable row type and parentUuid
        [{"type": {"x": 1}, "uuid": "a", "parentUuid": None, "sessionId": "s"},
         {"type": "user", "uuid": "u", "parentUuid": {"x": 1}, "sessionId": "s", "isCompactSummary": True,
          "message": {"role": "user", "content": "hi"}}],
        # junk usage numbers on a reply
        [{"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}},
         {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s",
          "message": {"id": "m", "role": "assistant", "content": [], "usage": {"input_tokens": "00000000", "cache_read_input_tokens": {}, "output_tokens": 1.5}}}],
    ],
)
def test_claude_code_junk_values_are_not_a_crash(tmp_path, lines):
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in lines))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        [c] = convlab.read(p)
    df = convlab.frame(c)
    assert len(df) == len(c) >= 1
    assert df.input_tokens.isna().all()


def test_text_parts_without_text_are_kept_as_given(tmp_path):
    doc = [{"uuid": "c", "name": "n", "chat_messages": [
        {"uuid": "m1", "sender": "human", "content": [{"type": "text"}, {"type": "text", "text": 1.5}]}]}]
    p = tmp_path / "cai.json"
    p.write_text(json.dumps(doc))
    [c] = convlab.read(p)
    assert c.tree.nodes["m1"]["content"] == [{"type": "text"}, {"type": "text", "text": 1.5}]


def test_the_files_of_a_folder_are_those_rglob_finds_less_the_hidden_ones(tmp_path):
    """``log_files`` walks a folder with one scandir a folder: the same files as ``rglob`` gives, sorted, less those
    hidden or under a hidden folder (the folder's own name aside), not walking into a folder reached by a link."""
    root = tmp_path / ".claude" / "projects"  # a hidden folder of its own: read whole
    # "a-b/z.json" sorts before "a/s1.jsonl" as a string ("-" < "/"), after it as a path (parts: "a" < "a-b")
    for rel in ["a/s1.jsonl", "a/b/s2.jsonl", "c.json", ".hidden.json", ".git/objects/x.json", "a/.cache/y.json", "a-b/z.json"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("{}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "far.json").write_text("{}")
    (root / "linked").symlink_to(elsewhere, target_is_directory=True)
    (root / "link.json").symlink_to(root / "c.json")
    (root / "broken.json").symlink_to(root / "nowhere.json")
    expected = sorted(f for f in root.rglob("*") if f.is_file()
                      and not any(part.startswith(".") for part in f.relative_to(root).parts))
    got = convlab.importers.log_files(root)
    assert got == expected
    assert [f.relative_to(root).as_posix() for f in got] == ["a/b/s2.jsonl", "a/s1.jsonl", "a-b/z.json", "c.json", "link.json"]


def _read_all(path: Path) -> tuple[list | None, list[str] | str]:
    """The conversations read (id, format, head, path, roots) and the warnings as they end (what was kept); None and
    the error for a refused file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            convs = convlab.read(path, progress=False)
        except convlab.ReadError as err:
            return None, str(err)
    said = [re.sub(r".*(cut short\?\); kept)", r"\1", str(w.message).replace(str(path), "F")) for w in caught]
    return [(c.id, c.format, c.head, c.path(), sorted(c.message_tree.children(None))) for c in convs], said


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["claude_ai/claude-export-redacted.owi.json", "chatgpt/chatgpt-photosynthesis.owi.json",
                                  "openwebui/webui-goldwater.owi.json"])
@pytest.mark.parametrize("cut", [None, 0.6])
def test_an_export_parsed_whole_reads_as_it_reads_streamed(tmp_path, monkeypatch, name, cut):
    """A JSON array of up to 64 MB is parsed whole (twice as fast), a larger one streamed item by item: the same
    conversations and the same warnings either way, for a whole export and one cut short (where it breaks said as
    a line and column parsed whole, as a byte streamed); an export of one conversation cut short is refused by both."""
    real = require()
    raw = (real / name).read_bytes()
    path = tmp_path / Path(name).name
    path.write_bytes(raw if cut is None else raw[: int(len(raw) * cut)])
    whole = _read_all(path)
    monkeypatch.setattr(convlab.importers, "_STREAMED", 0)
    streamed = _read_all(path)
    if whole[0] is None:
        assert cut and streamed[0] is None and "cut short?" in whole[1] and "cut short?" in streamed[1]
    else:
        assert whole == streamed and whole[0]
        assert cut is None or any(w.startswith("cut short?); kept the") for w in whole[1])


@pytest.mark.realdata
def test_a_read_builds_no_networkx_graph_until_one_is_asked_for():
    """A conversation read keeps its messages in the tree's flat store; the networkx graph (three containers more a
    message) is built the first time ``Conversation.tree`` is asked for, not by the read's own checks."""
    real = require()
    convs = [c for fmt in ("librechat", "oasst", "claude_code") for c in convlab.read(real / fmt, progress=False)]
    assert convs and all(c.message_tree._store._built is None for c in convs)
    c = convs[0]
    assert c.tree.number_of_nodes() == len(c) and c.message_tree._store._built is not None


def test_an_openassistant_reply_that_is_not_a_message_is_named_by_its_place_and_the_best_ranked_reply_leads():
    """What an OpenAssistant tree holds that is no message is left out, with its replies, and named by its place in
    the tree (made only for the warning: a read keeps the places as pairs); the head follows the best-ranked reply
    (the lowest ``rank``, the first of equals)."""
    tree = {"message_tree_id": "t1", "prompt": {"message_id": "p", "role": "prompter", "text": "hi", "replies": [
        {"message_id": "a", "role": "assistant", "text": "x", "rank": 1, "replies": [
            7, {"message_id": "u2", "role": "prompter", "text": "y", "replies": ["junk"]}]},
        {"message_id": "b", "role": "assistant", "text": "z", "rank": 0},
        {"message_id": "c", "role": "assistant", "text": "w", "rank": 0}]}}
    with pytest.warns(convlab.ReadWarning) as caught:
        [conv] = oasst.parse(convlab.importers.documents.Document("o.jsonl", "lines", [tree]))
    said = " ".join(str(w.message) for w in caught)
    assert "prompt.replies[0].replies[0] is not a message" in said
    assert "prompt.replies[0].replies[1].replies[0] is not a message" in said
    assert sorted(n["id"] for n in conv.message_tree.nodes_in_order()) == ["a", "b", "c", "p", "u2"]  # 7 and "junk" out
    assert conv.head == "b"
