"""The parser (each command's module adds its own) and ``main``: the exit statuses, and never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import export, search, serve, show, tune
from .arguments import Parser
from .notes import Encoded, Failed, Notes, Usage

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convlab`` (for ``--help`` and tests).

    >>> build_parser().parse_args(["show", "log.jsonl", "--path", "--width", "72"]).width
    72
    """
    p = Parser(prog="convlab", description="Understand and tune branching LLM conversations.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in (show, tune, search, serve, export):
        command.add(sub)
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
    met a search's constraints; every summary call of a sweep failed; every config of a sweep makes turns
    fail), 1 for a fault of convlab itself
    (one line too; ``CONVLAB_DEBUG=1`` shows its traceback).

    >>> main(["tune", "missing.jsonl", "--config", "missing.toml"])
    2
    """
    from ..errors import ConfigError, LogError, ReadError

    if isinstance(argv, (str, bytes)):
        raise TypeError(f"main takes a list of arguments, e.g. main(['show', 'log.jsonl']), got {type(argv).__name__}")
    out, err = Encoded(sys.stdout), Encoded(sys.stderr)
    try:
        parser = build_parser()
        args, extras = parser.parse_known_args(_joined(sys.argv[1:] if argv is None else list(argv)))
        if extras:
            raise Usage(_unrecognized(parser, args.command, extras))
        if args.command is None:
            raise Usage("give a command: show, tune, search, serve or export (convlab --help)")
        run: Callable[[argparse.Namespace, Any, Notes], None] = args.run
        run(args, out, Notes(err, args.quiet, getattr(args, "width", None)))
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except Usage as e:
        err.write(f"convlab: {e}\n")
        return 2
    except Failed as e:
        err.write(f"convlab: {e}\n")
        return 3
    except BrokenPipeError:  # pragma: no cover - `convlab show ... | head`: the reader has what it wanted
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ConfigError, ReadError, LogError, OSError) as e:
        err.write(f"convlab: {str(e).strip() or type(e).__name__}".splitlines()[0] + "\n")
        return 2
    except KeyboardInterrupt as e:  # a sweep's says what it kept (convlab.tuning.results.Stopped)
        err.write(f"convlab: {str(e).strip() or 'interrupted'}\n")
        return 130
    except Exception as e:  # a fault of convlab: one line (CONVLAB_DEBUG=1 for the traceback)
        if os.environ.get("CONVLAB_DEBUG"):
            raise
        err.write(f"convlab: internal error, please report it: {type(e).__name__}: {e}".splitlines()[0] + "\n")
        return 1
    return 0
