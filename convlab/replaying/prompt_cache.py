"""The prompt cache: what a provider reads from its cache at each model call of a conversation.

``predict`` takes the calls of one conversation in order, each its time and
its input as blocks ``(key, tokens)`` (the hidden prompt first, then the
messages), and says per call how many input tokens were read from the cache
(``cached``) and written to it (``cache_write``). The rules are the
providers' documented ones; where this model of them decides something the
docs leave open, it says so (and docs/cache.md says it again, with what it
costs on real Claude Code sessions).

**Anthropic** (``"anthropic"``; Anthropic, "Prompt caching",
https://docs.claude.com/en/docs/build-with-claude/prompt-caching):

- A request caches the prefix up to each ``cache_control`` breakpoint; a later
  request reads the longest prefix that ends where an earlier request's
  breakpoint ended, if that entry still lives. Decided: every call has two
  breakpoints, as Claude Code sends them: the end of the first block (the
  hidden prompt: system and tools) and the end of its input (the last
  message). So the cache holds the hidden prompt and each earlier call's whole
  input, and a call reads the longest of those that its own input starts
  with. The docs' lookback (a breakpoint finds an earlier entry at most about
  20 content blocks back) is not modelled: blocks here are messages, not
  content blocks (docs/cache.md measures how often it could matter).
- Lifetime: 5 minutes, 1 hour on request (``ttl="1h"``); "the cache is
  refreshed for no additional cost each time the cached content is used": the
  entry a call reads, and the hidden prompt's, live ``ttl`` from that call.
- ``cache_write`` is the rest of the input past what was read, up to the last
  breakpoint: the whole input less ``cached``. The docs' minimum cacheable
  length (``minimum``: 4,096 tokens for Opus 4.5 and later Opus and for Haiku
  4.5, 2,048 for Haiku 3 and 3.5, 1,024 for the others) applies per
  breakpoint: a shorter prefix is neither written nor read.

**OpenAI** (``"openai"``; OpenAI, "Prompt caching",
https://platform.openai.com/docs/guides/prompt-caching): automatic for
prompts of 1,024 tokens or more; "cache hits occur in increments of 128
tokens" (1,024, 1,152, 1,280, ...); cached prefixes "remain active for 5 to 10
minutes of inactivity" (decided: 5 minutes). Any prefix of an earlier prompt
can be read; decided: the longest prefix a call shares with the previous
call, or with any earlier call's whole input or hidden prompt, while it
lives. Nothing is "written" (``cache_write`` is 0: models before GPT-5.6 price
no write).

**None**: no cache; every call reads nothing from it.

What the keys mean. A block's key names the block and everything before it,
as a message id in a conversation tree names its whole path (the hidden
prompt's key names the hidden prompt; a different hidden prompt, or one of
another size, needs another key). That is what makes ``predict`` cost what
changed, not the path: it reads each call's blocks from the end, and stops at
the first block an earlier call already had. A known key must come at the
same position, with the same tokens and after the same key as before; else
``predict`` raises ``ValueError`` saying which. A provider keeps a cache per
model: a call may name its ``model`` (calls of different models share
nothing).

Times are seconds (a log's epoch seconds). A time that is None or NaN is not
known: taken as the previous call's (no time passed). A time earlier than the
previous call's is taken as the previous call's: the cache's clock never
runs back.

>>> hidden = ("hidden", 2000)
>>> calls = [(0, [hidden, ("u1", 50)]),
...          (10, [hidden, ("u1", 50), ("a1", 30), ("u2", 40)]),
...          (1000, [hidden, ("u1", 50), ("a1", 30), ("u2", 40), ("a2", 20), ("u3", 10)])]
>>> predict(calls, "anthropic")
[{'cached': 0, 'cache_write': 2050}, {'cached': 2050, 'cache_write': 70}, {'cached': 0, 'cache_write': 2150}]
>>> predict(calls, "anthropic", ttl="1h")[2]
{'cached': 2120, 'cache_write': 30}
>>> predict(calls, "openai")
[{'cached': 0, 'cache_write': 0}, {'cached': 2048, 'cache_write': 0}, {'cached': 0, 'cache_write': 0}]
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["predict", "PromptCache", "Rule", "rule", "default_rule", "RULES", "TTLS"]

#: The cache rules ``predict`` knows (None: no cache).
RULES = ("anthropic", "openai")

#: The named lifetimes, in seconds: Anthropic's two (``cache_control.ttl``).
TTLS = {"5m": 300.0, "1h": 3600.0}

#: Anthropic's minimum cacheable prompt length by model name (the docs' table),
#: first match wins; any other Claude model: 1,024.
_ANTHROPIC_MINIMUM = (("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096), ("claude-opus-4-7", 4096),
                      ("claude-haiku-4-5", 4096), ("claude-3-5-haiku", 2048), ("claude-3-haiku", 2048),
                      ("claude-haiku-3", 2048))


@dataclass(frozen=True)
class Rule:
    """One provider's cache rule, its numbers checked: ``name``, ``ttl`` (seconds),
    ``minimum`` (the shortest prefix cached), ``step`` (a read counts in whole
    steps of this many tokens), ``writes`` (whether writing is counted) and
    ``any_prefix`` (whether a read may end anywhere in an earlier input, not
    only where an earlier call's breakpoint was). Build one with ``rule``.

    >>> rule("openai")
    Rule(name='openai', ttl=300.0, minimum=1024, step=128, writes=False, any_prefix=True)
    """

    name: str
    ttl: float
    minimum: int
    step: int
    writes: bool
    any_prefix: bool


def _ttl(ttl: float | str) -> float:
    if isinstance(ttl, str) and ttl in TTLS:
        return TTLS[ttl]
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"cache ttl must be a positive number of seconds or one of {sorted(TTLS)}, got {ttl!r}")
    return float(ttl)


def _minimum(model: str | None) -> int:
    name = (model or "").rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    return next((n for prefix, n in _ANTHROPIC_MINIMUM if name.startswith(prefix)), 1024)


def default_rule(model: str | None) -> str | None:
    """The cache rule of a model (a name or a ``provider:model`` spec): ``"anthropic"`` for
    Claude models, ``"openai"`` for GPT and o-series models, None for any other (or none).

    >>> default_rule("claude-sonnet-4-5"), default_rule("openai:gpt-4o"), default_rule("o3-mini"), default_rule("gemini-2.5-pro")
    ('anthropic', 'openai', 'openai', None)
    """
    if not isinstance(model, str):
        return None
    provider, _, name = model.lower().rpartition(":")
    name = name.rsplit("/", 1)[-1]
    if provider == "anthropic" or name.startswith("claude"):
        return "anthropic"
    if provider == "openai" or name.startswith("gpt") or (name[:1] == "o" and name[1:2].isdigit()):
        return "openai"
    return None


def rule(name: str | Rule | None, ttl: float | str | None = None, model: str | None = None) -> Rule | None:
    """The rule ``name`` (``"anthropic"``, ``"openai"``, or None: no cache) with its
    lifetime ``ttl`` (seconds, ``"5m"`` or ``"1h"``; default 5 minutes) and, for
    Anthropic, the minimum cacheable length of ``model`` (1,024 when no model is given).

    >>> rule("anthropic", ttl="1h", model="claude-opus-4-6")
    Rule(name='anthropic', ttl=3600.0, minimum=4096, step=1, writes=True, any_prefix=False)
    >>> rule("gemini")
    Traceback (most recent call last):
    ...
    ValueError: cache must be one of ('anthropic', 'openai') or None, got 'gemini'
    """
    if isinstance(name, Rule) or name is None:
        return name
    if name not in RULES:
        raise ValueError(f"cache must be one of {RULES} or None, got {name!r}")
    seconds = 300.0 if ttl is None else _ttl(ttl)
    if name == "anthropic":
        return Rule("anthropic", seconds, _minimum(model), 1, True, False)
    return Rule("openai", seconds, 1024, 128, False, True)


class _Node:
    """One block in the trie of every input seen: its place, its running total, and,
    if a breakpoint ended there, when its cache entry dies (``expires``)."""

    __slots__ = ("depth", "epoch", "expires", "key", "parent", "root", "skip", "tokens", "total")

    def __init__(self, key: Hashable, tokens: int, parent: _Node | None) -> None:
        self.key, self.tokens, self.parent = key, tokens, parent
        self.root: _Node = self if parent is None else parent.root
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.total: int = tokens + (0 if parent is None else parent.total)
        self.expires: float | None = None
        self.skip: _Node | None = None  # an ancestor with no live entry strictly between (valid at ``epoch``)
        self.epoch = -1


class _Store:
    """One model's cache: the trie, its entries, the clock and the previous call."""

    def __init__(self) -> None:
        self.nodes: dict[Hashable, _Node] = {}
        self.epoch = 0  # bumped when a block that others may skip over becomes an entry
        self.clock = 0.0
        self.last: _Node | None = None
        self.last_time = -math.inf


def _block(blocks: Sequence[Any], i: int) -> tuple[Hashable, int]:
    b = blocks[i]
    if not isinstance(b, (tuple, list)) or len(b) != 2:
        raise ValueError(f"block {i} must be a (key, tokens) pair, got {b!r}")
    key, tokens = b
    try:
        hash(key)
    except TypeError:
        raise ValueError(f"block {i}: its key must be hashable (a string, a number, a tuple), got {key!r}") from None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ValueError(f"block {i} ({key!r}): tokens must be a whole number, 0 or more, got {tokens!r}")
    return key, tokens


def _known(store: _Store, blocks: Sequence[Any]) -> tuple[_Node | None, list[tuple[Hashable, int]]]:
    """The deepest block of ``blocks`` an earlier call had, and the new blocks after it
    (read from the end: only as far as the first known block)."""
    new: list[tuple[Hashable, int]] = []
    seen: set[Hashable] = set()
    for i in range(len(blocks) - 1, -1, -1):
        key, tokens = _block(blocks, i)
        node = store.nodes.get(key)
        if node is None:
            if key in seen:
                raise ValueError(f"block key {key!r} comes twice in one call's input: a key must name one block")
            seen.add(key)
            new.append((key, tokens))
            continue
        if node.depth != i:
            raise ValueError(f"block key {key!r} was block {node.depth} of an earlier call, here it is block {i}: "
                             "a key names a block and everything before it")
        if node.tokens != tokens:
            raise ValueError(f"block key {key!r} had {node.tokens} tokens at an earlier call, here {tokens}: "
                             "a changed block needs a new key")
        before = _block(blocks, i - 1)[0] if i else None
        if (node.parent.key if node.parent else None) != before or key in seen:
            raise ValueError(f"block key {key!r} follows {before!r} here, {node.parent.key if node.parent else None!r} "
                             "at an earlier call: a key names a block and everything before it")
        return node, new[::-1]
    return None, new[::-1]


def _live(store: _Store, node: _Node | None, now: float) -> _Node | None:
    """The deepest entry at or above ``node`` (the first block excepted) that lives at
    ``now``; dead entries are dropped (the clock never runs back). Skip pointers
    with path compression keep this near O(1) a call."""
    passed: list[_Node] = []
    while node is not None and node.depth > 0:
        if node.expires is not None:
            if node.expires >= now:
                break
            node.expires = None
        passed.append(node)
        node = node.skip if node.epoch == store.epoch else node.parent
    for p in passed:
        p.skip, p.epoch = node, store.epoch
    return node if node is not None and node.depth > 0 else None


def _common(a: _Node | None, b: _Node | None) -> _Node | None:
    """The deepest block two inputs share (``a`` and ``b`` their last blocks): O(what differs)."""
    while a is not None and b is not None and a is not b:
        if a.depth >= b.depth:
            a = a.parent
        else:
            b = b.parent
    return a if a is b else None


class PromptCache:
    """``predict`` one call at a time: ``call(time, blocks, model)`` -> ``{"cached", "cache_write"}``.

    >>> c = PromptCache("anthropic")
    >>> c.call(0, [("hidden", 1500), ("u1", 10)])
    {'cached': 0, 'cache_write': 1510}
    >>> c.call(5, [("hidden", 1500), ("u1", 10), ("a1", 5), ("u2", 7)])
    {'cached': 1510, 'cache_write': 12}
    """

    def __init__(self, rule_: str | Rule | None = "anthropic", ttl: float | str | None = None, model: str | None = None) -> None:
        self.rule = rule(rule_, ttl, model)
        self._stores: dict[Any, _Store] = {}

    def call(self, time: float | None, blocks: Sequence[Any], model: Hashable = None) -> dict[str, int]:
        """What the call at ``time`` reading ``blocks`` reads from the cache and writes to it."""
        if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Sequence):
            raise ValueError(f"a call's blocks must be a sequence of (key, tokens) pairs, got {type(blocks).__name__}")
        try:
            hash(model)
        except TypeError:
            raise ValueError(f"a call's model must be a name (hashable), got {model!r}") from None
        store = self._stores.setdefault(model, _Store())
        now = store.clock = max(store.clock, _time(time, store.clock))
        known, new = _known(store, blocks)
        if self.rule is None or not len(blocks):
            self._insert(store, known, new)
            return {"cached": 0, "cache_write": 0}
        return self._read_write(store, now, known, new)

    def _read_write(self, store: _Store, now: float, known: _Node | None, new: list) -> dict[str, int]:
        r = self.rule
        assert r is not None  # call() answers a rule of None itself
        hit = _live(store, known, now)
        read = hit.total if hit is not None else 0
        if r.any_prefix and store.last is not None and store.last_time + r.ttl >= now:
            shared = _common(store.last, known)  # OpenAI: any prefix of the previous input
            read = max(read, shared.total if shared is not None else 0)
        leaf = self._insert(store, known, new)
        assert leaf is not None  # the call has at least one block (call() answers an empty input itself)
        root = leaf.root
        if read == 0 and root.expires is not None and root.expires >= now:
            read = root.total
        cached = read - read % r.step if read >= r.minimum else 0
        wrote = self._entries(store, now, (root, hit, leaf), leaf is known)
        store.last, store.last_time = leaf, now
        return {"cached": cached, "cache_write": max(0, wrote - cached) if r.writes else 0}

    def _insert(self, store: _Store, known: _Node | None, new: list) -> _Node | None:
        node = known
        for key, tokens in new:
            node = _Node(key, tokens, node)
            store.nodes[key] = node
        return node

    def _entries(self, store: _Store, now: float, breakpoints: tuple, old_leaf: bool) -> int:
        """Write (or refresh) the call's breakpoints (its hidden prompt, the entry it
        read, its whole input) and say what the longest written holds. A block an
        earlier call had that holds an entry anew may lie under other blocks' skip
        pointers: they are dropped (``epoch``); the first block is never skipped."""
        r = self.rule
        assert r is not None
        expires = now + r.ttl
        wrote = 0
        for node in breakpoints:
            if node is None or node.total < r.minimum:
                continue
            if node.expires is None and node.depth > 0 and old_leaf:
                store.epoch += 1
            node.expires = expires
            wrote = max(wrote, node.total)
        return wrote


def _time(time: float | None, clock: float) -> float:
    if time is None or (isinstance(time, float) and math.isnan(time)):
        return clock
    if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time):
        raise ValueError(f"a call's time must be a number of seconds (or None: not known), got {time!r}")
    return float(time)


def predict(calls: Iterable[Any], rule: str | Rule | None = "anthropic", ttl: float | str | None = None, model: str | None = None) -> list[dict[str, int]]:
    """Per call of one conversation, in order, the input tokens read from the cache
    (``cached``) and written to it (``cache_write``) under ``rule`` (see the module).

    Each call is ``(time, blocks)`` or ``(time, blocks, model)``: ``blocks`` a
    sequence of ``(key, tokens)``, the hidden prompt first. ``ttl`` is the
    cache's lifetime (seconds, ``"5m"``, ``"1h"``); ``model`` the model whose
    minimum cacheable length applies (Anthropic). Bad input raises ``ValueError``
    naming the call and what is wrong with it.

    >>> predict([(0, [("sys", 3000)]), (None, [("sys", 3000), ("u", 9)])])
    [{'cached': 0, 'cache_write': 3000}, {'cached': 3000, 'cache_write': 9}]
    >>> predict([(0, "hello")])
    Traceback (most recent call last):
    ...
    ValueError: call 0: a call's blocks must be a sequence of (key, tokens) pairs, got str
    """
    cache = PromptCache(rule, ttl, model)
    out = []
    for i, c in enumerate(calls):
        if not isinstance(c, (tuple, list)) or len(c) not in (2, 3):
            raise ValueError(f"call {i}: must be (time, blocks) or (time, blocks, model), got {c!r:.80}")
        try:
            out.append(cache.call(*c))
        except ValueError as e:
            raise ValueError(f"call {i}: {e}") from None
    return out
