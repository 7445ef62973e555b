"""The AG-UI server (issue 13, "Server"): a run is a turn, ``messages`` is a view
matched by id (PROTOCOL.md 2), the events a client sees, on a real uvicorn
on 127.0.0.1 driven by a plain SSE client."""

from __future__ import annotations

import json
import time

import pytest

import convlab
from agui_support import (
    SUMMARIZE_AT_60, U1, U2, SlowLLM, ToolLLM, agui_only, body, children, client, custom, in_thread, last, m, path_ids,
    reply_of, run, served, snapshot, sse, types, wait_for,
)

pytestmark = pytest.mark.timeout(60)


def test_a_run_is_a_turn_and_streams_the_reply_under_the_id_the_tree_records(tmp_path):
    """"TEXT_MESSAGE_START/CONTENT/END for each assistant reply, streamed from llm.delta, whose messageId is
    the id the tree records"; "each engine event also as CUSTOM (name: "convlab.<type>")"; then RUN_FINISHED."""
    with served(tmp_path) as (app, server):
        events = run(server.url, "t1", [m("u1", "hello there big world")])
        s = app.session("t1")
    plain = types(agui_only(events))
    assert plain[0] == "RUN_STARTED" and plain[-1] == "RUN_FINISHED"
    assert events[0]["protocolVersion"] == "1.0" and events[0]["input"]["threadId"] == "t1"
    assert plain[1:-1] == ["TEXT_MESSAGE_START"] + ["TEXT_MESSAGE_CONTENT"] * (len(plain) - 4) + ["TEXT_MESSAGE_END"]
    assert len(plain) - 4 > 1, "the fake streams in a few chunks"
    reply = reply_of(events)
    assert reply == {"id": s.head, "role": "assistant", "content": "echo: hello there big world"}
    assert s.tree.nodes[s.head]["parent"] == "u1"
    assert last(events)["outcome"] == {"type": "success"}
    assert last(events)["usage"][0]["inputTokens"] == s.path()[-1]["usage"]["input_tokens"]
    # every engine event of the turn, in order, as CUSTOM convlab.<type>
    assert custom(events) == s.events[1:]
    assert [e["name"] for e in events if e["type"] == "CUSTOM"] == [f"convlab.{e['type']}" for e in s.events[1:]]
    # the text streams as it comes: the deltas arrive between llm.started and llm.completed
    names = [e.get("name", e["type"]) for e in events]
    assert names.index("convlab.llm.started") < names.index("TEXT_MESSAGE_CONTENT") < names.index("convlab.llm.completed")


def test_the_view_matched_by_id_same_history_edit_regenerate_switch(tmp_path):
    """PROTOCOL.md 2: "the same history again writes nothing; a changed message with a new id branches; a
    history cut before the last reply regenerates; a history ending at an older reply switches branches"."""
    with served(tmp_path) as (app, server):
        url = server.url
        u1 = m("u1", "weather in NYC?")
        a1 = reply_of(run(url, "t", [u1]))
        before = snapshot(url, "t")
        again = run(url, "t", [u1, a1])  # the same history: nothing written, no reply
        assert "TEXT_MESSAGE_START" not in types(again) and last(again)["outcome"]["type"] == "success"
        same = snapshot(url, "t")
        assert same["nodes"] == before["nodes"] and same["head"] == a1["id"]

        edit = m("u1b", "weather in LA instead?")  # a changed message with a new id: a branch at the root
        a2 = reply_of(run(url, "t", [edit]))
        snap = snapshot(url, "t")
        assert children(snap, None) == ["u1", "u1b"] and path_ids(snap) == ["u1b", a2["id"]]

        regen = reply_of(run(url, "t", [u1]))  # cut before the reply: a new reply beside the old one
        snap = snapshot(url, "t")
        assert children(snap, "u1") == [a1["id"], regen["id"]] and snap["head"] == regen["id"]

        switch = run(url, "t", [u1, a1])  # ends at the older reply: the head moves there, nothing written
        snap2 = snapshot(url, "t")
        assert snap2["head"] == a1["id"] and len(snap2["nodes"]) == len(snap["nodes"])
        assert "TEXT_MESSAGE_START" not in types(switch)
        [moved] = [e for e in switch if e["type"] == "MESSAGES_SNAPSHOT"]  # what the model reads changed
        assert [m["id"] for m in moved["messages"]] == ["u1", a1["id"]]
        assert not [e for e in again if e["type"] == "MESSAGES_SNAPSHOT"]  # the same history: nothing changed
        assert [e["value"]["type"] for e in switch if e["type"] == "CUSTOM"][:1] == ["head.moved"]
        assert app.session("t").head == a1["id"]


def test_a_known_id_with_other_content_gets_the_trees_own_path_back(tmp_path):
    """PROTOCOL.md 2.5 "a known id with other content changes nothing": the client is told what the model
    reads with a MESSAGES_SNAPSHOT of the active path."""
    with served(tmp_path) as (app, server):
        a1 = reply_of(run(server.url, "t", [m("u1", "original")]))
        events = run(server.url, "t", [m("u1", "EDITED IN PLACE"), a1])
    [snap] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    assert [(x["id"], x["content"]) for x in snap["messages"]] == [("u1", "original"), (a1["id"], "echo: original")]


def test_a_summary_is_a_step_and_the_replaced_history_a_messages_snapshot(tmp_path):
    """"STEP_STARTED/FINISHED around summary calls (their text is never a text message)"; "MESSAGES_SNAPSHOT
    whenever what the model reads changes other than by appending (a context.replace ...)"."""
    with served(tmp_path, config=SUMMARIZE_AT_60) as (app, server):
        history = [m("u1", U1)]
        history.append(reply_of(run(server.url, "t", history)))
        history.append(m("u2", U2))
        events = run(server.url, "t", history)
        s = app.session("t")
    kinds = types(agui_only(events))
    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED") >= 1
    [started] = [e for e in events if e["type"] == "STEP_STARTED"]
    [summary_call] = [e["value"] for e in events if e.get("name") == "convlab.llm.started" and e["value"]["summary"]]
    assert started["stepName"] == f"summary {summary_call['call_id']}"
    assert kinds.index("STEP_FINISHED") < kinds.index("MESSAGES_SNAPSHOT") < kinds.index("TEXT_MESSAGE_START")
    [snap] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    path = s.path()
    assert [x["id"] for x in snap["messages"]] + [reply_of(events)["id"]] == [n["id"] for n in path]
    assert path[0]["kind"] == "summary"
    summary_text = path[0]["content"]
    streamed = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "Summary of" in summary_text and "Summary of" not in streamed
    assert snap["messages"][0]["content"] == summary_text


def test_client_state_and_worker_state(tmp_path):
    """"state → client state"; "STATE_SNAPSHOT with the worker state along the active path" when it changes
    (a worker's state.set, a switch to a branch with other state)."""
    def worker(decision):
        if decision["type"] == "turn.start" and decision["messages"][-1]["role"] == "user":
            return [{"type": "llm.call"}, {"type": "state.set", "state": {"mood": decision["client_state"].get("mood")}}]
        return []

    with served(tmp_path, worker=worker) as (app, server):
        u1 = m("u1", "hi")
        first = run(server.url, "t", [u1], state={"mood": "sunny"})
        a1 = reply_of(first)
        assert [e["snapshot"] for e in first if e["type"] == "STATE_SNAPSHOT"] == [{"mood": "sunny"}]
        second = run(server.url, "t", [m("v1", "hello")], state={"mood": "rainy"})  # a new branch: no state, then rainy
        assert [e["snapshot"] for e in second if e["type"] == "STATE_SNAPSHOT"] == [{}, {"mood": "rainy"}]
        switch = run(server.url, "t", [u1, a1], state={"mood": "ignored"})  # the sunny branch again
        assert [e["snapshot"] for e in switch if e["type"] == "STATE_SNAPSHOT"] == [{"mood": "sunny"}]
        snap = snapshot(server.url, "t")
    assert [t["client_state"] for t in snap["turns"]] == [{"mood": "sunny"}, {"mood": "rainy"}, {"mood": "ignored"}]


def test_tool_calls_in_replies_are_tool_call_events(tmp_path):
    """"TOOL_CALL_* for tool calls in replies", under the reply's id; a reply with only tool calls has no text
    message; the client's tool result continues the turn as a new message of the view."""
    with served(tmp_path, llm=ToolLLM()) as (app, server):
        u1 = m("u1", "talk and call")
        events = run(server.url, "t", [u1])
        s = app.session("t")
        reply = s.path()[-1]
        kinds = types(agui_only(events))
        assert kinds[1:-1] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                               "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
        start = next(e for e in events if e["type"] == "TOOL_CALL_START")
        assert start["parentMessageId"] == reply["id"] and start["toolCallName"] == "weather"
        assert start["toolCallId"] == reply["tool_calls"][0]["id"]
        args = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")["delta"]
        assert json.loads(args) == {"city": "NYC"}

        only = run(server.url, "t", [m("u2", "just call")])  # tool calls, no text: no text message
        assert types(agui_only(only))[1:-1] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
        call = next(e for e in only if e["type"] == "TOOL_CALL_START")
        assistant = {"id": call["parentMessageId"], "role": "assistant", "content": "",
                     "toolCalls": [{"id": call["toolCallId"], "type": "function",
                                    "function": {"name": "weather", "arguments": '{"city": "NYC"}'}}]}
        result = {"id": "r1", "role": "tool", "content": "sunny", "toolCallId": call["toolCallId"]}
        after = run(server.url, "t", [m("u2", "just call"), assistant, result])
        assert reply_of(after)["content"] == "The tool said sunny."
        path = s.path()
    assert [n["role"] for n in path] == ["user", "assistant", "tool", "assistant"]
    assert path[2]["tool_call_id"] == call["toolCallId"]


def test_a_failed_turn_is_a_run_error(tmp_path):
    """"then RUN_FINISHED with its outcome, or RUN_ERROR"."""
    with served(tmp_path, llm=convlab.ScriptedLLM([{"error": "failed", "message": "the model is down"}])) as (app, server):
        events = run(server.url, "t", [m("u1", "hi")])
        s = app.session("t")
    assert last(events)["type"] == "RUN_ERROR" and "the model is down" in last(events)["message"]
    assert s.turns[-1]["status"] == "failed"


# -- manual: a context.limit is an AG-UI interrupt ----------------------------------------------------

def limit_reached(url: str, thread: str = "t") -> tuple[list[dict], dict]:
    history = [m("u1", U1)]
    history.append(reply_of(run(url, thread, history)))
    history.append(m("u2", U2))
    events = run(url, thread, history)
    return history, events


def resume(url: str, thread: str, interrupt_id: str, payload=None, status: str = "resolved", messages=None) -> list[dict]:
    entry = {"interruptId": interrupt_id, "status": status}
    if payload is not None:
        entry["payload"] = payload
    return run(url, thread, messages or [], resume=[entry])


def test_a_context_limit_ends_the_run_with_an_interrupt_a_person_can_answer(tmp_path):
    """"a context.limit ends the run with outcome interrupt: one Interrupt whose id is <call id>:<seq of its
    decision.requested>, reason context_limit, a message a person can read, the whole decision ... in its
    metadata, and a responseSchema for the answer"."""
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual") as (app, server):
        history, events = limit_reached(server.url)
        s = app.session("t")
        outcome = last(events)["outcome"]
        [asked] = [e for e in s.events if e["type"] == "decision.requested" and e["decision"]["type"] == "context.limit"]
        [interrupt] = outcome["interrupts"]
        snap = snapshot(server.url, "t")
    assert outcome["type"] == "interrupt" and "TEXT_MESSAGE_START" not in types(events)
    assert interrupt["id"] == f"{asked['decision']['call']['id']}:{asked['seq']}"
    assert interrupt["reason"] == "context_limit"
    assert interrupt["message"].startswith("The conversation has reached") and "a summary is proposed" in interrupt["message"]
    decision = interrupt["metadata"]["decision"]
    assert {k: decision[k] for k in ("reason", "strategy", "tokens", "window")} == {
        "reason": "full", "strategy": "summarize", "tokens": s.pending["tokens"], "window": None}
    assert decision["proposed"] == s.pending["proposed"] and decision["proposed"][0]["summary"].startswith("Summary of")
    assert "messages" not in decision and "messages" not in decision["call"]["request"]
    assert interrupt["responseSchema"]["properties"]["action"]["enum"] == [
        "accept", "accept_edited", "run_as_is", "reset", "end_turn"]
    assert snap["interrupt"] == interrupt and snap["running"] == s.running  # a page that reloads finds it again


@pytest.mark.parametrize("payload, expect", [
    ({"action": "accept"}, "summary"),
    ({"action": "accept_edited", "summary": "EDITED: Sam drank 120 ml and napped."}, "edited"),
    ({"action": "run_as_is"}, "as is"),
    ({"action": "reset"}, "reset"),
    ({"action": "end_turn"}, "ended"),
    (None, "cancelled"),
])
def test_resume_answers_the_interrupt(tmp_path, payload, expect):
    """"The next run's resume answers it: status resolved with payload {"action": ...} becomes the matching
    decide(); status cancelled ends the turn." A resume run's messages are not a view."""
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual") as (app, server):
        history, events = limit_reached(server.url)
        [interrupt] = last(events)["outcome"]["interrupts"]
        s = app.session("t")
        u2 = s.path()[-1]["id"]
        nodes = len(s.tree)
        garbage = [m("zzz", "not a view: ignored")]
        answered = resume(server.url, "t", interrupt["id"], payload, "cancelled" if payload is None else "resolved",
                          messages=garbage)
        path = s.path()
        kinds = [e["type"] for e in s.events]
    assert "zzz" not in s.tree
    if expect in ("summary", "edited", "reset"):
        assert kinds[-1] == "turn.completed" and "context.replaced" in kinds
        assert any(e["type"] == "MESSAGES_SNAPSHOT" for e in answered)
        assert path[-1]["role"] == "assistant" and reply_of(answered)["id"] == path[-1]["id"]
        assert path[-2]["copied_from"] == u2
        if expect == "edited":
            assert path[0]["kind"] == "summary" and path[0]["content"].endswith("EDITED: Sam drank 120 ml and napped.")
        if expect == "reset":
            assert [n["kind"] for n in path] == ["message", "message"]
    elif expect == "as is":
        assert "context.kept" in kinds and path[-2]["id"] == u2 and reply_of(answered)["id"] == path[-1]["id"]
        assert last(answered)["outcome"]["type"] == "success"
    else:  # ended, cancelled: the turn ends, no reply
        assert len(s.tree) == nodes and kinds[-3:] == ["decision.answered", "context.kept", "turn.completed"]
        assert last(answered)["outcome"] == {"type": "success"} and "TEXT_MESSAGE_START" not in types(answered)


def test_a_resume_for_an_unknown_or_answered_interrupt_is_a_run_error_and_writes_nothing(tmp_path):
    """"A resume for an unknown or already answered interrupt is a RUN_ERROR and writes nothing"; so is a
    payload that is not an answer (naming the field); the same call held twice gets two interrupt ids."""
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual") as (app, server):
        history, events = limit_reached(server.url)
        [first] = last(events)["outcome"]["interrupts"]
        log = tmp_path / "t.jsonl"
        size = log.stat().st_size
        for bad_id, payload, says in [
            ("llm-9:1", {"action": "accept"}, "is not the waiting interrupt"),
            (first["id"], {"action": "sure"}, "resume[0].payload.action"),
            (first["id"], {"action": "accept_edited"}, "resume[0].payload.summary"),
            (first["id"], "accept", "resume[0].payload"),
        ]:
            got = resume(server.url, "t", bad_id, payload)
            assert types(got) == ["RUN_ERROR"] and says in got[0]["message"], got
            assert log.stat().st_size == size
        answered = resume(server.url, "t", first["id"], {"action": "run_as_is"})
        assert last(answered)["outcome"]["type"] == "success"
        size = log.stat().st_size
        again = resume(server.url, "t", first["id"], {"action": "accept"})  # already answered
        assert types(again) == ["RUN_ERROR"] and "no interrupt is waiting" in again[0]["message"]
        assert log.stat().st_size == size


def test_the_same_call_held_twice_gets_two_interrupt_ids(tmp_path):
    """"<call id>:<seq of its decision.requested> (unique even when the same call is held twice)": run as it
    is, the provider refuses the call as too long, and the engine holds the same call again (overflow)."""
    config = SUMMARIZE_AT_60.replace("60", "25")
    with served(tmp_path, llm=convlab.EchoLLM(window=30), worker="manual", config=config) as (app, server):
        first = run(server.url, "t", [m("u1", " ".join(f"word{i}" for i in range(40)))])
        [one] = last(first)["outcome"]["interrupts"]
        second = resume(server.url, "t", one["id"], {"action": "run_as_is"})
        [two] = last(second)["outcome"]["interrupts"]
        late = resume(server.url, "t", one["id"], {"action": "run_as_is"})
    assert one["id"].split(":")[0] == two["id"].split(":")[0] and one["id"] != two["id"]
    assert (one["metadata"]["decision"]["reason"], two["metadata"]["decision"]["reason"]) == ("full", "overflow")
    assert types(late) == ["RUN_ERROR"] and "is not the waiting interrupt" in late[0]["message"]


def test_a_new_run_while_a_decision_waits_is_refused_409_with_on_unanswered_refuse(tmp_path):
    """With ``on_unanswered="refuse"`` a run that brings a new message and no resume while a decision waits gets
    a 409 RUN_ERROR naming the waiting interrupt, and writes nothing (the other rules: tests/test_agui_frontends.py)."""
    with served(tmp_path, config=SUMMARIZE_AT_60, worker="manual", on_unanswered="refuse") as (app, server):
        history, events = limit_reached(server.url)
        [interrupt] = last(events)["outcome"]["interrupts"]
        size = (tmp_path / "t.jsonl").stat().st_size
        got = run(server.url, "t", history + [m("u9", "hello?")])
    assert types(got) == ["RUN_ERROR"] and got[0]["code"] == "409" and interrupt["id"] in got[0]["message"]
    assert got[0]["metadata"] == {"interrupt_id": interrupt["id"]} and "resume" in got[0]["message"]
    assert (tmp_path / "t.jsonl").stat().st_size == size


# -- runs that meet: 409 between steps, a branch switch, a client that goes away ----------------------

def started_turn(lines) -> str:
    """Read a run's events until its reply streams (its model call holds the thread); its turn id."""
    turn = None
    for ev in sse(lines):
        if ev.get("name") == "convlab.turn.started":
            turn = ev["value"]["turn_id"]
        if ev["type"] == "TEXT_MESSAGE_CONTENT":
            return turn
    raise AssertionError("the run never streamed")


def test_a_run_that_meets_a_running_turn_gets_409_between_its_steps(tmp_path):
    """The engine's 409 reaches a run that comes while another run's turn is streaming."""
    slow = SlowLLM(pause=0.1)
    with served(tmp_path, llm=slow) as (app, server):
        a1 = reply_of(run(server.url, "t", [m("u1", "first question here")]))
        history = [m("u1", "first question here"), a1]
        with client() as c, c.stream("POST", server.url, json=body("t", history + [m("u2", "a long second question")])) as r:
            lines = r.iter_lines()
            turn = started_turn(lines)
            other, out = in_thread(run, server.url, "t", history + [m("u3", "me too")])
            rest = list(sse(lines))
        other.join(10)
        got = out["value"]
    assert types(got) == ["RUN_ERROR"] and got[0]["code"] == "409" and turn in got[0]["message"]
    assert last(rest)["outcome"]["type"] == "success"


@pytest.mark.parametrize("version, outcome", [("1.0", {"type": "cancelled"}), (None, None)])
def test_a_branch_switch_during_a_run_cancels_it_and_the_listening_client_hears_cancelled(tmp_path, version, outcome):
    """PROTOCOL.md 3: a view that writes nothing and moves the head is accepted during a turn and cancels it;
    "the run's outcome is AG-UI's cancelled outcome where the client still listens": for a client that speaks
    AG-UI 1.0; one that sends no protocolVersion (the 0.0.5x clients of CopilotKit and assistant-ui, whose
    schema rejects "cancelled") gets RUN_FINISHED with no outcome, after CUSTOM convlab.turn.cancelled."""
    slow = SlowLLM(pause=0.1)
    extra = {"protocolVersion": version} if version else {}
    with served(tmp_path, llm=slow) as (app, server):
        u1 = m("u1", "first question here")
        a1 = reply_of(run(server.url, "t", [u1]))
        with client() as c, c.stream("POST", server.url, json=body("t", [u1, a1, m("u2", "a long second question")],
                                                                   **extra)) as r:
            lines = r.iter_lines()
            turn = started_turn(lines)
            other, out = in_thread(run, server.url, "t", [u1, a1])
            rest = list(sse(lines))
        other.join(10)
        s = app.session("t")
    assert last(rest)["type"] == "RUN_FINISHED" and last(rest).get("outcome") == outcome
    assert [e["value"]["type"] for e in rest if e["type"] == "CUSTOM"][-1] == "turn.cancelled"
    assert next(t for t in s.turns if t["id"] == turn)["status"] == "cancelled"
    assert s.head == a1["id"] and last(out["value"])["outcome"]["type"] == "success"


def test_a_client_that_goes_away_interrupts_the_turn_and_its_call_records_nothing(tmp_path):
    """"A client that disconnects mid-run interrupts the turn (turn.cancelled)"; the call in flight stops at its
    next chunk and records nothing (PROTOCOL.md 3: "an unfinished model call records nothing")."""
    slow = SlowLLM(pause=0.1, pieces=20)
    with served(tmp_path, llm=slow) as (app, server):
        with client() as c, c.stream("POST", server.url, json=body("t", [m("u1", "tell me a long story please")])) as r:
            for ev in sse(r.iter_lines()):
                if ev["type"] == "TEXT_MESSAGE_CONTENT":
                    break
        s = app.session("t")
        wait_for(lambda: s.turns and s.turns[-1]["status"] == "cancelled", what="turn.cancelled")
        kinds = [e["type"] for e in s.events]
        snap = snapshot(server.url, "t")
        slow.pause = 0.0
        again = run(server.url, "t", [m("u1", "tell me a long story please")])  # the thread goes on
    assert "llm.started" in kinds and "llm.completed" not in kinds[: kinds.index("turn.cancelled")]
    assert [n["id"] for n in snap["nodes"]] == ["u1"] and snap["running"] is None
    assert last(again)["outcome"]["type"] == "success" and app.session("t").path()[-1]["role"] == "assistant"


# -- HTTP: routes, errors, security -----------------------------------------------------------------

def test_threads_routes_and_health(tmp_path):
    """"GET /threads, GET /threads/{id} (the snapshot) and GET /health"."""
    with served(tmp_path) as (app, server), client() as c:
        run(server.url, "alpha", [m("u1", "hi")])
        run(server.url, "beta", [m("u1", "yo")])
        assert c.get(server.url + "threads").json() == {"threads": ["alpha", "beta"]}
        snap = c.get(server.url + "threads/alpha").json()
        assert {k: snap[k] for k in ("thread", "agent", "head", "running", "interrupt")} == {
            "thread": "alpha", "agent": "bot", "head": "e1", "running": None, "interrupt": None}
        assert snap["nodes"] == app.session("alpha").snapshot()["nodes"]
        assert c.get(server.url + "threads/nope").status_code == 404
        assert c.get(server.url + "health").json() == {"status": "ok"}
        page = c.get(server.url)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert not (tmp_path / "nope.jsonl").exists()


def test_the_thread_read_lays_out_the_paths_the_page_walks(tmp_path):
    """Issue 21: the chat page never walks the tree: the thread read carries the active path (ids root -> head)
    and, per sibling of a message on it, its lane down to the newest leaf under it (where ‹ › lands)."""
    with served(tmp_path) as (app, server), client() as c:
        run(server.url, "t", [m("u1", "hi")])
        run(server.url, "t", [m("u1", "hi"), m("e1", "hello", "assistant"), m("u2", "more")])
        run(server.url, "t", [m("u1", "hi"), m("u3", "again")])  # an edit of u1's reply: a branch under u1
        snap = c.get(server.url + "threads/t").json()
        s = app.session("t")
        assert snap["path"] == [n["id"] for n in s.path()] == ["u1", "u3", s.head]
        (reply,) = s.children("u2")  # the newest leaf under e1
        assert snap["lanes"] == {"e1": ["e1", "u2", reply]} and s.children(reply) == []


@pytest.mark.parametrize("thread", ["..", "../escape", "a/b", "a\\b", "nul\x00here", "x" * 129, "", ".hidden"])
def test_thread_ids_that_could_leave_the_dir_are_refused_400_and_write_nothing(tmp_path, thread):
    """"Thread ids that could leave DIR (.., /, \\, NUL, over 128 characters) are refused with HTTP 400 and write nothing"."""
    logs = tmp_path / "logs"
    with served(logs) as (app, server), client() as c:
        r = c.post(server.url, json=body(thread, [m("u1", "hi")]))
        assert r.status_code == 400 and r.json()["error"].startswith("threadId")
    assert sorted(p.name for p in logs.iterdir()) == [".convlab-serve.lock"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]


def test_malformed_input_is_400_naming_the_field_never_a_stack_trace(tmp_path):
    with served(tmp_path) as (app, server), client() as c:
        cases = [
            (b"{not json", "the body is not JSON"),
            (json.dumps({"threadId": "t", "messages": []}).encode(), "runId: Field required"),
            (json.dumps(body("t", [{"id": "u1", "role": "user"}])).encode(), "messages.0.user.content"),
            (json.dumps(body("t", [{"id": "u1", "role": "robot", "content": "x"}])).encode(), "messages.0"),
        ]
        for raw, says in cases:
            r = c.post(server.url, content=raw, headers={"Content-Type": "application/json"})
            assert r.status_code == 400 and says in r.json()["error"], (raw, r.text)
            assert "Traceback" not in r.text
        # refused by the engine (not a path of the tree): a RUN_ERROR naming the place, nothing written
        run(server.url, "t", [m("u1", "hi")])
        got = run(server.url, "t", [m("e1", "x", role="assistant"), m("u1", "hi")])
        assert types(got) == ["RUN_ERROR"] and got[0]["code"] == "400" and "messages[0]" in got[0]["message"]
        empty = run(server.url, "t", [])  # no messages: what the thread holds (a reloaded page), nothing written
        assert types(empty) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [e["type"] for e in convlab.Session.load(tmp_path / "t.jsonl", append=False).events].count("turn.started") == 1


def test_bodies_over_the_limit_get_413(tmp_path):
    with served(tmp_path, max_body=2000) as (app, server), client() as c:
        big = body("t", [m("u1", "x" * 3000)])
        assert c.post(server.url, json=big).status_code == 413
        def chunks():  # no Content-Length: counted as it comes
            yield json.dumps(big).encode()
        assert c.post(server.url, content=chunks(), headers={"Content-Type": "application/json"}).status_code == 413
        assert run(server.url, "t", [m("u1", "small")])[-1]["type"] == "RUN_FINISHED"
    assert [p.name for p in tmp_path.glob("*.jsonl")] == ["t.jsonl"]


def test_with_a_token_every_route_but_health_needs_it(tmp_path):
    """"every route but /health needs it (Authorization: Bearer ...; the chat page takes ?token= once)"."""
    with served(tmp_path, token="s3cret") as (app, server), client() as c:
        url = server.url
        assert c.get(url + "health").status_code == 200
        for method, path in [("GET", ""), ("GET", "threads"), ("GET", "threads/t"), ("POST", "")]:
            r = c.request(method, url + path, json=body("t", [m("u1", "hi")]) if method == "POST" else None)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", (method, path)
            wrong = c.request(method, url + path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
        assert c.get(url + "?token=s3cret").status_code == 200
        assert c.get(url + "threads?token=s3cret").status_code == 401  # the query token is the page's only
        good = {"Authorization": "Bearer s3cret"}
        assert run(url, "t", [m("u1", "hi")], headers=good)[-1]["type"] == "RUN_FINISHED"
        assert c.get(url + "threads", headers=good).json() == {"threads": ["t"]}


def test_cors_is_off_unless_origins_are_named(tmp_path):
    origin = {"Origin": "http://chat.example", "Access-Control-Request-Method": "POST"}
    with served(tmp_path) as (app, server), client() as c:
        assert "access-control-allow-origin" not in c.get(server.url + "health", headers=origin).headers
    with served(tmp_path, cors_origins=["http://chat.example"]) as (app, server), client() as c:
        pre = c.options(server.url, headers={**origin, "Access-Control-Request-Headers": "authorization"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "http://chat.example"
        other = c.get(server.url + "health", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


# -- the log dir: one server, restarts, the wall clock ------------------------------------------------

def test_one_app_per_log_dir(tmp_path):
    """"One server per log dir ... (an OS file lock)"."""
    from convlab import agui

    first = agui.app(tmp_path)
    with pytest.raises(convlab.LogError, match="another convlab server"):
        agui.app(tmp_path)
    first.close()
    agui.app(tmp_path).close()


def test_a_thread_loads_again_after_a_restart_and_goes_on(tmp_path):
    """"threadId → one Session, its log at DIR/<threadId>.jsonl, loaded again after a restart"."""
    with served(tmp_path) as (app, server):
        history = [m("u1", "hi")]
        history.append(reply_of(run(server.url, "t", history)))
        before = app.session("t").snapshot()
    with served(tmp_path) as (app, server):
        assert snapshot(server.url, "t")["nodes"] == before["nodes"]
        history.append(m("u2", "again"))
        history.append(reply_of(run(server.url, "t", history)))
        s = app.session("t")
    assert [n["id"] for n in s.path()] == [x["id"] for x in history]
    assert convlab.Session.load(tmp_path / "t.jsonl", append=False).snapshot() == s.snapshot()


def test_the_clock_follows_the_wall_clock_so_idle_secs_fires_for_real(tmp_path):
    """"A served session's clock follows the wall clock (advanced to now before each run), so idle_secs fires for real"."""
    config = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'reset'\nidle_secs = 1\n"
    with served(tmp_path, config=config) as (app, server):
        history = [m("u1", "hi")]
        history.append(reply_of(run(server.url, "t", history)))
        history.append(m("u2", "quick"))
        quick = run(server.url, "t", history)
        history.append(reply_of(quick))
        time.sleep(1.2)
        history.append(m("u3", "after a pause"))
        slow = run(server.url, "t", history)
    limited = [e for e in custom(quick) + custom(slow) if e["type"] == "context.limited"]
    assert [e["reason"] for e in limited] == ["idle"]
    assert limited[0]["turn_id"] == [e for e in custom(slow) if e["type"] == "turn.started"][0]["turn_id"]
    [snap] = [e for e in slow if e["type"] == "MESSAGES_SNAPSHOT"]
    assert [x["content"] for x in snap["messages"]] == ["after a pause"]


def test_a_lab_on_a_served_session_only_watches_and_the_server_goes_on(tmp_path):
    """``convlab.Lab(app.session(id))`` is how the docs say to watch a thread. An input from the Lab would
    change the session outside the server's locks, and (the session runs with autorun=False) leave a turn
    waiting for steps no server run takes: every input is refused, naming the thread, and nothing is
    written; the Lab follows what the server does next."""
    with served(tmp_path) as (app, server):
        run(server.url, "t1", [m("u1", "hello there")])
        run(server.url, "t1", [m("v1", "another start")])  # a second branch: the head is on it
        s = app.session("t1")
        assert s.driver is not None and "'t1'" in s.driver
        lab = convlab.Lab(s)
        log = (tmp_path / "t1.jsonl").read_bytes()
        events, head = len(s.events), s.head
        outcomes = [
            lab.chat.send("from the lab"),
            lab.chat.edit("v1", "edited in the lab"),
            lab.chat.regenerate(head),
            lab.chat.interrupt(),
            lab.tree.checkout("u1"),
            lab.tree.continue_from("u1"),
            lab.decisions.answer([{"type": "turn.end"}]),
        ]
        for out in outcomes:
            assert out["ok"] is False and out["message"].startswith("watching only: the AG-UI server (thread 't1')"), out
        assert (tmp_path / "t1.jsonl").read_bytes() == log and len(s.events) == events and s.head == head
        assert s.running is None and s.pending is None
        assert "watching only" in lab.chat.title.value
        # the server goes on, and the Lab shows it
        run(server.url, "t1", [m("v1", "another start"), reply_of_path(s), m("v2", "and then?")])
        lab.flush()
        assert [r["text"] for r in lab.chat.shown()][-2:] == ["and then?", "echo: and then?"]
    assert convlab.Session().driver is None  # a session of one's own is driven by whoever holds it


def reply_of_path(s):
    node = s.path()[-1]
    return m(node["id"], node["content"], role="assistant")
