"""PROTOCOL.md 4: decisions: workers (chat, manual, callable), pending/decide, the actions
llm.call / message.add / state.set / turn.end, implicit turn end, ScriptedLLM, provider failure."""

from __future__ import annotations

import json

import pytest

from session_support import (
    RecordingLLM,
    a,
    m,
    make,
    message,
    node,
    of_type,
    path_ids,
    reply,
    statuses,
    turn,
    types,
    view,
)

import convlab


def test_decision_request_shape():
    """4: "A decision request holds the active path as messages, plus type, turn_id, trigger, state
    (worker state) and client_state." """
    s = make(worker="manual")
    s.submit(message(m("u1", "hello"), state={"tz": "UTC"}))
    d = s.pending
    assert d["type"] == "turn.start"
    assert d["turn_id"] == "t1"
    assert d["trigger"] == {"type": "client.message", "message_ids": ["u1"]}
    assert [msg["id"] for msg in d["messages"]] == ["u1"]
    assert d["messages"][0]["role"] == "user" and d["messages"][0]["content"] == "hello"
    assert d["state"] == {}
    assert d["client_state"] == {"tz": "UTC"}
    assert json.loads(json.dumps(d)) == d
    # the request is also an event; it names the head whose path the messages are
    # (docs/wire.md), so the log does not repeat the path at every decision
    req = of_type(s, "decision.requested")
    assert req[-1]["decision"] == {k: v for k, v in d.items() if k != "messages"} and req[-1]["turn_id"] == "t1"
    assert req[-1]["decision"]["head"] == "u1"



def test_the_decision_as_logged_is_pending_without_the_path():
    """docs/wire.md: the decision.requested event "names the head instead of holding the path";
    Session.decision is that request (read-only, nothing copied), Session.pending the same plus messages."""
    s = make(worker="manual")
    s.submit(message(m("u1", "hello")))
    s.decide([{"type": "llm.call"}])
    d = s.decision
    assert dict(d) == {k: v for k, v in s.pending.items() if k != "messages"}
    assert d["type"] == "llm.result" and d["head"] == d["reply"]["id"] == s.head
    assert dict(d) == of_type(s, "decision.requested")[-1]["decision"]
    with pytest.raises(TypeError):
        d["type"] = "turn.start"  # type: ignore[index]
    s.decide([])
    assert s.decision is None and s.pending is None

def test_llm_call_records_the_reply_under_the_head_and_asks_llm_result():
    """4: "llm.call: call the model. Without messages it reads the active path at the moment it runs.
    The reply is recorded under the head (message.new, with usage)." ... "if any of them was an
    llm.call, the engine asks llm.result (with the last reply)" """
    llm = RecordingLLM([reply("the answer", input_tokens=7, output_tokens=3)])
    s = make(worker="manual", llm=llm)
    s.submit(message(m("u1", "question")))
    n = len(s.events)
    s.decide([{"type": "llm.call"}])
    assert [msg["content"] for msg in llm.requests[0]["messages"]] == ["question"]
    rid = s.head
    r = node(s, rid)
    assert r["parent"] == "u1" and r["role"] == "assistant" and r["content"] == "the answer"
    assert r["usage"]["input_tokens"] == 7 and r["usage"]["output_tokens"] == 3
    new = s.events[n:]
    msg_new = [e for e in of_type(new, "message.new") if e["message"]["id"] == rid]
    assert len(msg_new) == 1 and msg_new[0]["message"]["usage"]["input_tokens"] == 7
    assert types(new).index("llm.started") < types(new).index("llm.completed")
    d = s.pending
    assert d["type"] == "llm.result"
    assert d["reply"]["id"] == rid and d["reply"]["content"] == "the answer"
    assert [msg["id"] for msg in d["messages"]] == ["u1", rid]


def test_llm_call_with_messages_reads_them_not_the_path():
    """4: llm.call {messages?}: "Without messages it reads the active path" - with messages it reads those."""
    llm = RecordingLLM()
    s = make(worker="manual", llm=llm)
    s.submit(message(m("u1", "question")))
    s.decide([{"type": "llm.call", "messages": [{"role": "user", "content": "something else"}]}])
    assert [msg["content"] for msg in llm.requests[0]["messages"]] == ["something else"]
    assert node(s, s.head)["parent"] == "u1"


def test_several_calls_then_llm_result_carries_the_last_reply():
    """4: "the engine asks llm.result (with the last reply)"; the second call reads the first reply."""
    llm = RecordingLLM([reply("one"), reply("two")])
    s = make(worker="manual", llm=llm)
    s.submit(message(m("u1", "q")))
    s.decide([{"type": "llm.call"}, {"type": "llm.call"}])
    assert [msg["content"] for msg in llm.requests[1]["messages"]] == ["q", "one"]
    assert s.pending["type"] == "llm.result"
    assert s.pending["reply"]["content"] == "two"
    assert [n["content"] for n in s.path()] == ["q", "one", "two"]


def test_message_add_records_under_the_head():
    """4: "message.add {message}: record a message under the head (a tool result)." """
    calls = [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]
    s = make(worker="manual")
    s.submit(message(m("u1", "weather?")))
    s.decide(
        [
            {"type": "message.add", "message": a("a1", "", tool_calls=calls)},
            {"type": "message.add", "message": m("tr1", "sunny", role="tool", tool_call_id="c1")},
        ]
    )
    assert path_ids(s) == ["u1", "a1", "tr1"]
    assert node(s, "tr1")["tool_call_id"] == "c1"
    assert node(s, "a1")["tool_calls"] == calls
    assert turn(s, "t1")["status"] == "completed"  # no llm.call: the turn completes


def test_message_add_without_id_gets_an_engine_id():
    """4: "Engine ids (eN) are given when a message is recorded." """
    s = make(worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "message.add", "message": m(None, "r", role="tool", tool_call_id="c")}])
    assert s.head == "e1"


def test_state_set_sets_worker_state_at_the_head():
    """4: "state.set {state}: set the worker state at the head." """
    s = make(worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "state.set", "state": {"step": 1}}])
    assert node(s, "u1")["state"] == {"step": 1}
    assert s.state == {"step": 1}
    changed = of_type(s, "state.changed")
    assert changed[-1]["node"] == "u1" and changed[-1]["state"] == {"step": 1}


def test_actions_run_in_order():
    """4: "The actions of one answer run in order." state.set after llm.call lands on the reply."""
    s = make(worker="manual", llm=convlab.ScriptedLLM([reply("r")]))
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "state.set", "state": {"at": "u1"}}, {"type": "llm.call"}, {"type": "state.set", "state": {"at": "reply"}}])
    rid = s.head
    assert node(s, "u1")["state"] == {"at": "u1"}
    assert node(s, rid)["state"] == {"at": "reply"}
    assert s.pending["type"] == "llm.result"
    assert s.pending["state"] == {"at": "reply"}


def test_turn_end_ends_the_turn_and_later_actions_do_not_run():
    """4: "turn.end: end the turn; actions after it are not run." """
    s = make(worker="manual")
    s.submit(message(m("u1", "x")))
    n = len(s.events)
    s.decide([{"type": "turn.end"}, {"type": "state.set", "state": {"x": 1}}, {"type": "llm.call"}])
    assert s.pending is None
    assert turn(s, "t1")["status"] == "completed"
    assert s.state == {}
    assert "llm.started" not in types(s.events[n:])
    assert path_ids(s) == ["u1"]


def test_turn_end_after_llm_call_ends_without_llm_result():
    """4: turn.end ends the turn: no llm.result is asked."""
    s = make(worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "llm.call"}, {"type": "turn.end"}])
    assert s.pending is None
    assert turn(s, "t1")["status"] == "completed"
    assert len(path_ids(s)) == 2


def test_empty_answer_ends_the_turn():
    """4: "So an empty answer, or one like [state.set], ends the turn." """
    s = make(worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([])
    assert s.pending is None and turn(s, "t1")["status"] == "completed"
    s.submit(message(m("u2", "y")))
    s.decide([{"type": "state.set", "state": {"k": "v"}}])
    assert s.pending is None and turn(s, "t2")["status"] == "completed"
    assert "turn.completed" in types(s.events)


def test_llm_result_answered_with_nothing_completes():
    """4: when the actions are used up and none was an llm.call, the turn completes."""
    s = make(worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "llm.call"}])
    s.decide([])
    assert turn(s, "t1")["status"] == "completed"
    assert of_type(s, "turn.completed")[-1]["turn_id"] == "t1"


def test_chat_worker_calls_the_model_then_ends():
    """4: "The built-in worker (chat): on turn.start it calls the model unless the path ends with an
    assistant message; on llm.result it ends the turn." """
    s = make(llm=convlab.ScriptedLLM([reply("hello back")]))
    s.submit(message(m("u1", "hello")))
    assert [n["content"] for n in s.path()] == ["hello", "hello back"]
    assert turn(s, "t1")["status"] == "completed"
    assert len(of_type(s, "llm.started")) == 1
    assert [e["decision"]["type"] for e in of_type(s, "decision.requested")] == ["turn.start", "llm.result"]


def test_chat_worker_does_not_call_when_the_path_ends_with_an_assistant_message():
    """4: the chat worker calls the model "unless the path ends with an assistant message"."""
    s = make()
    s.submit(view([m("u1", "q"), a("a1", "answer")]))
    assert "llm.started" not in types(s.events)
    assert turn(s, "t1")["status"] == "completed"
    assert path_ids(s) == ["u1", "a1"]


def test_callable_worker_gets_every_decision():
    """4: "A worker can be any callable"; API.md: callable(decision) -> actions."""
    seen = []

    def worker(decision):
        seen.append(decision)
        if decision["type"] == "turn.start":
            return [{"type": "llm.call"}, {"type": "llm.call"}]
        return [{"type": "state.set", "state": {"replies": len(decision["messages"]) - 1}}]

    s = make(worker=worker, llm=convlab.ScriptedLLM([reply("a"), reply("b")]))
    s.submit(message(m("u1", "q")))
    assert [d["type"] for d in seen] == ["turn.start", "llm.result"]
    assert seen[1]["reply"]["content"] == "b"
    assert s.state == {"replies": 2}
    assert turn(s, "t1")["status"] == "completed"
    assert s.pending is None


def test_manual_worker_waits_for_decide():
    """4: "a person answering through a widget: the session then waits (pending) until decide(actions)
    is called." """
    s = make(worker="manual")
    s.submit(message(m("u1", "q")))
    assert s.pending["type"] == "turn.start"
    assert turn(s, "t1")["status"] == "running"
    s.run()  # nothing to do while a decision waits
    assert s.pending["type"] == "turn.start"
    s.decide([{"type": "llm.call"}])
    assert s.pending["type"] == "llm.result"
    s.decide([])
    assert s.pending is None


def test_decision_answered_event_records_the_actions():
    """7: decision.requested / decision.answered {actions}."""
    s = make(worker="manual")
    s.submit(message(m("u1", "q")))
    s.decide([{"type": "state.set", "state": {"a": 1}}])
    ans = of_type(s, "decision.answered")
    assert ans[-1]["actions"] == [{"type": "state.set", "state": {"a": 1}}]
    assert ans[-1]["turn_id"] == "t1"


def test_scripted_llm_replies_in_order():
    """API.md: "ScriptedLLM(replies): replies in order: {content, usage}". """
    s = make(llm=convlab.ScriptedLLM([reply("one", input_tokens=11), reply("two", input_tokens=22)]))
    s.submit(message(m("u1", "a")))
    s.submit(message(m("u2", "b")))
    p = s.path()
    assert [n["content"] for n in p] == ["a", "one", "b", "two"]
    assert p[1]["usage"]["input_tokens"] == 11
    assert p[3]["usage"]["input_tokens"] == 22


def test_provider_failure_fails_the_turn():
    """4: "A provider error failed emits llm.failed and fails the turn". """
    s = make(llm=convlab.ScriptedLLM([{"error": "failed"}]))
    n = len(s.events)
    s.submit(message(m("u1", "a")))
    new = s.events[n:]
    assert "llm.failed" in types(new)
    failed = of_type(new, "turn.failed")
    assert len(failed) == 1 and failed[0]["turn_id"] == "t1" and failed[0]["error"]
    assert "turn.completed" not in types(new)
    assert types(new).index("llm.failed") < types(new).index("turn.failed")
    t = turn(s, "t1")
    assert t["status"] == "failed" and t["error"]
    assert path_ids(s) == ["u1"]  # no reply recorded
    assert s.pending is None


def test_provider_failure_then_next_turn_runs():
    """A failed turn ends the turn; the next submit is not refused."""
    s = make(llm=convlab.ScriptedLLM([{"error": "failed"}, reply("fine")]))
    s.submit(message(m("u1", "a")))
    r = s.submit(message(m("u2", "b")))
    assert r["status"] == 200
    assert statuses(s) == {"t1": "failed", "t2": "completed"}
    assert [n["content"] for n in s.path()] == ["a", "b", "fine"]


def test_custom_provider_error_failed():
    """API.md: a provider "raises convlab.ProviderError(kind="too_long" | "failed") to refuse"."""
    s = make(llm=RecordingLLM([{"error": "failed"}]))
    s.submit(message(m("u1", "a")))
    assert turn(s, "t1")["status"] == "failed"


def test_named_providers():
    """API.md: llm = "a provider, or {name: provider}"; 4: llm.call {llm?} picks one."""
    first, second = RecordingLLM([reply("from first")]), RecordingLLM([reply("from second")])
    s = make(worker="manual", llm={"first": first, "second": second})
    s.submit(message(m("u1", "q")))
    s.decide([{"type": "llm.call", "llm": "second"}])
    assert len(second.requests) == 1 and len(first.requests) == 0
    assert s.pending["reply"]["content"] == "from second"
    started = of_type(s, "llm.started")[-1]
    assert started["llm"] == "second"


def test_decide_refuses_an_answer_of_the_wrong_shape_and_nothing_runs():
    """Issue 15: "decide() refuses (400) an answer whose shape is wrong or that names an unknown llm, before
    anything runs, while the rules PROTOCOL gives for well-shaped but bad actions stay"."""
    s = make(worker="manual")
    s.submit(message(m("u1", "hi")))
    before = (len(s.events), s.pending)
    for bad, field in [({"type": "llm.call"}, "actions"), ([{"type": "llm.call", "llm": "nope"}], "actions[0].llm"),
                       ([{"type": "state.set", "state": {}}, {"type": "llm.call", "llm": "nope"}], "actions[1].llm"),
                       ([{"type": "nap"}], "actions[0].type")]:
        with pytest.raises(convlab.Refused) as err:
            s.decide(bad)
        assert err.value.status == 400 and str(err.value).startswith(field), str(err.value)
        assert (len(s.events), s.pending) == before  # nothing ran, the decision still waits
        if "llm" in field:
            assert "no provider named 'nope' (known: default)" in str(err.value)
    s.decide([{"type": "context.replace"}])  # well-shaped but empty: PROTOCOL 5.4 fails the turn
    assert s.turns[-1]["status"] == "failed" and "neither" in s.turns[-1]["error"]
