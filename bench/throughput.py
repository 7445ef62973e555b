"""Exact counting throughput: ``convlab.tokens.count_batch`` against raw
tiktoken ``encode_ordinary_batch`` on the same distinct texts.

The ratio is convlab's throughput over tiktoken's (raw time / convlab time):
convlab's offline encoding and its batch wrapper must cost next to nothing.
"""

from __future__ import annotations

from .corpus import texts
from .harness import Row, once, paired


def run(smoke: bool) -> Row:
    n = 300 if smoke else 6_000
    row = Row("tokens", f"exact counting throughput: count_batch / raw encode_ordinary_batch ({n:,} texts)", 0.9, ">=",
              unit="tok/s", num_label="convlab", den_label="tiktoken")
    from convlab.tokens import count_batch, get_encoding

    enc = get_encoding("o200k_base")
    data = texts(n, seed=5)
    total = sum(count_batch(data))
    assert total == sum(len(t) for t in enc.encode_ordinary_batch(data))
    ours, raw, a, b = paired(lambda: once(lambda: count_batch(data)), lambda: once(lambda: enc.encode_ordinary_batch(data)), 3 if smoke else 7)
    row.finish(total / ours, total / raw, raw / ours)
    chars = sum(map(len, data))
    row.note = f"{total:,} tokens, {chars / 1e6:.1f} M chars; ratio = tiktoken time / convlab time"
    row.extra = {"seconds_convlab": a, "seconds_tiktoken": b, "tokens": total}
    return row
