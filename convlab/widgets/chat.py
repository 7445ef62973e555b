"""The active path as a chat, with the protocol's ways to branch.

The chat redraws its messages only when the active path changes; the path
is followed from the head up to where it meets the path drawn before, so a
reply costs one step, not a walk of the whole path. Only the newest
``limit`` messages of the path get rows; a button shows the earlier ones.
The rows are one widget drawn by ``static/chat.js`` (``_Messages``): Python
makes each row once while it stays shown and sends them together, and the
browser sends back what a click asks. A reply that streams (``llm.delta``)
shows in a row of its own until the recorded message replaces it.

Message content is untrusted: the browser sets it as text (``textContent``),
never as HTML, and edits it in a plain ``textarea``; what goes into an
``HTML`` widget here (the title, the status) is escaped (``html.escape``).
"""

from __future__ import annotations

import html
import json
import pathlib
from collections.abc import Mapping
from typing import Any

import anywidget
import ipywidgets as w
import traitlets

from ..text import brief, readable
from . import intents
from .home import Home
from .live import INTERVAL, Live, hold, kinds
from .source import REPLAY_HINT, Given, source_of

__all__ = ["ChatView", "ROLE_COLORS", "STYLE"]

_STATIC = pathlib.Path(__file__).parent / "static"

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
.clw-badge { font-weight: 600; font-size: 11.5px; color: #94a3b8; }
.clw-merged { color: #0e7490; font-style: italic; font-size: 11.5px; }
ROLE_RULES
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
</style>""".replace("ROLE_RULES", "\n".join(
    f".clw-badge.clw-role-{role} {{ color: {color}; }}" for role, color in ROLE_COLORS.items()))


def _role(node: Mapping[str, Any]) -> str:
    """What a row shows a message as: its role, or ``summary``."""
    return "summary" if node.get("kind") == "summary" else str(node.get("role", "?"))


def esc(value: object) -> str:
    """Escape anything for an ipywidgets ``HTML`` value."""
    return html.escape(str(value), quote=True)


def duration(secs: float) -> str:
    """A span of the session's clock as the Lab says it (the gauge's idle time, the event log's times): seconds under
    a minute and a half, minutes under an hour and a half, then hours.

    >>> duration(0.4), duration(75), duration(600), duration(7200)
    ('0 s', '75 s', '10 min', '2.0 h')
    """
    secs = max(0.0, float(secs))
    if secs < 90:
        return f"{secs:.0f} s"
    if secs < 5400:
        return f"{secs / 60:.0f} min"
    return f"{secs / 3600:.1f} h"


def merged_leaf(node: Mapping[str, Any]) -> str | None:
    """The leaf of the branch a message merged back (``metadata["merged_from"]``, ``Session.merge``), or None: the
    mark the tree view and the chat draw beside it.

    >>> merged_leaf({"metadata": {"merged_from": {"leaf": "a3", "ancestor": "a1"}}}), merged_leaf({"content": "hi"})
    ('a3', None)
    """
    meta = node.get("metadata")
    provenance = meta.get("merged_from") if isinstance(meta, Mapping) else None
    if not isinstance(provenance, Mapping):
        return None
    return provenance["leaf"] if isinstance(provenance.get("leaf"), str) else "?"


def role_badge(node: Mapping[str, Any]) -> str:
    role = _role(node)
    extra = ""
    if node.get("copied_from"):
        extra = f' <span class="clw-muted">copy of {esc(node["copied_from"])}</span>'
    merged = merged_leaf(node)
    if merged is not None:
        extra += f' <span class="clw-merged">⤶ merged from {esc(merged)}</span>'
    return (f'<span class="clw-badge clw-role-{esc(role)}">{esc(role)}</span> '
            f'<span class="clw-id">{esc(node.get("id"))}</span>{extra}')


def _button(description: str, tooltip: str = "", width: str = "auto", **kw: Any) -> w.Button:
    b = w.Button(description=description, tooltip=tooltip, layout=w.Layout(width=width), **kw)
    return b




class _Messages(anywidget.AnyWidget):
    """The chat's messages, drawn in the browser by ``static/chat.js``: one widget, whatever the rows.

    Python makes the rows (``show``; a row: id, role, the message it copies,
    the text, its place ``k`` of ``n`` siblings, whether it can be edited and
    regenerated) and the reply streaming now (``stream``: id and text). The
    browser gets only what it does not hold: ``{"type": "rows", "base",
    "version", "order", "set"}``, the ids shown in order and the rows new or
    changed since ``base`` (a row is one dict while it stays shown, so a reply
    sends one row, not the 40 shown). A view that missed a version, or has
    just opened, asks ``{"type": "sync"}`` and gets them all (``base`` null).
    It draws them, keeps an open editor while its row stays, and sends back
    what the person asks: ``{"type": "edit", "id", "text"}``, ``{"type":
    "regenerate", "id"}``, ``{"type": "switch", "id", "step"}``; an edit is
    answered with ``{"type": "edited", "id", "ok"}`` (the editor closes when
    it took). A row as ipywidgets was six widgets, each a message to the
    browser to open: a chat's first draw of 40 rows sent about 390.
    """

    _esm = _STATIC / "chat.js"
    _css = _STATIC / "chat.css"
    #: The reply streaming now (id, text); ``{}``: none.
    stream = traitlets.Dict().tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: The rows the browser holds, oldest first, at ``version``.
        self.rows: list[dict[str, Any]] = []
        self.version = 0
        self.on_msg(Home().wrap(self._on_sync, self))

    def show(self, rows: list[dict[str, Any]]) -> None:
        """Show ``rows``: send the browser the ids in order and the rows it does not hold."""
        held = {id(r) for r in self.rows}
        new = [r for r in rows if id(r) not in held]
        order = [r["id"] for r in rows]
        if not new and order == [r["id"] for r in self.rows]:
            return
        self.rows = rows
        self.version += 1
        self.send({"type": "rows", "base": self.version - 1, "version": self.version, "order": order, "set": new})

    def _on_sync(self, _widget: object, content: object, _buffers: object) -> None:
        if isinstance(content, dict) and content.get("type") == "sync":
            self.send({"type": "rows", "base": None, "version": self.version,
                       "order": [r["id"] for r in self.rows], "set": self.rows})


#: Events that change what the chat shows.
_EVENTS = ("message.new", "head.moved", "context.replaced", "turn.", "decision.", "llm.delta", "llm.failed")
_TURN_END = ("turn.completed", "turn.cancelled", "turn.failed")


def _state(raw: str) -> tuple[object, str | None]:
    """The state field's value (its JSON, None when empty), and why it is not JSON (None when it is)."""
    raw = raw.strip()
    try:
        return (json.loads(raw) if raw else None), None
    except json.JSONDecodeError as err:
        return None, f"state is not JSON: {err}"


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
        self._made: dict[str, dict[str, Any]] = {}  # shown message id -> its row (what the browser holds)
        self._path_ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._moved = True  # the head may have moved since the last draw
        self._show_all = False
        self._stream: dict[str, Any] | None = None  # the reply streaming now: message_id, call_id, parts
        self.title = w.HTML()
        self.earlier = _button("Show earlier messages")
        self.earlier.on_click(self.home.wrap(lambda _b: self._toggle_earlier(), self.earlier))
        #: The messages shown, with the reply streaming now (one widget, drawn by ``chat.js``).
        self.messages = _Messages()
        self.messages.on_msg(self.home.wrap(self._on_msg, self.messages))
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
            typed = self.home.wrap(self._send_typed, self.send_button)
            box, mode, field = self.input, self.queue, self.state_field
            # what the boxes hold when Send is clicked, read where the click came, is what is sent
            self.send_button.on_click(lambda _b: typed(box.value, mode.value, field.value))
            self.interrupt_button.on_click(self.home.wrap(lambda _b: self.interrupt(), self.interrupt_button))
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
                self._show_rows()
        stream = self._stream
        self.messages.stream = {} if stream is None else {"id": stream["message_id"], "text": "".join(stream["parts"])}
        self._title()

    def _follow_path(self) -> bool:
        """Bring the path up to the head: walk up from it to the path drawn before. True if it changed."""
        tree = self.source.message_tree  # (never the networkx graph: built, it grows with every message)
        new, cur = tree.up_to(self.source.head, self._pos.__contains__)
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

    def _show_rows(self) -> None:
        """The rows of the messages shown: a row is made once while it stays shown (only its
        place among its siblings is looked at again), and the browser gets them in one message."""
        shown = self._shown_ids()
        hidden = len(self._path_ids) - len(shown)
        self.earlier.layout.display = "" if hidden or (self._show_all and len(self._path_ids) > self.limit) else "none"
        self.earlier.description = f"Show {hidden} earlier messages" if hidden else "Show only the newest"
        tree = self.source.message_tree
        made: dict[str, dict[str, Any]] = {}
        for nid in shown:
            node = tree.node(nid)
            sibs = self.source.children(node["parent"])
            k, n = sibs.index(nid) + 1, len(sibs)
            row = self._made.get(nid)
            if row is None:
                row = self._row(node, k, n)
            elif (row["k"], row["n"]) != (k, n):
                row = {**row, "k": k, "n": n}
            made[nid] = row
        self._made = made
        self.messages.show(list(made.values()))

    def _row(self, node: Mapping[str, Any], k: int, n: int) -> dict[str, Any]:
        """What the browser draws for a message: ``k`` of its ``n`` siblings."""
        role = _role(node)
        return {"id": node["id"], "role": role, "copy": node.get("copied_from"), "merged": merged_leaf(node),
                "text": readable(node.get("content")), "k": k, "n": n,
                "edit": not self.readonly, "regen": role == "assistant" and not self.readonly}

    def shown(self) -> list[dict[str, Any]]:
        """The rows the chat shows now, oldest first (copies: what the browser holds after a
        draw; the reply streaming now is ``messages.stream``)."""
        self.flush()
        return [dict(r) for r in self.messages.rows]

    def _title(self) -> None:
        n = len(self._path_ids)
        bits = [f"{n} message{'s' if n != 1 else ''} on the active path"]
        running = None
        if self.readonly:
            bits.append(f"read-only ({REPLAY_HINT})")
        else:
            live = self.live
            if live.driver is not None:
                bits.append(f"watching only: {live.driver}")
            running = live.running
            queued = live.queued
            if running:
                waiting = " (waiting for a decision)" if live.decision is not None else ""  # (pending copies the path)
                bits.append(f"turn {running} running{waiting}")
            if queued:
                bits.append("queued: " + ", ".join(queued))
            last = live.turns[-1] if live.turns and not running else None
            if last is not None and last.get("status") == "failed":  # (else the reply just never comes)
                bits.append(f"turn {last['id']} failed: {brief(last.get('error') or 'no reason given')}")
        self.title.value = (f'<span class="clw-title">Chat</span> '
                            f'<span class="clw-muted">· {esc(" · ".join(bits))}</span>')
        if self.interrupt_button is not None:
            self.interrupt_button.disabled = not running
        ok = self.last is not None and self.last.get("ok")
        self.status_line.value = (f'<span class="{"clw-status-ok" if ok else "clw-status"}">{esc(self.status)}</span>'
                                  if self.status else "")

    def _toggle_earlier(self) -> None:
        self._show_all = not self._show_all
        self._show_rows()
        self.redraw.now()

    def _done(self, outcome: dict[str, Any]) -> dict[str, Any]:
        self.last = outcome
        self.status = outcome.get("message", "")
        self.redraw.now()
        return outcome

    def _index(self, node_id: str) -> int | None:
        if not isinstance(node_id, str):
            raise TypeError(f"a message id is a str, got {type(node_id).__name__}")
        self.flush()
        return self._pos.get(node_id)

    def _gone(self, node_id: str) -> dict[str, Any]:
        if node_id not in self.source.message_tree:
            return self._done({"ok": False, "message": f"no message {node_id!r} in the tree"})
        return self._done({"ok": False, "message": f"{node_id!r} is not on the active path any more"})

    # -- intents -----------------------------------------------------------
    def edit(self, node_id: str, content: str | list[Any]) -> dict[str, Any]:
        """Send the active path up to ``node_id`` with that message changed (no id): a new branch."""
        with hold(self.source):
            index = self._index(node_id)
            shown = node_id in self._made  # (the browser's editor is on a row it was shown)
            outcome = self._gone(node_id) if index is None else self._done(intents.edit(self.source, index, content))
        if shown:
            self.messages.send({"type": "edited", "id": node_id, "ok": bool(outcome["ok"])})
        return outcome

    def regenerate(self, node_id: str) -> dict[str, Any]:
        """Send the active path without the reply ``node_id``: a new reply beside it."""
        with hold(self.source):
            index = self._index(node_id)
            return self._gone(node_id) if index is None else self._done(intents.regenerate(self.source, index))

    def _on_msg(self, _widget: object, content: object, _buffers: object) -> None:
        """What the browser asks (``chat.js``): an edit, a regenerate, a look at a sibling, on a
        message of the tree (anything else is not from chat.js: ignored, nothing echoed)."""
        if not isinstance(content, dict) or not isinstance(content.get("id"), str):
            return
        kind, nid = content.get("type"), content["id"]
        if nid not in self.source.message_tree:
            return
        if kind == "edit" and isinstance(content.get("text"), str):
            self.edit(nid, content["text"])
        elif kind == "regenerate":
            self.regenerate(nid)
        elif kind == "switch" and type(content.get("step")) is int and content["step"] in (-1, 1):
            self._switch(nid, content["step"])

    def _switch(self, node_id: str, step: int) -> dict[str, Any]:
        if type(step) is not int or step not in (-1, 1):
            raise ValueError(f"step is -1 (the previous sibling) or +1 (the next), got {step!r}")
        with hold(self.source):
            if self._index(node_id) is None:
                return self._gone(node_id)
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
        if not isinstance(text, str):
            raise TypeError(f"send takes the message's text (a str), got {type(text).__name__}")
        queue = mode.value if queue is None else queue
        if state is ...:
            state, bad = _state(field.value)
            if bad is not None:
                return self._done({"ok": False, "message": bad})
        if not text.strip():
            return self._done({"ok": False, "message": "nothing to send"})
        with hold(self.source):
            outcome = intents.send_message(self.source, text, queue, state)
            if outcome["ok"]:
                if box.value == text:  # (what was typed since the click is kept)
                    box.value = ""
                r = outcome["receipt"]
                if r.get("merged"):
                    outcome["message"] = f"merged into queued turn {r['turn_id']}"
                elif r.get("queued"):
                    outcome["message"] = f"queued as turn {r['turn_id']}"
            return self._done(outcome)

    def _send_typed(self, text: str, queue: str, raw_state: str) -> dict[str, Any]:
        """The Send button's: the input box, the queue mode and the state field as they were when it was clicked."""
        state, bad = _state(raw_state)
        if bad is not None:
            return self._done({"ok": False, "message": bad})
        return self.send(text, queue, state)

    def interrupt(self) -> dict[str, Any]:
        """``client.interrupt``: cancel the running turn."""
        with hold(self.source):
            outcome = intents.interrupt(self.source)
            if outcome["ok"]:
                outcome["message"] = f"turn {outcome['receipt']['turn_id']} cancelled"
            return self._done(outcome)

    def __repr__(self) -> str:
        self.flush()
        who = (f"conversation={self.conversation.id!r}" if self.readonly
               else f"agent={intents.agent_of(self.live)!r}")
        return f"ChatView({who}, path={len(self._path_ids)}, head={self.source.head!r})"
