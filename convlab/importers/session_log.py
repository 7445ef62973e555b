"""convlab's own session log (JSONL events, the first ``session.started``; docs/wire.md).

The log is loaded with ``convlab.Session.load(..., append=False)`` so the
tree is exactly the session's and the file is never written. The bytes (a
file, or a member of an archive) are loaded from a private temporary file. Its ``LogWarning`` comes back as a ``ReadWarning``, its
``LogError`` as a ``ReadError``, both naming the file (and the line).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping

from ..conversation import Conversation
from ..errors import LogError, LogWarning, ReadWarning
from ..tree import Tree
from ._common import read_error

NAME = "convlab"


def detect(value: Any) -> bool:
    first = value[0] if isinstance(value, list) and value else value
    return isinstance(first, Mapping) and first.get("type") == "session.started"


def parse_bytes(raw: bytes, source: str) -> list[Conversation]:
    """The one conversation of a session log given as bytes (a file, or a member of an archive)."""
    from ..engine import Session  # the engine loads only when a session log is read

    with tempfile.TemporaryDirectory(prefix="convlab-read-") as tmp:
        copy = Path(tmp) / "session.jsonl"
        copy.write_bytes(raw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                session = Session.load(copy, append=False)
            except LogError as err:
                raise read_error(source, _unnamed(str(err), copy)) from None
        snap = session.snapshot()
    for w in caught:
        if issubclass(w.category, LogWarning):
            warnings.warn(f"{source}: {_unnamed(str(w.message), copy)}", ReadWarning, stacklevel=4)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    tree = Tree.from_nodes(snap["nodes"], head=snap["head"])
    name = os.path.basename(source.split("!")[-1])
    cid = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return [Conversation(tree, id=cid, title=None, format=NAME, source=source,
                         metadata={"agent": snap.get("agent"), "turns": snap.get("turns", [])})]


def _unnamed(message: str, copy: Path) -> str:
    """A message about the private copy, without the copy's name (the caller names the file)."""
    return message.replace(f"{copy}: ", "").replace(str(copy), "the log")
