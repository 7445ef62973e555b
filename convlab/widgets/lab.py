"""Lab: the five widgets over one session, composed and live.

Every part subscribes to the session's events itself, so a cell that
submits to the session updates the Lab without re-running it.
"""

from __future__ import annotations

import os
from typing import Any

import ipywidgets as w

from .chat import ChatView, STYLE, esc
from .decisions import DecisionPanel
from .eventlog import EventLog
from .gauge import ContextGauge
from .treeview import TreeView
from . import intents

__all__ = ["Lab"]


class Lab(w.VBox):
    """A session's tree, chat, context gauge, decisions and events in one view.

    ``session`` is a ``convlab.Session``, or the path of a session log
    (``Session.load``; keyword arguments go to it).

    >>> import convlab
    >>> Lab(convlab.Session())
    Lab(agent='bot', messages=0, head=None, turns=0, pending=None)
    """

    def __init__(self, session: Any, **load_kwargs: Any) -> None:
        if isinstance(session, (str, os.PathLike)):
            from ..engine import Session

            session = Session.load(session, **load_kwargs)
        elif load_kwargs:
            raise TypeError("keyword arguments are for Session.load: give a log path")
        self.session = session
        self.tree = TreeView(session)
        self.chat = ChatView(session)
        self.gauge = ContextGauge(session)
        self.decisions = DecisionPanel(session)
        self.events = EventLog(session)
        title = w.HTML(f'<span class="clw-title" style="font-size:15px">convlab</span> '
                       f'<span class="clw-muted">· agent {esc(intents.agent_of(session))}</span>')
        self.tree.layout = w.Layout(flex="1 1 58%", min_width="380px")
        self.chat.layout = w.Layout(flex="1 1 42%", min_width="320px")
        main = w.HBox([self.tree, self.chat], layout=w.Layout(align_items="flex-start", width="100%", grid_gap="8px"))
        super().__init__([w.HTML(STYLE), title, self.gauge, main, self.decisions, self.events],
                         layout=w.Layout(width="100%", grid_gap="6px"))
        self.add_class("clw")
        self.add_class("cl-lab")

    def close(self) -> None:
        for part in (self.tree, self.chat, self.gauge, self.decisions, self.events):
            part.close()
        super().close()

    def __repr__(self) -> str:
        s = self.session
        p = s.pending
        return (f"Lab(agent={intents.agent_of(s)!r}, messages={s.tree.number_of_nodes()}, head={s.head!r}, "
                f"turns={len(s.turns)}, pending={None if p is None else p['type']!r})")
