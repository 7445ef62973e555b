"""What real front ends send, at the protocol level (issue 25; the same in a real browser:
tests/frontends/test_frontends.py): a run with no messages loads the thread, a known message out of place
has its ancestors filled in from the tree, a new message while a decision waits meets ``on_unanswered``, a
resume may bring the next message, a stopped reply sent back is no answer, and every event the server
sends passes the schemas of the clients the front ends ship (@ag-ui/core 0.0.58, 0.0.59) and of 1.0."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from agui_support import (
    REPO, SUMMARIZE_AT_60, U1, U2, SlowLLM, agui_only, body, children, client, custom, in_thread, last, m, path_ids,
    reply_of, run, served, snapshot, sse, types,
)
from ci_support import cannot_run

pytestmark = pytest.mark.timeout(90)

NOTE = "convlab.serve."


def notes(events: list[dict]) -> dict[str, dict]:
    return {e["name"][len(NOTE):]: e["value"] for e in events if e["type"] == "CUSTOM" and e["name"].startswith(NOTE)}


def limit_reached(url: str, thread: str = "t") -> tuple[list[dict], dict]:
    history = [m("u1", U1)]
    history.append(reply_of(run(url, thread, history)))
    history.append(m("u2", U2))
    events = run(url, thread, history)
    assert last(events)["outcome"]["type"] == "interrupt"
    return history, last(events)["outcome"]["interrupts"][0]


# -- a run with no messages: what the thread holds --------------------------------------------------------

def test_a_run_with_no_messages_sends_the_active_path_and_writes_nothing(tmp_path):
    """A reloaded page (CopilotKit's connect, assistant-ui's history adapter) asks with a run of no messages:
    RUN_STARTED, MESSAGES_SNAPSHOT of the active path (STATE_SNAPSHOT when the worker keeps state),
    RUN_FINISHED; nothing is written."""
    with served(tmp_path) as (app, server):
        history = [m("u1", "hi")]
        history.append(reply_of(run(server.url, "t", history)))
        size = (tmp_path / "t.jsonl").stat().st_size
        got = run(server.url, "t", [])
        assert types(got) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert [x["id"] for x in got[1]["messages"]] == ["u1", "e1"] and got[1]["messages"][1]["content"] == "echo: hi"
        assert got[-1]["outcome"] == {"type": "success"}
        assert (tmp_path / "t.jsonl").stat().st_size == size
        # a thread that does not exist: an empty path, and no file, no thread made
        fresh = run(server.url, "nobody-yet", [])
        assert types(fresh) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"] and fresh[1]["messages"] == []
        assert repr(app).endswith("threads=1)")
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["t.jsonl"]


def test_a_run_with_no_messages_while_a_decision_waits_names_it_but_does_not_reopen_it(tmp_path):
    """The waiting interrupt comes as CUSTOM convlab.serve.waiting (a page may show it and answer with resume);
    RUN_FINISHED is success, so a page with no interrupt handler is not blocked again by its own client."""
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual") as (app, server):
        history, interrupt = limit_reached(server.url)
        got = run(server.url, "t", [])
    assert notes(got)["waiting"]["interrupt"]["id"] == interrupt["id"]
    assert last(got)["outcome"] == {"type": "success"}


# -- a known message out of place -----------------------------------------------------------------------

def test_a_known_reply_at_the_top_of_the_view_gets_its_question_back_from_the_tree(tmp_path):
    """assistant-ui, after an edit and ‹ back: the view is the reply without the (client-deleted) question."""
    with served(tmp_path) as (app, server):
        a1 = reply_of(run(server.url, "t", [m("u1", "first question")]))
        run(server.url, "t", [m("u1b", "first question, edited")])
        got = run(server.url, "t", [a1, m("u3", "and now?")])
        snap = snapshot(server.url, "t")
    assert last(got)["outcome"] == {"type": "success"}
    assert notes(got)["view_filled"]["filled"] == ["u1"]
    assert path_ids(snap) == ["u1", "e1", "u3", "e3"] and children(snap, None) == ["u1", "u1b"]


def test_a_known_reply_under_another_parent_gets_the_missing_messages_back(tmp_path):
    """The issue's "'e2' is not a child of 'e1'": [u1, e1, e2, u5] with u2 gone from the client."""
    with served(tmp_path) as (app, server):
        history = [m("u1", "one")]
        history.append(reply_of(run(server.url, "t", history)))
        history.append(m("u2", "two"))
        history.append(reply_of(run(server.url, "t", history)))
        run(server.url, "t", history[:2] + [m("u2b", "two, edited")])
        got = run(server.url, "t", [history[0], history[1], history[3], m("u5", "five")])
        snap = snapshot(server.url, "t")
    assert notes(got)["view_filled"]["filled"] == ["u2"] and last(got)["outcome"]["type"] == "success"
    assert path_ids(snap)[:5] == ["u1", "e1", "u2", "e2", "u5"] and children(snap, "e1") == ["u2", "u2b"]


def test_a_view_out_of_order_is_still_refused(tmp_path):
    """Filling a gap is for messages the client left out, never a reorder: [e1, u1] stays the engine's 400."""
    with served(tmp_path) as (app, server):
        run(server.url, "t", [m("u1", "hi")])
        got = run(server.url, "t", [m("e1", "echo: hi", role="assistant"), m("u1", "hi")])
    assert types(got) == ["RUN_ERROR"] and got[0]["code"] == "400"


# -- a new message while a decision waits ------------------------------------------------------------------

def test_on_unanswered_end_ends_the_waiting_turn_and_takes_the_message(tmp_path):
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual") as (app, server):  # "end" is the default
        history, interrupt = limit_reached(server.url)
        waiting = app.session("t").running
        got = run(server.url, "t", history + [m("u9", "hello?")])
        s = app.session("t")
    note = notes(got)["unanswered"]
    assert note["rule"] == "end" and note["interrupt_id"] == interrupt["id"] and note["actions"] == [{"type": "turn.end"}]
    assert next(t for t in s.turns if t["id"] == waiting)["status"] == "completed"
    assert [n["id"] for n in s.path()][-2:] == ["u2", "u9"] and "RUN_ERROR" not in types(got)


def test_on_unanswered_default_answers_with_the_proposal_and_the_message_follows_its_reply(tmp_path):
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual", on_unanswered="default") as (app, server):
        history, interrupt = limit_reached(server.url)
        got = run(server.url, "t", history + [m("u9", "hello?")])
        s = app.session("t")
    assert [a["type"] for a in notes(got)["unanswered"]["actions"]] == ["context.replace", "llm.call"]
    path = s.path()
    assert path[0]["kind"] == "summary" and [n["content"] for n in path][-3:] == [U2, f"echo: {U2}", "hello?"]
    starts = [e["messageId"] for e in got if e["type"] == "TEXT_MESSAGE_START"]
    assert path[-2]["id"] in starts, "the reply the client never saw streams in this run"


def test_a_resume_that_brings_the_next_message_takes_it_after_the_answer(tmp_path):
    """assistant-ui's useAgUiSteerAway: resume cancelled and the next message in one run."""
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual") as (app, server):
        history, interrupt = limit_reached(server.url)
        resume = [{"interruptId": interrupt["id"], "status": "cancelled"}]
        got = run(server.url, "t", history + [m("u9", "never mind that")], resume=resume)
        s = app.session("t")
    assert "RUN_ERROR" not in types(got)
    assert [n["id"] for n in s.path()][-2:] == ["u2", "u9"] and s.running in (None, s.turns[-1]["id"])


# -- a stopped reply sent back ----------------------------------------------------------------------------

def test_a_stopped_reply_sent_back_is_left_out_and_the_client_gets_the_path(tmp_path):
    """Both UIs keep the partial text under the streamed id and send it back: it is no answer (the engine leaves
    it out, PROTOCOL.md rev 4) and the run's MESSAGES_SNAPSHOT tells the client what the tree holds."""
    slow = SlowLLM(pause=0.1, pieces=20)
    with served(tmp_path, llm=slow) as (app, server):
        u1 = m("u1", "tell me a long story please")
        with client() as c, c.stream("POST", server.url, json=body("t", [u1])) as r:
            partial = {"id": None, "role": "assistant", "content": ""}
            for ev in sse(r.iter_lines()):
                if ev["type"] == "TEXT_MESSAGE_START":
                    partial["id"] = ev["messageId"]
                if ev["type"] == "TEXT_MESSAGE_CONTENT":
                    partial["content"] += ev["delta"]
                    break
        s = app.session("t")
        import time
        deadline = time.monotonic() + 10
        while s.running is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        slow.pause = 0.0
        got = run(server.url, "t", [u1, partial, m("u2", "and now?")])
    [snap] = [e for e in got if e["type"] == "MESSAGES_SNAPSHOT"]
    assert partial["id"] not in [x["id"] for x in snap["messages"]] and partial["id"] not in s.tree
    assert [n["id"] for n in s.path()] == ["u1", "u2", s.head] and s.path()[-1]["content"] == "echo: and now?"


# -- every event, against each client's own schema -------------------------------------------------------------

CORES = {"0.0.59": REPO / "tests" / "frontends" / "copilotkit", "0.0.58": REPO / "tests" / "frontends" / "assistant-ui",
         "1.0.0": REPO / "tests" / "agui_js"}


def check(events: list[dict], version: str) -> list[dict]:
    node = shutil.which("node")
    folder = CORES[version]
    if node is None or not (folder / "node_modules" / "@ag-ui" / "core" / "package.json").exists():
        cannot_run(f"@ag-ui/core {version} is not installed in {folder.relative_to(REPO)} (make node frontends)")
    proc = subprocess.run([node, str(REPO / "tests" / "frontends" / "schemas.mjs"), str(folder)],
                          input="\n".join(json.dumps(e) for e in events), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["version"] == version
    return out["errors"]


def runs_of_every_kind(url: str, extra: dict) -> list[dict]:
    """A reply, the same history again, a regenerate, a run cancelled while it listens, a refusal, a load."""
    events: list[dict] = []
    u1 = m("u1", "first question here")
    first = run(url, "k", [u1], **extra)
    events += first
    a1 = reply_of(first)
    events += run(url, "k", [u1, a1], **extra)
    events += run(url, "k", [u1], **extra)
    events += run(url, "k", [m("x", "x", role="assistant"), u1], **extra)
    events += run(url, "k", [], **extra)
    with client() as c, c.stream("POST", url, json=body("k", [u1, a1, m("u2", "a long second question")], **extra)) as r:
        lines = r.iter_lines()
        for ev in sse(lines):
            events.append(ev)
            if ev["type"] == "TEXT_MESSAGE_CONTENT":
                break
        other, out = in_thread(run, url, "k", [u1, a1])
        events += list(sse(lines))
    other.join(10)
    events += out["value"]
    return events


@pytest.mark.parametrize("version", ["0.0.58", "0.0.59", "1.0.0"])
def test_every_event_passes_the_schema_of_the_client(tmp_path, version):
    """Issue 25, point 3: @ag-ui/core 0.0.58 and 0.0.59 reject RUN_FINISHED outcome "cancelled"; a client that
    sends no protocolVersion (theirs) gets RUN_FINISHED with no outcome; a 1.0 client gets "cancelled"."""
    extra = {"protocolVersion": "1.0"} if version == "1.0.0" else {}
    with served(tmp_path, llm=SlowLLM(pause=0.05, pieces=10)) as (app, server):
        events = runs_of_every_kind(server.url, extra)
        limit = tmp_path / "limit"
    with served(limit, config=SUMMARIZE_AT_60, worker="manual") as (app, server):
        history = [m("u1", U1)]
        answer = run(server.url, "t", history, **extra)
        history.append(reply_of(answer))
        held = run(server.url, "t", history + [m("u2", U2)], **extra)
        [interrupt] = last(held)["outcome"]["interrupts"]
        resumed = run(server.url, "t", history + [m("u2", U2)], resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                                        "payload": {"action": "accept"}}], **extra)
        events += answer + held + resumed
    finished = [e.get("outcome", {}).get("type") for e in events if e["type"] == "RUN_FINISHED"]
    assert ("cancelled" in finished) == (version == "1.0.0") and (None in finished) == (version != "1.0.0")
    assert "interrupt" in finished and len(agui_only(events)) > 20
    assert check(events, version) == []
    assert custom(events)  # the engine's events came too


def test_a_cancelled_outcome_is_what_the_old_clients_reject():
    """Why the rule: the same RUN_FINISHED with outcome "cancelled" fails 0.0.58 and 0.0.59 and passes 1.0."""
    event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}}
    for version in ("0.0.58", "0.0.59"):
        [error] = check([event], version)
        assert "Invalid discriminator value" in error["error"]
    assert check([event], "1.0.0") == []
