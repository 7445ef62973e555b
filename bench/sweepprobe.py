"""``python -m bench.sweepprobe FOLDER MODE``: sweep a folder of logs in this fresh interpreter, and its memory.

MODE ``stream`` is ``convlab.tune(FOLDER)`` (each file read where it is swept, ``convlab.tuning.files``);
``read`` is ``convlab.tune(convlab.read(FOLDER))`` (every conversation read first). Both over the grid
``GRID`` below, in worker processes, one per core, no result cache. Prints one JSON line: seconds, rows,
the calling process's peak resident memory (``VmHWM``, whole) and its growth during the sweep (reset by
``clear_refs`` just before), the largest worker's peak (``ru_maxrss`` of the waited-for children), and the
bound ``peak + jobs x worker`` (forked workers share the caller's pages, so the bound counts them twice).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

from .lazyprobe import peak, reset_peak, status

#: the memory rows' grid: what a sweep holds per conversation is its rows, which a wider grid only lengthens
GRID = {"window": [64_000, 200_000], "strategy[1].over_tokens": [None, 20_000]}


def main(argv: list[str]) -> int:
    folder, mode = Path(argv[0]), argv[1]
    import convlab

    from .sweep import BASE

    jobs = len(os.sched_getaffinity(0))
    before = status("VmRSS")
    method = reset_peak()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = folder if mode == "stream" else convlab.read(folder, progress=False)
        df = convlab.tune(source, BASE, grid=GRID, progress=False, result_cache=False, jobs=jobs)
    seconds = time.perf_counter() - t0
    top = peak(method)
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(json.dumps({"mode": mode, "seconds": seconds, "rows": len(df), "conversations": int(df["conversation"].nunique()),
                      "peak": top, "growth": top - before, "worker": worker, "jobs": jobs,
                      "bound": top + jobs * worker, "method": method}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
