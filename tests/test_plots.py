"""convlab.tuning.plots: Figures, no pyplot, no global backend change."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from convlab.tuning import plots
from convlab.conversation import Conversation
from convlab.replaying.driver import replay
from convlab.tree import Tree


def conv(n_turns=8, chars=4000):
    t = Tree()
    parent = None
    for i in range(n_turns):
        t.add({"id": f"u{i}", "role": "user", "content": "x" * chars, "time": 100.0 * i}, parent)
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": 100.0 * i + 1,
               "usage": {"input_tokens": 1000 * (i + 1), "output_tokens": 2}}, f"u{i}")
        parent = f"a{i}"
    t.head = parent
    return Conversation(t, id="c")


CONFIG = """
[agent.bot.context]
window = 20000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
"""


def test_count_per_call_draws_the_count_the_line_and_each_decision(tmp_path):
    r = replay(conv(), CONFIG)  # window - 16000 = 4000: summaries fire
    assert r.limits
    fig = plots.count_per_call(r)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    count, line = ax.get_lines()
    assert list(count.get_ydata()) == [c["count"] for c in r.calls]
    assert set(line.get_ydata()) == {4000}
    (marks,) = ax.collections
    assert [tuple(p) for p in marks.get_offsets()] == [(x["call"], x["tokens"]) for x in r.limits]
    assert "context.limit (full)" in [t.get_text() for t in ax.get_legend().get_texts()][-1]
    fig.savefig(tmp_path / "count.png")
    assert (tmp_path / "count.png").stat().st_size > 5000


def test_error_distribution_has_both_references():
    r = replay(conv())
    fig = plots.error_distribution(r)
    a, b = fig.axes
    assert a.get_title() == f"count - exact (n={len(r.calls)})"
    assert b.get_title() == f"count - logged usage (n={len(r.calls)})"
    assert sum(p.get_height() for p in a.patches) == len(r.calls)


def test_sweep_heatmap_aggregates_and_labels_cells():
    df = pd.DataFrame({"window": [64000, 64000, 128000, 128000] * 2, "idle": [60, 600, 60, 600] * 2,
                       "summaries": [3, 2, 1, 0, 1, 1, 1, 1]})
    fig = plots.sweep_heatmap(df, "idle", "window", "summaries")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["4", "3", "2", "1"]
    assert ax.images[0].get_array().tolist() == [[4.0, 3.0], [2.0, 1.0]]
    try:
        plots.sweep_heatmap(df, "nope", "window")
    except KeyError as err:
        assert "no column 'nope'" in str(err)
    else:
        raise AssertionError("a missing column must raise KeyError")


def test_sweep_heatmap_writes_the_cost_under_each_value():
    """Tokens read alone make the smallest window look best: the cost beside them shows the price (issue 15)."""
    df = pd.DataFrame({"window": [64000, 64000, 128000, 128000] * 2, "idle": [60, 600, 60, 600] * 2,
                       "tokens_read": [900, 800, 1500, 1400] * 2, "rewrites": [13, 12, 1, 0] * 2})
    fig = plots.sweep_heatmap(df, "idle", "window", cost="rewrites")
    assert [t.get_text() for t in fig.axes[0].texts] == ["1,800\nrewrites: 26", "1,600\nrewrites: 24",
                                                         "3,000\nrewrites: 2", "2,800\nrewrites: 0"]
    assert fig.get_suptitle().replace("\n", " ") == "tokens_read and rewrites by window and idle"
    assert _inside(fig)
    with pytest.raises(KeyError, match="no column 'resets'"):
        plots.sweep_heatmap(df, "idle", "window", cost="resets")


def test_sweep_heatmap_shows_an_unknown_value_as_unknown_never_0():
    """``facts_kept`` is NaN where a config measured nothing: its cell says so, it is not summed to 0 (pandas' sum of
    NaN) and takes no colour, so no unknown looks like the worst or the best."""
    df = pd.DataFrame({"window": [64000, 64000, 128000, 128000] * 2, "idle": [60, 600, 60, 600] * 2,
                       "facts_kept": [0.25, float("nan"), 0.5, 0.75, 0.25, float("nan"), float("nan"), 0.75]})
    fig = plots.sweep_heatmap(df, "idle", "window", "facts_kept")
    ax = fig.axes[0]
    grid = ax.images[0].get_array()
    assert grid[0, 0] == 0.5 and grid[1, 0] == 0.5 and grid[1, 1] == 1.5
    assert bool(np.ma.getmaskarray(grid)[0, 1]) or math.isnan(float(grid.data[0, 1]))  # no value drawn
    texts = [t.get_text() for t in ax.texts]
    assert "facts_kept: unknown\n(nothing to measure)" in texts and "0" not in texts


def test_importing_and_plotting_leaves_pyplot_and_the_backend_alone():
    code = (
        "import sys, matplotlib; before = matplotlib.get_backend(); "
        "from convlab.tuning import plots; import pandas as pd; "
        "plots.sweep_heatmap(pd.DataFrame({'a': [1], 'b': [2], 'tokens_read': [3]}), 'a', 'b'); "
        "print('pyplot' if 'matplotlib.pyplot' in sys.modules else 'no pyplot', before == matplotlib.get_backend())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"MPLBACKEND": "svg", "PATH": ""})
    assert out.stdout.split() == ["no", "pyplot", "True"]


# -- what a person sees -------------------------------------------------------


def _inside(fig):
    """The drawn figure's tight box (every artist drawn: titles, tick labels, legends, the colorbar) lies inside it."""
    fig.canvas.draw()
    bb = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    w, h = fig.get_size_inches()
    slack = 0.02
    return bb.x0 >= -slack and bb.y0 >= -slack and bb.x1 <= w + slack and bb.y1 <= h + slack


def _drawn(ax):
    """The x tick labels drawn: those within the view (the locator may place more)."""
    lo, hi = sorted(ax.get_xlim())
    return [t for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi and t.get_text()]


def _overlapping(ax):
    """Pairs of x tick labels, among those drawn, that overlap."""
    ticks = _drawn(ax)
    boxes = sorted((t.get_window_extent() for t in ticks if t.get_visible() and t.get_text()), key=lambda b: b.x0)
    return [(a, b) for a, b in zip(boxes, boxes[1:]) if a.x1 > b.x0]


def test_a_narrow_heatmap_keeps_its_whole_title():
    df = pd.DataFrame({"strategy[1].over_tokens": [500, 1000] * 2, "strategy[0].idle_secs": [600, 600, 3600, 3600],
                       "summaries + resets": [52, 34, 40, 22]})
    for title in (None, "how often a strategy rewrote the history, over every chat log of the sweep"):
        fig = plots.sweep_heatmap(df, "strategy[0].idle_secs", "strategy[1].over_tokens", "summaries + resets", title=title)
        assert _inside(fig)
        assert fig.get_suptitle().replace("\n", " ") == (title or "summaries + resets by strategy[1].over_tokens and strategy[0].idle_secs")
    big = pd.DataFrame({"window": [64000, 128000], "idle": [600, 600], "tokens_read": [9_420_082, 16_790_991]})
    fig = plots.sweep_heatmap(big, "idle", "window")
    assert _inside(fig)
    assert [t.get_text() for t in fig.axes[0].texts] == ["9,420,082", "16,790,991"]
    assert _overlapping(fig.axes[0]) == []


def test_error_distribution_ticks_do_not_overlap_on_a_wide_range():
    calls = [{"count": 1000 * i, "exact": 0, "logged": 45_000 if i % 7 else 1000 * i + 5, "applies": True} for i in range(70)]
    fig = plots.error_distribution(calls, title="wide")
    fig.canvas.draw()
    for ax in fig.axes:
        drawn = [t.get_text() for t in _drawn(ax)]
        assert 3 <= len(drawn) <= 8, drawn
        assert _overlapping(ax) == []
    assert _inside(fig)


def test_count_per_call_fits_its_figure():
    assert _inside(plots.count_per_call(replay(conv(), CONFIG)))


def test_figures_render_themselves_as_png_for_jupyter():
    fig = plots.sweep_heatmap(pd.DataFrame({"a": [1], "b": [2], "tokens_read": [3]}), "a", "b")
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert isinstance(fig, Figure) and repr(fig).startswith("<Figure size ")


def test_a_plot_shows_inline_in_a_real_kernel_without_matplotlib_inline():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import sys, pandas as pd\n"
        "from convlab.tuning import plots\n"
        "fig = plots.sweep_heatmap(pd.DataFrame({'a': [1], 'b': [2], 'tokens_read': [3]}), 'a', 'b')\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
        "fig"
    )]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    assert [o.get("text") for o in outputs if o.output_type == "stream"] == ["False\n"]
    (result,) = [o for o in outputs if o.output_type == "execute_result"]
    assert "image/png" in result.data and result.data["text/plain"].startswith("<Figure size ")


# -- the trade-off (issue 15 part 3) ------------------------------------------------


def compacted_conv():
    """A log that compacted itself (a summary root) after its fourth reply."""
    t = Tree()
    parent = None
    for i in range(4):
        t.add({"id": f"u{i}", "role": "user", "content": "x" * 4000, "time": 100.0 * i}, parent)
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": 100.0 * i + 1,
               "usage": {"input_tokens": 1000 * (i + 1), "output_tokens": 2}}, f"u{i}")
        parent = f"a{i}"
    t.add({"id": "sum", "role": "user", "content": "The story so far.", "kind": "summary", "replaces": "a3", "time": 401.0}, None)
    parent = "sum"
    for i in range(4, 7):
        t.add({"id": f"u{i}", "role": "user", "content": "y" * 4000, "time": 100.0 * i}, parent)
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": 100.0 * i + 1,
               "usage": {"input_tokens": 500 * (i - 2), "output_tokens": 2}}, f"u{i}")
        parent = f"a{i}"
    t.head = parent
    return Conversation(t, id="c")


def test_count_per_call_marks_where_the_log_compacted(tmp_path):
    """Issue 15 (3): "the count-per-call plot marks where the log itself compacted": a vertical line just
    before the first call that reads the compacted history, in the legend and labelled on the plot."""
    r = replay(compacted_conv())
    assert [c["call"] for c in r.compactions] == [5]
    ax = plots.count_per_call(r).axes[0]
    (mark,) = [line for line in ax.get_lines() if line.get_label().startswith("the log compacted")]
    assert list(mark.get_xdata()) == [4.5, 4.5] and mark.get_label() == "the log compacted: before call 5"
    assert "the log compacted: before call 5" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert [t.get_text() for t in ax.texts] == ["log compacted"] and ax.texts[0].xy[0] == 4.5
    assert _inside(ax.figure)
    # no compaction in the log: no mark
    plain = plots.count_per_call(replay(conv()))
    assert not any(line.get_label().startswith("the log compacted") for line in plain.axes[0].get_lines())
    assert len(plain.axes[0].texts) == 0


def test_sweep_pareto_marks_and_labels_the_configs_nothing_beats(tmp_path):
    """Issue 15 (3): "a Pareto plot (tokens saved vs summaries) beside the heatmap": every config a point,
    the non-dominated ones marked, joined and labelled; configs with the same figures share a label."""
    ranked = pd.DataFrame({
        "config": [0, 1, 2, 3, 4], "strategy[1].over_tokens": [3000, 6000, 9000, 12000, 50000],
        "window": [200000] * 5, "summaries": [40, 12, 12, 30, 0], "resets": [0, 1, 3, 0, 0],
        "saved": [0.52, 0.40, 0.40, 0.31, 0.0], "pareto": [True, True, False, False, True]})
    fig = plots.sweep_pareto(ranked)
    ax = fig.axes[0]
    grey, red = ax.collections
    assert sorted(map(tuple, red.get_offsets())) == [(0, 0.0), (13, 40.0), (40, 52.0)]
    assert sorted(map(tuple, grey.get_offsets())) == [(15, 40.0), (30, 31.0)]
    assert sorted(t.get_text() for t in ax.texts) == [
        "config 0 (window=200000, over_tokens=3000)", "config 1 (window=200000, over_tokens=6000)",
        "config 4 (window=200000, over_tokens=50000)"]
    front = [line for line in ax.get_lines() if line.get_drawstyle() == "steps-post"]
    assert len(front) == 1 and list(front[0].get_xdata()) == [0, 13, 40]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [  # the legend names the axes it used (issue 34)
        "the baseline: no strategy", "other configs: 2",
        "Pareto configs: 3 (none saves more tokens\nwith as few summaries + resets)"]
    assert ax.get_xlabel().startswith("summaries + resets") and ax.get_ylabel().startswith("tokens read, saved")
    assert _inside(fig)
    fig.savefig(tmp_path / "pareto.png")
    assert (tmp_path / "pareto.png").stat().st_size > 10_000


def test_sweep_pareto_of_a_tune_frame_ranks_it_and_shares_labels():
    """Given the tune frame, the plot ranks it; configs that made the same figures share one point's label."""
    import convlab

    c = conv(12)
    df = convlab.tune([c], CONFIG, grid={"window": [20000, 24000, 200000]}, progress=False)
    ranked = convlab.rank(df)
    ax = plots.sweep_pareto(df).axes[0]
    assert len(ax.texts) == len(ranked[ranked["pareto"]].drop_duplicates(["summaries", "resets", "saved"]))
    assert any(t.get_text() == "config 2 (window=200000)" for t in ax.texts)
    with pytest.raises(KeyError, match="sweep_pareto takes what convlab.rank returns"):
        plots.sweep_pareto(pd.DataFrame({"pareto": [True]}))


def _label_boxes(ax):
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in ax.texts]


def test_sweep_pareto_labels_never_overlap():
    """Issue 20: "the Pareto plot's labels must not overlap (configs 0 and 1 sat on each other)": six Pareto
    configs in three close pairs; every label clear of the others, of the other points and of the legend,
    inside the axes."""
    ranked = pd.DataFrame({
        "config": [0, 1, 2, 3, 4, 5], "strategy[0].idle_secs": [600, 3600, 600, 3600, 600, 3600],
        "window": [64000, 64000, 96000, 96000, 128000, 200000], "summaries": [13, 14, 3, 4, 1, 0], "resets": [0] * 6,
        "saved": [0.44, 0.435, 0.19, 0.185, 0.10, 0.0], "pareto": [True] * 6})
    fig = plots.sweep_pareto(ranked)
    ax = fig.axes[0]
    boxes = _label_boxes(ax)
    assert len(boxes) == 6
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6) if boxes[i].overlaps(boxes[j])]
    assert pairs == []
    frame, legend = ax.get_window_extent(), ax.get_legend().get_window_extent()
    (red,) = [c for c in ax.collections if len(c.get_offsets()) == 6]
    dots = [ax.transData.transform(p) for p in red.get_offsets()]
    for text, box in zip(ax.texts, boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, text.get_text()
        assert not box.overlaps(legend), text.get_text()
        own = ax.transData.transform(text.xy)
        assert not any(box.contains(*d) for d in dots if tuple(d) != tuple(own)), text.get_text()
    assert _inside(fig)


@pytest.mark.realdata
def test_the_pareto_plot_of_the_real_session_has_no_overlapping_label(tmp_path):
    """What `convlab tune` with no config draws for the real Claude Code session: its labels apart."""
    import convlab
    from realdata import REAL, require

    require()
    c = convlab.read(REAL / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz", progress=False)[0]
    base = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'reset'\nidle_secs = 600\n[[agent.bot.context.strategy]]\nuse = 'summarize'\n"
    df = convlab.tune([c], base, grid={"window": [64000, 80000, 96000, 128000], "strategy[0].idle_secs": [600, 3600]}, progress=False)
    ax = plots.sweep_pareto(convlab.rank(df)).axes[0]
    boxes = _label_boxes(ax)
    assert [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])] == []


def test_count_per_call_legend_counts_what_it_marks():
    """Issue 20: "the count-per-call plot's legend counts what it marks (it drew 6 ✖ under "overflow: 3")": on a
    replay with limits of every reason (full, idle, and overflows whose turns failed), each legend entry's number
    is the number of its markers, one per context.limit of that reason, each at its own call."""
    import re

    t = Tree()
    parent = None
    for i in range(10):
        time = 10.0 * i + (5000.0 if i >= 3 else 0.0)  # idle once, before the fourth turn
        t.add({"id": f"u{i}", "role": "user", "content": "x" * 3000, "time": time}, parent if i != 6 else None)
        big = 30_000 if i >= 6 else 1000 * (i + 1)  # from u6 on, a new root whose logged reads pass the window
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": time + 1,
               "usage": {"input_tokens": big, "output_tokens": 2}}, f"u{i}")
        parent = f"a{i}"
    t.head = parent
    cfg = "[agent.bot.context]\nwindow = 20000\n[[agent.bot.context.strategy]]\nuse = 'reset'\nidle_secs = 4000\n" \
          "[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 2500\n"
    r = replay(Conversation(t, id="c"), cfg)
    reasons = {x["reason"] for x in r.limits}
    assert reasons == {"full", "idle", "overflow"}, r.limits
    ax = plots.count_per_call(r).axes[0]
    legend = ax.get_legend()
    entries = {text.get_text(): handle for text, handle in zip(legend.get_texts(), legend.legend_handles)}
    for reason in reasons:
        (label,) = [k for k in entries if k.startswith(f"context.limit ({reason})")]
        n = int(re.search(r": (\d+)$", label).group(1))
        (marks,) = [c for c in ax.collections if c.get_label() == label]
        offsets = [tuple(p) for p in marks.get_offsets()]
        assert n == len(offsets) == len(set(offsets)) == sum(1 for x in r.limits if x["reason"] == reason), (reason, n, offsets)


def test_the_pareto_plot_puts_dollars_on_its_axis_for_a_ranking_by_usd():
    """Issue 22: rank(df, by="usd") ranks by the share of dollars saved, and sweep_pareto draws that share."""
    import pandas as pd

    import convlab
    from convlab.tuning.plots import sweep_pareto

    df = pd.DataFrame({"conversation": ["c"] * 3, "source": ["c.jsonl"] * 3, "config": [0, 1, 2],
                       "window": [64000, 128000, 200000], "strategies": ["summarize"] * 3, "worker": [None] * 3,
                       "threshold": [48000, 112000, 184000], "calls": [200] * 3, "limits_full": [20, 2, 0],
                       "limits_idle": [0] * 3, "limits_overflow": [0] * 3, "summaries": [20, 2, 0], "resets": [0] * 3,
                       "stale": [150, 40, 0], "tokens_read": [4e6, 7.5e6, 10e6], "baseline_tokens_read": [10e6] * 3,
                       "failed_turns": [0] * 3, "overhead": [3000] * 3, "overhead_calls": [180] * 3,
                       "usd": [9.0, 6.0, 5.0], "baseline_usd": [5.0] * 3})
    ranked = convlab.rank(df, by="usd")
    assert ranked.attrs["by"] == "usd" and ranked["config"].tolist() == [2, 1, 0]  # the fewest tokens costs the most
    assert ranked["saved_usd"].round(2).tolist() == [0.0, -0.2, -0.8] and ranked["usd_saved"].tolist() == [0.0, -1.0, -4.0]
    assert ranked["pareto"].tolist() == [True, False, False]
    ax = sweep_pareto(ranked).axes[0]
    assert ax.get_ylabel() == "dollars, saved against the baseline"
    ys = sorted(round(float(y), 6) for coll in ax.collections for _, y in coll.get_offsets())
    assert ys == [-80.0, -20.0, 0.0]
    tokens = convlab.rank(df)
    assert tokens.attrs["by"] == "tokens" and tokens["config"].tolist() == [0, 1, 2] and "usd" not in tokens.columns
    with pytest.raises(ValueError, match="by must be one of"):
        convlab.rank(df, by="dollars")
    with pytest.raises(ValueError, match="needs a sweep priced in dollars"):
        convlab.rank(df.drop(columns=["usd"]), by="usd")


def test_sweep_retention_plots_each_scored_config_and_says_what_it_left_out():
    """Issue 23: configs compared on dollars and on what they keep, in one picture."""
    import math

    import convlab
    from convlab.tuning.compact import clear_tool_results, sliding_window

    base = "[agent.bot.context]\nwindow = 200000\n[[agent.bot.context.strategy]]\nuse = 'reset'\nover_tokens = 3000\n"
    # clear_tool_results on a chat with no tool results drops nothing: that config has no score
    workers = [None, sliding_window(keep_turns=2), sliding_window(keep_turns=4), clear_tool_results(keep=1)]
    t, parent = Tree(), None
    for i in range(8):  # each question states facts: a path, a number with its unit, a time
        t.add({"id": f"u{i}", "role": "user", "content": f"step {i}: read src/mod{i}.py, {i + 10} ms at 12:{i:02d} " + "x" * 4000,
               "time": 100.0 * i}, parent)
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": 100.0 * i + 1,
               "usage": {"input_tokens": 1000 * (i + 1), "output_tokens": 2}}, f"u{i}")
        parent = f"a{i}"
    t.head = parent
    df = convlab.tune([Conversation(t, id="c")], base, grid={"worker": workers}, model="claude-sonnet-4-5",
                      progress=False, jobs=1)
    scored = df[df["facts_kept"].notna()]
    assert len(scored) == 3 and math.isnan(df["facts_kept"].iloc[3])
    ax = plots.sweep_retention(df, log=0.25).axes[0]
    points = ax.collections[-1].get_offsets()
    assert sorted(map(tuple, points.tolist())) == sorted(zip(scored["usd"], scored["facts_kept"] * 100, strict=True))
    labels = [t.get_text() for t in ax.texts]
    assert "the log's own" in labels and len(labels) == 4
    assert " ".join(ax.get_title().split()) == "what each config keeps, against what it costs (1 config with no score left out)"
    assert math.isclose(ax.lines[0].get_xdata()[0], df["baseline_usd"].iloc[0])
    with pytest.raises(KeyError, match="'retained'"):
        plots.sweep_retention(df, kept="retained")


def test_the_pareto_plot_leaves_out_or_marks_the_configs_that_break_turns():
    """Issue 34 (1): every plot leaves out (or, asked, marks) a config whose turns failed, and says so; in dollars
    its legend says dollars."""
    import convlab

    from test_ranking import BASE, hidden_prompt_conv

    c = hidden_prompt_conv("wide", 4, chars=2000, hidden=60000)
    df = convlab.tune([c], BASE, grid={"window": [50000, 200000]}, progress=False, model="claude-sonnet-4-5")
    with pytest.warns(convlab.TuneWarning):
        ranked = convlab.rank(df, by="usd")
    ax = plots.sweep_pareto(ranked).axes[0]
    assert " ".join(ax.get_title().split()) == ("what each config saves in dollars, against how often it rewrites "
                                                "(1 config left out: they broke turns)")
    assert [t.get_text() for t in ax.texts] == ["config 1 (window=200000)"]
    assert "Pareto configs: 1 (none saves more dollars" in ax.get_legend().get_texts()[-1].get_text()
    with pytest.warns(convlab.TuneWarning):
        shown = convlab.rank(df, by="usd", failed=True)
    ax = plots.sweep_pareto(shown).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "configs that broke turns (no answer): 1" in legend and "(1 config" not in ax.get_title()
    marked = [c for c in ax.collections if c.get_label().startswith("configs that broke turns")]
    assert len(marked) == 1 and len(marked[0].get_offsets()) == 1


def test_the_retention_plot_leaves_out_or_marks_a_config_that_made_a_turn_fail():
    """Issue 34 (1): notebook 07's picture made sliding_window look cheapest without marking that it failed a turn:
    a config that made turns fail is left out, and the title says so; failed=True draws it as a red cross, named."""
    import convlab

    df = pd.DataFrame({"conversation": ["c"] * 3, "source": ["c.jsonl"] * 3, "config": [0, 1, 2], "window": [100000] * 3,
                       "worker": [None, "clear_tool_results(keep=3)", "sliding_window(keep_turns=10)"],
                       "calls": [217, 217, 199], "lost_calls": [0, 0, 18], "failed_turns": [0, 0, 1],
                       "usd": [7.7, 7.1, 6.2], "baseline_usd": [6.9] * 3, "facts_kept": [0.08, 0.33, 0.15]})
    ax = plots.sweep_retention(df).axes[0]
    assert [t.get_text() for t in ax.texts] == ["config 0 (window=100000)", "config 1 (window=100000,\nworker=clear_tool_results(keep=3))"]
    assert " ".join(ax.get_title().split()) == "what each config keeps, against what it costs (1 config that made turns fail left out)"
    ax = plots.sweep_retention(df, failed=True).axes[0]
    assert "config 2 (window=100000,\nworker=sliding_window(keep_turns=10)): 1 turn failed" in [t.get_text() for t in ax.texts]
    (crosses,) = [c for c in ax.collections if c.get_label().startswith("configs that made turns fail")]
    assert crosses.get_offsets().tolist() == [[6.2, 15.0]] and "left out" not in ax.get_title()
    assert convlab.tuning.ranking.totals(df).loc[2, "usd"] == 6.2


def test_the_heatmap_hatches_the_cells_whose_configs_made_turns_fail():
    """Issue 34 (1): a heatmap cell of a config that made turns fail is marked, says how many, and the title says
    its value is no answer."""
    from matplotlib.patches import Rectangle

    df = pd.DataFrame({"window": [24000, 24000, 128000, 128000], "idle": [600, 3600, 600, 3600],
                       "tokens_read": [5e5, 5e5, 5.6e5, 5.6e5], "failed_turns": [4, 4, 0, 0]})
    fig = plots.sweep_heatmap(df, "idle", "window")
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch() == "xx"]
    assert sorted((p.get_x(), p.get_y()) for p in hatched) == [(-0.5, -0.5), (0.5, -0.5)]  # the 24000 row
    assert sorted(t.get_text() for t in ax.texts if "turns failed" in t.get_text()) == ["500,000\nturns failed: 4"] * 2
    assert "hatched: 2 cells whose configs made turns fail" in " ".join(fig.get_suptitle().split())
    clean = plots.sweep_heatmap(df.assign(failed_turns=0), "idle", "window")
    assert not [p for p in clean.axes[0].patches if p.get_hatch()] and "hatched" not in clean.get_suptitle()


def _under_legend(fig, xs, ys) -> list:
    """The points (data coordinates) the axes' legend covers, once the figure is drawn."""
    ax = fig.axes[0]
    fig.canvas.draw()
    box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    return [(x, y) for (x, y), (px, py) in zip(zip(xs, ys), ax.transData.transform(list(zip(xs, ys))))
            if box.x0 <= px <= box.x1 and box.y0 <= py <= box.y1]


@pytest.mark.realdata
def test_no_legend_covers_a_point_on_a_real_sweep():
    """The shared Codex logs swept over windows and idle resets, priced: the trade-off's legend (lower right) sat on
    the config at 214 rewrites and -44% dollars saved. Every sweep plot's legend is beside the axes now, over no point."""
    import convlab
    from agentdata import require as agents
    from convlab.tuning.grid import example_config
    from convlab.tuning.ranking import totals

    convs = convlab.read(agents() / "codex", progress=False)
    df = convlab.tune(convs, example_config().read_text(encoding="utf-8"), progress=False, jobs=2, model="claude-sonnet-4-5",
                      grid={"window": [40000, 64000, 200000], "strategy[0].idle_secs": [600, 3600]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.TuneWarning)  # configs that fire often or broke turns: drawn all the same
        ranked = convlab.rank(df, by="usd", failed=True)
    fig = plots.sweep_pareto(ranked)
    rewrites = ranked["summaries"] + ranked["resets"]
    # the point it covered (-44% then; -137% since a summary call reads the hidden prompt too, issue 37: on this
    # rollout, whose fit is not trusted, that is the overhead the log's calls carry)
    assert (rewrites.max(), ranked["saved_usd"].min()) == (214, pytest.approx(-1.37, abs=0.01))
    assert _under_legend(fig, rewrites, ranked["saved_usd"] * 100) == []
    data = totals(df)
    fig = plots.sweep_retention(df, failed=True)
    scored = data[data["facts_kept"].notna()]
    assert _under_legend(fig, scored["usd"], scored["facts_kept"] * 100) == []
    r = convlab.replay(max(convs, key=len), "[agent.bot.context]\nwindow = 40000\n[[agent.bot.context.strategy]]\nuse = 'summarize'")
    fig = plots.count_per_call(r)
    assert _under_legend(fig, range(1, len(r.calls) + 1), [c.count for c in r.calls]) == []
    for fig in (plots.sweep_pareto(ranked), plots.sweep_retention(df, failed=True), plots.count_per_call(r)):
        fig.canvas.draw()
        ax = fig.axes[0]
        assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1  # beside the plot, not on it
