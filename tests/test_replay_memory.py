"""Issue 40 (3): a replay's memory is a small multiple of its log. 100,000 regenerations of one reply (a 61 MB
file) peaked at 1.7 GB; the bench's ``replay_memory`` row measures that log (goal: the replay's peak at most 8x
the file). This holds a smaller log of the same kind to the same bound, measured the bench's way
(``bench/replayprobe.py``: a fresh interpreter, the kernel's high-water mark reset just before the replay, the
read conversation kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.logs import probe  # bench/ beside the package (python -m pytest runs from the project's root)
from bench.scaling import SIBLINGS, siblings_log

from convlab.replaying.driver import EVENTS_KEPT

#: The issue's bound, as the bench's row has it: the replay's peak memory over the file's size.
BOUND = 8
#: Regenerations in the log here: 4,000 (2.4 MB), a few seconds.
N = 4_000


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the peak is read from /proc/self/status (Linux)")
def test_a_replay_of_many_regenerations_peaks_at_a_small_multiple_of_its_file(tmp_path):
    """The replay's session keeps its newest ``EVENTS_KEPT`` to twice that many events in memory (the older on a
    scratch file): a constant the bench's 100,000 regenerations (a million events) spread over. Here that window is
    scaled with the log (``EVENTS_KEPT`` x 4,000 / 100,000: 655 events), so this log holds the bench's in
    miniature: the same events a regeneration, the same share of them in memory, and everything else the replay
    keeps (its tree, a turn and a call record a regeneration, the plan) as it grows with the log. The log is the
    same bytes every run; what is asserted is memory, never time."""
    path = siblings_log(N, tmp_path)
    size = path.stat().st_size
    kept = EVENTS_KEPT * N // SIBLINGS[0]
    got = probe(path, "replay", 300, module="bench.replayprobe", args=[str(kept)])
    assert "error" not in got, got
    assert (got["calls"], got["stale"], got["events_kept"]) == (N, 0, kept)
    assert got["events"] > 10 * 2 * kept  # the session made far more events than it keeps: most went to disk
    assert 0 < got["peak"] <= BOUND * size, (f"replay peaked at {got['peak'] / size:.2f}x the {size:,}-byte file "
                                             f"({got['peak']:,} bytes, {got['method']})")
