"""Coalesced redraws: widgets that keep up with a session driven faster than anyone can look.

Why: a scripted loop, a replay or a burst of submits emits thousands of
events; redrawing every widget on every event made driving a session with a
Lab open quadratic (issue 14). So a widget's listener only notes what an
event changed (constant time) and calls ``Redraw.touch``; the widget draws
once for a whole burst, and always draws the final state:

- when a burst ends: a timer on the running event loop (in Jupyter, the
  kernel's) fires ``interval`` seconds after the first event not drawn yet;
- while a burst lasts longer than that: the next event draws, from inside
  the listener. In a running notebook cell the kernel's event loop does not
  run until the cell ends, so no timer can fire; ipywidgets sends state at
  once, without the loop, so this is what keeps a Lab moving during a long
  cell, at most once per ``interval`` per widget;
- when a notebook cell ends (IPython's ``post_run_cell``): every widget with
  events not drawn yet, so what a cell leaves on screen is the final state;
- when a widget's own button changed the session: at the end of the intent
  (``hold``), so a click shows its outcome at once;
- when someone reads it: ``flush`` (``Lab.flush``, a widget's ``flush``) and
  the widgets' reprs.

Outside IPython with no event loop running (a script, a test), nothing can
show a widget: it is drawn when it is read, as above.

A session driven from another thread with no event loop of its own (a
server's worker, as ``convlab.agui`` runs them) cannot have a timer either,
and the kernel's thread must not draw while that thread changes the session:
there a widget also draws, on that thread, where a turn ends or stops for a
decision (``ENDS``), and the end of a cell draws only the widgets whose
events came from the kernel's own thread.

A slow draw (a large tree laid out again) makes the next one wait longer:
the wait is at least ``RATIO`` times the last draw's time, so a widget never
spends more than about 1/``RATIO`` of a burst drawing, however large the
tree grows. And a long burst (a replay, a loop of thousands of turns) draws
less often as it goes on: after t seconds without a pause the wait is
t/``DECAY``, up to ``SLOWEST`` (about once a second), so the first seconds
are lively and a long run spends less and less on pictures nobody has time
to look at.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ipywidgets import Widget

from ..engine import Session
from .home import Home
from .source import Source, shown

__all__ = ["Redraw", "INTERVAL", "RATIO", "DECAY", "SLOWEST", "QUIET", "ENDS", "hold", "flush", "register",
           "close_inside", "kinds", "LOOK"]

#: Seconds between two draws of one widget while events keep coming (at most 4 a second).
INTERVAL = 0.25
#: The wait after a draw is at least this many times the draw's own time.
RATIO = 20.0
#: After t seconds of events without a pause, the wait is at least t / DECAY ...
DECAY = 20.0
#: ... and never more than this (seconds).
SLOWEST = 1.0
#: Seconds without an event that end a burst.
QUIET = 1.0
#: Events after which a session may wait a while: where a widget on a thread with no event loop draws.
ENDS = frozenset({"turn.completed", "turn.cancelled", "turn.failed", "decision.requested"})

#: Everything a session tells its subscribers: its event types and its notices.
_TOLD = (*Session.EVENTS, *Session.NOTICES)


def kinds(prefixes: tuple[str, ...]) -> frozenset[str]:
    """The event types (and notices) that start with one of ``prefixes``: what a widget
    subscribes to, so the session does not call it for the others (a long run tells
    every subscriber a dozen things a turn).

    >>> sorted(kinds(("head.", "context.re")))
    ['context.replaced', 'head.moved']
    """
    return frozenset(t for t in _TOLD if t.startswith(prefixes))


#: Events at which a widget that waits for its draw looks whether it is due (``Redraw.touch``).
LOOK = ENDS | {"llm.delta"}

_dirty: weakref.WeakSet[Redraw] = weakref.WeakSet()  # widgets with events not drawn yet
_by_source: weakref.WeakKeyDictionary[Any, weakref.WeakSet[Redraw]] = weakref.WeakKeyDictionary()
_depth: dict[int, int] = {}  # id(source) -> nesting of hold()
_hooked: list[Any] = []  # the IPython shell whose post_run_cell flushes
_lock = threading.Lock()  # _dirty and _by_source change on any thread that emits events


class Redraw:
    """Draws one widget at most once per ``interval`` while events come, and the final state.

    ``draw`` is the widget's own drawing function; ``touch()`` says an event
    changed what it shows.

    >>> drawn = []
    >>> r = Redraw(lambda: drawn.append(1))
    >>> r.touch(); r.touch(); r.touch()     # a burst: nothing drawn yet
    >>> r.flush(), r.flush(), len(drawn)    # drawn once; a second flush has nothing to draw
    (True, False, 1)
    """

    def __init__(self, draw: Callable[[], None], interval: float = INTERVAL) -> None:
        self._draw = draw
        self.interval = float(interval)
        self.wait = self.interval
        self.dirty = False
        self.since = 0.0  # the first event not drawn yet
        self.busy_since = self.last_event = -QUIET  # the burst's first event, and its latest
        self.thread: int | None = None  # the thread of the latest event
        #: How many times the widget was drawn (tests count them).
        self.count = 0
        self._timer: asyncio.TimerHandle | None = None
        _hook_ipython()

    def _event(self) -> float:
        now = time.monotonic()
        if now - self.last_event > QUIET:
            self.busy_since = now
        self.last_event = now
        self.thread = threading.get_ident()
        return now

    def touch(self, kind: str = "") -> None:
        """An event (of type ``kind``) changed what the widget shows: draw now if it has waited
        long enough, else later.

        Called for most events of a session (a dozen a turn), so the common case does the
        least: a widget that already waits for its draw looks at the clock only at the events
        of ``LOOK`` (where a turn ends or stops for a decision, and a streamed chunk), which
        come at least once a turn: between them an event only notes its thread. A touch that
        names no event always looks."""
        if self.dirty and kind and kind not in LOOK:
            self.thread = threading.get_ident()
            return
        now = self._event()
        first = not self.dirty
        if first:
            self.dirty = True
            self.since = now
            with _lock:
                _dirty.add(self)
        if now - self.since >= max(self.wait, min(SLOWEST, (now - self.busy_since) / DECAY)):
            self.flush()
        elif (first or kind in ENDS) and not self._schedule() and kind in ENDS and _worker():
            self.flush()  # a worker thread with no loop: nothing else would draw the end of its turn

    def event(self, event: Mapping[str, Any]) -> None:
        """``touch`` with an event's type, as a subscriber: what a widget that only redraws on
        the events it follows subscribes (``Live.TOUCH``), one call an event, not two."""
        kind = event["type"]
        if self.dirty and kind not in LOOK:  # (touch's common case, inline)
            self.thread = threading.get_ident()
            return
        self.touch(kind)

    def mark(self, kind: str = "") -> None:
        """An event changed what the widget shows, but what it shows now may pass at once (a
        decision a worker is about to answer): never draw from here while a timer can."""
        now = self._event()
        if not self.dirty:
            self.dirty = True
            self.since = now
            with _lock:
                _dirty.add(self)
        if not self._schedule() and kind in ENDS and _worker():
            self.flush()

    def _schedule(self) -> bool:
        """A timer for the end of the burst on this thread's event loop; False when there is none."""
        if self._timer is not None:
            return True
        # (asyncio's own None-returning form of get_running_loop: asked at every turn's end, where the
        # RuntimeError of a thread with no loop, a script's, cost more than the rest of the listener)
        loop = asyncio._get_running_loop()
        if loop is None:  # no loop in this thread: drawn when read, when the cell ends, or at a turn's end
            return False
        self._timer = loop.call_later(self.wait, self._on_timer)
        return True

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> bool:
        """Draw now if events are waiting; True when it drew."""
        if not self.dirty:
            return False
        self.cancel()
        started = time.perf_counter()
        self._draw()
        self.wait = max(self.interval, RATIO * (time.perf_counter() - started))
        self.count += 1
        return True

    def now(self) -> None:
        """Draw now, whether or not an event asked for it (a person's own click)."""
        self.dirty = True
        self.flush()

    def cancel(self) -> None:
        """Forget the events not drawn yet (a closed widget)."""
        self.dirty = False
        with _lock:
            _dirty.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _worker() -> bool:
    """Whether this is a thread other than the main one (where a kernel runs its cells)."""
    return threading.current_thread() is not threading.main_thread()


def register(source: Source, redraw: Redraw) -> None:
    """Count ``redraw`` among the widgets of ``source`` (what ``hold`` and ``flush`` draw)."""
    with _lock:
        _by_source.setdefault(source, weakref.WeakSet()).add(redraw)


def flush(source: Source | None = None, *, thread: int | None = None) -> int:
    """Draw every widget of ``source`` (``None``: of every source) with events not drawn yet,
    only those whose latest event came from ``thread`` when it is given; how many drew."""
    with _lock:
        pending = list(_dirty) if source is None else [r for r in _by_source.get(source, ()) if r.dirty]
    return sum(r.flush() for r in pending if thread is None or r.thread in (None, thread))


@contextlib.contextmanager
def hold(source: Source) -> Iterator[None]:
    """Draw the widgets of ``source`` when the block ends (the outermost one, when nested)."""
    key = id(source)
    _depth[key] = _depth.get(key, 0) + 1
    try:
        yield
    finally:
        _depth[key] -= 1
        if not _depth[key]:
            del _depth[key]
            flush(source)


def close_inside(*widgets: Widget, keep: Iterable[Widget] = ()) -> None:
    """Close every widget the given ones hold (children, layout, style, ...), not the given ones
    and not those in ``keep`` (shared with widgets that stay).

    An ipywidget stays registered (and its comm open) until it is closed;
    closing a composite does not close its parts, so a closed or half-built
    widget would leave them behind.
    """
    roots = {id(x) for x in widgets} | {id(x) for x in keep}
    seen: set[int] = {id(x) for x in keep}
    todo = [x for x in widgets if getattr(x, "comm", None) is not None]  # never opened: nothing made yet
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        for name in getattr(x, "keys", None) or ():
            value = getattr(x, name, None)
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(v, Widget) and id(v) not in seen:
                    todo.append(v)
        if id(x) not in roots:
            x.close()


class Live:
    """What every live widget does alike, once: a ``Redraw`` of its ``_draw``
    registered for its source (``_follow``), ``flush``, and a ``close`` that
    stops following before it closes the widget and everything it made.
    A widget that holds widgets outside its children (the decision panel's
    summary box while it is not shown) names them in ``_held()``."""

    redraw: Redraw
    #: The event types the widget follows (None: all; ``kinds`` makes them from prefixes).
    EVENTS: frozenset[str] | None = None
    #: Every event it follows only asks for a draw: ``Redraw.event`` is the subscriber (no ``_on_event``).
    TOUCH = False

    if TYPE_CHECKING:  # what the widget class Live is mixed into has (ipywidgets), or each widget defines
        def add_class(self, className: str) -> Any: ...
        def _sync(self) -> None: ...
        def _on_event(self, event: Mapping[str, Any]) -> None: ...

    def _bind(self, source: Source) -> None:
        """What the widget shows: ``source`` (what ``source_of`` gave), ``session`` (the live
        Session; None for an imported conversation) and ``conversation`` (the imported
        Conversation; None for a Session). Nothing is followed yet (``_start``)."""
        self._unsubscribe: Any = None
        #: The thread that built the widget: where its handlers run (``home``).
        self.home = Home()
        self.source = source
        self.session, self.conversation = shown(source)

    @property
    def live(self) -> Session:
        """The live Session the widget shows (a TypeError on an imported conversation: check ``readonly`` first)."""
        if self.session is None:
            raise TypeError(f"{type(self).__name__} shows an imported conversation: it has no live Session")
        return self.session

    @property
    def readonly(self) -> bool:
        """An imported conversation: look and switch branches, never submit."""
        return self.conversation is not None

    def _follow(self, source: Source, interval: float) -> None:
        self.redraw = Redraw(self._draw, interval)
        register(source, self.redraw)

    def _start(self, source: Source, interval: float, classes: tuple[str, ...] = (),
               first: Callable[[], None] | None = None) -> None:
        """Follow ``source``: the widget's CSS ``classes``, a ``Redraw``, the first drawing
        (``first``, by default ``_sync``), then the subscription. A widget that fails to build
        closes everything it made and raises: nothing half-built stays behind."""
        try:
            for cls in classes:
                self.add_class(cls)
            self._follow(source, interval)
            (first or self._sync)()
            self._unsubscribe = source.subscribe(self.redraw.event if self.TOUCH else self._on_event, types=self.EVENTS)
        except BaseException:
            self.close()
            raise

    def flush(self) -> bool:
        """Draw now what the session's events changed (True when there was something to draw)."""
        return self.redraw.flush()

    def _draw(self) -> None:
        """What the ``Redraw`` calls: ``_sync``. A drawing bug is shown in the widget
        (``_show_error``), never raised into the engine's event loop."""
        try:
            self._sync()
        except Exception as err:
            self._show_error(f"display error: {type(err).__name__}: {err}")

    def _show_error(self, text: str) -> None:
        raise NotImplementedError

    def _held(self) -> list[Any]:
        return []

    def close(self) -> None:
        redraw = getattr(self, "redraw", None)
        if redraw is not None:
            redraw.cancel()
        if getattr(self, "_unsubscribe", None) is not None:
            self._unsubscribe()
            self._unsubscribe = None
        held = [x for x in self._held() if x is not None]
        close_inside(self, *held)
        for x in held:
            x.close()
        super().close()  # type: ignore[misc]  # the widget class Live is mixed into has close() (ipywidgets); object has none


def _after_cell(*_args: object) -> None:
    flush(thread=threading.get_ident())  # another thread's session is drawn by that thread


def _hook_ipython() -> None:
    """Flush every widget when a cell ends, once per IPython shell (never imports IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or any(s is shell for s in _hooked):
        return
    shell.events.register("post_run_cell", _after_cell)
    _hooked.append(shell)
