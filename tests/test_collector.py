"""``convlab.collector``: the cyclic collector paused around work whose objects live on, and as it was after."""

import gc

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


def test_a_sweep_pauses_the_collector_in_the_calling_process_and_turns_it_back_on(monkeypatch):
    """convlab.tune replays and builds its frame with the collector off in the calling process (a full collection
    there walks every conversation it holds, again and again: a second of a sweep of 1,149 real ones), and leaves
    it on; with a summarizer (whose calls may leave cycles) only the frame is built paused."""
    import convlab
    from convlab.providers.fakes import EchoLLM
    from convlab.tree import Tree
    from convlab.tuning import sweep

    t = Tree()
    parent = None
    for k in range(60):
        parent = t.add({"id": f"m{k}", "role": "user" if k % 2 == 0 else "assistant", "content": "word " * 50}, parent)["id"]
    t.head = parent
    conv = convlab.Conversation(t, id="c")
    seen = []
    for name in ("rows", "frame"):
        real = getattr(sweep, name)
        monkeypatch.setattr(sweep, name, lambda *a, _real=real, _name=name, **k: seen.append((_name, gc.isenabled())) or _real(*a, **k))
    base = "[agent.bot.context]\nwindow = 200000\n[[agent.bot.context.strategy]]\nuse = 'summarize'\n"
    df = convlab.tune([conv] * 2, base, grid={"strategy[0].over_tokens": [None, 500]}, progress=False, result_cache=False, jobs=1)
    assert len(df) == 4 and df["summaries"].max() > 0 and gc.isenabled()
    assert seen == [("rows", False), ("rows", False), ("frame", False)]
    seen.clear()
    df = convlab.tune([conv], base, grid={"strategy[0].over_tokens": [None, 500]}, progress=False, result_cache=False, jobs=1,
                      summarizer=EchoLLM())
    assert len(df) == 2 and gc.isenabled()
    assert seen == [("rows", True), ("frame", False)]
