"""``convlab.collector``: the cyclic collector paused around work whose objects live on, and as it was after."""

import gc
import os

import pytest

from convlab import collector


def test_paused_turns_the_collector_off_and_back_on():
    assert gc.isenabled()
    with collector.paused(collect=False):
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_inside_another_changes_nothing_and_the_outer_one_turns_it_back_on():
    with collector.paused(collect=False):
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause found it off and left it so
    assert gc.isenabled()


def test_the_collector_comes_back_on_after_an_error():
    with pytest.raises(ZeroDivisionError), collector.paused():
        1 / 0
    assert gc.isenabled()


def test_collect_frees_the_cycles_made_while_paused():
    class Node:
        pass

    gc.collect()
    with collector.paused(collect=True):
        for _ in range(1000):
            a, b = Node(), Node()
            a.other, b.other = b, a  # a cycle: reference counting alone never frees it
        del a, b
        assert sum(isinstance(o, Node) for o in gc.get_objects()) >= 2000  # still there while paused
    assert not any(isinstance(o, Node) for o in gc.get_objects())


def test_a_read_pauses_the_collector_and_turns_it_back_on(tmp_path, monkeypatch):
    """convlab.read builds its trees with the collector off (nothing they hold is a cycle), and leaves it on."""
    import json

    import convlab
    from convlab.importers import records

    seen = []
    real = records.build

    def spy(records, problems):
        seen.append(gc.isenabled())
        return real(records, problems)

    monkeypatch.setattr(records, "build", spy)
    p = tmp_path / "chat.json"
    p.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    [c] = convlab.read(p)
    assert seen == [False] and gc.isenabled() and len(c) == 2


def test_a_sweep_pauses_the_collector_where_its_work_lives_on_and_turns_it_back_on(monkeypatch, tmp_path):
    """convlab.tune pauses the collector through each unit of replays (in a worker process, or here with
    jobs=1) and for the frame (a full collection walks every conversation the process holds, again and again: a
    second of a sweep of 1,149 real ones); with worker processes, through the whole sweep here, and the workers,
    forked meanwhile, run with it on between their units. It is on again after, and a summarizer's sweep is
    paused only for its units and the frame."""
    import convlab
    from convlab.providers.fakes import EchoLLM
    from convlab.tree import Tree
    from convlab.tuning import sweep, workers

    t = Tree()
    parent = None
    for k in range(60):
        parent = t.add({"id": f"m{k}", "role": "user" if k % 2 == 0 else "assistant", "content": "word " * 50}, parent)["id"]
    t.head = parent
    conv = convlab.Conversation(t, id="c")
    seen = tmp_path / "seen"  # written by worker processes too
    real_rows, real_frame, real_pause = sweep.rows, sweep.frame, workers.collector_paused
    here = os.getpid()

    def note(what):
        with seen.open("a") as f:
            f.write(f"{what} {gc.isenabled()}\n")

    monkeypatch.setattr(sweep, "rows", lambda *a, **k: note("rows") or real_rows(*a, **k))
    monkeypatch.setattr(sweep, "frame", lambda *a, **k: note("frame") or real_frame(*a, **k))
    monkeypatch.setattr(workers, "collector_paused", lambda **k: note(f"pause in {'caller' if os.getpid() == here else 'worker'}") or real_pause(**k))
    base = "[agent.bot.context]\nwindow = 200000\n[[agent.bot.context.strategy]]\nuse = 'summarize'\n"
    grid = {"strategy[0].over_tokens": [None, 500]}

    def sweep_with(**kw):
        seen.write_text("")
        df = convlab.tune([conv, conv], base, grid=grid, progress=False, result_cache=False, **kw)
        assert len(df) == 4 and df["summaries"].max() > 0 and gc.isenabled()
        return set(seen.read_text().splitlines())

    # in this process: each unit paused (the collector on before it), and the frame
    assert sweep_with(jobs=1) == {"pause in caller True", "rows False", "frame False"}
    assert sweep_with(jobs=1, summarizer=EchoLLM()) == {"pause in caller True", "rows False", "frame False"}
    # two workers, forked while this process paused its collector for the whole sweep (its pauses inside find it
    # off): a worker's units start with its collector on and pause it for their replays
    assert sweep_with(jobs=2) == {"pause in caller True", "pause in caller False", "pause in worker True", "rows False", "frame False"}
