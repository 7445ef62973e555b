"""Exploring a tree: find anything in it, compare two branches, write it out again, merge a branch back and
summarize from a point.

Each works on a ``Session``, an imported ``Conversation`` and a replay's session alike
(``sources.tree_of``). Finding, comparing and writing only read the tree: what changes a tree (labels, a
merge, a summary) is the engine's, through the protocol (``convlab.engine.branches``); ``sessions`` hands a
merge to the source's Session (a Conversation's: a new one holding it, since a log has no engine). The
modules are named after what they hold, not after the face's functions (``convlab.find`` is
``matches.find``; ``convlab.compare`` is ``branches.compare``; ``convlab.write`` is ``writing.write``;
``convlab.merge`` and ``convlab.summarize`` are ``sessions``'), so that no module shadows a function of the face. Each module is
imported by its path (``from convlab.explore import writing``), or read as an attribute
after ``import convlab`` (``convlab.explore.writing.FORMATS``).
"""

import importlib as _importlib
import pkgutil as _pkgutil

#: the modules, imported on first attribute access (``convlab.explore.writing`` after ``import convlab``): every
#: module in the folder, so that a module added is read so too without a list to keep
_MODULES = frozenset(m.name for m in _pkgutil.iter_modules(__path__))


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _importlib.import_module(f"{__name__}.{name}")
