"""Tuning: what a context config costs and keeps over real logs, and the best one.

Everything here reads replays (``convlab.replaying``); nothing in
``convlab.replaying`` imports it. One module each (imported by name:
``from convlab.tuning import presets``, or ``convlab.tuning.presets`` after
``import convlab``; the package defines no other name):

- ``sweep``: many configs of many logs (``tune``, ``tune_cost``): one row per
  (conversation, config);
- ``forks``: one log under many configs, as a tree of shared replays (``rows``);
- ``measures``: a row's figures, read from a ``Replay`` (what every figure sums);
- ``columns``: a sweep's frame (``COLUMNS``, ``frame``), its rows kept compactly;
- ``files``: a sweep of log files, each file read where it is swept;
- ``workers``: where a sweep runs (this process, worker processes, dask);
- ``results``: a sweep's rows kept on disk, so that a run again replays only
  what is new and a stopped one goes on;
- ``grid``: grids of configs (``config_grid``) and the shipped example;
- ``compact``: the field's compactions as workers; ``presets``: the agents'
  auto-compactions as configs (``presets``, ``AUTO``);
- ``retention``: what each compaction dropped and kept, by ``facts`` and,
  with a judge, by ``probes``;
- ``ranking``: a sweep's configs over a corpus (``totals``, ``rank``);
- ``search``: the cheapest config of a space (Optuna);
- ``plots``: the pictures of a sweep.

The package face's ``convlab.tune`` is the function (``convlab.tuning.sweep.tune``);
the package has another name so that nothing shadows it.
"""

import importlib as _importlib
import pkgutil as _pkgutil

#: the modules, imported on first attribute access (``convlab.tuning.sweep`` after ``import convlab``): every
#: module in the folder, so that a module added is read so too without a list to keep
_MODULES = frozenset(m.name for m in _pkgutil.iter_modules(__path__))


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _importlib.import_module(f"{__name__}.{name}")
