"""Issue 40 (3): a long session's older events go to a scratch file (``Session(keep_events=)``, ``LazyEvents``),
read back equal; a scratch that cannot be written keeps them in memory with one warning; a replay keeps only its
newest events, lets go of its replayer, and counts its texts a batch at a time."""

from __future__ import annotations

import math
import tempfile
import warnings
import weakref

import pytest
from ci_support import tmpfs
from hypothesis import given
from hypothesis import strategies as st

import convlab
from convlab import tokens
from convlab.conversation import Conversation
from convlab.engine import Session
from convlab.errors import CacheWarning
from convlab.lazy import LazyEvents
from convlab.replaying import driver
from convlab.tree import Tree

# JSON-ish values and the hostile ones: lone surrogates, NaN and infinities, integers past 64 bits, deep nesting
leaves = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
          | st.floats(allow_nan=True, allow_infinity=True)
          | st.text(st.characters(categories=["Cs", "L", "N", "P", "Zs"]), max_size=8))
values = st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                      max_leaves=12)


def deep(n: int) -> object:
    v: object = "bottom"
    for _ in range(n):
        v = {"k": [v]}
    return v


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (what a log cannot hold, a session in memory can)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@given(st.lists(values, max_size=40), st.integers(min_value=1, max_value=5))
def test_spilled_events_read_back_equal_whatever_they_hold(payloads, keep):
    events = [{"seq": i + 1, "type": "x", "v": v} for i, v in enumerate(payloads)] + [{"seq": 0, "type": "deep", "v": deep(100)}]
    lazy = LazyEvents(keep=keep)
    for ev in events:
        lazy.append(ev)
    assert len(lazy) == len(events)
    assert len(lazy._tail) < 2 * keep  # the rest went to the scratch file
    assert all(same(a, b) for a, b in zip(lazy, events, strict=True))
    assert all(same(lazy[i], events[i]) for i in range(-len(events), len(events)))
    assert all(same(a, b) for a, b in zip(lazy[3:-2], events[3:-2], strict=True))
    with pytest.raises(IndexError):
        lazy[len(events)]


def chat(s: Session, n: int) -> None:
    """Turns, a regeneration and an edit: every kind of event a chat makes."""
    for i in range(n):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"q{i} é 🙂"}})
    first = s.path()[0]
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [dict(first)]})  # regenerate the first reply
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "an edit"}]})


def test_a_session_that_keeps_few_events_equals_one_that_keeps_all(tmp_path):
    kept = Session(keep_events=3, log=tmp_path / "kept.jsonl")
    plain = Session()
    chat(kept, 12)
    chat(plain, 12)
    assert isinstance(kept.events, LazyEvents) and len(kept.events._tail) < 6
    assert kept.events == plain.events and list(kept.events) == plain.events
    assert kept.snapshot() == plain.snapshot()
    loaded = Session.load(tmp_path / "kept.jsonl", keep_events=4)
    assert loaded.events == plain.events and loaded.snapshot() == plain.snapshot()
    lazily = Session.load(tmp_path / "kept.jsonl", lazy=True, keep_events=2, append=False)
    chat(lazily, 3)
    chat(plain, 3)
    assert lazily.events == plain.events
    with pytest.raises(ValueError, match="keep_events takes a whole number of events"):
        Session(keep_events=0)
    with pytest.raises(ValueError, match="keep_events"):
        Session(keep_events=True)


@pytest.mark.parametrize("kind", ["full", "read_only"])
def test_a_scratch_that_cannot_be_written_keeps_the_events_in_memory_and_says_so_once(tmp_path, monkeypatch, kind):
    with tmpfs(tmp_path / "tmp", **{kind: True}) as folder:
        monkeypatch.setattr(tempfile, "tempdir", str(folder))
        s = Session(keep_events=2)
        plain = Session()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            chat(s, 8)
        chat(plain, 8)
        said = [w for w in caught if issubclass(w.category, CacheWarning)]
        assert len(said) == 1, [str(w.message) for w in caught]
        assert said[0].message.folder == str(folder) and said[0].message.reason
        assert str(folder) in str(said[0].message) and said[0].filename.endswith(".py")
        assert s.events == plain.events and s.snapshot() == plain.snapshot()  # nothing lost


def siblings(n: int) -> Conversation:
    t = Tree()
    t.add({"id": "u0", "role": "user", "content": "hello", "time": 0.0}, None)
    for i in range(n):
        t.add({"id": f"a{i}", "role": "assistant", "content": f"reply {i}", "time": float(i + 1),
               "usage": {"input_tokens": 30, "output_tokens": 3}}, "u0")
    t.head = f"a{n - 1}"
    return Conversation(t, id="siblings")


def test_a_replay_keeps_its_newest_events_and_lets_go_of_its_replayer(monkeypatch):
    conv = siblings(300)
    whole = convlab.replay(conv, model="claude-sonnet-4-5")
    made: list[weakref.ref] = []
    init = driver.Replayer.__init__

    def spy(self, *args, **kwargs):
        made.append(weakref.ref(self))
        init(self, *args, **kwargs)

    monkeypatch.setattr(driver.Replayer, "__init__", spy)
    monkeypatch.setattr(driver, "EVENTS_KEPT", 16)
    r = convlab.replay(conv, model="claude-sonnet-4-5")
    assert isinstance(r.session.events, LazyEvents) and len(r.session.events._tail) < 32
    assert r.session.events == whole.session.events and r.map == whole.map
    assert [c.usd for c in r.calls] == [c.usd for c in whole.calls] and len(r.calls) == 300
    assert [made_by() for made_by in made] == [None]  # freed as replay returned, no collection needed
    assert r.session.snapshot() == whole.session.snapshot()
    replayer = driver.Replayer(driver.plan(conv)).run()  # a fork loads the events so far, spilled ones included
    fork = replayer.fork(250).run(250)
    forked = fork.result()
    assert forked.map == whole.map and [c.read for c in forked.calls] == [c.read for c in whole.calls]


def test_texts_are_counted_a_batch_at_a_time_with_the_same_counts(monkeypatch):
    texts = [f"text {i} " + "word " * (i % 50) for i in range(400)] + ["", "hello world", "hello world"]
    whole = tokens.count_batch(texts)
    monkeypatch.setattr(tokens, "BATCH_CHARS", 64)
    assert tokens.count_batch(texts) == whole == [tokens.count_tokens(t) for t in texts]
