"""``convlab tune``: replay logs under context configs, rank the configs, and the tables and pictures of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import textwrap
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ReadError
from ..tuning.grid import EXAMPLE
from .arguments import (
    Given,
    Named,
    add_reading_options,
    check_pricing,
    in_config,
    job_count,
    read_config,
    summary_size,
    tokens,
    width,
)
from .figures import DOLLARS, broke, conversation_names, dollars, percent, terminal_width, where
from .notes import Failed, Notes, Usage, plural, progress, read_logs

if TYPE_CHECKING:
    import pandas as pd

    from ..context import ContextConfig
    from ..providers import Provider
    from ..replaying.options import Options
    from ..replaying.summaries import SummaryCost
    from ..tuning.presets import Auto, Preset
    from .arguments import Parser

    Config = str | Preset | Auto  # one of tune's configs: TOML text, a preset, AUTO

#: The most configs ``convlab tune`` sweeps unless ``--max-configs`` says more.
MAX_CONFIGS = 1_000
#: A grid of this many configs or more is a long run: its size is said on stderr before the sweep starts.
SAY_CONFIGS = 100


def add(sub: argparse._SubParsersAction[Parser]) -> None:
    tune = sub.add_parser(
        "tune", help="replay logs under context configs: the configs ranked, then with --rows one row per "
                     "(conversation, config)",
        description="Replay chat logs under context configs and rank them (convlab.tune and convlab.rank). It prints "
                    "the configs ranked first, by the tokens they save (with --model, the dollars) against the summaries, "
                    "resets and stale replies they cost, and under the ranking the configs it left out and why; then, "
                    "only with --rows, the table of one row per (conversation, config) (--out writes every column). "
                    "Warnings (a config that fires at most calls, a threshold below the log's hidden prompt) go to stderr.")
    tune.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    tune.add_argument("--config", metavar="CFG.toml",
                      help=f"the (base) context config; its [convlab.tune.grid] table, if any, is the grid without --grid. "
                           f"Default: the example {EXAMPLE}, {_example_sweeps()}")
    tune.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    tune.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                      help="sweep a key of the context table: window=64000,128000 or strategy[0].idle_secs=600,3600 "
                           "(repeatable; replaces the config's [convlab.tune.grid]); idle_secs may be written against the "
                           "prompt cache's lifetime: ttl,ttl+100,2*ttl (--prompt-cache-ttl, else 5 minutes)")
    tune.add_argument("--result-cache", metavar="DIR",
                      help="where each (conversation, config)'s row is kept, so that running the same sweep again replays "
                           "only what is new, and a sweep stopped halfway goes on from there (default "
                           "$XDG_CACHE_HOME/convlab/tune; clear it with rm -rf)")
    tune.add_argument("--no-result-cache", action="store_true", help="keep no row: replay everything, every run")
    tune.add_argument("--summary-request", choices=("shared", "bare"), default="shared",
                      help="how a summary call is sent and priced: shared (default: as the engine sends it, the agent's "
                           "system prompt, tools and the session's path, read from the prompt cache while it is warm) or "
                           "bare (the prompt and the messages alone: nothing cached, the input at full price)")
    tune.add_argument("--summary-size", type=summary_size, metavar="RATIO|TOKENS",
                      help="how long the stand-in summary is (what every later count starts from): a share of what it "
                           "summarizes (0.1 or 10%%) or a number of tokens (2000); default: one short line per message")
    tune.add_argument("--overhead", type=tokens, metavar="TOKENS",
                      help="the hidden prompt (system prompt and tools no log line holds) read at every call the log's "
                           "usage does not answer; default: measured from the log")
    tune.add_argument("--out", metavar="results.csv|.parquet", help="write the table, every column")
    tune.add_argument("--plot", metavar="out.png",
                      help="write a plot: a heatmap over the first two grid keys (each cell: --value over every conversation, "
                           "as the ranking adds it up, and under it the rewrites, summaries + resets, that bought it), else the count per call of the longest "
                           "conversation; and the trade-off (tokens saved against summaries + resets, the Pareto configs "
                           "marked) beside it, in out-pareto.png")
    tune.add_argument("--value", default="tokens_read", help="the column the heatmap shows (default tokens_read)")
    tune.add_argument("--width", type=width, help="fit the tables to this many columns (default: the terminal's)")
    tune.add_argument("--summarizer", metavar="SPEC",
                      help="send summary calls to this model (replies still come from the logs): echo, local (a real small "
                           "model on this machine), openai:MODEL or anthropic:MODEL (convlab.provider); summaries are cached in $XDG_CACHE_HOME/convlab/summaries")
    tune.add_argument("--dry-run", action="store_true",
                      help="with --summarizer: say how many summary calls and input tokens the sweep needs, and how many "
                           "the cache holds; call nothing")
    tune.add_argument("--no-summary-cache", "--no-cache", dest="no_cache", action=Given,
                      help="with --summarizer: neither read nor write the summary cache (--no-cache is its earlier name)")
    tune.add_argument("--jobs", type=job_count, metavar="N", help="worker processes (default: one per core; 1: none)")
    tune.add_argument("--model", metavar="MODEL",
                      help="price every call in dollars with genai-prices (e.g. claude-sonnet-4-5 or anthropic:claude-sonnet-4-5): "
                           "usd columns, the prompt cache of its provider, the configs ranked by dollars")
    tune.add_argument("--prompt-cache-ttl", "--cache-ttl", action=Named, default=None, metavar="5m|1h|SECONDS",
                      help="the prompt cache's lifetime (default: the provider's own, Anthropic's 5m, OpenAI's as the log's "
                           "calls after idle gaps show it, else 5m; --cache-ttl is its earlier name)")
    tune.add_argument("--rows", action="store_true",
                      help="after the ranking, print the table of one row per (conversation, config) (--out writes "
                           "every column)")
    tune.add_argument("--failed", action="store_true",
                      help="rank the configs that make turns fail too, last (by default they are left out, and the "
                           "ranking says which and why)")
    tune.add_argument("--preset", metavar="NAMES",
                      help="the field's compactions beside the config (convlab.presets): the agents' (claude-code, codex, "
                           "gemini-cli, pi), the providers' (anthropic-compaction, anthropic-on-demand, anthropic-clear-tool-uses, "
                           "anthropic-clear-thinking, openai-compact, openai-compaction), the papers' (deep-agents, masking, "
                           "masking-summary, masking-hybrid), a comma-separated list, a group (agents, providers, papers) or all; "
                           "at the config's window, or --window (default each peer's); "
                           "auto: the preset of the agent that wrote each log, at the window its log records (a log whose agent no "
                           "preset models, e.g. Copilot CLI's, is left out, named on stderr)")
    tune.add_argument("--window", type=tokens, metavar="TOKENS",
                      help="with --preset: the model's context window every preset fires against (e.g. 128000)")
    tune.add_argument("--max-configs", type=job_count, default=MAX_CONFIGS, metavar="N",
                      help=f"refuse a grid of more configs than this before any work (default {MAX_CONFIGS:,}: every "
                           f"conversation is replayed under each config, and the ranking lists them all); a grid of "
                           f"{SAY_CONFIGS:,} configs or more is said on stderr before the sweep starts")
    add_reading_options(tune)
    tune.set_defaults(run=run)


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text.lower() in ("none", "off"):
        return None
    return text


def _grid(items: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise Usage(f"--grid {item!r}: write KEY=V1,V2 (e.g. window=64000,128000)")
        out[key.strip()] = [_number(v.strip()) for v in values.split(",") if v.strip()]
    return out


def _plot_types() -> set[str]:
    from matplotlib.backend_bases import FigureCanvasBase

    return {f".{t}" for t in FigureCanvasBase.get_supported_filetypes()}


def _check_output(flag: str, path: str, suffixes: set[str]) -> None:
    """An output path that can be written, checked before any work (a sweep can take minutes)."""
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise Usage(f"{flag} {path}: write one of {', '.join(sorted(suffixes))}")
    if p.is_dir():
        raise Usage(f"{flag} {path}: is a folder")
    folder = p.parent
    if not folder.is_dir():
        raise Usage(f"{flag} {path}: no folder {folder} to write it into")
    if not os.access(folder, os.W_OK):
        raise Usage(f"{flag} {path}: cannot write into {folder}")


def _options(args: argparse.Namespace, summarizer: Provider | None = None) -> Options:
    """The knobs of every replay the command makes (``convlab.replaying.options.Options``), from its flags."""
    from ..replaying.options import Options

    return Options(agent=args.agent, summary_size=args.summary_size, overhead=args.overhead,
                   summary_request=args.summary_request, summarizer=summarizer,
                   summary_cache=False if summarizer is not None and args.no_cache else None, model=args.model,
                   prompt_cache_ttl=args.prompt_cache_ttl,
                   result_cache=False if args.no_result_cache else args.result_cache)


def _summarizer(args: argparse.Namespace) -> Any:
    """The --summarizer's provider (None without one), and the flags that need one, checked before any work."""
    if args.summarizer is None:
        for flag, given in (("--dry-run", args.dry_run), (args.no_cache, args.no_cache)):
            if given:
                raise Usage(f"{flag} goes with --summarizer (the model summary calls go to), e.g. --summarizer echo")
        return None
    if args.dry_run and (args.out or args.plot):
        raise Usage("--dry-run calls nothing and makes no table: leave out --out and --plot")
    from ..providers import provider

    try:
        return provider(args.summarizer)
    except (ValueError, ImportError) as err:  # a bad spec, a missing key, a missing SDK
        raise Usage(f"--summarizer: {err}") from None


def _say_cost(cost: SummaryCost, dry_run: bool) -> str:
    """One line on a sweep's summaries: what it needs (a dry run) or what it spent."""
    if dry_run:
        line = (f"summaries: {plural(cost.calls, 'call')} to make ({cost.input_tokens:,} input tokens, o200k_base), "
                f"{cost.cached} in the cache ({cost.cached_input_tokens:,} input tokens)")
        if not cost.exact:
            line += (f"; {cost.estimated} of the calls read a summary not made yet and are counted with a stand-in "
                     "in its place: an estimate")
        return line
    refused = (f"; {cost.refused} of them refused as too long for the summarizer (the engine shortened each, at most "
               f"three times, then ran the held call as it was)") if cost.refused else ""
    unkept = (f"; {cost.unkept} of the calls made could not be kept in the cache (its folder cannot be written: used in "
              f"this run, made again by the next)") if cost.unkept else ""
    return (f"summaries: {plural(cost.calls, 'call')} made ({cost.input_tokens:,} input tokens), "
            f"{cost.cached} from the cache ({cost.cached_input_tokens:,} input tokens){refused}{unkept}")


def _say_failed(cost: SummaryCost) -> str:
    """What the summary calls of a sweep that failed, or that the summarizer refused as too long, mean for its rows.

    >>> from convlab.replaying.summaries import SummaryCost
    >>> _say_failed(SummaryCost(0, 0, 0, 0, failed=10, error="HTTP 400"))
    'summaries: of 10 summary calls, 10 failed (HTTP 400); 0 answered, made or from the cache. Where a summary failed the engine ran the held call as it was (docs/protocol.md, 5.3), so those rows hold no summary there'
    >>> _say_failed(SummaryCost(30, 0, 2, 0, refused=30, refusal="too_long: 8192 tokens"))
    'summaries: of 32 summary calls, 30 were refused as too long for the summarizer (too_long: 8192 tokens; the engine shortened each summary, at most three times); 2 answered, made or from the cache. Where a summary was refused the engine ran the held call as it was (docs/protocol.md, 5.3), so those rows hold no summary there'
    """
    said = ([f"{cost.failed} failed ({cost.error or 'no reason given'})"] if cost.failed else []) + \
        ([f"{cost.refused} were refused as too long for the summarizer ({cost.refusal.rstrip('.') or 'no reason given'}; the engine "
          f"shortened each summary, at most three times)"] if cost.refused else [])
    how = " or ".join(w for w, n in (("failed", cost.failed), ("was refused", cost.refused)) if n)
    return (f"summaries: of {plural(cost.calls + cost.cached + cost.failed, 'summary call')}, {' and '.join(said)}; "
            f"{cost.answered} answered, made or from the cache. Where a summary {how} the engine ran the held call as it "
            f"was (docs/protocol.md, 5.3), so those rows hold no summary there")


def _check_outputs(args: argparse.Namespace) -> None:
    if args.out:
        _check_output("--out", args.out, {".csv", ".parquet"})
        if args.out.lower().endswith(".parquet"):
            import importlib.util

            if importlib.util.find_spec("pyarrow") is None and importlib.util.find_spec("fastparquet") is None:
                raise Usage(f"--out {args.out}: writing parquet needs pyarrow (pip install pyarrow); or write a .csv")
    if args.plot:
        _check_output("--plot", args.plot, _plot_types())
        if Path(_pareto_path(args.plot)).is_dir():
            raise Usage(f"--plot {args.plot}: the trade-off goes beside it, in {_pareto_path(args.plot)}, which is a folder")


def _example_sweeps() -> str:
    """What the example sweeps, for --help (read from the file, so it cannot drift)."""
    import tomllib

    from ..tuning.grid import example_config, grid_table

    try:
        grid = grid_table(tomllib.loads(example_config().read_text(encoding="utf-8")))
    except (OSError, ValueError):  # pragma: no cover - a broken install
        return "(missing from this install)"
    return f"a reset after idle_secs, else a summary past window - 16000, over the grid {_say_grid(grid)}"


def _grid_size(grid: dict[str, list[Any]]) -> str:
    """How many values each key of a grid sweeps: ``window: 100 values x strategy[0].idle_secs: 50 values``."""
    return " x ".join(f"{k}: {plural(len(v), 'value')}" for k, v in grid.items())


def _say_grid(grid: dict[str, list[Any]]) -> str:
    """A grid as --grid takes it: ``window=64000,128000 x strategy[0].idle_secs=600,3600``."""
    return " x ".join(f"{k}={','.join(map(str, v))}" for k, v in grid.items())


def _check_sweep(args: argparse.Namespace, name: str, text: str, notes: Notes) -> tuple[dict[str, list[Any]], list[str]]:
    """Check the config and every config of the grid before reading anything: the grid and the sweep's columns."""
    import tomllib

    from ..context import load_config
    from ..errors import ConfigError
    from ..tuning.grid import grid_table
    from ..tuning.sweep import tune

    try:
        config = load_config(text, agent=args.agent)[args.agent]
    except ConfigError as err:
        raise in_config(name, err) from None
    doc = tomllib.loads(text)  # valid: load_config read it
    try:
        grid = _grid(args.grid) if args.grid else grid_table(doc)
    except ConfigError as err:
        raise in_config(name, err) from None
    where = "--grid" if args.grid else f"{name}: convlab.tune.grid"
    size = math.prod(len(v) for v in grid.values()) if grid else 1
    if size > args.max_configs:  # before the configs are made: a grid of millions is refused at once
        raise Usage(f"{where} makes {size:,} configs ({_grid_size(grid)}), more than --max-configs {args.max_configs:,}: "
                    f"every conversation is replayed under each config, and the ranking lists them all; sweep fewer "
                    f"values, or give --max-configs {size} to run them")
    try:
        columns = list(tune([], text, _options(args), grid=grid or None, progress=False).columns)  # no conversation: checks only
    except ConfigError as err:
        raise Usage(f"{where}: {err}") from None
    if grid and not args.grid:
        notes.say(f"{'no --config: the example ' if args.config is None else ''}{name}, over its grid {_say_grid(grid)}")
    if not grid and config.window is None and not config.strategies:
        notes.say(f"{name} sets no window and no strategy for agent {args.agent!r}: the logs replay as they were")
    return grid, columns


def _with_presets(args: argparse.Namespace, text: str, notes: Notes) -> list[Config]:
    """--preset: the config given (--config; none: the presets alone) and the presets named, at its window, or
    --window (``auto``: ``convlab.tuning.presets.AUTO``, each log's own agent's, which tune resolves); said on stderr."""
    from ..context import load_config
    from ..errors import ConfigError
    from ..tuning.presets import AUTO, Preset, presets as named_presets

    if args.grid:
        raise Usage("--preset compares whole configs: leave out --grid (or sweep the grid without --preset)")
    window = load_config(text, agent=args.agent)[args.agent].window if args.config else None
    if args.window is not None:
        if args.config and window is not None and window != args.window:
            raise Usage(f"--window {args.window} and --config {args.config} (window = {window}) disagree: give one")
        window = args.window
    presets: list[Config] = []
    try:
        for name in args.preset.split(","):
            presets += [AUTO] if name.strip() == "auto" else named_presets(name, window=window)
    except ConfigError as err:
        raise Usage(f"--preset: {err}") from None
    named = [p for p in presets if isinstance(p, Preset)]
    names = ", ".join([p.name for p in named] + (["auto (each log's own agent's, at the window its log records)"]
                                                   if len(named) < len(presets) else []))
    at = (f"each at {window:,} tokens" if window is not None else
          "each at its peer's own window (" + ", ".join(f"{p.name} {p.config.window:,}" for p in named) + "; --window N sets one)"
          if named else "")
    names = f"{names}, {at}" if at else names
    notes.say(f"{'no --config: the presets alone' if not args.config else f'{args.config} beside the presets'}: {names}")
    return ([text] if args.config else []) + presets


def _auto(configs: list[Config]) -> bool:
    from ..tuning.presets import Auto

    return any(isinstance(c, Auto) for c in configs)


def _with_a_preset(convs: list[Any], notes: Notes) -> list[Any]:
    """--preset auto: the logs written by an agent a preset models; each other log is left out, named on stderr
    with why (a Copilot CLI session: no preset models its agent), and none left is a ``Usage``."""
    from ..tuning.presets import AGENTS, MODELLED, no_preset

    kept = [c for c in convs if str(c.format) in AGENTS]
    left = [c for c in convs if str(c.format) not in AGENTS]
    if left and not kept:
        raise Usage(f"--preset auto: no conversation here has a preset for its agent ({plural(len(left), 'conversation')}; "
                    f"the first {no_preset(left[0])}): name the presets to sweep them with, e.g. --preset claude-code,codex")
    if left:
        formats = Counter(str(c.format) for c in left)
        named = "; ".join(f"{c.id} ({c.format}, {c.source})" for c in left[:SHOWN_LEFT])
        more = f"; and {len(left) - SHOWN_LEFT:,} more" if len(left) > SHOWN_LEFT else ""
        notes.say(f"--preset auto: left out {plural(len(left), 'conversation')} whose agent no preset models ({MODELLED}; "
                  f"these: {', '.join(f'{f} {n:,}' for f, n in formats.items())}): {named}{more}. To sweep them too, "
                  f"name the presets (--preset claude-code,codex,...): each runs on every conversation")
    return kept


#: How many conversations --preset auto names when it leaves some out (the rest counted).
SHOWN_LEFT = 5


def _said_below(warning: Warning | str) -> bool:
    """A warning the output itself says (also under -q): the configs the ranking left out (its table), and the
    conversations whose dollars with no strategy are off their logs' own usage (the note under the table)."""
    return bool(getattr(warning, "left_out", None) or getattr(warning, "usage", None))


def _pareto_path(plot: str) -> str:
    """Where --plot's trade-off goes: beside it, ``<stem>-pareto<suffix>``."""
    p = Path(plot)
    return str(p.with_name(f"{p.stem}-pareto{p.suffix}"))


def run(args: argparse.Namespace, out: TextIO, notes: Notes) -> None:
    from ..tuning.ranking import rank

    summarizer = _summarizer(args)
    check_pricing(args)
    _check_outputs(args)
    name, text = read_config(args)
    # --preset with no --config: the presets alone (the example's grid plays no part)
    grid, columns = ({}, []) if args.preset and args.config is None else _check_sweep(args, name, text, notes)
    if args.window is not None and not args.preset:
        raise Usage(f"--window {args.window} sets the presets' window: give --preset too (a config's own window is "
                     f"its [agent.<id>.context] window, or --grid window=...)")
    configs: str | list[Config] = _with_presets(args, text, notes) if args.preset else text
    if args.preset:
        grid = {}
    if args.value != "tokens_read" and not (args.plot and len(grid) >= 2):
        raise Usage(f"--value {args.value}: it chooses what the heatmap shows, which needs --plot and a grid of two keys "
                     f"(this sweep's grid has {plural(len(grid), 'key')})")
    if args.plot and len(grid) >= 2 and args.value not in columns:
        raise Usage(f"--value {args.value!r}: not a column of the sweep (columns: {', '.join(columns)})")
    if args.value in DOLLARS and args.model is None:
        raise Usage(f"--value {args.value} is in dollars: give --model (e.g. --model claude-sonnet-4-5), or another "
                     f"--value (e.g. tokens_read)")
    chosen = _options(args, summarizer)
    swept = _sweep(args, configs, grid, chosen, summarizer, out, notes)
    if swept is None:  # --dry-run: what the summaries would cost, said
        return
    df, convs, read, n_convs = swept
    keys = ["preset"] if args.preset else list(grid)
    width = args.width or terminal_width()
    if df.attrs.get("kept"):
        notes.say(f"{df.attrs['kept']:,} of the {len(df):,} rows were kept from an earlier run of the same sweep, in "
                  f"{df.attrs['result_cache']} (--no-result-cache replays everything)")
    cost: SummaryCost | None = df.attrs.get("summary_cost") if summarizer is not None else None
    if cost is not None:
        notes.say(_say_cost(cost, dry_run=False))
        if cost.failed or cost.refused:  # at the top of the output, whatever -q says: the rows below rest on it
            out.write("\n".join(textwrap.wrap(_say_failed(cost), width)) + "\n\n")
    with notes.watch("ranking", said_in_output=_said_below):
        ranked = rank(df, by="usd" if args.model else "tokens", failed=args.failed)
    out.write("\n".join(_ranking_table(ranked, keys, n_convs, width, df, model=args.model,
                                       unswept=read - n_convs)) + "\n")
    if ranked.attrs.get("usage_note"):  # the dollars above, against what the logs say they paid
        out.write("\n".join(textwrap.wrap(f"the dollars against the logs: {ranked.attrs['usage_note']}", width)) + "\n")
    if not (df["limits_full"] + df["limits_idle"] + df["limits_overflow"]).any() and len(df):
        out.write("\n".join(textwrap.wrap(_none_fired(df, args, text, configs), width)) + "\n")
    if args.rows:
        out.write("\n" + "\n".join(_rows_table(df, keys, width, summarizer is not None)) + "\n")
    elif len(df) > len(ranked) + len(ranked.attrs.get("left_out") or {}):  # more rows than configs: say where they are
        out.write("\n".join(textwrap.wrap(f"(one row per conversation and config, {len(df):,} in all: --rows prints them, "
                                         f"--out writes every column)", width)) + "\n")
    if args.out:
        if args.out.lower().endswith(".parquet"):
            df.to_parquet(args.out, index=False)
        else:
            df.to_csv(args.out, index=False)
        out.write(f"wrote {args.out}\n")
    left_out = ranked.attrs.get("left_out") or {}
    unranked = not len(ranked) and bool(left_out)  # every config left out: no answer, and nothing to plot
    if args.plot and not unranked:
        _plot(args, df, ranked, grid, convs, configs, out, notes)
    if cost is not None and (cost.failed or cost.refused) and not cost.answered:
        how = " or ".join(w for w, n in (("failed", cost.failed), ("was refused as too long", cost.refused)) if n)
        raise Failed(f"every summary call {how} ({plural(cost.failed + cost.refused, 'call')}): no row holds a "
                      f"summary the summarizer wrote; {_say_failed(cost)}")
    if unranked:
        raise Failed(_say_unranked(len(left_out), args))


def _say_unranked(n: int, args: argparse.Namespace) -> str:
    """Why a sweep whose every config the ranking left out gives no answer (exit 3), and no plot.

    >>> import argparse
    >>> _say_unranked(1, argparse.Namespace(plot="q.png", failed=False))
    'no config to rank: the 1 config swept makes turns fail (the lines under the table say how); nothing to plot, so q.png and its trade-off were not written; --failed ranks such a config, last'
    >>> _say_unranked(3, argparse.Namespace(plot=None, failed=False))
    'no config to rank: all 3 configs swept make turns fail (the lines under the table say how); --failed ranks such a config, last'
    """
    what = "the 1 config swept makes" if n == 1 else f"all {n:,} configs swept make"
    plot = f"; nothing to plot, so {args.plot} and its trade-off were not written" if args.plot else ""
    failed = "" if args.failed else "; --failed ranks such a config, last"
    return f"no config to rank: {what} turns fail (the lines under the table say how){plot}{failed}"


def _sweep(args: argparse.Namespace, configs: str | list[Config], grid: dict[str, list[Any]], chosen: Options,
           summarizer: Provider | None, out: TextIO, notes: Notes) -> tuple[pd.DataFrame, list[Any], int, int] | None:
    """The sweep: its frame, the conversations read here (none when the input is swept a file at a time), how many
    were read and how many swept; None for --dry-run (what the summaries would cost, said)."""
    from ..tuning.sweep import tune, tune_cost

    size = math.prod(len(v) for v in grid.values()) if grid else len(configs) if isinstance(configs, list) else 1
    sweep = dict(grid=grid or None, progress=None if progress(args) else False, jobs=args.jobs)
    streamed = _streams(args, configs, grid, summarizer)
    if streamed is not None:  # a large input: each file read where it is swept, never all of them here
        for path in args.paths:
            if not Path(path).exists():
                raise Usage(f"{path}: no such file or folder")
        if size >= SAY_CONFIGS:
            notes.say(f"sweeping {size:,} configs{f' ({_grid_size(grid)})' if grid else ''} over the logs in "
                      f"{plural(len(streamed), 'file')} ({_megabytes(streamed)}), each read where it is swept")
        with notes.watch("tuning") as quiet_skips:
            df = tune(list(args.paths), configs, chosen, **sweep)
            quiet_skips.extend(Path(f) for f in df.attrs.get("not_logs", ()))
        if df.empty:
            raise Usage(f"no conversations in {', '.join(args.paths)}")
        convs: list[Any] = []
        read = n_convs = len(df.drop_duplicates(["source", "conversation"]))
    else:
        convs = read_logs(args.paths, args, notes)
        read = len(convs)
        if isinstance(configs, list) and _auto(configs):  # each log its agent's preset: a log with none is left out
            convs = _with_a_preset(convs, notes)
        n_convs = len(convs)
        if size >= SAY_CONFIGS:  # a long run: what it is, before it starts
            notes.say(f"sweeping {size:,} configs{f' ({_grid_size(grid)})' if grid else ''} over "
                      f"{plural(len(convs), 'conversation')}: {size * len(convs):,} replays")
        if args.dry_run:  # what the summaries would cost, no table
            with notes.watch("tuning"):
                needed = tune_cost(convs, configs, chosen, **sweep)
            out.write(_say_cost(needed, dry_run=True) + "\n")
            return None
        with notes.watch("tuning"):
            df = tune(convs, configs, chosen, **sweep)
    return df, convs, read, n_convs


#: Inputs past this many bytes, in several files, are swept a file at a time, each read where it is swept (``tune``
#: of their paths), when nothing needs the conversations here (a summarizer, ``--preset auto``, ``--dry-run``, a
#: count-per-call plot); one large file is read here and its conversations go to the workers, as any input's do.
STREAM_BYTES = 256 << 20


def _streams(args: argparse.Namespace, configs: str | list[Config], grid: dict[str, list[Any]],
             summarizer: Provider | None) -> list[Path] | None:
    """The log files of a sweep that goes a file at a time (``STREAM_BYTES`` of them or more, in several files none
    of which is half of them), else None."""
    from ..importers import log_files

    if summarizer is not None or args.dry_run or (isinstance(configs, list) and _auto(configs)) or (args.plot and len(grid) < 2):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # what the sweep's own look at the folders says again, in its notes
            found = [f for p in args.paths for f in log_files(p)]
    except ReadError:
        return None  # said by the read, as always
    sizes = [_size(f) for f in found]
    # a file at a time: worth it for many files; one file (or one that is most of them) would sweep in one process
    return found if sum(sizes) >= STREAM_BYTES and len(found) > 1 and max(sizes) <= sum(sizes) / 2 else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _megabytes(files: list[Path]) -> str:
    return f"{sum(_size(f) for f in files) / (1 << 20):,.0f} MB"


def _none_fired(df: pd.DataFrame, args: argparse.Namespace, text: str, configs: str | list[Config]) -> str:
    """What the output says when no config fired: the largest count, and what would fire, only as the command accepts
    it (a window must be more than 16,000; a preset refuses a window its own threshold does not fit), or that nothing
    it accepts would."""
    from ..context import MARGIN, load_config
    from ..tuning.presets import Preset, presets

    lowest = df["threshold"].dropna().min() if df["threshold"].notna().any() else None
    below = f", below every config's threshold (the lowest: {int(lowest):,})" if lowest is not None else ""
    largest = int(df["max_count"].max())
    said = (f"no config fired on these logs: every row is the log as it was (the engine's largest count was "
            f"{largest:,} tokens{below}, and no turn waited past an idle_secs)")
    if args.preset:  # the presets' windows: --window, each preset at the windows it accepts
        named = [c.name for c in configs if isinstance(c, Preset)] if isinstance(configs, list) else []
        auto = [str(p).removeprefix("auto: ") for p in df["preset"].dropna() if str(p).startswith("auto: ")]
        names = list(dict.fromkeys(named + auto))

        def at(name: str) -> Callable[[int], ContextConfig]:
            return lambda w: presets(name, window=w)[0].config

        spans = [(name, span) for name in names if (span := _firing(largest, at(name))) is not None]
        if not spans:
            return f"{said}; no window a preset accepts would make one fire on these logs"
        return (f"{said}; --preset NAME --window N would make it fire for N from " +
                ", ".join(f"{a:,} to {b:,} ({name})" for name, (a, b) in spans) +
                ("" if len(spans) == len(names) else "; no window the others accept would"))
    if largest <= 1:  # a window is more than 16,000 (window - 16000 at least 1), an over_tokens at least 1
        return f"{said}; no window the engine accepts (more than 16,000) and no over_tokens (at least 1) would fire on these logs"
    base = load_config(text, agent=args.agent)[args.agent]
    span = _firing(largest, lambda w: dataclasses.replace(base, window=w))
    if span is None:  # no strategy of the config applies by size
        return (f"{said}; no window would: no strategy of the config applies by size (each waits for idle_secs, or "
                f"there is none); one without idle_secs would fire at a window from {MARGIN + 1:,} to "
                f"{largest + MARGIN - 1:,}, or with an over_tokens below {largest:,}")
    return (f"{said}; a window from {span[0]:,} to {span[1]:,} (--grid window=...), or an over_tokens below "
            f"{largest:,}, would fire")


def _firing(largest: int, make: Callable[[int], ContextConfig]) -> tuple[int, int] | None:
    """The windows, from the least ``make`` accepts (a ``ConfigError`` refuses one) to the largest, at which the
    config ``make(window)`` fires on a count of ``largest`` (its threshold below it); None when none does. Both are
    found by halving: what a window accepts and where it fires only change once as it grows."""
    from ..context import MARGIN
    from ..errors import ConfigError

    def accepted(w: int) -> bool:
        try:
            make(w)
        except ConfigError:
            return False
        return True

    def fires(w: int) -> bool:
        threshold = make(w).threshold
        return threshold is not None and threshold < largest

    low = MARGIN + 1
    high = max(low, largest + MARGIN)  # window - 16000 reaches the count here; a strategy's over_tokens may not yet
    while accepted(high) and fires(high) and high < 10**12:  # (a preset's over_tokens grows with its window)
        high *= 2
    if not accepted(high):  # what a window accepts only grows with it: none up to high is
        return None
    a, b = low, high
    while a < b:  # the least window accepted
        m = (a + b) // 2
        a, b = (a, m) if accepted(m) else (m + 1, b)
    if not fires(a):
        return None
    least, b = a, high
    while a < b:  # the largest window that fires
        m = (a + b + 1) // 2
        a, b = (m, b) if fires(m) else (a, m - 1)
    return least, a


def _plot(args: argparse.Namespace, df: pd.DataFrame, ranked: pd.DataFrame, grid: dict[str, list[Any]], convs: list[Any],
          configs: str | list[Config], out: TextIO, notes: Notes) -> None:
    """--plot: the heatmap (two grid keys) or the count per call, and the trade-off beside it."""
    from ..replaying.driver import replay
    from ..tuning import plots
    from ..tuning.grid import config_grid
    from ..tuning.presets import Auto, Preset, for_log

    keys = list(grid)
    with notes.watch("plotting"):
        if len(keys) >= 2:  # each cell one config over every conversation, as the ranking reads it (a share not summed)
            from ..tuning.ranking import totals

            data = totals(df).reset_index()
            fig = plots.sweep_heatmap(data.assign(rewrites=data["summaries"] + data["resets"]), keys[1], keys[0], args.value,
                                      cost="rewrites")
        else:  # the count per call of the longest conversation, under the config the ranking puts first
            from ..tuning.ranking import config_label

            longest = max(convs, key=len)
            top = ranked.iloc[0]
            chosen = configs[int(top["config"])] if isinstance(configs, list) else \
                config_grid(configs, grid, agent=args.agent)[int(top["config"])] if grid else configs
            if isinstance(chosen, Auto):  # each log's own agent's: the longest log's
                found = for_log(longest)
                assert found is not None, "tune refuses a log no agent's preset is of"
                chosen = found
            config, worker = (chosen.config, chosen.worker) if isinstance(chosen, Preset) else (chosen, None)
            fig = plots.count_per_call(replay(longest, config, _options(args), worker=worker),
                                       title=f"count per call: {longest.id}, {config_label(top, keys)}, ranked first")
        fig.savefig(args.plot, dpi=100)
        pareto = _pareto_path(args.plot)
        swept = len(convs) or len(df.drop_duplicates(["source", "conversation"]))  # a streamed sweep holds no conversation
        plots.sweep_pareto(ranked, title=f"the trade-off over {plural(swept, 'conversation')}").savefig(pareto, dpi=100)
    out.write(f"wrote {args.plot}\nwrote {pareto}\n")


def _rows_table(df: pd.DataFrame, keys: list[str], width: int, summarizer: bool) -> list[str]:
    """The sweep's table: one line per (conversation, config), the columns that matter, fitted to ``width``."""
    from ..tables import Column, compact, fit_table
    from ..tuning.ranking import short_keys

    names = short_keys(keys)
    cols = [
        Column("conversation", conversation_names(df), short="conv", number=False, least=9),
        Column("source", where(list(df["source"])), number=False, least=9, keep_end=True),
        Column("config", list(df["config"]), short="cfg"),
        *[Column(k, list(df[k]), short=names[k], fmt=str) for k in keys if k != "window"],
        Column("window", list(df["window"]), fmt=str, optional=0 if "window" in keys else 2),
        Column("calls", list(df["calls"]), optional=1),
        Column("tokens_read", list(df["tokens_read"]), short="read", short_fmt=compact),
        Column("saved", list(df["saved"]), fmt=percent),
        # a row that lost calls to failed turns says so beside its saving: those calls count at the log's figure
        *([Column("failed_turns", list(df["failed_turns"]), short="failed")] if df["failed_turns"].any() else []),
        *([Column("lost_calls", list(df["lost_calls"]), short="lost")] if df["lost_calls"].any() else []),
        *([Column("usd", list(df["usd"]), fmt=dollars), Column("cached_share", list(df["cached_share"]), short="cached",
                                                                fmt=percent, optional=2)] if df["usd"].notna().any() else []),
        Column("summaries", list(df["summaries"]), short="summ"),
        *([Column("summary_tokens", list(df["summary_tokens"]), short="sum_tok", short_fmt=compact)] if summarizer else []),
        Column("resets", list(df["resets"])),
        Column("stale", list(df["stale"])),
        # the last to go, where nothing else made room (dollars added two columns): the cached share, the count's error
        Column("err_usage_p95", list(df["err_usage_p95"]), short="err95", short_fmt=compact,
                fmt=lambda v: f"{v:,.0f}", optional=2),
    ]
    return fit_table(cols, width)


def _ranking_table(ranked: pd.DataFrame, keys: list[str], conversations: int, width: int,
                   df: pd.DataFrame | None = None, model: str | None = None, unswept: int = 0) -> list[str]:
    """The configs ranked (``convlab.rank``), with what the columns mean, fitted to ``width``; then the
    configs it left out and why (``df``, the tune frame, names them), which no ``--quiet`` hides."""
    import textwrap

    from ..replaying.prompt_cache import default_rule
    from ..tables import Column, fit_table
    from ..tuning.ranking import config_label, short_keys

    names = short_keys(keys)
    by_usd = ranked.attrs.get("by") == "usd"
    left = (f" ({plural(unswept, 'more conversation')} left out of --preset auto: no preset models "
            f"{'their agents' if unswept > 1 else 'its agent'})") if unswept else ""  # here too: -q hides stderr's notes
    intro = (f"configs ranked over {plural(conversations, 'conversation')}{left}: saved = tokens read below the same "
             f"conversations replayed with no strategy, each figure summed over them")
    if by_usd:
        cache = ("with the prompt cache predicted" if model is None or default_rule(model) is not None else
                 f"with no prompt cache (convlab has no cache rule for {model}: every input token at its full price)")
        warm = ("" if "compactions_warm" not in ranked or (model is not None and default_rule(model) is None) else
                "; warm = summaries and resets that threw a warm cache away (the call after found it still holding "
                "the prefix), warm$ = what the calls right after them paid beyond reading their input from the cache")
        intro += (f"; ranked by dollars: usd = every call priced (genai-prices) {cache}, "
                  f"saved_usd (saved$) = the share of the dollars below the baseline{warm}; pareto = no config saves as "
                  "many dollars (saved$) with as few summaries + resets")
    else:
        intro += "; pareto = no config saves as many tokens (saved) with as few summaries + resets"
    fails = [bool(broke(f, n)) for f, n in zip(ranked["failed_turns"], ranked["lost_calls"], strict=True)]
    if any(fails):  # --failed: ranked last, and marked
        intro += ("; fails = the config makes turns fail (its saving counts each call it never made at the log's "
                  "own): no answer, ranked last")
    cols = [
        Column("rank", list(ranked.index)),
        Column("config", list(ranked["config"]), short="cfg"),
        *[Column(k, list(ranked[k]), short=names[k], fmt=str) for k in keys if k != "window"],
        Column("window", list(ranked["window"]), fmt=str, optional=0 if "window" in keys else 2),
        Column("saved", list(ranked["saved"]), fmt=percent),
        *([Column("usd", list(ranked["usd"]), fmt=dollars), Column("saved_usd", list(ranked["saved_usd"]), short="saved$",
                                                                    fmt=percent)] if by_usd else []),
        Column("summaries", list(ranked["summaries"]), short="summ"),
        Column("resets", list(ranked["resets"])),
        *([Column("compactions_warm", list(ranked["compactions_warm"]), short="warm", optional=1),
           Column("warm_rewrite_usd", list(ranked["warm_rewrite_usd"]), short="warm$", fmt=dollars, optional=1)]
          if by_usd and "compactions_warm" in ranked and (model is None or default_rule(model) is not None) else []),
        Column("stale", list(ranked["stale"])),
        Column("limits", list(ranked["limits"])),
        Column("calls", list(ranked["calls"]), optional=1),
        *([Column("failed_turns", list(ranked["failed_turns"]), short="failed")] if ranked["failed_turns"].any() else []),
        *([Column("lost_calls", list(ranked["lost_calls"]), short="lost")] if ranked["lost_calls"].any() else []),
        Column("pareto", ["yes" if p else "" for p in ranked["pareto"]], number=False),
        *([Column("fails", ["FAILS" if f else "" for f in fails], number=False)] if any(fails) else []),
    ]
    lines = textwrap.wrap(intro, width) + (fit_table(cols, width) if len(ranked) else
                                           [f"(no config to rank{': every config swept is left out, below' if ranked.attrs.get('left_out') else ''})"])
    left_out: dict[int, str] = ranked.attrs.get("left_out") or {}
    if left_out:
        rows = {} if df is None else {int(r["config"]): r for _, r in df.drop_duplicates("config").iterrows()}
        lines += textwrap.wrap(f"left out of the ranking: {plural(len(left_out), 'config')}"
                               + (" (--failed ranks the configs that make turns fail, last)" if not ranked.attrs.get("failed") else ""),
                               width)
        for config, why in sorted(left_out.items()):
            label = config_label(rows[config], keys, names) if config in rows else f"config {config}"
            lines += textwrap.wrap(f"{label}: {why}", width, initial_indent="  ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)
    return lines
