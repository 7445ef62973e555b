"""A Lab that keeps up: driving a session with ``convlab.Lab(session)`` on screen, against driving it bare.

Measured where users feel it, in a real IPython kernel (``jupyter_client``),
as notebook cells: a cell makes a fresh ``Session`` (EchoLLM, autorun) and,
on the Lab side, displays ``convlab.Lab(session)``; the next cell submits N
messages, one turn each. Its cost is the kernel's CPU time (user + system,
every thread: the iopub thread sends the comm messages) from the cell's first
statement to the end of its post-run hooks, so it holds the Lab's draws
during the cell (the kernel's event loop does not run while a cell does) and
the last one, which the Lab's own post-run hook makes when the cell ends. The
kernel's handling of the cell around that (about 8 ms here: the request, the
history, the reply) is the same for any N and either side, and is left out:
counted, it made a Lab whose cost is exactly linear read 1.013 on the growth
row with the collector off (the note still gives the whole cell's figure).
CPU time, not wall time, because this machine is shared and other jobs' load
would swamp a few percent (the wall times are in the note). The client reads
iopub all along, as a browser would, counting the comm messages (by topic,
without decoding them, so it takes little CPU from the kernel). After each
cell the Lab must show the session's final state (head, path, nothing left
to draw).

As the CPU rows do (``bench/scaling.py``, ``own_heap``), what the kernel held
before a sample is frozen out of the cyclic collector while it runs: a full
collection of the kernel's whole heap (IPython, every module: about 300,000
objects, 0.1 to 0.16 s here) otherwise landed in some samples and not
others, by where the collector's counters stood, and a side that allocates
more met it more often. Then one more collection, of nothing, so that the
collector's thresholds start from the sample's own heap too: a full
collection waits until what survived since the last one is a quarter of
what survived it, and frozen, the kernel's 300,000 objects still set that
quarter (about 62,000). A 3,000-turn cell ends near it (58,000 to 64,000
objects), and the side that allocates more, the Lab's, reached it first: a
full collection (10 ms) in most of its 3,000-turn samples and few of the
bare ones, which read as growth in the Lab.

Two rows: the ratio at 1,000 turns (goal <= 2), and how that ratio grows to
3,000 turns (goal <= 1.05: no quadratic term in the Lab; the note shows how
driving alone scales, which the ``drive`` row holds to linear). A Lab whose
cost is linear in the turns reads 1 on the growth row, give or take this
machine: 0.991 to 1.020 over five runs here (its own CPU a turn, with less
without, 34 to 37 µs at 1,000 turns and 37 to 40 µs at 3,000, grows with
the session's heap as driving's does: 86 to 88 µs a turn bare at 1,000, 88 to
90 at 3,000). So the goal of 1 that issue 14 set, when the chat's first draw
was a 50 ms cost a cell for 3,000 turns to amortise, tossed a coin on every
run. A quadratic term reads above 1.05: a tree view that lays the whole tree
out again at every paced draw (two draws of a 6,000-message tree against one
of 2,000) read 1.07, 1.11 and 1.22.
"""

from __future__ import annotations

import ast
import json
import threading
import time
from typing import Any

from .harness import Row

KERNEL_CODE = '''
import gc, time, convlab
from IPython.display import display

def new(with_lab):
    global s, lab
    gc.collect()
    gc.freeze()  # what the kernel held before (IPython, every module, ~300k objects) out of the collector
    gc.collect()  # ... and out of its thresholds: the next full collection counts from what the sample makes
    s = convlab.Session()
    lab = convlab.Lab(s) if with_lab else None
    if lab is not None:
        display(lab)

_at = [0.0] * 4  # CPU and wall seconds at the cell's first statement, then at the end of its post-run hooks

def drive(n):
    _at[0], _at[1] = time.process_time(), time.perf_counter()
    for i in range(n):
        s.submit({"type": "client.message", "agent_id": "bot",
                  "message": {"role": "user", "content": f"message {i}: how is it going?"}})

def _end(*_args):
    _at[2], _at[3] = time.process_time(), time.perf_counter()

def hook_end():
    """Time the cell up to the end of its post-run hooks, the Lab's last draw (its own hook) included."""
    events = get_ipython().events
    if _end in events.callbacks["post_run_cell"]:
        events.unregister("post_run_cell", _end)
    events.register("post_run_cell", _end)  # after the Lab's (registered when the first Lab was made)
    names = [getattr(f, "__name__", "") for f in events.callbacks["post_run_cell"]]
    assert "_after_cell" in names and names.index("_after_cell") < names.index("_end"), names

def cell():
    return {"cpu": _at[2] - _at[0], "wall": _at[3] - _at[1]}

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
    """One cell of ``turns`` submits on a fresh session, with or without a Lab: the kernel's CPU seconds from
    the cell's first statement to the end of its post-run hooks (the Lab's last draw)."""
    kernel.run(f"new({with_lab})")
    before = kernel.comm_messages
    whole = kernel.value(CPU)
    kernel.run(f"drive({turns})")
    whole = kernel.value(CPU) - whole
    cell = kernel.value("cell()")
    time.sleep(0.3)  # let the reader take the cell's last messages
    out = kernel.value("done()")
    if out["turns"] != turns or not out["ok"]:
        raise RuntimeError(f"the Lab did not show the final state after {turns} turns: {out}")
    side = "with" if with_lab else "without"
    seen.setdefault(f"wall_{side}", []).append(cell["wall"])
    seen.setdefault(f"whole_{side}", []).append(whole)
    if with_lab:
        seen.setdefault("draws", []).append(out["draws"])
        seen.setdefault("comm", []).append(kernel.comm_messages - before)
    return cell["cpu"]


_measured: dict[bool, dict[str, Any]] = {}
#: rounds of the four cells (each size with and without the Lab)
REPEATS = 16
#: lab-growth's goal: 1 is what a linear Lab reads, within this machine's noise (the module's docstring)
GROWTH_GOAL = 1.05


def measure(smoke: bool) -> dict[str, Any]:
    """Both sizes, both sides, in one kernel (once per run: both rows read it). Each round runs the four
    cells (each size with and without the Lab) one after the other, the order turned each round, so the
    two ratios are measured over the same stretch of the machine's time."""
    if smoke in _measured:
        return _measured[smoke]
    small, big = (100, 300) if smoke else (1_000, 3_000)
    rounds = 2 if smoke else REPEATS
    kernel = Kernel()
    try:
        kernel.run("new(True)\ndrive(20)")  # warm up: imports, tiktoken, the widgets (and the Lab's post-run hook)
        kernel.value("done()")
        kernel.run("hook_end()")
        seen: dict[int, dict[str, list]] = {small: {}, big: {}}
        samples: dict[tuple[int, bool], list[float]] = {}
        cells = [(small, True), (small, False), (big, True), (big, False)]
        for i in range(rounds):
            for turns, with_lab in cells[i % 4:] + cells[:i % 4]:
                samples.setdefault((turns, with_lab), []).append(_sample(kernel, turns, with_lab, seen[turns]))
        out: dict[str, Any] = {"sizes": [small, big]}
        for turns in (small, big):
            a, b = samples[(turns, True)], samples[(turns, False)]
            s = seen[turns]
            out[turns] = {"with": min(a), "without": min(b), "ratio": min(a) / min(b), "samples_with": a,
                          "samples_without": b, "draws": s["draws"], "comm_messages": s["comm"],
                          "wall_with": s["wall_with"], "wall_without": s["wall_without"],
                          "whole_with": s["whole_with"], "whole_without": s["whole_without"]}
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
    whole = [min(m[n]["whole_with"]) / min(m[n]["whole_without"]) for n in (small, big)]
    return ("in a kernel, a cell of N submits (EchoLLM), the kernel's CPU seconds from its first statement to "
            "the end of its post-run hooks (the Lab's last draw included), best of each side over rounds of the "
            "four cells; " + "; ".join(bits) + f"; driving alone grows "
            f"{m[big]['without'] / m[small]['without']:.2f}x for {big / small:.0f}x the turns; the whole cell to "
            f"the kernel's reply: {whole[0]:.2f} and {whole[1]:.2f}")


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
    row = Row("lab-growth", f"the Lab's ratio at {big:,} turns / at {small:,}", GROWTH_GOAL, "<=", unit="x",
              num_label=f"({big:,})", den_label=f"({small:,})")
    row.finish(m[big]["ratio"], m[small]["ratio"])
    per_turn = [(m[n]["with"] - m[n]["without"]) / n * 1e6 for n in (small, big)]
    row.note = (f"no quadratic term: the Lab's own CPU a turn (with - without) {per_turn[0]:.0f} µs at {small:,} turns, "
                f"{per_turn[1]:.0f} µs at {big:,}; a linear Lab reads about 1, a quadratic term above the goal (bench/lab.py)")
    return row
