"""``python -m bench.readprobe FILE read|json``: read a chat log export in a
fresh interpreter and print, as one JSON line, how much the peak resident
memory grew while reading it (bytes), the seconds it took and what it read.

``read`` is ``convlab.read(FILE, progress=False)``, keeping its result;
``json`` is ``json.load`` of the file. Peak memory is measured as in
``bench.lazyprobe``: the kernel's high-water mark (``VmHWM``) is reset to the
resident size just before (``echo 5 > /proc/self/clear_refs``) and the growth
is ``VmHWM`` after minus ``VmRSS`` before; where that reset is not possible,
``ru_maxrss`` after minus ``VmRSS`` before (an upper bound).
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from pathlib import Path

from .lazyprobe import peak, reset_peak, status


def main(argv: list[str]) -> int:
    path, mode = Path(argv[0]), argv[1]
    import convlab

    # warm up: import and run everything a read touches, on a tiny export
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "conversations.json"
        small.write_text(json.dumps([{"id": "c", "title": "t", "current_node": "m", "mapping": {
            "r": {"id": "r", "message": None, "parent": None, "children": ["m"]},
            "m": {"id": "m", "parent": "r", "children": [], "message": {"id": "m", "author": {"role": "user"},
                                                                      "content": {"content_type": "text", "parts": ["hi"]}}}}}]))
        convlab.read(small, progress=False)
        with open(small, encoding="utf-8") as f:
            json.load(f)
    gc.collect()
    method = reset_peak()
    before = status("VmRSS")
    t0 = time.perf_counter()
    if mode == "read":
        result = convlab.read(path, progress=False)
        conversations, messages = len(result), sum(len(c) for c in result)
    else:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        conversations = len(result)
        messages = sum(1 for c in result for e in c["mapping"].values() if e.get("message"))
    seconds = time.perf_counter() - t0
    after = peak(method)
    print(json.dumps({"mode": mode, "peak": after - before, "rss_before": before, "hwm_after": after, "method": method,
                      "seconds": seconds, "conversations": conversations, "messages": messages}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
