"""The convlab command: show (golden text), tune (table, csv/parquet, plot), errors (one line, exit 2)."""

from __future__ import annotations

import pandas as pd
import pytest

import convlab
from convlab.cli import main

from realdata import REAL, require

CONFIG = """
[agent.bot.context]
window = 148431
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
"""


@pytest.fixture
def session_log(tmp_path):
    """A session log with an edit (a branch point) and a summary (a new root)."""
    path = tmp_path / "s.jsonl"
    s = convlab.Session(log=path, config='[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = "summarize"\nover_tokens = 12\n')
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "weather in NYC?"}})
    s.submit({"type": "client.messages", "agent_id": "bot", "messages": [
        {"id": "u1", "role": "user", "content": "weather in NYC?"}, {"id": "u2", "role": "user", "content": "weather in LA instead"}]})
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u3", "role": "user", "content": "and tomorrow, in a lot more detail please?"}})
    return path


GOLDEN = """\
conversation s: 8 messages, 1 branch points, 1 summaries, head e5
  u1 user: weather in NYC?
  ├─ e1 assistant: echo: weather in NYC?
  └─ u2 user: weather in LA instead
     └─ e2 assistant: echo: weather in LA instead
        └─ u3 user: and tomorrow, in a lot more detail please?
* e3 user [summary] (replaces u3): The earlier conversation was summari…
* └─ e4 user (copy of u3): and tomorrow, in a lot more detail please?
*    └─ e5 assistant: echo: and tomorrow, in a lot more detail …  ◀ head
"""


def test_show_prints_the_tree_with_head_branch_points_and_summaries(session_log, capsys):
    assert main(["show", str(session_log), "--width", "72"]) == 0
    assert capsys.readouterr().out == GOLDEN


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "nope.json"], "convlab: nope.json: no such file or folder\n"),
        (["tune", "nope.json", "--config", "nope.toml"], "convlab: --config nope.toml: no such file\n"),
        ([], "convlab: give a command: show or tune (convlab --help)\n"),
        (["frobnicate"], None),
    ],
)
def test_errors_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("convlab: ") and err.count("\n") == 1 and "Traceback" not in err
    if message is not None:
        assert err == message


def test_bad_config_and_bad_grid_are_one_line(session_log, tmp_path, capsys):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[agent.bot.context]\nwindow = 100\n")
    assert main(["tune", str(session_log), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err.startswith("convlab: agent.bot.context.window: must be more than 16000")
    cfg.write_text(CONFIG)
    assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "window"]) == 2
    assert capsys.readouterr().err == "convlab: --grid 'window': write KEY=V1,V2 (e.g. window=64000,128000)\n"
    assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "strategy[7].idle_secs=5"]) == 2
    assert "no strategy[7]" in capsys.readouterr().err


def test_tune_writes_csv_and_parquet(session_log, tmp_path, capsys):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    for name in ("r.csv", "r.parquet"):
        out = tmp_path / name
        assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "window=20000,148431", "--out", str(out), "--no-progress"]) == 0
        df = pd.read_csv(out) if name.endswith(".csv") else pd.read_parquet(out)
        assert list(df["window"]) == [20000, 148431] and list(df["calls"]) == [3, 3]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.realdata
def test_tune_on_a_real_file_prints_the_table_and_writes_the_plot(tmp_path, capsys):
    real = require()
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    png = tmp_path / "out.png"
    argv = ["tune", str(real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"), "--config", str(cfg),
            "--plot", str(png), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["conversation", "config", "window", "calls"]
    row = lines[1].split()
    assert row[0] == "ae4a77f8-aedd-4bc1-888f-c94edc91af04" and row[2:4] == ["148431", "217"]
    assert f"wrote {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


@pytest.mark.realdata
def test_tune_heatmap_over_two_grid_keys(tmp_path, capsys):
    real = require()
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    png = tmp_path / "heat.png"
    argv = ["tune", str(real / "librechat"), "--config", str(cfg), "--grid", "window=20000,148431",
            "--grid", "strategy[0].idle_secs=60,3600", "--plot", str(png), "--value", "resets", "--no-progress"]
    assert main(argv) == 0
    assert png.stat().st_size > 5_000
