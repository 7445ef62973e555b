"""PROTOCOL.md 2: "An unknown agent is refused 404; a malformed input is refused 400 with a message
naming the field. A refused input writes nothing, moves nothing and emits nothing."

Every case runs against a session with history (two branches, worker state, a completed turn), and
checks the status, that the refusal names the problem, and that snapshot(), events, turns, head,
state and pending are unchanged (session_support.refused)."""

from __future__ import annotations

import pytest

from session_support import a, m, make, message, refused, reply, view

import convlab


@pytest.fixture
def s():
    s = make(llm=convlab.ScriptedLLM([reply(f"r{i}") for i in range(1, 10)]))
    s.submit(view([m("u1", "q"), a("a1", "x"), m("u2", "y")]))
    s.submit(view([m("u1"), m("b1", "other")]))
    assert s.pending is None and all(t["status"] == "completed" for t in s.turns)
    return s


MSG = {"id": "n1", "role": "user", "content": "fine"}

BAD_400 = [
    # (id, input, words any of which the refusal must name)
    ("not-a-dict-list", [], ("input", "dict", "object")),
    ("not-a-dict-str", "client.message", ("input", "dict", "object")),
    ("not-a-dict-none", None, ("input", "dict", "object")),
    ("missing-type", {"agent_id": "bot", "message": MSG}, ("type",)),
    ("type-not-str", {"type": 5, "agent_id": "bot", "message": MSG}, ("type",)),
    ("unknown-type", {"type": "client.shout", "agent_id": "bot", "message": MSG}, ("type", "client.shout")),
    ("missing-agent", {"type": "client.message", "message": MSG}, ("agent_id",)),
    ("agent-not-str", {"type": "client.message", "agent_id": ["bot"], "message": MSG}, ("agent_id",)),
    # client.message
    ("message-missing", {"type": "client.message", "agent_id": "bot"}, ("message",)),
    ("message-not-dict", {"type": "client.message", "agent_id": "bot", "message": "hi"}, ("message",)),
    ("message-list", {"type": "client.message", "agent_id": "bot", "message": [MSG]}, ("message",)),
    ("role-missing", message({"id": "n1", "content": "x"}), ("role",)),
    ("role-bad", message({"id": "n1", "role": "robot", "content": "x"}), ("role", "robot")),
    ("role-not-str", message({"id": "n1", "role": 1, "content": "x"}), ("role",)),
    ("content-missing", message({"id": "n1", "role": "user"}), ("content",)),
    ("content-int", message({"id": "n1", "role": "user", "content": 5}), ("content",)),
    ("content-dict", message({"id": "n1", "role": "user", "content": {"text": "x"}}), ("content",)),
    ("id-int", message({"id": 7, "role": "user", "content": "x"}), ("id",)),
    ("state-list", message(MSG, state=[1, 2]), ("state",)),
    ("state-str", message(MSG, state="x"), ("state",)),
    ("queue-bad-str", message(MSG, queue="later"), ("queue",)),
    # client.append
    ("append-missing", {"type": "client.append", "agent_id": "bot"}, ("messages",)),
    ("append-not-list", {"type": "client.append", "agent_id": "bot", "messages": MSG}, ("messages",)),
    (
        "append-bad-role",
        {"type": "client.append", "agent_id": "bot", "messages": [MSG, {"id": "n2", "role": "x", "content": "y"}]},
        ("role",),
    ),
    (
        "append-item-not-dict",
        {"type": "client.append", "agent_id": "bot", "messages": [MSG, "hello"]},
        ("messages", "message"),
    ),
    # client.messages: the view
    ("view-missing", {"type": "client.messages", "agent_id": "bot"}, ("messages",)),
    ("view-not-list", {"type": "client.messages", "agent_id": "bot", "messages": "u1"}, ("messages",)),
    ("view-empty", view([]), ("messages", "empty")),
    ("view-bad-role", view([m("u1"), {"role": "narrator", "content": "x"}]), ("role", "narrator")),
    ("view-no-content", view([m("u1"), {"role": "user"}]), ("content",)),
    ("view-item-not-dict", view([m("u1"), 42]), ("messages", "message")),
    ("view-not-a-path", view([m("u1"), m("u2")]), ("u2", "path")),
    ("view-not-top-level", view([a("a1"), m("u2")]), ("a1", "path")),
    ("view-skips-a-node", view([m("u1"), m("u2"), m("n9", "x")]), ("u2", "path")),
    ("view-dup-in-rest", view([m("u1"), m("n1", "x"), m("n1", "y")]), ("n1",)),
    ("view-recorded-id-in-rest", view([m("u1"), m("n1", "x"), m("b1", "y")]), ("b1",)),
    ("view-queue-true", view([m("u1"), m("n1", "x")], queue=True), ("queue",)),
    ("view-queue-false", view([m("u1"), m("n1", "x")], queue=False), ("queue",)),
    ("view-queue-merge", view([m("u1"), m("n1", "x")], queue="merge"), ("queue",)),
    # client.interrupt takes no queue
    ("interrupt-queue", {"type": "client.interrupt", "agent_id": "bot", "queue": False}, ("queue",)),
    # everything recorded goes to the session log as JSON: what is not JSON data is refused, named
    ("content-part-not-json", {"type": "client.message", "agent_id": "bot",
                               "message": {"id": "n1", "role": "user", "content": [{"type": "image", "data": {1, 2}}]}},
     ("message.content[0].data", "set")),
    ("metadata-key-not-str", {"type": "client.message", "agent_id": "bot",
                              "message": {"id": "n1", "role": "user", "content": "x", "metadata": {1: "one"}}},
     ("message.metadata", "key")),
    ("state-not-json", {"type": "client.message", "agent_id": "bot", "message": MSG, "state": {"when": object()}},
     ("state.when", "object")),
]


@pytest.mark.parametrize("inp, names", [pytest.param(i, n, id=k) for k, i, n in BAD_400])
def test_malformed_input_is_refused_400_and_changes_nothing(s, inp, names):
    refused(s, inp, 400, *names)


@pytest.mark.parametrize(
    "inp",
    [
        message(MSG) | {"agent_id": "other"},
        view([m("u1"), m("n1", "x")]) | {"agent_id": "other"},
        {"type": "client.append", "agent_id": "other", "messages": [MSG]},
        {"type": "client.interrupt", "agent_id": "other"},
    ],
    ids=["message", "view", "append", "interrupt"],
)
def test_unknown_agent_is_refused_404_and_changes_nothing(s, inp):
    """2: "An unknown agent is refused 404"; API.md: "inputs for another agent_id are refused 404"."""
    refused(s, inp, 404, "other")


def test_refusals_during_a_turn_change_nothing():
    """2: "A refused input writes nothing, moves nothing and emits nothing" - also while a turn waits."""
    s = make(worker="manual")
    s.submit(message(m("u1", "hi")))
    s.submit(message(m("q1", "later"), queue=True))
    refused(s, message(m("u2", "now")), 409, "t1")
    refused(s, view([m("u1")]), 409, "t1")
    refused(s, view([m("u1"), m("n1", "x")]), 409, "t1")
    refused(s, view([m("u1"), m("q1", "x")]), 409, "t1", "q1")
    refused(s, message(MSG) | {"agent_id": "nobody"}, 404, "nobody")


def test_refused_input_does_not_consume_ids(s):
    """1: engine ids e1, e2, ... in order of creation: a refused input creates nothing, so the next id is
    unchanged. (The fixture's two replies are e1 and e2.)"""
    assert sorted(n["id"] for n in s.snapshot()["nodes"] if n["id"].startswith("e")) == ["e1", "e2"]
    refused(s, view([m("u1"), m(None, "x"), {"role": "bad", "content": "y"}]), 400, "role")
    s.submit(message(m(None, "fine")))
    fine = [n for n in s.snapshot()["nodes"] if n["content"] == "fine"]
    assert [n["id"] for n in fine] == ["e3"]


def test_refused_turn_ids_are_not_consumed(s):
    """1: turn ids t1, t2, ...: a refused input starts no turn."""
    n = len(s.turns)
    refused(s, message({"role": "user"}), 400, "content")
    r = s.submit(message(m("n1", "ok")))
    assert r["turn_id"] == f"t{n + 1}"


def test_decide_with_nothing_pending_changes_nothing(s):
    """API.md: decide() with nothing pending raises convlab.Refused (409)."""
    from session_support import frozen

    before = frozen(s)
    with pytest.raises(convlab.Refused) as info:
        s.decide([{"type": "llm.call"}])
    assert info.value.status == 409
    assert frozen(s) == before


def test_interrupt_with_nothing_running_changes_nothing(s):
    refused(s, {"type": "client.interrupt", "agent_id": "bot"}, 409)


def test_the_session_agent_is_the_one_known():
    """API.md: agent = "the agent id; inputs for another agent_id are refused 404"."""
    s = make(agent="helper")
    refused(s, message(MSG), 404, "bot")
    r = s.submit(message(MSG) | {"agent_id": "helper"})
    assert r["status"] == 200
    assert s.snapshot()["agent"] == "helper"


def test_a_provider_reply_that_is_not_json_data_fails_the_turn():
    """The reply is recorded and logged as JSON: a provider that answers with other data is a failed call."""

    class OddLLM:
        def complete(self, request):
            return {"content": {"set": {1, 2}}, "usage": {"input_tokens": 1, "output_tokens": 1}}

    s = make(llm=OddLLM())
    s.submit(message(m("u1", "hi")))
    failed = [e for e in s.events if e["type"] == "llm.failed"]
    assert failed and "not JSON data" in failed[-1]["message"]
    assert s.turns[-1]["status"] == "failed" and [n["id"] for n in s.path()] == ["u1"]
