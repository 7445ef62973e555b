"""The engine's edges: bad arguments, answers that fail the turn, logs that do not fit, and a
log written before rev 3 whose queue waits. Each path here is one a user can reach."""

from __future__ import annotations

import json

import pytest

import convlab
from convlab.engine import decisions
from session_support import config, interrupt, m, make, message, reply, statuses, view


def test_session_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="agent must be a non-empty string"):
        convlab.Session(agent="")
    with pytest.raises(ValueError, match="worker must be 'chat', 'manual' or a callable"):
        convlab.Session(worker="robot")
    with pytest.raises(ValueError, match="llm: give at least one provider"):
        convlab.Session(llm={})
    with pytest.raises(ValueError, match=r"llm\['x'\] has no complete"):
        convlab.Session(llm={"x": object()})
    with pytest.raises(ValueError, match=r"llm must be a provider .*: for a spec, llm=convlab.provider\('openai:gpt-4.1-mini'\)"):
        convlab.Session(llm="openai:gpt-4.1-mini")
    s = make()
    with pytest.raises(ValueError, match="non-negative number of seconds"):
        s.advance(-1)
    with pytest.raises(KeyError, match="no message 'zz'"):
        s.view("zz")
    with pytest.raises(KeyError, match="no message 'zz'"):
        s.path("zz")
    assert repr(s) == "Session(agent='bot', messages=0, head=None, turns=0, running=None, queued=0)"


def test_a_worker_that_never_ends_its_turns_is_stopped(monkeypatch):
    monkeypatch.setattr(decisions, "MAX_STEPS", 40)
    s = make(worker=lambda d: [{"type": "llm.call"}])
    with pytest.raises(RuntimeError, match="does the worker ever end its turns"):
        s.submit(message(m("u1", "loop")))


@pytest.mark.parametrize("answer, error", [
    ("not a list", "the worker's answer is not a list of actions"),
    ([{"type": "message.add", "message": {"id": "u1", "role": "tool", "content": "x"}}], "message.add: id 'u1' is already recorded"),
    ([{"type": "llm.call", "llm": "nope"}], "llm.call: no provider named 'nope' (known: default)"),
])
def test_a_callable_workers_bad_answer_fails_the_turn(answer, error):
    """4: the engine runs the worker's actions; one it cannot run fails the turn and says why."""
    s = make(worker=lambda d: answer if d["type"] == "turn.start" else [])
    s.submit(message(m("u1", "hi")))
    assert s.turns[-1]["status"] == "failed" and error in s.turns[-1]["error"]


def test_a_summarize_strategy_naming_an_unknown_llm_proposes_the_call_as_it_was():
    """5.3: "When the summary call fails, proposed is the call as it was"; a provider that does not exist makes no summary."""
    s = make(config=config({"use": "summarize", "over_tokens": 5, "llm": "cheap"}), worker="manual")
    s.submit(view([m("u1", "x" * 40), {"id": "a1", "role": "assistant", "content": "y" * 40}, m("u2", "z" * 40)]))
    s.decide([{"type": "llm.call"}])
    d = s.pending
    assert d["type"] == "context.limit" and d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]
    assert not [e for e in s.events if e["type"] == "llm.started" and e["summary"]]


def log_of(s) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in s.events).encode()


def test_a_log_written_before_rev_3_with_a_waiting_queue_runs_it_on_the_next_step(tmp_path):
    """2 (rev 3): a queue never waits while no turn runs. Logs written before rev 3 can end with one
    waiting after an interrupt: loading it, the next step starts the first queued turn."""
    s = make(worker="manual", autorun=False)
    s.submit(message(m("u1", "a")))
    s.submit(message(m("u2", "b"), queue=True))
    s.submit(interrupt())
    events = s.events[: next(i for i, e in enumerate(s.events) if e["type"] == "turn.cancelled") + 1]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    old = convlab.Session.load(path, worker="manual", autorun=False)
    assert old.running is None and old.queued == ["t2"]
    assert old.step() is True
    assert statuses(old) == {"t1": "cancelled", "t2": "running"} and old.pending["type"] == "turn.start"


def test_logs_that_do_not_fit_are_log_errors_naming_the_line(tmp_path):
    s = make(llm=convlab.ScriptedLLM([reply("ok")]))
    s.submit(message(m("u1", "hi")))
    lines = [json.dumps(e) for e in s.events]
    cases = {
        "empty.jsonl": ("", "the log is empty"),
        "first.jsonl": ("\n".join(lines[1:]) + "\n", "is 'turn.started', not session.started"),
        "misfit.jsonl": ("\n".join([lines[0], json.dumps({"seq": 2, "time": 0, "type": "head.moved", "from": None, "to": "ghost"}),
                                    json.dumps({"seq": 3, "time": 0, "type": "state.changed", "node": "ghost", "state": {}}), lines[-1]]) + "\n",
                         "line 3: the state.changed event does not fit the session"),
    }
    for name, (text, words) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(convlab.LogError, match=words):
            convlab.Session.load(path, append=False)
    path = tmp_path / "ok.jsonl"
    path.write_bytes(log_of(s))
    with pytest.raises(convlab.LogError, match="the log is agent 'bot', not 'other'"):
        convlab.Session.load(path, agent="other")
