"""Search: the cheapest config that keeps what matters, found by Optuna over a space of configs.

A grid (``convlab.tune(..., grid=...)``) replays every combination of its
values; a space of ranges has far too many points for that. ``search`` asks
Optuna's TPE sampler (seeded: the same seed, the same search) for the configs
to try next, given how the earlier ones scored, and scores each with
``convlab.tune``: the objective is a column of tune's frame, the constraints
are bounds on its columns, and a config that misses one never wins.

What it shares, as the sweep does: trials are asked for in batches of
``BATCH`` (whatever the machine's cores: the same seed is the same search
anywhere), and each batch is ONE ``tune`` over its configs, so they share each
conversation's baseline and the replay prefixes where they agree, and the
batch uses every core. A config already scored (the sampler proposes a point
twice) is not replayed again. When every dimension of the space is a list of
choices and ``trials`` is at least the grid's size, every point of the grid is
scored, once, in one batch: the search is then exact (the best of the grid).

``convlab.search`` is the function ``search`` (this module is ``convlab.tuning.search``).
Optuna is the ``search`` extra (``pip install 'convlab[search]'``), imported
when a search runs.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import math
import re
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ..context import MARGIN, TomlSource, load_config, toml_document
from ..conversation import Conversation
from ..errors import ConfigError
from ..replaying.options import Options, check_worker, options_of, takes_options
from .grid import config_grid
from .presets import Preset
from .ranking import totals
from .sweep import COLUMNS, tune

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from tqdm import tqdm

    from ..engine import Worker

__all__ = ["search", "SearchResult", "check", "default_space", "OPS", "OBJECTIVES", "BATCH"]

#: The comparisons a constraint can make: ``"retained": ">= 0.9"``, ``"failed_turns": "== 0"``.
OPS = (">=", "<=", "==", ">", "<")

#: Trials asked for at a time, each batch one ``tune`` (its replays shared, on every core); fixed, so
#: that a seed's search does not depend on the machine.
BATCH = 8

#: tune's columns that are not measures: neither an objective nor a constraint reads them.
_LABELS = ("window", "strategies", "worker", "threshold")

#: The columns an objective or a constraint can read (with ``judge=``, tune's ``retained`` too).
OBJECTIVES = tuple(c for c in COLUMNS if c not in _LABELS)

#: The keys whose ranges are whole numbers (``idle_secs`` takes a float range too: a float bound).
_WHOLE = re.compile(r"^(window|strategy\[\d+\]\.over_tokens)$")


# ----------------------------------------------------------------------
# the space, the objective and the constraints, checked before any work
# ----------------------------------------------------------------------
@dataclass(frozen=True)
class _Dimension:
    """One key of the space: a range (``low``, ``high``, ``step``) or a list of ``choices``
    (given to Optuna as themselves when they are plain values, else as their indexes)."""

    key: str
    low: float | None = None
    high: float | None = None
    step: float | None = None
    choices: tuple[Any, ...] | None = None

    @property
    def by_index(self) -> bool:
        plain = (type(None), bool, int, float, str)
        return self.choices is not None and not all(isinstance(c, plain) for c in self.choices)

    def suggest(self, trial: optuna.Trial) -> Any:
        """The value a trial takes here (a choice decoded from its index)."""
        if self.choices is not None:
            if self.by_index:
                return self.choices[trial.suggest_categorical(self.key, list(range(len(self.choices))))]
            return trial.suggest_categorical(self.key, list(self.choices))
        assert self.low is not None and self.high is not None
        if all(isinstance(v, int) for v in (self.low, self.high, self.step or 1)):
            return trial.suggest_int(self.key, int(self.low), int(self.high), step=int(self.step or 1))
        return trial.suggest_float(self.key, self.low, self.high, step=self.step)

    def encoded(self, value: object) -> object:
        """What Optuna records for ``value`` (a grid point enqueued)."""
        return self.choices.index(value) if self.choices is not None and self.by_index else value


def _dimension(key: object, given: object, base: Mapping[str, Any], agent: str) -> _Dimension:
    if not isinstance(key, str):
        raise ValueError(f"search: a key of the space is a grid key ('window', 'strategy[0].over_tokens', 'worker'), got {key!r}")
    where = f"search: space[{key!r}]"
    if isinstance(given, list):
        if not given:
            raise ValueError(f"{where}: an empty list of choices")
        for value in given:  # each choice checked as a config (or a worker) takes it: a ConfigError names the key
            check_worker(value) if key == "worker" else config_grid(base, {key: [value]}, agent=agent)
        return _Dimension(key, choices=tuple(given))
    if not isinstance(given, tuple):
        raise ValueError(f"{where}: a range (low, high) or (low, high, step), or a list of choices, got {given!r}")
    if key == "worker":
        raise ValueError(f"{where}: workers are choices: a list such as [None, convlab.compact.clear_tool_results(keep=3)]")
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in given)
    if len(given) not in (2, 3) or not numbers:
        raise ValueError(f"{where}: a range is (low, high) or (low, high, step) of numbers, got {given!r}")
    low, high, step = given[0], given[1], given[2] if len(given) == 3 else None
    if low > high or (step is not None and step <= 0):
        raise ValueError(f"{where}: a range needs low <= high and a positive step, got {given!r}")
    if _WHOLE.match(key) and not all(isinstance(v, int) for v in given):
        raise ValueError(f"{where}: {key.rsplit('.', 1)[-1]} ranges over whole numbers: give int bounds, got {given!r}")
    if step is not None:  # the high end on the steps from low (Optuna would move it, with a warning)
        high = low + (high - low) // step * step
    config_grid(base, {key: [low, high]}, agent=agent)  # both ends are configs (a ConfigError names the key)
    return _Dimension(key, low, high, step)


def _objective(objective: object, columns: Sequence[str], model: str | None) -> tuple[str, bool]:
    """The objective's column, and whether it is maximised (a leading ``-``)."""
    if not isinstance(objective, str) or not objective.lstrip("-"):
        raise ValueError(f"search: objective is a column of tune's frame, e.g. 'usd' or '-saved', got {objective!r}")
    column, maximise = objective.removeprefix("-"), objective.startswith("-")
    if column not in columns:
        raise ValueError(f"search: objective {objective!r}: not a measure of tune's frame (one of {', '.join(columns)})")
    if column in ("usd", "baseline_usd", "usd_saved") and model is None:
        raise ValueError(f"search: objective {objective!r} is in dollars: give model= (e.g. model='claude-sonnet-4-5')")
    return column, maximise


@dataclass(frozen=True)
class _Constraint:
    column: str
    op: str
    bound: float
    why: str = ""  # a constraint the search adds itself says why

    def missed(self, row: Mapping[str, Any], why: bool = True) -> str:
        """What ``row`` misses of it, as a person reads it (``"saved 0.14, needs >= 0.2"``), with why the search
        added it (unless ``why=False``); "" when it meets it."""
        if not self.violation(row):
            return ""
        x = float(row[self.column])
        return f"{self.column} {_number(x)}, needs {self.op} {_number(self.bound)}{self.why if why else ''}"

    def distance(self, row: Mapping[str, Any]) -> float:
        """How far ``row`` is from meeting it, against the bound's size (0 when it meets it)."""
        return self.violation(row) / max(abs(self.bound), 1.0)

    def violation(self, row: Mapping[str, Any]) -> float:
        """0 when ``row`` meets it, else how far it misses (1 for a NaN)."""
        x = float(row[self.column])
        if math.isnan(x):
            return 1.0
        ok = {">=": x >= self.bound, "<=": x <= self.bound, "==": x == self.bound,
              ">": x > self.bound, "<": x < self.bound}[self.op]
        return 0.0 if ok else max(abs(x - self.bound), 1e-9)


def _number(x: float) -> str:
    """A figure of a constraint as a person reads it: a whole one past a thousand (a count of tokens) with
    separators, never in e-notation; a small one to four significant digits.

    >>> _number(14268812.4), _number(1e7), _number(0.18779), _number(26.0), _number(float("nan"))
    ('14,268,812', '10,000,000', '0.1878', '26', 'NaN')
    """
    if math.isnan(x):
        return "NaN"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:,.4g}"


#: Why the search adds ``failed_turns == 0`` and ``lost_calls == 0`` (``failed=True``: it does not), said once
#: after the last of them a trial missed. ``convlab search`` names its own flag for ``failed=True``.
BREAKS = " (a config that breaks turns never wins; failed=True lets it)"


def _missed(constraints: Sequence[_Constraint], row: Mapping[str, Any]) -> list[str]:
    """What ``row`` missed, constraint by constraint, each reason the search gave said once, after the last
    constraint it explains (``failed_turns 4, needs == 0; lost_calls 9, needs == 0 (a config that breaks ...)``)."""
    missed = [c for c in constraints if c.violation(row)]
    last = {c.why: i for i, c in enumerate(missed)}
    return [c.missed(row, why=last[c.why] == i) for i, c in enumerate(missed)]


_BOUND = re.compile(r"^\s*(>=|<=|==|>|<)\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*$")
_WRITTEN = re.compile(r"^\s*([\w\[\].]+)\s*((?:>=|<=|==|>|<).*)$")


def _constraints(constraints: Mapping[str, str] | Iterable[str] | None, columns: Sequence[str]) -> list[_Constraint]:
    """``{"retained": ">= 0.9"}``, or ``["failed_turns == 0"]``, parsed and checked against tune's columns."""
    if constraints is None:
        return []
    if isinstance(constraints, str):
        constraints = [constraints]
    pairs: list[tuple[str, object]] = []
    if isinstance(constraints, Mapping):
        pairs = list(constraints.items())
    elif not isinstance(constraints, Iterable):
        raise ValueError(f"search: constraints are a mapping ({{'failed_turns': '== 0'}}) or texts "
                         f"('failed_turns == 0'), got {constraints!r}")
    else:
        for text in constraints:
            m = _WRITTEN.match(text) if isinstance(text, str) else None
            if m is None:
                raise ValueError(f"search: constraint {text!r}: write COLUMN OP NUMBER, e.g. 'failed_turns == 0' "
                                 f"(OP one of {' '.join(OPS)})")
            pairs.append((m.group(1), m.group(2)))
    out = []
    for column, bound in pairs:
        m = _BOUND.match(bound) if isinstance(bound, str) else None
        if m is None:
            raise ValueError(f"search: constraint {column!r}: {bound!r} is not OP NUMBER (e.g. '>= 0.9'; OP one of "
                             f"{' '.join(OPS)})")
        if column not in columns:
            hint = " (retained: with judge=)" if column == "retained" else ""
            raise ValueError(f"search: constraint {column!r}: not a measure of tune's frame{hint} (one of {', '.join(columns)})")
        out.append(_Constraint(column, m.group(1), float(m.group(2))))
    return out


@dataclass(frozen=True)
class _Checked:
    """A search's arguments, checked: what it scores and how."""

    base: dict[str, Any]
    dimensions: list[_Dimension]
    column: str
    maximise: bool
    constraints: list[_Constraint]  # the given ones, then the search's own (a config that breaks turns never wins)
    options: Options  # every tune's


def _base(base: TomlSource | None, agent: str) -> dict[str, Any]:
    """The base document (a deep copy), with the agent's context table; None: an empty one."""
    if base is None:
        return {"agent": {agent: {"context": {}}}}
    doc = copy.deepcopy(dict(toml_document(base)))
    load_config(doc, agent)  # the agent's table is there and sound (a ConfigError names the key)
    return doc


def _checked(space: Mapping[str, object] | None, options: Options, *, base: TomlSource | None, objective: str,
             constraints: Mapping[str, str] | Iterable[str] | None, failed: bool = False) -> _Checked:
    agent, model = options.agent, options.model
    doc = _base(base, agent)
    if space is None:
        space = default_space(doc, agent=agent)
    if not isinstance(space, Mapping) or not space:
        raise ValueError(f"search: space maps grid keys to ranges or lists of choices, e.g. "
                         f"{{'window': (64000, 200000)}}, got {space!r}")
    dims = [_dimension(k, v, doc, agent) for k, v in space.items()]
    frame = tune([], doc, options=options, progress=False)  # no conversation: its columns only
    columns = [c for c in frame.columns if c in OBJECTIVES or c not in ("conversation", "source", "config", *COLUMNS)]
    column, maximise = _objective(objective, columns, model)
    given = _constraints(constraints, columns)
    own = [] if failed else [_Constraint(c, "==", 0.0, BREAKS) for c in ("failed_turns", "lost_calls")]
    return _Checked(doc, dims, column, maximise, given + own, options)


@takes_options
def check(space: Mapping[str, object] | None, options: Options | None = None, *, base: TomlSource | None = None,
          objective: str = "usd", constraints: Mapping[str, str] | Iterable[str] | None = None, **knobs: Any) -> None:
    """Every argument of a ``search`` checked, before any work: a ``ValueError`` (a ``ConfigError`` for a
    bad value of a config) naming what is wrong. What ``convlab search`` runs before it reads the logs.

    >>> check({"window": (64000, 200000)}, objective="usd")
    Traceback (most recent call last):
    ...
    ValueError: search: objective 'usd' is in dollars: give model= (e.g. model='claude-sonnet-4-5')
    """
    _checked(space, options_of(options, knobs, "search"), base=base, objective=objective, constraints=constraints)


def default_space(base: TomlSource, *, agent: str = "bot") -> dict[str, tuple[int, int, int]]:
    """Ranges around a base config, for a search given no space: ``window`` from a quarter of the
    base's up to it (steps of 1000), ``strategy[0].over_tokens`` from a quarter to twice the base's
    (steps of 1000), ``strategy[0].idle_secs`` from a sixth to six times the base's (steps of a
    minute); each only when the base sets it.

    >>> default_space('[agent.bot.context]\\nwindow = 200000\\n[[agent.bot.context.strategy]]\\nuse = "reset"\\nidle_secs = 3600')
    {'window': (50000, 200000, 1000), 'strategy[0].idle_secs': (600, 21600, 60)}
    """
    ctx = load_config(base, agent)[agent]
    space: dict[str, tuple[int, int, int]] = {}

    def around(value: int, low: int, high: int, step: int, least: int) -> tuple[int, int, int]:
        """From ``low`` to ``high`` on the steps through ``value`` (at least ``least``)."""
        below = max(0, (value - max(low, least)) // step)
        return value - below * step, value + max(0, high - value) // step * step, step

    if ctx.window is not None:
        space["window"] = around(ctx.window, ctx.window // 4, ctx.window, 1000, MARGIN + 1)
    first = ctx.strategies[0] if ctx.strategies else None
    if first is not None and first.over_tokens is not None:
        space["strategy[0].over_tokens"] = around(first.over_tokens, first.over_tokens // 4, first.over_tokens * 2, 1000, 1)
    if first is not None and first.idle_secs is not None:
        idle = max(1, round(first.idle_secs))
        space["strategy[0].idle_secs"] = around(idle, idle // 6, idle * 6, 60, 1)
    if not space:
        raise ConfigError(f"agent.{agent}.context", "sets no window and no strategy[0].over_tokens or idle_secs to "
                                                     "search around: give the search a space")
    return space


# ----------------------------------------------------------------------
# the search
# ----------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class SearchResult:
    """What ``search`` found.

    ``best``: the best config, a parsed TOML document holding only
    ``[agent.<agent>.context]`` (what ``convlab.load_config``, ``tune`` and
    ``Session(config=...)`` take; None when no trial met the constraints);
    ``worker``: the best trial's worker when the space has a ``worker`` key
    (a worker is not a key of the table: ``Session(worker=...)``), else None;
    ``best_value``: its objective's value over every conversation (the column's
    own value, also when maximised; NaN with no feasible trial);
    ``best_trial``: its number; ``frame``: one row per trial (see ``search``;
    ``closest()``: the trials nearest to feasible); ``study``: the Optuna
    study (``optuna.visualization`` plots it); ``agent``, ``objective``.
    ``toml()`` is ``best`` as TOML text.
    """

    best: dict[str, Any] | None
    worker: Worker | None
    best_value: float
    best_trial: int | None
    frame: pd.DataFrame
    study: optuna.Study
    agent: str
    objective: str

    @property
    def feasible(self) -> int:
        """How many trials met every constraint."""
        return int(self.frame["feasible"].sum())

    def closest(self, n: int = 3) -> pd.DataFrame:
        """The ``n`` infeasible trials nearest to meeting the constraints (least ``distance``, then the
        best value), each once, with what each ``missed``: where to look when no trial met them all.

        >>> import pandas as pd
        >>> frame = pd.DataFrame({"trial": [0, 1, 2], "window": [64000, 96000, 96000], "value": [3.0, 2.0, 2.0],
        ...                       "feasible": [False] * 3, "missed": ["saved 0.05, needs >= 0.2", "saved 0.15, needs >= 0.2",
        ...                                                          "saved 0.15, needs >= 0.2"], "distance": [0.75, 0.25, 0.25]})
        >>> SearchResult(None, None, float("nan"), None, frame, None, "bot", "usd").closest(2)[["trial", "missed"]].values.tolist()
        [[1, 'saved 0.15, needs >= 0.2'], [0, 'saved 0.05, needs >= 0.2']]
        """
        keys = [c for c in self.frame.columns if c not in ("trial", "value", "feasible", "missed", "distance", *COLUMNS)]
        out = self.frame[~self.frame["feasible"].astype(bool)]
        out = out.drop_duplicates([*keys, "window", "worker"] if "worker" in out.columns else [*keys, "window"])
        sign = -1 if self.study is not None and self.study.direction.name == "MAXIMIZE" else 1
        return out.assign(_v=sign * out["value"]).sort_values(["distance", "_v", "trial"]).drop(columns="_v").head(n)

    def toml(self) -> str:
        """``best`` as TOML, ready for a config file's ``[agent.<agent>.context]``; the worker, if any, as a
        comment (it is given to the Session, not written in the table)."""
        if self.best is None:
            raise ValueError(f"no trial of the search met its constraints ({len(self.frame)} trials): no config to write")
        ctx = self.best["agent"][self.agent]["context"]
        lines = [f"[agent.{_toml_key(self.agent)}.context]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in ctx.items() if k != "strategy"]
        for strategy in ctx.get("strategy", []):
            lines += ["", f"[[agent.{_toml_key(self.agent)}.context.strategy]]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in strategy.items()]
        if self.worker is not None:
            lines += ["", f"# worker: {self.worker!r} (Session(worker=...): a worker is not a key of this table)"]
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        value = "nan" if math.isnan(self.best_value) else f"{self.best_value:.6g}"
        return (f"SearchResult(objective={self.objective!r}, best_value={value}, best_trial={self.best_trial}, "
                f"feasible={self.feasible}/{len(self.frame)})")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: JSON's escapes are TOML's
    raise TypeError(f"a context config holds numbers and strings, got {v!r}")


@contextlib.contextmanager
def _quiet_optuna() -> Iterator[Any]:
    """Optuna, imported (the search extra), its per-trial log lines and experimental-feature warnings off."""
    try:
        import optuna
    except ImportError as err:
        raise ImportError("convlab.search needs Optuna, the search extra: pip install 'convlab[search]'") from err
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield optuna
    finally:
        optuna.logging.set_verbosity(level)


@takes_options
def search(
    conversations: Conversation | Iterable[Conversation],
    space: Mapping[str, object] | None,
    options: Options | None = None,
    *,
    base: TomlSource | None = None,
    objective: str = "usd",
    constraints: Mapping[str, str] | Iterable[str] | None = None,
    trials: int = 100,
    jobs: int | None = None,
    seed: int = 0,
    progress: bool | None = None,
    failed: bool = False,
    **knobs: Any,
) -> SearchResult:
    """The config of ``space`` that minimises ``objective`` over ``conversations``, among those that meet
    ``constraints``: Optuna's TPE sampler (seeded by ``seed``) proposes ``trials`` configs and ``convlab.tune``
    scores them.

    ``space`` maps a grid key (``config_grid``'s: ``"window"``, ``"strategy[i].<key>"``, and ``"worker"``)
    to a range, a tuple ``(low, high)`` or ``(low, high, step)`` (int bounds: whole numbers, as ``window``
    and ``over_tokens`` must be; a float bound makes ``idle_secs`` a real range), or to a list of
    choices (``"strategy[0].use": ["reset", "summarize"]``; ``"worker": [None,
    convlab.compact.clear_tool_results(keep=3)]``; a choice that is not a plain value goes to Optuna as its
    index). Each is set on ``base`` (TOML text, a path or a parsed document; None: an empty context table),
    and every end of a range and every choice is checked as a config first. ``space=None``:
    ``default_space(base)``.

    ``objective`` is a measure of tune's frame (``OBJECTIVES``: ``"usd"``, the default, needs ``model=``),
    minimised; a leading ``-`` maximises it (``"-saved"``, ``"-facts_kept"``). ``constraints`` bound
    measures: ``{"failed_turns": "== 0", "facts_kept": ">= 0.5"}`` or ``["failed_turns == 0"]`` (``OPS``);
    a trial that misses one is infeasible (the sampler is told its constraints, so it steers away) and
    never wins, and so is one whose objective is NaN (``facts_kept`` where nothing was measured: the config
    compacted nothing of its own that a model read); a constraint on a NaN figure is missed, never met.
    The knobs (``options``, or its fields by name: ``model``, ``judge`` for tune's ``retained`` column,
    ``summarizer``, ``worker``, ...) go to every ``tune`` (``convlab.replaying.options.Options``); a
    ``worker`` axis of the space overrides the options' worker.

    Every figure is the config's over the whole corpus, as ``convlab.tuning.ranking.totals`` makes it from
    tune's rows: what a user would pay or save over all of ``conversations`` (``usd`` and ``tokens_read``
    summed, ``saved`` the share of the summed baseline, ``facts_kept`` the mean of the conversations'),
    so ``best_value`` is the figure ``convlab tune`` shows for that config over the same logs. The
    objective and the constraints read those figures.

    A config that breaks turns (``failed_turns`` or ``lost_calls`` above 0: a call refused as too long
    with nothing that made room) never wins: it is infeasible, as if ``"failed_turns == 0"`` were a
    constraint, unless ``failed=True``.

    ``frame``: one row per trial, in order: ``trial``, the space's keys (their values; ``window`` and
    ``worker`` as tune's columns), ``value`` (the objective's), ``feasible``, ``missed`` (what an
    infeasible trial missed, constraint by constraint: ``"saved 0.14, needs >= 0.2"``; "" when it met
    them all), ``distance`` (how far it is from meeting them: over the constraints it missed, the miss
    against the bound's size, at least 1; 0 when feasible), then tune's ``COLUMNS``, each the corpus
    figure. A point proposed twice is scored once and
    gets its row twice. ``closest()`` lists the trials nearest to feasible when none is.

    Exact on a grid: when every key is a list of choices and ``trials`` is at least the grid's size, every
    point is scored (one ``tune`` over the grid) and the study has that many trials, no more. The best is
    the feasible trial with the least value (the most, maximised), the earliest on a tie; when no trial is
    feasible, ``best`` is None and ``best_value`` NaN (``frame`` says why). ``jobs`` is tune's (trials go
    to it in batches of ``BATCH`` trials); ``progress`` a bar over the trials (None: for 20 or more).

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 400, "time": 0.0}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "time": 1.0}, "u1")
    >>> _ = t.add({"id": "u2", "role": "user", "content": "again", "time": 7200.0}, "a1")
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "hello again", "time": 7201.0}, "u2")
    >>> t.head = "a2"
    >>> base = '[agent.bot.context]\\n[[agent.bot.context.strategy]]\\nuse = "reset"\\nidle_secs = 3600'
    >>> found = search([Conversation(t, id="c")], {"strategy[0].idle_secs": [600, 86400]}, base=base,
    ...                objective="tokens_read", trials=10, jobs=1, progress=False)
    >>> found.best["agent"]["bot"]["context"]["strategy"][0]["idle_secs"], found.best_value, len(found.frame)
    (600, 402.0, 2)
    """
    convs = [conversations] if isinstance(conversations, Conversation) else list(conversations)
    if not convs or not all(isinstance(c, Conversation) for c in convs):
        raise TypeError("search takes one or more Conversations (what convlab.read(path) returns)")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"search: trials must be a positive whole number, got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"search: seed must be a whole number, got {seed!r}")
    if not isinstance(failed, bool):
        raise ValueError(f"search: failed is True (a config that breaks turns may win) or False, got {failed!r}")
    chosen = options_of(options, knobs, "search")
    checked = _checked(space, chosen, base=base, objective=objective, constraints=constraints, failed=failed)
    score = _Scorer(checked, convs, jobs)
    with _quiet_optuna() as optuna:
        # Optuna 5 reads each trial's constraints (Trial.set_constraint); Optuna 4 asks a constraints_func
        older = {} if _sets_constraints(optuna) else {"constraints_func": lambda t: t.user_attrs["violations"]}
        sampler = optuna.samplers.TPESampler(seed=seed, **older)
        study = optuna.create_study(direction="maximize" if checked.maximise else "minimize", sampler=sampler)
        grid = _grid(checked.dimensions, trials)
        for point in grid or ():
            study.enqueue_trial({d.key: d.encoded(v) for d, v in zip(checked.dimensions, point, strict=True)})
        n, batch = (len(grid), len(grid)) if grid else (trials, BATCH)
        rows = _run(study, checked, score, n, batch, _bar(n, progress))
    return _result(checked, study, rows, score, chosen.agent, objective)


def _sets_constraints(optuna: types.ModuleType) -> bool:
    return hasattr(optuna.trial.Trial, "set_constraint")


def _grid(dimensions: Sequence[_Dimension], trials: int) -> list[tuple[Any, ...]] | None:
    """Every point of a space of choices only, when ``trials`` reach them all (None: a sampled search)."""
    if any(d.choices is None for d in dimensions):
        return None
    size = math.prod(len(d.choices or ()) for d in dimensions)
    return list(itertools.product(*(d.choices or () for d in dimensions))) if size <= trials else None


def _bar(total: int, progress: bool | None) -> tqdm[NoReturn]:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="search", unit="trial", disable=not ((total >= 20) if progress is None else progress))


class _Scorer:
    """Scores configs with ``tune``: a batch's new configs in one sweep; a config scored once."""

    def __init__(self, checked: _Checked, conversations: list[Conversation], jobs: int | None) -> None:
        self.checked, self.conversations, self.jobs = checked, conversations, jobs
        self.agent = checked.options.agent
        self.memo: dict[str, dict[str, Any]] = {}

    def config(self, values: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
        """The document (only the agent's context table) and the worker a trial's values make."""
        axes = {k: [v] for k, v in values.items() if k != "worker"}
        doc = config_grid(self.checked.base, axes, agent=self.agent)[0] if axes else self.checked.base
        worker = values.get("worker", self.checked.options.worker)  # a worker axis, else the options' worker
        return {"agent": {self.agent: {"context": copy.deepcopy(doc["agent"][self.agent]["context"])}}}, worker

    def __call__(self, points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        from ..context import coerce

        keys, new = [], {}
        for values in points:
            doc, worker = self.config(values)
            key = json.dumps([doc, repr(worker)], sort_keys=True)
            keys.append(key)
            if key not in self.memo and key not in new:
                new[key] = Preset("search", coerce(doc, self.agent), worker)
        if new:
            df = tune(self.conversations, list(new.values()), options=self.checked.options, progress=False, jobs=self.jobs)
            self.memo.update(zip(new, _totals(df), strict=True))
        return [self.memo[k] for k in keys]


def _totals(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per config of a tune frame (in order): its labels, and each measure over every conversation
    (``convlab.tuning.ranking.totals``: counts, tokens and dollars summed, shares of the sums)."""
    import pandas as pd

    table = totals(df).drop(columns=["conversations", "preset"], errors="ignore")
    # a row of mixed dtypes (Int64 columns beside floats) gives a missing value as None: NaN, as tune's frame has it
    return [{str(k): (math.nan if k not in _LABELS and pd.isna(v) else v) for k, v in row.items()}
            for row in table.to_dict("records")]


def _run(study: optuna.Study, checked: _Checked, score: _Scorer, n: int, batch: int, bar: tqdm[NoReturn]) -> list[dict[str, Any]]:
    """``n`` trials, asked ``batch`` at a time, each batch scored at once, then told: the frame's rows."""
    rows: list[dict[str, Any]] = []
    worst = -math.inf if checked.maximise else math.inf
    try:
        while len(rows) < n:
            asked = [study.ask() for _ in range(min(batch, n - len(rows)))]
            points = [{d.key: d.suggest(t) for d in checked.dimensions} for t in asked]
            for t, values, measured in zip(asked, points, score(points), strict=True):
                value = float(measured[checked.column])
                violations = [c.violation(measured) for c in checked.constraints] + [float(math.isnan(value))]
                missed = _missed(checked.constraints, measured)
                if math.isnan(value):
                    missed.append(f"{checked.column} is NaN (nothing to score)")
                distance = sum(c.distance(measured) for c in checked.constraints) + float(math.isnan(value))
                if hasattr(t, "set_constraint"):
                    for i, v in enumerate(violations):
                        t.set_constraint(f"constraint {i}", v)
                else:  # Optuna 4
                    t.set_user_attr("violations", violations)
                study.tell(t, worst if math.isnan(value) else value)
                shown = {k: v for k, v in values.items() if k not in COLUMNS}
                rows.append({"trial": t.number, **shown, "value": value, "feasible": not any(violations),
                             "missed": "; ".join(missed), "distance": distance, **measured})
            bar.update(len(asked))
    finally:
        bar.close()
    return rows


def _result(checked: _Checked, study: optuna.Study, rows: list[dict[str, Any]], score: _Scorer, agent: str,
            objective: str) -> SearchResult:
    import pandas as pd

    keys = [d.key for d in checked.dimensions if d.key not in COLUMNS]
    head = ("trial", *keys, "value", "feasible", "missed", "distance")
    measures = [c for c in rows[0] if c not in (*head, *COLUMNS)] if rows else []
    frame = pd.DataFrame(rows, columns=[*head, *COLUMNS, *measures])
    for col in ("window", "threshold"):
        frame[col] = frame[col].astype("Int64")
    feasible = [r for r in rows if r["feasible"]]
    if not feasible:
        return SearchResult(None, None, math.nan, None, frame, study, agent, objective)
    sign = -1 if checked.maximise else 1
    best = min(feasible, key=lambda r: (sign * r["value"], r["trial"]))
    doc, worker = score.config(_decoded(checked.dimensions, study.trials[best["trial"]].params))
    return SearchResult(doc, worker, best["value"], best["trial"], frame, study, agent, objective)


def _decoded(dimensions: Sequence[_Dimension], params: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's values from what Optuna recorded (a choice given by index, decoded)."""
    return {d.key: d.choices[params[d.key]] if d.choices is not None and d.by_index else params[d.key] for d in dimensions}
