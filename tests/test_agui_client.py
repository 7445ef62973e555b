"""``AGUIAgent`` (issue 13, "Client"): a provider that sends the active path as a RunAgentInput to any
AG-UI endpoint and returns the reply. Driven against someone else's AG-UI server, pydantic-ai's
``AGUIAdapter`` with its offline ``FunctionModel``/``TestModel`` (uvicorn on 127.0.0.1), with no special
cases; and against convlab's own server, where the two trees branch alike."""

from __future__ import annotations

import json
import socket

import pytest

import convlab
from agui_support import REPO, SUMMARIZE_AT_60, U1, U2, client, served, sse
from ci_support import in_ci

pytestmark = pytest.mark.timeout(60)

try:
    import sys

    sys.path.insert(0, str(REPO))
    from bench.agui_peer import REPLY, peer_app
    from pydantic_ai.messages import ModelRequest, ModelResponse
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel
    from pydantic_ai.models.test import TestModel
except ImportError as err:  # pragma: no cover - pydantic-ai-slim[ag-ui] is a test dependency
    if in_ci():
        raise  # CI=true: the peer must run
    pytest.skip(f"pydantic-ai-slim[ag-ui] is missing: {err}", allow_module_level=True)

from convlab import agui


@pytest.fixture(autouse=True)
def _agents_closed(monkeypatch):
    """Every AGUIAgent a test makes is closed when it ends: no connection is left to the garbage collector."""
    made = []
    original = agui.AGUIAgent.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(agui.AGUIAgent, "__init__", init)
    yield
    for agent in made:
        agent.close()


def test_an_agent_is_a_context_manager_that_closes_its_connection(tmp_path):
    with served(tmp_path) as (_app, server):
        with agui.AGUIAgent(server.url, thread_id="ctx") as agent:
            convlab.Session(llm=agent).submit({"type": "client.message", "agent_id": "bot",
                                               "message": {"id": "u1", "role": "user", "content": "hi"}})
            assert agent._client is not None
        assert agent._client is None


def say(s, mid, text):
    return s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": mid, "role": "user", "content": text}})


def view(s, messages):
    return s.submit({"type": "client.messages", "agent_id": "bot", "messages": messages})


class Seen:
    """A FunctionModel that answers from what it was sent, and keeps what it saw."""

    def __init__(self):
        self.calls: list[list[tuple[str, str]]] = []

    def history(self, messages) -> list[tuple[str, str]]:
        out = []
        for m in messages:
            for part in m.parts:
                if isinstance(m, ModelRequest) and part.part_kind == "user-prompt":
                    out.append(("user", part.content if isinstance(part.content, str) else str(part.content)))
                elif isinstance(m, ModelResponse) and part.part_kind == "text":
                    out.append(("assistant", part.content))
        return out

    async def stream(self, messages, info):
        seen = self.history(messages)
        self.calls.append(seen)
        text = f"[{sum(1 for r, _ in seen if r == 'user')}] you said: {seen[-1][1]}"
        for word in text.split(" "):
            yield word + " "


@pytest.fixture
def peer():
    seen = Seen()
    with agui.start(peer_app(FunctionModel(stream_function=seen.stream))) as server:
        yield server.url, seen


def test_agui_agent_drives_someone_elses_agui_server(peer):
    """"AGUIAgent must drive it ... with no special cases": the reply streams (llm.delta), its text is what the
    agent said, usage is the exact count when the agent reports none."""
    url, seen = peer
    s = convlab.Session(llm=agui.AGUIAgent(url, thread_id="peer-1"))
    deltas = []
    s.subscribe(lambda e: deltas.append(e["text"]) if e["type"] == "llm.delta" else None)
    say(s, "u1", "hello there")
    reply = s.path()[-1]
    assert reply["content"] == "[1] you said: hello there " and "".join(deltas) == reply["content"]
    assert len(deltas) > 2, "the agent streams word by word"
    assert seen.calls == [[("user", "hello there")]]
    assert reply["usage"] == {"input_tokens": convlab.count_tokens([{"role": "user", "content": "hello there"}]),
                              "output_tokens": convlab.count_tokens(reply["content"])}
    meta = reply["metadata"]["agui"]
    assert meta["thread_id"] == "peer-1" and meta["parent_id"] == "peer-1:u1" and meta["message_id"]


def test_branching_over_someone_elses_agent(peer):
    """"So Session(llm=AGUIAgent(url)) and the Lab explore branching over someone else's agent": every call
    sends the active path, so an edit and a regenerate reach the agent as the histories they are."""
    url, seen = peer
    s = convlab.Session(llm=agui.AGUIAgent(url))
    say(s, "u1", "weather in NYC?")
    say(s, "u2", "and tomorrow?")
    first = s.path()
    assert seen.calls[-1] == [("user", "weather in NYC?"), ("assistant", first[1]["content"]), ("user", "and tomorrow?")]
    # edit the second question: a branch under the first reply
    view(s, s.view(first[1]["id"]) + [{"role": "user", "content": "and next week?"}])
    assert seen.calls[-1][-1] == ("user", "and next week?") and len(seen.calls[-1]) == 3
    # regenerate the first reply: the history cut before it
    view(s, s.view("u1"))
    assert seen.calls[-1] == [("user", "weather in NYC?")]
    assert len(s.children("u1")) == 2 and len(s.children(first[1]["id"])) == 2
    assert [m["content"] for m in s.path()] == ["weather in NYC?", "[1] you said: weather in NYC? "]


def test_testmodel_peer_and_the_exact_count(tmp_path):
    with agui.start(peer_app()) as server:
        s = convlab.Session(llm=agui.AGUIAgent(server.url))
        say(s, "u1", "hi")
    assert s.path()[-1]["content"] == REPLY


def test_a_run_error_is_a_provider_error():
    """"raising ProviderError on RUN_ERROR": the turn fails with what the agent said."""
    async def broken(messages, info):
        raise RuntimeError("the model is on fire")
        yield  # pragma: no cover

    with agui.start(peer_app(FunctionModel(stream_function=broken))) as server:
        s = convlab.Session(llm=agui.AGUIAgent(server.url))
        say(s, "u1", "hi")
    assert s.turns[-1]["status"] == "failed"
    [failed] = [e for e in s.events if e["type"] == "llm.failed"]
    assert failed["error"] == "failed" and "the agent's run failed" in failed["message"]


def test_an_endpoint_that_is_not_there_or_not_agui_fails_the_call(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = convlab.Session(llm=agui.AGUIAgent(f"http://127.0.0.1:{port}/", timeout=5))
    say(s, "u1", "hi")
    assert s.turns[-1]["status"] == "failed" and f"127.0.0.1:{port}" in s.turns[-1]["error"]
    with served(tmp_path) as (app, server):  # a 404: the health route does not take runs
        s = convlab.Session(llm=agui.AGUIAgent(server.url + "threads"))
        say(s, "u1", "hi")
    assert "HTTP 405" in s.turns[-1]["error"] or "HTTP 404" in s.turns[-1]["error"]
    with pytest.raises(ValueError, match="url"):
        agui.AGUIAgent("localhost:8000")
    assert "Bearer" not in repr(agui.AGUIAgent("http://x/", headers={"Authorization": "Bearer secret"}))


def test_pending_tool_calls_come_back_as_the_replys_tool_calls():
    """A tool call the agent leaves for the client (no TOOL_CALL_RESULT in the run) is the reply's tool_calls."""
    async def calls(messages, info):
        yield {0: DeltaToolCall(name="lookup", json_args='{"q": "trams"}', tool_call_id="call-1")}

    from pydantic_ai import Agent
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    agent = Agent(FunctionModel(stream_function=calls))

    async def run(request):
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    app = Starlette(routes=[Route("/", run, methods=["POST"])])
    from ag_ui.core import Tool

    tools = [Tool(name="lookup", description="look something up", parameters={"type": "object"})]

    class WithTools(agui.AGUIAgent):  # the client declares a frontend tool, as a chat UI would
        def _post(self, body):
            return super()._post(body.model_copy(update={"tools": tools}))

    with agui.start(app) as server:
        reply = WithTools(server.url).complete({"messages": [{"id": "u1", "role": "user", "content": "find trams"}]})
    assert reply["tool_calls"] == [{"id": "call-1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "trams"}'}}]


# -- against convlab's own server: two trees that branch alike ----------------------------------------

def test_convlab_to_convlab_the_served_tree_branches_where_the_session_branches(tmp_path):
    """Replies go back under the agent's own ids (metadata.agui), so a server that keeps the tree matches the
    history by id: an edit and a regenerate branch there exactly as in the session, with no copies."""
    with served(tmp_path) as (app, server):
        s = convlab.Session(llm=agui.AGUIAgent(server.url, thread_id="mirror"))
        say(s, "u1", "weather in NYC?")
        say(s, "u2", "and tomorrow?")
        view(s, s.view(s.path()[1]["id"]) + [{"role": "user", "content": "and next week?"}])  # edit
        view(s, s.view("u1"))  # regenerate
        remote = app.session("mirror")

        def shape(tree, rename):
            return sorted((rename(a["parent"]) or "", a["role"], convlab.content_text(a["content"])) for _, a in tree.nodes(data=True))

        sent = {n: a.get("metadata", {}).get("agui", {}).get("message_id", f"mirror:{n}") for n, a in s.tree.nodes(data=True)}
        local = shape(s.tree, lambda p: None if p is None else sent[p])
        served_shape = shape(remote.tree, lambda p: p)
        assert local == served_shape and len(remote.tree) == len(s.tree) == 7
        assert sent[s.head] == remote.head


def test_on_interrupt_answers_a_served_context_limit(tmp_path):
    """A run that ends in an interrupt is answered by on_interrupt (the resume payload); the reply is the
    resumed run's; without on_interrupt the call fails saying why."""
    asked = []

    def accept_edited(interrupt):
        asked.append(interrupt)
        return {"action": "accept_edited", "summary": "EDITED by the notebook"}

    with served(tmp_path, worker="manual", config=SUMMARIZE_AT_60) as (app, server):
        s = convlab.Session(llm=agui.AGUIAgent(server.url, thread_id="t", on_interrupt=accept_edited))
        say(s, "u1", U1)
        say(s, "u2", U2)
        remote = app.session("t")
        plain = convlab.Session(llm=agui.AGUIAgent(server.url, thread_id="t2"))
        say(plain, "u1", U1)
        say(plain, "u2", U2)
    [interrupt] = asked
    assert interrupt["reason"] == "context_limit" and interrupt["metadata"]["decision"]["strategy"] == "summarize"
    assert s.path()[-1]["content"] == "echo: " + U2 and s.turns[-1]["status"] == "completed"
    assert remote.path()[0]["kind"] == "summary" and remote.path()[0]["content"].endswith("EDITED by the notebook")
    assert plain.turns[-1]["status"] == "failed" and "on_interrupt" in plain.turns[-1]["error"]


def test_a_recorded_peer_stream_reads_back(tmp_path, peer):
    """convlab.read of what the peer streamed (its requests as RunAgentInput lines, then its events)."""
    url, seen = peer
    path = tmp_path / "peer.jsonl"
    history = [{"id": "u1", "role": "user", "content": "hello"}]
    with client() as c, open(path, "w") as out:
        for extra in ([], [{"id": "u2", "role": "user", "content": "again"}]):
            history += extra
            body = {"threadId": "p", "runId": f"r{len(history)}", "messages": history, "state": {}, "tools": [], "context": [], "forwardedProps": {}}
            out.write(json.dumps(body) + "\n")
            with c.stream("POST", url, json=body) as r:
                events = list(sse(r.iter_lines()))
            for e in events:
                out.write(json.dumps(e) + "\n")
            start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
            text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
            history.append({"id": start["messageId"], "role": "assistant", "content": text})
    [c] = convlab.read(path)
    assert [(m["id"], m["content"]) for m in c.path()] == [(m["id"], m["content"]) for m in history]


def test_what_cannot_be_sent_or_read_as_ag_ui_fails_the_call_with_a_reason(tmp_path):
    """A request AG-UI cannot carry, an answer the agent refuses, a cancelled interrupt and a stream of
    something else are failed calls (ProviderError) that say why, never a crash of the session."""
    bad = {"messages": [{"id": "u1", "role": "user", "content": [{"type": "image", "source": "not a source"}]}]}
    with pytest.raises(convlab.ProviderError, match="not an AG-UI run: messages.0"):
        agui.AGUIAgent("http://127.0.0.1:9/").complete(bad)

    def held(thread, answer):
        s = convlab.Session(llm=agui.AGUIAgent(server.url, thread_id=thread, on_interrupt=answer))
        say(s, "u1", U1)
        say(s, "u2", U2)
        return s

    with served(tmp_path, worker="manual", config=SUMMARIZE_AT_60) as (app, server):
        refused = held("a", lambda interrupt: {"action": "maybe"})
        cancelled = held("b", lambda interrupt: None)
        remote = app.session("b")
    assert refused.turns[-1]["status"] == "failed" and "resume[0].payload.action" in refused.turns[-1]["error"]
    assert cancelled.turns[-1]["status"] == "failed" and "cancelled the interrupt" in cancelled.turns[-1]["error"]
    assert remote.turns[-1]["status"] == "completed" and remote.path()[-1]["role"] == "user"  # the turn ended, no reply

    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def not_agui(request):
        return PlainTextResponse('data: {"hello": 1}\n\n')

    with agui.start(Starlette(routes=[Route("/", not_agui, methods=["POST"])])) as other:
        s = convlab.Session(llm=agui.AGUIAgent(other.url))
        say(s, "u1", "hi")
    assert s.turns[-1]["status"] == "failed" and "not AG-UI" in s.turns[-1]["error"]
