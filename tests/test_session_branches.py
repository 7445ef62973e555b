"""Session.merge (a branch's delta back as one message, through a view) and Session.summarize (a context.replace
proposal: summary from a point, the rest kept)."""

from __future__ import annotations

import pytest

import convlab

from session_support import make, message, m


def trip():
    """u1 -> e1 -> u2 (Lisbon) -> e2 ; e1 -> u3 (Porto) -> e3 (head)."""
    s = make()
    s.submit(message(m("u1", "plan a trip")))
    s.submit(message(m("u2", "try Lisbon")))
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [*s.view("e1"), m("u3", "try Porto")]})
    assert s.head == "e3"
    return s


def test_merge_submits_the_branch_delta_as_one_message_with_provenance_through_a_view():
    s = trip()
    n = len(s.events)
    receipt = s.merge("e2", summarizer="Lisbon: 3 days.")
    assert receipt["status"] == 200 and receipt["new_from"] == 4
    new = s.events[n:]
    assert [e["type"] for e in new][:2] == ["turn.started", "message.new"]
    assert new[0]["trigger"] == {"type": "client.messages", "new_from": 4}
    merged = new[1]["message"]
    assert merged["parent"] == "e3" and merged["role"] == "user"
    assert merged["metadata"]["merged_from"] == {"leaf": "e2", "ancestor": "e1"}
    assert merged["content"].startswith("A branch of this conversation was merged back (from e2, which left it after e1)")
    assert merged["content"].endswith("Lisbon: 3 days.")
    assert [x["id"] for x in s.path()][:4] == ["u1", "e1", "u3", "e3"]  # the target branch, then the merge and its reply


def test_merging_the_same_branch_again_adds_nothing():
    s = trip()
    first = s.merge("e2", summarizer="Lisbon.")
    n = len(s.events)
    again = s.merge("e2", summarizer="something else")
    assert again["duplicate"] is True and again["turn_id"] == first["turn_id"] and len(s.events) == n


def test_merge_into_another_branch_and_a_summarizer_that_is_a_provider():
    s = trip()
    llm = convlab.ScriptedLLM([{"content": "Porto: 2 days.", "usage": {"input_tokens": 5, "output_tokens": 3}}])
    s.merge("e3", into="e2", summarizer=llm)
    merged = s.path()[-2]
    assert merged["parent"] == "e2" and merged["content"].endswith("Porto: 2 days.")
    assert merged["metadata"]["merged_from"] == {"leaf": "e3", "ancestor": "e1"}


def test_merge_with_the_session_provider_writes_a_summary_of_the_delta():
    s = trip()
    s.merge("e2")
    text = s.path()[-2]["content"]
    assert "Summary of 2 messages." in text and "try Lisbon" in text


def test_a_merge_survives_load(tmp_path):
    path = tmp_path / "s.jsonl"
    s = make(log=path)
    s.submit(message(m("u1", "a")))
    s.submit(message(m("u2", "b")))
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [*s.view("e1"), m("u3", "c")]})
    s.merge("e2", summarizer="b was asked")
    loaded = convlab.Session.load(path)
    assert loaded.snapshot() == s.snapshot()
    assert loaded.merge("e2", summarizer="x")["duplicate"] is True


@pytest.mark.parametrize(("args", "says"), [
    (("e1",), "leaf: e1 is on the path to e3"),
    (("nope",), "leaf: 'nope' is not a recorded message"),
    (("e2", "nope"), "into: 'nope' is not a recorded message"),
])
def test_what_cannot_be_merged_is_refused_writing_nothing(args, says):
    s = trip()
    n = len(s.events)
    with pytest.raises(convlab.Refused, match=says):
        s.merge(*args, summarizer="x")
    with pytest.raises(convlab.Refused, match="summarizer: the text given is empty"):
        s.merge("e2", summarizer=" ")
    with pytest.raises(convlab.Refused, match="summarizer: a provider"):
        s.merge("e2", summarizer=3)
    assert len(s.events) == n


def test_a_merge_during_a_turn_is_the_views_409_and_a_failing_summarizer_writes_nothing():
    s = trip()
    s.autorun = False
    s.submit(message(m("u4", "more")))
    n = len(s.events)
    with pytest.raises(convlab.Refused) as err:
        s.merge("e2", summarizer="x")
    assert err.value.status == 409 and len(s.events) == n
    s.run()
    n = len(s.events)
    with pytest.raises(convlab.ProviderError):
        s.merge("e2", summarizer=convlab.ScriptedLLM([{"error": "failed"}]))
    assert len(s.events) == n


# -- summarize from here ----------------------------------------------------------------------------------


def manual_session(n=3):
    s = make(worker="manual")
    for i in range(1, n + 1):
        s.submit(message(m(f"u{i}", f"question {i}")))
        s.decide([{"type": "llm.call"}])
        s.decide([])
    return s


def test_summarize_from_the_first_message_is_the_replace_summary():
    s = manual_session()
    (action,) = s.summarize("u1", "e2", summarizer="two questions answered")
    assert action == {"type": "context.replace", "summary": "two questions answered",
                      "messages": [{"id": "u3", "role": "user", "content": "question 3"}, {"id": "e3", "role": "assistant", "content": "echo: question 3"}]}


def test_summarize_from_a_point_keeps_the_rest_in_order_and_runs_when_a_decision_is_answered_with_it():
    s = manual_session()
    s.submit(message(m("u4", "and now?")))
    n = len(s.events)
    proposal = s.summarize("u2", "e2", summarizer="the second question, answered")
    assert len(s.events) == n  # a proposal changes nothing
    assert s.pending["type"] == "turn.start"
    s.decide(proposal + [{"type": "llm.call"}])
    assert "context.replaced" in [e["type"] for e in s.events[n:]]
    path = s.path()
    assert [x["copied_from"] for x in path] == ["u1", "e1", None, "u3", "e3", "u4", None]
    summary = path[2]
    assert summary["content"].endswith("the second question, answered") and summary["role"] == "user"
    assert summary["metadata"]["summary_of"] == {"start": "u2", "end": "e2"}
    assert path[0]["replaces"] == "u4"
    assert path[-1]["role"] == "assistant" and path[-1]["content"] == "echo: and now?"


def test_a_range_never_cuts_a_tool_call_from_its_results():
    s = make(worker="manual")
    s.submit(message(m("u1", "list files")))
    s.decide([{"type": "message.add", "message": {"id": "a1", "role": "assistant", "content": "",
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}},
              {"type": "message.add", "message": {"id": "t1", "role": "tool", "tool_call_id": "c1", "content": "a.txt"}},
              {"type": "message.add", "message": {"id": "a2", "role": "assistant", "content": "one file"}}])
    (action,) = s.summarize("t1", "t1", summarizer="listed")
    kept = [x.get("id") for x in action["messages"]]
    assert kept == ["u1", None, "a2"]
    (action,) = s.summarize("u1", "a1", summarizer="listed")
    assert [x["id"] for x in action["messages"]] == ["a2"]


@pytest.mark.parametrize(("args", "says"), [
    (("nope",), "start: 'nope' is not a recorded message"),
    (("e2", "u1"), "end: u1 comes before start e2"),
])
def test_a_range_off_the_path_or_backwards_is_refused(args, says):
    s = manual_session()
    with pytest.raises(convlab.Refused, match=says):
        s.summarize(*args, summarizer="x")


def test_a_node_off_the_active_path_is_refused():
    s = trip()
    with pytest.raises(convlab.Refused, match="start: u2 is not on the active path"):
        s.summarize("u2", summarizer="x")


def test_summarize_with_the_session_provider():
    s = manual_session()
    (action,) = s.summarize("u1")
    assert action["summary"].startswith("Summary of 6 messages.") and action["messages"] == []
