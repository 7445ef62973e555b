"""convlab.toolcalls: which messages make tool calls and which answer them, in OpenAI's shape and Anthropic's."""

from __future__ import annotations

from convlab import toolcalls


def test_calls_and_answers_in_both_shapes_and_nothing_from_damage():
    assistant = {"role": "assistant", "content": [{"type": "text", "text": "let me look"},
                                                  {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                                                  {"type": "tool_use", "name": "no id"}, "not a part"],
                 "tool_calls": [{"id": "c1", "function": {"name": "Bash", "arguments": "{}"}}, {"function": {}}, "junk"]}
    assert toolcalls.calls(assistant) == {"c1": "Bash", "t1": "Read"}
    assert toolcalls.calls({"role": "user", "tool_calls": [{"id": "c9"}]}) == {}  # only a reply calls tools
    mixed = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}, {"type": "text", "text": "and?"}]}
    assert toolcalls.answers(mixed) == ["t1"] and not toolcalls.is_result(mixed)  # it also says something: a turn of its own
    assert toolcalls.answers({"role": "tool", "content": "42"}) == [] and toolcalls.is_result({"role": "tool", "content": "42"})
    assert not toolcalls.is_result({"role": "user", "content": []})
