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
that much is taken from the log. A call whose logged input is more than its
blocks hold (the fit is a line through the log's calls: about half of them lie
above it) has its cache read and write scaled up by the same share, so that
what no block holds is cached and written as the rest of its input is, not
priced as fresh input no call could have cached: otherwise the log as it ran
pays for its fit's residuals at the full price, and any config that rewrites
the history (whose calls read what the fit says) looks cheaper by that much. A log with no usage gives ``hidden`` the
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
no tools) or one on another model (a summarizer naming one) reads nothing
cached and writes nothing: its input at the full price.
"""

from __future__ import annotations

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
    with its ``usd``. A call the provider refused as too long reads nothing, writes nothing to the cache
    and costs nothing (0 each, $0)."""
    tree = session.message_tree  # (its networkx graph is never built in a replay)
    exact: dict[str, int] = {}
    key_of = _Keys(tree)

    def exact_of(sid: str) -> int:
        n = exact.get(sid)
        if n is None:
            node = tree.node(sid)
            orig = node.get("copied_from")
            n = exact_of(orig) if isinstance(orig, str) and orig in tree else counts.tokens(content_text(node["content"]))
            exact[sid] = n
        return n

    logged_model = next((m for m in the_fit.models.values() if m), "")
    caches: dict[tuple[str | None, Any], PromptCache] = {}
    warmed: set[tuple[str | None, str]] = set()
    last: dict[tuple[str | None, Any, str], float] = {}  # per cache and model: when its previous call ran
    prices = pricing.prices(pricing.model)

    def cache_for(reply: str | None, time: float | None) -> tuple[PromptCache, Any, list[tuple[Any, int]], tuple[Any, ...]]:
        """The cache a call under ``reply``'s log root and model reads, its key, its front blocks (the warm
        part, the rest of the hidden prompt) and ``(root, model, hidden, ratio)``."""
        root, model, hidden, ratio, warm = the_fit.of(reply)
        name = pricing.rule_for(model or logged_model)
        ttl = pricing.ttl_for(name, model or logged_model, the_fit)
        cache = caches.get((name, ttl))
        if cache is None:
            cache = caches[name, ttl] = PromptCache(name, ttl, pricing.model or model or logged_model or None)
        front = [(("warm", model, warm), warm), (("hidden", root, model), max(0, round(hidden) - warm))]
        if warm and (name, model) not in warmed:  # what other sessions left in the cache, there before the first call
            warmed.add((name, model))
            cache.call(time, front[:1], model)
        return cache, (name, ttl, model), front, (root, model, hidden, ratio)

    summary_prices = pricing.prices(pricing.summarizer_model or pricing.model)
    other_model = pricing.summarizer_model is not None and pricing.summarizer_model != pricing.model

    def summary(s: SummaryCall) -> SummaryCall:
        """A summary call priced, on the session's cache where it was sent as the engine sends it."""
        cached = cache_write = 0
        if not s.refused and s.shared and not other_model:
            cache, _, sent, (root, model, _, ratio) = cache_for(s.reply, s.time)
            if s.head is not None:
                path = [*reversed(list(tree.ancestors(s.head)))]
                sent = sent + [((root, model, key_of(sid)), round(ratio * exact_of(sid))) for sid in path]
            sent.append((("prompt", id(s)), max(0, s.read - sum(n for _, n in sent))))  # its prompt: its own
            got = cache.call(s.time, sent, model)
            cached = min(got["cached"], s.read)
            cache_write = min(got["cache_write"], s.read - cached)
        usd = None if summary_prices is None else 0.0 if s.refused else summary_prices.usd(s.read, cached, cache_write, s.output)
        return replace(s, cached=cached, cache_write=cache_write, usd=usd)

    # the calls in the order they ran: each summary call before the model call it came before (``SummaryCall.call``)
    before: dict[int, list[int]] = {}
    for k, s in enumerate(summary_calls):
        before.setdefault(s.call if s.call is not None else len(calls) + 1, []).append(k)
    summaries: list[SummaryCall] = list(summary_calls)
    out: list[ModelCall] = []
    for i, c in enumerate(calls, 1):
        for k in before.pop(i, ()):
            summaries[k] = summary(summary_calls[k])
        if c.refused:  # refused as too long: the provider read nothing, cached nothing, billed nothing
            out.append(replace(c, cached=0, cache_write=0, logged_cached=None, output=0, usd=None if prices is None else 0.0,
                               miss_usd=None if prices is None else 0.0))
            continue
        cache, where, front, (root, model, hidden, ratio) = cache_for(c.reply, c.time)

        # a message's key names it and what it follows (the hidden prompt of its root and model: a session id names the rest)
        def tokens_of(sid: str, r: float = ratio) -> int:
            return round(r * exact_of(sid))

        blocks = _PathBlocks(front, c.head, 0 if c.head is None else tree.depth(c.head), tree.ancestors, tokens_of, (root, model),
                             key_of)
        got = cache.call(c.time, blocks, model)
        cached, cache_write = got["cached"], got["cache_write"]
        held = round(hidden) + ratio * c.exact  # what its blocks hold (the warm part is in hidden)
        if c.read > held > 0:  # the log's usage reads more than its blocks hold: the rest is cached and written as they are
            cached, cache_write = round(cached * c.read / held), round(cache_write * c.read / held)
        cached = min(cached, c.read)
        cache_write = min(cache_write, c.read - cached)
        output = _output(p, c, counts)
        previous = last.get(where)
        last[where] = c.time
        alive = None if cache.rule is None or previous is None else c.time - previous <= cache.rule.ttl
        usd = miss = None
        if prices is not None:
            usd = prices.usd(c.read, cached, cache_write, output)
            miss = usd - prices.usd(c.read, c.read, 0, output)
        out.append(replace(c, cached=cached, cache_write=cache_write, logged_cached=_logged_cached(p, c) if c.applies else None,
                           output=output, usd=usd, cache_alive=alive, miss_usd=miss))
    for k in sorted(k for ks in before.values() for k in ks):  # after the last model call
        summaries[k] = summary(summary_calls[k])
    return out, summaries


class _Keys:
    """A message's key in the prompt cache: its own id, or its original's when it is a copy whose whole path up
    from it copies its original's path (the prefix the provider reads is the same, token for token)."""

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self.known: dict[str, str] = {}

    def __call__(self, sid: str) -> str:
        known, tree = self.known, self.tree
        if sid in known:
            return known[sid]
        chain, s = [], sid
        while s is not None and s not in known:  # up to a message known, then down again: no recursion on a path
            chain.append(s)
            s = tree.parent(s)
        for s in reversed(chain):
            node = tree.node(s)
            orig, parent = node.get("copied_from"), tree.parent(s)
            key = s
            if isinstance(orig, str) and orig in tree:
                above = tree.parent(orig)
                if (None if parent is None else known[parent]) == (None if above is None else self(above)):
                    key = self(orig)
            known[s] = key
        return known[sid]


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
