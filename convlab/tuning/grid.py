"""Grids of configs: every combination of a grid's values set on a base config, and the example config.

What a sweep (``convlab.tune``), a search and ``convlab tune`` spread a base
config over. Light: it imports only the config's own module, so the command
line's help can say what the shipped example sweeps without loading the
sweep's machinery.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..context import ContextConfig, TomlSource, coerce, load_config, toml_document
from ..errors import ConfigError

__all__ = ["config_grid", "grid_table", "example_config", "with_lifetime", "EXAMPLE", "LIFETIME"]

#: The example config ``tune`` sweeps when given none (data/ in a checkout; in the wheel, inside the package):
#: a reset after idle_secs, else a summary past window - 16000, over its ``[convlab.tune.grid]``.
EXAMPLE = "data/tune-example.toml"


def example_config() -> Path:
    """The shipped example config's path: in an installed wheel, beside the package's code; in a checkout
    (an editable install), in the project's data/ folder."""
    from importlib import resources

    packaged = resources.files("convlab").joinpath(EXAMPLE)
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / EXAMPLE


def grid_table(doc: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A config document's own grid, its ``[convlab.tune.grid]`` table (``{}`` when it has none), checked:
    what ``tune`` sweeps a single config over when given no ``grid=`` (and ``convlab tune`` without ``--grid``).

    >>> grid_table({"convlab": {"tune": {"grid": {"window": [64000, 128000]}}}})
    {'window': [64000, 128000]}
    >>> grid_table({"convlab": {"tune": {"grid": {"window": 64000}}}})
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: convlab.tune.grid.window: must be a non-empty array of values, e.g. [64000, 128000]
    """
    table: Any = doc
    for key in ("convlab", "tune", "grid"):
        table = table.get(key) if isinstance(table, Mapping) else None
        if table is None:
            return {}
    if not isinstance(table, Mapping):
        raise ConfigError("convlab.tune.grid", "must be a table of KEY = [V1, V2] (e.g. window = [64000, 128000])")
    for key, values in table.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"convlab.tune.grid.{key}", "must be a non-empty array of values, e.g. [64000, 128000]")
    return {str(k): list(v) for k, v in table.items()}


_KEY = re.compile(r"^(window|strategy\[(\d+)\]\.(\w+))$")

#: The prompt cache's lifetime when none is given: the providers' default, 5 minutes (docs/cache.md).
LIFETIME = 300.0

_TTL = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*\*\s*)?ttl\s*(?:([+-])\s*(\d+(?:\.\d+)?))?\s*$")


def with_lifetime(grid: Mapping[str, Sequence[object]], ttl: float) -> dict[str, list[Any]]:
    """``grid`` with each ``idle_secs`` value written against the prompt cache's lifetime (``"ttl"``,
    ``"ttl+60"``, ``"2*ttl"``, ``"1.5*ttl-30"``) in seconds, ``ttl`` being that lifetime: the idle trigger set
    relative to how long the cache lives (a compaction after a longer gap rewrites a prefix that is cold
    anyway). Any other value stays as it is.

    >>> with_lifetime({"strategy[0].idle_secs": ["ttl", "ttl+60", "2*ttl", 900], "window": [64000]}, 300.0)
    {'strategy[0].idle_secs': [300, 360, 600, 900], 'window': [64000]}
    >>> with_lifetime({"strategy[0].idle_secs": ["ttl-300"]}, 300.0)
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: strategy[0].idle_secs: 'ttl-300' is 0 seconds with the cache's lifetime of 300 s; idle_secs must be more than 0
    """
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        out[key] = list(values)
        if not key.endswith(".idle_secs"):
            continue
        for i, v in enumerate(out[key]):
            m = _TTL.match(v) if isinstance(v, str) else None
            if m is None:
                continue
            seconds = float(m.group(1) or 1) * ttl + (1 if m.group(2) != "-" else -1) * float(m.group(3) or 0)
            if seconds <= 0:
                raise ConfigError(key, f"{v!r} is {seconds:g} seconds with the cache's lifetime of {ttl:g} s; idle_secs must be more than 0")
            out[key][i] = int(seconds) if seconds == int(seconds) else seconds
    return out


def _document(config: TomlSource | ContextConfig) -> dict[str, Any]:
    """A parsed TOML document (a deep copy) from TOML text, a path or a document."""
    if isinstance(config, ContextConfig):
        raise TypeError("give a TOML text or document, not a parsed ContextConfig, to build a grid on")
    return copy.deepcopy(dict(toml_document(config)))


def _set(doc: dict[str, Any], agent: str, key: str, value: object) -> None:
    m = _KEY.match(key)
    if m is None:
        raise ConfigError(key, "a grid key is 'window' or 'strategy[i].<key>' (e.g. strategy[0].idle_secs)")
    ctx = doc.setdefault("agent", {}).setdefault(agent, {}).setdefault("context", {})
    if m.group(1) == "window":
        ctx["window"] = value
        return
    i, name = int(m.group(2)), m.group(3)
    strategies = ctx.get("strategy", [])
    if i >= len(strategies):
        raise ConfigError(f"agent.{agent}.context.{key}", f"the base config has {len(strategies)} strategies, no strategy[{i}]")
    if value is None:
        strategies[i].pop(name, None)
    else:
        strategies[i][name] = value


def config_grid(base: TomlSource | ContextConfig, axes: Mapping[str, Sequence[object]], *, agent: str = "bot") -> list[dict[str, Any]]:
    """Configs over a grid: every combination of ``axes`` values set on ``base``.

    ``base`` is TOML text, a path or a parsed document; ``axes`` maps a key
    of the agent's context table, ``"window"`` or ``"strategy[i].<key>"``
    (``idle_secs``, ``over_tokens``, ...), to its values (``None`` removes the
    key). Returns parsed documents, in ``itertools.product`` order (the last
    axis varies fastest), each checked like any config.

    >>> base = '''
    ... [agent.bot.context]
    ... window = 200000
    ... [[agent.bot.context.strategy]]
    ... use = "reset"
    ... idle_secs = 3600
    ... [[agent.bot.context.strategy]]
    ... use = "summarize"
    ... '''
    >>> docs = config_grid(base, {"window": [64000, 128000], "strategy[0].idle_secs": [600, 3600]})
    >>> [(d["agent"]["bot"]["context"]["window"], d["agent"]["bot"]["context"]["strategy"][0]["idle_secs"]) for d in docs]
    [(64000, 600), (64000, 3600), (128000, 600), (128000, 3600)]
    """
    doc = _document(base)
    if doc:
        load_config(doc, agent)  # a base that misses the agent's table is an error, not a table to fill in
    keys = list(axes)
    out = []
    for values in itertools.product(*(list(axes[k]) for k in keys)):
        d = copy.deepcopy(doc)
        for k, v in zip(keys, values, strict=True):
            _set(d, agent, k, v)
        coerce(d, agent)  # a bad value is a ConfigError naming the key
        out.append(d)
    return out
