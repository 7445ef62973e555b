"""Plots of replays and sweeps, as matplotlib ``Figure`` objects.

Figures are made with ``matplotlib.figure.Figure`` directly, never through
``pyplot``: nothing is shown, no global backend is chosen on import, and a
figure is saved with ``fig.savefig(path)`` (the Agg canvas) in any
environment, a notebook or a headless CI job alike.
"""

from __future__ import annotations

from typing import Any

from .context import MARGIN

__all__ = ["count_per_call", "error_distribution", "sweep_heatmap"]

_MARKERS = {"full": ("v", "tab:red"), "idle": ("s", "tab:purple"), "overflow": ("X", "black")}


def _figure(size: tuple[float, float]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def count_per_call(session: Any, *, window: int | None = None, title: str | None = None):
    """The engine's count at each model call of a replay, the ``window - 16000``
    line, and every ``context.limit`` decision marked by its reason.

    ``session`` is what ``convlab.replay`` returns; ``window`` defaults to
    the session's config.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.replaying import replay
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
    >>> t.head = "a1"
    >>> fig = count_per_call(replay(Conversation(t, id="c")))
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['count']
    """
    calls = session.replay_calls
    limits = session.replay_limits
    window = session.config.window if window is None else window
    fig = _figure((8, 4))
    ax = fig.add_subplot()
    xs = list(range(1, len(calls) + 1))
    ax.plot(xs, [c["count"] for c in calls], label="count", color="tab:blue", lw=1.2)
    if window is not None:
        ax.axhline(window - MARGIN, color="tab:orange", ls="--", lw=1, label=f"window - {MARGIN} = {window - MARGIN:,}")
    for reason, (marker, color) in _MARKERS.items():
        hits = [x for x in limits if x["reason"] == reason]
        if hits:
            ax.scatter([x["call"] for x in hits], [x["tokens"] for x in hits], marker=marker, color=color, zorder=3,
                       label=f"context.limit ({reason}): {len(hits)}")
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens (the engine's count)")
    ax.set_title(title or "count per model call")
    ax.legend(loc="upper left", fontsize="small")
    return fig


def error_distribution(calls: Any, *, title: str | None = None):
    """Histograms of the count's error per model call: against the exact count
    of what the model read, and against the log's usage where it applies.

    ``calls`` is a replayed session (its ``replay_calls``) or a list of such
    call dicts (``count``, ``exact``, ``logged``, ``applies``).

    >>> fig = error_distribution([{"count": 10, "exact": 8, "logged": 12, "applies": True}])
    >>> [ax.get_title() for ax in fig.axes]
    ['count - exact (n=1)', 'count - logged usage (n=1)']
    """
    rows = getattr(calls, "replay_calls", calls)
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
        ax.set_title(f"{name} (n={len(values)})")
        ax.set_xlabel("tokens")
    if title:
        fig.suptitle(title)
    return fig


def sweep_heatmap(df: Any, x: str, y: str, value: str = "tokens_read", *, agg: str = "sum", title: str | None = None):
    """A sweep as a heatmap: ``y`` down, ``x`` across, ``value`` aggregated over
    conversations (``agg``: sum, mean, max, ...) and written in each cell.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"window": [64000, 64000, 128000, 128000], "strategy[0].idle_secs": [60, 600, 60, 600],
    ...                    "summaries": [3, 2, 1, 0]})
    >>> fig = sweep_heatmap(df, "strategy[0].idle_secs", "window", "summaries")
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()
    ('strategy[0].idle_secs', 'window')
    """
    for col in (x, y, value):
        if col not in df.columns:
            raise KeyError(f"the frame has no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    table = df.pivot_table(index=y, columns=x, values=value, aggfunc=agg)
    fig = _figure((1.2 + 0.9 * max(3, len(table.columns)), 1.2 + 0.5 * max(3, len(table.index))))
    ax = fig.add_subplot()
    data = table.to_numpy(dtype=float)
    image = ax.imshow(data, aspect="auto", cmap="viridis", origin="lower")
    ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns], rotation=45, ha="right")
    ax.set_yticks(range(len(table.index)), [str(i) for i in table.index])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    top = float(data.max()) if data.size else 0.0
    for (i, j), v in _cells(data):
        ax.text(j, i, f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:.2g}", ha="center", va="center",
                fontsize="x-small", color="white" if v < top * 0.6 else "black")
    fig.colorbar(image, ax=ax, label=f"{value} ({agg})")
    ax.set_title(title or f"{value} by {y} and {x}")
    return fig


def _cells(data):
    import math

    for i, row in enumerate(data):
        for j, v in enumerate(row):
            if not math.isnan(v):
                yield (i, j), v
