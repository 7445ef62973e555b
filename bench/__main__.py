"""``python -m bench``: build the inputs, run every measurement, print one table.

    python -m bench            # full sizes (about ten minutes on 2 cores)
    python -m bench --smoke    # small sizes, seconds: keeps the suite working (CI)
    python -m bench --only count,peer

The table is also written as JSON (``bench/results.json``, or
``bench/results-smoke.json`` with ``--smoke``). Goals are reported, never
enforced: the exit status is 0 unless the suite itself breaks.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path

from . import agui, chatgpt_export, count, explore, lab, logs, match, reallogs, scaling, sweep, throughput, treeview
from .harness import Row, log, machine, table

#: (key, runner) in the order of the table
ROWS = [
    ("match", match.run),
    ("count", count.run_count),
    ("load", logs.run_load),
    ("tokens", throughput.run),
    ("sweep", sweep.run),
    ("lazy", logs.run_lazy),
    ("peer", count.run_peer),
    ("treeview", treeview.run),
    ("export", chatgpt_export.run_read),
    ("export_memory", chatgpt_export.run_memory),
    ("agui", agui.run),
    ("lab", lab.run_lab),
    ("lab-growth", lab.run_growth),
    ("drive", scaling.run_drive),
    ("replay", scaling.run_replay),
    ("replay_memory", scaling.run_replay_memory),
    ("tune-scale", scaling.run_tune),
    ("tune-usd", sweep.run_usd),
    ("retention", sweep.run_retention),
    ("find", explore.run),
    ("real-read", reallogs.run_read),  # one row per format: read-<format>
    ("real-sweep", reallogs.run_sweep),
    ("stream-memory", reallogs.run_stream_memory),
    ("cluster", reallogs.run_cluster),
]

GOALS = {"match": (1.5, "<="), "count": (1.0, "<="), "load": (3, "<="), "tokens": (0.9, ">="), "sweep": (3, "<="),
         "lazy": (0.1, "<="), "peer": (100, ">="), "treeview": (12, "<="), "export": (2.5, "<="), "export_memory": (3, "<="),
         "agui": (1.0, ">="), "lab": (2, "<="), "lab-growth": (lab.GROWTH_GOAL, "<="),
         "drive": (1.3, "<="), "replay": (1.3, "<="), "replay_memory": (8, "<="), "tune-scale": (4, "<="), "tune-usd": (1.3, "<="),
         "retention": (1.5, "<="), "find": (3, "<="),
         "real-read": (reallogs.READ_GOAL, "<="), "real-sweep": (3, "<="), "drive-long": (1.3, "<="),
         "stream-memory": (1, "<="), "cluster": (1, "<=")}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="small sizes, no goals that matter: check that the suite runs")
    ap.add_argument("--only", default="", help="comma-separated row keys: " + ", ".join(k for k, _ in ROWS))
    ap.add_argument("--out", default=None, help="where to write the JSON (default bench/results.json)")
    args = ap.parse_args(argv)
    only = {k.strip() for k in args.only.split(",") if k.strip()}
    unknown = only - {k for k, _ in ROWS}
    if unknown:
        ap.error(f"unknown rows: {', '.join(sorted(unknown))}")
    started = time.time()
    info = machine()
    log(f"convlab bench ({'smoke' if args.smoke else 'full'}) on {info['nproc']} x {info['cpu']}, "
        f"{info['memory_gb']} GB, Python {info['python']}")
    rows: list[Row] = []
    for key, runner in ROWS:
        if only and key not in only:
            continue
        log(f"- {key} ...")
        t0 = time.time()
        try:
            made = runner(args.smoke)
        except Exception as err:  # a broken row is reported, the others still run
            goal, op = GOALS[key]
            made = Row(key, key, goal, op, error=f"failed: {type(err).__name__}: {err}")
            traceback.print_exc()
        made = made if isinstance(made, list) else [made]  # a runner may give several rows (drive, real-read)
        for row in made:
            row.extra["wall_s"] = round((time.time() - t0) / len(made), 2)
            log(f"  {row.key}: {row.status} ratio={row.ratio} ({row.extra['wall_s']} s)")
        rows += made
    out = Path(args.out) if args.out else Path(__file__).parent / ("results-smoke.json" if args.smoke else "results.json")
    result = {
        "mode": "smoke" if args.smoke else "full",
        "machine": info,
        "seconds": round(time.time() - started, 1),
        "rows": [r.to_dict() for r in rows],
    }
    out.write_text(json.dumps(result, indent=2, default=_jsonable) + "\n", encoding="utf-8")
    print(table(rows))
    print(f"\n{info['nproc']} x {info['cpu']}, {info['memory_gb']} GB RAM, Python {info['python']}; "
          f"{result['seconds']} s in all; JSON: {out}")
    return result


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)


if __name__ == "__main__":
    main()
    sys.exit(0)
