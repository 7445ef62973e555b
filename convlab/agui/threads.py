"""A served thread: its session, its two locks, the runs that drive it, and the provider
wrapped for it.

Why two locks: a run holds ``lock`` (taken in the order asked, ``_FairLock``)
for one engine step at a time, so another run meets its turn (the engine's
409) between two steps. ``view`` is held with it while the engine changes
the session, and let go while the step waits for its model (the provider is
wrapped: ``_Unlocking``), so a read of the thread answers from the last
applied state at once, even while a reply streams. A streaming provider is
also ``_Stoppable``: once its run's client is gone the stream raises
``convlab.CallCancelled`` at its next chunk, and the engine cancels the turn.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder

from ..context import ContextConfig, kept
from ..engine import Session, WorkerLike
from ..errors import CallCancelled, LogError
from ..providers import Provider, StreamingProvider, can_stream, cut_at_limit, secrets_of
from ..text import brief
from ..tokens import count_tokens
from ..tree import lane_from, newest_leaves, nodes_in_order, path_to
from .events import RunEvents
from .interrupts import interrupt_of

__all__ = ["AppSettings", "ServedThread", "ServedRun", "Unreadable", "served_llm", "too_long"]


class AppSettings(Protocol):
    """What a served thread reads of the app that serves it (``server.AGUIApp``, which owns its threads
    and hands itself to each): where the thread's log is and what its session is made with, read when
    used. A thread knows nothing else of the app, so the imports point one way: server -> threads."""

    @property
    def log_dir(self) -> Path: ...

    @property
    def config(self) -> ContextConfig | None: ...

    @property
    def agent(self) -> str: ...

    @property
    def llm(self) -> Provider | Mapping[str, Provider]: ...

    @property
    def worker(self) -> WorkerLike: ...


def served_llm(llm: Provider | Mapping[str, Provider], thread: ServedThread) -> _Unlocking | dict[str, _Unlocking]:
    """The app's provider(s) for ``thread``: each lets go of the thread's ``view`` while
    it waits for the model, and a streaming one stops mid-stream when its client is gone."""
    def wrap(p: Provider) -> _Unlocking:
        return _Stoppable(p, thread) if can_stream(p) else _Unlocking(p, thread)

    if isinstance(llm, Mapping):
        return {name: wrap(p) for name, p in llm.items()}
    return wrap(llm)


class _Unlocking:
    """A provider that lets go of its thread's ``view`` lock while it waits for the model,
    so a read of the thread answers meanwhile."""

    def __init__(self, provider: Provider, thread: ServedThread):
        self.provider = provider
        self.thread = thread

    def __repr__(self) -> str:
        return repr(self.provider)

    @property
    def latency(self) -> float:
        return float(getattr(self.provider, "latency", 0.0) or 0.0)

    def secrets(self) -> list[str]:
        return secrets_of(self.provider)

    def complete(self, request: Mapping[str, Any]) -> Any:
        with self.thread.waiting():
            return self.provider.complete(request)


class _Stoppable(_Unlocking):
    """A streaming provider whose stream stops at the next chunk once its run's client is gone."""

    provider: StreamingProvider

    def __init__(self, provider: StreamingProvider, thread: ServedThread):
        super().__init__(provider, thread)

    def stream(self, request: Mapping[str, Any]) -> Any:
        with self.thread.waiting():
            chunks = self.provider.stream(request)
            items = iter(chunks)
        try:
            while True:
                with self.thread.waiting():
                    chunk = next(items, _END)
                if chunk is _END:
                    return
                run = self.thread.current
                if run is not None and run.stop.is_set():
                    raise CallCancelled("interrupted: the client went away")
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


_END = object()


class Unreadable(Exception):
    """A thread whose log cannot be read; the message names the thread, the file and the line."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.line = line


class ServedRun:
    """One POST: its input, its events, and the chunks its response streams.

    The run's thread appends encoded chunks to ``chunks`` and wakes the
    response only when it is not awake already: a burst of events costs one
    hand-over between the threads, not one each.
    """

    def __init__(self, run: RunAgentInput, messages: list[dict], loop: asyncio.AbstractEventLoop):
        self.input = run
        self.messages = messages  # the input's messages as sent (wire dicts, checked by RunAgentInput)
        self.loop = loop
        self.ready = asyncio.Event()
        self.chunks: collections.deque = collections.deque()
        self.closed = False
        self.stop = threading.Event()
        self.turn: str | None = None
        self.done = False
        self.after: list[Mapping[str, Any]] | None = None  # a view to take once the run's (answered) turn ends
        self.events: RunEvents | None = None  # made when the run's input is taken (AGUIApp._take)
        self._sent = 0
        self._woken = False
        self._encoder = EventEncoder()

    @property
    def started(self) -> RunEvents:
        """The run's events, once its input was taken: every step after that reads them."""
        if self.events is None:
            raise RuntimeError("the run's input was not taken yet: it has no events")
        return self.events

    def flush(self) -> None:
        """Encode the events not sent yet and hand them to the response."""
        if self.events is None:
            return
        new = self.events.events[self._sent:]
        if not new:
            return
        self._sent += len(new)
        self.chunks.append("".join(self._encoder.encode(e) for e in new))
        self._wake()

    def refuse(self, events: list[Any]) -> None:
        """End the run before it began with these events (a RUN_ERROR), sent at once."""
        self.chunks.append("".join(self._encoder.encode(e) for e in events))
        self.done = True
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._woken:
            return
        self._woken = True
        with contextlib.suppress(RuntimeError):  # the server's loop is gone: nobody listens
            self.loop.call_soon_threadsafe(self.ready.set)

    def take(self) -> tuple[str, bool]:
        """What is there to send, and whether the run is over (in the response's loop).

        The wake-up is re-armed first, then ``closed`` is read, then the chunks: a
        chunk or a close that comes after re-arming wakes the response again, and
        one that came before is seen here (reading ``closed`` before re-arming lost
        a close that fell between the two, and the response waited for ever)."""
        self.ready.clear()
        self._woken = False
        closed = self.closed
        parts = []
        while self.chunks:
            parts.append(self.chunks.popleft())
        return "".join(parts), closed


class _FairLock:
    """A lock taken in the order it was asked for. A run takes its thread's lock
    once per engine step; with a plain lock the running run takes it back at
    once and another client waits for the whole run instead of meeting the
    turn (and its 409) between two steps."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._next = 0
        self._serving = 0

    def __enter__(self) -> _FairLock:
        with self._cv:
            ticket = self._next
            self._next += 1
            while self._serving != ticket:
                self._cv.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._serving += 1
            self._cv.notify_all()


class ServedThread:
    """One AG-UI thread: its session (loaded on first use), its locks, its runs.

    ``lock`` (fair) is held by a run for one engine step at a time; ``view``
    is held with it while the engine changes the session, and let go while
    the step waits for its model (``waiting``). ``changing()`` takes both.
    """

    def __init__(self, thread_id: str, app: AppSettings):
        self.id = thread_id
        self.app = app
        self.path = app.log_dir / f"{thread_id}.jsonl"
        self.lock = _FairLock()
        self.view = threading.Lock()
        self._changer: int | None = None  # the thread (OS) that holds view through changing()
        self.session: Any = None
        self.current: ServedRun | None = None  # the run holding the lock
        self.runs: dict[str, ServedRun] = {}  # turn id -> the run driving it

    @contextlib.contextmanager
    def changing(self) -> Iterator[None]:
        """Hold the thread for one engine step: ``lock``, then ``view``."""
        with self.lock, self.view:
            self._changer = threading.get_ident()
            try:
                yield
            finally:
                self._changer = None

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Let go of ``view`` while the step waits for its model (a no-op outside ``changing``:
        a notebook that drives ``app.session(id)`` itself)."""
        if self._changer != threading.get_ident():
            yield
            return
        self._changer = None
        self.view.release()
        try:
            yield
        finally:
            self.view.acquire()
            self._changer = threading.get_ident()

    def exists(self) -> bool:
        return self.session is not None or os.path.lexists(self.path)

    def load(self) -> Any:
        """The thread's session: loaded from its log, or new (call under ``changing()``).
        Raises ``Unreadable`` for a log that cannot be read."""
        if self.session is not None:
            return self.session
        app = self.app
        llm = served_llm(app.llm, self)
        if self._readable():
            try:
                s = Session.load(self.path, llm=llm, worker=app.worker, autorun=False, clock=time.time())
            except LogError as err:
                where = f" at line {err.line}" if err.line else ""
                text = str(err).replace(str(self.path), self.path.name)
                raise Unreadable(f"thread {self.id!r}: its log cannot be read{where}: {text}", err.line) from None
            waits = s.pending is not None and s.pending["type"] == "context.limit" and app.worker == "manual"
            if s.running is not None and not waits:
                s.submit({"type": "client.interrupt", "agent_id": s.agent})  # its work in flight died with the server
        else:
            s = Session(config=app.config, agent=app.agent, llm=llm, worker=app.worker, autorun=False,
                        log=self.path, clock=time.time())
        s.driver = f"the AG-UI server (thread {self.id!r}): send to it there"
        s.subscribe(self.on_event)
        self.session = s
        return s

    def _readable(self) -> bool:
        """Whether the thread has a log to load (False: a new thread); ``Unreadable`` for a
        name that is there but no regular file (a directory, a symlink)."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "a directory" if stat.S_ISDIR(info.st_mode) else "no file"
            raise Unreadable(f"thread {self.id!r}: its log {self.path.name} is {kind}, not a regular file "
                              "(convlab serve reads and writes only the files of its log dir): move it away", None)
        return info.st_size > 0

    def read(self) -> dict[str, Any]:
        """The thread as ``GET /threads/{id}`` shows it: the last applied state (under ``view`` only)."""
        if self.session is None:
            with self.changing():
                self.load()
        with self.view:
            s = self.session
            return {"thread": self.id, **s.snapshot(), **paths_of(s), "running": s.running, "interrupt": self.interrupt(),
                    "too_long": too_long(s)}

    def on_event(self, event: Mapping[str, Any]) -> None:
        run = self.current
        if run is not None and run.events is not None:
            run.events.on_event(event)
            if event["type"] in ("llm.delta", "llm.started"):
                run.flush()  # before a model call, and its text as it comes; the rest at the run's end
        turn = event.get("turn_id")
        other = self.runs.get(turn) if isinstance(turn, str) else None
        if other is not None and other is not run and other.events is not None:
            other.events.on_event(event)

    def interrupt(self) -> dict[str, Any] | None:
        """The waiting AG-UI interrupt (a context.limit for a person), or None."""
        s = self.session
        if self.app.worker != "manual" or s is None or s.pending is None or s.pending["type"] != "context.limit":
            return None
        seq = next(e["seq"] for e in reversed(s.events) if e["type"] == "decision.requested")
        return interrupt_of(s.pending, seq)


def too_long(session: Session) -> dict[str, Any] | None:
    """How the thread can go on when its last turn failed because the model refused the path as too long even
    after the engine made room (nothing happened since): every later message on that path is refused the same
    way, until the person edits the message that is too long, or branches before it. ``message``: the longest
    message of the input the model must answer (``convlab.kept``; its id on the path, which the page marks: after
    the engine made room, a copy the summary kept, ``copied_from`` naming the one sent), ``tokens`` about how many
    it holds (o200k_base), ``window`` the model's context when the provider says it (``n_ctx``), and ``text``
    what to do, said in the run's error and on the page. None otherwise.
    """
    turns = session.turns
    events = session.events
    if not turns or turns[-1]["status"] != "failed" or not events or events[-1]["type"] != "turn.failed":
        return None
    failed = None
    for ev in reversed(events):  # the last turn's own events, from its end back to its start
        if ev.get("turn_id") != turns[-1]["id"] or ev["type"] == "turn.started":
            break
        if ev["type"] == "llm.failed":
            failed = ev
            break
    if failed is None or failed.get("error") != "too_long":
        return None
    path = session.path()
    asked = kept(reversed(path)) or path
    if not asked:
        return None
    sizes = {m["id"]: count_tokens([m]) for m in asked if m["role"] == "user"} or \
        {m["id"]: count_tokens([m]) for m in asked}
    message = max(sizes, key=lambda mid: sizes[mid])
    windows = [getattr(getattr(p, "provider", p), "n_ctx", None) for p in session.llms.values()]
    window = next((w for w in windows if isinstance(w, int) and not isinstance(w, bool)), None)
    holds = f" (its context holds {window:,} tokens)" if window else ""
    start = brief(session.message_tree.node(message)["content"])
    quoted = start if len(start) <= 60 else start[:57].rstrip() + "..."
    text = (f"the model cannot read this path even after making room: the message \"{quoted}\" (about "
            f"{sizes[message]:,} tokens) is too long for it{holds}, and every message after it on this path is refused "
            f"the same way. Edit that message (shorter), or branch before it: edit an earlier message, or switch to "
            f"another branch.")
    return {"message": message, "tokens": sizes[message], "window": window, "text": text}


def paths_of(session: Session) -> dict[str, Any]:
    """The paths the chat page walks, so that it never walks the tree itself: ``path`` (ids root ->
    head) and ``lanes`` (per sibling of a message on it, the ids from that sibling down to the newest
    leaf under it: where switching to it lands, ``convlab.tree.lane_from``); and ``cut``, the replies
    that stopped at the token limit (``convlab.providers.cut_at_limit``), which the page marks."""
    graph = session.tree
    path = path_to(graph.nodes, session.head)
    on_path = set(path)
    newest = newest_leaves(nodes_in_order(graph))
    lanes = {k: lane_from(graph, k, newest) for parent in [None, *path] for k in session.children(parent) if k not in on_path}
    cut = [n for n, attrs in graph.nodes(data=True) if attrs.get("role") == "assistant" and cut_at_limit(attrs)]
    return {"path": path, "lanes": lanes, "cut": cut}
