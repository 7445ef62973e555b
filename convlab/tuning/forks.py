"""One conversation under many configs: replays that share what they can (a sweep's rows).

Per conversation the first replay has no config: the log as it was (the
``Baseline``). Every replay records the points where it consulted its config
(``Replayer.record.consulted``: which strategy applies before a call, whether
a read passes the window, which strategy makes room after an overflow). A
config that says the same as a replay's config at all of them makes the same
replay, so it shares its row at no engine cost. Any other config first says
something else in some turn ``k`` of the replay it agrees with longest, and
until ``k`` starts the two are the same replay, event for event: it forks from
there (``Replayer.fork``), so the stretch it shares with that replay, itself
maybe a fork, is never replayed again. The replays form a tree, each fork
starting where its config leaves its parent's. ``rows`` is the one function
that turns them into rows, wherever it runs (here, a worker process, a dask
worker), so every way gives the same frame, row for row.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..context import ContextConfig, Strategy, applies
from ..replaying.driver import Replayer
from ..replaying.model import Summarize
from ..replaying.plan import ExactCounts, Plan
from ..replaying.result import Figures, Replay
from .measures import against_usage, measures
from .probes import Asking
from .retention import retained

if TYPE_CHECKING:
    from ..engine import Worker


@dataclass(frozen=True)
class Setup:
    """What one config of a sweep replays under: the context ``config`` (when a
    ``context.limit`` is raised) and the ``worker`` that answers it (None: the
    engine's proposal; see ``convlab.replay``)."""

    config: ContextConfig
    worker: Worker | None = None


def _strategy_key(strategy: Strategy) -> tuple:
    return (strategy.use, strategy.prompt, strategy.llm, strategy.model)


def _says(setup: Setup, point: tuple) -> Any:
    """What ``setup`` says at a point where a replay consulted its config (``Replayer.record.consulted``):
    at a limit raised, which strategy and which worker answer it."""
    config, kind = setup.config, point[1]
    if kind == "limit":
        limit = applies(config, point[2], first_call=point[3], idle_for=point[4])
        return None if limit is None else (limit.reason, _strategy_key(limit.strategy), setup.worker)
    if kind == "read":
        return config.window is not None and point[2] > config.window
    return _strategy_key(config.summarize_strategy())  # overflow


@dataclass
class _SharedReplay:
    """One replay of a sweep: the configs that say what its config says at every
    point it consulted it share it (and its row); a config that first says
    something else in turn ``k`` forks from it there."""

    replayer: Replayer
    setup: Setup
    says: list[Any]  # what config says at each of replayer.record.consulted
    start: int  # the turn it forked at from its parent (0: it ran from the start)
    row: dict[str, Any]
    children: dict[int, list[_SharedReplay]]  # by the point each first said something else at (``differs``)

    @classmethod
    def made(cls, replayer: Replayer, start: int, parent: _SharedReplay | None = None,
             baseline: Mapping[str, Figures] | None = None, result: Replay | None = None) -> _SharedReplay:
        """The run of a finished replay; forked at ``start`` from ``parent``, whose
        config says the same before that turn (so what it said is not asked again).
        Its row counts the calls it lost at their ``baseline`` figures (``measures.measures``)."""
        setup, consulted = Setup(replayer.config, replayer.worker), replayer.record.consulted
        n = replayer.starts[start].consulted if parent is not None else 0
        says = (parent.says[:n] if parent is not None else []) + [_says(setup, p) for p in consulted[n:]]
        return cls(replayer, setup, says, start, measures(result or replayer.result(), baseline), {})

    def differs(self, config: Setup, from_turn: int) -> int | None:
        """The point (an index of ``replayer.record.consulted``) where ``config`` first says
        something else than this run's setup, looking from turn ``from_turn`` on (before it
        they agree); None if never. Its turn: ``turn_at``."""
        points = self.replayer.record.consulted
        i = self.replayer.starts[from_turn].consulted if from_turn in self.replayer.starts else 0
        says = self.says
        for k in range(i, len(points)):
            if _says(config, points[k]) != says[k]:
                return k
        return None

    def turn_at(self, point: int) -> int:
        """The turn of one of its points (``differs``)."""
        return self.replayer.record.consulted[point][0]


def _closest(root: _SharedReplay, config: Setup) -> tuple[_SharedReplay, int | None]:
    """The run ``config`` shares the most with: the one where it first says
    something else latest, and that point (None: it says the same everywhere).

    A config that leaves a run ``R`` at point ``p`` leaves every child of ``R``
    that left ``R`` at another point by then too (before ``p`` the config says
    what ``R`` says, at ``p`` that child does); only the children that left
    ``R`` at ``p`` itself can go on further with it. So each run's children are
    kept by that point, and a config looks at those alone: a grid of thousands
    of configs that leave the baseline in the same turn compares each with a
    few, not with every one before it."""
    best, best_at = root, root.differs(config, 0)
    if best_at is None:
        return root, None
    best_turn = root.turn_at(best_at)
    todo = [(root, best_at)]
    while todo:
        run, at = todo.pop()
        turn = run.turn_at(at)
        for child in run.children.get(at, ()):
            t = child.differs(config, turn)
            if t is None:
                return child, None
            if child.turn_at(t) > best_turn:
                best, best_at, best_turn = child, t, child.turn_at(t)
            todo.append((child, t))
    return best, best_at


@dataclass
class Baseline:
    """A conversation's baseline replay (no config: nothing fires, the log as it was), run once:
    the ``root`` its configs share or fork from, and what every row of it carries from it (its tokens
    read and dollars, the hidden overhead: ``given``, else the log's, ``Replay.hidden_overhead``,
    with the number of calls it rests on, and its dollars against the log's own usage,
    ``measures.against_usage``)."""

    root: _SharedReplay
    carried: dict[str, Any]
    figures: dict[str, Figures]  # what each of its calls read and cost: what another config's lost calls count at

    @classmethod
    def run(cls, p: Plan, counts: ExactCounts, agent: str, *, summarize: Summarize | None = None,
            knobs: Mapping[str, Any] = {}) -> Baseline:
        base = Replayer(p, None, counts=counts, agent=agent, summarize=summarize, **knobs).run()
        result = base.result()
        root = _SharedReplay.made(base, 0, result=result)
        pricing = base.pricing
        usage = against_usage(result, p, pricing.prices(pricing.model) if pricing is not None else None)
        return cls(root, _carried(result, root.row, knobs.get("overhead"), usage), result.figures())

    def leaves(self, setup: Setup) -> tuple[int, Any] | None:
        """Where ``setup`` first says something else than the baseline: the turn, and what it
        says there (configs that agree on both can share what follows); None if never."""
        root, points = self.root, self.root.replayer.record.consulted
        for k, point in enumerate(points):
            says = _says(setup, point)
            if says != root.says[k]:
                return point[0], (k, says)
        return None


def _carried(base: Replay, row: Mapping[str, Any], given: int | None, usage: Mapping[str, Any]) -> dict[str, Any]:
    hidden = {"overhead": given, "overhead_calls": None} if given is not None else base.hidden_overhead()
    growth = base.fit.growth() if base.fit is not None else None
    return {"baseline_tokens_read": row["tokens_read"], "baseline_usd": row["usd"], **hidden,
            "usage_growth": math.nan if growth is None else growth, **usage}


def rows(p: Plan, counts: ExactCounts, configs: Sequence[tuple[int, Setup]], agent: str, *,
         share: bool = True, summarize: Summarize | None = None, knobs: Mapping[str, Any] = {},
         base: Baseline | None = None, judge: Asking | None = None, probes: int = 5) -> list[tuple[int, dict[str, Any]]]:
    """The measures of one conversation under each ``(index, setup)``.

    The first replay has no config (nothing fires: the log as it was): the
    baseline every row is measured against (``base``, when it was run
    already). Each config shares the replay it says the same as at every
    point that replay consulted its config, or forks from the replay it
    agrees with longest, at the start of the turn where they first differ.
    ``share=False`` replays every config from the start (what the sharing
    must equal). ``knobs`` are the cost model's (``Replayer``'s
    ``summary_size`` and ``overhead``). With ``judge`` (a ``Judge``, or in a
    worker process a ``Relayed`` one), each replay's ``retained`` is probed
    once, before it is closed (``convlab.tuning.retention.retained``). The configs that share a replay share
    one row, the same dict (a row is never changed once made: it goes to the frame and the result cache).
    """
    if base is None:
        base = Baseline.run(p, counts, agent, summarize=summarize, knobs=knobs)
    judged: dict[int, dict[str, Any]] = {}  # id of a replayer -> its retained, probed once however many configs share it

    def probed(replayer: Replayer) -> dict[str, Any]:
        if judge is None:
            return {}
        if id(replayer) not in judged:
            judged[id(replayer)] = {"retained": retained(replayer.result(), judge, probes)}
        return judged[id(replayer)]

    if not share:
        out = []
        for j, cfg in configs:
            r = Replayer(p, cfg.config, counts=counts, agent=agent, summarize=summarize, worker=cfg.worker, **knobs).run()
            out.append((j, {**measures(r.result(), base.figures), **base.carried,
                            **({} if judge is None else {"retained": retained(r.result(), judge, probes)})}))
        return out
    # the forks hang on a root of this call's own: a shared baseline (a worker's) keeps none of them alive
    root, out, made = dataclasses.replace(base.root, children={}), [], []
    shared: dict[int, dict[str, Any]] = {}  # a run's row, by the run: the configs that share a run share one row
    for j, cfg in configs:
        run, at = _closest(root, cfg)
        if at is not None:
            turn = run.turn_at(at)
            child = _SharedReplay.made(run.replayer.fork(turn, cfg.config, cfg.worker).run(turn), turn, run, base.figures)
            run.children.setdefault(at, []).append(child)
            made.append(child.replayer)
            run = child
        row = shared.get(id(run))
        if row is None:
            row = shared[id(run)] = {**run.row, **base.carried, **probed(run.replayer)}
        out.append((j, row))
    for r in made:
        r.close()  # freed with this call's tree, not left to the collector
    return out
