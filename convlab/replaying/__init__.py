"""Replaying: re-enact an imported log through the protocol, and what a replay records.

The path a log takes, one module each (each imported by name:
``from convlab.replaying import plan``, or ``convlab.replaying.plan`` after
``import convlab``; the package defines no other name):

- ``plan``: which turn each logged message belongs to (``plan``, ``Plan``,
  ``PlannedTurn``), and ``ExactCounts`` (every text of a sweep tokenized once);
- ``fit``: what the log's calls read beyond the transcript (``fit``, ``Fit``:
  the hidden prompt and the tokenizer's ratio), read by ``model`` and ``cost``;
- ``options``: ``Options``, the knobs a replay takes (the cost model, the
  summarizer and its cache, the prompt cache, the price), checked in one place;
- ``model``: ``ReplayLLM``, the model the replay's Session calls (the logged
  replies; what each call read);
- ``driver``: ``Replayer`` runs a plan through a ``Session`` and records one
  ``ModelCall`` per model call; ``replay`` is the one-call way;
- ``result``: ``Replay``, what a replay returns, and its records (``ModelCall``,
  ``SummaryCall``, ``ContextLimit``);
- ``cost``: what each call costs (``Pricing``, ``price``), from
  ``prompt_cache`` (what a provider reads from its cache) and ``prices``
  (genai-prices' dollars);
- ``summaries``: real summaries behind an on-disk cache.

What only tuning reads from a replay (a sweep's rows, retention, search) is
in ``convlab.tuning``. The package is not named ``replay``: the package face's
``convlab.replay`` is the function (``convlab.replaying.driver.replay``), and a
package of the same name would shadow it (``import convlab.replaying.plan as p``
fails once the name is a function).

>>> import convlab
>>> from convlab.tree import Tree
>>> t = Tree()
>>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
>>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
>>> t.head = "a1"
>>> convlab.replay(convlab.Conversation(t, id="c"))
Replay(conversation='c', calls=1, limits=0, stale=0, head='e1')
"""

import importlib as _importlib
import pkgutil as _pkgutil

#: the modules, imported on first attribute access (``convlab.replaying.plan`` after ``import convlab``): every
#: module in the folder, so that a module added is read so too without a list to keep
_MODULES = frozenset(m.name for m in _pkgutil.iter_modules(__path__))


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _importlib.import_module(f"{__name__}.{name}")
