"""The AG-UI 1.0 server: one ``Session`` per thread, a run per turn, over SSE.

Why it is built this way:

- A ``Session`` is not thread-safe, and a run must be able to meet another
  run's turn (the engine's 409, a branch switch that cancels it). So each
  thread has one lock, and a run holds it for one engine step at a time, not
  for the whole run. The session runs with ``autorun=False``; the run's own
  worker thread steps it and turns each step's events into AG-UI events
  (``events.RunEvents``), which the response streams.
- Every session event goes to the run that holds the lock (the one that
  caused it); an event of another run's turn (its ``turn.cancelled`` when a
  branch switch ends it) also goes to that run.
- A client that goes away stops its run: between steps the turn is
  interrupted (``turn.cancelled``), and a streamed model call stops at its next
  chunk and records nothing (the provider is wrapped so its stream raises
  ``convlab.CallCancelled``, and the engine cancels the turn).
- Reads never wait for a turn. Besides its lock each thread has a ``view``
  lock, held while the engine changes the session and let go while the run
  waits for its model (the provider is wrapped: ``_Unlocking``). A
  ``GET /threads/{id}`` takes only ``view``, so it answers from the last
  applied state in milliseconds, ``running`` set, while a reply streams.
- A served session's clock is the wall clock, moved to now before each run,
  so ``idle_secs`` means real seconds.
- No request is answered with a stack trace or an empty 200: every run's
  stream ends in ``RUN_FINISHED`` or ``RUN_ERROR``. A log that cannot be
  written (``convlab.LogError``: a full disk, EIO, a read-only file) refuses
  the input with ``RUN_ERROR`` 507, and a turn it left running is ended by
  the next run; a log that cannot be read (a damaged line, not a regular
  file) answers 409 naming the thread and the line (``RUN_ERROR`` on a run).
- One server per log dir: the app holds an exclusive ``flock`` on
  ``DIR/.convlab-serve.lock`` from ``app()`` until ``close()`` (or the
  process ends), so no two processes ever write one thread's log.

Loading a thread whose log ends in a running turn (the server was killed)
interrupts that turn, so the next run goes on from the same tree; a
``context.limit`` that waits for a person (``worker="manual"``) keeps waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict, Unpack
from urllib.parse import unquote_to_bytes

from ag_ui.core import ResumeEntry, RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..context import load_config
from ..engine import Session, chat_worker
from ..errors import LogError, Refused
from ..providers import LLM, EchoLLM
from .events import RunEvents, refusal, snapshot_run
from .gate import BODY_TIMEOUT, Gate, Guard, Rejected, error, read_json
from .interrupts import ResumeError, actions_for
from .messages import from_agui, to_agui
from .threads import ServedRun, ServedThread, Unreadable, too_long
from .views import UNANSWERED, brings_input, continued, fill_gaps, steers

__all__ = ["AGUIApp", "app", "check_thread_id", "MAX_BODY", "LOCK_NAME", "NAME_MAX", "LOG_FULL", "LOG_DAMAGED"]

log = logging.getLogger("convlab.agui")

#: Request bodies over this many bytes get 413.
MAX_BODY = 10 * 1024 * 1024

#: The lock file that keeps a second server off a log dir.
LOCK_NAME = ".convlab-serve.lock"

#: Bytes a file name may have (Linux's NAME_MAX): a thread's ``<threadId>.jsonl`` must fit.
NAME_MAX = 255

#: The status of an input refused because its thread's log could not be written (507 Insufficient Storage).
LOG_FULL = 507

#: The status of a thread whose log cannot be read (409: the thread's state on disk stands in the way).
LOG_DAMAGED = 409

_STATIC = Path(__file__).parent / "static"


def check_thread_id(thread_id: object) -> str:
    """A thread id that names a log file inside the log dir, or ``ValueError`` saying why not.

    >>> check_thread_id("chat-1")
    'chat-1'
    >>> check_thread_id("../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: threadId: '../etc/passwd' could leave the log dir (it has '..', '/', a backslash or NUL)
    >>> check_thread_id("\U0001F600" * 64)
    Traceback (most recent call last):
    ...
    ValueError: threadId: 262 bytes as the file name '<threadId>.jsonl', over the file system's 255 (use a shorter id)
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"threadId: must be a non-empty string, got {thread_id!r}")
    if len(thread_id) > 128:
        raise ValueError(f"threadId: at most 128 characters, got {len(thread_id)}")
    if ".." in thread_id or "/" in thread_id or "\\" in thread_id or "\0" in thread_id:
        raise ValueError(f"threadId: {thread_id!r} could leave the log dir (it has '..', '/', a backslash or NUL)")
    if thread_id.startswith(".") or any(ord(c) < 32 for c in thread_id):
        raise ValueError(f"threadId: {thread_id!r} starts with '.' or has a control character")
    try:
        size = len(f"{thread_id}.jsonl".encode())
    except UnicodeEncodeError as err:
        raise ValueError(f"threadId: {thread_id!r} is not valid as a file name (a lone surrogate at "
                         f"{err.start} has no UTF-8)") from None
    if size > NAME_MAX:
        raise ValueError(f"threadId: {size} bytes as the file name '<threadId>.jsonl', over the file system's "
                         f"{NAME_MAX} (use a shorter id)")
    return thread_id


class _Refusal(Exception):
    def __init__(self, message: str, code: str, **metadata: object):
        super().__init__(message)
        self.code = code
        self.metadata = metadata


class AGUIApp:
    """The ASGI app ``convlab.agui.app`` returns: ``POST /`` runs, ``GET /`` the chat page,
    ``GET /threads``, ``GET /threads/{id}``, ``GET /health``.

    ``session(thread_id)`` is a thread's live Session (for a Lab in the
    notebook that serves it); ``close()`` releases the log dir.
    """

    def __init__(self, log_dir: str | os.PathLike, config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
                 llm: LLM = None,
                 worker: str | Callable[[dict], list] = "chat", token: str | None = None, *,
                 agent: str = "bot", cors_origins: tuple[str, ...] | list[str] = (),
                 allowed_hosts: tuple[str, ...] | list[str] = (), max_body: int = MAX_BODY,
                 body_timeout: float = BODY_TIMEOUT, on_unanswered: str = "end"):
        if worker not in ("chat", "manual") and not callable(worker):
            raise ValueError(f"worker: must be 'chat', 'manual' or a callable, got {worker!r}")
        if token is not None and (not isinstance(token, str) or not token):
            raise ValueError("token: must be a non-empty string (or None for no token)")
        if not isinstance(max_body, int) or max_body <= 0:
            raise ValueError(f"max_body: must be a positive number of bytes, got {max_body!r}")
        if on_unanswered not in UNANSWERED:
            raise ValueError(f"on_unanswered: must be one of {', '.join(UNANSWERED)}, got {on_unanswered!r}")
        if not isinstance(body_timeout, (int, float)) or not body_timeout > 0:
            raise ValueError(f"body_timeout: must be a positive number of seconds, got {body_timeout!r}")
        self.config = load_config(config, agent)[agent] if config is not None else None
        self.agent = agent
        self.llm = llm if llm is not None else EchoLLM()
        Session(llm=self.llm, autorun=False)  # a bad provider fails here, not at the first run
        self.worker = worker
        self.token = token
        self.max_body = max_body
        self.body_timeout = float(body_timeout)
        self.on_unanswered = on_unanswered
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = _hold_log_dir(self.log_dir)
        self._threads: dict[str, ServedThread] = {}
        self._registry = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="agui-run")  # one run each
        self._page = _page()
        middleware = [Middleware(Gate, cors_origins=cors_origins, allowed_hosts=allowed_hosts)]
        if cors_origins:
            middleware.append(Middleware(CORSMiddleware, allow_origins=list(cors_origins),
                                         allow_methods=["GET", "POST"],
                                         allow_headers=["Authorization", "Content-Type", "Accept"]))
        if token is not None:
            middleware.append(Middleware(Guard, token=token))
        self._asgi = Starlette(routes=[
            Route("/", self._run, methods=["POST"]),
            Route("/", self._chat, methods=["GET"]),
            Route("/health", self._health, methods=["GET"]),
            Route("/threads", self._list, methods=["GET"]),
            Route("/threads/{thread_id}", self._snapshot, methods=["GET"]),
        ], middleware=middleware, exception_handlers={404: _http_error, 405: _http_error})

    def __repr__(self) -> str:
        return f"AGUIApp(log_dir={str(self.log_dir)!r}, worker={self.worker!r}, threads={len(self._threads)})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._asgi(scope, receive, send)

    # -- Python side -------------------------------------------------------
    def session(self, thread_id: str) -> Any:
        """The live ``Session`` of a thread, loaded from its log or started
        (its log is ``log_dir/<thread_id>.jsonl``). The server steps it under
        the thread's lock: watch it (``convlab.Lab(app.session(id))``), and
        drive it through the server (its ``driver`` says so: a Lab on it
        refuses every input, naming the thread).

        >>> import tempfile, convlab
        >>> from convlab import agui
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     served = agui.app(tmp)
        ...     s = served.session("chat-1")
        ...     served.close()
        >>> s.head is None, s.autorun
        (True, False)
        """
        thread = self._thread(check_thread_id(thread_id))
        with thread.changing():
            try:
                return thread.load()
            except Unreadable as err:
                raise LogError(str(err), err.line) from None

    def threads(self) -> list[str]:
        """The ids of the threads in the log dir (and any started since); a file whose name
        is no thread id (not UTF-8, say) is left out."""
        on_disk = set()
        for p in self.log_dir.glob("*.jsonl"):
            with contextlib.suppress(ValueError):
                on_disk.add(check_thread_id(p.name[: -len(".jsonl")]))
        with self._registry:
            live = {tid for tid, t in self._threads.items() if t.session is not None}
        return sorted(on_disk | live)

    def close(self) -> None:
        """Let go of every thread and release the log dir (a session already handed out
        keeps working in memory; the server no longer steps it)."""
        with self._registry:
            threads = list(self._threads.values())
            self._threads.clear()
        for thread in threads:
            with thread.changing():  # no run is left half-way
                thread.session = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _thread(self, thread_id: str) -> ServedThread:
        with self._registry:
            thread = self._threads.get(thread_id)
            if thread is None:
                thread = self._threads[thread_id] = ServedThread(thread_id, self)
            return thread

    def _known(self, thread_id: str) -> ServedThread | None:
        """The thread, if it is live or has a log: a read of a thread that does not exist adds nothing."""
        with self._registry:
            thread = self._threads.get(thread_id)
        if thread is not None and thread.exists():
            return thread
        if os.path.lexists(self.log_dir / f"{thread_id}.jsonl"):
            return self._thread(thread_id)
        return None

    # -- routes ------------------------------------------------------------
    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _chat(self, request: Request) -> Response:
        return HTMLResponse(self._page, headers={"Cache-Control": "no-store"})

    async def _list(self, request: Request) -> Response:
        return JSONResponse({"threads": self.threads()})

    async def _snapshot(self, request: Request) -> Response:
        try:
            unquote_to_bytes(request.scope.get("raw_path", b"").decode("latin-1")).decode("utf-8")
            tid = check_thread_id(request.path_params["thread_id"])
        except UnicodeDecodeError:
            return error(400, "threadId: the path is not UTF-8 once its %-escapes are decoded")
        except ValueError as err:
            return error(400, str(err))
        thread = self._known(tid)
        if thread is None:
            return error(404, f"no thread {tid!r}")
        try:
            return JSONResponse(await asyncio.to_thread(thread.read))
        except Unreadable as err:
            return error(LOG_DAMAGED, str(err), thread=tid, line=err.line)

    async def _run(self, request: Request) -> Response:
        try:
            data = await read_json(request, self.max_body, self.body_timeout)
        except Rejected as err:
            refused = error(err.status, str(err))
            if err.status in (408, 413):  # a body left unread: this connection cannot carry another request
                refused.headers["Connection"] = "close"
            return refused
        try:
            run_input = RunAgentInput.model_validate(data)
        except ValidationError as err:
            return error(400, _fields(err))
        try:
            check_thread_id(run_input.thread_id)
        except ValueError as err:
            return error(400, str(err))
        run = ServedRun(run_input, data["messages"], asyncio.get_running_loop())
        if not data["messages"] and not run_input.resume and self._known(run_input.thread_id) is None:
            run.refuse(snapshot_run(run_input, []))  # a new thread, asked what it holds: nothing, and nothing made
            run.close()
            return StreamingResponse(_drain(run), media_type=EventEncoder().get_content_type())
        thread = self._thread(run_input.thread_id)

        async def stream():
            self._pool.submit(self._drive, thread, run)
            try:
                while True:
                    await run.ready.wait()
                    text, closed = run.take()
                    if text:
                        yield text
                    if closed:
                        return
            finally:
                if not run.done:
                    run.stop.set()  # the client went away: the run interrupts its turn

        return StreamingResponse(stream(), media_type=EventEncoder().get_content_type(),
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    # -- a run, in its own thread ------------------------------------------
    def _drive(self, thread: ServedThread, run: ServedRun) -> None:
        try:
            self._begin(thread, run)
            while not run.done:
                self._step(thread, run)
        except Exception as err:  # a bug must end the run with RUN_ERROR, never a stack trace to the client
            log.exception("run %s on thread %s failed", run.input.run_id, thread.id)
            with thread.changing():
                message = f"internal error: {type(err).__name__}: {err}"
                if run.events is not None:
                    run.events.failed(message, "internal_error")
                else:
                    run.refuse(refusal(message, "internal_error"))
                run.flush()
        finally:
            run.done = True
            with thread.changing():
                if run.turn is not None and thread.runs.get(run.turn) is run:
                    del thread.runs[run.turn]
            run.close()

    def _begin(self, thread: ServedThread, run: ServedRun) -> None:
        """Take the run's input: the view (``messages``, ``state``), the ``resume``, or
        neither (what the thread holds)."""
        with thread.changing():
            s = self._loaded(thread, run)
            if s is None:
                return
            s.advance(max(0.0, time.time() - s.clock))
            thread.current = run
            inp = run.input
            try:
                self._orphan(thread)
                self._take(thread, run)
            except Refused as err:
                run.events = run.events or RunEvents(s, inp, [])
                extra = {"turn_id": err.turn_id} if err.turn_id else {}
                run.events.refused(str(err), str(err.status), {"status": err.status, **extra})
                run.done = True
            except _Refusal as err:
                run.events = RunEvents(s, inp, [])
                run.events.refused(str(err), err.code, err.metadata)
                run.done = True
            except LogError as err:  # nothing was applied (the engine writes ahead)
                run.events = RunEvents(s, inp, [])
                run.events.refused(_unwritten(thread, err), str(LOG_FULL), {"status": LOG_FULL, "thread": thread.id})
                run.done = True
            finally:
                thread.current = None
            if not run.done and run.turn is not None:
                thread.runs[run.turn] = run
            run.flush()

    def _loaded(self, thread: ServedThread, run: ServedRun) -> Any:
        """The thread's session, or None when its log cannot be read or started (the run is refused)."""
        try:
            return thread.load()
        except Unreadable as err:
            run.refuse(refusal(str(err), str(LOG_DAMAGED), {"status": LOG_DAMAGED, "thread": thread.id,
                                                             "line": err.line}))
        except LogError as err:  # a new thread's log cannot be started
            run.refuse(refusal(_unwritten(thread, err), str(LOG_FULL), {"status": LOG_FULL, "thread": thread.id}))
        return None

    def _take(self, thread: ServedThread, run: ServedRun) -> None:
        """The run's input, read as real front ends send it (``convlab.agui.views``)."""
        s, inp = thread.session, run.input
        view: list[Mapping[str, Any]] = [m for m in map(from_agui, run.messages) if m is not None]
        if not view and not inp.resume:
            self._connect(thread, run)
            return
        run.events = RunEvents(s, inp, [m["id"] for m in view])
        view, filled = fill_gaps(view, s)
        if filled:
            run.events.note("view_filled", {"filled": filled, "why": "the client left out these messages above a "
                                            "known one (it deletes an edited message); the tree's path fills the gap"})
        waiting = thread.interrupt()
        if inp.resume:
            actions = self._resume(thread, inp.resume)
            run.turn, run.after = s.running, (view if steers(view, s) else None)
            s.decide(actions)
        elif waiting is not None and brings_input(view, s):
            self._unanswered(thread, run, waiting, view)
        else:
            self._submit(s, run, view)

    def _submit(self, s: Session, run: ServedRun, view: list[Mapping[str, Any]]) -> str | None:
        """Submit the view (with the run's client state) as the run's turn; its id."""
        submit: dict[str, Any] = {"type": "client.messages", "agent_id": s.agent, "messages": view}
        if run.input.state is not None:
            submit["state"] = run.input.state
        receipt = s.submit(submit)
        run.turn = turn = receipt["turn_id"]
        left_out = set(receipt.get("left_out", ()))
        run.started.taken([m for m in view if m.get("id") not in left_out], receipt["new_from"])
        return turn

    def _connect(self, thread: ServedThread, run: ServedRun) -> None:
        """A run with no messages: the active path and the state, nothing written (a reloaded page)."""
        s = thread.session
        waiting = thread.interrupt()
        notes = {"waiting": {"interrupt": waiting}} if waiting is not None else None
        run.refuse(snapshot_run(run.input, [to_agui(n) for n in s.path()], s.state, notes, at=s.clock))

    def _unanswered(self, thread: ServedThread, run: ServedRun, waiting: dict[str, Any],
                    view: list[Mapping[str, Any]]) -> None:
        """New input while a decision waits, and no resume: ``on_unanswered`` says what happens."""
        s = thread.session
        rule = self.on_unanswered
        if rule == "refuse":
            raise _Refusal(f"thread {thread.id!r} waits for a decision (interrupt {waiting['id']!r}: {waiting['message']}) "
                           "and this server takes no new message meanwhile (--on-unanswered refuse): answer it with "
                           "resume first", "409", interrupt_id=waiting["id"])
        actions = [{"type": "turn.end"}] if rule == "end" else chat_worker(s.pending)
        run.started.note("unanswered", {"interrupt_id": waiting["id"], "turn_id": s.running, "rule": rule,
                                       "actions": actions,
                                       "why": "a new message came with no resume for the waiting decision"})
        run.turn = s.running
        s.decide(actions)
        run.after = view

    def _orphan(self, thread: ServedThread) -> None:
        """End a turn that runs with no run to drive it (a log write failed under it, or
        its run died), so the thread never answers 409 for good; a decision that waits
        for a person is left waiting."""
        s = thread.session
        if s.running is None or s.running in thread.runs:
            return
        if self.worker == "manual" and s.pending is not None and s.pending["type"] == "context.limit":
            return
        s.submit({"type": "client.interrupt", "agent_id": s.agent})

    def _resume(self, thread: ServedThread, resume: list[ResumeEntry]) -> list[dict[str, Any]]:
        """The actions a resume answers the waiting context.limit with; ``_Refusal`` writes nothing."""
        waiting = thread.interrupt()
        if waiting is None:
            raise _Refusal(f"no interrupt is waiting on thread {thread.id!r} (answered already, or none was asked): "
                           f"resume {resume[0].interrupt_id!r} answers nothing", "409")
        for i, entry in enumerate(resume):
            if entry.interrupt_id != waiting["id"]:
                raise _Refusal(f"resume[{i}].interruptId: {entry.interrupt_id!r} is not the waiting interrupt "
                               f"{waiting['id']!r} (answered already, or unknown)", "409", interrupt_id=waiting["id"])
        if len(resume) > 1:
            raise _Refusal(f"resume: one entry answers the waiting interrupt, got {len(resume)}", "400")
        entry = resume[0]
        try:
            return actions_for(thread.session.pending, entry.status, entry.payload)
        except ResumeError as err:
            raise _Refusal(str(err), "400") from None

    def _step(self, thread: ServedThread, run: ServedRun) -> None:
        """One engine step of the run's turn, or its end."""
        with thread.changing():
            s = thread.session
            thread.current = run
            try:
                if s.running != run.turn:
                    self._ended(thread, run)
                elif run.stop.is_set():
                    s.submit({"type": "client.interrupt", "agent_id": s.agent})
                    run.done = True
                elif s.pending is not None and self.worker == "manual":
                    if s.pending["type"] == "context.limit":
                        run.started.finished("interrupt", thread.interrupt())
                        run.done = True
                    else:
                        s.decide(chat_worker(s.pending))
                elif not s.step():
                    run.started.failed(f"turn {run.turn} cannot go on (its work in flight was lost)", "internal_error")
                    run.done = True
            except Refused as err:  # the view taken after an answered turn
                run.started.failed(str(err), str(err.status))
                run.done = True
            except LogError as err:  # the step applied nothing; the turn ends now, or at the next run
                with contextlib.suppress(LogError, Refused):
                    s.submit({"type": "client.interrupt", "agent_id": s.agent})
                run.started.failed(_unwritten(thread, err), str(LOG_FULL))
                run.done = True
            finally:
                thread.current = None
            if run.done:
                run.flush()

    def _ended(self, thread: ServedThread, run: ServedRun) -> None:
        s = thread.session
        if run.after is not None:  # the answered turn is over: now the input that came with the answer
            view, run.after = continued(run.after, s), None
            if run.turn is not None:
                thread.runs.pop(run.turn, None)
            turn = self._submit(s, run, view)
            if turn is not None:  # as _begin keeps a run (a None key would never be let go)
                thread.runs[turn] = run
            return
        turn = next(t for t in reversed(s.turns) if t["id"] == run.turn)
        if turn["status"] == "completed":
            run.started.finished("success")
        elif turn["status"] == "cancelled":
            run.started.finished("cancelled")
        else:
            error, stuck = turn.get("error") or f"turn {run.turn} failed", too_long(s)
            if stuck is None:
                run.started.failed(error, "turn_failed")
            else:  # refused as too long after making room: say how the thread goes on (the page marks the message)
                run.started.failed(f"{error}: {stuck['text']}", "turn_failed", {"too_long": stuck})
        run.done = True


class _Options(TypedDict, total=False):
    """What ``app`` passes on to ``AGUIApp`` beside its own arguments (the options its docstring names)."""

    agent: str
    cors_origins: tuple[str, ...] | list[str]
    allowed_hosts: tuple[str, ...] | list[str]
    max_body: int
    body_timeout: float
    on_unanswered: str


def app(log_dir: str | os.PathLike, config: str | os.PathLike[str] | Mapping[str, Any] | None = None, llm: LLM = None,
        worker: str | Callable[[dict], list] = "chat", token: str | None = None, **options: Unpack[_Options]) -> AGUIApp:
    """An ASGI app that serves the threads of ``log_dir`` over AG-UI 1.0.

    ``config`` is the agent's context config (TOML text, a path, the parsed
    document; new threads use it, a thread loaded from its log keeps the
    logged one), ``llm`` a provider (default ``convlab.EchoLLM()``),
    ``worker`` ``"chat"`` (the built-in worker), ``"manual"`` (a
    ``context.limit`` ends the run with an AG-UI interrupt; the other
    decisions are answered as the chat worker would) or a callable worker,
    ``token`` the bearer token every route but ``/health`` then needs.
    Options: ``agent`` (default ``"bot"``), ``cors_origins`` (the origins of
    other pages that may use it; none: CORS off and only its own page),
    ``allowed_hosts`` (Host names it answers to beyond localhost, loopback and
    its own address), ``max_body`` (bytes, default 10 MB), ``body_timeout``
    (seconds a run's body may take, default 30; ``convlab.agui.gate`` says
    why), ``on_unanswered`` (what a new message with no ``resume`` does while a
    decision waits: ``"end"``, the default, ends the waiting turn as "End the
    turn" does; ``"default"`` answers it with what the engine proposed;
    ``"refuse"`` answers 409; either way a ``CUSTOM`` ``convlab.serve.unanswered``
    says so, ``convlab.agui.views``). A second app on the same ``log_dir`` raises ``convlab.LogError``
    until the first is closed.

    >>> import tempfile, convlab
    >>> from convlab import agui
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     served = agui.app(tmp, worker="manual")
    ...     try:
    ...         agui.app(tmp)
    ...     except convlab.LogError as err:
    ...         print("refused:", "another convlab server" in str(err))
    ...     served.close()
    refused: True
    """
    return AGUIApp(log_dir, config=config, llm=llm, worker=worker, token=token, **options)


# -- edges: the log dir's lock, errors, the page ------------------------------------------------------

def _hold_log_dir(log_dir: Path) -> Any:
    path = log_dir / LOCK_NAME
    f = open(path, "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        who = f" (pid {holder})" if holder else ""
        raise LogError(f"{log_dir}: another convlab server{who} holds this log dir ({path}); "
                       "stop it, or serve another --log-dir") from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 and 405, as JSON like every other refusal."""
    status = getattr(exc, "status_code", 404)
    routes = "POST /, GET /, GET /threads, GET /threads/{id}, GET /health"
    return error(status, f"{request.method} {request.url.path!r}: no such route (the routes: {routes})")


async def _drain(run: ServedRun) -> Any:
    """The response of a run answered at once (its events are all there)."""
    yield run.take()[0]


def _unwritten(thread: ServedThread, err: Exception) -> str:
    text = str(err).replace(str(thread.path), thread.path.name)
    return (f"thread {thread.id!r}: its log could not be written, so nothing was taken ({text}); "
            "free some space (or make the log dir writable) and send it again")


def _fields(err: ValidationError) -> str:
    """What is wrong with a RunAgentInput, each field named (camelCase, as on the wire)."""
    out = []
    for e in err.errors(include_url=False)[:5]:
        where = ".".join(_camel(p) for p in e["loc"] if not (isinstance(p, str) and p[:1].isupper()))
        out.append(f"{where or 'body'}: {e['msg']}")
    more = len(err.errors()) - 5
    return "; ".join(out) + (f"; and {more} more" if more > 0 else "")


def _camel(part: int | str) -> str:
    if not isinstance(part, str):
        return str(part)
    head, *rest = part.split("_")
    return head + "".join(w.title() for w in rest)


def _page() -> str:
    """The chat page: its HTML with its stylesheet and ES module inlined (a module
    script cannot send the token, so the page is one document)."""
    html = (_STATIC / "chat.html").read_text(encoding="utf-8")
    css = (_STATIC / "chat.css").read_text(encoding="utf-8")
    js = (_STATIC / "chat.js").read_text(encoding="utf-8")
    if "</script" in js.lower() or "</style" in css.lower():  # pragma: no cover - a check on our own files
        raise RuntimeError("chat.js/chat.css must not close their own element")
    return html.replace("/*CHAT_CSS*/", css).replace("//CHAT_JS", js)
