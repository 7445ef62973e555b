"""convlab.wire: the shapes of docs/wire.md as TypedDicts, checked against the doc and a session.

Every test_session_* scenario also runs ``check_wire`` on its sessions (tests/conftest.py);
here one session makes every event type at least once.
"""

from __future__ import annotations

import re
from pathlib import Path

import convlab
from convlab.wire import EVENT_FIELDS, Receipt
from session_support import RecordingLLM, a, check_wire, config, interrupt, m, make, message, reply, view

WIRE_MD = Path(__file__).parents[1] / "docs" / "wire.md"


def documented_events() -> dict[str, tuple[frozenset, frozenset]]:
    """``- `type {field, field?}``` lines of docs/wire.md's Event section."""
    text = WIRE_MD.read_text()
    section = text[text.index("## Event"):text.index("Not an event")]
    out = {}
    for name, fields in re.findall(r"^- `([a-z]+\.[a-z]+) \{([^}]*)\}`", section, flags=re.M):
        names = [f.strip() for f in fields.split(",") if f.strip()]
        out[name] = (frozenset(f for f in names if not f.endswith("?")), frozenset(f[:-1] for f in names if f.endswith("?")))
    return out


def test_docs_wire_md_lists_exactly_the_event_fields_of_convlab_wire():
    assert documented_events() == EVENT_FIELDS


def every_event_session():
    """A session that makes every event type once or more."""
    cfg = config({"use": "reset", "idle_secs": 3600}, {"use": "summarize", "over_tokens": 400})
    llm = RecordingLLM([reply("a", input_tokens=10), {"error": "failed"}, reply("b", input_tokens=10), reply("c", input_tokens=500),
                        reply("SUMMARY"), reply("d", input_tokens=20)])
    s = make(config=cfg, llm=llm, worker="manual")
    receipts = [s.submit(message(m("u1", "hi")))]
    s.decide([{"type": "state.set", "state": {"k": 1}}, {"type": "llm.call"}])
    receipts.append(s.submit(message(m("u2", "queued"), queue=True)))
    receipts.append(s.submit(message(m("u3", "merged"), queue="merge")))
    receipts.append(s.submit(message(m("u4", "merged too"), queue="merge")))
    s.decide([])  # t1 ends: t2 starts at once
    s.decide([{"type": "llm.call"}])  # fails
    s.decide([{"type": "llm.call"}])  # t3 (the merge turn)
    s.decide([])
    receipts.append(s.submit(view([m("u1"), a(s.path()[1]["id"])])))  # back: head.moved
    s.decide([])
    s.submit(message(m("u5", "x" * 2000)))
    s.decide([{"type": "llm.call"}])
    s.decide([])
    s.submit(message(m("u6", "over 400 now")))
    s.decide([{"type": "llm.call"}])  # held: summarize
    assert s.pending["type"] == "context.limit"
    s.decide(s.pending["proposed"])  # replaced
    s.decide([])
    s.advance(3600)
    s.submit(message(m("u7", "after an hour")))
    s.decide([{"type": "llm.call"}])  # held: idle reset
    s.decide([{"type": "turn.end"}])  # kept
    s.submit(message(m("u8", "one more")))
    receipts.append(s.submit(interrupt()))
    s.label("u1", "first")  # convlab's own events
    s.unlabel("u1")
    return s, receipts


def test_one_session_makes_every_event_type_in_its_documented_shape():
    s, receipts = every_event_session()
    assert {e["type"] for e in s.events} == set(EVENT_FIELDS)
    check_wire(s)
    for r in receipts:
        assert set(Receipt.__required_keys__) <= set(r) <= set(Receipt.__required_keys__) | set(Receipt.__optional_keys__), r


def test_a_loaded_log_has_the_same_shapes(tmp_path):
    s, _ = every_event_session()
    path = tmp_path / "s.jsonl"
    path.write_text("".join(__import__("json").dumps(e) + "\n" for e in s.events))
    check_wire(convlab.Session.load(path, append=False))
