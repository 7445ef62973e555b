"""The Lab in a real JupyterLab in headless Chromium.

Each scenario is checked twice: in the DOM, and in the kernel (read through
a jupyter_client on the kernel's connection file, with user_expressions).
Console and page errors fail every test.
"""

from __future__ import annotations

import json
import pathlib
import time

import pytest

from ci_support import cannot_run
from realdata import HOW, REAL
from screenshots import stable_png

REPO = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=1</script>'

SETUP = f'''
import convlab
from convlab.widgets import intents

HOSTILE = {HOSTILE!r}
s = convlab.Session(config="""
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 60
""")

def say(mid, text):
    return s.submit({{"type": "client.message", "agent_id": "bot",
                     "message": {{"id": mid, "role": "user", "content": text}}}})

say("u1", "What's the weather in NYC today?")
say("u2", "And tomorrow? Will it rain in the afternoon?")
intents.edit(s, 0, "What's the weather in LA instead?")     # a new branch at the root
intents.regenerate(s, 1)                                     # a second reply beside the first
say("u3", "Plan a weekend trip to San Diego with a beach day and tacos.")   # summarized: a summary root + a copy
say("u4", HOSTILE)
'''

MANUAL = '''
import convlab
s = convlab.Session(worker="manual", config="""
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 40
""")

def exchange(mid, text):
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": mid, "role": "user", "content": text}})
    s.decide([{"type": "llm.call"}])            # turn.start: call the model
    if s.pending and s.pending["type"] == "llm.result":
        s.decide([{"type": "turn.end"}])

exchange("u1", "Sam had 120ml of milk at noon.")
exchange("u2", "Then a nap at 2, about forty minutes long.")
exchange("u3", "How much did Sam drink today, and when was the nap?")
assert s.pending["type"] == "context.limit", s.pending
'''

SHOW = "lab = convlab.Lab(s)\nlab"

LINKS = "sum(1 for _, a in s.tree.nodes(data=True) for k in ('copied_from', 'replaces') if a.get(k))"


def dom(page, js: str):
    return page.evaluate(js)


def node_ids(page, selector: str) -> list[str]:
    return dom(page, f"() => [...document.querySelectorAll({json.dumps(selector)})].map(e => e.dataset.id)")


def test_tree_matches_the_session_and_untrusted_text_stays_text(lab_page, lab_server):
    nb = lab_server.write_notebook("tree.ipynb", [SETUP, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    k = kernel.values(nodes="s.tree.number_of_nodes()", path="[n['id'] for n in s.path()]",
                      links=LINKS, head="s.head", hostile_ids="[n for n, a in s.tree.nodes(data=True) if HOSTILE in str(a['content'])]")
    assert k["links"] >= 2 and len(k["hostile_ids"]) >= 2, k  # the scenario has copies and a summary root

    drawn = node_ids(page, ".cl-tree .cl-node")
    assert len(drawn) == k["nodes"], (drawn, k, lab_page.report())
    assert node_ids(page, ".cl-tree .cl-node.cl-path") == k["path"], lab_page.report()
    assert dom(page, "() => document.querySelectorAll('.cl-tree .cl-link').length") == k["links"]
    assert node_ids(page, ".cl-tree .cl-node.cl-head") == [k["head"]]
    assert dom(page, "() => document.querySelectorAll('.cl-tree .cl-node.cl-summary').length") >= 1

    # untrusted content: shown as text in the tree, the hover preview and the chat; nothing runs
    # (a row's text is cut to the tree's width: each hostile row shows a prefix of its message, as text)
    labels = dom(page, "() => Object.fromEntries([...document.querySelectorAll('.cl-tree text.cl-label[data-id]')]"
                       ".map(t => [t.dataset.id, t.querySelector('.cl-label-text').textContent]))")
    contents = kernel.value(f"{{n: str(s.tree.nodes[n]['content']) for n in {k['hostile_ids']!r}}}")
    for nid, content in contents.items():
        shown = labels[nid]
        assert "<img src=x" in shown and " ".join(content.split()).startswith(shown.removesuffix("…")), (nid, shown)
    page.hover(f'.cl-tree .cl-node[data-id="{k["hostile_ids"][0]}"]')
    assert dom(page, "() => document.querySelector('.cl-tree .cl-tip-body').textContent") == HOSTILE
    chat = dom(page, "() => [...document.querySelectorAll('.cl-chat .clw-text')].map(e => e.textContent)")
    assert HOSTILE in chat and "echo: " + HOSTILE in chat, chat
    assert dom(page, "() => document.querySelectorAll('img[src=\"x\"], .cl-lab script').length") == 0
    page.wait_for_timeout(300)
    assert dom(page, "() => typeof window.__pwned") == "undefined"

    page.mouse.move(5, 5)  # the hover preview off, for the pictures
    page.wait_for_function("() => document.querySelector('.cl-tree .cl-tip').style.display === 'none'")
    lab_page.screenshot(page.locator(".cl-tree").first, "tree.png")
    lab_page.screenshot(page.locator(".cl-lab").first, "lab-security.png")  # artifacts/ only: never the docs
    assert not lab_page.errors, lab_page.report()


def test_clicking_a_node_on_another_branch_moves_the_head(lab_page, lab_server):
    nb = lab_server.write_notebook("click.ipynb", [SETUP, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    before = kernel.values(nodes="s.tree.number_of_nodes()", head="s.head",
                           target="[n for n, a in s.tree.nodes(data=True) if a['content'] == 'echo: And tomorrow? Will it rain in the afternoon?'][0]")
    assert before["target"] != before["head"]
    page.click(f'.cl-tree .cl-node[data-id="{before["target"]}"]')
    head = kernel.wait_for("s.head", lambda h: h == before["target"])
    page.wait_for_selector(f'.cl-tree .cl-node.cl-head[data-id="{head}"]', timeout=10000)
    after = kernel.values(nodes="s.tree.number_of_nodes()", path="[n['id'] for n in s.path()]",
                          replies="sum(1 for e in s.events if e['type'] == 'llm.started')")
    assert after["nodes"] == before["nodes"], "looking at a branch must not record anything"
    assert node_ids(page, ".cl-tree .cl-node.cl-path") == after["path"]
    page.wait_for_function("(t) => [...document.querySelectorAll('.cl-chat .clw-text')].at(-1)?.textContent === t",
                           arg="echo: And tomorrow? Will it rain in the afternoon?", timeout=10000)

    # a user message that was never answered: the head goes to the reply above it, nothing is recorded
    unanswered = kernel.value("[n for n, a in s.tree.nodes(data=True) if a['role'] == 'user' and s.tree.out_degree(n) == 0"
                              " and a['kind'] == 'message'][0]")
    page.click(f'.cl-tree .cl-node[data-id="{unanswered}"]')
    parent = kernel.value(f"s.tree.nodes[{unanswered!r}]['parent']")
    kernel.wait_for("s.head", lambda h: h == parent)
    assert kernel.value("s.tree.number_of_nodes()") == before["nodes"]
    page.wait_for_selector(".cl-tree .cl-status-on", timeout=10000)
    assert "has no reply yet" in dom(page, "() => document.querySelector('.cl-tree .cl-status').textContent")
    assert not lab_page.errors, lab_page.report()


def test_regenerate_adds_a_sibling(lab_page, lab_server):
    nb = lab_server.write_notebook("regen.ipynb", [SETUP, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    before = kernel.values(nodes="s.tree.number_of_nodes()", head="s.head",
                           parent="s.path()[-2]['id']", kids="len(list(s.tree.successors(s.path()[-2]['id'])))")
    page.locator(".cl-chat .clw-msg-assistant").last.get_by_role("button", name="Regenerate").click()
    kernel.wait_for("s.tree.number_of_nodes()", lambda n: n == before["nodes"] + 1)
    after = kernel.values(head="s.head", parent="s.path()[-2]['id']",
                          kids=f"len(list(s.tree.successors({before['parent']!r})))")
    assert after["parent"] == before["parent"] and after["kids"] == before["kids"] + 1
    assert after["head"] != before["head"]
    page.wait_for_selector(f'.cl-tree .cl-node.cl-head[data-id="{after["head"]}"]', timeout=10000)
    assert len(node_ids(page, ".cl-tree .cl-node")) == before["nodes"] + 1
    # the chat redraws on its own message from the kernel, maybe after the tree: wait for its counter
    counter = f"{after['kids']}/{after['kids']}"
    labels = "() => [...document.querySelectorAll('.cl-chat .clw-count')].map(e => e.textContent)"
    try:
        page.wait_for_function(f"(c) => ({labels})().includes(c)", arg=counter, timeout=10000)
    except Exception:  # noqa: BLE001 - say what the chat showed instead
        raise AssertionError(f"the chat never showed {counter}: {dom(page, labels)}\n{lab_page.report()}") from None
    assert not lab_page.errors, lab_page.report()


def test_edit_in_the_chat_makes_a_branch_and_the_arrows_look_at_its_sibling(lab_page, lab_server):
    """The chat's own buttons, clicked: Edit opens the message as plain text, Send edit makes a new
    branch (the editor closes), and ‹ goes back to the branch it left, recording nothing."""
    nb = lab_server.write_notebook("edit.ipynb", [SETUP, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    before = kernel.values(nodes="s.tree.number_of_nodes()", path="[n['id'] for n in s.path()]")
    hostile = page.locator(f'.cl-chat .clw-msg[data-id="{before["path"][-2]}"]')
    hostile.get_by_role("button", name="Edit").click()
    area = hostile.locator("textarea")
    assert area.input_value() == HOSTILE  # the message itself, as plain text
    area.fill("A plain question now.")
    hostile.get_by_role("button", name="Send edit").click()
    # the edit's turn, ended: the new question and its reply on the path
    ended = kernel.wait_for("[[n['id'], n['role']] for n in s.path()]",
                            lambda p: p[-2][0] != before["path"][-2] and p[-1][1] == "assistant")
    after = [nid for nid, _role in ended]
    k = kernel.values(nodes="s.tree.number_of_nodes()", asked="s.path()[-2]['content']",
                      parent=f"s.tree.nodes[{before['path'][-2]!r}]['parent']", new_parent="s.path()[-2]['parent']")
    assert k["nodes"] == before["nodes"] + 2 and k["asked"] == "A plain question now." and k["parent"] == k["new_parent"]
    page.wait_for_function("(t) => [...document.querySelectorAll('.cl-chat .clw-text')].at(-2)?.textContent === t",
                           arg="A plain question now.", timeout=10000)
    assert page.locator(".cl-chat .clw-editor").count() == 0  # the editor went with the row it edited
    edited = page.locator(f'.cl-chat .clw-msg[data-id="{after[-2]}"]')
    shown = edited.locator(".clw-count").text_content()
    assert shown == "2/2", (shown, kernel.values(  # (what the kernel holds, when not)
        siblings=f"[(c, s.tree.nodes[c]['content'][:30]) for c in s.children(s.tree.nodes[{after[-2]!r}]['parent'])]",
        events="[(e['type'], e.get('turn_id')) for e in s.events[-30:]]"))
    edited.get_by_role("button", name="‹").click()
    kernel.wait_for("[n['id'] for n in s.path()]", lambda p: p == before["path"])
    assert kernel.value("s.tree.number_of_nodes()") == k["nodes"]  # looking records nothing
    page.wait_for_function("(t) => [...document.querySelectorAll('.cl-chat .clw-text')].at(-2)?.textContent === t",
                           arg=HOSTILE, timeout=10000)
    assert dom(page, "() => typeof window.__pwned") == "undefined"
    assert not lab_page.errors, lab_page.report()


WATCH = """
import threading
ARRIVED, RAN, BUSY = [], [], [False]   # each chat message: (its thread, in BUSY); each event: (type, on the main thread, in BUSY)
lab.chat.messages.on_msg(lambda _w, _c, _b: ARRIVED.append((threading.current_thread().name, BUSY[0])))
s.subscribe(lambda e: RAN.append((e["type"], threading.current_thread() is threading.main_thread(), BUSY[0])))
"""


def test_a_click_while_a_cell_runs_changes_the_session_after_it_on_the_kernels_thread(lab_page, lab_server):
    """JupyterLab sends widget messages on a kernel subshell, a thread of its own, even while a cell
    runs: a click then ran its intent beside the cell, two threads changing one Session (which is
    not thread-safe; a cell could read it in the middle of the click's turn). The intent runs on the
    thread that built the Lab, the kernel's main one, once the cell has ended."""
    nb = lab_server.write_notebook("busy.ipynb", [SETUP, SHOW, WATCH])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    kernel.wait_for("'RAN' in globals()", bool)
    regenerate = page.locator(".cl-chat .clw-msg-assistant").last.get_by_role("button", name="Regenerate")

    def drawn() -> None:  # the chat shows the head's reply last: a click goes to the reply on the path, not one it left
        head = kernel.value("s.head")
        page.wait_for_function("(h) => [...document.querySelectorAll('.cl-chat .clw-msg-assistant')].at(-1)?.dataset.id === h",
                               arg=head, timeout=10000)

    drawn()
    for _ in range(10):  # a comm moves to its subshell a few seconds after it opens: click until the chat's has
        nodes = kernel.value("s.tree.number_of_nodes()")
        regenerate.click()
        arrived = kernel.wait_for("[s.tree.number_of_nodes(), [a for a, _ in ARRIVED[-1:]]]", lambda v: v[0] == nodes + 1)[1]
        drawn()
        if arrived != ["MainThread"]:
            break
        time.sleep(0.5)
    before = kernel.values(nodes="s.tree.number_of_nodes()", ran="len(RAN)", arrived="len(ARRIVED)",
                          parent="s.path()[-2]['id']")
    # a cell busy on the main thread until the click has come (on the subshell), and a little after
    busy = kernel.client.execute(f"BUSY[0] = True\nimport time\nt0 = time.monotonic()\n"
                                 f"while len(ARRIVED) == {before['arrived']} and time.monotonic() - t0 < 10:\n"
                                 f"    time.sleep(0.02)\ntime.sleep(0.3)\nBUSY[0] = False", store_history=False)
    deadline = time.monotonic() + 20
    while True:  # the busy cell has started on the main thread
        msg = kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == busy and msg["msg_type"] == "execute_input":
            break
    regenerate.click()
    after = kernel.wait_for("[s.tree.number_of_nodes(), lab.chat.status]", lambda v: v[0] != before["nodes"], timeout=45)
    assert after[0] == before["nodes"] + 1, after  # (the chat's status says why, when not)
    k = kernel.values(arrived=f"ARRIVED[{before['arrived']}:]", ran=f"RAN[{before['ran']}:]", busy="BUSY[0]",
                      kids=f"len(s.children({before['parent']!r}))")
    assert k["arrived"] and all(name != "MainThread" for name, _busy in k["arrived"]), (
        f"JupyterLab sent the click on the main shell ({k['arrived']}): this test needs comms over subshells")
    assert any(busy for _name, busy in k["arrived"]), f"the click came after the cell ended: {k['arrived']}"
    assert k["ran"] and all(main and not busy for _kind, main, busy in k["ran"]), k["ran"]
    counter = f"{k['kids']}/{k['kids']}"
    page.wait_for_function("(c) => [...document.querySelectorAll('.cl-chat .clw-count')].some(e => e.textContent === c)",
                           arg=counter, timeout=10000)
    assert not lab_page.errors, lab_page.report()


def test_accepting_a_context_limit_gives_the_tree_its_summary_root(lab_page, lab_server):
    nb = lab_server.write_notebook("limit.ipynb", [MANUAL, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    assert kernel.value("s.pending['type']") == "context.limit"
    panel = page.locator(".cl-decisions")
    panel.get_by_text("not an answer", exact=False).wait_for(timeout=10000)
    assert dom(page, "() => document.querySelectorAll('.cl-tree .cl-node.cl-summary').length") == 0
    summary = panel.locator("textarea")
    proposed = kernel.value("s.pending['proposed'][0]['summary']")
    assert summary.input_value() == proposed
    lab_page.screenshot(panel.first, "decision-context-limit.png")
    summary.fill("EDITED: Sam drank 120ml at noon and napped at 2.")
    panel.get_by_role("button", name="Accept proposed").click()
    root = kernel.wait_for("[n for n, a in s.tree.nodes(data=True) if a['kind'] == 'summary' and a['parent'] is None]",
                           lambda ids: len(ids) == 1)[0]
    k = kernel.values(content=f"s.tree.nodes[{root!r}]['content']", replaces=f"s.tree.nodes[{root!r}]['replaces']",
                      nodes="s.tree.number_of_nodes()", links=LINKS, path="[n['id'] for n in s.path()]",
                      kinds="[e['type'] for e in s.events if e['type'].startswith('context.')]")
    assert "EDITED: Sam drank 120ml" in k["content"] and k["replaces"]
    assert k["kinds"][-2:] == ["context.limited", "context.replaced"]
    page.wait_for_selector(f'.cl-tree .cl-node.cl-summary[data-id="{root}"]', timeout=10000)
    assert len(node_ids(page, ".cl-tree .cl-node")) == k["nodes"]
    assert node_ids(page, ".cl-tree .cl-node.cl-path") == k["path"] and k["path"][0] == root
    assert dom(page, "() => document.querySelectorAll('.cl-tree .cl-link').length") == k["links"] >= 2
    lab_page.screenshot(page.locator(".cl-lab").first, "lab-summary.png")
    assert not lab_page.errors, lab_page.report()


# -- the screenshot in the README and the tour: a clean, representative session ----------------

DOCS_SHOT = REPO / "docs" / "lab.png"
ARTIFACTS = REPO / "artifacts"

DOCS = '''
import convlab
from convlab.engine import chat_worker
from convlab.widgets import intents

REPLIES = {
    "Sam had 120 ml of formula at 7:00.": "Logged a feed: 120 ml of formula at 7:00.",
    "Nap from 9:30 to 10:15.": "Logged a nap: 9:30 to 10:15, 45 minutes.",
    "Nap from 9:30 to 10:40, she woke up once.": "Logged a nap: 9:30 to 10:40, 70 minutes, with one waking.",
    "Another 150 ml at 11:30, she finished the bottle.": "Logged a feed: 150 ml at 11:30. That makes 270 ml since 7:00.",
}
AGAIN = {"Nap from 9:30 to 10:40, she woke up once.": "Nap logged: 9:30 to 10:40 (1 h 10 min). One waking noted."}


class BabyLog:
    """A fake model with canned replies (a second answer when regenerated) and a written summary."""

    latency = 2.0  # simulated seconds per call

    def __init__(self):
        self.asked = set()

    def complete(self, request):
        msgs = request["messages"]
        if request.get("summary"):
            read = " ".join(str(m["content"]) for m in msgs[:-1])
            text = ("Sam's day so far: 120 ml of formula at 7:00, then a nap from 9:30 to 10:40 (70 minutes, one waking)."
                    if "11:30" not in read else
                    "Sam's day so far: feeds of 120 ml at 7:00 and 150 ml at 11:30 (270 ml in all); a nap from 9:30 to 10:40.")
        else:
            question = [m for m in msgs if m["role"] == "user"][-1]["content"]
            text = AGAIN[question] if question in self.asked and question in AGAIN else REPLIES[question]
            self.asked.add(question)
        return {"content": text, "usage": {"input_tokens": convlab.count_tokens(msgs),
                                           "output_tokens": convlab.count_tokens([{"role": "assistant", "content": text}])}}


s = convlab.Session(llm=BabyLog(), worker="manual", config="""
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 10800
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 70
""")


def settle(accept_limits=True):
    """Answer the decisions as the built-in chat worker would; a context.limit only if ``accept_limits``."""
    while s.pending and (accept_limits or s.pending["type"] != "context.limit"):
        s.decide(chat_worker(s.pending))


def say(mid, text, after=0.0, accept_limits=True):
    s.advance(after)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": mid, "role": "user", "content": text}})
    settle(accept_limits)


say("u1", "Sam had 120 ml of formula at 7:00.")
say("u2", "Nap from 9:30 to 10:15.", after=1500)
intents.edit(s, 2, "Nap from 9:30 to 10:40, she woke up once."); settle()   # a branch beside u2
intents.regenerate(s, 3); settle()                                          # a second reply beside the first
say("u3", "Another 150 ml at 11:30, she finished the bottle.", after=2400)  # summarized: a summary root + a copy
say("u4", "How much has Sam had today, and when is the next nap due?", after=900, accept_limits=False)
assert s.pending["type"] == "context.limit", s.pending
'''


def rows_past_the_edge(page) -> list[str]:
    """Ids of the tree rows whose label ends past the tree's visible width."""
    return dom(page, """() => { const sc = document.querySelector('.cl-tree .cl-scroll');
        return [...sc.querySelectorAll('text.cl-label[data-id]')]
            .filter(t => { const b = t.getBBox(); return b.x + b.width > sc.clientWidth; }).map(t => t.dataset.id); }""")


def test_docs_screenshot_shows_a_clean_branched_session_with_a_pending_decision(lab_page, lab_server):
    """docs/lab.png (README, 01-tour) is taken here: a baby's feeds and naps, an edit, a
    regenerate, an accepted summary, and the next context.limit waiting in the DecisionPanel."""
    page = lab_page.page
    page.set_viewport_size({"width": 1380, "height": 1700})
    nb = lab_server.write_notebook("docs.ipynb", [DOCS, SHOW])
    lab_page.open_notebook(nb, wait_for=".cl-decisions textarea")
    kernel = lab_server.kernel(nb)
    k = kernel.values(
        nodes="s.tree.number_of_nodes()", path="[n['id'] for n in s.path()]", head="s.head", links=LINKS,
        pending="{k: s.pending[k] for k in ('type', 'reason', 'strategy', 'tokens')}",
        summary="s.pending['proposed'][0]['summary']", tokens="s.tokens()",
        summaries="[n for n, a in s.tree.nodes(data=True) if a['kind'] == 'summary']",
        forks="sorted(n for n in s.tree if s.tree.out_degree(n) > 1)")
    assert k["pending"] == {"type": "context.limit", "reason": "full", "strategy": "summarize", "tokens": k["tokens"]}, k
    assert k["nodes"] == 12 and k["links"] == 2 and len(k["summaries"]) == 1 and k["forks"] == ["e1", "e3"], k
    assert k["path"][0] == k["summaries"][0] and k["path"][-1] == k["head"] == "u4", k

    # every part drawn (each renders on its own): the tree's rows, the chat's last message, the gauge, the log
    question = "How much has Sam had today, and when is the next nap due?"
    page.wait_for_function("(n) => document.querySelectorAll('.cl-tree .cl-node').length === n", arg=k["nodes"])
    page.wait_for_function("(t) => [...document.querySelectorAll('.cl-chat .clw-text')].at(-1)?.textContent === t", arg=question)
    page.locator(".cl-gauge").get_by_text("summarize over_tokens 70").wait_for()
    page.locator(".cl-events .clw-log").get_by_text("context.limited").first.wait_for()

    # the tree: one node per message, the active path, the head, the summary root and its dashed links
    assert node_ids(page, ".cl-tree .cl-node.cl-path") == k["path"], lab_page.report()
    assert node_ids(page, ".cl-tree .cl-node.cl-head") == [k["head"]]
    assert node_ids(page, ".cl-tree .cl-node.cl-summary") == k["summaries"]
    assert dom(page, "() => document.querySelectorAll('.cl-tree .cl-link').length") == k["links"]
    assert rows_past_the_edge(page) == [], lab_page.report()  # long rows end in … inside the box
    summary_row = f'.cl-tree text.cl-label[data-id="{k["summaries"][0]}"] .cl-label-text'
    narrow = dom(page, f"() => document.querySelector('{summary_row}').textContent")
    # the decision panel: the held call's reason and the proposed summary, editable, not an answer
    panel = page.locator(".cl-decisions")
    text = panel.inner_text()
    assert "Decision: context.limit" in text and "reason full" in text and "strategy summarize" in text, text
    assert f"{k['tokens']} tokens" in text and "it is not an answer" in text, text
    assert panel.locator("textarea").input_value() == k["summary"]
    assert panel.get_by_role("button", name="Accept proposed").is_enabled()
    # the gauge: the engine's count past the summarize line
    gauge = page.locator(".cl-gauge").inner_text()
    assert f"Context {k['tokens']} tokens" in gauge and "summarize over_tokens 70" in gauge, gauge
    # the chat: the path, with the question that waits last
    chat = dom(page, "() => [...document.querySelectorAll('.cl-chat .clw-text')].map(e => e.textContent)")
    assert chat[-1] == question and len(chat) == len(k["path"]), chat
    assert "waiting for a decision" in page.locator(".cl-chat").inner_text()

    # a still picture: no sidebar, no hover, no focus, fonts loaded
    page.evaluate("() => { window.jupyterapp.shell.collapseLeft(); window.jupyterapp.shell.collapseRight(); }")
    # a wider tree: the rows are fitted again, longer, and still inside
    page.wait_for_function(f"(n) => document.querySelector('{summary_row}').textContent.length > n", arg=len(narrow))
    assert rows_past_the_edge(page) == []
    page.mouse.move(0, 0)
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); return document.fonts.ready.then(() => 1); }")
    lab = page.locator(".cl-lab").first
    lab.evaluate("(el) => { el.style.padding = '10px'; el.style.background = '#fff'; }")  # a white frame for the README
    lab.scroll_into_view_if_needed()
    box, view = lab.bounding_box(), page.viewport_size  # all of the Lab in view, or the picture would be cut
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"] and box["x"] + box["width"] <= view["width"], (box, view)
    shot = stable_png(page, lab)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "lab-docs.png").write_bytes(shot)
    if not DOCS_SHOT.exists() or DOCS_SHOT.read_bytes() != shot:  # unchanged pixels leave git clean
        DOCS_SHOT.write_bytes(shot)
    assert not lab_page.errors, lab_page.report()


# -- a burst: what the page shows after it equals the session (issue 14) ------------------

BURST = '''
import time
from convlab.widgets import layout
before = [p.redraw.count for p in lab._parts()]
t0 = time.monotonic()
for i in range(120):
    say(f"b{i}", f"burst message {i}: " + "x" * (i % 40))
    if i % 17 == 5:
        intents.edit(s, len(s.path()) - 2, f"an edit during the burst ({i})")      # a branch
    if i % 23 == 7:
        intents.regenerate(s, len(s.path()) - 1)                                 # a reply beside the last
    if i % 31 == 11:
        intents.look(s, s.path()[len(s.path()) // 2]["id"])                     # back to an older branch
elapsed = time.monotonic() - t0
'''

GEOMETRY = """() => { const sc = document.querySelector('.cl-tree .cl-scroll');
    return [...sc.querySelectorAll('g.cl-node[data-id]')].map(g => {
        const m = /translate\\(([-\\d.]+),([-\\d.]+)\\)/.exec(g.getAttribute('transform'));
        return [g.dataset.id, +m[1], +m[2], g.classList.contains('cl-path'), g.classList.contains('cl-head')]; }); }"""


def test_after_a_burst_the_page_shows_the_session(lab_page, lab_server):
    """Issue 14: "The browser tests keep proving that what the page shows after a burst equals the session":
    a cell drives 120 turns with edits, regenerations and looks while the Lab is on screen; the page
    then holds Python's layout, row for row, and Python's layout is the session's."""
    nb = lab_server.write_notebook("burst.ipynb", [SETUP, SHOW, BURST])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    k = kernel.wait_for("{'elapsed': elapsed} if 'elapsed' in globals() else None", lambda v: v is not None, timeout=120)
    k.update(kernel.values(
        made="[p.redraw.count - b for p, b in zip(lab._parts(), before)]",
        nodes="s.tree.number_of_nodes()", head="s.head", path="[n['id'] for n in s.path()]",
        rows="[[n['id'], n['row'], n['lane'], n['path'], n['head']] for n in lab.tree.data['nodes']]",
        same="(lambda d: (d.pop('version'), d)[1])(lab.tree.data) == layout((a for _, a in s.tree.nodes(data=True)), s.head, "
             "turn_status={t['id']: t['status'] for t in s.turns if t['status'] in ('running', 'cancelled', 'failed')}, "
             "selected=lab.tree.selected, status=lab.tree.status)",
        tokens="s.tokens()", events="len(s.events)", chat="lab.chat._path_ids[-lab.chat.limit:]",
        texts="[convlab.content_text(s.tree.nodes[i]['content']) for i in lab.chat._path_ids[-lab.chat.limit:]]",
        dirty="[p.redraw.dirty for p in lab._parts()]"))
    assert k["same"] and not any(k["dirty"]), k["dirty"]
    assert all(1 <= n <= k["elapsed"] / 0.25 + 2 for n in k["made"]), k  # coalesced: never a draw per event
    page.wait_for_selector(f'.cl-tree .cl-node.cl-head[data-id="{k["head"]}"]', timeout=20000)
    # the tree: every painted node where Python put it, scrolled from top to bottom; together, every row
    rows = {r[0]: r for r in k["rows"]}
    seen = set()
    height = dom(page, "() => document.querySelector('.cl-tree .cl-scroll').scrollHeight")
    for top in range(0, height + 400, 400):
        page.evaluate(f"() => {{ const sc = document.querySelector('.cl-tree .cl-scroll'); sc.scrollTop = {top}; sc.dispatchEvent(new Event('scroll')); }}")
        page.wait_for_timeout(60)
        for nid, x, y, path, head in dom(page, GEOMETRY):
            _id, row, lane, want_path, want_head = rows[nid]
            assert (x, y) == (34 + lane * 18 + 9, 16 + row * 26 + 13) and (path, head) == (want_path, want_head), (nid, x, y, rows[nid])
            seen.add(nid)
    assert seen == set(rows), len(set(rows) - seen)
    assert dom(page, "() => document.querySelector('.cl-tree .cl-info').textContent").startswith(f"{k['nodes']} messages")
    # the chat: the newest messages of the path, in order; the gauge and the log at the session's last event
    page.wait_for_function("(n) => document.querySelectorAll('.cl-chat .clw-msg').length === n", arg=len(k["chat"]))
    chat = dom(page, "() => [...document.querySelectorAll('.cl-chat .clw-msg .clw-text')].map(e => e.textContent)")
    assert chat == k["texts"], lab_page.report()
    assert f"{len(k['path'])} messages on the active path" in page.locator(".cl-chat").inner_text()
    assert f"Context {k['tokens']} tokens" in page.locator(".cl-gauge").inner_text()
    assert dom(page, "() => document.querySelector('.cl-events .clw-log .clw-t').textContent").startswith(f"{k['events']} t=")
    assert not lab_page.errors, lab_page.report()


# -- an imported log, read-only (issue 15) -----------------------------------------------

CLAUDE_CODE = REAL / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"


def test_lab_on_a_real_claude_code_log_is_read_only(lab_page, lab_server):
    """Issue 15: "A browser test opens `Lab(conversation)` on the real Claude Code log": the tree and the
    chat show the conversation, nothing offers to send, and a click switches branches by moving the
    conversation's head (the log's compaction left the history before it on a root of its own)."""
    if not CLAUDE_CODE.is_file():
        cannot_run(f"the real Claude Code log is missing: {CLAUDE_CODE} ({HOW})")
    cells = ["import convlab\n"
             f"(conv,) = convlab.read({str(CLAUDE_CODE.resolve())!r}, progress=False)\n"
             "first_root = conv.roots[0]",
             "lab = convlab.Lab(conv)\nlab"]
    nb = lab_server.write_notebook("readonly.ipynb", cells)
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    k = kernel.values(nodes="len(conv)", head="conv.head", path="[m['id'] for m in conv.path()]",
                      root="first_root", shown="len(lab.tree.data['nodes'])", tokens="lab.gauge.tokens",
                      last="convlab.content_text(conv.path()[-1]['content'])", limit="lab.chat.limit")
    assert k["nodes"] == 466 and k["root"] != k["path"][0]
    page.wait_for_selector(f'.cl-tree .cl-node.cl-head[data-id="{k["head"]}"]', timeout=20000)
    info = dom(page, "() => document.querySelector('.cl-tree .cl-info').textContent")
    assert info == f"466 messages · {k['shown']} shown · read-only", info
    assert dom(page, "() => getComputedStyle(document.querySelector('.cl-tree .cl-continue')).display") == "none"
    assert dom(page, "() => document.querySelectorAll('.cl-decisions, .cl-events, .cl-chat textarea').length") == 0
    chat = page.locator(".cl-chat")
    assert chat.get_by_role("button", name="Send").count() == 0 and chat.get_by_role("button", name="Edit").count() == 0
    assert "read-only" in chat.inner_text() and f"{len(k['path'])} messages on the active path" in chat.inner_text()
    texts = dom(page, "() => [...document.querySelectorAll('.cl-chat .clw-msg .clw-text')].map(e => e.textContent)")
    assert len(texts) == k["limit"] and texts[-1] == k["last"]
    # the chat opens at its newest message (40 real messages are far taller than its 480 px)
    left = "() => { const m = document.querySelector('.cl-chat .clw-messages'); return m.scrollHeight - m.scrollTop - m.clientHeight; }"
    page.wait_for_function(f"() => ({left})() < 24", timeout=5000)
    assert dom(page, "() => document.querySelector('.cl-chat .clw-messages').scrollHeight") > 1000
    assert f"Context {k['tokens']:,} tokens" in page.locator(".cl-gauge").inner_text()
    lab_page.screenshot(page.locator(".cl-lab").first, "lab-readonly.png")
    # switch to the history before the compaction (the top rows): the conversation's head moves, nothing is written
    page.evaluate("() => { const sc = document.querySelector('.cl-tree .cl-scroll'); sc.scrollTop = 0; }")
    page.click(f'.cl-tree .cl-node[data-id="{k["root"]}"]')
    head = kernel.wait_for("conv.head", lambda h: h != k["head"])
    after = kernel.values(leaf=f"convlab.newest_leaf(conv.tree, {k['root']!r})", path="[m['id'] for m in conv.path()]",
                          nodes="len(conv)", last="convlab.content_text(conv.path()[-1]['content'])")
    assert head == after["leaf"] and after["path"][0] == k["root"] and after["nodes"] == 466
    page.wait_for_selector(f'.cl-tree .cl-node.cl-head[data-id="{head}"]', timeout=20000)
    page.wait_for_function("(t) => [...document.querySelectorAll('.cl-chat .clw-text')].at(-1)?.textContent === t",
                           arg=after["last"], timeout=20000)
    assert dom(page, "() => document.querySelector('.cl-tree .cl-selected').textContent") == f"selected {k['root']}"
    lab_page.screenshot(page.locator(".cl-lab").first, "lab-readonly-switched.png")
    assert not lab_page.errors, lab_page.report()
