"""Strategy sweeps: replay real conversations under many context configs -> pandas.

Why it is fast: everything that does not depend on the config is done once
per conversation (``_Prepared``): the replay plan, the exact token count of
every message (one tokenizer batch for the whole sweep, shared by every
config), and a *baseline* replay with no strategy. Until a strategy fires, a
replay under any config is the baseline replay, call for call: the count,
whether the call is a turn's first and how long the session was idle are the
same. So per config we first scan the baseline's calls with
``context.applies`` (and the provider's window); a config that never fires is
the baseline row at no engine cost. A config that fires is replayed from the
start of the baseline's turn where it first differs (a fork: the baseline's
events up to there, loaded with ``Session.load``), and every replay records
the points where it consulted its config: a later config that says the same
at all of them makes the same replay, so it shares that row.

Rows are computed by one function (``_rows``) whether the sweep runs here or
on a dask.distributed cluster, so both give the same frame, row for row.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .context import ContextConfig, applies, coerce, load_config, toml_document
from .conversation import Conversation
from .errors import ConfigError
from .replaying import ExactCounts, Plan, Replayer, plan
from .tokens import content_text
from .tree import input_tokens

__all__ = ["tune", "config_grid", "COLUMNS"]

#: The measured columns of a tune frame, in order (after conversation, config and the grid keys).
COLUMNS = (
    "window",
    "strategies",
    "calls",
    "summary_calls",
    "limits_full",
    "limits_idle",
    "limits_overflow",
    "summaries",
    "resets",
    "overflows",
    "failed_turns",
    "stale",
    "first_limit_call",
    "max_count",
    "tokens_read",
    "err_exact_mean",
    "err_exact_p95",
    "err_usage_mean",
    "err_usage_p95",
)


# ----------------------------------------------------------------------
# configs and grids
# ----------------------------------------------------------------------
_KEY = re.compile(r"^(window|strategy\[(\d+)\]\.(\w+))$")


def _document(config: Any) -> dict[str, Any]:
    """A parsed TOML document (a deep copy) from TOML text, a path or a document."""
    if isinstance(config, ContextConfig):
        raise TypeError("give a TOML text or document, not a parsed ContextConfig, to build a grid on")
    return copy.deepcopy(dict(toml_document(config)))


def _set(doc: dict[str, Any], agent: str, key: str, value: Any) -> None:
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


def config_grid(base: Any, axes: Mapping[str, Sequence[Any]], *, agent: str = "bot") -> list[dict[str, Any]]:
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
        for k, v in zip(keys, values):
            _set(d, agent, k, v)
        coerce(d, agent)  # a bad value is a ConfigError naming the key
        out.append(d)
    return out


# ----------------------------------------------------------------------
# per conversation, once
# ----------------------------------------------------------------------
@dataclass
class _Prepared:
    """What every config of a sweep shares for one conversation."""

    plan: Plan
    counts: ExactCounts
    baseline: list[dict[str, Any]]  # per model call: count, first_call, idle_for, read, exact, overhead, logged, applies, ...
    base_row: dict[str, Any]
    events: list[dict[str, Any]]  # the baseline's events, decisions left out (what a fork loads)
    turn_starts: list[tuple[int, int]]  # per planned turn: (index into the baseline's full events, calls before)
    map: dict[str, str]  # the baseline's id map
    turn_of_call: list[int]


#: Event types a fork leaves out: between turns no decision waits, so they change nothing.
_NOT_FORKED = ("decision.requested", "decision.answered")


def _texts(p: Plan) -> list[str]:
    return [content_text(n["content"]) for n in p.nodes.values()]


def _prepare(p: Plan, counts: ExactCounts, agent: str) -> _Prepared:
    r = Replayer(p, None, counts=counts, agent=agent).run()
    base = [{**t, **s} for t, s in zip(r.trace, r.llm.seen)]
    turn_of_call = [k for k, t in enumerate(p.turns) for kind, _ in t.steps if kind == "call"]
    return _Prepared(
        p, counts, base, _measure(r), list(r.session.events), list(r.turn_starts), dict(r.map), turn_of_call,
    )


def _first_firing(prep: _Prepared, config: ContextConfig) -> int | None:
    """The first baseline call (0-based) where a strategy or the provider's window would act, or None."""
    window = config.window
    for i, call in enumerate(prep.baseline):
        if applies(config, call["count"], first_call=call["first_call"], idle_for=call["idle_for"]) is not None:
            return i
        if window is not None and call["read"] > window:
            return i
    return None


def _fork(prep: _Prepared, config: ContextConfig, call: int, agent: str) -> Replayer:
    """A replay under ``config`` that starts from the baseline at the start of the
    turn of ``call``: until then the two are the same, event for event."""
    k = prep.turn_of_call[call] if call < len(prep.turn_of_call) else len(prep.plan.turns)
    if k == 0:
        return Replayer(prep.plan, config, counts=prep.counts, agent=agent).run()
    n_events, n_calls = prep.turn_starts[k]
    log = io.BytesIO(b"".join(
        json.dumps(ev, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for ev in prep.events[:n_events] if ev["type"] not in _NOT_FORKED
    ))
    done = {nid for t in prep.plan.turns[:k] for nid in [*t.nodes, *(x for _, x in t.steps)]}
    resume = {
        "log": log,
        "map": {imp: sid for imp, sid in prep.map.items() if imp in done},
        "trace": [{key: c[key] for key in ("call_id", "count", "first_call", "idle_for", "checked")} for c in prep.baseline[:n_calls]],
        "seen": [{key: c[key] for key in ("reply", "applies", "read", "exact", "overhead", "logged", "refused")} for c in prep.baseline[:n_calls]],
    }
    return Replayer(prep.plan, config, counts=prep.counts, agent=agent, resume=resume).run(prep.plan.turns[k:])


def _p95(values: list[float]) -> float:
    if not values:
        return math.nan
    v = sorted(abs(x) for x in values)
    # nearest rank: the smallest value with at least 95% of the values at or below it
    return float(v[max(0, math.ceil(0.95 * len(v)) - 1)])


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


def _measure(r: Replayer) -> dict[str, Any]:
    """One row's measures from a finished replay."""
    s = r.session
    calls = [{**t, **x} for t, x in zip(r.trace, r.llm.seen)]
    reasons = [x["reason"] for x in r.limits]
    summary_calls = 0
    tokens_read = 0
    overflows = 0
    for ev in s.events:
        t = ev["type"]
        if t == "llm.started" and ev.get("summary"):
            summary_calls += 1
        elif t == "llm.completed":
            tokens_read += input_tokens(ev.get("usage")) or 0
        elif t == "llm.failed" and ev.get("error") == "too_long" and not ev.get("summary"):
            overflows += 1
    counts = [c["count"] for c in calls] + [x["tokens"] for x in r.limits]
    err_exact = [c["count"] - c["exact"] for c in calls]
    err_usage = [c["count"] - c["logged"] for c in calls if c["applies"] and c["logged"] is not None]
    return {
        "calls": len(calls),
        "summary_calls": summary_calls,
        "limits_full": reasons.count("full"),
        "limits_idle": reasons.count("idle"),
        "limits_overflow": reasons.count("overflow"),
        "summaries": sum(1 for x in r.limits if x["replaced"] and x["strategy"] == "summarize"),
        "resets": sum(1 for x in r.limits if x["replaced"] and x["strategy"] == "reset"),
        "overflows": overflows,
        "failed_turns": sum(1 for t in s.turns if t["status"] == "failed"),
        "stale": len(dict.fromkeys(r.stale)),
        "first_limit_call": r.limits[0]["call"] if r.limits else None,
        "max_count": max(counts) if counts else 0,
        "tokens_read": tokens_read,
        "err_exact_mean": _mean(err_exact),
        "err_exact_p95": _p95(err_exact),
        "err_usage_mean": _mean(err_usage),
        "err_usage_p95": _p95(err_usage),
    }


def _strategy_key(strategy: Any) -> tuple:
    return (strategy.use, strategy.prompt, strategy.llm, strategy.model)


def _outcome(config: ContextConfig, count: int, first_call: bool, idle_for: float | None) -> tuple | None:
    limit = applies(config, count, first_call=first_call, idle_for=idle_for)
    return None if limit is None else (limit.reason, _strategy_key(limit.strategy))


def _checks(r: Replayer, config: ContextConfig) -> dict[str, list]:
    """Every point where a replay consulted the config, with what the config said.

    Another config that says the same at every one of these points makes the
    same replay, event for event (up to the config in the events), so its row
    is this one's.
    """
    limits = [(c["count"], c["first_call"], c["idle_for"]) for c in r.trace if c["checked"]]
    limits += [(x["tokens"], x["first_call"], x["idle_for"]) for x in r.limits if x["reason"] != "overflow"]
    reads = [(x["read"], x["refused"]) for x in r.llm.seen] + [(x["read"], x["refused"]) for x in r.llm.summaries]
    return {
        "limits": [(c, f, i, _outcome(config, c, f, i)) for c, f, i in limits],
        "reads": reads,
        "overflow": _strategy_key(config.summarize_strategy()) if any(x["refused"] for x in r.llm.seen) else None,
    }


def _same(checks: Mapping[str, list], config: ContextConfig) -> bool:
    window = config.window
    for read, refused in checks["reads"]:
        if (window is not None and read > window) != refused:
            return False
    if checks["overflow"] is not None and _strategy_key(config.summarize_strategy()) != checks["overflow"]:
        return False
    return all(_outcome(config, c, f, i) == out for c, f, i, out in checks["limits"])


def _rows(prep: _Prepared, configs: list[tuple[int, Any]], agent: str, fork: bool = True) -> list[tuple[int, dict[str, Any]]]:
    """The measures of one conversation under each ``(index, config)``.

    A config that says what an earlier one said at every point the earlier
    replay consulted it gets that replay's row (the baseline counts as one);
    any other is replayed, from the baseline's last turn before it differs.
    """
    runs: list[tuple[dict[str, list], dict[str, Any]]] = []
    out = []
    for index, config in configs:
        cfg = coerce(config, agent)
        first = _first_firing(prep, cfg)
        if first is None:
            out.append((index, dict(prep.base_row)))
            continue
        found = next((m for checks, m in runs if _same(checks, cfg)), None) if fork else None
        if found is None:
            r = _fork(prep, cfg, first, agent) if fork else Replayer(prep.plan, cfg, counts=prep.counts, agent=agent).run()
            found = _measure(r)
            runs.append((_checks(r, cfg), found))
        out.append((index, dict(found)))
    return out


def _run_remote(prep: _Prepared, configs: list[tuple[int, Any]], agent: str) -> list[tuple[int, dict[str, Any]]]:
    return _rows(prep, configs, agent)


# ----------------------------------------------------------------------
# the sweep
# ----------------------------------------------------------------------
def _as_list(x: Any) -> list[Any]:
    if isinstance(x, (str, bytes, Mapping, ContextConfig)) or not isinstance(x, Iterable):
        return [x]
    return list(x)


def _strategies(cfg: ContextConfig) -> str:
    return ",".join(s.use for s in cfg.strategies)


def tune(
    conversations: Any,
    configs: Any,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    agent: str = "bot",
    progress: bool | None = None,
    scheduler: str | None = None,
    client: Any = None,
    chunk: int = 8,
):
    """Replay conversations under context configs: one row per (conversation, config).

    ``configs`` is one config or a list (TOML text, a path to a .toml file,
    a parsed document, a ``ContextConfig``); with ``grid`` it is the base
    config that ``convlab.config_grid`` spreads over the grid's keys, each of
    which becomes a column.

    Columns: ``conversation``, ``config`` (index into the configs), the grid
    keys, then ``COLUMNS``: ``window``, ``strategies``; ``calls`` (model
    calls, summary calls not included), ``summary_calls``; ``limits_full`` /
    ``limits_idle`` / ``limits_overflow`` (context.limit decisions by
    reason); ``summaries`` and ``resets`` (strategies that replaced the
    history); ``overflows`` (calls the provider refused as too long);
    ``failed_turns``; ``stale`` (logged replies that no longer apply);
    ``first_limit_call`` (1-based index of the first held call, or None);
    ``max_count`` (the largest count the engine made); ``tokens_read`` (input
    tokens of every model call, summaries included: the cost proxy, on one
    measure whether or not a strategy fired); and the count's error in
    tokens (count minus reference, per model call, summary calls not
    included): ``err_exact_*`` against the exact o200k_base count of the
    transcript the model read (every call; it holds no hidden prompt, so on
    a log with one the error is mostly that prompt), ``err_usage_*`` against
    the log's own usage (only calls whose logged usage applies; NaN where
    none do), as the signed mean and the 95th percentile of the absolute
    error.

    ``tokens_read`` per model call is the log's usage where the logged reply
    still applies. Where it does not (a strategy rewrote the history, or the
    log has no usage) it is the exact o200k_base count of what the call read
    plus the hidden overhead the log shows: the logged input minus the exact
    count of the transcript, taken at the most recent call whose logged
    usage applied (0 when the log has no usage). Without that overhead a
    config that fires would skip the system prompt and tool definitions the
    provider reads at every call, and look far cheaper than it is. The
    overhead taken at the last logged call before a rewrite also holds the
    provider tokenizer's surplus on the longer history, so after a rewrite
    ``tokens_read`` leans high: savings are, if anything, understated.
    Summary calls count exactly, with no overhead (see ``ReplayLLM``).

    ``progress``: a tqdm bar (None: only for 20 or more replays).
    ``scheduler="dask"`` runs the sweep on a dask.distributed cluster:
    ``client`` is a ``distributed.Client`` or a scheduler address (default:
    the current client); the frame equals the local one, row for row.

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 400, "time": 0.0}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello", "time": 1.0}, "u1")
    >>> _ = t.add({"id": "u2", "role": "user", "content": "again", "time": 7200.0}, "a1")
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "hello again", "time": 7201.0}, "u2")
    >>> t.head = "a2"
    >>> base = '''
    ... [agent.bot.context]
    ... [[agent.bot.context.strategy]]
    ... use = "reset"
    ... idle_secs = 3600
    ... '''
    >>> df = tune([Conversation(t, id="c")], base, grid={"strategy[0].idle_secs": [600, 86400]}, progress=False)
    >>> df[["strategy[0].idle_secs", "calls", "limits_idle", "resets", "tokens_read"]].values.tolist()
    [[600, 2, 1, 1, 402], [86400, 2, 0, 0, 804]]
    """
    import pandas as pd

    convs = _as_list(conversations)
    for c in convs:
        if not isinstance(c, Conversation):
            raise TypeError(f"tune takes Conversations (what convlab.read(path) returns), got a {type(c).__name__}")
    if grid is not None:
        configs_list: list[Any] = config_grid(configs, grid, agent=agent)
        labels = list(itertools.product(*(list(v) for v in grid.values())))
        grid_keys = list(grid)
    else:
        configs_list = _as_list(configs)
        labels, grid_keys = [()] * len(configs_list), []
    parsed = [coerce(c, agent) for c in configs_list]  # check every config before any work
    if not configs_list:
        raise ValueError("tune needs at least one config")

    counts = ExactCounts()
    plans = [plan(c) for c in convs]
    counts.prime(t for p in plans for t in _texts(p))
    total = len(convs) * len(parsed)
    show = (total >= 20) if progress is None else bool(progress)
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="tune", unit="replay", disable=not show)
    try:
        preps = []
        for p in plans:
            preps.append(_prepare(p, counts, agent))
        jobs = [(i, [(j, parsed[j]) for j in range(k, min(k + chunk, len(parsed)))]) for i in range(len(preps)) for k in range(0, len(parsed), chunk)]
        results: dict[tuple[int, int], dict[str, Any]] = {}
        if scheduler in (None, "local"):
            for i, batch in jobs:
                for j, measures in _rows(preps[i], batch, agent):
                    results[(i, j)] = measures
                    bar.update(1)
        elif scheduler == "dask":
            _run_dask(preps, jobs, agent, client, results, bar)
        else:
            raise ValueError(f"scheduler must be None, 'local' or 'dask', got {scheduler!r}")
    finally:
        bar.close()

    rows = []
    for i, c in enumerate(convs):
        for j, cfg in enumerate(parsed):
            row = {"conversation": str(getattr(c, "id", i)), "config": j}
            row.update(dict(zip(grid_keys, labels[j])))
            row["window"] = cfg.window  # a grid over window: the same value
            row["strategies"] = _strategies(cfg)
            row.update(results[(i, j)])
            rows.append(row)
    df = pd.DataFrame(rows, columns=["conversation", "config", *[k for k in grid_keys if k not in COLUMNS], *COLUMNS])
    df["first_limit_call"] = df["first_limit_call"].astype("Int64")
    df["window"] = df["window"].astype("Int64")
    return df


def _run_dask(preps, jobs, agent, client, results, bar) -> None:
    try:
        import distributed
    except ImportError as err:  # pragma: no cover - an install problem
        raise ImportError("scheduler='dask' needs dask.distributed: pip install 'convlab[dask]'") from err
    own = False
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError as err:
            raise ValueError("scheduler='dask' needs a client: pass client=<distributed.Client or address>, or start one first") from err
    elif isinstance(client, str):
        client = distributed.Client(client)
        own = True
    try:
        scattered = client.scatter(preps, broadcast=False)
        futures = {client.submit(_run_remote, scattered[i], batch, agent, pure=False): (i, batch) for i, batch in jobs}
        for future in distributed.as_completed(futures):
            i, _ = futures[future]
            for j, measures in future.result():
                results[(i, j)] = measures
                bar.update(1)
    finally:
        if own:
            client.close()

