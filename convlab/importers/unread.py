"""Logs convlab knows by their shape and does not read: refused by name, never read as something else.

A format whose definition is not public (Cursor's agent transcripts: the
editor is closed source, and the transcript records no usage) is said to be
that format in the ``ReadError``, so a person knows what they pointed at; it is
never read as the nearest format that almost fits it.
"""

from __future__ import annotations

from .documents import Document
from .records import MAPPING

__all__ = ["recognise"]


def _cursor_row(x: object) -> bool:
    """A row of Cursor's agent transcript (``~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl``):
    ``{"role", "message": {"content": [blocks]}}``, the person's text in ``<user_query>``."""
    if not isinstance(x, MAPPING) or x.get("role") not in ("user", "assistant") or "type" in x:
        return False
    message = x.get("message")
    return isinstance(message, MAPPING) and isinstance(message.get("content"), list) and "role" not in message


def recognise(doc: Document) -> str | None:
    """Why a document no importer reads is refused by name (None: a shape convlab does not know at all).

    >>> recognise(Document("t.jsonl", "lines", [{"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>hi</user_query>"}]}}]))
    'looks like a Cursor agent transcript: not read (Cursor publishes no definition of it, and it records no usage)'
    """
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    if doc.kind in ("lines", "array") and rows and all(_cursor_row(r) for r in rows):
        return "looks like a Cursor agent transcript: not read (Cursor publishes no definition of it, and it records no usage)"
    return None
