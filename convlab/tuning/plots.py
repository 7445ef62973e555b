"""Plots of replays and sweeps, as matplotlib ``Figure`` objects.

Figures are made with ``matplotlib.figure.Figure`` directly, never through
``pyplot``: nothing is shown, no global backend is chosen on import, and a
figure is saved with ``fig.savefig(path)`` (the Agg canvas) in any
environment, a notebook or a headless CI job alike.

Why the figures have their own ``_repr_png_``: IPython shows a plain
``Figure`` as an image only once a pyplot backend has registered a display
formatter for it (``%matplotlib inline``, or importing pyplot under the
kernel's default backend). A figure made without pyplot would otherwise show
as ``<Figure size ...>``. ``convlab.tuning.plots.Figure`` renders itself to PNG
through its Agg canvas when it is a cell's last expression (or is passed to
``display``), with no backend and no global state touched.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib.figure
from matplotlib.backends.backend_agg import FigureCanvasAgg

from ..context import MARGIN, ContextConfig

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.legend import Legend
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

    from ..replaying.result import Replay

__all__ = ["count_per_call", "error_distribution", "sweep_heatmap", "sweep_pareto", "sweep_retention", "compaction_costs", "Figure"]

_MARKERS = {"full": ("v", "tab:red"), "idle": ("s", "tab:purple"), "overflow": ("X", "black")}


class Figure(matplotlib.figure.Figure):
    """A matplotlib ``Figure`` on an Agg canvas that Jupyter shows as a PNG.

    >>> fig = Figure(figsize=(2, 1))
    >>> fig._repr_png_()[:8] == b"\\x89PNG\\r\\n\\x1a\\n", repr(fig)
    (True, '<Figure size 200x100 with 0 Axes>')
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png")
        return buf.getvalue()


def _figure(size: tuple[float, float]) -> Figure:
    return Figure(figsize=size, layout="constrained")


def _compact(value: float, _pos: int | None = None) -> str:
    """A tick label in a few characters: 1.5M, 250k, -40k, 900."""
    for scale, unit in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g}{unit}".replace("-", "\N{MINUS SIGN}")
    return f"{value:.4g}".replace("-", "\N{MINUS SIGN}")


def _wrap(text: str, width_in: float, points: float = 12.0) -> str:
    """``text`` wrapped to lines that fit ``width_in`` inches at ``points`` (about 0.6 em per character)."""
    chars = max(12, int(width_in * 72 / (points * 0.6)))
    return "\n".join(textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)) or text


def count_per_call(replayed: Replay, *, window: int | None = None, title: str | None = None):
    """The engine's count at each model call of a replay, the ``window - 16000``
    line, every ``context.limit`` decision marked by its reason, and a
    vertical line where the log itself compacted (a summary root in the log,
    ``Replay.compactions``), just before the first call that reads the
    compacted history.

    ``replayed`` is what ``convlab.replay`` returns (a ``Replay``); ``window``
    defaults to its session's config.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying.driver import replay
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
    >>> t.head = "a1"
    >>> fig = count_per_call(replay(Conversation(t, id="c")))
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['count']
    """
    calls = replayed.calls
    limits = replayed.limits
    limit = (replayed.session.config if window is None else ContextConfig(window=window)).limit
    fig = _figure((8, 4))
    ax = fig.add_subplot()
    xs = list(range(1, len(calls) + 1))
    ax.plot(xs, [c.count for c in calls], label="count", color="tab:blue", lw=1.2)
    if limit is not None:
        ax.axhline(limit, color="tab:orange", ls="--", lw=1, label=f"window - {MARGIN} = {limit:,}")
    for reason, (marker, color) in _MARKERS.items():
        hits = [x for x in limits if x.reason == reason]
        if hits:
            ax.scatter([x.call for x in hits], [x.tokens for x in hits], marker=marker, color=color, zorder=3,
                       label=f"context.limit ({reason}): {len(hits)}")
    compacted = [c.call for c in replayed.compactions]
    for k, call in enumerate(compacted):
        ax.axvline(call - 0.5, color="tab:green", ls=":", lw=1.5, zorder=1,
                   label=(f"the log compacted: before call {', '.join(map(str, compacted))}" if k == 0 else "_nolegend_"))
        ax.annotate("log compacted", (call - 0.5, 0), xycoords=("data", "axes fraction"), xytext=(3, 3),
                    textcoords="offset points", ha="left", va="bottom", fontsize="small", color="tab:green")
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(_compact))
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens (the engine's count)")
    ax.set_title(_wrap(title or "count per model call", 7.6))
    _outside(ax)
    return fig


def error_distribution(calls: Replay | Sequence[Mapping[str, Any]], *, title: str | None = None):
    """Histograms of the count's error per model call: against the exact count
    of what the model read, and against the log's usage where it applies.

    ``calls`` is a ``Replay`` (its ``calls``) or a list of such
    call dicts (``count``, ``exact``, ``logged``, ``applies``). Tick labels
    are kept few and short (``-40k``), so a wide range does not crowd them.

    >>> fig = error_distribution([{"count": 10, "exact": 8, "logged": 12, "applies": True}])
    >>> [ax.get_title() for ax in fig.axes]
    ['count - exact (n=1)', 'count - logged usage (n=1)']
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    rows = calls.calls if hasattr(calls, "calls") else calls
    exact = [c["count"] - c["exact"] for c in rows]
    usage = [c["count"] - c["logged"] for c in rows if c.get("applies", True) and c.get("logged") is not None]
    fig = _figure((9, 3.5))
    for i, (values, name) in enumerate(((exact, "count - exact"), (usage, "count - logged usage"))):
        ax = fig.add_subplot(1, 2, i + 1)
        if values:
            ax.hist(values, bins=min(40, max(5, len(values) // 3)), color="tab:blue" if i == 0 else "tab:green")
            ax.axvline(0, color="black", lw=0.8)
        else:
            ax.text(0.5, 0.5, "no calls", ha="center", va="center", transform=ax.transAxes)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
        ax.xaxis.set_major_formatter(FuncFormatter(_compact))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{name} (n={len(values)})")
        ax.set_xlabel("tokens")
        ax.set_ylabel("model calls" if i == 0 else "")
    if title:
        fig.suptitle(title)
    return fig


def _cell_label(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:.2g}"


def sweep_heatmap(df: pd.DataFrame, x: str, y: str, value: str = "tokens_read", *, agg: str = "sum",
                  title: str | None = None, cost: str | None = None):
    """A sweep as a heatmap: ``y`` down, ``x`` across, ``value`` aggregated over
    conversations (``agg``: sum, mean, max, ...) and written in each cell.

    ``cost``, a second column aggregated the same way, is written under the
    value in each cell, so one picture shows what a config saves and what it
    costs: tokens read alone make the smallest window look best, tokens read
    beside ``summaries`` (or the CLI's ``rewrites``, summaries + resets) show the
    price. The figure is sized to its cells' labels and the title (the
    figure's suptitle, default ``"<value> by <y> and <x>"``, ``"<value> and
    <cost> by ..."`` with a cost) wraps to its width. A cell whose configs
    made turns fail (the frame's ``failed_turns``) is hatched and says how
    many, and the title says so: its value is no answer. A cell whose value is
    NaN in every row (``facts_kept`` where nothing was measured) is unknown:
    grey, and says so, never 0 (a sum of unknowns stays unknown).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"window": [64000, 64000, 128000, 128000], "strategy[0].idle_secs": [60, 600, 60, 600],
    ...                    "summaries": [3, 2, 1, 0]})
    >>> fig = sweep_heatmap(df, "strategy[0].idle_secs", "window", "summaries")
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel(), fig.get_suptitle()
    ('strategy[0].idle_secs', 'window', 'summaries by window and\\nstrategy[0].idle_secs')
    """
    from matplotlib.ticker import FuncFormatter

    for col in (x, y, value, *([cost] if cost is not None else [])):
        if col not in df.columns:
            raise KeyError(f"the frame has no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    table = df.pivot_table(index=y, columns=x, values=value, aggfunc=_keeping_nan(agg), dropna=False)
    data = table.to_numpy(dtype=float)
    cells = list(_cells(data))
    labels = {ij: _cell_label(v) for ij, v in cells}
    if cost is not None:
        costs = df.pivot_table(index=y, columns=x, values=cost, aggfunc=_keeping_nan(agg), dropna=False).reindex(
            index=table.index, columns=table.columns)
        for (i, j), c in _cells(costs.to_numpy(dtype=float)):
            if (i, j) in labels:
                labels[i, j] += f"\n{cost}: {_cell_label(c)}"
    broken = _failed_cells(df, x, y, table, labels)
    xticks, yticks = [str(c) for c in table.columns], [str(i) for i in table.index]
    # inches: a cell fits its label at "small" (about 0.065 in a character), the left margin the y tick labels
    longest = max([len(line) for t in labels.values() for line in t.split("\n")] + [len(t) for t in xticks] + [1])
    cell_w = max(0.8, 0.065 * longest + 0.3)
    left = 0.6 + 0.08 * max([len(t) for t in yticks] + [1])
    width = max(4.8, left + cell_w * max(2, len(xticks)) + 1.5)
    text = _wrap(title or f"{value}{f' and {cost}' if cost else ''} by {y} and {x}", width - 0.4)
    bottom = 0.9 + 0.06 * max([len(t) for t in xticks] + [1])
    row_h = 0.45 if cost is None else 0.6
    height = max(3.0, bottom + row_h * max(2, len(yticks)) + 0.5 + 0.25 * text.count("\n"))
    fig = _figure((width, height))
    ax = fig.add_subplot()
    image = ax.imshow(data, aspect="auto", cmap="viridis", origin="lower")
    tilt = max(len(t) for t in xticks) * 0.07 > cell_w - 0.1 if xticks else False  # labels wider than a cell
    ax.set_xticks(range(len(xticks)), xticks, rotation=45 if tilt else 0, ha="right" if tilt else "center")
    ax.set_yticks(range(len(yticks)), yticks)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    norm = image.norm
    flat = norm.vmin == norm.vmax
    from matplotlib.patches import Rectangle

    for (i, j), v in cells:
        light = not flat and float(norm(v)) < 0.55  # type: ignore[arg-type]  # norm of a number is a number  # a dark viridis cell gets white text
        if (i, j) in broken:
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=True, facecolor="white", alpha=0.75, hatch="xx",
                                   edgecolor="tab:red", lw=0))
            light = False
        ax.text(j, i, labels[i, j], ha="center", va="center", fontsize="small", color="white" if light else "black")
    _mark_unknown(ax, df, x, y, value, table)
    bar = fig.colorbar(image, ax=ax, label=f"{value} ({agg})", format=FuncFormatter(_compact))
    bar.ax.tick_params(labelsize="small")
    if broken:
        text += "\n" + _wrap(f"hatched: {len(broken)} cell{'s' if len(broken) != 1 else ''} whose configs made turns fail "
                             "(no answer, whatever the value)", width - 0.4)
    fig.suptitle(text)
    return fig


def _mark_unknown(ax: Axes, df: pd.DataFrame, x: str, y: str, value: str, table: pd.DataFrame) -> None:
    """Grey the heatmap's cells that hold configs but no value (NaN in every row: ``facts_kept`` where nothing was
    measured), each saying so: unknown, never 0."""
    from matplotlib.patches import Rectangle

    data = table.to_numpy(dtype=float)
    rows = df.pivot_table(index=y, columns=x, values=value, aggfunc="size", dropna=False).reindex(
        index=table.index, columns=table.columns).to_numpy(dtype=float)
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            if math.isnan(data[i, j]) and rows[i, j] > 0:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=True, facecolor="0.92", lw=0))
                ax.text(j, i, f"{value}: unknown\n(nothing to measure)", ha="center", va="center", fontsize="small",
                        color="0.3")


def _keeping_nan(agg: str) -> Any:
    """``agg`` as pivot_table takes it, a sum of unknown values staying unknown (pandas sums NaN to 0)."""
    if agg == "sum":
        return lambda values: values.sum(min_count=1)
    return agg


def _failed_cells(df: pd.DataFrame, x: str, y: str, table: pd.DataFrame, labels: dict[tuple[int, int], str]) -> set[tuple[int, int]]:
    """The heatmap's cells whose configs made turns fail (the frame's ``failed_turns``), each label saying how
    many: marked, never a choice."""
    broken: set[tuple[int, int]] = set()
    if "failed_turns" in df.columns:
        failed = df.pivot_table(index=y, columns=x, values="failed_turns", aggfunc="sum").reindex(
            index=table.index, columns=table.columns)
        for (i, j), n in _cells(failed.to_numpy(dtype=float)):
            if n > 0 and (i, j) in labels:
                broken.add((i, j))
                labels[i, j] += f"\nturns failed: {int(n)}"
    return broken


#: How a point's label is drawn: a leader line to its point, on a white box.
_LEADER = {"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 5}
_LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}


def sweep_pareto(ranked: pd.DataFrame, *, title: str | None = None):
    """A sweep's trade-off: the share of tokens each config saved against how
    often it rewrote the history (summaries + resets), over every conversation.

    ``ranked`` is what ``convlab.rank`` returns (or the ``convlab.tune`` frame,
    ranked here). Every config is a point; the Pareto configs (none saves as
    much with as few rewrites) are marked, joined as the front and labelled
    with their configs (``config_label``, short keys; configs that made the
    same figures share a point and a label); the others are grey. The
    baseline, no saving, is the dashed line at 0. A ranking by dollars
    (``convlab.rank(df, by="usd")``) puts the share of dollars saved on the
    axis instead (``saved_usd``).

    >>> import pandas as pd
    >>> ranked = pd.DataFrame({"config": [0, 1, 2], "window": [64000, 128000, 200000], "summaries": [13, 1, 0],
    ...                        "resets": [0, 0, 0], "saved": [0.44, 0.10, 0.0], "pareto": [True, True, True]})
    >>> ax = sweep_pareto(ranked).axes[0]
    >>> [t.get_text() for t in ax.texts]
    ['config 2 (window=200000)', 'config 1 (window=128000)', 'config 0 (window=64000)']
    """
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    from .ranking import config_label, grid_keys, rank, short_keys

    if "pareto" not in ranked.columns:
        ranked = rank(ranked)
    dollars = ranked.attrs.get("by") == "usd"
    measure = "saved_usd" if dollars else "saved"
    for col in ("config", "summaries", "resets", measure, "pareto"):
        if col not in ranked.columns:
            raise KeyError(f"sweep_pareto takes what convlab.rank returns; this frame has no column {col!r}")
    keys = grid_keys(ranked) if "window" in ranked.columns else []
    data = ranked.assign(rewrites=ranked["summaries"] + ranked["resets"], percent=ranked[measure] * 100)
    data = data[data["percent"].notna()]
    broke = _broke(data)
    front = data[data["pareto"].astype(bool)].sort_values(["rewrites", "percent"])
    rest = data[~data["pareto"].astype(bool) & ~broke]
    fig = _figure((8.5, 5))
    ax = fig.add_subplot()
    ax.axhline(0, color="0.5", ls="--", lw=0.8, label="the baseline: no strategy")
    if len(rest):
        ax.scatter(rest["rewrites"], rest["percent"], s=28, color="0.6", zorder=5, label=f"other configs: {len(rest)}")
    if broke.any():  # rank(..., failed=True): shown, and marked as no answer
        ax.scatter(data[broke]["rewrites"], data[broke]["percent"], s=60, marker="X", color="tab:red", zorder=5,
                   label=f"configs that broke turns (no answer): {int(broke.sum())}")
    what = "dollars" if dollars else "tokens"
    ax.plot(front["rewrites"], front["percent"], color="tab:red", lw=1, drawstyle="steps-post", zorder=2)
    ax.scatter(front["rewrites"], front["percent"], s=60, color="tab:red", edgecolor="black", zorder=3,
               label=f"Pareto configs: {len(front)} (none saves more {what}\nwith as few summaries + resets)")
    names = short_keys(keys)
    right = data["rewrites"].max() if len(data) else 0
    labels = []
    for (x, y), same in front.groupby(["rewrites", "percent"], sort=False):
        text = "\n".join(config_label(row, keys, names) for _, row in same.iterrows())
        labels.append(ax.annotate(text, (x, y), xytext=(8, 0), textcoords="offset points", fontsize="small",
                                  ha="left", va="center", zorder=4, annotation_clip=False,
                                  arrowprops=_LEADER, bbox=_LABEL_BOX))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=None))
    ax.set_xlabel("summaries + resets (the history rewritten), all conversations")
    ax.set_ylabel("dollars, saved against the baseline" if dollars else "tokens read, saved against the baseline")
    ax.margins(x=0.08, y=0.12)
    ax.set_xlim(left=-max(0.5, 0.04 * right))
    legend = _outside(ax)
    ax.set_title(_wrap((title or f"what each config saves in {what}, against how often it rewrites")
                       + _left_out_note(ranked.attrs.get("left_out") or {}, ranked.attrs.get("broken") or {}), 7.8))
    _place(ax, labels, list(zip(data["rewrites"], data["percent"], strict=True)), legend)
    return fig


def compaction_costs(df: pd.DataFrame, *, title: str | None = None):
    """What each config's compactions cost, side by side: one bar per config (its ``preset`` where it has one,
    else ``config_label``), its dollars over every conversation (``usd``), of which the part the calls right
    after a compaction on a warm cache paid beyond a cached read (``warm_rewrite_usd``) is drawn apart; the
    log as it was (``baseline_usd``) is the dashed line. Each bar says its compactions (summaries + resets),
    how many fell on a warm cache, its own summary calls and, where known, ``facts_kept``. A config that made
    turns fail is drawn last (at the bottom), hatched, and says so: its dollars count each call it never made
    at the log's own, no answer. Each config's figures are ``convlab.tuning.ranking.totals``'.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"config": [0, 1], "window": [200000] * 2, "preset": ["masking", "pi"], "usd": [31.2, 6.7],
    ...                    "baseline_usd": [6.5] * 2, "warm_rewrite_usd": [26.4, 0.2], "summaries": [0, 1],
    ...                    "resets": [186, 0], "compactions_warm": [185, 1], "summary_calls": [0, 1],
    ...                    "facts_kept": [0.71, float("nan")], "failed_turns": [0, 0], "lost_calls": [0, 0]})
    >>> ax = compaction_costs(df).axes[0]
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['masking\\n186 compactions (185 warm), facts kept 71%', 'pi\\n1 compaction (1 warm), 1 summary call']
    >>> [t.get_text() for t in ax.texts]
    ['$31.20', '$6.70']
    >>> broken = df.assign(config=[1, 0], failed_turns=[0, 1])  # pi, config 0, breaks a turn: drawn last, never first
    >>> [t.get_text() for t in compaction_costs(broken).axes[0].get_yticklabels()]
    ['masking\\n186 compactions (185 warm), facts kept 71%', 'pi\\n1 compaction (1 warm), 1 summary call, 1 turn failed']
    """
    from .ranking import config_label, grid_keys, short_keys, totals

    for col in ("config", "usd", "baseline_usd", "warm_rewrite_usd", "summaries", "resets"):
        if col not in df.columns:
            raise KeyError(f"compaction_costs takes a convlab.tune frame priced with model=; this one has no column {col!r}")
    keys = grid_keys(df) if "window" in df.columns and "source" in df.columns else []
    names = short_keys(keys)
    data = totals(df).reset_index(drop=True)
    data = data.iloc[_broke(data).argsort(kind="stable")].reset_index(drop=True)  # a config that broke turns: last
    broke = _broke(data)
    labels = [str(row["preset"]) if "preset" in data.columns and isinstance(row.get("preset"), str) else config_label(row, keys, names)
              for _, row in data.iterrows()]
    fig = _figure((8.5, 1.6 + 0.55 * len(data)))
    ax = fig.add_subplot()
    ys = list(range(len(data)))[::-1]  # the first config on top
    warm = data["warm_rewrite_usd"].fillna(0.0)
    rest = data["usd"] - warm
    ax.barh(ys, rest, color=["0.8" if b else "tab:blue" for b in broke], height=0.6,
            label="dollars: every call and summary call")
    ax.barh(ys, warm, left=rest, color="tab:orange", height=0.6,
            label="of which: the calls after a compaction on a warm cache, beyond a cached read")
    if broke.any():
        ax.barh([y for y, b in zip(ys, broke, strict=True) if b], data["usd"][broke], fill=False, hatch="//",
                edgecolor="tab:red", height=0.6, label="broke turns: no answer (its calls never made count at the log's)")
    line = float(df.drop_duplicates("conversation")["baseline_usd"].sum()) if "conversation" in df.columns else float(df["baseline_usd"].iloc[0])
    ax.axvline(line, color="0.4", ls="--", lw=0.9, label=f"the log as it was: ${line:,.2f}")
    ticks = []
    for y, (label, (_, row), b) in zip(ys, zip(labels, data.iterrows(), broke, strict=True), strict=True):
        n = int(row["summaries"] + row["resets"])
        said = [f"{n} compaction{'s' if n != 1 else ''}"]
        if "compactions_warm" in data.columns and not _isna(row["compactions_warm"]) and n:
            said[0] += f" ({int(row['compactions_warm'])} warm)"
        calls = int(row["summary_calls"]) if "summary_calls" in data.columns else 0
        if calls:
            said.append(f"{calls} summary call{'s' if calls != 1 else ''}")
        if "facts_kept" in data.columns and not _isna(row["facts_kept"]):
            said.append(f"facts kept {row['facts_kept']:.0%}")
        if b:
            failed = int(row["failed_turns"]) if "failed_turns" in data.columns else 0
            said.append(f"{failed} turn{'s' if failed != 1 else ''} failed" if failed else "broke turns")
        ticks.append(f"{label}\n{', '.join(said)}")
        ax.annotate(f"${row['usd']:,.2f}", (float(row["usd"]), y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize="small")
    ax.set_yticks(ys, ticks, fontsize="small")
    ax.set_xlabel("dollars, all conversations")
    ax.set_xlim(0, max(float(data["usd"].max()), line) * 1.18)
    fig.legend(loc="outside lower center", fontsize="small", frameon=False)  # below the axes: it covers no bar
    fig.suptitle(_wrap(title or "what each config costs, and what the calls right after its compactions on a warm cache "
                                "paid beyond a cached read", 8.0))
    return fig


def _isna(value: object) -> bool:
    """NaN or None (a frame's unknown figure)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _outside(ax: Axes) -> Legend:
    """The axes' legend beside them, on the right, outside the plot: it covers no point, no line and no label (a
    legend inside, even at ``"best"``, can sit on a point: the real Codex sweep's config at 214 rewrites, -44%, was
    under the trade-off's legend). The figure's constrained layout makes room for it."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small", framealpha=0.9)


def _label_lines(text: str, width: int = 42) -> str:
    """A point's label on lines of about ``width`` characters, broken after a comma: a long config name (its
    worker and grid keys) stays beside its point, inside the axes."""
    lines: list[str] = []
    for piece in text.split(", "):
        if lines and len(lines[-1]) + 2 + len(piece) <= width:
            lines[-1] += ", " + piece
        else:
            lines.append(piece)
    return ",\n".join(lines)


def _broke(df: pd.DataFrame) -> pd.Series:
    """Per row, whether its config broke turns (failed turns or lost calls)."""
    broke = df["failed_turns"] > 0 if "failed_turns" in df.columns else df.index.to_series().map(lambda _: False)
    if "lost_calls" in df.columns:
        broke = broke | (df["lost_calls"] > 0)
    return broke.astype(bool)


def _left_out_note(left_out: Mapping[int, str], broken: Mapping[int, str]) -> str:
    """`` (2 configs left out: they broke turns)``: what a ranking left out (``broken``: the configs that
    broke turns, left out or not), for a title."""
    if not left_out:
        return ""
    broke = sum(1 for config in left_out if config in broken)
    n = len(left_out)
    why = "they broke turns" if broke == n else "below a floor" if not broke else "they broke turns or fell below a floor"
    return f" ({n} config{'s' if n != 1 else ''} left out: {why})"


def sweep_retention(df: pd.DataFrame, *, kept: str = "facts_kept", cost: str = "usd", log: float | None = None,
                   title: str | None = None, failed: bool = False):
    """What each config of a sweep costs against what it keeps: ``cost`` (``"usd"``, the default, or
    ``"tokens_read"``) summed over the conversations, against ``kept`` (``"facts_kept"`` or, with a judge,
    ``"retained"``) averaged over them; each config a labelled point (``config_label``). The baseline
    (the log as it was: ``baseline_usd`` or ``baseline_tokens_read``) is the dashed line; ``log``, when
    given, is what the log's own compaction kept, marked on it. A config with no score (NaN, unknown: it
    compacted nothing of its own that a model read, or only with stand-in summaries; the log's own compaction
    is not its) is left out, never drawn at 0, and the title says how many.
    So is a config that made turns fail (``failed_turns`` or ``lost_calls``: no answer, whatever it
    costs), unless ``failed=True``: then it is drawn as a red cross, its label saying so. Each config's
    figures are ``convlab.tuning.ranking.totals``'.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"config": [0, 1], "window": [100000, 100000], "worker": [None, "clear_tool_results(keep=3)"],
    ...                    "usd": [7.7, 7.1], "baseline_usd": [6.9, 6.9], "facts_kept": [0.08, 0.33]})
    >>> ax = sweep_retention(df, log=0.15).axes[0]
    >>> [t.get_text() for t in ax.texts], ax.get_xlabel(), ax.get_title()
    (['config 0 (window=100000)', 'config 1 (window=100000,\\nworker=clear_tool_results(keep=3))', "the log's own"], 'dollars, all conversations', 'what each config keeps, against what it costs')
    """
    from matplotlib.ticker import PercentFormatter

    from .ranking import config_label, grid_keys, short_keys, totals

    base = {"usd": "baseline_usd", "tokens_read": "baseline_tokens_read"}.get(cost)
    for col in ("config", cost, kept, *([base] if base else [])):
        if col not in df.columns:
            raise KeyError(f"sweep_retention takes a convlab.tune frame with {col!r}; this one has no such column")
    keys = grid_keys(df) if "window" in df.columns and "source" in df.columns else []
    data = totals(df)
    broke = _broke(data)
    shown = data if failed else data[~broke]
    scored = shown[shown[kept].notna()]
    fig = _figure((8.5, 5))
    ax = fig.add_subplot()
    marked: list[tuple[str, float, float]] = []  # the log's own point, labelled as the configs are
    if base:
        line = float(df.drop_duplicates("conversation")[base].sum()) if "conversation" in df.columns else float(df[base].iloc[0])
        ax.axvline(line, color="0.5", ls="--", lw=0.8, label="the baseline: the log as it was")
        if log is not None:
            ax.scatter([line], [log * 100], marker="D", s=50, color="0.3", zorder=4, label="the log's own compaction")
            marked.append(("the log's own", line, log * 100))
    good, bad = scored[~broke.reindex(scored.index, fill_value=False)], scored[broke.reindex(scored.index, fill_value=False)]
    ax.scatter(good[cost], good[kept] * 100, s=60, color="tab:blue", edgecolor="black", zorder=3,
               label=f"configs: {len(good)}")
    if len(bad):
        ax.scatter(bad[cost], bad[kept] * 100, s=70, marker="X", color="tab:red", zorder=3,
                   label=f"configs that made turns fail (no answer): {len(bad)}")
    names = short_keys(keys)
    labels = [ax.annotate(_label_lines(config_label({**row, "config": i}, keys, names)
                                       + (f": {int(row['failed_turns'])} turn{'s' if row['failed_turns'] != 1 else ''} failed"
                                          if i in bad.index else "")),
                          (row[cost], row[kept] * 100), xytext=(8, 0),
                          textcoords="offset points", fontsize="small", ha="left", va="center", zorder=4,
                          annotation_clip=False, arrowprops=_LEADER, bbox=_LABEL_BOX)
              for i, row in scored.iterrows()]
    labels += [ax.annotate(text, (x, y), xytext=(8, 0), textcoords="offset points", fontsize="small", ha="left",
                           va="center", zorder=4, annotation_clip=False, arrowprops=_LEADER, bbox=_LABEL_BOX)
               for text, x, y in marked]
    points = [*zip(scored[cost], scored[kept] * 100, strict=True), *((x, y) for _, x, y in marked)]
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=None))  # as many decimals as the range needs: no two ticks alike
    ax.set_xlabel("dollars, all conversations" if cost == "usd" else f"{cost}, all conversations")
    ax.set_ylabel(f"{kept}: the share of the dropped facts still there" if kept == "facts_kept"
                  else f"{kept}: probes answered after, over before")
    ax.margins(x=0.15, y=0.15)
    legend = _outside(ax)
    broken = 0 if failed else int(broke.sum())
    unscored = len(shown) - len(scored)
    said = [f"{unscored} config{'s' if unscored != 1 else ''} with no score" if unscored else "",
            f"{broken} config{'s' if broken != 1 else ''} that made turns fail" if broken else ""]
    said = [x for x in said if x]
    ax.set_title(_wrap(title or "what each config keeps, against what it costs"
                       + (f" ({' and '.join(said)} left out)" if said else ""), 7.8))
    _place(ax, labels, points, legend)
    return fig


#: Where a point's label may go, in offset points from the point, tried in order: beside it, then above or
#: below it further and further (a leader line joins a label to its point).
_SPOTS = [(8, 0), (-8, 0)] + [(dx, dy) for step in range(1, 9) for dy in (14 * step, -14 * step) for dx in (8, -8)]


def _place(ax: Axes, labels: list[Annotation], points: list[tuple[float, float]], legend: Legend) -> None:
    """Move each label to the first spot (``_SPOTS``) where it overlaps no label placed before it, no
    point but its own and not the legend, inside the axes; the spot that overlaps least when none is free.

    Labels are kept out of the layout (it is drawn once, then the labels placed in it), so placing
    them moves nothing else."""
    fig = ax.figure
    for label in labels:
        label.set_in_layout(False)
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # every figure here is a plots.Figure
    canvas.draw()
    renderer = canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    r = 5 * fig.dpi / 72  # a marker's half width, in pixels
    dots = [ax.transData.transform(p) for p in points]
    taken = [legend.get_window_extent(renderer)]

    def cost(box: Bbox, own: np.ndarray) -> float:
        inside = box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1
        hits = sum(_overlap(box, t) for t in taken)
        hits += sum(_overlap(box, _dot(d, r)) for d in dots if abs(d[0] - own[0]) > 1e-6 or abs(d[1] - own[1]) > 1e-6)
        return hits + (0 if inside else box.width * box.height)

    for label in sorted(labels, key=lambda a: -a.xy[1]):  # the top of the plot first
        own = ax.transData.transform(label.xy)
        best: tuple[float, int, int, Any] | None = None
        for dx, dy in _SPOTS:
            label.set_position((dx, dy))
            label.set_horizontalalignment("left" if dx > 0 else "right")
            box = label.get_window_extent(renderer)
            c = cost(box, own)
            if best is None or c < best[0]:
                best = (c, dx, dy, box)
            if c == 0:
                break
        assert best is not None  # _SPOTS is not empty
        _, dx, dy, box = best
        label.set_position((dx, dy))
        label.set_horizontalalignment("left" if dx > 0 else "right")
        assert label.arrow_patch is not None  # every label is made with arrowprops
        label.arrow_patch.set_visible(dy != 0)  # beside its point a label needs no leader
        taken.append(box)


def _dot(center: np.ndarray, r: float) -> Bbox:
    from matplotlib.transforms import Bbox

    return Bbox([[center[0] - r, center[1] - r], [center[0] + r, center[1] + r]])


def _overlap(a: Bbox, b: Bbox) -> float:
    """The area two display boxes share (0 when they do not touch)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _cells(data):
    for i, row in enumerate(data):
        for j, v in enumerate(row):
            if not math.isnan(v):
                yield (i, j), v
