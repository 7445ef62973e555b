"""Headless tests of convlab.widgets: state after session changes, each intent
as protocol input, stable reprs, escaping, imported conversations read-only,
the public names they use, and the JS module's pure functions (under node).
(Coalescing, patches and streaming: test_widgets_live.py.)"""

from __future__ import annotations

import ast
import gc
import json
import pathlib
import random
import re
import shutil
import subprocess
import sys

import comm
import pytest

import convlab
from convlab.widgets import ChatView, ContextGauge, DecisionPanel, EventLog, Lab, TreeView, intents, layout
from realdata import require

HOSTILE = '<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=1</script>'
STATIC = pathlib.Path(convlab.widgets.__file__).parent / "static"

SUMMARIZE = """
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 40
"""


def say(s, mid, text, **extra):
    return s.submit({"type": "client.message", "agent_id": "bot",
                     "message": {"id": mid, "role": "user", "content": text}, **extra})


def branched():
    """u1 -> e1 -> u2 -> e2, then an edit of u1 (e3 -> e4) and a second reply e5 beside e4."""
    s = convlab.Session()
    say(s, "u1", "weather in NYC?")
    say(s, "u2", "and tomorrow?")
    intents.edit(s, 0, "weather in LA instead")
    intents.regenerate(s, 1)
    return s


def rows_of(chat):
    """The chat's rows as the browser gets them, by message id."""
    return {r["id"]: r for r in chat.shown()}


def spy(s):
    """Record every input the widgets submit (the protocol input they produce)."""
    sent = []
    real = s.submit

    def submit(payload):
        sent.append(json.loads(json.dumps(payload)))
        return real(payload)

    s.submit = submit
    return sent


def ids(s):
    return [n["id"] for n in s.path()]


def manual_limit():
    """A manual-worker session whose third turn waits on context.limit."""
    s = convlab.Session(worker="manual", config=SUMMARIZE)
    for mid, text in [("u1", "Sam had 120ml of milk at noon."), ("u2", "Then a nap at 2, about forty minutes long."),
                      ("u3", "How much did Sam drink today, and when was the nap?")]:
        say(s, mid, text)
        s.decide([{"type": "llm.call"}])
        if s.pending and s.pending["type"] == "llm.result":
            s.decide([{"type": "turn.end"}])
    assert s.pending["type"] == "context.limit"
    return s


# -- layout ------------------------------------------------------------------

def chain(n, start=0, parent=None, prefix="n"):
    nodes = []
    for i in range(start, start + n):
        nodes.append({"id": f"{prefix}{i}", "parent": parent, "role": "user" if i % 2 == 0 else "assistant",
                      "seq": 0, "content": f"m{i}"})
        parent = f"{prefix}{i}"
    return nodes


def numbered(nodes):
    for k, n in enumerate(nodes, 1):
        n["seq"] = k
    return nodes


def test_layout_puts_the_active_path_in_lane_0_and_forks_right():
    s = branched()
    tv = TreeView(s)
    d = tv.data
    by = {n["id"]: n for n in d["nodes"]}
    assert [n["id"] for n in d["nodes"] if n["path"]] == ids(s) == ["e3", "e5"]
    assert all(by[i]["lane"] == 0 for i in ids(s))
    assert all(n["lane"] >= 1 for n in d["nodes"] if not n["path"])
    # preorder: a parent before its children, rows unique and dense
    rows = [n["row"] for n in d["nodes"]]
    assert sorted(rows) == list(range(1, len(rows) + 1))
    for n in d["nodes"]:
        if n["parent"] is not None:
            assert by[n["parent"]]["row"] < n["row"]
    assert [n["id"] for n in d["nodes"] if n["head"]] == ["e5"]
    assert d["total"] == len(s.tree) == len(d["nodes"])


def test_layout_collapses_deep_side_branches_behind_a_marker_and_toggle_expands():
    nodes = numbered(chain(5) + chain(10, parent="n1", prefix="b"))
    d = layout(nodes, "n4", max_depth=3)
    shown = {n["id"] for n in d["nodes"]}
    assert shown == {"n0", "n1", "n2", "n3", "n4", "b0", "b1", "b2"}
    assert d["markers"] == [{"id": "b2", "row": d["markers"][0]["row"], "lane": 2, "hidden": 7, "expanded": False}]
    d2 = layout(nodes, "n4", max_depth=3, expanded={"b2"})
    assert {n["id"] for n in d2["nodes"]} >= {"b3", "b4", "b5"} and "b6" not in {n["id"] for n in d2["nodes"]}
    d3 = layout(nodes, "n4", max_depth=3, collapsed={"n1"})
    assert "b0" not in {n["id"] for n in d3["nodes"]}
    assert [(m["id"], m["hidden"]) for m in d3["markers"]] == [("n1", 10)]


def test_layout_payload_grows_with_visible_nodes_not_the_tree():
    rnd = random.Random(3)

    def tree(n):
        nodes = []
        for i in range(n):
            parent = None if i == 0 else (f"n{i - 1}" if rnd.random() < 0.6 else f"n{rnd.randrange(i)}")
            nodes.append({"id": f"n{i}", "parent": parent, "role": "user", "seq": i + 1, "content": "x" * 500})
        return nodes

    small, big = tree(500), tree(5000)
    ds, db = layout(small, "n499", budget=200), layout(big, "n4999", budget=200)
    path_b = sum(n["path"] for n in db["nodes"])
    assert len(db["nodes"]) - path_b <= 200 and len(ds["nodes"]) - sum(n["path"] for n in ds["nodes"]) <= 200
    assert db["total"] == 5000 and sum(m["hidden"] for m in db["markers"]) + len(db["nodes"]) == 5000
    # every node is either drawn or counted behind exactly one marker
    per_node = len(json.dumps(db)) / (len(db["nodes"]) + len(db["markers"]))
    assert per_node < 600  # previews are cut (PREVIEW_CHARS), never whole messages


def test_treeview_follows_the_session_live_and_marks_turns():
    s = convlab.Session(autorun=False)
    tv = TreeView(s)
    assert tv.data["nodes"] == []
    say(s, "u1", "hi")
    assert tv.data["nodes"] == []  # coalesced: drawn when read, when a cell ends, or by a timer
    assert tv.flush() and [n["id"] for n in tv.data["nodes"]] == ["u1"] and tv.data["head"] == "u1"
    assert tv.data["nodes"][0]["status"] == "running"
    s.submit({"type": "client.interrupt", "agent_id": "bot"})
    tv.flush()
    assert tv.data["nodes"][0]["status"] == "cancelled"


def test_checkout_looks_without_a_reply():
    s = branched()
    sent = spy(s)
    tv = TreeView(s)
    n_before, events_before = len(s.tree), len(s.events)
    tv._on_msg(tv, {"type": "checkout", "id": "u1"}, [])
    assert s.head == "e2" and ids(s) == ["u1", "e1", "u2", "e2"]
    assert sent == [{"agent_id": "bot", "type": "client.messages", "messages": [
        {"id": "u1", "role": "user", "content": "weather in NYC?"},
        {"id": "e1", "role": "assistant", "content": "echo: weather in NYC?"},
        {"id": "u2", "role": "user", "content": "and tomorrow?"},
        {"id": "e2", "role": "assistant", "content": "echo: and tomorrow?"}]}]
    assert len(s.tree) == n_before
    new = [e["type"] for e in s.events[events_before:]]
    assert new == ["head.moved", "turn.started", "decision.requested", "decision.answered", "turn.completed"]
    assert s.turns[-1]["status"] == "completed"
    assert tv.selected == "u1" and tv.data["selected"] == "u1" and tv.data["head"] == "e2"
    # checking out the branch the head is on sends nothing
    tv.checkout("e1")
    assert len(sent) == 1 and s.head == "e2"


@pytest.mark.parametrize("kwargs", [{"worker": "manual"}, {"autorun": False}])
def test_checkout_finishes_its_own_turn_with_a_person_or_without_autorun(kwargs):
    s = convlab.Session(**kwargs)
    say(s, "u1", "a")
    for _ in range(10):
        if s.pending:
            s.decide([{"type": "llm.call"}] if s.pending["type"] == "turn.start" else [{"type": "turn.end"}])
        elif s.turns[-1]["status"] == "running":
            s.step()
    say(s, "u2", "b")  # no reply yet (a person has not answered / nothing ran)
    assert s.turns[-1]["status"] == "running"
    tv = TreeView(s)
    n = len(s.tree)
    out = tv.checkout("u1")
    assert out["ok"] and s.head == s.path()[-1]["id"] and s.path()[-1]["role"] == "assistant"
    assert len(s.tree) == n and s.pending is None
    assert [t["status"] for t in s.turns[-2:]] == ["cancelled", "completed"]


def test_checkout_of_an_unanswered_user_message_lands_on_the_reply_above():
    s = convlab.Session(autorun=False)
    say(s, "q1", "first")
    s.run()
    say(s, "q2", "second")  # recorded, never answered: its turn is interrupted
    s.submit({"type": "client.interrupt", "agent_id": "bot"})
    reply = s.tree.nodes["q2"]["parent"]
    assert s.head == "q2" and s.tree.nodes[reply]["role"] == "assistant"
    tv = TreeView(s)
    n, events = len(s.tree), len(s.events)
    out = tv.checkout("q2")
    assert out["ok"] and s.head == reply and tv.selected == "q2"
    assert "q2 has no reply yet" in tv.data["status"] and "Continue from here" in tv.data["status"]
    assert len(s.tree) == n and not any(e["type"] in ("llm.started", "message.new") for e in s.events[events:])
    # nothing to land on: a lone user message; the head stays, no turn starts
    s3 = convlab.Session(autorun=False)
    say(s3, "z1", "alone")
    s3.submit({"type": "client.interrupt", "agent_id": "bot"})
    out = TreeView(s3).checkout("z1")
    assert not out["ok"] and "Continue from here" in out["message"] and len(s3.turns) == 1 and s3.head == "z1"


def test_continue_from_here_moves_the_head_exactly_and_may_reply():
    s = branched()
    sent = spy(s)
    tv = TreeView(s)
    tv._on_msg(tv, {"type": "continue", "id": "u2"}, [])
    assert sent[-1]["messages"][-1]["id"] == "u2" and len(sent[-1]["messages"]) == 3
    path = ids(s)
    assert path[:3] == ["u1", "e1", "u2"] and len(path) == 4 and path[3] != "e2"  # a new reply beside e2
    assert set(s.tree.successors("u2")) == {"e2", path[3]}


def test_toggle_intent_expands_and_collapses():
    s = convlab.Session()
    say(s, "u1", "a")
    for i in range(8):
        say(s, f"b{i}", f"side {i}")
    intents.continue_from(s, "e1")  # back to the first reply (an assistant message: no new reply)
    say(s, "c1", "main")
    assert ids(s)[:3] == ["u1", "e1", "c1"]
    tv = TreeView(s, max_depth=2)
    hidden = [m for m in tv.data["markers"] if not m["expanded"]]
    assert len(hidden) == 1
    tv._on_msg(tv, {"type": "toggle", "id": hidden[0]["id"]}, [])
    assert len(tv.data["nodes"]) > 2 + 3 and hidden[0]["id"] in tv.expanded
    tv._on_msg(tv, {"type": "toggle", "id": hidden[0]["id"]}, [])
    assert hidden[0]["id"] in tv.collapsed
    tv._on_msg(tv, {"type": "bogus", "id": 3}, [])  # unknown intents are ignored


# -- chat --------------------------------------------------------------------

def test_chat_edit_sends_the_view_with_the_message_changed_and_no_id():
    s = branched()
    intents.look(s, "u1")
    sent = spy(s)
    chat = ChatView(s)
    assert chat._path_ids == ["u1", "e1", "u2", "e2"]
    chat.edit("u2", "and next week?")
    assert sent == [{"agent_id": "bot", "type": "client.messages", "messages": [
        {"id": "u1", "role": "user", "content": "weather in NYC?"},
        {"id": "e1", "role": "assistant", "content": "echo: weather in NYC?"},
        {"role": "user", "content": "and next week?"}]}]
    path = s.path()
    assert [n["id"] for n in path[:2]] == ["u1", "e1"] and path[2]["content"] == "and next week?"
    assert set(s.tree.successors("e1")) == {"u2", path[2]["id"]}  # the old branch stays
    assert s.turns[-1]["trigger"] == {"type": "client.messages", "new_from": 2}
    assert chat._path_ids == [n["id"] for n in path]  # redrawn from the session's events


def test_chat_regenerate_sends_the_view_without_the_reply():
    s = branched()
    sent = spy(s)
    chat = ChatView(s)
    chat.regenerate("e5")
    assert sent[-1]["messages"] == [{"id": "e3", "role": "user", "content": "weather in LA instead"}]
    assert len(list(s.tree.successors("e3"))) == 3 and s.head not in ("e4", "e5")
    row = rows_of(chat)[s.head]
    assert (row["k"], row["n"], row["regen"]) == (3, 3, True)
    assert chat.regenerate("e3")["ok"] is False  # not a reply


def test_chat_sibling_arrows_look_at_the_newest_leaf_under_the_sibling():
    s = branched()
    sent = spy(s)
    chat = ChatView(s)
    first = rows_of(chat)["e3"]
    assert (first["k"], first["n"]) == (2, 2)  # u1 and e3 are both top-level
    chat.switch("e3", -1)
    assert s.head == "e2" and sent[-1]["messages"][-1]["id"] == "e2"
    assert len(s.tree) == 7
    assert (rows_of(chat)["u1"]["k"], rows_of(chat)["u1"]["n"]) == (1, 2)
    assert chat.switch("u1", -1)["ok"] is False
    chat.messages._handle_custom_msg({"type": "switch", "id": "u1", "step": 1}, [])  # what chat.js sends for ›
    assert s.head != "e2" and rows_of(chat)["e3"]["k"] == 2


def test_chat_input_queue_modes_state_interrupt_and_a_readable_409():
    s = convlab.Session(autorun=False)
    sent = spy(s)
    chat = ChatView(s)
    chat.input.value = "first"
    chat.state_field.value = '{"mood": "calm"}'
    assert chat.send()["ok"]
    assert sent[-1] == {"agent_id": "bot", "type": "client.message", "message": {"role": "user", "content": "first"},
                        "state": {"mood": "calm"}}
    assert chat.input.value == ""
    out = chat.send("second")
    assert not out["ok"] and out["status"] == 409 and out["turn_id"] == "t1"
    assert "t1" in chat.status_line.value and "Traceback" not in chat.status_line.value
    chat.queue.value = "queue"
    assert chat.send("third")["receipt"]["queued"] is True and sent[-1]["queue"] is True
    chat.queue.value = "merge"
    a, b = chat.send("fourth"), chat.send("fifth")
    assert b["receipt"]["merged"] and a["receipt"]["turn_id"] == b["receipt"]["turn_id"]
    assert sent[-1]["queue"] == "merge" and "merged into queued turn" in chat.status
    chat.state_field.value = "{not json"
    assert "not JSON" in chat.send("x")["message"]
    chat.state_field.value = ""
    assert chat.interrupt()["ok"] and s.turns[0]["status"] == "cancelled"
    assert sent[-1] == {"agent_id": "bot", "type": "client.interrupt"}
    assert "queued:" in chat.title.value


def test_chat_escapes_untrusted_content():
    s = convlab.Session()
    say(s, "u1", HOSTILE)
    chat = ChatView(s)
    # the text goes to the browser as it is, and chat.js sets it as text: never as HTML
    assert rows_of(chat)["u1"]["text"] == HOSTILE
    js = (STATIC / "chat.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "textContent" in js
    answers = []
    chat.messages.send = answers.append  # what the browser would get back
    chat.messages._handle_custom_msg({"type": "edit", "id": "u1", "text": "plain again"}, [])  # Send edit
    assert s.path()[0]["content"] == "plain again" and s.path()[0]["id"] != "u1"
    assert [a for a in answers if a["type"] == "edited"] == [{"type": "edited", "id": "u1", "ok": True}]  # it closes
    # a click on a row that is gone by the time it arrives is an outcome, not an exception
    chat._on_msg(None, {"type": "regenerate", "id": "u1"}, [])
    assert chat.last == {"ok": False, "message": "'u1' is not on the active path any more"}
    assert "not on the active path" in chat.status_line.value
    before = len(answers)
    chat._on_msg(None, {"type": "edit", "id": "u1", "text": "again"}, [])
    assert chat.last["message"] == "'u1' is not on the active path any more" and len(s.tree) == 4
    assert not [a for a in answers[before:] if a["type"] == "edited"]  # its row is gone: no editor to answer
    for junk in (None, [], {"type": "edit"}, {"type": "edit", "id": 3}, {"type": "switch", "id": "u1", "step": 7},
                 {"type": "switch", "id": s.head, "step": True}, {"type": "edit", "id": s.head, "text": None},
                 {"type": "nope", "id": s.head}):
        chat._on_msg(None, junk, [])  # ignored: nothing raised (called directly: ipywidgets' dispatcher swallows errors)
    assert len(s.tree) == 4 and chat.last["message"] == "'u1' is not on the active path any more"
    answers.clear()
    for gone in ({"type": "switch", "id": "u1", "step": -1}, {"type": "regenerate", "id": "u1"}):
        chat._on_msg(None, gone, [])
        assert chat.last == {"ok": False, "message": "'u1' is not on the active path any more"}, gone
    chat.last = None
    for junk in ({"type": "switch", "id": "nope", "step": 1}, {"type": "regenerate", "id": "\ud800"},
                 {"type": "edit", "id": "x" * 100_000, "text": "x"}):
        chat._on_msg(None, junk, [])  # an id that is in no tree is not from chat.js: nothing done, nothing echoed
    assert chat.last is None and answers == [] and len(s.tree) == 4
    # the same mistakes through the Python API: a clear answer or a clear error
    assert chat.switch("nope", 1) == {"ok": False, "message": "no message 'nope' in the tree"}
    for bad, error in (((["a"],), TypeError), (("u1", "1"), ValueError), (("u1", True), ValueError), (("u1", 0), ValueError)):
        with pytest.raises(error, match="message id is a str|step is -1"):
            chat.switch(*bad) if len(bad) == 2 else chat.regenerate(*bad)
    with pytest.raises(TypeError, match=r"\(a str\), got int"):
        chat.send(5)


def test_chat_says_when_a_turn_failed_and_a_409_gives_the_right_advice():
    class Falls:
        def complete(self, request):
            raise convlab.ProviderError("failed", "the model fell over")

    s = convlab.Session(llm=Falls())
    chat = ChatView(s)
    assert chat.send("hi")["ok"] and s.turns[-1]["status"] == "failed"
    chat.flush()
    assert "turn t1 failed: call llm-1 failed" in chat.title.value and "the model fell over" in chat.title.value
    out = chat.interrupt()  # nothing runs: no advice to interrupt it
    assert out["message"] == "Refused (409): no turn is running: nothing to interrupt", out
    m = convlab.Session(worker="manual")
    manual = ChatView(m)
    assert manual.send("one")["ok"]
    busy = manual.send("two")["message"]
    assert busy.count("nterrupt it first") == 1 and "queue" in busy, busy  # the engine's own hint, once


def test_chat_shows_only_the_newest_messages_until_asked():
    s = convlab.Session()
    for i in range(30):
        say(s, f"u{i}", f"q{i}")
    chat = ChatView(s, limit=10)
    assert len(chat.shown()) == 10 and chat.earlier.description == "Show 50 earlier messages"
    chat._toggle_earlier()
    assert [r["id"] for r in chat.shown()] == [n["id"] for n in s.path()]


# -- decisions ---------------------------------------------------------------

def test_decision_accept_proposed_with_the_edited_summary():
    s = manual_limit()
    panel = DecisionPanel(s)
    proposed = s.pending["proposed"]
    assert panel.summary.value == proposed[0]["summary"]
    assert "not an answer" in "".join(getattr(c, "value", "") for c in panel.body.children)
    panel.summary.value = "Sam: 120ml at noon, nap at 2."
    panel.buttons["accept"].click()
    roots = [n for n, a in s.tree.nodes(data=True) if a["parent"] is None]
    summary = [n for n in roots if s.tree.nodes[n]["kind"] == "summary"]
    assert len(summary) == 1 and "Sam: 120ml at noon, nap at 2." in s.tree.nodes[summary[0]]["content"]
    assert s.tree.nodes[summary[0]]["replaces"] == "u3"
    copy = s.path()[1]
    assert copy["copied_from"] == "u3"
    answered = [e for e in s.events if e["type"] == "decision.answered"][-1]["actions"]
    assert answered == [{**proposed[0], "summary": "Sam: 120ml at noon, nap at 2."}, proposed[1]]
    assert s.pending["type"] == "llm.result" and panel.buttons.keys() == {"end", "call"}


def test_a_decision_button_answers_only_the_decision_it_was_drawn_for():
    """A click that comes after its decision was answered (by a cell, by a first click that waited
    with it behind a running cell) answers nothing: it would have answered the next decision."""
    s = convlab.Session(worker="manual")
    say(s, "u1", "hi")
    panel = DecisionPanel(s)
    call = panel.buttons["call"]
    assert s.pending["type"] == "turn.start"
    s.decide([{"type": "llm.call"}])  # answered elsewhere: an llm.result waits now
    answered = [e for e in s.events if e["type"] == "decision.answered"]
    call.click()
    assert [e for e in s.events if e["type"] == "decision.answered"] == answered and s.pending["type"] == "llm.result"
    assert "answered already" in panel.status and not panel.last["ok"]
    panel.flush()
    panel.buttons["end"].click()  # the button drawn for the decision that waits answers it
    assert s.pending is None and s.turns[-1]["status"] == "completed"


def test_decision_run_the_call_as_it_was():
    s = manual_limit()
    panel = DecisionPanel(s)
    call = s.pending["call"]["id"]
    panel.buttons["as_was"].click()
    assert [e for e in s.events if e["type"] == "decision.answered"][-1]["actions"] == [{"type": "llm.call", "id": call}]
    assert any(e["type"] == "context.kept" for e in s.events)
    assert not any(a["kind"] == "summary" for _, a in s.tree.nodes(data=True))


def test_decision_reset_instead_keeps_only_the_pending_input():
    s = manual_limit()
    panel = DecisionPanel(s)
    panel.buttons["reset"].click()
    path = s.path()
    assert path[0]["copied_from"] == "u3" and path[0]["parent"] is None and path[0]["replaces"] == "u3"
    assert not any(a["kind"] == "summary" for _, a in s.tree.nodes(data=True))


def test_decision_end_the_turn_and_turn_start_buttons():
    s = manual_limit()
    panel = DecisionPanel(s)
    panel.buttons["end"].click()
    assert s.pending is None and s.turns[-1]["status"] == "completed"
    assert "none waiting" in panel.body.children[0].value
    say(s, "u4", "next")
    panel.flush()
    assert s.pending["type"] == "turn.start" and set(panel.buttons) == {"call", "end"}
    panel.buttons["end"].click()
    assert s.turns[-1]["status"] == "completed" and s.head == "u4"
    out = panel.answer([{"type": "turn.end"}])
    assert not out["ok"] and "409" in out["message"]


def test_decision_reset_is_disabled_without_pending_input():
    d = {"messages": [{"id": "u1", "role": "user", "content": "a"}, {"id": "a1", "role": "assistant", "content": "b"}],
         "call": {"id": "llm-1"}}
    from convlab.widgets.decisions import reset_plan

    assert reset_plan(d) is None
    tool = [{"id": "a1", "role": "assistant", "content": "", "tool_calls": [{"id": "c"}]},
            {"id": "t1", "role": "tool", "content": "42", "tool_call_id": "c"}]
    plan = reset_plan({"messages": tool, "call": {"id": "llm-2"}})
    assert [m["id"] for m in plan[0]["messages"]] == ["a1", "t1"] and plan[1] == {"type": "llm.call", "id": "llm-2"}


# -- gauge, events -------------------------------------------------------------

def test_gauge_counts_marks_and_idle_time():
    s = convlab.Session(config="""
[agent.bot.context]
window = 20000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 3000
""")
    g = ContextGauge(s)
    assert (g.tokens, g.exact, g.idle) == (0, 0, None)
    say(s, "u1", "hello there, how are you?")
    s.advance(120)
    g.refresh()
    assert g.tokens == s.tokens() > 0 and g.exact == convlab.count_tokens(s.path()) > 0
    assert g.idle == 120
    v = g.bar.value
    assert "window - 16000" in v and "left:20.00%" in v and "summarize over_tokens" in v and "left:15.00%" in v
    assert "idle 2 min" in v and "reset after 60 min idle" in v


def test_event_log_lists_and_filters_events():
    s = branched()
    log = EventLog(s)
    assert log.shown()[0]["seq"] == s.events[-1]["seq"]
    log.filter.value = "head.moved"
    assert log.shown() and all(e["type"] == "head.moved" for e in log.shown())
    log.filter.value = "turn.*"
    assert {e["type"] for e in log.shown()} == {"turn.started", "turn.completed"}
    n = len(log.shown())
    say(s, "u9", "more")
    log.flush()
    assert len(log.shown()) == n + 2
    assert log.shown()[0]["type"] == "turn.completed" and "turn.completed" in log.lines.children[0].value
    say(s, "u10", HOSTILE)
    log.filter.value = "all"
    assert all("<img" not in block.value for block in log.lines.children)
    assert "summary call" in convlab.widgets.eventlog.describe({"type": "llm.started", "call_id": "x", "summary": True})


# -- Lab, reprs ---------------------------------------------------------------

def test_lab_is_live_and_loads_a_log(tmp_path):
    log = tmp_path / "s.jsonl"
    s = convlab.Session(log=log)
    lab = Lab(s)
    say(s, "u1", "hi")
    lab.flush()
    assert lab.tree.data["head"] == s.head == lab.chat._path_ids[-1]
    assert lab.gauge.tokens == s.tokens() and lab.events.shown()[0]["seq"] == s.events[-1]["seq"]
    intents.regenerate(s, 1)  # from code, like any cell: drawn when the cell ends (here: read)
    lab.flush()
    loaded = Lab(str(log))
    assert loaded.session.head == s.head and loaded.tree.data["nodes"] == lab.tree.data["nodes"]
    assert repr(loaded) == repr(lab)
    lab.close()
    say(s, "u2", "after close")
    assert lab.flush() == 0 and lab.tree.data["head"] != s.head  # closed widgets stop listening


def test_reprs_are_stable():
    s = branched()
    lab = Lab(s)
    reprs = [repr(x) for x in (lab, lab.tree, lab.chat, lab.gauge, lab.decisions, lab.events)]
    assert reprs == [
        "Lab(agent='bot', messages=7, head='e5', turns=4, pending=None)",
        "TreeView(agent='bot', messages=7, shown=7, head='e5')",
        "ChatView(agent='bot', path=2, head='e5')",
        f"ContextGauge(tokens={s.tokens()}, exact={convlab.count_tokens(s.path())}, window=None)",
        "DecisionPanel(pending=None)",
        f"EventLog(events={len(s.events)}, filter='all')",
    ]
    for w in (lab, lab.tree, lab.chat):
        bundle = w._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert not re.search(r"0x[0-9a-f]+", bundle["text/plain"]) and bundle["text/plain"] == repr(w)


# -- an imported conversation, read-only (issue 15 part 4) ---------------------------

def imported():
    """A conversation as convlab.read gives it: u1 -> a1 -> u2 -> a2, and a2b beside a2 (the head)."""
    t = convlab.Tree()
    for nid, parent, role in [("u1", None, "user"), ("a1", "u1", "assistant"), ("u2", "a1", "user"),
                              ("a2", "u2", "assistant"), ("a2b", "u2", "assistant"), ("u3", "a2", "user")]:
        t.add({"id": nid, "role": role, "content": f"text of {nid}"}, parent=parent)
    t.head = "a2b"
    return convlab.Conversation(t, id="c1", title="A log", format="openai")


def test_lab_shows_an_imported_conversation_read_only():
    """Issue 15: "`Lab`, `TreeView` and the other widgets accept an imported `Conversation` and show it
    read-only (look at it, switch branches by moving the conversation's head locally, no submit, no decisions)"."""
    conv = imported()
    lab = Lab(conv)
    assert repr(lab) == "Lab(conversation='c1', messages=6, head='a2b', read_only=True)"
    assert lab.decisions is None and lab.events is None and lab.session is None and lab.conversation is conv
    assert lab.tree.data["readonly"] and [n["id"] for n in lab.tree.data["nodes"] if n["path"]] == ["u1", "a1", "u2", "a2b"]
    assert lab.chat._path_ids == ["u1", "a1", "u2", "a2b"] and lab.chat.input is None and lab.chat.send_button is None
    assert not any(r["regen"] or r["edit"] for r in lab.chat.shown())
    assert lab.gauge.exact == convlab.count_tokens(conv.path()) and lab.gauge.tokens == conv.message_tree.count()
    assert "no window" in lab.gauge.bar.value and "convlab.replay(conversation)" in lab.gauge.bar.value
    # a click: the head moves, in memory, to the newest leaf under the message; every part follows
    out = lab.tree.checkout("a2")
    assert out == {"ok": True, "message": "", "head": "u3"} and conv.head == "u3"
    assert [m["id"] for m in conv.path()] == ["u1", "a1", "u2", "a2", "u3"] == lab.chat._path_ids
    assert lab.tree.data["head"] == "u3" and lab.tree.data["selected"] == "a2"
    assert lab.gauge.exact == convlab.count_tokens(conv.path())
    # the chat's arrows switch branches the same way
    assert (rows_of(lab.chat)["a2"]["k"], rows_of(lab.chat)["a2"]["n"]) == (1, 2)
    assert lab.chat.switch("a2", +1)["ok"] and conv.head == "a2b" and lab.tree.data["head"] == "a2b"
    # nothing is submitted: every input says what to do instead
    for outcome in (lab.tree.continue_from("a1"), lab.chat.send("hello"), lab.chat.edit("u2", "x"),
                    lab.chat.regenerate("a2b"), intents.interrupt(lab.source), intents.decide(lab.source, [])):
        assert outcome["ok"] is False and outcome["message"] == intents.READ_ONLY, outcome
    assert "convlab.replay(conversation)" in intents.READ_ONLY and len(conv.tree) == 6
    # a second widget on the same conversation shares its source: one click redraws both
    tv = TreeView(conv)
    assert repr(tv) == "TreeView(conversation='c1', messages=6, shown=6, head='a2b')"
    tv.checkout("u1")
    assert conv.head == "u3" and lab.tree.data["head"] == "u3" == lab.chat._path_ids[-1]
    assert repr(lab.chat) == "ChatView(conversation='c1', path=5, head='u3')"
    assert repr(lab.gauge) == f"ContextGauge(tokens={conv.message_tree.count()}, exact={lab.gauge.exact}, window=None)"


def test_widgets_that_need_a_session_say_what_to_pass():
    """Issue 15: "where a widget needs a Session, say in one line what to pass"."""
    conv = imported()
    for widget in (DecisionPanel, EventLog):
        with pytest.raises(TypeError) as err:
            widget(conv)
        text = str(err.value)
        assert "\n" not in text and widget.__name__ in text and "convlab.replay(conversation)" in text, text
    with pytest.raises(TypeError, match=r"read\(\) returns a list, pass one of its items, e.g. Lab\(convs\[0\]\)"):
        Lab([conv])
    with pytest.raises(TypeError, match="TreeView takes a convlab.Session, not a path"):
        TreeView("conversations.json")
    with pytest.raises(TypeError, match="ChatView shows a convlab.Session or an imported convlab.Conversation, got int"):
        ChatView(42)
    # a replay of the conversation is a Session: the full Lab
    replayed = convlab.replay(conv)
    lab = Lab(replayed)
    assert lab.session is not None and lab.decisions is not None and lab.tree.data["total"] == len(lab.session.tree)


def test_lab_on_another_tools_log_path_says_to_read_it(tmp_path):
    """A path to a log that is not a session log: the error says how to open it."""
    log = tmp_path / "chat.jsonl"
    log.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
    with pytest.raises(convlab.LogError, match=r"convlab.Lab\(convlab.read\(path\)\[0\]\)"):
        Lab(log)


class _Comms:
    """Every comm the widgets open, and whether it was closed."""

    def __init__(self):
        self.open: dict[str, bool] = {}


@pytest.fixture
def comms(monkeypatch):
    seen = _Comms()

    class Tracking(comm.DummyComm):
        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
            if msg_type == "comm_open":
                seen.open[self.comm_id] = True
            elif msg_type == "comm_close":
                seen.open[self.comm_id] = False

    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: Tracking(**kwargs))
    return seen


@pytest.mark.parametrize("bad", ["list", "number", "a part fails"])
def test_a_widget_that_fails_to_build_leaves_nothing_behind(bad, comms, monkeypatch):
    """Issue 15: "a widget that fails to build leaves no half-built object behind" (no open
    comm, no listener on the session, no ``Exception ignored in ... __del__``)."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    s = convlab.Session()
    if bad == "a part fails":
        monkeypatch.setattr(DecisionPanel, "_sync", lambda self: 1 / 0)
        given, error = s, ZeroDivisionError
    else:
        given, error = ([imported()], TypeError) if bad == "list" else (42, TypeError)
    listening = set()
    subscribe = s.subscribe

    def tracked(fn, types=None):
        listening.add(fn)
        stop = subscribe(fn, types)
        return lambda: (listening.discard(fn), stop())

    s.subscribe = tracked
    with pytest.raises(error):
        Lab(given)
    gc.collect()
    assert unraisable == []
    assert not any(comms.open.values()), "a comm was left open"
    assert listening == set()  # no part still listens to the session
    if bad != "a part fails":
        assert comms.open == {}  # the argument was refused before any widget was made


@pytest.mark.realdata
def test_lab_on_a_real_claude_code_session():
    """Issue 15: the Lab on an imported real log (a Claude Code session with a compaction: two roots)."""
    real = require()
    (conv,) = convlab.read(real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz", progress=False)
    lab = Lab(conv)
    assert lab.tree.data["total"] == len(conv) == 466 and lab.tree.data["head"] == conv.head
    summary = [n for n in lab.tree.data["nodes"] if n["kind"] == "summary"]
    assert len(summary) == 1 and summary[0]["parent"] is None and summary[0]["path"]
    assert lab.chat._path_ids == [m["id"] for m in conv.path()]
    assert lab.gauge.exact == convlab.count_tokens(conv.path()) and lab.gauge.tokens == conv.message_tree.count()
    first_root = conv.roots[0]
    lab.tree.checkout(first_root)  # the history before the compaction
    assert conv.head == convlab.newest_leaf(conv.tree, first_root) and conv.path()[0]["id"] == first_root
    assert lab.chat._path_ids == [m["id"] for m in conv.path()] and lab.tree.data["head"] == conv.head
    rows = [n["row"] for n in lab.tree.data["nodes"]]
    assert rows == sorted(rows) and len(rows) == len(set(rows))


# -- the names the widgets use (issue 11) --------------------------------------------

WIDGETS = pathlib.Path(convlab.widgets.__file__).parent


def convlab_names_used(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, name) of every convlab name a widget module takes from outside convlab.widgets:
    ``from convlab[.x] import name``, ``from ..[x] import name``, ``import convlab.x``, ``convlab.name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1 or (node.level == 0 and module.startswith("convlab.widgets")):
                continue  # inside the widgets package
            if node.level >= 2 or module == "convlab" or module.startswith("convlab."):
                where = module if node.level == 0 else "convlab" + ("." + module if module else "")
                for alias in node.names:
                    out.append((node.lineno, alias.name if where == "convlab" else f"{where}.{alias.name}"))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("convlab.")]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "convlab":
            out.append((node.lineno, node.attr))
    return out


def test_widgets_use_only_names_in_convlab_all():
    """Issue 11: "widgets import only names in `convlab.__all__`" (from the package itself), and issue 21: or from
    the modules docs/modules.md names for them (convlab.tree: the walk and the lane rule)."""
    from test_package import allowed_internal_modules

    allowed = allowed_internal_modules()["widgets"]

    def ok(name):  # a public name, or a name of a module (or package) docs/modules.md names: convlab.<module>[.<module>].<name>
        parts = name.split(".")
        return name in convlab.__all__ or (len(parts) >= 3 and parts[0] == "convlab" and parts[1] in allowed)

    bad = [f"{p.name}:{line}: {name}" for p in sorted(WIDGETS.glob("*.py")) for line, name in convlab_names_used(p) if not ok(name)]
    assert bad == []
    assert ("intents.py", "convlab.tree.newest_leaf") in {(p.name, n) for p in WIDGETS.glob("*.py") for _l, n in convlab_names_used(p)}


def test_the_import_check_catches_internal_names(tmp_path):
    """The check above can fail: internal modules and private names are caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ..tree import MESSAGE_KEYS\nfrom ..tokens import content_text\nimport convlab.engine\n"
                   "from .. import Session\nfrom . import intents\nx = convlab._LAZY\n")
    names = [n for _l, n in convlab_names_used(bad)]
    assert names == ["convlab.tree.MESSAGE_KEYS", "convlab.tokens.content_text", "convlab.engine", "Session", "_LAZY"]
    assert [n for n in names if n not in convlab.__all__] == [
        "convlab.tree.MESSAGE_KEYS", "convlab.tokens.content_text", "convlab.engine", "_LAZY"]


def test_static_files_ship_with_the_package():
    assert (STATIC / "treeview.js").is_file() and (STATIC / "treeview.css").is_file()
    tv = TreeView(convlab.Session())
    assert "export default" in tv._esm and ".cl-tree" in tv._css
    chat = ChatView(convlab.Session())
    assert "export default" in chat.messages._esm and ".clw-messages" in chat.messages._css


# -- the ES module's pure functions, under node --------------------------------

JS_TEST = r"""
import test from "node:test";
import assert from "node:assert/strict";
import * as tv from "MODULE";

const data = {
  rows: 5, lanes: 2, total: 4, head: "a1", selected: null, status: "",
  nodes: [
    { id: "u1", parent: null, row: 1, lane: 0, role: "user", kind: "message", path: true, head: false, copy: false, replaces: false, status: "", turn: "t1", text: "hi" },
    { id: "a2", parent: "u1", row: 2, lane: 1, role: "assistant", kind: "message", path: false, head: false, copy: false, replaces: false, status: "cancelled", turn: "t2", text: "old" },
    { id: "a1", parent: "u1", row: 3, lane: 0, role: "assistant", kind: "message", path: true, head: true, copy: false, replaces: false, status: "", turn: "t1", text: "new" },
    { id: "s1", parent: null, row: 4, lane: 1, role: "user", kind: "summary", path: false, head: false, copy: false, replaces: true, status: "", turn: "t3", text: "sum" },
  ],
  markers: [{ id: "a2", row: 5, lane: 2, hidden: 3, expanded: false }],
  links: [{ from: "s1", to: "a1", type: "replaces" }, { from: "s1", to: "gone", type: "copied_from" }],
};

test("cells sit on a grid of lanes and rows", () => {
  const a = tv.cell(0, 0), b = tv.cell(2, 3);
  assert.equal(b.x - a.x, 3 * tv.LANE_W);
  assert.equal(b.y - a.y, 2 * tv.ROW_H);
  assert.ok(tv.textX(3) > tv.cell(0, 2).x);
});

test("an edge in one lane is a straight line; a fork bends just above the child", () => {
  assert.equal(tv.edgePath({ x: 5, y: 0 }, { x: 5, y: 50 }), "M5,0 L5,50");
  const d = tv.edgePath({ x: 5, y: 0 }, { x: 23, y: 100 });
  assert.match(d, /^M5,0 L5,[\d.]+ C5,100 5,100 23,100$/);
});

test("labels are one line and cut", () => {
  assert.equal(tv.label("a\n  b\tc"), "a b c");
  const long = tv.label("x".repeat(500));
  assert.equal(long.length, tv.LABEL_CHARS);
  assert.ok(long.endsWith("…"));
  assert.equal(tv.label(undefined), "");
});

test("short ids stay, long ones (a log's UUIDs) are cut", () => {
  assert.equal(tv.shortId("e12"), "e12");
  assert.equal(tv.shortId("b560b6d4-d3d0-4db0-928f-3c61c592f729"), "b560b6d4…");
  assert.ok(tv.shortId("x".repeat(40)).length <= tv.ID_CHARS);
});

test("colours: summaries are purple whatever their role", () => {
  assert.equal(tv.colorOf(data.nodes[3]), tv.ROLE_COLORS.summary);
  assert.equal(tv.colorOf(data.nodes[0]), tv.ROLE_COLORS.user);
});

test("scene: one edge per node, active edges last, links only between drawn nodes", () => {
  const s = tv.scene(data);
  assert.equal(s.nodes.length, 4);
  assert.equal(s.edges.length, 4);
  assert.deepEqual(s.edges.map((e) => e.active), [false, false, true, true]);
  assert.equal(s.links.length, 1);
  assert.equal(s.markers.length, 1);
  assert.equal(s.height, tv.TOP * 2 + 5 * tv.ROW_H);
});

test("applyPatch sets, drops and re-heads rows; markers and links only when the patch has them", () => {
  const patch = {
    type: "patch", base: 4, version: 5, drop: ["s1"],
    set: [{ ...data.nodes[2], head: false }, { ...data.nodes[0], id: "u9", parent: "a1", row: 6, head: true }],
    meta: { rows: 7, total: 4, head: "u9", selected: "a1", status: "ok", readonly: false },
  };
  const before = JSON.stringify(data);
  const out = tv.applyPatch({ ...data, version: 4 }, patch);
  assert.equal(JSON.stringify(data), before); // pure
  assert.deepEqual(out.nodes.map((n) => [n.id, n.row, n.head]), [["u1", 1, false], ["a2", 2, false], ["a1", 3, false], ["u9", 6, true]]);
  assert.equal(out.version, 5);
  assert.equal(out.head, "u9");
  assert.equal(out.rows, 7);
  assert.equal(out.markers, data.markers);
  assert.equal(out.links, data.links);
  const again = tv.applyPatch(out, { type: "patch", base: 5, version: 6, set: [], drop: [], meta: {}, markers: [], links: [] });
  assert.deepEqual([again.markers, again.links, again.version], [[], [], 6]);
});

test("inWindow draws a bounded slice of a huge tree", () => {
  const nodes = [];
  for (let i = 0; i < 5000; i++) nodes.push({ ...data.nodes[0], id: "n" + i, parent: i ? "n" + (i - 1) : null, row: i + 1 });
  const s = tv.scene({ ...data, rows: 5001, nodes, markers: [], links: [] });
  const w = tv.inWindow(s, 26 * 2000, 520);
  assert.ok(w.nodes.length > 20 && w.nodes.length < 120, String(w.nodes.length));
  assert.ok(w.edges.length <= w.nodes.length + 2);
  assert.ok(w.nodes.some((n) => n.id === "n2000"));
});
"""


CHAT_JS_TEST = r"""
import test from "node:test";
import assert from "node:assert/strict";
import * as chat from "MODULE";

const row = (id, k = 1, n = 1) => ({ id, role: "user", copy: null, text: "t " + id, k, n, edit: true, regen: false });

test("a rows message applies to the version it follows, and replaces everything when it has no base", () => {
  const empty = { version: -1, rows: new Map(), order: [] };
  const first = chat.applyRows(empty, { type: "rows", base: null, version: 3, order: ["a", "b"], set: [row("a"), row("b")] });
  assert.deepEqual([first.version, first.order], [3, ["a", "b"]]);
  const next = chat.applyRows(first, { type: "rows", base: 3, version: 4, order: ["b", "c"], set: [row("c")] });
  assert.deepEqual([next.order, [...next.rows.keys()].sort()], [["b", "c"], ["b", "c"]]);
  assert.equal(next.rows.get("b"), first.rows.get("b"));  // a row held is kept, not sent again
  assert.deepEqual(first.order, ["a", "b"]);  // pure
  assert.equal(chat.applyRows(first, { type: "rows", base: 2, version: 5, order: [], set: [] }), null);  // missed one
});

test("the arrows show at a fork, each disabled at its end", () => {
  assert.deepEqual(chat.nav(row("a", 1, 1)).shown, false);
  assert.deepEqual(chat.nav(row("a", 1, 3)), { shown: true, label: "1/3", prev: true, next: false });
  assert.deepEqual(chat.nav(row("a", 3, 3)), { shown: true, label: "3/3", prev: false, next: true });
});
"""


@pytest.mark.parametrize("module, tests, passes", [("treeview.js", JS_TEST, 8), ("chat.js", CHAT_JS_TEST, 2)])
def test_js_functions_under_node(tmp_path, module, tests, passes):
    """The ES modules' pure functions (the tree's layout, the chat's rows) under node's own test runner."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    test_file = tmp_path / f"{module}.test.mjs"
    test_file.write_text(tests.replace("MODULE", (STATIC / module).as_uri()))
    proc = subprocess.run([node, "--test", str(test_file)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"# pass {passes}" in proc.stdout and "# fail 0" in proc.stdout, proc.stdout
