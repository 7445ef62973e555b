"""convlab.replaying.options: the knobs a replay and a sweep share, one checked value (issue 36)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

import convlab
from convlab.providers import EchoLLM
from convlab.replaying.options import NAMES, Options, options_of
from convlab.tree import Tree
from convlab.tuning.measures import measures
from convlab.tuning.retention import retention

BASE = '[agent.bot.context]\nwindow = 100000\n[[agent.bot.context.strategy]]\nuse = "summarize"\nover_tokens = 300\n'


def conversation() -> convlab.Conversation:
    t = Tree()
    for i in range(3):
        _ = t.add({"id": f"u{i}", "role": "user", "content": "hi " * 200, "time": 10.0 * i}, f"a{i - 1}" if i else None)
        _ = t.add({"id": f"a{i}", "role": "assistant", "content": "ok", "time": 10.0 * i + 1,
                   "usage": {"input_tokens": 1000 * (i + 1), "output_tokens": 1}}, f"u{i}")
    t.head = "a2"
    return convlab.Conversation(t, id="c")


@pytest.mark.parametrize(("given", "error", "says"), [
    ({"agent": ""}, TypeError, "agent must be an agent id"),
    ({"worker": "chat"}, TypeError, "the engine's own proposal is worker=None"),
    ({"summary_size": 1.5}, ValueError, "at most 1"),
    ({"summary_size": 0}, ValueError, "at least 1"),
    ({"overhead": -1}, ValueError, "overhead must be a whole number"),
    ({"overhead": True}, ValueError, "overhead must be a whole number"),
    ({"summarizer": "echo"}, TypeError, r"summarizer=convlab.provider\('echo'\)"),
    ({"summarizer": EchoLLM}, TypeError, "not its class"),
    ({"summary_cache": "/tmp/x"}, ValueError, "give summarizer= too"),
    ({"judge": object()}, TypeError, "judge must be a provider"),
    ({"judge_cache": False}, ValueError, "give judge= too"),
    ({"probes": 0}, ValueError, "probes must be a whole number"),
    ({"prompt_cache": "azure"}, ValueError, "azure"),
    ({"prompt_cache_ttl": "2h"}, ValueError, "2h"),
])
def test_every_option_is_checked_when_the_value_is_made(given, error, says):
    with pytest.raises(error, match=says):
        Options(**given)


def test_an_unknown_model_names_close_ones():
    with pytest.raises(convlab.PriceError, match="claude-sonnet-4-5"):
        Options(model="claude-sonet-4-5")


def test_knobs_by_name_unknown_renamed_and_removed():
    with pytest.raises(TypeError, match=r"tune\(\) got an unknown option 'modle' \(did you mean 'model'\?\)"):
        options_of(None, {"modle": "x"}, "tune")
    with pytest.raises(TypeError, match="takes no dry_run"):
        options_of(None, {"dry_run": True}, "tune")
    with pytest.raises(TypeError, match="options must be a convlab.replaying.options.Options"):
        options_of({"model": "gpt-4o"}, {}, "replay")  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match=r"replay\(cache=...\) is now summary_cache="):
        got = options_of(None, {"cache": False, "summarizer": EchoLLM()}, "replay")
    assert got.summary_cache is False
    with pytest.warns(DeprecationWarning, match="prompt_cache_ttl"):
        assert options_of(None, {"cache_ttl": "1h"}, "tune").prompt_cache_ttl == "1h"
    with pytest.raises(TypeError, match="got both cache_ttl= and prompt_cache_ttl="):
        options_of(None, {"cache_ttl": "1h", "prompt_cache_ttl": "5m"}, "tune")
    base = Options(model="gpt-4o", overhead=10)
    assert options_of(base, {"overhead": 20}, "tune") == dataclasses.replace(base, overhead=20)  # the keywords win
    assert options_of(base, {}, "tune") is base


def test_replay_tune_and_search_take_the_value_or_its_fields_the_same():
    c = conversation()
    chosen = Options(model="claude-sonnet-4-5", overhead=500, summary_size=40)
    by_value, by_name = convlab.replay(c, BASE, chosen), convlab.replay(c, BASE, model="claude-sonnet-4-5", overhead=500, summary_size=40)
    assert by_value.calls == by_name.calls and measures(by_value) == measures(by_name)
    assert by_value.priced and by_value.calls[-1].usd is not None
    one = convlab.tune([c], BASE, chosen, progress=False, jobs=1)
    two = convlab.tune([c], BASE, progress=False, jobs=1, model="claude-sonnet-4-5", overhead=500, summary_size=40)
    assert one.equals(two) and one["usd"].notna().all()
    found = convlab.search([c], {"strategy[0].over_tokens": [300, 5000]}, chosen, base=BASE, objective="usd", trials=2,
                           jobs=1, progress=False)
    both = convlab.tune([c], BASE, chosen, grid={"strategy[0].over_tokens": [300, 5000]}, progress=False, jobs=1)
    assert both["failed_turns"].eq(0).all() and found.best_value == both["usd"].min()


def test_the_signatures_show_every_option():
    for fn in (convlab.replay, convlab.tune, convlab.tune_cost, convlab.search):
        params = inspect.signature(fn).parameters
        assert "options" in params and all(n in params for n in NAMES), fn
        assert params["summary_cache"].default is None and params["prompt_cache"].default == "auto"
    assert "dry_run" not in inspect.signature(convlab.tune).parameters


def test_a_refused_option_does_no_work(tmp_path):
    """A bad option is refused before anything runs: no folder made, no summary call."""
    calls = []

    class Counting(EchoLLM):
        def complete(self, request, **kw):
            calls.append(request)
            return super().complete(request, **kw)

    with pytest.raises(ValueError, match="probes"):
        convlab.tune([conversation()], BASE, progress=False, summarizer=Counting(), summary_cache=tmp_path / "s", probes=0)
    assert calls == [] and not (tmp_path / "s").exists()


def test_what_a_worker_process_is_sent_pickles_without_the_providers():
    chosen = Options(summarizer=EchoLLM(), judge=EchoLLM(), model="gpt-4o")
    sent = pickle.loads(pickle.dumps(chosen.replaying()))
    assert set(sent) == {"summary_size", "overhead", "summary_request", "pricing"} and sent["pricing"].model == "gpt-4o"


def test_retention_names_its_cache_the_judges():
    r = convlab.replay(conversation(), BASE)
    with pytest.warns(DeprecationWarning, match=r"retention\(cache=...\) is now judge_cache="):
        df = retention(r, judge=EchoLLM(), probes=1, cache=False)
    assert len(df) == len(retention(r, judge=EchoLLM(), probes=1, judge_cache=False))
    with pytest.raises(TypeError, match="unexpected keyword argument 'jduge'"):
        retention(r, jduge=EchoLLM())


def _idle_log(model):
    """Six turns 20 minutes apart, each call after the first reading a prefix from the cache past the warm part."""
    from convlab.conversation import Conversation
    from convlab.tree import Tree

    t, parent, time = Tree(), None, 0.0
    for i in range(6):
        t.add({"id": f"u{i}", "role": "user", "content": f"question {i} " + "word " * 400, "time": time}, parent)
        read = 0 if i == 0 else 1024 + 400 * i
        t.add({"id": f"a{i}", "role": "assistant", "content": f"answer {i}", "time": time + 1, "metadata": {"model": model},
               "usage": {"input_tokens": 2000 + 420 * i, "cache_read_input_tokens": read, "output_tokens": 3}}, f"u{i}")
        parent, time = f"a{i}", time + 1200  # 20 minutes between turns
    t.head = parent
    return Conversation(t, id="c")


def test_an_openai_log_s_cache_lifetime_is_the_one_its_calls_after_idle_gaps_show():
    """No prompt_cache_ttl: OpenAI's cache lives as long as the log's own calls show (a read past the warm
    prefix after 20 idle minutes, five times: an hour); a lifetime given is the lifetime used."""
    from convlab.replaying.driver import replay

    conv = _idle_log("gpt-4o")
    default = replay(conv, model="gpt-4o")
    assert default.fit.lifetimes == {"gpt-4o": 3600.0}
    assert all(c.cached > 0 for c in default.calls[1:])
    five = replay(conv, model="gpt-4o", prompt_cache_ttl="5m")
    assert all(c.cached == 0 for c in five.calls)


def test_an_anthropic_cache_keeps_the_lifetime_its_client_asks_for_whatever_the_log_shows():
    """Anthropic's lifetime is what the client asks for (5 minutes unless 1 hour): the same log's reads after
    20 idle minutes show an hour, and the prediction still lets the cache die after 5 minutes (such reads
    come from elsewhere, as the real Claude Code session's from its compaction's sub-agent)."""
    from convlab.replaying.driver import replay

    conv = _idle_log("claude-sonnet-4-5")
    default = replay(conv, model="claude-sonnet-4-5")
    assert default.fit.lifetimes == {"claude-sonnet-4-5": 3600.0}  # what the log shows: not used
    assert all(c.cached == 0 for c in default.calls[1:])
    hour = replay(conv, model="claude-sonnet-4-5", prompt_cache_ttl="1h")
    assert all(c.cached > 0 for c in hour.calls[1:])
