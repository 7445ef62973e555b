"""The active path as a chat, with the protocol's ways to branch.

Each message row is made once per message id and kept: a message never
changes, only its place (the sibling count) does, so a refresh after a
reply adds one row instead of rebuilding the chat. Only the newest
``limit`` messages of the path get rows; a button shows the earlier ones.

Message content is untrusted: it is escaped (``html.escape``) before it goes
into an ``HTML`` widget, and edited in a ``Textarea`` (plain text).
"""

from __future__ import annotations

import html
import json
from typing import Any, Mapping

import ipywidgets as w

from ..tokens import content_text
from . import intents

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


def esc(value: Any) -> str:
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


class _MessageRow(w.VBox):
    """One message of the path: header (role, id, ‹ k/n ›, Edit, Regenerate), text, edit area."""

    def __init__(self, chat: "ChatView", node: Mapping[str, Any]) -> None:
        self.chat = chat
        self.node_id = node["id"]
        self.role = node["role"]
        role = "summary" if node.get("kind") == "summary" else node["role"]
        self.header = w.HTML(role_badge(node))
        self.prev = _button("‹", "the previous sibling (look at its branch)", "28px")
        self.next = _button("›", "the next sibling (look at its branch)", "28px")
        self.count = w.Label("")
        self.nav = w.HBox([self.prev, self.count, self.next])
        self.edit_button = _button("Edit", "send the view with this message changed: a new branch")
        buttons = [self.edit_button]
        self.regen_button = None
        if node["role"] == "assistant" and node.get("kind") != "summary":
            self.regen_button = _button("Regenerate", "send the view without this reply: a new reply beside it")
            buttons.append(self.regen_button)
        self.content = content_text(node.get("content"))
        self.text = w.HTML(f'<div class="clw-text">{esc(self.content)}</div>')
        self.editor: w.Textarea | None = None  # made on the first Edit: most rows are never edited
        self.edit_box = w.VBox(layout=w.Layout(display="none"))
        top = w.HBox([self.header, self.nav, w.HBox(layout=w.Layout(flex="1")), *buttons],
                     layout=w.Layout(align_items="center"))
        top.add_class("clw-small")
        super().__init__([top, self.text, self.edit_box])
        self.add_class("clw-msg")
        self.add_class(f"clw-msg-{role}")
        self.prev.on_click(lambda _b: chat._switch(self.node_id, -1))
        self.next.on_click(lambda _b: chat._switch(self.node_id, +1))
        self.edit_button.on_click(lambda _b: self._open_editor(True))
        if self.regen_button is not None:
            self.regen_button.on_click(lambda _b: chat.regenerate(self.node_id))

    def _open_editor(self, show: bool) -> None:
        if show and self.editor is None:
            self.editor = w.Textarea(value=self.content, layout=w.Layout(width="auto", height="80px"))  # auto: stretched inside the margins
            send = _button("Send edit", "a new branch with this message changed", button_style="primary")
            cancel = _button("Cancel")
            send.on_click(lambda _b: self.chat.edit(self.node_id, self.editor.value))
            cancel.on_click(lambda _b: self._open_editor(False))
            self.edit_box.children = [self.editor, w.HBox([send, cancel])]
        self.edit_box.layout.display = "" if show else "none"

    def set_siblings(self, k: int, n: int) -> None:
        self.nav.layout.display = "" if n > 1 else "none"
        self.count.value = f"{k}/{n}"
        self.prev.disabled = k <= 1
        self.next.disabled = k >= n

    def __repr__(self) -> str:
        return f"_MessageRow({self.node_id!r})"


#: Events after which the chat redraws.
_REDRAW = ("message.new", "head.moved", "turn.", "context.replaced", "decision.")


class ChatView(w.VBox):
    """The active path as a chat: Edit, Regenerate, ‹ k/n › at forks, and an input box.

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> ChatView(s)
    ChatView(agent='bot', path=2, head='e1')
    """

    def __init__(self, session: Any, *, limit: int = 40) -> None:
        self.session = session
        self.limit = limit
        self.status = ""
        self.last: dict[str, Any] | None = None
        self._rows: dict[str, _MessageRow] = {}
        self._path_ids: list[str] = []
        self._show_all = False
        self.title = w.HTML()
        self.earlier = _button("Show earlier messages")
        self.earlier.on_click(lambda _b: self._toggle_earlier())
        self.messages = w.VBox(layout=w.Layout(max_height="480px", overflow="auto", padding="0 4px 0 0"))
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
        self.status_line = w.HTML()
        self.send_button.on_click(lambda _b: self.send())
        self.interrupt_button.on_click(lambda _b: self.interrupt())
        composer = w.VBox([self.input, w.HBox([self.queue, self.state_field, self.send_button, self.interrupt_button])])
        super().__init__([w.HTML(STYLE), self.title, self.earlier, self.messages, composer, self.status_line])
        self.add_class("clw")
        self.add_class("clw-box")
        self.add_class("cl-chat")
        self._unsubscribe = session.subscribe(intents.listener(self, _REDRAW))
        self.refresh()

    # -- drawing -----------------------------------------------------------
    def refresh(self) -> None:
        s = self.session
        path = s.path()
        self._path_ids = [n["id"] for n in path]
        shown = path if self._show_all else path[-self.limit:]
        hidden = len(path) - len(shown)
        self.earlier.layout.display = "" if hidden or self._show_all and len(path) > self.limit else "none"
        self.earlier.description = f"Show {hidden} earlier messages" if hidden else "Show only the newest"
        rows = []
        for node in shown:
            row = self._rows.get(node["id"])
            if row is None:
                row = self._rows[node["id"]] = _MessageRow(self, node)
            sibs = intents.siblings(s, node["id"])
            row.set_siblings(sibs.index(node["id"]) + 1, len(sibs))
            rows.append(row)
        self.messages.children = rows
        running = [t["id"] for t in s.turns if t["status"] == "running"]
        queued = [t["id"] for t in s.turns if t["status"] == "queued"]
        bits = [f"{len(path)} message{'s' if len(path) != 1 else ''} on the active path"]
        if running:
            waiting = " (waiting for a decision)" if s.pending is not None else ""
            bits.append(f"turn {running[0]} running{waiting}")
        if queued:
            bits.append("queued: " + ", ".join(queued))
        self.title.value = (f'<span class="clw-title">Chat</span> '
                            f'<span class="clw-muted">· {esc(" · ".join(bits))}</span>')
        self.interrupt_button.disabled = not running
        ok = self.last is not None and self.last.get("ok")
        self.status_line.value = (f'<span class="{"clw-status-ok" if ok else "clw-status"}">{esc(self.status)}</span>'
                                  if self.status else "")

    def _toggle_earlier(self) -> None:
        self._show_all = not self._show_all
        self.refresh()

    def _done(self, outcome: dict[str, Any]) -> dict[str, Any]:
        self.last = outcome
        self.status = outcome.get("message", "")
        self.refresh()
        return outcome

    def _index(self, node_id: str) -> int:
        return self._path_ids.index(node_id)

    # -- intents -----------------------------------------------------------
    def edit(self, node_id: str, content: Any) -> dict[str, Any]:
        """Send the active path up to ``node_id`` with that message changed (no id): a new branch."""
        outcome = intents.edit(self.session, self._index(node_id), content)
        if outcome["ok"] and node_id in self._rows:
            self._rows[node_id]._open_editor(False)
        return self._done(outcome)

    def regenerate(self, node_id: str) -> dict[str, Any]:
        """Send the active path without the reply ``node_id``: a new reply beside it."""
        return self._done(intents.regenerate(self.session, self._index(node_id)))

    def _switch(self, node_id: str, step: int) -> dict[str, Any]:
        return self._done(intents.switch_sibling(self.session, node_id, step))

    def switch(self, node_id: str, step: int) -> dict[str, Any]:
        """Look at the sibling ``step`` places from ``node_id`` (‹ = -1, › = +1)."""
        return self._switch(node_id, step)

    def send(self, text: str | None = None, queue: str | None = None, state: Any = ...) -> dict[str, Any]:
        """Send the input box (or ``text``) as ``client.message`` with the queue mode and state."""
        text = self.input.value if text is None else text
        queue = self.queue.value if queue is None else queue
        if state is ...:
            raw = self.state_field.value.strip()
            try:
                state = json.loads(raw) if raw else None
            except json.JSONDecodeError as err:
                return self._done({"ok": False, "message": f"state is not JSON: {err}"})
        if not text.strip():
            return self._done({"ok": False, "message": "nothing to send"})
        outcome = intents.send_message(self.session, text, queue, state)
        if outcome["ok"]:
            self.input.value = ""
            r = outcome["receipt"]
            if r.get("merged"):
                outcome["message"] = f"merged into queued turn {r['turn_id']}"
            elif r.get("queued"):
                outcome["message"] = f"queued as turn {r['turn_id']}"
        return self._done(outcome)

    def interrupt(self) -> dict[str, Any]:
        """``client.interrupt``: cancel the running turn."""
        outcome = intents.interrupt(self.session)
        if outcome["ok"]:
            outcome["message"] = f"turn {outcome['receipt']['turn_id']} cancelled"
        return self._done(outcome)

    def close(self) -> None:
        self._unsubscribe()
        super().close()

    def __repr__(self) -> str:
        return f"ChatView(agent={intents.agent_of(self.session)!r}, path={len(self._path_ids)}, head={self.session.head!r})"
