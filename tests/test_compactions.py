"""convlab.tuning.retention: what each compaction dropped and the facts the new context keeps (issue 23 part 1)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import convlab
from convlab.tuning.compact import clear_tool_results
from convlab.conversation import Conversation
from convlab.engine import chat_worker
from convlab.tuning.facts import facts_of, holds, message_text, normal
from convlab.replaying.driver import replay
from convlab.tuning.sweep import tune
from convlab.tuning.retention import RETENTION_COLUMNS, compactions, retention
from convlab.tree import Tree

from realdata import REAL, require
from retention_support import config, conv, turns
from convlab.tuning.measures import measures



def test_a_reset_keeps_nothing_it_dropped():
    r = replay(conv(turns(4)), config("reset", 1500))
    df = retention(r)
    assert list(df.columns) == list(RETENTION_COLUMNS) and len(df) >= 1
    row = df.iloc[0]
    assert (row["source"], row["strategy"], row["summary"]) == ("strategy", "reset", None)
    assert row["dropped_messages"] > 0 and row["facts"] > 0 and row["facts_kept"] == 0.0
    assert row["dropped_tokens"] < row["tokens_before"] and "/srv/step0.py" in row["lost"]
    assert row["call"] == r.limits[0]["call"]


def keep_all(decision):
    """A worker whose compaction keeps every message (as copies)."""
    if decision["type"] != "context.limit":
        return chat_worker(decision)
    copies = [{"id": m["id"], "role": m["role"], "content": m["content"]} for m in decision["messages"]]
    return [{"type": "context.replace", "messages": copies}, {"type": "llm.call", "id": decision["call"]["id"]}]


def test_a_replace_that_keeps_every_message_keeps_everything():
    r = replay(conv(turns(4)), config("reset", 1500), worker=keep_all)
    [c, *_] = compactions(r)
    assert c.source == "worker" and c.dropped() == [] and c.facts_kept() == 1.0
    assert retention(r)["facts_kept"].tolist() == [1.0] * len(compactions(r))


def tool_rows():
    """Three tool calls; the first result's facts are also stated outside the results, in part."""
    rows, parent = [("u0", None, "user", "Look into the outage of /srv/app.py " + "x" * 400, {})], "u0"
    results = ["found /srv/app.py and 250 ms latency in ZEBRA-7", "nothing at 12:30 " + "y" * 800, "done " + "z" * 800]
    for i, text in enumerate(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "grep", "arguments": {"pattern": f"err{i}"}}}
        rows.append((f"a{i}", parent, "assistant", "", {"tool_calls": [call], "usage": {"input_tokens": 300 + 400 * i, "output_tokens": 1}}))
        rows.append((f"t{i}", f"a{i}", "tool", text + " " + "w" * 800, {"tool_call_id": f"c{i}"}))
        parent = f"t{i}"
    rows.append(("a9", parent, "assistant", "The fix touches /srv/app.py.", {"usage": {"input_tokens": 1800, "output_tokens": 1}}))
    return rows


def test_clear_tool_results_keeps_exactly_the_facts_outside_the_cleared_results():
    r = replay(conv(tool_rows()), config("reset", 600), worker=clear_tool_results(keep=1))
    [c, *_] = compactions(r)
    cleared = c.dropped()
    assert cleared and all(m["role"] == "tool" for m in cleared)
    outside = [m for m in c.old if m not in cleared]
    held = normal("\n".join(message_text(m) for m in outside))
    assert c.facts() == facts_of(cleared)
    assert c.kept() == {f for f in c.facts() if holds(held, f)}
    texts = {f.text for f in c.kept()}
    assert "/srv/app.py" in texts and "ZEBRA-7" not in texts and "250 ms" not in texts
    assert 0 < c.facts_kept() < 1


class Summarizer:
    """Writes summaries that state some of what they summarize."""

    def complete(self, request):
        return {"content": "Ada Lovelace opened /srv/step0.py.", "usage": {"input_tokens": 10, "output_tokens": 8}}


def test_a_summary_is_scored_on_its_text(tmp_path):
    r = replay(conv(turns(4)), config("summarize", 1500), summarizer=Summarizer(), summary_cache=tmp_path)
    [c, *_] = compactions(r)
    assert (c.source, c.strategy, c.summary_by) == ("strategy", "summarize", "model")
    assert c.summary == "Ada Lovelace opened /srv/step0.py."
    kept = {f.text for f in c.kept()}
    assert {"/srv/step0.py", "Ada Lovelace"} <= kept and "00 ms" not in kept
    summary_facts = facts_of([{"role": "user", "content": c.summary}])
    assert len(c.kept()) == 2 and c.facts_kept() == pytest.approx(2 / len(c.facts()))  # the summary states two of them
    assert c.kept() >= c.facts() & summary_facts


def test_a_stand_in_summary_is_flagged_and_left_out_of_tune():
    r = replay(conv(turns(4)), config("summarize", 1500))
    df = retention(r)
    assert len(df) and set(df["summary"]) == {"stand-in"}
    assert math.isnan(measures(r)["facts_kept"])  # only stand-ins: nothing counts
    reset = measures(replay(conv(turns(4)), config("reset", 1500)))["facts_kept"]
    assert reset == 0.0


def test_nothing_dropped_keeps_one_and_no_fact_is_nan():
    rows = [(nid, parent, role, "x" * 2000 if role == "user" else "k", extra) for nid, parent, role, _, extra in turns(4)]
    r = replay(conv(rows), config("reset", 1500))
    assert math.isnan(retention(r)["facts_kept"].iloc[0])  # dropped, but it stated no fact
    assert retention(replay(conv(turns(2)))).empty  # no compaction: no row
    assert math.isnan(measures(replay(conv(turns(2))))["facts_kept"])


def test_tune_has_facts_kept_the_mean_over_its_compactions():
    cs = [conv(turns(4), "c1"), conv(turns(6), "c2")]
    df = tune(cs, [config("reset", 1500), config("summarize", 1500), config("reset", 10**6)], progress=False, jobs=1)
    assert "facts_kept" in df.columns and list(df.columns).index("facts_kept") == list(df.columns).index("usd_saved") + 1
    by = df.set_index(["conversation", "config"])["facts_kept"]
    assert by[("c1", 0)] == 0.0 and math.isnan(by[("c1", 1)]) and math.isnan(by[("c1", 2)])
    assert by[("c2", 0)] == pytest.approx(retention(replay(cs[1], config("reset", 1500)))["facts_kept"].mean())
    pd.testing.assert_frame_equal(tune(cs, [config("reset", 1500), config("summarize", 1500), config("reset", 10**6)],
                                       progress=False, jobs=2), df)


def test_retention_is_on_the_package_face():
    assert convlab.retention is retention


@pytest.mark.realdata
def test_the_real_logs_own_compaction_is_scored():
    require()
    c = convlab.read(REAL / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz", progress=False)[0]
    df = retention(replay(c))
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["source"], row["strategy"], row["summary"], row["call"]) == ("log", None, "log", 139)
    assert row["tokens_before"] > 50_000 > 10_000 > row["tokens_after"]  # the transcript, about 4 characters a token
    assert row["facts"] > 500 and 0 < row["facts_kept"] < 0.5 and row["lost"]


def test_a_conversation_given_for_a_replay_is_a_clear_error():
    """A newcomer's first try: retention of what convlab.read returned, not of its replay."""
    from convlab.providers import EchoLLM

    t = Tree()
    t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    t.head = "u1"
    c = Conversation(t, id="c")
    for call in (lambda: retention(c), lambda: convlab.retention_cost(c, EchoLLM()), lambda: compactions([c])):
        with pytest.raises(TypeError, match=r"retention scores a Replay .*got a (Conversation: replay it first|list)"):
            call()
    assert retention(replay(c)).empty  # its replay: no compaction, no row


CODEX_ROLLOUT = "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"


@pytest.mark.realdata
def test_facts_kept_is_unknown_where_nothing_was_measured():
    """A real Codex session that compacted itself once (call 185): a config's ``facts_kept`` scores only what the
    config compacted and a model then read. Where every turn failed (window 17,000: no call answered) or the config
    compacted nothing of its own (no strategy: only the log's compaction), it is NaN, unknown: it was 0.156 and
    0.040 (the log's own compaction's score, the same whatever the config) before."""
    from agentdata import AGENTS, require as require_agents

    from convlab.tuning.grid import config_grid, example_config
    from convlab.tuning.retention import facts_kept

    require_agents()
    [c] = convlab.read(AGENTS / CODEX_ROLLOUT, progress=False)
    example = example_config().read_text(encoding="utf-8")
    failing = replay(c, config_grid(example, {"window": [17_000]})[0])
    assert not failing.answered() and any(x.source == "log" for x in compactions(failing))
    assert math.isnan(facts_kept(failing)) and math.isnan(measures(failing)["facts_kept"])
    plain = replay(c)  # no strategy: the log's own compaction alone
    assert [x.source for x in compactions(plain)] == ["log"] and 0 < retention(plain)["facts_kept"].iloc[0] < 1
    assert math.isnan(facts_kept(plain))
    from convlab.tuning import retention as module

    working = replay(c, config_grid(example, {"window": [64_000]})[0])
    own = module.scored(working)
    assert own and all(x.source == "strategy" and x.summary_by != "stand-in" for x in own)  # its resets
    assert facts_kept(working) == pytest.approx(sum(x.facts_kept() for x in own) / len(own))
    df = tune([c], example, grid={"window": [17_000, 64_000]}, progress=False, jobs=1)
    by = df.set_index("window")["facts_kept"]
    assert math.isnan(by[17_000]) and by[64_000] == pytest.approx(facts_kept(working))
    from convlab.tuning.ranking import totals

    assert math.isnan(totals(df).set_index("window").loc[17_000, "facts_kept"])  # unknown over the corpus too, never 0
