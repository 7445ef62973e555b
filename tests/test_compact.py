"""convlab.compact: the field's compactions as workers that answer context.limit with a context.replace
(issue 22, part 3). What each keeps means what it says, and none ever cuts a tool call from its result."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from session_support import config, m, make, of_type, view

import convlab
from convlab import compact, toolcalls
from convlab.tuning.measures import measures

OVER = config({"use": "summarize", "over_tokens": 40})
RESET = config({"use": "reset", "over_tokens": 40})


def call(cid, name="Bash"):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def history():
    """A path with two tool loops, OpenAI's shape and Anthropic's, between user turns."""
    return [
        m("s0", "You are terse.", role="system"),
        m("u1", "list the files " * 5),
        m("a1", "", role="assistant", tool_calls=[call("c1", "Bash")]),
        m("r1", "file-a file-b " * 20, role="tool", tool_call_id="c1"),
        m("a2", "two files", role="assistant"),
        m("u2", "read file-a " * 5),
        m("a3", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "file-a"}}], role="assistant"),
        m("r2", [{"type": "tool_result", "tool_use_id": "t2", "content": "contents of a " * 20}]),
        m("a4", "it says a", role="assistant"),
        m("u3", "and file-b? " * 5),
        m("a5", "", role="assistant", tool_calls=[call("c3", "Read")]),
        m("r3", "contents of b " * 20, role="tool", tool_call_id="c3"),
    ]


def compacted(worker, cfg=OVER, msgs=None):
    """A session over ``msgs`` whose next call is held: the worker answers; returns the session."""
    s = make(config=cfg, worker=worker)
    s.submit(view(msgs or history()))
    return s


def every_result_has_its_call(path):
    made = set()
    for msg in path:
        made |= set(toolcalls.calls(msg))
        for cid in toolcalls.answers(msg):
            assert cid in made, f"{msg['id']} answers {cid}, which the kept path never calls"


def test_sliding_window_keeps_the_last_turns_and_the_instructions():
    s = compacted(compact.sliding_window(keep_turns=2))
    [replaced] = of_type(s, "context.replaced")
    path = s.path()
    origin = [n["copied_from"] for n in path[:-1]]
    assert origin == ["s0", "u2", "a3", "r2", "a4", "u3", "a5", "r3"]
    every_result_has_its_call(path)
    assert path[-1]["role"] == "assistant" and s.turns[-1]["status"] == "completed"


def test_sliding_window_with_no_more_turns_than_it_keeps_runs_the_call_as_it_was():
    s = compacted(compact.sliding_window(keep_turns=3))
    assert not of_type(s, "context.replaced") and of_type(s, "context.kept")
    assert [n["id"] for n in s.path()[:-1]] == [x["id"] for x in history()]


def test_summary_tail_keeps_a_summary_and_about_keep_tokens_of_the_newest_messages():
    s = compacted(compact.summary_tail(keep_tokens=120))
    path = s.path()
    assert path[0]["kind"] == "summary" and path[1]["copied_from"] == "s0"
    tail = [n["copied_from"] for n in path[2:-1]]
    assert tail[-1] == "r3" and "u1" not in tail
    kept_tokens = convlab.count_tokens([n for n in path[2:-1]])
    assert kept_tokens <= 200  # about 120 by the engine's estimate, plus whole tool calls
    every_result_has_its_call(path)


def test_summary_tail_never_starts_at_a_tool_result_without_its_call():
    for keep in range(1, 400, 7):
        s = compacted(compact.summary_tail(keep_tokens=keep))
        every_result_has_its_call(s.path())
        assert s.turns[-1]["status"] == "completed"


def test_summary_tail_as_a_share_and_after_a_reset_strategy():
    share = compacted(compact.summary_tail(keep_tokens=0.3))
    [limited] = of_type(share, "context.limited")
    assert share.path()[0]["kind"] == "summary"
    tail = convlab.count_tokens([n for n in share.path()[2:-1]])
    assert tail <= 0.3 * limited["tokens"] * 1.6  # a share of the count, whole tool calls included
    reset = compacted(compact.summary_tail(keep_tokens=60), cfg=RESET)
    assert reset.path()[0]["kind"] == "message" and reset.path()[0]["copied_from"] == "s0"  # no summary to keep


def test_clear_tool_results_clears_all_but_the_newest_and_keeps_every_call_answered():
    s = compacted(compact.clear_tool_results(keep=1))
    path = s.path()[:-1]
    by_origin = {n.get("copied_from"): n for n in path}
    new = [n for n in path if n["copied_from"] is None]
    assert [n["role"] for n in new] == ["tool", "user"]  # r1 and r2 cleared: new messages
    assert new[0]["content"] == compact.PLACEHOLDER and new[0]["tool_call_id"] == "c1"
    assert new[1]["content"] == [{"type": "tool_result", "tool_use_id": "t2", "content": compact.PLACEHOLDER}]
    assert by_origin["r3"]["content"] == history()[-1]["content"]  # the newest result intact
    assert len(path) == len(history())
    every_result_has_its_call(path)


def test_clear_tool_results_spares_excluded_tools_and_clears_only_enough():
    spared = compacted(compact.clear_tool_results(keep=0, exclude_tools=["Read"])).path()[:-1]
    cleared = [n for n in spared if n["copied_from"] is None]
    assert [n.get("tool_call_id") for n in cleared] == ["c1"]  # Bash's result; both Read results kept
    assert {"r2", "r3"} <= {n["copied_from"] for n in spared}
    s = compacted(compact.clear_tool_results(keep=0, clear_at_least=10_000))
    assert not of_type(s, "context.replaced") and of_type(s, "context.kept")  # it would free too little


def test_a_compaction_answers_every_other_decision_as_the_chat_worker():
    worker = compact.clear_tool_results()
    d = {"type": "turn.start", "messages": [{"role": "user", "content": "hi"}]}
    assert worker(d) == convlab.chat_worker(d)
    assert worker({"type": "llm.result", "messages": []}) == []


@pytest.mark.parametrize("worker", [compact.clear_tool_results(keep=2, exclude_tools=("Read",)),
                                    compact.summary_tail(keep_tokens=0.3), compact.sliding_window(keep_turns=1)])
def test_a_compaction_pickles_and_says_what_it_is(worker):
    again = pickle.loads(pickle.dumps(worker))
    assert again == worker and repr(again) == repr(worker) and "0x" not in repr(worker)


@pytest.mark.parametrize("bad", [lambda: compact.sliding_window(0), lambda: compact.sliding_window(2.5),
                                 lambda: compact.summary_tail(0), lambda: compact.summary_tail(-1),
                                 lambda: compact.clear_tool_results(keep=-1), lambda: compact.clear_tool_results(exclude_tools="Bash"),
                                 lambda: compact.clear_tool_results(placeholder="")])
def test_bad_knobs_are_refused_naming_them(bad):
    with pytest.raises(ValueError, match="must be"):
        bad()


def test_kept_starts_at_the_call_of_a_claude_shaped_tool_result():
    path = history()[:8]  # ... a3 (tool_use t2), r2 (its tool_result in a user message)
    assert [x["id"] for x in convlab.kept(reversed(path))] == ["a3", "r2"]


# -- generated paths: every compaction keeps every kept result's call ------------------------------

STEP = st.sampled_from(["user", "assistant", "openai-tool", "claude-tool", "system"])


@st.composite
def paths(draw):
    out, n = [], 0
    for kind in draw(st.lists(STEP, min_size=1, max_size=16)):
        n += 1
        text = "w " * draw(st.integers(0, 60))
        if kind == "openai-tool":
            out += [m(f"a{n}", "", role="assistant", tool_calls=[call(f"c{n}", draw(st.sampled_from(["Bash", "Read"])))]),
                    m(f"r{n}", text, role="tool", tool_call_id=f"c{n}")]
        elif kind == "claude-tool":
            out += [m(f"a{n}", [{"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {}}], role="assistant"),
                    m(f"r{n}", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": text}])]
        else:
            out.append(m(f"m{n}", text or "x", role=kind))
    if out[-1]["role"] == "assistant" and not toolcalls.calls(out[-1]):
        out.append(m("last", "and now?"))
    return out


WORKERS = st.one_of(st.integers(0, 4).map(lambda k: compact.clear_tool_results(keep=k)),
                    st.integers(1, 400).map(lambda k: compact.summary_tail(keep_tokens=k)),
                    st.floats(0.05, 0.95).map(lambda k: compact.summary_tail(keep_tokens=k)),
                    st.integers(1, 5).map(lambda k: compact.sliding_window(keep_turns=k)),
                    # issue 37: the field's compactions
                    st.integers(0, 4).map(lambda k: compact.clear_tool_results(keep=k, clear_tool_inputs=True)),
                    st.sampled_from([0, 1, 2, "all"]).map(compact.clear_thinking),
                    st.integers(0, 4).map(compact.observation_masking),
                    st.integers(0, 4).map(compact.summary_turns),
                    st.integers(1, 4).map(compact.summary_steps),
                    st.integers(0, 3).map(lambda k: compact.masking_with_summary(k, k + 1)),
                    st.just(compact.openai_compact()), st.just(compact.gemini_cli_compression()),
                    st.floats(0.05, 0.95).map(compact.offloaded_summary))


@given(paths(), WORKERS, st.sampled_from([OVER, RESET]))
def test_no_compaction_ever_keeps_a_result_without_its_call(msgs, worker, cfg):
    s = make(config=cfg, worker=worker)
    s.submit(view(msgs))
    every_result_has_its_call(s.path())
    assert s.running is None and s.turns[-1]["status"] == "completed"
    kept_ids = [x["id"] for x in convlab.kept(reversed(msgs))]
    if of_type(s, "context.replaced"):  # what the model must still answer is kept word for word
        copies = {n["copied_from"] for n in s.path()}
        assert set(kept_ids) <= copies, (kept_ids, copies)


# -- replayed and swept (issue 22 part 3: usable as worker= in replay and tune, and as a grid axis) --------------


def agent_log(turns=6, result_chars=600):
    """An imported agent session: each turn a question, a tool call, its result and an answer, with usage."""
    from convlab.conversation import Conversation
    from convlab.tree import Tree

    t, parent, clock = Tree(), None, 0.0
    for i in range(turns):
        rows = [
            {"id": f"u{i}", "role": "user", "content": f"question {i} " * 20},
            {"id": f"c{i}", "role": "assistant", "content": "", "tool_calls": [call(f"t{i}")]},
            {"id": f"r{i}", "role": "tool", "tool_call_id": f"t{i}", "content": f"result {i} " * (result_chars // 9)},
            {"id": f"a{i}", "role": "assistant", "content": f"answer {i}"},
        ]
        for row in rows:
            clock += 1.0
            if row["role"] == "assistant":
                row["usage"] = {"input_tokens": 50 * (i + 1), "output_tokens": 5}
            t.add({**row, "time": clock}, parent)
            parent = row["id"]
    t.head = parent
    return Conversation(t, id="agent")


LIMIT = config({"use": "summarize", "over_tokens": 400})


@pytest.mark.parametrize("worker", [compact.sliding_window(keep_turns=1), compact.summary_tail(keep_tokens=350),
                                    compact.clear_tool_results(keep=1)])
def test_a_compaction_replays_a_log_as_a_live_session_would_run_it(worker):
    """replay(conv, config, worker=w): the config raises the limit, the worker's context.replace answers it (what the
    engine proposes is not used); the replayed path is the worker's, every result still has its call, and the
    figures are the replay's usual ones."""
    c = agent_log()
    r = convlab.replay(c, LIMIT, worker=worker)
    base = convlab.replay(c, LIMIT)
    assert r.limits and all(x["replaced"] for x in r.limits if x["reason"] == "full")
    path = r.session.path()
    every_result_has_its_call(path)
    assert path[-1]["content"] == "answer 5" and r.stale
    kinds = [m["kind"] for m in path]
    if isinstance(worker, compact._SlidingWindow):
        assert "summary" not in kinds and [m["id"] for m in path if m["role"] == "user"][-1] == r.map["u5"]
        assert sum(m["role"] == "user" and not toolcalls.is_result(m) for m in path) <= 2
    elif isinstance(worker, compact._ClearToolResults):
        assert "summary" not in kinds
        assert sum(m["content"] == compact.PLACEHOLDER for m in path) >= 1
    else:
        assert kinds[0] == "summary"
    assert [m["content"] for m in r.session.path()] != [m["content"] for m in base.session.path()]


def test_a_worker_axis_in_the_grid_sweeps_workers_beside_the_engines_strategies():
    """grid={"worker": [...], "window": [...]}: one row per combination in product order, the worker column says
    which (None: the engine's proposal), and each row equals a replay of its own."""
    c = agent_log()
    workers = [None, compact.sliding_window(keep_turns=1), compact.clear_tool_results(keep=0)]
    df = convlab.tune([c], LIMIT, grid={"worker": workers, "window": [100000, 200000]}, jobs=1, progress=False)
    assert df["worker"].isna().tolist()[:2] == [True, True]
    assert df["worker"].tolist()[2:] == [ "sliding_window(keep_turns=1)", "sliding_window(keep_turns=1)",
                                     "clear_tool_results(keep=0)", "clear_tool_results(keep=0)"]
    assert df["window"].tolist() == [100000, 200000] * 3
    for (_, row), w in zip(df.iterrows(), [w for w in workers for _ in range(2)]):
        alone = convlab.replay(c, LIMIT.replace("[agent.bot.context]", f"[agent.bot.context]\nwindow = {row['window']}"), worker=w)
        own = measures(alone)
        assert {k: row[k] for k in ("tokens_read", "stale", "calls", "summaries", "resets", "max_count")} == \
            {k: own[k] for k in ("tokens_read", "stale", "calls", "summaries", "resets", "max_count")}
    assert df.loc[df["worker"].isna(), "tokens_read"].tolist() != df.loc[df["worker"] == "clear_tool_results(keep=0)", "tokens_read"].tolist()


def test_tune_worker_applies_to_every_config_and_in_worker_processes():
    """tune(..., worker=w) answers every config's limits with w; worker processes give the same frame."""
    c = agent_log()
    w = compact.sliding_window(keep_turns=2)
    one = convlab.tune([c, agent_log(turns=4)], [LIMIT, config({"use": "reset", "over_tokens": 300})], worker=w,
                       jobs=1, progress=False)
    two = convlab.tune([c, agent_log(turns=4)], [LIMIT, config({"use": "reset", "over_tokens": 300})], worker=w,
                       jobs=2, progress=False)
    assert (one["worker"] == repr(w)).all()
    assert one.drop(columns=["source"]).equals(two.drop(columns=["source"]))


def test_bad_workers_are_named_before_any_work():
    c = agent_log(turns=2)
    with pytest.raises(TypeError, match="worker must be None or a callable worker"):
        convlab.replay(c, LIMIT, worker="chat")
    with pytest.raises(TypeError, match="worker must be None or a callable worker"):
        convlab.tune([c], LIMIT, grid={"worker": [None, 3]}, progress=False)
    with pytest.raises(ValueError, match="cannot be sent to worker processes"):
        convlab.tune([c, agent_log(turns=3)], LIMIT, worker=lambda d: d["proposed"], jobs=2, progress=False)

    def broken(decision):
        raise KeyError("oops")

    with pytest.raises(ValueError, match=r"the worker .*broken.* raised KeyError at the context.limit of call"):
        convlab.replay(agent_log(), LIMIT, worker=broken)


@pytest.mark.realdata
def test_every_compaction_and_preset_replays_the_real_session_and_sweeps():
    """Issue 22 (done when): each compaction (as a grid's worker axis) and each peer's preset replays the real
    Claude Code session and sweeps, priced: every one fires there, rewrites the history it reads, keeps every
    tool result with its call, and costs other dollars than the log."""
    from realdata import require

    real = require()
    (c,) = [x for x in convlab.read(real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz")
            if x.id == "ae4a77f8-aedd-4bc1-888f-c94edc91af04"]
    cfg = config({"use": "summarize", "over_tokens": 80000})
    workers = [compact.clear_tool_results(keep=3), compact.summary_tail(keep_tokens=20000), compact.sliding_window(keep_turns=1)]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.TuneWarning)
        df = convlab.tune([c], cfg, grid={"worker": workers}, model="claude-sonnet-4-5", progress=False)
        peers = convlab.tune([c], convlab.presets("agents", window=128_000), model="claude-sonnet-4-5", progress=False)
    assert df["worker"].tolist() == [repr(w) for w in workers]
    assert (df["limits_full"] > 0).all() and (df["usd"] != df["baseline_usd"]).all()
    for w in workers:
        r = convlab.replay(c, cfg, worker=w)
        assert any(x["replaced"] for x in r.limits), w
        every_result_has_its_call(r.session.path())
    assert list(peers["preset"]) == ["claude-code", "codex", "gemini-cli", "pi"]
    assert (peers["limits_full"] > 0).all() and peers["usd"].notna().all()
