"""The session log: append-only JSONL, one event a line, written as it happens.

Loading is one pass over the lines. A last line that does not parse is what a
crash while writing leaves: it is dropped with a ``LogWarning`` (and cut off
the file before anything more is appended, so the log stays valid). A bad line
before the last is damage, not a crash: ``LogError`` names its line.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterator

from .errors import LogError, LogWarning

__all__ = ["LogWriter", "read_events"]


class LogWriter:
    """Appends events to a JSONL file, flushing each line."""

    def __init__(self, path: str | os.PathLike, *, new: bool = True):
        self.path = Path(path)
        if new and self.path.exists() and self.path.stat().st_size > 0:
            raise LogError(f"{self.path} is not empty: Session.load({str(self.path)!r}) continues a log")
        try:
            self._file = open(self.path, "a", encoding="utf-8")
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


def read_events(path: str | os.PathLike, *, repair: bool = False) -> Iterator[dict[str, Any]]:
    """The events of a log, in order. With ``repair`` a torn last line is cut off the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise LogError(f"cannot read the session log {path}: {err.strerror or err}") from err
    lines = data.split(b"\n")
    # a complete log ends with a newline, leaving one empty piece at the end
    last_index = len(lines) - 1
    while last_index >= 0 and not lines[last_index].strip():
        last_index -= 1
    good_end = 0
    offset = 0
    for i, raw in enumerate(lines):
        end = offset + len(raw) + 1
        if raw.strip():
            try:
                event = json.loads(raw)
                if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                    raise ValueError("not an event object with a type")
            except ValueError as err:
                if i == last_index:
                    warnings.warn(
                        f"{path}: line {i + 1} is torn (a crash while writing?) and was dropped",
                        LogWarning,
                        stacklevel=3,
                    )
                    if repair:
                        with open(path, "r+b") as f:
                            f.truncate(good_end)
                    return
                raise LogError(f"{path}: line {i + 1} is not a valid event: {err}", line=i + 1) from None
            good_end = min(end, len(data))
            yield event
        offset = end
