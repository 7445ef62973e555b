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
- A served session's clock is the wall clock, moved to now before each run,
  so ``idle_secs`` means real seconds.
- One server per log dir: the app holds an exclusive ``flock`` on
  ``DIR/.convlab-serve.lock`` from ``app()`` until ``close()`` (or the
  process ends), so no two processes ever write one thread's log.

Loading a thread whose log ends in a running turn (the server was killed)
interrupts that turn, so the next run goes on from the same tree; a
``context.limit`` that waits for a person (``worker="manual"``) keeps waiting.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import convlab

from ..providers import secrets_of
from ..tree import lane_from, newest_leaves, nodes_in_order, path_to
from .events import RunEvents
from .interrupts import ResumeError, actions_for, interrupt_of
from .messages import from_agui

__all__ = ["AGUIApp", "app", "check_thread_id", "MAX_BODY", "LOCK_NAME"]

log = logging.getLogger("convlab.agui")

#: Request bodies over this many bytes get 413.
MAX_BODY = 10 * 1024 * 1024

#: The lock file that keeps a second server off a log dir.
LOCK_NAME = ".convlab-serve.lock"

_STATIC = Path(__file__).parent / "static"


def check_thread_id(thread_id: Any) -> str:
    """A thread id that names a log file inside the log dir, or ``ValueError`` saying why not.

    >>> check_thread_id("chat-1")
    'chat-1'
    >>> check_thread_id("../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: threadId: '../etc/passwd' could leave the log dir (it has '..', '/', a backslash or NUL)
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"threadId: must be a non-empty string, got {thread_id!r}")
    if len(thread_id) > 128:
        raise ValueError(f"threadId: at most 128 characters, got {len(thread_id)}")
    if ".." in thread_id or "/" in thread_id or "\\" in thread_id or "\0" in thread_id:
        raise ValueError(f"threadId: {thread_id!r} could leave the log dir (it has '..', '/', a backslash or NUL)")
    if thread_id.startswith(".") or any(ord(c) < 32 for c in thread_id):
        raise ValueError(f"threadId: {thread_id!r} starts with '.' or has a control character")
    return thread_id


class _Refusal(Exception):
    def __init__(self, message: str, code: str, **metadata: Any):
        super().__init__(message)
        self.code = code
        self.metadata = metadata


class _Stoppable:
    """A streaming provider whose stream stops at the next chunk once its run's client is gone."""

    def __init__(self, provider: Any, thread: "_Thread"):
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
        return self.provider.complete(request)

    def stream(self, request: Mapping[str, Any]) -> Any:
        chunks = self.provider.stream(request)
        try:
            for chunk in chunks:
                run = self.thread.current
                if run is not None and run.stop.is_set():
                    raise convlab.CallCancelled("interrupted: the client went away")
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


class _Run:
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
        self.events: RunEvents | None = None
        self._sent = 0
        self._woken = False
        self._encoder = EventEncoder()

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

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._woken:
            return
        self._woken = True
        with contextlib.suppress(RuntimeError):  # the server's loop is gone: nobody listens
            self.loop.call_soon_threadsafe(self.ready.set)

    def take(self) -> str:
        """What is there to send (in the response's loop)."""
        self.ready.clear()
        self._woken = False
        parts = []
        while self.chunks:
            parts.append(self.chunks.popleft())
        return "".join(parts)


class _FairLock:
    """A lock taken in the order it was asked for. A run takes its thread's lock
    once per engine step; with a plain lock the running run takes it back at
    once and another client waits for the whole run instead of meeting the
    turn (and its 409) between two steps."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._next = 0
        self._serving = 0

    def __enter__(self) -> "_FairLock":
        with self._cv:
            ticket = self._next
            self._next += 1
            while self._serving != ticket:
                self._cv.wait()
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._cv:
            self._serving += 1
            self._cv.notify_all()


class _Thread:
    """One AG-UI thread: its session (loaded on first use), its lock, its runs."""

    def __init__(self, thread_id: str, app: "AGUIApp"):
        self.id = thread_id
        self.app = app
        self.path = app.log_dir / f"{thread_id}.jsonl"
        self.lock = _FairLock()
        self.session: Any = None
        self.current: _Run | None = None  # the run holding the lock
        self.runs: dict[str, _Run] = {}  # turn id -> the run driving it

    def exists(self) -> bool:
        return self.session is not None or self.path.exists()

    def load(self) -> Any:
        """The thread's session: loaded from its log, or new (call under ``lock``)."""
        if self.session is not None:
            return self.session
        app = self.app
        llm = app.wrap_llm(self)
        if self.path.exists() and self.path.stat().st_size > 0:
            s = convlab.Session.load(self.path, llm=llm, worker=app.worker, autorun=False, clock=time.time())
            waits = s.pending is not None and s.pending["type"] == "context.limit" and app.worker == "manual"
            if s.running is not None and not waits:
                s.submit({"type": "client.interrupt", "agent_id": s.agent})  # its work in flight died with the server
        else:
            s = convlab.Session(config=app.config, agent=app.agent, llm=llm, worker=app.worker, autorun=False,
                                log=self.path, clock=time.time())
        s.subscribe(self.on_event)
        self.session = s
        return s

    def on_event(self, event: Mapping[str, Any]) -> None:
        run = self.current
        if run is not None and run.events is not None:
            run.events.on_event(event)
            if event["type"] in ("llm.delta", "llm.started"):
                run.flush()  # before a model call, and its text as it comes; the rest at the run's end
        other = self.runs.get(event.get("turn_id"))
        if other is not None and other is not run and other.events is not None:
            other.events.on_event(event)

    def interrupt(self) -> dict[str, Any] | None:
        """The waiting AG-UI interrupt (a context.limit for a person), or None."""
        s = self.session
        if self.app.worker != "manual" or s is None or s.pending is None or s.pending["type"] != "context.limit":
            return None
        seq = next(e["seq"] for e in reversed(s.events) if e["type"] == "decision.requested")
        return interrupt_of(s.pending, seq)


class AGUIApp:
    """The ASGI app ``convlab.agui.app`` returns: ``POST /`` runs, ``GET /`` the chat page,
    ``GET /threads``, ``GET /threads/{id}``, ``GET /health``.

    ``session(thread_id)`` is a thread's live Session (for a Lab in the
    notebook that serves it); ``close()`` releases the log dir.
    """

    def __init__(self, log_dir: str | os.PathLike, config: Any = None, llm: Any = None,
                 worker: str | Callable[[dict], list] = "chat", token: str | None = None, *,
                 agent: str = "bot", cors_origins: tuple[str, ...] | list[str] = (), max_body: int = MAX_BODY):
        if worker not in ("chat", "manual") and not callable(worker):
            raise ValueError(f"worker: must be 'chat', 'manual' or a callable, got {worker!r}")
        if token is not None and (not isinstance(token, str) or not token):
            raise ValueError("token: must be a non-empty string (or None for no token)")
        if not isinstance(max_body, int) or max_body <= 0:
            raise ValueError(f"max_body: must be a positive number of bytes, got {max_body!r}")
        self.config = convlab.load_config(config, agent)[agent] if config is not None else None
        self.agent = agent
        self.llm = llm if llm is not None else convlab.EchoLLM()
        convlab.Session(llm=self.llm, autorun=False)  # a bad provider fails here, not at the first run
        self.worker = worker
        self.token = token
        self.max_body = max_body
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = _hold_log_dir(self.log_dir)
        self._threads: dict[str, _Thread] = {}
        self._registry = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="agui-run")  # one run each
        self._page = _page()
        middleware = [Middleware(_Guard, token=token)]
        if cors_origins:
            middleware.insert(0, Middleware(CORSMiddleware, allow_origins=list(cors_origins),
                                            allow_methods=["GET", "POST"],
                                            allow_headers=["Authorization", "Content-Type", "Accept"]))
        self._asgi = Starlette(routes=[
            Route("/", self._run, methods=["POST"]),
            Route("/", self._chat, methods=["GET"]),
            Route("/health", self._health, methods=["GET"]),
            Route("/threads", self._list, methods=["GET"]),
            Route("/threads/{thread_id}", self._snapshot, methods=["GET"]),
        ], middleware=middleware)

    def __repr__(self) -> str:
        return f"AGUIApp(log_dir={str(self.log_dir)!r}, worker={self.worker!r}, threads={len(self._threads)})"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._asgi(scope, receive, send)

    # -- Python side -------------------------------------------------------
    def session(self, thread_id: str) -> Any:
        """The live ``Session`` of a thread, loaded from its log or started
        (its log is ``log_dir/<thread_id>.jsonl``). The server steps it under
        the thread's lock: watch it (``convlab.Lab(app.session(id))``), and
        drive it through the server.

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
        with thread.lock:
            return thread.load()

    def threads(self) -> list[str]:
        """The ids of the threads in the log dir (and any started since)."""
        on_disk = {p.name[: -len(".jsonl")] for p in self.log_dir.glob("*.jsonl") if not p.name.startswith(".")}
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
            with thread.lock:  # no run is left half-way
                thread.session = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def wrap_llm(self, thread: _Thread) -> Any:
        """The app's provider(s), each stoppable mid-stream for ``thread``."""
        def wrap(p: Any) -> Any:
            return _Stoppable(p, thread) if hasattr(p, "stream") else p

        if isinstance(self.llm, Mapping):
            return {name: wrap(p) for name, p in self.llm.items()}
        return wrap(self.llm)

    def _thread(self, thread_id: str) -> _Thread:
        with self._registry:
            thread = self._threads.get(thread_id)
            if thread is None:
                thread = self._threads[thread_id] = _Thread(thread_id, self)
            return thread

    # -- routes ------------------------------------------------------------
    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _chat(self, request: Request) -> Response:
        return HTMLResponse(self._page, headers={"Cache-Control": "no-store"})

    async def _list(self, request: Request) -> Response:
        return JSONResponse({"threads": self.threads()})

    async def _snapshot(self, request: Request) -> Response:
        try:
            tid = check_thread_id(request.path_params["thread_id"])
        except ValueError as err:
            return _error(400, str(err))
        thread = self._thread(tid)
        if not thread.exists():
            return _error(404, f"no thread {tid!r}")

        def read() -> dict[str, Any]:
            with thread.lock:
                s = thread.load()
                return {"thread": tid, **s.snapshot(), **paths_of(s), "running": s.running, "interrupt": thread.interrupt()}

        return JSONResponse(await asyncio.to_thread(read))

    async def _run(self, request: Request) -> Response:
        try:
            body = await _body(request, self.max_body)
        except _TooLarge:
            return _error(413, f"the request body is over {self.max_body} bytes")
        except ClientDisconnect:
            return Response(status_code=400)
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as err:
            return _error(400, f"the body is not JSON: {err}")
        try:
            run_input = RunAgentInput.model_validate(data)
        except ValidationError as err:
            return _error(400, _fields(err))
        try:
            check_thread_id(run_input.thread_id)
        except ValueError as err:
            return _error(400, str(err))
        run = _Run(run_input, data["messages"], asyncio.get_running_loop())
        thread = self._thread(run_input.thread_id)

        async def stream():
            self._pool.submit(self._drive, thread, run)
            try:
                while True:
                    await run.ready.wait()
                    closed = run.closed  # read before taking: a chunk put before close is taken too
                    text = run.take()
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
    def _drive(self, thread: _Thread, run: _Run) -> None:
        try:
            self._begin(thread, run)
            while not run.done:
                self._step(thread, run)
        except Exception as err:  # a bug must end the run with RUN_ERROR, never a stack trace to the client
            log.exception("run %s on thread %s failed", run.input.run_id, thread.id)
            with thread.lock:
                if run.events is not None:
                    run.events.failed(f"internal error: {type(err).__name__}: {err}", "internal_error")
                    run.flush()
        finally:
            run.done = True
            with thread.lock:
                if run.turn is not None and thread.runs.get(run.turn) is run:
                    del thread.runs[run.turn]
            run.close()

    def _begin(self, thread: _Thread, run: _Run) -> None:
        """Take the run's input: the view (``messages``, ``state``) or the ``resume``."""
        inp = run.input
        with thread.lock:
            s = thread.load()
            s.advance(max(0.0, time.time() - s.clock))
            thread.current = run
            try:
                if inp.resume:
                    actions = self._resume(thread, inp)
                    run.events = RunEvents(s, inp, [m.id for m in inp.messages])
                    s.decide(actions)
                    run.turn = s.running
                else:
                    view = [m for m in map(from_agui, run.messages) if m is not None]
                    run.events = RunEvents(s, inp, [m["id"] for m in view])
                    submit: dict[str, Any] = {"type": "client.messages", "agent_id": s.agent, "messages": view}
                    if inp.state is not None:
                        submit["state"] = inp.state
                    receipt = s.submit(submit)
                    run.turn = receipt["turn_id"]
                    run.events.taken(view, receipt["new_from"])
            except convlab.Refused as err:
                run.events = run.events or RunEvents(s, inp, [])
                extra = {"turn_id": err.turn_id} if err.turn_id else {}
                run.events.refused(str(err), str(err.status), {"status": err.status, **extra})
                run.done = True
            except _Refusal as err:
                run.events = RunEvents(s, inp, [])
                run.events.refused(str(err), err.code, err.metadata)
                run.done = True
            finally:
                thread.current = None
            if not run.done and run.turn is not None:
                thread.runs[run.turn] = run
            run.flush()

    def _resume(self, thread: _Thread, inp: RunAgentInput) -> list[dict[str, Any]]:
        """The actions a resume answers the waiting context.limit with; ``_Refusal`` writes nothing."""
        waiting = thread.interrupt()
        if waiting is None:
            raise _Refusal(f"no interrupt is waiting on thread {thread.id!r} (answered already, or none was asked): "
                           f"resume {inp.resume[0].interrupt_id!r} answers nothing", "409")
        for i, entry in enumerate(inp.resume):
            if entry.interrupt_id != waiting["id"]:
                raise _Refusal(f"resume[{i}].interruptId: {entry.interrupt_id!r} is not the waiting interrupt "
                               f"{waiting['id']!r} (answered already, or unknown)", "409", interrupt_id=waiting["id"])
        if len(inp.resume) > 1:
            raise _Refusal(f"resume: one entry answers the waiting interrupt, got {len(inp.resume)}", "400")
        entry = inp.resume[0]
        try:
            return actions_for(thread.session.pending, entry.status, entry.payload)
        except ResumeError as err:
            raise _Refusal(str(err), "400") from None

    def _step(self, thread: _Thread, run: _Run) -> None:
        """One engine step of the run's turn, or its end."""
        with thread.lock:
            s = thread.session
            thread.current = run
            try:
                if s.running != run.turn:
                    self._ended(s, run)
                elif run.stop.is_set():
                    s.submit({"type": "client.interrupt", "agent_id": s.agent})
                    run.done = True
                elif s.pending is not None and self.worker == "manual":
                    if s.pending["type"] == "context.limit":
                        run.events.finished("interrupt", thread.interrupt())
                        run.done = True
                    else:
                        s.decide(convlab.chat_worker(s.pending))
                elif not s.step():
                    run.events.failed(f"turn {run.turn} cannot go on (its work in flight was lost)", "internal_error")
                    run.done = True
            finally:
                thread.current = None
            if run.done:
                run.flush()

    @staticmethod
    def _ended(s: Any, run: _Run) -> None:
        turn = next(t for t in reversed(s.turns) if t["id"] == run.turn)
        if turn["status"] == "completed":
            run.events.finished("success")
        elif turn["status"] == "cancelled":
            run.events.finished("cancelled")
        else:
            run.events.failed(turn.get("error") or f"turn {run.turn} failed", "turn_failed")
        run.done = True


def paths_of(session: Any) -> dict[str, Any]:
    """The paths the chat page walks, so that it never walks the tree itself: ``path`` (ids root ->
    head) and ``lanes`` (per sibling of a message on it, the ids from that sibling down to the newest
    leaf under it: where switching to it lands, ``convlab.tree.lane_from``)."""
    graph = session.tree
    path = path_to(graph.nodes, session.head)
    on_path = set(path)
    newest = newest_leaves(nodes_in_order(graph))
    lanes = {k: lane_from(graph, k, newest) for parent in [None, *path] for k in session.children(parent) if k not in on_path}
    return {"path": path, "lanes": lanes}


def app(log_dir: str | os.PathLike, config: Any = None, llm: Any = None,
        worker: str | Callable[[dict], list] = "chat", token: str | None = None, **options: Any) -> AGUIApp:
    """An ASGI app that serves the threads of ``log_dir`` over AG-UI 1.0.

    ``config`` is the agent's context config (TOML text, a path, the parsed
    document; new threads use it, a thread loaded from its log keeps the
    logged one), ``llm`` a provider (default ``convlab.EchoLLM()``),
    ``worker`` ``"chat"`` (the built-in worker), ``"manual"`` (a
    ``context.limit`` ends the run with an AG-UI interrupt; the other
    decisions are answered as the chat worker would) or a callable worker,
    ``token`` the bearer token every route but ``/health`` then needs.
    Options: ``agent`` (default ``"bot"``), ``cors_origins`` (none: CORS off),
    ``max_body`` (bytes, default 10 MB). A second app on the same ``log_dir``
    raises ``convlab.LogError`` until the first is closed.

    >>> import tempfile
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


# -- edges: the log dir's lock, the body, errors, the guard, the page -------------------------------

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
        raise convlab.LogError(f"{log_dir}: another convlab server{who} holds this log dir ({path}); "
                               "stop it, or serve another --log-dir") from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f


class _TooLarge(Exception):
    pass


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _fields(err: ValidationError) -> str:
    """What is wrong with a RunAgentInput, each field named (camelCase, as on the wire)."""
    out = []
    for e in err.errors(include_url=False)[:5]:
        where = ".".join(_camel(p) for p in e["loc"] if not (isinstance(p, str) and p[:1].isupper()))
        out.append(f"{where or 'body'}: {e['msg']}")
    more = len(err.errors()) - 5
    return "; ".join(out) + (f"; and {more} more" if more > 0 else "")


def _camel(part: Any) -> str:
    if not isinstance(part, str):
        return str(part)
    head, *rest = part.split("_")
    return head + "".join(w.title() for w in rest)


class _Guard:
    """Every route but ``/health`` needs the token (``Authorization: Bearer``; the chat page may
    take ``?token=`` once), compared in constant time."""

    def __init__(self, app: Any, token: str | None):
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.token is None or scope["path"] == "/health" or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        response = JSONResponse({"error": "this server needs its token: send 'Authorization: Bearer <token>' "
                                          "(the chat page: open it with ?token=<token>)"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)

    def _allowed(self, scope: Any) -> bool:
        given = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                given = value[7:].strip()
        if not given and scope["path"] == "/" and scope["method"] == "GET":
            from urllib.parse import parse_qs

            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode("latin-1", "replace")
        return hmac.compare_digest(given, self.token)


def _page() -> str:
    """The chat page: its HTML with its stylesheet and ES module inlined (a module
    script cannot send the token, so the page is one document)."""
    html = (_STATIC / "chat.html").read_text(encoding="utf-8")
    css = (_STATIC / "chat.css").read_text(encoding="utf-8")
    js = (_STATIC / "chat.js").read_text(encoding="utf-8")
    if "</script" in js.lower() or "</style" in css.lower():  # pragma: no cover - a check on our own files
        raise RuntimeError("chat.js/chat.css must not close their own element")
    return html.replace("/*CHAT_CSS*/", css).replace("//CHAT_JS", js)
