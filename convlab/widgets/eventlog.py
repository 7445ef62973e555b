"""The event log: the session's events as they happen, newest first, one line each, filterable by type.

Every line is built from the event's own fields and escaped. Summary calls
(``llm.started`` with ``summary: true``) are marked as summary calls, never
as answers. Only the newest ``limit`` lines that pass the filter are shown.
"""

from __future__ import annotations

from typing import Any, Mapping

import ipywidgets as w

from .chat import STYLE, esc
from . import intents

__all__ = ["EventLog", "describe"]

_COLORS = {"head": "#d97706", "context": "#7c3aed", "turn": "#2563eb", "message": "#059669",
           "llm": "#0891b2", "decision": "#db2777", "state": "#64748b", "session": "#64748b"}


def describe(ev: Mapping[str, Any]) -> str:
    """One plain-text line about an event (no type, no seq).

    >>> describe({"type": "head.moved", "from": "e2", "to": "a1"})
    'e2 -> a1'
    >>> describe({"type": "llm.started", "call_id": "llm-3", "summary": True})
    'llm-3 summary call (its text is not an answer)'
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
    if t == "session.started":
        return f"agent {ev.get('agent')}"
    return ""


class EventLog(w.VBox):
    """The events, newest first, filterable by type.

    >>> import convlab
    >>> EventLog(convlab.Session())
    EventLog(events=1, filter='all')
    """

    def __init__(self, session: Any, *, limit: int = 200) -> None:
        self.session = session
        self.limit = limit
        self.filter = w.Dropdown(options=["all"], value="all", description="type",
                                 layout=w.Layout(width="260px"), style={"description_width": "34px"})
        self.count = w.HTML()
        self.lines = w.HTML(layout=w.Layout(max_height="260px", overflow="auto"))
        self.filter.observe(lambda _c: self.refresh(), names="value")
        super().__init__([w.HTML(STYLE), w.HBox([w.HTML('<span class="clw-title">Events</span>'), self.filter, self.count],
                                              layout=w.Layout(align_items="center")), self.lines])
        self.add_class("clw")
        self.add_class("clw-box")
        self.add_class("cl-events")
        self._types: set[str] = set()
        self._unsubscribe = session.subscribe(intents.listener(self, ("",)))
        self.refresh()

    def shown(self) -> list[Mapping[str, Any]]:
        """The events the log shows now (filtered, the newest ``limit``, newest first)."""
        want = self.filter.value
        out = []
        for ev in reversed(self.session.events):
            if want == "all" or ev.get("type") == want or (want.endswith(".*") and str(ev.get("type")).startswith(want[:-1])):
                out.append(ev)
                if len(out) >= self.limit:
                    break
        return out

    def refresh(self) -> None:
        events = self.session.events
        types = {ev.get("type") for ev in events[-500:]} | self._types
        if types != self._types:
            self._types = types
            groups = sorted({f"{t.split('.')[0]}.*" for t in types if "." in t})
            options = ["all", *groups, *sorted(types)]
            value = self.filter.value
            self.filter.options = options
            self.filter.value = value if value in options else "all"
        rows = []
        for ev in self.shown():
            t = str(ev.get("type"))
            color = _COLORS.get(t.split(".")[0], "#334155")
            turn = f" {ev['turn_id']}" if ev.get("turn_id") else ""
            rows.append(f'<div><span class="clw-t">{esc(ev.get("seq"))} t={esc(ev.get("time"))}{esc(turn)}</span> '
                        f'<span class="clw-ty" style="color:{color}">{esc(t)}</span> {esc(describe(ev))}</div>')
        self.lines.value = f'<div class="clw-log">{"".join(rows)}</div>'
        self.count.value = f'<span class="clw-muted">{len(events)} events</span>'

    def close(self) -> None:
        self._unsubscribe()
        super().close()

    def __repr__(self) -> str:
        return f"EventLog(events={len(self.session.events)}, filter={self.filter.value!r})"
