"""The count before every model call, and the peer that users write today.

A conversation is replayed message by message; before every model call (each
assistant message) the context is planned: convlab records the message in a
``Tree`` (what the engine and the importers do), takes ``Tree.count()`` (the
count of docs/protocol.md 5.1, O(1) from per-node bookkeeping) and asks
``context.applies`` whether a strategy applies. The peer keeps a LangChain
message list and calls ``trim_messages`` with ``count_tokens_approximately``
before every call, as LangChain's docs show.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from typing import Any

from .corpus import agent_messages
from .harness import Row, log, once

WINDOW = 200_000
CONFIG_TOML = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "summarize"
"""


def plan_convlab(messages: list[dict[str, Any]], config) -> int:
    """Replay ``messages`` into a Tree, counting before every model call; returns the number of calls."""
    from convlab.context import applies
    from convlab.tree import Tree

    tree = Tree()
    parent = None
    calls = 0
    first = True
    for m in messages:
        if m["role"] == "assistant":
            applies(config, tree.count(), first_call=first, idle_for=None)
            calls += 1
            first = False
        elif m["role"] == "user":
            first = True
        tree.add(m, parent)
        tree.head = parent = m["id"]
    return calls


def plain_dicts(messages: list[dict[str, Any]]) -> None:
    """The floor: one dict per message in a dict, no graph and no count (how a
    build of this size scales on the machine at hand)."""
    nodes = {}
    parent = None
    for m in messages:
        nodes[m["id"]] = {"id": m["id"], "parent": parent, "role": m["role"], "content": m["content"], "seq": 0,
                          "time": None, "turn_id": None, "copied_from": None, "kind": "message",
                          "usage": m.get("usage"), "state": None, "replaces": None}
        parent = m["id"]


def to_langchain(messages: list[dict[str, Any]]) -> list:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out = []
    for m in messages:
        if m["role"] == "user":
            out.append(HumanMessage(m["content"], id=m["id"]))
        elif m["role"] == "tool":
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"], id=m["id"]))
        else:
            call = m.get("tool_call")
            calls = [{"name": call["name"], "args": call["args"], "id": call["id"]}] if call else []
            out.append(AIMessage(m["content"], id=m["id"], tool_calls=calls))
    return out


def plan_langchain(lc_messages: list) -> int:
    """What users do today: trim the whole history before every model call."""
    from langchain_core.messages import AIMessage, trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    history: list = []
    calls = 0
    for m in lc_messages:
        if isinstance(m, AIMessage):
            trim_messages(history, max_tokens=WINDOW - 16_000, strategy="last", token_counter=count_tokens_approximately,
                          start_on="human", end_on=("human", "tool"), include_system=True)
            calls += 1
        history.append(m)
    return calls


def _config():
    from convlab.context import load_config

    return load_config(CONFIG_TOML)["bot"]


def run_count(smoke: bool) -> Row:
    """How the count's time scales over a tenfold size, against how a plain dict
    of as many node dicts scales on the same machine in the same run (the
    probe): above 1, the count grows faster than the machine makes any build
    of that size grow."""
    big_n, small_n = (10_000, 1_000) if smoke else (100_000, 10_000)
    row = Row("count", f"the count before every model call: its scaling from {small_n:,} to {big_n:,} messages "
              f"/ a plain dict's scaling over the same sizes", 1.0, "<=", unit="x",
              num_label="the count", den_label="plain dicts")
    config = _config()
    big, small = agent_messages(big_n), agent_messages(small_n)
    # the inputs are the bench's, not the replay's: keep them out of the
    # collector so that each run pays only for the objects it makes
    gc.collect()
    gc.freeze()
    try:
        collections: dict[str, list] = {}
        on = interleaved({
            "count_big": lambda: _timed_gc(lambda: plan_convlab(big, config), collections, "num"),
            "count_small": lambda: _timed_gc(lambda: plan_convlab(small, config), collections, "den"),
            "plain_big": lambda: once(lambda: plain_dicts(big)),
            "plain_small": lambda: once(lambda: plain_dicts(small)),
        }, 3 if smoke else 7)
        gc.disable()
        try:
            off = interleaved({
                "count_big": lambda: once(lambda: plan_convlab(big, config)),
                "count_small": lambda: once(lambda: plan_convlab(small, config)),
                "plain_big": lambda: once(lambda: plain_dicts(big)),
                "plain_small": lambda: once(lambda: plain_dicts(small)),
            }, 3)
        finally:
            gc.enable()
    finally:
        gc.unfreeze()
    best = {k: min(v) for k, v in on.items()}
    best_off = {k: min(v) for k, v in off.items()}
    count, plain = best["count_big"] / best["count_small"], best["plain_big"] / best["plain_small"]
    count_off, plain_off = best_off["count_big"] / best_off["count_small"], best_off["plain_big"] / best_off["plain_small"]
    row.finish(count, plain)
    calls = plan_convlab(big, config)
    runs = len(on["count_big"])
    full = collections.get("num", [0, 0.0])
    row.note = (f"Tree.add + Tree.count + context.applies per message ({calls:,} calls): {_ms(best['count_big'])} / "
                f"{_ms(best['count_small'])}; a plain dict of node dicts: {_ms(best['plain_big'])} / {_ms(best['plain_small'])}; "
                f"linear is 10; both with the collector on, alternating, best of {runs}; full (gen-2) collections per "
                f"{big_n:,} run of the count: {full[0] / runs:.0f} taking {full[1] / runs:.2f} s; with the collector off: "
                f"the count scales {count_off:.1f}, plain dicts {plain_off:.1f} (ratio {count_off / plain_off:.2f})")
    row.extra = {"samples": on, "samples_gc_off": off, "calls_big": calls, "gen2": collections,
                 "count_scaling": count, "plain_dicts_scaling": plain, "gc_off_ratio": count_off / plain_off}
    return row


def interleaved(fns: dict[str, Any], repeats: int) -> dict[str, list[float]]:
    """Seconds of each of ``fns`` (each returns its seconds), ``repeats`` times,
    in rounds that start each time one further along the list, so that slow
    drift of a shared machine hits every side alike."""
    keys = list(fns)
    out: dict[str, list[float]] = {k: [] for k in keys}
    for i in range(repeats):
        for k in keys[i % len(keys):] + keys[: i % len(keys)]:
            out[k].append(fns[k]())
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds >= 0.01 else f"{seconds * 1e3:.1f} ms"


def _timed_gc(fn, acc: dict, key: str) -> float:
    """``once(fn)``, adding the number and seconds of full collections during it to ``acc[key]``."""
    start = [0.0]

    def cb(phase, info):
        if info["generation"] != 2:
            return
        if phase == "start":
            start[0] = time.perf_counter()
        else:
            slot = acc.setdefault(key, [0, 0.0])
            slot[0] += 1
            slot[1] += time.perf_counter() - start[0]

    gc.callbacks.append(cb)
    try:
        return once(fn)
    finally:
        gc.callbacks.remove(cb)


def _fit(sizes: list[int], times: list[float]) -> tuple[float, float]:
    """Least-squares power law t = c * n**k in log space: (c, k)."""
    xs = [math.log(n) for n in sizes]
    ys = [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return math.exp(my - k * mx), k


def run_peer(smoke: bool) -> Row:
    target = 400 if smoke else 10_000
    sizes = [100, 200] if smoke else [1_000, 2_000, 3_000]
    row = Row("peer", f"the peer: planning context call by call for {target:,} messages, LangChain trim_messages / convlab's count",
              100, ">=", num_label="LangChain", den_label="convlab")
    config = _config()
    messages = agent_messages(target)
    lc = to_langchain(messages)
    plan_langchain(lc[:50])  # warm up (first calls build pydantic validators)
    times = []
    for n in sizes:
        times.append(once(lambda: plan_langchain(lc[:n])))
        log(f"  peer: {n:,} messages in {times[-1]:.2f} s")
    c, k = _fit(sizes, times)
    peer = c * target ** k
    a = [once(lambda: plan_convlab(messages, config)) for _ in range(5)]
    ours = statistics.median(a)
    row.finish(peer, ours)
    measured = ", ".join(f"{n:,}: {t:.2f} s" for n, t in zip(sizes, times))
    row.note = (f"peer measured at {measured}; {target:,} extrapolated with a fitted power law t = {c:.3g}·n^{k:.2f} "
                f"(trim_messages, max_tokens={WINDOW - 16_000:,}, count_tokens_approximately)")
    row.extra = {"peer_sizes": sizes, "peer_times": times, "fit_c": c, "fit_k": k, "samples_den": a}
    return row
