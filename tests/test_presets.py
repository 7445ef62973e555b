"""convlab.presets: each peer's auto-compaction as a config and a worker, at the numbers its
sources give; they fire in a Session and replay a real Claude Code session."""

from __future__ import annotations

import pytest
from realdata import require

import convlab
from convlab.compact import Compaction
from convlab.presets import NAMES, Preset


def test_thresholds_at_200k():
    got = {p.name: p.config.strategies[0].over_tokens for p in convlab.presets("all", window=200_000)}
    assert got == {"claude-code": 167_000, "codex": 180_000, "gemini-cli": 100_000, "pi": 183_616}
    assert convlab.presets.claude_code(window=200_000, max_output=8_000).config.strategies[0].over_tokens == 179_000


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
    with pytest.raises(convlab.ConfigError, match=r"^presets\.(claude-code|codex|gemini-cli|pi)\.(window|over_tokens)"):
        convlab.presets("all", window=window)


@pytest.mark.parametrize("name", list(NAMES))
def test_each_preset_fires_and_compacts_in_a_session(name):
    preset = convlab.presets(name, window=40_000)[0]
    over = min(preset.config.strategies[0].over_tokens, preset.config.limit)  # the engine's headroom fires first (codex here)
    s = convlab.Session(config=preset.config, worker=preset.worker or "chat")
    for i in range(3 * 40_000 // 2000):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"q{i} " + "word " * 1600}})
    limits = [e for e in s.events if e["type"] == "context.limited"]
    assert limits and all(e["tokens"] > over for e in limits)  # fired only past the peer's threshold
    assert any(m.get("kind") == "summary" for m in s.path())  # and summarized


@pytest.mark.realdata
@pytest.mark.parametrize("name", list(NAMES))
def test_each_preset_config_replays_a_real_claude_code_session(name):
    c = convlab.read(require() / "claude_code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz")[0]
    config = convlab.presets(name, window=60_000)[0].config
    r = convlab.replay(c, config)
    assert r.calls and r.limits and all(x["tokens"] > min(config.strategies[0].over_tokens, config.limit) for x in r.limits)
