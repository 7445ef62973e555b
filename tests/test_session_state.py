"""PROTOCOL.md 6: worker state along the path."""

from __future__ import annotations

from session_support import a, m, make, message, node, of_type, view


def stateful():
    s = make(worker="manual")
    s.submit(view([m("u1", "q1"), a("a1", "r1")]))
    s.decide([{"type": "state.set", "state": {"n": 1}}])  # at a1
    s.submit(message(m("u2", "q2")))
    s.decide([{"type": "state.set", "state": {"n": 2}}])  # at u2
    return s


def test_no_state_is_empty():
    """6: "The state the worker sees is the nearest one on the active path, from the head up; {} if none." """
    s = make(worker="manual")
    assert s.state == {}
    s.submit(message(m("u1", "x")))
    assert s.pending["state"] == {}
    assert s.state == {}


def test_state_is_recorded_at_the_head_node():
    """6: "Worker state set by state.set is recorded at the head node." """
    s = stateful()
    assert node(s, "a1")["state"] == {"n": 1}
    assert node(s, "u2")["state"] == {"n": 2}
    assert node(s, "u1")["state"] is None
    assert s.state == {"n": 2}


def test_nearest_state_up_the_path():
    """6: the nearest state on the active path from the head up."""
    s = stateful()
    s.submit(message(m("u3", "q3")))
    assert s.pending["state"] == {"n": 2}  # u3 has none: u2's
    assert s.state == {"n": 2}


def test_switching_branches_switches_state():
    """6: "Switching branches switches state." """
    s = stateful()
    s.submit(view([m("u1"), a("a1")]))  # head back to a1
    assert s.state == {"n": 1}
    assert s.pending["state"] == {"n": 1}
    s.decide([])
    s.submit(view([m("u1"), m("b1", "other")]))
    assert s.state == {}
    assert s.pending["state"] == {}
    s.decide([])
    s.submit(view([m("u1"), a("a1"), m("u2")]))
    assert s.state == {"n": 2}


def test_state_set_overrides_along_the_path_but_not_on_the_node_above():
    """The tree only grows; state.set attaches state at the head and leaves earlier nodes alone."""
    s = stateful()
    s.submit(message(m("u3", "q3")))
    s.decide([{"type": "state.set", "state": {"n": 3, "extra": [1]}}])
    assert node(s, "u3")["state"] == {"n": 3, "extra": [1]}
    assert node(s, "u2")["state"] == {"n": 2}
    assert s.state == {"n": 3, "extra": [1]}


def test_state_is_a_copy():
    """s.state is the state along the path: changing the dict returned changes nothing."""
    s = stateful()
    got = s.state
    got["n"] = 99
    assert s.state == {"n": 2}


def test_state_changed_event():
    """7: state.changed {node, state}."""
    s = stateful()
    ev = of_type(s, "state.changed")
    assert [(e["node"], e["state"]) for e in ev] == [("a1", {"n": 1}), ("u2", {"n": 2})]
    assert [e["turn_id"] for e in ev] == ["t1", "t2"]


def test_replace_carries_state_over():
    """6: "context.replace carries it over." 5.4: "recorded on the first node of the new branch"."""
    s = stateful()
    s.submit(message(m("u3", "q3")))
    s.decide([{"type": "context.replace", "summary": "they talked", "messages": [m("u3")]}])
    first = s.path()[0]
    assert first["parent"] is None
    assert first["state"] == {"n": 2}
    assert s.state == {"n": 2}
