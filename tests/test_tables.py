"""convlab.tables: tables fitted to a width, giving way step by step and keeping the columns that matter."""

from __future__ import annotations

import pytest

from convlab.tables import STEPS, Column, compact, fit_table, plain, shorten
from convlab.text import cells

IDS = ["ae4a77f8-aedd-4bc1-888f-c94edc91af04", "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-aac57f5", "55604662-cf2a-4331"]
FILES = ["claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz",
         "claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl", "claude_code/short.jsonl"]


def columns():
    return [
        Column("conversation", IDS, short="conv", number=False, least=9),
        Column("source", FILES, number=False, least=9, keep_end=True),
        Column("config", [0, 1, 2], short="cfg"),
        Column("strategy[0].idle_secs", [600, 3600, 600], short="idle_secs", fmt=str),
        Column("window", [64000, 64000, 64000], fmt=str, optional=2),
        Column("calls", [217, 3, 1], optional=1),
        Column("tokens_read", [16_790_991, 50_496, None], short="read", short_fmt=compact),
        Column("summaries", [13, 0, 0], short="summ"),
        Column("err_usage_p95", [25_973.0, None, 13_726.0], short="err95", short_fmt=compact, fmt=lambda v: f"{v:,.0f}"),
    ]


@pytest.mark.parametrize("width", [50, 60, 80, 100, 120, 200])
def test_no_line_is_wider_than_asked_and_the_columns_that_matter_stay(width):
    lines = fit_table(columns(), width)
    assert len(lines) == 4
    assert max(map(cells, lines)) <= width
    header = lines[0].split()
    for full, short in [("conversation", "conv"), ("source", "source"), ("config", "cfg"), ("tokens_read", "read"),
                        ("summaries", "summ"), ("err_usage_p95", "err95")]:
        assert full in header or short in header, (width, header)
    ids = [line.split()[0] for line in lines[1:]]
    assert len(set(ids)) == 3  # still told apart


def test_it_gives_way_in_order_headers_then_spacing_then_text_numbers_and_optional_columns():
    wide = fit_table(columns(), 250)
    assert wide[0].split() == ["conversation", "source", "config", "strategy[0].idle_secs", "window", "calls", "tokens_read",
                               "summaries", "err_usage_p95"]
    assert wide[1].split()[:2] == IDS[:1] + FILES[:1] and wide[3].split()[-1] == "13,726"
    assert wide[3].split()[-3] == "-"  # NA
    # ids and files stay whole while short headers and one space between columns make room
    whole = fit_table(columns(), 200)
    assert whole[0].split()[:3] == ["conv", "source", "cfg"] and [line.split()[0] for line in whole[1:]] == IDS
    assert [line.split()[1] for line in whole[1:]] == FILES and "  " in whole[0]
    tight = fit_table(columns(), 190)
    assert [line.split()[0] for line in tight[1:]] == IDS and tight[1].split()[6] == "16,790,991"
    at_80 = fit_table(columns(), 80)
    assert at_80[0].split() == ["conv", "source", "cfg", "idle_secs", "window", "calls", "read", "summ", "err95"]
    assert at_80[1].split()[-3:] == ["16.8M", "13", "26.0k"]
    at_60, at_56 = fit_table(columns(), 60), fit_table(columns(), 56)
    assert "calls" not in at_60[0] and "window" in at_60[0]  # dropped: 1 first, then 2
    assert "calls" not in at_56[0] and "window" not in at_56[0] and "cfg" in at_56[0]
    # a file keeps its end, an id both ends
    cut = at_60[2].split()
    assert cut[0].startswith("ae4a") and cut[0].endswith("c57f5") and cut[1].startswith("…") and cut[1].endswith("7f5.jsonl")


def test_past_the_last_step_the_lines_run_wider_but_keep_every_column_that_matters():
    lines = fit_table(columns(), 20)
    assert lines[0].split() == ["conv", "source", "cfg", "idle_secs", "read", "summ", "err95"]
    assert min(map(cells, lines)) > 20
    assert STEPS[-1]["drop"] == 2 and all(c.optional <= 2 for c in columns())  # every optional column gone by then


def test_wide_characters_count_as_two_cells():
    lines = fit_table([Column("title", ["日本語のタイトルです", "abc"], number=False, least=6), Column("n", [1, 2])], 12)
    assert max(map(cells, lines)) <= 12
    assert lines[1] == "日本…です  1"


def test_helpers():
    assert shorten("abcdef", 6) == "abcdef" and shorten("abcdefgh", 5) == "ab…gh" and shorten("abcdefgh", 5, keep_end=True) == "…efgh"
    assert [compact(v) for v in (0, 999, 1000, 99_949, 100_000, 2_500_000)] == ["0", "999", "1.0k", "99.9k", "100k", "2.5M"]
    assert plain(None) is None and plain(float("nan")) is None and plain(3.5) == 3.5
