"""Issue 19 (1) through the server: whatever a provider raises fails its run's turn with a RUN_ERROR whose
text holds no credential, and the thread's next run works (never a thread that answers 409 forever)."""

from __future__ import annotations

import json

import pytest
from agui_support import last, m, run, served, snapshot, types
from session_support import KEY, StreamRaises


@pytest.mark.parametrize("exc", [
    AssertionError(),
    AttributeError("'NoneType' object has no attribute 'choices'"),
    ValueError("bad"),
    KeyError("choices"),
    RuntimeError(f"connection reset; headers {{'Authorization': 'Bearer {KEY}'}}"),
], ids=lambda e: type(e).__name__)
def test_a_provider_that_raises_fails_the_run_and_the_thread_goes_on(tmp_path, exc):
    with served(tmp_path, llm=StreamRaises(exc)) as (app, server):
        events = run(server.url, "t", [m("u1", "hi")])
        assert last(events)["type"] == "RUN_ERROR" and type(exc).__name__ in last(events)["message"]
        assert KEY not in json.dumps(events)
        snap = snapshot(server.url, "t")
        assert snap["running"] is None and snap["turns"][-1]["status"] == "failed"
        again = run(server.url, "t", [m("u1", "hi"), m("u2", "and now?")])
        assert types(again)[-1] == "RUN_FINISHED" and again[-1]["outcome"]["type"] == "success"
        assert snapshot(server.url, "t")["nodes"][-1]["content"] == "echo: and now?"
    assert KEY not in (tmp_path / "t.jsonl").read_text()
