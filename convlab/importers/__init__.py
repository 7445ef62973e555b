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

import functools
import io
import operator
import os
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any, BinaryIO

from .. import collector
from ..conversation import Conversation
from ..errors import ReadError
from ..tokens import content_text
from . import (
    agui,
    chatgpt,
    claude_ai,
    claude_code,
    cline,
    codex,
    copilot_cli,
    gemini_cli,
    generic,
    librechat,
    managed_agents,
    oasst,
    openai,
    opencode,
    openwebui,
    pi,
    session_log,
    unread,
)
from .documents import MAX_DEPTH, Document, Limits, NotJSON, Restart, bar, gunzip, parse_bytes, stream_array
from .jsontext import SHALLOW
from .records import read_error, warn

__all__ = ["read", "detect", "FORMATS", "MAX_DEPTH", "log_files", "read_file"]

#: Importers in the order detection tries them (most specific shape first).
_IMPORTERS: tuple[ModuleType, ...] = (session_log, agui, claude_code, codex, pi, gemini_cli, copilot_cli, cline, opencode, managed_agents, chatgpt, claude_ai, openwebui, librechat, generic, oasst, openai)

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
            refused = unread.recognise(doc)  # a log convlab knows by its shape and does not read: said by name
            if refused is not None:
                raise read_error(doc.source, refused)
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
        convs = list(module.parse(doc))
    except (ReadError, Restart):
        raise
    except RecursionError:  # an importer's own walk of a message that nests deeper than Python recurses
        raise read_error(doc.source, f"a message nests more than {SHALLOW} levels deep: convlab reads messages that deep at most") from None
    except _GAPS as err:  # pragma: no cover - a gap in an importer
        raise read_error(doc.source, f"could not be read as {module.NAME}: {type(err).__name__}: {err}") from None
    if not any(len(c) for c in convs):  # a shape detected, and nothing in it read: never an empty result
        raise read_error(doc.source, f"read as {module.NAME}, {_records(doc)} gave no message convlab can read")
    _whole_enough(convs, doc.source, module.NAME)
    return convs


def _whole_enough(convs: list[Conversation], source: str, name: str) -> None:
    """A file the format almost fits is refused, never half read: a ``ReadError`` naming the format when the read
    left out most of the file's messages, or every message of one speaker (a file naming its assistant in a way
    the importer does not know), or read most of them, or most of one speaker's, empty because their text was not
    where the format keeps it (under a key the importer does not read, or nested in an object).

    A message the log itself wrote empty is no sign of a misread: a real Claude.ai export blanked upstream reads
    547 empty messages of 557 and is read; only messages the importer found no text for (``Conversation.no_text``)
    and that hold nothing else (no tool call or result, thinking or image) count."""
    left = [line for c in convs for line in c.left_out]
    kept = sum(len(c) for c in convs)
    # the nodes are looked at only when the read left out or emptied some: a read of a whole file costs nothing here
    missing = [r for r in ("user", "assistant") if r not in _said(convs)] if left else []
    if left and (len(left) > kept or missing):
        why = f"no {missing[0]} message was left" if missing and len(left) <= kept else f"{len(left)} of its {len(left) + kept} messages"
        raise read_error(source, f"does not read as {name}: {why} ({left[0]}{f'; and {len(left) - 1} more' if len(left) > 1 else ''})")
    empty = [(c, n) for c in convs for n in dict.fromkeys(c.no_text) if n in c.message_tree and _nothing_in(c.message_tree.node(n))]
    if not empty:
        return
    said = _said(convs, copies=False)
    blank = Counter(c.message_tree.node(n)["role"] for c, n in empty)
    most = next((r for r in ("user", "assistant") if 2 * blank[r] > said[r]), None)
    if 2 * len(empty) > said.total():
        what = f"{len(empty)} of its {said.total()} messages"
    elif most is not None:
        what = f"{blank[most]} of its {said[most]} {most} messages"
    else:
        return
    c, n = empty[0]
    at = f"conversation {c.id!r}, node {n!r}" if len(convs) > 1 else f"node {n!r}"
    raise read_error(source, f"does not read as {name}: {what} read empty, their text not where {name} keeps it ({at} the first)")


def _said(convs: list[Conversation], copies: bool = True) -> Counter[str]:
    """The messages read, by role: summaries left out, and a compaction's copies of earlier messages too unless
    ``copies``. Read from the trees' own nodes (a networkx graph of each would cost more than the read)."""
    return Counter(a["role"] for c in convs for a in c.message_tree.nodes_in_order()
                   if a["kind"] == "message" and (copies or a.get("copied_from") is None))


def _nothing_in(node: dict[str, Any]) -> bool:
    """Whether a message read has nothing a model would read: no text (white space is none), no part of another
    kind (a tool call, thinking, an image), no tool calls, and is no tool's result."""
    return not node.get("tool_calls") and node.get("tool_call_id") is None and not content_text(node.get("content")).strip()


def _records(doc: Document) -> str:
    """What a document's items are, counted: ``its 3 lines``, ``its 12 items``, ``its 175 'messages'``."""
    if doc.kind != "object":
        n = doc.given
        return f"its {n} {'line' if doc.kind == 'lines' else 'item'}{'s' if n != 1 else ''}"
    sizes = [(len(v), k) for k, v in doc.first.items() if isinstance(v, (list, dict))] if isinstance(doc.first, dict) else []
    if not sizes:
        return "the document"
    n, key = max(sizes)
    return f"its {n} {key!r}"


# -- files, archives, folders ----------------------------------------------------


def _starts_array(f: BinaryIO) -> bool:
    """Whether the text of ``f`` starts with ``[`` (after a BOM and white space); ``f`` is left at its start."""
    start = f.tell()
    head = f.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    f.seek(start)
    return head[:1] == b"["


@dataclass(frozen=True)
class _How:
    """How a read goes, the same for every file, member and stream of it."""

    progress: bool
    format: str | None
    limits: Limits


def _read_stream(f: BinaryIO, source: str, size: int | None, how: _How, progress: bool) -> list[Conversation]:
    """The conversations in a seekable binary file: a zip archive, gzip data, a JSON array (streamed), or JSON."""
    magic = f.read(4)
    f.seek(0)
    if magic == b"PK\x03\x04":
        return _read_zip(f, source, how)
    if magic[:2] == b"\x1f\x8b":
        raw = gunzip(f.read(), source, how.limits)
        return _read_stream(io.BytesIO(raw), source, len(raw), how, progress)
    if (size is None or size > _STREAMED) and _starts_array(f):
        return _read_streamed(f, source, size, how, progress)
    try:
        doc = parse_bytes(f.read(), source, progress, how.limits)
    except NotJSON as err:
        raise _NotALog(str(err)) from None
    return _convert(doc, how.format)


def _read_streamed(f: BinaryIO, source: str, size: int | None, how: _How, progress: bool) -> list[Conversation]:
    """A JSON array built item by item; read whole instead where ``json`` may read on (``documents.Restart``).

    The warnings of a streamed read are held until it is through, so a read
    that starts again warns once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            convs = _convert(stream_array(f, source, size, progress, how.limits), how.format)
        except Restart:
            convs = None
    if convs is None:
        f.seek(0)
        return _convert(parse_bytes(f.read(), source, progress, how.limits), how.format)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return convs


class _Capped:
    """A zip member read no further than ``cap`` bytes (a ``ReadError`` beyond): a member may say it is
    small and inflate without end."""

    def __init__(self, f: IO[bytes], cap: int, too_big: Callable[[], Exception]) -> None:
        self._f, self._cap, self._too_big = f, cap, too_big

    def read(self, n: int = -1) -> bytes:
        room = self._cap + 1 - self._f.tell()
        data = self._f.read(room if n < 0 or n > room else n)
        if self._f.tell() > self._cap:
            raise self._too_big()
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()


def _read_zip(f: BinaryIO, source: str, how: _How) -> list[Conversation]:
    try:
        archive = zipfile.ZipFile(f)
        members = sorted((i for i in archive.infolist() if not i.is_dir()), key=lambda i: i.filename)
    except (zipfile.BadZipFile, OSError) as err:
        raise read_error(source, f"not a readable zip archive ({err})") from None
    out: list[Conversation] = []
    refused: list[tuple[str, str]] = []  # (member, error): members that are logs convlab refuses: said with the archive's error, or warned
    found = False
    for info in members:
        name = info.filename
        if name.startswith("__MACOSX/") or os.path.basename(name).startswith("."):
            continue
        member = f"{source}!{name}"
        cap = how.limits.inflate_cap(info.compress_size)
        try:
            with archive.open(info) as m:
                capped = _Capped(m, cap, functools.partial(how.limits.too_big, member, info.compress_size))
                convs = _read_stream(capped, member, min(info.file_size, cap), how, how.progress)  # type: ignore[arg-type]  # _Capped has what the readers call of a BinaryIO (read, seek, tell), not all of it
        except (zipfile.BadZipFile, OSError, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
            warn(f"{member}: cannot be unpacked ({err}); passed over", passed_over=member)
            continue
        except _NotALog:
            continue
        except ReadError as err:
            refused.append((member, str(err)))
            continue
        found = found or bool(convs) or name.endswith("conversations.json")
        out.extend(convs)
    if not found:
        why = f" ({refused[0][1]}{f'; and {len(refused) - 1} more' if len(refused) > 1 else ''})" if refused else ""
        raise read_error(source, f"the archive holds no chat log convlab can read{f' as format={how.format!r}' if how.format else ''}{why}")
    for member, text in refused:
        warn(f"{text}; passed over", passed_over=member)
    return out


def read(path: str | os.PathLike, *, progress: bool = True, format: str | None = None, max_depth: int = MAX_DEPTH,
         max_inflated: int | None = None) -> list[Conversation]:
    """Read the conversations of a chat log file, archive or folder.

    The format is detected from the content: ChatGPT export (``conversations.json``
    or its .zip), Claude Code transcript (``.jsonl``, ``.jsonl.gz``), Claude.ai
    export, Open WebUI, LibreChat, the generic message tree of records keyed
    ``id`` and ``parentMessageId``/``parentId`` (``generic``), OpenAssistant
    trees, plain OpenAI message lists (JSON or JSONL), a recorded AG-UI event
    stream (JSONL), convlab's own session log, and the coding agents' own logs:
    Codex CLI rollouts (``~/.codex/sessions``), Gemini CLI recordings,
    checkpoints and stream-json (``~/.gemini/tmp``), pi sessions
    (``~/.pi/agent/sessions``), Copilot CLI events and timelines
    (``~/.copilot``), Cline / Roo Code task folders, OpenCode's sessions
    (``~/.local/share/opencode``: its ``storage`` folder and its ``opencode.db``)
    and Anthropic Managed Agents event streams. A file whose format is
    detected but that gives no message, or whose read would leave out most of
    its messages (or every message of one speaker), is a ``ReadError`` naming
    that format, never an empty or half result; a Cursor agent transcript is
    refused by name. ``format`` (one of
    ``FORMATS``) skips detection; a file that is not in that format is a
    ``ReadError`` saying what it reads as. A folder is read recursively,
    every file it recognises.

    ``progress=True`` shows a bar, in a terminal or a notebook, for work that
    takes longer than a second: the files of a folder, the conversations of a
    large export, or its bytes while a huge one (a JSON array past 64 MB) is
    streamed item by item. ``progress=False`` shows none.

    No file can crash or exhaust the reader. JSON is read however deep it
    nests, up to ``max_depth`` levels of arrays and objects (default
    ``MAX_DEPTH``, 10,000: a chain of 5,000 messages in a recursive export);
    deeper is a ``ReadError`` (a JSON line: left out, with a warning), and so
    is an integer longer than Python converts (4,300 digits). A deep tree is
    read, and so is a deep message, with what nests past 100 levels (what the
    engine carries, ``jsondata.MAX_DEPTH``) cut and said in a ``ReadWarning``,
    as every value JSON cannot carry on is read repaired (``jsondata.repaired``). Compressed data (gzip, a zip
    member) inflates to at most ``max_inflated`` bytes (default None: 100
    times its compressed size, at least 16 MiB and at most 2 GiB); more is a
    ``ReadError``. In a folder a file that cannot be read is a warning and the
    others are read.

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
    how = _How(progress, format, Limits(max_depth, max_inflated))
    p = Path(path)
    with collector.paused(collect=False):  # what a read builds lives on, and holds no cycle: nothing to walk
        if p.is_dir():
            return _read_folder(p, how)
        try:
            return _read_file(p, how, progress)
        except _NotALog as err:
            raise ReadError(f"{err}: not a chat log convlab can read (formats: {', '.join(FORMATS)})") from None


#: A JSON array larger than this is streamed, item by item (``json`` would hold about 3.4 times the file while it
#: parses it whole, ``ijson`` a few items); one this large or smaller is parsed whole, twice as fast.
_STREAMED = 64 << 20

#: A file this small is read in one call and looked at in memory (a folder of chats is thousands of them); a
#: larger one is read as it is parsed (a JSON array streamed, item by item).
_IN_MEMORY = 1 << 20


def _read_file(p: Path, how: _How, progress: bool) -> list[Conversation]:
    try:
        f = open(p, "rb")
    except FileNotFoundError:
        raise ReadError(f"{p}: no such file or folder") from None
    except OSError as err:
        raise ReadError(f"{p}: cannot be read ({err.strerror or err})") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size <= _IN_MEMORY:  # read at once: what follows looks at its start again and again, in memory
                raw = f.read()
                if raw[:16] == opencode.SQLITE_MAGIC:
                    return _read_database(p, how)
                return _read_stream(io.BytesIO(raw), str(p), len(raw), how, progress)
            if f.read(16) == opencode.SQLITE_MAGIC:  # an SQLite database: OpenCode's, or no chat log
                return _read_database(p, how)
            f.seek(0)
            return _read_stream(f, str(p), size, how, progress)
        except OSError as err:
            raise ReadError(f"{p}: cannot be read ({err.strerror or err})") from None
        except (ReadError, _NotALog):
            raise
        except MemoryError:
            raise ReadError(f"{p}: ran out of memory reading it") from None
        except _GAPS as err:  # pragma: no cover - a gap: a file no test has shown yet still names itself
            raise ReadError(f"{p}: could not be read ({type(err).__name__}: {err})") from None


def _read_database(p: Path, how: _How) -> list[Conversation]:
    """An SQLite file: OpenCode's database read (``opencode``), any other passed over as no chat log."""
    convs = opencode.read_database(p) if how.format in (None, opencode.NAME) else None
    if convs is None:
        raise _NotALog(f"{p}: an SQLite database with no OpenCode session, message and part tables")
    if not convs:
        raise read_error(str(p), "OpenCode's database holds no session with a message")
    return convs


def _folder_files(folder: Path) -> list[Path]:
    """The files a read of ``folder`` reads, in order: hidden ones and a Cline task's companions left out; of
    OpenCode's storage only its session files (each read with its messages and parts), and none where an OpenCode
    database beside it holds what OpenCode moved into it."""
    files, stores = _walk(folder)
    return sorted(
        (f for f in files
         if not cline.companion(f)  # read with the file it belongs to (a Cline task's ui_messages.json)
         and all(d not in f.parents or (opencode.session_file(f, d) and opencode.database(d.parent) is None) for d in stores)),
        key=_PARTS,  # a path's own order (its parts), compared at C speed: thousands of files
    )


#: A posix path's own order, at C speed: its parts (a Windows path's order folds case: its own comparison there).
_PARTS = operator.attrgetter("parts") if os.name == "posix" else None


def _walk(folder: Path) -> tuple[list[Path], list[Path]]:
    """The files under ``folder`` that are not hidden and not under a hidden folder (a folder's own
    name aside), and the folders among it and them that are OpenCode storage. One ``scandir`` a
    folder and no ``stat`` a file (a year of sessions is thousands of files); a folder reached by a
    symbolic link is not walked into, and one that cannot be listed is passed over, as ``rglob``'s."""
    files: list[Path] = []
    stores: list[Path] = []
    todo = [folder]
    while todo:
        here = todo.pop()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError:
            continue
        names = set()
        for entry in entries:
            if entry.is_dir():
                names.add(entry.name)
                if not entry.is_symlink() and not entry.name.startswith("."):
                    todo.append(here / entry.name)
            elif entry.is_file() and not entry.name.startswith("."):
                files.append(here / entry.name)
        if names >= {"session", "message", "part"} and opencode.storage(here):
            stores.append(here)
    return files, stores


def log_files(path: str | os.PathLike) -> list[Path]:
    """The files ``read(path)`` reads, in its order: ``path`` itself, or a folder's files (recursively; what a
    read of the folder passes over, with its warning, left out). A sweep of a folder reads them one at a time
    (``convlab.tune`` of a path). A path that is not there is a ``ReadError``."""
    p = Path(path)
    if p.is_dir():
        return _folder_files(p)
    if not p.exists():
        raise ReadError(f"{p}: no such file or folder")
    return [p]


def read_file(path: str | os.PathLike) -> list[Conversation] | None:
    """The conversations of one file as a read of its folder reads it: None for a file that is not a chat log
    (a folder's read passes it over quietly); a ``ReadError`` for a log that cannot be read."""
    try:
        with collector.paused(collect=False):  # as ``read``
            return _read_file(Path(path), _How(False, None, Limits(MAX_DEPTH, None)), False)
    except _NotALog:
        return None


def _read_folder(folder: Path, how: _How) -> list[Conversation]:
    files = _folder_files(folder)
    files_bar = bar(total=len(files), unit="file", desc=f"reading {folder.name or folder}", enabled=how.progress)
    out: list[Conversation] = []
    try:
        for f in files:
            try:
                out.extend(_read_file(f, how, False))
            except _NotALog:
                pass
            except ReadError as err:  # one file that cannot be read never stops the others
                warn(f"{err}; passed over", passed_over=str(f))
            if files_bar is not None:
                files_bar.update(1)
    finally:
        if files_bar is not None:
            files_bar.close()
    return out
