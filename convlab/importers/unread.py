"""Logs convlab knows by their shape and does not read: refused by name, never read as something else.

A format whose definition is not public (Cursor's agent transcripts: the
editor is closed source, and the transcript records no usage) is said to be
that format in the ``ReadError``, so a person knows what they pointed at; it is
never read as the nearest format that almost fits it.

OpenCode's storage (``~/.local/share/opencode/storage``: ``session/<project>/<id>.json``,
``message/<session>/<id>.json``, ``part/<message>/<id>.json``, one JSON file per
session, message and part) is defined by sst/opencode's source, which this
project could not read to check a reader against, and OpenCode has since moved
its sessions into SQLite: a file of it is refused by name, and a storage folder
is passed over whole with one warning (``storage``), not a warning per file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .documents import Document

__all__ = ["recognise", "storage"]

#: OpenCode's id prefixes: a session, a message, a part
_OPENCODE = {"ses_": ("projectID", "session"), "msg_": ("sessionID", "message"), "prt_": ("messageID", "part")}
_NOT_READ = "not read (convlab does not read OpenCode's storage; its sessions are in SQLite since 2026)"


def _cursor_row(x: object) -> bool:
    """A row of Cursor's agent transcript (``~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl``):
    ``{"role", "message": {"content": [blocks]}}``, the person's text in ``<user_query>``."""
    if not isinstance(x, Mapping) or x.get("role") not in ("user", "assistant") or "type" in x:
        return False
    message = x.get("message")
    return isinstance(message, Mapping) and isinstance(message.get("content"), list) and "role" not in message


def _opencode(x: object) -> str | None:
    """What an OpenCode storage file holds (a session, a message, a part), or None."""
    if not isinstance(x, Mapping) or not isinstance(x.get("id"), str):
        return None
    found = _OPENCODE.get(x["id"][:4])
    return found[1] if found is not None and found[0] in x else None


def storage(folder: Path) -> bool:
    """Whether ``folder`` is OpenCode's storage (its session, message and part folders): passed over whole."""
    return all((folder / name).is_dir() for name in ("session", "message", "part"))


def recognise(doc: Document) -> str | None:
    """Why a document no importer reads is refused by name (None: a shape convlab does not know at all).

    >>> recognise(Document("t.jsonl", "lines", [{"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>hi</user_query>"}]}}]))
    'looks like a Cursor agent transcript: not read (Cursor publishes no definition of it, and it records no usage)'
    """
    rows = [r for r in doc.head if isinstance(r, Mapping)]
    if doc.kind in ("lines", "array") and rows and all(_cursor_row(r) for r in rows):
        return "looks like a Cursor agent transcript: not read (Cursor publishes no definition of it, and it records no usage)"
    held = _opencode(doc.first) if doc.kind == "object" else None
    if held is not None:
        return f"looks like an OpenCode storage file (a {held}): {_NOT_READ}"
    return None
