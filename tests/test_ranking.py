"""convlab.rank: the configs of a sweep ranked over every conversation, and the TuneWarnings that say
what misleads (issue 15 part 3)."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import convlab
from convlab.tuning.ranking import RANK_COLUMNS, config_label, grid_keys, short_keys
from convlab.tuning.sweep import tune

from realdata import REAL, require
from test_tuning import BASE, CONVS, hidden_prompt_conv


def test_rank_sums_each_config_over_every_conversation_and_marks_the_pareto_configs():
    """Issue 15 (3): "a per-config ranking across all conversations (tokens saved / baseline against
    summaries and stale replies)"."""
    convs = [hidden_prompt_conv("h1", 12), hidden_prompt_conv("h2", 12, gap=500.0), CONVS[0]]
    df = tune(convs, BASE, grid={"strategy[1].over_tokens": [3000, 6000, 9000, 100000], "strategy[0].idle_secs": [400, 3600]},
              progress=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ranked = convlab.rank(df)
    warned = ranked[ranked["warning"] != ""]
    # one TuneWarning per reason, naming every config it holds for (the full label when it is one config)
    reasons: dict[str, list] = {}
    for _, row in warned.iterrows():
        reasons.setdefault(row["warning"], []).append(row)
    assert [str(w.message) for w in said] == [
        (config_label(rows[0], ["strategy[1].over_tokens", "strategy[0].idle_secs"]) if len(rows) == 1
         else "configs " + ", ".join(str(r["config"]) for r in sorted(rows, key=lambda r: r["config"]))) + ": " + text
        for text, rows in reasons.items()]
    assert len(said) < len(warned)  # configs that say the same are named in one warning
    assert set(warned["config"]) == set(ranked[ranked["limits"] * 2 > ranked["calls"]]["config"]) == {0, 1, 2, 4, 6}
    assert all(w.startswith("fires at most model calls: ") for w in warned["warning"])
    assert list(ranked.columns) == ["config", "strategy[1].over_tokens", "strategy[0].idle_secs", *RANK_COLUMNS]
    assert list(ranked.index) == list(range(1, 9)) and ranked.index.name == "rank"
    for _, row in ranked.iterrows():
        rows = df[df["config"] == row["config"]]
        assert row["conversations"] == 3
        for col in ("calls", "summaries", "resets", "stale", "tokens_read", "baseline_tokens_read"):
            assert row[col] == rows[col].sum()
        assert row["limits"] == (rows["limits_full"] + rows["limits_idle"] + rows["limits_overflow"]).sum()
        assert row["saved"] == pytest.approx(1 - rows["tokens_read"].sum() / rows["baseline_tokens_read"].sum())
    # the Pareto configs: none saves as much with as few rewrites; they come first, by what they save
    cost = ranked["summaries"] + ranked["resets"]
    for i, row in ranked.iterrows():
        better = ranked[(ranked["saved"] >= row["saved"]) & (cost <= cost[i]) & ((ranked["saved"] > row["saved"]) | (cost < cost[i]))]
        assert row["pareto"] == better.empty, row["config"]
    front = ranked[ranked["pareto"]]
    assert 2 <= len(front) < len(ranked) and list(ranked["pareto"]) == [True] * len(front) + [False] * (len(ranked) - len(front))
    assert list(front["saved"]) == sorted(front["saved"], reverse=True)
    assert ranked["saved"].max() > 0 and (ranked["baseline_tokens_read"] == ranked["baseline_tokens_read"].iloc[0]).all()


def test_rank_warns_when_a_threshold_sits_below_the_hidden_prompt():
    """Issue 15 (3): "over_tokens=40000 fired 67 summaries in 217 calls, because the hidden prompt and tools
    alone are ~44k tokens, and nothing says so": a config whose threshold sits below a log's hidden overhead,
    or that fires at most calls, is named in a TuneWarning and in the ranking's warning column."""
    c = hidden_prompt_conv("big", 16, chars=2000, hidden=8000)
    df = tune([c], BASE, grid={"strategy[1].over_tokens": [6000, 12000, 50000]}, progress=False)
    assert (df["overhead"] == 8000).all()
    with pytest.warns(convlab.TuneWarning) as said:
        ranked = convlab.rank(df)
    (warning,) = said
    assert str(warning.message) == (
        "config 0 (window=200000, strategy[1].over_tokens=6000): fires at most model calls: 15 context limits in 16 calls; "
        "its threshold (over_tokens = 6,000) is below the hidden prompt of big (8,000 tokens, measured at 16 calls), which the provider reads at "
        "every call: each call after a summary passes it again (15 summaries in 16 calls there)")
    assert warning.filename == __file__  # said where rank was called
    assert ranked.set_index("config")["warning"].astype(bool).to_dict() == {0: True, 1: False, 2: False}
    # the same log with the hidden prompt given as smaller than the threshold: nothing to say about it
    small = tune([c], BASE, grid={"strategy[1].over_tokens": [12000]}, progress=False, overhead=1000)
    assert (small["overhead"] == 1000).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert convlab.rank(small)["warning"].tolist() == [""]


def test_a_config_that_makes_turns_fail_is_never_a_saving_and_never_ranked():
    """Issue 34 (1): a turn the provider refused as too long is a failure of the config, never a saving: its
    calls count at the log's own figures (every column alike), rank leaves the config out and says so, and
    failed=True ranks it last, off the Pareto front."""
    c = hidden_prompt_conv("wide", 4, chars=2000, hidden=60000)
    df = tune([c], BASE, grid={"window": [50000, 200000]}, progress=False)
    assert df["failed_turns"].tolist() == [4, 0] and df["lost_calls"].tolist() == [4, 0] and df["calls"].tolist() == [0, 4]
    assert df["tokens_read"].iloc[0] == df["baseline_tokens_read"].iloc[0] and df["saved"].tolist() == [0.0, 0.0]
    with pytest.warns(convlab.TuneWarning) as said:
        ranked = convlab.rank(df)
    (warning,) = said
    assert str(warning.message).startswith("1 config left out of the ranking, because a config that breaks turns is no answer: "
                                           "config 0 (window=50000): 4 turns failed in wide (the provider refused a call")
    assert warning.message.left_out == {0: ranked.attrs["left_out"][0]} and ranked["config"].tolist() == [1]
    with pytest.warns(convlab.TuneWarning, match=r"config 0 \(window=50000\): .*4 turns failed in wide") as said:
        shown = convlab.rank(df, failed=True)
    assert not said[0].message.left_out  # about a config it ranks
    assert shown["config"].tolist() == [1, 0] and shown["pareto"].tolist() == [True, False]
    assert shown.set_index("config").loc[0, "failed_turns"] == 4 and shown.attrs["left_out"] == {}
    with pytest.raises(TypeError, match="rank: failed is True"):
        convlab.rank(df, failed="yes")


def test_rank_reads_a_frame_back_from_csv_and_refuses_other_frames(tmp_path):
    df = tune(CONVS, BASE, grid={"strategy[1].over_tokens": [5000, 100000]}, progress=False)
    df.to_csv(tmp_path / "sweep.csv", index=False)
    again = convlab.rank(pd.read_csv(tmp_path / "sweep.csv"))
    pd.testing.assert_series_equal(again["saved"], convlab.rank(df)["saved"])
    assert list(again["config"]) == list(convlab.rank(df)["config"]) == [0, 1]
    with pytest.raises(KeyError, match="rank takes the frame convlab.tune returns; this one has no column 'baseline_tokens_read'"):
        convlab.rank(df.drop(columns=["baseline_tokens_read"]))


@pytest.mark.realdata
def test_rank_warns_on_the_real_session_whose_threshold_is_below_its_hidden_prompt():
    """Issue 15 (3), the real case: on the long Claude Code session a threshold below the hidden prompt and tools
    fires a summary at nearly every call; now the ranking says so. The hidden prompt is the fitted one (~30k:
    26k on its main log root), not the logged input less the transcript (42k: the Haiku tokenizer's surplus
    over o200k_base, 1.49 tokens a token, grows with the history); at over_tokens 40,000 it no longer fires
    at every other call (46 summaries, not the 67 that the surplus carried past each summary made)."""
    require()
    c = convlab.read(REAL / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz")[0]
    df = tune([c], BASE, grid={"strategy[1].over_tokens": [20000, 40000, 100000]}, progress=False)
    assert df["summaries"].tolist() == [215, 46, 2] and df["calls"].tolist() == [217] * 3
    assert df["overhead"].tolist() == [30526] * 3 and df["source"].tolist() == [c.source] * 3
    assert df["usage_growth"].round(2).tolist() == [1.49] * 3
    with pytest.warns(convlab.TuneWarning) as said:
        ranked = convlab.rank(df)
    assert [str(w.message) for w in said] == [
        "config 0 (window=200000, strategy[1].over_tokens=20000): fires at most model calls: 215 context limits in 217 calls; "
        "its threshold (over_tokens = 20,000) is below the hidden prompt of ae4a77f8-aedd-4bc1-888f-c94edc91af04 (30,526 tokens, "
        "measured at 217 calls), which the provider reads at every call: each call after a summary passes it again "
        "(215 summaries in 217 calls there)"]
    # a summary sent as the engine sends it reads the hidden prompt too (issue 37): 215 of them save less than 46
    assert ranked["config"].tolist() == [1, 2, 0] and ranked["pareto"].tolist() == [True, True, False]


def test_grid_keys_labels_and_short_names():
    df = tune(CONVS[:1], BASE, grid={"strategy[1].over_tokens": [3000], "window": [64000]}, progress=False)
    assert grid_keys(df) == ["strategy[1].over_tokens"]  # the window has its own column
    keys = ["strategy[0].over_tokens", "strategy[1].over_tokens", "strategy[1].idle_secs"]
    assert short_keys(keys) == {"strategy[0].over_tokens": "[0].over_tokens", "strategy[1].over_tokens": "[1].over_tokens",
                                "strategy[1].idle_secs": "idle_secs"}
    row = {"config": 2.0, "window": float("nan"), "strategy[0].over_tokens": 3000.0}
    assert config_label(row, ["strategy[0].over_tokens"]) == "config 2 (strategy[0].over_tokens=3000)"
    with pytest.raises(KeyError, match="not a frame of convlab.tune: it has no column 'window'"):
        grid_keys(pd.DataFrame(columns=["config"]))


# -- floors (issue 23 part 2) -------------------------------------------------------------
def scored(retained, facts_kept):
    """A tune frame of three configs over two conversations, with retained and facts_kept per row."""
    n = len(retained)
    return pd.DataFrame({"conversation": ["c1", "c2"] * (n // 2), "source": ["c.jsonl"] * n, "config": [i // 2 for i in range(n)],
                         "window": [200000] * n, "strategies": ["reset"] * n, "threshold": [184000] * n, "calls": [10] * n,
                         "limits_full": [1] * n, "limits_idle": [0] * n, "limits_overflow": [0] * n, "summaries": [0] * n,
                         "resets": [1] * n, "stale": [0] * n, "failed_turns": [0] * n,
                         "tokens_read": [4e5 + 1e5 * (i // 2) for i in range(n)], "baseline_tokens_read": [1e6] * n,
                         "overhead": [0] * n, "retained": retained, "facts_kept": facts_kept})


def test_rank_leaves_out_the_configs_below_a_floor_and_says_why():
    df = scored([1.0, 0.8, 0.5, 0.7, float("nan"), float("nan")], [1.0, 1.0, 0.9, float("nan"), 1.0, 1.0])
    ranked = convlab.rank(df, min_retained=0.9)  # config 0's mean is 0.9: kept (a floor is reached, not passed)
    assert list(ranked["config"]) == [0] and ranked["retained"].tolist() == [pytest.approx(0.9)]
    assert ranked.attrs["left_out"] == {1: "retained 0.6 < 0.9", 2: "retained NaN (nothing counted)"}
    assert list(ranked.columns) == ["config", *RANK_COLUMNS[:RANK_COLUMNS.index("saved") + 1], "retained",
                                    *RANK_COLUMNS[RANK_COLUMNS.index("saved") + 1:]]
    both = convlab.rank(df, min_retained=0.5, min_facts_kept=0.95)
    assert list(both["config"]) == [0] and both.attrs["left_out"] == {1: "facts_kept 0.9 < 0.95", 2: "retained NaN (nothing counted)"}
    assert bool(both["pareto"].iloc[0])  # the Pareto front is of the configs kept
    assert convlab.rank(df, min_facts_kept=0.0)["facts_kept"].tolist() == [1.0, pytest.approx(0.9), 1.0]  # NaN rows not counted
    nothing = convlab.rank(df, min_retained=1.0)
    assert nothing.empty and sorted(nothing.attrs["left_out"]) == [0, 1, 2]
    assert convlab.rank(df).attrs["left_out"] == {}


@pytest.mark.parametrize("floor", [1.5, -0.1, "0.9", float("nan"), True])
def test_a_floor_that_is_not_a_share_is_a_clear_error(floor):
    with pytest.raises(ValueError, match=r"min_retained must be a share from 0 to 1, got"):
        convlab.rank(scored([1.0] * 6, [1.0] * 6), min_retained=floor)


def test_a_floor_on_a_frame_without_its_scores_names_the_column():
    df = scored([1.0] * 6, [1.0] * 6)
    with pytest.raises(ValueError, match=r"needs scores in the frame's 'retained' column \(tune\(\.\.\., judge=llm\) makes them\); this frame has none"):
        convlab.rank(df.drop(columns=["retained"]), min_retained=0.9)
    with pytest.raises(ValueError, match=r"'facts_kept' column .*has only NaN there"):
        convlab.rank(df.assign(facts_kept=float("nan")), min_facts_kept=0.5)


@pytest.mark.realdata
def test_on_real_sessions_the_config_ranked_first_breaks_no_turn_and_every_row_agrees_with_itself():
    """Issue 34 (1), on the real Claude Code sessions it came from: windows of 24k and 32k sit below their hidden
    prompts, so calls are refused and turns fail. Every row counts the same calls (cached never above tokens_read,
    a failed config's saving never a saving), and no config that broke a turn is ranked, by tokens or by dollars."""
    real = require()
    convs = [c for name in ("tool_heavy.jsonl", "subagent.jsonl", "short.jsonl")
             for c in convlab.read(real / "claude_code" / name)]
    df = tune(convs, BASE, grid={"window": [24000, 32000, 48000, 128000]}, model="claude-sonnet-4-5", progress=False,
              jobs=1)
    assert (df["cached"] <= df["tokens_read"]).all() and (df["cache_write"] <= df["tokens_read"] - df["cached"]).all()
    assert (df["cached_share"].between(0, 1)).all() and (df["calls"] + df["lost_calls"] == df.groupby("conversation")["calls"].transform("max")).all()
    failed = df[df["failed_turns"] > 0]
    assert set(failed["window"]) == {24000} and (failed["lost_calls"] > 0).all()
    assert (failed["tokens_read"] >= failed["baseline_tokens_read"]).all() and (failed["usd"] >= failed["baseline_usd"] - 1e-9).all()
    for by in ("tokens", "usd"):
        with pytest.warns(convlab.TuneWarning):
            ranked = convlab.rank(df, by=by)
        assert ranked.iloc[0]["failed_turns"] == 0 and (ranked["failed_turns"] == 0).all()
        assert set(ranked.attrs["left_out"]) == set(failed["config"])


# -- issue 40 (3): a grid of thousands of configs is ranked in n log n -----------------------------------------


def _dominated_pairwise(saved, rewrites, i):
    """The Pareto rule as it reads, every pair compared (the reference)."""
    s, r = saved[i], rewrites[i]
    return math.isnan(s) or any(j != i and not math.isnan(t) and t >= s and q <= r and (t > s or q < r)
                                for j, (t, q) in enumerate(zip(saved, rewrites, strict=True)))


@given(st.lists(st.tuples(st.one_of(st.sampled_from([0.0, 0.25, 0.5, -0.1, float("nan")]), st.floats(-1, 1)),
                          st.integers(0, 6)), max_size=40))
def test_the_pareto_front_in_one_sort_is_the_pairwise_rule(points):
    import pandas as pd

    from convlab.tuning.ranking import _undominated

    saved, rewrites = [p[0] for p in points], [p[1] for p in points]
    assert _undominated(pd.Series(saved, dtype=float), pd.Series(rewrites)) == \
        [not _dominated_pairwise(saved, rewrites, i) for i in range(len(points))]


def _grid_frame(n_configs, n_conversations=3):
    """A tune frame of ``n_configs`` configs over ``n_conversations`` conversations, every fourth config firing at
    most calls with a threshold below the hidden prompt (a warning each), every tenth breaking a turn."""
    import pandas as pd

    rows = []
    for j in range(n_configs):
        for c in range(n_conversations):
            fires = j % 4 == 0
            rows.append({"conversation": f"c{c}", "source": f"c{c}.jsonl", "config": j, "window": 20000 + 100 * j,
                         "strategies": "summarize", "threshold": 4000 + 100 * j, "calls": 40, "limits_full": 30 if fires else j % 3,
                         "limits_idle": 0, "limits_overflow": 0, "summaries": 30 if fires else j % 3, "resets": 0,
                         "stale": j % 5, "tokens_read": 10_000 + (j * 7919) % 5000, "baseline_tokens_read": 15_000,
                         "failed_turns": int(j % 10 == 9), "lost_calls": 2 * int(j % 10 == 9), "overhead": 30_000,
                         "overhead_calls": 40})
    return pd.DataFrame(rows)


def test_ranking_a_grid_grows_linearly_in_work_not_with_its_square(monkeypatch):
    """Issue 40 (3): "1,000 configs take 7 s, 3,000 take 49 s (quadratic), 10,000 did not finish in 400 s": the
    ranking reads each config's rows once. Counted, not timed: the rows a config's warning and breakage are
    worked out from, over the grid, grow with the grid (a scan per config made them grow with its square)."""
    import pandas as pd

    from convlab.tuning import ranking

    seen = []
    for name in ("_warning", "_breaks"):
        original = getattr(ranking, name)

        def counting(config, *args, _original=original):
            rows = args[-1]
            seen.append(len(rows))
            return _original(config, *args)
        monkeypatch.setattr(ranking, name, counting)
    scans = []
    original_eq = pd.Series.__eq__

    def eq(self, other):
        if self.name == "config":
            scans.append(len(self))
        return original_eq(self, other)
    monkeypatch.setattr(pd.Series, "__eq__", eq)
    work = {}
    for n in (200, 800):
        seen.clear(), scans.clear()
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            ranked = ranking.rank(_grid_frame(n))
        work[n] = sum(seen) + sum(scans)
        assert len(ranked) == n - n // 10 and len(ranked.attrs["left_out"]) == n // 10
        assert all(len(str(w.message)) < 2000 for w in said), "a warning names a few configs and says how many more"
    assert work[800] <= 4 * work[200] * 1.1, work  # four times the configs: four times the work, not sixteen
