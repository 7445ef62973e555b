"""The chat UIs people build on, over convlab serve, in headless Chromium (issue 25): a minimal CopilotKit
1.74 page and a minimal assistant-ui 0.15 page (tests/frontends/*/src), their exact versions in each
package-lock.json, built with Vite by ``make test`` (``make frontends``) into git-ignored dist/ folders and
served on 127.0.0.1. Each page talks to an in-process ``agui.app`` (a slowed echo model) through its own
``@ag-ui/client`` HttpAgent (0.0.59 under CopilotKit, 0.0.58 under assistant-ui).

After each step the tree is read back from GET /threads/{id} (``Tree.check``): no id twice, no branch lost
(every node seen before is still there, under the same parent), no partial answer (every reply is the
whole echo of the question it answers). The console must show no AG-UI validation error.
docs/copilotkit.png and docs/assistant-ui.png are taken here."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import re
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import convlab
from agui_support import REPO, U1, U2, SlowLLM, client, open_chromium, served
from ci_support import cannot_run
from screenshots import stable_png

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

PAGES = Path(__file__).resolve().parent
FRONTENDS = ("copilotkit", "assistant-ui")
SUMMARIZE_AT_60 = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 60\n"

#: What an AG-UI client says when an event fails its schema (zod) or the event order (verifyEvents).
VALIDATION = re.compile(r"discriminator|ZodError|invalid_type|invalid_union|Invalid input|Cannot send event|"
                        r"verify|Expected .* received|AGUIError(?!.*pending interrupt)", re.I)


@pytest.fixture(scope="module")
def chromium():
    c = open_chromium()
    yield c
    c.close()


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    """The built pages, served statically on 127.0.0.1 (their own origin: convlab serve names it in cors_origins)."""
    for name in FRONTENDS:
        if not (PAGES / name / "dist" / "index.html").exists():
            cannot_run(f"tests/frontends/{name}/dist is not built: `make frontends` (npm ci and vite build; "
                       "make test runs it)")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(PAGES)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- the tree, read back after each step ------------------------------------------------------------------

class Tree:
    """A thread read back from GET /threads/{id}, checked against what was seen before."""

    def __init__(self, url: str, thread: str):
        self.url, self.thread = url, thread
        self.seen: dict[str, str | None] = {}  # id -> parent
        self.snap: dict[str, Any] = {}

    def check(self) -> dict[str, Any]:
        with client() as c:
            r = c.get(f"{self.url}threads/{self.thread}")
        assert r.status_code == 200, r.text
        snap = self.snap = r.json()
        ids = [n["id"] for n in snap["nodes"]]
        assert len(ids) == len(set(ids)), f"an id twice: {ids}"
        nodes = {n["id"]: n for n in snap["nodes"]}
        lost = {i: p for i, p in self.seen.items() if i not in nodes or nodes[i]["parent"] != p}
        assert not lost, f"a branch was lost or moved: {lost}"
        for n in snap["nodes"]:
            if n["role"] == "assistant" and n["kind"] == "message":
                question = self.question(nodes, n)
                assert n["content"] == f"echo: {question}", f"a partial or wrong answer: {n['id']} {n['content']!r}"
        self.seen = {n["id"]: n["parent"] for n in snap["nodes"]}
        return snap

    @staticmethod
    def question(nodes: dict[str, Any], node: dict[str, Any]) -> str:
        cur = node["parent"]
        while cur is not None and nodes[cur]["role"] not in ("user", "tool"):
            cur = nodes[cur]["parent"]
        return "" if cur is None else convlab.content_text(nodes[cur]["content"])

    def path(self) -> list[dict[str, Any]]:
        nodes = {n["id"]: n for n in self.snap["nodes"]}
        out, cur = [], self.snap["head"]
        while cur is not None:
            out.append(nodes[cur])
            cur = nodes[cur]["parent"]
        return out[::-1]

    def texts(self) -> list[str]:
        return [convlab.content_text(n["content"]) for n in self.path()]

    def children(self, parent: str | None) -> list[str]:
        return [n["id"] for n in self.snap["nodes"] if n["parent"] == parent]

    def idle(self, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with client() as c:
                snap = c.get(f"{self.url}threads/{self.thread}").json()
            if snap.get("running") is None or snap.get("interrupt") is not None:
                return self.check()
            time.sleep(0.05)
        raise AssertionError(f"thread {self.thread} still running after {timeout} s")


# -- the two pages ---------------------------------------------------------------------------------------

class UI:
    """One front end's page on a thread; its console collected."""

    composer = "textarea"
    running: str = ""
    idle_js: str = ""

    def __init__(self, browser: Any, origin: str, server: str, thread: str, interrupts: bool = False,
                 height: int = 900):
        self.context = browser.new_context(viewport={"width": 1000, "height": height})
        self.page = self.context.new_page()
        self.console: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        query = f"server={server}&thread={thread}" + ("&interrupts=1" if interrupts else "")
        self.url = f"{origin}/{self.name}/dist/index.html?{query}"
        self.open()

    name = ""

    def open(self) -> None:
        self.page.goto(self.url)
        self.page.wait_for_selector(self.composer, timeout=30000)
        self.page.wait_for_timeout(500)  # the page loads the thread (a run with no messages)

    def reload(self) -> None:
        self.page.reload()
        self.page.wait_for_selector(self.composer, timeout=30000)
        self.page.wait_for_timeout(500)

    def type(self, text: str) -> None:
        box = self.page.locator(self.composer).first
        box.fill(text)
        box.press("Enter")

    def shown(self) -> str:
        return self.page.inner_text("body")

    def wait_shown(self, text: str, timeout: float = 20000) -> None:
        self.page.wait_for_function("(t) => document.body.innerText.includes(t)", arg=text, timeout=timeout)

    def wait_idle(self) -> None:
        self.page.wait_for_function(self.idle_js, timeout=30000)

    def validation_errors(self) -> list[str]:
        return [line for line in self.console if VALIDATION.search(line)]

    def close(self) -> None:
        assert not self.validation_errors(), "AG-UI validation errors:\n" + "\n".join(self.validation_errors())
        self.context.close()


class CopilotKitUI(UI):
    name = "copilotkit"
    idle_js = "() => document.querySelector('[data-testid=copilot-send-button]')?.getAttribute('aria-label') !== 'Stop'"

    def regenerate(self) -> None:
        self.page.locator("button[aria-label='Regenerate response']").last.click()

    def stop(self) -> None:
        self.page.locator("[data-testid=copilot-send-button][aria-label=Stop]").click()


class AssistantUI(UI):
    name = "assistant-ui"
    composer = "textarea.input"
    idle_js = "() => document.querySelector('button.send') !== null"

    def regenerate(self) -> None:
        self.page.locator(".msg.assistant button", has_text="Regenerate").last.click()

    def stop(self) -> None:
        self.page.locator("button.stop").click()

    def edit(self, index: int, text: str) -> None:
        self.page.locator(".msg.user").nth(index).locator("button", has_text="Edit").click()
        self.page.locator("textarea.edit").fill(text)
        self.page.locator(".editing button", has_text="Save").click()

    def previous(self, index: int) -> None:
        self.page.locator(".msg.user").nth(index).locator(".branches button").first.click()


KINDS = {"copilotkit": CopilotKitUI, "assistant-ui": AssistantUI}


@contextlib.contextmanager
def session(browser: Any, tmp: Path, origin: str, kind: str, thread: str, *, llm: Any = None, interrupts: bool = False,
            height: int = 900, **app: Any) -> Iterator[tuple[UI, Tree, Any]]:
    with served(tmp, llm=llm or SlowLLM(pause=0.02, pieces=4), cors_origins=[origin], **app) as (served_app, server):
        ui = KINDS[kind](browser, origin, server.url, thread, interrupts, height)
        try:
            yield ui, Tree(server.url, thread), served_app
        finally:
            ui.close()


def send(ui: UI, tree: Tree, text: str) -> dict[str, Any]:
    ui.type(text)
    ui.wait_shown(f"echo: {text}")
    ui.wait_idle()
    return tree.idle()


# -- the scenarios, each in the browser's thread -----------------------------------------------------------

def _send_regenerate_reload(browser: Any, tmp: Path, origin: str, kind: str) -> None:
    """Send, regenerate, reload the page: the reloaded page shows the active path and goes on from it."""
    with session(browser, tmp, origin, kind, "basic") as (ui, tree, app):
        snap = send(ui, tree, "What is the capital of Portugal?")
        assert tree.texts() == ["What is the capital of Portugal?", "echo: What is the capital of Portugal?"]
        question, first = [n["id"] for n in tree.path()]
        ui.regenerate()
        ui.wait_idle()
        tree.idle()
        assert tree.children(question) == [first, tree.snap["head"]] and snap["head"] == first
        ui.reload()
        ui.wait_shown("What is the capital of Portugal?")
        assert "echo: What is the capital of Portugal?" in ui.shown()
        nodes = len(tree.check()["nodes"])
        assert nodes == 3, "a reload writes nothing"
        send(ui, tree, "And of Spain?")
        path = [n["id"] for n in tree.path()]
        assert path[:2] == [question, tree.children(question)[1]] and tree.texts()[2:] == ["And of Spain?", "echo: And of Spain?"]


@pytest.mark.parametrize("kind", FRONTENDS)
def test_send_regenerate_and_a_page_reload_that_restores_the_thread(chromium, tmp_path, origin, kind):
    """Issue 25, point 5: "Reload starts a separate conversation": a run with no messages loads the thread
    (CopilotKit's connect, assistant-ui's history adapter), the page shows the active path and continues it."""
    chromium.run(_send_regenerate_reload, tmp_path, origin, kind)


def _stop(browser: Any, tmp: Path, origin: str, kind: str) -> None:
    slow = SlowLLM(pause=0.25, pieces=12)
    with session(browser, tmp, origin, kind, "stop", llm=slow) as (ui, tree, app):
        text = "Tell me a long story about the trams of Lisbon"
        ui.type(text)
        ui.wait_shown("echo: ")  # part of the reply is on the page, the model still writes
        ui.stop()
        ui.wait_idle()
        s = app.session("stop")
        deadline = time.monotonic() + 10
        while s.running is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        tree.idle()
        assert [n["role"] for n in tree.path()] == ["user"], "a stopped reply is no answer"
        slow.pause = 0.01
        send(ui, tree, "And a short one?")
        roles = [n["role"] for n in tree.path()]
        assert roles == ["user", "user", "assistant"] and tree.texts()[1:] == ["And a short one?", "echo: And a short one?"]
        streamed = [e["message_id"] for e in s.events if e["type"] == "llm.started" and e.get("message_id")]
        assert streamed[0] not in {n["id"] for n in tree.snap["nodes"]}, "the stopped reply's id is never reused"


@pytest.mark.parametrize("kind", FRONTENDS)
def test_stop_mid_stream_never_puts_the_partial_reply_back_as_an_answer(chromium, tmp_path, origin, kind):
    """Issue 25, point 2: both UIs keep the partial text under the streamed id and may send it back with the
    next message; the engine leaves it out (PROTOCOL.md rev 4) and the server tells the client the path."""
    chromium.run(_stop, tmp_path, origin, kind)


def _limit(ui: UI, tree: Tree) -> dict[str, Any]:
    """Two messages past SUMMARIZE_AT_60: the second run ends with an interrupt."""
    send(ui, tree, U1)
    ui.type(U2)
    ui.wait_shown(U2)
    ui.wait_idle()
    snap = tree.idle()
    assert snap["interrupt"] is not None, "the limit did not come"
    return snap


def _interrupt_answered(browser: Any, tmp: Path, origin: str, kind: str) -> None:
    with session(browser, tmp, origin, kind, "answered", config=SUMMARIZE_AT_60, worker="manual",
                 interrupts=True) as (ui, tree, app):
        snap = _limit(ui, tree)
        ui.page.locator("[data-testid=decision] button", has_text="Accept").click()
        ui.wait_shown(f"echo: {U2}")
        ui.wait_idle()
        snap = tree.idle()
        assert snap["interrupt"] is None and snap["running"] is None
        path = tree.path()
        assert path[0]["kind"] == "summary" and tree.texts()[-2:] == [U2, f"echo: {U2}"]
        kinds = [e["type"] for e in app.session("answered").events]
        assert "context.replaced" in kinds and kinds[-1] == "turn.completed"


@pytest.mark.parametrize("kind", FRONTENDS)
def test_an_interrupt_answered_through_the_uis_own_hook(chromium, tmp_path, origin, kind):
    """CopilotKit's useInterrupt and assistant-ui's useAgUiInterrupts answer the context.limit: the summary is
    accepted on the server and the held call answers."""
    chromium.run(_interrupt_answered, tmp_path, origin, kind)


def _interrupt_unanswered(browser: Any, tmp: Path, origin: str, kind: str, rule: str) -> None:
    with session(browser, tmp, origin, kind, "unanswered", config=SUMMARIZE_AT_60, worker="manual",
                 on_unanswered=rule) as (ui, tree, app):
        snap = _limit(ui, tree)
        waiting, snap_turn = snap["interrupt"]["id"], snap["running"]
        ui.reload()  # the page has no interrupt handler; a reload lets go of the interrupt on the client
        ui.wait_shown(U2)
        ui.type("Is she sleeping well?")
        ui.wait_shown("Is she sleeping well?")
        ui.wait_idle()
        deadline = time.monotonic() + 20
        while app.session("unanswered").running == snap_turn and time.monotonic() < deadline:
            time.sleep(0.05)
        snap = tree.idle()
        s = app.session("unanswered")
        answered = [e["actions"] for e in s.events if e["type"] == "decision.answered" and e["turn_id"] == snap_turn]
        assert snap["interrupt"] is None or snap["interrupt"]["id"] != waiting, "the old decision is answered"
        if rule == "end":  # the waiting turn ended with no reply; the new message goes on in a turn of its own
            assert [{"type": "turn.end"}] in answered
            assert tree.texts()[-2:] == [U2, "Is she sleeping well?"]
        else:  # the decision's default (the summary) answered the old turn; the new message follows its reply
            assert ["context.replace", "llm.call"] in [[a["type"] for a in acts] for acts in answered], answered
            assert tree.path()[0]["kind"] == "summary"
            assert tree.texts()[-3:] == [U2, f"echo: {U2}", "Is she sleeping well?"] or \
                tree.texts()[-4:] == [U2, f"echo: {U2}", "Is she sleeping well?", "echo: Is she sleeping well?"]
        assert s.running is None or s.pending is not None, "never a turn nothing will finish"


@pytest.mark.parametrize("kind", FRONTENDS)
@pytest.mark.parametrize("rule", ["end", "default"])
def test_an_interrupt_not_answered_then_a_reload_and_a_new_message(chromium, tmp_path, origin, kind, rule):
    """Issue 25, point 1: "An interrupt the UI does not handle kills the thread". With no handler on the page
    the client itself refuses to send while its interrupt is open; after a reload, a new message with no
    resume meets --on-unanswered: ``end`` ends the waiting turn as "End the turn" does, ``default`` answers it
    with the decision's default; both go on with the new message, never a 409."""
    chromium.run(_interrupt_unanswered, tmp_path, origin, kind, rule)


def _edit_and_switch_back(browser: Any, tmp: Path, origin: str) -> None:
    with session(browser, tmp, origin, "assistant-ui", "edit") as (ui, tree, app):
        send(ui, tree, "First question")
        send(ui, tree, "Second question")
        first_q, first_a, second_q, second_a = [n["id"] for n in tree.path()]
        # edit the second question: a branch beside it (assistant-ui deletes the original on the client)
        ui.edit(1, "Second question, edited")
        ui.wait_shown("echo: Second question, edited")
        ui.wait_idle()
        tree.idle()
        assert tree.children(first_a) == [second_q, tree.path()[2]["id"]]
        # ‹ back to the original, then send: the view comes without the original question
        ui.previous(1)
        ui.wait_shown("echo: Second question")
        send(ui, tree, "Third question")
        assert [n["id"] for n in tree.path()][:4] == [first_q, first_a, second_q, second_a], "the original question is kept"
        assert tree.texts()[-2:] == ["Third question", "echo: Third question"]
        s = app.session("edit")
        assert len(tree.children(first_a)) == 2 and s.head == tree.snap["head"]
        # the same for the first question (its reply alone at the top of the view)
        ui.edit(0, "First question, edited")
        ui.wait_shown("echo: First question, edited")
        ui.wait_idle()
        tree.idle()
        ui.previous(0)
        ui.wait_shown("echo: First question")
        ui.wait_idle()
        send(ui, tree, "Fourth question")
        assert [n["id"] for n in tree.path()][:2] == [first_q, first_a] and tree.texts()[-1] == "echo: Fourth question"
        assert len(tree.children(None)) == 2


def test_assistant_ui_edit_then_back_with_the_branch_picker_then_send_keeps_the_original(chromium, tmp_path, origin):
    """Issue 25, point 4: "assistant-ui's edit loses the original question": its runtime deletes the edited
    message on the client, so after ‹ the next view carries a known reply under another parent (before: 400
    "'e1' is not a top-level message"). The tree's path fills the gap: the original question is kept."""
    chromium.run(_edit_and_switch_back, tmp_path, origin)


def _cancelled(browser: Any, tmp: Path, origin: str, kind: str) -> None:
    slow = SlowLLM(pause=0.25, pieces=12)
    with session(browser, tmp, origin, kind, "cancel", llm=slow) as (ui, tree, app):
        slow.pause = 0.0
        send(ui, tree, "Hello")
        view = app.session("cancel").view(tree.snap["head"])
        slow.pause = 0.25
        ui.type("A long answer, please")
        ui.wait_shown("echo: ")
        # another client switches back to the first reply: the page's run is cancelled while it listens
        with client() as c:
            body = {"threadId": "cancel", "runId": "switch", "messages": [convlab.agui.messages.to_agui(m) for m in view],
                    "state": {}, "tools": [], "context": [], "forwardedProps": {}}
            r = c.post(tree.url, json=body)
            assert r.status_code == 200 and '"RUN_FINISHED"' in r.text
        ui.wait_idle()
        snap = tree.idle()
        assert snap["head"] == view[-1]["id"]
        s = app.session("cancel")
        assert [t["status"] for t in s.turns][-2:] == ["cancelled", "completed"]


@pytest.mark.parametrize("kind", FRONTENDS)
def test_a_run_cancelled_while_the_ui_listens_ends_in_a_run_finished_its_client_accepts(chromium, tmp_path, origin, kind):
    """Issue 25, point 3: @ag-ui/core 0.0.58/0.0.59 reject RUN_FINISHED outcome "cancelled" ("Invalid discriminator
    value"); a client that sends no protocolVersion gets RUN_FINISHED with no outcome, and no validation error."""
    chromium.run(_cancelled, tmp_path, origin, kind)


# -- screenshots for the README -----------------------------------------------------------------------------

def _docs(browser: Any, tmp: Path, origin: str, kind: str) -> bytes:
    """Two questions, the first answer regenerated (assistant-ui shows ‹ 2/2 ›), as a person left them."""
    with session(browser, tmp, origin, kind, "docs", llm=convlab.EchoLLM(), height=560) as (ui, tree, app):
        send(ui, tree, "We have a free weekend in Lisbon. What should we not miss?")
        ui.regenerate()
        ui.wait_idle()
        tree.idle()
        send(ui, tree, "And how do we get from the airport to Alfama?")
        assert len(tree.snap["nodes"]) == 5
        ui.page.mouse.move(0, 0)
        return stable_png(ui.page, ui.page.locator("body"))


@pytest.mark.parametrize("kind", FRONTENDS)
def test_docs_screenshots_of_both_uis_over_convlab(chromium, tmp_path, origin, kind):
    """docs/copilotkit.png and docs/assistant-ui.png (README), rewritten only when their pixels changed."""
    shot = chromium.run(_docs, tmp_path, origin, kind)
    (REPO / "artifacts").mkdir(exist_ok=True)
    (REPO / "artifacts" / f"{kind}-docs.png").write_bytes(shot)
    target = REPO / "docs" / f"{kind}.png"
    if not target.exists() or target.read_bytes() != shot:
        target.write_bytes(shot)


def test_the_pages_pin_the_versions_the_readme_names():
    """CopilotKit 1.74.0 (with @ag-ui/client 0.0.59), assistant-ui 0.15.22 with @assistant-ui/react-ag-ui 0.0.57
    (@ag-ui/client 0.0.58): what each package-lock.json installs."""
    def locked(name: str) -> dict[str, str]:
        lock = json.loads((PAGES / name / "package-lock.json").read_text())
        return {k.removeprefix("node_modules/"): v["version"] for k, v in lock["packages"].items() if k}

    ck, au = locked("copilotkit"), locked("assistant-ui")
    assert (ck["@copilotkit/react-core"], ck["@copilotkit/react-ui"], ck["@ag-ui/client"], ck["@ag-ui/core"]) == \
        ("1.74.0", "1.74.0", "0.0.59", "0.0.59")
    assert (au["@assistant-ui/react"], au["@assistant-ui/react-ag-ui"], au["@ag-ui/client"], au["@ag-ui/core"]) == \
        ("0.15.22", "0.0.57", "0.0.58", "0.0.58")
    readme = (REPO / "README.md").read_text()
    for pin in ["CopilotKit 1.74.0", "assistant-ui 0.15.22", "`@assistant-ui/react-ag-ui` 0.0.57", "0.0.58", "0.0.59"]:
        assert pin in readme, pin
