"""Usage no provider could report, in any log (issue 40, part 2): left out at the importer with a ``ReadWarning``
naming the file, the message and the field; the message counts as having no usage, so nothing downstream (the
count, the cache model, the prices) ever sees it. Every importer goes through the one check (``records.build``,
``tree.usage_problem``), and so does a convlab session log (``log.read_tree``)."""

from __future__ import annotations

import gzip
import json
import math
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import convlab
from agent_samples import cline_task, lines, managed_agent_events
from agentdata import require as agents_logs
from convlab.errors import ReadWarning
from convlab.tree import MAX_USAGE, usage_problem
from realdata import require as real_logs

#: One value of every kind no provider reports as a count of tokens.
BAD = {"negative": -1_000_000, "negative float": -0.5, "fraction": 12.5, "whole float": 40.0, "huge float": 1e300,
       "NaN": float("nan"), "infinity": float("inf"), "minus infinity": float("-inf"), "bool": True, "text": "1000",
       "list": [1], "object": {"n": 1}, "past 64 bits": 10**30, "past any window": MAX_USAGE + 1}


@pytest.mark.parametrize("kind", BAD)
def test_the_rule_names_the_field_for_every_bad_kind(kind):
    why = usage_problem({"input_tokens": 10, "cache_read_input_tokens": BAD[kind], "service_tier": "x"})
    assert why is not None and why.startswith("usage.cache_read_input_tokens ")
    assert len(why) < 200, "a value of any length is said in a few words"
    assert usage_problem({"input_tokens": 10, "output_tokens": 0, "cost": 0.25, "details": {"x": -1}}) is None
    assert usage_problem({"input_tokens": MAX_USAGE, "output_tokens": None}) is None
    assert usage_problem("12") == "usage is a str, not an object of token counts"


# -- every importer goes through it ---------------------------------------------------------------

#: The names the agents' logs give a count of tokens (the poisoned fields).
COUNTS = re.compile(r"(?i)(tokens$|^tokens(in|out)$|^tokencount$|^input$|^output$|^cached$|^cache(read|write)s?$|^thoughts$|^prompt$|"
                    r"^completion$)")
POISON = -1_000_000


def poisoned(value, path=()):
    """``value`` with every count of tokens (an integer under a name ``COUNTS`` matches) made negative; a JSON text
    inside a string (Cline's usage rows) poisoned too."""
    if isinstance(value, dict):
        return {k: POISON if COUNTS.search(k) and type(v) is int and "cost" not in path else poisoned(v, (*path, k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [poisoned(v, path) for v in value]
    if isinstance(value, str) and value.startswith("{") and "tokens" in value:
        try:
            return json.dumps(poisoned(json.loads(value), path))
        except ValueError:
            return value
    return value


def poison_file(src: Path, dst: Path) -> Path:
    raw = gzip.decompress(src.read_bytes()).decode() if src.suffix == ".gz" else src.read_text()
    if src.suffix in (".json",):
        dst.write_text(json.dumps(poisoned(json.loads(raw))))
    else:
        dst.write_text("".join(json.dumps(poisoned(json.loads(line))) + "\n" for line in raw.splitlines() if line.strip()))
    return dst


def session_log(path: Path) -> Path:
    """A convlab session log of two turns (EchoLLM reports usage)."""
    s = convlab.Session(llm=convlab.EchoLLM(), log=path)
    for text in ("hi", "and again"):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": text}})
    assert any(n.get("usage") for n in s.tree.nodes.values())
    return path


def made(kind: str, tmp: Path) -> Path:
    """A log of ``kind`` whose counts are poisoned (the shared logs where they are, generated ones elsewhere)."""
    if kind.startswith("real:"):
        src = real_logs() / kind.removeprefix("real:")
    elif kind.startswith("agents:"):
        src = agents_logs() / kind.removeprefix("agents:")
    elif kind == "cline":
        folder = cline_task(tmp / "task", metrics=True)
        for name in ("api_conversation_history.json", "ui_messages.json"):
            (folder / name).write_text(json.dumps(poisoned(json.loads((folder / name).read_text()))))
        return folder / "api_conversation_history.json"
    elif kind == "managed_agents":
        return lines(tmp / "sesn.jsonl", poisoned(managed_agent_events()))
    elif kind == "session_log":
        log = session_log(tmp / "raw.jsonl")
        return lines(tmp / "session.jsonl", [poisoned(json.loads(x)) for x in log.read_text().splitlines()])
    else:
        raise AssertionError(kind)
    name = src.name.removesuffix(".gz")
    return poison_file(src, tmp / name)


FORMATS = ["real:claude_code/short.jsonl", "real:claude_code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz",
           "real:openwebui/webui-goldwater.owi.json", "real:librechat/librechat-tree.json",
           "agents:codex/codex.jsonl", "agents:gemini_cli/gemini.jsonl", "agents:gemini_cli/test_conversation_gemini.json",
           "agents:pi/large-session.jsonl", "agents:copilot_cli/copilot.jsonl", "cline", "managed_agents", "session_log"]


@pytest.mark.realdata
@pytest.mark.parametrize("kind", FORMATS)
def test_every_importer_leaves_out_a_usage_no_provider_reports_and_says_where(kind, tmp_path):
    path = made(kind, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        convs = convlab.read(path, progress=False)
    said = [str(w.message) for w in caught if issubclass(w.category, ReadWarning) and "usage." in str(w.message)]
    assert said, f"no ReadWarning about the usage: {[str(w.message)[:200] for w in caught]}"
    assert all(path.name in text for text in said), said  # the file
    assert any(re.search(r"(node|message) '[^']+': usage\.\w+ is -1000000: a count of tokens is never negative; its usage "
                         r"left out", text) for text in said), said[0][:300]  # the message and the field
    usages = [n.get("usage") for c in convs for n in c.tree.nodes.values()]
    assert all(u is None or usage_problem(u) is None for u in usages), "a usage no provider reports reached a message"
    assert not any(isinstance(v, (int, float)) and v < 0 for u in usages if u for v in u.values())


def test_a_session_log_read_by_the_importer_leaves_the_bad_usage_out_of_that_message_only(tmp_path):
    log = session_log(tmp_path / "s.jsonl")
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    replies = [r for r in rows if r["type"] == "message.new" and r["message"].get("usage")]
    replies[0]["message"]["usage"]["input_tokens"] = 10**30
    bad = lines(tmp_path / "bad.jsonl", rows)
    first = replies[0]["message"]["id"]
    with pytest.warns(ReadWarning, match=rf"bad\.jsonl: line \d+: message '{first}': usage\.input_tokens is 1e\+30: more tokens"):
        [c] = convlab.read(bad, progress=False)
    assert c.tree.nodes[replies[0]["message"]["id"]]["usage"] is None
    assert c.tree.nodes[replies[1]["message"]["id"]]["usage"] == replies[1]["message"]["usage"]


def test_a_provider_reply_with_a_usage_no_provider_reports_has_none():
    """The same rule at the provider's edge (``inputs.reply_from``): the reply is kept, its usage is not."""
    from convlab.inputs import reply_from

    assert reply_from({"content": "hi", "usage": {"input_tokens": -5}}) == {"content": "hi", "usage": {}}
    assert reply_from({"content": "hi", "usage": {"input_tokens": 5}})["usage"] == {"input_tokens": 5}


# -- read -> tune(model=...): every figure finite, non-negative and believable ---------------------

FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
good = st.integers(0, 50_000)
bad = st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_USAGE + 1, max_value=10**40),
                st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.text(max_size=8),
                st.lists(st.integers(), max_size=2), st.sampled_from(list(BAD.values())))
count = st.one_of(good, bad, st.none())
usage = st.one_of(st.fixed_dictionaries({}, optional={k: count for k in FIELDS}), bad)


def claude_code_log(path: Path, usages: list) -> Path:
    rows, parent = [], None
    for i, u in enumerate(usages):
        stamp = f"2025-01-01T00:{i:02d}:00Z"
        rows.append({"type": "user", "uuid": f"u{i}", "parentUuid": parent, "sessionId": "s", "timestamp": stamp,
                     "message": {"role": "user", "content": f"question {i} " + "word " * 300}})
        rows.append({"type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i}", "sessionId": "s", "timestamp": stamp,
                     "message": {"id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-5",
                                 "content": [{"type": "text", "text": f"answer {i}"}], "usage": u}})
        parent = f"a{i}"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # NaN and Infinity as Python's json writes them
    return path


GRID = "[agent.bot.context]\nwindow = 20000\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 800\n"
COUNT_COLUMNS = ("calls", "tokens_read", "baseline_tokens_read", "summaries", "resets", "stale", "limits_full",
                 "limits_idle", "limits_overflow", "max_count", "summary_tokens", "lost_calls")
DOLLARS = ("usd", "baseline_usd")


@hsettings(max_examples=50)
@given(st.lists(usage, min_size=1, max_size=6))
def test_hostile_usage_through_read_and_tune_prices_nothing_hostile(tmp_path_factory, usages):
    path = claude_code_log(tmp_path_factory.mktemp("usage") / "log.jsonl", usages)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        convs = convlab.read(path, progress=False)
        df = convlab.tune(convs, GRID, progress=False, model="claude-sonnet-4-5")
    sound = [u for u in usages if isinstance(u, dict) and usage_problem(u) is None]
    [c] = convs
    for i, u in enumerate(usages):  # each bad usage left out of its message, each sound one kept
        kept = c.tree.nodes[f"a{i}"]["usage"]
        assert kept is None if usage_problem(u) is not None else kept in (None, {k: v for k, v in u.items() if v is not None})
    said = [str(w.message) for w in caught if issubclass(w.category, ReadWarning) and "its usage left out" in str(w.message)]
    assert bool(said) == (len(sound) < len(usages))
    # believable: no call reads more than the most any usage of the log reports, plus the conversation itself
    most = max([sum(u.get(k) or 0 for k in FIELDS) for u in sound] + [0]) + 50_000
    for col in (*COUNT_COLUMNS, *DOLLARS):
        values = [float(v) for v in df[col] if v is not None and v == v]
        assert all(math.isfinite(v) and v >= 0 for v in values), (col, values)
    calls = df["calls"].max()
    assert (df["tokens_read"] <= calls * most).all() and (df["baseline_tokens_read"] <= len(usages) * most).all()
    assert (df["usd"] <= 0.0001 * (df["tokens_read"] + 100_000)).all(), "dollars past $100 a million tokens"
