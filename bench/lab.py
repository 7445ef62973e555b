"""A Lab that keeps up: driving a session with ``convlab.Lab(session)`` on screen, against driving it bare.

Measured where users feel it, in a real IPython kernel (``jupyter_client``),
as notebook cells: a cell makes a fresh ``Session`` (EchoLLM, autorun) and,
on the Lab side, displays ``convlab.Lab(session)``; the next cell submits N
messages, one turn each. Its cost is the kernel's CPU time (user + system,
every thread) from the cell's first statement to the end of its post-run
hooks, so it holds the Lab's draws during the cell (the kernel's event loop
does not run while a cell does) and the last one, which the Lab's own
post-run hook makes when the cell ends (the iopub thread may send that
draw's few messages just after). The kernel's handling of the cell around
that (5 to 8 ms here: the request, the history, the reply) is the same for
any N and either side, and is left out (the note gives the whole cell's
seconds too). CPU time, not wall time, because this machine is shared and
other jobs' load would swamp a few percent (the wall times are in the note).
The client reads iopub all along, as a browser would, counting the comm
messages (by topic, without decoding them, so it takes little CPU from the
kernel). At the end of each cell the Lab must have drawn everything, and
after it show the session's final state (head, path).

What the kernel held before a sample (IPython, every module: about 250,000
tracked objects) is frozen out of the cyclic collector while it runs, as the
CPU rows do (``bench/scaling.py``, ``own_heap``), and then, unlike them, the
collector's thresholds start again from the sample's own heap (one more
collection, of nothing). The note counts the full collections in each cell.

Two rows: the ratio at 1,000 turns (goal <= 2), and how that ratio grows to
3,000 turns (goal <= 1.05: no quadratic term in the Lab). Why each of these
choices, and what the goal catches: ``bench/README.md``, "Reading the misses".
"""

from __future__ import annotations

import ast
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from .harness import Row

#: the project's root: the kernel's working folder, where ``bench`` imports from
ROOT = Path(__file__).resolve().parent.parent

KERNEL_CODE = '''
import gc, time, convlab
from IPython.display import display
from convlab.widgets.live import _after_cell  # the Lab's post-run hook (its last draw)
from bench.harness import FullCollections

def new(with_lab):
    global s, lab
    gc.collect()
    gc.freeze()  # what the kernel held before (IPython, every module, ~250k tracked objects) out of the collector
    gc.collect()  # ... and out of its thresholds: the next full collection counts from what the sample makes
    s = convlab.Session()
    lab = convlab.Lab(s) if with_lab else None
    if lab is not None:
        display(lab)

_at = {}  # what the timed cell measured: CPU and wall seconds, full collections, whether the Lab had drawn it all
_full = FullCollections()  # (bench/harness.py) the full collections while a cell drives

def drive(n):
    _full.reset()
    _at.clear()
    _at.update(cpu=time.process_time(), wall=time.perf_counter())
    for i in range(n):
        s.submit({"type": "client.message", "agent_id": "bot",
                  "message": {"role": "user", "content": f"message {i}: how is it going?"}})

def _end(*_args):
    if "drawn" in _at or "cpu" not in _at:  # not a cell that drives
        return
    _at.update(cpu=time.process_time() - _at["cpu"], wall=time.perf_counter() - _at["wall"], full=[_full.count, _full.seconds],
               drawn=lab is None or not any(p.redraw.dirty for p in lab._parts()))

def hook_end():
    """Time the cell up to the end of its post-run hooks, the Lab's last draw (its own hook) included."""
    events = get_ipython().events
    events.register("post_run_cell", _end)  # after the Lab's (registered when the first Lab was made)
    hooks = events.callbacks["post_run_cell"]
    assert _after_cell in hooks and hooks.index(_after_cell) < hooks.index(_end), hooks
    gc.callbacks.append(_full)

def cell():
    return _at

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

# A regression to calibrate lab-growth against (CONVLAB_BENCH_LAB_REGRESSION=1): the tree view lays the whole
# tree out again at every draw, an O(tree) draw paced a few times a second (bench/README, Reading the misses).
REGRESSION = '''
from convlab.widgets.treeview import TreeView
TreeView._appended = lambda self, head, added: None
'''


class Kernel:
    """A kernel, its client, and a thread that reads iopub (counting comm messages) as a frontend would."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))  # (imports bench.harness)
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

    def run(self, code: str) -> None:
        """Run a cell, as a notebook does (post-run hooks and all), and wait for its reply."""
        msg_id = self.kc.execute(code)
        while True:
            reply = self.kc.get_shell_msg(timeout=3600)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"kernel: {reply['content'].get('ename')}: {reply['content'].get('evalue')}")

    def settle(self, quiet: float = 0.1) -> int:
        """Wait until the reader has read every message sent so far (none for ``quiet`` seconds); the count."""
        while True:
            count = self.comm_messages
            time.sleep(quiet)
            if self.comm_messages == count:
                return count

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
    before = kernel.settle()  # (the Lab's opening messages are not the cell's)
    whole = kernel.value(CPU)
    kernel.run(f"drive({turns})")
    whole = kernel.value(CPU) - whole
    cell = kernel.value("cell()")
    sent = kernel.settle() - before
    out = kernel.value("done()")
    if out["turns"] != turns or not out["ok"] or not cell["drawn"]:
        raise RuntimeError(f"the Lab did not show the final state after {turns} turns: {out}, {cell}")
    side = "with" if with_lab else "without"
    seen.setdefault(f"wall_{side}", []).append(cell["wall"])
    seen.setdefault(f"whole_{side}", []).append(whole)
    seen.setdefault(f"full_{side}", []).append(cell["full"])
    if with_lab:
        seen.setdefault("draws", []).append(out["draws"])
        seen.setdefault("comm", []).append(sent)
    return cell["cpu"]


_measured: dict[bool, dict[str, Any]] = {}
#: rounds of the four cells (each size with and without the Lab); each cell's figure is its best round
ROUNDS = 16
#: lab-growth's goal: a linear Lab reads about 1 (bench/README.md, "Reading the misses", says what 1.05 catches)
GROWTH_GOAL = 1.05


def measure(smoke: bool) -> dict[str, Any]:
    """Both sizes, both sides, in one kernel (once per run: both rows read it). Each round runs the four
    cells (each size with and without the Lab) one after the other, the order turned each round, so the
    two ratios are measured over the same stretch of the machine's time. With
    ``CONVLAB_BENCH_LAB_REGRESSION=1`` the Lab has the quadratic term ``REGRESSION`` (to calibrate the goal)."""
    if smoke in _measured:
        return _measured[smoke]
    small, big = (100, 300) if smoke else (1_000, 3_000)
    rounds = 2 if smoke else ROUNDS
    kernel = Kernel()
    try:
        if os.environ.get("CONVLAB_BENCH_LAB_REGRESSION") == "1":
            kernel.run(REGRESSION)
        kernel.run("new(True)\ndrive(20)")  # warm up: imports, tiktoken, the widgets (and the Lab's post-run hook)
        kernel.value("done()")
        kernel.run("hook_end()")
        seen: dict[int, dict[str, list]] = {small: {}, big: {}}
        samples: dict[tuple[int, bool], list[float]] = {}
        cells = [(small, True), (small, False), (big, True), (big, False)]
        for i in range(rounds):
            for turns, with_lab in cells[i % 4:] + cells[:i % 4]:
                samples.setdefault((turns, with_lab), []).append(_sample(kernel, turns, with_lab, seen[turns]))
        out: dict[str, Any] = {"sizes": [small, big], "rounds": rounds}
        for turns in (small, big):
            a, b = samples[(turns, True)], samples[(turns, False)]
            out[turns] = {"with": min(a), "without": min(b), "ratio": min(a) / min(b), "samples_with": a,
                          "samples_without": b, "comm_messages": seen[turns].pop("comm"), **seen[turns]}
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
        full = {side: sorted({f[0] for f in r[f"full_{side}"]}) for side in ("with", "without")}
        bits.append(f"{n:,} turns: {r['with']:.3f} s with / {r['without']:.3f} s without = {r['ratio']:.2f} "
                    f"(wall {min(r['wall_with']):.3f} / {min(r['wall_without']):.3f} s; the whole cell to the "
                    f"kernel's reply {min(r['whole_with']):.3f} / {min(r['whole_without']):.3f} s; at most {draws} "
                    f"draws a part; {min(r['comm_messages'])} comm messages a cell; full collections in a cell "
                    f"{'/'.join(map(str, full['with']))} with, {'/'.join(map(str, full['without']))} without)")
    return (f"in a kernel, a cell of N submits (EchoLLM), the kernel's CPU seconds from its first statement to "
            f"the end of its post-run hooks (the Lab's last draw included), best of {m['rounds']} rounds of the "
            f"four cells; " + "; ".join(bits) + f"; driving alone grows "
            f"{m[big]['without'] / m[small]['without']:.2f}x for {big / small:.0f}x the turns")


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
                f"{per_turn[1]:.0f} µs at {big:,}; a linear Lab reads about 1 (bench/README.md: what the goal catches)")
    return row
