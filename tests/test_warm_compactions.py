"""Issue 37 (3): the idle trigger against the cache's lifetime. Each priced call says whether the cache still
held what the call before it read (``cache_alive``) and what it paid beyond reading its input from the cache
(``miss_usd``); a sweep counts the compactions that fell on a warm cache (``compactions_warm``) and what the
calls right after them paid (``warm_rewrite_usd``)."""

from __future__ import annotations

import math

import pytest
from realdata import require

import convlab
from convlab.conversation import Conversation
from convlab.replaying.driver import replay
from convlab.replaying.prices import Prices
from convlab.tree import Tree

IDLE = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = {idle}
"""


def gaps_log(gap: float) -> Conversation:
    """Four turns ``gap`` seconds apart, each question 2,000 words (past every cache's minimum)."""
    t, parent, time = Tree(), None, 0.0
    for i in range(4):
        t.add({"id": f"u{i}", "role": "user", "content": f"question {i} " + "word " * 2000, "time": time}, parent)
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": time + 1,
               "usage": {"input_tokens": 2010 + 2020 * i, "output_tokens": 3}}, f"u{i}")
        parent, time = f"a{i}", time + gap
    t.head = parent
    return Conversation(t, id=f"gaps-{gap:g}")


@pytest.mark.parametrize(("gap", "idle", "warm"), [(120, 60, 3), (600, 300, 0), (600, 60, 0)])
def test_a_reset_inside_the_cache_s_lifetime_throws_a_warm_cache_away_one_after_it_does_not(gap, idle, warm):
    """Anthropic's cache lives 5 minutes: a reset after 2 idle minutes rewrites a warm prefix, one after 10 a
    cold one (the cache had let it go)."""
    conv = gaps_log(gap)
    df = convlab.tune([conv], IDLE.format(idle=idle), model="claude-sonnet-4-5", progress=False)
    row = df.iloc[0]
    assert row["resets"] == 3 and row["compactions_warm"] == warm
    r = replay(conv, IDLE.format(idle=idle), model="claude-sonnet-4-5")
    after = [r.calls[x.call - 1] for x in r.limits if x.replaced]
    assert [c.cache_alive for c in after] == [gap < 300] * 3
    assert r.calls[0].cache_alive is None  # the first call: no call before it
    assert row["warm_rewrite_usd"] == pytest.approx(sum(c.miss_usd for c in after) if warm else 0.0)
    if warm:
        assert row["warm_rewrite_usd"] > 0  # the reset made the next call write its prefix again


def test_miss_usd_is_what_a_call_paid_beyond_reading_its_input_from_the_cache():
    r = replay(gaps_log(60), model="claude-sonnet-4-5")
    prices = Prices("claude-sonnet-4-5")
    for c in r.calls:
        assert c.miss_usd == pytest.approx(c.usd - prices.usd(c.read, c.read, 0, c.output))
        assert c.miss_usd >= 0
    assert r.calls[0].miss_usd > r.calls[1].miss_usd  # the first call writes everything, the next reads most of it
    unpriced = replay(gaps_log(60))
    assert all(c.miss_usd is None for c in unpriced.calls)


def test_with_no_cache_rule_a_warm_count_is_unknown_never_0():
    """No model, and a log that names none: no cache rule prices the calls, so whether a compaction fell on a
    warm cache is not known (NaN, as facts_kept). A log whose own model has a rule: counted, its dollars NaN."""
    row = convlab.tune([gaps_log(120)], IDLE.format(idle=60), progress=False).iloc[0]
    assert row["resets"] == 3 and math.isnan(row["compactions_warm"]) and math.isnan(row["warm_rewrite_usd"])
    conv = gaps_log(120)
    for node in conv.message_tree.nodes_in_order():
        if node["role"] == "assistant":
            conv.message_tree.node(node["id"]).setdefault("metadata", {})["model"] = "claude-sonnet-4-5"
    row = convlab.tune([conv], IDLE.format(idle=60), progress=False).iloc[0]
    assert row["compactions_warm"] == 3 and math.isnan(row["warm_rewrite_usd"])
    none = convlab.tune([gaps_log(120)], IDLE.format(idle=3600), progress=False).iloc[0]
    assert none["resets"] == 0 and none["compactions_warm"] == 0  # nothing compacted: none fell on a warm cache


@pytest.mark.realdata
def test_on_a_real_session_warm_compactions_are_some_of_the_compactions_and_cost_part_of_the_dollars():
    real = require()
    [conv] = convlab.read(real / "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz")
    df = convlab.tune([conv], IDLE.replace("reset", "summarize").format(idle=600), grid={"window": [64_000, 128_000]},
                      model="claude-sonnet-4-5", progress=False)
    assert (df["compactions_warm"] <= df["summaries"] + df["resets"]).all()
    assert (df["warm_rewrite_usd"] <= df["usd"]).all() and (df["warm_rewrite_usd"] >= 0).all()
    assert df["compactions_warm"].max() > 0  # the window's compactions fall mid-session, on a warm cache
    ranked = convlab.rank(df, by="usd")
    assert {"compactions_warm", "warm_rewrite_usd"} <= set(ranked.columns)
    assert ranked["compactions_warm"].sum() == df["compactions_warm"].sum()
