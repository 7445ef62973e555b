"""convlab.lazy: a session log loaded with only the tree's structure and the active path in memory.

Every test_session_* scenario is also loaded lazily and compared with the live session
(tests/conftest.py); here what laziness itself promises: contents read when asked, once.
"""

from __future__ import annotations

import pytest

import convlab
from convlab.lazy import LazyEvents, LazyTree
from session_support import a, m, make, message, view


def worker(d):
    return [{"type": "state.set", "state": {"at": d["head"]}}, {"type": "llm.call"}] if d["type"] == "turn.start" else []


@pytest.fixture
def logged(tmp_path):
    """A session with two branches and state, written to a log."""
    path = tmp_path / "s.jsonl"
    s = make(log=path, worker=worker)
    s.submit(view([m("u1", "first " * 50)]))
    s.submit(message(m("u2", "second " * 50)))
    s.submit(view([m("u1"), a(s.path()[1]["id"]), m("x1", "a branch")]))
    return s, path


def test_only_the_active_path_is_read_at_load(logged):
    s, path = logged
    lazy = convlab.Session.load(path, lazy=True, append=False)
    tree = lazy._tree
    assert isinstance(tree, LazyTree) and isinstance(lazy.events, LazyEvents)
    assert len(tree._store._cache) == len(s.path())  # the warmed path, nothing else
    assert lazy.path() == s.path() and lazy.tokens() == s.tokens() and lazy.state == s.state
    off_path = next(n for n in s.tree.nodes if n not in {p["id"] for p in s.path()})
    assert tree.node(off_path) == s.tree.nodes[off_path]
    assert len(tree._store._cache) == len(s.path()) + 1  # read when asked, then kept


def test_children_roots_and_the_whole_graph_equal_eager(logged):
    s, path = logged
    lazy = convlab.Session.load(path, lazy=True, append=False)
    for n in [None, *s.tree.nodes]:
        assert lazy.children(n) == s.children(n)
    assert lazy.snapshot() == s.snapshot()
    graph = lazy.tree  # built once, by reading every message
    assert graph is lazy.tree and dict(graph.nodes(data=True)) == dict(s.tree.nodes(data=True))
    assert sorted(graph.edges) == sorted(s.tree.edges)


def test_a_lazy_session_goes_on_in_memory(logged):
    s, path = logged
    lazy = convlab.Session.load(path, lazy=True, append=False, worker=worker)
    for one in (s, lazy):
        one.submit(message(m("u9", "more")))
    assert lazy.snapshot() == s.snapshot() and lazy.state == s.state
    assert list(lazy.events) == s.events


def test_lazy_events_index_slice_and_compare(logged):
    s, path = logged
    events = convlab.Session.load(path, lazy=True, append=False).events
    assert len(events) == len(s.events) and events[0] == s.events[0] and events[-1] == s.events[-1]
    assert events[2:5] == s.events[2:5] and list(events) == s.events and events == s.events
    with pytest.raises(IndexError):
        events[len(s.events)]
    assert repr(events) == f"LazyEvents({len(s.events)} events)"


def test_lazy_needs_a_path_not_a_file_object(logged):
    import io

    _, path = logged
    with pytest.raises(ValueError, match="lazy=True needs the log's path"):
        convlab.Session.load(io.BytesIO(path.read_bytes()), lazy=True)


def test_after_the_whole_graph_is_built_the_session_goes_on_through_it(logged):
    """Once ``tree`` has been asked for, reading and writing go through the built graph."""
    s, path = logged
    lazy = convlab.Session.load(path, lazy=True, append=False, worker=worker)
    graph = lazy.tree
    for one in (s, lazy):
        one.submit(message(m("u9", "after the graph")))
    assert lazy.tree is graph and set(graph.nodes) == set(s.tree.nodes)
    assert graph.nodes[lazy.head]["content"] == s.tree.nodes[s.head]["content"]
    assert lazy.snapshot() == s.snapshot() and lazy.path() == s.path() and lazy.state == s.state
    assert (lazy.events == "not events") is False
