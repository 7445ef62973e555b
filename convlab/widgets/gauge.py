"""The context gauge: what the model would read, against the window and the strategies.

Three numbers: the engine's count (``session.tokens()``, PROTOCOL.md 5.1:
reported input of the last call plus chars/4 since), the exact tiktoken
count of the active path (``convlab.count_tokens``), and the idle time since
the previous turn ended (``session.last_turn_end``) against each strategy's
``idle_secs``. Only numbers and config names go into the HTML, escaped.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..tokens import count_tokens
from .chat import STYLE, esc
from . import intents

__all__ = ["ContextGauge", "gauge_marks"]

MARGIN = 16000  # the engine keeps this much headroom below the window


def gauge_marks(config: Any) -> list[tuple[str, int]]:
    """The token counts where a strategy applies: ``window - 16000`` and each ``over_tokens``.

    >>> from types import SimpleNamespace as NS
    >>> gauge_marks(NS(window=200000, strategies=[NS(use="reset", idle_secs=3600, over_tokens=None),
    ...                                            NS(use="summarize", idle_secs=None, over_tokens=50000)]))
    [('window - 16000', 184000), ('summarize over_tokens', 50000)]
    """
    marks = []
    window = getattr(config, "window", None)
    if window is not None:
        marks.append(("window - 16000", window - MARGIN))
    for st in getattr(config, "strategies", ()) or ():
        if getattr(st, "over_tokens", None) is not None:
            marks.append((f"{st.use} over_tokens", int(st.over_tokens)))
    return marks


def _duration(secs: float) -> str:
    secs = max(0.0, float(secs))
    if secs < 90:
        return f"{secs:.0f} s"
    if secs < 5400:
        return f"{secs / 60:.0f} min"
    return f"{secs / 3600:.1f} h"


_REDRAW = ("message.new", "head.moved", "turn.", "llm.completed", "context.", "state.changed")


class ContextGauge(w.VBox):
    """The count against the window, the strategies' lines, the exact count and the idle time.

    >>> import convlab
    >>> ContextGauge(convlab.Session(config="[agent.bot.context]\\nwindow = 200000"))
    ContextGauge(tokens=0, exact=0, window=200000)
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self.tokens = 0
        self.exact = 0
        self.idle: float | None = None
        self.bar = w.HTML()
        super().__init__([w.HTML(STYLE), self.bar])
        self.add_class("clw")
        self.add_class("clw-box")
        self.add_class("cl-gauge")
        self._unsubscribe = session.subscribe(intents.listener(self, _REDRAW))
        self.refresh()

    def refresh(self) -> None:
        s = self.session
        cfg = s.config
        self.tokens = s.tokens()
        self.exact = count_tokens(s.path())
        self.idle = None if s.last_turn_end is None else s.clock - s.last_turn_end
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
        of = f" of {window:,} window" if window else " (no window)"
        idle_bits = []
        for st in getattr(cfg, "strategies", ()) or ():
            if getattr(st, "idle_secs", None) is not None:
                idle_bits.append(f"{st.use} after {_duration(st.idle_secs)} idle")
        if self.idle is None:
            idle_text = "no turn has ended yet"
        else:
            idle_text = f"idle {_duration(self.idle)} since the last turn ended"
        if idle_bits:
            idle_text += " · " + ", ".join(idle_bits)
        strategies = ", ".join(esc(st.use) for st in getattr(cfg, "strategies", ()) or ()) or "none"
        self.bar.value = (
            f'<div><span class="clw-title">Context</span> '
            f'<b style="color:{color}">{self.tokens:,}</b> tokens{of} '
            f'<span class="clw-muted">(engine count: last reported input + chars/4 since)</span></div>'
            f'<div class="clw-gauge-track"><div class="clw-gauge-fill" '
            f'style="width:{pct(self.tokens):.2f}%;background:{color}"></div>{mark_html}</div>'
            f'<div class="clw-muted">exact count of the active path (o200k_base): <b>{self.exact:,}</b> tokens'
            f' · {esc(idle_text)} · strategies: {strategies}</div>'
        )

    def close(self) -> None:
        self._unsubscribe()
        super().close()

    def __repr__(self) -> str:
        return f"ContextGauge(tokens={self.tokens}, exact={self.exact}, window={getattr(self.session.config, 'window', None)})"
