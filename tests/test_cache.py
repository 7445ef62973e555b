"""convlab.replaying.prompt_cache: the prompt cache's prediction, against a naive model of the same rules,
on hostile conversations; its errors; and that it costs what changed, not the path."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convlab.replaying import prompt_cache as cache
from convlab.replaying.prompt_cache import PromptCache, predict, rule


def naive(calls, name="anthropic", ttl=None, model=None):
    """The rules of convlab.replaying.prompt_cache written the slow, obvious way: every entry a stored prefix."""
    r = rule(name, ttl, model)
    stores = {}
    out = []
    for c in calls:
        time, blocks, part = (*c, None)[:3]
        s = stores.setdefault(part, {"clock": 0.0, "entries": {}, "last": None})
        if time is not None and not (isinstance(time, float) and math.isnan(time)):
            s["clock"] = max(s["clock"], float(time))
        now = s["clock"]
        path = tuple(tuple(b) for b in blocks)
        if r is None or not path:
            out.append({"cached": 0, "cache_write": 0})
            continue
        total = lambda p: sum(t for _, t in p)
        live = [p for p, e in s["entries"].items() if e >= now and path[:len(p)] == p]
        hit = max(live, key=len) if live else None
        read = total(hit) if hit else 0
        last = s["last"]
        if r.any_prefix and last is not None and last[1] + r.ttl >= now:
            n = 0
            while n < min(len(last[0]), len(path)) and last[0][n] == path[n]:
                n += 1
            read = max(read, total(path[:n]))
        cached = read - read % r.step if read >= r.minimum else 0
        wrote = 0
        for p in {path[:1], hit, path} - {None}:
            if total(p) >= r.minimum:
                s["entries"][p] = now + r.ttl
                wrote = max(wrote, total(p))
        s["last"] = (path, now)
        out.append({"cached": cached, "cache_write": max(0, wrote - cached) if r.writes else 0})
    return out


# -- hostile conversations --------------------------------------------------------------------

times = st.one_of(st.none(), st.just(math.nan), st.floats(-100, 5000, allow_nan=False),
                  st.integers(0, 10**6))
tokens = st.one_of(st.just(0), st.integers(0, 3000), st.integers(0, 200000))
ops = st.lists(st.tuples(st.sampled_from(["extend", "extend", "extend", "back", "prefix", "compact", "same", "model"]),
                         st.integers(1, 6), tokens, times), min_size=1, max_size=40)


def conversation(steps, hidden_tokens):
    """Calls of one conversation from ``steps``: grow the path, go back to an earlier point
    (regenerate, edit), compact (a summary and copies under the same hidden prompt), call
    again with the same input or a prefix of it, switch model. Keys name their whole path, as message ids do."""
    n = [0]

    def fresh(t):
        n[0] += 1
        return (f"m{n[0]}", t)

    hidden = {m: (("hidden", m), hidden_tokens) for m in ("a", "b")}
    model = "a"
    path = [hidden[model]]
    calls = []
    for op, k, t, time in steps:
        if op == "extend":
            path = path + [fresh(t // (i + 1)) for i in range(k)]
        elif op == "back":
            path = path[:max(1, len(path) - k)] + [fresh(t)]
        elif op == "prefix":  # an input that ends inside an earlier one (a block others were read past)
            path = path[:max(1, len(path) - k)]
        elif op == "compact":
            path = [path[0], fresh(t)] + [fresh(tok) for _, tok in path[-k:][1:]]
        elif op == "model":
            model = "b" if model == "a" else "a"
            path = [hidden[model]] + [fresh(t)]
        calls.append((time, list(path), model))
    return calls


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.sampled_from([0, 500, 1024, 5000, 30000]), st.sampled_from(["anthropic", "openai", None]),
       st.sampled_from([None, "1h", 1.0, 60]), st.sampled_from([None, "claude-opus-4-6", "claude-sonnet-4-5"]))
def test_predict_is_the_naive_rule(steps, hidden_tokens, name, ttl, model):
    calls = conversation(steps, hidden_tokens)
    got = predict(calls, name, ttl=ttl, model=model)
    assert got == naive(calls, name, ttl, model)
    for (time, blocks, _), p in zip(calls, got):
        total = sum(t for _, t in blocks)
        assert 0 <= p["cached"] <= total and 0 <= p["cache_write"] <= total - p["cached"]


@given(ops)
@settings(max_examples=100, deadline=None)
def test_without_a_cache_nothing_is_read_or_written(steps):
    assert all(p == {"cached": 0, "cache_write": 0} for p in predict(conversation(steps, 5000), None))


def test_a_hit_refreshes_the_lifetime():
    h = ("h", 2000)
    calls = [(0, [h, ("u1", 10)]), (250, [h, ("u1", 10), ("u2", 10)]), (500, [h, ("u1", 10), ("u2", 10), ("u3", 10)])]
    assert [p["cached"] for p in predict(calls)] == [0, 2010, 2020]  # 500 s after the first write, 250 after its refresh
    assert [p["cached"] for p in predict([calls[0], (301, calls[1][1])])] == [0]  + [0]  # past 5 minutes: a miss


def test_the_hidden_prompt_survives_a_compaction():
    h = ("h", 2000)
    long = [h] + [(f"m{i}", 100) for i in range(30)]
    got = predict([(0, long), (10, [h, ("summary", 300), ("copy", 100)])])
    assert got[1] == {"cached": 2000, "cache_write": 400}


def test_minimum_cacheable_length_per_model():
    calls = [(0, [("h", 3000), ("u", 10)]), (1, [("h", 3000), ("u", 10), ("v", 10)])]
    assert predict(calls, model="claude-sonnet-4-5")[1]["cached"] == 3010
    assert predict(calls, model="claude-opus-4-6") == [{"cached": 0, "cache_write": 0}] * 2  # below 4,096: never cached
    assert rule("anthropic", model="anthropic:claude-haiku-4-5").minimum == 4096
    assert rule("anthropic", model="claude-3-5-haiku-latest").minimum == 2048


def test_openai_counts_in_128_token_steps_from_1024():
    h = ("h", 1000)
    calls = [(0, [h, ("u", 23)]), (1, [h, ("u", 23), ("v", 300)]), (2, [h, ("u", 23), ("v", 300), ("w", 5)])]
    assert predict(calls, "openai") == [{"cached": 0, "cache_write": 0}, {"cached": 0, "cache_write": 0},
                                        {"cached": 1280, "cache_write": 0}]  # 1,023 read nothing; 1,323 -> 1,280


def test_openai_reads_into_an_edited_input():
    h = ("h", 2000)
    a = [(0, [h, ("u1", 200), ("a1", 200), ("u2", 200)]), (1, [h, ("u1", 200), ("a1", 200), ("u2b", 5)])]
    assert predict(a, "openai")[1]["cached"] == 2304  # 2,400 shared, in 128-token steps
    assert predict(a, "anthropic")[1]["cached"] == 2000  # no breakpoint ended after a1: the hidden prompt only


def test_models_share_nothing():
    h = ("h", 2000)
    got = predict([(0, [h, ("u", 5)], "opus"), (1, [h, ("u", 5)], "haiku"), (2, [h, ("u", 5)], "opus")])
    assert [p["cached"] for p in got] == [0, 0, 2005]


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("calls, message", [
    ([(0, [("h", 10), ("h", 5)])], "comes twice"),
    ([(0, [("h", 10), ("u", 5)]), (1, [("u", 5)])], "was block 1 of an earlier call, here it is block 0"),
    ([(0, [("h", 10)]), (1, [("h", 11)])], "had 10 tokens at an earlier call, here 11"),
    ([(0, [("h", 10), ("u", 5)]), (1, [("g", 10), ("u", 5)])], "follows 'g' here, 'h' at an earlier call"),
    ([(0, [("h", -1)])], "tokens must be a whole number"),
    ([(0, [("h", 1.5)])], "tokens must be a whole number"),
    ([(0, [("h", True)])], "tokens must be a whole number"),
    ([(0, [(["h"], 1)])], "must be hashable"),
    ([(0, [("h",)])], "must be a (key, tokens) pair"),
    ([(math.inf, [("h", 1)])], "time must be a number"),
    ([("noon", [("h", 1)])], "time must be a number"),
    ([(0, "hello")], "must be a sequence"),
    ([(0, [("h", 1)], ["m"])], "model must be a name"),
    ([(0,)], "must be (time, blocks)"),
])
def test_bad_input_names_the_call_and_what_is_wrong(calls, message):
    with pytest.raises(ValueError, match="^call 0: |^call 1: ") as e:
        predict(calls)
    assert message in str(e.value)


@pytest.mark.parametrize("name, ttl, message", [
    ("gemini", None, "cache must be one of"), ("anthropic", 0, "positive number"),
    ("anthropic", math.nan, "positive number"), ("anthropic", "2h", "positive number"), ("openai", True, "positive number"),
])
def test_bad_rule_or_ttl(name, ttl, message):
    with pytest.raises(ValueError, match=message):
        predict([], name, ttl=ttl)


def test_an_error_loses_nothing_before_it():
    c = PromptCache()
    assert c.call(0, [("h", 2000), ("u", 1)]) == {"cached": 0, "cache_write": 2001}
    with pytest.raises(ValueError):
        c.call(1, [("h", 2000), ("u", 2)])
    assert c.call(2, [("h", 2000), ("u", 1), ("v", 1)]) == {"cached": 2001, "cache_write": 1}


# -- cost: what changed, not the path ------------------------------------------------------------

class CountingPath(Sequence):
    """A call's input as a view of one growing path (as a replay's tree gives it), counting
    each block read."""

    def __init__(self, blocks, n, reads):
        self.blocks, self.n, self.reads = blocks, n, reads

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        self.reads[0] += 1
        return self.blocks[i]


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_eight_thousand_calls_read_only_what_changed(name):
    blocks = [("hidden", 20000)] + [(f"m{i}", 50) for i in range(16002)]
    reads = [0]
    calls = []
    for k in range(8000):  # each call reads the whole path so far: 2 new messages; an idle gap every 500 calls
        calls.append((k * 10 + (k // 500) * 4000, CountingPath(blocks, 2 * k + 3, reads)))
    got = predict(calls, name)
    assert reads[0] <= 4 * 2 * 8000  # the new blocks and the known one they follow, never the path
    assert got[1]["cached"] == (20100 if name == "anthropic" else 20096)
    assert got[500]["cached"] == 0 and got[501]["cached"] > 20000  # the gap: all of it expired, then written again


@pytest.mark.parametrize("model, expected", [
    ("claude-opus-4-6", "anthropic"), ("anthropic:claude-haiku-4-5", "anthropic"), ("aws:anthropic/claude-3-haiku", "anthropic"),
    ("gpt-4o", "openai"), ("openai:o4-mini", "openai"), ("azure:gpt-4.1", "openai"), ("gemini-2.5-pro", None),
    ("openrouter:meta/llama-3", None), (None, None), ("", None), ("omni", None),
])
def test_default_rule(model, expected):
    assert cache.default_rule(model) == expected
