"""convlab.merge and convlab.summarize on any source: a Session's own, a Conversation's through a new Session
holding it (a log has no engine; convlab never edits a tree behind an engine's back), a replay's session."""

from __future__ import annotations

import warnings

import pytest

import convlab
from convlab.explore.sessions import session_of
from convlab.tree import Tree

from realdata import real  # noqa: F401  (the fixture)


def plan() -> convlab.Conversation:
    """u1 - a1 - u2 - a2 (head); a1 - u3 - a3 (a side branch, labelled)."""
    t = Tree()
    for nid, parent, text in [("u1", None, "plan a trip"), ("a1", "u1", "Where to?"), ("u2", "a1", "Porto"),
                              ("a2", "u2", "Porto: 2 days."), ("u3", "a1", "Lisbon"), ("a3", "u3", "Lisbon: 3 days, 900 EUR.")]:
        t.add({"id": nid, "role": "user" if nid[0] == "u" else "assistant", "content": text}, parent)
    t.head = "a2"
    t.set_label("a3", "the Lisbon plan")
    return convlab.Conversation(t, id="trip", format="chatgpt")


def test_a_conversation_loads_into_a_session_in_memory_with_its_ids_head_and_labels():
    c = plan()
    s = session_of(c, worker="manual")
    assert isinstance(s, convlab.Session) and s.head == "a2" and s.labels() == {"a3": "the Lisbon plan"}
    assert sorted(s.tree.edges) == sorted(c.tree.edges) and [m["id"] for m in s.path()] == ["u1", "a1", "u2", "a2"]
    s.submit({"type": "client.message", "agent_id": s.agent, "message": {"role": "user", "content": "and food?"}})
    assert len(c) == 6 and c.head == "a2"  # the conversation is left as it was
    assert session_of(s) is s and session_of(convlab.replay(c)).head is not None


def test_merge_on_a_conversation_goes_through_a_session_it_returns():
    c = plan()
    s = convlab.merge(c, "a3", summarizer="Lisbon: 3 days, 900 EUR.", worker="manual")
    merged = s.path()[-1]
    assert merged["metadata"]["merged_from"] == {"leaf": "a3", "ancestor": "a1"}
    assert merged["content"].endswith("Lisbon: 3 days, 900 EUR.") and s.path()[-2]["id"] == "a2"
    started = [e for e in s.events if e["type"] == "turn.started"]
    assert started[-1]["trigger"]["type"] == "client.messages"  # submitted as a view, recorded by the engine
    assert s.pending["type"] == "turn.start"
    assert len(c) == 6 and c.head == "a2" and "merged_from" not in str(c.path())  # never into the log's tree
    assert s.merge("a3", summarizer="again")["duplicate"] is True
    into_side = convlab.merge(c, "a2", into="a3", summarizer="Porto: 2 days.", worker="manual")
    assert into_side.path()[-2]["id"] == "a3"


def test_merge_on_a_session_is_its_own_merge():
    s = session_of(plan())  # a session with the chat worker: the merge's turn runs
    assert convlab.merge(s, "a3", summarizer="Lisbon.") is s
    assert s.path()[-2]["metadata"]["merged_from"]["leaf"] == "a3" and s.path()[-1]["content"].startswith("echo: ")


def test_summarize_on_a_conversation_proposes_what_a_session_would_and_runs_in_one(tmp_path):
    c = plan()
    proposal = convlab.summarize(c, "a1", "u2", summarizer="asked where, said Porto")
    assert proposal == session_of(c).summarize("a1", "u2", summarizer="asked where, said Porto")
    assert [m.get("id") for m in proposal[0]["messages"]] == ["u1", None, "a2"]
    assert len(c) == 6  # a proposal changes nothing
    s = convlab.Session.load(convlab.write(c, tmp_path / "trip.jsonl"), worker="manual")  # the way docs/api.md shows
    s.submit({"type": "client.message", "agent_id": s.agent, "message": {"id": "u4", "role": "user", "content": "book it"}})
    s.decide(s.summarize("a1", "a2", summarizer="asked where, said Porto, 2 days") + [{"type": "llm.call"}])
    assert [m["content"] for m in s.path()][-3:] == [
        "The earlier conversation was summarized:\n\nasked where, said Porto, 2 days", "book it", "echo: book it"]


@pytest.mark.parametrize(("call", "says"), [
    (lambda c: convlab.merge(c, "zz"), "leaf: 'zz' is no message of this tree"),
    (lambda c: convlab.merge(c, 3), "leaf: a message id"),
    (lambda c: convlab.merge(c, "a3", into="zz"), "into: 'zz' is no message"),
    (lambda c: convlab.merge(c, "a1", summarizer="x"), "leaf: a1 is on the path to a2: its branch has nothing to merge"),
    (lambda c: convlab.merge(c, "a3", summarizer=""), "summarizer: the text given is empty"),
    (lambda c: convlab.merge([c], "a3"), "convlab.read returns a list"),
    (lambda c: convlab.summarize(c, "zz"), "start: 'zz' is no message of this tree"),
    (lambda c: convlab.summarize(c, "a3", summarizer="x"), "start: a3 is not on the active path"),
    (lambda c: convlab.summarize(c, "a2", "u1", summarizer="x"), "end: u1 comes before start a2"),
    (lambda c: session_of(c, lazy=True), "cannot be loaded into a session: .*lazy=True needs the log's path"),
    (lambda c: session_of(c, colour="red"), "cannot be loaded into a session: .*unexpected keyword argument 'colour'"),
    (lambda c: convlab.merge(session_of(c), "a3", worker="manual"), "worker: a Session is changed as it is"),
])
def test_what_cannot_be_merged_or_summarized_is_an_explore_error_naming_it(call, says):
    with pytest.raises(convlab.ExploreError, match=says):
        call(plan())


@pytest.mark.realdata
def test_a_real_claude_code_session_merges_its_pre_compaction_branch_back_through_a_session(real):  # noqa: F811
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        c = max(convlab.read(real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz", progress=False), key=len)
    side = next(n for n in c.tree if c.tree.out_degree(n) == 0 and n != c.head)
    n, head = len(c), c.head
    s = convlab.merge(c, side, summarizer="Before compaction: OTEL deps added, bootstrap written, tests pass.", worker="manual")
    assert s.path()[-1]["metadata"]["merged_from"]["leaf"] == side and s.path()[-2]["id"] == head
    assert len(s.message_tree) == n + 1 and len(c) == n and c.head == head
    assert convlab.find(s, "merged back", role="user")["id"].tolist() == [s.head]
    proposal = convlab.summarize(c, c.path()[-10]["id"], summarizer="the last steps")
    assert proposal[0]["type"] == "context.replace" and len(c) == n
