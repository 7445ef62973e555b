"""PROTOCOL.md 3: one turn at a time: 409, queue: true, queue: "merge", head-only views during a
turn, interrupt, receipts, autorun=False with step/run."""

from __future__ import annotations

import pytest

from session_support import (
    RecordingLLM,
    a,
    append,
    assert_receipt,
    interrupt,
    m,
    make,
    message,
    node,
    of_type,
    path_ids,
    refused,
    reply,
    running,
    statuses,
    turn,
    types,
    view,
)

import convlab


def busy(**kw):
    """A session whose turn t1 (u1) waits for a decision: it is running."""
    kw.setdefault("worker", "manual")
    s = make(**kw)
    s.submit(message(m("u1", "hi")))
    assert s.pending is not None and running(s) == ["t1"]
    return s


def finish(s):
    """Answer decisions with the chat-like [llm.call] then [] until idle."""
    for _ in range(100):
        d = s.pending
        if d is None:
            return
        s.decide([{"type": "llm.call"}] if d["type"] == "turn.start" else [])
    raise AssertionError("never idle")


# -- 409 -------------------------------------------------------------------
def test_submit_during_a_turn_is_refused_409_naming_the_running_turn():
    """3: "A submit that arrives during a turn is refused 409 and the refusal names the running
    turn's id." """
    s = busy()
    err = refused(s, message(m("u2", "again")), 409, "t1")
    assert err.turn_id == "t1"
    err = refused(s, append([m("u2", "again")]), 409, "t1")
    assert err.turn_id == "t1"
    err = refused(s, view([m("u1"), m("u2", "edit")]), 409, "t1")
    assert err.turn_id == "t1"


def test_view_during_a_turn_that_leaves_the_head_is_refused_409():
    """3: "A view during a turn that writes nothing and leaves the head where it is, is refused 409." """
    s = busy()
    err = refused(s, view([m("u1")]), 409, "t1")
    assert err.turn_id == "t1"


def test_view_during_a_turn_that_moves_the_head_cancels_and_starts_its_own_turn_first():
    """3: "a client.messages view that writes nothing and moves the head is accepted during a turn.
    Events in order: head.moved, turn.cancelled (the running turn), turn.started (the view's own
    turn, which runs next, ahead of queued turns: it was not queued)." """
    s = make(worker="manual")
    s.submit(view([m("u1", "q"), a("a1", "x"), m("u2", "q2")]))
    assert running(s) == ["t1"]
    q = s.submit(message(m("u3", "queued"), queue=True))
    assert q["turn_id"] == "t2"
    n_events = len(s.events)
    r = s.submit(view([m("u1"), a("a1")]))
    assert_receipt(r, status=200, turn_id="t3", queued=False)
    new = s.events[n_events:]
    kinds = types(new)
    i_moved, i_cancel, i_start = kinds.index("head.moved"), kinds.index("turn.cancelled"), kinds.index("turn.started")
    assert i_moved < i_cancel < i_start
    assert (new[i_moved]["from"], new[i_moved]["to"]) == ("u2", "a1")
    assert new[i_cancel]["turn_id"] == "t1"
    assert new[i_start]["turn_id"] == "t3"
    assert statuses(s) == {"t1": "cancelled", "t2": "queued", "t3": "running"}
    assert s.head == "a1"
    assert s.pending["turn_id"] == "t3"
    s.decide([])
    assert s.pending["turn_id"] == "t2"  # then the queued turn
    assert node(s, "u3")["parent"] == "a1"


def test_interrupt_cancels_the_running_turn_and_queued_turns_run_in_order():
    """2: "client.interrupt cancels the running turn (turn.cancelled). Queued turns stay queued and
    run in order." """
    s = busy()
    s.submit(message(m("u2", "second"), queue=True))
    s.submit(message(m("u3", "third"), queue=True))
    n_events = len(s.events)
    s.submit(interrupt())
    cancelled = of_type(s.events[n_events:], "turn.cancelled")
    assert [e["turn_id"] for e in cancelled] == ["t1"]
    assert "reason" in cancelled[0]
    assert turn(s, "t1")["status"] == "cancelled"
    s.run()
    finish(s)
    started = [e["turn_id"] for e in of_type(s, "turn.started")]
    assert started == ["t1", "t2", "t3"]
    assert statuses(s) == {"t1": "cancelled", "t2": "completed", "t3": "completed"}


def test_interrupt_under_autorun_runs_the_next_queued_turn():
    """2: client.interrupt: "Queued turns stay queued and run in order." API.md: "autorun=True: submit()
    runs the engine until idle or until a decision waits" and idle is "no turn runs or waits in the
    queue" (run()). So after an interrupt submitted under autorun the next queued turn starts."""
    s = busy()
    s.submit(message(m("u2", "second"), queue=True))
    s.submit(interrupt())
    assert statuses(s) == {"t1": "cancelled", "t2": "running"}
    assert s.pending is not None and s.pending["turn_id"] == "t2"


def test_interrupt_then_submit_redirects():
    """"To redirect an agent that is working, interrupt it first, then submit." """
    s = busy()
    refused(s, message(m("u2", "stop, do this")), 409, "t1")
    s.submit(interrupt())
    r = s.submit(message(m("u2", "stop, do this")))
    assert_receipt(r, status=200, turn_id="t2", queued=False)
    assert running(s) == ["t2"]


def test_interrupt_with_no_running_turn_is_refused_409():
    """API.md: "an interrupt with no running turn raises convlab.Refused (409)". """
    s = make()
    refused(s, interrupt(), 409)


# -- queue: true ------------------------------------------------------------
def test_queue_true_waits_and_reads_as_a_follow_up():
    """3: "queue: true: the submit becomes a new queued turn, with its own id, at the end of the
    queue. It starts when the turns before it complete; its messages are appended then, so it reads
    as a follow-up to the reply it waited for." Receipt: 202 when queued."""
    llm = RecordingLLM([reply("first answer"), reply("second answer")])
    s = make(worker="manual", llm=llm)
    s.submit(message(m("u1", "q1")))
    n_events = len(s.events)
    r = s.submit(message(m("u2", "q2"), queue=True))
    assert_receipt(r, status=202, turn_id="t2", queued=True, merged=False, duplicate=False)
    assert turn(s, "t2")["status"] == "queued"
    assert "u2" not in s.tree.nodes  # appended only when its turn starts
    queued = of_type(s.events[n_events:], "turn.queued")
    assert len(queued) == 1 and queued[0]["turn"]["id"] == "t2"
    s.decide([{"type": "llm.call"}])
    first_reply = s.head
    s.decide([])
    assert s.pending["turn_id"] == "t2"
    assert node(s, "u2")["parent"] == first_reply
    assert [msg["content"] for msg in s.pending["messages"]] == ["q1", "first answer", "q2"]


def test_queued_turns_run_in_arrival_order():
    """"Queued turns run in the order they arrived." """
    s = busy()
    ids = [s.submit(message(m(f"q{i}", f"msg {i}"), queue=True))["turn_id"] for i in range(2, 6)]
    assert ids == ["t2", "t3", "t4", "t5"]
    finish(s)
    assert [e["turn_id"] for e in of_type(s, "turn.started")] == ["t1", "t2", "t3", "t4", "t5"]
    assert [n for n in path_ids(s) if n.startswith("q")] == ["q2", "q3", "q4", "q5"]


def test_queue_with_no_turn_running_starts_at_once():
    """3: "With no turn running, a queued or merge submit starts at once (receipt status 200,
    queued: false)." """
    s = make(worker="manual")
    r = s.submit(message(m("u1", "hi"), queue=True))
    assert_receipt(r, status=200, turn_id="t1", queued=False)
    assert turn(s, "t1")["status"] == "running"
    s.decide([])
    r = s.submit(append([m("u2", "hi")], queue="merge"))
    assert_receipt(r, status=200, turn_id="t2", queued=False)
    assert turn(s, "t2")["status"] == "running"


# -- queue: "merge" ----------------------------------------------------------
def test_page_merge_example_two_lines_one_turn():
    """The page: turn running... "Sam had 120ml", "oh and a nap at 2"; turn ends -> one turn with
    both lines. "Each merged submit gets back the same turn_id." """
    llm = RecordingLLM()
    s = make(llm=llm, worker="manual")
    s.submit(message(m("u1", "start logging")))
    r1 = s.submit(message(m("m1", "Sam had 120ml"), queue="merge"))
    n_events = len(s.events)
    r2 = s.submit(message(m("m2", "oh and a nap at 2"), queue="merge"))
    assert r1["turn_id"] == r2["turn_id"] == "t2"
    assert_receipt(r1, status=202, queued=True, duplicate=False)
    assert_receipt(r2, status=202, queued=True, merged=True, duplicate=False)
    merged = of_type(s.events[n_events:], "turn.merged")
    assert len(merged) == 1 and merged[0]["turn_id"] == "t2"
    assert [t["id"] for t in s.turns] == ["t1", "t2"]
    s.decide([])  # t1 ends
    d = s.pending
    assert d["turn_id"] == "t2"
    # "its messages appended after the earlier ones"; "A merge turn's trigger type is that of its first submit."
    assert path_ids(s)[-2:] == ["m1", "m2"]
    assert node(s, "m2")["parent"] == "m1"
    assert d["trigger"]["type"] == "client.message"
    s.decide([{"type": "llm.call"}])
    # one model call reads both lines
    assert [msg["content"] for msg in llm.requests[-1]["messages"]][-2:] == ["Sam had 120ml", "oh and a nap at 2"]
    s.decide([])
    assert len(s.turns) == 2


def test_merge_later_state_wins():
    """3: "If two merged submits set state, the later one wins." """
    s = busy()
    s.submit(message(m("m1", "a"), queue="merge", state={"mood": "calm", "n": 1}))
    s.submit(message(m("m2", "b"), queue="merge", state={"mood": "busy"}))
    s.decide([])
    assert s.pending["turn_id"] == "t2"
    assert s.pending["client_state"] == {"mood": "busy"}
    assert turn(s, "t2")["client_state"] == {"mood": "busy"}


def test_merge_resent_message_is_not_added_twice():
    """3: "A message id already in the merge turn or the tree is not added twice." The resend is a
    retry: {status 200, duplicate true, turn_id of the turn that took it}, queued/merged false."""
    s = busy()
    s.submit(message(m("m1", "Sam had 120ml"), queue="merge"))
    r = s.submit(message(m("m1", "Sam had 120ml"), queue="merge"))
    assert_receipt(r, status=200, turn_id="t2", duplicate=True, queued=False, merged=False)
    r = s.submit(append([m("m1", "Sam had 120ml"), m("m2", "nap at 2")], queue="merge"))
    assert r["turn_id"] == "t2" and r["duplicate"] is False
    s.decide([])
    assert path_ids(s)[-2:] == ["m1", "m2"]
    assert sum(1 for n in s.snapshot()["nodes"] if n["content"] == "Sam had 120ml") == 1


def test_merge_never_joins_a_queue_true_turn():
    """3: "A merge never joins a turn queued with queue: true." So turns still run in arrival order."""
    s = busy()
    r2 = s.submit(message(m("q2", "queued"), queue=True))
    r3 = s.submit(message(m("m3", "merge a"), queue="merge"))
    r4 = s.submit(message(m("m4", "merge b"), queue="merge"))
    r5 = s.submit(message(m("q5", "queued again"), queue=True))
    r6 = s.submit(message(m("m6", "merge c"), queue="merge"))
    assert r2["turn_id"] == "t2"
    assert r3["turn_id"] == r4["turn_id"] == "t3"
    assert r5["turn_id"] == "t4"
    assert r6["turn_id"] == "t5"
    finish(s)
    assert [e["turn_id"] for e in of_type(s, "turn.started")] == ["t1", "t2", "t3", "t4", "t5"]
    p = [n for n in path_ids(s) if n[0] in "qm"]
    assert p == ["q2", "m3", "m4", "q5", "m6"]


def test_retry_changes_nothing_not_even_state():
    """3: "A submit whose messages are all known (a retry) changes nothing at all, its state included." """
    s = busy()
    s.submit(message(m("m1", "x"), queue="merge", state={"v": 1}))
    snap, n = s.snapshot(), len(s.events)
    r = s.submit(message(m("m1", "x"), queue="merge", state={"v": 2}))
    assert r["duplicate"] is True
    assert s.snapshot() == snap and len(s.events) == n
    assert turn(s, "t2")["client_state"] == {"v": 1}


def test_merge_turn_trigger_lists_all_merged_messages():
    """3/4: the merge turn's messages are appended in order; trigger type is that of its first submit."""
    s = busy()
    s.submit(append([m("m1", "a"), m("m2", "b")], queue="merge"))
    s.submit(message(m("m3", "c"), queue="merge"))
    s.decide([])
    trig = s.pending["trigger"]
    assert trig["type"] == "client.append"
    assert trig["message_ids"] == ["m1", "m2", "m3"]


# -- turn states and receipts -----------------------------------------------
def test_turn_states():
    """3: "Turn states: queued, running, completed, failed, cancelled." """
    s = make(worker="manual", llm=convlab.ScriptedLLM([{"error": "failed"}]))
    s.submit(message(m("u1", "a")))
    s.submit(message(m("u2", "b"), queue=True))
    s.submit(message(m("u3", "c"), queue=True))
    assert statuses(s) == {"t1": "running", "t2": "queued", "t3": "queued"}
    s.submit(interrupt())
    assert statuses(s)["t1"] == "cancelled"
    s.run()
    assert statuses(s)["t2"] == "running"
    s.decide([{"type": "llm.call"}])
    assert statuses(s)["t2"] == "failed"
    assert statuses(s)["t3"] == "running"
    s.decide([])
    assert statuses(s) == {"t1": "cancelled", "t2": "failed", "t3": "completed"}
    for t in s.turns:
        assert set(t) >= {"id", "status", "trigger"}


def test_view_receipt_has_new_from():
    """3: "The receipt of an accepted submit: {status: 200 or 202, turn_id, new_from?, queued,
    merged, duplicate}" """
    s = make(worker=lambda d: [])
    r = s.submit(view([m("u1", "a"), m("u2", "b")]))
    assert_receipt(r, status=200, turn_id="t1", new_from=0, queued=False, merged=False, duplicate=False)
    r = s.submit(view([m("u1"), m("u2"), m("u3", "c")]))
    assert_receipt(r, status=200, turn_id="t2", new_from=2, queued=False, merged=False, duplicate=False)


# -- autorun=False -------------------------------------------------------------
def test_autorun_false_records_and_starts_but_decides_nothing():
    """API.md: "With autorun=False, submit() records the input and starts (or queues) the turn but
    makes no decision and no model call until run() or step()". """
    s = make(autorun=False)
    r = s.submit(message(m("u1", "hi")))
    assert_receipt(r, status=200, turn_id="t1", queued=False)
    assert turn(s, "t1")["status"] == "running"
    assert "llm.started" not in types(s.events)
    assert "decision.answered" not in types(s.events)
    # a turn in flight: a 409, a queue and a merge
    refused(s, message(m("u2", "x")), 409, "t1")
    assert s.submit(message(m("u2", "x"), queue=True))["status"] == 202
    assert s.submit(message(m("u3", "y"), queue="merge"))["turn_id"] == "t3"
    assert s.submit(message(m("u4", "z"), queue="merge"))["turn_id"] == "t3"
    assert "llm.started" not in types(s.events)
    s.run()
    assert statuses(s) == {"t1": "completed", "t2": "completed", "t3": "completed"}
    assert len(of_type(s, "llm.started")) == 3


def test_autorun_false_step_moves_one_step_at_a_time():
    """API.md: "s.step(): one engine step: one decision answered or one action run"."""
    s = make(autorun=False)
    s.submit(message(m("u1", "hi")))
    counts = []
    for _ in range(100):
        if turn(s, "t1")["status"] != "running":
            break
        before = len(s.events)
        s.step()
        counts.append(len(s.events) - before)
    assert turn(s, "t1")["status"] == "completed"
    assert len(counts) >= 2  # the turn did not finish in one step
    assert all(c >= 1 for c in counts)  # every step did something
    assert len(of_type(s, "llm.started")) == 1


def test_run_stops_at_a_waiting_decision():
    """API.md: "s.run(): run until no turn runs or waits in the queue, or a decision waits"."""
    s = make(autorun=False, worker="manual")
    s.submit(message(m("u1", "hi")))
    assert "decision.answered" not in types(s.events)
    s.run()
    assert s.pending is not None and s.pending["type"] == "turn.start"
    s.decide([])
    s.run()
    assert s.pending is None
    assert turn(s, "t1")["status"] == "completed"


def test_decide_with_nothing_pending_is_refused_409():
    """API.md: "decide() with nothing pending ... raises convlab.Refused (409)". """
    s = make()
    with pytest.raises(convlab.Refused) as info:
        s.decide([])
    assert info.value.status == 409


def test_a_running_merge_turn_takes_no_more_messages():
    """3: a merge joins "the last queued turn" if it is a merge turn: once the merge turn runs, it is not
    queued, so a new merge submit queues a new turn."""
    s = busy()
    s.submit(message(m("m1", "a"), queue="merge"))
    s.decide([])  # t1 ends, t2 (merge) runs
    assert s.pending["turn_id"] == "t2"
    r = s.submit(message(m("m2", "b"), queue="merge"))
    assert_receipt(r, status=202, turn_id="t3", queued=True)
    assert turn(s, "t2")["trigger"]["message_ids"] == ["m1"]


def test_turn_records_queue_and_times():
    """wire.md: turn = {id, status, trigger, queue: None | "queue" | "merge", client_state, created,
    started, ended, error}."""
    s = make(worker="manual", clock=10.0)
    s.submit(message(m("u1", "a"), state={"s": 1}))
    s.advance(5)
    s.submit(message(m("u2", "b"), queue=True))
    s.submit(message(m("u3", "c"), queue="merge"))
    t1, t2, t3 = s.turns
    assert (t1["queue"], t2["queue"], t3["queue"]) == (None, "queue", "merge")
    assert t1["client_state"] == {"s": 1}
    assert (t1["created"], t1["started"], t1["ended"]) == (10.0, 10.0, None)
    assert (t2["created"], t2["started"], t2["ended"]) == (15.0, None, None)
    assert t1["error"] is None
    s.advance(1)
    s.decide([])
    t1, t2, _ = s.turns
    assert t1["ended"] == 16.0 and t2["started"] == 16.0
    assert s.last_turn_end == 16.0


# -- rev 3: the queue never waits ----------------------------------------------
def _after(s, kind, turn_id):
    """The events right after ``kind`` of ``turn_id``."""
    i = next(i for i, e in enumerate(s.events) if e["type"] == kind and e.get("turn_id") == turn_id)
    return s.events[i + 1:]


@pytest.mark.parametrize("autorun", [False, True])
def test_after_an_interrupt_the_next_queued_turn_starts_at_once(autorun):
    """2 (rev 3): "whenever a turn ends, however it ends (completed, failed, cancelled by an interrupt),
    the next queued turn starts at once: its turn.started and its messages follow right after the end
    event. So a queue never waits while no turn runs, and a later submit can never overtake it: during
    that next turn a plain submit is refused 409 like any other. With autorun=False the started turn
    makes no decision and no model call until run() or step()." """
    s = make(worker="manual", autorun=autorun)
    s.submit(message(m("u1", "first")))
    s.submit(message(m("u2", "second"), queue=True))
    s.submit(message(m("u3", "third"), queue=True))
    s.submit(interrupt())
    after = _after(s, "turn.cancelled", "t1")
    assert [(e["type"], e.get("turn_id")) for e in after[:2]] == [("turn.started", "t2"), ("message.new", "t2")]
    assert after[1]["message"]["id"] == "u2" and s.running == "t2" and s.queued == ["t3"]
    assert not of_type(after, "llm.started", "decision.answered")  # no decision made, no model call
    err = refused(s, message(m("u9", "a later submit")), 409, "t2")
    assert err.turn_id == "t2"
    s.decide([{"type": "turn.end"}])
    s.run()
    assert [e["turn_id"] for e in of_type(s, "turn.started")] == ["t1", "t2", "t3"]


def test_a_completed_or_failed_turn_starts_the_next_queued_turn_at_once_without_autorun():
    """2 (rev 3): "however it ends (completed, failed, ...)"; with autorun=False, step() ends a turn and
    the queued one is running right after, before any further step."""
    s = make(autorun=False, llm=convlab.ScriptedLLM([{"error": "failed"}, reply("ok"), reply("ok again")]))
    s.submit(message(m("u1", "a")))
    s.submit(message(m("u2", "b"), queue=True))
    s.submit(message(m("u3", "c"), queue=True))
    while statuses(s)["t1"] == "running":
        s.step()
    assert statuses(s) == {"t1": "failed", "t2": "running", "t3": "queued"}
    assert [e["type"] for e in _after(s, "turn.failed", "t1")[:2]] == ["turn.started", "message.new"]
    while statuses(s)["t2"] == "running":
        s.step()
    assert statuses(s) == {"t1": "failed", "t2": "completed", "t3": "running"}
    assert [e["type"] for e in _after(s, "turn.completed", "t2")[:2]] == ["turn.started", "message.new"]
    refused(s, message(m("u9", "later")), 409, "t3")
    s.run()
    # rev 4: the failed streamed call of t1 announced e1, which stays its own: t2 took e2, t3 takes e3
    assert statuses(s)["t3"] == "completed" and path_ids(s)[-2:] == ["u3", "e3"]


def test_a_head_only_view_during_a_turn_still_runs_ahead_of_the_queue():
    """2 (rev 3): "(A head-only view during a turn still runs its own turn next, ahead of the queue:
    it was not queued; see 3.)" """
    s = make(worker="manual")
    s.submit(view([m("u1", "q"), a("a1", "x")]))
    s.decide([{"type": "turn.end"}])
    s.submit(message(m("u2", "next")))
    s.submit(message(m("u3", "queued"), queue=True))
    s.submit(view([m("u1"), a("a1")]))  # back to a1: cancels t2, its own turn t4 runs next
    assert types(_after(s, "turn.cancelled", "t2"))[:1] == ["turn.started"]
    assert running(s) == ["t4"] and s.queued == ["t3"]
    s.decide([{"type": "turn.end"}])
    assert running(s) == ["t3"]
