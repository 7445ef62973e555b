"""What a replay's calls cost: the prompt cache predicted call by call, and dollars.

A replay knows what each model call read (its path, at its time). The prompt
cache (``convlab.replaying.prompt_cache``) says how much of that a provider reads from its
cache and how much it writes to it; genai-prices (``convlab.replaying.prices``) says
what that costs. Both need each call's input as the provider counts it, which
the transcript alone does not say: the hidden prompt (system and tools), the
provider's tokenizer against o200k_base, and what other sessions left warm in
the cache. So they are fitted from the log's own calls once per conversation
(``convlab.replaying.fit``: per log root and model, ``hidden + ratio *
exact``), the fit the replay's model reads a rewritten history with too, the
way ``bench/cache_check.py`` checks against the real Claude Code sessions
(docs/cache.md gives the figures). A message reads ``ratio`` times its exact
count; the first ``warm`` tokens of the hidden prompt are what the first call
of each model found cached already (its logged cache read, at most
``hidden``): a replay cannot know what other sessions left in the cache, so
that much is taken from the log. A call whose input is more or less than its
blocks hold (the log's usage: the fit is a line through the log's calls, about
half of them above it, half below) has its cache read and write scaled by the
same share, so that its input is cached and written as its blocks are:
otherwise the log as it ran pays its fit's residuals above the line at the
full price and those below out of its cache writes, and any config that
rewrites the history (whose calls read what the fit says) looks cheaper or
dearer by that much. A log with no usage gives ``hidden`` the
replay's own hidden overhead, a ratio of 1 and nothing warm.

Each call's blocks are then the warm part, the rest of the hidden prompt (one
block per log root and model: it survives a compaction, a strategy's or the
log's), and one block per message on the path, keyed by its session id (an id
names its whole path). A call the replay makes on a history a strategy
rewrote reads new messages, so it misses the cache beyond what it still
shares: a compaction shows as a cache miss beyond the hidden prompt.

A message's key is its original's when it is a copy (``copied_from``) whose
whole path up from it copies its original's path: a ``context.replace`` that
keeps the opening of the history as it was (a clearing, a masking) finds that
prefix in the cache, and misses from the first message it changed on. One that
starts with a summary, or drops the opening, misses beyond the hidden prompt.

Summary calls are priced too (the summarizer's model, its input, its output).
One sent as the engine sends it (``SummaryCall.shared``) on the session's own
model reads the same blocks as a model call on the history it summarizes (the
warm part, the hidden prompt, the path from its root), then its prompt: while
the cache is warm, that prefix is read from it, and the call's own reads and
writes go into the cache the later calls find. A bare one (no system prompt,
no tools) or one on another model (a summarizer naming one, with or without
a model to price in) reads nothing cached and writes nothing: its input at the
full price. One the summarizer refused or failed reads nothing at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..tokens import content_text
from .fit import Fit
from .plan import ExactCounts, Plan
from .prices import Prices
from .prompt_cache import PromptCache, default_rule, rule
from .result import ModelCall, SummaryCall

if TYPE_CHECKING:
    from ..engine import Session
    from ..tree import Tree

__all__ = ["Pricing", "price"]


@dataclass
class Pricing:
    """How a replay's calls are costed: the cache ``rule`` ("anthropic", "openai" or None; "auto": the
    one of ``model``, else of the log's own model), its lifetime ``ttl``, and ``model`` (a genai-prices
    spec: dollars; None: no dollars). Checked when made: an unknown model is a ``PriceError`` naming close
    matches, an unknown rule or lifetime a ``ValueError``."""

    model: str | None = None
    rule: str | None = "auto"
    ttl: Any = None
    summarizer_model: str | None = None
    _prices: dict[str | None, Prices | None] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.model is not None and not isinstance(self.model, str):
            raise TypeError(f"model must be a model name such as 'claude-sonnet-4-5' (or 'provider:model'), got {self.model!r}")
        if self.rule != "auto":
            rule(self.rule, self.ttl)  # checked now, not at the first call
        else:
            rule("anthropic", self.ttl)
        self.prices(self.model)
        if self.model is not None:  # dollars asked for: the summarizer's too (without, its name says only its cache)
            self.prices(self.summarizer_model)

    def prices(self, model: str | None) -> Prices | None:
        """genai-prices' prices of ``model`` (looked up once), or None for no model."""
        if model not in self._prices:
            self._prices[model] = None if model is None else Prices(model, cache_ttl="5m" if self.ttl is None else self.ttl)
        return self._prices[model]

    def ttl_for(self, name: str | None, model: str, the_fit: Fit) -> Any:
        """The lifetime a cache of rule ``name`` lives for the calls of ``model``: ``ttl`` when one was given;
        else the provider's own: Anthropic's default 5 minutes (a client asks for 1 hour in
        ``cache_control``), OpenAI's best-effort retention as the log's own calls after idle gaps show it
        (``Fit.lifetimes``: 5 or 10 minutes, an hour, a day), 5 minutes when they show none."""
        if self.ttl is not None:
            return self.ttl
        return the_fit.lifetimes.get(model, "5m") if name == "openai" else "5m"

    def rule_for(self, logged_model: str) -> str | None:
        if self.rule != "auto":
            return self.rule
        return default_rule(self.model) if self.model is not None else default_rule(logged_model or None)

    def __getstate__(self) -> dict[str, Any]:  # worker processes look the prices up again
        return {k: v for k, v in self.__dict__.items() if k != "_prices"} | {"_prices": {}}


class _PathBlocks(Sequence):
    """A call's blocks as ``predict`` reads them, from the end only as far as it must: the warm part,
    the hidden prompt, then the path root -> ``head`` of the session's tree (one block per message,
    ``ratio`` times its exact count), walked up from the head (``up``: the tree's ``ancestors``) only as
    far as it is read."""

    def __init__(self, head_blocks: list[tuple[Any, int]], head: str | None, depth: int,
                 up: Callable[[str | None], Iterator[str]], tokens_of: Callable[[str], int], under: tuple[str, str],
                 key_of: Callable[[str], str] = str):
        self._front, self._depth, self._tokens_of, self._under, self._key_of = head_blocks, depth, tokens_of, under, key_of
        self._up = up(head)
        self._read: list[str] = []  # the path's ids read so far, the head first

    def __len__(self) -> int:
        return len(self._front) + self._depth

    def __getitem__(self, i: int) -> tuple[Any, int]:  # type: ignore[override]  # predict reads by index, never a slice
        if i < 0:
            i += len(self)
        if i < len(self._front):
            return self._front[i]
        if not 0 <= i < len(self):
            raise IndexError(i)
        k = len(self) - 1 - i  # how far above the head
        while len(self._read) <= k:
            self._read.append(next(self._up))
        node = self._read[k]
        return ((*self._under, self._key_of(node)), self._tokens_of(node))


def price(calls: Sequence[ModelCall], summary_calls: Sequence[SummaryCall], session: Session, p: Plan, counts: ExactCounts,
          the_fit: Fit, pricing: Pricing) -> tuple[list[ModelCall], list[SummaryCall]]:
    """A replay's ``calls`` and ``summary_calls``, priced: new records, each call with its ``cached``,
    ``cache_write``, ``logged_cached``, ``output`` and ``usd`` (None without a model), each summary call
    with its ``cached``, ``cache_write`` and ``usd``. A call the provider refused as too long, or a summary call
    the summarizer refused or failed, reads nothing, writes nothing to the cache and costs nothing (0 each, $0). The calls are priced in the order they ran
    (each summary call before the model call it came before, ``SummaryCall.call``): they share the cache."""
    pricer = _Pricer(session, p, counts, the_fit, pricing)
    before: dict[int, list[int]] = {}
    for k, s in enumerate(summary_calls):
        before.setdefault(s.call if s.call is not None else len(calls) + 1, []).append(k)
    summaries: list[SummaryCall] = list(summary_calls)
    out: list[ModelCall] = []
    for i, c in enumerate(calls, 1):
        for k in before.pop(i, ()):
            summaries[k] = pricer.summary(summary_calls[k])
        out.append(pricer.call(c))
    for k in sorted(k for ks in before.values() for k in ks):  # after the last model call
        summaries[k] = pricer.summary(summary_calls[k])
    return out, summaries


class _Pricer:
    """One replay's calls priced one by one, in the order they ran, on the caches they share (``price``)."""

    def __init__(self, session: Session, p: Plan, counts: ExactCounts, the_fit: Fit, pricing: Pricing) -> None:
        self.tree = session.message_tree  # (its networkx graph is never built in a replay)
        self.plan, self.counts, self.fit, self.pricing = p, counts, the_fit, pricing
        self.exact: dict[str, int] = {}
        self.key_of = _Keys(self.tree)
        self.logged_model = next((m for m in the_fit.models.values() if m), "")
        self.caches: dict[tuple[str | None, Any], PromptCache] = {}
        self.warmed: set[tuple[str | None, str]] = set()
        self.last: dict[tuple[str | None, Any, str], float] = {}  # per cache and model: when its previous call ran
        self.prices = pricing.prices(pricing.model)
        self.summary_prices = pricing.prices(pricing.summarizer_model or pricing.model) if pricing.model is not None else None

    def exact_of(self, sid: str) -> int:
        """The exact tokens of the session message ``sid`` (a copy counts as its original)."""
        n = self.exact.get(sid)
        if n is None:
            node = self.tree.node(sid)
            orig = node.get("copied_from")
            n = self.exact_of(orig) if isinstance(orig, str) and orig in self.tree else \
                self.counts.tokens(content_text(node["content"]))
            self.exact[sid] = n
        return n

    def where(self, reply: str | None, time: float | None) -> tuple[PromptCache, Any, list[tuple[Any, int]], tuple[Any, ...]]:
        """The cache a call under ``reply``'s log root and model reads, its key, its front blocks (the warm
        part, the rest of the hidden prompt) and ``(root, model, hidden, ratio)``."""
        pricing, fit, logged = self.pricing, self.fit, self.logged_model
        root, model, hidden, ratio, warm = fit.of(reply)
        name = pricing.rule_for(model or logged)
        ttl = pricing.ttl_for(name, model or logged, fit)
        cache = self.caches.get((name, ttl))
        if cache is None:
            cache = self.caches[name, ttl] = PromptCache(name, ttl, pricing.model or model or logged or None)
        front = [(("warm", model, warm), warm), (("hidden", root, model), max(0, round(hidden) - warm))]
        if warm and (name, model) not in self.warmed:  # what other sessions left in the cache, there before the first call
            self.warmed.add((name, model))
            cache.call(time, front[:1], model)
        return cache, (name, ttl, model), front, (root, model, hidden, ratio)

    def blocks(self, front: list[tuple[Any, int]], head: str | None, root: str, model: str, ratio: float) -> _PathBlocks:
        """A call's blocks: ``front``, then the path root -> ``head``, each message ``ratio`` times its exact count
        (its key names it and what it follows: the hidden prompt of its root and model; a session id the rest)."""
        def tokens_of(sid: str) -> int:
            return round(ratio * self.exact_of(sid))

        depth = 0 if head is None else self.tree.depth(head)
        return _PathBlocks(front, head, depth, self.tree.ancestors, tokens_of, (root, model), self.key_of)

    def call(self, c: ModelCall) -> ModelCall:
        prices = self.prices
        if c.refused:  # refused as too long: the provider read nothing, cached nothing, billed nothing
            return replace(c, cached=0, cache_write=0, logged_cached=None, output=0, usd=None if prices is None else 0.0,
                           miss_usd=None if prices is None else 0.0)
        cache, where, front, (root, model, hidden, ratio) = self.where(c.reply, c.time)
        got = cache.call(c.time, self.blocks(front, c.head, root, model, ratio), model)
        cached, cache_write = got["cached"], got["cache_write"]
        held = round(hidden) + ratio * c.exact  # what its blocks hold (the warm part is in hidden)
        if held > 0:  # the call reads more (or less) than its blocks hold: the difference cached and written as they are
            cached, cache_write = round(cached * c.read / held), round(cache_write * c.read / held)
        cached = min(cached, c.read)
        cache_write = min(cache_write, c.read - cached)
        output = _output(self.plan, c, self.counts)
        previous = self.last.get(where)
        self.last[where] = c.time
        alive = None if cache.rule is None or previous is None else c.time - previous <= cache.rule.ttl
        usd = miss = None
        if prices is not None:
            usd = prices.usd(c.read, cached, cache_write, output)
            miss = usd - prices.usd(c.read, c.read, 0, output)
        return replace(c, cached=cached, cache_write=cache_write, logged_cached=_logged_cached(self.plan, c) if c.applies else None,
                       output=output, usd=usd, cache_alive=alive, miss_usd=miss)

    def other_model(self, reply: str | None) -> bool:
        """Whether the summarizer names a model other than the session's at ``reply`` (the model priced, else the
        log's own there): its calls then read another cache, nothing of the session's. The same with or without a
        model to price in, so ``cached`` never depends on whether dollars were asked for."""
        named = self.pricing.summarizer_model
        if named is None:
            return False
        session = self.pricing.model or self.fit.of(reply)[1] or self.logged_model
        return _bare(named) != _bare(session)

    def summary(self, s: SummaryCall) -> SummaryCall:
        """A summary call priced, on the session's cache where it was sent as the engine sends it."""
        cached = cache_write = 0
        if s.answered and s.shared and not self.other_model(s.reply):
            cache, _, front, (root, model, hidden, ratio) = self.where(s.reply, s.time)
            sent = self.blocks(front, s.head, root, model, ratio)
            prompt = (("prompt", id(s)), round(ratio * (s.prompt if s.head is not None else s.exact)))  # its own
            got = cache.call(s.time, _Then(sent, prompt), model)
            cached, cache_write = got["cached"], got["cache_write"]
            held = round(hidden) + ratio * s.exact  # what its blocks hold
            if held > 0:  # as a model call's: what it reads beyond (or short of) them, cached and written as they are
                cached, cache_write = round(cached * s.read / held), round(cache_write * s.read / held)
            cached = min(cached, s.read)
            cache_write = min(cache_write, s.read - cached)
        prices = self.summary_prices
        usd = None if prices is None else 0.0 if not s.answered else prices.usd(s.read, cached, cache_write, s.output)
        return replace(s, cached=cached, cache_write=cache_write, usd=usd)


class _Then(Sequence):
    """``blocks`` and one more block after them (a summary call's prompt), read by index as ``predict`` reads."""

    def __init__(self, blocks: Sequence[tuple[Any, int]], last: tuple[Any, int]) -> None:
        self._blocks, self._last = blocks, last

    def __len__(self) -> int:
        return len(self._blocks) + 1

    def __getitem__(self, i: int) -> tuple[Any, int]:  # type: ignore[override]  # read by index, never a slice
        if i < 0:
            i += len(self)
        return self._last if i == len(self._blocks) else self._blocks[i]


class _Keys:
    """A message's key in the prompt cache: its own id, or its original's when it is a copy whose whole path up
    from it copies its original's path (the prefix the provider reads is the same, token for token)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.known: dict[str, str] = {}

    def __call__(self, sid: str) -> str:
        known, tree = self.known, self.tree
        if sid in known:
            return known[sid]
        chain, _ = tree.up_to(sid, known.__contains__)  # up to a message known, then down again: no recursion on a path
        for s in reversed(chain):
            orig, parent = tree.node(s).get("copied_from"), tree.parent(s)
            key = s
            if isinstance(orig, str) and orig in tree:
                above = tree.parent(orig)
                if (None if parent is None else known[parent]) == (None if above is None else self(above)):
                    key = self(orig)
            known[s] = key
        return known[sid]


def _bare(model: str | None) -> str:
    """A model's name as two names of one model share it: no provider prefix, no date or ``-latest`` suffix.

    >>> _bare("anthropic:claude-sonnet-4-5"), _bare("claude-sonnet-4-5-20250929"), _bare("gpt-4.1-mini")
    ('claude-sonnet-4-5', 'claude-sonnet-4-5', 'gpt-4.1-mini')
    """
    name = (model or "").rsplit(":", 1)[-1].lower()
    return re.sub(r"-(\d{8}|latest)$", "", name)


def _logged_cached(p: Plan, call: ModelCall) -> int | None:
    node = p.nodes.get(str(call.reply))
    usage = node.get("usage") if node is not None else None
    read = usage.get("cache_read_input_tokens") if isinstance(usage, Mapping) else None
    return read if isinstance(read, int) and not isinstance(read, bool) else None


def _output(p: Plan, call: ModelCall, counts: ExactCounts) -> int:
    """The logged reply's output tokens, else the exact count of its text."""
    node = p.nodes.get(str(call.reply))
    if node is None:
        return 0
    usage = node.get("usage")
    out = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    if isinstance(out, int) and not isinstance(out, bool) and out >= 0:
        return out
    return counts.tokens(content_text(node.get("content")))
