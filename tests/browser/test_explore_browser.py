"""The Lab's search box, labels and comparison in a real JupyterLab in headless Chromium (issue 38): the page
only sends intents, the kernel finds and compares, the page draws what it is sent."""

from __future__ import annotations

import json

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

    # pick two leaves and compare them
    leaves = kernel.value("sorted(n for n in s.tree if s.tree.out_degree(n) == 0)")
    a, b = leaves[0], leaves[-1]
    page.click(f'.cl-tree .cl-node[data-id="{a}"]')
    page.wait_for_function("(a) => document.querySelector('.cl-tree .cl-selected').textContent === 'selected ' + a", arg=a, timeout=10000)
    page.click(".cl-tree .cl-compare")
    kernel.wait_for("lab.tree.marked", lambda m: m == a)
    page.click(f'.cl-tree .cl-node[data-id="{b}"]')
    page.wait_for_function("(a) => document.querySelector('.cl-tree .cl-compare').textContent.startsWith('Compare with')", arg=a, timeout=10000)
    page.click(".cl-tree .cl-compare")
    kernel.wait_for("lab.tree.compared is not None", lambda v: v is True)
    page.wait_for_selector(".cl-compare-panel .cl-compare-table", timeout=10000)
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
