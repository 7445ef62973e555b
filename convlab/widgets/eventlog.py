"""The event log: the session's events as they happen, newest first, one line each, filterable by type.

Every line is built from the event's own fields and escaped. Summary calls
(``llm.started`` with ``summary: true``) are marked as summary calls, never
as answers. Only the newest ``limit`` lines that pass the filter are shown.

The log appends: a draw reads only the events recorded since the one before
and puts their lines on top as one new block (an ``HTML`` widget); blocks
that fall below the newest ``limit`` lines are trimmed or dropped, and many
small blocks are merged into one. Streamed text (``llm.delta``) is not an
event of the session (no ``seq``, not in ``session.events``): the chat shows
it, the log does not.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as w
from ipywidgets.widgets.widget_string import HTMLStyle

from ..engine import Session
from ..text import brief
from .chat import STYLE, duration, esc
from .live import INTERVAL, Live
from .source import Given, source_of

__all__ = ["EventLog", "describe", "line", "origin_of"]

_COLORS = {"head": "#d97706", "context": "#7c3aed", "turn": "#2563eb", "message": "#059669",
           "llm": "#0891b2", "decision": "#db2777", "state": "#64748b", "session": "#64748b",
           "label": "#0e7490"}


def describe(ev: Mapping[str, Any]) -> str:
    """One plain-text line about an event (no type, no seq).

    >>> describe({"type": "head.moved", "from": "e2", "to": "a1"})
    'e2 -> a1'
    >>> describe({"type": "llm.started", "call_id": "llm-3", "summary": True})
    'llm-3 summary call (its text is not an answer)'
    >>> describe({"type": "label.set", "node": "e1", "label": "NYC today"})
    'e1: NYC today'
    """
    t = ev.get("type")
    if t == "head.moved":
        return f"{ev.get('from')} -> {ev.get('to')}"
    if t == "message.new":
        m = ev.get("message") or {}
        kind = "summary" if m.get("kind") == "summary" else m.get("role")
        text = f"{m.get('id')} {kind} under {m.get('parent') or 'root'}"
        if ev.get("copied_from"):
            text += f", copy of {ev['copied_from']}"
        if m.get("replaces"):
            text += f", replaces {m['replaces']}"
        return text
    if t == "context.limited":
        window = ev.get("window")
        return (f"{ev.get('reason')} · {ev.get('strategy')} · {ev.get('tokens')} tokens"
                + (f" / window {window}" if window else "") + f" · held {ev.get('call_id')}")
    if t == "context.replaced":
        return f"{ev.get('from')} -> {ev.get('to')}"
    if t == "context.kept":
        return f"{ev.get('call_id')} runs as it was" if ev.get("call_id") else ""
    if t == "turn.started":
        trig = ev.get("trigger") or {}
        return f"{trig.get('type')}" + (f" new_from {trig['new_from']}" if "new_from" in trig else "")
    if t == "turn.queued":
        turn = ev.get("turn") or {}
        return f"queue: {turn.get('queue')}"
    if t == "turn.merged":
        return f"+{len(ev.get('messages') or [])} message(s)"
    if t == "turn.cancelled":
        return str(ev.get("reason") or "")
    if t == "turn.failed":
        return str(ev.get("error") or "")
    if t == "llm.started":
        text = f"{ev.get('call_id')}"
        if ev.get("summary"):
            text += " summary call (its text is not an answer)"
        return text
    if t == "llm.completed":
        u = ev.get("usage") or {}
        return f"{ev.get('call_id')} in {u.get('input_tokens')} out {u.get('output_tokens')}" + (
            " (summary)" if ev.get("summary") else "")
    if t == "llm.failed":
        return f"{ev.get('call_id')} {ev.get('error')}"
    if t == "decision.requested":
        d = ev.get("decision") or {}
        return str(d.get("type"))
    if t == "decision.answered":
        return ", ".join(str(a.get("type")) for a in ev.get("actions") or []) or "(no actions)"
    if t == "state.changed":
        return f"at {ev.get('node')}"
    if t == "label.set":
        return f"{ev.get('node')}: {brief(ev.get('label'))[:60]}"
    if t == "label.removed":
        return f"{ev.get('node')}"
    if t == "session.started":
        return f"agent {ev.get('agent')}"
    return ""


#: Blocks of lines kept before they are merged into one.
MAX_BLOCKS = 12


def line(ev: Mapping[str, Any], origin: float = 0.0) -> str:
    """One event as a line of the log (HTML, every field escaped); its time as the Lab says a span (``duration``),
    from ``origin`` (the session's first message: a session loaded from a converted log runs on the log's clock,
    seconds since 1970, which say nothing as they are). The exact time is in the event (``session.events``).

    >>> line({"seq": 3, "time": 1770908760.5, "type": "head.moved", "from": "e1", "to": "u2"}, origin=1770908700.0)
    '<div><span class="clw-t">3 t=60 s</span> <span class="clw-ty" style="color:#d97706">head.moved</span> e1 -&gt; u2</div>'
    """
    t = str(ev.get("type"))
    color = _COLORS.get(t.split(".")[0], "#334155")
    turn = f" {ev['turn_id']}" if ev.get("turn_id") else ""
    when = ev.get("time")
    shown = duration(when - origin) if isinstance(when, (int, float)) and not isinstance(when, bool) else "?"
    return (f'<div><span class="clw-t">{esc(ev.get("seq"))} t={esc(shown)}{esc(turn)}</span> '
            f'<span class="clw-ty" style="color:{color}">{esc(t)}</span> {esc(describe(ev))}</div>')


def origin_of(events: Sequence[Mapping[str, Any]]) -> tuple[float, bool]:
    """Where the log's times count from: the time of the session's first message (``message.new``), else of its
    first event; and whether that is settled (a message was found: later events cannot change it).

    >>> origin_of([{"type": "session.started", "time": 0.0}, {"type": "message.new", "time": 1770908700.5}])
    (1770908700.5, True)
    """
    for ev in events:
        if ev.get("type") == "message.new" and isinstance(ev.get("time"), (int, float)):
            return float(ev["time"]), True
    first = events[0].get("time") if events else None
    return (float(first) if isinstance(first, (int, float)) and not isinstance(first, bool) else 0.0), False


class EventLog(Live, w.VBox):
    """The events, newest first, filterable by type.

    >>> import convlab
    >>> EventLog(convlab.Session())
    EventLog(events=1, filter='all')
    """

    EVENTS = frozenset(Session.EVENTS)  # every recorded event (a notice has no seq)
    TOUCH = True

    def __init__(self, session: Given, *, limit: int = 200, interval: float = INTERVAL) -> None:
        source = source_of(session, "EventLog", needs_session=True)  # a wrong argument raises before anything is built
        self._bind(source)
        self.limit = limit
        self.filter = w.Dropdown(options=["all"], value="all", description="type",
                                 layout=w.Layout(width="260px"), style={"description_width": "34px"})
        self.count = w.HTML()
        self.lines = w.VBox(layout=w.Layout(max_height="260px", overflow="auto"))
        self._blocks: list[tuple[w.HTML, list[Mapping[str, Any]], list[str]]] = []  # newest first
        self._block_layout, self._block_style = w.Layout(), HTMLStyle()  # shared: a block is one widget
        self._seen = 0  # events read so far
        self._types: set[str] = set()
        self._origin, self._settled = 0.0, False  # where the times count from (``origin_of``)
        self._quiet = False
        super().__init__([w.HTML(STYLE), w.HBox([w.HTML('<span class="clw-title">Events</span>'), self.filter, self.count],
                                              layout=w.Layout(align_items="center")), self.lines])
        self._start(source, interval, ("clw", "clw-box", "cl-events"), first=self._first)

    def _first(self) -> None:
        self._types = {str(ev.get("type")) for ev in self.live.events[-500:]}
        self._options()
        self.filter.observe(self.home.wrap(lambda _c: None if self._quiet else self._refilter(), self.filter), names="value")
        self._refilter()

    def refresh(self) -> None:
        """Read the events recorded since the last draw."""
        self.redraw.now()

    def _wants(self) -> Callable[[str], bool]:
        """Whether the filter shows an event of a type (the filter read once, not per event)."""
        want = self.filter.value
        if want == "all":
            return lambda _t: True
        if want.endswith(".*"):
            prefix = want[:-1]
            return lambda t: t.startswith(prefix)
        return lambda t: t == want

    def shown(self) -> list[Mapping[str, Any]]:
        """The events the log shows now (filtered, the newest ``limit``, newest first)."""
        return [ev for _block, evs, _lines in self._blocks for ev in evs]

    def _options(self) -> None:
        groups = sorted({f"{t.split('.')[0]}.*" for t in self._types if "." in t})
        options = ["all", *groups, *sorted(self._types)]
        if list(self.filter.options) != options:
            value = self.filter.value
            self._quiet = True  # new options are not a new filter (ipywidgets resets the value on the way)
            try:
                self.filter.options = options
                self.filter.value = value if value in options else "all"
            finally:
                self._quiet = False

    def _draw(self) -> None:
        events = self.live.events
        end = len(events)
        types = len(self._types)
        # every new event's type (for the filter), in one pass at C speed: a draw after a long
        # burst reads tens of thousands of events, and shows only the newest ``limit``
        self._types.update(map(_TYPE, events[self._seen:end]))
        fresh: list[Mapping[str, Any]] = []
        wanted = self._wants()
        for i in range(end - 1, self._seen - 1, -1):  # newest first, until ``limit`` are shown
            ev = events[i]
            if wanted(_type_of(ev)):
                fresh.append(ev)
                if len(fresh) >= self.limit:
                    break
        self._seen = end
        if len(self._types) != types:
            self._options()
        if fresh:
            self._put(fresh)
        self.count.value = f'<span class="clw-muted">{end} events</span>'

    def _refilter(self) -> None:
        """Show the newest ``limit`` events that pass the filter (a new filter reads back as far as it must)."""
        for block, _evs, _lines in self._blocks:
            block.close()
        self._blocks = []
        events = self.live.events
        self._types.update(map(_TYPE, events[self._seen:]))
        self._seen = len(events)
        picked: list[Mapping[str, Any]] = []
        wanted = self._wants()
        for i in range(self._seen - 1, -1, -1):
            if wanted(_type_of(events[i])):
                picked.append(events[i])
                if len(picked) >= self.limit:
                    break
        self._put(picked)
        self.count.value = f'<span class="clw-muted">{self._seen} events</span>'

    def _put(self, evs: list[Mapping[str, Any]]) -> None:
        """Put the lines of ``evs`` (newest first) on top; keep the newest ``limit`` lines."""
        if not self._settled:  # until the first message, read once it is recorded (the events before it: a few)
            self._origin, self._settled = origin_of(self.live.events)
        lines = [line(ev, self._origin) for ev in evs]
        if len(self._blocks) >= MAX_BLOCKS:  # many small blocks: one block again
            evs = evs + self.shown()
            lines = lines + [ln for _b, _e, ls in self._blocks for ln in ls]
            for block, _e, _l in self._blocks:
                block.close()
            self._blocks = []
        evs, lines = evs[: self.limit], lines[: self.limit]
        blocks = [(w.HTML(_html(lines), layout=self._block_layout, style=self._block_style), evs, lines)]
        left = self.limit - len(lines)
        for block, old_evs, old_lines in self._blocks:
            if left <= 0:
                block.close()
                continue
            if len(old_lines) > left:
                old_evs, old_lines = old_evs[:left], old_lines[:left]
                block.value = _html(old_lines)
            blocks.append((block, old_evs, old_lines))
            left -= len(old_lines)
        self._blocks = blocks
        self.lines.children = [b for b, _e, _l in blocks]


    def __repr__(self) -> str:
        return f"EventLog(events={len(self.live.events)}, filter={self.filter.value!r})"


#: A recorded event's type (every event has one).
_TYPE = operator.itemgetter("type")


def _type_of(ev: Mapping[str, Any]) -> str:
    return str(ev.get("type"))


def _html(lines: list[str]) -> str:
    return f'<div class="clw-log">{"".join(lines)}</div>'
