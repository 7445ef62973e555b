"""convlab.plots: Figures, no pyplot, no global backend change."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from matplotlib.figure import Figure

from convlab import plots
from convlab.conversation import Conversation
from convlab.replaying import replay
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
    s = r.session
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


def test_importing_and_plotting_leaves_pyplot_and_the_backend_alone():
    code = (
        "import sys, matplotlib; before = matplotlib.get_backend(); "
        "from convlab import plots; import pandas as pd; "
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
        "from convlab import plots\n"
        "fig = plots.sweep_heatmap(pd.DataFrame({'a': [1], 'b': [2], 'tokens_read': [3]}), 'a', 'b')\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
        "fig"
    )]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    assert [o.get("text") for o in outputs if o.output_type == "stream"] == ["False\n"]
    (result,) = [o for o in outputs if o.output_type == "execute_result"]
    assert "image/png" in result.data and result.data["text/plain"].startswith("<Figure size ")
