"""Issue 35: every coding agent's own log, read as the conversation its model read.

The real sessions in ../shared/data/agents (tests/agentdata.py) are ground truth: their counts in STATS.json
were made from the raw bytes by separate scripts, and each count here is compared with them. Where convlab
counts differently on purpose, the test says why beside the difference. Generated files cover what no shared
session holds (pi's v3 tree, stream-json, a Copilot compaction, the Cline task folder, ...).
"""

from __future__ import annotations

import functools
import json
import math
import warnings
from collections import Counter
from pathlib import Path

import pytest

import convlab
from agent_samples import branching_export, cline_task, codex_rows, lines, managed_agent_events, pi_v3_rows
from agentdata import FORMATS, log_files, require, stats
from convlab.conversation import KEPT
from convlab.replaying.plan import plan
from convlab.tree import input_tokens, nodes_in_order
from convlab.tuning.measures import measures

CODEX = "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
PI = "pi/before-compaction.jsonl"

pytestmark = pytest.mark.realdata


@functools.cache
def _read(name: str) -> tuple[convlab.Conversation, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", convlab.ReadWarning)  # the shared logs read with no repair
        return tuple(convlab.read(require() / name, progress=False))


def stat(name: str) -> dict:
    """STATS.json's counts for ``name`` (skips, or fails under CI=true, when the logs are missing)."""
    require()
    return stats()[name]


def read_one(name: str) -> convlab.Conversation:
    [c] = _read(name)
    return c


def own(c: convlab.Conversation) -> list[dict]:
    """The log's own messages, in order: not a compaction's summary, nor what it kept (copies, KEPT)."""
    return [a for a in nodes_in_order(c.tree)
            if a["kind"] != "summary" and a.get("copied_from") is None and KEPT not in (a.get("metadata") or {})]


def calls_with_usage(c: convlab.Conversation) -> list[dict]:
    """The replies whose usage the log records, in the order replay calls them."""
    return [c.tree.nodes[n] for n in plan(c).calls if c.tree.nodes[n].get("usage")]


def prompts(c: convlab.Conversation) -> list[dict]:
    """What a person typed: user messages, not injected by the agent, not a pi `!` command."""
    meta = lambda a: a.get("metadata") or {}  # noqa: E731
    return [a for a in own(c) if a["role"] == "user" and not meta(a).get("injected") and "pi_role" not in meta(a)
            and "branch_summary" not in meta(a)]


def tool_calls(c: convlab.Conversation) -> list[dict]:
    return [p for a in own(c) if a["role"] == "assistant" and isinstance(a["content"], list)
            for p in a["content"] if isinstance(p, dict) and p.get("type") in ("tool_use", "server_tool_use")]


def zero_rows(st: dict) -> set[int]:
    """pi: the 0-based calls whose usage is all zeros (an aborted or failed reply: pi's own count passes over
    them, ``getAssistantUsage``, and so does convlab's: read without usage)."""
    return {i for i, (x, o) in enumerate(zip(st["input_tokens"], st["output_tokens"], strict=True)) if not x and not o}


# -- every file: its format, its counts -----------------------------------------------------------


@pytest.mark.parametrize("name", log_files())
def test_each_agent_log_reads_as_its_format(name):
    st = stat(name)
    c = read_one(name)
    assert c.format == FORMATS[st["format"]] and c.id == st["session_id"] and c.left_out == []
    assert c.head in c.tree and not c.children(c.head) and c.path()[-1]["id"] == c.head  # the log's last message
    assert len(c.roots) == 1 + len(st["compactions"])  # one root, and one per compaction the log recorded


@pytest.mark.parametrize("name", log_files())
def test_prompts_tool_calls_and_results_are_the_stats(name):
    st = stat(name)
    c = read_one(name)
    assert len(prompts(c)) == st["user_prompts"]
    assert len(tool_calls(c)) == st["tool_calls"]
    assert sum(1 for a in own(c) if a["role"] == "tool") == st["tool_results"]
    answered = {a["tool_call_id"] for a in own(c) if a["role"] == "tool"}
    called = {p["id"] for p in tool_calls(c)}
    assert len(called - answered) == st["unpaired_tool_calls"]
    assert len(answered - called) == st["unpaired_tool_results"]


@pytest.mark.parametrize("name", log_files())
def test_usage_per_call_is_the_stats(name):
    """Input (cached included), cached and output per call, in order, and the last real input."""
    st = stat(name)
    c = read_one(name)
    calls = calls_with_usage(c)
    skip = zero_rows(st) if st["format"] == "pi_session" else set()
    expect = {k: [v for i, v in enumerate(st[k]) if i not in skip] for k in ("input_tokens", "cached_tokens", "output_tokens")
              if k in st}
    assert len(calls) == st["model_calls_with_usage"] - len(skip)
    if st["input_tokens"]:
        assert [input_tokens(a["usage"]) for a in calls] == expect["input_tokens"]
        assert [a["usage"]["cache_read_input_tokens"] for a in calls] == expect["cached_tokens"]
        assert next(input_tokens(a["usage"]) for a in reversed(calls) if input_tokens(a["usage"])) == st["last_real_input_tokens"]
    else:  # Copilot records no input per call: the usage holds output only, and the count reads none of it
        assert st["last_real_input_tokens"] is None and all(input_tokens(a["usage"]) is None for a in calls)
    outputs = [a["usage"]["output_tokens"] for a in calls]
    if st["format"].startswith("gemini_cli"):
        # Gemini bills the thinking as output: convlab's output_tokens is tokens.output + tokens.thoughts (dollars
        # come out right); STATS counts tokens.output alone, kept apart as thoughts_tokens
        outputs = [o - a["usage"]["thoughts_tokens"] for o, a in zip(outputs, calls, strict=True)]
    if "output_tokens" in expect:
        assert outputs == expect["output_tokens"]


@pytest.mark.parametrize("name", log_files())
def test_models_and_window_are_the_logs(name):
    st = stat(name)
    c = read_one(name)
    replied = [m for m in dict.fromkeys((a.get("metadata") or {}).get("model") for a in own(c) if a["role"] == "assistant") if m]
    # the models that answered: STATS also lists models a pi session switched to without a reply (model_change)
    assert set(replied) <= set(st["models"]) and set(c.metadata.get("models", [])) == set(replied)
    assert bool(replied) == bool(st["models"])  # the older Copilot timeline names none
    if st["context_window"] is not None:
        assert c.metadata["model_context_window"] == st["context_window"]


@pytest.mark.parametrize("name", log_files())
def test_compactions_are_where_the_stats_say(name):
    """Each compaction the agent recorded is a summary root; replay re-enacts it before the call STATS names."""
    st = stat(name)
    c = read_one(name)
    summaries = [a for a in nodes_in_order(c.tree) if a["kind"] == "summary"]
    assert len(summaries) == len(st["compactions"])
    if not summaries:
        return
    r = convlab.replay(c)
    assert [x["call"] for x in r.compactions] == [k["before_model_call"] for k in st["compactions"]]
    replies = plan(c).calls
    for s, k in zip(summaries, st["compactions"], strict=True):
        before = c.tree.nodes[s["replaces"]]
        assert s["parent"] is None and before["seq"] < s["seq"]  # it replaces the message the log was on
        if st["format"] == "pi_session":
            assert s["metadata"]["compaction"]["tokensBefore"] == k["tokens_before"]
        else:  # Codex: the input of the call before it
            last = c.tree.nodes[replies[k["before_model_call"] - 2]]
            assert input_tokens(last["usage"]) == k["tokens_before"]


# -- Codex ---------------------------------------------------------------------------------------


def test_codex_injected_inputs_are_marked_and_developer_messages_are_system():
    st = stat(CODEX)["user_prompts_crosscheck"]
    c = read_one(CODEX)
    users = [a for a in own(c) if a["role"] == "user"]
    assert len(users) == st["response_item_user_messages_total"]
    assert sum(1 for a in users if (a.get("metadata") or {}).get("injected")) == st["response_item_user_injected_or_unmatched"]
    assert any(a["role"] == "system" for a in own(c))  # developer messages
    parts = Counter(p["type"] for a in own(c) if a["role"] == "assistant" for p in a["content"])
    assert parts["server_tool_use"] == 7 and parts["thinking"] == 219  # web searches; every reasoning item


def test_codex_compaction_keeps_its_replacement_history():
    """The compacted row's 40-item replacement history: 39 messages (the opaque compaction item left out), each
    a copy of the message the log holds word for word, or a message the compaction kept (a reply's text alone)."""
    c = read_one(CODEX)
    [s] = [a for a in nodes_in_order(c.tree) if a["kind"] == "summary"]
    assert (s["id"], s["replaces"]) == ("L1788", "L1786") and s["metadata"]["compacted"] == {"replacement_history": 40}
    chain = []
    node = s["id"]
    while (kids := c.children(node)) and (c.tree.nodes[kids[0]].get("copied_from") or KEPT in (c.tree.nodes[kids[0]].get("metadata") or {})):
        node = kids[0]
        chain.append(c.tree.nodes[node])
    assert len(chain) == 39
    copies = [a for a in chain if a.get("copied_from")]
    assert all(a["content"] == c.tree.nodes[a["copied_from"]]["content"] and a.get("usage") is None for a in copies)
    # copies: 17 typed prompts and 2 developer messages the log holds word for word; new: the final text of 15 replies
    # (the log's reply holds its reasoning and calls too), 4 prompts whose image the history holds re-encoded (another
    # length), 1 developer message written only there
    assert Counter((a["role"], bool(a.get("copied_from"))) for a in chain) == {
        ("user", True): 17, ("system", True): 2, ("assistant", False): 15, ("user", False): 4, ("system", False): 1}
    r = convlab.replay(c)
    after = r.calls[184]  # the first call after it reads the history the log's model read: its usage applies
    assert after["applies"] and after["read"] == stat(CODEX)["input_tokens"][184]
    assert not any(x["reply"] in {a["id"] for a in chain} for x in r.calls)  # what it kept is never a model call


# -- pi ------------------------------------------------------------------------------------------


def test_pi_compaction_copies_what_it_kept():
    """v1: ``firstKeptEntryIndex`` counts the header as 0 (pi's migrateV1ToV2): entries 293..358 are kept, as copies."""
    c = read_one(PI)
    rows = [json.loads(line) for line in (require() / PI).read_text().splitlines()]
    first = stat(PI)["compactions"][0]
    summary = c.tree.nodes[f"L{first['file_line']}"]
    assert summary["kind"] == "summary" and summary["replaces"] == f"L{first['file_line'] - 1}"
    kept = [f"L{i + 1}" for i in range(first["first_kept"], first["file_line"] - 1) if rows[i]["type"] == "message"]
    chain, node = [], summary["id"]
    while (kids := c.children(node)) and c.tree.nodes[kids[0]].get("copied_from"):
        node = kids[0]
        chain.append(c.tree.nodes[node]["copied_from"])
    assert chain == kept
    after = c.tree.nodes[f"L{first['file_line'] + 1}"]  # "ok, i hope i haven't lobotimized you by compacting"
    assert after["parent"] == node and after["role"] == "user"
    assert first["prev_call_input_plus_output"] == first["tokens_before"]  # pi's tokensBefore: input + output


def test_pi_bash_commands_and_aborted_replies():
    c = read_one(PI)
    bash = [a for a in own(c) if (a.get("metadata") or {}).get("pi_role") == "bashExecution"]
    assert len(bash) == stat(PI)["bash_executions"] and bash[0]["content"].startswith("Ran `ls`\n```\n")
    aborted = [a for a in own(c) if a["role"] == "assistant" and not a.get("usage")]
    assert len(aborted) == len(zero_rows(stat(PI))) and {a["metadata"]["stop_reason"] for a in aborted} == {"aborted", "error"}


# -- Gemini CLI, Copilot CLI ---------------------------------------------------------------------------


def test_gemini_jsonl_keeps_the_last_line_of_an_id_where_the_first_stood():
    c = read_one("gemini_cli/gemini.jsonl")
    replies = [a for a in own(c) if a["role"] == "assistant"]
    assert len(replies) == 6 and replies[0]["id"] == "52e62e67-5d6b-4a2c-b12d-11b87fe3e4a4"
    assert replies[0]["tool_calls"]  # its second line, with the calls, won
    injected = [a for a in own(c) if (a.get("metadata") or {}).get("injected")]
    assert [a["content"] for a in injected] == ["System: Please continue."]
    slash = next(a for a in prompts(c) if a["id"] == "8828dd6a-d778-464f-8160-eb2e1604a122")
    assert slash["metadata"]["display"] == "/init" and len(slash["content"]) > 1000  # the model read the expansion


def test_copilot_events_read_the_system_prompt_once_and_the_transformed_prompts():
    c = read_one("copilot_cli/copilot.jsonl")
    path = c.path()
    assert path[0]["role"] == "system" and sum(1 for a in path if a["role"] == "system") == 1  # written twice, read once
    first = next(a for a in path if a["role"] == "user")
    assert first["content"].startswith("<current_datetime>") and first["metadata"]["display"] in first["content"]
    assert c.metadata["modelMetrics"]["claude-sonnet-4.6"]["usage"]["outputTokens"] == sum(
        a["usage"]["output_tokens"] for a in calls_with_usage(c))
    # STATS counts Copilot's event tree (55 events, 1 branch point: a turn_end points back past parallel tool runs);
    # parentId records the events' order, not a conversation (FORMATS.md): convlab reads one branch, on purpose
    assert stat("copilot_cli/copilot.jsonl")["branches"]["branch_points"] == 1
    assert all(len(c.children(n)) <= 1 for n in c.tree) and len(c.roots) == 1


# -- the prompt-cache check and dollars -------------------------------------------------------------


@pytest.mark.parametrize("name, model", [(CODEX, "gpt-5.3-codex"), ("codex/codex.jsonl", "gpt-5"),
                                         ("gemini_cli/gemini.jsonl", "gemini-3.1-pro-preview"), (PI, "claude-opus-4-5")])
def test_the_prompt_cache_check_runs_on_codex_gemini_and_pi(name, model):
    """The log's cache reads (cache_read_input_tokens) are what replay checks its prediction against (err_cached_*),
    and every call is priced, as on Claude Code's logs."""
    st = stat(name)
    c = read_one(name)
    r = convlab.replay(c, model=model)
    m = measures(r)
    skip = zero_rows(st) if st["format"] == "pi_session" else set()
    assert m["logged_cached"] == sum(v for i, v in enumerate(st["cached_tokens"]) if i not in skip)
    assert math.isfinite(m["err_cached_mean"]) and math.isfinite(m["usd"]) and m["usd"] > 0
    assert sum(1 for x in r.calls if x["logged_cached"] is not None) == len(st["cached_tokens"]) - len(skip)


# -- generated files: what no shared session holds -----------------------------------------------


def test_stream_json_delta_rows_of_one_reply_are_one_message(tmp_path):
    """Issue 35: a stream-json file was read as the openai format, every tool row dropped and one reply cut into 7
    messages mid-URL."""
    url = "https://example.com/docs/getting-started#install"
    deltas = [url[i:i + 7] for i in range(0, 49, 7)]
    rows = [{"type": "init", "timestamp": "2025-10-01T10:00:00Z", "session_id": "s1", "model": "gemini-2.5-pro"},
            {"type": "message", "timestamp": "2025-10-01T10:00:01Z", "role": "user", "content": "where are the docs?"}]
    rows += [{"type": "message", "timestamp": f"2025-10-01T10:00:0{2 + i // 4}Z", "role": "assistant", "content": d, "delta": True}
             for i, d in enumerate(deltas)]
    rows += [{"type": "tool_use", "timestamp": "2025-10-01T10:00:04Z", "tool_name": "web_fetch", "tool_id": "t1",
              "parameters": {"url": url}},
             {"type": "tool_result", "timestamp": "2025-10-01T10:00:05Z", "tool_id": "t1", "status": "success", "output": "docs"},
             {"type": "message", "timestamp": "2025-10-01T10:00:06Z", "role": "assistant", "content": "Found.", "delta": True},
             {"type": "result", "timestamp": "2025-10-01T10:00:07Z", "status": "success",
              "stats": {"total_tokens": 90, "input_tokens": 80, "output_tokens": 10, "cached": 0, "input": 80,
                        "duration_ms": 7000, "tool_calls": 1, "models": {}}}]
    assert len(deltas) == 7
    [c] = convlab.read(lines(tmp_path / "run.jsonl", rows), progress=False)
    path = c.path()
    assert c.format == "gemini_cli" and [a["role"] for a in path] == ["user", "assistant", "tool", "assistant"]
    assert path[1]["content"][0] == {"type": "text", "text": url} and path[1]["tool_calls"][0]["id"] == "t1"
    assert path[2]["tool_call_id"] == "t1" and c.metadata["stats"]["input_tokens"] == 80
    two = lines(tmp_path / "two.jsonl", rows + rows)  # a second init: a second session
    assert [c.id for c in convlab.read(two, progress=False)] == ["s1#1", "s1#2"]


def test_gemini_jsonl_rewinds_and_restarts_as_the_cli_loads_it(tmp_path):
    head = {"sessionId": "g1", "projectHash": "h", "startTime": "2025-10-01T10:00:00Z", "kind": "main"}
    msg = lambda mid, kind, text, **kw: {"id": mid, "type": kind, "timestamp": "2025-10-01T10:00:01Z", "content": text, **kw}  # noqa: E731
    tokens = {"input": 100, "output": 5, "cached": 60, "thoughts": 7, "tool": 0, "total": 112}
    rows = [head, msg("u1", "user", [{"text": "hi"}]), msg("g1", "gemini", "hello", tokens=tokens, model="gemini-2.5-pro"),
            msg("u2", "user", "wrong"), msg("g2", "gemini", "oops"), {"$rewindTo": "u2"},
            msg("u3", "user", "right"), msg("g1", "gemini", "hello again", tokens=tokens, model="gemini-2.5-pro"),
            msg("i1", "info", "a note for the person"), {"$set": {"lastUpdated": "2025-10-01T10:00:09Z", "summary": "Greeting"}}]
    [c] = convlab.read(lines(tmp_path / "session-1.jsonl", rows), progress=False)
    assert [(a["id"], a["content"] if isinstance(a["content"], str) else a["content"][0]["text"]) for a in c.path()] == [
        ("u1", "hi"), ("g1", "hello again"), ("u3", "right")]  # g1's last line, where its first stood
    assert c.title == "Greeting" and c.tree.nodes["g1"]["usage"] == {
        "input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 12, "thoughts_tokens": 7, "tool_tokens": 0}
    restart = [*rows, {"$set": {"messages": [msg("n1", "user", "new start")]}}]
    [c] = convlab.read(lines(tmp_path / "session-2.jsonl", restart), progress=False)
    assert [a["id"] for a in c.path()] == ["n1"]


def test_pi_v3_keeps_every_branch_and_reads_its_compaction_by_id(tmp_path):
    from replay_invariant import assert_replays_exactly

    [c] = convlab.read(lines(tmp_path / "v3.jsonl", pi_v3_rows()), progress=False)
    assert (c.format, c.id, c.title, c.head) == ("pi", "s-v3", "a v3 session", "a3")  # the last entry's message
    assert set(c.children("a1")) == {"u2", "b1"}  # both branches kept; the summary of the one left is a message
    b1 = c.tree.nodes["b1"]
    assert b1["role"] == "user" and "read x" in b1["content"] and b1["metadata"]["branch_summary"] == "u2"
    s = c.tree.nodes["c1x"]
    assert (s["kind"], s["replaces"], s["metadata"]["compaction"]["tokensBefore"]) == ("summary", "a2b", 310)
    assert [a.get("copied_from") for a in c.path()][:4] == [None, "u2b", "a2b", None]  # summary, kept u2b and a2b, custom
    assert c.tree.nodes["cm"]["parent"] == "a2b@c1x" and c.metadata["labels"] == {"a1": "start"}
    a2 = c.tree.nodes["a2"]
    assert a2["tool_calls"][0]["id"] == "c1" and c.tree.nodes["r1"]["tool_call_id"] == "c1"
    assert [p["type"] for p in a2["content"]] == ["thinking", "tool_use"]
    r = assert_replays_exactly(c)
    assert r.compactions == [{"id": r.map["c1x"], "call": 4}]


def test_codex_older_compaction_keeps_the_newest_prompts(tmp_path):
    """Without replacement_history Codex rebuilds the history from the summary and the typed prompts (the newest,
    20,000 tokens at most): so is it read; with no user_message events, injected inputs are told by their text."""
    from replay_invariant import assert_replays_exactly

    [c] = convlab.read(lines(tmp_path / "rollout.jsonl", codex_rows({"message": "we listed files"})), progress=False)
    path = c.path()
    assert [(a["role"], a.get("copied_from")) for a in path] == [
        ("user", None), ("user", "L3"), ("user", "L12"), ("assistant", None)]
    assert path[0]["kind"] == "summary" and path[0]["replaces"] == "L12" and path[0]["content"] == "we listed files"
    assert c.tree.nodes["L2"]["metadata"] == {"injected": True}
    first = c.tree.nodes["L6"]  # its usage came before its items (0.39)
    assert first["usage"]["input_tokens"] + first["usage"]["cache_read_input_tokens"] == 1000
    assert [p["type"] for p in first["content"]] == ["thinking", "tool_use"]
    assert_replays_exactly(c)


def test_codex_replacement_history_keeps_copies_and_new_messages(tmp_path):
    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first question"}]},
               {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "one file, a.txt"}]},
               {"type": "compaction", "encrypted_content": "opaque"}]
    from replay_invariant import assert_replays_exactly

    [c] = convlab.read(lines(tmp_path / "rollout.jsonl", codex_rows({"message": "", "replacement_history": history})),
                       progress=False)
    path = c.path()
    assert path[1]["copied_from"] == "L3" and path[2]["metadata"] == {KEPT: "L13"} and path[2]["role"] == "assistant"
    r = assert_replays_exactly(c)
    assert [x["reply"] for x in r.calls] == ["L6", "L11", "L16"]  # what it kept is never a call


def test_a_copilot_compaction_and_a_sub_agent(tmp_path):
    from replay_invariant import assert_replays_exactly

    ev = lambda n, kind, data, **kw: {"type": kind, "data": data, "id": f"e{n:03d}x", "timestamp": f"2026-04-23T17:00:{n:02d}Z",  # noqa: E731
                                      "parentId": f"e{n - 1:03d}x" if n else None, **kw}
    rows = [ev(0, "session.start", {"sessionId": "cp-1", "copilotVersion": "1.0.40", "producer": "copilot-agent"}),
            ev(1, "session.model_change", {"newModel": "claude-sonnet-4.6"}),
            ev(2, "system.message", {"role": "system", "content": "You are Copilot."}),
            ev(3, "user.message", {"content": "look", "transformedContent": "<t>look</t>"}),
            ev(4, "assistant.message", {"messageId": "m1", "content": "", "toolRequests": [
                {"toolCallId": "c1", "name": "view", "arguments": {"path": "."}}], "outputTokens": 20}),
            ev(5, "tool.execution_complete", {"toolCallId": "c1", "success": True, "result": {"content": "a b"}}),
            ev(6, "assistant.message", {"messageId": "m2", "content": "two files", "toolRequests": [], "outputTokens": 5}),
            ev(7, "session.compaction_start", {"trigger": "threshold", "currentTokens": 9000, "tokenLimit": 10000}),
            ev(8, "session.compaction_complete", {"success": True, "preCompactionTokens": 9000, "summaryContent": "we looked",
                                                  "preCompactionMessagesLength": 4, "messagesRemoved": 3}),
            ev(9, "user.message", {"content": "more"}),
            ev(10, "assistant.message", {"messageId": "m3", "content": "sure", "outputTokens": 3}),
            ev(11, "user.message", {"content": "sub task"}, agentId="sub1"),
            ev(12, "assistant.message", {"messageId": "m4", "content": "sub done"}, agentId="sub1")]
    main, sub = convlab.read(lines(tmp_path / "events.jsonl", rows), progress=False)
    path = main.path()
    assert [(a["kind"], a.get("copied_from")) for a in path[:2]] == [("summary", None), ("message", "e006x")]
    assert path[0]["replaces"] == "e006x" and path[0]["metadata"]["compaction"]["trigger"] == "threshold"
    assert (sub.id, [a["content"] for a in sub.path()][-1]) == ("cp-1/agent-sub1", [{"type": "text", "text": "sub done"}])
    assert_replays_exactly(main)
    assert_replays_exactly(sub)


# -- the branching export (issue 35: "78 empty user roots with 0 branch points") ------------------------


def test_the_real_branching_export_shape_reads_with_its_branches(tmp_path):
    p = tmp_path / "export.json"
    p.write_text(json.dumps(branching_export()))
    [c] = convlab.read(p, progress=False)
    g = c.tree
    assert (c.format, len(c), len(c.roots)) == ("generic", 175, 1)
    assert sum(1 for n in g if g.out_degree(n) > 1) == 29
    assert Counter(a["role"] for _, a in g.nodes(data=True)).keys() == {"user", "assistant"}
    assert all(a["content"] == f"message {a['id'][1:]}" for _, a in g.nodes(data=True))  # the text under message


@pytest.mark.parametrize("role", ["Human", "AI", "model", "bot", "Assistant"])
def test_a_small_real_shaped_export_reads_with_each_role_name(tmp_path, role):
    shape = {"messages": [{"id": "1", "parentMessageId": None, "role": "User" if role != "Human" else role, "message": "hi"},
                          {"id": "2", "parentMessageId": "1", "role": "Claude" if role == "Human" else role, "body": "hello"},
                          {"id": "3", "parentMessageId": "1", "role": "Claude" if role == "Human" else role, "text": "hey"}]}
    p = tmp_path / "small.json"
    p.write_text(json.dumps(shape))
    [c] = convlab.read(p, progress=False)
    assert [(a["role"], a["content"]) for a in (c.tree.nodes[n] for n in ("1", "2", "3"))] == [
        ("user", "hi"), ("assistant", "hello"), ("assistant", "hey")]


def test_an_export_naming_its_assistant_in_a_way_convlab_does_not_know_is_refused(tmp_path):
    """Never 78 empty roots and exit 0: every assistant message left out is a ReadError naming the format."""
    p = tmp_path / "export.json"
    p.write_text(json.dumps(branching_export(assistant="Narrator")))
    with pytest.warns(convlab.ReadWarning, match="unknown role 'Narrator'"):  # what it left out, as any repair is said
        with pytest.raises(convlab.ReadError, match=r"does not read as generic: no assistant message was left \(node 'm1': "
                                                    r"unknown role 'Narrator'"):
            convlab.read(p, progress=False)


def _moved(export: dict, move, which=lambda m: True) -> dict:
    """The branching export with the text of each message ``which`` picks moved by ``move(record, text)``."""
    for m in export["messages"]:
        if which(m):
            move(m, m.pop("message"))
    return export


def _unknown_key(m, text):
    m["msg"] = text


def _nested(m, text):
    m["message"] = {"content": text}


@pytest.mark.parametrize("move", [_unknown_key, _nested])
def test_an_export_whose_text_convlab_does_not_find_is_refused_not_read_empty(tmp_path, move):
    """Issue 35: "a read that leaves out most of a file's messages (or all of one role) is a ReadError naming the
    format it tried". The 175-message export with its text under a key the importer does not read (``msg``) or
    nested in an object (``{"message": {"content": ...}}``) read as 175 empty messages, exit 0 and no warning; now
    it is refused, naming the format, how many messages read empty and the first."""
    p = tmp_path / "export.json"
    p.write_text(json.dumps(_moved(branching_export(), move)))
    with pytest.warns(convlab.ReadWarning, match=r"node 'm0': no text under content, text, message or body; read empty"):
        with pytest.raises(convlab.ReadError, match=r"export\.json: does not read as generic: 175 of its 175 messages read empty, "
                                                    r"their text not where generic keeps it \(node 'm0' the first\)"):
            convlab.read(p, progress=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert convlab.read(tmp_path, progress=False) == []  # in a folder: said, and the walk goes on
    assert any("does not read as generic: 175 of its 175 messages read empty" in str(w.message) for w in said)
    p.write_text(json.dumps(_moved(branching_export(), move, lambda m: m["role"] == "Claude")))  # one speaker's
    with pytest.warns(convlab.ReadWarning), pytest.raises(convlab.ReadError, match=r"does not read as generic: 87 of its 87 "
                                                                                   r"assistant messages read empty, their text "
                                                                                   r"not where generic keeps it \(node 'm1' the first\)"):
        convlab.read(p, progress=False)


def test_messages_the_log_wrote_empty_or_a_few_whose_text_is_elsewhere_are_read(tmp_path):
    """Logs do hold empty messages (pi's aborted replies, ChatGPT's empty system message; a real Claude.ai export
    blanked upstream is 547 empty messages of its 557, read in test_importers_formats): a message the log wrote
    empty is no misread, and a few whose text is elsewhere are read empty and said, the file kept."""
    export = branching_export()
    for m in export["messages"][1:]:
        m["message"] = ""  # every message but the first, written empty
    p = tmp_path / "export.json"
    p.write_text(json.dumps(export))
    with warnings.catch_warnings():
        warnings.simplefilter("error", convlab.ReadWarning)
        [c] = convlab.read(p, progress=False)
    assert len(c) == 175 and c.no_text == [] and sum(1 for _, a in c.tree.nodes(data=True) if a["content"] == "") == 174
    p.write_text(json.dumps(_moved(branching_export(), _nested, lambda m: int(m["id"][1:]) % 20 == 7)))  # 9 of 175
    with pytest.warns(convlab.ReadWarning, match=r"node 'm7': no text under content, text, message or body; read empty"):
        [c] = convlab.read(p, progress=False)
    assert len(c) == 175 and c.no_text == [f"m{i}" for i in range(7, 175, 20)]
    assert [c.tree.nodes[n]["content"] for n in c.no_text] == [""] * 9


# -- Cline / Roo Code: a task folder generated from the layout in cline/cline's source -------------------------

def test_a_cline_task_folder_reads_as_one_conversation_with_usage_per_call(tmp_path):
    from replay_invariant import assert_replays_exactly

    task = cline_task(tmp_path / "tasks" / "1760000000000")
    convs = convlab.read(tmp_path, progress=False)  # the tasks folder: each task once, its two files together
    assert [(c.format, c.id) for c in convs] == [("cline", "1760000000000")]
    c = convs[0]
    assert [a["role"] for a in c.path()] == ["user", "assistant", "tool", "user", "assistant", "tool", "user", "assistant"]
    replies = [a for a in c.path() if a["role"] == "assistant"]
    assert [input_tokens(a["usage"]) for a in replies] == [12003, 12204, 12702]  # tokensIn + cacheReads + cacheWrites
    assert [a["usage"]["cache_read_input_tokens"] for a in replies] == [0, 12000, 12200]
    assert [a["usage"]["output_tokens"] for a in replies] == [150, 80, 40] and replies[0]["metadata"]["model"] == "claude-sonnet-4-5"
    assert c.tree.nodes["m2"]["tool_call_id"] == "toolu_1" and replies[0]["tool_calls"][0]["id"] == "toolu_1"
    for name in ("api_conversation_history.json", "ui_messages.json"):  # either file reads the task
        [again] = convlab.read(task / name, progress=False)
        assert again.path() == c.path()
    r = assert_replays_exactly(c)
    assert [x["read"] for x in r.calls] == [12003, 12204, 12702]
    assert math.isfinite(measures(convlab.replay(c, model="claude-sonnet-4-5"))["err_cached_mean"])


def test_cline_metrics_on_the_history_and_a_ui_file_alone(tmp_path):
    [c] = convlab.read(cline_task(tmp_path / "t1", metrics=True) / "api_conversation_history.json", progress=False)
    assert [input_tokens(a["usage"]) for a in c.path() if a["role"] == "assistant"] == [12003, 12204, 12702]
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    (alone / "ui_messages.json").write_bytes((tmp_path / "t1" / "ui_messages.json").read_bytes())
    [ui] = convlab.read(alone / "ui_messages.json", progress=False)  # what the person saw, with its usage
    assert (ui.format, ui.metadata["read_from"]) == ("cline", "ui_messages.json")
    assert [a["role"] for a in ui.path()] == ["user", "assistant", "assistant", "user", "assistant"]
    assert [input_tokens(a["usage"]) for a in ui.path() if a["role"] == "assistant"] == [12003, 12204, 12702]
    assert ui.path()[1]["tool_calls"][0]["function"]["name"] == "tool"


def test_cline_usage_rows_that_do_not_pair_with_the_replies_are_left_out_and_said(tmp_path):
    task = cline_task(tmp_path / "t2", usage_rows=2)
    with pytest.warns(convlab.ReadWarning, match=r"ui_messages\.json holds 2 calls' usage for 3 replies: their usage left out"):
        [c] = convlab.read(task / "api_conversation_history.json", progress=False)
    assert all(a.get("usage") is None for a in c.path())


# -- each agent's default folder --------------------------------------------------------------------


def _link(target: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def test_each_agents_default_folder_finds_every_session(tmp_path):
    """Point read (so show and tune) at ~/.codex/sessions, ~/.gemini/tmp, ~/.pi/agent/sessions,
    ~/.copilot/session-state or a Cline tasks folder: every session in it is read, once, and what else the agents
    keep there (Gemini CLI's logs.json of prompts, Copilot's workspace.yaml) is passed over quietly."""
    data, home = require(), tmp_path / "home"
    codex = sorted((data / "codex").iterdir())
    for i, f in enumerate(codex):
        _link(f, home / ".codex" / "sessions" / "2026" / "02" / f"{20 + i}" / f"rollout-{i}.jsonl")
    _link(data / "gemini_cli" / "gemini.jsonl", home / ".gemini" / "tmp" / "9da8b3" / "chats" / "session-2026-04-23T12-52-0ab8.jsonl")
    _link(data / "gemini_cli" / "test_conversation_gemini.json", home / ".gemini" / "tmp" / "ab14fe" / "chats" / "session-1.json")
    (home / ".gemini" / "tmp" / "9da8b3" / "logs.json").write_text(json.dumps(
        [{"sessionId": "0ab8", "messageId": 0, "type": "user", "message": "/init", "timestamp": "2026-04-23T12:53:05Z"}]))
    (home / ".gemini" / "tmp" / "9da8b3" / "checkpoint-before-edit.json").write_text(json.dumps({"history": [
        {"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "hello"}]}]}))
    for f in sorted((data / "pi").iterdir()):
        _link(f, home / ".pi" / "agent" / "sessions" / "--Users-me-work--" / f"2025-12-09T00-53-29_{f.stem}.jsonl")
    _link(data / "copilot_cli" / "copilot.jsonl", home / ".copilot" / "session-state" / "96ef38f0" / "events.jsonl")
    (home / ".copilot" / "session-state" / "96ef38f0" / "workspace.yaml").write_text("cwd: /home/me\n")
    tasks = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    for task in ("1760000000001", "1760000000002"):
        cline_task(tasks / task)
    expect = {
        home / ".codex" / "sessions": {stat(f"codex/{f.name}")["session_id"] for f in codex},
        home / ".gemini" / "tmp": {"0ab84937-9fe7-4284-986a-33c832af0b6a", "8a20078e-2d5e-4f81-a640-9b879bbb7e6d", "before-edit"},
        home / ".pi" / "agent" / "sessions": {stat("pi/before-compaction.jsonl")["session_id"], stat("pi/large-session.jsonl")["session_id"]},
        home / ".copilot" / "session-state": {"96ef38f0-9d09-45c3-8124-6448c36090ed"},
        tasks: {"1760000000001", "1760000000002"},
    }
    for folder, ids in expect.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error", convlab.ReadWarning)  # nothing passed over loudly, nothing repaired
            convs = convlab.read(folder, progress=False)
        assert sorted(c.id for c in convs) == sorted(ids), folder


# -- Anthropic Managed Agents, Cursor (OpenCode: tests/test_importers_opencode.py) -----------------------------------------------------------------


def test_a_managed_agents_event_stream_reads_a_reply_per_model_request(tmp_path):
    from replay_invariant import assert_replays_exactly

    events = managed_agent_events()
    [c] = convlab.read(lines(tmp_path / "session.jsonl", events), progress=False)
    assert c.format == "managed_agents"
    path = c.path()
    assert [(a["role"], a["kind"]) for a in path] == [("user", "summary"), ("user", "message"), ("assistant", "message")]
    assert path[0]["replaces"] == "sevt_9_0"  # the compaction replaced what the agent had read
    before = [c.tree.nodes[n] for n in ("sevt_2_0", "sevt_4_0", "sevt_7_0", "sevt_9_0")]
    assert [a["role"] for a in before] == ["user", "assistant", "tool", "assistant"]
    assert before[1]["tool_calls"][0]["id"] == "sevt_5_0" and before[2]["tool_call_id"] == "sevt_5_0"
    assert [input_tokens(c.tree.nodes[n]["usage"]) for n in ("sevt_4_0", "sevt_9_0", "sevt_15_0")] == [150, 2110, 630]
    r = assert_replays_exactly(c)
    assert r.compactions == [{"id": r.map["sevt_12_0"], "call": 3}]
    page = tmp_path / "page.json"  # what events.list returns, saved as it came
    page.write_text(json.dumps({"data": events, "has_more": False}))
    [again] = convlab.read(page, progress=False)
    assert again.path() == c.path()


def test_a_cursor_transcript_is_refused_by_name(tmp_path):
    rows = [{"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nfix it\n</user_query>"}]}},
            {"role": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}}]
    (tmp_path / "agent-transcripts").mkdir()
    p = lines(tmp_path / "agent-transcripts" / "0b1c.jsonl", rows)
    with pytest.raises(convlab.ReadError, match=r"0b1c\.jsonl: looks like a Cursor agent transcript: not read"):
        convlab.read(p, progress=False)
    (tmp_path / "agent-transcripts" / "chat.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    with pytest.warns(convlab.ReadWarning, match=r"looks like a Cursor agent transcript: not read.*; passed over"):
        convs = convlab.read(tmp_path, progress=False)  # in a folder: named and passed over, the others read
    assert [c.format for c in convs] == ["openai"]


def test_pi_s_own_dollars_are_genai_prices_on_the_usage_as_read():
    """pi logs each call's cost: genai-prices on the usage as convlab reads it (uncached input, cache reads and
    writes apart, output) gives the same dollars, call by call: the split is the provider's."""
    from convlab.replaying.prices import Prices

    c = read_one(PI)
    prices = Prices("claude-opus-4-5")
    for a in calls_with_usage(c):
        u = a["usage"]
        ours = prices.usd(read=input_tokens(u), cached=u["cache_read_input_tokens"], cache_write=u["cache_creation_input_tokens"],
                          output=u["output_tokens"])
        assert math.isclose(ours, u["cost"], rel_tol=1e-6, abs_tol=1e-9), (a["id"], ours, u["cost"])
    assert round(sum(a["usage"]["cost"] for a in calls_with_usage(c)), 2) == 42.60
