"""convlab.tuning.grid: a base config spread over a grid, a config's own [convlab.tune.grid], and the shipped example
that tune sweeps when given no config (issue 34: Python's tune has the command line's default)."""

from __future__ import annotations

import pandas as pd
import pytest

import convlab
from convlab.tuning.grid import EXAMPLE, config_grid, example_config, grid_table
from convlab.tuning.ranking import grid_keys
from convlab.tuning.sweep import tune

from test_tuning import AXES, BASE, CONVS


def test_grid_is_the_product_of_the_axes_on_the_base():
    docs = config_grid(BASE, AXES)
    got = [(d["agent"]["bot"]["context"]["strategy"][1]["over_tokens"], d["agent"]["bot"]["context"]["strategy"][0]["idle_secs"]) for d in docs]
    assert got == [(3000, 400), (3000, 3600), (5000, 400), (5000, 3600), (100000, 400), (100000, 3600)]
    assert "over_tokens" not in config_grid(BASE, {"strategy[1].over_tokens": [None]})[0]["agent"]["bot"]["context"]["strategy"][1]
    with pytest.raises(convlab.ConfigError, match=r"strategy\[2\]"):
        config_grid(BASE, {"strategy[2].idle_secs": [1]})
    with pytest.raises(convlab.ConfigError, match="idle_secs"):
        config_grid(BASE, {"strategy[0].idle_secs": [-1]})
    assert convlab.config_grid is config_grid


def test_a_configs_own_grid_table_is_read_and_checked():
    assert grid_table({}) == {} and grid_table({"convlab": {"tune": {}}}) == {}
    assert grid_table({"convlab": {"tune": {"grid": {"window": [1, 2]}}}}) == {"window": [1, 2]}
    with pytest.raises(convlab.ConfigError, match=r"convlab\.tune\.grid: must be a table"):
        grid_table({"convlab": {"tune": {"grid": [1, 2]}}})
    with pytest.raises(convlab.ConfigError, match=r"convlab\.tune\.grid\.window: must be a non-empty array"):
        grid_table({"convlab": {"tune": {"grid": {"window": []}}}})


def test_tune_with_no_config_sweeps_the_shipped_example_over_its_grid():
    """Issue 34 (2): "convlab.tune(convs) is a TypeError; the command line uses the shipped example config and its
    grid": the function has the same default, and one config with a grid table is swept over it."""
    assert example_config().name == "tune-example.toml" and str(example_config()).endswith(EXAMPLE)
    df = tune(CONVS[:1], progress=False, jobs=1)
    doc = convlab.load_config(example_config())
    assert doc["bot"].strategies[0].use == "reset"
    grid = grid_table(__import__("tomllib").loads(example_config().read_text()))
    assert list(grid) == ["window", "strategy[0].idle_secs"] and grid_keys(df) == ["strategy[0].idle_secs"]
    assert sorted(set(df["window"])) == sorted(grid["window"]) and sorted(set(df["strategy[0].idle_secs"])) == sorted(grid["strategy[0].idle_secs"])
    assert len(df) == len(grid["window"]) * len(grid["strategy[0].idle_secs"])
    same = tune(CONVS[:1], example_config(), progress=False, jobs=1)  # the file given: its grid too
    pd.testing.assert_frame_equal(same, df)
    one = tune(CONVS[:1], example_config(), grid={"window": [64000]}, progress=False, jobs=1)  # grid= wins
    assert len(one) == 1
    assert convlab.tune_cost(CONVS[:1], summarizer=convlab.EchoLLM(), summary_cache=False, progress=False).calls >= 0
