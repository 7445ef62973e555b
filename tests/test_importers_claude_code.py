"""Claude Code transcripts: split replies merged, tool results, compaction, usage, sidechains."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

import convlab
from convlab.tokens import content_chars
from convlab.tree import input_tokens
from convlab.tuning.measures import measures

from realdata import real, require, stats  # noqa: F401  (real: the fixture)

SESSION = "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
SUBAGENTS = "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents"
FILES = [
    SESSION,
    "claude_code/short.jsonl",
    "claude_code/subagent.jsonl",
    "claude_code/tool_heavy.jsonl",
    f"{SUBAGENTS}/agent-aac57f5.jsonl",
    f"{SUBAGENTS}/agent-acompact-946d2b.jsonl",
]


def rows_of(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def tool_results(row: dict) -> int:
    content = row["message"]["content"]
    return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result") if isinstance(content, list) else 0


@pytest.mark.realdata
@pytest.mark.parametrize("name", FILES)
def test_one_reply_per_message_id_and_user_and_tool_messages_as_in_the_rows(name):
    path = require() / name
    rows = rows_of(path)
    assert len(rows) == stats()[name]["ground_truth"]["lines"]
    [c] = convlab.read(path, progress=False)
    nodes = [a for _, a in c.tree.nodes(data=True)]
    roles = Counter(a["role"] for a in nodes)
    message_ids = {r["message"]["id"] for r in rows if r.get("type") == "assistant"}
    assert roles["assistant"] == len(message_ids)
    assert sorted(a["metadata"]["message_id"] for a in nodes if a["role"] == "assistant") == sorted(message_ids)
    user_rows = [r for r in rows if r.get("type") == "user"]
    assert roles["tool"] == sum(tool_results(r) for r in user_rows)
    assert roles["user"] == sum(1 for r in user_rows if not tool_results(r))
    assert len(c) == stats()[name]["message_nodes"] - sum(
        1 for r in rows if r.get("type") == "assistant") + len(message_ids)
    # every row of a reply is named by it, and its blocks are all there, in order
    for a in nodes:
        if a["role"] == "assistant":
            mine = [r for r in rows if r.get("uuid") in set(a["metadata"]["rows"])]
            assert {r["message"]["id"] for r in mine} == {a["metadata"]["message_id"]}
            assert a["content"] == [b for r in mine for b in r["message"]["content"]]
            assert a["id"] == mine[0]["uuid"]


@pytest.mark.realdata
@pytest.mark.parametrize("name", FILES)
def test_parallel_tool_calls_leave_no_artificial_fork(name):
    path = require() / name
    [c] = convlab.read(path, progress=False)
    g = c.tree
    for n in g:
        kids = list(g.successors(n))
        assert len(kids) <= 1, f"{n} forks into {kids}"
    # each tool result follows the reply that called it, results of one reply in a row
    for n, a in g.nodes(data=True):
        if a["role"] != "tool":
            continue
        up = a["parent"]
        while g.nodes[up]["role"] == "tool":
            up = g.nodes[up]["parent"]
        calls = [b["id"] for b in g.nodes[up]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        assert a["tool_call_id"] in calls, (n, up)


@pytest.mark.realdata
def test_the_raw_rows_did_fork_where_parallel_calls_were():
    # the check above would pass trivially on a file without parallel calls: this one has them
    rows = rows_of(require() / "claude_code/tool_heavy.jsonl")
    replies = Counter(r["message"]["id"] for r in rows if r.get("type") == "assistant"
                      and any(b.get("type") == "tool_use" for b in r["message"]["content"]))
    assert max(replies.values()) >= 2
    assert stats()["claude_code/tool_heavy.jsonl"]["branch_points"] >= 1


@pytest.mark.realdata
def test_compaction_is_a_summary_root_that_replaces_the_old_head():
    path = require() / SESSION
    rows = rows_of(path)
    [boundary] = [r for r in rows if r.get("subtype") == "compact_boundary"]
    [c] = convlab.read(path, progress=False)
    assert len(c.roots) == 2
    old_root, summary_id = c.roots
    summary = c.tree.nodes[summary_id]
    assert summary["kind"] == "summary" and summary["role"] == "user" and summary["parent"] is None
    assert summary["content"].startswith("This session is being continued from a previous conversation")
    assert summary["metadata"]["compact"] == {"trigger": "manual", "preTokens": 142431}
    assert summary["metadata"]["logical_parent"] == boundary["logicalParentUuid"]
    replaced = summary["replaces"]
    assert replaced in c.tree and c.tree.out_degree(replaced) == 0  # the head of the old history
    old = c.path(replaced)
    assert old[0]["id"] == old_root
    # the logical parent row is the replaced message, or leads up to it through non-message rows
    node_of_row = {u: n for n, a in c.tree.nodes(data=True) for u in a.get("metadata", {}).get("rows", [n])}
    by_uuid = {r.get("uuid"): r for r in rows}
    up = boundary["logicalParentUuid"]
    while up not in node_of_row:
        up = by_uuid[up]["parentUuid"]
    assert node_of_row[up] == replaced
    # the head is on the new branch
    assert c.path()[0]["id"] == summary_id
    assert c.path()[-1]["id"] == c.head


@pytest.mark.realdata
def test_usage_is_kept_on_the_reply_and_sums_cached_input():
    path = require() / SESSION
    rows = rows_of(path)
    last_usage = {}
    for r in rows:
        if r.get("type") == "assistant" and r["message"].get("usage"):
            last_usage[r["message"]["id"]] = r["message"]["usage"]
    [c] = convlab.read(path, progress=False)
    df = convlab.frame(c)
    replies = df[df.role == "assistant"]
    assert replies.input_tokens.notna().all()
    by_mid = {a["id"]: a["metadata"]["message_id"] for _, a in c.tree.nodes(data=True) if a["role"] == "assistant"}
    for nid, got in zip(replies.id, replies.input_tokens):
        u = last_usage[by_mid[nid]]
        assert got == u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        assert c.tree.nodes[nid]["usage"] == u
    # cached input dominates: the uncached part alone would be tiny
    assert replies.input_tokens.max() == stats()[SESSION]["max_ctx_tokens_from_usage"]
    assert sum(u["input_tokens"] for u in last_usage.values()) < replies.input_tokens.max()
    assert (df.output_tokens.dropna() >= 1).all()


@pytest.mark.realdata
def test_sub_agent_files_are_their_own_conversations():
    real = require()
    convs = convlab.read(real / "claude_code", progress=False)
    ids = sorted(c.id for c in convs)
    assert "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-aac57f5" in ids
    assert "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-acompact-946d2b" in ids
    [compact] = [c for c in convs if c.id.endswith("agent-acompact-946d2b")]
    # its first message hangs from the parent session, which is not in this file: a root, no warning
    first = compact.path()[0]
    assert first["parent"] is None and first["metadata"]["spawned_from"] == "23b73f9a-2123-4b8e-81a2-b98378c7498f"
    assert compact.metadata["agent_id"] == "acompact-946d2b"


def test_sidechain_rows_in_a_main_file_are_kept_apart(tmp_path):
    def row(uuid, parent, kind, content, *, side=False, mid=None, agent=None):
        r = {"uuid": uuid, "parentUuid": parent, "sessionId": "s1", "type": kind, "isSidechain": side,
             "timestamp": "2025-01-01T00:00:00Z",
             "message": {"role": kind, "content": content}}
        if mid:
            r["message"]["id"] = mid
            r["message"]["usage"] = {"input_tokens": 1, "cache_read_input_tokens": 10, "output_tokens": 2}
        if agent:
            r["agentId"] = agent
        return r

    rows = [
        row("u1", None, "user", "do it"),
        row("a1", "u1", "assistant", [{"type": "tool_use", "id": "T", "name": "Task", "input": {}}], mid="m1"),
        row("s1", "a1", "user", "sub task", side=True, agent="ag"),
        row("s2", "s1", "assistant", [{"type": "text", "text": "sub done"}], side=True, mid="m2", agent="ag"),
        row("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "T", "content": "sub done"}]),
        row("a2", "r1", "assistant", [{"type": "text", "text": "done"}], mid="m3"),
    ]
    p = tmp_path / "s1.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    main, side = convlab.read(p)
    assert (main.id, side.id) == ("s1", "s1/agent-ag")
    assert [m["id"] for m in main.path()] == ["u1", "a1", "r1", "a2"]
    assert [m["id"] for m in side.path()] == ["s1", "s2"]
    assert side.path()[0]["metadata"]["spawned_from"] == "a1"
    assert main.tree.nodes["a1"]["tool_calls"][0]["id"] == "T"


def test_a_boundary_without_a_summary_row_is_the_summary_root(tmp_path):
    rows = [
        {"uuid": "u1", "parentUuid": None, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}},
        {"uuid": "a1", "parentUuid": "u1", "sessionId": "s", "type": "assistant",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}},
        {"uuid": "b", "parentUuid": None, "logicalParentUuid": "a1", "sessionId": "s", "type": "system",
         "subtype": "compact_boundary", "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 9}},
        {"uuid": "u2", "parentUuid": "b", "sessionId": "s", "type": "user", "message": {"role": "user", "content": "again"}},
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    [c] = convlab.read(p)
    assert c.roots == ["u1", "b"]
    b = c.tree.nodes["b"]
    assert (b["kind"], b["replaces"], b["content"], b["metadata"]["compact"]["preTokens"]) == ("summary", "a1", "Conversation compacted", 9)
    assert [m["id"] for m in c.path()] == ["b", "u2"]


def test_a_row_with_two_tool_results_is_two_tool_messages_in_a_row(tmp_path):
    rows = [
        {"uuid": "u1", "parentUuid": None, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "go"}},
        {"uuid": "a1", "parentUuid": "u1", "sessionId": "s", "type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "A", "name": "x", "input": {}}, {"type": "tool_use", "id": "B", "name": "y", "input": {}}]}},
        {"uuid": "r", "parentUuid": "a1", "sessionId": "s", "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "A", "content": "a"},
            {"type": "tool_result", "tool_use_id": "B", "content": [{"type": "text", "text": "b"}], "is_error": True}]}},
        {"uuid": "a2", "parentUuid": "r", "sessionId": "s", "type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    [c] = convlab.read(p)
    path = c.path()
    assert [(m["id"], m["role"], m.get("tool_call_id")) for m in path] == [
        ("u1", "user", None), ("a1", "assistant", None), ("r", "tool", "A"), ("r#2", "tool", "B"), ("a2", "assistant", None)]
    assert path[3]["metadata"] == {"is_error": True}


@pytest.mark.realdata
def test_frame_input_series_of_the_session(real):
    [c] = convlab.read(real / "claude_code/short.jsonl")
    df = convlab.frame(c)
    rows = rows_of(real / "claude_code/short.jsonl")
    usage = [r["message"]["usage"] for r in rows if r.get("type") == "assistant"]
    assert df.input_tokens.dropna().tolist() == [input_tokens(usage[-1])]
    assert input_tokens(usage[-1]) > usage[-1]["input_tokens"]



def test_the_first_tool_result_of_a_row_keeps_is_error(tmp_path):
    """A tool result that failed says so (metadata.is_error), whichever block of its row it is."""
    rows = [
        {"uuid": "u1", "parentUuid": None, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "go"}},
        {"uuid": "a1", "parentUuid": "u1", "sessionId": "s", "type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "A", "name": "x", "input": {}}, {"type": "tool_use", "id": "B", "name": "y", "input": {}}]}},
        {"uuid": "r", "parentUuid": "a1", "sessionId": "s", "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "A", "content": "no such file", "is_error": True},
            {"type": "tool_result", "tool_use_id": "B", "content": "ok"}]}},
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    [c] = convlab.read(p)
    assert c.tree.nodes["r"]["metadata"] == {"is_error": True}
    assert "metadata" not in c.tree.nodes["r#2"]


@pytest.mark.realdata
def test_a_real_failed_tool_call_keeps_is_error(real):
    rows = rows_of(real / "claude_code/short.jsonl")
    failed = {b["tool_use_id"] for r in rows if r.get("type") == "user" and isinstance(r["message"]["content"], list)
              for b in r["message"]["content"] if b.get("type") == "tool_result" and b.get("is_error")}
    assert failed
    [c] = convlab.read(real / "claude_code/short.jsonl")
    flagged = {a["tool_call_id"] for _, a in c.tree.nodes(data=True) if a["role"] == "tool" and a.get("metadata", {}).get("is_error")}
    assert flagged == failed


def test_no_function_of_the_claude_code_importer_is_over_80_lines():
    """Issue 11: no function in the Claude Code importer is over 80 lines."""
    import ast

    from convlab.importers import claude_code

    path = Path(claude_code.__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert len(functions) >= 10
    long = {f"{f.name} (line {f.lineno})": f.end_lineno - f.lineno + 1 for f in functions if f.end_lineno - f.lineno + 1 > 80}
    assert not long, f"{path.name}: functions over 80 lines: {long}"


def test_integer_uuids_read_as_their_decimal_strings(tmp_path):
    """Issue 20: "A Claude Code file whose uuids are integers reads as 0 conversations with no warning. Read it, or warn"."""
    rows = [
        {"uuid": 1, "parentUuid": None, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}},
        {"uuid": 2, "parentUuid": 1, "sessionId": "s", "type": "assistant",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}},
        {"uuid": 3, "parentUuid": None, "logicalParentUuid": 2, "sessionId": "s", "type": "system",
         "subtype": "compact_boundary", "content": "Conversation compacted"},
        {"uuid": 4, "parentUuid": 3, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "again"}},
        {"type": "summary", "summary": "Greetings", "leafUuid": 4},
    ]
    p = tmp_path / "ints.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    [c] = convlab.read(p, progress=False)
    assert [m["id"] for m in c.path()] == ["3", "4"] and c.tree.nodes["2"]["parent"] == "1"
    assert c.tree.nodes["3"]["replaces"] == "2" and c.title == "Greetings"


def test_a_summary_row_about_a_leaf_elsewhere_does_not_title_the_session(tmp_path):
    """Issue 20: "a Claude Code summary row whose leafUuid is not in the file says nothing about this file. Today one
    such row titles a session 'API Error: 401 …'"."""
    rows = [
        {"type": "summary", "summary": "API Error: 401 {\"type\":\"error\"}", "leafUuid": "elsewhere"},
        {"uuid": "u1", "parentUuid": None, "sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "summary", "summary": "Saying hi", "leafUuid": "u1"},
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    [c] = convlab.read(p, progress=False)
    assert c.title == "Saying hi"
    p.write_text("\n".join(json.dumps(r) for r in rows[:2]))
    assert convlab.read(p, progress=False)[0].title is None


def with_synthetic_rows(src: Path, dst: Path, texts: list[str]) -> Path:
    """A real session with, after its last row, a user message and a row Claude Code writes itself in the model's
    place, as it writes one (model <synthetic>, every usage figure 0, isApiErrorMessage), one per text: the shape
    of a real session that ends on "API Error: 500" or "out of extra usage"."""
    rows = rows_of(src)
    last = rows[-1]
    base = {k: last[k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch") if k in last}
    parent = last["uuid"]
    for i, text in enumerate(texts):
        u, a = f"00000000-0000-4000-8000-{2 * i + 1:012d}", f"00000000-0000-4000-8000-{2 * i + 2:012d}"
        rows.append({**base, "parentUuid": parent, "type": "user", "uuid": u, "timestamp": f"2026-02-10T23:0{i}:00.000Z",
                     "message": {"role": "user", "content": f"and now the next step, try {i}"}})
        usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": None,
                 "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}}
        rows.append({**base, "parentUuid": u, "type": "assistant", "uuid": a, "timestamp": f"2026-02-10T23:0{i}:05.000Z",
                     "isApiErrorMessage": True,
                     "message": {"id": a, "container": None, "model": "<synthetic>", "role": "assistant",
                                 "stop_reason": "stop_sequence", "stop_sequence": "", "type": "message", "usage": usage,
                                 "content": [{"type": "text", "text": text}]}})
        parent = a
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["claude_code/tool_heavy.jsonl", SESSION])
def test_a_session_that_ends_on_synthetic_error_rows_counts_from_the_last_real_call(name, tmp_path):
    """Issue 34 (3): a Claude Code session that ends on <synthetic> error rows ("API Error 500", "out of extra usage",
    zero usage) reported tokens() = 14 and 41 where the last real calls read 71,709 and 114,236: a row no model
    produced is not the provider's last report. It is on the path, with no usage and marked no_call; the count goes on
    from the last real call; replay makes no call for it, so the count's error against the log (err95) is the
    session's own, not the count of the whole path against a zero."""
    real = require()
    [plain] = [c for c in convlab.read(real / name) if "agent-" not in c.id]
    path = with_synthetic_rows(real / name, tmp_path / "ends-on-errors.jsonl",
                               ['API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}',
                                "You're out of extra usage · resets 3pm"])
    [c] = [c for c in convlab.read(path) if "agent-" not in c.id]
    tail = c.path()[-4:]
    assert [m["role"] for m in tail] == ["user", "assistant", "user", "assistant"]
    assert all(m["usage"] is None and m["metadata"][convlab.conversation.NO_CALL] == "an API error Claude Code wrote"
               for m in tail[1::2])
    last_real = next(m for m in reversed(c.path()) if m.get("usage"))
    since = c.path()[[m["id"] for m in c.path()].index(last_real["id"]):]  # its reply included (PROTOCOL 5.1)
    chars = sum(content_chars(m["content"]) for m in since)
    assert c.tokens() == input_tokens(last_real["usage"]) + -(-chars // 4) > 25_000
    assert "<synthetic>" not in c.metadata["models"]
    r, before = convlab.replay(c), convlab.replay(plain)
    assert measures(r)["calls"] == measures(before)["calls"]  # no call for a row no model wrote
    assert measures(r)["err_usage_p95"] == measures(before)["err_usage_p95"]
    assert r.session.tokens() == c.tokens() and [m["content"] for m in r.session.path()][-1] == tail[-1]["content"]
