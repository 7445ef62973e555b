"""Replay and sweeps: from an imported log to a Session that re-enacts it, and to a frame.

The path a log takes, one module each:

- ``plan``: which turn each logged message belongs to (``plan``, ``Plan``,
  ``PlannedTurn``), and ``ExactCounts`` (every text of a sweep tokenized once);
- ``model``: ``ReplayLLM``, the model the replay's Session calls (the logged
  replies, what each call read);
- ``driver``: ``Replayer`` runs a plan through a ``Session``; ``replay`` is
  the one-call way;
- ``result``: ``Replay``, what a replay returns;
- ``sweep``: many configs of one conversation as a tree of forks, grids
  (``config_grid``), ``tune`` and ``tune_cost`` (what its summaries would cost);
- ``workers``: where a sweep runs (this process, worker processes, dask);
- ``summaries``: real summaries behind an on-disk cache.

``convlab.replay`` is this package and, as before, the function: calling it
is ``convlab.replay.replay``. ``convlab.replay.plan`` is the module (its
function: ``convlab.replay.plan.plan``).

>>> import convlab
>>> from convlab.tree import Tree
>>> t = Tree()
>>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
>>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
>>> t.head = "a1"
>>> convlab.replay(convlab.Conversation(t, id="c"))
Replay(conversation='c', calls=1, limits=0, stale=0, head='e1')
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

from ..grid import config_grid
from .driver import EMPTY_SUMMARY, Replayer, replay
from .model import ReplayLLM
from .plan import ExactCounts, Plan, PlannedTurn
from .result import Replay
from .summaries import Summaries, SummaryCost
from .sweep import COLUMNS, tune, tune_cost

__all__ = ["replay", "Replay", "Replayer", "ReplayLLM", "Plan", "PlannedTurn", "ExactCounts", "EMPTY_SUMMARY", "tune",
           "tune_cost", "config_grid", "COLUMNS", "Summaries", "SummaryCost"]


class _Package(types.ModuleType):
    """The package, callable as the function it is named after (``convlab.replay(conversation, ...)``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Replay:
        return replay(*args, **kwargs)


__signature__ = inspect.signature(replay)  # what help() and a notebook's completion show for convlab.replay(...)
sys.modules[__name__].__class__ = _Package
