"""Lazy session logs: the tree's structure in memory, contents in the log.

The engine keeps the active branch in memory; every other branch stays in the
session log and is loaded again when a view names it. ``Session.load(path,
lazy=True)`` does the same: ``LazyTree`` (a ``Tree`` over a ``LogStore``, the
storage protocol of ``convlab.tree``) keeps, per message, its id, parent,
role, depth, top-level message and nearest node with worker state, character
counts, the reported input of a model reply and the byte offset of its
``message.new`` line, in flat arrays (tens of bytes a message, not the
kilobytes of its content). A message's full attributes are read from the log
when something asks for them: the active path, a view that names it,
``snapshot()``, a widget. ``LazyEvents`` does the same for the event list.

Every observable result equals eager loading; only memory differs. Asking
for ``tree`` (the whole networkx graph) builds it once, reading every message.
"""

from __future__ import annotations

import json
import marshal
import os
import tempfile
import warnings
from array import array
from collections.abc import Iterator, Sequence
from typing import IO, Any, cast, overload

import networkx as nx

from . import jsondata
from .errors import CacheWarning
from .store import Record
from .tree import Tree, new_node, nodes_in_order
from .wire import Event

__all__ = ["LazyTree", "LogStore", "LazyEvents"]

_ROLE_CODES = {"system": 0, "user": 1, "assistant": 2, "tool": 3}


class _LogReader:
    """Reads one JSON line at a byte offset of the log."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._fh: IO[bytes] | None = None

    def read(self, offset: int) -> dict[str, Any]:
        if self._fh is None:
            self._fh = open(self.path, "rb")
        self._fh.seek(offset)
        return json.loads(self._fh.readline())

    def __del__(self) -> None:  # the handle lives as long as the lazy session that reads through it
        if self._fh is not None:
            self._fh.close()


class LogStore:
    """A ``NodeStore`` (``convlab.store``) that keeps messages' contents in the session
    log: per node, flat arrays of indices and numbers (its parent, children,
    ``Record`` and nearest node with worker state) and the byte offset of its
    ``message.new`` line, from which its attributes are read when asked for (then
    kept). ``offset`` is the offset of the line being applied while loading; a node
    put with offset -1 (added after loading) is kept in memory.
    """

    def __init__(self, path: str | os.PathLike):
        self._reader = _LogReader(path)
        self.offset = -1
        self._idx: dict[str, int] = {}
        self._ids: list[str] = []
        self._par = array("q")
        self._role = bytearray()
        self._nchars = array("q")
        self._ncum = array("q")
        self._nlast = array("q")  # index of the last model reply at or above, -1
        self._ninput = array("q")  # reported input of a model reply, -1
        self._noff = array("q")  # offset of the message.new line, -1 in memory
        self._first = array("q")  # first child, -1
        self._lastkid = array("q")  # last child, -1
        self._next = array("q")  # next sibling, -1
        self._ndepth = array("q")  # messages root -> it
        self._nroot = array("q")  # index of its top-level ancestor
        self._nnear = array("q")  # index of the nearest node with worker state at or above, -1
        self._cache: dict[int, dict[str, Any]] = {}  # the nodes read (Node dicts), by index
        self._states: dict[int, dict[str, Any]] = {}
        self._built: nx.DiGraph | None = None

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._idx

    def put(self, attrs: dict[str, Any], record: Record) -> dict[str, Any]:
        nid, parent = attrs["id"], attrs["parent"]
        idx = self._idx

        i = len(self._ids)
        p = -1 if parent is None else idx[parent]
        idx[nid] = i
        self._ids.append(nid)
        self._par.append(p)
        self._role.append(_ROLE_CODES[attrs["role"]])
        self._nchars.append(record.chars)
        self._ncum.append(record.cum)
        self._ninput.append(-1 if record.reported is None else record.reported)
        self._nlast.append(-1 if record.last_call is None else idx[record.last_call])
        self._noff.append(self.offset)
        self._first.append(-1)
        self._lastkid.append(-1)
        self._next.append(-1)
        self._ndepth.append(record.depth)
        self._nroot.append(idx[record.top])
        self._nnear.append(-1)
        if p >= 0:
            if self._first[p] < 0:
                self._first[p] = i
            else:
                self._next[self._lastkid[p]] = i
            self._lastkid[p] = i
        if attrs["state"] is not None:
            self._states[i] = jsondata.copy(attrs["state"])
        if self.offset < 0:
            self._cache[i] = attrs
        if self._built is not None:
            self._built.add_node(nid, **attrs)
            if parent is not None:
                self._built.add_edge(parent, nid)
            return self._built.nodes[nid]
        return attrs

    def _read(self, i: int) -> dict[str, Any]:
        ev = self._reader.read(self._noff[i])
        attrs = new_node(ev["message"])
        attrs["state"] = jsondata.copy(self._states.get(i))
        return cast(dict[str, Any], attrs)

    def attrs(self, node_id: str) -> dict[str, Any]:
        if self._built is not None:
            return self._built.nodes[node_id]
        i = self._idx[node_id]
        attrs = self._cache.get(i)
        if attrs is None:
            attrs = self._cache[i] = self._read(i)
        return attrs

    def parent(self, node_id: str) -> str | None:
        p = self._par[self._idx[node_id]]
        return None if p < 0 else self._ids[p]

    def record(self, node_id: str) -> Record:
        i, ids = self._idx[node_id], self._ids
        last, reported = self._nlast[i], self._ninput[i]
        return Record(self._ndepth[i], ids[self._nroot[i]], self._nchars[i], self._ncum[i],
                      None if last < 0 else ids[last], None if reported < 0 else reported)

    def children(self, node_id: str) -> list[str]:
        out = []
        k = self._first[self._idx[node_id]]
        while k >= 0:
            out.append(self._ids[k])
            k = self._next[k]
        return out

    def state(self, node_id: str) -> dict[str, Any] | None:
        return self._states.get(self._idx[node_id])

    def set_state(self, node_id: str, state: dict[str, Any]) -> None:
        i = self._idx[node_id]
        self._states[i] = state
        if self._built is not None:
            self._built.nodes[node_id]["state"] = jsondata.copy(state)
        elif i in self._cache:
            self._cache[i]["state"] = jsondata.copy(state)

    def near(self, node_id: str) -> str | None:
        k = self._nnear[self._idx[node_id]]
        return None if k < 0 else self._ids[k]

    def set_near(self, node_id: str, near: str | None) -> None:
        self._nnear[self._idx[node_id]] = -1 if near is None else self._idx[near]

    def nodes_in_order(self) -> list[dict[str, Any]]:
        if self._built is not None:
            return [dict(a) for a in nodes_in_order(self._built)]
        return [dict(self._cache[i]) if i in self._cache else self._read(i) for i in range(len(self._ids))]

    def graph(self) -> nx.DiGraph:
        """The whole graph, built on first use by reading every message (then kept)."""
        if self._built is None:
            g: nx.DiGraph = nx.DiGraph()
            for i, nid in enumerate(self._ids):
                attrs = self._cache[i] if i in self._cache else self._read(i)
                g.add_node(nid, **attrs)
                p = self._par[i]
                if p >= 0:
                    g.add_edge(self._ids[p], nid)
            self._built = g
            self._cache = {}
        return self._built


class LazyTree(Tree):
    """A ``Tree`` whose messages' contents stay in the session log: a ``Tree`` over a
    ``LogStore``; it adds only what loading needs (``offset``, ``warm``).

    ``offset`` is the byte offset of the ``message.new`` line being applied
    while loading; messages added after loading (offset -1) are kept in memory.
    """

    def __init__(self, path: str | os.PathLike):
        self._log_store = LogStore(path)
        super().__init__(self._log_store)

    @property
    def offset(self) -> int:
        """The byte offset of the ``message.new`` line being applied (-1: none)."""
        return self._log_store.offset

    @offset.setter
    def offset(self, value: int) -> None:
        self._log_store.offset = value

    def warm(self, node_ids: list[str]) -> None:
        """Read these messages into memory now (the active path after loading)."""
        for n in node_ids:
            self.node(n)


class LazyEvents(Sequence):
    """The session's events, in order: those a lazy load read from the log (by offset), then, with
    ``keep``, those older than the newest ``keep`` in a scratch file (spilled), then the newest in
    memory.

    The scratch file is a temporary file the system has already unlinked: it goes with the session
    (or the process), and nothing is left behind. Events go to it ``keep`` at a time, once twice as
    many wait in memory, each as ``marshal`` writes it (exact for whatever a session in memory holds:
    a lone surrogate, NaN, an integer past 64 bits), and are read back (equal, not the same objects)
    when asked for. A scratch that cannot be made or written (a full or read-only temporary folder) is
    one ``CacheWarning`` naming the folder and why: the events stay in memory, and nothing is lost.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, keep: int | None = None):
        self._reader = _LogReader(path) if path is not None else None
        self._offsets = array("q")
        self._keep = keep if hasattr(os, "pwrite") else None  # (a system without pread/pwrite keeps them all)
        self._scratch: IO[bytes] | None = None
        self._spilled = array("q", [0])  # the scratch's line starts, then its end
        self._tail: list[Event] = []
        self._n = 0  # how many in all (len() is asked for at every event)

    def add_logged(self, offset: int) -> None:
        self._offsets.append(offset)
        self._n += 1

    def append(self, event: Event) -> None:
        self._tail.append(event)
        self._n += 1
        if self._keep is not None and len(self._tail) >= 2 * self._keep:
            self._spill()

    def _spill(self) -> None:
        """The oldest ``keep`` events in memory to the scratch file; on any failure, none of them."""
        assert self._keep is not None
        keep, self._keep = self._keep, None  # off while it runs, and for good when it fails
        try:
            lines = [marshal.dumps(cast(dict, ev)) for ev in self._tail[:keep]]
            if self._scratch is None:
                self._scratch = tempfile.TemporaryFile(prefix="convlab-events-", buffering=0)  # nothing held back
            data, at = memoryview(b"".join(lines)), self._spilled[-1]
            while data:  # a write past what is spilled: a failed one leaves those as they were
                written = os.pwrite(self._scratch.fileno(), data, at)
                data, at = data[written:], at + written
        except (OSError, TypeError, ValueError, RecursionError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            folder = tempfile.gettempdir()
            warnings.warn(CacheWarning(f"convlab: a long session's older events stay in memory: they cannot go to a "
                                       f"scratch file in {folder} ({reason})", folder=folder, reason=reason), stacklevel=4)
            return
        end = self._spilled.pop()
        for line in lines:
            self._spilled.append(end)
            end += len(line)
        self._spilled.append(end)
        del self._tail[:keep]
        self._keep = keep

    def __len__(self) -> int:
        return self._n

    def _one(self, i: int) -> Event:
        n = len(self._offsets)
        if i < n:
            assert self._reader is not None
            return cast(Event, self._reader.read(self._offsets[i]))  # a logged event
        i -= n
        if i < len(self._spilled) - 1:
            assert self._scratch is not None
            start = self._spilled[i]
            return cast(Event, marshal.loads(os.pread(self._scratch.fileno(), self._spilled[i + 1] - start, start)))
        return self._tail[i - len(self._spilled) + 1]

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            return [self._one(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("event index out of range")
        return self._one(i)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self)):
            yield self._one(i)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"LazyEvents({len(self)} events)"

    def __del__(self) -> None:  # the scratch file goes with the events (the system unlinked it when it was made)
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            scratch.close()
