"""``python -m bench.driveprobe TURNS``: drive a fresh session TURNS turns in this fresh interpreter, as users run one.

The collector on and nothing frozen (what ``import convlab`` and the warm-up left is on the heap, as in any
program); prints one JSON line: CPU seconds for the TURNS turns (after a 50-turn warm-up session, dropped),
the full collections during them and their seconds, and the tracked objects at the end.
"""

from __future__ import annotations

import gc
import json
import sys
import time

from .harness import FullCollections
from .scaling import drive


def main() -> None:
    turns = int(sys.argv[1])
    drive(50)  # warm up: imports, the tokenizer; then dropped
    gc.collect()
    full = FullCollections()
    gc.callbacks.append(full)
    t0 = time.process_time()
    session = drive(turns)
    seconds = time.process_time() - t0
    gc.callbacks.remove(full)
    print(json.dumps({"turns": turns, "seconds": seconds, "full": full.count, "full_seconds": full.seconds,
                      "tracked": len(gc.get_objects()), "last_path": len(session.path())}))


if __name__ == "__main__":
    main()
