"""The tree view's search box, labels and comparison, headless: intents in, what the browser is sent out."""

from __future__ import annotations

import convlab
from convlab.explore.sessions import session_of
from convlab.tree import Tree
from convlab.widgets import Lab, TreeView


def session():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "weather in NYC?"}})
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u2", "role": "user", "content": "and tomorrow?"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "weather in LA?"}]})
    return s


def rows(tv):
    return {n["id"]: n for n in tv.data["nodes"]}


def test_a_search_marks_its_matches_focuses_the_first_and_steps_round():
    s = session()
    tv = TreeView(s)
    tv._on_msg(tv, {"type": "search", "text": "weather"}, None)
    assert tv.matches == ["u1", "e1", "e3", "e4"]
    d = tv.data
    assert d["query"] == "weather" and d["matches"] == 4 and d["match_at"] == 0 and d["focus"] == "u1"
    assert {i for i, n in rows(tv).items() if n["match"]} == {"u1", "e1", "e3", "e4"}
    assert "4 matches" in d["status"]
    tv._on_msg(tv, {"type": "step", "by": -1}, None)
    assert tv.data["focus"] == "e4"
    assert tv.step() == "u1" and tv.step() == "e1"
    assert s.head == "e4"  # searching never moves the head
    tv.search(None)
    assert tv.data["matches"] == 0 and not any(n["match"] for n in tv.data["nodes"])


def test_a_match_on_a_hidden_branch_is_shown_when_focused():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "start"}})
    for k in range(3):
        s.submit({"type": "client.messages", "agent_id": "bot", "messages": [*s.view("u1")[:1], {"role": "user", "content": f"side {k}"}]})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "a new root"}]})
    tv = TreeView(s, max_depth=0)
    side = convlab.find(s, "side 0", role="user")["id"].iloc[0]
    assert side not in rows(tv)  # behind the root's +N marker
    tv.search("side 0")
    assert tv.data["focus"] == side and side in rows(tv) and rows(tv)[side]["match"]


def test_a_step_to_a_drawn_match_sends_the_header_alone_and_one_to_a_hidden_match_lays_the_tree_out(monkeypatch):
    """Stepping through thousands of matches must not lay the whole tree out each time (O(tree) a step)."""
    import convlab.widgets.treeview as module

    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "start here"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [*s.view("u1")[:1], {"role": "user", "content": "a side here"}]})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "a new root"}]})
    tv = TreeView(s, max_depth=0)
    tv.search("here")
    side = convlab.find(s, "a side", role="user")["id"].iloc[0]
    assert tv.matches[:1] == ["u1"] and side in tv.matches
    tv.search("start here", role="user")  # one match, drawn: a step stays on it
    layouts, sent = [], []
    real = module.layout
    monkeypatch.setattr(module, "layout", lambda *a, **k: layouts.append(1) or real(*a, **k))
    monkeypatch.setattr(tv, "send", sent.append)
    tv.step()
    assert layouts == [] and len(sent) == 1 and sent[0]["set"] == [] and sent[0]["drop"] == []
    assert sent[0]["meta"]["focus"] == "u1" and sent[0]["meta"]["status"] == "match 1 of 1"
    tv.search("here", role="user")  # u1, then the side branch behind u1
    assert side not in rows(tv)  # behind its parent's marker
    layouts.clear()
    while tv.data["focus"] != side:
        tv.step()
    assert layouts and side in rows(tv) and rows(tv)[side]["match"]  # opened: laid out again
    layouts.clear()
    tv.step(-1)
    assert layouts == [] and tv.data["focus"] == "u1"  # back to a drawn match: the header alone


def test_a_bad_pattern_from_the_browser_is_said_in_the_status_line():
    tv = TreeView(session())
    tv._on_msg(tv, {"type": "search", "text": "(", "regex": True}, None)
    assert "is not a regular expression" in tv.data["status"] and tv.matches == []


def test_labels_show_on_their_rows_and_follow_the_session():
    s = session()
    tv = TreeView(s)
    s.label("e1", "NYC")
    tv.flush()
    assert rows(tv)["e1"]["label"] == "NYC" and rows(tv)["u1"]["label"] is None
    s.unlabel("e1")
    tv.flush()
    assert rows(tv)["e1"]["label"] is None


def test_pick_two_messages_and_the_lab_shows_their_branches_side_by_side():
    s = session()
    lab = Lab(s)
    tv = lab.tree
    tv._on_msg(tv, {"type": "mark", "id": "e2"}, None)
    assert tv.data["marked"] == "e2"
    tv._on_msg(tv, {"type": "compare", "a": "e2", "b": "e4"}, None)
    assert tv.data["marked"] is None and tv.compared.attrs["ancestor"] is None
    assert repr(lab.comparison) == "ComparePanel(a='e2', b='e4', steps=4)"
    html = lab.comparison.html.value
    assert "e2 ⟷ e4" in html and "edited" in html and "[-NYC?-] {+LA?+}" in html
    tv._on_msg(tv, {"type": "compare", "a": "e2", "b": "nope"}, None)
    assert "b: 'nope' is no message" in tv.data["status"]
    lab.close()


def test_untrusted_text_in_the_compare_panel_is_escaped():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "<script>x()</script>"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "<b>bold</b>"}]})
    lab = Lab(s)
    lab.tree.compare("e1", "e3")
    html = lab.comparison.html.value
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>bold" not in html
    lab.close()


def test_a_read_only_conversation_is_searched_and_compared_too():
    t = Tree()
    for nid, parent, text in [("u1", None, "hi"), ("a1", "u1", "hello"), ("a2", "u1", "hey there")]:
        t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": text}, parent)
    t.head = "a1"
    c = convlab.Conversation(t, id="c")
    c.label("a2", "the other reply")
    tv = TreeView(c)
    assert tv.search("hey")["id"].tolist() == ["a2"]
    assert rows(tv)["a2"]["match"] and rows(tv)["a2"]["label"] == "the other reply"
    assert tv.compare("a1", "a2")["change"].tolist() == ["regenerated"]


def test_summarize_from_here_is_proposed_in_the_decision_panel_edited_and_run_only_when_accepted():
    s = convlab.Session(worker="manual")
    for q in ("one", "two"):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": q}})
        s.decide([{"type": "llm.call"}])
        s.decide([])
    lab = Lab(s)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "q3", "role": "user", "content": "three?"}})
    lab.flush()
    n = len(s.events)
    first, reply = [m["id"] for m in s.path()[:2]]
    lab.tree._on_msg(lab.tree, {"type": "summarize", "id": reply}, None)
    panel = lab.decisions
    assert len(s.events) == n and panel.proposal is not None  # proposed: nothing changed
    assert "accept_summary" in panel.buttons and panel.summary.value.startswith("Summary of 3 messages.")
    panel.summary.value = "one and two, answered"
    panel.buttons["accept_summary"].click()
    path = s.path()
    assert [m["content"] for m in path][-3:] == ["The earlier conversation was summarized:\n\none and two, answered", "three?", "echo: three?"]
    assert path[0]["copied_from"] == first and len(path) == 4 and panel.proposal is None
    lab.close()


def test_summarize_from_a_message_off_the_path_says_why_in_the_panel():
    s = convlab.Session(worker="manual")
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "a"}})
    s.decide([{"type": "llm.call"}])
    s.decide([])
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "b"}]})
    lab = Lab(s)
    lab.tree.summarize_from("u1")
    lab.flush()
    assert "start: u1 is not on the active path" in lab.decisions.status and lab.decisions.proposal is None
    lab.close()


def test_a_tree_view_alone_says_summarize_needs_a_lab():
    tv = TreeView(session())
    tv.summarize_from("u1")
    assert "show this session in a Lab" in tv.data["status"]


def test_picking_two_messages_to_compare_changes_nothing_in_the_session():
    """A click while picking picks (it does not look at the branch): no view, no head move, no turn, no event."""
    s = session()
    lab = Lab(s)
    tv = lab.tree
    events, head = len(s.events), s.head
    tv._on_msg(tv, {"type": "picking", "on": True}, None)
    assert tv.data["picking"] is True and tv.data["marked"] is None
    tv._on_msg(tv, {"type": "pick", "id": "e2"}, None)
    assert tv.data["marked"] == "e2" and tv.data["picking"] is True and tv.compared is None
    tv._on_msg(tv, {"type": "pick", "id": "e2"}, None)  # the same one again: still waiting for the second
    assert tv.compared is None and "click another message" in tv.data["status"]
    tv._on_msg(tv, {"type": "pick", "id": "e4"}, None)
    assert repr(lab.comparison) == "ComparePanel(a='e2', b='e4', steps=4)"
    assert tv.data["picking"] is False and tv.data["marked"] is None
    # a selected message picked with the button, the second clicked
    tv.selected = "e1"
    tv._on_msg(tv, {"type": "mark", "id": "e1"}, None)
    assert tv.data["picking"] is True
    tv._on_msg(tv, {"type": "pick", "id": "e4"}, None)
    assert tv.compared.attrs["a"]["leaf"] == "e1" and tv.compared.attrs["b"]["leaf"] == "e4"
    tv._on_msg(tv, {"type": "picking", "on": True}, None)
    tv._on_msg(tv, {"type": "picking", "on": False}, None)  # cancelled
    assert tv.data["picking"] is False
    tv._on_msg(tv, {"type": "pick", "id": "nope"}, None)
    assert "pick: 'nope' is no message" in tv.data["status"]
    assert len(s.events) == events and s.head == head and s.turns[-1]["id"] == "t3"
    lab.close()


def test_picking_in_a_read_only_conversation_leaves_its_head():
    t = Tree()
    for nid, parent, text in [("u1", None, "hi"), ("a1", "u1", "hello"), ("a2", "u1", "hey there")]:
        t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": text}, parent)
    t.head = "a1"
    tv = TreeView(convlab.Conversation(t, id="c"))
    tv.start_picking()
    tv.pick("a2")
    assert tv.pick("a1")["change"].tolist() == ["regenerated"] and t.head == "a1"


def test_a_merged_message_is_marked_with_the_branch_it_came_from_in_the_tree_and_the_chat():
    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "plan a trip"}})
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u2", "role": "user", "content": "try Lisbon"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": s.view("e1") + [{"id": "u3", "role": "user", "content": "try Porto"}]})
    lab = Lab(s)
    s.merge("e2", summarizer="Lisbon: 3 days.")
    lab.flush()
    merged = next(m["id"] for m in s.path() if m.get("metadata", {}).get("merged_from"))
    tree_rows = rows(lab.tree)
    assert tree_rows[merged]["merged"] == "e2" and tree_rows["u3"]["merged"] is None
    assert {"from": merged, "to": "e2", "type": "merged_from"} in lab.tree.data["links"]  # the leaf is drawn: linked
    chat = {r["id"]: r for r in lab.chat.shown()}
    assert chat[merged]["merged"] == "e2" and chat["u3"]["merged"] is None
    lab.close()


def test_the_compare_panel_keeps_its_summary_above_a_box_that_scrolls_and_wraps():
    from convlab.widgets.comparison import HEIGHT

    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "start"}})
    for k in range(60):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "x" * 300 + f" step {k}"}})
    long_leaf = s.head
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [*s.view("u1")[:1], {"role": "user", "content": "short"}]})
    lab = Lab(s)
    lab.tree.compare(long_leaf, s.head)
    html = lab.comparison.html.value
    summary, box = html.index("cl-compare-summary"), html.index("cl-compare-scroll")
    assert summary < box and f"max-height:{HEIGHT}px;overflow:auto" in html
    assert "table-layout:fixed" in html and "overflow-wrap:anywhere" in html
    assert lab.comparison.layout.max_width == "100%"
    lab.close()


def test_a_summary_proposal_keeping_many_messages_says_how_many_and_folds_their_ids():
    s = convlab.Session(worker="manual")
    for k in range(8):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"q{k}"}})
        s.decide([{"type": "llm.call"}])
        s.decide([])
    lab = Lab(s)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "q9", "role": "user", "content": "and now?"}})
    lab.flush()
    path = [m["id"] for m in s.path()]
    panel = lab.decisions
    panel.propose(s.summarize(path[1], path[2], summarizer="the first answer"))  # early in the path: the rest is kept
    proposed = next(c for c in panel.body.children if "summarize from here" in getattr(c, "value", ""))
    kept = [m.get("id") for m in panel.proposal[0]["messages"] if m.get("id")]
    assert len(kept) == len(path) - 2
    assert f"{len(kept)} kept messages + 1 new message<details" in proposed.value  # the ids folded, not in the line
    assert ", ".join([*kept[:1], "(new)", *kept[1:]]) in proposed.value  # the folded list, in order
    assert panel.summary in panel.body.children  # the summary to edit
    lab.close()


def test_the_event_log_of_a_session_from_a_converted_log_says_times_as_spans_not_epoch_seconds():
    t = Tree()
    for k, (nid, parent) in enumerate([("u1", None), ("a1", "u1"), ("u2", "a1"), ("a2", "u2")]):
        t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": nid, "time": 1770908700.5 + 300 * k}, parent)
    t.head = "a2"
    s = session_of(convlab.Conversation(t, id="c", format="claude_code"))  # as convlab.merge loads a log
    lab = Lab(s)
    text = "".join(block.value for block in lab.events.lines.children)
    assert "1770908" not in text
    assert "t=0 s" in text and "t=15 min" in text  # the last message, 900 s after the first
    lab.close()


JS_TEST = r"""
import test from "node:test";
import assert from "node:assert/strict";
import * as tv from "MODULE";

const base = { selected: null, marked: null, picking: false, query: "", matches: 0, match_at: null };

test("the search counter says where the focus is", () => {
  assert.equal(tv.matchCount(base), "");
  assert.equal(tv.matchCount({ ...base, query: "x" }), "no match");
  assert.equal(tv.matchCount({ ...base, query: "x", matches: 7, match_at: 2 }), "3 / 7");
});

test("the compare button picks, then compares two different messages", () => {
  assert.deepEqual(tv.compareAction(base).intent, { type: "picking", on: true });
  assert.deepEqual(tv.compareAction({ ...base, selected: "a1" }).intent, { type: "mark", id: "a1" });
  const picking = tv.compareAction({ ...base, picking: true });
  assert.deepEqual(picking.intent, { type: "picking", on: false });
  const waiting = tv.compareAction({ ...base, selected: "a1", marked: "a1", picking: true });
  assert.deepEqual(waiting.intent, { type: "mark", id: null });
  assert.ok(waiting.text.startsWith("Picked a1"));
  const go = tv.compareAction({ ...base, selected: "b2", marked: "a1" });
  assert.deepEqual(go.intent, { type: "compare", a: "a1", b: "b2" });
  assert.equal(go.text, "Compare with a1");
});

test("a click while picking picks, else looks at the branch", () => {
  assert.deepEqual(tv.clickIntent({ ...base, picking: true }, "a2"), { type: "pick", id: "a2" });
  assert.deepEqual(tv.clickIntent(base, "a2"), { type: "checkout", id: "a2" });
});
"""


def test_the_search_and_compare_buttons_pure_functions_under_node(tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    import convlab.widgets

    node = shutil.which("node")
    if node is None:
        import pytest

        pytest.skip("node is not installed")
    module = Path(convlab.widgets.__file__).parent / "static" / "treeview.js"
    test_file = tmp_path / "explore.test.mjs"
    test_file.write_text(JS_TEST.replace("MODULE", module.as_uri()))
    proc = subprocess.run([node, "--test", str(test_file)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "# pass 3" in proc.stdout and "# fail 0" in proc.stdout, proc.stdout
