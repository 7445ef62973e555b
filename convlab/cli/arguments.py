"""What the commands take, checked as argparse reads it, and the checks two commands share
(a config file, the price and the prompt cache's lifetime).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NoReturn

from .notes import Usage


class Parser(argparse.ArgumentParser):
    commands: dict[str, argparse.ArgumentParser]  # the subcommands' parsers (build_parser sets them)

    def error(self, message: str) -> NoReturn:  # one line, exit 2 (not argparse's usage block)
        raise Usage(message)


class Given(argparse.Action):
    """A flag (no value) that keeps which of its names was given, so a message names the one the user typed
    (an earlier name kept beside a new one): the name, or False when not given."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, help=kwargs.get("help"))  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, option_string)


class Named(argparse.Action):
    """An option with a value that keeps which of its names was given (in ``<dest>_given_as``), so a message
    names the one the user typed (an earlier name kept beside a new one)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given_as", option_string)


def given_as(args: argparse.Namespace, dest: str, default: str) -> str:
    """The name an option was given by (``Named``), else ``default``."""
    return getattr(args, f"{dest}_given_as", None) or default


def add_reading_options(cmd: argparse.ArgumentParser) -> None:
    """What every subcommand that reads logs takes."""
    cmd.add_argument("--quiet", "-q", action="store_true", help="do not list warnings and skipped files on stderr")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bars")


def width(text: str) -> int:
    from ..text import MIN_WIDTH

    try:
        width = int(text)
    except ValueError:
        width = None
    if width is None or width < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least {MIN_WIDTH}, got {text!r}")
    return width


def summary_size(text: str) -> int | float:
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


def tokens(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a whole number of tokens (0 or more), got {text!r}")
    return int(text)


def job_count(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return jobs


def read_config(args: argparse.Namespace, flag: str = "--config") -> tuple[str, str]:
    """The config's name (for messages) and text: --config (``flag``: search's --base), or the shipped example."""
    if args.config is None:
        from ..tuning.grid import example_config

        path = example_config()
        name = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    else:
        path = Path(args.config)
        name = args.config
        if not path.is_file():
            raise Usage(f"{flag} {args.config}: no such file")
    try:
        return name, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise Usage(f"{flag} {name}: cannot be read ({getattr(err, 'strerror', None) or err})") from None


def in_config(path: str, err: Exception) -> Usage:
    """A ConfigError of the --config file, naming the file."""
    key, message = getattr(err, "key", "config"), getattr(err, "message", str(err))
    return Usage(f"{path}: {message}" if key == "config" else f"{path}: {key}: {message}")


def check_pricing(args: argparse.Namespace) -> None:
    """--model and --prompt-cache-ttl checked before any work (as ``Options`` checks them): a model genai-prices
    does not know names close ones."""
    from ..errors import PriceError
    from ..replaying.options import Options

    ttl, flag = args.prompt_cache_ttl, given_as(args, "prompt_cache_ttl", "--prompt-cache-ttl")
    if ttl is not None and ttl not in ("5m", "1h"):
        try:
            args.prompt_cache_ttl = float(ttl)
        except ValueError:
            raise Usage(f"{flag} {ttl!r}: 5m, 1h or a number of seconds") from None
    try:
        Options(prompt_cache_ttl=args.prompt_cache_ttl)
    except ValueError as err:
        raise Usage(f"{flag}: {err}") from None
    if args.model is not None:
        try:
            Options(model=args.model, prompt_cache_ttl=args.prompt_cache_ttl)
        except PriceError as err:
            raise Usage(f"--model: {err}") from None
