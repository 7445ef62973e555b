"""The context gauge: what the model would read, against the window and the strategies.

Three numbers: the engine's count (``session.tokens()``, docs/protocol.md 5.1:
reported input of the last call plus chars/4 since), the exact tiktoken
count of the active path (``convlab.count_tokens``), and the idle time since
the previous turn ended (``session.idle_for``) against each strategy's
``idle_secs``. Only numbers and config names go into the HTML, escaped.

The exact count is kept per message as a running total from the root (a
message never changes and never moves), so a draw counts only the messages
that are new on the path, not the whole path again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as w

from ..tokens import count_tokens
from .chat import STYLE, duration, esc
from .live import INTERVAL, Live, kinds
from .source import REPLAY_HINT, Given, source_of

if TYPE_CHECKING:
    from ..context import ContextConfig

__all__ = ["ContextGauge", "gauge_marks"]


def gauge_marks(config: ContextConfig | None) -> list[tuple[str, int]]:
    """The token counts where a strategy applies: ``config.limit`` (the window less the
    engine's headroom) and each ``over_tokens``.

    >>> import convlab
    >>> gauge_marks(convlab.load_config('''
    ... [agent.bot.context]
    ... window = 200000
    ... [[agent.bot.context.strategy]]
    ... use = "summarize"
    ... over_tokens = 50000
    ... ''')["bot"])
    [('window - 16000', 184000), ('summarize over_tokens', 50000)]
    """
    marks = []
    window, limit = getattr(config, "window", None), getattr(config, "limit", None)
    if window is not None and limit is not None:
        marks.append((f"window - {window - limit}", limit))
    for st in getattr(config, "strategies", ()) or ():
        if getattr(st, "over_tokens", None) is not None:
            marks.append((f"{st.use} over_tokens", int(st.over_tokens)))
    return marks


_EVENTS = ("message.new", "head.moved", "turn.", "llm.completed", "context.", "state.changed")


class ContextGauge(Live, w.VBox):
    """The count against the window, the strategies' lines, the exact count and the idle time.

    Given an imported ``convlab.Conversation`` it shows the count of the path
    to its head (the log's usage where it has it) and the exact count; a
    conversation has no config, so no window and no strategies.

    >>> import convlab
    >>> ContextGauge(convlab.Session(config="[agent.bot.context]\\nwindow = 200000"))
    ContextGauge(tokens=0, exact=0, window=200000)
    """

    EVENTS = kinds(_EVENTS)
    TOUCH = True

    def __init__(self, session: Given, *, interval: float = INTERVAL) -> None:
        source = source_of(session, "ContextGauge")  # a wrong argument raises before anything is built
        self._bind(source)
        self.tokens = 0
        self.exact = 0
        self.idle: float | None = None
        self._exact_at: dict[str, int] = {}  # message id -> exact tokens from the root to it
        self.bar = w.HTML()
        super().__init__([w.HTML(STYLE), self.bar])
        self._start(source, interval, ("clw", "clw-box", "cl-gauge"))

    def refresh(self) -> None:
        """Draw the gauge again from the session (the idle time moves with the clock, not with events)."""
        self.redraw.now()

    def _show_error(self, text: str) -> None:
        self.bar.value = f'<span class="clw-status">{esc(text)}</span>'

    def _exact_count(self, head: str | None) -> int:
        """Exact tokens root -> ``head``: from the nearest message counted before, down."""
        known = self._exact_at
        tree = self.source.message_tree
        todo, cur = tree.up_to(head, known.__contains__)
        total = 0 if cur is None else known[cur]
        for nid in reversed(todo):
            total += count_tokens([tree.node(nid)])
            known[nid] = total
        return total if head is not None else 0

    def _sync(self) -> None:
        src = self.source
        cfg = None if self.readonly else self.live.config
        self.tokens = src.tokens()
        self.exact = self._exact_count(src.head)
        self.idle = None if self.readonly else self.live.idle_for
        window = getattr(cfg, "window", None)
        marks = gauge_marks(cfg)
        scale = window or max([self.tokens, self.exact, *(v for _, v in marks), 1]) * 1.25
        pct = lambda v: max(0.0, min(100.0, 100.0 * v / scale))  # noqa: E731
        first = min((v for _, v in marks), default=None)
        color = "#059669"
        if first is not None and self.tokens > first:
            color = "#dc2626"
        elif first is not None and self.tokens > 0.85 * first:
            color = "#d97706"
        mark_html = "".join(
            f'<div class="clw-gauge-mark" style="left:{pct(v):.2f}%;background:{"#dc2626" if "window" in name else "#7c3aed"}" '
            f'title="{esc(name)}: {v:,}"><span class="clw-muted">{esc(name)} {v:,}</span></div>'
            for name, v in marks
        )
        strategies = getattr(cfg, "strategies", ()) or ()
        if self.readonly:
            of = " to the head (the log's usage where it has it, chars/4 since)"
            tail = f"no window or strategies: an imported conversation has no config ({REPLAY_HINT} with one)"
            engine = ""
        else:
            of = f" of {window:,} window" if window else " (no window)"
            idle_bits = [f"{st.use} after {duration(st.idle_secs)} idle"
                         for st in strategies if getattr(st, "idle_secs", None) is not None]
            if self.idle is None:
                tail = "no turn has ended yet"
            else:
                tail = f"idle {duration(self.idle)} since the last turn ended"
            if idle_bits:
                tail += " · " + ", ".join(idle_bits)
            tail += " · strategies: " + (", ".join(st.use for st in strategies) or "none")
            engine = ' <span class="clw-muted">(engine count: last reported input + chars/4 since)</span>'
        value = (
            f'<div><span class="clw-title">Context</span> '
            f'<b style="color:{color}">{self.tokens:,}</b> tokens{esc(of)}{engine}</div>'
            f'<div class="clw-gauge-track"><div class="clw-gauge-fill" '
            f'style="width:{pct(self.tokens):.2f}%;background:{color}"></div>{mark_html}</div>'
            f'<div class="clw-muted">exact count of the active path (o200k_base): <b>{self.exact:,}</b> tokens'
            f' · {esc(tail)}</div>'
        )
        if value != self.bar.value:
            self.bar.value = value


    def __repr__(self) -> str:
        self.flush()
        window = None if self.readonly else getattr(self.live.config, "window", None)
        return f"ContextGauge(tokens={self.tokens}, exact={self.exact}, window={window})"
