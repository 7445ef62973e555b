"""Issue 39 (3): a long sweep a user can live with. Each (conversation, config)'s row is kept on disk
(``convlab.tuning.results``): the same sweep again replays nothing, one more config replays only it, a sweep
stopped halfway goes on from where it stopped and ends equal to one that never stopped, row for row, and a file
that changed is replayed again."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from test_compact import agent_log

import convlab
from convlab.conversation import Conversation
from convlab.tree import Tree
from convlab.tuning import results, sweep

BASE = """
[agent.bot.context]
window = 20000
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 300
"""
GRID = {"strategy[0].over_tokens": [200, 400, 800]}


def convs(n: int = 2) -> list[Conversation]:
    out = []
    for k in range(n):
        c = agent_log(turns=5 + k)
        out.append(Conversation(c.message_tree, id=f"agent-{k}"))
    return out


@pytest.fixture
def made(monkeypatch):
    """The (conversation, config) pairs a sweep replays, in order (the sweep's ``rows``, spied on)."""
    seen: list[tuple[str, int]] = []
    real = sweep.rows

    def spy(p, counts, setups, agent, **kw):
        seen.extend((p.conversation_id, j) for j, _ in setups)
        return real(p, counts, setups, agent, **kw)

    monkeypatch.setattr(sweep, "rows", spy)
    return seen


def tune(cs, grid=GRID, **kw):
    return convlab.tune(cs, BASE, grid=grid, progress=False, jobs=1, **kw)


def test_the_same_sweep_again_replays_nothing_and_gives_the_same_frame(tmp_path, made):
    first = tune(convs(), result_cache=tmp_path)
    assert len(made) == 6 and first.attrs["kept"] == 0 and first.attrs["result_cache"] == str(tmp_path)
    made.clear()
    again = tune(convs(), result_cache=tmp_path)
    assert made == [] and again.attrs["kept"] == 6
    pd.testing.assert_frame_equal(first, again)
    fresh = tune(convs(), result_cache=False)
    pd.testing.assert_frame_equal(fresh, again)
    assert "kept" not in fresh.attrs


def test_one_more_config_replays_only_it(tmp_path, made):
    tune(convs(), result_cache=tmp_path)
    made.clear()
    more = tune(convs(), grid={"strategy[0].over_tokens": [200, 400, 800, 1600]}, result_cache=tmp_path)
    assert sorted(made) == [("agent-0", 3), ("agent-1", 3)]
    pd.testing.assert_frame_equal(more, tune(convs(), grid={"strategy[0].over_tokens": [200, 400, 800, 1600]},
                                             result_cache=False))


def test_a_sweep_stopped_halfway_goes_on_from_there_and_ends_equal_to_one_that_never_stopped(tmp_path, monkeypatch):
    real, calls = sweep.rows, []

    def interrupted(p, counts, setups, agent, **kw):
        calls.append(p.conversation_id)
        if len(calls) == 2:  # Ctrl-C while the second conversation replays
            raise KeyboardInterrupt
        return real(p, counts, setups, agent, **kw)

    monkeypatch.setattr(sweep, "rows", interrupted)
    with pytest.raises(results.Stopped) as stopped:
        tune(convs(), result_cache=tmp_path)
    assert str(stopped.value) == (f"tune stopped after 3 of the 6 replays it had to make; 3 of them are kept in {tmp_path}: "
                                  "run it again to go on from there")
    assert isinstance(stopped.value, KeyboardInterrupt)  # a notebook's interrupt, still
    monkeypatch.setattr(sweep, "rows", real)
    calls.clear()
    resumed = tune(convs(), result_cache=tmp_path)
    assert resumed.attrs["kept"] == 3
    pd.testing.assert_frame_equal(resumed, tune(convs(), result_cache=False))
    with pytest.raises(results.Stopped, match="nothing was kept .*a new run starts over"):
        monkeypatch.setattr(sweep, "rows", interrupted)
        calls.clear()
        tune(convs(), result_cache=False)


def test_a_conversation_that_changed_is_replayed_again_and_one_that_did_not_is_not(tmp_path, made):
    tune(convs(), result_cache=tmp_path)
    made.clear()
    changed = convs()
    t = Tree()
    for node in changed[1].message_tree.nodes_in_order():
        t.add({k: v for k, v in node.items() if k not in ("parent", "seq")}
              | ({"content": "a question asked otherwise " * 20} if node["id"] == "u2" else {}), node["parent"])
    t.head = changed[1].message_tree.head
    changed[1] = Conversation(t, id="agent-1")
    again = tune(changed, result_cache=tmp_path)
    assert sorted({c for c, _ in made}) == ["agent-1"] and again.attrs["kept"] == 3
    pd.testing.assert_frame_equal(again, tune(changed, result_cache=False))


def test_a_damaged_entry_is_made_again_and_an_unwritable_folder_loses_nothing(tmp_path, made):
    tune(convs(1), result_cache=tmp_path)
    [entry] = list(tmp_path.rglob("*.json"))
    entry.write_text('{"key": "not this one", "rows": {}}')
    made.clear()
    again = tune(convs(1), result_cache=tmp_path)
    assert len(made) == 3 and again.attrs["kept"] == 0
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        kept = tune(convs(), result_cache=blocked / "results")
    cache_warnings = [w for w in said if issubclass(w.category, convlab.CacheWarning)]
    assert len(cache_warnings) == 1 and "cannot be written" in str(cache_warnings[0].message)
    pd.testing.assert_frame_equal(kept, tune(convs(), result_cache=False), check_like=True)


def test_the_default_folder_and_the_switch_that_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CONVLAB_RESULT_CACHE")
    assert results.default_folder() == tmp_path / "convlab" / "tune"
    tune(convs(1))
    assert list((tmp_path / "convlab" / "tune").rglob("*.json"))
    monkeypatch.setenv("CONVLAB_RESULT_CACHE", "off")
    assert results.default_folder() is None and results.for_sweep(None) is None


def test_the_command_line_says_what_it_kept_and_where(tmp_path, capsys):
    from convlab.cli import main

    log = tmp_path / "s.jsonl"
    s = convlab.Session(log=log)
    for i in range(4):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " * 50}})
    folder = tmp_path / "kept"
    argv = ["tune", str(log), "--grid", "window=20000,30000", "--result-cache", str(folder), "--no-progress"]
    assert main(argv) == 0
    assert "kept from an earlier run" not in capsys.readouterr().err
    assert main(argv) == 0
    assert f"2 of the 2 rows were kept from an earlier run of the same sweep, in {folder}" in " ".join(capsys.readouterr().err.split())
    assert main([*argv[:-3], "--no-result-cache", "--no-progress"]) == 0
    assert "kept from an earlier run" not in capsys.readouterr().err


def test_workers_that_print_alike_and_a_summarizer_keep_nothing_wrong(tmp_path, made):
    """Two workers whose reprs agree but whose knobs differ are two configs; a sweep with a summarizer keeps no
    rows (a failed summary call is made again by the next run, which a kept row would hide)."""
    from convlab import compact

    a, b = compact.offloaded_summary(0.5), compact.offloaded_summary(0.5, folder="/elsewhere/history")
    assert repr(a) != repr(b)
    grid = {"worker": [a, b]}
    first = tune(convs(1), grid=grid, result_cache=tmp_path)
    made.clear()
    again = tune(convs(1), grid=grid, result_cache=tmp_path)
    assert made == [] and again.attrs["kept"] == 2
    pd.testing.assert_frame_equal(first, again)
    made.clear()
    with_summarizer = tune(convs(1), result_cache=tmp_path / "s", summarizer=convlab.EchoLLM(), summary_cache=False)
    assert "kept" not in with_summarizer.attrs and not (tmp_path / "s").exists() and len(made) == 3


def test_the_key_of_a_priced_sweep_holds_the_prices_version_and_the_day(monkeypatch):
    from convlab.tuning.forks import Setup

    setup = Setup(convlab.load_config(BASE)["bot"], None)
    opts = convlab.replaying.options.Options(model="claude-sonnet-4-5")
    key = results.setup_key(setup, "bot", opts.replaying(), {})
    assert key == results.setup_key(setup, "bot", opts.replaying(), {})
    monkeypatch.setattr(results, "_version", lambda package: "0.0.0-other")
    assert results.setup_key(setup, "bot", opts.replaying(), {}) != key


# -- issue 40 (1): the warning of a cache that cannot be written names what its reader can give -----------------


def _parameters(*functions) -> set[str]:
    """The keywords ``functions`` take: their own, and ``Options``' fields where they take ``**knobs``."""
    import dataclasses
    import inspect

    from convlab.replaying.options import Options

    out: set[str] = set()
    for f in functions:
        params = inspect.signature(f).parameters
        out |= {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            out |= {field.name for field in dataclasses.fields(Options) if field.init}
    return out


def _tune_flags() -> set[str]:
    import argparse

    from convlab.cli import build_parser

    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {flag for action in commands.choices["tune"]._actions for flag in action.option_strings}


def _said(make) -> str:
    """The one ``CacheWarning`` ``make()`` raises, as text."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        make()
    [warning] = [w.message for w in said if issubclass(w.category, convlab.CacheWarning)]
    return str(warning)


@pytest.mark.parametrize("which", ["summary", "judge", "result"])
def test_an_unwritable_cache_says_how_to_give_it_a_folder_in_names_that_exist(which, tmp_path, monkeypatch):
    """Each keyword the hint names is a parameter of a function it names (``tune``'s and ``replay``'s knobs are
    ``Options``' fields), each flag one of ``convlab tune``'s, and the variable moves the default folder."""
    import re

    from convlab.replaying import summaries
    from convlab.tuning import probes

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    ask = {"model": None, "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "Sum up."}]}
    if which == "summary":
        hint, callers, flags = summaries.SUMMARY_HINT, (convlab.tune, convlab.replay), {"--no-summary-cache"}
        said = _said(lambda: summaries.Summaries(convlab.EchoLLM(), blocked / "s").complete(ask))
        default = summaries.default_folder
    elif which == "judge":
        hint, callers, flags = probes.JUDGE_HINT, (convlab.tune, convlab.retention, probes.Judge), set()
        said = _said(lambda: probes.Judge(convlab.EchoLLM(), cache=blocked / "j").complete(ask))
        default = lambda: probes.Judge(convlab.EchoLLM()).folder  # noqa: E731
    else:
        hint, callers, flags = results.RESULT_HINT, (convlab.tune,), {"--result-cache", "--no-result-cache"}
        said = _said(lambda: results.ResultCache(blocked / "r").keep("k" * 64, {"c": {"calls": 1}}))
        monkeypatch.delenv("CONVLAB_RESULT_CACHE")
        default = results.default_folder
    assert "cannot be written (" in said and hint in said
    keywords = set(re.findall(r"(?<![\w-])([a-z_]+)=", hint))
    assert keywords and keywords <= _parameters(*callers), keywords - _parameters(*callers)
    assert set(re.findall(r"(?<![\w-])--[a-z-]+", hint)) == flags and flags <= _tune_flags()
    [variable] = set(re.findall(r"\b([A-Z][A-Z_]+)=", hint))
    monkeypatch.setenv(variable, str(tmp_path / "home"))
    assert (tmp_path / "home") in Path(default()).parents


# -- issue 40 (3): a kept row is read as untrusted: a damaged one is replayed and written again, never shown ----------


def _deep(n: int) -> object:
    value: object = 1
    for _ in range(n):
        value = [value]
    return value


#: Damage done to a kept entry: (what, the rows' field, the value put there). The field None: each whole row;
#: "<entry>": the whole file; the value KeyError: the field taken out.
DAMAGE = [
    ("a value nested 300 deep", "tokens_read", _deep(300)),
    ("a non-number", "calls", "many"),
    ("a huge float", "tokens_read", 1e300),
    ("a huge negative float", "tokens_read", -1e300),
    ("huge dollars", "usd", 1e300),
    ("negative dollars", "usd", -1e300),
    ("an infinity", "cached_share", float("inf")),
    ("a huge whole number", "max_count", 10**30),
    ("a count as a float", "calls", 3.0),
    ("a bool", "stale", True),
    ("a missing key", "tokens_read", KeyError),
    ("a key no sweep writes", "not_a_measure", 1),
    ("a non-dict row", None, ["calls", 3]),
    ("a non-dict entry", "<entry>", ["rows"]),
]


def _entries(folder) -> list[tuple]:
    import json

    return [(path, json.loads(path.read_text())) for path in folder.rglob("*.json")]


def _damage(folder, field, value) -> None:
    """Every row of every entry in ``folder`` damaged the same way."""
    import json

    for path, entry in _entries(folder):
        for config, row in entry["rows"].items():
            if field is None:
                entry["rows"][config] = value
            elif value is KeyError:
                del row[field]
            else:
                row[field] = value
        path.write_text(json.dumps(value if field == "<entry>" else entry))
        assert results.ResultCache(folder).load(path.stem) == {}  # read as absent


def _kept_whole(folder) -> bool:
    """Every entry in ``folder`` reads back whole (the damaged one was written again)."""
    entries = _entries(folder)
    return bool(entries) and all(results.ResultCache(folder).load(e["key"]) == e["rows"] != {} for _, e in entries)


@pytest.mark.parametrize(("what", "field", "value"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_a_damaged_row_is_replayed_and_written_again_never_shown(what, field, value, tmp_path, made):
    clean = tune(convs(1), result_cache=tmp_path, model="claude-sonnet-4-5")
    assert (clean["usd"] > 0).all()
    _damage(tmp_path, field, value)
    made.clear()
    again = tune(convs(1), result_cache=tmp_path, model="claude-sonnet-4-5")
    assert len(made) == 3 and again.attrs["kept"] == 0  # every config replayed, as with no cache
    pd.testing.assert_frame_equal(again, clean)
    assert _kept_whole(tmp_path)
    made.clear()
    third = tune(convs(1), result_cache=tmp_path, model="claude-sonnet-4-5")
    assert made == [] and third.attrs["kept"] == 3
    pd.testing.assert_frame_equal(third, clean)


@pytest.mark.parametrize(("what", "field", "value"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_the_command_line_on_a_damaged_row_prints_the_clean_table(what, field, value, tmp_path, capsys):
    from convlab.cli import main

    log = tmp_path / "s.jsonl"
    s = convlab.Session(log=log)
    for i in range(4):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " * 50}})
    folder = tmp_path / "kept"
    argv = ["tune", str(log), "--grid", "window=20000,30000", "--model", "claude-sonnet-4-5", "--result-cache", str(folder),
            "--no-progress"]
    assert main(argv) == 0
    clean = capsys.readouterr().out
    _damage(folder, field, value)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == clean and "internal error" not in err and "kept from an earlier run" not in err
    assert _kept_whole(folder)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == clean and "2 of the 2 rows were kept from an earlier run" in " ".join(err.split())


def test_a_kept_row_is_checked_for_every_measure_a_sweep_writes_and_no_other():
    """``results.ROW`` is the frame's measured columns less what a config says and what the frame works out: a
    measure added to the sweep and not to ``ROW`` would make every kept row read as damaged (replayed each run)."""
    from convlab.tuning.columns import COLUMNS

    said_by_the_config, worked_out = {"window", "strategies", "worker", "threshold"}, {"saved", "usd_saved"}
    assert set(results.ROW) == set(COLUMNS) - said_by_the_config - worked_out
