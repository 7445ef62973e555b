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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

from .errors import LogError, LogWarning
from .tree import Tree, usage_problem

__all__ = ["LogWriter", "read_lines", "parse_event", "checked_event", "event_at", "read_tree", "TREE_EVENTS", "apply_tree_event"]


#: How a log's bytes reach its file: ``os.write`` (a test makes it fail to play a full disk).
write_fd = os.write


class LogWriter:
    """Appends events to a JSONL file, one line each, written and flushed to the
    file system before ``write`` returns. ``new=False`` continues a log: a last
    line with no newline (written by hand, cut by a copy) gets one first, so
    the next event starts a line of its own.

    A write that fails (a full disk, EIO, a read-only file, an event JSON
    cannot carry) raises ``LogError`` and leaves the file as it was: a partly
    written line is cut off at once, or before the next write if cutting
    failed too. ``size`` is the log's length in bytes after the last whole
    line; ``cut(size)`` takes the log back to an earlier one.
    """

    def __init__(self, path: str | os.PathLike, *, new: bool = True):
        self.path = Path(path)
        if new and self.path.exists() and self.path.stat().st_size > 0:
            raise LogError(f"{self.path} is not empty: Session.load({str(self.path)!r}) continues a log")
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as err:
            raise LogError(f"cannot write the session log {self.path}: {err.strerror or err}") from err
        self.size = os.fstat(self._fd).st_size
        if not new and self.size > 0:
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                last = f.read(1)
            if last != b"\n":
                self._append(b"\n")

    def write(self, event: dict[str, Any]) -> None:
        """Append one event as a line; ``LogError`` (and the file as it was) when it cannot be."""
        try:
            line = json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8") + b"\n"
        except (ValueError, TypeError, RecursionError) as err:  # checked at the edge; a bug if it happens
            raise LogError(f"cannot write the session log {self.path}: the {event.get('type')} event is not JSON data ({err})") from None
        self._append(line)

    def _append(self, data: bytes) -> None:
        try:
            if os.fstat(self._fd).st_size != self.size:  # a torn line an earlier failure could not cut
                os.ftruncate(self._fd, self.size)
            view = memoryview(data)
            while view:
                written = write_fd(self._fd, view)
                view = view[written:]
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.size)
            raise LogError(f"cannot write the session log {self.path}: {err.strerror or err}") from None
        self.size += len(data)

    def cut(self, size: int) -> None:
        """Take the log back to its first ``size`` bytes (what an undone entry point wrote goes)."""
        if size == self.size and os.fstat(self._fd).st_size == size:
            return
        try:
            os.ftruncate(self._fd, size)
        except OSError as err:
            raise LogError(f"cannot cut the session log {self.path} back: {err.strerror or err}") from None
        self.size = size

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()


def read_lines(source: str | os.PathLike | BinaryIO, *, repair: bool = False) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, raw line)`` of each non-blank line, streamed.

    ``source`` is a path or a binary file object. The last line is checked
    before it is given out: if it does not parse it is dropped with a
    ``LogWarning`` (and, with ``repair``, cut off the file at ``source``, a
    path). Earlier lines are given out raw; the caller parses them.
    """
    f: contextlib.AbstractContextManager[IO[bytes]]
    path: Path | None = None
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = str(path)
        try:
            f = open(path, "rb")
        except OSError as err:
            raise LogError(f"cannot read the session log {name}: {err.strerror or err}") from err
    else:
        if repair:
            raise ValueError("read_lines(repair=True) cuts a torn line off the file: it needs the log's path")
        name, f = getattr(source, "name", "the log"), contextlib.nullcontext(source)
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
        if path is not None and repair:
            with open(path, "r+b") as torn:
                torn.truncate(start)
        return
    yield held


def parse_event(raw: bytes) -> dict[str, Any]:
    try:
        event = json.loads(raw)
    except RecursionError:  # a line is untrusted: nested past what json's reader follows is no event (a ValueError)
        raise ValueError("nested deeper than Python's JSON reader follows") from None
    return checked_event(event)


def checked_event(event: object) -> dict[str, Any]:
    """``event`` when it is an event (an object with a type), else a ``ValueError``: what a log's line, or an event
    given in memory (``Session.from_events``), must be."""
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


#: The events that change a log's tree (the rest are turns, decisions and calls). ``label.set`` and
#: ``label.removed`` are convlab's own (docs/wire.md): marks a person puts on messages, never read by a model.
TREE_EVENTS = ("message.new", "head.moved", "state.changed", "label.set", "label.removed")


def apply_tree_event(tree: Tree, ev: Mapping[str, Any]) -> None:
    """Change ``tree`` by one tree event (``TREE_EVENTS``): the one place that says what each
    does, for a live session's reducer and for ``read_tree`` alike. ``message.new`` records
    the message under its parent and moves the head to it; ``head.moved`` moves the head;
    ``state.changed`` sets a node's worker state; ``label.set`` puts a label on a node and
    ``label.removed`` takes it off (``Tree.set_label``). An event that does not fit the tree raises
    what the tree raises (``KeyError``, ``ValueError``, ...); any other event, a ``ValueError``.

    >>> t = Tree()
    >>> apply_tree_event(t, {"type": "message.new", "message": {"id": "u1", "parent": None, "role": "user", "content": "hi"}})
    >>> apply_tree_event(t, {"type": "state.changed", "node": "u1", "state": {"k": 1}})
    >>> t.head, t.state_at()
    ('u1', {'k': 1})
    """
    t = ev["type"]
    if t == "message.new":
        msg = ev["message"]
        tree.add(msg, msg["parent"])
        tree.head = msg["id"]
    elif t == "head.moved":
        tree.head = ev["to"]
    elif t == "state.changed":
        tree.set_state(ev["node"], ev["state"])
    elif t == "label.set":
        if not isinstance(ev["label"], str):
            raise ValueError(f"a label is text, not {type(ev['label']).__name__}")
        tree.set_label(ev["node"], ev["label"])
    elif t == "label.removed":
        tree.set_label(ev["node"], None)
    else:
        raise ValueError(f"{t!r} is not a tree event (one of {', '.join(TREE_EVENTS)})")


def read_tree(source: str | os.PathLike | BinaryIO) -> tuple[Tree, str | None]:
    """The message tree a session log records, and its agent: what an importer needs of a log,
    read without a Session (the tree's events, in order; a torn last line dropped with a
    ``LogWarning``; a line that is not an event, or does not fit the tree, a ``LogError``
    naming it). The same tree as ``Session.load(source).tree``, but for a usage no provider could
    report (``tree.usage_problem``): left out of its message, with a ``LogWarning`` naming the line,
    the message and the field, as the importers leave it out of any log.

    >>> import io, json
    >>> lines = [{"type": "session.started", "agent": "bot"},
    ...          {"type": "message.new", "message": {"id": "u1", "parent": None, "role": "user", "content": "hi", "seq": 1}}]
    >>> tree, agent = read_tree(io.BytesIO("".join(json.dumps(e) + "\\n" for e in lines).encode()))
    >>> tree.head, agent, tree.node("u1")["content"]
    ('u1', 'bot', 'hi')
    """
    name = getattr(source, "name", "the log") if hasattr(source, "read") else os.fspath(source)
    tree, agent, seen_start = Tree(), None, False
    for k, item in enumerate(read_lines(source)):
        ev = event_at(name, item)
        t = ev["type"]
        if k == 0:
            if t != "session.started":
                raise LogError(f"{name}: line {item[0]} is {t!r}, not session.started", line=item[0])
            agent, seen_start = ev.get("agent"), True
        if t not in TREE_EVENTS:
            continue
        if t == "message.new":
            ev = _sound_usage(ev, name, item[0])
        try:
            apply_tree_event(tree, ev)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise LogError(f"{name}: line {item[0]}: the {t} event does not fit the tree ({err!r})", line=item[0]) from None
    if not seen_start:
        raise LogError(f"{name}: the log is empty", line=1)
    return tree, agent


def _sound_usage(ev: dict[str, Any], name: str, line: int) -> dict[str, Any]:
    """A ``message.new`` whose message reports a usage no provider could (``tree.usage_problem``) without it, with a
    ``LogWarning`` naming the file, the line, the message and the field: the message counts as having no usage,
    as an importer reads such a usage in any other log."""
    msg = ev.get("message")
    usage = msg.get("usage") if isinstance(msg, dict) else None
    why = None if usage is None else usage_problem(usage)
    if why is None:
        return ev
    assert isinstance(msg, dict), "a usage was read from the message"
    warnings.warn(f"{name}: line {line}: message {msg.get('id')!r}: {why}; its usage left out (the message counts as "
                  "having none)", LogWarning, stacklevel=3)
    return {**ev, "message": {**msg, "usage": None}}
