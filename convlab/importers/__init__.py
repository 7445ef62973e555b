"""Read real chat logs into Conversations: ``convlab.read(path)``.

Formats are told apart by what the file holds, never by its name: a ChatGPT
export renamed ``*.owi.json`` is still read as ChatGPT. The bytes may be
gzipped or a zip archive (the ChatGPT export .zip); the text may be one JSON
document or JSON lines. A folder is walked recursively. A JSON array (a
ChatGPT export of thousands of conversations) is read item by item and each
conversation built as it comes, so the whole text is never in memory
(``documents``).

Every format is a module with ``NAME``, ``detect(doc)`` and ``parse(doc)``,
building its conversations through one builder (``records``, which says how
to add a format); ``_IMPORTERS`` lists them in the order detection tries
them. ``format=`` names one and skips detection; a file it does not fit is a
``ReadError`` that says what the file reads as.

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

import io
import os
import warnings
import zipfile
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

from ..conversation import Conversation
from ..errors import ReadError
from . import agui, chatgpt, claude_ai, claude_code, librechat, oasst, openai, openwebui, session_log
from .records import read_error, warn
from .documents import Document, NotJSON, Restart, bar, gunzip, parse_bytes, stream_array

__all__ = ["read", "detect", "FORMATS"]

#: Importers in the order detection tries them (most specific shape first).
_IMPORTERS: tuple[ModuleType, ...] = (session_log, agui, claude_code, chatgpt, claude_ai, openwebui, librechat, oasst, openai)

#: The format names ``read`` can return (``Conversation.format``) and accepts as ``format=``.
FORMATS: tuple[str, ...] = tuple(m.NAME for m in _IMPORTERS)

_BY_NAME = {m.NAME: m for m in _IMPORTERS}

#: Errors a detector or an importer may hit on input no test has shown yet.
_GAPS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)


class _NotALog(Exception):
    """No importer knows the file (in a folder or an archive: not a chat log, passed over quietly)."""


def detect(value: Any, lines: bool = False) -> str | None:
    """The format of a parsed document, or ``None``.

    ``value`` is a JSON value, or (``lines=True``) the list of a JSONL file's records.

    >>> detect([{"role": "user", "content": "hi"}])
    'openai'
    >>> detect({"title": "t", "mapping": {}, "current_node": None})
    'chatgpt'
    >>> detect([{"type": "session.started", "agent": "bot"}], lines=True)
    'convlab'
    >>> detect([{"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}], lines=True)
    'agui'
    """
    kind = "lines" if lines else "array" if isinstance(value, list) else "object"
    return _detect(Document("<value>", kind, value if kind != "object" else [value]))


def _detect(doc: Document) -> str | None:
    try:
        return next((m.NAME for m in _IMPORTERS if m.detect(doc)), None)
    except _GAPS as err:  # pragma: no cover - a gap in a detector
        raise read_error(doc.source, f"its shape could not be told ({type(err).__name__}: {err})") from None


def _importer(doc: Document, format: str | None) -> ModuleType:
    """The importer for a document: the one ``format`` names, if the document fits it, or the detected one."""
    found = _detect(doc)
    if format is None:
        if found is None:
            raise _NotALog(f"{doc.source}: no importer knows this shape")
        return _BY_NAME[found]
    module = _BY_NAME[format]
    if found == format or module.detect(doc):
        return module
    if found is None:
        raise _NotALog(f"{doc.source}: does not fit format={format!r}, nor a shape another importer knows")
    raise read_error(doc.source, f"does not fit format={format!r}: it reads as {found} (read it with format={found!r}, or without format=)")


def _convert(doc: Document, format: str | None) -> list[Conversation]:
    if doc.kind == "array" and not doc.head:
        return []
    module = _importer(doc, format)
    try:
        return list(module.parse(doc))
    except (ReadError, Restart):
        raise
    except _GAPS as err:  # pragma: no cover - a gap in an importer
        raise read_error(doc.source, f"could not be read as {module.NAME}: {type(err).__name__}: {err}") from None


# -- files, archives, folders ----------------------------------------------------


def _starts_array(f: BinaryIO) -> bool:
    """Whether the text of ``f`` starts with ``[`` (after a BOM and white space); ``f`` is left at its start."""
    start = f.tell()
    head = f.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    f.seek(start)
    return head[:1] == b"["


def _read_stream(f: BinaryIO, source: str, size: int | None, progress: bool, format: str | None) -> list[Conversation]:
    """The conversations in a seekable binary file: a zip archive, gzip data, a JSON array (streamed), or JSON."""
    magic = f.read(4)
    f.seek(0)
    if magic == b"PK\x03\x04":
        return _read_zip(f, source, progress, format)
    if magic[:2] == b"\x1f\x8b":
        raw = gunzip(f.read(), source)
        return _read_stream(io.BytesIO(raw), source, len(raw), progress, format)
    if _starts_array(f):
        return _read_streamed(f, source, size, progress, format)
    try:
        doc = parse_bytes(f.read(), source, progress)
    except NotJSON as err:
        raise _NotALog(str(err)) from None
    return _convert(doc, format)


def _read_streamed(f: BinaryIO, source: str, size: int | None, progress: bool, format: str | None) -> list[Conversation]:
    """A JSON array built item by item; read whole instead where ``json`` may read on (``documents.Restart``).

    The warnings of a streamed read are held until it is through, so a read
    that starts again warns once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            convs = _convert(stream_array(f, source, size, progress), format)
        except Restart:
            convs = None
    if convs is None:
        f.seek(0)
        return _convert(parse_bytes(f.read(), source, progress), format)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return convs


def _read_zip(f: BinaryIO, source: str, progress: bool, format: str | None) -> list[Conversation]:
    try:
        archive = zipfile.ZipFile(f)
        members = sorted((i for i in archive.infolist() if not i.is_dir()), key=lambda i: i.filename)
    except (zipfile.BadZipFile, OSError) as err:
        raise read_error(source, f"not a readable zip archive ({err})") from None
    out: list[Conversation] = []
    found = False
    for info in members:
        name = info.filename
        if name.startswith("__MACOSX/") or os.path.basename(name).startswith("."):
            continue
        member = f"{source}!{name}"
        try:
            with archive.open(info) as m:
                convs = _read_stream(m, member, info.file_size, progress, format)
        except (zipfile.BadZipFile, OSError, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
            warn(f"{member}: cannot be unpacked ({err}); passed over", passed_over=member)
            continue
        except _NotALog:
            continue
        except ReadError as err:
            warn(f"{err}; passed over", passed_over=member)
            continue
        found = found or bool(convs) or name.endswith("conversations.json")
        out.extend(convs)
    if not found:
        raise read_error(source, f"the archive holds no chat log convlab can read{f' as format={format!r}' if format else ''}")
    return out


def read(path: str | os.PathLike, *, progress: bool = True, format: str | None = None) -> list[Conversation]:
    """Read the conversations of a chat log file, archive or folder.

    The format is detected from the content: ChatGPT export (``conversations.json``
    or its .zip), Claude Code transcript (``.jsonl``, ``.jsonl.gz``), Claude.ai
    export, Open WebUI, LibreChat, OpenAssistant trees, plain OpenAI message
    lists (JSON or JSONL), a recorded AG-UI event stream (JSONL) and convlab's
    own session log. ``format`` (one of
    ``FORMATS``) skips detection; a file that is not in that format is a
    ``ReadError`` saying what it reads as. A folder is read recursively,
    every file it recognises.

    ``progress=True`` shows a bar, in a terminal or a notebook, for work that
    takes longer than a second: the files of a folder, the conversations of a
    large export, or its bytes while a huge one is streamed. ``progress=False``
    shows none.

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
        return _read_file(p, progress, format)
    except _NotALog as err:
        raise ReadError(f"{err}: not a chat log convlab can read (formats: {', '.join(FORMATS)})") from None


def _read_file(p: Path, progress: bool, format: str | None) -> list[Conversation]:
    try:
        f = open(p, "rb")
    except FileNotFoundError:
        raise ReadError(f"{p}: no such file or folder") from None
    except OSError as err:
        raise ReadError(f"{p}: cannot be read ({err.strerror or err})") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            return _read_stream(f, str(p), size, progress, format)
        except OSError as err:
            raise ReadError(f"{p}: cannot be read ({err.strerror or err})") from None


def _read_folder(folder: Path, progress: bool, format: str | None) -> list[Conversation]:
    files = sorted(
        f for f in folder.rglob("*")
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
    files_bar = bar(total=len(files), unit="file", desc=f"reading {folder.name or folder}", enabled=progress)
    out: list[Conversation] = []
    try:
        for f in files:
            try:
                out.extend(_read_file(f, False, format))
            except _NotALog:
                pass
            except ReadError as err:
                warn(f"{err}; passed over", passed_over=str(f))
            if files_bar is not None:
                files_bar.update(1)
    finally:
        if files_bar is not None:
            files_bar.close()
    return out
