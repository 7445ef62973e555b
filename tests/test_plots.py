"""convlab.plots: Figures, no pyplot, no global backend change."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
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
    s = replay(conv(), CONFIG)  # window - 16000 = 4000: summaries fire
    assert s.replay_limits
    fig = plots.count_per_call(s)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    count, line = ax.get_lines()
    assert list(count.get_ydata()) == [c["count"] for c in s.replay_calls]
    assert set(line.get_ydata()) == {4000}
    (marks,) = ax.collections
    assert [tuple(p) for p in marks.get_offsets()] == [(x["call"], x["tokens"]) for x in s.replay_limits]
    assert "context.limit (full)" in [t.get_text() for t in ax.get_legend().get_texts()][-1]
    fig.savefig(tmp_path / "count.png")
    assert (tmp_path / "count.png").stat().st_size > 5000


def test_error_distribution_has_both_references():
    s = replay(conv())
    fig = plots.error_distribution(s)
    a, b = fig.axes
    assert a.get_title() == f"count - exact (n={len(s.replay_calls)})"
    assert b.get_title() == f"count - logged usage (n={len(s.replay_calls)})"
    assert sum(p.get_height() for p in a.patches) == len(s.replay_calls)


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
