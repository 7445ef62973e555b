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
    """The Messages API's rules: user and assistant only; no empty text block; thinking only signed; every tool_use
    answered by a tool_result in the next user message, every tool_result answering the tool_use before it; a tool
    input a JSON object."""
    assert system is None or isinstance(system, str) or all(b["type"] == "text" for b in system)
    pending: set[str] = set()
    for m in messages:
        assert m["role"] in ("user", "assistant"), m
        blocks = [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"]
        assert blocks and {b["type"] for b in blocks} <= ANTHROPIC_BLOCKS[m["role"]], m
        for b in blocks:
            assert b["type"] != "text" or b["text"], m
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


PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
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
    st.builds(lambda i, c: {"role": "tool", "tool_call_id": f"t{i}", "content": c}, st.integers(0, 3), st.text(max_size=10)),
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
