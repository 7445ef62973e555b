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


def test_a_handed_over_handler_of_a_widget_closed_meanwhile_is_dropped(kernel):
    """As a message to a closed widget always was: a click that waited never acts on what replaced it."""
    import ipywidgets as w

    ran = []
    button = kernel.run(w.Button)
    wrapped = kernel.home.wrap(lambda _b: ran.append("click"), button)
    started, finish = threading.Event(), threading.Event()
    kernel.loop.call_soon_threadsafe(lambda: (started.set(), finish.wait(5), button.close()))  # a cell that closes it
    assert started.wait(5)
    wrapped(button)  # the click, while the cell runs
    finish.set()
    kernel.run(lambda: None)
    assert ran == []
    open_button = kernel.run(w.Button)
    kernel.home.wrap(lambda _b: ran.append("click"), open_button)(open_button)
    kernel.run(lambda: None)
    assert ran == ["click"]


# -- the widgets: each handler the page can call runs on the widget's home thread -----------------------

def _events_on(session, kernel):
    """The threads the session's events came on, as they come."""
    seen = []
    session.subscribe(lambda e: seen.append((e["type"], threading.get_ident() == kernel.thread.ident)))
    return seen


def _from_elsewhere(fn):
    t = threading.Thread(target=fn)  # (a subshell)
    t.start()
    t.join(5)


def test_the_chat_s_buttons_and_messages_run_on_its_home_thread(kernel):
    import convlab

    s = convlab.Session()
    chat = kernel.run(lambda: convlab.ChatView(s))
    seen = _events_on(s, kernel)
    chat.input.value = "typed before the click"
    _from_elsewhere(lambda: chat.send_button.click())
    chat.input.value = "typed after it"  # (the cell still runs: the click waits, the box changes)
    kernel.run(lambda: None)
    assert s.path()[0]["content"] == "typed before the click"  # what the box held when Send was clicked
    assert chat.input.value == "typed after it"  # and what was typed since is kept
    assert seen and all(home for _kind, home in seen), seen
    seen.clear()
    reply = s.path()[-1]["id"]
    _from_elsewhere(lambda: chat.messages._handle_custom_msg({"type": "regenerate", "id": reply}, []))
    kernel.run(lambda: None)
    assert len(s.children(s.path()[0]["id"])) == 2 and seen and all(home for _kind, home in seen), seen


def test_the_decision_panel_s_buttons_run_on_its_home_thread_and_a_stale_one_does_nothing(kernel):
    import convlab

    s = convlab.Session(worker="manual")
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    panel = kernel.run(lambda: convlab.DecisionPanel(s))
    assert s.pending["type"] == "turn.start"
    seen = _events_on(s, kernel)
    call = panel.buttons["call"]
    started, finish = threading.Event(), threading.Event()
    kernel.loop.call_soon_threadsafe(lambda: (started.set(), finish.wait(5)))  # a cell runs
    assert started.wait(5)
    _from_elsewhere(call.click)
    _from_elsewhere(call.click)  # a double click, both while the cell runs
    finish.set()
    kernel.run(panel.flush)
    answered = [e for e in s.events if e["type"] == "decision.answered"]
    assert len(answered) == 1 and s.pending["type"] == "llm.result", answered  # the second click's button was gone
    assert seen and all(home for _kind, home in seen), seen


def test_the_tree_view_s_messages_and_the_event_log_s_filter_run_on_their_home_thread(kernel):
    import convlab

    s = convlab.Session()
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "other"}]})
    tree, log = kernel.run(lambda: (convlab.TreeView(s), convlab.EventLog(s)))
    seen = _events_on(s, kernel)
    _from_elsewhere(lambda: tree._handle_custom_msg({"type": "checkout", "id": "e1"}, []))
    kernel.run(lambda: None)
    assert s.head == "e1" and seen and all(home for _kind, home in seen), seen
    drawn = []
    log._refilter = lambda: drawn.append(threading.get_ident())
    _from_elsewhere(lambda: setattr(log.filter, "value", log.filter.options[-1]))
    kernel.run(lambda: None)
    assert drawn == [kernel.thread.ident]
