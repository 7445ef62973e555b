"""The ``convlab`` command: look at real logs and sweep context configs over them.

No mistake passes silently and none ends in a traceback. A mistake in how
the command was called, in a config or in the input (a missing file, a
misspelled table, a wrong ``--agent``, an output folder that is not there)
is one line on stderr and exit status 2, found before any work starts
wherever it can be. What reading repaired or passed over (every
``ReadWarning`` and ``LogWarning``, and the files skipped, with why) goes to
stderr, grouped with counts (``--quiet`` silences it); the output goes to
stdout and the command exits 0 when it produced it, and 3 when the work ran
but its answer is none: no config met a search's constraints (the closest
trials are listed), or every summary call of a sweep failed.

The parser is built one small function per subcommand (``_add_show``,
``_add_tune``): a new subcommand adds its own and registers it in
``build_parser``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import shutil
import sys
import textwrap
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

if TYPE_CHECKING:  # names for the types only: each is imported where it is used
    import pandas as pd

    import convlab

    from .providers import Provider
    from .replay import SummaryCost

    _Config = str | convlab.presets.Preset | convlab.presets.Auto  # one of tune's configs: TOML text, a preset, AUTO

from .grid import EXAMPLE

__all__ = ["main", "build_parser"]


class _Usage(Exception):
    """A mistake in how the command was called, or in its config or input: one line, exit 2."""


class _Failed(Exception):
    """The work ran, but its answer is no answer (no config met the constraints; every summary call
    failed): what it found on stderr, exit 3."""


class _Parser(argparse.ArgumentParser):
    commands: dict[str, argparse.ArgumentParser]  # the subcommands' parsers (build_parser sets them)

    def error(self, message: str) -> NoReturn:  # one line, exit 2 (not argparse's usage block)
        raise _Usage(message)


# -- the parser: one function per subcommand ---------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convlab`` (for ``--help`` and tests).

    >>> build_parser().parse_args(["show", "log.jsonl", "--path", "--width", "72"]).width
    72
    """
    p = _Parser(prog="convlab", description="Understand and tune branching LLM conversations.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    _add_show(sub)
    _add_tune(sub)
    _add_search(sub)
    _add_serve(sub)
    p.commands = dict(sub.choices)  # what _unrecognized looks options up in
    return p


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, extras: list[str]) -> str:
    """What ``convlab`` says of arguments it does not know: each named, with the close option it may mean.

    >>> _unrecognized(build_parser(), "tune", ["--widht", "80"])
    'unrecognized arguments: --widht 80 (did you mean --width?)'
    """
    import difflib

    commands: dict[str, argparse.ArgumentParser] = getattr(parser, "commands", {})  # a plain parser has none
    known = [o for o in (commands[command] if command in commands else parser)._option_string_actions if o.startswith("--")]
    close: list[tuple[str, str]] = []  # (what was given, the option it may mean)
    for extra in extras:
        name = extra.split("=", 1)[0]
        if name.startswith("-") and name not in known:
            found = difflib.get_close_matches(name if name.startswith("--") else "-" + name, known, n=1, cutoff=0.6)
            close += [(name, found[0])] if found else []
    if len(close) == 1:
        hint = f" (did you mean {close[0][1]}?)"
    else:
        hint = f" ({'; '.join(f'{n}: did you mean {o}?' for n, o in close)})" if close else ""
    return f"unrecognized arguments: {' '.join(extras)}{hint}"


def _add_reading_options(cmd: argparse.ArgumentParser) -> None:
    """What every subcommand that reads logs takes."""
    cmd.add_argument("--quiet", "-q", action="store_true", help="do not list warnings and skipped files on stderr")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bars")


def _width(text: str) -> int:
    from .text import MIN_WIDTH

    try:
        width = int(text)
    except ValueError:
        width = None
    if width is None or width < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least {MIN_WIDTH}, got {text!r}")
    return width


def _add_show(sub: argparse._SubParsersAction[_Parser]) -> None:
    show = sub.add_parser(
        "show", help="print a log's conversations as trees, like git log --graph",
        description="Print each conversation of a chat log (any format convlab reads: a file, an archive or a folder) "
                    "as a tree, like git log --graph: the active path in one column, a branch indented where it "
                    "leaves it, thinking, tool calls and results as short labels, no line wider than --width. A "
                    "summary line first says what is counted: the messages of the tree, those on the active path, "
                    "the branch points. What reading repaired or passed over goes to stderr.")
    show.add_argument("file", metavar="FILE_OR_DIR")
    show.add_argument("--width", type=_width, help="no line is wider than this, stderr's included (default 100, at least 20)")
    show.add_argument("--path", action="store_true", help="only the active path (root to head), one line a message")
    show.add_argument("--conversation", metavar="ID", help="only the conversation with this id")
    _add_reading_options(show)
    show.set_defaults(run=_show)


#: The most configs ``convlab tune`` sweeps unless ``--max-configs`` says more.
MAX_CONFIGS = 1_000
#: A grid of this many configs or more is a long run: its size is said on stderr before the sweep starts.
SAY_CONFIGS = 100


def _add_tune(sub: argparse._SubParsersAction[_Parser]) -> None:
    tune = sub.add_parser(
        "tune", help="replay logs under context configs: one row per (conversation, config), then the configs ranked",
        description="Replay chat logs under context configs: a table with one row per (conversation, config), then the "
                    "configs ranked by the tokens they save against the summaries, resets and stale replies they cost "
                    "(convlab.tune and convlab.rank). Warnings (a config that fires at most calls, a threshold below "
                    "the log's hidden prompt) go to stderr.")
    tune.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    tune.add_argument("--config", metavar="CFG.toml",
                      help=f"the (base) context config; its [convlab.tune.grid] table, if any, is the grid without --grid. "
                           f"Default: the example {EXAMPLE}, {_example_sweeps()}")
    tune.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    tune.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                      help="sweep a key of the context table: window=64000,128000 or strategy[0].idle_secs=600,3600 "
                           "(repeatable; replaces the config's [convlab.tune.grid])")
    tune.add_argument("--summary-size", type=_summary_size, metavar="RATIO|TOKENS",
                      help="how long the stand-in summary is (what every later count starts from): a share of what it "
                           "summarizes (0.1 or 10%%) or a number of tokens (2000); default: one short line per message")
    tune.add_argument("--overhead", type=_tokens, metavar="TOKENS",
                      help="the hidden prompt (system prompt and tools no log line holds) read at every call the log's "
                           "usage does not answer; default: measured from the log")
    tune.add_argument("--out", metavar="results.csv|.parquet", help="write the table, every column")
    tune.add_argument("--plot", metavar="out.png",
                      help="write a plot: a heatmap over the first two grid keys (each cell: --value, and under it the "
                           "rewrites, summaries + resets, that bought it), else the count per call of the longest "
                           "conversation; and the trade-off (tokens saved against summaries + resets, the Pareto configs "
                           "marked) beside it, in out-pareto.png")
    tune.add_argument("--value", default="tokens_read", help="the column the heatmap shows (default tokens_read)")
    tune.add_argument("--width", type=_width, help="fit the tables to this many columns (default: the terminal's)")
    tune.add_argument("--summarizer", metavar="SPEC",
                      help="send summary calls to this model (replies still come from the logs): echo, local (a real small "
                           "model on this machine), openai:MODEL or anthropic:MODEL (convlab.provider); summaries are cached in $XDG_CACHE_HOME/convlab/summaries")
    tune.add_argument("--dry-run", action="store_true",
                      help="with --summarizer: say how many summary calls and input tokens the sweep needs, and how many "
                           "the cache holds; call nothing")
    tune.add_argument("--no-cache", action="store_true", help="with --summarizer: neither read nor write the summary cache")
    tune.add_argument("--jobs", type=_job_count, metavar="N", help="worker processes (default: one per core; 1: none)")
    tune.add_argument("--model", metavar="MODEL",
                      help="price every call in dollars with genai-prices (e.g. claude-sonnet-4-5 or anthropic:claude-sonnet-4-5): "
                           "usd columns, the prompt cache of its provider, the configs ranked by dollars")
    tune.add_argument("--cache-ttl", default="5m", metavar="5m|1h|SECONDS", help="the prompt cache's lifetime (default 5m)")
    tune.add_argument("--rows", action="store_true",
                      help="after the ranking, print the table of one row per (conversation, config) (--out writes "
                           "every column)")
    tune.add_argument("--failed", action="store_true",
                      help="rank the configs that make turns fail too, last (by default they are left out, and the "
                           "ranking says which and why)")
    tune.add_argument("--preset", metavar="NAMES",
                      help="the field's auto-compactions beside the config (convlab.presets): claude-code, codex, gemini-cli, pi, "
                           "a comma-separated list or all; at the config's window, or --window (default each peer's); "
                           "auto: the preset of the agent that wrote each log, at the window its log records")
    tune.add_argument("--window", type=_tokens, metavar="TOKENS",
                      help="with --preset: the model's context window every preset fires against (e.g. 128000)")
    tune.add_argument("--max-configs", type=_job_count, default=MAX_CONFIGS, metavar="N",
                      help=f"refuse a grid of more configs than this before any work (default {MAX_CONFIGS:,}: every "
                           f"conversation is replayed under each config, and the ranking lists them all); a grid of "
                           f"{SAY_CONFIGS:,} configs or more is said on stderr before the sweep starts")
    _add_reading_options(tune)
    tune.set_defaults(run=_tune)



def _add_search(sub: argparse._SubParsersAction[_Parser]) -> None:
    search = sub.add_parser(
        "search", help="search a space of context configs for the cheapest that meets constraints; print it as TOML",
        description="Search context configs over chat logs with Optuna (convlab.search): ranges around the base "
                    "config's window, strategy[0].over_tokens and strategy[0].idle_secs, each trial scored by "
                    "replaying the logs, its figures over all of them as tune's ranking sums them (usd: what every "
                    "conversation costs together; saved: the share of the tokens the logs read). A config that makes "
                    "turns fail never wins (--failed lets it). Prints the best config as TOML for "
                    "[agent.<id>.context]; one line on stderr says its value, over how many conversations, and how "
                    "many trials met the constraints; when none did, the closest trials and what each missed (exit 3).")
    search.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    search.add_argument("--base", dest="config", metavar="CFG.toml",
                        help=f"the base context config the space is around (default: the example {EXAMPLE})")
    search.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    search.add_argument("--model", metavar="MODEL", help="price every call in dollars (genai-prices), e.g. claude-sonnet-4-5: "
                                                          "the default objective, usd, needs it")
    search.add_argument("--objective", default="usd", metavar="COLUMN",
                        help="the column of the sweep to minimise (default usd); a leading - maximises it (--objective -saved)")
    search.add_argument("--constraint", action="append", default=[], metavar="'COLUMN OP NUMBER'",
                        help="a bound every config that wins meets, e.g. 'failed_turns == 0' (repeatable; OP one of >= <= > < ==)")
    search.add_argument("--trials", type=_job_count, default=60, metavar="N", help="configs to try (default 60)")
    search.add_argument("--seed", type=int, default=0, help="the sampler's seed (default 0): the same seed, the same search")
    search.add_argument("--jobs", type=_job_count, metavar="N", help="worker processes (default: one per core; 1: none)")
    search.add_argument("--failed", action="store_true",
                        help="let a config that makes turns fail win (by default it never does: a call the provider "
                             "refused as too long, with nothing that made room, is no answer)")
    _add_reading_options(search)
    search.set_defaults(run=_search, cache_ttl="5m")


def _summary_size(text: str) -> int | float:
    """--summary-size: a ratio (0.1, 10%) or a whole number of tokens (2000)."""
    value: int | float | None = None
    try:
        value = float(text.removesuffix("%")) / 100 if text.endswith("%") else (int(text) if text.isdigit() else float(text))
    except ValueError:
        pass
    if (isinstance(value, int) and value >= 1) or (isinstance(value, float) and 0 < value <= 1):
        return value
    raise argparse.ArgumentTypeError(f"a share of what is summarized (0 < r <= 1: 0.1, or 10%) or a whole number "
                                     f"of tokens (2000), got {text!r}")


def _tokens(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a whole number of tokens (0 or more), got {text!r}")
    return int(text)


def _job_count(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return jobs


def _add_serve(sub: argparse._SubParsersAction[_Parser]) -> None:
    serve = sub.add_parser(
        "serve", help="serve sessions over AG-UI 1.0, with a chat page at / (needs the agui extra)",
        description="Serve sessions over AG-UI 1.0 until Ctrl-C: POST / runs a thread (one session log per thread in "
                    "--log-dir, continued across restarts), GET / is a chat page with edit, regenerate and branch "
                    "arrows, and any AG-UI front end (CopilotKit, assistant-ui) can connect. The model is --llm; a "
                    "context.limit is answered by the engine's proposal, or with --worker manual by a person (an "
                    "AG-UI interrupt). Listens on 127.0.0.1 unless --host says otherwise (then --token is needed).")
    serve.add_argument("--log-dir", required=True, metavar="DIR", help="one session log per thread: DIR/<threadId>.jsonl")
    serve.add_argument("--config", metavar="agent.toml", help="the context config of new threads")
    serve.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    serve.add_argument("--llm", default="echo", metavar="SPEC",
                       help="the model: echo (default, offline), local (a real small model on this machine, offline), "
                            "openai:MODEL or anthropic:MODEL (convlab.provider)")
    serve.add_argument("--worker", choices=("chat", "manual"), default="chat",
                       help="manual: a context.limit waits for a person (an AG-UI interrupt)")
    serve.add_argument("--on-unanswered", choices=("refuse", "end", "default"), default="end",
                       help="a new message with no resume while a decision waits: end the waiting turn as "
                            "'End the turn' does (default), answer it with its default (what the engine "
                            "proposed), or refuse the message (409)")
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1; any other address needs --token")
    serve.add_argument("--port", type=int, default=8000, help="default 8000 (0: a free port)")
    serve.add_argument("--token", default=os.environ.get("CONVLAB_TOKEN"),
                       help="bearer token every route but /health needs (default: $CONVLAB_TOKEN)")
    serve.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                       help="allow a browser page from ORIGIN (repeatable; default: only the server's own page)")
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="answer requests whose Host is NAME too (repeatable; default: localhost, loopback "
                            "addresses and the address served; any other Host gets 421)")
    serve.add_argument("--max-body", type=int, default=10 * 1024 * 1024, metavar="BYTES",
                       help="request bodies over this get 413 (default 10 MB)")
    serve.set_defaults(run=_serve, quiet=False)


# -- what goes to stderr beside the output -----------------------------------


def _ours(category: type) -> bool:
    from .errors import LogWarning, ReadWarning

    return issubclass(category, (ReadWarning, LogWarning)) or category.__module__.split(".")[0] == "convlab"


class _Notes:
    """The command's stderr beside its output: warnings grouped with counts, and the files skipped."""

    def __init__(self, err: TextIO | _Encoded, quiet: bool, width: int | None = None) -> None:
        self.err = err
        self.quiet = quiet
        # wrapped to --width when given, else to the terminal's; into a file or a pipe one line an item, for grep
        isatty = getattr(err, "isatty", None)
        self.width = width or (shutil.get_terminal_size((100, 24)).columns if isatty and isatty() else None)

    def say(self, text: str) -> None:
        if not self.quiet:
            self.err.write(self._fit(f"convlab: {text}", "", "  ") + "\n")

    def _fit(self, text: str, first: str, rest: str) -> str:
        if self.width is None:
            return first + text
        return textwrap.fill(text, self.width, initial_indent=first, subsequent_indent=rest,
                             break_long_words=False, break_on_hyphens=False)

    @contextlib.contextmanager
    def watch(self, stage: str, said_in_output: Callable[[Warning | str], bool] = lambda w: False) -> Iterator[list[Path]]:
        """Collect the warnings of a stage and say them when it ends (also when it fails), but for those
        the output itself says (``said_in_output``).

        Yields a list the stage fills with files it found no conversation in
        and no warning about (passed over quietly).
        """
        quiet_skips: list[Path] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield quiet_skips
            finally:
                self._report(stage, [w for w in caught if not said_in_output(w.message)], quiet_skips)

    def _report(self, stage: str, caught: list[warnings.WarningMessage], quiet_skips: list[Path]) -> None:
        skipped: list[str] = []
        left_out: list[str] = []  # the files (or archive members) those warnings name
        groups: dict[str, Counter[str]] = {}
        for w in caught:
            if not _ours(w.category):
                continue
            text = str(w.message).strip()
            passed_over = getattr(w.message, "passed_over", None)  # a ReadWarning for a file left out whole
            if passed_over is not None:
                skipped.append(text.removesuffix("; passed over"))
                left_out.append(passed_over)
                continue
            groups.setdefault(w.category.__name__, Counter())[text] += 1
        if skipped:
            self.say(f"skipped {_plural(len(skipped), 'file')} that could not be read:")
            self._list(skipped)
        unread = [str(f) for f in quiet_skips if not any(p == str(f) or p.startswith(f"{f}!") for p in left_out)]
        if unread:
            self.say(f"passed over {_plural(len(unread), 'file')} with no chat log convlab reads:")
            self._list(unread)
        for name, counts in groups.items():
            self.say(f"{_plural(sum(counts.values()), name)} while {stage}:")
            self._list(f"{text} ({n} times)" if n > 1 else text for text, n in counts.items())

    def _list(self, lines: Iterable[str]) -> None:
        """One item a paragraph, wrapped to the width (a long path or id is kept whole)."""
        if not self.quiet:
            for line in lines:
                self.err.write(self._fit(line, "  ", "    ") + "\n")


def _plural(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


# -- reading -----------------------------------------------------------------


def _files(folder: Path) -> list[Path]:
    """The files ``convlab.read`` walks in a folder (hidden ones left out, as it does)."""
    return sorted(f for f in folder.rglob("*") if f.is_file() and not any(p.startswith(".") for p in f.relative_to(folder).parts))


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars only into a terminal, and never with --no-progress."""
    isatty = getattr(sys.stderr, "isatty", None)
    return not args.no_progress and bool(isatty and isatty())


def _read(paths: Sequence[str], args: argparse.Namespace, notes: _Notes) -> list[Any]:
    import convlab

    for path in paths:
        if not Path(path).exists():
            raise _Usage(f"{path}: no such file or folder")
    convs: list[Any] = []
    with notes.watch("reading") as quiet_skips:
        for path in paths:
            got = convlab.read(path, progress=_progress(args))
            convs.extend(got)
            if Path(path).is_dir():
                sources = {str(c.source).split("!", 1)[0] for c in got}
                quiet_skips.extend(f for f in _files(Path(path)) if str(f) not in sources)
        if not convs:
            raise _Usage(f"no conversations in {', '.join(paths)}")
    return convs


# -- show --------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO, notes: _Notes) -> None:
    from .conversation import LOG_ROWS
    from .text import brief, fit, render_path, render_summary, render_tree

    convs = _read([args.file], args, notes)
    if args.conversation is not None:
        chosen = [c for c in convs if c.id == args.conversation]
        if not chosen:
            ids = ", ".join(c.id for c in convs[:5]) + (", ..." if len(convs) > 5 else "")
            raise _Usage(f"{args.file}: no conversation {args.conversation!r} (its {_plural(len(convs), 'conversation')}: {ids})")
        convs = chosen
    render = render_path if args.path else render_tree
    for i, c in enumerate(convs):
        if i:
            out.write("\n")
        title = f": {brief(c.title)!r}" if c.title else ""
        width = args.width or 100
        out.write(fit(f"conversation {brief(c.id)}{title}", width) + "\n")
        out.write(render_summary(c.tree, c.head, width) + "\n")
        rows = c.metadata.get(LOG_ROWS)
        if isinstance(rows, int) and rows != len(c):  # what a count of the log's raw rows counts instead
            out.write("\n".join(textwrap.wrap(
                f"(read from {rows:,} message rows of the log: a reply written over several rows, one per content "
                f"block, is one message, and the log's forks between its rows are none here; a row of several tool results is "
                f"one message each)", width)) + "\n")
        out.write(render(c.tree, c.head, width) + "\n")


# -- tune --------------------------------------------------------------------


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
            raise _Usage(f"--grid {item!r}: write KEY=V1,V2 (e.g. window=64000,128000)")
        out[key.strip()] = [_number(v.strip()) for v in values.split(",") if v.strip()]
    return out


def _plot_types() -> set[str]:
    from matplotlib.backend_bases import FigureCanvasBase

    return {f".{t}" for t in FigureCanvasBase.get_supported_filetypes()}


def _check_output(flag: str, path: str, suffixes: set[str]) -> None:
    """An output path that can be written, checked before any work (a sweep can take minutes)."""
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise _Usage(f"{flag} {path}: write one of {', '.join(sorted(suffixes))}")
    if p.is_dir():
        raise _Usage(f"{flag} {path}: is a folder")
    folder = p.parent
    if not folder.is_dir():
        raise _Usage(f"{flag} {path}: no folder {folder} to write it into")
    if not os.access(folder, os.W_OK):
        raise _Usage(f"{flag} {path}: cannot write into {folder}")


def _summarizer(args: argparse.Namespace) -> Any:
    """The --summarizer's provider (None without one), and the flags that need one, checked before any work."""
    if args.summarizer is None:
        for flag, given in (("--dry-run", args.dry_run), ("--no-cache", args.no_cache)):
            if given:
                raise _Usage(f"{flag} goes with --summarizer (the model summary calls go to), e.g. --summarizer echo")
        return None
    if args.dry_run and (args.out or args.plot):
        raise _Usage("--dry-run calls nothing and makes no table: leave out --out and --plot")
    import convlab

    try:
        return convlab.provider(args.summarizer)
    except (ValueError, ImportError) as err:  # a bad spec, a missing key, a missing SDK
        raise _Usage(f"--summarizer: {err}") from None


def _say_cost(cost: SummaryCost, dry_run: bool) -> str:
    """One line on a sweep's summaries: what it needs (a dry run) or what it spent."""
    if dry_run:
        line = (f"summaries: {_plural(cost.calls, 'call')} to make ({cost.input_tokens:,} input tokens, o200k_base), "
                f"{cost.cached} in the cache ({cost.cached_input_tokens:,} input tokens)")
        if not cost.exact:
            line += (f"; {cost.estimated} of the calls read a summary not made yet and are counted with a stand-in "
                     "in its place: an estimate")
        return line
    refused = (f"; {cost.refused} of them refused as too long for the summarizer (the engine shortened each, at most "
               f"three times, then ran the held call as it was)") if cost.refused else ""
    unkept = (f"; {cost.unkept} of the calls made could not be kept in the cache (its folder cannot be written: used in "
              f"this run, made again by the next)") if cost.unkept else ""
    return (f"summaries: {_plural(cost.calls, 'call')} made ({cost.input_tokens:,} input tokens), "
            f"{cost.cached} from the cache ({cost.cached_input_tokens:,} input tokens){refused}{unkept}")


def _say_failed(cost: SummaryCost) -> str:
    """What the failed summary calls of a sweep mean for its rows."""
    return (f"summaries: {cost.failed} of {_plural(cost.calls + cost.failed, 'summary call')} failed "
            f"({cost.error or 'no reason given'}); {cost.calls} made, {cost.cached} from the cache. Where a summary "
            f"failed the engine ran the held call as it was (docs/protocol.md, 5.3), so those rows hold no summary there")


def _check_outputs(args: argparse.Namespace) -> None:
    if args.out:
        _check_output("--out", args.out, {".csv", ".parquet"})
        if args.out.lower().endswith(".parquet"):
            import importlib.util

            if importlib.util.find_spec("pyarrow") is None and importlib.util.find_spec("fastparquet") is None:
                raise _Usage(f"--out {args.out}: writing parquet needs pyarrow (pip install pyarrow); or write a .csv")
    if args.plot:
        _check_output("--plot", args.plot, _plot_types())
        if Path(_pareto_path(args.plot)).is_dir():
            raise _Usage(f"--plot {args.plot}: the trade-off goes beside it, in {_pareto_path(args.plot)}, which is a folder")


def _example_sweeps() -> str:
    """What the example sweeps, for --help (read from the file, so it cannot drift)."""
    import tomllib

    from .grid import example_config, grid_table

    try:
        grid = grid_table(tomllib.loads(example_config().read_text(encoding="utf-8")))
    except (OSError, ValueError):  # pragma: no cover - a broken install
        return "(missing from this install)"
    return f"a reset after idle_secs, else a summary past window - 16000, over the grid {_say_grid(grid)}"


def _grid_size(grid: dict[str, list[Any]]) -> str:
    """How many values each key of a grid sweeps: ``window: 100 values x strategy[0].idle_secs: 50 values``."""
    return " x ".join(f"{k}: {_plural(len(v), 'value')}" for k, v in grid.items())


def _say_grid(grid: dict[str, list[Any]]) -> str:
    """A grid as --grid takes it: ``window=64000,128000 x strategy[0].idle_secs=600,3600``."""
    return " x ".join(f"{k}={','.join(map(str, v))}" for k, v in grid.items())


def _read_config(args: argparse.Namespace, flag: str = "--config") -> tuple[str, str]:
    """The config's name (for messages) and text: --config (``flag``: search's --base), or the shipped example."""
    if args.config is None:
        from .grid import example_config

        path = example_config()
        name = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    else:
        path = Path(args.config)
        name = args.config
        if not path.is_file():
            raise _Usage(f"{flag} {args.config}: no such file")
    try:
        return name, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _Usage(f"{flag} {name}: cannot be read ({getattr(err, 'strerror', None) or err})") from None


def _in_config(path: str, err: Exception) -> _Usage:
    """A ConfigError of the --config file, naming the file."""
    key, message = getattr(err, "key", "config"), getattr(err, "message", str(err))
    return _Usage(f"{path}: {message}" if key == "config" else f"{path}: {key}: {message}")


def _check_sweep(args: argparse.Namespace, name: str, text: str, notes: _Notes) -> tuple[dict[str, list[Any]], list[str]]:
    """Check the config and every config of the grid before reading anything: the grid and the sweep's columns."""
    import tomllib

    import convlab

    from .errors import ConfigError
    from .grid import grid_table

    try:
        config = convlab.load_config(text, agent=args.agent)[args.agent]
    except ConfigError as err:
        raise _in_config(name, err) from None
    doc = tomllib.loads(text)  # valid: load_config read it
    try:
        grid = _grid(args.grid) if args.grid else grid_table(doc)
    except ConfigError as err:
        raise _in_config(name, err) from None
    where = "--grid" if args.grid else f"{name}: convlab.tune.grid"
    size = math.prod(len(v) for v in grid.values()) if grid else 1
    if size > args.max_configs:  # before the configs are made: a grid of millions is refused at once
        raise _Usage(f"{where} makes {size:,} configs ({_grid_size(grid)}), more than --max-configs {args.max_configs:,}: "
                     f"every conversation is replayed under each config, and the ranking lists them all; sweep fewer "
                     f"values, or give --max-configs {size} to run them")
    try:
        columns = list(convlab.tune([], text, grid=grid or None, agent=args.agent, progress=False,  # no conversation:
                                    summary_size=args.summary_size, overhead=args.overhead).columns)  # checks only
    except ConfigError as err:
        raise _Usage(f"{where}: {err}") from None
    if grid and not args.grid:
        notes.say(f"{'no --config: the example ' if args.config is None else ''}{name}, over its grid {_say_grid(grid)}")
    if not grid and config.window is None and not config.strategies:
        notes.say(f"{name} sets no window and no strategy for agent {args.agent!r}: the logs replay as they were")
    return grid, columns


def _check_pricing(args: argparse.Namespace) -> None:
    """--model and --cache-ttl checked before any work: a model genai-prices does not know names close ones."""
    import convlab

    ttl = args.cache_ttl
    if ttl not in ("5m", "1h"):
        try:
            args.cache_ttl = float(ttl)
        except ValueError:
            raise _Usage(f"--cache-ttl {ttl!r}: 5m, 1h or a number of seconds") from None
    try:
        convlab.cache.rule("anthropic", args.cache_ttl)
    except ValueError as err:
        raise _Usage(f"--cache-ttl: {err}") from None
    if args.model is not None:
        try:
            convlab.prices.Prices(args.model, cache_ttl=args.cache_ttl)
        except convlab.PriceError as err:
            raise _Usage(f"--model: {err}") from None


def _with_presets(args: argparse.Namespace, text: str, notes: _Notes) -> list[_Config]:
    """--preset: the config given (--config; none: the presets alone) and the presets named, at its window, or
    --window (``auto``: ``convlab.presets.AUTO``, each log's own agent's, which tune resolves); said on stderr."""
    import convlab

    from .errors import ConfigError

    if args.grid:
        raise _Usage("--preset compares whole configs: leave out --grid (or sweep the grid without --preset)")
    window = convlab.load_config(text, agent=args.agent)[args.agent].window if args.config else None
    if args.window is not None:
        if args.config and window is not None and window != args.window:
            raise _Usage(f"--window {args.window} and --config {args.config} (window = {window}) disagree: give one")
        window = args.window
    presets: list[_Config] = []
    try:
        for name in args.preset.split(","):
            presets += [convlab.presets.AUTO] if name.strip() == "auto" else convlab.presets.presets(name, window=window)
    except ConfigError as err:
        raise _Usage(f"--preset: {err}") from None
    named = [p for p in presets if isinstance(p, convlab.presets.Preset)]
    names = ", ".join([p.name for p in named] + (["auto (each log's own agent's, at the window its log records)"]
                                                   if len(named) < len(presets) else []))
    at = (f"each at {window:,} tokens" if window is not None else
          "each at its peer's own window (" + ", ".join(f"{p.name} {p.config.window:,}" for p in named) + "; --window N sets one)"
          if named else "")
    names = f"{names}, {at}" if at else names
    notes.say(f"{'no --config: the presets alone' if not args.config else f'{args.config} beside the presets'}: {names}")
    return ([text] if args.config else []) + presets


def _left_out(warning: Warning | str) -> bool:
    """A warning about the configs the ranking left out: the ranking's table says it (also under -q)."""
    return bool(getattr(warning, "left_out", None))


def _pareto_path(plot: str) -> str:
    """Where --plot's trade-off goes: beside it, ``<stem>-pareto<suffix>``."""
    p = Path(plot)
    return str(p.with_name(f"{p.stem}-pareto{p.suffix}"))


def _tune(args: argparse.Namespace, out: TextIO, notes: _Notes) -> None:
    import convlab

    summarizer = _summarizer(args)
    _check_pricing(args)
    _check_outputs(args)
    name, text = _read_config(args)
    # --preset with no --config: the presets alone (the example's grid plays no part)
    grid, columns = ({}, []) if args.preset and args.config is None else _check_sweep(args, name, text, notes)
    if args.window is not None and not args.preset:
        raise _Usage(f"--window {args.window} sets the presets' window: give --preset too (a config's own window is "
                     f"its [agent.<id>.context] window, or --grid window=...)")
    configs: str | list[_Config] = _with_presets(args, text, notes) if args.preset else text
    if args.preset:
        grid = {}
    if args.value != "tokens_read" and not (args.plot and len(grid) >= 2):
        raise _Usage(f"--value {args.value}: it chooses what the heatmap shows, which needs --plot and a grid of two keys "
                     f"(this sweep's grid has {_plural(len(grid), 'key')})")
    if args.plot and len(grid) >= 2 and args.value not in columns:
        raise _Usage(f"--value {args.value!r}: not a column of the sweep (columns: {', '.join(columns)})")
    if args.value in _DOLLARS and args.model is None:
        raise _Usage(f"--value {args.value} is in dollars: give --model (e.g. --model claude-sonnet-4-5), or another "
                     f"--value (e.g. tokens_read)")
    convs = _read(args.paths, args, notes)
    size = math.prod(len(v) for v in grid.values()) if grid else len(configs) if isinstance(configs, list) else 1
    if size >= SAY_CONFIGS:  # a long run: what it is, before it starts
        notes.say(f"sweeping {size:,} configs{f' ({_grid_size(grid)})' if grid else ''} over "
                  f"{_plural(len(convs), 'conversation')}: {size * len(convs):,} replays")
    sweep = dict(grid=grid or None, agent=args.agent, progress=None if _progress(args) else False, jobs=args.jobs,
                 summarizer=summarizer, cache=False if args.no_cache else None, summary_size=args.summary_size,
                 overhead=args.overhead)
    if args.dry_run:  # what the summaries would cost, no table
        with notes.watch("tuning"):
            needed = convlab.tune_cost(convs, configs, **sweep)
        out.write(_say_cost(needed, dry_run=True) + "\n")
        return
    with notes.watch("tuning"):
        df = convlab.tune(convs, configs, **sweep, model=args.model, cache_ttl=args.cache_ttl)
    keys = ["preset"] if args.preset else list(grid)
    width = args.width or _terminal_width()
    cost: SummaryCost | None = df.attrs.get("summary_cost") if summarizer is not None else None
    if cost is not None:
        notes.say(_say_cost(cost, dry_run=False))
        if cost.failed:  # at the top of the output, whatever -q says: the rows below rest on it
            out.write("\n".join(textwrap.wrap(_say_failed(cost), width)) + "\n\n")
    with notes.watch("ranking", said_in_output=_left_out):
        ranked = convlab.rank(df, by="usd" if args.model else "tokens", failed=args.failed)
    out.write("\n".join(_ranking_table(ranked, keys, len(convs), width, df)) + "\n")
    if not (df["limits_full"] + df["limits_idle"] + df["limits_overflow"]).any() and len(df):
        lowest = df["threshold"].dropna().min() if df["threshold"].notna().any() else None
        below = f", below every config's threshold (the lowest: {int(lowest):,})" if lowest is not None else ""
        largest = int(df["max_count"].max())
        out.write("\n".join(textwrap.wrap(
            f"no config fired on these logs: every row is the log as it was (the engine's largest count was "
            f"{largest:,} tokens{below}, and no turn waited past an idle_secs); a window below {largest + 16_000:,} "
            f"(--grid window=..., or --window with --preset), or an over_tokens below {largest:,}, would fire", width)) + "\n")
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
    if args.plot:
        _plot(args, df, ranked, grid, convs, configs, out, notes)
    if cost is not None and cost.failed and not cost.calls and not cost.cached:
        raise _Failed(f"every summary call failed ({_plural(cost.failed, 'call')}): no row holds a summary the "
                      f"summarizer wrote; {_say_failed(cost)}")


def _plot(args: argparse.Namespace, df: pd.DataFrame, ranked: pd.DataFrame, grid: dict[str, list[Any]], convs: list[Any],
          configs: str | list[_Config], out: TextIO, notes: _Notes) -> None:
    """--plot: the heatmap (two grid keys) or the count per call, and the trade-off beside it."""
    import convlab

    from . import plots

    keys = list(grid)
    with notes.watch("plotting"):
        if len(keys) >= 2:
            fig = plots.sweep_heatmap(df.assign(rewrites=df["summaries"] + df["resets"]), keys[1], keys[0], args.value,
                                      cost="rewrites")
        else:  # the count per call of the longest conversation, under the config the ranking puts first
            from .ranking import config_label

            longest = max(convs, key=len)
            top = ranked.iloc[0]
            chosen = configs[int(top["config"])] if isinstance(configs, list) else \
                convlab.config_grid(configs, grid, agent=args.agent)[int(top["config"])] if grid else configs
            if isinstance(chosen, convlab.presets.Auto):  # each log's own agent's: the longest log's
                found = convlab.presets.for_log(longest)
                assert found is not None, "tune refuses a log no agent's preset is of"
                chosen = found
            config, worker = (chosen.config, chosen.worker) if isinstance(chosen, convlab.presets.Preset) else (chosen, None)
            fig = plots.count_per_call(convlab.replay(longest, config, agent=args.agent, summary_size=args.summary_size,
                                                      overhead=args.overhead, worker=worker),
                                       title=f"count per call: {longest.id}, {config_label(top, keys)}, ranked first")
        fig.savefig(args.plot, dpi=100)
        pareto = _pareto_path(args.plot)
        plots.sweep_pareto(ranked, title=f"the trade-off over {_plural(len(convs), 'conversation')}").savefig(pareto, dpi=100)
    out.write(f"wrote {args.plot}\nwrote {pareto}\n")


# -- search ------------------------------------------------------------------


def _search(args: argparse.Namespace, out: TextIO, notes: _Notes) -> None:
    """The best config of the space around --base, as TOML on stdout; its value and the feasible trials on stderr."""
    import convlab

    from .errors import ConfigError
    from .search import check, default_space

    _check_pricing(args)
    if args.objective.lstrip("-") in ("usd", "baseline_usd", "usd_saved") and args.model is None:
        raise _Usage(f"--objective {args.objective} is in dollars: give --model (e.g. --model claude-sonnet-4-5), "
                     f"or another objective (e.g. --objective tokens_read)")
    name, text = _read_config(args, "--base")
    try:
        convlab.load_config(text, agent=args.agent)
        space = default_space(text, agent=args.agent)
    except ConfigError as err:
        raise _in_config(name, err) from None
    settings = dict(base=text, objective=args.objective, constraints=args.constraint, model=args.model, agent=args.agent)
    try:
        check(space, **settings)
    except ValueError as err:
        raise _Usage(str(err).removeprefix("search: ")) from None
    convs = _read(args.paths, args, notes)
    with notes.watch("searching"):
        found = convlab.search(convs, space, **settings, trials=args.trials, seed=args.seed, jobs=args.jobs,
                               progress=None if _progress(args) else False, failed=args.failed)
    column = args.objective.lstrip("-")
    scope = f"over {_plural(len(convs), 'conversation')}"
    if found.best is None:
        given = f" ({', '.join(args.constraint)})" if args.constraint else ""
        lines = [f"no config met the constraints{given} in {_plural(len(found.frame), 'trial')}; the closest:"]
        keys = [k for k in space if k != "window"]
        for _, row in found.closest(3).iterrows():
            values = ", ".join(f"{k.rsplit('.', 1)[-1]}={row[k]}" for k in ["window", *keys] if k in row.index)
            lines.append(f"  trial {int(row['trial'])} ({values}): {column} = {_figure(column, row['value'])} {scope}; "
                         f"missed {row['missed']}")
        raise _Failed("\n".join(lines))
    out.write(found.toml())
    notes.say(f"best {column} = {_figure(column, found.best_value)} {scope} ({_SCOPE.get(column, 'the config over every conversation')}; "
              f"trial {found.best_trial}); {found.feasible} of {_plural(len(found.frame), 'trial')} feasible")


# -- tables fitted to the terminal -------------------------------------------


def _terminal_width() -> int:
    import shutil

    return max(40, shutil.get_terminal_size((100, 24)).columns)


def _where(sources: list[Any]) -> list[str]:
    """Each conversation's file, relative to the folder they share (one file: its name); with several
    files, less the ending they all share (``.owi.json``), so a column cut down to its end still tells
    them apart.

    >>> _where(["logs/chatgpt/photosynthesis.owi.json", "logs/openwebui/goldwater.owi.json", None])
    ['chatgpt/photosynthesis', 'openwebui/goldwater', '-']
    """
    from .tables import plain

    paths = [None if plain(s) is None else str(s) for s in sources]
    files = {p.split("!", 1)[0] for p in paths if p}
    if not files:
        return ["-"] * len(paths)
    common = os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in files])
    shown = {f: os.path.relpath(os.path.abspath(f), common) for f in files}
    ending = _shared_ending(list(shown.values())) if len(files) > 1 else ""
    shown = {f: name[:len(name) - len(ending)] for f, name in shown.items()}
    return ["-" if p is None else shown[p.split("!", 1)[0]] + (("!" + p.split("!", 1)[1]) if "!" in p else "") for p in paths]


def _shared_ending(names: list[str]) -> str:
    """The file ending (from a dot, within the last part) every name has and none is only: ``.owi.json``."""
    first, k = names[0], 0
    while k < len(first) and all(len(n) > k and n[-1 - k] == first[-1 - k] for n in names):
        k += 1  # the characters every name ends with
    tail = first[len(first) - k:]
    tail = tail[tail.find("."):] if "." in tail and "/" not in tail and os.sep not in tail else ""
    return tail if all(len(n) > len(tail) and n[-len(tail) - 1] not in "/." for n in names) else ""


def _conversation_names(df: pd.DataFrame) -> list[str]:
    """Each row's conversation as the table names it: its id, or where the id only numbers the conversation in
    its file (``#0``: the file gave none) or another file has it too, the file's name before it."""
    ids = [str(i) for i in df["conversation"]]
    files: dict[str, set[str]] = {}
    for i, source in zip(ids, df["source"], strict=True):
        files.setdefault(i, set()).add(str(source))
    out = []
    for i, source in zip(ids, df["source"], strict=True):
        if i.startswith("#") or len(files[i]) > 1:
            stem = Path(str(source).split("!", 1)[0]).name.split(".", 1)[0]
            out.append(f"{stem}{i}" if i.startswith("#") else f"{stem}:{i}")
        else:
            out.append(i)
    return out


def _percent(v: float) -> str:
    return f"{v:.0%}"


#: Columns in dollars, and shares, as ``_figure`` shows them.
_DOLLARS = ("usd", "baseline_usd", "usd_saved")
_SHARES = ("saved", "saved_usd", "cached_share", "facts_kept", "retained")

#: What a search's objective is over the corpus (``convlab.ranking.totals``), said beside its value.
_SCOPE = {**{c: "the sum of every conversation's, as tune's rows add up" for c in (*_DOLLARS, "tokens_read", "calls", "summaries", "resets", "stale")},
          "saved": "the share of the tokens the logs read, as tune's ranking says",
          "facts_kept": "the mean of the conversations'", "retained": "the mean of the conversations'"}


def _figure(column: str, value: float) -> str:
    """A figure with its unit: dollars, a share, or a number."""
    if value != value:
        return "NaN"
    if column in _DOLLARS:
        return _dollars(value)
    if column in _SHARES:
        return f"{value:.1%}"
    return f"{value:,.6g}"


def _dollars(v: float) -> str:
    if v != v:  # NaN: not priced
        return "-"
    return f"${v:,.2f}" if abs(v) >= 1 or v == 0 else f"${v:.4f}"


def _rows_table(df: pd.DataFrame, keys: list[str], width: int, summarizer: bool) -> list[str]:
    """The sweep's table: one line per (conversation, config), the columns that matter, fitted to ``width``."""
    from .ranking import short_keys
    from .tables import Column, compact, fit_table

    names = short_keys(keys)
    cols = [
        Column("conversation", _conversation_names(df), short="conv", number=False, least=9),
        Column("source", _where(list(df["source"])), number=False, least=9, keep_end=True),
        Column("config", list(df["config"]), short="cfg"),
        *[Column(k, list(df[k]), short=names[k], fmt=str) for k in keys if k != "window"],
        Column("window", list(df["window"]), fmt=str, optional=0 if "window" in keys else 2),
        Column("calls", list(df["calls"]), optional=1),
        Column("tokens_read", list(df["tokens_read"]), short="read", short_fmt=compact),
        Column("saved", list(df["saved"]), fmt=_percent),
        *([Column("usd", list(df["usd"]), fmt=_dollars), Column("cached_share", list(df["cached_share"]), short="cached",
                                                                fmt=_percent, optional=2)] if df["usd"].notna().any() else []),
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
                   df: pd.DataFrame | None = None) -> list[str]:
    """The configs ranked (``convlab.rank``), with what the columns mean, fitted to ``width``; then the
    configs it left out and why (``df``, the tune frame, names them), which no ``--quiet`` hides."""
    import textwrap

    from .ranking import config_label, short_keys
    from .tables import Column, fit_table

    names = short_keys(keys)
    by_usd = ranked.attrs.get("by") == "usd"
    intro = (f"configs ranked over {_plural(conversations, 'conversation')}: saved = tokens read below the same "
             f"conversations replayed with no strategy, each figure summed over them")
    if by_usd:
        intro += ("; ranked by dollars: usd = every call priced (genai-prices) with the prompt cache predicted, "
                  "saved_usd (saved$) = the share of the dollars below the baseline; pareto = no config saves as many "
                  "dollars (saved$) with as few summaries + resets")
    else:
        intro += "; pareto = no config saves as many tokens (saved) with as few summaries + resets"
    cols = [
        Column("rank", list(ranked.index)),
        Column("config", list(ranked["config"]), short="cfg"),
        *[Column(k, list(ranked[k]), short=names[k], fmt=str) for k in keys if k != "window"],
        Column("window", list(ranked["window"]), fmt=str, optional=0 if "window" in keys else 2),
        Column("saved", list(ranked["saved"]), fmt=_percent),
        *([Column("usd", list(ranked["usd"]), fmt=_dollars), Column("saved_usd", list(ranked["saved_usd"]), short="saved$",
                                                                    fmt=_percent)] if by_usd else []),
        Column("summaries", list(ranked["summaries"]), short="summ"),
        Column("resets", list(ranked["resets"])),
        Column("stale", list(ranked["stale"])),
        Column("limits", list(ranked["limits"])),
        Column("calls", list(ranked["calls"]), optional=1),
        *([Column("failed_turns", list(ranked["failed_turns"]), short="failed")] if ranked["failed_turns"].any() else []),
        *([Column("lost_calls", list(ranked["lost_calls"]), short="lost")] if ranked["lost_calls"].any() else []),
        Column("pareto", ["yes" if p else "" for p in ranked["pareto"]], number=False),
    ]
    lines = textwrap.wrap(intro, width) + (fit_table(cols, width) if len(ranked) else ["(no config to rank)"])
    left_out: dict[int, str] = ranked.attrs.get("left_out") or {}
    if left_out:
        rows = {} if df is None else {int(r["config"]): r for _, r in df.drop_duplicates("config").iterrows()}
        lines += textwrap.wrap(f"left out of the ranking: {_plural(len(left_out), 'config')}"
                               + (" (--failed ranks the configs that make turns fail, last)" if not ranked.attrs.get("failed") else ""),
                               width)
        for config, why in sorted(left_out.items()):
            label = config_label(rows[config], keys, names) if config in rows else f"config {config}"
            lines += textwrap.wrap(f"{label}: {why}", width, initial_indent="  ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)
    return lines


# -- main --------------------------------------------------------------------


class _Encoded:
    """A text stream that replaces what its encoding cannot write (a latin-1 terminal and a ●) instead of failing."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "").replace("_", "")
        self.encoding = None if encoding in ("utf8", "utf8sig") else stream.encoding

    def write(self, text: str) -> int:
        if self.encoding is not None:
            text = text.encode(self.encoding, "replace").decode(self.encoding)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


# -- serve -------------------------------------------------------------------


def _serve(args: argparse.Namespace, out: TextIO, notes: _Notes) -> None:
    """Serve the threads of --log-dir over AG-UI until Ctrl-C (warnings, a torn log line say, go to stderr)."""
    try:
        import convlab.agui.server  # the agui extra, checked before any work (_listen serves with it)

        from .agui import serving
    except ImportError as err:
        raise _Usage(f"serve needs the agui extra (pip install 'convlab[agui]'): {err}") from None
    import convlab

    if not serving.is_loopback(args.host) and not args.token:
        raise _Usage(f"--host {args.host} listens beyond this machine: give --token too")
    if args.config is not None and not Path(args.config).is_file():
        raise _Usage(f"--config {args.config}: no such file")
    if Path(args.log_dir).exists() and not Path(args.log_dir).is_dir():
        raise _Usage(f"--log-dir {args.log_dir}: not a folder")
    if args.max_body <= 0:
        raise _Usage(f"--max-body {args.max_body}: a positive number of bytes")
    for origin in args.cors_origin:
        if not re.fullmatch(r"https?://[^/\s]+|null", origin.rstrip("/")):
            raise _Usage(f"--cors-origin {origin}: an origin is scheme://host[:port], e.g. http://localhost:5173")
    for name in args.allowed_host:
        if not re.fullmatch(r"\[?[\w.:-]+\]?", name):
            raise _Usage(f"--allowed-host {name}: a host name or address, e.g. chat.example.com (no scheme, no path)")
    try:
        llm = convlab.provider(args.llm)
        if hasattr(llm, "start"):  # a local model: one that does not load says so now, not at the first run
            llm.start()
    except (ValueError, ImportError, convlab.ProviderError) as err:
        raise _Usage(f"--llm: {err}") from None
    with contextlib.closing(llm) if hasattr(llm, "close") else contextlib.nullcontext():  # LocalChat's server stops with it
        _listen(args, llm, out)


def _listen(args: argparse.Namespace, llm: Provider, out: TextIO) -> None:
    """The AG-UI app on --host/--port until Ctrl-C (``_serve`` imported the agui extra)."""
    from .agui import server, serving

    served = server.app(args.log_dir, config=args.config, llm=llm, worker=args.worker, token=args.token,
                        agent=args.agent, cors_origins=args.cors_origin, allowed_hosts=args.allowed_host,
                        max_body=args.max_body, on_unanswered=args.on_unanswered)
    try:
        sock = serving.listen(args.host, args.port)
    except OSError as err:
        served.close()
        raise _Usage(f"--host {args.host} --port {args.port}: {err.strerror or err}") from None
    host = f"[{args.host}]" if ":" in args.host else args.host
    page = f"http://{host}:{sock.getsockname()[1]}/" + (f"?token={args.token}" if args.token else "")
    out.write(f"convlab serve: {page} (log dir {args.log_dir}, worker {args.worker}, llm {args.llm}); Ctrl-C stops\n")
    out.flush()
    try:
        serving.serve(served, sock)
    finally:
        served.close()


def _joined(argv: list[str]) -> list[str]:
    """``--objective -saved`` as ``--objective=-saved``: a value that maximises starts with ``-``, which
    argparse would take for an option."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if i and argv[i - 1] == "--objective" and a.startswith("-") and len(a) > 1 and a[1] != "-":
            out[-1] = f"--objective={a}"
        else:
            out.append(a)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``convlab``; returns the exit status: 0 when it produced its output, 2 for a mistake in the
    call, a config or the input (one line on stderr), 3 when the work ran but gave no answer (no config
    met a search's constraints; every summary call of a sweep failed), 1 for a fault of convlab itself
    (one line too; ``CONVLAB_DEBUG=1`` shows its traceback).

    >>> main(["tune", "missing.jsonl", "--config", "missing.toml"])
    2
    """
    from .errors import ConfigError, LogError, ReadError

    if isinstance(argv, (str, bytes)):
        raise TypeError(f"main takes a list of arguments, e.g. main(['show', 'log.jsonl']), got {type(argv).__name__}")
    out, err = _Encoded(sys.stdout), _Encoded(sys.stderr)
    try:
        parser = build_parser()
        args, extras = parser.parse_known_args(_joined(sys.argv[1:] if argv is None else list(argv)))
        if extras:
            raise _Usage(_unrecognized(parser, args.command, extras))
        if args.command is None:
            raise _Usage("give a command: show, tune, search or serve (convlab --help)")
        run: Callable[[argparse.Namespace, Any, _Notes], None] = args.run
        run(args, out, _Notes(err, args.quiet, getattr(args, "width", None)))
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except _Usage as e:
        err.write(f"convlab: {e}\n")
        return 2
    except _Failed as e:
        err.write(f"convlab: {e}\n")
        return 3
    except BrokenPipeError:  # pragma: no cover - `convlab show ... | head`: the reader has what it wanted
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ConfigError, ReadError, LogError, OSError) as e:
        err.write(f"convlab: {str(e).strip() or type(e).__name__}".splitlines()[0] + "\n")
        return 2
    except KeyboardInterrupt:
        err.write("convlab: interrupted\n")
        return 130
    except Exception as e:  # a fault of convlab: one line (CONVLAB_DEBUG=1 for the traceback)
        if os.environ.get("CONVLAB_DEBUG"):
            raise
        err.write(f"convlab: internal error, please report it: {type(e).__name__}: {e}".splitlines()[0] + "\n")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
