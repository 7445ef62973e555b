"""Strategy sweeps: replay real conversations under many context configs -> pandas.

Why it is fast: what does not depend on the config is done once per sweep
or per conversation, and a replay is shared by every config that would make
it. The plan of each conversation is made once and every message text is
tokenized once for the whole sweep (one tokenizer batch; with worker
processes, one per conversation, in the worker). A conversation's replays
under many configs share what they can: ``forks``.

Conversations go to worker processes, one per core by default, or to a
dask.distributed cluster. With fewer conversations than cores (one long
session on a laptop) each conversation's baseline is replayed here, once,
and its configs go to forked workers cut along the fork tree: in families
that first leave the baseline in the same turn saying the same thing (a
family shares what follows; two families never share anything), the
earliest to leave first. Rows are computed by one function (``rows``)
wherever they run, so every way gives the same frame, row for row.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from ..context import ContextConfig, TomlSource, coerce, toml_document
from ..conversation import Conversation
from ..replaying.model import Summarize
from ..replaying.options import Options, check_worker, options_of, takes_options
from ..replaying.plan import ExactCounts, Plan, plan
from ..replaying.summaries import Summaries, SummaryCost, answerer
from . import workers
from .columns import COLUMNS, Row, Rows, frame
from .forks import Baseline, Setup, rows
from .grid import LIFETIME, config_grid, example_config, grid_table, with_lifetime
from .presets import AUTO_ROW, Auto, Preset, by_agent
from .probes import JUDGE_KEY, Judge, judge_for
from .results import ResultCache, Stopped, conversation_key, for_sweep, rows_of, setup_key

if TYPE_CHECKING:
    import distributed
    import pandas as pd

    from ..engine import Worker
    from .files import Streamed

#: One config of a sweep: TOML text, a path, a parsed document, a ``ContextConfig``, a preset, or ``presets.AUTO``.
Config: TypeAlias = TomlSource | ContextConfig | Preset | Auto

__all__ = ["tune", "tune_cost", "config_grid", "COLUMNS", "rows", "Setup"]

# ----------------------------------------------------------------------
# the sweep
# ----------------------------------------------------------------------
def _as_list(x: object) -> list[Any]:
    if isinstance(x, (str, bytes, Mapping, ContextConfig, Preset, Auto)) or not isinstance(x, Iterable):  # a preset is a tuple
        return [x]
    return list(x)


@takes_options
def tune(
    conversations: Conversation | Iterable[Conversation] | str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    configs: Config | Iterable[Config] | None = None,
    options: Options | None = None,
    *,
    grid: Mapping[str, Sequence[object]] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    scheduler: str | None = None,
    client: distributed.Client | str | None = None,
    chunk: int | None = None,
    **knobs: Any,
) -> pd.DataFrame:
    """Replay conversations under context configs: one row per (conversation, config).

    ``conversations`` are ``Conversation``s (what ``convlab.read`` returns), or
    a path (a log file or a folder of them) or a list of paths: then each file
    is read where it is swept, one at a time in each worker process, and only
    its rows come back, so a folder of a year of sessions sweeps in the memory
    of its largest file per worker, not of the folder (``convlab.tuning.files``).
    The frame is the one ``tune(convlab.read(path), ...)`` gives, row for row,
    and a file the read would pass over is passed over with the same warning.
    A sweep of paths takes no summarizer, judge, ``presets.AUTO``, dask or
    ``chunk`` (they need the conversations here: read them first); its
    progress bar counts the files' bytes, and the frame's ``attrs["files"]`` and
    ``attrs["not_logs"]`` say how many files it looked at and which held no
    chat log (passed over quietly, as a read of the folder passes them).

    ``configs`` is one config or a list (TOML text, a path to a .toml file,
    a parsed document, a ``ContextConfig``); with ``grid`` it is the base
    config that ``convlab.config_grid`` spreads over the grid's keys, each of
    which becomes a column. The knobs every replay of the sweep shares
    (``options``, an ``Options``, or its fields by name: ``model``,
    ``summarizer``, ``worker``, ``judge``, ...) are ``convlab.replay``'s,
    checked before any work (``convlab.replaying.options``). One TOML config given no ``grid`` is spread over
    its own ``[convlab.tune.grid]`` table, when it has one; no config at all
    is the shipped example (``convlab.tuning.grid.example_config()``: a reset after
    ``idle_secs``, else a summary past ``window - 16000``) over its grid, as
    ``convlab tune`` sweeps without ``--config``. ``worker`` answers every config's
    ``context.limit`` (None: the engine's proposal; a compaction of
    ``convlab.compact``: its own, see ``convlab.replay``); a grid's
    ``"worker"`` axis sweeps workers (None among them for the engine's) beside
    the other keys. A ``convlab.presets`` preset among ``configs`` brings its
    own worker, and the frame a ``preset`` column naming each;
    ``convlab.tuning.presets.AUTO`` is the preset of the agent that wrote each log, at
    the window its log records (``presets.for_log``): the conversations are
    swept in groups, one per agent, their rows one group after the other,
    each row's ``preset`` the one its log ran (``"auto: codex"``) and its
    ``window`` that log's; over the corpus (``rank``) a config whose rows ran
    different presets or windows is labelled ``"auto: each log its agent's
    preset"`` with no one window (``ranking.totals``). A log no preset is of
    (a Copilot CLI session) is a ``ConfigError`` naming it: leave it out, as
    ``convlab tune --preset auto`` does, saying so.

    Columns: ``conversation`` (its id), ``source`` (the file it was read
    from: ``Conversation.source``), ``config`` (index into the configs), the
    grid keys, then ``COLUMNS``: ``window``, ``strategies``, ``worker`` (its
    repr, None for the engine's proposal); ``threshold``
    (``ContextConfig.threshold``: the smallest count above which one of its
    strategies applies by size, an ``over_tokens`` or ``window - 16000`` for
    a strategy without ``idle_secs``; NA when none does); ``calls`` (model calls, summary calls
    not included), ``summary_calls``; ``limits_full`` /
    ``limits_idle`` / ``limits_overflow`` (context.limit decisions by
    reason); ``summaries`` and ``resets`` (strategies that replaced the
    history); ``summary_tokens`` and ``summary_tokens_max`` (how long the
    summaries recorded are, all together and the longest, in exact
    o200k_base tokens: the summarizer's own with ``summarizer``, else the
    stand-in's); ``overflows`` (calls the provider refused as too long);
    ``failed_turns``; ``stale`` (logged replies that no longer apply);
    ``first_limit_call`` (1-based index of the first held call, or None);
    ``max_count`` (the largest count the engine made); ``tokens_read`` (input
    tokens of every model call, summaries included: the cost proxy, on one
    measure whether or not a strategy fired); ``baseline_tokens_read`` (the
    same conversation replayed with no strategy, the log as it was: what
    ``convlab.rank`` measures savings against); ``saved`` (``1 - tokens_read
    / baseline_tokens_read``: the share of the baseline's tokens this config
    did not read; negative when its summary calls read more than it saved;
    NaN when the baseline read nothing); ``overhead`` (the
    conversation's hidden prompt: the log's calls fitted as ``hidden +
    ratio * exact``, per log root and model, its ``hidden``
    (``convlab.replaying.fit``), 0 for a log with no usage; the ``overhead``
    given, when given) and ``overhead_calls`` (how many calls that estimate
    rests on; NA when given; 0 when the log has no usage, or no call whose
    history is whole: then the estimate comes from the calls whose history
    the file lost part of, a parent not in the file, and leans high);
    ``usage_growth`` (how many tokens the logged input grows by per
    transcript token: about 1 to 1.5, the provider's tokenizer against
    o200k_base; above 2 the log reads content its file does not hold, such
    as a Codex rollout's encrypted reasoning, so what a call on a history a
    strategy rewrote reads is a guess and ``convlab.rank`` says so; NaN on
    fewer than 3 calls with usage); the baseline against the log's own usage, on its
    calls whose logged usage applies (``measures.against_usage``; NaN each without
    a model or such a call): ``usage_usd`` (that usage priced at the sweep's prices:
    its input, cache reads, cache writes and output as the log records them),
    ``usage_usd_replayed`` (the baseline's dollars on the same calls),
    ``usage_cached`` / ``usage_cached_replayed`` and ``usage_cache_write`` /
    ``usage_cache_write_replayed`` (the log's cache reads and writes, and the
    baseline's predicted): the calls' input and output are the log's, so the
    prompt cache is all they differ by, and ``convlab.rank`` says where the
    dollars are more than 10% apart (``ranking.USAGE_OFF``); and the count's error in
    tokens (count minus reference, per model call, summary calls not
    included): ``err_exact_*`` against the exact o200k_base count of the
    transcript the model read (every call; it holds no hidden prompt, so on
    a log with one the error is mostly that prompt), ``err_usage_*`` against
    the log's own usage (only calls whose logged usage applies; NaN where
    none do), as the signed mean and the 95th percentile of the absolute
    error. What the calls cost (``convlab.replay`` and
    ``convlab.replaying.cost`` say how): ``cached`` and ``cache_write`` (the
    prompt cache predicted, summed over the model calls), ``logged_cached``
    (the log's cache reads where its usage applies; NaN where none),
    ``err_cached_mean`` / ``err_cached_p95`` (predicted less logged, per
    call, as above), ``cached_share`` (cached over every input token the
    model calls read), ``compactions_warm`` (the config's summaries and
    resets that fell on a warm cache: the model call right after found the
    cache still holding what the call before it read, within the cache's
    lifetime, so the compaction threw a warm prefix away; one after an idle
    gap past the lifetime rewrote a cold one, at no cost to the cache); with
    ``model``: ``usd`` (every call and summary call,
    genai-prices), ``baseline_usd`` (the same conversation with no
    strategy), ``usd_saved`` (``baseline_usd - usd``, in dollars:
    negative when a config costs more than the log did, as one that
    summarizes often can with a cache) and ``warm_rewrite_usd`` (what the
    calls right after the warm compactions paid beyond reading their input
    from the cache: the price of rewriting a warm prefix); NaN without a model. ``model``,
    ``prompt_cache`` and ``prompt_cache_ttl`` are the same for every
    config; ``convlab.rank(df, by="usd")`` ranks by dollars. ``facts_kept``:
    the mean, over the compactions the config made and a model then read,
    of the share of the facts each dropped that the new context still
    states (``convlab.retention``; which count: ``retention.scored``): the
    log's own compactions are left out (the log made them under every
    config, and in the baseline), and so are stand-in summaries (the
    replay wrote them: they say nothing of a model) and a compaction whose
    next model call was refused as too long (no model read what it kept).
    NaN, unknown, never 0, when none counts: nothing to measure (the
    config compacted nothing of its own, or only with stand-in summaries,
    or every turn failed and no call was answered); ``rank``, ``search``
    and the plots read NaN as unknown (left out by a floor or a
    constraint, an empty cell or point). ``retained``: with
    ``judge`` (a provider, e.g. ``convlab.LocalChat()``, or a
    ``convlab.tuning.probes.Judge``), the mean over the same compactions
    (the only ones probed) of ``convlab.retention``'s ``retained``
    (``probes`` questions about what each dropped, asked with the full and
    the compacted history); NaN when none counts; only with a judge, after ``facts_kept``. The judge's calls are made
    from this process only, as summary calls are (worker processes send
    each request here), and cached on disk (``judge_cache``; by default
    ``$XDG_CACHE_HOME/convlab/judge``):
    ``attrs["judge_cost"]`` (a ``JudgeCost``) says what they cost. A replay
    that several configs share is probed once.

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

    The cost model's knobs, the same for every config of the sweep (see
    ``convlab.replay``): ``summary_size``, how long the stand-in summary is
    (None, the default: one short line per message summarized; a float
    ``0 < r <= 1``: that share of what it summarizes; an int: that many
    tokens), which every later count starts from; ``overhead``, the hidden
    prompt (None, the default: measured from the log; an int: that many
    tokens at every call the log's usage does not answer).

    To read the trade-off, ``convlab.rank(df)`` ranks the configs over every
    conversation (tokens saved against the baseline, against summaries,
    resets and stale replies) and warns about configs whose figures mislead;
    ``convlab.tuning.plots.sweep_pareto`` draws it.

    Summaries: a log holds no reply for a summary it never asked for, so
    without ``summarizer`` a summary call gets a stand-in (a few words of each
    message it summarizes, what ``ReplayLLM`` writes). With ``summarizer`` (a
    provider: anything with ``complete(request)``, e.g.
    ``convlab.EchoLLM()`` or ``convlab.provider("openai:gpt-4.1-mini")``)
    summary calls go to that model while every reply still comes from the
    log. Each distinct summary (the model, the prompt and the exact input) is
    made once and kept on disk (``summary_cache``: None for
    ``$XDG_CACHE_HOME/convlab/summaries``, default
    ``~/.cache/convlab/summaries``; a folder; or False to keep them in memory
    for this sweep only), so no sweep pays twice for one and a rerun pays
    nothing. The calls are made from this process only, several at a time
    (worker processes ask it for each summary; with a summarizer there are
    four per job, since they mostly wait), so the provider and its client are
    never pickled; a dask cluster cannot take a summarizer. A summary call
    takes no time on the replay's clock, which follows the log. The frame's
    ``attrs["summary_cost"]`` (a ``convlab.replaying.summaries.SummaryCost``) says what
    the summaries cost: ``calls`` made and the ``input_tokens`` they read (the
    provider's usage), ``cached`` summaries the disk answered. What later
    calls read depends on what the summarizer wrote, so a rerun gives the
    same frame through the cache, not a new sweep with ``summary_cache=False``.

    What the summaries would cost before anything is spent: ``tune_cost``.

    Where it runs: ``jobs`` worker processes on this machine (None: one per
    core it may use; 1: all in this process, no workers), each taking whole
    conversations (a conversation shares its replays among its configs; with
    fewer conversations than jobs, its baseline is replayed in this process
    once and its configs go to the workers in families that leave the
    baseline together, so that every job has work). ``chunk`` sets how many
    configs a unit of work holds instead. ``scheduler="dask"`` runs the units on a
    dask.distributed cluster: ``client`` is a ``distributed.Client`` or a
    scheduler address (default: the current client). Every way gives the
    same frame, row for row. ``progress``: a tqdm bar (None: only for 20 or
    more replays).

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
    chosen = options_of(options, knobs, "tune")
    if _are_paths(conversations):  # log files or folders: each file read where it is swept (convlab.tuning.files)
        return _tune_files(cast("str | os.PathLike[str] | Sequence[str | os.PathLike[str]]", conversations), configs, chosen,
                           grid=grid, jobs=jobs, progress=progress, scheduler=scheduler, chunk=chunk)
    conversations = cast("Conversation | Iterable[Conversation]", conversations)
    if any(isinstance(c, Auto) for c in _as_list(configs)):  # convlab.tuning.presets.AUTO: each log's own agent's preset
        return _by_agent(_as_list(conversations), _as_list(configs), lambda convs, resolved: tune(
            convs, resolved, chosen, grid=grid, jobs=jobs, progress=progress, scheduler=scheduler, client=client, chunk=chunk))
    sweep = _check(conversations, configs, chosen, grid=grid, jobs=jobs, progress=progress, scheduler=scheduler,
                   client=client, chunk=chunk, estimate=False)
    summaries = sweep.summaries
    # what this process builds for a sweep in worker processes (its plans, the rows, the frame) lives on and holds no
    # cycle: the collector paused, or its full collections walk the conversations again and again (a second of a
    # sweep of 1,149 real ones); the workers turn it on again (``workers``). With a summarizer or a judge, whose
    # calls leave what they leave, on a dask cluster (its client's machinery runs here), or with the replays in
    # this process (each unit paused, as in a worker), only for the frame
    alone = summaries is None and sweep.judge is None and sweep.scheduler != "dask" and sweep.jobs > 1
    with workers.collector_paused(collect=False) if alone else contextlib.nullcontext():
        results = _schedule(sweep, None if summaries is None else _completing(summaries))
    with workers.collector_paused(collect=False):
        table = Rows()
        for i in range(len(sweep.conversations)):
            for j in range(len(sweep.configs)):
                table.add(results.pop((i, j)))
        df = frame(sweep.configs, sweep.labels, sweep.grid_keys, sweep.judge is not None,
                   [(c.id, c.source) for c in sweep.conversations], table)
    if sweep.results is not None:  # how many rows an earlier run kept, and where (convlab.tuning.results)
        df.attrs["kept"], df.attrs["result_cache"] = sweep.kept, str(sweep.results.folder)
    if sweep.judge is not None:
        df.attrs["judge_cost"] = sweep.judge.cost()
    if summaries is not None:
        df.attrs["summary_cost"] = summaries.cost()
        summaries.warn_failed()
    return df


def _by_agent(conversations: list[Conversation], configs: list[Any],
              sweep: Callable[[list[Conversation], list[Any]], pd.DataFrame]) -> pd.DataFrame:
    """``tune`` with ``presets.AUTO`` among the configs: one sweep per group of conversations that share an agent's
    preset at one window (``presets.by_agent``), ``AUTO`` that preset (its ``preset`` column says so:
    ``"auto: codex"``, ``presets.AUTO_ROW``); the frames one after the other, their summary and judge costs added up."""
    import pandas as pd

    auto = [j for j, c in enumerate(configs) if isinstance(c, Auto)]
    frames = []
    for convs, resolved in by_agent(conversations, configs):
        frame = sweep(convs, resolved)
        for j in auto:
            preset = resolved[j]
            assert isinstance(preset, Preset)  # by_agent put its agent's preset in AUTO's place
            frame.loc[frame["config"] == j, "preset"] = AUTO_ROW.format(preset.name)
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True)
    for key in ("summary_cost", "judge_cost"):
        costs = [f.attrs[key] for f in frames if key in f.attrs]
        if costs:
            df.attrs[key] = functools.reduce(operator.add, costs)
    return df


@takes_options
def tune_cost(
    conversations: Conversation | Iterable[Conversation],
    configs: Config | Iterable[Config] | None = None,
    options: Options | None = None,
    *,
    grid: Mapping[str, Sequence[object]] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    chunk: int | None = None,
    **knobs: Any,
) -> SummaryCost:
    """What the summaries of a ``tune`` with ``summarizer`` would cost, calling nothing and writing nothing.

    The arguments are ``tune``'s (the sweep runs here or in worker
    processes, never on dask); ``summarizer`` is the one it needs. It returns a ``SummaryCost``: the summary
    ``calls`` the sweep would make and their ``input_tokens`` (exact
    o200k_base counts of what each would send), and the ``cached`` ones
    (with what they read). A summary the cache does not hold yet is stood in
    for by the stand-in, so a later summary of the same replay, which reads
    it, is counted on the stand-in's text: ``estimated`` says how many calls
    rest on that, and ``exact`` is True when none do (then the figures are
    what the sweep spends, as far as the provider counts as o200k_base does).

    >>> from convlab.tree import Tree
    >>> from convlab.conversation import Conversation
    >>> from convlab.providers import EchoLLM
    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi " * 400}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1")
    >>> _ = t.add({"id": "u2", "role": "user", "content": "again"}, "a1")
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "hello again"}, "u2")
    >>> t.head = "a2"
    >>> base = '[agent.bot.context]\\n[[agent.bot.context.strategy]]\\nuse = "summarize"\\nover_tokens = 300'
    >>> tune_cost([Conversation(t, id="c")], base, summarizer=EchoLLM(), summary_cache=False, progress=False)
    SummaryCost(calls=1, input_tokens=429, cached=0, cached_input_tokens=0, estimated=0, failed=0, refused=0, unkept=0)
    """
    chosen = options_of(options, knobs, "tune_cost")
    if any(isinstance(c, Auto) for c in _as_list(configs)):  # presets.AUTO: each group of logs with its agent's preset
        costs = [tune_cost(convs, resolved, chosen, grid=grid, jobs=jobs, progress=progress, chunk=chunk)
                 for convs, resolved in by_agent(_as_list(conversations), _as_list(configs))]
        return functools.reduce(operator.add, costs)
    sweep = _check(conversations, configs, chosen, grid=grid, jobs=jobs, progress=progress, scheduler=None, client=None,
                   chunk=chunk, estimate=True)
    assert sweep.summaries is not None  # _check says so when there is no summarizer
    _schedule(sweep, sweep.summaries.estimate)
    return sweep.summaries.cost()


@dataclass
class _Sweep:
    """A sweep, checked before any work: what it replays, under which configs, and where."""

    conversations: list[Conversation]
    configs: list[Setup]
    labels: list[tuple[Any, ...]]  # per config, its grid values
    grid_keys: list[str]
    agent: str
    knobs: dict[str, Any]  # what every Replayer takes (Options.replaying)
    scheduler: str | None
    jobs: int
    chunk: int | None
    client: distributed.Client | str | None
    summaries: Summaries | None
    progress: bool | None
    judge: Judge | None = None
    probes: int = 5
    results: ResultCache | None = None
    kept: int = 0  # rows an earlier run kept (``results``): not replayed again


def _check(conversations: Conversation | Iterable[Conversation], configs: Config | Iterable[Config] | None,
           options: Options, *, grid: Mapping[str, Sequence[object]] | None, jobs: int | None, progress: bool | None,
           scheduler: str | None, client: distributed.Client | str | None, chunk: int | None, estimate: bool) -> _Sweep:
    """Every argument of a sweep checked (a clear error naming what is wrong) before any work; the knobs
    were (``options``)."""
    convs = _as_list(conversations)
    for c in convs:
        if not isinstance(c, Conversation):
            raise TypeError(f"tune takes Conversations (what convlab.read(path) returns), got a {type(c).__name__}")
    setups, labels, grid_keys = _setups(configs, grid, options.worker, options.agent, _lifetime(options))
    if scheduler not in (None, "local", "dask"):
        raise ValueError(f"scheduler must be None, 'local' or 'dask', got {scheduler!r}")
    if scheduler == "dask" and jobs is not None:
        raise ValueError("jobs= is for the local scheduler: a dask cluster has its own workers")
    n_jobs = workers.jobs_for(jobs)
    if chunk is not None and (not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1):
        raise ValueError(f"chunk must be a positive whole number of configs or None, got {chunk!r}")
    summaries = options.summaries(dry_run=estimate)
    if summaries is not None and scheduler == "dask":
        raise ValueError("a summarizer is called from this process only (it is never sent to a worker): "
                         "sweep with the local scheduler (jobs=...), not dask")
    judging = None if options.judge is None else judge_for(options.judge, options.judge_cache)
    if judging is not None and scheduler == "dask":
        raise ValueError("a judge is called from this process only (it is never sent to a worker): "
                         "sweep with the local scheduler (jobs=...), not dask")
    if (summaries is not None or judging is not None) and not estimate and n_jobs > 1:
        n_jobs *= workers.WAITING  # workers mostly wait for summaries: more of them keep the cores busy
    if scheduler == "dask" or n_jobs > 1:
        _sendable({x.worker for x in setups if x.worker is not None})
    return _Sweep(convs, setups, labels, grid_keys, options.agent, options.replaying(), scheduler,
                  n_jobs, chunk, client, summaries, progress, judging, options.probes,
                  None if estimate or summaries is not None or judging is not None else for_sweep(options.result_cache))


def _lifetime(options: Options) -> float:
    """The prompt cache's lifetime an ``idle_secs`` of ``"ttl"`` reads: ``prompt_cache_ttl``, else 5 minutes."""
    from ..replaying.prompt_cache import TTLS

    ttl = options.prompt_cache_ttl
    if ttl is None:
        return LIFETIME
    return TTLS[ttl] if isinstance(ttl, str) else float(ttl)


def _setups(configs: Config | Iterable[Config] | None, grid: Mapping[str, Sequence[object]] | None, worker: Worker | None,
            agent: str, ttl: float = LIFETIME) -> tuple[list[Setup], list[tuple[Any, ...]], list[str]]:
    """The sweep's setups (each config checked), each one's grid values, and the grid's keys. A grid's
    ``"worker"`` axis (workers, or None for the engine's proposal) sets the worker; ``worker`` the rest's.
    No config: the shipped example; one TOML config and no grid: its own ``[convlab.tune.grid]``, if any."""
    if configs is None:
        configs = example_config()
    if grid is None and isinstance(configs, (str, os.PathLike, Mapping)):
        grid = grid_table(toml_document(configs)) or None
    if grid is not None:
        grid = with_lifetime(grid, ttl)  # idle_secs = "ttl", "2*ttl", ...: seconds
    if grid is None:
        documents = _as_list(configs)
        if not documents:
            raise ValueError("tune needs at least one config")
        if any(isinstance(c, Auto) for c in documents):
            raise ValueError("presets.AUTO needs each log to pick its agent's preset: give it to tune or tune_cost")
        if not any(isinstance(c, Preset) for c in documents):
            return [Setup(coerce(c, agent), worker) for c in documents], [()] * len(documents), []
        # convlab.presets among the configs: each its own worker, and a preset column naming it
        setups = [Setup(c.config, c.worker) if isinstance(c, Preset) else Setup(coerce(c, agent), worker) for c in documents]
        return setups, [(c.name if isinstance(c, Preset) else None,) for c in documents], ["preset"]
    if not isinstance(configs, (str, os.PathLike, Mapping, ContextConfig)):
        raise TypeError(f"with grid=, configs is the one base config the grid spreads (TOML text, a path or a parsed "
                        f"document), got a {type(configs).__name__}")
    keys = list(grid)
    values = [list(grid[k]) for k in keys]
    axes = {k: v for k, v in zip(keys, values, strict=True) if k != "worker"}
    at = keys.index("worker") if "worker" in keys else None
    # one config per combination of the other axes (config_grid's product order), each parsed once
    parsed = [coerce(d, agent) for d in config_grid(configs, axes, agent=agent)]
    others = [range(len(v)) for k, v in zip(keys, values, strict=True) if k != "worker"]
    by_rest = dict(zip(itertools.product(*others), parsed, strict=True))
    setups, labels = [], []
    for picks in itertools.product(*(range(len(v)) for v in values)):
        rest = tuple(p for i, p in enumerate(picks) if i != at)
        setups.append(Setup(by_rest[rest], worker if at is None else check_worker(values[at][picks[at]])))
        labels.append(tuple(values[i][p] for i, p in enumerate(picks)))
    if not setups:
        raise ValueError("tune needs at least one config: an axis of the grid has no values")
    return setups, labels, keys


def _sendable(workers_used: set[Any]) -> None:
    """A worker goes to worker processes pickled: one that does not pickle is named before any work."""
    import pickle

    for w in workers_used:
        try:
            pickle.dumps(w)
        except Exception as err:
            raise ValueError(f"the worker {w!r} cannot be sent to worker processes ({type(err).__name__}: {err}): "
                             "give jobs=1 to run the sweep in this process, or a worker that pickles "
                             "(convlab.compact's do)") from err


def _schedule(sweep: _Sweep, ask: Summarize | None) -> dict[tuple[int, int], Row]:
    """Every (conversation, config)'s measures, computed where the sweep runs (``workers``);
    ``ask`` answers the summary calls in this process (None: the stand-in)."""
    from tqdm.auto import tqdm

    configs, agent, knobs = sweep.configs, sweep.agent, sweep.knobs
    counts = ExactCounts()
    plans = [plan(c) for c in sweep.conversations]
    kept, keys = _kept(sweep, plans)  # what an earlier run of the same sweep left: not replayed again
    sweep.kept = len(kept)
    dask = sweep.scheduler == "dask"
    tasks = [(i, [j for j in js if (i, j) not in kept])
             for i, js in workers.units(plans, len(configs), sweep.chunk, 1 if dask else sweep.jobs)]
    tasks = [(i, js) for i, js in tasks if js]
    in_processes = not dask and sweep.jobs > 1 and len(tasks) > 1
    # the largest conversations (all of them, with fewer than jobs): their baselines run here once and the forked
    # workers take their configs in families that leave the baseline together (see _along_forks), the others whole
    judge, probes = sweep.judge, sweep.probes
    forked = in_processes and workers.FORKS and ask is None and judge is None and sweep.chunk is None
    cut = _largest({i for i, _ in tasks}, plans, sweep.jobs) if forked else set()
    if not (in_processes or dask):  # else each worker tokenizes its own conversations, side by side
        todo = {i for i, _ in tasks}  # a conversation whose every row was kept is not counted again
        counts.prime(t for i, p in enumerate(plans) if i in todo for t in p.texts())
    elif cut:  # the baselines run here
        counts.prime(t for i in sorted(cut) for t in plans[i].texts())
    total = len(plans) * len(configs)
    show = (total >= 20) if sweep.progress is None else bool(sweep.progress)
    results: dict[tuple[int, int], Row] = dict(kept)
    bar = tqdm(total=total, initial=len(kept), desc="tune", unit="replay", disable=not show)
    cache = sweep.results

    done = _telling(results, cache, keys, bar.update)
    if not tasks:
        bar.close()
        return results
    try:
        if dask:
            workers.run_dask(rows, plans, counts, configs, agent, knobs, tasks, sweep.client, done)
        elif cut:
            wanted: dict[int, list[int]] = {}
            for i, js in tasks:
                if i in cut:
                    wanted.setdefault(i, []).extend(js)
            bases, families = _along_forks(plans, counts, configs, agent, knobs, sweep.jobs, done, wanted)
            tasks = families + [(i, js) for i, js in tasks if i not in cut]  # the families first: the longest work
            if len(tasks) > 1:
                workers.run_processes(rows, plans, counts, configs, agent, knobs, tasks, sweep.jobs, done, bases=bases)
            for i, js in tasks if len(tasks) == 1 else ():  # one unit: no worker to start
                done(i, rows(plans[i], counts, [(j, configs[j]) for j in js], agent, knobs=knobs, base=bases.get(i)))
        elif in_processes:
            relay = workers.Relay(ask is not None, None if judge is None else judge.window, probes)
            workers.run_processes(rows, plans, counts, configs, agent, knobs, tasks, sweep.jobs, done,
                                  _answering(ask, judge), relay=relay)
        else:
            for i, js in tasks:
                with workers.collector_paused(collect=False):  # a unit, as a worker runs one
                    measured = rows(plans[i], counts, [(j, configs[j]) for j in js], agent, summarize=ask, knobs=knobs,
                                    judge=judge, probes=probes)
                done(i, measured)
    except KeyboardInterrupt as err:
        made, where = len(results) - len(kept), "" if cache is None else f" in {cache.folder}"
        said = (f"tune stopped after {made:,} of the {total - len(kept):,} replays it had to make"
                + (f" ({len(kept):,} more were kept from an earlier run)" if kept else ""))
        if cache is not None and cache.kept:
            said += f"; {cache.kept:,} of them are kept{where}: run it again to go on from there"
        elif cache is not None:
            said += f": none of them could be kept{where} ({cache.unwritable or 'none finished'}), a new run starts over"
        else:
            said += ": nothing was kept (no result cache), a new run starts over"
        raise Stopped(said) from err
    finally:
        bar.close()
    return results


def _telling(results: dict[tuple[int, int], Row], cache: ResultCache | None, keys: tuple[list[str], list[str]] | None,
             advance: Callable[[int], object]) -> workers.Done:
    """Where a unit's rows go as they come (``workers.Done``): into ``results`` by (conversation, config), the
    result ``cache`` (under ``keys``: each conversation's, each config's) and the progress bar (``advance``)."""

    def done(i: int, measured: workers.Measured | workers.Packed) -> None:
        if isinstance(measured, tuple):  # a worker's rows, packed (workers.packed): kept so, for the frame's table
            names, values = measured
            for j, row in values:
                results[(i, j)] = (names, row)
            if cache is not None and keys is not None:
                cache.keep(keys[0][i], {keys[1][j]: dict(zip(names, row, strict=True)) for j, row in values})
            advance(len(values))
            return
        for j, measures in measured:
            results[(i, j)] = measures
        if cache is not None and keys is not None:
            cache.keep(keys[0][i], {keys[1][j]: measures for j, measures in measured})
        advance(len(measured))

    return done


def _kept(sweep: _Sweep, plans: list[Plan]) -> tuple[dict[tuple[int, int], dict[str, Any]], tuple[list[str], list[str]] | None]:
    """The rows an earlier run of this sweep kept (``convlab.tuning.results``), by (conversation, config), and the
    keys they are kept under: ``({}, None)`` without a result cache."""
    cache = sweep.results
    if cache is None:
        return {}, None
    answering: dict[str, Any] = {}
    for name, provider in (("summarizer", None if sweep.summaries is None else sweep.summaries.provider),
                           ("judge", None if sweep.judge is None else sweep.judge.provider)):
        if provider is not None:
            answering[name] = {"class": type(provider).__name__, "model": getattr(provider, "model", None), **answerer(provider)}
    if sweep.judge is not None:
        answering["probes"] = sweep.probes
    conv_keys = [conversation_key(str(c.id), p) for c, p in zip(sweep.conversations, plans, strict=True)]
    setup_keys = [setup_key(s, sweep.agent, sweep.knobs, answering) for s in sweep.configs]
    kept = {(i, j): row for i, key in enumerate(conv_keys) for j, row in rows_of(cache.load(key), setup_keys).items()}
    return kept, (conv_keys, setup_keys)


#: How many conversations a job a sweep in forked worker processes cuts along their fork trees (``_largest``).
CUT_PER_JOB = 2


def _largest(todo: set[int], plans: list[Plan], jobs: int) -> set[int]:
    """The conversations a sweep cuts along their fork trees (``_along_forks``): all of them when they are fewer
    than ``jobs``, else the ``CUT_PER_JOB * jobs`` largest. One long conversation's forks can be most of a sweep (a
    Codex session's 9 s of a 21 s sweep of 1,149 real conversations): whole, it would keep one worker busy long
    after the others are done; cut into families of configs, its forks spread over every worker."""
    if len(plans) < jobs:
        return set(todo)
    return set(sorted(todo, key=lambda i: (-len(plans[i].nodes), i))[:CUT_PER_JOB * jobs])


def _along_forks(plans: list[Plan], counts: ExactCounts, configs: list[Setup], agent: str, knobs: Mapping[str, Any],
                 jobs: int, done: workers.Done, wanted: Mapping[int, list[int]] | None = None,
                 ) -> tuple[dict[int, Baseline], list[tuple[int, list[int]]]]:
    """The units of the conversations a sweep cuts along their fork trees (``_largest``): each
    conversation's baseline is replayed here, once (worker processes forked after it start with
    it), and the configs that never leave it are its rows at once (``done``). The others go in
    families, one per (turn, what they say there) where they first leave the baseline: a family
    shares what follows, two families never do. The longest (the earliest to leave) go first, and
    the largest are halved while there are fewer units than jobs. ``wanted``: per conversation, the configs
    still to replay (the others were kept from an earlier run, or the conversation is not cut); None: all."""
    bases: dict[int, Baseline] = {}
    units: list[tuple[int, list[int], int]] = []  # (conversation, configs, turns left)
    for i, p in enumerate(plans):
        if wanted is not None and i not in wanted:  # every config of it kept from an earlier run
            continue
        with workers.collector_paused(collect=False):  # as in a worker; the baseline lives on, nothing to collect
            base = bases[i] = Baseline.run(p, counts, agent, knobs=knobs)
        families: list[tuple[tuple[int, Any], list[int]]] = []  # what a config says need not hash (a worker)
        same = []
        for j, cfg in enumerate(configs):
            if wanted is not None and j not in wanted[i]:
                continue
            leaves = base.leaves(cfg)
            if leaves is None:
                same.append((j, {**base.root.row, **base.carried}))
                continue
            family = next((js for key, js in families if key == leaves), None)
            if family is None:
                families.append((leaves, [j]))
            else:
                family.append(j)
        if same:
            done(i, same)
        units += [(i, js, len(p.turns) - turn) for (turn, _), js in families]
    while 0 < len(units) < jobs and max(len(u[1]) for u in units) > 1:
        i, js, left = max(units, key=lambda u: len(u[1]))
        units.remove((i, js, left))
        half = len(js) // 2
        units += [(i, js[:half], left), (i, js[half:], left)]
    units.sort(key=lambda u: -u[2])
    return bases, [(i, js) for i, js, _ in units]


# ----------------------------------------------------------------------
# a sweep of log files (convlab.tuning.files)
# ----------------------------------------------------------------------
def _are_paths(x: object) -> bool:
    """A path (a log file or a folder) or a non-empty list of them: what ``tune`` reads as it sweeps."""
    if isinstance(x, (str, os.PathLike)):
        return True
    return isinstance(x, (list, tuple)) and bool(x) and all(isinstance(p, (str, os.PathLike)) for p in x)


def _tune_files(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], configs: Config | Iterable[Config] | None,
                options: Options, *, grid: Mapping[str, Sequence[object]] | None, jobs: int | None, progress: bool | None,
                scheduler: str | None, chunk: int | None) -> pd.DataFrame:
    """``tune`` of log files and folders, each file read where it is swept (``convlab.tuning.files``)."""
    from ..importers import log_files
    from .files import Unit, sweep_paths

    if any(isinstance(c, Auto) for c in _as_list(configs)):
        raise ValueError("presets.AUTO picks each log's preset from its conversations: read them first "
                         "(convlab.read(path)) and give tune the list")
    if scheduler == "dask":
        raise ValueError("a sweep of log files runs in this machine's worker processes (jobs=): to sweep on a dask "
                         "cluster, read them first (convlab.read(path)) and give tune the list")
    if chunk is not None:
        raise ValueError("chunk= cuts a conversation's configs: a sweep of log files takes a file at a time; read them "
                         "first (convlab.read(path)) to give chunk=")
    sweep = _check([], configs, options, grid=grid, jobs=jobs, progress=progress, scheduler=None, client=None,
                   chunk=None, estimate=False)
    if sweep.summaries is not None or sweep.judge is not None:
        raise ValueError("a sweep with a summarizer or a judge asks its calls from this process: read the logs first "
                         "(convlab.read(path)) and give tune the list")
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files = [f for p in given for f in log_files(p)]
    cache = sweep.results
    setup_keys = [setup_key(s, sweep.agent, sweep.knobs, {}) for s in sweep.configs] if cache is not None else []
    show = (len(files) * len(sweep.configs) >= 20) if progress is None else bool(progress)
    got = sweep_paths(files, Unit(sweep.configs, sweep.agent, sweep.knobs, cache, setup_keys), sweep.jobs, show)
    _refuse_given(given, files, got)
    sweep.kept = got.kept
    with workers.collector_paused(collect=False):  # as tune's (the rows and the frame live on)
        df = frame(sweep.configs, sweep.labels, sweep.grid_keys, False, got.assemble(), got.table)
    df.attrs["files"], df.attrs["not_logs"] = len(files), sorted(got.not_logs)
    if cache is not None:
        df.attrs["kept"], df.attrs["result_cache"] = got.kept, str(cache.folder)
    return df


def _refuse_given(given: Sequence[str | os.PathLike[str]], files: Sequence[os.PathLike[str]], got: Streamed) -> None:
    """A file named itself (not found in a folder) that is no chat log, or cannot be read, is a ``ReadError``, as
    ``convlab.read`` of it is; a folder's such files are passed over (said, or quietly)."""
    from ..errors import ReadError
    from ..importers import FORMATS

    named = {os.fspath(Path(p)) for p in given if not os.path.isdir(p)}
    for i, f in enumerate(files):
        if os.fspath(f) not in named:
            continue
        if os.fspath(f) in got.not_logs:
            raise ReadError(f"{f}: not a chat log convlab can read (formats: {', '.join(FORMATS)})")
        if i in got.unread:
            raise ReadError(got.unread[i])


def _answering(ask: Summarize | None, judge: Judge | None) -> Summarize | None:
    """What answers a worker's requests here: a judge's (marked ``JUDGE_KEY``, by its ``Relayed``
    judge) from the ``Judge``, a summary's from ``ask``."""
    if judge is None:
        return ask

    def answer(request: Mapping[str, Any], tokens: int, guessed: bool) -> dict[str, Any] | None:
        if request.get(JUDGE_KEY):
            return judge.complete({k: v for k, v in request.items() if k != JUDGE_KEY})
        assert ask is not None, "a worker asks for summaries only when the sweep has a summarizer"
        return ask(request, tokens, guessed)
    return answer


def _completing(summaries: Summaries) -> Summarize:
    """What a replay asks for a summary in a real sweep (``ReplayLLM``'s ``summarize``): the summarizer, through the cache."""
    return lambda request, tokens, guessed: summaries.complete(request)
