"""convlab.replay: an imported tree back through the protocol, and ReplayLLM."""

from __future__ import annotations


import pytest

import convlab
from convlab.conversation import Conversation
from convlab.replaying.model import ReplayLLM
from convlab.replaying.driver import replay
from convlab.replaying.plan import plan
from convlab.tree import Tree
from convlab.tuning.measures import measures

from realdata import REAL, require
from replay_invariant import assert_replays_exactly

CLAUDE_CODE = "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"


def conv(rows, head=None, cid="c"):
    """A Conversation from (id, parent, role, content[, extra attrs]) rows, in creation order."""
    t = Tree()
    for row in rows:
        nid, parent, role, content = row[:4]
        extra = row[4] if len(row) > 4 else {}
        t.add({"id": nid, "role": role, "content": content, **extra}, parent)
    t.head = head if head is not None else rows[-1][0]
    return Conversation(t, id=cid)


def assert_same_tree(c, r):
    """The replayed tree equals the imported one through the id map (tests/replay_invariant.py)."""
    assert_replays_exactly(c, r)


def usage(n):
    return {"input_tokens": n, "output_tokens": 1}


BRANCHY = [
    ("s0", None, "system", "be brief", {"time": 0.0}),
    ("u1", "s0", "user", "weather in NYC?", {"time": 1.0}),
    ("a1", "u1", "assistant", "Sunny.", {"time": 2.0, "usage": usage(20)}),
    ("u2", "a1", "user", "and tomorrow?", {"time": 3.0}),
    ("a2", "u2", "assistant", "Rain.", {"time": 4.0, "usage": usage(30)}),
    ("a2b", "u2", "assistant", "Rain, later sun.", {"time": 5.0, "usage": usage(30)}),  # regenerate
    ("u3", "s0", "user", "weather in LA instead", {"time": 6.0}),  # edit of u1
    ("a3", "u3", "assistant", "Warm.", {"time": 7.0, "usage": usage(21)}),
]


def test_round_trip_edit_regenerate_and_branch_switch():
    c = conv(BRANCHY, head="a2")  # the log's head is back on the first branch
    r = replay(c)
    s = r.session
    assert_same_tree(c, r)
    assert r.stale == []
    kinds = [ev["trigger"] for ev in s.events if ev["type"] == "turn.started"]
    assert kinds == [
        {"type": "client.append", "message_ids": ["s0", "u1"]},
        {"type": "client.message", "message_ids": ["u2"]},
        {"type": "client.messages", "new_from": 4},  # regenerate: a head-only view to u2
        {"type": "client.messages", "new_from": 1},  # edit: a view [s0, new]
        {"type": "client.messages", "new_from": 5},  # branch switch back to a2
    ]
    # each logged reply is exactly one model call, answered with its logged usage
    usages = [ev["usage"] for ev in s.events if ev["type"] == "llm.completed"]
    assert usages == [usage(20), usage(30), usage(30), usage(21)]
    # the clock follows the logged times (a chain sent as one client.append takes its first time)
    assert [m["time"] for m in s.path()] == [0.0, 0.0, 2.0, 3.0, 4.0]


def test_tool_loop_is_one_turn_with_message_add_and_repeated_calls():
    rows = [
        ("u1", None, "user", "list files", {"time": 0.0}),
        ("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}], {"time": 1.0, "usage": usage(50)}),
        ("r1", "a1", "tool", "a.txt b.txt", {"time": 2.0, "tool_call_id": "t1"}),
        ("r2", "r1", "tool", "(done)", {"time": 2.0, "tool_call_id": "t1"}),
        ("a2", "r2", "assistant", "Two files.", {"time": 3.0, "usage": usage(60)}),
        ("a3", "a2", "assistant", "Anything else?", {"time": 3.5, "usage": usage(64)}),
    ]
    c = conv(rows)
    p = plan(c)
    assert [(t.start, t.nodes, t.steps) for t in p.turns] == [
        ("submit", ["u1"], [("call", "a1"), ("add", "r1"), ("add", "r2"), ("call", "a2"), ("call", "a3")]),
    ]
    r = replay(c)
    s = r.session
    assert_same_tree(c, r)
    answers = [[a["type"] for a in ev["actions"]] for ev in s.events if ev["type"] == "decision.answered"]
    assert answers == [["llm.call"], ["message.add", "message.add", "llm.call"], ["llm.call"], []]
    assert s.tree.nodes["r1"]["tool_call_id"] == "t1"
    assert len(s.turns) == 1


def test_summary_root_is_replayed_as_context_replace():
    rows = [
        ("u1", None, "user", "long work", {"time": 0.0}),
        ("a1", "u1", "assistant", "done part 1", {"time": 1.0, "usage": usage(900)}),
        ("sum", None, "user", "This session is being continued: part 1 done.", {"time": 2.0, "kind": "summary", "replaces": "a1"}),
        ("u2", "sum", "user", "go on", {"time": 3.0}),
        ("a2", "u2", "assistant", "part 2", {"time": 4.0, "usage": usage(40)}),
    ]
    c = conv(rows)
    r = replay(c)
    s = r.session
    assert_same_tree(c, r)
    node = s.tree.nodes[r.map["sum"]]
    assert node["replaces"] == r.map["a1"]
    assert [ev["type"] for ev in s.events].count("context.replaced") == 1
    assert r.stale == []  # the log's own compaction is logged history
    # where it happened, for the count-per-call plot: before the second model call
    assert r.compactions == [{"id": r.map["sum"], "call": 2}]


def test_a_fork_knows_where_the_log_compacted():
    """Replay.compactions of a replay forked after the log's compaction equals that of a replay from the start."""
    from convlab.replaying.driver import Replayer

    rows = [
        ("u1", None, "user", "long work " * 50, {"time": 0.0}),
        ("a1", "u1", "assistant", "done part 1", {"time": 1.0, "usage": usage(900)}),
        ("sum", None, "user", "This session is being continued: part 1 done.", {"time": 2.0, "kind": "summary", "replaces": "a1"}),
        ("u2", "sum", "user", "go on " * 300, {"time": 3.0}),
        ("a2", "u2", "assistant", "part 2", {"time": 4.0, "usage": usage(1000)}),
        ("u3", "a2", "user", "more " * 300, {"time": 5.0}),
        ("a3", "u3", "assistant", "part 3", {"time": 6.0, "usage": usage(1400)}),
    ]
    p = plan(conv(rows))
    config = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 1200\n"
    whole = Replayer(p, config).run().result()
    base = Replayer(p).run()
    forked = base.fork(3, config).run(3).result()
    assert whole.limits and whole.limits[0]["call"] == 3  # it fired after the compaction
    assert forked.compactions == whole.compactions == base.result().compactions == [{"id": whole.map["sum"], "call": 2}]


def test_a_closed_replayer_is_freed_without_the_cyclic_collector():
    """Issue 26: a sweep closes each fork it is done with (``Replayer.close``), so no cycle keeps a dropped
    replay alive until a collection walks it; a closed replayer still forks and gives its result."""
    import gc
    import weakref

    from convlab.replaying.driver import Replayer

    p = plan(conv(long_rows(6)))
    config = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 3000\n"
    gc.collect()
    gc.disable()
    try:
        kept = Replayer(p, config).run()
        left = weakref.ref(kept.session)
        del kept
        assert left() is not None  # not closed: the replayer, its session and its model hold each other
        closed = Replayer(p, config).run()
        before = measures(closed.result())
        closed.close()
        again = closed.fork(2, config).run(2)
        assert measures(again.result()) == before  # forked from a closed replayer: the same replay
        freed = weakref.ref(closed.session)
        del closed
        assert freed() is None
    finally:
        gc.enable()
    gc.collect()
    assert left() is None


def test_ids_that_look_like_engine_ids_are_mapped_not_reused():
    rows = [("e1", None, "user", "hi"), ("x", "e1", "assistant", "hello"), ("e2", "x", "user", "again"), ("y", "e2", "assistant", "hi again")]
    c = conv(rows)
    r = replay(c)
    assert_same_tree(c, r)
    # logged ids of the engine's own form are left to the engine, so they never collide with a reply's id
    assert r.map == {"e1": "e1", "x": "e2", "e2": "e3", "y": "e4"}


def long_rows(n_turns, chars=4000, gap=10.0, times=True):
    rows, parent, t = [], None, 0.0
    for i in range(n_turns):
        u, a = f"u{i}", f"a{i}"
        rows.append((u, parent, "user", f"question {i} " + "x" * chars, {"time": t if times else None}))
        rows.append((a, u, "assistant", f"answer {i}", {"time": (t + 1) if times else None, "usage": usage(1000 * (i + 1))}))
        parent, t = a, t + gap
    return rows


def config(window=None, *strategies):
    lines = ["[agent.bot.context]"]
    if window:
        lines.append(f"window = {window}")
    for s in strategies:
        lines.append("[[agent.bot.context.strategy]]")
        lines.extend(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in s.items())
    return "\n".join(lines)


def test_a_strategy_firing_goes_on_from_the_new_history_and_names_stale_replies():
    c = conv(long_rows(8))
    # the count before call k is about 1000*(k-1) + 1000: over 4000 from call 5
    r = replay(c, config(None, {"use": "summarize", "over_tokens": 4500}))
    s = r.session
    first = r.limits[0]
    assert (first["reason"], first["strategy"], first["replaced"]) == ("full", "summarize", True)
    assert first["call"] == 5
    # the reply of the held call and every later one read a history the log never had
    assert r.stale == [f"a{i}" for i in range(4, 8)]
    path = s.path()
    assert path[0]["kind"] == "summary"
    assert [m["content"] for m in path if m["role"] == "assistant"][-1] == "answer 7"
    # the log's questions went on under the new history, all 8 replies were given
    assert r.map["u7"] == path[-2]["id"] and r.map["a7"] == path[-1]["id"]
    # a stale reply's usage is not the log's: it is what the log's own calls say a call on that history
    # reads (convlab.replaying.fit: hidden + ratio * exact; here the log grows 1.97 tokens a transcript
    # token), not the last applying call's overhead, which holds the surplus on a longer history
    calls = r.calls
    assert [x["applies"] for x in calls] == [True] * 4 + [False] * 4
    assert all(x["read"] == x["logged"] for x in calls[:4])
    assert [x["overhead"] for x in calls[:4]] == [x["logged"] - x["exact"] for x in calls[:4]]
    (hidden, ratio), = r.fit.segments.values()
    assert round(ratio, 2) == 1.97 and all(x["read"] == round(hidden + ratio * x["exact"]) for x in calls[4:])
    assert all(x["overhead"] == x["read"] - x["exact"] for x in calls[4:])
    assert calls[5]["read"] < calls[3]["logged"] - calls[3]["exact"] + calls[5]["exact"]  # below the carried overhead's read
    assert [ev["usage"]["input_tokens"] for ev in s.events if ev["type"] == "llm.completed" and not ev.get("summary")][4:] == [
        x["read"] for x in calls[4:]]


HIDDEN = 1000


def hidden_prompt_rows(n_turns, chars=4000, gap=10.0):
    """A chat whose logged usage is the exact count of the transcript plus a hidden prompt of HIDDEN tokens."""
    from convlab.tokens import count_tokens

    rows, parent, t, read = [], None, 0.0, 0
    for i in range(n_turns):
        u, a = f"u{i}", f"a{i}"
        question, answer = f"question {i} " + "x" * chars, f"answer {i}"
        read += count_tokens(question)
        rows.append((u, parent, "user", question, {"time": t}))
        rows.append((a, u, "assistant", answer, {"time": t + 1, "usage": usage(read + HIDDEN)}))
        read += count_tokens(answer)
        parent, t = a, t + gap
    return rows


def test_a_stale_reply_still_reads_the_hidden_prompt():
    c = conv(hidden_prompt_rows(8))
    rb = replay(c)
    base = rb.session
    # no strategy: the log's usage, call for call, and the overhead it shows is the hidden prompt
    assert [x["read"] for x in rb.calls] == [x["logged"] for x in rb.calls]
    assert [x["overhead"] for x in rb.calls] == [HIDDEN] * 8
    assert [ev["usage"] for ev in base.events if ev["type"] == "llm.completed"] == [
        {"input_tokens": x["logged"], "output_tokens": 1} for x in rb.calls]
    r = replay(c, config(None, {"use": "summarize", "over_tokens": 4500}))
    s = r.session
    calls = r.calls
    assert r.limits and r.limits[0]["replaced"]
    stale = [x for x in calls if not x["applies"]]
    assert len(stale) >= 3
    # after the replace each call reads what it was given plus the hidden prompt, as the provider would
    assert all(x["read"] == x["exact"] + HIDDEN and x["overhead"] == HIDDEN for x in stale)
    completed = [ev["usage"]["input_tokens"] for ev in s.events if ev["type"] == "llm.completed" and not ev.get("summary")]
    assert completed == [x["exact"] + HIDDEN for x in calls]
    # the engine counts from that usage, hidden prompt included, at the next call on the same history
    after = [b for a, b in zip(calls, calls[1:]) if not a["applies"] and b["count"] > a["count"]]
    assert after and all(b["count"] >= b["exact"] + HIDDEN - 50 for b in after)


def test_without_logged_usage_the_overhead_is_zero():
    rows = [(nid, parent, role, content, {k: v for k, v in extra.items() if k != "usage"})
            for nid, parent, role, content, extra in long_rows(8)]
    r = replay(conv(rows), config(None, {"use": "summarize", "over_tokens": 4500}))
    assert r.stale and [x["overhead"] for x in r.calls] == [0] * 8
    assert all(x["read"] == x["exact"] and x["logged"] is None for x in r.calls)


def test_idle_secs_uses_the_logged_times():
    c = conv(long_rows(4, chars=10, gap=100.0))
    reset = {"use": "reset", "idle_secs": 95}
    r = replay(c, config(None, reset))
    # each turn starts 99 s after the previous reply: idle from the second turn on
    assert [x["reason"] for x in r.limits] == ["idle", "idle", "idle"]
    assert [x["call"] for x in r.limits] == [2, 3, 4]
    assert [x["idle_for"] for x in r.calls] == [None, 99.0, 99.0, 99.0]
    r = replay(c, config(None, {"use": "reset", "idle_secs": 100}))
    assert r.limits == []


def test_missing_times_never_make_a_turn_idle():
    c = conv(long_rows(4, chars=10, times=False))
    r = replay(c, config(None, {"use": "reset", "idle_secs": 1}))
    assert r.limits == []
    assert_same_tree(c, r)


def test_replay_llm_usage_window_and_latency():
    clock = [10.0]
    replies = [{"id": "a1", "content": "ok", "usage": usage(5000), "time": 12.5}, {"id": "a2", "content": "fine"}]
    llm = ReplayLLM(replies, window=4000, clock=lambda: clock[0])
    with pytest.raises(convlab.ProviderError) as err:
        llm.complete({"messages": [{"role": "user", "content": "hi"}]})
    assert err.value.kind == "too_long"
    assert llm.given == 0 and llm.last.refused is True
    overheads = [llm.last.overhead]
    llm.window = None
    out = llm.complete({"messages": [{"role": "user", "content": "hi"}]})
    overheads.append(llm.last.overhead)
    assert out["usage"] == usage(5000) and llm.latency == 2.5
    # no usage logged: the exact count plus the overhead the last logged call showed (5000 - 1 for "hi")
    out = llm.complete({"messages": [{"role": "user", "content": "hello world"}]})
    overheads.append(llm.last.overhead)
    assert out["usage"] == {"input_tokens": 2 + 4999, "output_tokens": 1}
    assert overheads == [4999, 4999, 4999]
    with pytest.raises(convlab.ProviderError):
        llm.complete({"messages": []})
    # a first call that does not apply has no overhead to carry: the exact count
    not_applying = ReplayLLM([replies[0]], applies=lambda request: False)
    assert not_applying.complete({"messages": [{"role": "user", "content": "hello world"}]})["usage"]["input_tokens"] == 2
    assert not not_applying.last.applies and not_applying.last.reply == "a1"  # stale
    # a provider that counts the transcript in fewer tokens shows no hidden overhead (never below 0)
    small = ReplayLLM([{"content": "a", "usage": usage(1)}, {"content": "b"}], applies=lambda request: len(request["messages"]) < 2)
    small.complete({"messages": [{"role": "user", "content": "hello world, how are you"}]})
    overheads = [small.last.overhead]
    out = small.complete({"messages": [{"role": "user", "content": "x"}, {"role": "user", "content": "hello world"}]})
    assert overheads + [small.last.overhead] == [0, 0] and out["usage"]["input_tokens"] == 3


# -- real logs --------------------------------------------------------------


@pytest.mark.realdata
def test_claude_code_session_first_limit_comes_where_the_log_crossed():
    require()
    c = convlab.read(REAL / CLAUDE_CODE)[0]
    calls = [n for n in plan(c).calls]
    assert len(calls) == 217
    from convlab.tree import input_tokens

    logged = [input_tokens(c.tree.nodes[n]["usage"]) for n in calls]
    assert next(i for i, x in enumerate(logged, 1) if x > 132431) == 131
    r = replay(c, config(148431, {"use": "summarize"}))
    first = r.limits[0]
    assert first["reason"] == "full"
    assert 118 <= first["call"] <= 144, first
    assert first["call"] == 131  # what we measured: the count tracks the log's usage closely


def test_a_logged_summary_is_replayed_as_a_summary():
    """Issue 11 (3): "A Claude Code compaction replayed through context.replace comes back with kind: "summary"
    ... where the log had a summary"; PROTOCOL 5.4: "summary first, as a user message (kind: summary) that
    says the earlier conversation was summarized"."""
    from convlab.engine import SUMMARY_PREFIX

    rows = [
        ("u1", None, "user", "long work", {"time": 0.0}),
        ("a1", "u1", "assistant", "done part 1", {"time": 1.0, "usage": usage(900)}),
        ("sum", None, "user", "This session is being continued: part 1 done.", {"time": 2.0, "kind": "summary", "replaces": "a1"}),
        ("u2", "sum", "user", "go on", {"time": 3.0}),
    ]
    r = replay(conv(rows))
    node = r.session.tree.nodes[r.map["sum"]]
    assert (node["kind"], node["role"], node["parent"]) == ("summary", "user", None)
    assert node["content"] == SUMMARY_PREFIX + "This session is being continued: part 1 done."
    replaced = [e for e in r.session.events if e["type"] == "context.replaced"]
    assert [e["from"] for e in replaced] == [r.map["a1"]]


@pytest.mark.realdata
def test_the_real_claude_code_compaction_is_replayed_as_a_summary():
    require()
    c = convlab.read(REAL / CLAUDE_CODE, progress=False)[0]
    summaries = [n for n, a in c.tree.nodes(data=True) if a["kind"] == "summary"]
    assert len(summaries) == 1
    r = replay(c)
    replayed = r.session.tree.nodes[r.map[summaries[0]]]
    assert replayed["kind"] == "summary" and replayed["replaces"] == r.map[c.tree.nodes[summaries[0]]["replaces"]]
    assert_same_tree(c, r)
    # call 139 is the first to read the compacted history: the count drops there (notebook 03)
    assert r.compactions == [{"id": r.map[summaries[0]], "call": 139}]
    assert r.calls[137]["count"] > 140_000 > 10_000 > r.calls[138]["count"]


def test_replay_of_the_list_read_returns_says_what_to_pass():
    """Issue 15: "replay(convs) with the list that read returns" must say "pass one Conversation; read() returns a list"."""
    c = conv(BRANCHY)
    with pytest.raises(TypeError, match=r"replay takes one Conversation, got a list: convlab.read\(\) returns a list"):
        replay([c])
    with pytest.raises(TypeError, match="got a str"):
        replay("chat.json")


# -- real summaries (issue 12 part 2) -----------------------------------------


class Summarizer:
    """A provider that writes its own summaries and counts its calls."""

    def __init__(self):
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        words = sum(len(convlab.content_text(m["content"]).split()) for m in request["messages"][:-1])
        return {"content": f"real summary {len(self.requests)} of {words} words", "usage": {"input_tokens": words, "output_tokens": 6}}


def test_summary_calls_go_to_the_summarizer_and_replies_still_come_from_the_log(tmp_path):
    """Issue 12 (2): "replay(conv, config, summarizer=provider) ... send summary calls to that model while
    replies still come from the log"; PROTOCOL 5.4: the summary opens the new history."""
    from convlab.engine import SUMMARY_PREFIX

    c = conv(long_rows(8))
    cfg = config(None, {"use": "summarize", "over_tokens": 4500})
    llm = Summarizer()
    r = replay(c, cfg, summarizer=llm, summary_cache=tmp_path)
    stand_in = replay(c, cfg)
    assert llm.requests and all(q["summary"] for q in llm.requests)
    summaries = [n for _, n in r.session.tree.nodes(data=True) if n["kind"] == "summary"]
    assert [n["content"] for n in summaries] == [SUMMARY_PREFIX + f"real summary {i + 1} of " + q_words(q)
                                                 for i, q in enumerate(llm.requests)]
    # the replies are the log's, call for call, as without a summarizer (where the next summary fires
    # depends on the summary's size: here the stand-in's is longer and fires once more)
    replies = [m["content"] for m in r.session.path() if m["role"] == "assistant"]
    assert replies and replies == [f"answer {i}" for i in range(8 - len(replies), 8)]
    assert [x["reply"] for x in r.calls] == [x["reply"] for x in stand_in.calls] == [f"a{i}" for i in range(8)]
    # the summary's usage is the summarizer's
    summary_usage = [e["usage"] for e in r.session.events if e["type"] == "llm.completed" and e.get("summary")]
    assert summary_usage == [{"input_tokens": int(q_words(q).split()[0]), "output_tokens": 6} for q in llm.requests]
    # the log's clock: a real call takes no time in the replay
    assert [m["time"] for m in r.session.path()][-1] == [m["time"] for m in stand_in.session.path()][-1]
    # again: from the cache, no call
    n = len(llm.requests)
    again = replay(c, cfg, summarizer=llm, summary_cache=tmp_path)
    assert len(llm.requests) == n and again.session.snapshot()["nodes"] == r.session.snapshot()["nodes"]


def q_words(request):
    return f"{sum(len(convlab.content_text(m['content']).split()) for m in request['messages'][:-1])} words"


def test_a_summarizer_that_fails_leaves_the_call_as_it_was(tmp_path):
    """PROTOCOL 5.3: the call is proposed as it was when no summary could be made; a failed call is asked
    again next time (only a refusal as too long is kept)."""

    class Failing:
        calls = 0

        def complete(self, request):
            Failing.calls += 1
            raise convlab.ProviderError("failed", "the service is down")

    c = conv(long_rows(8))
    cfg = config(None, {"use": "summarize", "over_tokens": 4500})
    with pytest.warns(convlab.SummaryWarning, match=r"summary calls to .*Failing.* failed \(the service is down\): the replays"):
        r = replay(c, cfg, summarizer=Failing(), summary_cache=tmp_path)
    assert r.limits and not any(x["replaced"] for x in r.limits) and r.stale == []
    first = Failing.calls
    with pytest.warns(convlab.SummaryWarning):
        replay(c, cfg, summarizer=Failing(), summary_cache=tmp_path)
    assert first >= 1 and Failing.calls == 2 * first
    with pytest.raises(TypeError, match=r"not its class: Failing\(...\)"):
        replay(c, cfg, summarizer=Failing)


# -- the log's own compaction under a strategy (issue 20) ---------------------------


def compacted_rows():
    """long_rows(4), the log's compaction (a reply straight after its summary), then four more turns."""
    rows = long_rows(4)
    rows += [("sum", None, "user", "Summary of turns 0-3.", {"time": 45.0, "kind": "summary", "replaces": "a3"}),
             ("a4", "sum", "assistant", "continuing", {"time": 46.0, "usage": usage(900)})]
    parent = "a4"
    for i in range(5, 9):
        rows.append((f"u{i}", parent, "user", f"question {i} " + "x" * 4000, {"time": 10.0 * i}))
        rows.append((f"a{i}", f"u{i}", "assistant", f"answer {i}", {"time": 10.0 * i + 1, "usage": usage(1000 * (i - 3))}))
        parent = f"a{i}"
    return rows


def test_the_logs_compaction_is_replayed_as_the_log_did_it_and_a_strategy_fires_only_on_what_follows():
    """Issue 20: "Where the log compacted itself and a strategy fires too, what the replay does with the log's own
    summary is written in replay's docs and tested"."""
    c = conv(compacted_rows())
    base = replay(c)
    r = replay(c, config(None, {"use": "summarize", "over_tokens": 2500}))
    s = r.session
    calls = {x["reply"]: x for x in r.calls}
    # the strategy fired before the log's compaction (call 3) and rewrote the history
    assert r.limits[0]["call"] == 3 and r.limits[0]["replaced"]
    # the log's compaction replaced the strategy's history with the log's summary, as the log did
    summary = s.tree.nodes[r.map["sum"]]
    assert summary["kind"] == "summary" and summary["replaces"] == r.map["a3"]
    assert s.tree.nodes[r.map["a3"]]["parent"] is not None and s.path(r.map["a3"])[0]["kind"] == "summary"
    assert s.path(r.map["a3"])[0]["id"] != r.map["sum"]  # a3 was answered on the strategy's history
    assert r.compactions == [{"id": r.map["sum"], "call": 5}] and [x["call"] for x in base.compactions] == [5]
    # from the log's summary on the model reads what the log's model read: the logged usage applies again,
    # call for call as in the replay with no strategy, until the strategy fires again (call 7)
    for reply in ("a4", "a5"):
        same = {k: base.calls[int(reply[1:])][k] for k in ("count", "read", "exact", "applies")}
        assert {k: calls[reply][k] for k in same} == same and same["applies"]
    assert [x["call"] for x in r.limits] == [3, 4, 7, 8, 9]
    assert r.stale == ["a2", "a3", "a6", "a7", "a8"]
    # the reply straight after the summary was the compaction's own turn
    answers = [[a["type"] for a in e["actions"]] for e in s.events if e["type"] == "decision.answered"]
    assert ["context.replace", "llm.call"] in answers


def test_an_idle_strategy_at_the_first_call_after_the_logs_summary_keeps_the_call():
    """An idle reset at the reply straight after the log's summary: nothing precedes what it must keep (the
    summary), so it proposes the call as it was (PROTOCOL 5.3) and the replay stays the log's."""
    c = conv(compacted_rows())
    r = replay(c, config(None, {"use": "reset", "idle_secs": 3}))
    after = next(x for x in r.limits if x["call"] == 5)
    assert (after["reason"], after["replaced"]) == ("idle", False)
    assert {x["reply"]: x["applies"] for x in r.calls}["a4"] is True
    assert "a4" not in r.stale


def test_a_reply_whose_turn_failed_shifts_no_later_call_onto_it():
    """A call the window refuses twice fails its turn, and its logged reply is never given: the next turn's call
    still gets its own reply (ReplayLLM.expect), not the one left over (a real damaged session replayed every
    later call with the reply before it)."""
    rows = [("u1", None, "user", "q1"), ("a1", "u1", "assistant", "r1", {"usage": usage(10)}),
            ("u2", "a1", "user", "q2"), ("a2", "u2", "assistant", "r2", {"usage": usage(900000)}),
            ("u3", None, "user", "q3"), ("a3", "u3", "assistant", "r3", {"usage": usage(30)})]
    r = replay(conv(rows), config(20000, {"use": "summarize"}))
    assert [t["status"] for t in r.session.turns] == ["completed", "failed", "completed"]
    assert [(x["reply"], x["refused"]) for x in r.calls] == [("a1", False), ("a2", True), ("a2", True), ("a3", False)]
    assert r.stale == ["a2"]
    assert r.session.tree.nodes[r.map["a3"]]["content"] == "r3" and r.session.path()[-1]["content"] == "r3"


# -- the package (issue 21) -------------------------------------------------------


@pytest.mark.parametrize("first", [
    "import convlab",
    "import convlab.replaying.plan",
    "import convlab.tuning.presets as p",
    "from convlab.replaying.result import Replay",
    "from convlab import replay",
])
def test_convlab_replay_and_tune_are_functions_whatever_is_imported_first(first):
    """Issue 36: functions are functions. convlab.replay and convlab.tune are the functions, in a fresh
    interpreter, whichever import comes first; their packages (convlab/replaying/, convlab/tuning/) have other
    names, so a module is imported by its path (``import convlab.tuning.presets as p``) and nothing is a
    callable module. (Issue 21 had the package callable as the function.)"""
    import subprocess
    import sys

    script = f"""{first}
import inspect, types
import convlab
from convlab.tree import Tree
t = Tree(); t.add({{"id": "u1", "role": "user", "content": "hi"}}, None); t.add({{"id": "a1", "role": "assistant", "content": "yo"}}, "u1")
t.head = "a1"
c = convlab.Conversation(t, id="c")
from convlab.replaying.result import Replay
from convlab.replaying.driver import replay
import convlab.replaying.plan as plan_module
import convlab.tuning.presets as presets_module
from convlab import replay as face
assert isinstance(convlab.replay, types.FunctionType) and face is convlab.replay is replay
assert isinstance(plan_module, types.ModuleType) and not callable(plan_module) and not callable(presets_module)
assert isinstance(convlab.replay(c), Replay) and isinstance(face(c, None), Replay) and isinstance(replay(c), convlab.Replay)
assert list(inspect.signature(convlab.replay).parameters)[:2] == ["conversation", "config"]
assert convlab.tune is convlab.tuning.sweep.tune and convlab.config_grid is convlab.tuning.grid.config_grid
assert convlab.ReplayLLM is convlab.replaying.model.ReplayLLM and convlab.tune_cost is convlab.tuning.sweep.tune_cost
assert convlab.presets is presets_module.presets and convlab.search is convlab.tuning.search.search
assert isinstance(convlab.tune, types.FunctionType) and isinstance(convlab.search, types.FunctionType)
print(repr(convlab.replay(c)))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Replay(conversation='c', calls=1, limits=0, stale=0, head='e1')\n"
