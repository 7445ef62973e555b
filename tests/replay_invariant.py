"""The replay invariant (issue 20): with no strategy, a replay re-enacts the log exactly.

One function, ``assert_replays_exactly``, that every replay test of a log with
nothing firing goes through: the generated trees of
tests/test_replay_invariant.py, every importer's output, every real log. Every
future replay change is checked against it.

With an empty config (no strategy, no window):

- ``stale`` is empty;
- every message of the log, those on its active path first of all, has a
  replayed node in ``map``, and no two share one;
- the replayed node hangs under the replayed node of its log parent; a
  summary root (a compaction) is a root whose ``replaces`` is the replayed
  node of what it replaces;
- every message has the log's role, content and message keys (``tool_calls``,
  ``tool_call_id``, ``name``, ``metadata``; a compaction's summary is the
  engine's, which records none) (a compaction's summary opens
  with the engine's ``SUMMARY_PREFIX``, as the engine records one; a summary
  that is the log's first message is recorded as a first message, as it
  was), every
  assistant reply in particular, and it was given by the model call that
  replayed that reply: one call per reply, in the plan's order;
- a message the log's compaction kept as a copy (``copied_from``) is
  replayed as the engine's copy of the replayed original;
- the replayed head is ``map[conv.head]``.
"""

from __future__ import annotations

import json

import convlab
from convlab.engine import SUMMARY_PREFIX
from convlab.tree import MESSAGE_KEYS
from convlab.replaying.driver import EMPTY_SUMMARY, replay
from convlab.replaying.result import Replay
from convlab.replaying.plan import plan


def same(a, b) -> bool:
    """Equal as JSON data (NaN equal to NaN, as the log writes it)."""
    return a == b or json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def assert_replays_exactly(c: convlab.Conversation, r: Replay | None = None) -> Replay:
    """Replay ``c`` with an empty config (unless ``r`` is given) and check the invariant; the replay."""
    r = replay(c, "") if r is None else r
    s, m = r.session, r.map
    where = f"conversation {c.id!r}"
    assert r.stale == [], f"{where}: stale with no strategy: {r.stale[:5]}"
    active = [n["id"] for n in c.path()] if c.head is not None else []
    missing = [n for n in active if n not in m]
    assert not missing, f"{where}: messages of the active path with no replayed node: {missing[:5]}"
    assert set(m) == set(c.tree.nodes), f"{where}: unmapped {sorted(set(c.tree.nodes) - set(m))[:5]}"
    assert len(set(m.values())) == len(m), f"{where}: two log messages share a replayed node"
    assert s.tree.number_of_nodes() == c.tree.number_of_nodes(), f"{where}: the replay recorded other messages"
    for nid, a in c.tree.nodes(data=True):
        b = s.tree.nodes[m[nid]]
        compaction = a["kind"] == "summary" and a["parent"] is None and a["seq"] > 1
        if compaction:
            content = SUMMARY_PREFIX + (convlab.content_text(a["content"]).removeprefix(SUMMARY_PREFIX) or EMPTY_SUMMARY)
            assert (b["kind"], b["parent"]) == ("summary", None), (where, nid)
            if a["replaces"] in c.tree.nodes:
                assert b["replaces"] == m[a["replaces"]], (where, nid, "replaces")
        else:
            content = a["content"]
            assert b["parent"] == (None if a["parent"] is None else m[a["parent"]]), (where, nid, "parent")
        # a summary that opens the log has nothing to replace and no turn to replace it in: a first message
        kind = "message" if a["kind"] == "summary" and a["seq"] == 1 else a["kind"]
        assert (b["role"], b["kind"]) == (a["role"], kind), (where, nid)
        assert same(b["content"], content), (where, nid, "content", a["content"], b["content"])
        if a.get("copied_from") in m:
            assert b["copied_from"] == m[a["copied_from"]], (where, nid, "copied_from")
        keys = {k: (a.get(k), b.get(k)) for k in MESSAGE_KEYS if not compaction and not same(a.get(k), b.get(k))}
        assert not keys, (where, nid, "log, replay", keys)
    calls = plan(c).calls
    assert [x["reply"] for x in r.calls] == calls, f"{where}: the model calls did not give the log's replies in order"
    seqs = [s.tree.nodes[m[x]]["seq"] for x in calls]
    assert seqs == sorted(seqs), f"{where}: the replies were not recorded in the order they were called"
    assert s.head == (None if c.head is None else m[c.head]), f"{where}: head {s.head!r}, the log's maps to {m.get(c.head)!r}"
    return r
