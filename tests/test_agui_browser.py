"""The chat page (GET /) in headless Chromium (issue 13, "A chat page"): send, edit, regenerate, switch
branches, approve a summary, stop; the tree on the server matches the page after each; hostile content
is shown as text and runs nothing. docs/chat.png is taken here, from a clean scenario of its own.

Each test runs in the Playwright thread of ``Chromium`` (agui_support): console and page errors fail it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import convlab
from agui_support import REPO, SlowLLM, open_chromium, served
from screenshots import stable_png

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

HOSTILE = '<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=1</script>'
DOCS_SHOT = REPO / "docs" / "chat.png"
ARTIFACTS = REPO / "artifacts"


@pytest.fixture(scope="module")
def chromium():
    c = open_chromium()
    yield c
    c.close()


class Page:
    """A page on the chat, its console and page errors collected."""

    def __init__(self, browser, url: str, width: int = 900, height: int = 1000):
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.goto(url)
        self.page.wait_for_function("() => window.convlabChat !== undefined")

    def js(self, code: str, arg=None):
        return self.page.evaluate(code, arg)

    def act(self, do) -> None:
        """Do something that starts a run; return once the page has drawn the thread read back after it."""
        before = self.js("() => convlabChat.state.runs")
        do()
        self.page.wait_for_function("(n) => convlabChat.state.runs > n", arg=before, timeout=30000)

    def send(self, text: str) -> None:
        self.act(lambda: (self.page.fill("#cc-input", text), self.page.press("#cc-input", "Enter")))

    def shown(self) -> list[str]:
        return self.js("() => [...document.querySelectorAll('#cc-chat .cc-msg')].map(e => e.dataset.id)")

    def texts(self) -> list[str]:
        return self.js("() => [...document.querySelectorAll('#cc-chat .cc-text')].map(e => e.textContent)")

    def counts(self) -> list[str]:
        return self.js("() => [...document.querySelectorAll('#cc-chat .cc-count')].map(e => e.textContent)")

    def report(self) -> str:
        return "console/page errors:\n" + ("\n".join(self.errors) or "(none)")

    def close(self) -> None:
        self.context.close()


def matches(page: Page, s) -> None:
    """The page draws the session's active path: the same ids, the same texts."""
    path = s.path()
    assert page.shown() == [n["id"] for n in path], page.report()
    assert page.texts() == [convlab.content_text(n["content"]) for n in path]


class Lisbon:
    """A fake model with canned answers about a weekend in Lisbon (a second answer when asked again) and a
    written summary: the clean scenario of the screenshot."""

    REPLIES = {
        "We have a free weekend in Lisbon. What should we not miss?":
            "Belém for the tower and the custard tarts, an evening of fado in Alfama, and the view from the "
            "Miradouro da Senhora do Monte at sunset.",
        "We have a free weekend in Lisbon with two kids, and one of them loves trams. What should we not miss?":
            "Ride tram 28 from Martim Moniz early, before the queues. Then the Oceanário, the science museum at "
            "Pavilhão do Conhecimento, and custard tarts in Belém.",
        "How do we get from the airport to Alfama with the luggage?":
            "Take a taxi or a ride-hailing car: about 20 minutes and 15 to 20 euros. The metro needs two changes "
            "and Alfama's streets are steep and cobbled.",
    }
    AGAIN = {
        "We have a free weekend in Lisbon with two kids, and one of them loves trams. What should we not miss?":
            "Tram 28 first thing in the morning, the Oceanário for the kids, and the old Elevador de Santa Justa "
            "for one more ride with a view.",
    }
    SUMMARY = ("A family weekend in Lisbon with two kids, one of them a tram fan: tram 28 early, the Oceanário, "
               "custard tarts in Belém; from the airport to Alfama by taxi (about 20 minutes).")

    def __init__(self):
        self.asked: set[str] = set()

    def complete(self, request):
        msgs = request["messages"]
        if request.get("summary"):
            text = self.SUMMARY
        else:
            question = convlab.content_text([m for m in msgs if m["role"] == "user"][-1]["content"])
            text = self.AGAIN.get(question) if question in self.asked and question in self.AGAIN else None
            text = text or self.REPLIES.get(question, f"Noted: {question}")
            self.asked.add(question)
        return {"content": text, "usage": {"input_tokens": convlab.count_tokens(msgs), "output_tokens": convlab.count_tokens(text)}}


SUMMARIZE_AT_110 = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 110\n"


# -- the tests, each run in the browser's thread ---------------------------------------------------------

def _send_edit_regenerate_switch(browser, tmp: Path) -> None:
    with served(tmp, llm=Lisbon()) as (app, server):
        page = Page(browser, server.url + "?thread=trip")
        s = app.session("trip")
        # the page draws the thread once it has loaded it, after it has set window.convlabChat: wait for that draw
        page.page.wait_for_selector(".cc-empty", timeout=30000)
        assert page.js("() => document.querySelector('.cc-empty').textContent").startswith("No messages yet")
        page.send("We have a free weekend in Lisbon. What should we not miss?")
        matches(page, s)
        first_reply = s.head

        # edit: a new message beside the first, at the root
        page.page.locator(".cc-msg-user").first.get_by_role("button", name="Edit").click()
        page.page.fill(".cc-edit textarea", "We have a free weekend in Lisbon with two kids, and one of them loves trams. What should we not miss?")
        page.act(lambda: page.page.get_by_role("button", name="Save and send").click())
        assert len(s.children(None)) == 2 and s.path()[0]["id"] == s.children(None)[1]
        matches(page, s)
        assert page.counts() == ["2/2"]

        # regenerate: a second reply beside the first
        reply = s.head
        page.act(lambda: page.page.locator(".cc-msg-assistant").last.get_by_role("button", name="Regenerate").click())
        assert s.children(s.path()[0]["id"]) == [reply, s.head] and s.head != reply
        matches(page, s)
        assert page.counts() == ["2/2", "2/2"]
        assert page.texts()[-1].startswith("Tram 28 first thing")

        # switch: back to the first question's branch; nothing is written
        nodes = len(s.tree)
        page.act(lambda: page.page.locator(".cc-msg-user").first.get_by_role("button", name="Previous version").click())
        assert s.head == first_reply and len(s.tree) == nodes
        matches(page, s)
        assert page.counts() == ["1/2"]
        # and forward again: the newest leaf of that branch (the regenerated reply)
        page.act(lambda: page.page.locator(".cc-msg-user").first.get_by_role("button", name="Next version").click())
        assert page.texts()[-1].startswith("Tram 28 first thing") and len(s.tree) == nodes
        matches(page, s)
        assert not page.errors, page.report()
        page.close()


def test_send_edit_regenerate_and_switch_branches_in_the_page(chromium, tmp_path):
    """"edit and regenerate buttons; ‹2/3› sibling arrows that switch branches (each action is only a new
    run with a different history)"; after each, the tree on the server matches the page."""
    chromium.run(_send_edit_regenerate_switch, tmp_path)


def _approve(browser, tmp: Path) -> None:
    with served(tmp, llm=Lisbon(), worker="manual", config=SUMMARIZE_AT_110) as (app, server):
        page = Page(browser, server.url + "?thread=trip")
        s = app.session("trip")
        page.send("We have a free weekend in Lisbon with two kids, and one of them loves trams. What should we not miss?")
        page.send("How do we get from the airport to Alfama with the luggage?")
        page.send("And where can we eat near the castle, somewhere the kids can run around?")
        panel = page.page.locator("#cc-interrupt")
        assert panel.is_visible() and s.pending["type"] == "context.limit", page.report()
        proposed = s.pending["proposed"][0]["summary"]
        assert page.page.input_value("#cc-summary") == proposed
        assert "Context limit" in panel.inner_text() and "summarize" in panel.inner_text()
        assert page.page.locator("#cc-input").is_disabled()
        # a page opened again finds the waiting decision on the server
        page.page.reload()
        page.page.wait_for_function("() => window.convlabChat && !document.querySelector('#cc-interrupt').hidden")
        assert page.page.input_value("#cc-summary") == proposed
        # edit, then accept the edited summary
        accept = panel.get_by_role("button", name="Accept", exact=True)
        edited = panel.get_by_role("button", name="Accept edited")
        assert accept.is_enabled() and edited.is_disabled()
        page.page.fill("#cc-summary", "EDITED: two kids, tram 28 early, taxi from the airport.")
        assert accept.is_disabled() and edited.is_enabled()
        page.act(lambda: edited.click())
        path = s.path()
        assert path[0]["kind"] == "summary" and path[0]["content"].endswith("EDITED: two kids, tram 28 early, taxi from the airport.")
        assert s.pending is None and path[-1]["role"] == "assistant"
        matches(page, s)
        assert page.js("() => document.querySelector('#cc-chat .cc-msg').classList.contains('cc-msg-summary')")
        assert panel.is_hidden() and page.page.locator("#cc-input").is_enabled()
        assert not page.errors, page.report()
        page.close()


def test_approve_a_summary_in_the_page(chromium, tmp_path):
    """"an approve-summary panel when a run ends in an interrupt (accept, edit then accept, run as is, reset,
    end)": the proposed summary, edited, becomes the summary root on the server."""
    chromium.run(_approve, tmp_path)


SUMMARIZE_AT_200 = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 200\n"


def _decision_in_view(browser, tmp: Path) -> None:
    with served(tmp, config=SUMMARIZE_AT_200, worker="manual") as (app, server):
        page = Page(browser, server.url + "?thread=long", height=600)
        s = app.session("long")
        turn = 0
        while s.pending is None:
            turn += 1
            assert turn < 12, "the limit never came"
            page.send(f"Question {turn}: what else should a family with two kids see in Lisbon on day {turn}?")
        assert turn >= 6, f"the decision came after {turn} turns: the page is not long yet"
        page.page.wait_for_timeout(300)  # the scroll is a frame after the draw
        box = page.js("() => { const r = document.getElementById('cc-interrupt').getBoundingClientRect(); "
                      "return {top: r.top, bottom: r.bottom, height: innerHeight}; }")
        assert box["top"] >= 0 and box["top"] < box["height"], (box, "the decision panel is out of view")
        composer = page.page.locator("#cc-input")
        assert composer.is_disabled() and "Waiting for your decision" in composer.get_attribute("placeholder")
        # answered, the composer says so no more
        page.act(lambda: page.page.locator("#cc-interrupt button[data-action=accept]").click())
        assert s.pending is None and not composer.is_disabled()
        assert "Waiting" not in composer.get_attribute("placeholder")
        assert not page.errors, page.report()
        page.close()


def test_after_six_turns_the_decision_panel_is_in_view_and_the_composer_says_why_it_waits(chromium, tmp_path):
    """Issue 25, point 6: "After six turns, the decision panel sits below the fold, Send is disabled, and nothing in
    view says why. Scroll the panel into view when it opens, and say in the composer why it waits"."""
    chromium.run(_decision_in_view, tmp_path)


def _stop(browser, tmp: Path) -> None:
    slow = SlowLLM(pause=0.15, pieces=20)
    with served(tmp, llm=slow) as (app, server):
        page = Page(browser, server.url + "?thread=stop")
        text = "Tell us a long story about the trams of Lisbon, please."

        def send_then_stop():
            page.page.fill("#cc-input", text)
            page.page.press("#cc-input", "Enter")
            # streamed as it comes: part of the reply is on the page while the model still writes
            page.page.wait_for_function("() => document.querySelector('.cc-streaming .cc-text')?.textContent.length > 0")
            partial = page.js("() => document.querySelector('.cc-streaming .cc-text').textContent")
            assert ("echo: " + text).startswith(partial) and len(partial) < len("echo: " + text)
            page.page.get_by_role("button", name="Stop").click()

        page.act(send_then_stop)
        s = app.session("stop")
        assert s.turns[-1]["status"] == "cancelled" and [n["role"] for n in s.path()] == ["user"]
        assert "Stopped" in page.page.inner_text("#cc-status")
        matches(page, s)
        # the path ends unanswered: the same history again gets the reply
        slow.pause = 0.0
        page.act(lambda: page.page.get_by_role("button", name="Get a reply").click())
        assert [n["role"] for n in s.path()] == ["user", "assistant"] and s.path()[-1]["content"] == "echo: " + text
        matches(page, s)
        assert not page.errors, page.report()
        page.close()


def test_the_reply_streams_and_stop_interrupts_the_turn(chromium, tmp_path):
    """"the active path as chat bubbles, streamed as it comes"; "a stop button": the turn is cancelled and
    the call in flight records nothing."""
    chromium.run(_stop, tmp_path)


def _hostile(browser, tmp: Path) -> None:
    thread = '<img src=x onerror="window.__pwned=1">'
    with served(tmp) as (app, server):
        from urllib.parse import quote

        page = Page(browser, server.url + "?thread=" + quote(thread))
        page.send(HOSTILE)
        s = app.session(thread)
        assert page.texts() == [HOSTILE, "echo: " + HOSTILE]
        matches(page, s)
        assert page.js("() => document.querySelectorAll('img, #cc-chat script, b').length") == 0
        assert page.js("() => [...document.querySelectorAll('#cc-threads option')].map(o => o.textContent)") == [thread]
        page.page.hover("#cc-chat .cc-msg-user")
        page.page.wait_for_timeout(200)
        assert page.js("() => typeof window.__pwned") == "undefined"
        assert not page.errors, page.report()
        page.close()


def _cut(browser, tmp: Path) -> None:
    try:
        llm = convlab.LocalChat(n_ctx=512, params={"max_completion_tokens": 6})
        llm.start()
    except (ImportError, ValueError, convlab.ProviderError) as err:
        from ci_support import cannot_run

        cannot_run(f"the local model cannot start: {err}")
    try:
        with served(tmp, llm=llm) as (app, server):
            page = Page(browser, server.url + "?thread=cut")
            page.send("Tell me everything about the history of Lisbon's trams, from the first horse cars on.")
            s = app.session("cut")
            [reply] = [n for n in s.path() if n["role"] == "assistant"]
            assert reply["metadata"]["finish_reason"] == "length"  # the real server cut it at 6 tokens
            matches(page, s)
            marks = page.js("() => [...document.querySelectorAll('#cc-chat .cc-msg')].map(e => e.querySelector('.cc-cut')?.textContent ?? null)")
            assert marks[0] is None and marks[1].startswith("Cut at the token limit"), marks
            assert page.page.locator(".cc-cut").is_visible()
            assert not page.errors, page.report()
            page.close()
    finally:
        llm.close()


@pytest.mark.localmodel
def test_a_reply_cut_at_the_token_limit_is_marked_on_the_page(chromium, tmp_path):
    """Issue 34 (5): "The chat page does not mark a reply cut at the token limit (finish_reason: length is in the
    thread's log)": a real local model cut at 6 tokens, and the page says so under the reply."""
    chromium.run(_cut, tmp_path)


#: Far past n_ctx=512 alone: the model cannot read it, even after a summary of what came before.
TOO_LONG = " ".join(f"Note {i}: the crate on shelf {i} holds {i * 3} jars of honey and {i * 5} candles." for i in range(60))


def _too_long(browser, tmp: Path) -> None:
    try:
        llm = convlab.LocalChat(n_ctx=512, params={"max_completion_tokens": 6})
        llm.start()
    except (ImportError, ValueError, convlab.ProviderError) as err:
        from ci_support import cannot_run

        cannot_run(f"the local model cannot start: {err}")
    try:
        with served(tmp, llm=llm) as (app, server):
            page = Page(browser, server.url + "?thread=long")
            page.send("Say hi.")
            page.send(TOO_LONG)
            page.send("And then?")  # refused the same way: the page says why, and what to do
            status = page.js("() => document.querySelector('#cc-status').textContent")
            assert status.startswith("Refused: the provider refused call ") and \
                "Edit that message (shorter), or branch before it" in status, status
            assert page.js("() => document.querySelector('#cc-status').classList.contains('cc-error')")
            s = app.session("long")
            matches(page, s)
            notes = page.js("() => [...document.querySelectorAll('#cc-chat .cc-msg')].map(e => "
                            "[e.dataset.id, e.querySelector('.cc-too-long')?.textContent ?? null])")
            marked = [(mid, note) for mid, note in notes if note is not None]
            assert len(marked) == 1, notes
            mid, note = marked[0]
            assert convlab.content_text(s.message_tree.node(mid)["content"]) == TOO_LONG
            assert note.startswith("Too long for the model (about ") and "its context holds 512)" in note
            assert note.endswith("Edit it (shorter), or branch before it: edit an earlier message, or switch to another branch.")
            assert page.page.locator(".cc-too-long").is_visible()
            # the way on: Edit on that message, a shorter one, and the model answers
            page.page.locator(f'.cc-msg[data-id="{mid}"] button', has_text="Edit").click()
            page.page.fill(".cc-edit textarea", "Honey: how many jars?")
            page.act(lambda: page.page.get_by_role("button", name="Save and send").click())
            assert s.turns[-1]["status"] == "completed" and s.path()[-2]["content"] == "Honey: how many jars?"
            matches(page, s)
            assert page.js("() => document.querySelectorAll('.cc-too-long').length") == 0
            assert page.js("() => document.querySelector('#cc-status').textContent") == ""
            assert not page.errors, page.report()
            page.close()
    finally:
        llm.close()


@pytest.mark.localmodel
def test_a_message_past_the_models_context_says_on_the_page_how_to_go_on(chromium, tmp_path):
    """Issue 40 (5): "After a message longer than the local model's context, the served thread refuses every later
    message ... until the user edits that message ... Say what to do (edit or branch before it), in the error and
    on the chat page": a real local model (n_ctx=512), the refusal on the status line, the message marked, and an
    edit of it goes on."""
    chromium.run(_too_long, tmp_path)


def test_hostile_content_is_shown_as_text_and_runs_nothing(chromium, tmp_path):
    """"All message text is inserted as text, never as HTML": <img onerror>, <script> and a thread id with
    markup show as text; no element is made from them and nothing runs."""
    chromium.run(_hostile, tmp_path)


def _token(browser, tmp: Path) -> None:
    with served(tmp, token="page-secret") as (app, server):
        page = Page(browser, server.url + "?thread=t&token=page-secret")
        page.send("hello with a token")
        assert [n["content"] for n in app.session("t").path()] == ["hello with a token", "echo: hello with a token"]
        assert not page.errors, page.report()
        denied = page.context.new_page()
        response = denied.goto(server.url + "?thread=t")
        assert response.status == 401 and "needs its token" in denied.inner_text("body")
        page.close()


def test_the_page_takes_the_token_once_and_sends_it_as_the_header(chromium, tmp_path):
    """"the chat page takes ?token= once and sends it as the header"; without it the page is refused."""
    chromium.run(_token, tmp_path)


# -- docs/chat.png --------------------------------------------------------------------------------------

def _docs(browser, tmp: Path) -> bytes:
    with served(tmp, llm=Lisbon(), worker="manual", config=SUMMARIZE_AT_110) as (app, server):
        page = Page(browser, server.url + "?thread=lisbon", width=900, height=800)
        s = app.session("lisbon")
        page.send("We have a free weekend in Lisbon. What should we not miss?")
        page.page.locator(".cc-msg-user").first.get_by_role("button", name="Edit").click()
        page.page.fill(".cc-edit textarea", "We have a free weekend in Lisbon with two kids, and one of them loves trams. What should we not miss?")
        page.act(lambda: page.page.get_by_role("button", name="Save and send").click())
        page.act(lambda: page.page.locator(".cc-msg-assistant").last.get_by_role("button", name="Regenerate").click())
        page.send("How do we get from the airport to Alfama with the luggage?")
        page.send("And where can we eat near the castle, somewhere the kids can run around?")
        assert s.pending["type"] == "context.limit" and page.page.locator("#cc-interrupt").is_visible()
        assert page.counts() == ["2/2", "2/2"] and len(s.tree) == 8, (page.counts(), len(s.tree))
        matches(page, s)
        assert not page.errors, page.report()
        # a still picture: no focus, no caret, fonts loaded, the whole app
        page.js("() => { document.activeElement && document.activeElement.blur(); return document.fonts.ready.then(() => 1); }")
        page.page.mouse.move(0, 0)
        tall = page.js("() => Math.ceil(document.querySelector('.cc-app').getBoundingClientRect().height)")
        page.page.set_viewport_size({"width": 900, "height": tall})  # the whole chat, the composer at its end
        page.js("() => window.scrollTo(0, 0)")
        app_box = page.page.locator(".cc-app")
        shot = stable_png(page.page, app_box)
        page.close()
        return shot


def test_docs_screenshot_of_the_chat_page(chromium, tmp_path):
    """docs/chat.png (README) is taken here: a weekend in Lisbon with an edit (‹2/2›), a regenerated reply
    (‹2/2›) and a summary waiting for approval; rewritten only when its pixels changed."""
    shot = chromium.run(_docs, tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "chat-docs.png").write_bytes(shot)
    if not DOCS_SHOT.exists() or DOCS_SHOT.read_bytes() != shot:
        DOCS_SHOT.write_bytes(shot)
