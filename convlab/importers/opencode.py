"""OpenCode sessions: its JSON storage (``~/.local/share/opencode/storage``) and its SQLite database
(``~/.local/share/opencode/opencode.db``).

As anomalyco/opencode (formerly sst/opencode) writes them:

- The storage (``packages/opencode/src/storage/storage.ts``: a key is a path
  under ``<data>/storage``, one pretty-printed JSON file per key;
  ``src/session/index.ts``): ``session/<projectID>/<sessionID>.json`` (the
  session: ``id``, ``projectID``, ``parentID`` for a sub-agent's session,
  ``title``, ``directory``, ``version``, ``time``, ``revert``),
  ``message/<sessionID>/<messageID>.json`` (a message's info) and
  ``part/<messageID>/<partID>.json`` (its parts). Ids are ascending in time
  (``msg_``, ``prt_``), and OpenCode reads a session's messages, and a
  message's parts, in the order of their ids.
- The database (``src/storage/db.ts``: ``opencode.db`` in the data folder,
  ``opencode-<channel>.db`` for other release channels;
  ``src/session/session.sql.ts``): tables ``session`` (``id``,
  ``project_id``, ``parent_id``, ``title``, ``directory``, ``version``,
  ``time_created``, ...), ``message`` (``id``, ``session_id``,
  ``time_created``, ``data``: the message's info JSON less ``id`` and
  ``sessionID``) and ``part`` (``id``, ``message_id``, ``session_id``,
  ``data``: the part JSON less its ids). OpenCode moves the storage into it
  on first start (``src/storage/json-migration.ts``) and reads messages by
  ``time_created`` then ``id``. Read here through the stdlib ``sqlite3``,
  read-only.

A message's info and parts (``src/session/message-v2.ts``) are read as OpenCode
sends them to the model (``toModelMessages``):

- A user message: its ``text`` parts (not ``ignored``; ``synthetic`` ones too:
  the text of a file it attached), its ``file`` parts other than
  ``text/plain`` and folders (kept as ``file`` parts), a ``compaction`` part
  as "What did we do so far?", a ``subtask`` part as "The following tool was
  executed by the user". A message with no part is not sent, nor read.
- An assistant message is one or more model calls, one per step (its parts
  between ``step-start`` parts): each step a reply (``text``; ``reasoning``
  as ``thinking``; ``tool`` parts as ``tool_use`` and ``tool_calls``, by
  ``callID``, their input ``state.input``) followed by a ``tool`` message for
  each call (``state.output``; an ``error`` state its error, marked
  ``is_error``; a call left ``pending`` or ``running`` the text OpenCode sends
  for it, "[Tool execution was interrupted]"). The step's ``step-finish``
  part is its usage: ``tokens.input`` is the uncached input
  (``Session.getUsage`` takes cache reads and writes out), read beside
  ``cache.read`` and ``cache.write`` so that the usage's input is their sum;
  ``tokens.output`` as the output, ``tokens.reasoning`` as
  ``reasoning_output_tokens``, the step's ``cost``. A message with no
  ``step-finish`` (older builds) has its own ``tokens`` on its last step
  (all zeros, as on a reply that failed before the provider answered: no usage).
  ``modelID``, ``providerID``, ``agent`` and ``finish`` in ``metadata``.
- A failed reply OpenCode leaves out of what it sends later (an ``error``,
  unless it was aborted after writing something) is read where it stood, but
  as a dead end: the next message hangs under the one before it.
- Its own compaction: a user message with a ``compaction`` part, answered by
  an assistant message with ``summary: true`` that finished without error
  (``filterCompacted``). Both are read as the messages they were (the request
  and the summarising call, which read the whole history), then a summary
  root (``kind: "summary"``) with the summary's text replaces the summary
  reply, and what the compaction kept (from ``tail_start_id``, when the
  part names one, to the request) follows as copies (``copied_from``);
  OpenCode sends that tail before the summary, convlab after it. The part's
  ``auto``, ``overflow`` and ``tail_start_id`` are in ``metadata.compaction``.
  A tool output OpenCode later pruned (``state.time.compacted``: sent from then
  on as "[Old tool result content cleared]") is read as the output the next
  call read, its pruning time in the ``tool`` message's ``metadata``.

Each session is a conversation (a sub-agent's session too, ``metadata.parent_session``
naming its parent), the last message its head. A storage file named alone is
read as its session when the storage folder around it holds that session's
``message/`` folder (a message or part file: the session it names); else a
``ReadError`` names what is missing. A folder holding ``opencode.db`` beside
``storage/`` is read from the database only (the storage is what OpenCode moved
into it).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..conversation import Conversation
from ..errors import ReadError
from .documents import Document, NotJSON, parse_bytes
from .records import (
    MAPPING,
    ImportedMessage,
    Problems,
    conversation,
    kept_copy,
    logged_counts,
    read_error,
    summary_root,
    text_or_parts,
    to_time,
)

NAME = "opencode"
#: OpenCode's id prefixes: a session, a message, a part (``src/id/id.ts``), and the key each file holds its owner's id in
_HELD = {"ses_": ("projectID", "session"), "msg_": ("sessionID", "message"), "prt_": ("messageID", "part")}
#: What OpenCode sends for a part of a user message that has no text of its own (``toModelMessages``)
COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
INTERRUPTED = "[Tool execution was interrupted]"
#: The first bytes of every SQLite database file
SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = {"session": {"id", "title"}, "message": {"id", "session_id", "time_created", "data"},
           "part": {"id", "message_id", "session_id", "data"}}


def held(x: object) -> str | None:
    """What an OpenCode storage file holds (``"session"``, ``"message"``, ``"part"``), or None."""
    if not isinstance(x, MAPPING) or not isinstance(x.get("id"), str):
        return None
    found = _HELD.get(x["id"][:4])
    return found[1] if found is not None and found[0] in x else None


def detect(doc: Document) -> bool:
    return doc.kind == "object" and held(doc.first) is not None


def storage(folder: Path) -> bool:
    """Whether ``folder`` is OpenCode's storage (its session, message and part folders)."""
    return all((folder / name).is_dir() for name in ("session", "message", "part"))


def session_file(path: Path, store: Path) -> bool:
    """Whether ``path``, a file under the storage folder ``store``, is a session (``session/<project>/<id>.json``):
    what a read of the folder reads; its messages and parts are read with it."""
    rel = path.relative_to(store).parts
    return len(rel) == 3 and rel[0] == "session" and path.suffix == ".json"


def database(folder: Path) -> Path | None:
    """The OpenCode database in a data folder (``opencode.db``, or a channel's ``opencode-<channel>.db``), if any."""
    found = sorted(folder.glob("opencode*.db"))
    return found[0] if found else None


# -- the storage --------------------------------------------------------------------------------


def _json(path: Path) -> Any:
    try:
        return parse_bytes(path.read_bytes(), os.fspath(path), False).first
    except (NotJSON, OSError, ReadError):
        return None


def _sorted_json(folder: Path) -> list[Any]:
    return [_json(f) for f in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def parse(doc: Document) -> list[Conversation]:
    first = doc.first
    what = held(first)
    source = doc.source
    if "!" in source or source.startswith("<"):
        raise read_error(source, f"an OpenCode storage file (a {what}) read alone: its session is assembled from the "
                                 "storage folder's session/, message/ and part/ folders, which are not beside it")
    path = Path(source)
    store = path.parents[2] if len(path.parents) > 2 else path.parent
    if what == "session":
        info, session_path = first, path
    else:
        sid = first.get("sessionID")
        found = sorted((store / "session").glob(f"*/{sid}.json")) if isinstance(sid, str) else []
        if not found:
            raise read_error(source, f"an OpenCode storage file (a {what}) of session {sid!r}: its session file "
                                     f"session/<project>/{sid}.json is not in {store}")
        session_path = found[0]
        info = _json(session_path)
        if held(info) != "session":
            raise read_error(source, f"an OpenCode storage file (a {what}): {session_path} is no session")
    sid = str(info["id"])
    folder = store / "message" / sid
    if not folder.is_dir():
        raise read_error(os.fspath(session_path), f"an OpenCode session with no message folder: message/{sid}/ is not in {store}")
    messages = [(m, _sorted_json(store / "part" / str(m["id"]))) for m in _sorted_json(folder)
                if isinstance(m, MAPPING) and isinstance(m.get("id"), str)]
    return [_session(info, messages, os.fspath(session_path))]


# -- the database -------------------------------------------------------------------------------


def is_database(con: sqlite3.Connection) -> bool:
    """Whether an SQLite database has OpenCode's session, message and part tables."""
    for table, columns in _TABLES.items():
        have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
        if not columns <= have:
            return False
    return True


def read_database(path: Path) -> list[Conversation] | None:
    """The sessions of an OpenCode database, read-only (None: an SQLite file that is not OpenCode's)."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise ReadError(f"{path}: an SQLite database that cannot be opened ({err})") from None
    try:
        if not is_database(con):
            return None
        columns = {row[1] for row in con.execute("PRAGMA table_info(session)")}
        wanted = [c for c in ("id", "project_id", "parent_id", "title", "directory", "version", "time_created",
                              "time_updated", "revert") if c in columns]
        sessions = [dict(zip(wanted, row, strict=True)) for row in con.execute(
            f"SELECT {', '.join(wanted)} FROM session ORDER BY {'time_created, ' if 'time_created' in columns else ''}id")]
        messages: dict[str, list[dict[str, Any]]] = {}
        for mid, sid, data in con.execute("SELECT id, session_id, data FROM message ORDER BY session_id, time_created, id"):
            messages.setdefault(sid, []).append({**_loads(data), "id": mid, "sessionID": sid})
        parts: dict[str, list[dict[str, Any]]] = {}
        for pid, mid, sid, data in con.execute("SELECT id, message_id, session_id, data FROM part ORDER BY message_id, id"):
            parts.setdefault(mid, []).append({**_loads(data), "id": pid, "messageID": mid, "sessionID": sid})
    except sqlite3.Error as err:
        raise ReadError(f"{path}: OpenCode's database could not be read ({err})") from None
    finally:
        con.close()
    out = []
    for s in sessions:
        info = {"id": s["id"], "projectID": s.get("project_id"), "parentID": s.get("parent_id"), "title": s.get("title"),
                "directory": s.get("directory"), "version": s.get("version"),
                "time": {"created": s.get("time_created"), "updated": s.get("time_updated")},
                "revert": _loads(s["revert"]) if s.get("revert") else None}
        held_messages = [(m, parts.get(m["id"], [])) for m in messages.get(s["id"], [])]
        if held_messages:
            out.append(_session(info, held_messages, f"{path}!{s['id']}"))
    return out


def _loads(data: object) -> dict[str, Any]:
    try:
        value = json.loads(data) if isinstance(data, (str, bytes)) else data
    except ValueError:
        return {}
    return dict(value) if isinstance(value, MAPPING) else {}


# -- a session, as OpenCode sends it ---------------------------------------------------------------


def _usage(tokens: object, cost: object) -> dict[str, Any] | None:
    if not isinstance(tokens, MAPPING):
        return None
    cache: Mapping[str, Any] = tokens["cache"] if isinstance(tokens.get("cache"), MAPPING) else {}
    flat = {"input": tokens.get("input"), "output": tokens.get("output"), "reasoning": tokens.get("reasoning"),
            "read": cache.get("read"), "write": cache.get("write")}
    usage, _sound = logged_counts(flat, {"input_tokens": "input", "cache_read_input_tokens": "read",  # as written: build checks
                                         "cache_creation_input_tokens": "write", "output_tokens": "output",
                                         "reasoning_output_tokens": "reasoning"})
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        usage["cost"] = cost
    return usage


def _user_content(parts: list[Any]) -> str | list[Any]:
    out: list[Any] = []
    for p in parts:
        kind = p.get("type")
        if kind == "text" and not p.get("ignored"):
            out.append({"type": "text", "text": str(p.get("text") or "")})
        elif kind == "file" and p.get("mime") not in ("text/plain", "application/x-directory"):
            out.append({"type": "file", "mime": p.get("mime"), "filename": p.get("filename"), "url": p.get("url")})
        elif kind == "compaction":
            out.append({"type": "text", "text": COMPACTION_PROMPT})
        elif kind == "subtask":
            out.append({"type": "text", "text": SUBTASK_PROMPT})
    return text_or_parts(out)


def _steps(parts: list[Any]) -> list[tuple[list[Any], Mapping[str, Any] | None]]:
    """An assistant message's parts as its model calls: each step's parts and its ``step-finish``."""
    steps: list[tuple[list[Any], Mapping[str, Any] | None]] = []
    current: list[Any] = []
    finish: Mapping[str, Any] | None = None
    for p in parts:
        kind = p.get("type")
        if kind == "step-start" and (current or finish is not None):
            steps.append((current, finish))
            current, finish = [], None
        elif kind == "step-finish":
            finish = p
        elif kind in ("text", "reasoning", "tool"):
            current.append(p)
    if current or finish is not None:
        steps.append((current, finish))
    return steps


def _result(state: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A tool part's state as the result OpenCode sends, and what the tool message's metadata says of it."""
    status = state.get("status")
    meta: dict[str, Any] = {}
    if status == "completed":
        times: Mapping[str, Any] = state["time"] if isinstance(state.get("time"), MAPPING) else {}
        if times.get("compacted") is not None:
            meta["pruned"] = times["compacted"]
        output = state.get("output")
        return (output if isinstance(output, str) else json.dumps(output)), meta
    meta["is_error"] = True
    if status == "error":
        extra: Mapping[str, Any] = state["metadata"] if isinstance(state.get("metadata"), MAPPING) else {}
        if extra.get("interrupted") is True and isinstance(extra.get("output"), str):
            return extra["output"], {}
        return str(state.get("error") or ""), meta
    return INTERRUPTED, meta


def _sent(info: Mapping[str, Any], parts: list[Any]) -> bool:
    """Whether OpenCode sends an assistant message to later calls: not a failed one, unless it was aborted
    after writing something."""
    error = info.get("error")
    if not error:
        return True
    aborted = isinstance(error, MAPPING) and error.get("name") == "MessageAbortedError"
    return aborted and any(p.get("type") not in ("step-start", "reasoning") for p in parts)


class _Reader:
    def __init__(self, info: Mapping[str, Any], source: str) -> None:
        self.info = info
        self.id = str(info["id"])
        self.source = source
        self.problems = Problems(source, self.id)
        self.records: list[ImportedMessage] = []
        self.of: dict[str, list[ImportedMessage]] = {}  # message id -> its records on the path
        self.order: list[str] = []  # the message ids read on the path, in order
        self.last: str | None = None
        self.models: list[str] = []

    def add(self, mid: str, rec: ImportedMessage, on_path: bool = True) -> None:
        self.records.append(rec)
        if on_path:
            self.of.setdefault(mid, []).append(rec)
            self.last = rec.id

    def assistant(self, info: Mapping[str, Any], parts: list[Any]) -> None:
        mid = str(info["id"])
        time = to_time((info.get("time") or {}).get("created")) if isinstance(info.get("time"), MAPPING) else None
        on_path = _sent(info, parts)
        parent = self.last
        steps = _steps(parts)
        own = _usage(info.get("tokens"), None)
        if not any(p.get("type") == "step-finish" for p in parts) and steps and own and any(own.values()):
            steps[-1] = (steps[-1][0], {"tokens": info.get("tokens"), "cost": info.get("cost")})  # older builds: the message's
        meta: dict[str, Any] = {}
        for ours, theirs in (("model", "modelID"), ("provider", "providerID"), ("agent", "agent"), ("finish", "finish")):
            if isinstance(info.get(theirs), str):
                meta[ours] = info[theirs]
        if "agent" not in meta and isinstance(info.get("mode"), str):
            meta["agent"] = info["mode"]
        if info.get("summary") is True:
            meta["summary"] = True
        if isinstance(info.get("error"), MAPPING):
            meta["error"] = info["error"].get("name")
        if meta.get("model") and meta["model"] not in self.models:
            self.models.append(meta["model"])
        for k, (step, finish) in enumerate(steps):
            content: list[Any] = []
            calls: list[dict[str, Any]] = []
            results: list[ImportedMessage] = []
            for p in step:
                kind = p.get("type")
                if kind == "text":
                    content.append({"type": "text", "text": str(p.get("text") or "")})
                elif kind == "reasoning":
                    content.append({"type": "thinking", "thinking": str(p.get("text") or "")})
                elif kind == "tool":
                    state = p.get("state") if isinstance(p.get("state"), MAPPING) else {}
                    cid, name = str(p.get("callID") or p.get("id")), str(p.get("tool") or "")
                    content.append({"type": "tool_use", "id": cid, "name": name, "input": state.get("input")})
                    calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": state.get("input")}})
                    output, extra = _result(state)
                    results.append(ImportedMessage(str(p.get("id")), None, {
                        "role": "tool", "content": output, "tool_call_id": cid, "time": time,
                        "metadata": {"tool_name": name, **extra}}))
            node: dict[str, Any] = {"role": "assistant", "content": content, "time": time,
                                    "usage": _usage(finish.get("tokens"), finish.get("cost")) if finish else None,
                                    "metadata": {**meta, **({"finish": finish["reason"]} if finish and isinstance(finish.get("reason"), str) else {})}}
            if calls:
                node["tool_calls"] = calls
            nid = mid if k == 0 else f"{mid}#{k + 1}"
            rec = ImportedMessage(nid, self.last if on_path else parent, node)
            self.add(mid, rec, on_path)
            parent = rec.id
            for r in results:
                r.parent = self.last if on_path else parent
                self.add(mid, r, on_path)
                parent = r.id
        if on_path and steps:
            self.order.append(mid)

    def user(self, info: Mapping[str, Any], parts: list[Any]) -> None:
        mid = str(info["id"])
        time = to_time((info.get("time") or {}).get("created")) if isinstance(info.get("time"), MAPPING) else None
        meta: dict[str, Any] = {}
        model = info.get("model")
        if isinstance(model, MAPPING):
            meta["model"] = model.get("modelID")
        if isinstance(info.get("agent"), str):
            meta["agent"] = info["agent"]
        self.add(mid, ImportedMessage(mid, self.last, {"role": "user", "content": _user_content(parts), "time": time,
                                                       "metadata": meta}))
        self.order.append(mid)

    def compaction(self, request: str, part: Mapping[str, Any], reply: Mapping[str, Any], parts: list[Any]) -> None:
        """The log's own compaction, once its summary reply is read: the summary root, then copies of the tail kept."""
        text = "".join(str(p.get("text") or "") for p in parts if p.get("type") == "text")
        time = to_time((reply.get("time") or {}).get("completed") or (reply.get("time") or {}).get("created")) \
            if isinstance(reply.get("time"), MAPPING) else None
        meta = {"compaction": {k: part[k] for k in ("auto", "overflow", "tail_start_id") if k in part}
                | {"request": request, "summary": str(reply["id"])}}
        root = summary_root(f"{part.get('id') or request}@compaction", self.last, text, time, meta)
        self.records.append(root)
        self.last = root.id
        tail = part.get("tail_start_id")
        if isinstance(tail, str) and tail in self.order:
            for kept in self.order[self.order.index(tail):self.order.index(request)]:
                for original in self.of.get(kept, []):
                    copy = kept_copy(original, f"{original.id}@{root.id}", self.last, time)
                    self.records.append(copy)
                    self.last = copy.id
        elif tail is not None:
            self.problems.add(root.id, f"tail_start_id {tail!r} is not a message before the compaction; nothing kept")


def _session(info: Mapping[str, Any], messages: Iterable[tuple[Any, list[Any]]], source: str) -> Conversation:
    reader = _Reader(info, source)
    read = [(m, [p for p in parts if isinstance(p, MAPPING)]) for m, parts in messages]
    completed = {str(m.get("parentID")) for m, _ in read
                 if m.get("role") == "assistant" and m.get("summary") and m.get("finish") and not m.get("error")}
    requests: dict[str, Mapping[str, Any]] = {}  # a compaction request's message id -> its compaction part
    for m, parts in read:
        mid = str(m["id"])
        if not parts:
            continue  # OpenCode sends no message without parts
        if m.get("role") == "user":
            reader.user(m, parts)
            part = next((p for p in parts if p.get("type") == "compaction"), None)
            if part is not None and mid in completed:
                requests[mid] = part
        elif m.get("role") == "assistant":
            reader.assistant(m, parts)
            if m.get("summary") and str(m.get("parentID")) in requests and m.get("finish") and not m.get("error"):
                request = str(m["parentID"])
                reader.compaction(request, requests.pop(request), m, parts)
        else:
            reader.problems.left_out(mid, f"unknown role {m.get('role')!r}; message left out")
    meta: dict[str, Any] = {"session_id": reader.id, "models": reader.models}
    for ours, theirs in (("project_id", "projectID"), ("parent_session", "parentID"), ("directory", "directory"),
                         ("version", "version"), ("revert", "revert")):
        if info.get(theirs):
            meta[ours] = info[theirs]
    return conversation(reader.records, reader.problems, id=reader.id, title=info.get("title"), format=NAME, source=source,
                        head=reader.last, metadata=meta)
