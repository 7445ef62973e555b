"""PROTOCOL.md 7: events: order, turn_id, session.started first, subscribe/unsubscribe."""

from __future__ import annotations

import json
import tomllib

from session_support import PAGE_CONFIG, a, m, make, message, of_type, reply, types, view

import convlab

#: Event types that happen within a turn (7: "an event that happens within a turn also carries its turn_id").
IN_TURN = {
    "turn.started",
    "turn.completed",
    "turn.failed",
    "decision.requested",
    "decision.answered",
    "llm.started",
    "llm.completed",
    "llm.failed",
    "context.limited",
    "context.replaced",
    "context.kept",
    "state.changed",
}


def busy_session():
    s = make(llm=convlab.ScriptedLLM([reply("a"), {"error": "failed"}, reply("b"), reply("c")]), clock=10.0)
    s.submit(message(m("u1", "one")))
    s.submit(message(m("u2", "two")))  # fails
    s.submit(view([m("u1")]))  # regenerate
    s.advance(5)
    s.submit(view([m("u1"), m("x", "edit")]))
    return s


def test_session_started_is_first():
    """7: "The log's first event is session.started {agent, config}." wire.md: config = the parsed context table."""
    s = make(config=PAGE_CONFIG)
    first = s.events[0]
    assert first["type"] == "session.started"
    assert first["agent"] == "bot"
    table = tomllib.loads(PAGE_CONFIG)["agent"]["bot"]["context"]
    assert first["config"]["window"] == table["window"]
    assert [st["use"] for st in first["config"]["strategy"]] == ["reset", "summarize"]
    assert first["config"]["strategy"][0]["idle_secs"] == 3600
    assert sum(1 for e in s.events if e["type"] == "session.started") == 1


def test_events_are_in_order_with_seq_and_time():
    """7: "Every change is an event {seq, time, type, ...}, in order." """
    s = busy_session()
    seqs = [e["seq"] for e in s.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    times = [e["time"] for e in s.events]
    assert times == sorted(times)
    assert times[0] == 10.0 and times[-1] == 15.0
    for e in s.events:
        assert {"seq", "time", "type"} <= set(e)


def test_events_within_a_turn_carry_its_turn_id():
    """7: "an event that happens within a turn also carries its turn_id". """
    s = busy_session()
    current = None
    for e in s.events:
        if e["type"] == "turn.started":
            current = e["turn_id"]
        if e["type"] in IN_TURN:
            assert e.get("turn_id") == current, e
        if e["type"] in ("turn.completed", "turn.failed", "turn.cancelled"):
            current = None


def test_event_payloads():
    """wire.md event fields: message.new {message}, turn.started {trigger}, llm.started {call_id, summary},
    llm.completed {usage}, turn.failed {error}."""
    s = busy_session()
    for e in of_type(s, "message.new"):
        assert e["message"]["id"] and "role" in e["message"] and "parent" in e["message"]
    for e in of_type(s, "turn.started"):
        assert "trigger" in e
    for e in of_type(s, "llm.started"):
        assert e["call_id"].startswith("llm-") and e["summary"] is False
    for e in of_type(s, "llm.completed"):
        assert "input_tokens" in e["usage"]
    failed = of_type(s, "turn.failed")
    assert len(failed) == 1 and failed[0]["error"]
    assert json.loads(json.dumps(s.events)) == s.events


def test_a_new_message_moves_the_head_without_head_moved():
    """7: "A new message moves the head with it (no separate head.moved)." """
    s = make(llm=convlab.ScriptedLLM([reply("a")]))
    s.submit(message(m("u1", "one")))
    assert "head.moved" not in types(s.events)
    assert s.head == s.path()[-1]["id"]
    assert of_type(s, "message.new")[-1]["message"]["id"] == s.head


def test_head_moved_event():
    """7: head.moved {from, to}."""
    s = make(worker=lambda d: [])
    s.submit(view([m("u1", "q"), a("a1", "x")]))
    s.submit(view([m("u1")]))
    moved = of_type(s, "head.moved")
    assert [(e["from"], e["to"]) for e in moved] == [("a1", "u1")]


def test_subscribe_and_unsubscribe():
    """API.md: "s.subscribe(fn): fn(event) after every event; returns a function that unsubscribes". """
    s = make()
    got = []
    unsubscribe = s.subscribe(got.append)
    s.submit(message(m("u1", "one")))
    n = len(s.events)
    recorded = [e for e in got if e["type"] != "llm.delta"]  # deltas go to subscribers only (rev 3)
    assert recorded and recorded == s.events[len(s.events) - len(recorded):]
    assert got[0]["type"] != "session.started"  # only events after subscribing
    unsubscribe()
    s.submit(message(m("u2", "two")))
    assert len(s.events) > n
    assert [e for e in got if e["type"] != "llm.delta"] == s.events[n - len(recorded):n]


def test_an_unsubscribed_listener_is_let_go():
    """The session keeps no reference to a listener once it unsubscribes (its map of who wants which event
    type is made again): a widget or a replayer that stops listening can be freed without the collector."""
    import gc
    import weakref

    class Listener:
        def __init__(self):
            self.seen = []

        def __call__(self, event):
            self.seen.append(event["type"])

    s = make()
    listener = Listener()
    unsubscribe = s.subscribe(listener, types={"message.new", "turn.completed"})
    s.submit(message(m("u1", "one")))
    assert listener.seen and set(listener.seen) <= {"message.new", "turn.completed"}
    gone = weakref.ref(listener)
    unsubscribe()
    del listener, unsubscribe  # (the function that unsubscribes holds what it unsubscribes)
    gc.disable()
    try:
        assert gone() is None
    finally:
        gc.enable()
    s.submit(message(m("u2", "two")))  # and the session goes on telling no one


def test_subscriber_sees_the_event_after_it_happened():
    """"fn(event) after every event": when fn runs, the event is already in s.events."""
    s = make()
    checks = []
    s.subscribe(lambda e: e["type"] == "llm.delta" or checks.append(s.events[-1]["seq"] >= e["seq"] and e in s.events))
    s.submit(message(m("u1", "one")))
    assert checks and all(checks)


def test_two_subscribers():
    s = make()
    one, two = [], []
    s.subscribe(one.append)
    unsub_two = s.subscribe(two.append)
    s.submit(message(m("u1", "one")))
    unsub_two()
    s.submit(message(m("u2", "two")))
    assert len(one) > len(two) > 0
    assert two == one[: len(two)]


def test_queue_events():
    """7: turn.queued {turn}, turn.merged."""
    s = make(worker="manual")
    s.submit(message(m("u1", "one")))
    s.submit(message(m("q1", "two"), queue="merge"))
    s.submit(message(m("q2", "three"), queue="merge"))
    queued = of_type(s, "turn.queued")
    merged = of_type(s, "turn.merged")
    assert len(queued) == 1 and queued[0]["turn"]["id"] == "t2"
    assert len(merged) == 1 and merged[0]["turn_id"] == "t2"


def test_an_event_stays_as_it_was_emitted():
    """A turn shares what is under it with the events that log it (and its decisions): the
    session replaces a turn's fields whole, so starting, merging into and ending the turn
    never change an event already emitted."""
    s = make(worker="manual")
    told: list[str] = []
    s.subscribe(lambda e: told.append(json.dumps(e, sort_keys=True)))
    s.submit(message(m("u1", "one"), state={"k": 1}))
    s.submit(message(m("q1", "two"), queue="merge", state={"k": 2}))
    s.submit(message(m("q2", [{"type": "text", "text": "three"}]), queue="merge", state={"k": 3}))
    s.decide([{"type": "turn.end"}])  # t1 ends, the merged t2 starts
    s.decide([{"type": "message.add", "message": a(content="done")}, {"type": "turn.end"}])
    s.submit(message(m("u3", "four")))
    s.decide([{"type": "turn.end"}])
    assert [t["status"] for t in s.turns] == ["completed", "completed", "completed"]
    assert s.turns[1]["messages"] == [] and s.turns[1]["client_state"] == {"k": 3}
    assert [json.dumps(e, sort_keys=True) for e in s.events[1:]] == told  # (subscribed after session.started)
