"""Jupyter widgets for a convlab Session, driven only by its public surface.

``TreeView`` (an anywidget: Python lays the tree out, a small ES module draws
it), ``ChatView`` (ipywidgets around one anywidget: Python makes the message
rows, ``static/chat.js`` draws them), ``ContextGauge``, ``DecisionPanel`` and
``EventLog`` (ipywidgets panels, no custom JS), and ``Lab``, all five
composed and live.
Each turns a click into protocol input (``convlab.widgets.intents``); each
draws coalesced, however fast the session goes (``convlab.widgets.live``).
An imported ``convlab.Conversation`` is shown read-only
(``convlab.widgets.source``).
"""

from .chat import ChatView
from .decisions import DecisionPanel
from .eventlog import EventLog
from .gauge import ContextGauge
from .lab import Lab
from .treeview import TreeView, layout

__all__ = ["Lab", "TreeView", "ChatView", "ContextGauge", "DecisionPanel", "EventLog", "layout"]
