"""Issue 37 (1, 2): the field's compactions, each as its source runs it, and what each costs with its own calls.

Each compaction's rule is pinned on small made histories (what it keeps, what it drops, when it fires); each
one's calls are pinned in the bill (summary calls sent shared or bare, Gemini CLI's second pass, none for
clearing; the prompt cache read while warm; the cache write the rewritten history costs the next call); and
every preset runs in ``tune`` on a real Claude Code session and on a real pi session."""

from __future__ import annotations

import math

import pytest
from realdata import require
from session_support import config, m, make, of_type, view
from test_compact import agent_log, call, every_result_has_its_call, history

import convlab
from convlab import compact, toolcalls
from convlab.conversation import Conversation
from convlab.replaying.driver import replay
from convlab.replaying.prices import Prices
from convlab.tree import Tree
from convlab.tuning.presets import EVERY_CALL, NAMES

RESET = config({"use": "reset", "over_tokens": 40})
OVER = config({"use": "summarize", "over_tokens": 40})


def answered(worker, msgs, cfg=RESET):
    """The path a live session holds after ``worker`` answered the limit ``cfg`` raised over ``msgs``."""
    s = make(config=cfg, worker=worker)
    s.submit(view(msgs))
    assert s.turns[-1]["status"] == "completed"
    return s


def thinking_history():
    """Three turns; each reply thinks first."""
    out = []
    for i in range(3):
        out += [m(f"u{i}", f"question {i} " * 10),
                m(f"a{i}", [{"type": "thinking", "thinking": f"let me think about {i} " * 10},
                            {"type": "text", "text": f"answer {i}"}], role="assistant")]
    return [*out, m("u3", "and last?")]


# -- the rules, on small made histories ------------------------------------------------------------------------


def test_clear_tool_inputs_clears_the_inputs_of_the_calls_whose_results_it_clears():
    s = answered(compact.clear_tool_results(keep=1, clear_tool_inputs=True), history())
    path = s.path()
    every_result_has_its_call(path)
    by_call = {c: msg for msg in path for c in toolcalls.calls(msg)}
    assert by_call["c1"]["tool_calls"][0]["function"]["arguments"] == "{}"  # its result r1 was cleared
    assert by_call["t2"]["content"][0]["input"] == {}  # r2 too (Anthropic's shape)
    assert by_call["c3"]["tool_calls"][0]["function"]["arguments"] == "{}"  # the newest, kept: untouched, it was "{}"
    only_read = answered(compact.clear_tool_results(keep=1, clear_tool_inputs=["Read"]), history()).path()
    calls = {c: msg for msg in only_read for c in toolcalls.calls(msg)}
    assert calls["t2"]["content"][0]["input"] == {} and calls["c1"]["tool_calls"][0]["function"]["name"] == "Bash"
    with pytest.raises(ValueError, match="clear_tool_inputs must be"):
        compact.clear_tool_results(clear_tool_inputs="Read")


def test_clear_thinking_keeps_the_newest_turns_thinking_and_all_keeps_everything():
    def thinking(path):
        return [any(isinstance(p, dict) and p.get("type") == "thinking" for p in (msg["content"] if isinstance(msg["content"], list) else []))
                for msg in path if msg["role"] == "assistant"]

    # the last assistant message is the reply to "and last?", made after the compaction
    assert thinking(answered(compact.clear_thinking(), thinking_history()).path())[:3] == [False, False, True]
    assert thinking(answered(compact.clear_thinking(keep=2), thinking_history()).path())[:3] == [False, True, True]
    assert thinking(answered(compact.clear_thinking(keep=0), thinking_history()).path())[:3] == [False, False, False]
    s = answered(compact.clear_thinking(keep="all"), thinking_history())
    assert thinking(s.path())[:3] == [True, True, True] and not of_type(s, "context.replaced")
    answers = [msg["content"][-1]["text"] for msg in answered(compact.clear_thinking(), thinking_history()).path()[:6]
               if msg["role"] == "assistant"]
    assert answers == ["answer 0", "answer 1", "answer 2"]  # only the thinking goes
    with pytest.raises(ValueError, match="keep must be"):
        compact.clear_thinking(keep="some")


def test_observation_masking_keeps_the_newest_observations_and_every_call():
    path = answered(compact.observation_masking(keep=1), history()).path()
    every_result_has_its_call(path)
    results = [msg for msg in path if toolcalls.is_result(msg)]
    assert [toolcalls.answers(r) for r in results] == [["c1"], ["t2"], ["c3"]]
    assert results[0]["content"] == compact.MASKED and results[1]["content"][0]["content"] == compact.MASKED
    assert results[2]["content"] == "contents of b " * 20  # the newest (and the one the model must answer)
    assert [msg["content"] for msg in path if msg["role"] == "user" and not toolcalls.is_result(msg)] == \
        [msg["content"] for msg in history() if msg["id"] in ("u1", "u2", "u3")]  # the user's messages stay


def test_summary_turns_keeps_a_summary_and_the_newest_turns():
    path = answered(compact.summary_turns(keep_turns=1), history(), OVER).path()
    assert path[0]["kind"] == "summary" and path[1]["role"] == "system"
    assert [msg["copied_from"] for msg in path[2:]] and path[2]["content"].startswith("and file-b?")
    plain = answered(compact.summary_turns(keep_turns=0), history(), OVER).path()
    assert plain[0]["kind"] == "summary" and [msg["role"] for msg in plain[1:4]] == ["system", "assistant", "tool"]
    assert plain[4]["content"].startswith("echo:")  # then the model's answer


def test_summary_steps_keeps_the_agent_s_newest_steps():
    path = answered(compact.summary_steps(keep_steps=2), history(), OVER).path()
    assert path[0]["kind"] == "summary" and path[1]["role"] == "system"
    assert [msg["content"][:9] for msg in path[2:-1]] == ["it says a", "and file-", "", "contents "]  # a4, u3, a5, r3
    every_result_has_its_call(path)
    with pytest.raises(ValueError, match="keep_steps must be"):
        compact.summary_steps(keep_steps=0)


def test_masking_with_summary_masks_under_a_reset_and_summarizes_under_a_summarize():
    worker = compact.masking_with_summary(keep=1, keep_steps=1)
    masked = answered(worker, history(), RESET).path()
    assert all(msg["kind"] != "summary" for msg in masked) and any(msg["content"] == compact.MASKED for msg in masked)
    summarized = answered(worker, history(), OVER).path()
    assert summarized[0]["kind"] == "summary"


def test_openai_compact_keeps_every_user_message_and_one_summary():
    path = answered(compact.openai_compact(), history(), OVER).path()
    assert path[0]["kind"] == "summary"
    rest = [(msg["role"], msg["content"][:9]) for msg in path[1:-1]]  # (the last: the model's answer, after)
    assert rest == [("system", "You are t"), ("user", "list the "), ("user", "read file"), ("user", "and file-"),
                    ("assistant", ""), ("tool", "contents ")]  # the user's three, then what the model must answer
    every_result_has_its_call(path)


def gemini_history(big: int = 0):
    """Turns of a user's message, a tool loop and an answer; the first tool output ``big`` lines long."""
    out = []
    for i in range(4):
        body = "\n".join(f"line {k} of output {i}" for k in range(big)) if i == 0 and big else f"output {i} " * 40
        out += [m(f"u{i}", f"task {i} " * 40), m(f"c{i}", "", role="assistant", tool_calls=[call(f"t{i}")]),
                m(f"r{i}", body, role="tool", tool_call_id=f"t{i}"), m(f"a{i}", f"done {i} " * 40, role="assistant")]
    return [*out, m("u4", "next task")]


def test_gemini_cli_splits_by_characters_at_a_user_message_and_acknowledges_the_snapshot():
    s = answered(compact.gemini_cli_compression(), gemini_history(), OVER)
    path = s.path()
    assert path[0]["kind"] == "summary" and path[1] == {**path[1], "role": "assistant", "content": compact.GEMINI_ACK}
    # 70% of the characters lie before the split: the newest turn and the question the model must answer are kept
    kept = [msg.get("copied_from") for msg in path[2:]]
    assert kept[0] is not None and s.message_tree.node(kept[0])["content"].startswith("task 3")
    every_result_has_its_call(path)
    calls = [e for e in s.events if e["type"] == "llm.started" and e.get("summary")]
    assert len(calls) == 1  # a live session makes one summary call; a replay prices the second pass (below)


def test_gemini_cli_cuts_old_tool_outputs_past_its_budget_to_their_last_lines():
    worker = compact.gemini_cli_compression()
    big = gemini_history(big=20_000)  # an old output of ~70k tokens: past the 50,000 budget
    budgeted = worker._budgeted(big)
    cut = budgeted[2]
    assert cut["content"].startswith("[output truncated to its last 30 lines") and cut["tool_call_id"] == "t0"
    assert cut["content"].splitlines()[1:] == big[2]["content"].splitlines()[-30:]
    assert all(budgeted[i] is big[i] for i in range(len(big)) if i != 2)  # the newer outputs fit the budget


def test_gemini_cli_where_no_user_message_splits_it_calls_no_model_and_only_cuts():
    """One long tool loop after one question: no user message to split at. The CLI calls no model there; a replay
    drops the summary calls the engine made for that limit (``summarizes``)."""
    loop = [m("u0", "fix it " * 20)]
    for i in range(6):
        loop += [m(f"c{i}", "", role="assistant", tool_calls=[call(f"t{i}")]), m(f"r{i}", f"out {i} " * 60, role="tool", tool_call_id=f"t{i}")]
    worker = compact.gemini_cli_compression()
    decision = {"type": "context.limit", "messages": loop, "proposed": [{"type": "context.replace", "summary": "s"}]}
    assert worker.summary_only_when_kept and worker.replace(loop, decision) is None  # no summary kept: no call billed


# -- presets: when each fires, and with what -------------------------------------------------------------------


def test_the_providers_presets_take_their_sources_knobs_and_refuse_bad_ones():
    from convlab.tuning import presets

    p = presets.anthropic_compaction(trigger=60_000, instructions="Keep the file paths.", pause_after_compaction=True)
    assert p.config.strategies[0].over_tokens == 60_000 and p.config.strategies[0].prompt == "Keep the file paths."
    with pytest.raises(convlab.ConfigError, match=r"presets\.anthropic-compaction\.trigger: .*at least 50,000"):
        presets.anthropic_compaction(trigger=40_000)
    c = presets.anthropic_clear_tool_uses(trigger=80_000, keep=2, clear_at_least=5000, exclude_tools=["Read"], clear_tool_inputs=True)
    assert (c.config.strategies[0].use, c.config.strategies[0].over_tokens) == ("reset", 80_000)
    assert repr(c.worker) == "clear_tool_results(keep=2, clear_at_least=5000, exclude_tools=('Read',), clear_tool_inputs=True)"
    assert presets.anthropic_clear_thinking().config.strategies[0].over_tokens == EVERY_CALL
    assert presets.openai_compaction(compact_threshold=120_000).config.strategies[0].over_tokens == 120_000
    assert [s.use for s in presets.masking_hybrid(window=100_000).config.strategies] == ["summarize", "reset"]
    with pytest.raises(convlab.ConfigError, match=r"presets\.deep-agents\.trigger"):
        presets.deep_agents(trigger=1.5)
    assert convlab.presets("providers,papers") == convlab.presets("providers") + convlab.presets("papers")
    for make, where in ((lambda: presets.anthropic_clear_thinking(keep=-1), "anthropic-clear-thinking: clear_thinking: keep"),
                        (lambda: presets.masking(keep="x"), "masking: observation_masking: keep"),
                        (lambda: presets.anthropic_on_demand(keep_turns=-2), "anthropic-on-demand: summary_turns: keep_turns"),
                        (lambda: presets.anthropic_clear_tool_uses(exclude_tools="Bash"), "anthropic-clear-tool-uses: "
                                                                                          "clear_tool_results: exclude_tools"),
                        (lambda: presets.masking_hybrid(keep_steps=0), "masking-hybrid: summary_steps: keep_steps")):
        with pytest.raises(convlab.ConfigError, match=f"^presets.{where} must be"):
            make()


# -- each compaction's own calls in the bill ---------------------------------------------------------------------


def long_log(turns: int = 8, words: int = 1500, gap: float = 30.0) -> Conversation:
    """An agent log whose turns are ``gap`` seconds apart (inside the cache's 5 minutes), each a question, a tool
    call, a large result and an answer, with usage that grows as the history does."""
    t, parent, clock, read = Tree(), None, 0.0, 0
    for i in range(turns):
        rows = [{"id": f"u{i}", "role": "user", "content": f"task {i} " * 60},
                {"id": f"c{i}", "role": "assistant", "content": "", "tool_calls": [call(f"t{i}")]},
                {"id": f"r{i}", "role": "tool", "tool_call_id": f"t{i}", "content": f"line {i} " * words},
                {"id": f"a{i}", "role": "assistant", "content": f"done {i} " * 30}]
        for row in rows:
            clock += gap / 4
            if row["role"] == "assistant":
                read += 2 * words + 200
                row["usage"] = {"input_tokens": read, "output_tokens": 30}
            t.add({**row, "time": clock}, parent)
            parent = row["id"]
    t.head = parent
    return Conversation(t, id="long")


SUMMARIZE_AT = config({"use": "summarize", "over_tokens": 9000}, window=60000)
RESET_AT = config({"use": "reset", "over_tokens": 9000}, window=60000)


def test_a_shared_summary_call_reads_the_session_s_warm_prefix_and_a_bare_one_pays_it_all():
    c = long_log()
    shared = replay(c, SUMMARIZE_AT, model="claude-sonnet-4-5")
    bare = replay(c, SUMMARIZE_AT, model="claude-sonnet-4-5", summary_request="bare")
    prices = Prices("claude-sonnet-4-5")
    assert shared.summary_calls and len(shared.summary_calls) == len(bare.summary_calls)
    for s, b in zip(shared.summary_calls, bare.summary_calls, strict=True):
        assert s.shared and not b.shared and s.head is not None
        assert s.cached > 0 and b.cached == b.cache_write == 0  # the prefix the session's last call left warm
        assert s.read > b.read  # sent as the engine sends it, it reads the agent's hidden prompt too
        assert s.usd == prices.usd(s.read, s.cached, s.cache_write, s.output)
        assert b.usd == prices.usd(b.read, 0, 0, b.output)
    # a summarizer on another model finds none of the session's cache
    class Haiku(convlab.EchoLLM):  # a summarizer that names its model: another than the session's
        model = "claude-haiku-4-5"

    other = replay(c, SUMMARIZE_AT, model="claude-sonnet-4-5", summarizer=Haiku(), summary_cache=False)
    haiku = Prices("claude-haiku-4-5")
    assert other.summary_calls and all(s.shared for s in other.summary_calls)
    for s in other.summary_calls:
        assert s.cached == s.cache_write == 0 and s.usd == haiku.usd(s.read, 0, 0, s.output)
    m_shared, m_bare = (convlab.tuning.measures.measures(r) for r in (shared, bare))
    assert m_shared["cached"] == sum(x.cached for x in shared.answered()) + sum(s.cached for s in shared.summary_calls)
    assert m_shared["usd"] == pytest.approx(sum(x.usd for x in shared.calls) + sum(s.usd for s in shared.summary_calls))
    with pytest.raises(ValueError, match="summary_request must be 'shared'"):
        replay(c, SUMMARIZE_AT, summary_request="naked")


def test_gemini_cli_s_compaction_is_two_bare_calls_in_the_bill():
    c = long_log()
    r = replay(c, SUMMARIZE_AT, worker=compact.gemini_cli_compression(), model="claude-sonnet-4-5")
    kinds = [s.kind for s in r.summary_calls]
    replaced = sum(1 for x in r.limits if x.replaced and x.summary_tokens is not None)
    assert replaced >= 1 and kinds == ["summary", "verify"] * (len(kinds) // 2) and len(kinds) == 2 * replaced
    prices = Prices("claude-sonnet-4-5")
    for first, second in zip(r.summary_calls[::2], r.summary_calls[1::2], strict=True):
        assert not first.shared and first.cached == first.cache_write == 0  # sent bare: nothing cached
        assert second.read > first.read + first.output and second.output == first.output
        assert second.usd == prices.usd(second.read, 0, 0, second.output) > 0
    row = convlab.tuning.measures.measures(r)
    assert row["summary_calls"] == len(kinds)
    assert row["usd"] == pytest.approx(sum(x.usd for x in r.calls) + sum(s.usd for s in r.summary_calls))


def test_clearing_makes_no_call_keeps_the_prefix_before_the_first_clear_and_pays_the_rewrite_once():
    c = long_log()
    r = replay(c, RESET_AT, worker=compact.clear_tool_results(keep=2), model="claude-sonnet-4-5")
    assert not r.summary_calls
    cleared = [x for x in r.limits if x.replaced]
    assert cleared
    after = r.calls[cleared[0].call - 1]
    before = r.calls[cleared[0].call - 2]
    # the history up to the first result cleared is the one the call before read: found in the cache
    assert after.cached > 0 and after.cache_write > 0 and after.miss_usd > 0
    summary = replay(c, SUMMARIZE_AT, model="claude-sonnet-4-5")
    first = summary.calls[[x for x in summary.limits if x.replaced][0].call - 1]
    assert after.cached > first.cached  # a summary first rewrites the whole history: the cache misses beyond the hidden prompt
    assert before.cache_write <= before.read


def test_the_call_after_a_compaction_writes_the_rewritten_prefix_and_the_bill_holds_it():
    c = long_log()
    for cfg, worker in ((SUMMARIZE_AT, None), (RESET_AT, compact.observation_masking(keep=1)),
                        (SUMMARIZE_AT, compact.openai_compact()), (SUMMARIZE_AT, compact.summary_turns(keep_turns=1))):
        r = replay(c, cfg, worker=worker, model="claude-sonnet-4-5")
        rewrites = [x for x in r.limits if x.replaced]
        assert rewrites, worker
        nxt = r.calls[rewrites[0].call - 1]
        assert nxt.cache_write > 0 and nxt.usd > Prices("claude-sonnet-4-5").usd(nxt.read, nxt.read, 0, nxt.output)


# -- every preset on real sessions -----------------------------------------------------------------------------


@pytest.mark.realdata
@pytest.mark.parametrize(("where", "window"), [("real:claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz", 128_000),
                                               ("agents:pi/large-session.jsonl", 200_000)])
def test_every_preset_runs_in_tune_on_a_real_session_with_its_calls_in_the_bill(where, window):
    import agentdata

    kind, path = where.split(":")
    root = require() if kind == "real" else agentdata.require()
    [conv] = [c for c in convlab.read(root / path, progress=False) if c.source is None or "subagent" not in str(c.id)][:1]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.TuneWarning)
        df = convlab.tune([conv], convlab.presets("all", window=window), model="claude-sonnet-4-5", progress=False)
    assert list(df["preset"]) == list(NAMES)
    rows = df.set_index("preset")
    assert rows["usd"].map(math.isfinite).all()
    # two rules cannot always make room, and at 128k on the Claude Code session they do not: Gemini CLI's splits
    # only before a user's message (a tool loop outgrows the window with none to split at; the CLI could not
    # either, its own window is 1M), and clearing thinking clears only thinking. Every other preset makes room.
    assert set(rows.index[rows["failed_turns"] > 0]) <= {"gemini-cli", "anthropic-clear-thinking"}
    fine = rows[rows["failed_turns"] == 0]
    assert (fine["calls"] == rows.loc["claude-code", "calls"]).all()  # every logged call made under every other preset
    for name in ("anthropic-clear-tool-uses", "anthropic-clear-thinking", "masking"):  # no model call of their own
        assert rows.loc[name, "summary_calls"] == 0 and rows.loc[name, "summaries"] == 0
    for name in ("anthropic-clear-thinking", "masking", "masking-hybrid"):  # applied to every request
        assert rows.loc[name, "limits_full"] >= rows.loc[name, "calls"]
    assert rows.loc["masking", "resets"] > 0  # it masked
    gemini = rows.loc["gemini-cli"]
    assert gemini["summary_calls"] == 2 * gemini["summaries"]  # the snapshot and its self-check, every compaction
    fired = [name for name in NAMES if rows.loc[name, "summaries"] + rows.loc[name, "resets"] > 0]
    assert len(fired) >= 8, fired
    # every figure counts the same calls
    assert (rows["cached"] <= rows["tokens_read"]).all()
    assert (rows["compactions_warm"] <= rows["summaries"] + rows["resets"]).all()


def test_the_picture_of_what_each_compaction_costs_draws_every_figure_of_its_row(tmp_path):
    """Issue 37 (done when: the picture): one bar per preset, its dollars; the warm rewrite drawn apart, as long as
    warm_rewrite_usd; a config that broke turns hatched and saying so; the log as it was, the dashed line."""
    from convlab.tuning import plots

    c = long_log()
    presets = convlab.presets("masking,anthropic-clear-tool-uses,anthropic-compaction", window=20_000)
    df = convlab.tune([c], presets, model="claude-sonnet-4-5", progress=False)
    fig = plots.compaction_costs(df)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_height() == pytest.approx(0.6)]
    blue = [p for p in bars if p.get_facecolor()[:3] != (1.0, 0.4980392156862745, 0.054901960784313725) and p.get_fill()]
    names = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()]
    assert sorted(names) == sorted(df["preset"])
    by_y = {round(p.get_y() + p.get_height() / 2): p for p in blue}
    for t in ax.get_yticklabels():
        row = df.set_index("preset").loc[t.get_text().split("\n")[0]]
        warm = row["warm_rewrite_usd"] if not math.isnan(row["warm_rewrite_usd"]) else 0.0
        assert by_y[round(t.get_position()[1])].get_width() == pytest.approx(row["usd"] - warm)
        n = int(row["summaries"] + row["resets"])
        assert f"{n} compaction" in t.get_text()
    assert [line.get_xdata()[0] for line in ax.lines] == [pytest.approx(df["baseline_usd"].iloc[0])]
    fig.savefig(tmp_path / "costs.png")
    with pytest.raises(KeyError, match="priced with model="):
        plots.compaction_costs(df.drop(columns=["warm_rewrite_usd"]))


# -- found in review ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("worker", [compact.summary_turns(keep_turns=6), compact.summary_steps(keep_steps=10),
                                    compact.offloaded_summary(0.9)])
def test_a_compaction_that_keeps_everything_bills_no_summary_call(worker):
    """Where a summarizing worker would keep the history as it is, its source makes no summary call: the engine's
    calls for that limit are not in the bill, so every summary call billed wrote a summary that was kept."""
    r = replay(long_log(), SUMMARIZE_AT, worker=worker, model="claude-sonnet-4-5")
    kept = sum(1 for x in r.limits if x.replaced and x.summary_tokens is not None)
    assert len(r.limits) > kept  # it declined some limits
    assert len(r.summary_calls) == kept


def test_the_instructions_survive_every_compaction_not_only_the_first():
    s = make(config=config({"use": "summarize", "over_tokens": 40}), worker=compact.openai_compact())
    s.submit(view(history()))
    for i in range(3):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"more {i} " * 20}})
    assert sum(1 for e in s.events if e["type"] == "context.replaced") >= 3
    path = s.path()
    assert path[0]["kind"] == "summary" and path[1]["role"] == "system" and path[1]["content"] == "You are terse."
    assert sum(1 for msg in path if msg["kind"] == "summary") == 1  # the earlier summary is in the new one, not kept


def test_retention_names_who_wrote_each_summary_with_second_passes_and_dropped_calls_in_the_bill():
    r = replay(long_log(turns=12), SUMMARIZE_AT, worker=compact.gemini_cli_compression())
    rows = convlab.retention(r)
    assert len(rows) >= 2 and set(rows.loc[rows["summary"].notna(), "summary"]) == {"stand-in"}


def test_gemini_cli_never_cuts_an_output_into_something_longer():
    one_line = [m("u0", "go"), m("c0", "", role="assistant", tool_calls=[call("t0")]),
                m("r0", "x" * 240_000, role="tool", tool_call_id="t0"), m("a0", "ok", role="assistant"),
                m("u1", "go on"), m("c1", "", role="assistant", tool_calls=[call("t1")]),
                m("r1", "y" * 240_000, role="tool", tool_call_id="t1")]
    worker = compact.gemini_cli_compression()
    assert worker._budgeted(one_line) == one_line  # one line each: cutting to 30 lines would only add a header
    decision = {"type": "context.limit", "messages": one_line, "proposed": []}
    assert worker.replace(one_line, decision) is None


def test_a_group_named_twice_gives_each_preset_once_and_a_typo_names_the_close_one():
    assert [p.name for p in convlab.presets("agents,all")] == list(NAMES)
    with pytest.raises(convlab.ConfigError, match="unknown preset 'maskng' \\(did you mean 'masking'\\? known:"):
        convlab.presets("maskng")


def test_clearing_inputs_leaves_a_call_with_none_as_it_was():
    msgs = [m("u1", "go " * 30), m("a1", "", role="assistant", tool_calls=[{"id": "c1", "type": "function",
                                                                          "function": {"name": "ls", "arguments": {}}}]),
            m("r1", "out " * 80, role="tool", tool_call_id="c1"), m("a2", "done", role="assistant"),
            m("u2", "again " * 30), m("a3", "", role="assistant", tool_calls=[call("c2")]),
            m("r2", "out " * 80, role="tool", tool_call_id="c2")]
    path = answered(compact.clear_tool_results(keep=1, clear_tool_inputs=True), msgs).path()
    a1 = next(msg for msg in path if "c1" in toolcalls.calls(msg))
    assert a1.get("copied_from") is not None  # nothing of it changed: a copy, not a rewritten message


@pytest.mark.realdata
def test_the_command_line_sends_summaries_bare_or_shared_and_writes_idle_secs_against_the_ttl(capsys):
    from test_cli import rows_table

    from convlab.cli import main

    path = require() / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
    rows = {}
    for how in ("shared", "bare"):
        argv = ["tune", str(path), "--grid", "window=128000", "--model", "claude-sonnet-4-5", "--summary-request", how,
                "--rows", "--no-progress", "-q", "--width", "200"]
        assert main(argv) == 0
        head, *lines = [line.split() for line in rows_table(capsys.readouterr().out)]
        rows[how] = dict(zip(head, lines[0], strict=True))
    read = {how: int(r["tokens_read"].replace(",", "")) for how, r in rows.items()}
    usd = {how: float(r["usd"].lstrip("$")) for how, r in rows.items()}
    assert read["shared"] > read["bare"] and usd["shared"] < usd["bare"]  # reads the hidden prompt too, mostly from the cache
    assert main(["tune", str(path), "--grid", "strategy[0].idle_secs=ttl,2*ttl", "--prompt-cache-ttl", "1h", "--rows",
                 "--no-progress", "-q", "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "3600" in out and "7200" in out
