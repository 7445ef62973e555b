"""A 100-config sweep / one replay of the same corpus.

The corpus: generated agent sessions (branches from edits and regenerated
replies, tool results of a few KB, idle gaps between turns), each loaded and
wrapped as a ``convlab.Conversation`` like an imported log. The sweep is
``convlab.tune`` over a 5 x 5 x 4 grid of windows, idle resets and summarize
thresholds, many of which fire on this corpus; the denominator replays every
conversation once with no config (``convlab.replay``).
"""

from __future__ import annotations

from .harness import Row, once, paired
from . import corpus

BASE = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
"""

#: samples of each side, best of them: this VM's host is shared, and its noise comes in bursts of seconds
#: (a 20% slower side in one run of three), which the best of three did not always step around
REPEATS = 5

GRID = {
    "window": [32_000, 48_000, 64_000, 128_000, 200_000],
    "strategy[0].idle_secs": [300, 600, 1800, 3600, 86_400],
    "strategy[1].over_tokens": [None, 20_000, 30_000, 40_000],
}


def conversations(n: int, messages: int, path_len: int) -> list:
    """``n`` generated agent sessions as ``Conversation`` objects."""
    import convlab

    out = []
    for i in range(n):
        path, _info = corpus.cached_log(messages, path_len=path_len, seed=100 + i)
        (c,) = convlab.read(path, progress=False)  # a session log read as an importer reads it: the tree, no Session
        c.id, c.title = f"agent-{i}", f"generated agent session {i}"
        out.append(c)
    return out


def run(smoke: bool) -> Row:
    n, messages, path_len = (3, 60, 20) if smoke else (20, 300, 100)
    row = Row("sweep", f"a 100-config sweep / one replay of the same corpus ({n} conversations, {n * messages:,} messages)",
              3, "<=", num_label="tune", den_label="replay")
    try:
        import convlab
        from convlab.tuning.grid import config_grid
    except ImportError as err:
        row.error = f"not available: {err}"
        return row
    convs = conversations(n, messages, path_len)
    configs = config_grid(BASE, GRID)
    assert len(configs) == 100

    frames = []

    def sweep():
        frames.append(convlab.tune(convs, BASE, grid=GRID, progress=False, result_cache=False))

    def replay_all():
        for c in convs:
            convlab.replay(c)

    replay_all()  # warm up (imports, the tokenizer)
    num, den, a, b = paired(lambda: once(sweep), lambda: once(replay_all), REPEATS)
    df = frames[-1]
    fired = int((df["limits_full"] + df["limits_idle"] + df["limits_overflow"] > 0).sum())
    row.finish(num, den)
    row.note = (f"convlab.tune over a 5x5x4 grid (window, reset idle_secs, summarize over_tokens) in worker "
                f"processes, one per core (the default), best of {REPEATS} alternating; {fired} of {len(df)} (conversation, config) replays hold a call; "
                f"denominator: convlab.replay of each conversation, one after the other")
    row.extra = {"samples_num": a, "samples_den": b, "fired": fired, "rows": len(df)}
    return row



def run_usd(smoke: bool) -> Row:
    """``tune`` with ``model=`` (every call priced with genai-prices, the prompt cache predicted) over ``tune``
    without it, on the sweep's corpus and a 20-config part of its grid."""
    n, messages, path_len = (3, 60, 20) if smoke else (20, 300, 100)
    row = Row("tune-usd", f"tune with model= / without, on the sweep corpus ({n} conversations, 20 configs)",
              1.3, "<=", num_label="model=", den_label="without")
    try:
        import convlab
    except ImportError as err:
        row.error = f"not available: {err}"
        return row
    convs = conversations(n, messages, path_len)
    grid = {"window": GRID["window"], "strategy[1].over_tokens": GRID["strategy[1].over_tokens"]}
    frames = {}

    def priced():
        frames["usd"] = convlab.tune(convs, BASE, grid=grid, progress=False, model="claude-sonnet-4-5", result_cache=False)

    def plain():
        frames["tokens"] = convlab.tune(convs, BASE, grid=grid, progress=False, result_cache=False)

    plain()  # warm up (imports, the tokenizer, genai-prices' snapshot)
    priced()
    num, den, a, b = paired(lambda: once(priced), lambda: once(plain), 3)
    row.finish(num, den)
    df = frames["usd"]
    row.note = (f"the priced frame: ${df['usd'].sum():,.2f} over {len(df)} rows, {df['cached_share'].mean():.0%} of the input "
                f"read from the cache on average (predicted); the same replays either way, the cost added after each")
    row.extra = {"samples_num": a, "samples_den": b}
    return row


#: The config the retention row's replays run under: an idle reset and a summarize that fire often on this corpus.
RETENTION_CONFIG = """
[agent.bot.context]
window = 48000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 600
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 20000
"""


def run_retention(smoke: bool) -> Row:
    """``convlab.retention`` (no judge: the facts each compaction kept) over the replays it scores."""
    n, messages, path_len = (3, 60, 20) if smoke else (20, 300, 100)
    row = Row("retention", f"scoring every compaction's facts / the replays it scores ({n} conversations, "
              f"{n * messages:,} messages)", 1.5, "<=", num_label="retention", den_label="replay")
    try:
        import convlab
        from convlab.tuning.facts import facts_in
    except ImportError as err:
        row.error = f"not available: {err}"
        return row
    convs = conversations(n, messages, path_len)
    replays: list = []
    frames: list = []

    def replay_all():
        replays[:] = [convlab.replay(c, RETENTION_CONFIG) for c in convs]

    def score_all():
        facts_in.cache_clear()  # cold: every text's facts found again, as on a first look at a replay
        frames[:] = [convlab.retention(r) for r in replays]

    replay_all()  # warm up (imports, the tokenizer)
    score_all()
    num, den, a, b = paired(lambda: once(score_all), lambda: once(replay_all), 3)
    row.finish(num, den)
    import pandas as pd

    df = pd.concat(frames)
    by = df["summary"].fillna("none").value_counts().to_dict()
    row.note = (f"convlab.retention of each replay ({len(df)} compactions: {', '.join(f'{v} {k}' for k, v in by.items())}; "
                f"{int(df['facts'].sum()):,} facts in what they dropped, {df['facts_kept'].mean():.0%} kept on average), "
                f"the facts cache cleared before each sample; denominator: convlab.replay of each conversation under "
                f"the same config (window 48k, a reset after 10 idle minutes, a summarize over 20k tokens)")
    row.extra = {"samples_num": a, "samples_den": b, "compactions": len(df)}
    return row
