"""The decision panel: a person answers the engine's decisions (``worker="manual"``).

For ``context.limit`` it shows why the call is held, the held call, and the
proposed plan with its summary text editable. The summary is labelled as
what it is, the text of a summary call, never shown as an answer (the seed
page: "Do not show its text as an answer").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as w

from ..context import kept
from ..engine import SUMMARY_PREFIX
from ..text import readable
from . import intents
from .chat import STYLE, esc, role_badge
from .live import INTERVAL, Live, close_inside, hold, kinds
from .source import Given, source_of

__all__ = ["DecisionPanel", "plan_text", "plan_html", "reset_plan", "accept_plan", "summary_in", "with_summary"]


#: A plan line names the messages a replace keeps when they are this few; more are a count, listed folded.
NAMED_KEPT = 3


def _kept(a: Mapping[str, Any]) -> list[str]:
    return [str(m.get("id") or "(new)") for m in a.get("messages") or ()]


def _action_text(a: Mapping[str, Any]) -> str:
    kind = a.get("type")
    if kind == "context.replace":
        listed = _kept(a)
        kept = [i for i in listed if i != "(new)"]
        new = len(listed) - len(kept)
        bits = []
        if a.get("summary") is not None:
            bits.append("a summary")
        if kept:
            named = f" ({', '.join(kept)})" if len(kept) <= NAMED_KEPT else ""
            bits.append(f"{len(kept):,} kept message{'s' if len(kept) != 1 else ''}{named}")
        if new:
            bits.append(f"{new:,} new message{'s' if new != 1 else ''}")
        return "context.replace: a new branch at the root with " + (" + ".join(bits) or "nothing")
    if kind == "llm.call":
        return f"llm.call {a.get('id') or ''}".rstrip() + (" (the held call)" if a.get("id") else "")
    return str(kind)


def plan_text(actions: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per action of a plan.

    >>> plan_text([{"type": "context.replace", "summary": "s", "messages": [{"id": "u9"}]}, {"type": "llm.call", "id": "llm-7"}])
    ['context.replace: a new branch at the root with a summary + 1 kept message (u9)', 'llm.call llm-7 (the held call)']
    >>> plan_text([{"type": "context.replace", "messages": [{"id": f"m{i}"} for i in range(40)] + [{"role": "user"}]}])
    ['context.replace: a new branch at the root with 40 kept messages + 1 new message']
    >>> plan_text([{"type": "context.replace", "messages": [{"id": "u1"}, {"role": "user"}, {"id": "q3"}]}])
    ['context.replace: a new branch at the root with 2 kept messages (u1, q3) + 1 new message']
    """
    return [_action_text(a) for a in actions]


def plan_html(actions: Sequence[Mapping[str, Any]]) -> str:
    """A plan as the panel shows it: one numbered line per action (``plan_text``), and under a replace that keeps
    more than ``NAMED_KEPT`` messages their ids in a folded list (a count first: a summary from early in a long
    session keeps hundreds, and the summary to edit stays in view). Every string escaped.

    >>> html = plan_html([{"type": "context.replace", "messages": [{"id": f"m{i}"} for i in range(5)]}])
    >>> "5 kept messages" in html, "<details" in html, "m4" in html
    (True, True, True)
    """
    items = []
    for a, text in zip(actions, plan_text(actions), strict=True):
        listed = _kept(a) if a.get("type") == "context.replace" else []
        many = sum(i != "(new)" for i in listed) > NAMED_KEPT
        folded = ("<details class='cl-kept'><summary class='clw-muted'>the kept messages, in order</summary>"
                  "<div class='clw-muted' style='max-height:120px;overflow:auto;overflow-wrap:anywhere'>"
                  f"{esc(', '.join(listed))}</div></details>") if many else ""
        items.append(f"<li>{esc(text)}{folded}</li>")
    return f"<ol style='margin:2px 0 4px 0'>{''.join(items)}</ol>"


def accept_plan(decision: Mapping[str, Any], summary: str | None) -> list[dict[str, Any]]:
    """``proposed``, with the (edited) summary text put into its ``context.replace``."""
    plan = copy.deepcopy(list(decision.get("proposed") or []))
    if summary is not None:
        for a in plan:
            if a.get("type") == "context.replace" and "summary" in a:
                a["summary"] = summary
    return plan


def summary_in(plan: Sequence[Mapping[str, Any]]) -> str | None:
    """The summary text a plan's ``context.replace`` holds: its ``summary``, or the message it holds in the place
    of what it summarizes (``Session.summarize`` from a later message: ``metadata.summary_of``), without its prefix.

    >>> summary_in([{"type": "context.replace", "messages": [{"role": "user", "content": "The earlier conversation was "
    ...             "summarized:\\n\\nwe met", "metadata": {"summary_of": {"start": "u2", "end": "a3"}}}]}])
    'we met'
    """
    for a in plan:
        if a.get("type") != "context.replace":
            continue
        if a.get("summary") is not None:
            return str(a["summary"])
        for m in a.get("messages") or ():
            if isinstance(m.get("metadata"), Mapping) and "summary_of" in m["metadata"]:
                return str(m.get("content") or "").removeprefix(SUMMARY_PREFIX)
    return None


def with_summary(plan: Sequence[Mapping[str, Any]], text: str) -> list[dict[str, Any]]:
    """``plan`` with its summary text (``summary_in``) replaced by ``text`` (a copy)."""
    out = copy.deepcopy([dict(a) for a in plan])
    for a in out:
        if a.get("type") != "context.replace":
            continue
        if a.get("summary") is not None:
            a["summary"] = text
        for m in a.get("messages") or ():
            if isinstance(m.get("metadata"), Mapping) and "summary_of" in m["metadata"]:
                m["content"] = SUMMARY_PREFIX + text
    return out


def reset_plan(decision: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Reset instead: replace the history with only the pending input, then run the held call.
    ``None`` when there is no pending input (a replace with nothing is a bad action)."""
    keep = [dict(m) for m in kept(reversed(decision.get("messages") or []))]
    if not keep:
        return None
    return [{"type": "context.replace", "messages": keep}, {"type": "llm.call", "id": decision["call"]["id"]}]


_EVENTS = ("decision.", "turn.")


class DecisionPanel(Live, w.VBox):
    """The waiting decision and buttons that answer it.

    >>> import convlab
    >>> DecisionPanel(convlab.Session(worker="manual"))
    DecisionPanel(pending=None)
    """

    EVENTS = kinds(_EVENTS)

    def __init__(self, session: Given, *, interval: float = INTERVAL) -> None:
        session = source_of(session, "DecisionPanel", needs_session=True)  # raises before anything is built
        self._bind(session)
        self.status = ""
        self.last: dict[str, Any] | None = None
        #: A plan a person made (``propose``: "summarize from here"), shown with the next decision that waits.
        self.proposal: list[dict[str, Any]] | None = None
        self._shown: Any = ()
        self.summary = w.Textarea(layout=w.Layout(width="auto", height="84px"))  # auto: 100% would overflow its margins
        self.body = w.VBox()
        self.buttons: dict[str, w.Button] = {}
        super().__init__([w.HTML(STYLE), self.body])
        self._start(session, interval, ("clw", "clw-box", "cl-decisions"))

    # -- drawing -----------------------------------------------------------
    def _on_event(self, event: Mapping[str, Any]) -> None:
        kind = str(event.get("type", ""))
        if kind == "decision.requested":
            self.redraw.mark(kind)  # a worker may answer it at once: shown if it still waits at the next draw
        elif kind.startswith(_EVENTS):
            self.redraw.touch(kind)

    def refresh(self) -> None:
        """Draw the panel again (it keeps what the person is editing while the decision stays the same)."""
        self.redraw.now()

    def _show_error(self, text: str) -> None:
        self.body.children = [w.HTML(f'<span class="clw-status">{esc(text)}</span>')]
        self._shown = ()

    def _sync(self) -> None:
        waiting = self.live.decision  # O(1); ``pending`` copies the path, read only to show a new one
        key = (None if waiting is None else self._decision_seq(), self.status)
        if key == self._shown:
            return  # the same decision: keep what the person is editing
        self._shown = key
        pending = None if waiting is None else self.live.pending
        self.buttons = {}
        title = w.HTML()
        children: list[w.Widget] = [title]
        if pending is None:
            title.value = '<span class="clw-title">Decision</span> <span class="clw-muted">· none waiting</span>'
        else:
            kind = pending["type"]
            title.value = (f'<span class="clw-title">Decision: {esc(kind)}</span> '
                           f'<span class="clw-muted">· turn {esc(pending.get("turn_id"))} waits for you</span>')
            if kind == "context.limit":
                children += self._context_limit(pending)
            elif kind == "llm.result":
                children += self._llm_result(pending)
            else:
                children += self._turn_start(pending)
            if self.proposal is not None and kind != "context.limit":
                children += self._proposed()
        if self.status:
            children.append(w.HTML(f'<span class="clw-status">{esc(self.status)}</span>'))
        old = [c for c in self.body.children if c is not self.summary]
        self.body.children = children
        close_inside(*old)  # the last decision's widgets (the summary box is kept)
        for c in old:
            c.close()

    def _decision_seq(self) -> int | None:
        for ev in reversed(self.live.events):
            if ev.get("type") == "decision.requested":
                return ev.get("seq")
        return None

    def _button(self, key: str, text: str, actions: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]] | None, tooltip: str,
                style: str = "") -> w.Button:
        b = w.Button(description=text, tooltip=tooltip, button_style=style, layout=w.Layout(width="auto"))
        b.disabled = actions is None
        if actions is not None:
            asked = self._asked()  # the decision this button answers
            b.on_click(self.home.wrap(lambda _b: self._answer_asked(asked, actions), b))
        self.buttons[key] = b
        return b

    def _asked(self) -> int | None:
        """The decision waiting now, as its request's ``seq`` (None: none waits)."""
        return None if self.live.decision is None else self._decision_seq()

    def _answer_asked(self, asked: int | None,
                      actions: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]]) -> dict[str, Any]:
        """A button's answer, to the decision it was drawn for only: one answered meanwhile (a cell, a
        second click that waited) leaves the next decision to be looked at first."""
        if asked is None or self._asked() != asked:
            with hold(self.live):
                self.last = {"ok": False, "message": "that decision was answered already: the panel shows what waits now"}
                self.status = self.last["message"]
                self.redraw.now()
            return self.last
        return self.answer(actions() if callable(actions) else actions)

    def _context_limit(self, d: Mapping[str, Any]) -> list[w.Widget]:
        call = d.get("call") or {}
        req = call.get("request") or {}
        window = d.get("window")
        facts = (f'reason <b>{esc(d.get("reason"))}</b> · strategy <b>{esc(d.get("strategy"))}</b> · '
                 f'<b>{int(d.get("tokens") or 0):,}</b> tokens'
                 + (f' of a {int(window):,} window' if window else " (no window)"))
        held = (f'held call <b>{esc(call.get("id"))}</b> · llm {esc(call.get("llm"))} · '
                f'model {esc(req.get("model") or "default")} · {len(req.get("messages") or [])} messages'
                + (" · stream" if call.get("stream") else ""))
        proposed = list(d.get("proposed") or [])
        out: list[w.Widget] = [
            w.HTML(f"<div>{facts}</div><div class='clw-muted'>{held}</div>"
                   f"<div style='margin-top:4px'>proposed:</div>{plan_html(proposed)}"),
        ]
        replace = next((a for a in proposed if a.get("type") == "context.replace"), None)
        has_summary = replace is not None and replace.get("summary") is not None
        if replace is not None and has_summary:
            self.summary.value = str(replace["summary"])
            out.append(w.HTML('<span class="clw-badge" style="color:#7c3aed">summary</span> '
                              '<span class="clw-muted">written by a summary call: it is not an answer and is not '
                              'in the conversation unless the replace runs. Edit it before accepting.</span>'))
            out.append(self.summary)
        for m in (replace or {}).get("messages") or []:
            out.append(w.HTML(f'<div class="clw-msg">{role_badge(m)} <span class="clw-muted">kept</span>'
                              f'<div class="clw-text">{esc(readable(m.get("content")))}</div></div>'))
        reset = reset_plan(d)
        as_was = [{"type": "llm.call", "id": call.get("id")}]
        out.append(w.HBox([
            self._button("accept", "Accept proposed",
                         lambda: accept_plan(d, self.summary.value if has_summary else None),
                         "run the proposed plan (with the summary as edited)", "success"),
            self._button("as_was", "Run the call as it was", as_was, "llm.call with the held call's id"),
            self._button("reset", "Reset instead", reset,
                         "context.replace with only the pending input, then the held call"),
            self._button("end", "End the turn", [{"type": "turn.end"}], "turn.end", "danger"),
        ]))
        return out

    def _turn_start(self, d: Mapping[str, Any]) -> list[w.Widget]:
        msgs = d.get("messages") or []
        last = msgs[-1] if msgs else None
        trig = d.get("trigger") or {}
        text = f"trigger {esc(trig.get('type'))}"
        if "new_from" in trig:
            text += f" (new_from {esc(trig['new_from'])})"
        out: list[w.Widget] = [w.HTML(f"<div class='clw-muted'>{text} · {len(msgs)} message{'' if len(msgs) == 1 else 's'} on the path</div>")]
        if last is not None:
            out.append(w.HTML(f'<div class="clw-msg">{role_badge(last)}'
                              f'<div class="clw-text">{esc(readable(last.get("content")))}</div></div>'))
        out.append(w.HBox([
            self._button("call", "Call the model", [{"type": "llm.call"}], "llm.call on the active path", "primary"),
            self._button("end", "End the turn", [{"type": "turn.end"}], "turn.end: no reply"),
        ]))
        return out

    def _llm_result(self, d: Mapping[str, Any]) -> list[w.Widget]:
        reply = d.get("reply") or {}
        out: list[w.Widget] = [w.HTML(f'<div class="clw-msg clw-msg-assistant">{role_badge(reply)}'
                                      f'<div class="clw-text">{esc(readable(reply.get("content")))}</div></div>')]
        out.append(w.HBox([
            self._button("end", "End the turn", [{"type": "turn.end"}], "turn.end", "primary"),
            self._button("call", "Call the model again", [{"type": "llm.call"}], "another llm.call"),
        ]))
        return out

    def _proposed(self) -> list[w.Widget]:
        """A person's own plan (``propose``), its summary editable, and the buttons that run or drop it."""
        plan = self.proposal or []
        out: list[w.Widget] = [w.HTML("<div style='margin-top:6px'><b>summarize from here</b> "
                                      "<span class='clw-muted'>(proposed by you; nothing changed until you accept)</span>:"
                                      f"</div>{plan_html(plan)}")]
        if summary_in(plan) is not None:
            out.append(self.summary)
        out.append(w.HBox([
            self._button("accept_summary", "Accept proposed and call the model",
                         lambda: [*with_summary(plan, self.summary.value), {"type": "llm.call"}],
                         "the context.replace (with the summary as edited), then llm.call", "success"),
            self._button("drop_summary", "Drop the proposal", None, "forget it"),
        ]))
        self.buttons["drop_summary"].disabled = False
        self.buttons["drop_summary"].on_click(self.home.wrap(lambda _b: self.propose(None), self.buttons["drop_summary"]))
        return out

    # -- intents -----------------------------------------------------------
    def propose(self, plan: list[dict[str, Any]] | None) -> None:
        """Show ``plan`` (``Session.summarize``'s proposal) to be edited and accepted with the waiting decision, or
        with the next one to wait (None: drop it). Nothing runs until the person accepts."""
        self.proposal = None if plan is None else [dict(a) for a in plan]
        text = None if plan is None else summary_in(plan)
        if text is not None:
            self.summary.value = text
        waiting = self.live.decision is not None
        self.status = ("" if plan is None else "a summary from here is proposed: edit it, then accept it"
                       + ("" if waiting else " when a decision waits (submit a message with worker='manual')"))
        self._shown = ()
        self.redraw.now()

    def answer(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        """Answer the waiting decision with ``actions``."""
        with hold(self.live):  # the other widgets draw once, after this panel
            self.proposal = None
            outcome = intents.decide(self.live, actions)
            self.last = outcome
            self.status = outcome.get("message", "")
            self._shown = ()
            self.redraw.now()
        return outcome

    def _held(self) -> list[Any]:
        return [getattr(self, "summary", None)]

    def __repr__(self) -> str:
        p = self.live.pending
        return f"DecisionPanel(pending={None if p is None else p['type']!r})"
