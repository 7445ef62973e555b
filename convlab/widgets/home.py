"""Where a widget's callbacks run: on the thread that built the widget.

Why: JupyterLab 4.4 and later (4.6 here), with ipykernel 7, send widget
messages on a kernel *subshell* (jupyterlab/jupyterlab#17363; JupyterLab's
setting ``commsOverSubshells``, one subshell per comm target by default). A
click in the Lab then runs its handler on the subshell's own thread, at
once, while a cell may be driving the same session on the kernel's main
thread: two threads changing one ``Session``, which is not thread-safe, and
a cell that reads the session in the middle of a turn the click started.
(Measured in JupyterLab 4.6: a chat edit's turn, seen from the main thread
between its two messages.)

So every handler a widget registers (a button's click, a message from its
JavaScript, a text box it observes) is wrapped by its ``Home``: called on
the thread that built the widget, it runs at once, as before; called on
another thread while the building thread has an event loop (the kernel's),
it is handed to that loop and runs there when the loop is free: after the
cell that is running ends (or at its next ``await``, in a cell that awaits),
as every widget message did before subshells, and not at all if its widget
was closed meanwhile. What the person typed is read where the click came
(the chat's Send), so typing on while a cell runs changes nothing sent. A
cell that waits for a click (polls, blocks) waits for ever, as it did before
subshells. A widget built with no event loop (a script, a test) runs its
handlers where they are called. An error in a handed-over handler is shown
as ipywidgets shows one (IPython's traceback), never lost.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from ipywidgets import Widget

__all__ = ["Home"]

_log = logging.getLogger(__name__)


class Home:
    """The thread that built a widget, and its event loop (None: it had none).

    >>> home = Home()
    >>> home.wrap(lambda x: x + 1)(1)     # no event loop here: the handler runs where it is called
    2
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.loop = asyncio._get_running_loop()  # (the kernel's, in a notebook cell)

    def wrap(self, handler: Callable[..., Any], owner: Widget | None = None) -> Callable[..., Any]:
        """``handler``, run on this home thread: at once when called there (or when there is no
        loop to hand it to), else handed to the home loop (it then returns None). A handed-over
        handler of ``owner`` (the widget whose message it answers) is dropped if that widget was
        closed while it waited, as a message to a closed widget always was: a click on a decision's
        button never answers the next decision."""
        loop, thread = self.loop, self.thread
        if loop is None:
            return handler

        @functools.wraps(handler)
        def at_home(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == thread:
                return handler(*args, **kwargs)
            try:
                loop.call_soon_threadsafe(_run, handler, owner, args, kwargs)
            except RuntimeError:  # the home loop is closed (the kernel is going): nowhere else to run it
                return handler(*args, **kwargs)
            return None

        return at_home


def _run(handler: Callable[..., Any], owner: Widget | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Run a handed-over handler (not if its owner was closed meanwhile); an error shown as ipywidgets shows a callback's."""
    if owner is not None and getattr(owner, "comm", None) is None:  # (ipywidgets: a closed widget has no comm)
        return
    try:
        handler(*args, **kwargs)
    except Exception as err:  # (shown, never raised into the kernel's loop)
        shell = _ipython()
        if shell is None:
            _log.warning("Exception in callback %s: %s", handler, err, exc_info=True)
        else:
            shell.showtraceback()


def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipywidgets needs IPython
        return None
    return get_ipython()
