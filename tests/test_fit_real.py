"""What a call on a history a strategy rewrote reads, on the real logs (``convlab.replaying.fit``).

A newcomer's review of issue 34: on the long real Claude Code session (Haiku: 1.49 provider tokens an
o200k_base token), a config that summarized once read -21% in dollars against the log, and +10% with
``--overhead 26000``. The calls after the summary carried the last logged call's overhead, which holds
the tokenizer's surplus on the longer history the summary dropped (~16k tokens a call), and the cost
model priced that surplus as uncached input. They now read what the log's own calls say a call on that
history reads (``hidden + ratio * exact``), the same figure the cost model prices block by block.
"""

from __future__ import annotations

import statistics
import warnings

import pytest

import convlab
from agentdata import AGENTS, require as require_agents
from convlab.replaying.driver import replay
from convlab.tuning.sweep import tune
from realdata import REAL, require

pytestmark = pytest.mark.realdata

LONG = "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
ONE_SUMMARY = "[agent.bot.context]\nwindow = 128000\n[[agent.bot.context.strategy]]\nuse = 'summarize'\n"


@pytest.fixture(scope="module")
def long_session():
    require()
    return convlab.read(REAL / LONG, progress=False)[0]


def test_a_stale_call_reads_what_the_logs_own_calls_say_not_the_carried_surplus(long_session):
    r = replay(long_session, ONE_SUMMARY, model="claude-haiku-4-5")
    stale = [c for c in r.answered() if not c.applies]
    assert len(r.summary_calls) == 1 and len(stale) >= 20
    for c in stale:
        _, _, hidden, ratio, _ = r.fit.of(c.reply)
        assert c.read == round(hidden + ratio * c.exact) and c.overhead == c.read - c.exact
        assert c.cached + c.cache_write <= c.read
    # the hidden prompt is the fitted one, not the logged input less the transcript (which holds the surplus)
    applying = [c.logged - c.exact for c in r.answered() if c.applies and c.logged is not None]
    hidden = r.hidden_overhead()
    assert hidden["overhead_calls"] == 217 and 25_000 < hidden["overhead"] < 35_000 < statistics.median_low(applying)


def test_one_summary_on_a_long_session_is_no_phantom_dollar_loss(long_session):
    df = tune([long_session], ONE_SUMMARY, model="claude-haiku-4-5", progress=False)
    [row] = df.to_dict("records")
    assert row["summaries"] == 1 and row["failed_turns"] == 0
    assert row["cached"] <= row["tokens_read"] < row["baseline_tokens_read"]
    # reading fewer tokens on a warm cache after one cache write costs less, as the log's own figures say
    assert row["usd"] < row["baseline_usd"], (row["usd"], row["baseline_usd"])


def test_a_log_that_reads_more_than_its_transcript_is_named(tmp_path):
    """A Codex rollout whose reasoning is encrypted: the logged input grows ~4.7 tokens a transcript token, so
    what a call on a rewritten history reads is a guess; the frame says by how much, the ranking says so."""
    require_agents()
    path = next((AGENTS / "codex").glob("rollout-*019c8a59*.jsonl"))
    [c] = convlab.read(path, progress=False)
    df = tune([c], ONE_SUMMARY.replace("128000", "200000"), progress=False)
    assert (df["usage_growth"] > 2).all()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        convlab.rank(df)
    text = [str(w.message) for w in said if "per transcript token" in str(w.message)]
    assert text and c.id in text[0] and "content its file does not hold" in text[0]
    # a Claude Code session's growth is its tokenizer's: no such warning
    require()
    [cc] = convlab.read(REAL / "claude_code" / "tool_heavy.jsonl", progress=False)
    assert (tune([cc], ONE_SUMMARY, progress=False)["usage_growth"].fillna(1) <= 2).all()


def test_openai_s_cache_lives_as_long_as_the_log_shows(tmp_path):
    """OpenAI keeps a prefix "5 to 10 minutes of inactivity", up to an hour off-peak (24 hours on request): on
    the real Codex rollout, calls after 23 to 27 idle minutes still read their prefix from the cache. With
    no lifetime given, the prediction uses the one the log's calls after idle gaps show (an hour here); at the
    calls after those gaps the predicted cache reads come closer to the logged ones than under a 5-minute rule
    (which reads nothing there), and the dollars drop."""
    require_agents()
    path = next((AGENTS / "codex").glob("rollout-*019c8a59*.jsonl"))
    [c] = convlab.read(path, progress=False)
    default, short = (replay(c, model="gpt-5.3-codex", prompt_cache_ttl=ttl) for ttl in (None, "5m"))
    assert default.fit.lifetimes == {"gpt-5.3-codex": 3600.0}
    # the calls after an idle gap past 5 minutes: what the log read from the cache there, against each prediction
    after = [i for i in range(1, len(default.calls)) if default.calls[i].time - default.calls[i - 1].time > 300]
    assert len(after) >= 20
    logged = [default.calls[i].logged_cached or 0 for i in after]
    got = {name: [r.calls[i].cached for i in after] for name, r in (("default", default), ("5m", short))}
    assert got["5m"] == [0] * len(after) and sum(1 for n in logged if n > 10_000) >= 15  # the log found its prefix there
    off = {name: sum(abs(a - b) for a, b in zip(v, logged, strict=True)) for name, v in got.items()}
    assert off["default"] < off["5m"] / 2
    assert sum(x.usd for x in default.calls) < sum(x.usd for x in short.calls)
