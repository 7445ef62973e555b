"""Issue 39: ``convlab.tune(path)`` sweeps a folder of logs a file at a time, each read where it is swept
(``convlab.tuning.files``): the calling process never holds a conversation. The frame is the one of
``tune(convlab.read(path))``, row for row, on real logs of every format; a file the read passes over is passed
over with the same warning; the result cache works the same (and is shared with the in-memory sweep); a sweep
stopped halfway goes on from there and ends equal to one that never stopped."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest
from agentdata import require as require_agents
from hypothesis import example, given
from hypothesis import strategies as st
from realdata import require

import convlab
from convlab.errors import ReadError, ReadWarning
from convlab.tuning import files, results
from convlab.tuning.columns import MISSING, Rows

BASE = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
"""
GRID = {"window": [32_000, 200_000], "strategy[1].over_tokens": [None, 20_000]}


def tune(source, **kw):
    kw.setdefault("result_cache", False)
    return convlab.tune(source, BASE, grid=GRID, progress=False, **kw)


def read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convlab.read(path, progress=False)


@pytest.fixture
def mixed(tmp_path):
    """A folder of real logs of several formats (copied here, never into the project), a file that is no log,
    and a log that cannot be read."""
    real, agents = require(), require_agents()
    folder = tmp_path / "logs"
    for src in [real / "claude_code" / "tool_heavy.jsonl", real / "claude_code" / "short.jsonl", real / "oasst" / "oasst1-en-trees-001-060.jsonl",
                real / "librechat" / "librechat-tree.json", agents / "codex" / "codex.jsonl", agents / "gemini_cli" / "gemini.jsonl"]:
        dest = folder / src.parent.name / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)
    (folder / "notes.txt").write_text("not a log at all\n")
    (folder / "broken.json").write_text('{"mapping": {"a": ')
    return folder


@pytest.mark.realdata
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_folder_swept_file_by_file_gives_the_frame_of_the_read_conversations(mixed, jobs):
    with pytest.warns(ReadWarning) as read_said:
        convs = convlab.read(mixed, progress=False)
    eager = tune(convs, jobs=jobs)
    with pytest.warns(ReadWarning) as swept_said:
        streamed = tune(mixed, jobs=jobs)
    pd.testing.assert_frame_equal(streamed, eager)
    assert len(streamed) == 4 * len(convs) and streamed["source"].nunique() == 6
    passed = {w.message.passed_over for w in read_said if w.message.passed_over}
    assert passed == {w.message.passed_over for w in swept_said if w.message.passed_over} == {str(mixed / "broken.json")}
    # a list of paths (str or Path): the same sweep as the conversations read from each, in order
    dirs = sorted(p for p in mixed.iterdir() if p.is_dir())
    pd.testing.assert_frame_equal(tune([str(d) for d in dirs], jobs=jobs), tune([c for d in dirs for c in read(d)], jobs=jobs))


@pytest.mark.realdata
def test_the_real_claude_code_folder_swept_from_its_path():
    real = require()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed = tune(str(real / "claude_code"), jobs=2)
    pd.testing.assert_frame_equal(streamed, tune(read(real / "claude_code"), jobs=2))
    assert (streamed["calls"] > 0).all() and streamed["conversation"].nunique() == 6


@pytest.mark.realdata
def test_kept_rows_are_shared_with_the_read_sweep_and_a_changed_file_is_swept_again(mixed, tmp_path):
    cache = tmp_path / "cache"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = tune(mixed, result_cache=cache)
        assert first.attrs["kept"] == 0 and first.attrs["result_cache"] == str(cache)
        again = tune(mixed, result_cache=cache)
        assert again.attrs["kept"] == len(first)
        pd.testing.assert_frame_equal(again, first)
        eager = tune(read(mixed), result_cache=cache)  # the same keys: the read sweep finds them too
        assert eager.attrs["kept"] == len(first)
        # one file changed: its conversation is swept again, the others are kept
        log = mixed / "claude_code" / "short.jsonl"
        lines = log.read_text().splitlines()
        last = max(i for i, line in enumerate(lines) if json.loads(line).get("type") == "assistant")
        log.write_text("\n".join(lines[:last] + lines[last + 1:]) + "\n")  # its last reply gone
        changed = tune(mixed, result_cache=cache)
    assert changed.attrs["kept"] == len(first) - 4
    pd.testing.assert_frame_equal(changed, tune(read(mixed)))


def stopping_at(n):
    """``files.rows`` as it is, but its ``n``-th call is a Ctrl-C."""
    real_rows, calls = files.rows, []

    def rows(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real_rows(*args, **kwargs)

    return rows


@pytest.mark.realdata
def test_a_streamed_sweep_stopped_halfway_goes_on_and_ends_equal_to_one_that_never_stopped(mixed, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    real_rows = files.rows
    monkeypatch.setattr(files, "rows", stopping_at(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(results.Stopped, match=r"tune stopped after 0 of the 8 files; the rows of every conversation swept so far are kept in .*run it again"):
            tune(mixed, result_cache=cache, jobs=1)
        monkeypatch.setattr(files, "rows", real_rows)
        resumed = tune(mixed, result_cache=cache, jobs=1)
        whole = tune(mixed, jobs=1)
    assert resumed.attrs["kept"] > 0
    pd.testing.assert_frame_equal(resumed, whole)


@pytest.mark.realdata
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_cache_that_cannot_be_written_loses_nothing_and_is_said_once(mixed, tmp_path, jobs):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        swept = tune(mixed, result_cache=blocked / "results", jobs=jobs)
        with pytest.raises(results.Stopped, match=r"none of them could be kept in .*a-file/results \(Not a directory\)"):
            with pytest.MonkeyPatch.context() as m:
                m.setattr(files, "rows", stopping_at(3))
                tune(mixed, result_cache=blocked / "results", jobs=1)
        with pytest.raises(results.Stopped, match=r"none of them could be kept in .* \(none finished\)"):
            with pytest.MonkeyPatch.context() as m:
                m.setattr(files, "rows", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
                tune(mixed, result_cache=tmp_path / "fine", jobs=1)
    cache_warnings = [w for w in said if issubclass(w.category, convlab.CacheWarning)]
    assert len(cache_warnings) == 1 and "cannot be written" in str(cache_warnings[0].message)
    assert swept.attrs["kept"] == 0
    pd.testing.assert_frame_equal(swept, tune(read(mixed)))


def test_what_a_sweep_of_paths_cannot_take_is_named(tmp_path):
    log = tmp_path / "chat.json"
    log.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    for kw, says in [({"summarizer": convlab.EchoLLM()}, "summarizer or a judge"), ({"scheduler": "dask"}, "dask"),
                     ({"chunk": 2}, "chunk=")]:
        with pytest.raises(ValueError, match=says):
            tune(log, **kw)
    with pytest.raises(ValueError, match="presets.AUTO"):
        convlab.tune(log, [convlab.tuning.presets.AUTO], progress=False)
    with pytest.raises(ReadError, match="no such file or folder"):
        tune(tmp_path / "missing")
    assert len(tune(log)) == 4
    # a file named itself that is no log, or cannot be read, is refused as convlab.read refuses it
    (tmp_path / "notes.txt").write_text("not a log\n")
    with pytest.raises(ReadError, match=r"notes.txt: not a chat log convlab can read"):
        tune(tmp_path / "notes.txt")
    (tmp_path / "broken.json").write_text('{"mapping": {"a": ')
    with pytest.raises(ReadError) as refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tune([log, tmp_path / "broken.json"])
    with pytest.raises(ReadError) as read_says:
        convlab.read(tmp_path / "broken.json")
    assert str(refused.value) == str(read_says.value)
    # a file given twice is swept twice, in its places, as the conversations read twice are
    twice = tune([log, str(log)], jobs=2)
    pd.testing.assert_frame_equal(twice, tune(read(log) + read(log)))


rows_ = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.one_of(st.none(), st.integers(), st.floats(allow_nan=True),
                                                                                 st.text())), max_size=30)


@given(rows_)
def test_rows_kept_as_tuples_give_back_every_column(drawn):
    """The sweep keeps its rows as tuples over the keys they hold (a folder's sweep holds hundreds of thousands):
    every column comes back as the rows had it, a key a row lacks as missing, in any order of keys."""
    table = Rows()
    for row in drawn:
        table.add(row)
    for key in "abcd":
        col = table.column(key)
        if not any(key in row for row in drawn):
            assert col is None
            continue
        assert len(col) == len(drawn)
        for row, got in zip(drawn, col, strict=True):
            want = row.get(key, MISSING)
            assert got is want or got == want or (got != got and want != want)


@given(rows_, st.lists(st.booleans(), min_size=30, max_size=30))
def test_rows_a_worker_packed_give_back_every_column_as_the_dicts_do(drawn, packs):
    """A worker sends a unit's rows packed (``workers.packed``: the keys once, each row's values): a table of rows
    packed or not, in any mix, gives back the columns the dicts give (a unit's rows share one keys tuple)."""
    from convlab.tuning.workers import packed

    plain, mixed = Rows(), Rows()
    names: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple of keys a unit, as a worker's unpickled rows have
    for row, pack in zip(drawn, packs, strict=False):
        plain.add(row)
        if pack:
            keys, [(_, values)] = packed([(0, row)])
            mixed.add((names.setdefault(keys, keys), values))
        else:
            mixed.add(row)
    assert mixed.keys == plain.keys
    for key in "abcd":
        assert mixed.column(key) == plain.column(key) or _same_with_nan(mixed.column(key), plain.column(key))


def _same_with_nan(a, b):
    return a is not None and b is not None and len(a) == len(b) and all(x is y or x == y or (x != x and y != y) for x, y in zip(a, b))


values_ = st.lists(st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True), st.booleans(),
                              st.none(), st.text()), max_size=12)


@given(st.one_of(values_, st.lists(st.integers(), max_size=12), st.lists(st.one_of(st.integers(-2**63, 2**63 - 1), st.floats()), max_size=12),
                 st.lists(st.one_of(st.integers(), st.floats()), max_size=12)))
@example([0.5, 2**70])  # an int past 64 bits among floats: an object column, never floats
@example([1.5, 10**400])
@example([2**63, 1])  # unsigned 64 bits
@example([np.uint32(5), 7])  # numpy scalars: pandas' own inference
@example([np.uint64(2**63)])
@example([np.int64(3), 4.5])
@example([True, 2])
def test_a_frame_column_made_at_c_speed_is_the_one_pandas_infers(values):
    """The frame's numeric columns are made as numpy arrays (``columns._typed``): each is the column pandas makes
    of the list, dtype and values alike, for any mix of ints (past 64 bits too), floats (NaN too), bools, None
    and text."""
    from convlab.tuning.columns import _typed

    pd.testing.assert_series_equal(pd.Series(_typed(list(values))), pd.Series(list(values)), check_exact=True)


@pytest.mark.realdata
def test_the_command_line_streams_a_large_folder_and_prints_what_a_read_sweep_prints(mixed, tmp_path, capsys, monkeypatch):
    """``convlab tune FOLDER`` past ``STREAM_BYTES`` sweeps it file by file: the same table, the same rows and
    CSV, the file that is no log and the one that cannot be read said as a read of the folder says them."""
    from convlab.cli import main
    from convlab.cli import tune as cli_tune

    (mixed / "oasst" / "oasst1-en-trees-001-060.jsonl").unlink()  # no file is half of the folder: it streams
    argv = ["tune", str(mixed), "--grid", "window=32000,200000", "--grid", "strategy[1].over_tokens=none,20000",
            "--rows", "--no-progress", "--no-result-cache"]
    streams, real_paths = [], files.sweep_paths
    monkeypatch.setattr(files, "sweep_paths", lambda *a, **k: streams.append(1) or real_paths(*a, **k))
    assert main([*argv, "--out", str(tmp_path / "read.csv")]) == 0
    read_out, read_err = capsys.readouterr()
    assert streams == []  # under STREAM_BYTES: read, then swept
    monkeypatch.setattr(cli_tune, "STREAM_BYTES", 0)
    assert main([*argv, "--out", str(tmp_path / "streamed.csv")]) == 0
    streamed_out, streamed_err = capsys.readouterr()
    assert streams == [1]
    assert streamed_out.replace("streamed.csv", "read.csv") == read_out
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "streamed.csv"), pd.read_csv(tmp_path / "read.csv"))
    for err in (read_err, streamed_err):
        flat = " ".join(err.split())
        assert "passed over 1 file with no chat log convlab reads" in flat and "notes.txt" in flat
        assert "broken.json" in flat
    # no conversation at all: the same input error
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("nothing\n")
    assert main(["tune", str(empty), "--no-progress"]) == 2
    assert "no conversations in" in capsys.readouterr().err


@pytest.mark.realdata
@pytest.mark.parametrize("streamed", [True, False])
def test_an_interrupt_of_this_process_alone_stops_the_workers_now(mixed, tmp_path, monkeypatch, streamed):
    """A notebook's interrupt signals the kernel's process only: the sweep stops at once (its workers are
    stopped, not waited for through the files they are on), says what was kept, and leaves no process behind."""
    import multiprocessing
    import os
    import signal
    import threading
    import time

    def slow_rows(*args, **kwargs):  # a file that takes minutes
        time.sleep(120)

    from convlab.tuning import sweep

    convs = None if streamed else read(mixed)
    monkeypatch.setattr(files if streamed else sweep, "rows", slow_rows)  # the workers are forked after: they sweep with it
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # (the largest conversations' baselines run here before the workers start: the configs that never leave
            # them are rows at once, and kept)
            with pytest.raises(results.Stopped, match=r"tune stopped after \d+ of the (8 files|\d+ replays)"):
                tune(mixed if streamed else convs, result_cache=tmp_path / "cache", jobs=2)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20
    assert multiprocessing.active_children() == []
