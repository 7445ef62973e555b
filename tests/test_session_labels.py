"""Session.label / unlabel / labels: convlab's own log events, surviving Session.load; labels read from logs."""

from __future__ import annotations

import json

import pytest

import convlab
from convlab.log import read_tree

from agent_samples import lines, pi_v3_rows
from session_support import m, make, message, view


def two_branches(**kw):
    s = make(**kw)
    s.submit(message(m("u1", "weather in NYC?")))
    s.submit(view([m("u1", "weather in NYC?"), m("u2", "and LA?")]))
    return s


def test_a_label_is_logged_listed_and_replaced_and_removed():
    s = two_branches()
    n = len(s.events)
    s.label("u1", "first question")
    s.label("e1", "NYC answer")
    s.label("u1", "the first question")
    assert s.labels() == {"e1": "NYC answer", "u1": "the first question"}
    assert [(e["type"], e["node"]) for e in s.events[n:]] == [("label.set", "u1"), ("label.set", "e1"), ("label.set", "u1")]
    assert all("turn_id" not in e for e in s.events[n:])
    s.unlabel("e1")
    s.unlabel("e1")  # nothing to take off: nothing logged
    assert s.labels() == {"u1": "the first question"} and [e["type"] for e in s.events[n:]].count("label.removed") == 1
    s.label("u1", "the first question")  # the same label again: nothing logged
    assert len(s.events) == n + 4


@pytest.mark.parametrize("lazy", [False, True])
def test_labels_survive_session_load(tmp_path, lazy):
    path = tmp_path / "s.jsonl"
    s = two_branches(log=path)
    s.label("e1", "off the path")
    s.label("u2", "on the path")
    s.unlabel("u2")
    s.label("u1", "root")
    loaded = convlab.Session.load(path, lazy=lazy)
    assert loaded.labels() == s.labels() == {"e1": "off the path", "u1": "root"}
    assert loaded.snapshot() == s.snapshot()
    loaded.unlabel("e1")
    assert convlab.Session.load(path).labels() == {"u1": "root"}


def test_a_label_does_not_touch_what_the_model_reads_and_can_be_set_while_a_turn_runs():
    s = two_branches()
    s.autorun = False
    s.submit(message(m("u3", "more")))
    assert s.running is not None
    before = (s.path(), s.tokens(), s.head)
    s.label("u3", "asked while running")
    assert (s.path(), s.tokens(), s.head) == before and s.running is not None
    s.run()
    assert s.labels() == {"u3": "asked while running"}


@pytest.mark.parametrize(("node", "text", "says"), [
    ("nope", "x", "node: 'nope' is not a recorded message"),
    (3, "x", "node: 3 is not a recorded message"),
    ("u1", "", "a non-empty text"),
    ("u1", "   ", "a non-empty text"),
    ("u1", None, "a non-empty text"),
    ("u1", "x" * 201, "at most 200"),
    ("u1", "bad \ud800", "lone surrogate"),
])
def test_a_bad_label_is_refused_and_writes_nothing(node, text, says):
    s = two_branches()
    n = len(s.events)
    with pytest.raises(convlab.Refused, match=says) as err:
        s.label(node, text)
    assert err.value.status == 400 and len(s.events) == n and s.labels() == {}
    with pytest.raises(convlab.Refused):
        s.unlabel("nope")


def test_a_label_that_cannot_be_written_changes_nothing(tmp_path, monkeypatch):
    import convlab.log as log

    path = tmp_path / "s.jsonl"
    s = two_branches(log=path)

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(log, "write_fd", full)
    with pytest.raises(convlab.LogError):
        s.label("u1", "x")
    monkeypatch.undo()
    assert s.labels() == {} and convlab.Session.load(path).labels() == {}
    s.label("u1", "x")
    assert convlab.Session.load(path).labels() == {"u1": "x"}


def test_the_session_log_importer_and_read_tree_keep_the_labels(tmp_path):
    path = tmp_path / "s.jsonl"
    s = two_branches(log=path)
    s.label("e1", "NYC")
    tree, _agent = read_tree(path)
    assert tree.labels == {"e1": "NYC"}
    (c,) = convlab.read(path)
    assert c.labels() == {"e1": "NYC"}


def test_a_logged_label_event_that_does_not_fit_is_a_log_error_naming_the_line(tmp_path):
    s = two_branches()
    events = [*s.events, {"seq": 99, "time": 0, "type": "label.set", "node": "ghost", "label": "x"}]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + json.dumps({"seq": 100, "time": 0, "type": "turn.completed"}) + "\n")
    with pytest.raises(convlab.LogError, match=f"line {len(events)}"):
        convlab.Session.load(path, append=False)


def test_pi_label_entries_import_as_labels(tmp_path):
    (c,) = convlab.read(lines(tmp_path / "s.jsonl", pi_v3_rows()))
    assert c.labels() == {"a1": "start"}
    rows = [*pi_v3_rows(), {"type": "label", "id": "l2", "parentId": "si", "targetId": "a1"}]  # an undefined label clears it
    (c,) = convlab.read(lines(tmp_path / "t.jsonl", rows))
    assert c.labels() == {}


def test_a_conversation_is_labelled_in_memory():
    from convlab.tree import Tree

    t = Tree()
    t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    c = convlab.Conversation(t, id="c")
    c.label("u1", "start")
    assert c.labels() == {"u1": "start"}
    c.unlabel("u1")
    assert c.labels() == {}
    with pytest.raises(convlab.ExploreError, match="node: 'nope' is no message of conversation 'c'"):
        c.label("nope", "x")
    with pytest.raises(convlab.ExploreError, match="label: a non-empty text"):
        c.label("u1", "")
