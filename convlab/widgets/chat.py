"""The active path as a chat, with the protocol's ways to branch.

The chat redraws its messages only when the active path changes; the path
is followed from the head up to where it meets the path drawn before, so a
reply costs one step, not a walk of the whole path. Only the newest
``limit`` messages of the path get rows; a button shows the earlier ones.
Rows are ipywidgets composites, costly to make, so a row is re-bound to
another message when the chat moves on (a burst of replies reuses the same
rows). A reply that streams (``llm.delta``) shows in a row of its own until
the recorded message replaces it.

Message content is untrusted: it is escaped (``html.escape``) before it goes
into an ``HTML`` widget, and edited in a ``Textarea`` (plain text).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as w
from ipywidgets.widgets.widget_string import HTMLStyle, LabelStyle

from .. import readable
from . import intents
from .live import INTERVAL, Live, close_inside, hold, kinds
from .source import REPLAY_HINT, Given, source_of

__all__ = ["ChatView", "ROLE_COLORS", "STYLE"]

ROLE_COLORS = {"user": "#2563eb", "assistant": "#059669", "system": "#64748b", "tool": "#d97706", "summary": "#7c3aed"}

#: CSS shared by the ipywidgets panels (trusted: no message content in it).
STYLE = """<style>
.clw { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 13px; color: #1e293b; }
.clw .widget-html-content, .clw .jupyter-widget-html-content { line-height: 1.5; }
.clw-box { border: 1px solid #e2e8f0; border-radius: 8px; padding: 8px 10px; background: #fff; }
.clw-title { font-weight: 600; font-size: 13px; color: #0f172a; }
.clw-muted { color: #64748b; font-size: 12px; }
.clw-msg { border-left: 3px solid #cbd5e1; padding: 3px 8px; margin: 3px 0; background: #f8fafc; border-radius: 0 6px 6px 0; }
.clw-msg-user { border-left-color: #2563eb; background: #eff6ff; }
.clw-msg-assistant { border-left-color: #059669; background: #f0fdf4; }
.clw-msg-system { border-left-color: #64748b; }
.clw-msg-tool { border-left-color: #d97706; background: #fffbeb; }
.clw-msg-summary { border-left-color: #7c3aed; background: #f5f3ff; }
.clw-streaming .clw-text { color: #475569; }
.clw-badge { font-weight: 600; font-size: 11.5px; }
.clw-id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11px; color: #94a3b8; }
.clw-text { white-space: pre-wrap; word-break: break-word; line-height: 1.4; }
.clw-status { color: #b45309; }
.clw-status-ok { color: #047857; }
.clw-small button, .clw-small .widget-button { font-size: 11.5px; }
.clw-log { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11.5px; line-height: 1.5; }
.clw-log .clw-t { color: #64748b; }
.clw-log .clw-ty { font-weight: 600; }
.clw-gauge-track { position: relative; height: 16px; background: #f1f5f9; border-radius: 4px; overflow: visible; margin: 6px 0 18px 0; }
.clw-gauge-fill { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 4px; }
.clw-gauge-mark { position: absolute; top: -3px; bottom: -3px; width: 2px; }
.clw-gauge-mark span { position: absolute; top: 19px; left: -80px; width: 160px; text-align: center; font-size: 10.5px; white-space: nowrap; }
</style>"""


def esc(value: object) -> str:
    """Escape anything for an ipywidgets ``HTML`` value."""
    return html.escape(str(value), quote=True)


def role_badge(node: Mapping[str, Any]) -> str:
    role = "summary" if node.get("kind") == "summary" else node.get("role", "?")
    color = ROLE_COLORS.get(role, "#94a3b8")
    extra = ""
    if node.get("copied_from"):
        extra = f' <span class="clw-muted">copy of {esc(node["copied_from"])}</span>'
    return (f'<span class="clw-badge" style="color:{color}">{esc(role)}</span> '
            f'<span class="clw-id">{esc(node.get("id"))}</span>{extra}')


def _button(description: str, tooltip: str = "", width: str = "auto", **kw: Any) -> w.Button:
    b = w.Button(description=description, tooltip=tooltip, layout=w.Layout(width=width), **kw)
    return b


class _Kit:
    """Layouts and styles shared by every row of a chat (each ipywidget otherwise makes its own two)."""

    def __init__(self) -> None:
        self.auto = w.Layout(width="auto")
        self.auto_hidden = w.Layout(width="auto", display="none")
        self.arrow = w.Layout(width="28px")
        self.plain = w.Layout()
        self.hidden = w.Layout(display="none")
        self.center = w.Layout(align_items="center")
        self.push = w.Layout(width="auto", margin="0 0 0 auto")  # the first button: pushed to the right end
        self.row = w.Layout(flex="0 0 auto")  # never squeezed by the scroll box
        self.button = w.ButtonStyle()
        self.html = HTMLStyle()
        self.label = LabelStyle()

    def widgets(self) -> list[w.Widget]:
        return list(vars(self).values())

    def make_button(self, description: str, tooltip: str, layout: w.Layout) -> w.Button:
        return w.Button(description=description, tooltip=tooltip, layout=layout, style=self.button)

    def make_html(self, value: str = "") -> w.HTML:
        return w.HTML(value=value, layout=self.plain, style=self.html)


def _role(node: Mapping[str, Any]) -> str:
    """What a row shows a message as: its role, or ``summary``."""
    return "summary" if node.get("kind") == "summary" else node["role"]


def _text_html(text: str) -> str:
    return f'<div class="clw-text">{esc(text)}</div>'


class _MessageRow(w.VBox):
    """One message of the path: header (role, id, ‹ k/n ›, Edit, Regenerate), text, edit area.

    A row shows one message at a time (``bind``); the chat binds it to
    another when it moves on, instead of making new widgets. The ‹ k/n ›
    arrows and the edit area are made the first time they are needed. A new
    row is made showing its first message (``node``): its widgets open with
    their values and classes, no update follows (a chat's first draw makes
    ``limit`` rows, and in a kernel every message to the browser costs).
    """

    children: Sequence[Any]  # the VBox's trait (ipywidgets has no types), named for mypy only

    def __init__(self, chat: ChatView, node: Mapping[str, Any]) -> None:
        kit = chat._kit
        self.chat = chat
        self.node_id: str | None = node["id"]
        self.role: str | None = _role(node)
        self.content = readable(node.get("content"))
        self.header = kit.make_html(role_badge(node))
        self.nav: w.HBox | None = None  # ‹ k/n ›, made at the first fork
        self.edit_button = self.regen_button = None
        buttons = []
        if not chat.readonly:
            self.edit_button = kit.make_button("Edit", "send the view with this message changed: a new branch", kit.push)
            self.regen_button = kit.make_button("Regenerate", "send the view without this reply: a new reply beside it",
                                                kit.auto if self.role == "assistant" else kit.auto_hidden)
            buttons = [self.edit_button, self.regen_button]
            self.edit_button.on_click(lambda _b: self._open_editor(True))
            self.regen_button.on_click(lambda _b: chat.regenerate(self.node_id))
        self.text = kit.make_html(_text_html(self.content))
        self.editor: w.Textarea | None = None  # made on the first Edit: most rows are never edited
        self.edit_box: w.VBox | None = None
        self.top = w.HBox([self.header, *buttons], layout=kit.center, _dom_classes=("clw-small",))
        super().__init__([self.top, self.text], layout=kit.row, _dom_classes=("clw-msg", f"clw-msg-{self.role}"))

    def bind(self, node: Mapping[str, Any]) -> None:
        """Show ``node`` (a message of the path) in this row."""
        if node["id"] == self.node_id:
            return
        self.node_id = node["id"]
        role = _role(node)
        if role != self.role:
            if self.role is not None:
                self.remove_class(f"clw-msg-{self.role}")
            self.add_class(f"clw-msg-{role}")
            self.role = role
            if self.regen_button is not None:
                self.regen_button.layout = self.chat._kit.auto if role == "assistant" else self.chat._kit.auto_hidden
        self.header.value = role_badge(node)
        self.content = readable(node.get("content"))
        self.text.value = _text_html(self.content)
        if self.edit_box is not None:
            self.edit_box.layout.display = "none"

    def _open_editor(self, show: bool) -> None:
        editor = self.editor
        if show and editor is None:
            editor = self.editor = w.Textarea(layout=w.Layout(width="auto", height="80px"))  # auto: stretched inside the margins
            send = _button("Send edit", "a new branch with this message changed", button_style="primary")
            cancel = _button("Cancel")
            send.on_click(lambda _b: self._send_edit())
            cancel.on_click(lambda _b: self._open_editor(False))
            self.edit_box = w.VBox([editor, w.HBox([send, cancel])], layout=w.Layout(display="none"))
            self.children = [*self.children, self.edit_box]
        if show and editor is not None:
            editor.value = self.content
        if self.edit_box is not None:
            self.edit_box.layout.display = "" if show else "none"

    def _send_edit(self) -> None:
        if self.node_id is not None and self.editor is not None:  # (a pooled row shows a message while it is clicked)
            self.chat.edit(self.node_id, self.editor.value)

    def _step(self, step: int) -> None:
        if self.node_id is not None:
            self.chat._switch(self.node_id, step)

    def set_siblings(self, k: int, n: int) -> None:
        kit = self.chat._kit
        if self.nav is None:
            if n <= 1:
                return
            prev = kit.make_button("‹", "the previous sibling (look at its branch)", kit.arrow)
            nxt = kit.make_button("›", "the next sibling (look at its branch)", kit.arrow)
            prev.on_click(lambda _b: self._step(-1))
            nxt.on_click(lambda _b: self._step(+1))
            self.prev, self.next = prev, nxt
            self.count = w.Label("", layout=kit.plain, style=kit.label)
            self.nav = w.HBox([self.prev, self.count, self.next], layout=kit.plain)
            self.top.children = [self.header, self.nav, *self.top.children[1:]]
        self.nav.layout = kit.plain if n > 1 else kit.hidden
        self.count.value = f"{k}/{n}"
        self.prev.disabled = k <= 1
        self.next.disabled = k >= n

    def __repr__(self) -> str:
        return f"_MessageRow({self.node_id!r})"


#: Events that change what the chat shows.
_EVENTS = ("message.new", "head.moved", "context.replaced", "turn.", "decision.", "llm.delta", "llm.failed")
_TURN_END = ("turn.completed", "turn.cancelled", "turn.failed")


class ChatView(Live, w.VBox):
    """The active path as a chat: Edit, Regenerate, ‹ k/n › at forks, and an input box.

    Given an imported ``convlab.Conversation`` it is read-only: the path and
    ‹ k/n › between branches (moving the conversation's head in memory), no
    editing and no input box.

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> ChatView(s)
    ChatView(agent='bot', path=2, head='e1')
    """

    EVENTS = kinds(_EVENTS)

    def __init__(self, session: Given, *, limit: int = 40, interval: float = INTERVAL) -> None:
        source = source_of(session, "ChatView")  # a wrong argument raises before anything is built
        self._bind(source)
        self.limit = limit
        self.status = ""
        self.last: dict[str, Any] | None = None
        self._rows: dict[str, _MessageRow] = {}  # shown message id -> its row
        self._free: list[_MessageRow] = []  # rows to bind again
        self._path_ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._moved = True  # the head may have moved since the last draw
        self._show_all = False
        self._stream: dict[str, Any] | None = None  # the reply streaming now: message_id, call_id, parts
        self._kit = _Kit()
        self.title = w.HTML()
        self.earlier = _button("Show earlier messages")
        self.earlier.on_click(lambda _b: self._toggle_earlier())
        self.messages = w.VBox(layout=w.Layout(max_height="480px", overflow="auto", padding="0 4px 0 0"))
        self.stream_header = w.HTML()
        self.stream_text = w.HTML()
        self.stream_row = w.VBox([self.stream_header, self.stream_text], layout=w.Layout(flex="0 0 auto"))
        for cls in ("clw-msg", "clw-msg-assistant", "clw-streaming"):
            self.stream_row.add_class(cls)
        self.status_line = w.HTML()
        parts = [w.HTML(STYLE), self.title, self.earlier, self.messages]
        #: The input box and its controls (None on a read-only conversation).
        self.input = self.queue = self.state_field = self.send_button = self.interrupt_button = None
        if not self.readonly:
            self.input = w.Textarea(placeholder="Message (client.message)", layout=w.Layout(width="auto", height="60px"))
            self.queue = w.Dropdown(options=[("none", "none"), ("queue", "queue"), ("merge", "merge")],
                                    value="none", description="queue", layout=w.Layout(width="150px", flex="0 0 auto"),
                                    style={"description_width": "initial"})
            self.state_field = w.Text(placeholder="state (JSON)", layout=w.Layout(flex="1 1 auto", min_width="80px"))
            self.send_button = _button("Send", "client.message", "72px", button_style="primary")
            self.interrupt_button = _button("Interrupt", "client.interrupt: cancel the running turn", "88px",
                                            button_style="warning")
            for b in (self.send_button, self.interrupt_button):
                b.layout.flex = "0 0 auto"
            self.send_button.on_click(lambda _b: self.send())
            self.interrupt_button.on_click(lambda _b: self.interrupt())
            parts.append(w.VBox([self.input, w.HBox([self.queue, self.state_field, self.send_button,
                                                      self.interrupt_button])]))
        super().__init__([*parts, self.status_line])
        self._start(source, interval, ("clw", "clw-box", "cl-chat"))

    # -- following the session ---------------------------------------------------
    def _on_event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type", "")
        stream = self._stream
        if kind == "llm.delta":  # to subscribers only: no seq, never in session.events
            if stream is None or stream["message_id"] != event.get("message_id"):
                stream = self._stream = {"message_id": event.get("message_id"), "call_id": event.get("call_id"),
                                         "parts": []}
            stream["parts"].append(str(event.get("text") or ""))
        elif kind == "message.new":
            self._moved = True
            if stream is not None and event["message"]["id"] == stream["message_id"]:
                self._stream = None  # the recorded message replaces it
        elif kind in ("head.moved", "context.replaced"):
            self._moved = True
        elif kind == "llm.failed" or kind in _TURN_END:
            if stream is not None and (kind != "llm.failed" or event.get("call_id") == stream["call_id"]):
                self._stream = None
        elif not kind.startswith(_EVENTS):
            return
        self.redraw.touch(kind)

    def refresh(self) -> None:
        """Draw the chat again from the session."""
        self._moved = True
        self.redraw.now()

    def _show_error(self, text: str) -> None:
        self.status = text
        self.status_line.value = f'<span class="clw-status">{esc(text)}</span>'

    def _sync(self) -> None:
        if self._moved:
            self._moved = False
            if self._follow_path():
                self._bind_rows()
        stream = self._stream
        if stream is not None:
            self.stream_header.value = (role_badge({"role": "assistant", "id": stream["message_id"]})
                                        + ' <span class="clw-muted">streaming…</span>')
            self.stream_text.value = f'<div class="clw-text">{esc("".join(stream["parts"]))}</div>'
        rows = [self._rows[nid] for nid in self._shown_ids()]
        children = (*rows, self.stream_row) if stream is not None else tuple(rows)
        if children != self.messages.children:
            self.messages.children = children
        self._title()

    def _follow_path(self) -> bool:
        """Bring the path up to the head: walk up from it to the path drawn before. True if it changed."""
        nodes = self.source.tree.nodes
        new = []
        cur = self.source.head
        while cur is not None and cur not in self._pos:
            new.append(cur)
            cur = nodes[cur]["parent"]
        keep = 0 if cur is None else self._pos[cur] + 1
        if keep == len(self._path_ids) and not new:
            return False
        for nid in self._path_ids[keep:]:
            del self._pos[nid]
        del self._path_ids[keep:]
        for nid in reversed(new):
            self._pos[nid] = len(self._path_ids)
            self._path_ids.append(nid)
        return True

    def _shown_ids(self) -> list[str]:
        return self._path_ids if self._show_all else self._path_ids[-self.limit:]

    def _bind_rows(self) -> None:
        shown = self._shown_ids()
        hidden = len(self._path_ids) - len(shown)
        self.earlier.layout.display = "" if hidden or (self._show_all and len(self._path_ids) > self.limit) else "none"
        self.earlier.description = f"Show {hidden} earlier messages" if hidden else "Show only the newest"
        want = set(shown)
        for nid in [n for n in self._rows if n not in want]:
            self._free.append(self._rows.pop(nid))
        nodes = self.source.tree.nodes
        for nid in shown:
            node = nodes[nid]
            row = self._rows.get(nid)
            if row is None:
                row = self._rows[nid] = self._take(node)
                row.bind(node)
            sibs = self.source.children(node["parent"])
            row.set_siblings(sibs.index(nid) + 1, len(sibs))
        while len(self._free) > self.limit:
            row = self._free.pop(0)
            close_inside(row, keep=self._kit.widgets())
            row.close()

    def _take(self, node: Mapping[str, Any]) -> _MessageRow:
        """A free row (one that showed a message of the same role if there is one) or a new one
        (made showing ``node``)."""
        role = _role(node)
        for i in range(len(self._free) - 1, -1, -1):
            if self._free[i].role == role:
                return self._free.pop(i)
        return self._free.pop() if self._free else _MessageRow(self, node)

    def _title(self) -> None:
        n = len(self._path_ids)
        bits = [f"{n} message{'s' if n != 1 else ''} on the active path"]
        running = None
        if self.readonly:
            bits.append(f"read-only ({REPLAY_HINT})")
        else:
            live = self.live
            running = live.running
            queued = live.queued
            if running:
                waiting = " (waiting for a decision)" if live.pending is not None else ""
                bits.append(f"turn {running} running{waiting}")
            if queued:
                bits.append("queued: " + ", ".join(queued))
        self.title.value = (f'<span class="clw-title">Chat</span> '
                            f'<span class="clw-muted">· {esc(" · ".join(bits))}</span>')
        if self.interrupt_button is not None:
            self.interrupt_button.disabled = not running
        ok = self.last is not None and self.last.get("ok")
        self.status_line.value = (f'<span class="{"clw-status-ok" if ok else "clw-status"}">{esc(self.status)}</span>'
                                  if self.status else "")

    def _toggle_earlier(self) -> None:
        self._show_all = not self._show_all
        self._bind_rows()
        self.redraw.now()

    def _done(self, outcome: dict[str, Any]) -> dict[str, Any]:
        self.last = outcome
        self.status = outcome.get("message", "")
        self.redraw.now()
        return outcome

    def _index(self, node_id: str) -> int:
        self.flush()
        return self._pos[node_id]

    # -- intents -----------------------------------------------------------
    def edit(self, node_id: str, content: str | list[Any]) -> dict[str, Any]:
        """Send the active path up to ``node_id`` with that message changed (no id): a new branch."""
        with hold(self.source):
            row = self._rows.get(node_id)
            outcome = intents.edit(self.source, self._index(node_id), content)
            if outcome["ok"] and row is not None and row.node_id == node_id:
                row._open_editor(False)
            return self._done(outcome)

    def regenerate(self, node_id: str) -> dict[str, Any]:
        """Send the active path without the reply ``node_id``: a new reply beside it."""
        with hold(self.source):
            return self._done(intents.regenerate(self.source, self._index(node_id)))

    def _switch(self, node_id: str, step: int) -> dict[str, Any]:
        with hold(self.source):
            return self._done(intents.switch_sibling(self.source, node_id, step))

    def switch(self, node_id: str, step: int) -> dict[str, Any]:
        """Look at the sibling ``step`` places from ``node_id`` (‹ = -1, › = +1)."""
        return self._switch(node_id, step)

    def send(self, text: str | None = None, queue: str | None = None, state: object = ...) -> dict[str, Any]:
        """Send the input box (or ``text``) as ``client.message`` with the queue mode and state."""
        box, mode, field = self.input, self.queue, self.state_field
        if self.readonly or box is None or mode is None or field is None:  # (a read-only view has no input box)
            return self._done({"ok": False, "message": intents.READ_ONLY})
        text = box.value if text is None else text
        queue = mode.value if queue is None else queue
        if state is ...:
            raw = field.value.strip()
            try:
                state = json.loads(raw) if raw else None
            except json.JSONDecodeError as err:
                return self._done({"ok": False, "message": f"state is not JSON: {err}"})
        if not text.strip():
            return self._done({"ok": False, "message": "nothing to send"})
        with hold(self.source):
            outcome = intents.send_message(self.source, text, queue, state)
            if outcome["ok"]:
                box.value = ""
                r = outcome["receipt"]
                if r.get("merged"):
                    outcome["message"] = f"merged into queued turn {r['turn_id']}"
                elif r.get("queued"):
                    outcome["message"] = f"queued as turn {r['turn_id']}"
            return self._done(outcome)

    def interrupt(self) -> dict[str, Any]:
        """``client.interrupt``: cancel the running turn."""
        with hold(self.source):
            outcome = intents.interrupt(self.source)
            if outcome["ok"]:
                outcome["message"] = f"turn {outcome['receipt']['turn_id']} cancelled"
            return self._done(outcome)

    def _held(self) -> list[Any]:
        kit = getattr(self, "_kit", None)
        return [*getattr(self, "_free", ()), getattr(self, "stream_row", None), *(kit.widgets() if kit is not None else ())]

    def __repr__(self) -> str:
        self.flush()
        who = (f"conversation={self.conversation.id!r}" if self.readonly
               else f"agent={intents.agent_of(self.live)!r}")
        return f"ChatView({who}, path={len(self._path_ids)}, head={self.source.head!r})"
