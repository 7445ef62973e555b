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


#: anomalyco/opencode (formerly sst/opencode), read in the stored code index:
#: packages/opencode/src/storage/storage.ts@00d1fee82d432a8d2ad4344e22461857b03be1eb (a key is a path under
#: <data>/storage, one JSON file per key) and src/session/index.ts@0002b1fa7df4460349692a647b6fa61d3cc58f12 (keys
#: ["session", projectID, id], ["message", sessionID, id], ["part", messageID, id]; getUsage: tokens.input without the
#: cached input, cache.read and cache.write apart, reasoning apart); src/session/message-v2.ts@007a9409bafea06d6b9084ff1f6d1fe9f5e3a803
#: (User and Assistant infos; text, reasoning, tool (callID, state), step-start, step-finish (tokens, cost) and
#: compaction (auto, overflow, tail_start_id) parts; toModelMessages; filterCompacted); src/session/session.sql.ts@063e8306d9895af9bdd175306cfa4fa3291fd83a
#: (tables session, message and part, their data the JSON less its ids), src/storage/db.ts@032cb74b095f4ff07de9fb93f5d36973623e5fa5
#: (opencode.db in the data folder) and src/storage/json-migration.ts@062aa8c024a00b7348dd3160c0b4fbbfce074ee2
#: (the storage moved into the database: ids from the file paths, the message and part JSON less their ids as data).
OPENCODE_SOURCE = "anomalyco/opencode: src/storage/storage.ts, src/session/message-v2.ts, src/session/session.sql.ts"


def opencode_sessions(tail: str | None = None) -> dict:
    """Two OpenCode sessions as OpenCode writes them: ``ses_1`` (a prompt with an attached file's synthetic text, a
    reply of two steps (reasoning, a read call and its result, then text), a second prompt, a failed reply, a reply
    whose edit call fails, an automatic compaction (``tail_start_id`` = ``tail``) and its summary, a last turn) and
    ``ses_2``, a sub-agent's session under it. ``{"sessions": [info], "messages": {sid: [info]}, "parts": {mid: [part]}}``."""
    t0 = 1_760_000_000_000
    tokens = lambda i, o, r, read, write: {"input": i, "output": o, "reasoning": r, "cache": {"read": read, "write": write}}  # noqa: E731
    user = lambda mid, sid, k: {"id": mid, "sessionID": sid, "role": "user", "time": {"created": t0 + 1000 * k},  # noqa: E731
                                "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}

    def reply(mid, sid, parent, k, **kw):
        return {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": t0 + 1000 * k, "completed": t0 + 1000 * k + 500},
                "parentID": parent, "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
                "path": {"cwd": "/w", "root": "/w"}, "cost": 0.02, "tokens": tokens(0, 0, 0, 0, 0), "finish": "stop", **kw}

    def part(pid, mid, sid, kind, **kw):
        return {"id": pid, "messageID": mid, "sessionID": sid, "type": kind, **kw}

    def finish(pid, mid, sid, t, cost=0.01):
        return part(pid, mid, sid, "step-finish", reason="stop", cost=cost, tokens=t)

    def tool(pid, mid, sid, call, name, args, state):
        return part(pid, mid, sid, "tool", callID=call, tool=name, state={"input": args, "time": {"start": t0, "end": t0 + 1}, **state})

    s1, s2 = "ses_1", "ses_2"
    compaction = {"auto": True, **({"tail_start_id": tail} if tail else {})}
    messages = {s1: [user("msg_01", s1, 1), reply("msg_02", s1, "msg_01", 2), user("msg_03", s1, 3),
                     reply("msg_04", s1, "msg_03", 4, error={"name": "APIError", "data": {"message": "overloaded", "isRetryable": True}},
                           finish=None),
                     reply("msg_05", s1, "msg_03", 5), user("msg_06", s1, 6), reply("msg_07", s1, "msg_06", 7, summary=True, mode="compaction"),
                     user("msg_08", s1, 8), reply("msg_09", s1, "msg_08", 9)],
                s2: [user("msg_21", s2, 10), reply("msg_22", s2, "msg_21", 11)]}
    parts = {
        "msg_01": [part("prt_011", "msg_01", s1, "text", text="why does parse() fail?"),
                   part("prt_012", "msg_01", s1, "text", text="Called the Read tool with the following input: parser.py", synthetic=True),
                   part("prt_013", "msg_01", s1, "file", mime="text/plain", filename="parser.py", url="file:///w/parser.py")],
        "msg_02": [part("prt_021", "msg_02", s1, "step-start"),
                   part("prt_022", "msg_02", s1, "reasoning", text="Read it first.", time={"start": t0, "end": t0 + 1}),
                   part("prt_023", "msg_02", s1, "text", text="Let me read it."),
                   tool("prt_024", "msg_02", s1, "call_1", "read", {"filePath": "/w/parser.py"},
                        {"status": "completed", "output": "def parse(): return None", "title": "parser.py", "metadata": {}}),
                   finish("prt_025", "msg_02", s1, tokens(100, 20, 5, 1000, 50)),
                   part("prt_026", "msg_02", s1, "step-start"),
                   part("prt_027", "msg_02", s1, "text", text="It returns None."),
                   finish("prt_028", "msg_02", s1, tokens(30, 10, 0, 1150, 0))],
        "msg_03": [part("prt_031", "msg_03", s1, "text", text="fix it")],
        "msg_04": [part("prt_041", "msg_04", s1, "step-start"), part("prt_042", "msg_04", s1, "text", text="I will fi")],
        "msg_05": [part("prt_051", "msg_05", s1, "step-start"),
                   tool("prt_052", "msg_05", s1, "call_2", "edit", {"filePath": "/w/parser.py"},
                        {"status": "error", "error": "file changed since it was read"}),
                   finish("prt_053", "msg_05", s1, tokens(40, 15, 0, 1200, 0)),
                   part("prt_054", "msg_05", s1, "step-start"),
                   part("prt_055", "msg_05", s1, "text", text="Fixed."),
                   finish("prt_056", "msg_05", s1, tokens(20, 5, 0, 1300, 0))],
        "msg_06": [part("prt_061", "msg_06", s1, "compaction", **compaction)],
        "msg_07": [part("prt_071", "msg_07", s1, "step-start"), part("prt_072", "msg_07", s1, "text", text="We fixed parse()."),
                   finish("prt_073", "msg_07", s1, tokens(1500, 40, 0, 0, 0))],
        "msg_08": [part("prt_081", "msg_08", s1, "text", text="thanks")],
        "msg_09": [part("prt_091", "msg_09", s1, "step-start"), part("prt_092", "msg_09", s1, "text", text="You're welcome."),
                   finish("prt_093", "msg_09", s1, tokens(10, 5, 0, 100, 0))],
        "msg_21": [part("prt_211", "msg_21", s2, "text", text="find the tests")],
        "msg_22": [part("prt_221", "msg_22", s2, "step-start"), part("prt_222", "msg_22", s2, "text", text="tests/test_parser.py"),
                   finish("prt_223", "msg_22", s2, tokens(50, 8, 0, 0, 0))],
    }
    sessions = [{"id": s1, "projectID": "p1", "directory": "/w", "title": "fix the parser", "version": "1.0.0",
                 "time": {"created": t0, "updated": t0 + 9000}},
                {"id": s2, "projectID": "p1", "parentID": s1, "directory": "/w", "title": "find the tests (@general subagent)",
                 "version": "1.0.0", "time": {"created": t0 + 10_000, "updated": t0 + 11_000}}]
    return {"sessions": sessions, "messages": messages, "parts": parts}


def opencode_storage(data: Path, tail: str | None = None) -> Path:
    """OpenCode's data folder with the sessions of ``opencode_sessions`` in its JSON storage (``<data>/storage``,
    pretty-printed as Storage.write writes); the storage folder."""
    store, held = data / "storage", opencode_sessions(tail)

    def write(path: Path, value: dict) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2))

    for s in held["sessions"]:
        write(store / "session" / s["projectID"] / f"{s['id']}.json", s)
    for sid, messages in held["messages"].items():
        for m in messages:
            write(store / "message" / sid / f"{m['id']}.json", m)
    for mid, parts in held["parts"].items():
        for p in parts:
            write(store / "part" / mid / f"{p['id']}.json", p)
    write(store / "project" / "p1.json", {"id": "p1", "worktree": "/w", "vcs": "git", "time": {"created": 0}})
    (store / "migration").write_text("2")
    return store


def opencode_database(path: Path, tail: str | None = None) -> Path:
    """OpenCode's database (``session.sql.ts``'s session, message and part tables; the data column the JSON less its
    ids, as json-migration.ts moves it) holding the sessions of ``opencode_sessions``."""
    import sqlite3

    held = opencode_sessions(tail)
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id), workspace_id text, parent_id text,
            slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL, version text NOT NULL, share_url text,
            summary_additions integer, summary_deletions integer, summary_files integer, summary_diffs text,
            cost real NOT NULL DEFAULT 0, tokens_input integer NOT NULL DEFAULT 0, tokens_output integer NOT NULL DEFAULT 0,
            tokens_reasoning integer NOT NULL DEFAULT 0, tokens_cache_read integer NOT NULL DEFAULT 0,
            tokens_cache_write integer NOT NULL DEFAULT 0, revert text, permission text, agent text, model text,
            time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer, time_archived integer);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
            session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE todo (session_id text NOT NULL, content text NOT NULL, status text NOT NULL, priority text NOT NULL,
            position integer NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, PRIMARY KEY (session_id, position));
    """)
    con.execute("INSERT INTO project VALUES ('p1', '/w', 0, 0)")
    for s in held["sessions"]:
        con.execute("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (s["id"], s["projectID"], s.get("parentID"), "", s["directory"],
                                                           s["title"], s["version"], s["time"]["created"], s["time"]["updated"]))
    strip = lambda value, *keys: json.dumps({k: v for k, v in value.items() if k not in keys})  # noqa: E731
    for sid, messages in held["messages"].items():
        for m in messages:
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                        (m["id"], sid, m["time"]["created"], m["time"]["created"], strip(m, "id", "sessionID")))
    for mid, parts in held["parts"].items():
        for p in parts:
            con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (p["id"], mid, p["sessionID"], 0, 0,
                                                                      strip(p, "id", "messageID", "sessionID")))
    con.commit()
    con.close()
    return path
