"""convlab.inputs: client inputs, messages, actions and provider replies, checked and copied once, at the edge.

Refusals through a Session (nothing written) are tested in tests/test_bad_input.py; here the
checks themselves: the field named, the engine's attributes dropped, one copy made.
"""

from __future__ import annotations

import pytest

from convlab.errors import ProviderError, Refused
from convlab.inputs import reply_from, validate, validate_actions, validate_message


def test_a_message_is_copied_once_and_loses_engine_attributes():
    """PROTOCOL 1: engine-owned attributes sent on a new message "are ignored, never recorded (gap)"."""
    sent = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "seq": 9, "usage": {"input_tokens": 1},
            "kind": "summary", "name": "sam", "metadata": {"k": [1]}}
    out = validate_message(sent, "message")
    assert out == {"role": "user", "content": [{"type": "text", "text": "hi"}], "id": "u1", "name": "sam", "metadata": {"k": [1]}}
    out["content"][0]["text"] = "changed"
    out["metadata"]["k"].append(2)
    assert sent["content"][0]["text"] == "hi" and sent["metadata"] == {"k": [1]}


@pytest.mark.parametrize("message, field", [
    ({"role": "user"}, "message.content"),
    ({"content": "x"}, "message.role"),
    ({"role": "robot", "content": "x"}, "message.role"),
    ({"role": "user", "content": 3}, "message.content"),
    ({"role": "user", "content": [{"type": "text", "text": 3}]}, "message.content[0].text"),
    ({"role": "user", "content": ["x"]}, "message.content[0]"),
    ({"role": "user", "content": "x", "id": ""}, "message.id"),
    ({"role": "tool", "content": "x", "tool_call_id": 5}, "message.tool_call_id"),
    ({"role": "user", "content": "x", "metadata": {"s": {1}}}, "message.metadata.s"),
])
def test_a_bad_message_is_refused_naming_the_field(message, field):
    with pytest.raises(Refused) as err:
        validate({"type": "client.message", "agent_id": "bot", "message": message}, "bot")
    assert err.value.status == 400 and str(err.value).startswith(field)


def test_inputs_name_their_fields_and_the_agent():
    with pytest.raises(Refused, match="unknown agent 'x'") as err:
        validate({"type": "client.message", "agent_id": "x", "message": {"role": "user", "content": "a"}}, "bot")
    assert err.value.status == 404
    for inp, field in [({"agent_id": "bot"}, "type"), ({"type": "client.message"}, "agent_id"),
                       ({"type": "client.nope", "agent_id": "bot"}, "type"),
                       ({"type": "client.messages", "agent_id": "bot", "messages": []}, "messages"),
                       ({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "a"}], "queue": False}, "queue"),
                       ({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "a"}, "queue": "soon"}, "queue"),
                       ({"type": "client.append", "agent_id": "bot", "messages": [{"id": "a", "role": "user", "content": "x"}] * 2}, "messages[1].id")]:
        with pytest.raises(Refused) as e:
            validate(inp, "bot")
        assert e.value.status == 400 and str(e.value).startswith(field), (inp, str(e.value))


def test_actions_are_checked_and_cleaned():
    out = validate_actions([{"type": "llm.call", "id": "llm-1", "stream": False, "extra": 1},
                            {"type": "context.replace", "summary": "s"}, {"type": "turn.end"}])
    assert out == [{"type": "llm.call", "id": "llm-1", "stream": False}, {"type": "context.replace", "summary": "s", "messages": []},
                   {"type": "turn.end"}]
    for bad, field in [("x", "actions"), ([{"type": "nap"}], "actions[0].type"), ([{"type": "llm.call", "llm": ""}], "actions[0].llm"),
                       ([{"type": "state.set", "state": 3}], "actions[0].state"), ([{"type": "message.add"}], "actions[0].message"),
                       ([{"type": "context.replace", "summary": 3}], "actions[0].summary")]:
        with pytest.raises(Refused) as e:
            validate_actions(bad)
        assert str(e.value).startswith(field), (bad, str(e.value))


def test_a_provider_reply_is_checked_once():
    reply = {"content": "ok", "usage": {"input_tokens": 2}, "tool_calls": [{"id": "c1"}], "name": "bot"}
    out = reply_from(reply)
    assert out == reply and out["usage"] is not reply["usage"]
    for bad, words in [("text", "not {'content'"), ({"content": {1}}, "not JSON data"), ({"content": "x", "usage": 3}, "usage must be an object"),
                       ({"content": 5}, "not a message")]:
        with pytest.raises(ProviderError, match=words) as e:
            reply_from(bad)
        assert e.value.kind == "failed"
