"""``python -m bench.lazyprobe LOG eager|lazy``: open a session log in a fresh
interpreter and print, as one JSON line, how much the peak resident memory
grew while opening it (bytes), the seconds it took, the head, the active
path's ids and the count.

Peak memory: the kernel's high-water mark of resident memory (``VmHWM``) is
reset to the current resident size just before the load (``echo 5 >
/proc/self/clear_refs``), and the growth is ``VmHWM`` after minus ``VmRSS``
before. Where that reset is not possible it falls back to ``ru_maxrss``
after minus ``VmRSS`` before (an upper bound of the same thing).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import tempfile
import time
from pathlib import Path


def status(key: str) -> int:
    """A ``/proc/self/status`` memory line, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def reset_peak() -> str:
    """Reset the peak resident memory to the current one where the kernel allows it; how the peak will be read."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "VmHWM reset by clear_refs"
    except OSError:
        return "ru_maxrss"


def peak(method: str) -> int:
    """The peak resident memory since ``reset_peak`` (or since the start, for ``ru_maxrss``), in bytes."""
    return status("VmHWM") if method != "ru_maxrss" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv: list[str]) -> int:
    path, mode = Path(argv[0]), argv[1]
    import convlab

    # warm up: import and run everything a load touches, on a tiny log
    with tempfile.TemporaryDirectory() as tmp:
        llm = convlab.ScriptedLLM([{"content": "hello", "usage": {"input_tokens": 1, "output_tokens": 1}}])
        s = convlab.Session(log=Path(tmp) / "warm.jsonl", llm=llm)
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
        s._log.close()
        w = convlab.Session.load(Path(tmp) / "warm.jsonl", **({"lazy": True} if mode == "lazy" else {}))
        w.path(), w.tokens()
        w._log.close()
        del s, w
    gc.collect()
    method = reset_peak()
    before = status("VmRSS")
    t0 = time.perf_counter()
    s = convlab.Session.load(path, **({"lazy": True} if mode == "lazy" else {}))
    ids = [n["id"] for n in s.path()]
    tokens = s.tokens()
    seconds = time.perf_counter() - t0
    after = peak(method)
    print(json.dumps({"mode": mode, "peak": after - before, "rss_before": before, "hwm_after": after, "method": method, "seconds": seconds,
                      "head": s.head, "path": ids, "tokens": tokens}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
