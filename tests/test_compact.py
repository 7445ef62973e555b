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
                                    compact.summary_tail(keep_tokens=0.3), compact.sliding_window(keep_turns=4)])
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
                    st.integers(1, 5).map(lambda k: compact.sliding_window(keep_turns=k)))


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
