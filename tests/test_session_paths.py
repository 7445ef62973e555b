"""The path a model call reads (issue 26): a read-only view over the tree, and an engine
whose own work per turn does not grow with the path.

Not timed: the work is counted (messages read from the tree, walks up a parent link),
so a turn at the 2,000th message must read exactly as much as one at the 20th. The
timings are bench/'s (the drive, replay and tune-scaling rows).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest

import convlab
from convlab.store import MemoryStore
from convlab.tree import PathView, Tree
from session_support import make, message, m


class Keeping:
    """A provider that keeps what every call read (the view itself) and what it read then."""

    def __init__(self):
        self.read: list[tuple[Sequence, list[dict]]] = []

    def complete(self, request):
        messages = request["messages"]
        self.read.append((messages, [dict(x) for x in messages]))
        return {"content": f"reply {len(self.read)}", "usage": {"input_tokens": 3, "output_tokens": 2}}


def test_a_call_reads_a_read_only_view_of_the_path_that_holds():
    llm = Keeping()
    s = make(llm=llm)
    s.submit(message(m("u1", [{"type": "text", "text": "first"}])))
    view, then = llm.read[0]
    assert isinstance(view, PathView) and isinstance(view, Sequence) and not isinstance(view, list)
    assert all(isinstance(x, Mapping) and not isinstance(x, dict) for x in view)
    with pytest.raises(TypeError):
        view[0]["content"] = "changed"
    view[0]["content"][0]["text"] = "the provider's own copy"  # changes nothing in the session
    assert s.path()[0]["content"] == [{"type": "text", "text": "first"}]
    for i in range(5):
        s.submit(message(m(f"u{i + 2}", f"more {i}")))
    assert list(view) == then == [{"id": "u1", "role": "user", "content": [{"type": "text", "text": "first"}]}]
    last, last_then = llm.read[-1]
    assert last == last_then == s.view(s.path()[-2]["id"]) and len(last) == 11
    assert json.dumps([dict(x) for x in last])  # what a provider that serialises does


def test_the_events_and_the_log_hold_no_path(tmp_path):
    """Nothing of the view reaches an event: decisions name the head, the call's events its id."""
    s = make(log=tmp_path / "s.jsonl")
    for i in range(3):
        s.submit(message(m(f"u{i}", f"question {i}")))
    logged = (tmp_path / "s.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in logged] == s.events
    assert not any("PathView" in line or '"messages": [{"id": "u0"' in line for line in logged[4:])


def test_scripted_llm_keeps_the_view_and_echo_counts_it_exactly():
    scripted = convlab.ScriptedLLM([{"content": "a"}, {"content": "b"}])
    s = make(llm={"default": scripted, "echo": convlab.EchoLLM()})
    s.submit(message(m("u1", "hello there")))
    s.submit(message(m("u2", "and again")))
    first, second = (r["messages"] for r in scripted.requests)
    assert isinstance(first, PathView) and [x["id"] for x in second] == ["u1", "e1", "u2"]
    assert scripted.requests[1]["messages"] == s.view("u2")
    usage = [e["usage"] for e in s.events if e["type"] == "llm.completed"]
    assert usage[1]["input_tokens"] == convlab.count_tokens(s.view("u2"))  # ScriptedLLM's default usage
    echo = make()
    for text in ("one two", "three four five", "six"):
        echo.submit(message(m(content=text)))
    read = [e["usage"]["input_tokens"] for e in echo.events if e["type"] == "llm.completed"]
    heads = [e["message"]["parent"] for e in echo.events if e["type"] == "message.new" and e["message"]["role"] == "assistant"]
    assert read == [convlab.count_tokens(echo.view(h)) for h in heads]


class Reads:
    """Counts what the tree asks its store for: a message's attributes, a parent link."""

    def __init__(self, monkeypatch):
        self.n = 0
        for name in ("attrs", "parent"):
            original = getattr(MemoryStore, name)

            def counted(tree, node_id, _original=original):
                self.n += 1
                return _original(tree, node_id)

            monkeypatch.setattr(MemoryStore, name, counted)

    def during(self, act) -> int:
        before = self.n
        act()
        return self.n - before


def _turn(s, i):
    return lambda: s.submit(message(m(content=f"message {i}: how is it going?")))


def test_a_turn_reads_as_much_at_the_2000th_message_as_at_the_20th(monkeypatch):
    """EchoLLM and the chat worker: a turn reads the same few messages however long the path."""
    reads = Reads(monkeypatch)
    s = make()
    per_turn = {}
    for i in range(1000):
        n = reads.during(_turn(s, i))
        if i in (10, 999):
            per_turn[len(s.path())] = n
    assert list(per_turn) == [22, 2000]
    assert per_turn[2000] == per_turn[22] <= 12, per_turn


def test_state_set_once_costs_nothing_later(monkeypatch):
    """The state nearest the head is known per node: a decision never walks up to find it."""
    reads = Reads(monkeypatch)
    s = make(worker="manual")
    per_turn = []
    for i in range(300):
        def one():
            s.submit(message(m(content=f"m{i}")))
            first = [{"type": "state.set", "state": {"since": 0}}] if i == 0 else []
            s.decide(first + [{"type": "llm.call"}])
            s.decide([])
        per_turn.append(reads.during(one))
    assert s.state == {"since": 0} and per_turn[20] == per_turn[-1], per_turn[::50]


def test_a_replay_reads_the_same_per_message_at_600_messages_as_at_60(monkeypatch):
    """Replaying a plain conversation: each logged reply's call reads what is new, never the path."""
    from convlab.conversation import Conversation

    def conversation(n):
        t = Tree()
        parent = None
        for i in range(n):
            role = ("user", "assistant", "tool", "assistant")[i % 4]
            node = {"id": f"n{i}", "role": role, "content": f"{role} message {i} " * 5, "time": float(i)}
            if role == "assistant":
                node["usage"] = {"input_tokens": 20 + 10 * i, "output_tokens": 5}
            t.add(node, parent)
            parent = node["id"]
        t.head = parent
        return Conversation(t, id=f"c{n}")

    small, big = conversation(60), conversation(600)
    convlab.replay(small)  # imports, the tokenizer
    reads = Reads(monkeypatch)
    few = reads.during(lambda: convlab.replay(small))
    many = reads.during(lambda: convlab.replay(big))
    assert many <= 11 * few, (few, many)  # linear (10x, and what the start costs); the path re-read at every call: ~100x
    r = convlab.replay(big)
    assert [c["exact"] for c in r.calls] == [convlab.count_tokens(r.session.view(c_id)) for c_id in
                                             [e["message"]["parent"] for e in r.session.events
                                              if e["type"] == "message.new" and e["message"]["role"] == "assistant"]]
