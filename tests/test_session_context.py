"""PROTOCOL.md 5: make room: the count, the config, strategies, context.limit, summarize and reset
plans, context.replace, overflow."""

from __future__ import annotations

import json
import math

import pytest

from session_support import (
    PAGE_CONFIG,
    check_limited_then_exactly_one,
    RecordingLLM,
    a,
    advance_to,
    config,
    est,
    limit_decisions,
    m,
    make,
    message,
    node,
    nodes,
    of_type,
    path_ids,
    reply,
    turn,
    types,
    view,
)

import convlab

LLM_CALL = {"type": "llm.call"}


def answer_chat(s, limit_answer=None):
    """Answer pending decisions like the chat worker (accept proposed unless ``limit_answer``)."""
    for _ in range(50):
        d = s.pending
        if d is None:
            return
        if d["type"] == "turn.start":
            s.decide([LLM_CALL])
        elif d["type"] == "llm.result":
            s.decide([])
        else:
            s.decide(limit_answer(d) if limit_answer else d["proposed"])
    raise AssertionError("never idle")


def assert_limited_then_exactly_one(s):
    """5.3: "After the worker answers context.limit, exactly one of two events follows: context.replaced
    ... else context.kept"; summary llm.started all fall between them (session_support)."""
    check_limited_then_exactly_one(s.events)


# ======================================================================
# 5.1 the count
# ======================================================================
def test_count_without_any_model_call_is_chars_over_four():
    """5.1: "With no such node on the path: ceil(total chars / 4) over the whole path." """
    s = make(worker=lambda d: [])
    s.submit(view([m("u1", "abcde"), a("a1", "xy")]))
    assert s.tokens() == math.ceil(7 / 4) == 2


def test_count_of_content_parts():
    """5.1: "Only content counts: a string's length, or the sum of its text parts' lengths plus
    len(json.dumps(part)) of each other part." """
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    parts = [{"type": "text", "text": "abc"}, image, {"type": "text", "text": "defgh"}]
    s = make(worker=lambda d: [])
    s.submit(view([m("u1", parts, name="a-long-name-that-does-not-count")]))
    assert s.tokens() == math.ceil((3 + len(json.dumps(image)) + 5) / 4)


def test_count_is_reported_input_plus_chars_since_the_last_call_its_reply_included():
    """5.1: "the input tokens the provider reported for the last call on the active path ... plus
    ceil(total chars / 4) over the messages on the path written since that call (its reply included)." """
    s = make(worker="manual", llm=convlab.ScriptedLLM([reply("abcd", input_tokens=100, output_tokens=3)]))
    s.submit(message(m("u1", "a question that is long")))
    s.decide([LLM_CALL])
    assert s.tokens() == 100 + 1  # "abcd": its reply included
    s.decide([])
    s.submit(message(m("u2", "efghij")))
    assert s.tokens() == 100 + math.ceil((4 + 6) / 4)
    s.decide([{"type": "message.add", "message": m("tool1", "x" * 9, role="tool", tool_call_id="c")}])
    assert s.tokens() == 100 + math.ceil((4 + 6 + 9) / 4)


def test_count_sums_cached_input():
    """5.1: "where a provider splits out cached input, as Anthropic's input_tokens +
    cache_creation_input_tokens + cache_read_input_tokens, the sum" """
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 3000, "output_tokens": 5}
    s = make(llm=convlab.ScriptedLLM([{"content": "abcdefgh", "usage": usage}]))
    s.submit(message(m("u1", "q")))
    assert s.tokens() == 10 + 200 + 3000 + 2


def test_count_uses_the_last_call_on_the_active_path():
    """5.1: "the last call on the path is the last node whose usage came from a model reply" (gap:
    the last call on the active path)."""
    llm = convlab.ScriptedLLM([reply("r1", input_tokens=1000), reply("r2", input_tokens=5000)])
    s = make(llm=llm)
    s.submit(message(m("u1", "q")))
    first = s.head
    s.submit(view([m("u1")]))  # regenerate: a second reply beside the first
    assert s.tokens() == 5000 + 1
    s.submit(view([m("u1"), {"id": first, "role": "assistant", "content": "r1"}]))
    assert s.head == first
    assert s.tokens() == 1000 + 1


def test_count_matches_what_the_engine_reports_in_context_limit():
    """5.3: context.limit "tokens" is the count (5.1) of what the model would read."""
    s = make(
        worker="manual",
        config=config({"use": "summarize", "over_tokens": 50}),
        llm=convlab.ScriptedLLM([reply("abcd", input_tokens=60)]),
    )
    s.submit(view([m("u1", "q")]))
    s.decide([LLM_CALL])
    s.decide([])
    s.submit(message(m("u2", "efgh")))
    expected = s.tokens()
    assert expected == 62
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit" and d["tokens"] == 62
    limited = of_type(s, "context.limited")[-1]
    assert limited["tokens"] == 62


# ======================================================================
# 5.2 config
# ======================================================================
@pytest.mark.parametrize(
    "text, key",
    [
        ("[agent.bot.context]\nwindw = 200000\n", "windw"),
        ("[agent.bot.context]\nwindow = 'big'\n", "window"),
        ("[agent.bot.context]\nwindow = true\n", "window"),
        ("[agent.bot.context]\nwindow = 0\n", "window"),
        ("[agent.bot.context]\nwindow = -200000\n", "window"),
        ("[agent.bot.context]\nwindow = 16000\n", "window"),
        ("[agent.bot.context]\nwindow = 8000\n", "window"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nidle_sec = 5\n", "idle_sec"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'reset'\nidle_secs = 0\n", "idle_secs"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'reset'\nidle_secs = -1\n", "idle_secs"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'reset'\nidle_secs = '1h'\n", "idle_secs"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 0\n", "over_tokens"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 1.5\n", "over_tokens"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nprompt = 7\n", "prompt"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nllm = ['a']\n", "llm"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nmodel = 3\n", "model"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'compact'\n", "use"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 5\n", "use"),
        ("[agent.bot.context]\n[[agent.bot.context.strategy]]\nidle_secs = 60\n", "use"),
    ],
)
def test_config_errors_name_the_key(text, key):
    """5.2: "An unknown key, a value of the wrong type, a number that is not positive, or a window of
    16000 or less is a config error naming the key." """
    with pytest.raises(convlab.ConfigError) as info:
        convlab.load_config(text)
    assert key in str(info.value)
    with pytest.raises(convlab.ConfigError) as info:
        make(config=text)
    assert key in str(info.value)


def test_config_window_just_above_16000_is_fine():
    """5.2: only "a window of 16000 or less" is an error."""
    convlab.load_config("[agent.bot.context]\nwindow = 16001\n")
    make(config="[agent.bot.context]\nwindow = 16001\n")


def test_config_from_path_and_dict(tmp_path):
    """API.md: config is "TOML text, a path to a .toml file, the parsed TOML document (dict), or None"."""
    import tomllib

    p = tmp_path / "engine.toml"
    p.write_text(PAGE_CONFIG)
    from_path = make(config=str(p)).events[0]["config"]
    from_text = make(config=PAGE_CONFIG).events[0]["config"]
    from_dict = make(config=tomllib.loads(PAGE_CONFIG)).events[0]["config"]
    assert from_path == from_text == from_dict
    convlab.load_config(str(p))
    with pytest.raises(convlab.ConfigError) as info:
        p.write_text("[agent.bot.context]\nwindow = 3\n")
        convlab.load_config(str(p))
    assert "window" in str(info.value)


def test_other_tables_are_left_alone():
    """5.2: "Other tables of the file (other agents, other sections) are not this config's business and
    are left alone." 8: "load_config with no agent given checks every agent.*.context table"."""
    text = PAGE_CONFIG + "\n[server]\nport = 'not my business'\n[agent.other.context]\nwindw = 1\n"
    s = make(config=text)  # agent bot: the bad table of agent "other" is not its business
    assert s.events[0]["config"]["window"] == 200000
    with pytest.raises(convlab.ConfigError) as info:
        convlab.load_config(text)
    assert "windw" in str(info.value)
    convlab.load_config(PAGE_CONFIG + "\n[server]\nport = 'not my business'\n[agent.other.context]\nwindow = 30000\n")


# ======================================================================
# 5.2 strategies: the page's config
# ======================================================================
def page_session(first_input_tokens, **kw):
    """Turn 1 done with a reply "abcd" whose usage reports ``first_input_tokens``; a RecordingLLM."""
    llm = RecordingLLM([reply("abcd", input_tokens=first_input_tokens)] + kw.pop("script", []))
    s = make(config=PAGE_CONFIG, llm=llm, **kw)
    s.submit(message(m("u1", "x")))
    if s.pending is not None:
        answer_chat(s)
    return s, llm


def test_page_config_exactly_184000_does_not_summarize():
    """5.2: a strategy without idle_secs "applies when the count is more than window - 16000";
    the page: "when the model would read more than 184,000 tokens, the engine summarizes"."""
    s, llm = page_session(183998)
    s.submit(message(m("u2", "efgh")))  # 183998 + ceil(8/4) = 184000
    assert "context.limited" not in types(s.events)
    assert turn(s, "t2")["status"] == "completed"
    assert len(llm.requests) == 2


def test_page_config_above_184000_summarizes():
    """The page: "Otherwise, when the model would read more than 184,000 tokens, the engine summarizes." """
    s, llm = page_session(183999, script=[reply("SUMMARY-TEXT"), reply("answer")])
    s.submit(message(m("u2", "efgh")))  # 184001
    limited = of_type(s, "context.limited")
    assert len(limited) == 1
    e = limited[0]
    assert (e["reason"], e["strategy"], e["tokens"], e["window"]) == ("full", "summarize", 184001, 200000)
    assert e["turn_id"] == "t2"
    assert turn(s, "t2")["status"] == "completed"
    assert_limited_then_exactly_one(s)


def test_page_config_an_hour_idle_resets():
    """The page: "an hour with no turn starts the model over". 5.2: idle when "at least idle_secs passed
    since the previous turn ended"."""
    s, llm = page_session(10)
    assert s.last_turn_end == s.clock
    advance_to(s, s.last_turn_end + 3600)
    s.submit(message(m("u2", "efgh")))
    limited = of_type(s, "context.limited")
    assert [(e["reason"], e["strategy"]) for e in limited] == [("idle", "reset")]
    assert_limited_then_exactly_one(s)


def test_page_config_less_than_an_hour_is_not_idle():
    s, llm = page_session(10)
    advance_to(s, s.last_turn_end + 3599)
    s.submit(message(m("u2", "efgh")))
    assert "context.limited" not in types(s.events)


def test_first_turn_is_never_idle():
    """5.2: "a session's first turn is never idle." """
    s = make(config=PAGE_CONFIG, clock=0.0, llm=RecordingLLM())
    s.advance(10 * 3600)
    assert s.last_turn_end is None
    s.submit(message(m("u1", "x")))
    assert "context.limited" not in types(s.events)
    assert turn(s, "t1")["status"] == "completed"


def test_idle_only_at_a_turns_first_model_call():
    """The page: "idle_secs applies only at a turn's first model call." """
    s, llm = page_session(10, worker="manual")
    advance_to(s, s.last_turn_end + 3600)
    s.submit(message(m("u2", "q2")))
    s.decide([LLM_CALL])
    assert s.pending["type"] == "context.limit" and s.pending["reason"] == "idle"
    held = s.pending["call"]["id"]
    s.decide([{"type": "llm.call", "id": held}])
    assert s.pending["type"] == "llm.result"
    s.advance(7200)
    s.decide([LLM_CALL])  # a second call in the same turn: never idle
    assert s.pending["type"] == "llm.result"
    assert len(of_type(s, "context.limited")) == 1


def test_idle_is_measured_from_the_previous_turn_end_however_it_ended():
    """5.2: "since the previous turn ended, however it ended"; API.md last_turn_end."""
    llm = RecordingLLM([reply("ok"), {"error": "failed"}, reply("ok")])
    s = make(config=PAGE_CONFIG, llm=llm, clock=0.0)
    s.submit(message(m("u1", "x")))
    s.advance(100)
    s.submit(message(m("u2", "y")))
    assert turn(s, "t2")["status"] == "failed"
    assert s.last_turn_end == 100
    s.advance(3600)
    s.submit(message(m("u3", "z")))
    assert [e["reason"] for e in of_type(s, "context.limited")] == ["idle"]


def test_idle_after_a_cancelled_turn():
    s = make(config=PAGE_CONFIG, worker="manual", clock=0.0)
    s.submit(message(m("u1", "x")))
    s.decide([])
    s.submit(message(m("u2", "y")))
    s.advance(50)
    s.submit({"type": "client.interrupt", "agent_id": "bot"})
    assert s.last_turn_end == 50
    s.advance(3600)
    s.submit(message(m("u3", "z")))
    s.decide([LLM_CALL])
    assert s.pending["type"] == "context.limit" and s.pending["reason"] == "idle"


def test_first_strategy_in_order_wins():
    """5.2: "The engine tries the strategies in order; the first that applies sets the plan in proposed."
    5.3: "When a turn's first call is both idle and over a count, the first strategy in order that
    applies wins, with its own reason"."""
    for strategies, expected in [
        (({"use": "reset", "idle_secs": 60}, {"use": "summarize", "over_tokens": 5}), ("idle", "reset")),
        (({"use": "summarize", "over_tokens": 5}, {"use": "reset", "idle_secs": 60}), ("full", "summarize")),
    ]:
        s = make(config=config(*strategies), worker="manual", clock=0.0)
        s.submit(message(m("u1", "x" * 40)))
        s.decide([])
        s.advance(60)
        s.submit(message(m("u2", "y" * 40)))
        s.decide([LLM_CALL])
        d = s.pending
        assert (d["reason"], d["strategy"]) == expected


def test_strategy_with_both_keys_idle_wins():
    """5.3: "for a strategy with both keys, idle wins". """
    s = make(config=config({"use": "reset", "idle_secs": 60, "over_tokens": 5}), worker="manual", clock=0.0)
    s.submit(message(m("u1", "x" * 40)))
    s.decide([])
    s.advance(60)
    s.submit(message(m("u2", "y" * 40)))
    s.decide([LLM_CALL])
    assert (s.pending["reason"], s.pending["strategy"]) == ("idle", "reset")


def test_idle_strategy_with_over_tokens_applies_at_any_call_reason_full():
    """5.2: "If it also has over_tokens, it applies above that count at any call (reason full)." """
    s = make(config=config({"use": "reset", "idle_secs": 3600, "over_tokens": 5}), worker="manual")
    s.submit(message(m("u1", "x" * 40)))  # first turn: never idle, but over 5
    s.decide([LLM_CALL])
    assert (s.pending["type"], s.pending["reason"], s.pending["strategy"]) == ("context.limit", "full", "reset")


def test_over_tokens_is_strictly_more_than():
    """5.2: applies when the count is "more than its over_tokens"."""
    s = make(config=config({"use": "summarize", "over_tokens": 10}), worker="manual")
    s.submit(message(m("u1", "x" * 40)))  # exactly 10
    s.decide([LLM_CALL])
    assert s.pending["type"] == "llm.result"
    s.decide([])
    s = make(config=config({"use": "summarize", "over_tokens": 10}), worker="manual")
    s.submit(message(m("u1", "x" * 41)))  # 11
    s.decide([LLM_CALL])
    assert s.pending["type"] == "context.limit"


def test_without_a_window_only_idle_over_tokens_and_refusal_apply():
    """5.2: "Without a window only idle_secs, over_tokens and a provider's refusal apply." """
    s = make(config=config({"use": "summarize"}), llm=RecordingLLM([reply("a", input_tokens=10**7)]))
    s.submit(message(m("u1", "x")))
    s.submit(message(m("u2", "y")))
    assert "context.limited" not in types(s.events)


# ======================================================================
# 5.3 context.limit
# ======================================================================
def test_context_limit_shape():
    """5.3: {"type": "context.limit", "reason", "strategy", "tokens", "window", "call": {"id", "llm",
    "request", "stream"}, "proposed": [...]}; 4: plus turn_id, trigger, messages, state, client_state."""
    s, llm = page_session(183999, worker="manual", script=[reply("SUM")])
    s.submit(message(m("u2", "efgh"), state={"c": 1}))
    s.decide([LLM_CALL])
    d = s.pending
    assert json.loads(json.dumps(d)) == d
    assert d["type"] == "context.limit"
    assert d["reason"] == "full" and d["strategy"] == "summarize"
    assert d["tokens"] == 184001 and d["window"] == 200000
    assert d["turn_id"] == "t2"
    assert d["client_state"] == {"c": 1}
    assert d["state"] == {}
    assert d["trigger"] == {"type": "client.message", "message_ids": ["u2"]}
    assert [msg["id"] for msg in d["messages"]] == path_ids(s)
    call = d["call"]
    assert set(call) >= {"id", "llm", "request", "stream"}
    assert call["id"].startswith("llm-")
    assert isinstance(call["request"], dict)
    assert isinstance(d["proposed"], list)
    limited = of_type(s, "context.limited")[-1]
    assert limited["call_id"] == call["id"]
    assert (limited["reason"], limited["strategy"], limited["tokens"], limited["window"]) == ("full", "summarize", 184001, 200000)


def test_held_call_ends_its_answer():
    """4: "A call the engine holds (5.3) ends its answer: the actions after it are dropped, and the answer
    to context.limit takes their place (gap)." """
    s = make(config=config({"use": "reset", "over_tokens": 3}), worker="manual")
    s.submit(message(m("u1", "x" * 40)))
    s.decide([LLM_CALL, {"type": "state.set", "state": {"dropped": True}}, {"type": "message.add", "message": m("z", "no")}])
    assert s.pending["type"] == "context.limit"
    held = s.pending["call"]["id"]
    s.decide([{"type": "llm.call", "id": held}])
    assert s.pending["type"] == "llm.result"
    s.decide([])
    assert s.state == {}
    assert "z" not in nodes(s)


def test_held_call_rerun_by_id_is_not_held_twice():
    """5.3: "An llm.call with the held call's id runs it again; the engine does not hold it a second time." """
    llm = RecordingLLM([reply("big", input_tokens=100)])
    s = make(config=config({"use": "summarize", "over_tokens": 3}), worker="manual", llm=llm)
    s.submit(message(m("u1", "x" * 40)))
    s.decide([LLM_CALL])
    held = s.pending["call"]["id"]
    n = len(s.events)
    s.decide([{"type": "llm.call", "id": held}])
    new = s.events[n:]
    assert "context.limited" not in types(new)
    started = of_type(new, "llm.started")
    assert [e["call_id"] for e in started] == [held]
    assert s.pending["type"] == "llm.result"
    assert "context.kept" in types(new)
    assert_limited_then_exactly_one(s)
    # a new call (no id) is checked again: 100 + ceil(3/4) > 3
    s.decide([LLM_CALL])
    assert s.pending["type"] == "context.limit"


def test_context_kept_when_the_worker_ends_the_turn():
    """5.3: "else context.kept, right after the answer (the call runs as it was, or the worker ended the turn)" """
    s = make(config=config({"use": "summarize", "over_tokens": 3}), worker="manual")
    s.submit(message(m("u1", "x" * 40)))
    s.decide([LLM_CALL])
    n = len(s.events)
    s.decide([{"type": "turn.end"}])
    new = types(s.events[n:])
    assert new.index("decision.answered") + 1 == new.index("context.kept")
    assert "context.replaced" not in new
    assert turn(s, "t1")["status"] == "completed"
    assert "llm.started" not in new


def test_context_kept_right_after_the_answer_that_reruns_the_call():
    s = make(config=config({"use": "summarize", "over_tokens": 3}), worker="manual")
    s.submit(message(m("u1", "x" * 40)))
    s.decide([LLM_CALL])
    n = len(s.events)
    s.decide([{"type": "llm.call", "id": s.pending["call"]["id"]}])
    new = types(s.events[n:])
    assert new.index("decision.answered") + 1 == new.index("context.kept")
    assert new.index("context.kept") < new.index("llm.started")


# -- kept -----------------------------------------------------------------
def test_kept_is_the_messages_after_the_last_assistant_message():
    """5.3: "kept is the input the model must still answer: the messages after the last assistant message
    on the path"; reset proposes [context.replace {messages: kept}, llm.call {id}]."""
    s = make(config=config({"use": "reset", "over_tokens": 3}), worker="manual")
    s.submit(view([m("u1", "q" * 20), a("a1", "r" * 20), m("u2", "second"), m("u3", "third")]))
    s.decide([LLM_CALL])
    d = s.pending
    assert (d["reason"], d["strategy"]) == ("full", "reset")
    proposed = d["proposed"]
    assert len(proposed) == 2
    assert proposed[0]["type"] == "context.replace"
    assert not proposed[0].get("summary")
    assert [msg["id"] for msg in proposed[0]["messages"]] == ["u2", "u3"]
    assert [msg["content"] for msg in proposed[0]["messages"]] == ["second", "third"]
    assert proposed[1]["type"] == "llm.call" and proposed[1]["id"] == d["call"]["id"]


def test_kept_starts_at_the_assistant_whose_tool_calls_the_results_answer():
    """5.3: "when the first of them is a tool result, kept starts instead at the assistant message whose
    tool calls those results answer, so a result never loses its call (gap)." """
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    s = make(config=config({"use": "reset", "over_tokens": 3}), worker="manual")
    s.submit(
        view(
            [
                m("u1", "q" * 40),
                a("a1", "answer"),
                m("u2", "use the tool"),
                a("a2", "", tool_calls=calls),
                m("tr1", "42", role="tool", tool_call_id="c1"),
            ]
        )
    )
    s.decide([LLM_CALL])
    d = s.pending
    assert [msg["id"] for msg in d["proposed"][0]["messages"]] == ["a2", "tr1"]


def test_reset_with_nothing_kept_proposes_the_call_as_it_was():
    """5.3: "when ... kept is empty for a reset, proposed is the call as it was, [llm.call {id}] (gap)." """
    s = make(config=config({"use": "reset", "over_tokens": 3}), worker="manual")
    s.submit(view([m("u1", "q" * 40), a("a1", "r" * 40)]))
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit"
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]


@pytest.mark.parametrize("start", [
    [m(None, "r" * 40, role="tool", tool_call_id="c1"), m("u1", "q" * 40)],  # a tool result, then a user message
    [m("s0", "be brief", role="system"), m("u1", "q" * 40)],
])
def test_reset_with_nothing_before_kept_proposes_the_call_as_it_was(start):
    """5.3 (rev 3): "A plan that would leave the model nothing new is not proposed: when nothing precedes
    kept (nothing to summarize, and a reset would drop nothing) ... proposed is the call as it was,
    [llm.call {id}]". The path is all input, with no reply yet: kept is the whole path."""
    s = make(config=config({"use": "reset", "over_tokens": 3}), worker="manual")
    s.submit(view(start))
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit" and d["strategy"] == "reset"
    assert [msg["role"] for msg in d["messages"]] == [msg["role"] for msg in start]
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]
    s.decide(d["proposed"])
    assert "context.kept" in types(s.events) and "context.replaced" not in types(s.events)
    assert path_ids(s)[:2] == [n["id"] for n in s.snapshot()["nodes"][:2]]  # no copy of the path


def test_an_idle_reset_with_only_input_on_the_path_proposes_the_call_as_it_was():
    """5.3 (rev 3), the idle case: a turn after an hour whose path has no reply at all."""
    s = make(config=config({"use": "reset", "idle_secs": 3600}), worker="manual")
    s.submit(message(m("u1", "first")))
    s.decide([{"type": "turn.end"}])  # no reply
    s.advance(3600)
    s.submit(message(m("u2", "second")))
    s.decide([LLM_CALL])
    d = s.pending
    assert (d["type"], d["reason"]) == ("context.limit", "idle")
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]


def test_reset_accepted():
    """5.4 via reset: the kept messages are copied to a new branch at the root and the held call runs there."""
    s, llm = page_session(10)
    advance_to(s, s.last_turn_end + 3600)
    s.submit(message(m("u2", "efgh")))
    p = s.path()
    assert len(p) == 2
    copy, answer = p
    assert copy["parent"] is None
    assert copy["copied_from"] == "u2" and copy["id"] != "u2" and copy["content"] == "efgh"
    assert copy["replaces"] == "u2"
    assert answer["parent"] == copy["id"] and answer["role"] == "assistant"
    assert [msg["content"] for msg in llm.requests[-1]["messages"]] == ["efgh"]
    assert "context.replaced" in types(s.events)
    assert_limited_then_exactly_one(s)


# -- summarize ------------------------------------------------------------
def test_summarize_runs_a_summary_call_then_proposes_replace_and_the_call():
    """5.3: "summarize first runs a summary model call over the path minus kept ..., then proposes
    [context.replace {summary, messages: kept}, llm.call {id}]." Summary llm.started has summary: true."""
    s, llm = page_session(183999, worker="manual", script=[reply("SUMMARY-TEXT"), reply("answer")])
    s.submit(message(m("u2", "<<kept>>")))
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit"
    proposed = d["proposed"]
    assert [p["type"] for p in proposed] == ["context.replace", "llm.call"]
    assert proposed[0]["summary"] == "SUMMARY-TEXT"
    assert [msg["id"] for msg in proposed[0]["messages"]] == ["u2"]
    assert proposed[1]["id"] == d["call"]["id"]
    # the summary call read the path minus kept
    assert len(llm.requests) == 2
    summary_read = llm.read(1)
    assert "abcd" in summary_read and "<<kept>>" not in summary_read
    started = of_type(s, "llm.started")
    assert started[-1]["summary"] is True
    # "The summary is not added to the conversation unless a context.replace records it."
    assert not any(n["content"] == "SUMMARY-TEXT" for n in s.snapshot()["nodes"])
    assert path_ids(s)[-1] == "u2"


def test_summarize_accepted_by_the_chat_worker():
    """4: the chat worker "on context.limit accepts proposed"; 5.4: summary first as a user message
    (kind summary), then the copies; the held call reads the new history."""
    s, llm = page_session(183999, script=[reply("SUMMARY-TEXT"), reply("answer")])
    old = set(nodes(s))
    s.submit(message(m("u2", "efgh")))
    p = s.path()
    assert [n["kind"] for n in p] == ["summary", "message", "message"]
    summ, copy, answer = p
    assert summ["parent"] is None and summ["role"] == "user"
    text = summ["content"] if isinstance(summ["content"], str) else json.dumps(summ["content"])
    assert "SUMMARY-TEXT" in text
    assert summ["replaces"] == "u2"
    assert copy["copied_from"] == "u2" and copy["content"] == "efgh"
    assert answer["content"] == "answer" and answer["parent"] == copy["id"]
    assert old | {"u2"} <= set(nodes(s))  # the old messages stay
    assert [msg["content"] for msg in llm.requests[-1]["messages"]] == [summ["content"], "efgh"]
    kinds = types(s.events)
    i = kinds.index("context.limited")
    j = kinds.index("context.replaced")
    summary_started = [e for e in s.events[i:j] if e["type"] == "llm.started"]
    assert len(summary_started) == 1 and summary_started[0]["summary"] is True
    after = [e for e in s.events[j:] if e["type"] == "llm.started"]
    assert len(after) == 1 and after[0]["summary"] is False
    assert_limited_then_exactly_one(s)


def test_summarize_prompt_llm_and_model():
    """5.2/5.3: a summarize strategy "takes prompt for its own instructions, and llm and model to write
    the summary elsewhere"."""
    main, cheap = RecordingLLM([reply("a1"), reply("a2")]), RecordingLLM([reply("SUM")])
    cfg = config({"use": "summarize", "over_tokens": 20, "prompt": "<<MY-PROMPT>>", "llm": "cheap", "model": "tiny-1"})
    s = make(config=cfg, llm={"main": main, "cheap": cheap})
    s.submit(message(m("u1", "x" * 10)))
    s.submit(message(m("u2", "y" * 100)))
    assert len(cheap.requests) == 1
    req = cheap.requests[0]
    assert "<<MY-PROMPT>>" in json.dumps(req)
    assert req.get("model") == "tiny-1"
    started = [e for e in of_type(s, "llm.started") if e["summary"]]
    assert len(started) == 1 and started[0]["llm"] == "cheap" and started[0]["model"] == "tiny-1"
    assert len(main.requests) == 2


def test_nothing_to_summarize_proposes_the_call_as_it_was():
    """5.3: "when nothing precedes kept (nothing to summarize) ... proposed is the call as it was,
    [llm.call {id}] (gap)." """
    llm = RecordingLLM()
    s = make(config=config({"use": "summarize", "over_tokens": 3}), worker="manual", llm=llm)
    s.submit(view([m("u1", "q" * 40), m("u2", "more")]))
    s.decide([LLM_CALL])
    d = s.pending
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]
    assert llm.requests == []  # no summary call
    assert not any(e["summary"] for e in of_type(s, "llm.started"))


def test_failed_summary_proposes_the_call_as_it_was():
    """5.3: "When the summary call fails, proposed is the call as it was: [llm.call {id}]." """
    s, llm = page_session(183999, worker="manual", script=[{"error": "failed"}, reply("answer")])
    s.submit(message(m("u2", "efgh")))
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit"
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]
    assert turn(s, "t2")["status"] == "running"  # a failed summary does not fail the turn
    s.decide(d["proposed"])
    assert s.pending["type"] == "llm.result"
    assert s.pending["reply"]["content"] == "answer"
    assert_limited_then_exactly_one(s)


MARKS = ["<<m1>>", "<<m2>>", "<<m3>>", "<<m4>>", "<<m5>>", "<<m6>>"]


def long_view():
    msgs = []
    for i, mark in enumerate(MARKS):
        mk = a if i % 2 else m
        msgs.append(mk(f"h{i + 1}", mark + " " + "z" * 30))
    msgs.append(m("h7", "<<kept>>"))
    return view(msgs)


def marks_in(text):
    return [mark for mark in MARKS if mark in text]


def test_too_long_summary_is_retried_shorter_at_most_three_calls():
    """5.3: "Shortening a too-long summary call drops floor(n / 2) (at least one) of the n messages it
    summarizes, oldest first ... At most three summary calls in all, the first included." then
    "proposed is the call as it was"."""
    llm = RecordingLLM([{"error": "too_long"}] * 3 + [reply("answer")])
    s = make(config=config({"use": "summarize", "over_tokens": 20}), worker="manual", llm=llm)
    s.submit(long_view())
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit"
    assert len(llm.requests) == 3
    assert marks_in(llm.read(0)) == MARKS  # n = 6
    assert marks_in(llm.read(1)) == MARKS[3:]  # 6 - 3 = 3
    assert marks_in(llm.read(2)) == MARKS[4:]  # 3 - 1 = 2
    for i in range(3):
        assert "<<kept>>" not in llm.read(i)
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]
    summaries = [e for e in of_type(s, "llm.started") if e["summary"]]
    assert len(summaries) == 3


def test_too_long_summary_then_a_shorter_one_succeeds():
    """5.3: "When the provider finds the summary call too long, the engine proposes a shorter one." """
    llm = RecordingLLM([{"error": "too_long"}, reply("SHORTER"), reply("answer")])
    s = make(config=config({"use": "summarize", "over_tokens": 20}), worker="manual", llm=llm)
    s.submit(long_view())
    s.decide([LLM_CALL])
    d = s.pending
    assert len(llm.requests) == 2
    assert marks_in(llm.read(1)) == MARKS[3:]
    assert d["proposed"][0]["type"] == "context.replace" and d["proposed"][0]["summary"] == "SHORTER"
    assert [msg["id"] for msg in d["proposed"][0]["messages"]] == ["h7"]


def test_too_long_summary_never_drops_an_earlier_summary():
    """5.3: "an earlier summary at the front is never dropped and does not count in n"; "an earlier
    summary is on the path, so the next summary reads it"."""
    llm = RecordingLLM([{"error": "too_long"}] * 3 + [reply("answer")])
    s = make(config=config({"use": "summarize", "over_tokens": 30}), worker="manual", llm=llm)
    s.submit(message(m("u0", "start")))
    actions = [{"type": "context.replace", "summary": "<<S0>>"}]
    for i, mark in enumerate(MARKS):
        actions.append({"type": "message.add", "message": (a if i % 2 else m)(f"h{i + 1}", mark + " " + "z" * 30)})
    s.decide(actions)
    assert s.path()[0]["kind"] == "summary"
    s.submit(message(m("h7", "<<kept>>")))
    s.decide([LLM_CALL])
    assert s.pending["type"] == "context.limit"
    assert len(llm.requests) == 3
    for i, expected in enumerate([MARKS, MARKS[3:], MARKS[4:]]):
        text = llm.read(i)
        assert "<<S0>>" in text
        assert marks_in(text) == expected


def test_rerun_after_summary_keeps_the_call_id_and_summary_false():
    s, llm = page_session(183999, script=[reply("S"), reply("answer")])
    s.submit(message(m("u2", "efgh")))
    limited = of_type(s, "context.limited")[-1]
    last = of_type(s, "llm.started")[-1]
    assert last["call_id"] == limited["call_id"] and last["summary"] is False


# ======================================================================
# 5.4 context.replace
# ======================================================================
def page_replace_session(llm=None):
    s = make(worker="manual", llm=llm or RecordingLLM([reply("Logged again.")]))
    s.submit(view([m("u39", "feed at 1"), a("a39", "Noted."), m("u40", "nap at 2"), a("a40", "Logged.")]))
    s.decide([{"type": "state.set", "state": {"baby": "Sam"}}])
    s.submit(message(m("u41", "what did Sam do?")))
    return s


def test_page_replace_example():
    """The page's example: context.replace {summary: "Sam logs feeds and naps.", messages: [u40, a40]},
    then llm.call. 5.4: "The engine starts a new branch at the root: summary first, as a user message
    (kind: summary) that says the earlier conversation was summarized; then each message: one with a
    recorded id becomes a copy (the recorded role and content, a new id, no usage) whose message.new names
    the original in copied_from; any other is new. The first node of the new branch records replaces: the
    id of the head it replaced. The worker state carries over (recorded on the first node of the new
    branch); the old messages stay in the tree ... The head moves to the last new message. An llm.call
    without messages after it reads the new history." """
    llm = RecordingLLM([reply("Sam napped at 2.")])
    s = page_replace_session(llm)
    old = {nid: dict(n) for nid, n in nodes(s).items()}
    n_events = len(s.events)
    s.decide(
        [
            {
                "type": "context.replace",
                "summary": "Sam logs feeds and naps.",
                "messages": [
                    {"id": "u40", "role": "user", "content": "nap at 2"},
                    {"id": "a40", "role": "assistant", "content": "Logged."},
                ],
            },
            {"type": "llm.call"},
        ]
    )
    new_events = s.events[n_events:]
    p = s.path()
    summ, c40, ca40, answer = p
    assert summ["parent"] is None and summ["kind"] == "summary" and summ["role"] == "user"
    assert "Sam logs feeds and naps." in json.dumps(summ["content"])
    assert summ["content"] != "Sam logs feeds and naps."  # it says the earlier conversation was summarized
    assert summ["replaces"] == "u41"
    assert summ["state"] == {"baby": "Sam"}
    assert (c40["copied_from"], c40["role"], c40["content"], c40["parent"]) == ("u40", "user", "nap at 2", summ["id"])
    assert (ca40["copied_from"], ca40["role"], ca40["content"], ca40["parent"]) == ("a40", "assistant", "Logged.", c40["id"])
    assert c40["id"] not in old and ca40["id"] not in old
    assert c40["usage"] is None and ca40["usage"] is None
    assert c40.get("replaces") is None and ca40.get("replaces") is None
    assert answer["parent"] == ca40["id"] and answer["content"] == "Sam napped at 2."
    # message.new names the original in copied_from
    by_id = {e["message"]["id"]: e for e in of_type(new_events, "message.new")}
    assert by_id[c40["id"]].get("copied_from", by_id[c40["id"]]["message"]["copied_from"]) == "u40"
    assert by_id[ca40["id"]].get("copied_from", by_id[ca40["id"]]["message"]["copied_from"]) == "a40"
    # the old messages stay, unchanged
    for nid, n in old.items():
        assert node(s, nid)["content"] == n["content"] and node(s, nid)["parent"] == n["parent"]
    # state carried over; the model no longer reads the old messages
    assert s.state == {"baby": "Sam"}
    assert [msg["content"] for msg in llm.requests[0]["messages"]] == [
        summ["content"],
        "nap at 2",
        "Logged.",
    ]
    assert "context.replaced" in types(new_events)


def test_replace_message_without_recorded_id_is_new():
    """5.4: "any other is new"."""
    s = page_replace_session()
    s.decide([{"type": "context.replace", "messages": [m("u40"), m(None, "brand new"), m("fresh", "also new")]}])
    p = s.path()
    assert [n["copied_from"] for n in p] == ["u40", None, None]
    assert p[0]["parent"] is None and p[0]["replaces"] == "u41"
    assert p[1]["content"] == "brand new"
    assert p[2]["id"] == "fresh" and p[2]["content"] == "also new"
    assert p[0]["kind"] == "message"
    assert s.head == "fresh"


def test_replace_copy_carries_no_usage_and_the_count_falls_back_to_chars():
    """5.1: "copies made by context.replace carry no usage"; no usage node on the path -> ceil(chars/4)."""
    s = make(worker="manual", llm=RecordingLLM([reply("abcdefgh", input_tokens=5000)]))
    s.submit(message(m("u1", "q")))
    s.decide([LLM_CALL])
    rid = s.head
    s.decide([])
    assert s.tokens() == 5000 + 2
    s.submit(message(m("u2", "wxyz")))
    s.decide([{"type": "context.replace", "messages": [{"id": rid, "role": "assistant", "content": "abcdefgh"}, m("u2")]}])
    p = s.path()
    assert p[0]["copied_from"] == rid and p[0]["usage"] is None
    assert s.tokens() == est("abcdefgh", "wxyz") == 3


def test_replace_with_neither_summary_nor_messages_fails_the_turn():
    """5.4: "A replace with neither a summary nor messages is a bad action: the turn fails with an error
    saying so." """
    s = page_replace_session()
    before = set(nodes(s))
    head = s.head
    s.decide([{"type": "context.replace"}, {"type": "llm.call"}])
    t = turn(s, "t2")
    assert t["status"] == "failed"
    err = t["error"]
    assert "summary" in err and "messages" in err
    failed = of_type(s, "turn.failed")[-1]
    assert failed["turn_id"] == "t2" and "summary" in failed["error"]
    assert set(nodes(s)) == before and s.head == head
    assert "llm.started" not in types(s.events[-5:])
    assert s.pending is None


def test_replace_at_turn_start_any_decision():
    """5.4: "Any decision may return it." Here at llm.result."""
    s = make(worker="manual", llm=RecordingLLM([reply("first"), reply("second")]))
    s.submit(message(m("u1", "q")))
    s.decide([LLM_CALL])
    rid = s.head
    s.decide([{"type": "context.replace", "summary": "short", "messages": [m("u1")]}, LLM_CALL])
    p = s.path()
    assert p[0]["kind"] == "summary" and p[0]["replaces"] == rid
    assert p[1]["copied_from"] == "u1"
    assert p[2]["content"] == "second"
    assert "context.replaced" in types(s.events)


def test_context_replaced_event():
    """wire.md: context.replaced {from, to}."""
    s = page_replace_session()
    s.decide([{"type": "context.replace", "summary": "x", "messages": [m("u40")]}])
    e = of_type(s, "context.replaced")[-1]
    assert e["from"] == "u41"
    assert e["to"] == s.head
    assert e["turn_id"] == "t2"


# ======================================================================
# 5.5 overflow
# ======================================================================
def test_overflow_asks_with_a_summary_and_runs_the_call_once_more():
    """5.5: "When the provider refuses a call as too long, the engine asks context.limit with reason
    overflow, strategy: "summarize" and a summary in proposed ... The call runs once more when the
    worker's answer runs it (accepting proposed does)." """
    llm = RecordingLLM([reply("a1"), {"error": "too_long"}, reply("OVERFLOW-SUMMARY"), reply("a2")])
    s = make(llm=llm)  # no config: the defaults
    s.submit(message(m("u1", "first")))
    s.submit(message(m("u2", "second")))
    limited = of_type(s, "context.limited")
    assert len(limited) == 1
    assert (limited[0]["reason"], limited[0]["strategy"]) == ("overflow", "summarize")
    d = limit_decisions(s)[-1]
    assert d["reason"] == "overflow" and d["strategy"] == "summarize"
    assert d["proposed"][0]["type"] == "context.replace"
    assert d["proposed"][0]["summary"] == "OVERFLOW-SUMMARY"
    assert d["proposed"][1]["type"] == "llm.call" and d["proposed"][1]["id"] == d["call"]["id"]
    assert turn(s, "t2")["status"] == "completed"
    assert s.path()[-1]["content"] == "a2"
    assert len(llm.requests) == 4
    assert_limited_then_exactly_one(s)


def test_overflow_refused_again_fails_the_turn():
    """5.5: "if the provider refuses it again, the turn fails (turn.failed)". The page: "The call runs
    once more. If the provider refuses it again, the turn fails." """
    llm = RecordingLLM([reply("a1"), {"error": "too_long"}, reply("S"), {"error": "too_long"}, reply("never")])
    s = make(llm=llm)
    s.submit(message(m("u1", "first")))
    s.submit(message(m("u2", "second")))
    assert turn(s, "t2")["status"] == "failed"
    assert len(of_type(s, "context.limited")) == 1
    assert of_type(s, "turn.failed")[-1]["turn_id"] == "t2"
    assert len(llm.requests) == 4
    assert_limited_then_exactly_one(s)


def test_overflow_uses_the_first_summarize_strategys_prompt_and_llm():
    """5.5: the summary is "made with the first summarize strategy's prompt, llm and model"."""
    main = RecordingLLM([reply("a1"), {"error": "too_long"}, reply("a2")])
    side = RecordingLLM([reply("S")])
    cfg = config(
        {"use": "reset", "idle_secs": 99999},
        {"use": "summarize", "over_tokens": 10**6, "prompt": "<<P1>>", "llm": "side", "model": "m1"},
        {"use": "summarize", "over_tokens": 10**7, "prompt": "<<P2>>", "llm": "main", "model": "m2"},
    )
    s = make(config=cfg, llm={"main": main, "side": side})
    s.submit(message(m("u1", "first")))
    s.submit(message(m("u2", "second")))
    assert len(side.requests) == 1 and "<<P1>>" in json.dumps(side.requests[0])
    assert turn(s, "t2")["status"] == "completed"


def test_overflow_with_nothing_to_summarize_runs_the_call_once_more():
    """5.5 with 5.3: nothing precedes kept -> [llm.call {id}]; refused again -> the turn fails."""
    llm = RecordingLLM([{"error": "too_long"}, {"error": "too_long"}])
    s = make(llm=llm)
    s.submit(message(m("u1", "first")))
    d = limit_decisions(s)[-1]
    assert d["reason"] == "overflow"
    assert d["proposed"] == [{"type": "llm.call", "id": d["call"]["id"]}]
    assert turn(s, "t1")["status"] == "failed"
    assert len(llm.requests) == 2


def test_overflow_manual_rerun_by_id():
    """5.5: the call runs once more when the worker's answer runs it."""
    llm = RecordingLLM([{"error": "too_long"}, reply("fine")])
    s = make(llm=llm, worker="manual")
    s.submit(message(m("u1", "first")))
    s.decide([LLM_CALL])
    d = s.pending
    assert d["type"] == "context.limit" and d["reason"] == "overflow"
    s.decide([{"type": "llm.call", "id": d["call"]["id"]}])
    assert s.pending["type"] == "llm.result" and s.pending["reply"]["content"] == "fine"
    assert_limited_then_exactly_one(s)


def test_held_call_is_run_as_it_was_model_and_stream():
    """5.3: call is the held call ({"id", "llm", "request": {"model", "messages"}, "stream"}); "An llm.call
    with its id runs it again" - as it was: the same model and stream flag."""
    llm = RecordingLLM([reply("a", input_tokens=200000), reply("SUM"), reply("b")])
    s = make(config=PAGE_CONFIG, llm=llm, worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([LLM_CALL])
    s.decide([])
    s.submit(message(m("u2", "y")))
    s.decide([{"type": "llm.call", "model": "big-model", "stream": True}])
    d = s.pending
    assert d["type"] == "context.limit"
    assert d["call"]["stream"] is True
    assert d["call"]["request"]["model"] == "big-model"
    assert [msg["id"] for msg in d["call"]["request"]["messages"]] == ["u1", path_ids(s)[1], "u2"]
    s.decide([{"type": "llm.call", "id": d["call"]["id"]}])
    assert llm.requests[-1].get("model") == "big-model"
    rerun = of_type(s, "llm.started")[-1]
    assert rerun["call_id"] == d["call"]["id"] and rerun["model"] == "big-model"


def test_summary_calls_are_not_streamed():
    """5.3: "Summary calls ... are not streamed"; the page: "The summary that the engine proposes is not streamed." """
    llm = RecordingLLM([reply("a", input_tokens=200000), reply("SUM"), reply("b")])
    s = make(config=PAGE_CONFIG, llm=llm, worker="manual")
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "llm.call", "stream": True}])
    s.decide([])
    s.submit(message(m("u2", "y")))
    s.decide([{"type": "llm.call", "stream": True}])
    summary_request = llm.requests[1]
    assert summary_request.get("stream", False) is False
    assert llm.requests[0].get("stream", True) is True  # the flag does reach the provider


def test_llm_call_model_reaches_the_provider():
    """4: llm.call {model?}; wire.md: request {"model", "messages"}."""
    llm = RecordingLLM()
    s = make(worker="manual", llm=llm)
    s.submit(message(m("u1", "x")))
    s.decide([{"type": "llm.call", "model": "tiny"}])
    assert llm.requests[0]["model"] == "tiny"
    assert of_type(s, "llm.started")[-1]["model"] == "tiny"


def test_summarize_kept_follows_the_tool_result_rule():
    """5.3: kept (with the tool-result rule) is the same for summarize: the call and its result are kept,
    everything before is summarized."""
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    llm = RecordingLLM([reply("SUM")])
    s = make(config=config({"use": "summarize", "over_tokens": 3}), worker="manual", llm=llm)
    s.submit(
        view(
            [
                m("u1", "<<old-q>> " + "q" * 40),
                a("a1", "<<old-a>>"),
                m("u2", "<<use-tool>>"),
                a("a2", "<<call>>", tool_calls=calls),
                m("tr1", "<<result>>", role="tool", tool_call_id="c1"),
            ]
        )
    )
    s.decide([LLM_CALL])
    d = s.pending
    assert [msg["id"] for msg in d["proposed"][0]["messages"]] == ["a2", "tr1"]
    read = llm.read(0)
    assert "<<old-q>>" in read and "<<use-tool>>" in read
    assert "<<call>>" not in read and "<<result>>" not in read


def test_replace_copy_takes_the_recorded_role_and_content():
    """5.4: "one with a recorded id becomes a copy (the recorded role and content, a new id, no usage)"."""
    s = page_replace_session()
    s.decide([{"type": "context.replace", "messages": [{"id": "a40", "role": "user", "content": "DIFFERENT"}]}])
    (copy,) = s.path()
    assert (copy["copied_from"], copy["role"], copy["content"]) == ("a40", "assistant", "Logged.")


def test_replace_with_only_a_summary():
    """5.4: a summary alone is a valid replace: the head moves to the summary node."""
    s = page_replace_session()
    s.decide([{"type": "context.replace", "summary": "all of it"}])
    (summ,) = s.path()
    assert summ["kind"] == "summary" and summ["parent"] is None and s.head == summ["id"]
    assert summ["replaces"] == "u41"
    assert turn(s, "t2")["status"] == "completed"


def test_overflow_strategy_is_summarize_even_with_only_reset_configured():
    """5.5: overflow asks with "strategy: "summarize" and a summary in proposed (made with the first
    summarize strategy's prompt, llm and model, or the defaults when none is configured)"."""
    llm = RecordingLLM([reply("a1"), {"error": "too_long"}, reply("DEFAULT-SUMMARY"), reply("a2")])
    s = make(config=config({"use": "reset", "idle_secs": 3600}), llm=llm)
    s.submit(message(m("u1", "first")))
    s.submit(message(m("u2", "second")))
    d = limit_decisions(s)[-1]
    assert (d["reason"], d["strategy"]) == ("overflow", "summarize")
    assert d["proposed"][0]["summary"] == "DEFAULT-SUMMARY"
    assert turn(s, "t2")["status"] == "completed"
