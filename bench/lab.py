"""A Lab that keeps up: driving a session with ``convlab.Lab(session)`` on screen, against driving it bare.

Measured where users feel it, in a real IPython kernel (``jupyter_client``),
as notebook cells: a cell makes a fresh ``Session`` (EchoLLM, autorun) and,
on the Lab side, displays ``convlab.Lab(session)``; the next cell submits N
messages, one turn each. Its cost is the kernel's CPU time (user + system,
every thread: the iopub thread sends the comm messages) from before the
cell to after its reply, so it holds the Lab's draws during the cell (the
kernel's event loop does not run while a cell does) and the last one when
the cell ends; CPU time, not wall time, because this machine is shared and
other jobs' load would swamp a few percent (the wall times are in the
note). The client reads iopub all along, as a browser would, counting the
comm messages (by topic, without decoding them, so it takes little CPU from
the kernel). After each cell the Lab must show the session's final state
(head, path, nothing left to draw).

As the CPU rows do (``bench/scaling.py``, ``own_heap``), what the kernel held
before a sample is frozen out of the cyclic collector while it runs: a full
collection of the kernel's whole heap (IPython, every module: about 300,000
objects, 0.1 to 0.16 s here) otherwise landed in some samples and not
others, by where the collector's counters stood, and a side that allocates
more met it more often.

Two rows: the ratio at 1,000 turns (goal <= 2), and how that ratio grows to
3,000 turns (goal <= 1: no quadratic term in the Lab; the note shows how
driving alone scales, which the ``drive`` row holds to linear).
"""

from __future__ import annotations

import ast
import json
import threading
import time
from typing import Any

from .harness import Row, paired

KERNEL_CODE = '''
import gc, convlab
from IPython.display import display

def new(with_lab):
    global s, lab
    gc.collect()
    gc.freeze()  # what the kernel held before (IPython, every module, ~300k objects) out of the collector
    s = convlab.Session()
    lab = convlab.Lab(s) if with_lab else None
    if lab is not None:
        display(lab)

def drive(n):
    for i in range(n):
        s.submit({"type": "client.message", "agent_id": "bot",
                  "message": {"role": "user", "content": f"message {i}: how is it going?"}})

def done():
    global s, lab
    out = {"turns": len(s.turns), "ok": True, "draws": None}
    if lab is not None:
        out["ok"] = (lab.tree.data["head"] == s.head and lab.chat._path_ids[-1] == s.head
                     and lab.tree.data["total"] == len(s.tree) and not any(p.redraw.dirty for p in lab._parts()))
        out["draws"] = [p.redraw.count for p in lab._parts()]
        lab.close()
    s = lab = None
    gc.unfreeze()
    return out
'''


class Kernel:
    """A kernel, its client, and a thread that reads iopub (counting comm messages) as a frontend would."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="python3")
        self.comm_messages = 0
        self._stop = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.run(KERNEL_CODE)

    def _read(self) -> None:
        socket = self.kc.iopub_channel.socket
        while not self._stop:
            try:
                if not socket.poll(200):
                    continue
                frames = socket.recv_multipart()
            except Exception:  # the channel closing
                return
            if frames and frames[0].startswith(b"comm-"):
                self.comm_messages += 1

    def run(self, code: str) -> float:
        """Run a cell; seconds from the request to the reply."""
        started = time.perf_counter()
        msg_id = self.kc.execute(code)
        while True:
            reply = self.kc.get_shell_msg(timeout=3600)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        seconds = time.perf_counter() - started
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"kernel: {reply['content'].get('ename')}: {reply['content'].get('evalue')}")
        return seconds

    def value(self, expression: str) -> Any:
        msg_id = self.kc.execute("", silent=True, store_history=False,
                                 user_expressions={"v": f"__import__('json').dumps({expression})"})
        while True:
            reply = self.kc.get_shell_msg(timeout=600)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        res = reply["content"]["user_expressions"]["v"]
        if res.get("status") != "ok":
            raise RuntimeError(f"kernel: {expression}: {res.get('ename')}: {res.get('evalue')}")
        return json.loads(ast.literal_eval(res["data"]["text/plain"]))

    def close(self) -> None:
        self._stop = True
        self._reader.join(timeout=2)
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


# the kernel process's user + system seconds, all threads, to the nanosecond (os.times counts 10 ms ticks:
# a 1,000-turn cell is 80 to 150 ms, so a tick was a tenth of the ratio)
CPU = "__import__('time').process_time()"


def _sample(kernel: Kernel, turns: int, with_lab: bool, seen: dict[str, list]) -> float:
    kernel.run(f"new({with_lab})")
    before = kernel.comm_messages
    cpu = kernel.value(CPU)
    wall = kernel.run(f"drive({turns})")
    cpu = kernel.value(CPU) - cpu
    time.sleep(0.3)  # let the reader take the cell's last messages
    out = kernel.value("done()")
    if out["turns"] != turns or not out["ok"]:
        raise RuntimeError(f"the Lab did not show the final state after {turns} turns: {out}")
    side = "with" if with_lab else "without"
    seen.setdefault(f"wall_{side}", []).append(wall)
    if with_lab:
        seen.setdefault("draws", []).append(out["draws"])
        seen.setdefault("comm", []).append(kernel.comm_messages - before)
    return cpu


_measured: dict[bool, dict[str, Any]] = {}


def measure(smoke: bool) -> dict[str, Any]:
    """Both sizes, both sides, alternately, in one kernel (once per run: both rows read it)."""
    if smoke in _measured:
        return _measured[smoke]
    small, big = (100, 300) if smoke else (1_000, 3_000)
    kernel = Kernel()
    try:
        kernel.run("new(True)\ndrive(20)")  # warm up: imports, tiktoken, the widgets
        kernel.value("done()")
        out: dict[str, Any] = {"sizes": [small, big]}
        for turns, repeats in ((small, 2 if smoke else 8), (big, 2 if smoke else 8)):
            seen: dict[str, list] = {}
            with_, without, a, b = paired(lambda: _sample(kernel, turns, True, seen),
                                          lambda: _sample(kernel, turns, False, seen), repeats)
            out[turns] = {"with": with_, "without": without, "ratio": with_ / without, "samples_with": a,
                          "samples_without": b, "draws": seen["draws"], "comm_messages": seen["comm"],
                          "wall_with": seen["wall_with"], "wall_without": seen["wall_without"]}
    finally:
        kernel.close()
    _measured[smoke] = out
    return out


def _note(m: dict[str, Any]) -> str:
    small, big = m["sizes"]
    bits = []
    for n in (small, big):
        r = m[n]
        draws = max(max(d) for d in r["draws"])
        comm = min(r["comm_messages"])
        wall = min(r["wall_with"]) / min(r["wall_without"])
        bits.append(f"{n:,} turns: {r['with']:.2f} s with / {r['without']:.2f} s without = {r['ratio']:.2f} "
                    f"(wall {min(r['wall_with']):.2f} / {min(r['wall_without']):.2f} s = {wall:.2f}; at most "
                    f"{draws} draws a part, {comm / n:.1f} comm messages a turn)")
    return ("in a kernel, a cell of N submits (EchoLLM), the kernel's CPU seconds to its reply (the last draw "
            "included), best of each side; " + "; ".join(bits) + f"; driving alone grows "
            f"{m[big]['without'] / m[small]['without']:.1f}x for {big / small:.0f}x the turns")


def run_lab(smoke: bool) -> Row:
    m = measure(smoke)
    small, _big = m["sizes"]
    row = Row("lab", f"driving {small:,} turns with a Lab attached / without", 2, "<=",
              num_label="(Lab)", den_label="(bare)")
    row.finish(m[small]["with"], m[small]["without"])
    row.note = _note(m)
    row.extra = {"measured": {str(k): v for k, v in m.items()}}
    return row


def run_growth(smoke: bool) -> Row:
    m = measure(smoke)
    small, big = m["sizes"]
    row = Row("lab-growth", f"the Lab's ratio at {big:,} turns / at {small:,}", 1, "<=", unit="x",
              num_label=f"({big:,})", den_label=f"({small:,})")
    row.finish(m[big]["ratio"], m[small]["ratio"])
    row.note = "no quadratic term: the Lab's cost per turn does not grow with the tree"
    return row
