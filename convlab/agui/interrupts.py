"""A ``context.limit`` decision as an AG-UI interrupt, and a resume as its answer.

With ``worker="manual"`` a served run that reaches a ``context.limit`` ends
with outcome ``interrupt``; the next run's ``resume`` answers it. The
interrupt's id is ``<call id>:<seq of its decision.requested>``, so the same
call held twice (a person ran it as it was, then it was held again) gets two
ids, and a resume for the first cannot answer the second.

The answer (``payload``) names one of five actions; each becomes the list of
actions ``Session.decide`` takes (docs/protocol.md 4, 5.3, 5.4):

- ``accept``: what the engine proposed, as it is;
- ``accept_edited``: the proposed ``context.replace`` with ``summary`` in place
  of the proposed summary (a plan that proposed no replace gets one: the
  summary, then ``kept``), then the call;
- ``run_as_is``: the held call, as it was (``llm.call {id}``);
- ``reset``: ``context.replace {messages: kept}``, then the call;
- ``end_turn``: ``turn.end``.

A resume entry with status ``cancelled`` ends the turn (``end_turn``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..context import kept

__all__ = ["ACTIONS", "RESPONSE_SCHEMA", "REASON", "interrupt_id", "interrupt_of", "actions_for", "ResumeError"]

ACTIONS = ("accept", "accept_edited", "run_as_is", "reset", "end_turn")

#: ``Interrupt.reason`` of a context.limit.
REASON = "context_limit"

#: The JSON Schema of a resume payload (``Interrupt.responseSchema``).
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS),
                   "description": "accept the proposal, accept it with an edited summary, run the held call as it was, "
                                  "reset to the input still to answer, or end the turn"},
        "summary": {"type": "string", "description": "the edited summary (accept_edited)"},
    },
    "required": ["action"],
    "additionalProperties": False,
    "if": {"properties": {"action": {"const": "accept_edited"}}},
    "then": {"required": ["action", "summary"]},
}


class ResumeError(ValueError):
    """A resume that cannot answer the waiting decision; the message names the field."""


def interrupt_id(decision: Mapping[str, Any], seq: int) -> str:
    """``<call id>:<seq>``: the id of the interrupt for a context.limit asked at event ``seq``.

    >>> interrupt_id({"call": {"id": "llm-3"}}, 17)
    'llm-3:17'
    """
    return f"{decision['call']['id']}:{seq}"


def interrupt_of(decision: Mapping[str, Any], seq: int) -> dict[str, Any]:
    """The AG-UI ``Interrupt`` (wire dict) for a waiting context.limit decision.

    ``metadata.decision`` is the whole decision but the path (the client has
    it): reason, strategy, tokens, window, the held call (without its
    messages) and ``proposed``, with the summary text.

    >>> d = {"type": "context.limit", "turn_id": "t2", "reason": "full", "strategy": "summarize", "tokens": 90,
    ...      "window": None, "call": {"id": "llm-2", "llm": "default", "request": {"model": None, "messages": []}},
    ...      "proposed": [{"type": "context.replace", "summary": "S"}, {"type": "llm.call", "id": "llm-2"}],
    ...      "messages": [], "head": "u2"}
    >>> i = interrupt_of(d, 9)
    >>> i["id"], i["reason"], i["message"]
    ('llm-2:9', 'context_limit', 'The conversation has reached 90 tokens, so the summarize strategy applies: a summary is proposed. Accept it, edit it, run the call as it is, reset, or end the turn.')
    >>> sorted(i["metadata"]["decision"]), i["metadata"]["decision"]["call"]["request"]
    (['call', 'head', 'proposed', 'reason', 'strategy', 'tokens', 'turn_id', 'type', 'window'], {'model': None})
    """
    logged = {k: v for k, v in decision.items() if k != "messages"}
    call = dict(logged["call"])
    call["request"] = {k: v for k, v in (call.get("request") or {}).items() if k != "messages"}
    logged["call"] = call
    return {
        "id": interrupt_id(decision, seq),
        "reason": REASON,
        "message": _readable(decision),
        "responseSchema": RESPONSE_SCHEMA,
        "metadata": {"decision": logged},
    }


def _readable(decision: Mapping[str, Any]) -> str:
    strategy, tokens, window = decision["strategy"], decision["tokens"], decision.get("window")
    if decision["reason"] == "idle":
        why = f"The session was idle, so the {strategy} strategy applies"
    elif decision["reason"] == "overflow":
        why = f"The model refused the call as too long ({tokens} tokens), so the {strategy} strategy applies"
    else:
        of = f" of a {window}-token window" if window else ""
        why = f"The conversation has reached {tokens} tokens{of}, so the {strategy} strategy applies"
    replace = _replace(decision["proposed"])
    if replace is not None and replace.get("summary"):
        plan = "a summary is proposed"
    elif replace is not None:
        plan = "a reset to the input still to answer is proposed"
    else:
        plan = "nothing can be dropped, so the call is proposed as it was"
    return f"{why}: {plan}. Accept it, edit it, run the call as it is, reset, or end the turn."


def _replace(actions: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    return next((dict(a) for a in actions if a.get("type") == "context.replace"), None)


def actions_for(decision: Mapping[str, Any], status: str, payload: object) -> list[dict[str, Any]]:
    """The actions that answer ``decision`` (a waiting context.limit, with its
    ``messages``) for a resume entry's ``status`` and ``payload``. Raises
    ``ResumeError`` naming the field when the payload is not an answer.

    >>> u1 = {"id": "u1", "role": "user", "content": "hi"}
    >>> d = {"call": {"id": "llm-2"}, "messages": [u1],
    ...      "proposed": [{"type": "context.replace", "summary": "S", "messages": [u1]}, {"type": "llm.call", "id": "llm-2"}]}
    >>> actions_for(d, "resolved", {"action": "accept_edited", "summary": "Better"})[0]["summary"]
    'Better'
    >>> actions_for(d, "resolved", {"action": "reset"})
    [{'type': 'context.replace', 'messages': [{'id': 'u1', 'role': 'user', 'content': 'hi'}]}, {'type': 'llm.call', 'id': 'llm-2'}]
    >>> actions_for(d, "resolved", {"action": "maybe"})
    Traceback (most recent call last):
    ...
    convlab.agui.interrupts.ResumeError: resume[0].payload.action: must be one of accept, accept_edited, run_as_is, reset, end_turn; got 'maybe'
    """
    if status == "cancelled":
        return [{"type": "turn.end"}]
    if not isinstance(payload, Mapping):
        raise ResumeError(f"resume[0].payload: must be an object with an action, got {payload!r}")
    extra = sorted(set(payload) - {"action", "summary"})
    if extra:
        raise ResumeError(f"resume[0].payload.{extra[0]}: unknown key (an answer has action and summary)")
    action = payload.get("action")
    if action not in ACTIONS:
        raise ResumeError(f"resume[0].payload.action: must be one of {', '.join(ACTIONS)}; got {action!r}")
    summary = payload.get("summary")
    if action == "accept_edited" and (not isinstance(summary, str) or not summary.strip()):
        raise ResumeError("resume[0].payload.summary: accept_edited needs the edited summary (a non-empty string)")
    if action != "accept_edited" and summary is not None:
        raise ResumeError(f"resume[0].payload.summary: only accept_edited takes a summary, not {action}")
    call = {"type": "llm.call", "id": decision["call"]["id"]}
    proposed = [dict(a) for a in decision["proposed"]]
    if action == "accept":
        return proposed
    if action == "run_as_is":
        return [call]
    if action == "end_turn":
        return [{"type": "turn.end"}]
    replace = _replace(proposed)
    keep = replace["messages"] if replace is not None and "messages" in replace else _kept(decision["messages"])
    if action == "reset":
        if not keep:
            raise ResumeError("resume[0].payload.action: reset would keep nothing (the path ends with a reply): "
                              "run the call as it is, or end the turn")
        return [{"type": "context.replace", "messages": keep}, call]
    return [{"type": "context.replace", "summary": summary, "messages": keep}, call]


def _kept(path: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(m) for m in kept(reversed(path))]
