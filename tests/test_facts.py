"""convlab.tuning.facts: what a text states that can be checked by string (issue 23 part 1)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from convlab.tuning.facts import KINDS, Fact, facts_in, facts_of, holds, message_text, normal


def found(text, kind):
    return sorted(f.text for f in facts_in(text) if f.kind == kind)


@pytest.mark.parametrize("kind, text, expected", [
    ("url", "See https://example.com/a/b?x=1. Then ftp://host/file, (http://x.org/y)", ["ftp://host/file", "http://x.org/y", "https://example.com/a/b?x=1"]),
    ("path", "edit /usr/local/bin, ~/x/y, ./run.sh, a/b/c and src/app.py; not and/or nor 1/2", ["./run.sh", "/usr/local/bin", "a/b/c", "src/app.py", "~/x/y"]),
    ("date", "on May 1, 2024, on 1 May 2024, on Sept. 3 2023 and 2024-05-01T12:30:00Z; not 2024-13-01", ["1 May 2024", "2024-05-01T12:30:00Z", "May 1, 2024", "Sept. 3 2023"]),
    ("time", "at 12:30, 12:30:05 or 3:15 pm; not 12:30:05:99 nor 25:00", ["12:30", "12:30:05", "3:15 pm"]),
    ("id", "commit a1b2c3d, 550e8400-e29b-41d4-a716-446655440000, JIRA-42 and CVE-2024-1234; not deadbeef", ["550e8400-e29b-41d4-a716-446655440000", "CVE-2024-1234", "JIRA-42", "a1b2c3d"]),
    ("symbol", "call os.path.join() and run(), my_var, ReplayLLM, iPhone, `x + y`, __init__; not e.g. nor Hello", ["ReplayLLM", "__init__", "iPhone", "my_var", "os.path.join()", "run()", "x + y"]),
    ("number", "12 ms, 3.5 GB, 40%, $12, 1,024 tokens, 42; not 7, 12abc, v12, 1.2.3 nor 10-20", ["$12", "1,024 tokens", "12 ms", "3.5 GB", "40%", "42"]),
    ("quote", "He said \"hello there\", 'quoted one' and “curly ones”; not \"f(x)=1\", \"ab\" nor don't 'x'", ["curly ones", "hello there", "quoted one"]),
    ("name", "Yesterday we met Ada Lovelace. The Eiffel Tower is tall. Then Paris was nice. I saw Bob in May. Hello",
     ["Ada Lovelace", "Bob", "Eiffel Tower", "Paris"]),
])
def test_each_kind(kind, text, expected):
    assert found(text, kind) == expected


def test_no_number_inside_a_word_or_a_date():
    assert found("12abc abc12 a12b", "number") == []
    assert found("on 2024-05-01 at 12:30, id JIRA-42", "number") == []


def test_the_normal_form_joins_a_number_and_its_unit():
    assert Fact("number", "12 ms") == Fact("number", "12ms") and Fact("number", "12  MS").normal == "12ms"
    assert Fact("name", "Ada\n Lovelace").normal == "ada lovelace" and normal(" A \t B ") == "a b"
    assert Fact("number", "12 ms") != Fact("symbol", "12 ms")  # a fact is its kind and its normal form


def test_holds_is_containment_at_word_boundaries():
    ctx = normal("It took 12ms on app_v2, ask Ada.")
    assert holds(ctx, Fact("number", "12 ms")) and holds(ctx, Fact("number", "12ms"))
    assert holds(ctx, Fact("name", "ADA"))
    assert not holds(ctx, Fact("number", "2ms")) and not holds(ctx, Fact("symbol", "app_v"))
    assert not holds(normal("took 120 ms"), Fact("number", "12 ms"))


def test_tool_calls_are_facts_with_their_scalar_arguments():
    long = "x" * 201
    m = {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                          {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/etc/hosts", "limit": 40, "long": long, "opts": {"a": 1}}}],
         "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "Read", "arguments": {"file_path": "/etc/hosts"}}},
                        {"id": "c2", "type": "function", "function": {"name": "search", "arguments": '{"q": "zebra stripes"}'}}]}
    tools = sorted(f.text for f in facts_of([m]) if f.kind == "tool")
    assert tools == ["/etc/hosts", "40", "Read", "search", "zebra stripes"]  # no long argument, no nested one
    text = message_text(m)
    assert text.count("/etc/hosts") == 1 and "zebra stripes" in text and long in text and '"type"' not in text
    assert all(holds(normal(text), f) for f in facts_of([m]))


def test_message_text_reads_tool_results_not_json():
    m = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "42 files"}]}]}
    assert message_text(m) == "42 files"
    assert message_text({"role": "tool", "content": "done in 3 s"}) == "done in 3 s"


def test_kinds_are_named_once():
    found_kinds = {f.kind for f in facts_of([{"role": "assistant", "content": (
        "Ada Lovelace said \"run it now\" at 12:30 on 2024-05-01: see https://x.org/a and src/app.py, "
        "commit a1b2c3d, my_var is 12 ms"), "tool_calls": [{"id": "c", "function": {"name": "Bash", "arguments": {}}}]}])}
    assert found_kinds == set(KINDS)


def test_never_raises_on_odd_strings():
    for text in ["\ud800 12 ms \udfff", "\x00" * 10, "a" * 200_000 + "/b", "/".join(["a"] * 20_000), "`" * 50_000,
                 "1," * 50_000, "\u0345" * 10, '"' + "\u0345" * 5 + '"']:
        for f in facts_in(text):
            assert holds(normal(text), f), (text[:40], f)


@given(st.text())
def test_every_fact_a_text_yields_is_held_by_its_normal_form(text):
    facts_in.cache_clear()
    n = normal(text)
    for f in facts_in(text):
        assert f.kind in KINDS and holds(n, f), f


@given(st.lists(st.sampled_from(["12", " ", "ms", "May", "1,", "2024", "Ada", "Lovelace", "-", ":", "30", ".", "/", "a", "_", "b",
                                 "\"", "'", "`", "x", "\n", "ͅ", "K", "İ", "$", "%", "e29b", "550e8400", "()"])).map("".join))
def test_the_same_for_texts_made_of_fact_pieces(text):
    n = normal(text)
    for f in facts_in(text):
        assert holds(n, f), f
