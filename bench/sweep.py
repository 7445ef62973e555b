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
        from convlab.replay import config_grid
    except ImportError as err:
        row.error = f"not available: {err}"
        return row
    convs = conversations(n, messages, path_len)
    configs = config_grid(BASE, GRID)
    assert len(configs) == 100

    frames = []

    def sweep():
        frames.append(convlab.tune(convs, BASE, grid=GRID, progress=False))

    def replay_all():
        for c in convs:
            convlab.replay(c)

    replay_all()  # warm up (imports, the tokenizer)
    num, den, a, b = paired(lambda: once(sweep), lambda: once(replay_all), 3)
    df = frames[-1]
    fired = int((df["limits_full"] + df["limits_idle"] + df["limits_overflow"] > 0).sum())
    row.finish(num, den)
    row.note = (f"convlab.tune over a 5x5x4 grid (window, reset idle_secs, summarize over_tokens) in worker "
                f"processes, one per core (the default); {fired} of {len(df)} (conversation, config) replays hold a call; "
                f"denominator: convlab.replay of each conversation, one after the other")
    row.extra = {"samples_num": a, "samples_den": b, "fired": fired, "rows": len(df)}
    return row

