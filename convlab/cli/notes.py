"""What goes to stderr beside a command's output, the two ways a command stops, and reading the logs.

A mistake in how the command was called, in a config or in the input is a ``Usage`` (one line, exit 2);
work that ran but found no answer is ``Failed`` (exit 3). ``Notes`` groups what reading and tuning warned
about, with counts; ``read_logs`` reads the paths given, saying what it skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import textwrap
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO


class Usage(Exception):
    """A mistake in how the command was called, or in its config or input: one line, exit 2."""


class Failed(Exception):
    """The work ran, but its answer is no answer (no config met the constraints; every summary call
    failed; every config swept makes turns fail): what it found on stderr, exit 3."""


def _ours(category: type) -> bool:
    from ..errors import LogWarning, ReadWarning

    return issubclass(category, (ReadWarning, LogWarning)) or category.__module__.split(".")[0] == "convlab"


class Notes:
    """The command's stderr beside its output: warnings grouped with counts, and the files skipped."""

    def __init__(self, err: TextIO | Encoded, quiet: bool, width: int | None = None) -> None:
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
            self.say(f"skipped {plural(len(skipped), 'file')} that could not be read:")
            self._list(skipped)
        unread = [str(f) for f in quiet_skips if not any(p == str(f) or p.startswith(f"{f}!") for p in left_out)]
        if unread:
            self.say(f"passed over {plural(len(unread), 'file')} with no chat log convlab reads:")
            self._list(unread)
        for name, counts in groups.items():
            self.say(f"{plural(sum(counts.values()), name)} while {stage}:")
            self._list(f"{text} ({n} times)" if n > 1 else text for text, n in counts.items())

    def _list(self, lines: Iterable[str]) -> None:
        """One item a paragraph, wrapped to the width (a long path or id is kept whole)."""
        if not self.quiet:
            for line in lines:
                self.err.write(self._fit(line, "  ", "    ") + "\n")


def plural(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _files(folder: Path) -> list[Path]:
    """The files ``convlab.read`` walks in a folder (hidden ones left out, as it does)."""
    return sorted(f for f in folder.rglob("*") if f.is_file() and not any(p.startswith(".") for p in f.relative_to(folder).parts))


def progress(args: argparse.Namespace) -> bool:
    """Progress bars only into a terminal, and never with --no-progress."""
    isatty = getattr(sys.stderr, "isatty", None)
    return not args.no_progress and bool(isatty and isatty())


def read_logs(paths: Sequence[str], args: argparse.Namespace, notes: Notes) -> list[Any]:
    from ..importers import read

    for path in paths:
        if not Path(path).exists():
            raise Usage(f"{path}: no such file or folder")
    convs: list[Any] = []
    with notes.watch("reading") as quiet_skips:
        for path in paths:
            got = read(path, progress=progress(args))
            convs.extend(got)
            if Path(path).is_dir():
                sources = {str(c.source).split("!", 1)[0] for c in got}
                quiet_skips.extend(f for f in _files(Path(path)) if str(f) not in sources)
        if not convs:
            raise Usage(f"no conversations in {', '.join(paths)}")
    return convs


class Encoded:
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

    def isatty(self) -> bool:
        """The stream's own answer: the notes wrap to a terminal's width, and stay one line an item into a pipe."""
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty()) if callable(isatty) else False
