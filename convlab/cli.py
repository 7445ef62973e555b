"""The ``convlab`` command: look at real logs and sweep context configs over them.

Every error a user can cause (a missing file, a bad config, a bad grid) is one
line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main", "build_parser"]


class _Usage(Exception):
    """A mistake in how the command was called: one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too; keep it short)
        raise _Usage(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convlab`` (for ``--help`` and tests)."""
    p = _Parser(prog="convlab", description="Understand and tune branching LLM conversations.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    show = sub.add_parser("show", help="print a log's conversations as trees (head marked)")
    show.add_argument("file", metavar="FILE")
    show.add_argument("--width", type=int, default=100, help="line width (default 100)")
    show.add_argument("--conversation", metavar="ID", help="only the conversation with this id")
    tune = sub.add_parser("tune", help="replay logs under context configs: one row per (conversation, config)")
    tune.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    tune.add_argument("--config", required=True, metavar="CFG.toml", help="the (base) context config")
    tune.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    tune.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                      help="sweep a key of the context table: window=64000,128000 or strategy[0].idle_secs=600,3600 (repeatable)")
    tune.add_argument("--out", metavar="results.csv|.parquet", help="write the table")
    tune.add_argument("--plot", metavar="out.png", help="write a plot: a heatmap over two grid keys, else the count per call")
    tune.add_argument("--value", default="tokens_read", help="the column the heatmap shows (default tokens_read)")
    tune.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


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


def _read(paths: list[str]) -> list[Any]:
    import convlab

    convs = []
    for path in paths:
        if not Path(path).exists():
            raise _Usage(f"{path}: no such file or folder")
        convs.extend(convlab.read(path))
    if not convs:
        raise _Usage(f"no conversations in {', '.join(paths)}")
    return convs


def _show(args: argparse.Namespace, out) -> None:
    from .text import render_tree

    convs = _read([args.file])
    if args.conversation is not None:
        convs = [c for c in convs if c.id == args.conversation]
        if not convs:
            raise _Usage(f"{args.file}: no conversation {args.conversation!r}")
    for i, c in enumerate(convs):
        if i:
            out.write("\n")
        branch_points = sum(1 for n in c.tree.nodes if c.tree.out_degree(n) > 1)
        summaries = sum(1 for _, a in c.tree.nodes(data=True) if a.get("kind") == "summary")
        title = f" {c.title!r}" if c.title else ""
        out.write(f"conversation {c.id}{title}: {len(c)} messages, {branch_points} branch points, {summaries} summaries, head {c.head}\n")
        out.write(render_tree(c.tree, head=c.head, width=args.width) + "\n")


def _tune(args: argparse.Namespace, out) -> None:
    import pandas as pd

    from .replaying import replay
    from .tuning import tune

    grid = _grid(args.grid)
    config_path = Path(args.config)
    if not config_path.is_file():
        raise _Usage(f"--config {args.config}: no such file")
    config = config_path.read_text(encoding="utf-8")
    if args.out and Path(args.out).suffix not in (".csv", ".parquet"):
        raise _Usage(f"--out {args.out}: write a .csv or a .parquet file")
    convs = _read(args.paths)
    df = tune(convs, config, grid=grid or None, agent=args.agent, progress=False if args.no_progress else None)
    shown = ["conversation", "config", *[k for k in grid if k != "window"], "window", "calls", "limits_full",
             "limits_idle", "summaries", "resets", "overflows", "max_count", "tokens_read"]
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_rows", 200):
        out.write(df[shown].to_string(index=False) + "\n")
    if args.out:
        if args.out.endswith(".parquet"):
            df.to_parquet(args.out, index=False)
        else:
            df.to_csv(args.out, index=False)
        out.write(f"wrote {args.out}\n")
    if args.plot:
        from . import plots

        keys = list(grid)
        if len(keys) >= 2:
            fig = plots.sweep_heatmap(df, keys[1], keys[0], args.value)
        else:
            longest = max(convs, key=len)
            fig = plots.count_per_call(replay(longest, config, agent=args.agent), title=f"count per call: {longest.id}")
        fig.savefig(args.plot, dpi=100)
        out.write(f"wrote {args.plot}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``convlab``; returns the exit status (0, or 2 for a usage or input error).

    >>> main(["tune", "missing.jsonl", "--config", "missing.toml"])
    2
    """
    from .errors import ConfigError, ReadError

    out, err = sys.stdout, sys.stderr
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise _Usage("give a command: show or tune (convlab --help)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an importer's repairs are not the command's business
            if args.command == "show":
                _show(args, out)
            else:
                _tune(args, out)
    except _Usage as e:
        err.write(f"convlab: {e}\n")
        return 2
    except (ConfigError, ReadError, OSError, ValueError, KeyError) as e:
        err.write(f"convlab: {str(e).strip() or type(e).__name__}".splitlines()[0] + "\n")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
