"""convlab.replaying.prices: dollars from genai-prices, equal to its own figures, fast over many calls;
clear errors for an unknown model or usage that cannot be priced."""

from __future__ import annotations

import pickle
from datetime import datetime, timezone

import pytest
from genai_prices import Usage, calc_price
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.replaying.prices import Prices, model_ids, resolve, usd

MODELS = ["claude-sonnet-4-5", "anthropic:claude-opus-4-6", "anthropic:claude-haiku-4-5", "openai:gpt-4o", "gpt-4.1-mini",
          "google:gemini-2.5-pro"]


@st.composite
def usages(draw):
    read = draw(st.one_of(st.integers(0, 5000), st.integers(0, 400_000), st.sampled_from([199_999, 200_000, 200_001])))
    cached = draw(st.integers(0, read))
    write = draw(st.integers(0, read - cached))
    return read, cached, write, draw(st.integers(0, 64_000))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MODELS), usages(), st.sampled_from(["5m", "1h"]))
def test_dollars_equal_genai_prices(model, usage, ttl):
    read, cached, write, output = usage
    provider, _, name = model.rpartition(":")
    when = datetime(2026, 3, 1, tzinfo=timezone.utc)
    extra = {"cache_write_1h_tokens": write} if ttl == "1h" else {}
    expected = calc_price(Usage(input_tokens=read, cache_read_tokens=cached, cache_write_tokens=write, output_tokens=output, **extra),
                          model_ref=name, provider_id=provider or None, genai_request_timestamp=when).total_price
    assert Prices(model, cache_ttl=ttl, when=when).usd(read, cached, write, output) == float(expected)


def test_the_tier_is_genai_prices_own():
    p = Prices("claude-sonnet-4-5")
    assert p.usd(200_000) == 0.6 and p.usd(200_001) == 1.200006  # past 200,000 input tokens every token pays the tier rate


def test_many_calls_look_the_model_up_once(monkeypatch):
    p = Prices("claude-sonnet-4-5")
    asked = []
    real = Prices.genai
    monkeypatch.setattr(Prices, "genai", lambda self, *a, **k: asked.append(a) or real(self, *a, **k))
    calls = [{"read": 1000 + i * 37, "cached": 900, "cache_write": 37, "output": i % 300} for i in range(10_000)]
    calls += [{"read": 250_000, "cached": 0, "cache_write": 0, "output": 1}]
    got = p.many(calls)
    assert len(got) == len(calls) and len(asked) <= 2 * 5  # the rates measured once per tier, checked once
    assert got[17] == float(real(p, 1000 + 17 * 37, 900, 37, 17))


def test_an_unknown_model_names_close_matches():
    with pytest.raises(convlab.PriceError, match="knows no model 'claude-sonet-4-5'; close matches: anthropic:claude-sonnet-4-5") as e:
        Prices("claude-sonet-4-5")
    assert "anthropic:claude-sonnet-4-5" in e.value.matches
    with pytest.raises(convlab.PriceError, match="knows no provider 'antropic'.*close matches: anthropic"):
        usd("antropic:claude-sonnet-4-5", 10)
    with pytest.raises(convlab.PriceError, match="a model must be a name"):
        resolve("")
    assert pickle.loads(pickle.dumps(e.value)).matches == e.value.matches


@pytest.mark.parametrize("counts, message", [
    ((10, 11, 0, 0), "cannot add up to more"), ((10, 5, 6, 0), "cannot add up to more"), ((-1, 0, 0, 0), "read must be"),
    ((10, 0, 0, 1.5), "output must be"), ((True, 0, 0, 0), "read must be"),
])
def test_usage_that_cannot_be_priced(counts, message):
    with pytest.raises(convlab.PriceError, match=message):
        Prices("claude-sonnet-4-5").usd(*counts)


def test_many_names_the_call_at_fault():
    with pytest.raises(convlab.PriceError, match="^call 1: cached"):
        Prices("gpt-4o").many([{"read": 5}, {"read": 5, "cached": 6}])


def test_bad_cache_ttl():
    with pytest.raises(convlab.PriceError, match="cache_ttl"):
        Prices("gpt-4o", cache_ttl="2h")


def test_known_models_are_genai_prices_own():
    ids = model_ids()
    assert len(ids) > 500 and "openai:gpt-4o" in ids and all(":" in i for i in ids)
