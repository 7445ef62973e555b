"""convlab.widgets.home: a widget's handlers run on the thread that built it.

The browser test (tests/browser/test_lab_browser.py, a click while a cell runs)
shows it in a real JupyterLab, whose widget messages come on a kernel subshell;
here a thread with an event loop plays the kernel's main thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from convlab.widgets.home import Home


def test_with_no_event_loop_a_handler_runs_where_it_is_called():
    home = Home()
    assert home.loop is None
    seen = []
    wrapped = home.wrap(lambda x: seen.append((x, threading.get_ident())) or "done")
    out = []
    t = threading.Thread(target=lambda: out.append(wrapped(1)))
    t.start()
    t.join()
    assert out == ["done"] and seen == [(1, t.ident)]


class _Kernel:
    """A thread running an event loop, as the kernel's main thread does; ``home`` built on it."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.release = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.home: Home | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()))
        self.thread.start()
        assert self.ready.wait(5)

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.home = Home()  # (a widget built in a cell)
        self.ready.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)

    def run(self, fn):
        """Run ``fn`` on the loop and wait for it (a cell)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(_call(fn), self.loop).result(5)

    def stop(self) -> None:
        self.release.set()
        self.thread.join(5)


async def _call(fn):
    return fn()


@pytest.fixture
def kernel():
    k = _Kernel()
    yield k
    k.stop()


def test_a_handler_called_on_another_thread_runs_on_the_home_loop(kernel):
    seen = []
    done = threading.Event()

    def handler(*args, **kwargs):
        seen.append((args, kwargs, threading.get_ident()))
        done.set()
        return "ignored"

    wrapped = kernel.home.wrap(handler)
    assert wrapped.__name__ == "handler"
    out = []
    t = threading.Thread(target=lambda: out.append(wrapped(1, b=2)))  # (a subshell)
    t.start()
    t.join()
    assert out == [None]  # handed over: nothing to return yet
    assert done.wait(5)
    assert seen == [((1,), {"b": 2}, kernel.thread.ident)]


def test_a_handler_called_on_its_home_thread_runs_at_once(kernel):
    wrapped = kernel.home.wrap(lambda: threading.get_ident())
    assert kernel.run(wrapped) == kernel.thread.ident


def test_a_handed_over_handler_waits_for_what_runs_on_the_home_thread(kernel):
    """The kernel's thread busy in a cell: the click runs after the cell, never beside it."""
    order = []
    started, finish = threading.Event(), threading.Event()

    def cell():
        started.set()
        finish.wait(5)
        order.append("cell ended")

    wrapped = kernel.home.wrap(lambda: order.append("click"))
    kernel.loop.call_soon_threadsafe(cell)
    assert started.wait(5)
    wrapped()
    assert order == []  # the cell runs: the click waits
    finish.set()
    kernel.run(lambda: None)  # (after the click, which was handed over first)
    assert order == ["cell ended", "click"]


def test_a_closed_home_loop_runs_the_handler_where_it_is_called(kernel):
    home = kernel.home
    kernel.stop()  # asyncio.run closes the loop
    assert home.loop.is_closed()
    assert home.wrap(lambda: threading.get_ident())() == threading.get_ident()


def test_an_error_in_a_handed_over_handler_is_reported_not_lost(kernel, caplog):
    def broken():
        raise ValueError("a broken handler")

    with caplog.at_level(logging.WARNING, logger="convlab.widgets.home"):
        kernel.home.wrap(broken)()
        kernel.run(lambda: None)
    assert any("a broken handler" in r.getMessage() for r in caplog.records), caplog.records
    assert kernel.run(lambda: "still running") == "still running"  # the loop goes on
