"""Lab: the five widgets over one session, composed and live.

Every part subscribes to the session's events itself, so a cell that
submits to the session updates the Lab without re-running it; each part
draws coalesced (``convlab.widgets.live``), at most a few times a second
while the session runs and once more when it stops.

On an imported ``convlab.Conversation`` the Lab is read-only: the tree, the
chat and the count, with no input box, no decisions and no events (a log
has none); switching branches moves the conversation's head in memory.
"""

from __future__ import annotations

import os
from typing import Any

import ipywidgets as w

from ..engine import Session
from ..errors import LogError, Refused
from . import intents
from .chat import STYLE, ChatView, esc
from .comparison import ComparePanel
from .decisions import DecisionPanel
from .eventlog import EventLog
from .gauge import ContextGauge
from .live import INTERVAL, close_inside
from .source import REPLAY_HINT, Given, ReadOnly, shown, source_of
from .treeview import TreeView

__all__ = ["Lab"]


class Lab(w.VBox):
    """A session's tree, chat, context gauge, decisions and events in one view; the tree's search box marks
    what it finds, and two messages picked in it are compared below it (``comparison``).

    ``session`` is a ``convlab.Session``; the path of a session log
    (``Session.load``; keyword arguments go to it); or an imported
    ``convlab.Conversation`` (from ``convlab.read``), shown read-only.
    ``interval``: the seconds between two draws of a part while events keep
    coming (the last state is always drawn; ``flush()`` draws now).

    >>> import convlab
    >>> Lab(convlab.Session())
    Lab(agent='bot', messages=0, head=None, turns=0, pending=None)
    """

    def __init__(self, session: Given | str | os.PathLike[str], *, interval: float = INTERVAL, **load_kwargs: Any) -> None:
        if isinstance(session, (str, os.PathLike)):
            path = session
            try:
                session = Session.load(path, **load_kwargs)
            except LogError as err:
                if not os.path.isfile(path):
                    raise
                raise LogError(f"{err} (Lab takes a convlab session log; for another tool's log: "
                               f"convlab.Lab(convlab.read(path)[0]))", line=getattr(err, "line", None)) from err
        elif load_kwargs:
            raise TypeError("keyword arguments are for Session.load: give a log path")
        source = source_of(session, "Lab")  # a wrong argument raises before anything is built
        self.source = source
        #: The Session shown (None for an imported conversation), the imported Conversation shown (None for a Session).
        self.session, self.conversation = shown(source)
        self.tree = self.chat = self.gauge = self.decisions = self.events = None
        #: Two branches side by side, when the tree view compares them (its "Pick to compare").
        self.comparison: ComparePanel | None = None
        try:
            self.tree = TreeView(source, interval=interval)
            self.comparison = ComparePanel()
            self.tree.on_compare(self.comparison.show)
            self.chat = ChatView(source, interval=interval)
            self.gauge = ContextGauge(source, interval=interval)
            if isinstance(source, ReadOnly):
                c = self.conversation
                what = f"conversation {c.title or c.id}" + (f" ({c.format})" if c.format else "")
                title = w.HTML(f'<span class="clw-title" style="font-size:15px">convlab</span> '
                               f'<span class="clw-muted">· {esc(what)} · read-only: {esc(REPLAY_HINT)}</span>')
                below: list[w.Widget] = []
            else:
                self.decisions = DecisionPanel(source, interval=interval)
                self.tree.on_summarize(self.summarize_from)
                self.events = EventLog(source, interval=interval)
                title = w.HTML(f'<span class="clw-title" style="font-size:15px">convlab</span> '
                               f'<span class="clw-muted">· agent {esc(intents.agent_of(source))}</span>')
                below = [self.decisions, self.events]
            self.tree.layout = w.Layout(flex="1 1 58%", min_width="380px")
            self.chat.layout = w.Layout(flex="1 1 42%", min_width="320px")
            main = w.HBox([self.tree, self.chat], layout=w.Layout(align_items="flex-start", width="100%", grid_gap="8px"))
            super().__init__([w.HTML(STYLE), title, self.gauge, main, self.comparison, *below],
                             layout=w.Layout(width="100%", grid_gap="6px"))
            self.add_class("clw")
            self.add_class("cl-lab")
        except BaseException:
            self.close()
            raise

    def summarize_from(self, node_id: str) -> None:
        """Propose, in the decision panel, a summary from ``node_id`` to the message before the input a turn
        waits on (or to the head): ``Session.summarize``, editable there, run only when accepted."""
        s, panel = self.session, self.decisions
        if s is None or panel is None:
            return
        path = [m["id"] for m in s.path()]
        end = path[-2] if len(path) > 1 and s.decision is not None and s.decision.get("type") == "turn.start" else None
        try:
            panel.propose(s.summarize(node_id, end))
        except Refused as err:
            panel.status = str(err)
            panel.refresh()

    def _parts(self) -> list[Any]:
        parts = (getattr(self, name, None) for name in ("tree", "chat", "gauge", "decisions", "events"))
        return [p for p in parts if p is not None]

    def flush(self) -> int:
        """Draw every part now with what the session's events changed; how many parts drew."""
        return sum(bool(part.flush()) for part in self._parts())

    def close(self) -> None:
        for part in [*self._parts(), getattr(self, "comparison", None)]:
            if part is not None:
                part.close()
        close_inside(self)
        super().close()

    def __repr__(self) -> str:
        if self.conversation is not None:
            c = self.conversation
            return f"Lab(conversation={c.id!r}, messages={len(c)}, head={c.head!r}, read_only=True)"
        s = self.session
        assert s is not None, "a Lab shows a Session when it shows no conversation"
        p = s.pending
        return (f"Lab(agent={intents.agent_of(s)!r}, messages={len(s.message_tree)}, head={s.head!r}, "
                f"turns={len(s.turns)}, pending={None if p is None else p['type']!r})")
