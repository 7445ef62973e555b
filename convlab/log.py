"""The session log: append-only JSONL, one event a line, written as it happens.

Loading is one pass over the lines. A last line that does not parse is what a
crash while writing leaves: it is dropped with a ``LogWarning`` (and cut off
the file before anything more is appended, so the log stays valid). A bad line
before the last is damage, not a crash: ``LogError`` names its line.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from .errors import LogError, LogWarning

__all__ = ["LogWriter", "read_lines", "parse_event", "event_at"]


class LogWriter:
    """Appends events to a JSONL file, flushing each line. ``new=False`` continues
    a log: a last line with no newline (written by hand, cut by a copy) gets one
    first, so the next event starts a line of its own."""

    def __init__(self, path: str | os.PathLike, *, new: bool = True):
        self.path = Path(path)
        if new and self.path.exists() and self.path.stat().st_size > 0:
            raise LogError(f"{self.path} is not empty: Session.load({str(self.path)!r}) continues a log")
        try:
            self._file = open(self.path, "a", encoding="utf-8")
            if not new and self._file.tell() > 0:
                with open(self.path, "rb") as f:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        self._file.write("\n")
                        self._file.flush()
        except OSError as err:
            raise LogError(f"cannot write the session log {self.path}: {err.strerror or err}") from err

    def write(self, event: dict[str, Any]) -> None:
        self._file.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self._file.close()
        except Exception:
            pass


def read_lines(source: str | os.PathLike | BinaryIO, *, repair: bool = False) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, raw line)`` of each non-blank line, streamed.

    ``source`` is a path or a binary file object. The last line is checked
    before it is given out: if it does not parse it is dropped with a
    ``LogWarning`` (and, with ``repair``, cut off the file at ``source``, a
    path). Earlier lines are given out raw; the caller parses them.
    """
    if hasattr(source, "read"):
        name, f = getattr(source, "name", "the log"), contextlib.nullcontext(source)
    else:
        name = Path(source)
        try:
            f = open(name, "rb")
        except OSError as err:
            raise LogError(f"cannot read the session log {name}: {err.strerror or err}") from err
    held: tuple[int, int, bytes] | None = None
    offset = 0
    with f as lines:
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                if held is not None:
                    yield held
                held = (number, offset, raw)
            offset += len(raw)
    if held is None:
        return
    number, start, raw = held
    try:
        parse_event(raw)
    except ValueError:
        warnings.warn(f"{name}: line {number} is torn (a crash while writing?) and was dropped", LogWarning, stacklevel=3)
        if repair:
            with open(source, "r+b") as f:
                f.truncate(start)
        return
    yield held


def parse_event(raw: bytes) -> dict[str, Any]:
    event = json.loads(raw)
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise ValueError("not an event object with a type")
    return event


def event_at(name: str, item: tuple[int, int, bytes]) -> dict[str, Any]:
    """The event of one ``read_lines`` item; a line that is not one raises ``LogError`` naming it.

    >>> event_at("s.jsonl", (3, 0, b'{"type": "session.started"}'))
    {'type': 'session.started'}
    >>> event_at("s.jsonl", (4, 0, b'[1, 2]'))
    Traceback (most recent call last):
    ...
    convlab.errors.LogError: s.jsonl: line 4 is not a valid event: not an event object with a type
    """
    number, _offset, raw = item
    try:
        return parse_event(raw)
    except ValueError as err:
        raise LogError(f"{name}: line {number} is not a valid event: {err}", line=number) from None
