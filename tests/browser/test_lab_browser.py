"""The Lab in a real JupyterLab in headless Chromium.

Each scenario is checked twice: in the DOM, and in the kernel (read through
a jupyter_client on the kernel's connection file, with user_expressions).
Console and page errors fail every test.
"""

from __future__ import annotations

import json
import pathlib

import pytest

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
                      links=LINKS, head="s.head", hostile_ids=f"[n for n, a in s.tree.nodes(data=True) if HOSTILE in str(a['content'])]")
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
    lab_page.screenshot(page.locator(".cl-lab").first, "lab.png", REPO / "docs" / "lab.png")
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
    counts = dom(page, "() => [...document.querySelectorAll('.cl-chat .widget-label')].map(e => e.textContent)")
    assert f"{after['kids']}/{after['kids']}" in counts, counts
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
