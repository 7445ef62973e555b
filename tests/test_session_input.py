"""PROTOCOL.md 2: client input: the view (client.messages), client.message/append, duplicates, eN ids."""

from __future__ import annotations

from session_support import (
    a,
    frozen,
    assert_receipt,
    append,
    children,
    m,
    make,
    message,
    node,
    nodes,
    of_type,
    path_ids,
    refused,
    reply,
    turn,
    types,
    view,
)

import convlab


def scripted(n: int = 30):
    return convlab.ScriptedLLM([reply(f"r{i}") for i in range(1, n + 1)])


def page_tree(**kw):
    """The page's active path u1 -> a1 -> u2, recorded by a view; the worker ends every turn."""
    kw.setdefault("worker", "manual")
    s = make(llm=scripted(), **kw)
    s.submit(view([m("u1", "weather in NYC?"), a("a1", "Sunny."), m("u2", "and tomorrow?")]))
    if s.pending is not None:
        s.decide([])
    assert path_ids(s) == ["u1", "a1", "u2"]
    return s


# -- the view -----------------------------------------------------------
def test_page_example_edit_an_earlier_message():
    """The page: "u1 matches. The message with no ID starts a branch under it. The worker sees
    messages: [u1, e1] with new_from: 1. The a1 -> u2 branch stays." """
    s = page_tree()
    receipt = s.submit(
        {
            "type": "client.messages",
            "agent_id": "bot",
            "messages": [
                {"id": "u1", "role": "user", "content": "weather in NYC?"},
                {"role": "user", "content": "weather in LA instead"},
            ],
        }
    )
    assert receipt["status"] == 200
    assert receipt["new_from"] == 1
    d = s.pending
    assert d["type"] == "turn.start"
    assert [msg["id"] for msg in d["messages"]] == ["u1", "e1"]
    assert d["messages"][1]["content"] == "weather in LA instead"
    assert d["trigger"] == {"type": "client.messages", "new_from": 1}
    # "The engine starts a branch at the last matching node ... and moves the head to the end."
    assert node(s, "e1")["parent"] == "u1"
    assert s.head == "e1"
    # "The original branch stays in the tree."
    assert node(s, "a1")["parent"] == "u1"
    assert node(s, "u2")["parent"] == "a1"
    assert children(s, "u1") == ["a1", "e1"]


def test_view_records_the_rest_as_a_chain_with_given_ids():
    """2.3: "The rest is recorded as a chain under the last match (or the root), with the given ids
    or eN ids, and the head moves to its end." """
    s = page_tree()
    r = s.submit(view([m("u1"), a("a1"), m("x1", "new q"), a(None, "new a"), m("x3", "q3")]))
    assert r["new_from"] == 2
    assert node(s, "x1")["parent"] == "a1"
    assert node(s, "e1")["parent"] == "x1"
    assert node(s, "e1")["role"] == "assistant"
    assert node(s, "x3")["parent"] == "e1"
    assert s.head == "x3"
    assert s.pending["trigger"] == {"type": "client.messages", "new_from": 2}


def test_view_from_the_root_starts_a_new_top_level_branch():
    """2.2: new_from is the index of the first message that is new: 0 when the first is new;
    the rest hangs under the root."""
    s = page_tree()
    r = s.submit(view([m("n1", "fresh start")]))
    assert r["new_from"] == 0
    assert node(s, "n1")["parent"] is None
    assert s.head == "n1"


def test_edit_with_a_new_id_branches_like_no_id():
    """The page: "Give that message a new ID, or no ID." """
    s = page_tree()
    s.submit(view([m("u1"), a("a1"), m("u2b", "and next week?")]))
    assert node(s, "u2b")["parent"] == "a1"
    assert children(s, "a1") == ["u2", "u2b"]
    assert path_ids(s) == ["u1", "a1", "u2b"]


def test_regenerate_records_a_new_reply_beside_the_old_one():
    """"To regenerate, send the view without the last assistant reply. The engine records a new
    reply beside the old one." """
    s = make(llm=scripted())
    s.submit(message(m("u1", "hello")))
    first = s.head
    assert node(s, first)["content"] == "r1"
    r = s.submit(view([m("u1", "hello")]))
    assert r["new_from"] == 1
    assert turn(s, r["turn_id"])["trigger"] == {"type": "client.messages", "new_from": 1}
    second = s.head
    assert second != first
    assert node(s, second)["parent"] == "u1"
    assert node(s, second)["content"] == "r2"
    assert children(s, "u1") == [first, second]
    assert node(s, first)["content"] == "r1"  # the old reply stays, unchanged


def test_resend_under_a_known_id_changes_nothing():
    """"Sending a message again under its existing ID changes nothing. The engine matches on ID,
    not on content." (2.5)"""
    s = page_tree()
    before = {nid: dict(n) for nid, n in nodes(s).items()}
    n_events = len(s.events)
    r = s.submit(view([m("u1", "totally different"), a("a1", "also different"), m("u2", "and this")]))
    assert r["new_from"] == 3
    assert nodes(s).keys() == before.keys()
    for nid, n in nodes(s).items():
        assert n["content"] == before[nid]["content"]
    assert s.head == "u2"
    new = s.events[n_events:]
    assert "message.new" not in types(new)
    assert "head.moved" not in types(new)  # 2.4: only if the head changed


def test_view_stopping_at_an_earlier_node_only_moves_the_head():
    """2.4: "A view with nothing new writes nothing. It moves the head to its last message and emits
    head.moved (only if the head changed). The next reply branches there." """
    s = make(llm=scripted(), worker="manual")
    s.submit(view([m("u1", "q"), a("a1", "x"), m("u2", "q2"), a("a2", "y")]))
    s.decide([])
    n_nodes = len(nodes(s))
    n_events = len(s.events)
    r = s.submit(view([m("u1"), a("a1")]))
    assert r["new_from"] == 2
    assert len(nodes(s)) == n_nodes
    assert s.head == "a1"
    new = s.events[n_events:]
    assert "message.new" not in types(new)
    moved = of_type(new, "head.moved")
    assert len(moved) == 1
    assert moved[0]["from"] == "a2" and moved[0]["to"] == "a1"
    # "Every accepted client.messages starts a turn whose trigger is {client.messages, new_from}"
    assert s.pending["type"] == "turn.start"
    assert s.pending["trigger"] == {"type": "client.messages", "new_from": 2}
    assert [msg["id"] for msg in s.pending["messages"]] == ["u1", "a1"]
    s.decide([])
    # "The next reply branches there."
    s.submit(message(m("u3", "branch here")))
    assert node(s, "u3")["parent"] == "a1"
    assert children(s, "a1") == ["u2", "u3"]


def test_view_naming_a_message_on_another_branch_switches_to_it():
    """"When a view names a message on another branch, the engine loads that branch again." """
    s = page_tree()
    s.submit(view([m("u1"), m("b1", "other branch")]))
    s.decide([])
    assert path_ids(s) == ["u1", "b1"]
    s.submit(view([m("u1"), a("a1"), m("u2")]))
    assert path_ids(s) == ["u1", "a1", "u2"]
    assert [msg["id"] for msg in s.pending["messages"]] == ["u1", "a1", "u2"]


def test_view_ending_at_an_assistant_message_only_switches_branches_with_the_chat_worker():
    """2: "a view that stops at an assistant message only switches branches" (the chat worker calls
    the model unless the path ends with an assistant message)."""
    s = make(llm=scripted())
    s.submit(message(m("u1", "q")))
    r1 = s.head
    s.submit(view([m("u1")]))
    r2 = s.head
    n_nodes = len(nodes(s))
    r = s.submit(view([m("u1"), {"id": r1, "role": "assistant", "content": "r1"}]))
    assert s.head == r1
    assert len(nodes(s)) == n_nodes
    assert turn(s, r["turn_id"])["status"] == "completed"
    assert r2 in nodes(s)


def test_every_accepted_view_starts_a_turn_even_when_it_writes_nothing():
    """2: "Every accepted client.messages starts a turn ..., also when it wrote nothing." """
    s = page_tree()
    n_turns = len(s.turns)
    r = s.submit(view([m("u1"), a("a1"), m("u2")]))
    assert len(s.turns) == n_turns + 1
    assert r["turn_id"] == s.turns[-1]["id"]
    assert s.turns[-1]["trigger"] == {"type": "client.messages", "new_from": 3}


# -- client.message and client.append ---------------------------------------
def test_client_message_appends_under_the_head_and_starts_a_turn():
    """"client.message carries one message ... append under the head when their turn starts, and
    start a turn whose trigger is {type: client.message, message_ids: [...]}" """
    s = page_tree()
    r = s.submit(message(m("u3", "more"), state={"who": "sam"}))
    assert_receipt(r, status=200, turn_id="t2", queued=False, merged=False, duplicate=False)
    assert node(s, "u3")["parent"] == "u2"
    assert s.head == "u3"
    assert turn(s, "t2")["trigger"] == {"type": "client.message", "message_ids": ["u3"]}
    assert s.pending["trigger"] == {"type": "client.message", "message_ids": ["u3"]}
    # "Both take queue and state (the client state the worker sees)."
    assert s.pending["client_state"] == {"who": "sam"}


def test_client_append_appends_a_chain_under_the_head():
    """"client.append carries messages, a list" and appends them under the head."""
    s = page_tree()
    r = s.submit(append([m("u3", "one"), m("u4", "two"), m(None, "three")]))
    assert r["status"] == 200 and r["duplicate"] is False
    assert node(s, "u3")["parent"] == "u2"
    assert node(s, "u4")["parent"] == "u3"
    assert node(s, "e1")["parent"] == "u4"
    assert s.head == "e1"
    assert turn(s, r["turn_id"])["trigger"] == {"type": "client.append", "message_ids": ["u3", "u4", "e1"]}


def test_client_message_without_id_gets_an_engine_id():
    """"Engine ids (eN) are given when a message is recorded." """
    s = make(worker="manual")
    s.submit(message(m(None, "hi")))
    assert s.head == "e1"
    assert turn(s, "t1")["trigger"]["message_ids"] == ["e1"]


def test_retry_of_a_known_message_is_a_duplicate():
    """2: "a submit whose messages are all already known writes nothing and starts no turn: its
    receipt is {status: 200, duplicate: true, turn_id: <the turn that took the first of them>}" """
    s = make(llm=scripted())
    r1 = s.submit(message(m("u1", "hi")))
    snap = s.snapshot()
    n_events = len(s.events)
    r2 = s.submit(message(m("u1", "hi")))
    assert r2["status"] == 200
    assert r2["duplicate"] is True
    assert r2["turn_id"] == r1["turn_id"] == "t1"
    assert r2["queued"] is False and r2["merged"] is False  # 3: "its receipt has queued: false, merged: false"
    assert s.snapshot() == snap
    assert len(s.events) == n_events


def test_append_of_all_known_messages_is_a_duplicate_naming_the_first_ones_turn():
    """The duplicate receipt names "the turn that took the first of them"."""
    s = make(llm=scripted())
    s.submit(message(m("u1", "one")))
    s.submit(message(m("u2", "two")))
    snap = s.snapshot()
    r = s.submit(append([m("u2", "two"), m("u1", "one")]))
    assert r["duplicate"] is True
    assert r["turn_id"] == "t2"
    assert s.snapshot() == snap


def test_append_with_some_known_messages_adds_only_the_new_ones():
    """2: "A message whose id is already recorded ... is not added again." """
    s = make(llm=scripted())
    s.submit(message(m("u1", "one")))
    head = s.head
    n = len(nodes(s))
    r = s.submit(append([m("u1", "one"), m("u2", "two")]))
    assert r["duplicate"] is False
    assert node(s, "u2")["parent"] == head
    assert len(nodes(s)) == n + 2  # u2 and its reply; u1 not again
    assert node(s, "u1")["parent"] is None


def test_retry_during_a_turn_is_harmless_not_409():
    """2: the duplicate rule is "checked before the 409 rule, so a retry is harmless"."""
    s = make(worker="manual")
    s.submit(message(m("u1", "hi")))
    assert s.pending is not None
    r = s.submit(message(m("u1", "hi")))
    assert r["duplicate"] is True and r["turn_id"] == "t1" and r["status"] == 200


# -- engine ids ----------------------------------------------------------
def test_engine_ids_skip_recorded_ids():
    """1: "Engine-made ids are e1, e2, ... in order of creation, skipping any id already recorded" """
    s = make(worker="manual")
    s.submit(view([m("e1", "mine"), m("e3", "also mine")]))
    s.decide([{"type": "message.add", "message": a(None, "tool-ish")}])
    assert s.head == "e2"
    s.submit(message(m(None, "next")))
    assert s.head == "e4"


def test_engine_ids_skip_ids_waiting_in_a_queued_turn():
    """1: "... skipping any id already recorded or waiting in a queued turn." Ids are given when a
    message is recorded (4), so a queued message without id gets its id when its turn starts."""
    s = make(worker="manual")
    s.submit(message(m("u1", "hi")))
    s.submit(message(m("e1", "queued with e1"), queue=True))
    s.submit(message(m(None, "queued, no id"), queue=True))
    s.decide([{"type": "message.add", "message": a(None, "added")}])
    added = [n for n in nodes(s).values() if n["content"] == "added"][0]
    assert added["id"] == "e2"  # e1 waits in a queued turn
    # t1 completed, so t2 started and appended its message: the head is e1, under the added one
    assert s.pending["turn_id"] == "t2"
    assert s.head == "e1"
    assert node(s, "e1")["parent"] == "e2"
    s.decide([])
    assert s.pending["turn_id"] == "t3"
    assert s.head == "e3"
    assert node(s, "e3")["content"] == "queued, no id"


def test_view_with_known_ids_not_at_the_start_is_refused():
    """2.1: "Each matched message must be a child of the previous match (or of the root for the
    first). If not, refuse 400: the view is not a path of the tree (gap)." """
    s = page_tree()
    refused(s, view([m("u1"), m("u2")]), 400, "u2", "path")
    refused(s, view([a("a1")]), 400, "a1", "path")


def test_view_reusing_a_recorded_id_in_the_rest_is_refused():
    """2.3: "An id in the rest that is already recorded, or twice in the view, is refused 400 (gap)." """
    s = page_tree()
    refused(s, view([m("u1"), m("x", "new"), a("a1")]), 400, "a1")
    refused(s, view([m("u1"), m("x", "new"), m("x", "again")]), 400, "x")


def test_empty_view_is_refused():
    """2.4: "An empty view is refused 400 (gap)." """
    s = page_tree()
    refused(s, view([]), 400, "messages", "empty")


def test_engine_ids_skip_ids_given_in_the_same_append():
    """1: "Ids are unique in a session"; engine ids skip "any id already recorded or waiting". A client
    id e1 and a message without id in one client.append: the engine's id must not be e1."""
    s = make(worker="manual")
    r = s.submit(append([m("e1", "mine"), m(None, "engine's")]))
    assert r["status"] == 200
    assert path_ids(s)[0] == "e1"
    assert len(set(path_ids(s))) == 2
    assert node(s, path_ids(s)[1])["content"] == "engine's"


def test_engine_ids_skip_ids_given_later_in_the_same_view():
    """Same rule for a view: [e1, <no id>] records two distinct ids."""
    s = make(worker="manual")
    r = s.submit(view([m("e1", "mine"), m(None, "engine's")]))
    assert r["new_from"] == 0
    assert len(set(path_ids(s))) == 2


def test_engine_ids_skip_ids_given_after_it_in_the_same_view():
    """A message without id before a client id e1 in the same view: ids stay unique. (Whether the engine
    skips e1 or refuses the view 400 is not fixed; a crash that writes half the view is neither.)"""
    s = make(worker="manual")
    before = frozen(s)
    try:
        s.submit(view([m(None, "engine's"), m("e1", "mine")]))
    except convlab.Refused as err:
        assert err.status == 400 and frozen(s) == before
    else:
        assert len(set(path_ids(s))) == 2


def test_retry_of_a_message_waiting_in_a_queued_turn_is_a_duplicate():
    """2: "A message whose id is already recorded (or already waiting in a queued turn) is not added
    again"; the receipt names "the turn that took the first of them"."""
    s = make(worker="manual")
    s.submit(message(m("u1", "hi")))
    q = s.submit(message(m("q1", "later"), queue=True))
    assert q["turn_id"] == "t2" and q["status"] == 202
    snap, n = s.snapshot(), len(s.events)
    r = s.submit(message(m("q1", "later"), queue=True))
    assert_receipt(r, status=200, duplicate=True, turn_id="t2", queued=False, merged=False)
    r = s.submit(message(m("q1", "later")))  # without queue: still a retry, not a 409
    assert_receipt(r, status=200, duplicate=True, turn_id="t2")
    assert s.snapshot() == snap and len(s.events) == n
    s.decide([])
    s.decide([])
    assert sum(1 for n in s.snapshot()["nodes"] if n["id"] == "q1") == 1
