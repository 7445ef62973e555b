"""convlab's own session log (JSONL events, the first ``session.started``; docs/wire.md).

The log is loaded by ``convlab.Session.load`` from its bytes in memory (a
file, or a member of an archive), which never writes, so the tree is exactly
the session's. Its ``LogWarning`` comes back as a ``ReadWarning``, its
``LogError`` as a ``ReadError``, both naming the file (and the line).
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Mapping
from typing import Iterator

from ..conversation import Conversation
from ..errors import LogError, LogWarning, ReadError
from ..tree import Tree
from .documents import Document
from .records import warn

NAME = "convlab"


def detect(doc: Document) -> bool:
    return doc.kind != "array" and isinstance(doc.first, Mapping) and doc.first.get("type") == "session.started"


def parse(doc: Document) -> Iterator[Conversation]:
    """The one conversation of a session log: its tree as ``Session.load`` rebuilds it."""
    from .. import Session  # the engine loads only when a session log is read

    log = io.BytesIO(doc.raw or b"")
    log.name = doc.source  # Session.load names the file object by it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            snap = Session.load(log).snapshot()
        except LogError as err:
            raise ReadError(str(err)) from None
    for w in caught:
        if issubclass(w.category, LogWarning):
            warn(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    tree = Tree()
    for node in snap["nodes"]:  # in seq order: parents first
        tree.add(node, node["parent"])
    tree.head = snap["head"]
    name = os.path.basename(doc.source.split("!")[-1])
    cid = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    yield Conversation(tree, id=cid, title=None, format=NAME, source=doc.source,
                       metadata={"agent": snap.get("agent"), "turns": snap.get("turns", [])})
