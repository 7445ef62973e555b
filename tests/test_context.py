"""The context config objects (PROTOCOL.md 5.2): checked where they are built, one set of checks for a
file and for objects built by hand; a config without the chosen agent's table is an error."""

from __future__ import annotations

import pickle

import pytest

import convlab
from convlab import ConfigError, ContextConfig, Strategy, load_config

# (keyword arguments of Strategy, the same mistake as a [[strategy]] table's TOML, the key at fault)
STRATEGY_MISTAKES = [
    ({"use": "reset", "idle_secs": -5}, "use = 'reset'\nidle_secs = -5", "idle_secs"),
    ({"use": "reset", "idle_secs": 0}, "use = 'reset'\nidle_secs = 0", "idle_secs"),
    ({"use": "reset", "idle_secs": "1h"}, "use = 'reset'\nidle_secs = '1h'", "idle_secs"),
    ({"use": "reset", "idle_secs": True}, "use = 'reset'\nidle_secs = true", "idle_secs"),
    ({"use": "summarize", "over_tokens": 0}, "use = 'summarize'\nover_tokens = 0", "over_tokens"),
    ({"use": "summarize", "over_tokens": 1.5}, "use = 'summarize'\nover_tokens = 1.5", "over_tokens"),
    ({"use": "summarize", "prompt": ""}, "use = 'summarize'\nprompt = ''", "prompt"),
    ({"use": "summarize", "llm": 7}, "use = 'summarize'\nllm = 7", "llm"),
    ({"use": "summarize", "model": ["m"]}, "use = 'summarize'\nmodel = ['m']", "model"),
    ({"use": "reset", "prompt": "say less"}, "use = 'reset'\nprompt = 'say less'", "prompt"),
    ({"use": "compact"}, "use = 'compact'", "use"),
    ({"use": ["reset"]}, "use = ['reset']", "use"),
    ({"use": None}, "idle_secs = 60", "use"),
]


@pytest.mark.parametrize("kwargs, toml, key", STRATEGY_MISTAKES)
def test_a_strategy_built_by_hand_is_checked_like_the_file(kwargs, toml, key):
    """5.2: "An unknown key, a value of the wrong type, a number that is not positive ... is a config error
    naming the key." Issue 15: every config object validates where it is built, with the same message as
    the TOML loader."""
    with pytest.raises(ConfigError) as by_hand:
        Strategy(**kwargs)
    assert by_hand.value.key == key
    with pytest.raises(ConfigError) as from_file:
        load_config(f"[agent.bot.context]\n[[agent.bot.context.strategy]]\n{toml}\n", agent="bot")
    assert from_file.value.key == f"agent.bot.context.strategy[0].{key}"
    assert str(from_file.value) == f"agent.bot.context.strategy[0].{str(by_hand.value)}"


@pytest.mark.parametrize(
    "kwargs, toml, key",
    [
        ({"window": -5}, "window = -5", "window"),
        ({"window": 16000}, "window = 16000", "window"),
        ({"window": 2.5e5}, "window = 250000.0", "window"),
        ({"window": "200k"}, "window = '200k'", "window"),
    ],
)
def test_a_context_config_built_by_hand_is_checked_like_the_file(kwargs, toml, key):
    """5.2: "a window of 16000 or less (use over_tokens for small models) is a config error naming the key";
    ContextConfig(window=-5) raises it too, with the same message."""
    with pytest.raises(ConfigError) as by_hand:
        ContextConfig(**kwargs)
    assert by_hand.value.key == key
    with pytest.raises(ConfigError) as from_file:
        load_config(f"[agent.bot.context]\n{toml}\n", agent="bot")
    assert str(from_file.value) == f"agent.bot.context.{str(by_hand.value)}"


def test_context_config_strategies_must_be_strategies():
    """A ContextConfig holds Strategy objects (a list is kept as a tuple); anything else names the entry."""
    cfg = ContextConfig(window=200000, strategies=[Strategy("reset", idle_secs=60), Strategy("summarize")])
    assert cfg.strategies == (Strategy("reset", idle_secs=60), Strategy("summarize"))
    with pytest.raises(ConfigError, match=r"^strategies\[1\]: must be a Strategy, got dict$"):
        ContextConfig(strategies=[Strategy("reset", idle_secs=60), {"use": "summarize"}])
    with pytest.raises(ConfigError, match=r"^strategies: must be a tuple of Strategy, got Strategy$"):
        ContextConfig(strategies=Strategy("summarize"))


def test_a_sound_config_built_by_hand_equals_the_file():
    """One set of checks and one shape: the file and the objects give equal configs."""
    text = """
[agent.bot.context]
window = 200000
[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 150000
model = "small"
"""
    by_hand = ContextConfig(200000, (Strategy("reset", idle_secs=3600), Strategy("summarize", over_tokens=150000, model="small")))
    assert load_config(text, agent="bot") == {"bot": by_hand}
    assert convlab.Session(config=by_hand).config == convlab.Session(config=text).config == by_hand


@pytest.mark.parametrize(
    "text, found",
    [
        ("[agent.bot.contxt]\nwindow = 200000\n", "(it has [agent.bot.contxt])"),
        ("[agent.bot.contxt]\n[[agent.bot.contxt.strategy]]\nuse = 'reset'\n[server]\nport = 1\n",
         "(it has [agent.bot.contxt], [server])"),
        ("[agent.other.context]\nwindow = 200000\n", "(it has [agent.other.context])"),
        ("[agent.bot]\nname = 'x'\n", "(it has [agent.bot])"),
        ("window = 200000\n", "(it has no tables, only the keys window)"),
    ],
)
def test_a_config_without_the_agents_table_names_the_tables_it_has(text, found):
    """Issue 15: a config file with no [agent.<id>.context] table for the chosen agent is a ConfigError that
    names the tables it did find (a misspelled table must not run with no strategy)."""
    with pytest.raises(ConfigError) as info:
        load_config(text, agent="bot")
    assert info.value.key == "agent.bot.context"
    assert str(info.value) == f"agent.bot.context: missing: the config has no [agent.bot.context] table {found}"
    with pytest.raises(ConfigError, match=r"^agent\.bot\.context: missing"):
        convlab.Session(config=text)


def test_other_tables_stay_allowed_beside_the_agents_table():
    """5.2: "Other tables of the file (other agents, other sections) are not this config's business and are
    left alone": only the chosen agent's table must be there and sound."""
    text = "[server]\nport = 'x'\n[agent.other.context]\nwindw = 1\n[agent.bot.context]\nwindow = 200000\n"
    assert load_config(text, agent="bot")["bot"].window == 200000


@pytest.mark.parametrize("empty", ["", "   \n", "# a config, to fill in later\n", {}])
def test_an_empty_config_means_no_window_and_no_strategy(empty):
    """Decided for issue 15 (load_config's docstring): an empty config (no keys at all) means what None
    means, no window and no strategy; it names no table, so nothing in it can be misspelled."""
    assert load_config(empty, agent="bot") == {"bot": ContextConfig()}
    assert convlab.Session(config=empty).config == ContextConfig()


def test_configs_per_agent_without_the_agent_are_an_error():
    """Session(config={agent: ContextConfig}) for another agent is the same missing-table error."""
    configs = load_config("[agent.other.context]\nwindow = 20000\n")
    with pytest.raises(ConfigError, match=r"^agent\.bot\.context: missing: the configs given are for 'other'$"):
        convlab.Session(config=configs)


def test_wrong_kinds_of_argument_say_what_was_expected():
    """Public functions given the wrong kind of argument say what they expected."""
    with pytest.raises(TypeError, match="agent is an agent id"):
        load_config("", agent=5)
    with pytest.raises(ConfigError, match="must be TOML text, a path to a .toml file or a parsed document, got int"):
        load_config(5)


def test_config_errors_survive_pickling():
    """A ConfigError raised in a worker process arrives whole (key and message)."""
    err = pickle.loads(pickle.dumps(ConfigError("agent.bot.context.window", "must be an integer, got 'x'")))
    assert (err.key, err.message, str(err)) == ("agent.bot.context.window", "must be an integer, got 'x'",
                                                "agent.bot.context.window: must be an integer, got 'x'")


def test_a_path_that_is_not_a_toml_file_is_named():
    """A one-line string that looks like a file name but is neither TOML nor a .toml path says so (not a
    TOML parser's message about a missing '=')."""
    with pytest.raises(ConfigError, match=r"^config: 'engine\.conf' is neither TOML text nor a path to a \.toml file$"):
        load_config("engine.conf", agent="bot")
    with pytest.raises(ConfigError, match=r"^config: is not valid TOML"):
        load_config("window = ", agent="bot")


def test_applies_says_what_it_takes():
    """applies takes the parsed config of one agent."""
    from convlab.context import applies

    with pytest.raises(TypeError, match=r"applies takes a ContextConfig \(load_config\(\.\.\.\)\[agent\]\), got dict"):
        applies({"window": 200000}, 10, first_call=True, idle_for=None)


# -- issue 40 (3): a config nested hundreds deep is a ConfigError naming the key, never a RecursionError ----------

DEEP = 500
DEEP_CONFIGS = {
    "agent.bot.context.window": "[agent.bot.context]\nwindow = " + "[" * DEEP + "1" + "]" * DEEP + "\n",
    "agent.bot.context.extra": "[agent.bot.context]\nwindow = 64000\nextra = " + "{a=" * DEEP + "1" + "}" * DEEP + "\n",
    "agent.bot.context.strategy.prompt": "[agent.bot.context]\nwindow = 64000\n[[agent.bot.context.strategy]]\n"
                                         "use = 'summarize'\nprompt = " + "[" * DEEP + "]" * DEEP + "\n",
    "convlab.tune.grid.window": "[agent.bot.context]\nwindow = 64000\n[convlab.tune.grid]\nwindow = " + "[" * DEEP + "]" * DEEP + "\n",
}


@pytest.mark.parametrize("key", DEEP_CONFIGS)
def test_a_config_nested_hundreds_deep_is_a_config_error_naming_the_key(key, tmp_path):
    text = DEEP_CONFIGS[key]
    assert len(text.encode()) < 2600  # a file of a kilobyte or two, as the red team's
    path = tmp_path / "deep.toml"
    path.write_text(text)
    for source in (text, path, str(path)):
        with pytest.raises(ConfigError) as err:
            load_config(source, agent="bot")
        assert err.value.key == key and "nests deeper than 100 levels" in str(err.value)
    with pytest.raises(ConfigError, match=rf"^{key}: nests deeper"):
        convlab.Session(config=text)


@pytest.mark.parametrize("depth, fails", [(90, False), (101, True), (3000, True)])
def test_a_parsed_document_nested_deep_is_refused_before_anything_reads_it(depth, fails):
    """Another table of the document (the config reads only its agent's, but copies and prints all of it)."""
    doc = {"agent": {"bot": {"context": {"window": 64000, "strategy": [{"use": "summarize", "prompt": "x"}]}}}, "notes": {}}
    inner = doc["notes"]
    for _ in range(depth - 1):
        inner["note"] = {}
        inner = inner["note"]
    if not fails:
        assert load_config(doc, agent="bot")["bot"].window == 64000
        return
    for make in (lambda: load_config(doc, agent="bot"), lambda: convlab.Session(config=doc),
                 lambda: convlab.config_grid(doc, {"window": [64000]}, agent="bot")):
        with pytest.raises(ConfigError, match=r"^notes\.note\.note.*: nests deeper than 100 levels"):
            make()


@pytest.mark.parametrize("command", ["tune", "search", "serve"])
def test_the_commands_refuse_a_deep_config_in_one_line(command, tmp_path, capsys):
    from convlab.cli import main

    cfg = tmp_path / "deep.toml"
    cfg.write_text(DEEP_CONFIGS["agent.bot.context.window"])
    log = tmp_path / "s.jsonl"
    convlab.Session(log=log).submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
    argv = {"tune": ["tune", str(log), "--config", str(cfg)], "search": ["search", str(log), "--base", str(cfg), "--objective", "tokens_read"],
            "serve": ["serve", "--log-dir", str(tmp_path / "logs"), "--config", str(cfg), "--port", "0"]}[command]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "agent.bot.context.window: nests deeper than 100 levels" in err
    assert "internal error" not in err and "RecursionError" not in err
