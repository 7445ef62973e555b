"""convlab.presets: each peer's auto-compaction as a config and a worker, at the numbers its
sources give; they fire in a Session and replay a real Claude Code session."""

from __future__ import annotations

import pandas as pd
import pytest
from realdata import require

import convlab
from convlab.tuning.compact import Compaction
from convlab.tuning.presets import NAMES, Preset


def test_thresholds_at_200k():
    got = {p.name: p.config.strategies[0].over_tokens for p in convlab.presets("all", window=200_000)}
    assert got == {"claude-code": 167_000, "codex": 180_000, "gemini-cli": 100_000, "pi": 183_616,
                   "anthropic-compaction": 150_000, "anthropic-on-demand": 150_000, "anthropic-clear-tool-uses": 100_000,
                   "anthropic-clear-thinking": 1, "openai-compact": 180_000, "openai-compaction": 200_000,
                   "deep-agents": 170_000, "masking": 1, "masking-summary": 150_000, "masking-hybrid": 150_000}
    assert convlab.tuning.presets.claude_code(window=200_000, max_output=8_000).config.strategies[0].over_tokens == 179_000


def test_names_lists_and_all():
    assert [p.name for p in convlab.presets("all")] == list(NAMES)
    assert [p.name for p in convlab.presets(" pi , codex")] == ["pi", "codex"]
    assert [p.name for p in convlab.presets(["gemini-cli"])] == ["gemini-cli"]
    assert convlab.presets("gemini-cli")[0].config.window == 1_000_000  # its usual model's window
    p = convlab.presets("pi", window=128_000)[0]
    assert isinstance(p, Preset) and p.config.window == 128_000 and p.config.strategies[0].use == "summarize"
    assert isinstance(p.worker, Compaction) and repr(p.worker) == "summary_tail(keep_tokens=20000)"


@pytest.mark.parametrize("name, message", [("cursor", "unknown preset 'cursor'"), ("pi,nope", "unknown preset 'nope'"),
                                           ([], "unknown preset"), ("", "unknown preset ''")])
def test_unknown_names(name, message):
    with pytest.raises(convlab.ConfigError, match=message):
        convlab.presets(name)


@pytest.mark.parametrize("window", [16_000, 16_384, -5, 2.5e5, True, "200k"])
def test_bad_windows_name_the_preset(window):
    with pytest.raises(convlab.ConfigError, match=r"^presets\.[a-z-]+\.(window|over_tokens)"):
        convlab.presets("all", window=window)


#: The presets whose compaction writes no summary: it edits the history (clears, masks) where it fires.
EDITS = {"anthropic-clear-tool-uses", "anthropic-clear-thinking", "masking"}


@pytest.mark.parametrize("name", list(NAMES))
def test_each_preset_fires_and_compacts_in_a_session(name):
    """Each preset fires past its threshold in a live Session of plain chat; those that summarize, summarize
    (the editing ones have no tool result or thinking to clear in plain chat: they fire and leave it as it is)."""
    preset = convlab.presets(name, window=50_000)[0]
    over = min(preset.config.threshold, preset.config.limit)  # the engine's headroom fires first (codex here)
    s = convlab.Session(config=preset.config, worker=preset.worker or "chat")
    for i in range(3 * 50_000 // 2000):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"q{i} " + "word " * 1600}})
    assert all(t["status"] == "completed" for t in s.turns)
    limits = [e for e in s.events if e["type"] == "context.limited"]
    assert limits and all(e["tokens"] > over for e in limits)  # fired only past the peer's threshold
    assert any(m.get("kind") == "summary" for m in s.path()) == (name not in EDITS)  # and summarized, or not


@pytest.mark.realdata
@pytest.mark.parametrize("name", list(NAMES))
def test_each_preset_config_replays_a_real_claude_code_session(name):
    c = convlab.read(require() / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz")[0]
    config = convlab.presets(name, window=60_000)[0].config
    r = convlab.replay(c, config)
    assert r.calls and r.limits and all(x["tokens"] > min(config.threshold, config.limit) for x in r.limits)


# -- issue 35: each preset against its own agent's log ----------------------------------------------------------


def without_compaction(c: convlab.Conversation, summary: str) -> convlab.Conversation:
    """``c`` as if its log had not compacted at ``summary``: the summary and what it kept left out, what followed it
    under the message it replaced. Up to where the agent compacted, the counts are the log's own; so a preset
    replayed on it fires at the first call whose count passes it, where the agent compacted if the preset is true."""
    from convlab.conversation import KEPT, Conversation
    from convlab.tree import Tree, nodes_in_order

    dropped, node = {summary}, summary
    while (kids := c.children(node)) and (c.tree.nodes[kids[0]].get("copied_from")
                                          or (c.tree.nodes[kids[0]].get("metadata") or {}).get(KEPT) == summary):
        node = kids[0]
        dropped.add(node)
    t = Tree()
    for a in nodes_in_order(c.tree):
        if a["id"] not in dropped:
            parent = c.tree.nodes[summary]["replaces"] if a["parent"] in dropped else a["parent"]
            t.add({k: v for k, v in a.items() if k not in ("seq", "parent")}, parent)
    t.head = c.head
    return Conversation(t, id=c.id, format=c.format, metadata=c.metadata)


def _own(name: str) -> convlab.Conversation:
    from agentdata import require as agents

    [c] = convlab.read(agents() / name, progress=False)
    return c


def _summaries(c: convlab.Conversation) -> list[str]:
    from convlab.tree import nodes_in_order

    return [a["id"] for a in nodes_in_order(c.tree) if a["kind"] == "summary"]


@pytest.mark.realdata
def test_the_pi_preset_fires_where_pi_compacted_on_its_own_session():
    """pi compacted automatically before call 304 (tokensBefore 185,014 over pi's 183,616 at claude-opus-4-5's
    200,000): the preset fires at call 303, one call earlier (pi checks only when the agent's run ends; the
    docstring says why). Its first compaction (175,004, under the threshold) was a person's /compact: the preset
    does not fire before it."""
    c = _own("pi/before-compaction.jsonl")
    assert convlab.tuning.presets.window_of(c) == 200_000
    preset = convlab.tuning.presets.for_log(c)
    assert (preset.name, preset.config.strategies[0].over_tokens) == ("pi", 183_616)
    first, second = _summaries(c)
    log = [x["call"] for x in convlab.replay(c).compactions]
    assert log == [174, 304]
    auto = convlab.replay(without_compaction(c, second), preset.config, worker=preset.worker)
    assert auto.limits and abs(auto.limits[0]["call"] - log[1]) <= 2 and auto.limits[0]["call"] == 303
    manual = convlab.replay(without_compaction(c, first), preset.config, worker=preset.worker)
    assert not manual.limits or manual.limits[0]["call"] > log[0]


@pytest.mark.realdata
def test_the_codex_preset_cannot_fire_where_codex_compacted_and_says_by_how_much():
    """Codex compacted before call 185 at about 212,000 tokens, 82% of the 258,400 its log records: the preset at
    that window (232,560, 90%) does not fire there, about 20,000 tokens short (the docstring's figures)."""
    c = _own("codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")
    preset = convlab.tuning.presets.for_log(c)
    assert (preset.name, preset.config.window, preset.config.strategies[0].over_tokens) == ("codex", 258_400, 232_560)
    [summary] = _summaries(c)
    uncompacted = without_compaction(c, summary)
    r = convlab.replay(uncompacted, preset.config, worker=preset.worker)
    assert not any(abs(x["call"] - 185) <= 2 for x in r.limits)
    at = convlab.replay(uncompacted).calls[184]["count"]  # what the engine counts at call 185 had Codex not compacted
    assert 209_000 < at < 212_200 and 20_000 < 232_560 - at < 24_000
    assert convlab.tuning.presets.codex.__doc__ and "20,400 tokens later" in convlab.tuning.presets.codex.__doc__


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["gemini_cli/gemini.jsonl", "gemini_cli/test_conversation_gemini.json"])
def test_the_gemini_cli_preset_does_not_fire_where_the_cli_did_not_compress(name):
    c = _own(name)
    preset = convlab.tuning.presets.for_log(c)
    assert preset.name == "gemini-cli" and preset.config.window == 1_000_000  # gemini-3-flash-preview's, or the default
    assert not convlab.replay(c, preset.config, worker=preset.worker).limits


@pytest.mark.realdata
def test_the_claude_code_preset_does_not_fire_before_a_manual_compaction():
    """The one compaction the real Claude Code sessions record was a person's /compact at 142,431 tokens."""
    c = convlab.read(require() / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz", progress=False)[0]
    [summary] = _summaries(c)
    assert c.tree.nodes[summary]["metadata"]["compact"] == {"trigger": "manual", "preTokens": 142431}
    preset = convlab.tuning.presets.for_log(c)
    assert (preset.name, preset.config.window) == ("claude-code", 200_000)
    at = convlab.replay(c).compactions[0]["call"]
    r = convlab.replay(without_compaction(c, summary), preset.config, worker=preset.worker)
    assert not r.limits or r.limits[0]["call"] > at


@pytest.mark.realdata
def test_tune_with_auto_picks_the_preset_of_the_agent_that_wrote_each_log():
    logs = [_own("codex/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"),
            _own("gemini_cli/gemini.jsonl"), _own("pi/large-session.jsonl")]
    df = convlab.tune(logs, ["[agent.bot.context]", convlab.tuning.presets.AUTO], progress=False, jobs=1)
    auto = df[df["config"] == 1].set_index("conversation")
    assert auto.loc[logs[0].id, ["preset", "window"]].tolist() == ["auto: codex", 258_400]
    assert auto.loc[logs[1].id, ["preset", "window"]].tolist() == ["auto: gemini-cli", 1_000_000]
    assert auto.loc[logs[2].id, ["preset", "window"]].tolist() == ["auto: pi", 200_000]  # its last model: claude-sonnet-4-5
    assert set(df["conversation"]) == {c.id for c in logs} and len(df) == 6
    # over the corpus no one preset or window ran: the ranking's label says so, and names no one log's window
    ranked = convlab.rank(df).set_index("config")
    assert ranked.loc[1, "preset"] == "auto: each log its agent's preset" and pd.isna(ranked.loc[1, "window"])
    with pytest.raises(convlab.ConfigError, match=r"presets\.auto: conversation '96ef38f0.*' was written by copilot_cli, "
                                                  r"an agent no preset models \(the presets model claude_code, codex"):
        convlab.tune([_own("copilot_cli/copilot.jsonl")], convlab.tuning.presets.AUTO, progress=False)
    with pytest.raises(convlab.ConfigError, match="'auto' is the preset of the agent that wrote each log"):
        convlab.presets("auto")


@pytest.mark.realdata
def test_convlab_tune_preset_auto_on_a_codex_session(capsys):
    from agentdata import require as agents

    from convlab.cli import main

    path = agents() / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
    assert main(["tune", str(path), "--preset", "auto", "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert " auto: codex " in out and "258400" in out  # one log: its preset and window, truly
    assert main(["tune", str(agents() / "copilot_cli" / "copilot.jsonl"), "--preset", "auto"]) == 2
    err = capsys.readouterr().err
    assert "--preset auto: no conversation here has a preset for its agent" in err and "written by copilot_cli" in err
    assert "e.g. --preset claude-code,codex" in err


@pytest.mark.realdata
def test_convlab_tune_preset_auto_on_the_agents_folder_labels_the_ranking_truly_and_leaves_copilot_out(capsys):
    """The shared agents' folder: Codex logs at 200,000 and 258,400, Gemini CLI at 1,000,000, pi at 200,000, and two
    Copilot CLI logs no preset models. The ranking's row was labelled "codex window 200000", one group's preset, and
    the Copilot logs refused the whole folder: now the row says each log ran its agent's preset, the rows say which,
    and the Copilot logs are left out, each named on stderr with why."""
    from agentdata import require as agents

    from convlab.cli import main

    assert main(["tune", str(agents()), "--preset", "auto", "--width", "200", "--rows"]) == 0
    captured = capsys.readouterr()
    ranking, rows = captured.out.split("\n\n", 1)
    [row] = [line for line in ranking.splitlines() if line.strip().startswith("1 ")]
    assert "auto: each log its agent's preset" in row and "codex" not in row and "200000" not in row
    assert "ranked over 7 conversations (2 more conversations left out of --preset auto: no preset models their agents)" in \
        " ".join(ranking.split())  # in the output too, which -q leaves
    assert all(f"auto: {name}" in rows for name in ("codex", "gemini-cli", "pi")) and "258400" in rows
    err = " ".join(captured.err.split())
    assert "--preset auto: left out 2 conversations whose agent no preset models" in err and "these: copilot_cli 2)" in err
    assert "96ef38f0-9d09-45c3-8124-6448c36090ed (copilot_cli, " in err and "copilot_cli/copilot.jsonl" in err
    assert "no agent a preset is of" not in err
