"""Generated coding-agent logs, in the layouts the agents' own sources define, for what no shared session holds
(pi's v3 tree, a Codex compaction without replacement history, a Cline task folder, the branching export issue 35
names). Used by tests/test_importers_agents.py and tests/test_replay_invariant.py."""

from __future__ import annotations

import json
from pathlib import Path


def lines(path: Path, rows: list[dict]) -> Path:
    """``rows`` as the JSON lines of ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def pi_v3_rows() -> list[dict]:
    """A pi v3 session: a branch at u2 (the person went back and asked again), a branch summary where they came
    back, a label, a compaction on the second branch keeping from u2b, a model change, a custom message."""
    t = lambda s: f"2025-12-01T10:00:{s:02d}Z"  # noqa: E731
    usage = lambda n: {"input": n, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": n + 10}  # noqa: E731
    reply = lambda text, n: {"role": "assistant", "content": [{"type": "text", "text": text}], "model": "claude-sonnet-4-5",  # noqa: E731
                             "provider": "anthropic", "usage": usage(n), "stopReason": "stop"}
    user = lambda text: {"role": "user", "content": [{"type": "text", "text": text}]}  # noqa: E731
    return [
        {"type": "session", "version": 3, "id": "s-v3", "timestamp": t(0), "cwd": "/w"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": t(1), "message": user("first")},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": t(2), "message": reply("one", 100)},
        {"type": "message", "id": "u2", "parentId": "a1", "timestamp": t(3), "message": user("second")},
        {"type": "message", "id": "a2", "parentId": "u2", "timestamp": t(4), "message": {
            "role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                             {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}],
            "model": "claude-sonnet-4-5", "usage": usage(200), "stopReason": "toolUse"}},
        {"type": "message", "id": "r1", "parentId": "a2", "timestamp": t(5), "message": {
            "role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "x!"}], "isError": False}},
        {"type": "label", "id": "l1", "parentId": "r1", "timestamp": t(6), "targetId": "a1", "label": "start"},
        {"type": "branch_summary", "id": "b1", "parentId": "a1", "timestamp": t(7), "fromId": "u2", "summary": "read x"},
        {"type": "model_change", "id": "mc", "parentId": "b1", "timestamp": t(8), "provider": "anthropic", "modelId": "claude-opus-4-5"},
        {"type": "message", "id": "u2b", "parentId": "mc", "timestamp": t(9), "message": user("second, again")},
        {"type": "message", "id": "a2b", "parentId": "u2b", "timestamp": t(10), "message": reply("two", 300)},
        {"type": "compaction", "id": "c1x", "parentId": "a2b", "timestamp": t(11), "summary": "we talked",
         "firstKeptEntryId": "u2b", "tokensBefore": 310},
        {"type": "custom_message", "id": "cm", "parentId": "c1x", "timestamp": t(12), "customType": "note", "content": "from a hook",
         "display": True},
        {"type": "message", "id": "u3", "parentId": "cm", "timestamp": t(13), "message": user("third")},
        {"type": "message", "id": "a3", "parentId": "u3", "timestamp": t(14), "message": reply("three", 90)},
        {"type": "session_info", "id": "si", "parentId": "a3", "timestamp": t(15), "name": "a v3 session"},
    ]


def codex_rows(compacted: dict) -> list[dict]:
    """A Codex rollout of two typed prompts (0.39's order: a call's token_count before its items), an injected
    environment context, and a compaction."""
    t = lambda s: f"2025-09-19T09:00:{s:02d}Z"  # noqa: E731
    row = lambda s, kind, payload: {"timestamp": t(s), "type": kind, "payload": payload}  # noqa: E731
    msg = lambda role, text: {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}  # noqa: E731
    count = lambda total, n: {"type": "token_count", "info": {  # noqa: E731
        "total_token_usage": {"input_tokens": total, "cached_input_tokens": 0, "output_tokens": 5},
        "last_token_usage": {"input_tokens": n, "cached_input_tokens": n // 2, "output_tokens": 5}}}
    return [
        row(0, "session_meta", {"id": "cx-1", "cli_version": "0.39.0", "cwd": "/w"}),
        row(1, "response_item", msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")),
        row(1, "response_item", msg("user", "first question")),
        row(2, "turn_context", {"model": "gpt-5"}),
        row(3, "event_msg", count(1000, 1000)),
        row(3, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "content": None}),
        row(3, "response_item", {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"}),
        row(4, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
        row(5, "turn_context", {"model": "gpt-5"}),
        row(6, "event_msg", count(2200, 1200)),
        row(6, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "one file"}]}),
        row(7, "response_item", msg("user", "second question")),
        row(8, "compacted", compacted),
        row(9, "turn_context", {"model": "gpt-5"}),
        row(10, "event_msg", count(2500, 300)),
        row(10, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
    ]


def branching_export(n: int = 175, branch_points: int = 29, assistant: str = "Claude") -> dict:
    """id/parentMessageId records, roles User and ``assistant``, the text under ``message``: a chain in which every
    sixth message is a second reply to an earlier one, until ``branch_points`` messages have two children."""
    messages, forks, user = [], 0, {}
    for i in range(n):
        parent = None if i == 0 else f"m{i - 1}"
        if i % 6 == 5 and forks < branch_points:
            parent, forks = f"m{i - 2}", forks + 1  # a regenerated reply, or an edit: a sibling of m{i - 1}
        user[f"m{i}"] = parent is None or not user[parent]
        role = "User" if user[f"m{i}"] else assistant
        messages.append({"id": f"m{i}", "parentMessageId": parent, "role": role, "message": f"message {i}",
                         "created_at": f"2025-01-01T10:{i // 60:02d}:{i % 60:02d}Z"})
    return {"title": "a branching chat", "messages": messages}


#: cline/cline@21cb8d2525bcedf1f4b6890b27a74a14fe7451e4: apps/vscode/src/core/storage/disk.ts (GlobalFileNames:
#: api_conversation_history.json, ui_messages.json, task_metadata.json; getGlobalStorageDir("tasks", taskId)),
#: apps/vscode/src/shared/messages/content.ts and metrics.ts (ClineStorageMessage: role, content, ts, modelInfo,
#: metrics {tokens {prompt, completion, cached}, cost}), apps/vscode/src/shared/ExtensionMessage.ts (ClineMessage
#: {ts, type, say|ask, text}; ClineApiReqInfo {request, tokensIn, tokensOut, cacheWrites, cacheReads, cost}; the SDK
#: path writes an api_req_started row as a request starts and another with its usage, apps/vscode/src/sdk/message-translator.ts).
CLINE_SOURCE = "cline/cline@21cb8d2525bcedf1f4b6890b27a74a14fe7451e4"


def cline_task(folder: Path, *, metrics: bool = False, usage_rows: int = 3) -> Path:
    """A Cline task folder: a task, a read_file call, a completion the person answered with feedback, the last
    reply; each of the three requests has its usage row in ui_messages.json (``usage_rows`` of them)."""
    folder.mkdir(parents=True)
    ts = 1_760_000_000_000
    env = {"type": "text", "text": "<environment_details>\n# VSCode Visible Files\nsrc/a.ts\n</environment_details>"}
    info = {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"}
    tokens = [(3, 0, 12000, 150), (4, 12000, 200, 80), (2, 12200, 500, 40)]  # in (uncached), cache read, cache write, out
    reply = lambda k, blocks: {"role": "assistant", "content": blocks, "ts": ts + 1000 * (2 * k + 1), "modelInfo": info,  # noqa: E731
                               **({"metrics": {"tokens": {"prompt": sum(tokens[k][:3]), "completion": tokens[k][3],
                                                          "cached": tokens[k][1]}, "cost": 0.01}} if metrics else {})}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nexplain src/a.ts\n</task>"}, env], "ts": ts},
        reply(0, [{"type": "text", "text": "Let me read it."},
                  {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/a.ts"}}]),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "export const a = 1"}, env],
         "ts": ts + 2000},
        reply(1, [{"type": "tool_use", "id": "toolu_2", "name": "attempt_completion", "input": {"result": "It exports a."}}]),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "The user gave feedback"},
                                     {"type": "text", "text": "<feedback>\nand b?\n</feedback>"}, env], "ts": ts + 4000},
        reply(2, [{"type": "text", "text": "There is no b."}]),
    ]
    say = lambda k, kind, text, **kw: {"ts": ts + 1000 * k + 10, "type": "say", "say": kind, "text": text, **kw}  # noqa: E731
    started = lambda k: say(2 * k + 1, "api_req_started", json.dumps({"request": "..."}))  # noqa: E731
    usage = lambda k: say(2 * k + 1, "api_req_started", json.dumps(  # noqa: E731
        {"tokensIn": tokens[k][0], "cacheReads": tokens[k][1], "cacheWrites": tokens[k][2], "tokensOut": tokens[k][3], "cost": 0.01}),
        modelInfo=info)
    ui = [say(0, "task", "explain src/a.ts"),
          started(0), usage(0), say(1, "text", "Let me read it."),
          {"ts": ts + 1020, "type": "ask", "ask": "tool", "text": json.dumps({"tool": "readFile", "path": "src/a.ts"})},
          started(1), usage(1), say(3, "completion_result", "It exports a."), say(4, "user_feedback", "and b?"),
          started(2), usage(2), say(5, "text", "There is no b.")]
    ui = [r for r in ui if not (r.get("say") == "api_req_started" and "tokensIn" in r["text"]
                                and [u["ts"] for u in ui if "tokensIn" in u.get("text", "")].index(r["ts"]) >= usage_rows)]
    (folder / "api_conversation_history.json").write_text(json.dumps(history))
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    (folder / "task_metadata.json").write_text(json.dumps({"files_in_context": [], "model_usage": [
        {"ts": ts, "model_id": "claude-sonnet-4-5", "model_provider_id": "anthropic", "mode": "act"}]}))
    return folder




#: anthropics/anthropic-sdk-typescript@bfa9197f0182084941052be9752c948638421601: src/resources/beta/sessions/events.ts
#: (BetaManagedAgents*Event: user.message, span.model_request_start/end with model_usage, agent.message,
#: agent.tool_use, agent.tool_result with tool_use_id, agent.thread_context_compacted, session.status_idle).
MANAGED_AGENTS_SOURCE = "anthropics/anthropic-sdk-typescript@bfa9197f0182084941052be9752c948638421601"


def managed_agent_events() -> list[dict]:
    """A Managed Agents session's events: a task, a model request that calls a tool, its result, a second request,
    a compaction, a second prompt and its request; status events between."""
    t = lambda s: f"2026-05-01T10:00:{s:02d}Z"  # noqa: E731
    usage = lambda n, read: {"input_tokens": n, "output_tokens": 20, "cache_read_input_tokens": read,  # noqa: E731
                             "cache_creation_input_tokens": 100}
    text = lambda s: [{"type": "text", "text": s}]  # noqa: E731
    ev = lambda n, kind, **kw: {"id": f"sevt_{n}_0", "type": kind, "processed_at": t(n), **kw}  # noqa: E731
    return [
        ev(1, "session.status_running"),
        ev(2, "user.message", content=text("count the files")),
        ev(3, "span.model_request_start"),
        ev(4, "agent.message", content=text("I'll list them.")),
        ev(5, "agent.tool_use", name="bash", input={"command": "ls | wc -l"}),
        ev(6, "span.model_request_end", is_error=False, model_request_start_id="sevt_3_0", model_usage=usage(50, 0)),
        ev(7, "agent.tool_result", tool_use_id="sevt_5_0", content=text("12")),
        ev(8, "span.model_request_start"),
        ev(9, "agent.message", content=text("There are 12 files.")),
        ev(10, "span.model_request_end", is_error=False, model_request_start_id="sevt_8_0", model_usage=usage(10, 2000)),
        ev(11, "session.status_idle", stop_reason={"type": "end_turn"}),
        ev(12, "agent.thread_context_compacted"),
        ev(13, "user.message", content=text("and the folders?")),
        ev(14, "span.model_request_start"),
        ev(15, "agent.message", content=text("Three.")),
        ev(16, "span.model_request_end", is_error=False, model_request_start_id="sevt_14_0", model_usage=usage(30, 500)),
    ]
