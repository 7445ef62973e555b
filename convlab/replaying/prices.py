"""Prices: what a model call costs in US dollars, from genai-prices (pydantic's table).

Every price comes from PyPI ``genai-prices``, which ships a snapshot of its
table and reads it offline (convlab never asks it to update): input, output,
cache read and cache write prices, the 1-hour write's, and the tiers (above
200,000 input tokens a Claude Sonnet call pays another rate for all of it).
convlab holds no price of its own.

A model is named as genai-prices names it, ``"claude-sonnet-4-5"``, or with
its provider, ``"anthropic:claude-sonnet-4-5"``. A model genai-prices does not
know is a ``PriceError`` naming the close matches it does know.

A call is priced from its total input (``read``: cached and written tokens
included, as genai-prices counts ``input_tokens``), ``cached`` (read from the
cache), ``cache_write`` (written to it) and ``output``. Dollars are floats:
they go into frames, sums and plots; each call's price is computed exactly
(genai-prices' Decimals) and then made a float, so it is the float of
genai-prices' own figure.

``Prices`` prices many calls fast: the model is looked up once, and within
each of the model's tiers the price is linear in the four counts, so it
measures the four per-token rates from genai-prices once per tier (and checks
them against genai-prices at one more usage; a model whose price is not of
that form is priced by genai-prices call by call instead).

>>> p = Prices("anthropic:claude-sonnet-4-5")
>>> p.usd(read=100_000, cached=90_000, cache_write=9_000, output=500)
0.07125
>>> usd("claude-sonnet-4-5", read=100_000, cached=90_000, cache_write=9_000, output=500)
0.07125
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..errors import PriceError
from .prompt_cache import TTLS

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice

__all__ = ["Prices", "usd", "model_ids", "resolve"]

#: the counts a call is priced from, in order
COUNTS = ("read", "cached", "cache_write", "output")


def _genai() -> Any:
    try:
        import genai_prices
    except ImportError:  # pragma: no cover - installed with convlab[prices]
        raise PriceError("pricing needs genai-prices: pip install 'convlab[prices]'") from None
    return genai_prices


@functools.cache
def model_ids() -> tuple[str, ...]:
    """Every model genai-prices knows, as ``provider:model`` (sorted).

    >>> "anthropic:claude-sonnet-4-5" in model_ids()
    True
    """
    snap = _genai().data_snapshot.get_snapshot()
    return tuple(sorted(f"{p.id}:{m.id}" for p in snap.providers for m in p.models))


@functools.cache
def resolve(spec: str) -> tuple[Any, Any]:
    """genai-prices' provider and model for ``spec`` (``model`` or ``provider:model``),
    or a ``PriceError`` naming the close matches.

    >>> [x.id for x in resolve("claude-sonnet-4-5")]
    ['anthropic', 'claude-sonnet-4-5']
    >>> resolve("claude-sonet-4-5")
    Traceback (most recent call last):
    ...
    convlab.errors.PriceError: genai-prices knows no model 'claude-sonet-4-5'; close matches: anthropic:claude-sonnet-4-5, google:claude-sonnet-4-5, anthropic:claude-sonnet-5-5, google:claude-sonnet-5-5, quicksilverpro:claude-sonnet-5-5
    """
    if not isinstance(spec, str) or not spec.strip():
        raise PriceError(f"a model must be a name such as 'claude-sonnet-4-5' or 'anthropic:claude-sonnet-4-5', got {spec!r}")
    provider, _, name = spec.strip().rpartition(":")
    snap = _genai().data_snapshot.get_snapshot()
    known = sorted(p.id for p in snap.providers)
    if provider and provider.lower() not in known:
        found = difflib.get_close_matches(provider.lower(), known, n=3, cutoff=0.6)
        raise PriceError(f"genai-prices knows no provider {provider!r} (in {spec!r}); close matches: {', '.join(found) or 'none'}", found)
    try:
        return snap.find_provider_model(name, None, provider or None, None)
    except LookupError:
        raise PriceError(f"genai-prices knows no model {spec!r}; close matches: {_close(spec)}", _matches(spec)) from None


def _matches(spec: str) -> list[str]:
    ids = model_ids()
    name = spec.rpartition(":")[2].lower()
    provider = spec.rpartition(":")[0].lower()
    names = list(dict.fromkeys(i.partition(":")[2] for i in ids))
    bare = []
    for n in difflib.get_close_matches(name, names, n=3, cutoff=0.6):
        first = provider or _home(n)  # the provider asked for, else the one genai-prices picks for the name
        bare += sorted((i for i in ids if i.partition(":")[2] == n), key=lambda i: i.partition(":")[0] != first)
    full = difflib.get_close_matches(spec.lower(), ids, n=3, cutoff=0.8) if provider else []
    return list(dict.fromkeys(full + bare))[:5]


def _home(name: str) -> str | None:
    try:
        return _genai().data_snapshot.get_snapshot().find_provider_model(name, None, None, None)[0].id
    except LookupError:
        return None


def _close(spec: str) -> str:
    return ", ".join(_matches(spec)) or "none"


def _check(counts: Mapping[str, Any]) -> tuple[int, int, int, int]:
    for k in COUNTS:
        v = counts[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise PriceError(f"{k} must be a whole number of tokens, 0 or more, got {v!r}")
    read, cached, write, output = (counts[k] for k in COUNTS)
    if cached + write > read:
        raise PriceError(f"cached ({cached}) and cache_write ({write}) tokens are part of read ({read}): they cannot add up to more")
    return read, cached, write, output


class Prices:
    """One model's prices (genai-prices'), for pricing many calls fast: ``usd`` one call,
    ``many`` a list. ``cache_ttl`` ("5m" or "1h", or seconds: 1 hour or more is "1h")
    says at which lifetime's rate writes are priced; ``when`` (a datetime) at which
    date's prices (default: now, as genai-prices).

    >>> p = Prices("claude-sonnet-4-5")
    >>> p.model, p.provider
    ('claude-sonnet-4-5', 'anthropic')
    >>> p.many([{"read": 1000, "cached": 0, "cache_write": 1000, "output": 10}, {"read": 1010, "cached": 1000, "cache_write": 10, "output": 5}])
    [0.0039, 0.0004125]
    >>> Prices("claude-sonnet-4-5", cache_ttl="1h").usd(read=1000, cache_write=1000)
    0.006
    """

    def __init__(self, model: str, cache_ttl: float | str = "5m", when: datetime | None = None) -> None:
        self._provider, self._model = resolve(model)
        self.spec = model
        self.model, self.provider = self._model.id, self._provider.id
        self.hour = _hour(cache_ttl)
        self.when = when or datetime.now(tz=UTC)
        self._rates: dict[int, tuple[Decimal, ...] | None] = {}
        self._starts = _tier_starts(self._model.get_prices(self.when))

    def __repr__(self) -> str:
        return f"Prices({self.provider}:{self.model}{', cache_ttl=1h' if self.hour else ''})"

    def genai(self, read: int, cached: int = 0, cache_write: int = 0, output: int = 0) -> Decimal:
        """genai-prices' own price of one call (a Decimal, USD), call by call."""
        g = _genai()
        usage = {"input_tokens": read, "cache_read_tokens": cached, "cache_write_tokens": cache_write, "output_tokens": output}
        if self.hour:
            usage["cache_write_1h_tokens"] = cache_write
        calc = self._model.calc_price(g.Usage(**usage), self._provider, genai_request_timestamp=self.when)
        return calc.total_price

    def usd(self, read: int, cached: int = 0, cache_write: int = 0, output: int = 0) -> float:
        """The price of one call, in US dollars."""
        read, cached, cache_write, output = _check({"read": read, "cached": cached, "cache_write": cache_write, "output": output})
        tier = sum(1 for s in self._starts if read > s)
        rates = self._rates[tier] if tier in self._rates else self._measure(tier)
        if rates is None:
            return float(self.genai(read, cached, cache_write, output))
        fresh, hit, wrote, out = rates
        return float(fresh * (read - cached - cache_write) + hit * cached + wrote * cache_write + out * output)

    def many(self, calls: Iterable[Mapping[str, Any]]) -> list[float]:
        """The price of each call (a mapping with ``read``, ``cached``, ``cache_write``,
        ``output``; a missing count is 0), in US dollars."""
        out = []
        for i, c in enumerate(calls):
            try:
                out.append(self.usd(*(c.get(k) or 0 for k in COUNTS)))
            except PriceError as e:
                raise PriceError(f"call {i}: {e}") from None
        return out

    def _measure(self, tier: int) -> tuple[Decimal, ...] | None:
        """The four per-token rates of ``tier`` (``None``: not linear there), from genai-prices."""
        lo = self._starts[tier - 1] + 1 if tier else 1
        hi = self._starts[tier] if tier < len(self._starts) else lo + 10**6
        n = lo
        base = self.genai(n)
        rates = (base / n, self.genai(n, cached=n) / n, self.genai(n, cache_write=n) / n, (self.genai(n, output=n) - base) / n)
        m = max(lo, (lo + hi) // 2)
        probe = (m, m // 3, m // 5, 977)
        linear = rates[0] * (m - m // 3 - m // 5) + rates[1] * (m // 3) + rates[2] * (m // 5) + rates[3] * 977
        self._rates[tier] = rates if linear == self.genai(*probe) else None
        return self._rates[tier]


def _hour(ttl: float | str) -> bool:
    if ttl in TTLS and isinstance(ttl, str):  # `in` first: an unhashable ttl is a TypeError, as it was
        return TTLS[ttl] >= 3600
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise PriceError(f"cache_ttl must be '5m', '1h' or a positive number of seconds, got {ttl!r}")
    return ttl >= 3600


def _tier_starts(price: ModelPrice) -> tuple[int, ...]:
    """The input totals past which the model's price changes (genai-prices' tiers)."""
    g = _genai()
    starts = {t.start for v in vars(price).values() if isinstance(v, g.types.TieredPrices) for t in v.tiers}
    return tuple(sorted(starts))


@functools.lru_cache(maxsize=64)
def _prices(model: str, cache_ttl: float | str) -> Prices:
    return Prices(model, cache_ttl)


def usd(model: str, read: int, cached: int = 0, cache_write: int = 0, output: int = 0, cache_ttl: float | str = "5m") -> float:
    """The price of one call of ``model`` in US dollars (``Prices``, looked up once per model).

    >>> usd("openai:gpt-4o", read=2000, cached=1024, output=100)
    0.00472
    """
    return _prices(model, cache_ttl).usd(read, cached, cache_write, output)
