"""The context config (``[agent.<id>.context]``) and which strategy applies.

docs/protocol.md 5.2. The config is parsed and checked once: every error names the
dotted key at fault (``agent.bot.context.strategy[2].idle_secs``). Deciding
whether a strategy applies is a pure function of the count, the clock and
whether this is the turn's first model call, so the engine and the tuning
sweeps share it. This module knows nothing of the engine.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeAlias

from . import jsondata, toolcalls
from .errors import ConfigError

__all__ = [
    "ContextConfig", "Strategy", "load_config", "toml_document", "parse_context", "applies", "kept", "MARGIN", "Limit",
    "TomlSource", "ConfigLike"]

#: The headroom the engine leaves below the window: a strategy without
#: ``idle_secs`` applies above ``window - MARGIN``.
MARGIN = 16000

_STRATEGY_KEYS = {
    "reset": ("use", "idle_secs", "over_tokens"),
    "summarize": ("use", "idle_secs", "over_tokens", "prompt", "llm", "model"),
}

DEFAULT_PROMPT = (
    "Summarize the conversation so far so that it can continue from the summary alone. "
    "Keep names, numbers, decisions and open questions."
)


def _unknown_key(key: str, use: str) -> ConfigError:
    return ConfigError(key, f"unknown key for a {use} strategy (known: {', '.join(_STRATEGY_KEYS[use])})")


def _is_number(v: object) -> bool:
    """A number a log can carry: finite, and an integer within 64 bits (``jsondata``)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and jsondata.problem(v, "") is None


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and jsondata.problem(v, "") is None


@dataclass(frozen=True)
class Strategy:
    """One ``[[agent.<id>.context.strategy]]`` entry, checked where it is built.

    The checks are the config file's (docs/protocol.md 5.2), with the same
    messages; built by hand, the key is the field's name.

    >>> Strategy(use="reset", idle_secs=3600).to_dict()
    {'use': 'reset', 'idle_secs': 3600}
    >>> Strategy(use="reset", idle_secs=-5)
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: idle_secs: must be a positive number, got -5
    """

    use: str
    idle_secs: float | None = None
    over_tokens: int | None = None
    prompt: str | None = None
    llm: str | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        use = self.use
        if use is None:
            raise ConfigError("use", "missing (reset or summarize)")
        if not isinstance(use, str) or use not in _STRATEGY_KEYS:
            raise ConfigError("use", f"must be 'reset' or 'summarize', got {use!r}")
        for key in ("prompt", "llm", "model"):
            if getattr(self, key) is not None and key not in _STRATEGY_KEYS[use]:
                raise _unknown_key(key, use)
        idle = self.idle_secs
        if idle is not None and (not _is_number(idle) or idle <= 0):
            raise ConfigError("idle_secs", f"must be a positive number, got {idle!r}")
        over = self.over_tokens
        if over is not None and (not _is_int(over) or over <= 0):
            raise ConfigError("over_tokens", f"must be a positive integer, got {over!r}")
        for key in ("prompt", "llm", "model"):
            v = getattr(self, key)
            if v is not None and (not isinstance(v, str) or not v):
                raise ConfigError(key, f"must be a non-empty string, got {v!r}")
            found = v is not None and jsondata.problem(v, key)
            if found:
                raise ConfigError(key, found.split(": ", 1)[1])

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


_FIELDS = tuple(f.name for f in fields(Strategy))


@dataclass(frozen=True)
class ContextConfig:
    """The parsed ``[agent.<id>.context]`` table: ``window`` and ordered strategies.

    Checked where it is built, with the config file's messages: ``window``
    an integer above 16000, ``strategies`` a tuple (or list) of ``Strategy``.

    >>> cfg = load_config('''
    ... [agent.bot.context]
    ... window = 200000
    ... [[agent.bot.context.strategy]]
    ... use = "summarize"
    ... ''')["bot"]
    >>> cfg.window, cfg.limit, [s.use for s in cfg.strategies]
    (200000, 184000, ['summarize'])
    >>> ContextConfig(window=200000, strategies=[Strategy("reset", idle_secs=3600)]).strategies
    (Strategy(use='reset', idle_secs=3600, over_tokens=None, prompt=None, llm=None, model=None),)
    >>> ContextConfig(window=-5)
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: window: must be more than 16000 (the engine keeps 16000 tokens of headroom); use a strategy's over_tokens for small models
    """

    window: int | None = None
    strategies: tuple[Strategy, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        window = self.window
        if window is not None:
            if not _is_int(window):
                raise ConfigError("window", f"must be an integer, got {window!r}")
            if window <= MARGIN:
                raise ConfigError(
                    "window",
                    f"must be more than {MARGIN} (the engine keeps {MARGIN} tokens of headroom); "
                    f"use a strategy's over_tokens for small models",
                )
        strategies = self.strategies
        if not isinstance(strategies, (tuple, list)):
            raise ConfigError("strategies", f"must be a tuple of Strategy, got {type(strategies).__name__}")
        for i, s in enumerate(strategies):
            if not isinstance(s, Strategy):
                raise ConfigError(f"strategies[{i}]", f"must be a Strategy, got {type(s).__name__}")
        object.__setattr__(self, "strategies", tuple(strategies))

    @property
    def limit(self) -> int | None:
        """``window - 16000`` (``MARGIN``): above it a strategy without ``idle_secs`` applies.
        The one place that rule is written: ``applies``, ``threshold``, plots, ranking and the gauge read it."""
        return None if self.window is None else self.window - MARGIN

    @property
    def threshold(self) -> int | None:
        """The smallest count above which one of the strategies applies by size (docs/protocol.md 5.2):
        an ``over_tokens``, or ``limit`` for a strategy without ``idle_secs``; None when none does.

        >>> cfg = ContextConfig(window=200000, strategies=[Strategy("reset", idle_secs=3600), Strategy("summarize")])
        >>> cfg.threshold, ContextConfig(window=200000, strategies=[Strategy("summarize", over_tokens=50000)]).threshold
        (184000, 50000)
        >>> ContextConfig(strategies=[Strategy("reset", idle_secs=60)]).threshold is None
        True
        """
        sizes = [s.over_tokens for s in self.strategies if s.over_tokens is not None]
        if self.limit is not None and any(s.idle_secs is None for s in self.strategies):
            sizes.append(self.limit)
        return min(sizes, default=None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.window is not None:
            out["window"] = self.window
        if self.strategies:
            out["strategy"] = [s.to_dict() for s in self.strategies]
        return out

    def summarize_strategy(self) -> Strategy:
        """The first summarize strategy (its prompt, llm, model serve overflow), or the defaults."""
        for s in self.strategies:
            if s.use == "summarize":
                return s
        return Strategy(use="summarize")


#: A config file as given: TOML text, a path to a ``.toml`` file, or the parsed document.
TomlSource: TypeAlias = str | os.PathLike[str] | Mapping[str, Any]

#: What ``Session(config=...)`` takes (``coerce``): None, a ``ContextConfig``, ``{agent: ContextConfig}``
#: or a ``TomlSource``.
ConfigLike: TypeAlias = ContextConfig | Mapping[str, ContextConfig] | TomlSource | None


@dataclass(frozen=True)
class Limit:
    """A strategy that applies: which, why, at what count."""

    strategy: Strategy
    reason: str  # "idle" or "full"


def parse_context(table: object, where: str = "context") -> ContextConfig:
    """Check one parsed context table; ``where`` prefixes the keys in errors.

    The values are checked by ``ContextConfig`` and ``Strategy`` themselves
    (one set of checks, whether built from a file or by hand); here only the
    table's shape and its keys.

    >>> parse_context({"window": 200000, "strategy": [{"use": "reset", "idle": 60}]}, "agent.bot.context")
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: agent.bot.context.strategy[0].idle: unknown key for a reset strategy (known: use, idle_secs, over_tokens)
    """
    if table is None:
        return ContextConfig()
    if not isinstance(table, Mapping):
        raise ConfigError(where, f"must be a table, got {type(table).__name__}")
    for key in table:
        if key not in ("window", "strategy"):
            raise ConfigError(f"{where}.{key}", "unknown key (known: window, strategy)")
    raw = table.get("strategy", [])
    if isinstance(raw, Mapping):
        raise ConfigError(f"{where}.strategy", "must be an array of tables: write [[...strategy]]")
    if not isinstance(raw, list):
        raise ConfigError(f"{where}.strategy", f"must be an array of tables, got {type(raw).__name__}")
    strategies = []
    for i, entry in enumerate(raw):
        here = f"{where}.strategy[{i}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(here, f"must be a table, got {type(entry).__name__}")
        try:
            given: dict[str, Any] = {k: entry.get(k) for k in _FIELDS}  # Strategy checks each value
            strategy = Strategy(**given)
            for key in entry:
                if key not in _FIELDS:
                    raise _unknown_key(key, strategy.use)
        except ConfigError as err:
            raise err.within(here) from None
        strategies.append(strategy)
    try:
        return ContextConfig(window=table.get("window"), strategies=tuple(strategies))
    except ConfigError as err:
        raise err.within(where) from None


def toml_document(source: TomlSource) -> Mapping[str, Any]:
    """The parsed TOML document of a config: ``source`` is TOML text, a path to a
    ``.toml`` file, or the parsed document itself (returned as is). Errors are
    ``ConfigError`` naming the file or ``config``; a value nested deeper than
    ``jsondata.MAX_DEPTH`` levels (what copies and prints a config recurses) is
    one naming its key.

    >>> toml_document('[agent.bot.context]\\nwindow = 20000')
    {'agent': {'bot': {'context': {'window': 20000}}}}
    >>> toml_document('[agent.bot.context]\\nwindow = ' + '[' * 500 + ']' * 500)
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: agent.bot.context.window: nests deeper than 100 levels (a config nests a few)
    """
    if isinstance(source, Mapping):
        _check_depth(source)
        return source
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and source.strip().endswith(".toml")):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(str(path), f"cannot read the config file: {err.strerror or err}") from err
        return _parse_toml(text, str(path))
    if isinstance(source, str):
        try:
            return _parse_toml(source, "config")
        except ConfigError:
            if "\n" in source or "=" in source or Path(source).suffix == "":
                raise
            raise ConfigError("config", f"{source!r} is neither TOML text nor a path to a .toml file") from None
    raise ConfigError("config", f"must be TOML text, a path to a .toml file or a parsed document, got {type(source).__name__}")


def _parse_toml(text: str, name: str) -> Mapping[str, Any]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(name, f"is not valid TOML: {err}") from err
    except RecursionError:  # Python's TOML reader recurses: a value a few hundred levels deep is past it
        raise ConfigError(_deep_key(text) or name, _TOO_DEEP) from None
    _check_depth(doc)
    return doc


_TOO_DEEP = f"nests deeper than {jsondata.MAX_DEPTH} levels (a config nests a few)"


def _check_depth(doc: Mapping[str, Any]) -> None:
    """A ``ConfigError`` naming the key of a value nested deeper than ``jsondata.MAX_DEPTH`` (walked
    without recursion: the deep value is refused before anything recursive reads it)."""
    todo: list[tuple[object, str, int]] = [(doc, "", 0)]
    while todo:
        value, at, depth = todo.pop()
        if not isinstance(value, (Mapping, list)):
            continue
        if depth > jsondata.MAX_DEPTH:
            raise ConfigError(at or "config", _TOO_DEEP)
        if isinstance(value, Mapping):  # a table's keys name the place (the first few); a list's items stay at its key
            todo.extend((v, f"{at}.{k}" if at else str(k), depth + 1) if depth < 8 else (v, at, depth + 1)
                        for k, v in value.items())
        else:
            todo.extend((v, at, depth + 1) for v in value)


def _deep_key(text: str) -> str | None:
    """The dotted key whose value nests deeper than ``jsondata.MAX_DEPTH`` in TOML text Python's reader could
    not follow, read line by line (the table a header opens, the key before ``=``, brackets and braces outside
    strings counted); None when it cannot tell."""
    table, key, depth = "", "", 0
    for line in text.splitlines():
        stripped = line.strip()
        if depth == 0 and stripped.startswith("["):
            table = stripped.strip("[] \t").split("]", 1)[0].strip()
            continue
        if depth == 0 and "=" in stripped:
            key = stripped.split("=", 1)[0].strip().strip("\"'")
        quote = ""
        for c in line:
            if quote:
                quote = "" if c == quote else quote
            elif c in "\"'":
                quote = c
            elif c == "#":
                break
            elif c in "[{":
                depth += 1
                if depth > jsondata.MAX_DEPTH:
                    return ".".join(p for p in (table, key) if p) or None
            elif c in "]}":
                depth = max(0, depth - 1)
    return None


def _tables(doc: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of a document's innermost tables (``agent.bot.contxt``, ``server``)."""
    out = []
    for key, value in doc.items():
        if isinstance(value, Mapping):
            inner = _tables(value, f"{prefix}{key}.")
            out.extend(inner or [f"{prefix}{key}"])
    return out


def _missing(agent: str, doc: Mapping[str, Any]) -> ConfigError:
    tables = _tables(doc)
    if tables:
        shown = ", ".join(f"[{t}]" for t in tables[:10]) + (f" and {len(tables) - 10} more" if len(tables) > 10 else "")
        found = f"it has {shown}"
    else:
        found = f"it has no tables, only the keys {', '.join(map(str, doc))}"
    return ConfigError(f"agent.{agent}.context", f"missing: the config has no [agent.{agent}.context] table ({found})")


def load_config(source: TomlSource, agent: str | None = None) -> dict[str, ContextConfig]:
    """Parse ``[agent.<id>.context]`` tables: ``{agent_id: ContextConfig}``.

    ``source`` is TOML text, a path to a ``.toml`` file, or the parsed
    document. With ``agent`` only that agent's table is checked (other tables
    are not this config's business) and the result has that one key; a
    config without ``[agent.<agent>.context]`` is an error that names the
    tables it has (a misspelled table or a wrong agent must not run with no
    strategy), except an empty config (no keys at all: empty text, only
    comments, ``{}``), which means no window and no strategy, as ``None``
    does. Without ``agent`` every ``agent.*.context`` table is checked.
    Errors raise ``ConfigError`` naming the key.

    >>> load_config('[agent.bot.context]\\nwindow = 100')
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: agent.bot.context.window: must be more than 16000 (the engine keeps 16000 tokens of headroom); use a strategy's over_tokens for small models
    >>> load_config('[agent.bot.contxt]\\nwindow = 200000', agent="bot")
    Traceback (most recent call last):
    ...
    convlab.errors.ConfigError: agent.bot.context: missing: the config has no [agent.bot.context] table (it has [agent.bot.contxt])
    >>> load_config("# nothing yet", agent="bot")
    {'bot': ContextConfig(window=None, strategies=())}
    """
    if agent is not None and (not isinstance(agent, str) or not agent):
        raise TypeError(f"agent is an agent id (a non-empty string), got {agent!r}")
    doc = toml_document(source)
    agents = doc.get("agent", {})
    if not isinstance(agents, Mapping):
        raise ConfigError("agent", f"must be a table, got {type(agents).__name__}")
    if agent is not None:
        if not doc:
            return {agent: ContextConfig()}
        entry = agents.get(agent)
        if entry is not None and not isinstance(entry, Mapping):
            raise ConfigError(f"agent.{agent}", f"must be a table, got {type(entry).__name__}")
        if entry is None or "context" not in entry:
            raise _missing(agent, doc)
        return {agent: parse_context(entry["context"], f"agent.{agent}.context")}
    out = {}
    for name, entry in agents.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"agent.{name}", f"must be a table, got {type(entry).__name__}")
        out[name] = parse_context(entry.get("context"), f"agent.{name}.context")
    return out


def coerce(config: ConfigLike, agent: str) -> ContextConfig:
    """What ``Session(config=...)`` takes: None, a ContextConfig, ``{agent: ContextConfig}``,
    TOML text, a path, or the parsed document (``load_config`` with ``agent``)."""
    if config is None:
        return ContextConfig()
    if isinstance(config, ContextConfig):
        return config
    if isinstance(config, Mapping) and config and all(isinstance(v, ContextConfig) for v in config.values()):
        if agent not in config:
            raise ConfigError(f"agent.{agent}.context", f"missing: the configs given are for {', '.join(map(repr, config))}")
        return config[agent]
    return load_config(config, agent)[agent]


def applies(
    config: ContextConfig,
    tokens: int,
    *,
    first_call: bool,
    idle_for: float | None,
) -> Limit | None:
    """The first strategy, in order, that applies (docs/protocol.md 5.2), or None.

    ``idle_for`` is the time since the previous turn ended (None for a
    session's first turn). A strategy with ``idle_secs`` applies at a turn's
    first call when idle that long (reason ``idle``; idle wins over its own
    ``over_tokens``), or above its ``over_tokens`` at any call. A strategy
    without ``idle_secs`` applies above ``window - 16000`` or above its
    ``over_tokens`` (reason ``full``).

    >>> cfg = load_config('''
    ... [agent.bot.context]
    ... window = 200000
    ... [[agent.bot.context.strategy]]
    ... use = "reset"
    ... idle_secs = 3600
    ... [[agent.bot.context.strategy]]
    ... use = "summarize"
    ... ''')["bot"]
    >>> applies(cfg, 184000, first_call=True, idle_for=10) is None
    True
    >>> applies(cfg, 184001, first_call=True, idle_for=10).reason
    'full'
    >>> applies(cfg, 10, first_call=True, idle_for=3600).strategy.use
    'reset'
    """
    if not isinstance(config, ContextConfig):
        raise TypeError(f"applies takes a ContextConfig (load_config(...)[agent]), got {type(config).__name__}")
    for s in config.strategies:
        if s.idle_secs is not None:
            if first_call and idle_for is not None and idle_for >= s.idle_secs:
                return Limit(s, "idle")
            if s.over_tokens is not None and tokens > s.over_tokens:
                return Limit(s, "full")
            continue
        limit = config.limit
        if limit is not None and tokens > limit:
            return Limit(s, "full")
        if s.over_tokens is not None and tokens > s.over_tokens:
            return Limit(s, "full")
    return None


def kept(up: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``kept`` (docs/protocol.md 5.3): the input the model must still answer, oldest first.

    ``up`` is the path's messages (or nodes) from the head up to the root:
    ``reversed(path)``, or a tree's walk up from its head. ``kept`` is what
    comes after the last assistant message; when the first of it is a tool
    result (a ``tool`` message, or a user message of ``tool_result`` parts:
    ``convlab.toolcalls``), it starts at that assistant message instead, so a
    result never loses its call (gap). Reads ``up`` only as far as that message.

    >>> path = [{"id": "u1", "role": "user"}, {"id": "a1", "role": "assistant"}, {"id": "u2", "role": "user"},
    ...         {"id": "a2", "role": "assistant"}, {"id": "r2", "role": "tool"}]
    >>> [[m["id"] for m in kept(reversed(path[:k]))] for k in (3, 5, 4)]
    [['u2'], ['a2', 'r2'], []]
    """
    out: list[Mapping[str, Any]] = []
    last_assistant = None
    for m in up:
        if m["role"] == "assistant":
            last_assistant = m
            break
        out.append(m)
    out.reverse()
    if out and last_assistant is not None and toolcalls.is_result(out[0]):
        out.insert(0, last_assistant)
    return out
