"""The official AG-UI JavaScript client (npm ``@ag-ui/client``, installed by ``make test`` into
tests/agui_js/node_modules) drives a live ``convlab serve`` on 127.0.0.1 (issue 13, "Real parts"): a run,
the same history again, an edit, a regenerate, a branch switch, state, an interrupt answered by resume,
a refusal and an abort. After each run the script reads the server's thread back (GET /threads/{id})."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from agui_support import REPO, SUMMARIZE_AT_60, SlowLLM, path_ids, served, serving, wait_for
from ci_support import cannot_run

pytestmark = pytest.mark.timeout(120)

JS = REPO / "tests" / "agui_js"
TOKEN = "js-test-token"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    node = shutil.which("node")
    if node is None:
        cannot_run("no node (apt-get install nodejs)")
    if not (JS / "node_modules" / "@ag-ui" / "client" / "package.json").exists():
        cannot_run("@ag-ui/client is not installed: make test runs npm ci in tests/agui_js")
    base = tmp_path_factory.mktemp("agui-js")
    config = base / "agent.toml"
    config.write_text(SUMMARIZE_AT_60)
    slow = SlowLLM(pause=0.1, pieces=12)
    with serving(base / "threads", "--worker", "manual", "--config", str(config), "--token", TOKEN) as serve, \
            served(base / "slow", llm=slow, token=TOKEN) as (slow_app, slow_server):
        proc = subprocess.run([node, "scenario.mjs", serve.url, slow_server.url, TOKEN], cwd=JS,
                              capture_output=True, text=True, timeout=90)
        assert proc.returncode == 0, (f"node failed ({proc.returncode}):\n{proc.stderr[-3000:]}\n{proc.stdout[-4000:]}\n"
                                      f"server:\n{serve.output()[-2000:]}")
        steps = {s["name"]: s for s in json.loads(proc.stdout)}
        abort = slow_app.session("js-abort")
        wait_for(lambda: abort.turns and abort.turns[-1]["status"] != "running", what="the aborted turn to end")
        steps["abort"]["after"] = {"turns": [dict(t) for t in abort.turns], "events": [e["type"] for e in abort.events],
                                   "nodes": [n for n in abort.tree.nodes]}
    return steps


def tree(step):
    assert step["thread"]["status"] == 200, step["thread"]
    return step["thread"]["body"]


def test_a_run_records_the_history_and_the_reply_the_client_holds(report):
    step = report["run"]
    snap = tree(step)
    assert step["error"] is None and step["finished"]["outcome"] == "success"
    assert [m["id"] for m in step["messages"]] == path_ids(snap) == ["u1", snap["head"]]
    reply = step["messages"][1]
    assert reply["content"] == "echo: What is the weather in New York today?"
    assert [n["content"] for n in snap["nodes"]] == [m["content"] for m in step["messages"]]


def test_the_same_history_again_writes_nothing(report):
    before, step = tree(report["run"]), report["same"]
    snap = tree(step)
    assert step["error"] is None and snap["nodes"] == before["nodes"] and snap["head"] == before["head"]
    assert "TEXT_MESSAGE_START" not in [e["type"] for e in step["events"]]


def test_an_edit_branches_at_the_root(report):
    step = report["edit"]
    snap = tree(step)
    roots = [n["id"] for n in snap["nodes"] if n["parent"] is None]
    assert roots == ["u1", "u1-edit"] and path_ids(snap) == [m["id"] for m in step["messages"]]
    assert step["messages"][-1]["content"] == "echo: What is the weather in Los Angeles today?"


def test_a_regenerate_adds_a_sibling_reply(report):
    edit, step = tree(report["edit"]), report["regenerate"]
    snap = tree(step)
    replies = [n["id"] for n in snap["nodes"] if n["parent"] == "u1-edit"]
    assert len(replies) == 2 and replies[0] == edit["head"] and snap["head"] == replies[1]
    assert [m["id"] for m in step["messages"]] == ["u1-edit", replies[1]]


def test_a_branch_switch_moves_the_head_and_writes_nothing(report):
    before, step = tree(report["regenerate"]), report["switch"]
    snap = tree(step)
    first_reply = tree(report["run"])["head"]
    assert snap["head"] == first_reply and len(snap["nodes"]) == len(before["nodes"])
    assert [m["id"] for m in step["messages"]] == ["u1", first_reply] and step["error"] is None


def test_state_is_the_client_state_of_the_turn(report):
    step = report["state"]
    snap = tree(step)
    assert snap["turns"][-1]["client_state"] == {"units": "celsius", "city": "New York"}
    assert step["state"] == {"units": "celsius", "city": "New York"}  # no worker state changed: kept
    assert path_ids(snap)[-2:] == ["u2", snap["head"]]


def test_an_interrupt_is_answered_by_resume(report):
    step = report["interrupt"]
    snap = tree(step)
    assert step["error"] is None and step["finished"]["outcome"] == "interrupt"
    [interrupt] = step["pendingInterrupts"]
    assert interrupt["reason"] == "context_limit" and snap["interrupt"]["id"] == interrupt["id"]
    assert snap["running"] is not None and snap["head"] == "u3"

    answered = report["resume"]
    after = tree(answered)
    assert answered["error"] is None and answered["finished"]["outcome"] == "success"
    assert answered["pendingInterrupts"] == [] and after["interrupt"] is None and after["running"] is None
    path = path_ids(after)
    nodes = {n["id"]: n for n in after["nodes"]}
    assert nodes[path[0]]["kind"] == "summary" and nodes[path[0]]["content"].endswith("EDITED: the weather in New York, today and tomorrow.")
    assert nodes[path[1]]["copied_from"] == "u3" and nodes[path[-1]]["role"] == "assistant"
    # the client's messages follow the replaced history (MESSAGES_SNAPSHOT), then the reply
    assert [m["id"] for m in answered["messages"]] == path
    assert "MESSAGES_SNAPSHOT" in [e["type"] for e in answered["events"]]


def test_a_refused_history_is_a_run_error(report):
    step = report["refused"]
    assert [e["type"] for e in step["events"]] == ["RUN_ERROR"] and step["events"][0]["code"] == "400"
    assert "not a path of the tree" in step["events"][0]["message"] and step["finished"] is None
    assert tree(step)["nodes"] == tree(report["resume"])["nodes"]


def test_an_abort_interrupts_the_turn_and_records_no_reply(report):
    step = report["abort"]
    after = step["after"]
    assert "TEXT_MESSAGE_CONTENT" in [e["type"] for e in step["events"]]
    assert after["turns"][-1]["status"] == "cancelled" and after["nodes"] == ["s1"]
    assert "llm.completed" not in after["events"]
