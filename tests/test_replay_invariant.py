"""Issue 20 (1): with no strategy, replay re-enacts a log exactly (tests/replay_invariant.py says what that is).

Every importer's output goes through the one invariant: generated trees
(compactions, tool loops, regenerations, replies right after a summary,
summaries as the first message, hostile values), a small file of each
format, and every real log in ../shared/data/real.
"""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.tuning import compact
from convlab.conversation import Conversation
from convlab.importers import FORMATS
from convlab.jsondata import repaired
from convlab.replaying.driver import replay
from convlab.replaying.plan import plan
from convlab.tree import Tree
from convlab.tuning.measures import measures

from agent_samples import cline_task, managed_agent_events, opencode_storage
from agentdata import log_files as agent_files
from agentdata import require as require_agents
from realdata import REAL, log_files, require
from replay_invariant import assert_replays_exactly, same

# -- generated logs ---------------------------------------------------------------

#: Text with the hostile characters a log may hold: lone surrogates, NUL, line breaks, emoji.
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
#: A tool input: JSON data with NaN, infinities, huge integers and some nesting.
JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers(-(2**70), 2**70) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)

#: What the next message of a log does (weighted by repetition).
MOVES = ("reply", "reply", "reply", "user", "user", "tool", "tool", "regenerate", "edit", "summary", "system", "root")


@st.composite
def logs(draw) -> Conversation:
    """A log as an importer builds one: messages in creation order, parents before children; the hostile
    values drawn are read as the importers read them (``jsondata.repaired``)."""
    t = Tree()
    ids: list[str] = []
    last_summary: str | None = None
    clock = 0.0
    for i in range(draw(st.integers(1, 24))):
        move = draw(st.sampled_from(MOVES if ids else ("user", "system", "summary", "summary", "root", "reply")))
        nid = draw(st.sampled_from([f"n{i}", f"e{i + 1}", f"id-{i}"]))  # ids of the engine's own form too
        if nid in t:
            nid = f"x{i}"
        last = ids[-1] if ids else None
        earlier = st.sampled_from(ids) if ids else st.none()
        step = draw(st.one_of(st.none(), st.floats(-5, 50)))  # a missing time, or one going backwards
        clock = clock if step is None else clock + step
        node = {"id": nid, "time": None if step is None else clock}
        if move in ("reply", "regenerate"):
            parent = last if move == "reply" else draw(earlier)
            if move == "reply" and last_summary is not None and draw(st.booleans()):
                parent = last_summary  # straight after a compaction's summary
            content = draw(st.one_of(TEXT, st.lists(st.one_of(
                st.builds(lambda s: {"type": "text", "text": s}, TEXT),
                st.builds(lambda k, x: {"type": "tool_use", "id": f"t{k}", "name": "run", "input": x}, st.integers(0, 3), JSON),
            ), min_size=1, max_size=3)))
            tokens = st.one_of(st.integers(0, 10**6), st.sampled_from([25_000, 900_000]))  # past a small window, or any
            usage = draw(st.one_of(st.none(), st.builds(lambda n: {"input_tokens": n, "output_tokens": 1}, tokens)))
            node |= {"role": "assistant", "content": content, "usage": usage}
        elif move == "tool":
            result = draw(TEXT)
            node |= draw(st.sampled_from([
                {"role": "tool", "content": result, "tool_call_id": "t0"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": result}]},  # Claude's shape
            ]))
            parent = last_summary if last_summary is not None and draw(st.booleans()) else last
        elif move == "summary":
            parent = None
            node |= {"role": "user", "content": draw(TEXT), "kind": "summary", "replaces": draw(st.one_of(st.none(), earlier))}
            last_summary = nid
        else:
            role = "system" if move == "system" else "user"
            parent = {"user": last, "system": last, "edit": None, "root": None}[move]
            if move == "edit":
                parent = t.node(draw(earlier))["parent"] if ids else None
            node |= {"role": role, "content": draw(st.one_of(TEXT, st.lists(st.builds(lambda s: {"type": "text", "text": s}, TEXT),
                                                                            max_size=2)))}
        t.add(repaired(node)[0], parent)  # as every importer's builder does (rev 4: nothing JSON cannot carry)
        ids.append(nid)
    t.head = draw(st.sampled_from(ids)) if draw(st.booleans()) else ids[-1]
    return Conversation(t, id="generated")


@given(logs())
def test_a_generated_log_replays_exactly(c):
    assert_replays_exactly(c)


@settings(max_examples=100)
@given(logs(), st.data())
def test_a_fork_of_a_generated_log_goes_on_as_the_replay_did(c, data):
    """A sweep forks replays between turns (through the session log's lines): what it goes on from holds the
    log's values as they were read, and the fork ends as the whole replay did."""
    from convlab.replaying.driver import Replayer

    p = plan(c)
    whole = Replayer(p, "").run()
    k = data.draw(st.integers(0, len(p.turns) - 1))
    forked = whole.fork(k, "").run(k)
    a, b = whole.result(), forked.result()
    assert (b.map, b.stale, b.calls, b.compactions) == (a.map, a.stale, a.calls, a.compactions)
    assert json.dumps(b.session.snapshot()["nodes"]) == json.dumps(a.session.snapshot()["nodes"])
    assert_replays_exactly(c, b)


CONFIGS = st.builds(
    lambda window, over, idle, use: "\n".join(
        ["[agent.bot.context]"] + ([f"window = {window}"] if window else [])
        + ["[[agent.bot.context.strategy]]", f'use = "{use}"'] + ([f"over_tokens = {over}"] if over else [])
        + ([f"idle_secs = {idle}"] if idle else [])),
    st.sampled_from([None, 16001, 20000, 10**6]), st.sampled_from([None, 1, 30, 2000]), st.sampled_from([None, 1, 20]),
    st.sampled_from(["summarize", "reset"]))


@settings(max_examples=150)
@given(logs(), CONFIGS)
def test_under_any_config_every_reply_given_is_the_logs_own(c, config):
    """Where a strategy fires, or the window refuses calls and turns fail, the replay goes on from its new
    history; still no call is answered with another reply than its own: every logged reply the replay maps
    a call gets is recorded with that reply's content, each once, and a reply not given is stale."""
    r = replay(c, config)
    events = r.session.events
    recorded = [events[i + 1]["message"] for i, e in enumerate(events[:-1])
                if e["type"] == "llm.completed" and not e.get("summary") and events[i + 1]["type"] == "message.new"]
    given = [x["reply"] for x in r.calls if not x["refused"]]
    assert len(recorded) == len(given)
    for reply, m in zip(given, recorded):
        assert same(m["content"], c.tree.nodes[reply]["content"]), (reply, config)
    assert len(given) == len(set(given)), "a logged reply given twice"
    assert set(plan(c).calls) <= set(given) | set(r.stale), "a logged reply neither given nor stale"


# -- the case ---------------------------------------------------------------


def _row(kind, uuid, parent, second, **extra):
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "timestamp": f"2025-01-01T00:00:0{second}Z", **extra}


def _said(role, text, mid=None, tokens=None):
    message = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
    if mid:
        message |= {"id": mid, "usage": {"input_tokens": tokens, "output_tokens": 1}}
    return {"message": message}


#: Issue 20: "u1 -> a1 -> compact_boundary -> summary -> a2 "continuing" -> u2 "thanks" -> a3 "welcome"".
SEVEN_LINES = [
    _row("user", "u1", None, 0, **_said("user", "hello")),
    _row("assistant", "a1", "u1", 1, **_said("assistant", "hi", "m1", 10)),
    _row("system", "b", None, 2, subtype="compact_boundary", logicalParentUuid="a1", compactMetadata={"trigger": "auto", "preTokens": 10}),
    _row("user", "sum", "b", 2, isCompactSummary=True, **_said("user", "This session is being continued: we greeted.")),
    _row("assistant", "a2", "sum", 3, **_said("assistant", "continuing", "m2", 30)),
    _row("user", "u2", "a2", 4, **_said("user", "thanks")),
    _row("assistant", "a3", "u2", 5, **_said("assistant", "welcome", "m3", 40)),
]


def seven_lines(tmp_path) -> Conversation:
    p = tmp_path / "compacted.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in SEVEN_LINES))
    [c] = convlab.read(p, progress=False)
    return c


def test_the_assistant_replying_straight_after_a_compaction_summary(tmp_path):
    """Issue 20: "It replays as [summary, "thanks", "continuing"], with a2 stale and "welcome" gone"."""
    from convlab.engine import SUMMARY_PREFIX

    c = seven_lines(tmp_path)
    r = assert_replays_exactly(c)
    path = r.session.path()
    assert [(m["kind"], convlab.content_text(m["content"])) for m in path] == [
        ("summary", SUMMARY_PREFIX + "This session is being continued: we greeted."),
        ("message", "continuing"), ("message", "thanks"), ("message", "welcome")]
    assert r.stale == [] and [x["reply"] for x in r.calls] == ["a1", "a2", "a3"]
    # the reply after the summary is the same turn as the compaction: [context.replace, llm.call] in one answer
    answers = [[a["type"] for a in e["actions"]] for e in r.session.events if e["type"] == "decision.answered"]
    assert answers == [["llm.call"], [], ["context.replace", "llm.call"], [], ["llm.call"], []]
    assert r.compactions == [{"id": r.map["sum"], "call": 2}]
    # the log's usage applies to every call, the one after the summary too: nothing is stale, nothing estimated
    assert [(x["applies"], x["read"]) for x in r.calls] == [(True, 10), (True, 30), (True, 40)]


def test_a_tool_loop_straight_after_a_compaction_summary(tmp_path):
    """Issue 20: "Tool results end up directly under the summary, answering a tool call that the replayed tree never issues"."""
    rows = SEVEN_LINES[:4] + [
        _row("assistant", "a2", "sum", 3, message={"id": "m2", "role": "assistant", "usage": {"input_tokens": 30, "output_tokens": 1},
                                                   "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}),
        _row("user", "r1", "a2", 4, message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}),
        _row("assistant", "a3", "r1", 5, **_said("assistant", "one file", "m3", 40)),
    ]
    p = tmp_path / "tools.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    [c] = convlab.read(p, progress=False)
    r = assert_replays_exactly(c)
    tool = r.session.tree.nodes[r.map["r1"]]
    assert tool["parent"] == r.map["a2"] and r.session.tree.nodes[tool["parent"]]["tool_calls"][0]["id"] == "t1"
    answers = [[a["type"] for a in e["actions"]] for e in r.session.events if e["type"] == "decision.answered"]
    assert answers[2:] == [["context.replace", "llm.call"], ["message.add", "llm.call"], []]


# -- every importer's output -----------------------------------------------------------

@pytest.mark.realdata
@pytest.mark.parametrize("name", log_files())
def test_every_real_log_replays_exactly(name):
    require()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)  # repairs are the importer's business
        convs = convlab.read(REAL / name, progress=False)
    assert convs
    for c in convs:
        assert_replays_exactly(c)


@pytest.mark.realdata
@pytest.mark.parametrize("name", agent_files())
def test_every_agent_log_replays_exactly(name):
    """Issue 35: every coding agent's own log in ../shared/data/agents, its own compactions (Codex's compacted
    rows, pi's compaction entries) re-enacted as the log did them, the messages they kept as copies."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", convlab.ReadWarning)
        convs = convlab.read(require_agents() / name, progress=False)
    assert convs
    for c in convs:
        assert_replays_exactly(c)


#: The formats of the files in ../shared/data/real.
REAL_FORMATS = {"chatgpt", "claude_ai", "claude_code", "librechat", "oasst", "openwebui"}
#: The formats of the files in ../shared/data/agents (test_every_agent_log_replays_exactly).
AGENT_FORMATS = {"codex", "copilot_cli", "gemini_cli", "pi"}


def _lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def openai_sample(tmp_path):
    return tmp_path / "chat.json", [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "usage": {"prompt_tokens": 30, "completion_tokens": 2}},
    ]


def agui_sample(tmp_path):
    """A recorded AG-UI stream: a run's input, a tool call, its result and the reply."""
    return _lines(tmp_path / "rec.jsonl", [
        {"threadId": "w", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "weather?"}]},
        {"type": "RUN_STARTED", "threadId": "w", "runId": "r1", "timestamp": 1700000000000},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "weather", "parentMessageId": "a1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"city": "NYC"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "sunny"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "It is sunny."},
        {"type": "TEXT_MESSAGE_END", "messageId": "a2"},
        {"type": "RUN_FINISHED", "threadId": "w", "runId": "r1"},
    ])


def session_log_sample(tmp_path):
    """convlab's own log of a session whose summarize strategy fired: summary roots, an edit, a regeneration."""
    log = tmp_path / "session.jsonl"
    cfg = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 120\n"
    s = convlab.Session(log=log, config=cfg, llm=convlab.EchoLLM())
    for i in range(6):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " + "word " * 40}})
    view = s.view(s.head)
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": view[:-1]})  # regenerate the last reply
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": view[:-2] + [{"role": "user", "content": "an edit"}]})
    return log


def test_each_format_s_output_replays_exactly(tmp_path):
    """The formats the real data has no file of (OpenAI lists, AG-UI recordings, the generic id/parent tree,
    convlab's own log with summaries a strategy made, Cline, Managed Agents, OpenCode), each read and replayed
    through the invariant."""
    path, msgs = openai_sample(tmp_path)
    path.write_text(json.dumps(msgs))
    conversations = {"openai": convlab.read(path, progress=False)}
    conversations["openai jsonl"] = convlab.read(_lines(tmp_path / "train.jsonl", [{"messages": msgs}, {"messages": msgs[1:]}]),
                                                 progress=False)
    conversations["agui"] = convlab.read(agui_sample(tmp_path), progress=False)
    generic = tmp_path / "tree.json"
    generic.write_text(json.dumps({"title": "t", "messages": [
        {"id": "q", "parentMessageId": None, "role": "user", "content": "hi"},
        {"id": "a1", "parentMessageId": "q", "role": "assistant", "content": "hello"},
        {"id": "a2", "parentMessageId": "q", "role": "assistant", "content": "hey", "usage": {"input_tokens": 9}},
        {"id": "q2", "parentMessageId": "a1", "role": "user", "content": "and?"}]}))
    conversations["generic"] = convlab.read(generic, progress=False)
    conversations["convlab"] = convlab.read(session_log_sample(tmp_path), progress=False)
    conversations["cline"] = convlab.read(cline_task(tmp_path / "tasks" / "t1"), progress=False)  # no shared Cline log
    conversations["managed_agents"] = convlab.read(_lines(tmp_path / "events.jsonl", managed_agent_events()), progress=False)
    conversations["opencode"] = convlab.read(opencode_storage(tmp_path / "opencode"), progress=False)  # no shared OpenCode log
    # with the formats the real logs are in (test_every_real_log_replays_exactly), every importer
    formats = {c.format for convs in conversations.values() for c in convs}
    assert formats | REAL_FORMATS | AGENT_FORMATS == set(FORMATS), "a format with no file to replay"
    summaries = [n for n, a in conversations["convlab"][0].tree.nodes(data=True) if a["kind"] == "summary"]
    assert len(summaries) >= 2  # the strategy fired: the log compacted itself
    for name, convs in conversations.items():
        assert convs, name
        for c in convs:
            assert_replays_exactly(c)


WORKERS = st.sampled_from([None, compact.sliding_window(keep_turns=1), compact.summary_tail(keep_tokens=0.3),
                           compact.clear_tool_results(keep=0), compact.clear_tool_results(keep=1, clear_tool_inputs=True),
                           compact.clear_thinking(keep=1), compact.observation_masking(keep=1), compact.summary_turns(1),
                           compact.summary_steps(2), compact.masking_with_summary(1, 2), compact.openai_compact(),
                           compact.gemini_cli_compression(), compact.offloaded_summary(0.2)])


@settings(max_examples=100)
@given(logs(), CONFIGS, WORKERS, st.sampled_from(["anthropic", "openai", None, "auto"]))
def test_under_any_config_and_worker_the_costs_hold_together(c, config, worker, rule):
    """Issue 22: every call a replay makes is costed, whatever the log (hostile values, no usage, times going
    back), the config and the worker: the predicted cache read and write fit inside what the call read, the
    dollars are genai-prices' over them, and the frame's figures are their sums."""
    import math

    from convlab.replaying.prices import Prices

    r = replay(c, config, worker=worker, model="claude-sonnet-4-5", prompt_cache=rule)
    prices = Prices("claude-sonnet-4-5")
    for x in r.calls:
        if x["refused"]:  # issue 34: a call refused as too long reads, caches and costs nothing
            assert x["cached"] == x["cache_write"] == x["usd"] == 0
            continue
        assert 0 <= x["cached"] <= x["read"] and 0 <= x["cache_write"] <= x["read"] - x["cached"]
        assert x["usd"] == prices.usd(int(x["read"]), x["cached"], x["cache_write"], x["output"]) >= 0
        if rule is None:
            assert x["cached"] == x["cache_write"] == 0
    for s in r.summary_calls:
        assert 0 <= s["cached"] <= s["read"] and 0 <= s["cache_write"] <= s["read"] - s["cached"]
        assert s["usd"] == (0 if s["refused"] else prices.usd(int(s["read"]), s["cached"], s["cache_write"], int(s["output"])))
        if rule is None or not s["shared"]:
            assert s["cached"] == s["cache_write"] == 0
    base = replay(c, model="claude-sonnet-4-5", prompt_cache=rule).figures()
    m = measures(r, base)
    lost = [base[reply] for reply in r.lost]
    answered = r.answered()
    # every figure of the row sums the same calls: those answered, the summaries answered, the lost at the baseline's
    assert m["calls"] == len(answered) and m["lost_calls"] == len(r.lost)
    assert m["tokens_read"] == (sum(x["read"] for x in answered) + sum(s["read"] for s in r.summary_calls if not s["refused"])
                                + sum(f.read for f in lost))
    summaries = [s for s in r.summary_calls if not s["refused"]]
    assert m["cached"] == (sum(x["cached"] for x in answered) + sum(s["cached"] for s in summaries)
                           + sum(f.cached for f in lost)) <= m["tokens_read"]
    assert m["cache_write"] == (sum(x["cache_write"] for x in answered) + sum(s["cache_write"] for s in summaries)
                                + sum(f.cache_write for f in lost))
    total = sum(x["usd"] for x in r.calls) + sum(s["usd"] for s in r.summary_calls) + sum(f.usd for f in lost)
    assert math.isclose(m["usd"], total, rel_tol=1e-12, abs_tol=1e-12)
