"""convlab.tune: rows per (conversation, config), grids, shared work, dask, tokenizing once."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import convlab
import convlab.replaying.plan as plan_module
from convlab.conversation import Conversation
from convlab.replaying.plan import ExactCounts
from convlab.replaying.driver import Replayer, replay
from convlab.replaying.plan import plan
from convlab.tree import Tree
from convlab.context import coerce
from convlab.tuning.sweep import COLUMNS, Setup, config_grid, rows, tune, tune_cost

from realdata import REAL, require

BASE = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 100000
"""


def conv(cid, n_turns, chars=4000, gap=60.0, offset=0):
    """A linear chat: each question has ``chars`` characters, replies carry growing usage."""
    t = Tree()
    parent, time = None, 0.0
    for i in range(n_turns):
        t.add({"id": f"{cid}u{i}", "role": "user", "content": f"{cid} question {i} " + "x" * (chars + offset), "time": time}, parent)
        t.add({"id": f"{cid}a{i}", "role": "assistant", "content": f"{cid} answer {i}", "time": time + 1,
               "usage": {"input_tokens": 1000 * (i + 1), "output_tokens": 3}}, f"{cid}u{i}")
        parent, time = f"{cid}a{i}", time + gap * (i + 1)
    t.head = parent
    return Conversation(t, id=cid)


CONVS = [conv("c1", 8), conv("c2", 12, gap=500.0, offset=7), conv("c3", 3)]
AXES = {"strategy[1].over_tokens": [3000, 5000, 100000], "strategy[0].idle_secs": [400, 3600]}


def expected(c, config):
    """What a plain replay says about one (conversation, config)."""
    r = replay(c, config)
    reasons = [x["reason"] for x in r.limits]
    return {
        "calls": len(r.calls),
        "limits_full": reasons.count("full"),
        "limits_idle": reasons.count("idle"),
        "summaries": sum(1 for x in r.limits if x["replaced"] and x["strategy"] == "summarize"),
        "resets": sum(1 for x in r.limits if x["replaced"] and x["strategy"] == "reset"),
        "stale": len(r.stale),
        "max_count": max([c["count"] for c in r.calls] + [x["tokens"] for x in r.limits]),
        "tokens_read": sum(convlab.tree.input_tokens(e["usage"]) for e in r.session.events if e["type"] == "llm.completed"),
    }


def test_one_row_per_conversation_and_config_matching_plain_replays():
    df = tune(CONVS, BASE, grid=AXES, progress=False)
    assert list(df.columns) == ["conversation", "source", "config", *AXES, *[c for c in COLUMNS]]
    assert len(df) == len(CONVS) * 6
    assert list(df["conversation"]) == [c.id for c in CONVS for _ in range(6)]
    docs = config_grid(BASE, AXES)
    for _, row in df.iterrows():
        c = next(x for x in CONVS if x.id == row["conversation"])
        want = expected(c, docs[row["config"]])
        assert {k: row[k] for k in want} == want, (row["conversation"], row["config"])
        # every row carries its conversation's baseline: the same conversation replayed with no strategy
        assert row["baseline_tokens_read"] == expected(c, None)["tokens_read"]
        assert row["threshold"] == min(row["strategy[1].over_tokens"], 200000 - 16000)
    # the sweep really varies: summaries fire at the low over_tokens, idle resets at the short idle_secs
    assert df["summaries"].max() > 0 and df["resets"].max() > 0 and df["summaries"].min() == 0
    assert (df["err_usage_p95"].dropna() >= 0).all()


def test_configs_as_a_list_of_texts_documents_and_parsed_configs():
    text = BASE
    doc = config_grid(BASE, {"window": [30000]})[0]
    parsed = convlab.load_config(BASE)["bot"]
    df = tune(CONVS[0], [text, doc, parsed], progress=False)
    assert list(df["config"]) == [0, 1, 2] and list(df["window"]) == [200000, 30000, 200000]
    assert df.loc[0, "tokens_read"] == df.loc[2, "tokens_read"]


def parsed(docs, worker=None):
    return [(j, Setup(coerce(d, "bot"), worker)) for j, d in enumerate(docs)]


#: The cost model's knobs, as tests sweep them: the defaults, then each set.
KNOBS = [{}, {"summary_size": 0.5}, {"summary_size": 300}, {"overhead": 2500}, {"summary_size": 0.05, "overhead": 0}]


@pytest.mark.parametrize("knobs", KNOBS, ids=str)
def test_shared_replays_equal_replaying_every_config(knobs):
    counts = ExactCounts()
    configs = parsed(config_grid(BASE, AXES))
    for c in CONVS + HIDDEN_CONVS:
        p = plan(c)
        counts.prime(p.texts())
        shared, each = rows(p, counts, configs, "bot", knobs=knobs), rows(p, counts, configs, "bot", share=False, knobs=knobs)
        assert _clean(shared) == _clean(each)


def _clean(rows):
    return [(i, {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in m.items()}) for i, m in rows]


HIDDEN = 1000


def hidden_prompt_conv(cid, n_turns, chars=4000, gap=60.0, hidden=HIDDEN):
    """Like ``conv``, but each logged usage is the exact count of the transcript plus ``hidden`` hidden tokens."""
    from convlab.tokens import count_tokens

    t = Tree()
    parent, time, read = None, 0.0, 0
    for i in range(n_turns):
        question, answer = f"{cid} question {i} " + "x" * chars, f"{cid} answer {i}"
        read += count_tokens(question)
        t.add({"id": f"{cid}u{i}", "role": "user", "content": question, "time": time}, parent)
        t.add({"id": f"{cid}a{i}", "role": "assistant", "content": answer, "time": time + 1,
               "usage": {"input_tokens": read + hidden, "output_tokens": 3}}, f"{cid}u{i}")
        read += count_tokens(answer)
        parent, time = f"{cid}a{i}", time + gap * (i + 1)
    t.head = parent
    return Conversation(t, id=cid)


HIDDEN_CONVS = [hidden_prompt_conv("h1", 10), hidden_prompt_conv("h2", 12, gap=500.0)]


def test_tokens_read_keeps_the_hidden_prompt_after_a_strategy_fires():
    df = tune(HIDDEN_CONVS, BASE, grid=AXES, progress=False)
    docs = config_grid(BASE, AXES)
    fired = 0
    for _, row in df.iterrows():
        c = next(x for x in HIDDEN_CONVS if x.id == row["conversation"])
        r = replay(c, docs[row["config"]])
        s = r.session
        calls = r.calls
        # every model call, logged reply or stale, reads the transcript plus the hidden prompt
        assert [x["read"] for x in calls] == [x["exact"] + HIDDEN for x in calls], (row["conversation"], row["config"])
        completed = [e for e in s.events if e["type"] == "llm.completed"]
        model_reads = sum(e["usage"]["input_tokens"] for e in completed if not e.get("summary"))
        assert model_reads == sum(x["exact"] for x in calls) + HIDDEN * len(calls)
        assert row["tokens_read"] == sum(e["usage"]["input_tokens"] for e in completed)
        fired += row["stale"] > 0
    assert fired >= 4
    # where nothing fired (the baseline's row): the log's usage, unchanged
    quiet = df[(df["stale"] == 0) & (df["summary_calls"] == 0)]
    assert len(quiet) >= 1
    for _, row in quiet.iterrows():
        c = next(x for x in HIDDEN_CONVS if x.id == row["conversation"])
        assert row["tokens_read"] == sum(a["usage"]["input_tokens"] for _, a in c.tree.nodes(data=True) if a.get("usage"))


def test_a_config_that_fires_is_not_cheaper_by_the_hidden_prompt():
    """With the hidden prompt left out after a rewrite, a config that fires looked cheaper by HIDDEN per stale call."""
    c = HIDDEN_CONVS[0]
    reset = BASE.replace("idle_secs = 3600", "idle_secs = 100")
    df = tune([c], [BASE, reset], progress=False)
    base, fired = df.iloc[0], df.iloc[1]
    assert base["resets"] == 0 and fired["resets"] > 0 and fired["stale"] > 0
    r = replay(c, reset)
    s = r.session
    stale = [x for x in r.calls if not x["applies"]]
    assert len(stale) == fired["stale"]
    assert fired["tokens_read"] == sum(x["exact"] for x in r.calls) + HIDDEN * len(r.calls) + sum(
        e["usage"]["input_tokens"] for e in s.events if e["type"] == "llm.completed" and e.get("summary"))
    assert base["tokens_read"] == sum(a["usage"]["input_tokens"] for _, a in c.tree.nodes(data=True) if a.get("usage"))


def test_shared_replays_carry_the_hidden_overhead_into_forks():
    counts = ExactCounts()
    configs = parsed(config_grid(BASE, AXES))
    for c in HIDDEN_CONVS:
        p = plan(c)
        counts.prime(p.texts())
        base = replay(c)
        assert [x["overhead"] for x in base.calls] == [HIDDEN] * len(base.calls)
        shared = rows(p, counts, configs, "bot")
        assert _clean(shared) == _clean(rows(p, counts, configs, "bot", share=False))
        assert any(m["stale"] > 0 and m["first_limit_call"] > 1 for _, m in shared)  # a fork from a later turn


def test_shared_replays_equal_replaying_every_config_with_workers_among_them():
    """Issue 22 (3): configs that differ only in the worker answering their limits share the replay up to the
    first limit a worker answers, and each row still equals its own replay from the start."""
    from convlab.tuning import compact

    counts = ExactCounts()
    docs = config_grid(BASE, AXES)
    setups = [(j, Setup(cfg.config, w)) for w in (None, compact.sliding_window(keep_turns=2), compact.clear_tool_results(keep=1))
              for j, cfg in parsed(docs)]
    setups = [(j, s) for j, (_, s) in enumerate(setups)]
    for c in CONVS + HIDDEN_CONVS:
        p = plan(c)
        counts.prime(p.texts())
        shared = rows(p, counts, setups, "bot")
        assert _clean(shared) == _clean(rows(p, counts, setups, "bot", share=False))


@pytest.mark.realdata
def test_shared_replays_equal_replaying_every_config_on_the_real_session():
    require()
    c = convlab.read(REAL / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz")[0]
    counts = ExactCounts()
    p = plan(c)
    counts.prime(p.texts())
    configs = parsed(config_grid(BASE, {"window": [60000, 148431, 300000], "strategy[1].over_tokens": [None]}))
    shared = rows(p, counts, configs, "bot")
    assert _clean(shared) == _clean(rows(p, counts, configs, "bot", share=False))
    assert shared[1][1]["first_limit_call"] == 131


# -- the trade-off (issue 15 part 3) -------------------------------------------


def test_the_frame_names_each_rows_file_its_baseline_and_hidden_overhead():
    """Issue 15 (3): "there is no source-file column"; the ranking needs each conversation's baseline (the
    same conversation replayed with no strategy) and hidden overhead, as columns of the frame."""
    c = hidden_prompt_conv("h", 6)
    c.source = "logs/h.jsonl"
    df = tune([c, Conversation(_no_usage(CONVS[0]), id="plain")], BASE, grid={"strategy[1].over_tokens": [3000, 100000]},
              progress=False)
    assert list(df["source"][:2]) == ["logs/h.jsonl"] * 2 and df["source"][2:].isna().all()
    assert list(df["overhead"]) == [HIDDEN] * 2 + [0] * 2  # a log with no usage shows no hidden prompt
    base = replay(c)
    assert (df["baseline_tokens_read"][:2] == sum(x["read"] for x in base.calls)).all()
    assert list(df["threshold"]) == [3000, 100000] * 2
    fired = df.iloc[0]
    assert fired["summaries"] > 0 and fired["tokens_read"] != fired["baseline_tokens_read"]
    assert df.iloc[1]["tokens_read"] == df.iloc[1]["baseline_tokens_read"]  # nothing fired: the baseline itself
    assert df["saved"].tolist() == pytest.approx((1 - df["tokens_read"] / df["baseline_tokens_read"]).tolist())
    assert df["saved"].iloc[0] < 0 and df["saved"].iloc[1] == 0  # its summaries read more than they saved
    # a threshold by the window, and none without a size rule
    assert list(tune([c], [BASE, BASE.replace('use = "summarize"\nover_tokens = 100000', 'use = "summarize"'),
                         BASE.replace("window = 200000", "")], progress=False)["threshold"].astype(object)) == [100000, 184000, 100000]
    idle_only = '[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = "reset"\nidle_secs = 60\n'
    assert tune([c], idle_only, progress=False)["threshold"].isna().all()


# -- the cost model's knobs ------------------------------------------------------


def test_a_bigger_simulated_summary_raises_every_later_count():
    """Issue 15 (3): "The simulated summary's size cannot be set, and it decides every later count"."""
    c = hidden_prompt_conv("s", 16)
    config = BASE.replace("over_tokens = 100000", "over_tokens = 6000")
    small, big = (replay(c, config, summary_size=size) for size in (0.05, 0.5))
    first = small.limits[0]
    assert first["call"] == big.limits[0]["call"] == 9 and first["strategy"] == "summarize" and first["replaced"]
    # what it summarized was the same; the summary 10 times longer, and every count after it higher
    assert big.limits[0]["summary_tokens"] == pytest.approx(10 * first["summary_tokens"], rel=0.02)
    again = big.limits[1]["call"]
    assert all(b["count"] > a["count"] for a, b in zip(small.calls[8:again - 1], big.calls[8:again - 1]))
    assert (len(small.limits), len(big.limits)) == (1, 2)  # so the bigger one summarizes again sooner
    as_tokens = replay(c, config, summary_size=1234)
    assert {x["summary_tokens"] for x in as_tokens.limits if x["summary_tokens"] is not None} == {1234}
    df = tune([c], config, progress=False, summary_size=0.5)
    assert df["summary_tokens_max"].iloc[0] == max(x["summary_tokens"] for x in big.limits)
    assert df["summaries"].iloc[0] == 2


def test_a_given_overhead_replaces_the_logged_one():
    """Issue 15 (3): "the hidden prompt overhead taken from the log or given": every call the log's usage does
    not answer reads the transcript plus the overhead given; calls the log answers keep its usage."""
    c = hidden_prompt_conv("o", 10)
    reset = BASE.replace("idle_secs = 3600", "idle_secs = 100")
    logged, given = replay(c, reset), replay(c, reset, overhead=7777)
    assert [x["applies"] for x in logged.calls] == [x["applies"] for x in given.calls]
    assert any(not x["applies"] for x in given.calls) and any(x["applies"] for x in given.calls)
    for a, b in zip(logged.calls, given.calls):
        if b["applies"]:
            assert b["read"] == a["read"] == b["logged"] and b["overhead"] == HIDDEN  # the log's own usage
        else:
            assert (a["read"], b["read"]) == (a["exact"] + HIDDEN, b["exact"] + 7777)
            assert b["overhead"] == 7777
    # a log with no usage at all: every call reads the transcript plus the overhead given
    plain = replay(Conversation(_no_usage(CONVS[0]), id="plain"), overhead=500)
    assert [x["read"] for x in plain.calls] == [x["exact"] + 500 for x in plain.calls]
    df = tune([c], [BASE, reset], progress=False, overhead=7777)
    assert (df["overhead"] == 7777).all()
    assert df["tokens_read"].iloc[1] > tune([c], reset, progress=False)["tokens_read"].iloc[0]


def _no_usage(c):
    t = Tree()
    for _, a in sorted(c.tree.nodes(data=True), key=lambda x: x[1]["seq"]):
        t.add({k: a[k] for k in ("id", "role", "content", "time")}, a["parent"])
    t.head = c.head
    return t


@pytest.mark.parametrize("knobs, message", [
    ({"summary_size": 0}, "summary_size as tokens must be at least 1, got 0"),
    ({"summary_size": 1.5}, "summary_size as a ratio must be more than 0 and at most 1, got 1.5"),
    ({"summary_size": 2000.0}, r"\(for 2000 tokens, give the whole number 2000\)"),
    ({"summary_size": "10%"}, "summary_size must be a ratio"),
    ({"overhead": -1}, "overhead must be a whole number of tokens"),
    ({"overhead": 1.5}, "overhead must be a whole number of tokens"),
])
def test_bad_knobs_say_what_to_pass_before_any_work(knobs, message, monkeypatch):
    monkeypatch.setattr(convlab.tuning.sweep, "plan", lambda c: pytest.fail("work started"))
    with pytest.raises(ValueError, match=message):
        tune(CONVS, BASE, progress=False, **knobs)
    monkeypatch.setattr(plan_module, "count_batch", lambda *a: pytest.fail("work started"))
    with pytest.raises(ValueError, match=message):
        replay(CONVS[0], BASE, **knobs)


def test_each_distinct_message_is_tokenized_once_per_sweep(monkeypatch):
    """In one process (jobs=1): worker processes each start from the calling process's counts."""
    seen: list[str] = []
    batch, one = plan_module.count_batch, plan_module.count_tokens

    def spy_batch(texts, encoding="o200k_base"):
        seen.extend(texts)
        return batch(texts, encoding)

    def spy_one(text, encoding="o200k_base"):
        seen.append(text)
        return one(text, encoding)

    monkeypatch.setattr(plan_module, "count_batch", spy_batch)
    monkeypatch.setattr(plan_module, "count_tokens", spy_one)
    df = tune(CONVS, BASE, grid=AXES, progress=False, jobs=1)
    assert df["summaries"].sum() > 0  # summaries were written and counted too
    assert len(seen) == len(set(seen)), "a text was tokenized twice"
    messages = {convlab.tokens.content_text(a["content"]) for c in CONVS for _, a in c.tree.nodes(data=True)}
    assert messages <= set(seen)


def test_progress_bar_on_long_runs_and_off_on_request(capsys):
    tune(CONVS, BASE, grid=AXES, progress=True)
    assert "tune" in capsys.readouterr().err
    tune(CONVS, BASE, grid=AXES, progress=False)
    assert capsys.readouterr().err == ""


def test_bad_scheduler_and_empty_configs():
    with pytest.raises(ValueError, match="scheduler"):
        tune(CONVS, BASE, scheduler="spark", progress=False)
    with pytest.raises(ValueError, match="at least one config"):
        tune(CONVS, [], progress=False)


def test_a_config_forks_from_the_replay_it_agrees_with_longest(monkeypatch):
    """Issue 14 (2): "a fork starts from the state where its config first diverges, not from a replay
    of the whole prefix": a config that agrees with an earlier config's replay past the point where that
    replay left the baseline forks from that replay, where they first differ, not from the baseline."""
    forks = []
    real = Replayer.fork

    def spy(self, turn, config=None, worker=None):
        forks.append((self.plan.conversation_id, bool(self.config.strategies), min(self.starts), turn))
        return real(self, turn, config, worker)

    monkeypatch.setattr(Replayer, "fork", spy)
    df = tune(CONVS, BASE, grid=AXES, progress=False, jobs=1)
    from_forks = [f for f in forks if f[1]]
    assert from_forks and all(turn > start for _, _, start, turn in from_forks)
    # fewer replays than configs that fire: the others share a replay and its row
    fired = int((df["limits_full"] + df["limits_idle"] + df["limits_overflow"] > 0).sum())
    assert len(forks) < fired


def test_worker_processes_give_the_frame_one_process_gives(tmp_path, monkeypatch):
    """Issue 14 (2): "tune runs its replays in parallel on the local machine by default (processes;
    jobs= ..., 1 for serial)" and the frame is the same row for row."""
    import multiprocessing
    import os

    import convlab.tuning.sweep as sweep

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the spy below reaches the workers only through fork")
    real = sweep.rows

    def spy(*args, **kwargs):
        (tmp_path / str(os.getpid())).touch()
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "rows", spy)
    serial = tune(CONVS, BASE, grid=AXES, progress=False, jobs=1)
    assert [p.name for p in tmp_path.iterdir()] == [str(os.getpid())]
    (tmp_path / str(os.getpid())).unlink()
    parallel = tune(CONVS, BASE, grid=AXES, progress=False, jobs=2)
    pd.testing.assert_frame_equal(parallel, serial)
    workers = {p.name for p in tmp_path.iterdir()}
    assert len(workers) == 2 and str(os.getpid()) not in workers
    # one conversation and two jobs: its configs split in two runs, one per worker; the same rows
    for p in tmp_path.iterdir():
        p.unlink()
    one = tune(CONVS[1], BASE, grid=AXES, progress=False, jobs=2)
    pd.testing.assert_frame_equal(one, serial[serial["conversation"] == "c2"].reset_index(drop=True))
    assert len({p.name for p in tmp_path.iterdir()}) == 2
    # the cost model's knobs reach the workers: the same frame, and not the default's
    for knobs in KNOBS[1:]:
        here = tune(CONVS + HIDDEN_CONVS, BASE, grid=AXES, progress=False, jobs=1, **knobs)
        pd.testing.assert_frame_equal(tune(CONVS + HIDDEN_CONVS, BASE, grid=AXES, progress=False, jobs=2, **knobs), here)
        assert not here.equals(tune(CONVS + HIDDEN_CONVS, BASE, grid=AXES, progress=False, jobs=1)), knobs


def test_one_conversation_on_two_jobs_replays_its_baseline_once_here(tmp_path, monkeypatch):
    """Issue 26: with fewer conversations than jobs the baseline is replayed once, in the calling
    process, and the forked workers fork from it; a config that never leaves it costs no worker,
    and configs that leave it together share a unit. The frame is the one of jobs=1, row for row."""
    import multiprocessing
    import os

    import convlab.tuning.sweep as sweep

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the workers see the baseline and the spies only through fork")
    real_run, real_rows = sweep.Baseline.run.__func__, sweep.rows

    def run(cls, *args, **kwargs):
        (tmp_path / f"base-{os.getpid()}-{len(list(tmp_path.glob('base-*')))}").touch()
        return real_run(cls, *args, **kwargs)

    def spy(p, counts, configs, *args, **kwargs):
        assert kwargs["base"] is not None  # a worker never replays the baseline again
        (tmp_path / f"rows-{os.getpid()}-{'.'.join(str(j) for j, _ in configs)}").touch()
        return real_rows(p, counts, configs, *args, **kwargs)

    axes = {"strategy[1].over_tokens": [3000, 5000, 100000], "strategy[0].idle_secs": [400, 10**6]}  # 100000, 10**6: never fires
    serial = tune(CONVS[1], BASE, grid=axes, progress=False, jobs=1)
    monkeypatch.setattr(sweep.Baseline, "run", classmethod(run))
    monkeypatch.setattr(sweep, "rows", spy)
    parallel = tune(CONVS[1], BASE, grid=axes, progress=False, jobs=2)
    pd.testing.assert_frame_equal(parallel, serial)
    assert [p.name for p in tmp_path.glob("base-*")] == [f"base-{os.getpid()}-0"]
    units = [p.name.split("-") for p in tmp_path.glob("rows-*")]
    # the units run in worker processes (which worker takes which is the pool's: under load one may take all)
    assert units and str(os.getpid()) not in {pid for _, pid, _ in units}
    given = sorted(int(j) for _, _, js in units for j in js.split("."))
    fired = serial["limits_full"] + serial["limits_idle"] + serial["limits_overflow"] > 0
    assert not fired.all() and given == sorted(serial.index[fired])  # the rest are the baseline's rows, given here


def test_dask_gives_a_worker_thread_one_batch_at_a_time_longest_first(monkeypatch):
    """Issue 39: submitted at once, dask queued batches behind a worker's long one while the other worker ran out of
    work (the real corpus's costliest conversation ran alone at the end). A batch is submitted only when one in
    flight is done, as many in flight as worker threads, in the batches' order, and the frame is the local one."""
    distributed = pytest.importorskip("distributed")
    from convlab.tuning import workers

    local = tune(CONVS, BASE, grid=AXES, progress=False, jobs=1)
    flight: list[int] = []
    order: list[int] = []
    real_submit = distributed.Client.submit

    def submit(self, fn, *args, **kwargs):
        future = real_submit(self, fn, *args, **kwargs)
        if getattr(fn, "__name__", "") == "_dask_batch":
            order.append(-kwargs["priority"])
            live.append(future)
            flight.append(sum(not f.done() for f in live))
        return future

    live: list = []
    monkeypatch.setattr(distributed.Client, "submit", submit)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = tune(CONVS, BASE, grid=AXES, progress=False, scheduler="dask", client=client, chunk=1)
    pd.testing.assert_frame_equal(remote, local)
    assert len(order) == min(len(CONVS) * 6, workers.BATCHES * 2) > 2  # more batches than threads: the rest waited
    assert max(flight) <= 2  # never more in flight than the cluster's two threads
    assert order == sorted(order)  # in the batches' order: the longest units' first


def test_dask_batches_are_of_about_equal_estimated_cost_a_long_unit_alone():
    from convlab.tuning.workers import _batches

    tasks = [(i, [0]) for i in range(7)]
    batches = _batches(tasks, [40, 30, 5, 5, 5, 5, 5], 3)
    assert batches == [[(0, [0])], [(1, [0])], tasks[2:]]  # the long ones alone and first, the short ones together
    batches = _batches(tasks, [40, 30, 10, 10, 10, 10, 10], 3)
    assert [sum([40, 30, 10, 10, 10, 10, 10][i] for i, _ in b) for b in batches] == [40, 40, 40]  # equal shares
    assert sorted(t for b in batches for t in b) == tasks  # every unit once


def test_bad_jobs_and_chunk_say_what_to_pass():
    with pytest.raises(ValueError, match=r"jobs must be a positive whole number \(1: one process"):
        tune(CONVS, BASE, jobs=0, progress=False)
    with pytest.raises(ValueError, match="jobs must be"):
        tune(CONVS, BASE, jobs="2", progress=False)
    with pytest.raises(ValueError, match="jobs= is for the local scheduler"):
        tune(CONVS, BASE, jobs=2, scheduler="dask", progress=False)
    with pytest.raises(ValueError, match="chunk must be"):
        tune(CONVS, BASE, chunk=0, progress=False)


def test_dask_equals_local_row_for_row_and_workers_ran_the_tasks():
    distributed = pytest.importorskip("distributed")
    local = tune(CONVS, BASE, grid=AXES, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            with distributed.get_task_stream(client) as stream:
                remote = tune(CONVS, BASE, grid=AXES, progress=False, scheduler="dask", client=client, chunk=2)
            workers = set(cluster.scheduler.workers)
    pd.testing.assert_frame_equal(remote, local)
    pd.testing.assert_frame_equal(remote, tune(CONVS, BASE, grid=AXES, progress=False, jobs=1))
    knobs = {"summary_size": 0.5, "overhead": 2500}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = tune(CONVS, BASE, grid=AXES, progress=False, scheduler="dask", client=client, chunk=2, **knobs)
    pd.testing.assert_frame_equal(remote, tune(CONVS, BASE, grid=AXES, progress=False, jobs=1, **knobs))
    assert not remote.equals(local)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:  # more units than batches: a batch of several, told one by one
            many = tune(CONVS, BASE, grid=AXES, progress=False, scheduler="dask", client=client, chunk=1)
    assert len(CONVS) * 6 > convlab.tuning.workers.BATCHES
    pd.testing.assert_frame_equal(many, local)
    ran = [t for t in stream.data if t["key"].startswith("_dask_batch-")]
    # 6 configs in chunks of 2, per conversation: units in batches, at most workers.BATCHES a worker thread
    assert len(ran) == min(len(CONVS) * 3, convlab.tuning.workers.BATCHES * 2)
    assert {t["worker"] for t in ran} <= workers and len({t["worker"] for t in ran}) >= 1


def test_a_grid_on_a_base_without_the_agents_table_is_an_error_not_a_table_to_fill_in():
    """Issue 15: "a config file with no agent.<id>.context table for the chosen agent is an error that names
    the tables it did find" — also when a grid would otherwise create the table."""
    with pytest.raises(convlab.ConfigError, match=r"agent\.bot\.contxt"):
        config_grid("[agent.bot.contxt]\nwindow = 64000\n", {"window": [64000]})
    assert config_grid("", {"window": [64000]})[0]["agent"]["bot"]["context"]["window"] == 64000  # an empty base is fine


# -- real summaries (issue 12 part 2) -----------------------------------------


@pytest.fixture(autouse=True)
def _no_summaries_in_home(tmp_path_factory, monkeypatch):
    """The default summary cache goes to a temporary folder, never the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))


class Counting:
    """A summarizer that writes its own short summaries (what it writes depends on what it reads only) and
    records each call, with the process it ran in."""

    def __init__(self):
        self.requests = []
        self.pids = []

    def complete(self, request):
        import os

        from convlab.tokens import count_tokens

        self.requests.append(request)
        self.pids.append(os.getpid())
        read = count_tokens(request["messages"])
        return {"content": f"summary: {read} tokens read", "usage": {"input_tokens": read, "output_tokens": 6}}

    def keys(self):
        from convlab.replaying.summaries import model_of, request_key

        return [request_key(model_of(self, q), q) for q in self.requests]


class Unpicklable(Counting):
    def __reduce__(self):
        raise TypeError("this provider holds a live client and must never be pickled")


SUMMARY_AXES = {"strategy[1].over_tokens": [3000, 5000, 100000], "strategy[0].idle_secs": [400, 3600]}


def test_a_sweep_pays_once_per_summary_and_a_second_sweep_nothing(tmp_path):
    """Issue 12 (2): "A 100-config sweep never pays twice for the same summary and a rerun pays nothing";
    "a second sweep makes zero summary calls; cache=False makes them again"."""
    llm = Counting()
    first = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=llm, summary_cache=tmp_path)
    made = len(llm.requests)
    assert made >= 3 and len(set(llm.keys())) == made  # never the same summary twice
    assert first["summary_calls"].sum() > made  # many replays asked, the summarizer was called once per summary
    cost = first.attrs["summary_cost"]
    assert (cost.calls, cost.input_tokens, cost.cached) == (made, sum(q_read(q) for q in llm.requests), 0)
    second = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=llm, summary_cache=tmp_path)
    assert len(llm.requests) == made
    pd.testing.assert_frame_equal(second, first)
    assert (second.attrs["summary_cost"].calls, second.attrs["summary_cost"].cached) == (0, made)
    for _ in range(2):  # no cache: each sweep calls again, once per summary
        before = len(llm.requests)
        tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=llm, summary_cache=False)
        assert len(llm.requests) - before == made
    assert len(list(tmp_path.rglob("*.json"))) == made


def q_read(request):
    from convlab.tokens import count_tokens

    return count_tokens(request["messages"])


def test_the_frame_gains_the_summaries_real_lengths(tmp_path):
    """Issue 12 (2): "The sweep's frame gains the summaries' real lengths"."""
    from convlab.engine import SUMMARY_PREFIX
    from convlab.tokens import count_tokens

    llm = Counting()
    df = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=llm, summary_cache=tmp_path, jobs=1)
    docs = config_grid(BASE, SUMMARY_AXES)
    assert df["summaries"].sum() > 0
    for _, row in df.iterrows():
        c = next(x for x in CONVS if x.id == row["conversation"])
        r = replay(c, docs[row["config"]], summarizer=llm, summary_cache=tmp_path)
        texts = [convlab.content_text(n["content"]).removeprefix(SUMMARY_PREFIX) for _, n in r.session.tree.nodes(data=True)
                 if n["kind"] == "summary"]
        assert all(t.startswith("summary: ") for t in texts)  # the summarizer's, not the stand-in
        lengths = [count_tokens(t) for t in texts]
        assert (row["summary_tokens"], row["summary_tokens_max"]) == (sum(lengths), max(lengths, default=0))
    stand_in = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False)
    assert (stand_in["summary_tokens"] > df["summary_tokens"]).any()  # the stand-in's lengths are not the real ones


def test_dry_run_says_what_a_real_run_then_spends(tmp_path):
    """Issue 12 (2): "tune(..., dry_run=True) says before anything is spent how many summary calls and input
    tokens the sweep needs and how many the cache already holds"; "dry_run figures equal what a real run then
    spends"."""
    c = conv("d1", 3)  # one summary per replay: every figure is known before any call
    axes = {"strategy[1].over_tokens": [2500, 100000], "strategy[1].prompt": ["Summarize.", "In one line.", "As a list."]}
    llm = Counting()
    dry = tune_cost([c], BASE, grid=axes, progress=False, summarizer=llm, summary_cache=tmp_path)
    assert llm.requests == [] and list(tmp_path.rglob("*.json")) == []  # nothing spent, nothing written
    assert dry.exact and dry.cached == 0 and dry.calls == 3  # one per prompt: the prompt is in the key
    df = tune([c], BASE, grid=axes, progress=False, summarizer=llm, summary_cache=tmp_path)
    assert len(llm.requests) == dry.calls and sum(q_read(q) for q in llm.requests) == dry.input_tokens
    spent = df.attrs["summary_cost"]
    assert (spent.calls, spent.input_tokens) == (dry.calls, dry.input_tokens)
    again = tune_cost([c], BASE, grid=axes, progress=False, summarizer=llm, summary_cache=tmp_path)
    assert (again.calls, again.input_tokens, again.cached, again.cached_input_tokens) == (0, 0, dry.calls, dry.input_tokens)
    # in worker processes: the same figures
    llm2 = Counting()
    assert tune_cost([c], BASE, grid=axes, progress=False, summarizer=llm2, summary_cache=False, jobs=2) == dry


def test_tune_takes_no_dry_run_tune_cost_is_the_dry_run(tmp_path):
    """Issue 21 made the dry run its own function, tune_cost; issue 36: tune no longer takes dry_run= at all
    ("the dry runs are their own functions"), and says which function to call."""
    c, config = conv("d2", 3), BASE.replace("over_tokens = 100000", "over_tokens = 2500")
    with pytest.raises(TypeError, match=r"takes no dry_run: convlab.tune_cost\(...\) says what the summaries would cost"):
        tune([c], config, progress=False, summarizer=Counting(), summary_cache=tmp_path, dry_run=True)
    assert not any(tmp_path.iterdir())  # refused before any work
    assert tune_cost([c], config, progress=False, summarizer=Counting(), summary_cache=tmp_path).calls == 1
    assert convlab.tune_cost is tune_cost


def test_dry_run_marks_what_rests_on_a_summary_not_made_yet(tmp_path):
    """A later summary of a replay reads the earlier one: before that one is made the dry run can only count
    it with the stand-in in its place, and says so (estimated, not exact). With a summarizer that writes what
    the stand-in writes (EchoLLM), the estimate is what the real run spends."""
    llm = Counting()
    dry = tune_cost(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=llm, summary_cache=tmp_path)
    assert not dry.exact and 0 < dry.estimated < dry.calls and llm.requests == []
    echo = convlab.EchoLLM()
    dry = tune_cost(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=echo, summary_cache=tmp_path / "echo")
    df = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=echo, summary_cache=tmp_path / "echo")
    assert not dry.exact and (echo.calls, df.attrs["summary_cost"].input_tokens) == (dry.calls, dry.input_tokens)
    # with the summaries made, a dry run knows everything
    assert tune_cost(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=echo, summary_cache=tmp_path / "echo").exact


def test_the_summarizer_stays_in_the_calling_process_and_is_never_pickled(tmp_path):
    """Issue 12 (2) / 14 (2): "Summary calls and cache writes happen in the calling process (the provider is
    never pickled ...)"; worker processes, one process and the frames agree row for row."""
    import os

    llm = Unpicklable()
    with pytest.raises(TypeError, match="never be pickled"):
        import pickle

        pickle.dumps(llm)
    parallel = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=llm, summary_cache=tmp_path / "a", jobs=2)
    assert llm.requests and set(llm.pids) == {os.getpid()}
    serial = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=Unpicklable(), summary_cache=tmp_path / "b", jobs=1)
    pd.testing.assert_frame_equal(parallel, serial)
    assert sorted(p.name for p in (tmp_path / "a").rglob("*.json")) == sorted(p.name for p in (tmp_path / "b").rglob("*.json"))


def test_a_summarizer_that_breaks_fails_its_summary_calls_with_its_own_error_and_the_sweep_goes_on(tmp_path):
    """Issue 19 (1): whatever a provider raises is a failed call (ProviderError "failed"), a summarizer too:
    the sweep goes on without those summaries and says so, naming the error; nothing is cached."""

    class Broken:
        def complete(self, request):
            raise RuntimeError("the summarizer broke (Authorization: Bearer sk-live-0123456789abcdef)")

    for jobs in (1, 2):
        with pytest.warns(convlab.SummaryWarning, match=r"failed \(RuntimeError: the summarizer broke") as caught:
            df = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=Broken(), summary_cache=tmp_path, jobs=jobs)
        assert len(df) == len(CONVS) * 6 and not any("sk-live" in str(w.message) for w in caught)
        assert not list(tmp_path.rglob("*.json"))


def test_a_real_sdk_summarizer_is_called_from_this_process_once_per_summary(tmp_path):
    """Issue 12 (2) over the openai SDK on a mock transport (its client holds the key and is never pickled,
    convlab.OpenAIChat refuses to be): a sweep in worker processes sends every summary request through the
    client in this process, once each; a dry run first says what it then spends; a rerun sends nothing."""
    import json
    import pickle

    import httpx
    from providers_wire import MockAPI, ok, openai_completion, openai_llm, openai_usage

    from convlab.tokens import count_tokens

    def answer(request):
        messages = json.loads(request.content)["messages"]
        read = count_tokens(messages)
        return ok(openai_completion(f"{len(messages) - 1} messages, {read} tokens.", usage=openai_usage(read, 5)))

    api = MockAPI(httpx, [answer] * 200)
    llm = openai_llm(api, "gpt-test")
    with pytest.raises(TypeError, match="is not pickled"):
        pickle.dumps(llm)
    axes = {"strategy[1].over_tokens": [2500, 100000], "strategy[1].prompt": ["Summarize.", "In one line."]}
    one = conv("o1", 3)
    dry = tune_cost([one, CONVS[2]], BASE, grid=axes, progress=False, summarizer=llm, summary_cache=tmp_path, jobs=2)
    assert api.requests == [] and dry.exact and dry.calls >= 2
    df = tune([one, CONVS[2]], BASE, grid=axes, progress=False, summarizer=llm, summary_cache=tmp_path, jobs=2)
    assert len(api.requests) == dry.calls == df.attrs["summary_cost"].calls
    assert df.attrs["summary_cost"].input_tokens == dry.input_tokens
    assert all(r["url"].endswith("/chat/completions") and r["json"]["model"] == "gpt-test" for r in api.requests)
    assert (df["summary_tokens"] > 0).sum() == dry.calls
    again = tune([one, CONVS[2]], BASE, grid=axes, progress=False, summarizer=llm, summary_cache=tmp_path, jobs=2)
    assert len(api.requests) == dry.calls
    pd.testing.assert_frame_equal(again, df)
    # a spec names the same kind of summarizer
    echo = tune([one], BASE, grid=axes, progress=False, summarizer=convlab.provider("echo"), summary_cache=tmp_path)
    assert echo.attrs["summary_cost"].calls == 2


def test_failed_summaries_are_said_and_counted(tmp_path):
    """A summarizer that fails (a bad key, a service down) must not leave a silent frame of replays that
    went on without their summaries."""

    class Down:
        def complete(self, request):
            raise convlab.ProviderError("failed", "401 bad key")

    for jobs in (1, 2):
        with pytest.warns(convlab.SummaryWarning, match=r"failed \(401 bad key\)"):
            df = tune(CONVS, BASE, grid=SUMMARY_AXES, progress=False, summarizer=Down(), summary_cache=tmp_path, jobs=jobs)
        assert df.attrs["summary_cost"].failed > 0 and df.attrs["summary_cost"].calls == 0
        assert df["summaries"].sum() == 0 and list(tmp_path.rglob("*.json")) == []


def test_summarizer_arguments_that_cannot_work_say_so():
    with pytest.raises(ValueError, match="give summarizer= too"):
        tune_cost(CONVS, BASE, progress=False)
    with pytest.raises(ValueError, match="give summarizer= too"):
        tune(CONVS, BASE, progress=False, summary_cache=False)
    with pytest.raises(ValueError, match="never sent to a worker"):
        tune(CONVS, BASE, progress=False, summarizer=Counting(), scheduler="dask")
    with pytest.raises(TypeError, match="summarizer must be a provider"):
        tune(CONVS, BASE, progress=False, summarizer="echo")


def claude_code_lines(n_turns, hidden=HIDDEN, chars=2000):
    """A Claude Code transcript whose every logged input is the exact count of the transcript plus ``hidden``."""
    from convlab.tokens import count_tokens

    rows, parent, read = [], None, 0
    for i in range(n_turns):
        question, answer = f"question {i} " + "x" * chars, f"answer {i}"
        read += count_tokens(question)
        stamp = f"2025-01-01T00:{i:02d}:00Z"
        rows.append({"type": "user", "uuid": f"u{i}", "parentUuid": parent, "sessionId": "s", "timestamp": stamp,
                     "message": {"role": "user", "content": question}})
        rows.append({"type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i}", "sessionId": "s", "timestamp": stamp,
                     "message": {"id": f"m{i}", "role": "assistant", "content": [{"type": "text", "text": answer}],
                                 "usage": {"input_tokens": read + hidden, "output_tokens": 3}}})
        read += count_tokens(answer)
        parent = f"a{i}"
    return [json.dumps(r) for r in rows]


def test_the_hidden_prompt_estimate_is_not_thrown_off_by_broken_lines(tmp_path):
    """Issue 20: "On a file with 28 broken lines the estimate is 71k against ~24k on clean sessions ... Estimate from
    the calls whose parents are whole, and say in the frame (and the warning) how many calls the estimate rests on"."""
    lines = claude_code_lines(20)
    for k in (10, 25):  # the lines of u5 and a12: what the log's model read from there on is not all in the file
        lines[k] = '{"type": "user", "uuid": "u5", "mess'
    p = tmp_path / "damaged.jsonl"
    p.write_text("\n".join(lines))
    with pytest.warns(convlab.ReadWarning) as said:
        [c] = convlab.read(p, progress=False)
    assert any("not valid JSON" in str(w.message) for w in said) and any("'u5' is not in the file" in str(w.message) for w in said)
    assert c.tree.nodes["a5"]["metadata"]["lost_parent"] == "u5" and c.tree.nodes["a5"]["parent"] is None
    cfg = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 4000\n"
    df = tune([c], cfg, progress=False)
    # five calls (a0..a4) have their whole history in the file: the estimate rests on them, and is the hidden prompt
    assert df[["overhead", "overhead_calls"]].values.tolist() == [[HIDDEN, 5]]
    # a call that no longer applies reads the transcript plus that hidden prompt, not the lost lines' tokens too
    r = replay(c, cfg)
    stale = [x for x in r.calls if not x["applies"]]
    assert stale and all(x["read"] == x["exact"] + HIDDEN for x in stale)
    # the clean file: every call
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(claude_code_lines(20)))
    assert tune(convlab.read(clean, progress=False), cfg, progress=False)[["overhead", "overhead_calls"]].values.tolist() == [[HIDDEN, 20]]


def test_an_estimate_with_no_whole_call_says_so():
    """A given overhead rests on no call (NA); a log whose every call lost part of its history: 0 calls."""
    c = hidden_prompt_conv("h", 6)
    given = tune([c], BASE, progress=False, overhead=500)
    assert given["overhead"].tolist() == [500] and given["overhead_calls"].isna().all()
    first = c.tree.nodes["hu0"]
    first["metadata"] = {"lost_parent": "gone"}
    df = tune([c], BASE, progress=False)
    assert df["overhead"].tolist() == [HIDDEN] and df["overhead_calls"].tolist() == [0]
