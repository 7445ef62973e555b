"""convlab's own session log (JSONL events, the first ``session.started``; docs/wire.md).

The log's tree is read by ``convlab.log.read_tree`` from its bytes in memory
(a file, or a member of an archive), with no Session: importers never need the
engine. It is the tree ``Session.load`` rebuilds, node for node. Its ``LogWarning`` comes back as a ``ReadWarning``, its
``LogError`` as a ``ReadError``, both naming the file (and the line).
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Iterator

from ..conversation import Conversation
from ..errors import LogError, LogWarning, ReadError
from ..log import read_tree
from .documents import Document
from .records import MAPPING, warn

NAME = "convlab"


def detect(doc: Document) -> bool:
    return doc.kind != "array" and isinstance(doc.first, MAPPING) and doc.first.get("type") == "session.started"


def parse(doc: Document) -> Iterator[Conversation]:
    """The one conversation of a session log: its tree as ``convlab.log.read_tree`` reads it (no Session)."""
    log = io.BytesIO(doc.raw or b"")
    log.name = doc.source  # read_tree names the file object by it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tree, agent = read_tree(log)
        except LogError as err:
            raise ReadError(str(err)) from None
    for w in caught:
        if issubclass(w.category, LogWarning):
            warn(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    name = os.path.basename(doc.source.split("!")[-1])
    cid = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    yield Conversation(tree, id=cid, title=None, format=NAME, source=doc.source, metadata={"agent": agent})
