"""convlab.providers.shapes: every provider's request in its API's own shape, whatever shape the log wrote it in
(issue 34 (4): a summary of a real Claude Code session went to an OpenAI-compatible server as Anthropic parts,
and every call failed "unsupported content[].type")."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.providers.shapes import anthropic_messages, openai_messages, read, render, text_messages

from realdata import REAL, require

OPENAI_PARTS = {"user": {"text", "image_url", "input_audio", "file"}, "system": {"text"}, "developer": {"text"},
                "assistant": {"text", "refusal"}, "tool": {"text"}}


def valid_openai(messages: list[dict]) -> None:
    """The Chat Completions rules a server checks: known roles, each content a string, None (an assistant with tool
    calls) or a list of the parts that role may send; every tool call followed by its tool message before the next
    assistant message, and every tool message answering a call made right before it."""
    open_calls: set[str] = set()
    for m in messages:
        role = m["role"]
        assert role in OPENAI_PARTS, m
        content = m.get("content")
        if content is None:
            assert role == "assistant" and m.get("tool_calls"), m
        elif not isinstance(content, str):
            assert isinstance(content, list) and {p["type"] for p in content} <= OPENAI_PARTS[role], m
        if role == "assistant":
            assert not open_calls, f"calls with no result before the next assistant message: {open_calls}"
            for call in m.get("tool_calls") or ():
                assert call["type"] == "function" and isinstance(call["function"]["arguments"], str)
                open_calls.add(call["id"])
        elif role == "tool":
            assert m["tool_call_id"] in open_calls, m
            open_calls.discard(m["tool_call_id"])
        else:
            assert not open_calls, f"a {role} message between calls and their results: {open_calls}"
    assert not open_calls, f"calls with no result: {open_calls}"


def valid_text(messages: list[dict]) -> None:
    """What a server whose chat template knows no tools takes: system, user and assistant, each one string."""
    assert all(m["role"] in ("system", "user", "assistant", "developer") and isinstance(m["content"], str) and set(m) == {"role", "content"}
               for m in messages), messages


ANTHROPIC_BLOCKS = {"user": {"text", "image", "document", "tool_result"},
                    "assistant": {"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use",
                                  "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result"}}


def valid_anthropic(system: object, messages: list[dict]) -> None:
    """The Messages API's rules: at least one message, user and assistant only; no text block of whitespace alone
    ("text content blocks must contain non-whitespace text"), no empty message; thinking only signed; every tool_use
    answered by a tool_result in the next user message, every tool_result answering the tool_use before it; a tool
    input a JSON object; a failed result not empty; a last assistant turn not ending in whitespace."""
    assert system is None or (isinstance(system, str) and system.strip()) or all(b["type"] == "text" and b["text"].strip() for b in system)
    assert messages, "the API refuses a request with no message"
    if messages[-1]["role"] == "assistant":
        last = messages[-1]["content"]
        last = last if isinstance(last, str) else last[-1].get("text", "x")
        assert last == last.rstrip(), "final assistant content cannot end with trailing whitespace"
    pending: set[str] = set()
    for m in messages:
        assert m["role"] in ("user", "assistant"), m
        blocks = [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"]
        assert blocks and {b["type"] for b in blocks} <= ANTHROPIC_BLOCKS[m["role"]], m
        for b in blocks:
            assert b["type"] != "text" or b["text"].strip(), m
            assert b["type"] != "tool_result" or not b.get("is_error") or b["content"], m
            assert b["type"] != "thinking" or b.get("signature"), m
        if m["role"] == "assistant":
            assert not pending, f"tool_use with no tool_result after it: {pending}"
            pending = {b["id"] for b in blocks if b["type"] == "tool_use"}
            assert all(isinstance(b["input"], dict) for b in blocks if b["type"] == "tool_use")
        else:
            answered = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
            assert answered <= pending, (answered, pending)
            assert answered == pending or not pending, f"tool_use with no tool_result after it: {pending - answered}"
            kinds = [b["type"] for b in blocks]
            assert kinds[:len(answered)] == ["tool_result"] * len(answered), f"tool results first in their turn: {kinds}"
            pending = set()
    assert not pending


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["claude_code/tool_heavy.jsonl", "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"])
def test_a_real_claude_code_session_in_every_apis_own_shape(name):
    """The real session's path, and every slice of it a summary call could send (from any message on), in the three
    shapes: each valid by its API's rules, nothing of the text lost."""
    require()
    [c] = [c for c in convlab.read(REAL / name) if "agent-" not in c.id]
    path = [{k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")} for m in c.path()]
    assert any(isinstance(m["content"], list) and any(p.get("type") == "tool_use" for p in m["content"]) for m in path)
    for start in range(0, len(path), max(1, len(path) // 40)):
        part = [*path[start:], {"role": "user", "content": "Summarize the conversation so far."}]
        valid_openai(openai_messages(part))
        valid_text(text_messages(part))
        valid_anthropic(*anthropic_messages(part))
    said = " ".join(m["content"] for m in text_messages(path))
    for m in path:  # every tool call and every text of the log is in what a text-only server reads
        for call in m.get("tool_calls") or ():
            assert call["function"]["name"] in said
        if isinstance(m["content"], str) and m["content"]:
            assert m["content"][:200] in said


@pytest.mark.realdata
def test_a_real_reply_s_whitespace_text_block_never_reaches_anthropic():
    """The real Claude Code session's reply carries a text block of "\\n\\n" between its thinking and its call, which
    the Messages API refuses with a 400 ("text content blocks must contain non-whitespace text"): it is left out, and
    the rest of the reply (its text, its call) goes as it came."""
    require()
    [c] = [c for c in convlab.read(REAL / "claude_code/tool_heavy.jsonl") if "agent-" not in c.id]
    path = [{k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")} for m in c.path()]
    blank = [m for m in path if isinstance(m["content"], list)
             and any(p.get("type") == "text" and p.get("text") and not p["text"].strip() for p in m["content"])]
    assert blank, "the real session no longer has the whitespace text block this test is about"
    _system, msgs = anthropic_messages(path)
    valid_anthropic(_system, msgs)
    sent = [b for m in msgs if isinstance(m["content"], list) for b in m["content"]]
    for m in blank:
        for p in m["content"]:
            if p.get("type") == "text" and p["text"].strip():
                assert any(b.get("text") == p["text"] for b in sent)
            if p.get("type") == "tool_use":
                assert any(b.get("id") == p["id"] for b in sent)


def test_a_message_that_says_nothing_keeps_the_request_valid():
    """Whitespace alone says nothing to any API: left out of the Messages API's request, except the last message,
    the turn the model answers (``EMPTY``); a failed call's empty result says so; a final assistant turn loses its
    trailing whitespace; Chat Completions sends no whitespace part either."""
    from convlab.providers.shapes import EMPTY, NO_OUTPUT

    system, msgs = anthropic_messages([{"role": "system", "content": " \n"}, {"role": "user", "content": "hi"},
                                       {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]},
                                       {"role": "user", "content": "\n"}])
    assert system is None and msgs == [{"role": "user", "content": "hi"}, {"role": "user", "content": EMPTY}]
    _, msgs = anthropic_messages([{"role": "user", "content": "go"},
                                  {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                                  {"role": "tool", "tool_call_id": "t1", "content": " ", "is_error": True},
                                  {"role": "assistant", "content": [{"type": "text", "text": "Done. \n"}, {"type": "text", "text": " "}]}])
    assert msgs[2]["content"][0]["content"] == NO_OUTPUT
    assert msgs[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    out = openai_messages([{"role": "user", "content": [{"type": "text", "text": "\n\n"}, {"type": "text", "text": "hi"}]}])
    assert out == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
    st.builds(lambda t: {"type": "text", "text": t}, st.text(" \n\t", max_size=3)),
    st.builds(lambda s: {"type": "thinking", "thinking": "hm", **({"signature": s} if s else {})}, st.sampled_from(["", "sig"])),
    st.just({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}),
    st.just({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
    st.builds(lambda i: {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}}, st.integers(0, 3)),
    st.builds(lambda i, body: {"type": "tool_result", "tool_use_id": f"t{i}", "content": body}, st.integers(0, 3),
              st.one_of(st.text(max_size=10), st.just([{"type": "text", "text": "ok"}]))),
    st.just({"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}),
    st.just({"type": "weird", "value": [1, {"deep": None}]}),
)
MESSAGE = st.one_of(
    st.builds(lambda r, c: {"role": r, "content": c}, st.sampled_from(["system", "user", "assistant"]),
              st.one_of(st.text(max_size=20), st.lists(PART, max_size=4))),
    st.builds(lambda r, c: {"role": r, "content": c}, st.sampled_from(["system", "user", "assistant"]), st.text(" \n", max_size=3)),
    st.builds(lambda i, c, e: {"role": "tool", "tool_call_id": f"t{i}", "content": c, **({"is_error": True} if e else {})},
              st.integers(0, 3), st.one_of(st.text(max_size=10), st.text(" \n", max_size=2)), st.booleans()),
    st.builds(lambda i, a: {"role": "assistant", "content": "", "tool_calls": [{"id": f"t{i}", "type": "function",
                                                                                  "function": {"name": "f", "arguments": a}}]},
              st.integers(0, 3), st.one_of(st.just('{"x": 1}'), st.just("{not json"), st.just({"x": 1}), st.just("[1]"))),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(MESSAGE, max_size=8))
def test_any_mix_of_shapes_is_valid_for_every_api(messages):
    """Whatever a log holds (both shapes, calls without results, results without calls, arguments that are not
    JSON, parts no API knows), each writer's request keeps its API's rules."""
    valid_openai(openai_messages(messages))
    valid_text(text_messages(messages))
    valid_anthropic(*anthropic_messages(messages))
    said = read(messages)
    assert len(said) == len(messages)


def test_render_and_read_say_what_an_api_cannot_take():
    assert render([{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "x"}, {"type": "weird", "n": 1}]) == 'a\n[weird] {"type": "weird", "n": 1}'
    assert render({"type": "document", "source": {"type": "text", "data": "the doc"}}) == "the doc"
    big = {"type": "blob", "data": "x" * 10_000}
    assert len(render([big])) < 2_100
    # a reply logged with both its tool_use part and the tool_calls naming it is one call
    [s] = read([{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": 1}}],
                 "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "Bash", "arguments": {"c": 1}}}]}])
    assert s.calls == [] and s.parts == [{"type": "text", "text": '[tool call Bash {"c": 1}]'}]  # unanswered here: said
    assert json.loads('{"c": 1}') == {"c": 1}
