"""Read real chat logs into Conversations: ``convlab.read(path)``.

Formats are told apart by what the file holds, never by its name: a ChatGPT
export renamed ``*.owi.json`` is still read as ChatGPT. The bytes may be
gzipped or a zip archive (the ChatGPT export .zip); the text may be one JSON
document or JSON lines. A folder is walked recursively.

Damage is kept local. A JSON array cut short keeps its complete items; a bad
JSON line is left out; dangling parents, loops and missing current nodes are
repaired by the importer. Each repair is a ``ReadWarning`` naming the file,
the conversation and the node. What cannot be read at all (not JSON, a shape
no importer knows, a single document cut short) is a ``ReadError`` naming the
file; in a folder that error becomes a warning and the walk goes on, and files
that are not chat logs at all (no JSON, or JSON of no known shape) are passed
over quietly.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import warnings
import zipfile
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable

from ..conversation import Conversation
from ..errors import ReadError, ReadWarning
from . import chatgpt, claude_ai, claude_code, librechat, oasst, openai, openwebui, session_log
from ._common import read_error

__all__ = ["read", "detect", "FORMATS"]

#: Importers in the order detection tries them (most specific shape first).
_IMPORTERS: tuple[ModuleType, ...] = (session_log, claude_code, chatgpt, claude_ai, openwebui, librechat, oasst, openai)

#: The format names ``read`` can return (``Conversation.format``) and accepts as ``format=``.
FORMATS: tuple[str, ...] = tuple(m.NAME for m in _IMPORTERS)

#: From this many conversations (or rows) in one file, reading it shows a progress bar.
PROGRESS_FROM = 50


class _Unknown(Exception):
    """Parsed, but no importer knows the shape (in a folder: not a chat log, passed over)."""


class _Doc:
    """One parsed file (or archive member): JSON ``value``, or the records of its JSON ``lines``."""

    def __init__(self, value: Any, lines: bool, source: str, raw: bytes, problem: str | None = None) -> None:
        self.value = value
        self.lines = lines
        self.source = source
        self.raw = raw
        self.problem = problem  # bad JSON lines, left out (warned unless the importer reads the raw bytes)


def detect(value: Any, lines: bool = False) -> str | None:
    """The format of a parsed document, or ``None``.

    ``value`` is a JSON value, or (``lines=True``) the list of a JSONL file's records.

    >>> detect([{"role": "user", "content": "hi"}])
    'openai'
    >>> detect({"title": "t", "mapping": {}, "current_node": None})
    'chatgpt'
    >>> detect([{"type": "session.started", "agent": "bot"}], lines=True)
    'convlab'
    """
    if lines:
        for module in (session_log, claude_code):
            if module.detect(value):
                return module.NAME
    elif isinstance(value, dict) and (session_log.detect(value) or claude_code.detect([value])):
        return session_log.NAME if session_log.detect(value) else claude_code.NAME
    for module in (chatgpt, claude_ai, openwebui, librechat, oasst, openai):
        if module.detect(value):
            return module.NAME
    return None


# -- bytes -> documents ------------------------------------------------------


def _gunzip(raw: bytes, source: str) -> bytes:
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error):
        # cut short: keep what decompresses
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = d.decompress(raw)
        except zlib.error as err:
            raise read_error(source, f"not a readable gzip file ({err})") from None
        if not data:
            raise read_error(source, "gzip file cut short before any data")
        warnings.warn(f"{source}: gzip data cut short; read the {len(data)} bytes before the cut", ReadWarning, stacklevel=5)
        return data


def _json_array_prefix(text: str, source: str, err: json.JSONDecodeError) -> list[Any]:
    """The complete items of a JSON array that was cut short (or broken) after them."""
    dec = json.JSONDecoder()
    i = text.index("[") + 1
    items: list[Any] = []
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            break
        try:
            item, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        items.append(item)
    if not items:
        raise read_error(source, f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno} (cut short?)")
    warnings.warn(
        f"{source}: JSON breaks at line {err.lineno} column {err.colno} ({err.msg}; cut short?); "
        f"kept the {len(items)} complete item(s) before it",
        ReadWarning,
        stacklevel=5,
    )
    return items


def _json_lines(text: str, source: str) -> tuple[list[Any], str | None]:
    records: list[Any] = []
    bad: list[int] = []
    lines = text.splitlines()
    last = max((k for k, line in enumerate(lines) if line.strip()), default=-1)
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad.append(k + 1)
    if not records:
        raise read_error(source, "no line is valid JSON")
    problem = None
    if bad:
        torn = bad == [last + 1]
        what = f"the last line ({last + 1}) is cut short" if torn else "lines " + ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "") + " are not valid JSON"
        problem = f"{source}: {what}; left out"
    return records, problem


def _parse(raw: bytes, source: str) -> _Doc:
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, source)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise read_error(source, f"not UTF-8 text (byte {err.start})") from None
    stripped = text.strip()
    if not stripped:
        raise read_error(source, "the file is empty")
    if stripped[0] not in "[{":
        raise _Unknown(f"{source}: not a JSON object, array or JSON lines")
    try:
        return _Doc(json.loads(stripped), False, source, raw)
    except json.JSONDecodeError as err:
        first_line = stripped.split("\n", 1)[0]
        try:
            jsonl = "\n" in stripped and isinstance(json.loads(first_line), dict)
        except json.JSONDecodeError:
            jsonl = False
        if jsonl:
            records, problem = _json_lines(stripped, source)
            return _Doc(records, True, source, raw, problem)
        if stripped[0] == "[":
            return _Doc(_json_array_prefix(stripped, source, err), False, source, raw)
        raise read_error(source, f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno} (cut short?)") from None


def _iterator(progress: bool, desc: str) -> Callable[[list[Any]], Iterable[Any]]:
    def iterate(items: list[Any]) -> Iterable[Any]:
        if not progress or len(items) < PROGRESS_FROM:
            return items
        from tqdm.auto import tqdm

        return tqdm(items, desc=desc, unit="item", leave=False)

    return iterate


def _convert(doc: _Doc, progress: bool, format: str | None) -> list[Conversation]:
    value = doc.value
    if not doc.lines and isinstance(value, list) and not value:
        return []
    try:
        name = format or detect(value, doc.lines)
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # pragma: no cover - a gap in a detector
        raise read_error(doc.source, f"its shape could not be told ({type(err).__name__}: {err})") from None
    if name is None:
        raise _Unknown(f"{doc.source}: no importer knows this shape")
    module = {m.NAME: m for m in _IMPORTERS}[name]
    if module is session_log:  # Session.load reads the bytes and names its own torn lines
        return session_log.parse_bytes(doc.raw, doc.source)
    if doc.problem:
        warnings.warn(doc.problem, ReadWarning, stacklevel=4)
    if module is claude_code and not isinstance(value, list):  # a one-line transcript
        value = [value]
    try:
        return module.parse(value, doc.source, _iterator(progress, os.path.basename(doc.source)))
    except ReadError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as err:  # pragma: no cover - a gap in an importer
        raise read_error(doc.source, f"could not be read as {name}: {type(err).__name__}: {err}") from None


def _read_bytes(raw: bytes, source: str, progress: bool, format: str | None, quiet_unknown: bool) -> list[Conversation]:
    if raw[:4] == b"PK\x03\x04":
        return _read_zip(raw, source, progress, format)
    try:
        return _convert(_parse(raw, source), progress, format)
    except _Unknown as err:
        if quiet_unknown:
            return []
        raise ReadError(f"{err}: not a chat log convlab can read (formats: {', '.join(FORMATS)})") from None


def _read_zip(raw: bytes, source: str, progress: bool, format: str | None) -> list[Conversation]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        names = sorted(i.filename for i in archive.infolist() if not i.is_dir())
    except (zipfile.BadZipFile, OSError) as err:
        raise read_error(source, f"not a readable zip archive ({err})") from None
    out: list[Conversation] = []
    found = False
    for name in names:
        if name.startswith("__MACOSX/") or os.path.basename(name).startswith("."):
            continue
        member = f"{source}!{name}"
        try:
            data = archive.read(name)
        except (zipfile.BadZipFile, OSError, zlib.error, EOFError) as err:
            warnings.warn(f"{member}: cannot be unpacked ({err}); passed over", ReadWarning, stacklevel=4)
            continue
        try:
            convs = _read_bytes(data, member, progress, format, quiet_unknown=True)
        except ReadError as err:
            warnings.warn(f"{err}; passed over", ReadWarning, stacklevel=4)
            continue
        found = found or bool(convs) or name.endswith("conversations.json")
        out.extend(convs)
    if not found:
        raise read_error(source, "the archive holds no chat log convlab can read")
    return out


def read(path: str | os.PathLike, *, progress: bool = True, format: str | None = None) -> list[Conversation]:
    """Read the conversations of a chat log file, archive or folder.

    The format is detected from the content: ChatGPT export (``conversations.json``
    or its .zip), Claude Code transcript (``.jsonl``, ``.jsonl.gz``), Claude.ai
    export, Open WebUI, LibreChat, OpenAssistant trees, plain OpenAI message
    lists (JSON or JSONL) and convlab's own session log. ``format`` (one of
    ``FORMATS``) skips detection. A folder is read recursively, every file
    it recognises. ``progress`` shows a tqdm bar over the files of a folder and
    over the conversations of a large export.

    Damaged input: what is sound is kept and a ``convlab.ReadWarning`` names
    what was repaired; what cannot be read raises ``convlab.ReadError`` naming
    the file (and the conversation and node when it is about one).

    >>> import json, tempfile, pathlib, convlab
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = pathlib.Path(tmp) / "chat.json"
    ...     _ = p.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    ...     [c] = convlab.read(p)
    >>> c.format, c.head, [m["content"] for m in c.path()]
    ('openai', 'm2', ['hi', 'hello'])
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    p = Path(path)
    if p.is_dir():
        return _read_folder(p, progress, format)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ReadError(f"{p}: no such file or folder") from None
    except OSError as err:
        raise ReadError(f"{p}: cannot be read ({err.strerror or err})") from None
    return _read_bytes(raw, str(p), progress, format, quiet_unknown=False)


def _read_folder(folder: Path, progress: bool, format: str | None) -> list[Conversation]:
    files = sorted(
        f for f in folder.rglob("*")
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
    if progress and files:
        from tqdm.auto import tqdm

        iterable: Iterable[Path] = tqdm(files, desc=f"reading {folder.name or folder}", unit="file")
    else:
        iterable = files
    out: list[Conversation] = []
    for f in iterable:
        try:
            raw = f.read_bytes()
        except OSError as err:
            warnings.warn(f"{f}: cannot be read ({err.strerror or err}); passed over", ReadWarning, stacklevel=3)
            continue
        try:
            out.extend(_read_bytes(raw, str(f), False, format, quiet_unknown=True))
        except ReadError as err:
            warnings.warn(f"{err}; passed over", ReadWarning, stacklevel=3)
    return out
