"""The compare panel: two branches side by side, as ``convlab.compare`` gives them (an ipywidgets panel, no
custom JS). The tree view picks the two messages and makes the comparison (``TreeView.compare``); this only
shows the frame, every string escaped."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as w

from .chat import esc
from .live import close_inside

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ComparePanel", "CELL_CHARS", "HEIGHT"]

#: Characters of a message a cell shows (the frame has them all).
CELL_CHARS = 600
#: The most pixels the steps take before they scroll in their box (the summary line stays above it).
HEIGHT = 420

_CHANGE_COLOR = {"edited": "#b45309", "regenerated": "#7c3aed", "differs": "#0e7490", "same": "#64748b",
                 "only a": "#475569", "only b": "#475569"}


def _cell(role: object, text: object) -> str:
    if role is None:
        return '<td class="clw-muted">—</td>'
    body = str(text or "")
    if len(body) > CELL_CHARS:
        body = body[: CELL_CHARS - 1] + "…"
    return f'<td><b>{esc(role)}</b><div style="white-space:pre-wrap">{esc(body)}</div></td>'


class ComparePanel(w.VBox):
    """Two branches side by side: the summary line, then one row per step below their common ancestor
    (each side's role and text, what changed, the word diff). Hidden until the first comparison.

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> _ = s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "hello"}]})
    >>> p = ComparePanel(); p.show(convlab.compare(s, "e1", "e3")); p
    ComparePanel(a='e1', b='e3', steps=2)
    """

    def __init__(self) -> None:
        self.frame: pd.DataFrame | None = None
        self.html = w.HTML('<span class="clw-muted">Pick a message in the tree ("Pick to compare"), select another, '
                           'and compare their branches here.</span>')
        # shown with the first comparison; never wider than the Lab (its HTML wraps inside it)
        super().__init__([self.html], layout=w.Layout(display="none", max_width="100%", overflow="hidden"))
        self.add_class("clw-box")
        self.add_class("cl-compare-panel")

    def show(self, df: pd.DataFrame) -> None:
        """Show a frame of ``convlab.compare``: the title and the summary line, then the steps in a box of at most
        ``HEIGHT`` that scrolls (a branch of hundreds of messages stays a box in the page); long ids and unbroken
        text wrap inside the cell, never past it."""
        self.frame = df
        a, b = df.attrs["a"], df.attrs["b"]
        head = (f'<div class="clw-title" style="overflow-wrap:anywhere">{esc(a["leaf"])} ⟷ {esc(b["leaf"])}</div>'
                f'<div class="clw-muted cl-compare-summary" style="margin-bottom:6px;overflow-wrap:anywhere">'
                f'{esc(df.attrs["summary"])}</div>')
        rows = []
        for r in df.itertuples(index=False):
            color = _CHANGE_COLOR.get(str(r.change), "#475569")
            diff = f'<div class="clw-muted" style="white-space:pre-wrap">{esc(r.diff)}</div>' if r.diff else ""
            rows.append(f'<tr style="vertical-align:top"><td>{r.step}</td>{_cell(r.a_role, r.a_text)}{_cell(r.b_role, r.b_text)}'
                        f'<td><span style="color:{color};font-weight:600">{esc(r.change)}</span>{diff}</td></tr>')
        table = (f'<div class="cl-compare-scroll" style="max-height:{HEIGHT}px;overflow:auto">'
                 '<table class="cl-compare-table" style="border-collapse:collapse;width:100%;table-layout:fixed;'
                 'overflow-wrap:anywhere">'
                 '<colgroup><col style="width:3.5em"><col><col><col style="width:26%"></colgroup>'
                 f'<tr><th>step</th><th>{esc(a["leaf"])}</th><th>{esc(b["leaf"])}</th><th>change</th></tr>'
                 + "".join(rows) + "</table></div>") if rows else '<div class="clw-muted">the same message: nothing to compare</div>'
        self.html.value = head + table
        self.layout.display = ""

    def close(self) -> None:
        close_inside(self)  # its HTML, layouts and styles
        super().close()

    def __repr__(self) -> str:
        if self.frame is None:
            return "ComparePanel(empty)"
        return f"ComparePanel(a={self.frame.attrs['a']['leaf']!r}, b={self.frame.attrs['b']['leaf']!r}, steps={len(self.frame)})"
