"""``python -m bench.replayprobe FILE [MODE [EVENTS_KEPT]]``: read a log in a fresh interpreter, then replay
its one conversation, and print, as one JSON line, how much the peak resident memory grew during each
(bytes), the seconds each took and what the replay made. ``MODE`` is not read (``bench.logs.probe`` passes
one); ``EVENTS_KEPT``: the replay's session keeps that many of its newest events in memory instead of
``convlab.replaying.driver.EVENTS_KEPT`` (a log smaller than the bench's, its kept events scaled down with it:
``tests/test_replay_memory.py``).

Peak memory is measured as in ``bench.lazyprobe`` (the kernel's high-water mark reset just before
each step). The read's result is kept while the replay runs, as a user's is; the replay's growth is
what the replay itself needs beyond it.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path

from .lazyprobe import peak, reset_peak, status


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    import convlab
    import convlab.replaying.driver

    if len(argv) > 2:
        convlab.replaying.driver.EVENTS_KEPT = int(argv[2])

    # warm up: import and run everything a replay touches, on a tiny conversation (the tokenizer's tables included)
    tree = convlab.Tree()
    tree.add({"id": "u", "role": "user", "content": "hi"}, None)
    tree.add({"id": "a", "role": "assistant", "content": "hello", "usage": {"input_tokens": 9, "output_tokens": 1}}, "u")
    tree.head = "a"
    convlab.replay(convlab.Conversation(tree, id="warm-up"))
    gc.collect()
    method = reset_peak()
    before = status("VmRSS")
    t0 = time.perf_counter()
    [conversation] = convlab.read(path, progress=False)
    read_s, read_peak = time.perf_counter() - t0, peak(method) - before
    gc.collect()
    reset_peak()
    before = status("VmRSS")
    t0 = time.perf_counter()
    r = convlab.replay(conversation)
    replay_s, replay_peak = time.perf_counter() - t0, peak(method) - before
    print(json.dumps({"read_peak": read_peak, "read_seconds": read_s, "peak": replay_peak, "seconds": replay_s,
                      "method": method, "messages": len(conversation), "calls": len(r.calls), "stale": len(r.stale),
                      "events": len(r.session.events), "events_kept": convlab.replaying.driver.EVENTS_KEPT}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
