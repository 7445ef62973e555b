"""The Lab's search box, labels and comparison in a real JupyterLab in headless Chromium (issue 38): the page
only sends intents, the kernel finds and compares, the page draws what it is sent."""

from __future__ import annotations

import json
import re

import pytest

from ci_support import cannot_run
from realdata import HOW, REAL

pytestmark = pytest.mark.browser

SETUP = '''
import convlab
s = convlab.Session()

def say(text):
    return s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": text}})

say("What's the weather in NYC today?")
say("And tomorrow? Will it rain in the afternoon?")
s.submit({"type": "client.messages", "agent_id": "bot", "messages": s.view("e1") + [{"role": "user", "content": "Is the weather in NYC good for a picnic?"}]})
s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "What's the weather in LA instead?"}]})
say("<b>not bold</b> and the weather in LA tomorrow?")
s.label("e1", "NYC today")
'''

SHOW = "lab = convlab.Lab(s)\nlab"


def dom(page, js: str):
    return page.evaluate(js)


def ids(page, selector: str) -> list[str]:
    return dom(page, f"() => [...document.querySelectorAll({json.dumps(selector)})].map(e => e.dataset.id)")


def test_search_steps_through_matches_labels_show_and_two_picked_branches_compare(lab_page, lab_server):
    nb = lab_server.write_notebook("explore.ipynb", [SETUP, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)

    # the label, drawn on its row
    page.wait_for_selector('.cl-tree text.cl-label[data-id="e1"] .cl-label-tag', timeout=10000)
    assert dom(page, "() => document.querySelector('.cl-tree text.cl-label[data-id=\"e1\"] .cl-label-tag').textContent") == "[NYC today]"

    # search: typed in the box, found by the kernel, marked in the page
    page.fill(".cl-tree .cl-find-box", "weather")
    page.press(".cl-tree .cl-find-box", "Enter")
    found = kernel.wait_for("lab.tree.matches", lambda m: len(m) > 0)
    page.wait_for_function("(n) => document.querySelectorAll('.cl-tree .cl-band-match').length === n", arg=len(found), timeout=10000)
    assert sorted(ids(page, ".cl-tree .cl-band-match")) == sorted(found)
    assert dom(page, "() => document.querySelector('.cl-tree .cl-find-count').textContent") == f"1 / {len(found)}"
    assert ids(page, ".cl-tree .cl-band-focus") == [found[0]]
    page.click(".cl-tree .cl-find-next")
    kernel.wait_for("lab.tree.match_at", lambda i: i == 1)
    page.wait_for_function("(t) => document.querySelector('.cl-tree .cl-find-count').textContent === t", arg=f"2 / {len(found)}", timeout=10000)
    assert ids(page, ".cl-tree .cl-band-focus") == [found[1]]
    head_before = kernel.value("s.head")
    page.click(".cl-tree .cl-find-prev")
    kernel.wait_for("lab.tree.match_at", lambda i: i == 0)
    assert kernel.value("s.head") == head_before  # stepping through matches never moves the head

    # pick two leaves and compare them: "Pick to compare", then a click on each; picking changes nothing
    leaves = kernel.value("sorted(n for n in s.tree if s.tree.out_degree(n) == 0)")
    a, b = leaves[0], leaves[-1]
    before = kernel.values(events="len(s.events)", head="s.head", turns="len(s.turns)")
    page.click(".cl-tree .cl-compare")
    kernel.wait_for("lab.tree.picking", lambda v: v is True)
    page.wait_for_function("() => document.querySelector('.cl-tree').classList.contains('cl-picking')", timeout=10000)
    page.click(f'.cl-tree .cl-node[data-id="{a}"]')
    kernel.wait_for("lab.tree.marked", lambda m: m == a)
    page.wait_for_function("(a) => document.querySelector('.cl-tree .cl-band-marked')?.dataset.id === a", arg=a, timeout=10000)
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-tree").first, "lab-picking.png")
    page.click(f'.cl-tree .cl-node[data-id="{b}"]')
    kernel.wait_for("lab.tree.compared is not None", lambda v: v is True)
    page.wait_for_selector(".cl-compare-panel .cl-compare-table", timeout=10000)
    assert kernel.values(events="len(s.events)", head="s.head", turns="len(s.turns)") == before  # no view, no turn
    assert dom(page, "() => document.querySelector('.cl-tree').classList.contains('cl-picking')") is False
    panel = page.locator(".cl-compare-panel").inner_text()
    summary = kernel.value("lab.tree.compared.attrs['summary']")
    assert summary in panel and f"{a} ⟷ {b}" in panel
    assert "<b>not bold</b>" in panel  # untrusted text shown as text, never as markup
    assert dom(page, "() => [...document.querySelectorAll('.cl-compare-panel b')].some(e => e.textContent === 'not bold')") is False
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-lab").first, "lab-explore.png")
    assert not lab_page.errors, lab_page.report()


OASST = REAL / "oasst" / "oasst1-en-trees-001-060.jsonl"


def test_search_a_real_openassistant_tree_read_only(lab_page, lab_server):
    if not OASST.is_file():
        cannot_run(f"the real OpenAssistant trees are missing: {OASST} ({HOW})")
    cells = ["import convlab, warnings\n"
             "with warnings.catch_warnings():\n"
             "    warnings.simplefilter('ignore')\n"
             f"    convs = convlab.read({str(OASST.resolve())!r}, progress=False)\n"
             "conv = max(convs, key=len)",
             "lab = convlab.Lab(conv)\nlab"]
    nb = lab_server.write_notebook("explore-oasst.ipynb", cells)
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    word = kernel.value("convlab.content_text(conv.path()[-1]['content']).split()[0]")
    page.fill(".cl-tree .cl-find-box", word)
    page.press(".cl-tree .cl-find-box", "Enter")
    found = kernel.wait_for("lab.tree.matches", lambda m: len(m) > 0)
    page.wait_for_function("() => document.querySelectorAll('.cl-tree .cl-band-focus').length === 1", timeout=10000)
    assert ids(page, ".cl-tree .cl-band-focus") == [found[0]]
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-tree").first, "tree-explore-oasst.png")
    assert not lab_page.errors, lab_page.report()


MANUAL = '''
import convlab
s = convlab.Session(worker="manual")
for q in ("Plan a trip to Lisbon.", "Three days, under 900 EUR."):
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": q}})
    s.decide([{"type": "llm.call"}])
    s.decide([])
s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "q3", "role": "user", "content": "What did we settle?"}})
reply = s.path()[1]["id"]
'''


def test_summarize_from_here_is_proposed_edited_and_accepted_in_the_decision_panel(lab_page, lab_server):
    nb = lab_server.write_notebook("summarize.ipynb", [MANUAL, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    reply = kernel.value("reply")
    # select without a click (a click looks at the branch: it would move the head off the waiting input)
    kernel.value(f"lab.tree.__setattr__('selected', {reply!r}) or lab.tree.refresh()")
    page.wait_for_function("(r) => document.querySelector('.cl-tree .cl-selected').textContent === 'selected ' + r", arg=reply, timeout=10000)
    events = kernel.value("len(s.events)")
    page.click(".cl-tree .cl-summarize")
    kernel.wait_for("lab.decisions.proposal is not None", lambda v: v is True)
    assert kernel.value("len(s.events)") == events  # proposed: nothing written
    box = page.locator(".cl-decisions textarea")
    box.wait_for(timeout=10000)
    box.fill("A trip to Lisbon: three days, under 900 EUR.")
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-lab").first, "lab-summarize-proposed.png")
    page.get_by_role("button", name="Accept proposed and call the model").click()
    kernel.wait_for("any(e['type'] == 'context.replaced' for e in s.events)", lambda v: v is True)
    texts = kernel.value("[m['content'] for m in s.path()]")
    assert "The earlier conversation was summarized:\n\nA trip to Lisbon: three days, under 900 EUR." in texts
    assert texts[-2] == "What did we settle?"
    assert not lab_page.errors, lab_page.report()


CC = REAL / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"

CC_SETUP = f"""
import convlab, warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    c = max(convlab.read({str(CC.resolve())!r}, progress=False), key=len)
from convlab.explore.sessions import session_of
s = session_of(c, worker="manual")   # a real Claude Code session, loaded from the converted log (as convlab.merge does)
head = s.head
side = next(n for n in sorted(s.tree) if s.tree.out_degree(n) == 0 and n != head)
side_text = convlab.content_text(s.message_tree.node(side)["content"])
"""


def test_a_real_claude_code_session_compare_merge_summarize_and_its_event_times(lab_page, lab_server):
    """The audit's session: picking two leaves moves nothing, the long comparison stays a box under its summary,
    the merged message says where it came from, the summary proposal keeps its editable text in view, and the
    event log shows spans, not the log's epoch seconds."""
    if not CC.is_file():
        cannot_run(f"the real Claude Code session is missing: {CC} ({HOW})")
    nb = lab_server.write_notebook("cc-explore.ipynb", [CC_SETUP, SHOW])
    lab_page.open_notebook(nb)
    page = lab_page.page
    kernel = lab_server.kernel(nb)
    head, side = kernel.value("head"), kernel.value("side")
    before = kernel.values(events="len(s.events)", head="s.head", turns="len(s.turns)")

    # the event log: spans from the first message, no epoch seconds
    times = dom(page, "() => [...document.querySelectorAll('.cl-events .clw-t')].map(e => e.textContent)")
    assert times and all(re.fullmatch(r"\d+ t=(\d+ s|\d+ min|\d+\.\d h)( t\d+)?", t) for t in times), times[:5]

    # pick the head (a click), then find the side leaf and pick it: the comparison, nothing moved
    page.click(".cl-tree .cl-compare")
    kernel.wait_for("lab.tree.picking", lambda v: v is True)
    page.click(f'.cl-tree .cl-node[data-id="{head}"]')
    kernel.wait_for("lab.tree.marked", lambda m: m == head)
    words = kernel.value("' '.join(side_text.split()[:4])")
    page.fill(".cl-tree .cl-find-box", words)
    page.press(".cl-tree .cl-find-box", "Enter")
    found = kernel.wait_for("lab.tree.matches", lambda m: side in m)
    for _ in range(found.index(side)):  # step to it (each step focuses a match, its branch opened)
        at = kernel.value("lab.tree.match_at")
        page.click(".cl-tree .cl-find-next")
        kernel.wait_for("lab.tree.match_at", lambda i, at=at: i != at)
    page.wait_for_function("(s) => document.querySelector(`.cl-tree .cl-band-focus`)?.dataset.id === s", arg=side, timeout=10000)
    page.click(f'.cl-tree .cl-node[data-id="{side}"]')
    kernel.wait_for("lab.tree.compared is not None", lambda v: v is True)
    page.wait_for_selector(".cl-compare-panel .cl-compare-table", timeout=10000)
    assert kernel.values(events="len(s.events)", head="s.head", turns="len(s.turns)") == before
    steps = kernel.value("len(lab.tree.compared)")
    assert steps > 100  # a long branch
    panel = page.locator(".cl-compare-panel").bounding_box()
    lab_box = page.locator(".cl-lab").first.bounding_box()
    summary = page.locator(".cl-compare-panel .cl-compare-summary").bounding_box()
    assert panel["height"] < 700, panel  # a box that scrolls, not tens of thousands of pixels
    assert panel["x"] + panel["width"] <= lab_box["x"] + lab_box["width"] + 1, (panel, lab_box)
    assert summary["height"] > 0 and summary["y"] < panel["y"] + 120  # the summary line above the box
    wide = dom(page, "() => { const b = document.querySelector('.cl-compare-scroll'); "
                     "return [b.scrollWidth, b.clientWidth, b.scrollHeight, b.clientHeight]; }")
    assert wide[0] <= wide[1] + 1 and wide[2] > wide[3], wide  # wraps inside, scrolls down
    page.locator(".cl-compare-panel").scroll_into_view_if_needed()
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-compare-panel").first, "cc-compare-panel.png")

    # merge the side branch back: the merged message says where it came from, in the tree and the chat
    kernel.value(f"s.merge({side!r}, summarizer='Before compaction: OTEL deps added, bootstrap written, tests pass.')['status']")
    merged = kernel.wait_for("s.head", lambda h: h != head)
    page.wait_for_selector(f'.cl-tree text.cl-label[data-id="{merged}"] .cl-label-merged', timeout=10000)
    mark = dom(page, f"() => document.querySelector('.cl-tree text.cl-label[data-id=\"{merged}\"] .cl-label-merged').textContent")
    assert mark.startswith("⤶ merged from ") and side[:6] in mark
    page.wait_for_selector(".cl-chat .clw-merged", timeout=10000)
    assert side in dom(page, "() => [...document.querySelectorAll('.cl-chat .clw-merged')].at(-1).textContent")
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-lab").first, "cc-merged.png")

    # summarize from a late message (all before it kept): a count and a folded list; the summary to edit in view
    late = kernel.value("[m['id'] for m in s.path()][-8]")
    kernel.value(f"lab.tree.__setattr__('selected', {late!r}) or lab.tree.refresh()")  # selected without a look
    page.wait_for_function("(r) => document.querySelector('.cl-tree .cl-selected').textContent === 'selected ' + r", arg=late, timeout=10000)
    page.click(".cl-tree .cl-summarize")
    box = page.locator(".cl-decisions textarea")
    box.wait_for(timeout=10000)
    kept = kernel.value("len([m for m in lab.decisions.proposal[0]['messages'] if m.get('id')])")
    assert kept > 50
    text = page.locator(".cl-decisions").inner_text()
    assert f"{kept} kept messages" in text and "the kept messages, in order" in text
    assert dom(page, "() => document.querySelector('.cl-decisions details.cl-kept').open") is False
    decisions, area = page.locator(".cl-decisions").bounding_box(), box.bounding_box()
    assert area["y"] - decisions["y"] < 400, (area, decisions)  # not pushed down by 150 ids
    page.locator(".cl-decisions").scroll_into_view_if_needed()
    page.mouse.move(5, 5)
    lab_page.screenshot(page.locator(".cl-decisions").first, "cc-summarize-proposed.png")
    lab_page.screenshot(page.locator(".cl-events").first, "cc-events.png")
    assert not lab_page.errors, lab_page.report()
