"""The convlab command: show (golden text on real logs, within --width), tune (table, csv/parquet, plot),
no silent mistakes (warnings and skips on stderr, config and output checks before any work, exit 0 / 2)."""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

import convlab
import convlab.importers
import convlab.replaying.driver
import convlab.tuning.sweep
from convlab.cli import build_parser, main
from convlab.text import cells

from realdata import log_files, require, stats

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
conversation s
head e5 (3 on the active path); 8 messages, 1 branch point, 1 summary
┌─○ u1 user: weather in NYC?
│ ├─○ e1 assistant: echo: weather in NYC?
│ ○ u2 user: weather in LA instead
│ ○ e2 assistant: echo: weather in LA instead
│ ○ u3 user: and tomorrow, in a lot more detail please?
● e3 user [summary] (replaces u3): The earlier conversation was summari…
● e4 user (copy of u3): and tomorrow, in a lot more detail please?
● e5 assistant: echo: and tomorrow, in a lot more detail please?  ◀ head
"""


def test_show_prints_the_tree_with_head_branch_points_and_summaries(session_log, capsys):
    """show: the tree as a git graph (the active path one column, branches fork right), head, branch points
    and summaries; nothing on stderr for a sound log."""
    assert main(["show", str(session_log), "--width", "72"]) == 0
    out, err = capsys.readouterr()
    assert out == GOLDEN and err == ""


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "nope.json"], "convlab: nope.json: no such file or folder\n"),
        (["tune", "nope.json", "--config", "nope.toml"], "convlab: --config nope.toml: no such file\n"),
        ([], "convlab: give a command: show, tune, search, serve or export (convlab --help)\n"),
        (["frobnicate"], None),
        (["show", "x.json", "--width", "5"], "convlab: argument --width: must be a whole number of at least 20, got '5'\n"),
        (["show", "x.json", "--width", "wide"], "convlab: argument --width: must be a whole number of at least 20, got 'wide'\n"),
    ],
)
def test_errors_are_one_line_and_exit_2(argv, message, capsys):
    """Every mistake in the call is one line on stderr and exit 2, never a traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("convlab: ") and err.count("\n") == 1 and "Traceback" not in err
    if message is not None:
        assert err == message


def test_bad_config_and_bad_grid_are_one_line(session_log, tmp_path, capsys):
    """A config mistake names the file and the key; a grid mistake names --grid; one line, exit 2."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[agent.bot.context]\nwindow = 100\n")
    assert main(["tune", str(session_log), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err.startswith(f"convlab: {cfg}: agent.bot.context.window: must be more than 16000")
    cfg.write_text("[agent.bot.context\nwindow = 100\n")
    assert main(["tune", str(session_log), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err.startswith(f"convlab: {cfg}: is not valid TOML: ")
    cfg.write_text(CONFIG)
    assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "window"]) == 2
    assert capsys.readouterr().err == "convlab: --grid 'window': write KEY=V1,V2 (e.g. window=64000,128000)\n"
    assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "strategy[7].idle_secs=5"]) == 2
    assert capsys.readouterr().err == (
        "convlab: --grid: agent.bot.context.strategy[7].idle_secs: the base config has 2 strategies, no strategy[7]\n")


def test_tune_writes_csv_and_parquet(session_log, tmp_path, capsys):
    """--out writes the whole table as csv or parquet."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    for name in ("r.csv", "r.parquet"):
        out = tmp_path / name
        assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "window=20000,148431", "--out", str(out), "--no-progress"]) == 0
        df = pd.read_csv(out) if name.endswith(".csv") else pd.read_parquet(out)
        assert list(df["window"]) == [20000, 148431] and list(df["calls"]) == [3, 3]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.realdata
def test_tune_on_a_real_file_prints_the_table_and_writes_the_plots(tmp_path, capsys):
    """tune on the real Claude Code session: the table on stdout, the count-per-call plot written, and the
    trade-off beside it (out-pareto.png)."""
    real = require()
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    png = tmp_path / "out.png"
    argv = ["tune", str(real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"), "--config", str(cfg),
            "--plot", str(png), "--no-progress", "--width", "120", "--rows"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the ranking first (issue 34: what a user acts on), then the rows --rows asks for
    assert lines[0:2] == ["configs ranked over 1 conversation: saved = tokens read below the same conversations replayed "
                          "with no strategy, each", "figure summed over them; pareto = no config saves as many tokens "
                          "(saved) with as few summaries + resets"]
    assert lines[2:4] == ["rank  config  window  saved  summaries  resets  stale  limits  calls  pareto",
                          "   1       0  148431     4%          1       0      8       1    217  yes"]
    assert lines[5].split() == ["conv", "source", "cfg", "window", "calls", "read", "saved", "summ", "resets", "stale",
                                "err95"]
    assert lines[6].split() == ["ae4a77f8-aedd-4…8f-c94edc91af04", "…c1-888f-c94edc91af04.jsonl.gz", "0", "148431", "217",
                                "16,139,861", "4%", "1", "0", "8", "1,291"]
    assert f"wrote {png}\nwrote {tmp_path / 'out-pareto.png'}\n" in out
    for path in (png, tmp_path / "out-pareto.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


@pytest.mark.realdata
def test_tune_heatmap_over_two_grid_keys(tmp_path, capsys):
    """Two grid keys: the heatmap of --value."""
    real = require()
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    png = tmp_path / "heat.png"
    argv = ["tune", str(real / "librechat"), "--config", str(cfg), "--grid", "window=20000,148431",
            "--grid", "strategy[0].idle_secs=60,3600", "--plot", str(png), "--value", "resets", "--no-progress"]
    assert main(argv) == 0
    assert png.stat().st_size > 5_000


def rows_table(out: str) -> list[str]:
    """The lines of tune's per-conversation table (``--rows``, after the ranking): from its header to a blank line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] in (["conv"], ["conversation"]))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


# ----------------------------------------------------------------------
# show on real logs: golden text, width everywhere
# ----------------------------------------------------------------------
GOLDEN_DIR = Path(__file__).parent / "golden"
CLAUDE_CODE = "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"

CHATGPT_TREE = """\
conversation d5dc5307-6807-41a0-8b04-4acee626eeb7: 'Assist user with su…
head f63b8e17 (7 on the active path); 12 messages, 2 branch points, 0 s…
● d38605d2 system:
● aaa297ba user: hi there
● bda8a275 assistant: Hello! How can I assist you today?
├─○ aaa24023 user: so cool bro
│ ○ 23afbea9 assistant: Thanks! What brings you here today?
│ ○ aaa292cc user: tell me a story
│ ○ ada93f81 assistant: Sure! Here's a short story for you: --- Once up…
● aaa236a3 user: hi again
● db88eddf assistant: Hey! Welcome back. What's on your mind?
● aaa20127 user: tell me a joke
├─○ d0d2a7df assistant: Sure, here's one for you: Why don't scientists …
● f63b8e17 assistant: Sure, here's one for you: Why don't scien…  ◀ head
"""

CHATGPT_PATH = """\
conversation d5dc5307-6807-41a0-8b04-4acee626eeb7: 'Assist user with su…
head f63b8e17 (7 on the active path); 12 messages, 2 branch points, 0 s…
● d38605d2 system:
● aaa297ba user: hi there
● bda8a275 assistant (+1 branch): Hello! How can I assist you today?
● aaa236a3 user: hi again
● db88eddf assistant: Hey! Welcome back. What's on your mind?
● aaa20127 user (+1 branch): tell me a joke
● f63b8e17 assistant: Sure, here's one for you: Why don't scien…  ◀ head
"""


@pytest.mark.realdata
@pytest.mark.parametrize("extra, golden", [([], CHATGPT_TREE), (["--path"], CHATGPT_PATH)])
def test_show_a_real_chatgpt_export_with_an_edit_and_a_regeneration(extra, golden, capsys):
    """Issue 15: golden text of show on a ChatGPT export with a real edit fork and a real regeneration fork,
    as a git graph (the forks one column right of the active path) and as the active path alone."""
    real = require()
    assert main(["show", str(real / "chatgpt" / "chatgpt-tree.librechat.json"), "--width", "72", *extra]) == 0
    out, err = capsys.readouterr()
    assert out == golden and err == ""


@pytest.mark.realdata
@pytest.mark.parametrize("extra, golden", [(["--width", "100"], "show-claude-code-w100.txt"),
                                           (["--width", "80", "--path"], "show-claude-code-path-w80.txt")])
def test_show_the_real_claude_code_session(extra, golden, capsys):
    """Issue 15: golden text of show on the long real Claude Code session (466 messages, a compaction):
    the pre-compaction history is one side column, the active path one straight column, thinking and tool
    parts are labels ([thinking 76 chars], [tool_use Bash: git status], [tool_result Bash 180 chars]),
    and no line is over the width (the old rendering ran to 900+ characters)."""
    real = require()
    assert main(["show", str(real / CLAUDE_CODE), *extra]) == 0
    out, err = capsys.readouterr()
    assert out == (GOLDEN_DIR / golden).read_text(encoding="utf-8") and err == ""
    width = int(extra[1])
    assert max(cells(line) for line in out.splitlines()) <= width
    assert "[thinking " in out and "[tool_use Bash: " in out and "[tool_result Bash " in out and '{"type"' not in out


@pytest.mark.realdata
@pytest.mark.parametrize("name", log_files())
@pytest.mark.parametrize("extra", [["--width", "20"], ["--width", "57", "--path"], ["--width", "100"]])
def test_show_keeps_every_line_of_every_real_log_within_the_width(name, extra, capsys):
    """Issue 15: --width respected everywhere, whatever the data: headers, graph, labels, on every real log."""
    real = require()
    assert main(["show", str(real / name), *extra, "--quiet"]) == 0
    out = capsys.readouterr().out
    width = int(extra[1])
    too_wide = [line for line in out.splitlines() if cells(line) > width]
    assert out and not too_wide


# ----------------------------------------------------------------------
# no silent mistakes: warnings and skips on stderr, exit codes
# ----------------------------------------------------------------------
def chatgpt_export(path):
    """A ChatGPT export whose message u9 hangs from a parent that is not there and whose current node is
    gone (the importer repairs both, with a warning)."""
    def record(mid, parent, role, text, t):
        return {"id": mid, "parent": parent, "children": [], "message": {
            "id": mid, "author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, "create_time": t}}

    conv = {"id": "c1", "title": "broken", "current_node": "gone", "mapping": {
        "root": {"id": "root", "message": None, "parent": None, "children": ["u1"]},
        "u1": record("u1", "root", "user", "hi", 1), "a1": record("a1", "u1", "assistant", "hello", 2),
        "u9": record("u9", "lost", "user", "orphan", 3)}}
    path.write_text(json.dumps([conv]))
    return path


def test_show_says_what_the_importer_repaired(tmp_path, capsys):
    """Issue 15: the CLI prints every ReadWarning to stderr, grouped with counts, and still exits 0 with
    its output (a ChatGPT export with a dangling parent and a replaced head)."""
    path = chatgpt_export(tmp_path / "conversations.json")
    assert main(["show", str(path)]) == 0  # into a pipe, with no --width: one line an item (grep)
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "● u9 user: orphan  ◀ head"
    assert err == (
        "convlab: 1 ReadWarning while reading:\n"
        f"  {path}, conversation 'c1': node 'u9': parent 'lost' is not in the conversation; kept as a top-level "
        "message; current node 'gone' is not a message of the conversation; head set to the newest leaf\n"
    )
    assert main(["show", str(path), "--width", "60", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_the_same_warning_twice_is_counted(tmp_path, capsys):
    """Grouped with counts: a warning said more than once prints once, with how many times."""
    folder = tmp_path / "logs"
    folder.mkdir()
    chatgpt_export(folder / "a.json")
    export = json.loads((folder / "a.json").read_text())
    (folder / "a.json").write_text(json.dumps(export * 2))  # the same conversation twice: the same repair twice
    assert main(["show", str(folder)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("convlab: 2 ReadWarnings while reading:\n")
    assert err.count("\n") == 2 and err.endswith("head set to the newest leaf (2 times)\n")


def test_a_folder_says_which_files_it_skipped_and_why(tmp_path, capsys):
    """Issue 15: a folder where two files could not be read: the CLI says which and why, says the files it
    found no chat log in, and exits 0 with the output of the rest."""
    folder = tmp_path / "logs"
    folder.mkdir()
    chatgpt_export(folder / "good.json")
    (folder / "broken.json").write_text('{"mapping": {"x": ')
    (folder / "cut.jsonl.gz").write_bytes(gzip.compress(b'{"type": "user"}\n' * 50)[:20])
    (folder / "notes.txt").write_text("not a chat log")
    assert main(["show", str(folder), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "● u9 user: orphan  ◀ head" in out
    lines = err.splitlines()
    assert lines[0] == "convlab: skipped 2 files that could not be read:"
    assert lines[1].startswith(f"  {folder / 'broken.json'}: not valid JSON")
    assert lines[2].startswith(f"  {folder / 'cut.jsonl.gz'}: ")
    assert lines[3:5] == ["convlab: passed over 1 file with no chat log convlab reads:", f"  {folder / 'notes.txt'}"]
    assert lines[5:7] == ["convlab: 2 ReadWarnings while reading:",
                          f"  {folder / 'cut.jsonl.gz'}: gzip data cut short; read the 9 bytes before the cut"]
    assert lines[7].startswith(f"  {folder / 'good.json'}, conversation 'c1': node 'u9': parent 'lost'") and len(lines) == 8


def test_a_folder_with_nothing_readable_is_an_input_error(tmp_path, capsys):
    """No conversation at all: exit 2, after saying what was skipped and why."""
    (tmp_path / "broken.json").write_text("{")
    assert main(["show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("convlab: skipped 1 file that could not be read:\n")
    assert err.endswith(f"convlab: no conversations in {tmp_path}\n")


@pytest.mark.parametrize("command", [["show"], ["tune", "--no-progress"]])
@pytest.mark.parametrize("content, said", [
    ({"conversationId": "c", "messages": [{"messageId": None, "text": f"m{i}"} for i in range(3)]},
     "read as librechat, its 3 'messages' gave no message convlab can read"),
    ([], "no conversations in"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "read as openai, its 1 'messages' gave no message"),
])
def test_show_and_tune_of_a_file_that_yields_nothing_exit_2(tmp_path, capsys, command, content, said):
    """Issue 20: "On the command line, show and tune of a file that yields nothing exit 2"."""
    p = tmp_path / "export.json"
    p.write_text(json.dumps(content))
    assert main([command[0], str(p), *command[1:]]) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err.splitlines()[-1] and "Traceback" not in err


def test_a_torn_session_log_is_said(session_log, capsys):
    """A session log with a torn last line is read (LogWarning, as a ReadWarning naming the file): said on stderr."""
    with open(session_log, "a") as f:
        f.write('{"type": "message.new", "seq": 99, "mess')
    assert main(["show", str(session_log)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("convlab: 1 ReadWarning while reading:\n") and f"{session_log}: " in err


@pytest.fixture
def no_work(monkeypatch):
    """Reading or tuning is work: a test using this fixture proves the command stopped before any."""
    def boom(*args, **kwargs):
        raise AssertionError("work started before the mistake was found")

    check_only = convlab.tune

    def tune(conversations, *args, **kwargs):  # tune of no conversation only checks the configs
        if conversations:
            boom()
        return check_only(conversations, *args, **kwargs)

    monkeypatch.setattr(convlab.importers, "read", boom)  # where the command takes each from (the defining modules)
    monkeypatch.setattr(convlab.tuning.sweep, "tune", tune)
    monkeypatch.setattr(convlab.replaying.driver, "replay", boom)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--plot", "{tmp}/missing/out.png"], "convlab: --plot {tmp}/missing/out.png: no folder {tmp}/missing to write it into\n"),
        (["--out", "{tmp}/missing/r.csv"], "convlab: --out {tmp}/missing/r.csv: no folder {tmp}/missing to write it into\n"),
        (["--out", "{tmp}/r.xlsx"], "convlab: --out {tmp}/r.xlsx: write one of .csv, .parquet\n"),
        (["--plot", "{tmp}/folder.png"], "convlab: --plot {tmp}/folder.png: is a folder\n"),
        (["--plot", "{tmp}/out.svg", "--out", "{tmp}/out.svg"], "convlab: --out {tmp}/out.svg: write one of .csv, .parquet\n"),
        (["--plot", "{tmp}/out.pgn"], None),
    ],
)
def test_output_paths_are_checked_before_any_work(extra, message, tmp_path, no_work, capsys):
    """Issue 15: --plot into a missing folder (and any output that cannot be written) is a clear error,
    exit 2, before the sweep starts (the old CLI failed with a raw [Errno 2] after the whole sweep)."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    (tmp_path / "folder.png").mkdir()
    argv = ["tune", "log.jsonl", "--config", str(cfg), *[a.format(tmp=tmp_path) for a in extra]]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    if message is not None:
        assert err == message.format(tmp=tmp_path)
    else:
        assert err.startswith(f"convlab: --plot {tmp_path}/out.pgn: write one of ") and ".png" in err


@pytest.mark.parametrize(
    "config, agent, message",
    [
        ("[agent.bot.contxt]\nwindow = 200000\n[[agent.bot.contxt.strategy]]\nuse = 'summarize'\n", "bot",
         "agent.bot.context: missing: the config has no [agent.bot.context] table (it has [agent.bot.contxt])"),
        (CONFIG, "bto", "agent.bto.context: missing: the config has no [agent.bto.context] table (it has [agent.bot.context])"),
    ],
)
def test_a_misspelled_table_or_a_wrong_agent_is_an_error_before_any_work(config, agent, message, tmp_path, no_work, capsys):
    """Issue 15: a misspelled table ([agent.bot.contxt]) or a wrong --agent made tune run with no strategy
    and exit 0; now it is a config error naming the tables the file has, exit 2, before reading."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(config)
    assert main(["tune", "log.jsonl", "--config", str(cfg), "--agent", agent]) == 2
    assert capsys.readouterr().err == f"convlab: {cfg}: {message}\n"


def test_a_misspelled_table_is_an_error_even_with_a_grid(tmp_path, no_work, capsys):
    """A grid over window would build the missing table itself: the base config is checked first."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[agent.bot.contxt]\nwindow = 200000\n")
    assert main(["tune", "log.jsonl", "--config", str(cfg), "--grid", "window=64000,128000"]) == 2
    assert "agent.bot.context: missing" in capsys.readouterr().err


def test_an_unknown_heatmap_value_is_an_error_before_any_work(tmp_path, no_work, capsys):
    """--value names a column of the sweep; a typo is found before the sweep, not after it."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    argv = ["tune", "log.jsonl", "--config", str(cfg), "--grid", "window=20000,148431", "--grid",
            "strategy[0].idle_secs=60,3600", "--plot", str(tmp_path / "h.png"), "--value", "token_read"]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("convlab: --value 'token_read': not a column of the sweep (columns: conversation, ")


def test_an_empty_config_is_said(session_log, tmp_path, capsys):
    """An empty config means no window and no strategy (load_config): the CLI says so on stderr, runs, exits 0."""
    cfg = tmp_path / "empty.toml"
    cfg.write_text("# to fill in\n")
    assert main(["tune", str(session_log), "--config", str(cfg), "--no-progress", "--rows"]) == 0
    out, err = capsys.readouterr()
    assert err == f"convlab: {cfg} sets no window and no strategy for agent 'bot': the logs replay as they were\n"
    assert out.splitlines()[-1].split()[:3] == ["s", "s.jsonl", "0"]


def test_no_progress_bar_with_no_progress_nor_outside_a_terminal(tmp_path, capsys):
    """Issue 15: --no-progress is honoured everywhere (reading a folder showed its bar anyway), and
    outside a terminal no bar prints at all: stderr holds only what the command has to say."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for i in range(3):
        path = folder / f"s{i}.jsonl"
        s = convlab.Session(log=path, config=CONFIG)
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    grid = ["--grid", "window=20000,30000,40000,50000,60000,70000,80000"]  # 21 replays: tune's own bar threshold
    for argv in (["show", str(folder), "--no-progress"], ["tune", str(folder), "--config", str(cfg), *grid, "--no-progress"],
                 ["show", str(folder)], ["tune", str(folder), "--config", str(cfg), *grid]):
        assert main(argv) == 0
        assert capsys.readouterr().err == "", argv


def test_a_fault_of_convlab_is_one_line_and_exit_1(session_log, monkeypatch, capsys):
    """Never a traceback: a bug inside convlab is one line, exit 1, saying to report it."""
    def broken(*args, **kwargs):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(convlab.importers, "read", broken)
    assert main(["show", str(session_log)]) == 1
    assert capsys.readouterr().err == "convlab: internal error, please report it: RuntimeError: something inside broke\n"


def test_an_unknown_conversation_names_the_ones_there(session_log, capsys):
    """--conversation with an id the log does not have: exit 2, naming the ids it has."""
    assert main(["show", str(session_log), "--conversation", "nope"]) == 2
    assert capsys.readouterr().err == f"convlab: {session_log}: no conversation 'nope' (its 1 conversation: s)\n"
    assert main(["show", str(session_log), "--conversation", "s", "--path"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "● e5 assistant: echo: and tomorrow, in a lot more detail please?  ◀ head"


def test_main_takes_a_list_of_arguments():
    """main given a string says it wants a list."""
    with pytest.raises(TypeError, match=r"main takes a list of arguments, e.g. main\(\['show', 'log.jsonl'\]\), got str"):
        main("show log.jsonl")


def test_help_exits_0(capsys):
    """--help prints the usage of each subcommand and exits 0."""
    assert main(["--help"]) == 0
    assert main(["show", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--path" in out and "--quiet" in out and "--no-progress" in out


# -- tune --summarizer (issue 12 parts 2-3) ---------------------------------------


@pytest.fixture
def long_log(tmp_path, monkeypatch):
    """A session whose questions are long enough to summarize; the summary cache in a temporary folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "long.jsonl"
    s = convlab.Session(log=path)
    for i in range(6):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " + "word " * 300}})
    cfg = tmp_path / "c.toml"
    cfg.write_text('[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = "summarize"\nover_tokens = 100000\n')
    return ["tune", str(path), "--config", str(cfg), "--grid", "strategy[0].over_tokens=600,1000,100000", "--no-progress"]


def test_tune_summarizer_dry_run_then_a_run_then_nothing_to_pay(long_log, tmp_path, capsys):
    """Issue 12 (3): convlab tune --summarizer SPEC [--dry-run] [--no-cache]: the dry run says what the sweep
    needs and calls nothing; the run pays that and caches it; a rerun pays nothing; --no-cache pays again."""
    cache = tmp_path / "xdg" / "convlab" / "summaries"
    assert main([*long_log, "--summarizer", "echo", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("summaries: 5 calls to make (") and "0 in the cache" in out and err == ""
    assert not cache.exists()
    assert main([*long_log, "--summarizer", "echo", "--jobs", "2", "--width", "200", "--rows"]) == 0
    out, err = capsys.readouterr()
    assert "summary_tokens" in out.split("\n\n")[-1].splitlines()[0]  # the rows, after the ranking
    assert err.startswith("convlab: summaries: 5 calls made (") and "0 from the cache" in err
    assert len(list(cache.rglob("*.json"))) == 5
    assert main([*long_log, "--summarizer", "echo", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("summaries: 0 calls to make (0 input tokens, o200k_base), 5 in the cache")
    assert main([*long_log, "--summarizer", "echo"]) == 0
    assert "summaries: 0 calls made (0 input tokens), 5 from the cache" in capsys.readouterr().err
    assert main([*long_log, "--summarizer", "echo", "--no-cache", "--jobs", "1"]) == 0
    assert "summaries: 5 calls made" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_tune_on_a_cache_that_cannot_be_written_keeps_every_summary_and_says_so(kind, long_log, tmp_path, monkeypatch, capsys):
    """Issue 40 (1): "With the summary cache on a read-only folder, or a full disk ... The row reads 0 summaries ...
    stderr says 'summaries: 0 calls made', and the exit status is 0": the rows are those of a writable cache, the
    line counts what was called and what could not be kept, and one warning names the folder and why."""
    from ci_support import tmpfs

    assert main([*long_log, "--summarizer", "echo", "--rows", "--width", "200"]) == 0
    writable = capsys.readouterr().out
    with tmpfs(tmp_path / "disk", "64k", read_only=kind == "read-only", full=kind == "full") as disk:
        monkeypatch.setenv("XDG_CACHE_HOME", str(disk))
        assert main([*long_log, "--summarizer", "echo", "--rows", "--width", "200"]) == 0
    out, err = capsys.readouterr()
    assert out == writable
    folder = disk / "convlab" / "summaries"
    assert "convlab: 1 CacheWarning while tuning:" in err and f"the cache folder {folder} cannot be written (" in err
    assert ("Read-only file system" if kind == "read-only" else "No space left on device") in err
    assert ("convlab: summaries: 5 calls made (" in err and "0 from the cache" in err
            and "; 5 of the calls made could not be kept in the cache" in err)


@pytest.mark.parametrize("extra, message", [
    (["--dry-run"], "--dry-run goes with --summarizer"),
    (["--no-cache"], "--no-cache goes with --summarizer"),
    (["--summarizer", "gpt-4.1-mini"], "--summarizer: provider spec 'gpt-4.1-mini': unknown; use echo, local, local:<model.gguf>, openai:<model> or anthropic:<model>"),
    (["--summarizer", "echo", "--dry-run", "--out", "r.csv"], "--dry-run calls nothing and makes no table"),
    (["--jobs", "0"], "argument --jobs: must be a whole number of at least 1, got '0'"),
])
def test_tune_summarizer_flags_that_cannot_work_are_one_line(long_log, extra, message, capsys):
    assert main([*long_log, *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"convlab: {message}") and err.count("\n") == 1


# -- tune: the trade-off (issue 15 part 3) ------------------------------------------


class Hidden(convlab.EchoLLM):
    """EchoLLM whose usage holds a hidden prompt: what the provider reads beyond the transcript."""

    def complete(self, request):
        reply = super().complete(request)
        reply["usage"]["input_tokens"] += 8000
        return reply


@pytest.fixture
def hidden_log(tmp_path):
    """A session whose provider reads 8,000 hidden tokens at every call, with long questions."""
    path = tmp_path / "hidden.jsonl"
    s = convlab.Session(log=path, llm=Hidden())
    for i in range(12):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " + "word " * 400}})
    cfg = tmp_path / "summarize.toml"
    cfg.write_text('[agent.bot.context]\nwindow = 200000\n[[agent.bot.context.strategy]]\nuse = "summarize"\nover_tokens = 100000\n')
    return path, cfg


def test_tune_ranks_the_configs_and_warns_when_a_threshold_sits_below_the_hidden_prompt(hidden_log, capsys):
    """Issue 15 (3): "over_tokens=40000 fired 67 summaries in 217 calls, because the hidden prompt and tools
    alone are ~44k tokens, and nothing says so": the CLI prints the ranking on stdout and the warning on
    stderr (exit 0: it produced its output)."""
    path, cfg = hidden_log
    argv = ["tune", str(path), "--config", str(cfg), "--grid", "strategy[0].over_tokens=6000,50000", "--no-progress", "--width", "120"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    ranking = out  # the ranking alone: the rows are --rows's
    # each summary call reads the 8,000 hidden tokens too (sent as the engine sends it: issue 37), so summarizing
    # at nearly every call reads more than the log did
    assert ranking.splitlines()[2:] == [
        "rank  config  strategy[0].over_tokens  window  saved  summaries  resets  stale  limits  calls  pareto",
        "   1       1                    50000  200000     0%          0       0      0       0     12  yes",
        "   2       0                     6000  200000   -29%         11       0     11      11     12"]
    assert " ".join(err.split()) == " ".join((
        "convlab: 1 TuneWarning while ranking:\n"
        "  config 0 (window=200000, strategy[0].over_tokens=6000): fires at most model calls: 11 context limits in 12 calls; "
        "its threshold (over_tokens = 6,000) is below the hidden prompt of hidden (8,000 tokens, measured at 12 calls), which the provider reads "
        "at every call: each call after a summary passes it again (11 summaries in 12 calls there)\n").split())
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_tune_the_hidden_prompt_given_replaces_the_logged_one(hidden_log, capsys):
    """--overhead N: every call the log's usage does not answer reads the transcript plus N tokens."""
    path, cfg = hidden_log
    argv = ["tune", str(path), "--config", str(cfg), "--grid", "strategy[0].over_tokens=6000", "--no-progress", "--width", "200"]
    assert main([*argv, "--overhead", "100", "--rows"]) == 0
    low = capsys.readouterr().out.splitlines()[-1]
    assert main([*argv, "--overhead", "20000", "--rows"]) == 0
    high = capsys.readouterr().out.splitlines()[-1]
    read = [int(line.split()[6].replace(",", "")) for line in (low, high)]
    assert read[0] < read[1]


@pytest.mark.parametrize("extra, message", [
    (["--summary-size", "0"], "argument --summary-size: a share of what is summarized (0 < r <= 1: 0.1, or 10%) or a whole number of tokens (2000), got '0'"),
    (["--summary-size", "150%"], "argument --summary-size: a share of what is summarized"),
    (["--summary-size", "big"], "argument --summary-size: a share of what is summarized"),
    (["--overhead", "-5"], "argument --overhead: a whole number of tokens (0 or more), got '-5'"),
    (["--overhead", "4k"], "argument --overhead: a whole number of tokens (0 or more), got '4k'"),
    (["--width", "10"], "argument --width: must be a whole number of at least 20, got '10'"),
])
def test_tune_bad_knobs_are_one_line(hidden_log, extra, message, no_work, capsys):
    path, cfg = hidden_log
    assert main(["tune", str(path), "--config", str(cfg), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"convlab: {message}") and err.count("\n") == 1


def test_tune_a_bigger_simulated_summary_raises_the_tokens_read(hidden_log, capsys):
    """--summary-size RATIO|TOKENS: the stand-in's size decides every later count, so what the sweep reads."""
    path, cfg = hidden_log
    argv = ["tune", str(path), "--config", str(cfg), "--grid", "strategy[0].over_tokens=11000", "--no-progress", "--width", "200",
            "--rows"]
    read = []
    for size in ("5%", "0.5", "3000"):
        assert main([*argv, "--summary-size", size]) == 0
        row = rows_table(capsys.readouterr().out)[1].split()
        read.append(int(row[6].replace(",", "")))
    assert read[0] < read[1] < read[2]


@pytest.mark.realdata
@pytest.mark.parametrize("width", [80, 120])
def test_tune_table_fits_the_width_and_keeps_the_columns_that_matter(width, capsys):
    """Issue 15 (3): "the terminal table keeps the columns that matter (tokens read, summaries, resets, stale
    replies, estimate error) plus the source file", fitted to the width: no line wider, ids and files told apart."""
    real = require()
    argv = ["tune", str(real / "claude_code"), "--grid", "window=64000,128000", "--no-progress", "--width", str(width), "--rows"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert max(map(cells, lines)) <= width
    table = rows_table(out)
    header = table[0].split()
    wanted = ["conv", "source", "cfg", "window", "calls", "read", "saved", "summ", "resets", "stale", "err95"]
    assert header == wanted
    rows = [line.split() for line in table[1:]]
    assert len(rows) == 12
    ids, files = [r[0] for r in rows], [r[1] for r in rows]
    assert len(set(ids)) == len(set(files)) == 6  # six conversations, each its id and its file, told apart
    assert all("…" in i for i in ids) and any(f.endswith(".jsonl.gz") for f in files)
    assert any(f.endswith("-aac57f5.jsonl") or f.endswith("c57f5.jsonl") for f in files)
    session = [r for r in rows if r[1].endswith(".jsonl.gz")]
    assert [r[2] for r in session] == ["0", "1"] and [r[3] for r in session] == ["64000", "128000"]
    assert [r[wanted.index("summ")] for r in session] == ["12", "1"]
    assert [r[wanted.index("read")] for r in session] == (["9.4M", "14.5M"] if width == 80 else ["9,391,643", "14,526,135"])
    assert [r[wanted.index("stale")] for r in session] == ["193", "30"]
    # the ranking comes first (issue 34); the compaction sub-agent's one call reads the parent session's whole
    # history (140k), which its file does not hold: it is read as the log read it, never refused at a window below
    # it (no config of this replay could have shortened it), so no config is left out for it
    assert lines[0].startswith("configs ranked over 6 conversations: saved = tokens read below")
    ranking = lines[:lines.index("")]
    assert [line.split()[1] for line in ranking if line.split()[0] in ("1", "2")] == ["0", "1"]
    assert "left out" not in out and "failed" not in err
    fork = [r for r in rows if "946d2b" in r[0]]
    assert [r[wanted.index("calls")] for r in fork] == ["1", "1"] and {r[wanted.index("stale")] for r in fork} == {"0"}


@pytest.mark.realdata
def test_tune_warns_on_the_real_session_where_over_tokens_is_below_the_hidden_prompt(tmp_path, capsys):
    """The issue's real case through the CLI: the long Claude Code session, a threshold below its hidden prompt
    (~30.5k fitted; over_tokens=20000 fires at 215 of 217 calls)."""
    real = require()
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    argv = ["tune", str(real / CLAUDE_CODE), "--config", str(cfg), "--grid", "strategy[1].over_tokens=20000,100000",
            "--no-progress", "--width", "100"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert max(map(len, err.splitlines())) <= 100  # --width holds on stderr too (issue 34 (5))
    err = " ".join(err.split())
    assert "its threshold (over_tokens = 20,000) is below the hidden prompt of ae4a77f8-aedd-4bc1-888f-c94edc91af04 " \
           "(30,526 tokens, measured at 217 calls)" in err and "(215 summaries in 217 calls there)" in err
    assert err.count("config ") == 1  # over_tokens=100000 is above it: nothing to say


def test_tune_without_config_sweeps_the_shipped_example(session_log, tmp_path, capsys):
    """Issue 15 (3): "convlab tune runs without --config on a shipped example grid": it says which config and
    grid it sweeps (stderr), and the --help says so too."""
    from convlab.tuning.grid import example_config

    example = example_config()
    assert example.is_file() and example.name == "tune-example.toml"
    png = tmp_path / "sweep.png"
    assert main(["tune", str(session_log), "--no-progress", "--width", "160", "--plot", str(png)]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("convlab: no --config: the example ") and err.rstrip().endswith(
        "tune-example.toml, over its grid window=64000,96000,128000,200000 x strategy[0].idle_secs=600,3600")
    table = out.split("\n\n")[0].splitlines()
    assert table[2].split()[:5] == ["rank", "config", "strategy[0].idle_secs", "window", "saved"]
    # the intro, the header, 8 configs (one conversation: no rows to point at), that nothing fired, the plots
    assert len(table) == 2 + 1 + 8 + 2 + 2
    assert table[-4].startswith("no config fired on these logs: every row is the log as it was (the engine's largest count was")
    assert table[-2:] == [f"wrote {png}", f"wrote {tmp_path / 'sweep-pareto.png'}"]
    assert png.stat().st_size > 5000 and (tmp_path / "sweep-pareto.png").stat().st_size > 5000  # heatmap + trade-off
    # --grid replaces the example's grid
    assert main(["tune", str(session_log), "--no-progress", "--grid", "window=64000", "--rows"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and len(rows_table(out)) == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", "--help"])
    assert "Default: the example data/tune-example.toml, a reset after idle_secs, else a summary past window - 16000, " \
           "over the grid window=64000,96000,128000,200000 x strategy[0].idle_secs=600,3600" in " ".join(capsys.readouterr().out.split())


def test_a_configs_own_grid_table_is_swept_and_checked(session_log, tmp_path, capsys):
    """A config's [convlab.tune.grid] is its sweep when no --grid is given; a bad one names its key."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG + '\n[convlab.tune.grid]\n"strategy[1].over_tokens" = [20, 100000]\n')
    assert main(["tune", str(session_log), "--config", str(cfg), "--no-progress", "--rows"]) == 0
    out, err = capsys.readouterr()
    assert err == f"convlab: {cfg}, over its grid strategy[1].over_tokens=20,100000\n"
    assert len(rows_table(out)) == 3
    cfg.write_text(CONFIG + '\n[convlab.tune.grid]\nwindow = 64000\n')
    assert main(["tune", str(session_log), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err == (f"convlab: {cfg}: convlab.tune.grid.window: must be a non-empty array of values, "
                                       "e.g. [64000, 128000]\n")
    cfg.write_text(CONFIG + '\n[convlab.tune.grid]\n"strategy[5].idle_secs" = [60]\n')
    assert main(["tune", str(session_log), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err == (f"convlab: {cfg}: convlab.tune.grid: agent.bot.context.strategy[5].idle_secs: "
                                       "the base config has 2 strategies, no strategy[5]\n")


def test_the_example_config_is_in_the_wheel_where_the_cli_reads_it():
    """An installed package has no data/ folder: the wheel carries the example beside the code, at the path
    the CLI reads first (importlib.resources); a checkout reads data/ itself."""
    import tomllib

    from convlab.tuning.grid import EXAMPLE as _EXAMPLE

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    included = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert included == {_EXAMPLE: f"convlab/{_EXAMPLE}"}
    assert (Path(__file__).parents[1] / _EXAMPLE).is_file()
    doc = tomllib.loads((Path(__file__).parents[1] / _EXAMPLE).read_text())
    assert convlab.config_grid(doc, doc["convlab"]["tune"]["grid"])  # it loads, and its grid is one the sweep takes


def test_the_trade_off_plot_beside_a_folder_is_an_error_before_any_work(tmp_path, no_work, capsys):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    (tmp_path / "out-pareto.png").mkdir()
    assert main(["tune", "log.jsonl", "--config", str(cfg), "--plot", str(tmp_path / "out.png")]) == 2
    assert capsys.readouterr().err == (f"convlab: --plot {tmp_path}/out.png: the trade-off goes beside it, in "
                                       f"{tmp_path}/out-pareto.png, which is a folder\n")


def test_notes_wrap_to_the_width_and_stay_one_line_into_a_pipe_without_one():
    """What the CLI says on stderr is no wider than --width (issue 34 (5): "stderr notes ignore --width", 145
    characters at --width 80), or the terminal's; into a file or a pipe with no --width each item stays one line
    (grep)."""
    import io

    from convlab.cli.notes import Notes as _Notes

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    long = "configs 0, 1, 2: " + "a warning that says a good deal about what went wrong " * 4
    for err, width in ((Terminal(), 60), (io.StringIO(), 60), (io.StringIO(), None)):
        notes = _Notes(err, quiet=False, width=width)
        notes.say("no --config: the example data/tune-example.toml, over its grid window=64000,96000,128000,200000")
        notes._list([long])
        lines = err.getvalue().splitlines()
        if width:
            assert len(lines) > 3 and max(len(x) for x in lines) <= 60 and lines[1].startswith("  ") and lines[3].startswith("    ")
        else:
            assert len(lines) == 2 and lines[1] == "  " + long


def test_the_command_wraps_its_notes_to_the_terminal_it_writes_to(session_log, monkeypatch):
    """Through ``main`` too (whose streams are wrapped to replace what their encoding cannot write): at a terminal
    of 70 columns the notice of the example config is no wider than 70; into a pipe it stays one line."""
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "70")
    for err, wrapped in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setattr(sys, "stdout", io.StringIO())
        assert main(["tune", str(session_log), "--no-progress"]) == 0
        said = [line for line in err.getvalue().splitlines() if line]
        assert said and said[0].startswith("convlab: no --config: the example")
        assert (max(map(len, said)) <= 70) == wrapped and (len(said) > 1) == wrapped


def test_the_count_plot_with_one_grid_key_is_drawn_under_the_config_ranked_first(session_log, tmp_path, monkeypatch):
    """With fewer than two grid keys --plot draws the count per call; the config it draws is one the sweep ran
    (the ranking's first), not the base config a grid over window never runs."""
    from convlab.tuning import plots

    drawn = []
    original = plots.count_per_call
    monkeypatch.setattr(plots, "count_per_call", lambda r, **kw: drawn.append((r, kw)) or original(r, **kw))
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    assert main(["tune", str(session_log), "--config", str(cfg), "--grid", "window=20000,148431",
                 "--plot", str(tmp_path / "c.png"), "--no-progress"]) == 0
    (replayed, kw), = drawn
    assert replayed.session.config.window in (20000, 148431) and "ranked first" in kw["title"]
    assert f"window={replayed.session.config.window}" in kw["title"]


# -- tune in dollars, and the peers' presets (issue 22) ---------------------------------------------------------


@pytest.mark.parametrize("extra, message", [
    (["--model", "claude-sonet-4-5"], "convlab: --model: genai-prices knows no model 'claude-sonet-4-5'; close matches: "
                                      "anthropic:claude-sonnet-4-5"),
    (["--cache-ttl", "2h"], "convlab: --cache-ttl '2h': 5m, 1h or a number of seconds\n"),
    (["--prompt-cache-ttl", "2h"], "convlab: --prompt-cache-ttl '2h': 5m, 1h or a number of seconds\n"),  # issue 36's name
    (["--no-summary-cache"], "convlab: --no-summary-cache goes with --summarizer"),
    (["--preset", "cursor"], "convlab: --preset: presets: unknown preset 'cursor' (known: claude-code, codex, gemini-cli, pi, "
                             "anthropic-compaction,"),
    (["--preset", "all", "--grid", "window=64000,128000"], "convlab: --preset compares whole configs: leave out --grid"),
])
def test_model_ttl_and_preset_mistakes_are_one_line_before_any_work(extra, message, session_log, no_work, capsys):
    assert main(["tune", str(session_log), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


@pytest.mark.realdata
def test_tune_in_dollars_fits_80_columns_on_the_long_real_session(capsys):
    """With --model the rows gain usd and cached: at --width 80 on the 657-message Claude Code session the
    cached share and the count's error give way (they ran 89 wide), the dollars stay."""
    real = require()
    path = real / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
    assert main(["tune", str(path), "--model", "claude-sonnet-4-5", "--no-progress", "--width", "80", "--rows"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(cells(line) for line in lines) <= 80, max(lines, key=cells)
    assert rows_table(out)[0].split() == ["conv", "source", "cfg", "idle_secs", "window", "read", "saved", "usd", "summ",
                                          "resets", "stale"]


@pytest.mark.realdata
def test_tune_in_dollars_with_the_presets_on_a_real_session(capsys):
    """convlab tune log --model M --preset all: a row per (conversation, preset) with its dollars and cached share,
    and the presets ranked by dollars; the figures are the library's."""
    real = require()
    path = real / "claude_code" / "subagent.jsonl"
    assert main(["tune", str(path), "--model", "claude-sonnet-4-5", "--preset", "agents", "--no-progress", "--width", "150",
                 "--rows"]) == 0
    out = capsys.readouterr().out
    lines = rows_table(out)
    assert lines[0].split() == ["conv", "source", "cfg", "preset", "window", "calls", "read", "saved", "usd", "cached",
                                "summ", "resets", "stale", "err95"]
    assert [line.split()[3] for line in lines[1:5]] == ["claude-code", "codex", "gemini-cli", "pi"]
    assert "ranked by dollars" in " ".join(out.split())
    df = convlab.tune(convlab.read(path), convlab.presets("agents"), model="claude-sonnet-4-5", progress=False)
    ranked = convlab.rank(df, by="usd")
    assert list(df["preset"]) == ["claude-code", "codex", "gemini-cli", "pi"]
    assert f"${df['usd'].iloc[0]:.4f}" in out and (df["usd"] > 0).all() and (df["cached_share"] > 0.5).all()
    assert ranked.attrs["by"] == "usd" and list(ranked.columns).count("saved_usd") == 1


@pytest.mark.realdata
def test_tune_tells_files_and_conversations_apart_on_real_logs(capsys):
    """Issue 34 (2): "two *.owi.json files both print as ….owi.json; Claude.ai conversations as #0": the ending
    every file shares is left out, so a source cut down to its end still tells files apart, and a conversation the
    file numbers only (#0) is named after its file."""
    real = require()
    files = [real / "chatgpt" / "chatgpt-photosynthesis.owi.json", real / "openwebui" / "webui-goldwater.owi.json"]
    assert main(["tune", *map(str, files), "--grid", "window=20000", "--rows", "--width", "60", "-q"]) == 0
    rows = [line.split() for line in rows_table(capsys.readouterr().out)[1:]]
    assert len(rows) == 2 and len({r[0] for r in rows}) == 2 and len({r[1] for r in rows}) == 2
    assert not any(r[1].endswith(".owi.json") for r in rows) and rows[1][1].endswith("oldwater")
    assert rows[1][0].endswith("#0") and rows[1][0].startswith("webui")


#: What a server says when a request is longer than its model's context (OpenAI's error; llama.cpp's server says the
#: same): a refusal as too long (``ProviderError`` kind ``too_long``), not a failure.
TOO_LONG = {"error": {"code": "context_length_exceeded", "type": "invalid_request_error",
                      "message": "This model's maximum context length is 8192 tokens."}}


class _Refusing:
    """A real OpenAI-compatible server on loopback that refuses every chat completion the way llama.cpp's server
    refused Anthropic-shaped parts (HTTP 400 invalid_request_error), or with ``error`` (``TOO_LONG``: as too long),
    counting the requests."""

    def __init__(self, error: dict | None = None) -> None:
        import http.server
        import threading

        calls = self.calls = []
        said = error or {"error": {"code": 400, "type": "invalid_request_error", "message": "unsupported content[].type"}}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                calls.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                body = json.dumps(said).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def test_a_sweep_whose_every_summary_call_failed_says_so_at_the_top_and_exits_3(long_log, monkeypatch, capsys):
    """Issue 34 (4): "The command exits 0 with 0 summaries and failed turns": the failed summary calls are counted
    at the top of the output (whatever -q says), and a run in which every one failed exits 3."""
    server = _Refusing()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
        code = main([*long_log, "--summarizer", "openai:gpt-4.1-mini", "--no-cache", "-q", "--width", "100"])
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert code == 3 and server.calls, (code, err)
    assert out.startswith("summaries: ") and "failed (" in out.splitlines()[0] and "unsupported content[].type" in " ".join(out.split())
    assert err.startswith("convlab: every summary call failed (") and "no row holds a summary the summarizer wrote" in err
    assert "configs ranked over 1 conversation" in out  # the table is still there, after what it rests on


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_a_sweep_whose_every_summary_was_refused_as_too_long_says_so_at_the_top_and_exits_3(quiet, long_log,
                                                                                             monkeypatch, capsys):
    """The audit of issue 34: with --summarizer local (an 8k context) every summary call was refused as too long, and
    the run exited 0 with nothing on stdout to say so (only a stderr note, which -q hides), its config ranked first.
    A refusal as too long is a summary that failed, counted as a provider's error is: at the top of the output,
    whatever -q says, and exit 3 when no summary was made."""
    server = _Refusing(TOO_LONG)
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
        monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
        code = main([*long_log, "--summarizer", "openai:gpt-4.1-mini", "--no-cache", "--width", "100", *quiet])
    finally:
        server.close()
    out, err = capsys.readouterr()
    n = len(server.calls)  # each a distinct request: the engine shortens a refused summary and asks again
    assert code == 3 and n >= 3, (code, err)
    top = " ".join(out.split("\n\n", 1)[0].split())
    assert top == (f"summaries: of {n} summary calls, {n} were refused as too long for the summarizer (openai "
                   f"gpt-4.1-mini: HTTP 400 context_length_exceeded: This model's maximum context length is 8192 tokens; "
                   f"the engine shortened each summary, at most three times); 0 answered, made or from the cache. Where "
                   f"a summary was refused the engine ran the held call as it was (docs/protocol.md, 5.3), so those rows "
                   f"hold no summary there")
    assert "configs ranked over 1 conversation" in out  # the table is still there, after what it rests on
    last = err.splitlines()[-1]
    assert last.startswith(f"convlab: every summary call was refused as too long ({n} calls): no row holds a summary "
                           "the summarizer wrote; summaries: of ")
    assert ("refused as too long for the summarizer (the engine shortened each" in " ".join(err.split())) != bool(quiet)


@pytest.mark.parametrize("argv, said", [
    (["tune", "x.jsonl", "--widht", "80"], "unrecognized arguments: --widht 80 (did you mean --width?)"),
    (["show", "x.jsonl", "--pathh"], "unrecognized arguments: --pathh (did you mean --path?)"),
    (["search", "x.jsonl", "--trails", "5", "--sede", "1"],
     "unrecognized arguments: --trails 5 --sede 1 (--trails: did you mean --trials?; --sede: did you mean --seed?)"),
    (["tune", "x.jsonl", "--zzz"], "unrecognized arguments: --zzz"),
])
def test_a_misspelled_flag_is_one_line_naming_the_close_one(argv, said, capsys):
    """Issue 34 (5): "A misspelled flag (--widht 80) gets 'unrecognized arguments' with no suggestion"."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"convlab: {said}\n"


@pytest.mark.parametrize("command", ["show", "tune", "search", "serve"])
def test_every_command_describes_itself_in_its_help(command, capsys):
    """Issue 34 (5): "show --help and serve --help have no description"."""
    parser = build_parser()
    description = parser.commands[command].description or ""
    assert len(description) > 200, description  # a paragraph, not just the flags
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    assert " ".join(description.split()[:8]) in " ".join(capsys.readouterr().out.split())


@pytest.mark.realdata
def test_show_says_what_it_counts_where_the_log_counts_rows(capsys):
    """Issue 34 (5): "show reports 466 messages where the shared STATS.json says 657 nodes for the same session":
    both figures, and why they differ, so the two can be reconciled. The audit of issue 34: it said "the log's forks
    between its rows are none here" where STATS.json counts 8 branch points among the rows: it says how many, and
    what they are here (none is a branch: each falls within one reply), on every real Claude Code file."""
    from convlab.conversation import LOG_FORKS

    real = require()
    assert main(["show", str(real / CLAUDE_CODE), "--path", "--width", "100"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    nodes, forks = stats()[CLAUDE_CODE]["message_nodes"], stats()[CLAUDE_CODE]["branch_points"]
    assert "466 messages, 0 branch points" in text and f"read from {nodes:,} message rows of the log" in text
    assert "a reply written over several rows, one per content block, is one message" in text
    assert forks == 8 and (f"and the log's {forks} forks between its rows are 0 branch points here (a tool result "
                           "written under one row of a reply whose next row hangs there too is no fork once the reply "
                           "is one message)") in text
    for name, counted in stats().items():
        if name.startswith("claude_code/"):
            assert [c.metadata[LOG_FORKS] for c in convlab.read(real / name)] == [counted["branch_points"]], name


def test_value_in_dollars_without_a_model_is_refused_before_any_work(session_log, no_work, capsys):
    """Issue 34 (2): "tune --value usd --plot p.png without --model draws a heatmap of zeros and exits 0 (search
    refuses the same mistake)": refused the same way, and --value where no heatmap is drawn is said too."""
    grid = ["--grid", "window=64000,128000", "--grid", "strategy[0].idle_secs=600,3600"]
    assert main(["tune", str(session_log), *grid, "--value", "usd", "--plot", "p.png"]) == 2
    assert capsys.readouterr().err.endswith("convlab: --value usd is in dollars: give --model (e.g. --model "
                                            "claude-sonnet-4-5), or another --value (e.g. tokens_read)\n")
    assert main(["tune", str(session_log), "--grid", "window=64000", "--value", "summaries", "--plot", "p.png"]) == 2
    assert "--value summaries: it chooses what the heatmap shows, which needs --plot and a grid of two keys" in capsys.readouterr().err


def test_presets_without_a_config_say_what_runs_and_at_which_window(session_log, capsys):
    """Issue 34 (2): "--preset all without --config drops the example config with no note on stderr": what runs,
    and at which window, is said; --window sets one for all."""
    assert main(["tune", str(session_log), "--preset", "agents", "--no-progress"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert err == ("convlab: no --config: the presets alone: claude-code, codex, gemini-cli, pi, each at its peer's own "
                   "window (claude-code 200,000, codex 200,000, gemini-cli 1,000,000, pi 200,000; --window N sets one)")
    assert main(["tune", str(session_log), "--preset", "pi,codex", "--window", "128000", "--no-progress"]) == 0
    assert capsys.readouterr().err == "convlab: no --config: the presets alone: pi, codex, each at 128,000 tokens\n"
    assert main(["tune", str(session_log), "--window", "128000"]) == 2
    assert "--window 128000 sets the presets' window: give --preset too" in capsys.readouterr().err


@pytest.mark.realdata
def test_the_readmes_preset_example_shows_a_difference_on_the_real_session(tmp_path, capsys):
    """Issue 34 (2): "at the default window no preset fires on the real session, so the README's suggested command
    prints 4 identical rows": at the README's window they differ, and at the default the output says nothing fired.
    The figures the README prints for them are the ones the command gives (it said 4%, 1% and -5% of the dollars
    saved where the command gave 10%, 7% and 1%)."""
    real = require()
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert "convlab tune logs/ --model claude-sonnet-4-5 --preset agents --window 128000" in readme
    argv = ["tune", str(real / CLAUDE_CODE), "--model", "claude-sonnet-4-5", "--preset", "agents", "--no-progress", "-q"]
    csv = tmp_path / "agents.csv"
    assert main([*argv, "--window", "128000", "--failed", "--out", str(csv)]) == 0  # (Gemini CLI's breaks a turn there)
    capsys.readouterr()
    row = pd.read_csv(csv).set_index("preset")
    assert set(row.index) == {"claude-code", "codex", "gemini-cli", "pi"} and row["usd"].round(2).nunique() == 4
    (baseline,) = set(row["baseline_usd"].round(2))
    cc, cx, pi = (row.loc[p] for p in ("claude-code", "codex", "pi"))
    assert (f"Claude Code's saves {cc.saved:.0%} of the tokens and {cc.usd_saved / cc.baseline_usd:.0%} of the dollars "
            f"(${cc.usd:.2f} against ${baseline:.2f} with no strategy), Codex's {cx.saved:.0%} and "
            f"{cx.usd_saved / cx.baseline_usd:.0%} (${cx.usd:.2f}), pi's {pi.saved:.0%} and "
            f"{pi.usd_saved / pi.baseline_usd:.0%} (${pi.usd:.2f}); Gemini CLI's") in readme
    assert row.loc["gemini-cli", "failed_turns"] > 0 and "a turn fails at 128,000" in readme
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no config fired on these logs: every row is the log as it was (the engine's largest count was" in out


def test_tune_says_how_many_configs_a_long_grid_makes_and_refuses_one_past_the_bound(session_log, capsys):
    """Issue 40 (3): "A 10,000-config grid on a 39 kB log is neither refused nor bounded ... say on stderr how many
    configs a grid makes before a long run starts": past --max-configs (default 1,000) the grid is refused before any
    work, saying how to run it; from 100 configs, the size is said before the sweep."""
    from convlab.cli.tune import MAX_CONFIGS, SAY_CONFIGS

    windows = ",".join(str(20_000 + 100 * i) for i in range(50))
    idle = ",".join(str(60 * (i + 1)) for i in range(30))
    argv = ["tune", str(session_log), "--grid", f"window={windows}", "--grid", f"strategy[0].idle_secs={idle}", "--no-progress"]
    assert MAX_CONFIGS == 1_000 and SAY_CONFIGS == 100
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("convlab: --grid makes 1,500 configs (window: 50 values x strategy[0].idle_secs: 30 values), "
                                 "more than --max-configs 1,000: every conversation is replayed under each config, and the "
                                 "ranking lists them all; sweep fewer values, or give --max-configs 1500 to run them\n")
    assert main([*argv, "--max-configs", "1500", "--width", "100"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("convlab: sweeping 1,500 configs (window: 50 values x strategy[0].idle_secs: 30 values) over 1\n"
                          "  conversation: 1,500 replays\n")
    assert out.count("\n") > 1_500  # the ranking: every config
    small = ["tune", str(session_log), "--grid", "window=20000,30000", "--no-progress"]
    assert main(small) == 0 and "sweeping" not in capsys.readouterr().err  # a short run: nothing more said


def test_tune_in_dollars_says_when_no_cache_rule_applies(session_log, capsys):
    """A newcomer's review: on a Gemini log with --model gemini-..., the header said "with the prompt cache
    predicted" while convlab has no cache rule for it (every call priced as uncached input). It says so."""
    assert main(["tune", str(session_log), "--model", "gemini-2.5-flash", "--no-progress", "--width", "200"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "with no prompt cache (convlab has no cache rule for gemini-2.5-flash: every input token at its full price)" in out
    assert "prompt cache predicted" not in out
    assert main(["tune", str(session_log), "--model", "claude-sonnet-4-5", "--no-progress", "--width", "200"]) == 0
    assert "with the prompt cache predicted" in " ".join(capsys.readouterr().out.split())


@pytest.mark.realdata
def test_rows_and_the_failed_ranking_mark_a_config_that_breaks_turns(capsys):
    """The shared Codex logs at window 30,000: 26 turns fail and 108 logged calls are never made, yet --rows showed
    that config's saved (57% on one log) with no column saying its turns failed. Now --rows has ``failed`` and
    ``lost`` beside ``saved``, and the --failed ranking marks the config FAILS (ranked last, off the front)."""
    from agentdata import require as agents

    folder = agents() / "codex"
    assert main(["tune", str(folder), "--grid", "window=30000,64000", "--rows", "--failed", "--width", "160",
                 "--no-progress"]) == 0
    ranking, rows = capsys.readouterr().out.split("\n\n", 1)
    head, *ranked = [line.split() for line in ranking.splitlines() if line.split()[:1] in (["rank"], ["1"], ["2"])]
    assert head[-1] == "fails" and [r[head.index("window")] for r in ranked] == ["64000", "30000"]
    assert ranked[1][-1] == "FAILS" and ranked[0][-1] != "FAILS" and ranked[1][head.index("failed_turns")] == "26"
    assert "fails = the config makes turns fail" in " ".join(ranking.split())
    head, *table = [line.split() for line in rows.splitlines() if line.strip()]
    assert {"failed", "lost"} <= set(head) and head.index("failed") == head.index("saved") + 1
    [broken] = [r for r in table if r[0].startswith("019c8a59") and r[head.index("window")] == "30000"]
    # (48%, not 57%: each summary call reads the hidden prompt too, as the engine sends it: issue 37)
    assert (broken[head.index("saved")], broken[head.index("failed")], broken[head.index("lost")]) == ("48%", "25", "102")
    assert all(r[head.index("failed")] == "0" for r in table if r[head.index("window")] == "64000")


@pytest.mark.realdata
@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_the_ranking_says_which_configs_it_left_out_and_why_with_or_without_q(quiet, capsys):
    """Issue 34 (1): "The table says how many were left out and why, also under -q". The real tool_heavy.jsonl at
    windows of 24,000 and 128,000, without --failed: the config whose turns fail (24,000) is not ranked, and the
    lines under the table name it, its failed turns and their cause; -q hides notes, never this."""
    real = require()
    assert main(["tune", str(real / "claude_code" / "tool_heavy.jsonl"), "--grid", "window=24000,128000",
                 "--no-progress", "--width", "120", *quiet]) == 0
    out, err = capsys.readouterr()
    ranked = [line.split() for line in out.splitlines() if line.split()[:1] in (["rank"], ["1"], ["2"])]
    head, *rows = ranked
    assert [r[head.index("window")] for r in rows] == ["128000"]  # config 0 (24,000) is not ranked
    said = " ".join(out.split())
    assert said.endswith("left out of the ranking: 1 config (--failed ranks the configs that make turns fail, last) "
                         "config 0 (window=24000): 2 turns failed in d6e0bada-1959-4eec-a9d2-0bfade768d8f (the provider "
                         "refused a call as too long and nothing made room; 4 logged calls never made)")
    assert err == "" if quiet else "TuneWarning" not in err  # said once, in the table's place


@pytest.mark.realdata
@pytest.mark.parametrize("plot", [False, True])
def test_a_sweep_whose_every_config_breaks_turns_has_no_answer_and_nothing_to_plot(plot, tmp_path, capsys):
    """The audit of issue 34: on the real tool_heavy.jsonl at a window of 24,000 (its one config makes turns fail)
    --plot ended "internal error ... IndexError" (exit 1: the count per call of the config ranked first, of none),
    and without --plot the run printed "(no config to rank)" and exited 0. Both now exit 3 ("ran, no answer"),
    saying why; the ranking's lines still say which config was left out, and nothing is drawn."""
    real = require()
    png = tmp_path / "q.png"
    argv = ["tune", str(real / "claude_code" / "tool_heavy.jsonl"), "--grid", "window=24000", "--no-progress",
            "--width", "120", "-q", *(["--plot", str(png)] if plot else [])]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    said = " ".join(out.split())
    assert "(no config to rank: every config swept is left out, below) left out of the ranking: 1 config" in said
    assert "config 0 (window=24000): 2 turns failed in d6e0bada-1959-4eec-a9d2-0bfade768d8f" in said
    nothing = f"; nothing to plot, so {png} and its trade-off were not written" if plot else ""
    assert err == (f"convlab: no config to rank: the 1 config swept makes turns fail (the lines under the table say "
                   f"how){nothing}; --failed ranks such a config, last\n")
    assert list(tmp_path.iterdir()) == []  # neither q.png nor q-pareto.png
    if plot:  # --failed: ranked (last, marked), so plotted
        assert main([*argv, "--failed"]) == 0
        assert png.stat().st_size > 5_000 and (tmp_path / "q-pareto.png").exists()


@pytest.mark.realdata
def test_a_share_that_rounds_to_zero_is_0_percent_never_minus_0(capsys):
    """The real pi session under its own preset reads a few tokens more than the log did (its summary call): saved
    is -0.00002, which the ranking printed as "-0%"."""
    from agentdata import require as agents

    from convlab.cli.figures import percent

    assert [percent(v) for v in (-0.00002, -0.004, 0.0, 0.004, -0.006, 0.44)] == ["0%", "0%", "0%", "0%", "-1%", "44%"]
    assert main(["tune", str(agents() / "pi" / "before-compaction.jsonl"), "--preset", "auto", "--no-progress",
                 "--width", "120"]) == 0
    out = capsys.readouterr().out
    [row] = [line.split() for line in out.splitlines() if line.split()[:1] == ["1"]]
    assert next(t for t in row if t.endswith("%")) == "0%" and "-0%" not in out


def test_tune_help_says_the_ranking_comes_first_and_the_rows_only_with_rows(capsys):
    """Issue 34 review: --help said "a table with one row per (conversation, config), then the configs ranked", the
    order before issue 34; tune prints the ranking first, and the per-row table only with --rows."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "It prints the configs ranked first" in text and "then, only with --rows, the table of one row per" in text
    assert "one row per (conversation, config), then the configs ranked" not in text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    assert "the configs ranked, then with --rows one row per (conversation, config)" in " ".join(capsys.readouterr().out.split())


def _suggested(out: str) -> list[tuple[int, int]]:
    """The windows the no-fire hint suggests, as (from, to)."""
    return [(int(a.replace(",", "")), int(b.replace(",", ""))) for a, b in
            re.findall(r"([\d,]+) to ([\d,]+)", " ".join(out.split()))]


@pytest.mark.realdata
def test_the_hint_when_nothing_fires_suggests_only_windows_the_tool_accepts(tmp_path, capsys):
    """Issue 34 review: on the real short Claude Code session (the engine's largest count: 9 tokens) the hint said
    "a window below 16,009", though a window of 16,000 or less is refused. It names the windows that are accepted
    and fire; with presets, each preset's own (Claude Code's refuses a window below 33,001); and on a log where no
    accepted window would fire, it says so."""
    from convlab.context import ContextConfig
    from convlab.tuning.presets import presets

    real = require()
    assert main(["tune", str(real / "claude_code" / "short.jsonl"), "--no-progress", "-q", "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert "largest count was 9 tokens" in out and "16,009" not in out
    assert _suggested(out) == [(16_001, 16_008)]
    for w in (16_001, 16_008):
        assert ContextConfig(window=w).limit < 9  # accepted, and it fires on a count of 9
    assert main(["tune", str(real / CLAUDE_CODE), "--preset", "agents", "--no-progress", "-q", "--width", "120"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    spans = dict(zip(re.findall(r"\(([a-z-]+)\)", out.split("would make it fire")[1]), _suggested(out), strict=True))
    assert set(spans) == {"claude-code", "codex", "gemini-cli", "pi"} and spans["claude-code"][0] == 33_001
    largest = int(re.search(r"largest count was ([\d,]+) tokens", out).group(1).replace(",", ""))
    for name, (low, high) in spans.items():
        assert presets(name, window=low)[0].config.threshold < largest <= presets(name, window=high + 1)[0].config.threshold
        with pytest.raises(convlab.ConfigError):
            presets(name, window=low - 1)  # the least a preset accepts
    tiny = tmp_path / "hi.jsonl"
    convlab.Session(log=tiny).submit({"type": "client.message", "agent_id": "bot",
                                      "message": {"id": "u1", "role": "user", "content": "hi"}})
    assert main(["tune", str(tiny), "--no-progress", "-q", "--width", "200"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no window the engine accepts (more than 16,000) and no over_tokens (at least 1) would fire on these logs" in out
