"""Session: an executable, deterministic model of one agent's session in the engine.

``Session`` is made of parts, each a class in its own module built on the one before it, so
that a part calls only what is below it and the imports point one way:

- ``journal``: the state and the one way it changes (events, ``_apply`` the reducer, ``_atomic``,
  the ids, a log read back); ``Answer`` (the answer in flight) and ``CallBook`` (what the events say
  about model calls).
- ``reading``: the read surface (``tree``, ``head``, ``path``, ``tokens``, ``view``, ``snapshot``,
  ``pending``, ``decision``, ``subscribe``).
- ``turns``: a turn starts, the worker is asked in it, it ends (``_end_turn``, the one way).
- ``calls``: model calls and making room (``_call``, ``_hold``, ``_plan``, ``_summarize``,
  ``_replace``).
- ``decisions``: ``run``, ``step``, ``decide``: the worker's answers and their actions.
- ``intake``: ``submit``: client input and the queue.
- ``branches``: labels (convlab's own events), merging a branch back, summarizing from a point.
- here: ``Session`` itself, new (``Session(...)``) or loaded from its log (``Session.load``).

Rules are docs/protocol.md's; where it is silent the engine decides, and the
docstring of the method says so ("gap").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, cast

from .. import providers
from ..context import ConfigLike, coerce
from ..errors import LogError
from ..log import LogWriter, checked_event, event_at, read_lines
from ..wire import EVENT_FIELDS
from .branches import Branches
from .calls import Calls
from .decisions import Decisions
from .intake import Intake
from .journal import Journal
from .reading import Reading
from .turns import Turns
from .workers import WorkerLike

__all__ = ["Session"]


class Session(Branches, Intake, Decisions, Calls, Turns, Reading, Journal):
    """One agent's session: the tree, the head, turns and the queue, decisions,
    the context count and strategies, and the session log.

    >>> s = Session()
    >>> s.submit({"type": "client.message", "agent_id": "bot",
    ...           "message": {"id": "u1", "role": "user", "content": "hi"}})
    {'status': 200, 'turn_id': 't1', 'queued': False, 'merged': False, 'duplicate': False}
    >>> [(m["id"], m["role"], m["content"]) for m in s.path()]
    [('u1', 'user', 'hi'), ('e1', 'assistant', 'echo: hi')]
    """

    #: The event types a session records (docs/wire.md), and the notices it only tells
    #: its subscribers (no ``seq``, never logged): what ``subscribe(types=...)`` picks from.
    EVENTS: tuple[str, ...] = tuple(EVENT_FIELDS)
    NOTICES: tuple[str, ...] = ("llm.delta", "session.restored")
    #: Who drives the session, when it is not whoever holds it (None): the AG-UI server sets it on the
    #: sessions it serves, which it steps under its own locks. The engine never reads it; a view of such
    #: a session (a Lab) only watches, and says who to send to.
    driver: str | None = None

    def __init__(
        self,
        config: ConfigLike = None,
        agent: str = "bot",
        llm: providers.LLM = None,
        worker: WorkerLike = "chat",
        autorun: bool = True,
        log: str | os.PathLike | None = None,
        clock: float | None = None,
        keep_events: int | None = None,
    ):
        """``keep_events`` (default: all) keeps only that many of the newest events in memory: the
        older ones go to a scratch file and are read back when asked for (``events`` is then a
        read-only sequence, ``convlab.lazy.LazyEvents``). For a session that lives long, a server's
        or a replay of a long log: its memory stops growing with its events."""
        self._setup(agent, coerce(config, agent), llm, worker, autorun, clock, keep_events)
        self._log = LogWriter(log) if log is not None else None
        self._emit("session.started", agent=agent, config=self.config.to_dict())

    def __repr__(self) -> str:
        return (
            f"Session(agent={self.agent!r}, messages={len(self._tree)}, head={self.head!r}, "
            f"turns={len(self.turns)}, running={self._running!r}, queued={len(self._queue)})"
        )

    @classmethod
    def load(
        cls,
        source: str | os.PathLike | BinaryIO,
        *,
        config: ConfigLike = None,
        agent: str | None = None,
        llm: providers.LLM = None,
        worker: WorkerLike = "chat",
        autorun: bool = True,
        clock: float | None = None,
        append: bool | None = None,
        lazy: bool = False,
        keep_events: int | None = None,
    ) -> Session:
        """Rebuild a session from its log, in one pass, and go on appending to it.

        ``source`` is the log's path, or a binary file object open on it (a
        member of an archive, bytes in memory: ``io.BytesIO(raw)``).
        ``append`` (default: True for a path) goes on writing to the log;
        ``append=False`` loads without writing: the session goes on in memory
        only (a fork of the log), and a torn last line is left in the file. A
        file object is never written. ``lazy=True`` (a path only) keeps only
        the tree's structure and the active path's contents in memory; other
        contents (and the events) are read from the log when asked for
        (``convlab.lazy``). Every result equals eager loading. ``config``
        replaces the logged config; ``agent``, when given, must be the log's;
        ``keep_events`` is ``Session``'s.

        A torn last line is dropped (``LogWarning``) and cut off the file; a
        bad earlier line raises ``LogError`` with ``.line``. A turn that was
        running when the log ends is loaded as running: new submits get 409
        until an interrupt (a decision that was waiting still waits).

        >>> import io, json
        >>> s = Session(); _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        >>> raw = "".join(json.dumps(e) + "\\n" for e in s.events).encode()
        >>> Session.load(io.BytesIO(raw)).snapshot() == s.snapshot()
        True
        """
        path = None if hasattr(source, "read") else cast("str | os.PathLike[str]", source)
        is_file = path is None
        name = getattr(source, "name", "the log") if path is None else os.fspath(path)
        if append is None:
            append = not is_file
        if is_file and (append or lazy):
            raise ValueError(f"Session.load of a file object: {'append' if append else 'lazy'}=True needs the log's path")
        lines = read_lines(source, repair=append)
        head = next(lines, None)
        if head is None:
            raise LogError(f"{name}: the log is empty", line=1)
        self = cls._started_from(name, event_at(name, head), head[0], config, agent, llm, worker, autorun, keep_events)
        self._replay_log(name, head, lines, lazy=path if lazy else None)  # (a file object with lazy=True was refused above)
        self.clock = max(float(self.events[-1]["time"]), float(clock or 0.0))
        if append and path is not None:  # (likewise)
            self._log = LogWriter(path, new=False)
        return self

    @classmethod
    def from_events(
        cls,
        events: Sequence[Mapping[str, Any]],
        *,
        config: ConfigLike = None,
        agent: str | None = None,
        llm: providers.LLM = None,
        worker: WorkerLike = "chat",
        autorun: bool = True,
        clock: float | None = None,
        keep_events: int | None = None,
        shared: bool = False,
    ) -> Session:
        """A session rebuilt from ``events`` held in memory (the first events of another session, say), as
        ``load`` rebuilds one from its log's lines, in memory only. Each event is copied as its log line
        would read back (``jsondata.copy``), so the two sessions share nothing; no JSON is written and read
        again. ``shared=True`` takes the events as they are, uncopied, for a caller that never changes
        them nor anything in them (a session never changes an event it recorded, nor a value a message
        holds): a replay's fork of a long log, ``convlab.replaying.driver.Replayer.fork``. The other
        arguments are ``load``'s; a bad event raises ``LogError`` naming it.

        >>> s = Session(); _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        >>> Session.from_events(s.events).snapshot() == s.snapshot()
        True
        """
        name = "the events"
        if not events:
            raise LogError(f"{name}: there are none", line=1)
        try:
            first = checked_event(events[0])
        except ValueError as err:
            raise LogError(f"{name}: event 1 is not a valid event: {err}", line=1) from None
        self = cls._started_from(name, first, 1, config, agent, llm, worker, autorun, keep_events)
        self._replay_events(name, events, copied=not shared)
        self.clock = max(float(self.events[-1]["time"]), float(clock or 0.0))
        return self

    @classmethod
    def _started_from(cls, name: str, first: Mapping[str, Any], line: int, config: ConfigLike, agent: str | None,
                      llm: providers.LLM, worker: WorkerLike, autorun: bool, keep_events: int | None) -> Session:
        """A session set up as the first event of its log (``line``) says (``session.started``: the agent, its
        config unless ``config`` replaces it), its events not read yet; an event that says no such thing, or
        another agent than ``agent``, is a ``LogError``."""
        if first.get("type") != "session.started":
            raise LogError(f"{name}: line {line} is {first.get('type')!r}, not session.started", line=line)
        logged_agent = first.get("agent")
        if not isinstance(logged_agent, str):
            raise LogError(f"{name}: line {line}: session.started names no agent (agent: {logged_agent!r})", line=line)
        if agent is not None and agent != logged_agent:
            raise LogError(f"{name}: the log is agent {logged_agent!r}, not {agent!r}")
        logged = {"agent": {logged_agent: {"context": first.get("config") or {}}}}
        self = cls.__new__(cls)
        self._setup(logged_agent, coerce(logged if config is None else config, logged_agent), llm, worker, autorun, None,
                    keep_events)
        return self
