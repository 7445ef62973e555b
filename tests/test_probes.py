"""convlab.tuning.probes: what a judge can still answer about what a compaction dropped (issue 23 part 2)."""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest
from ci_support import cannot_run

import convlab
from convlab.engine import chat_worker
from convlab.tuning.facts import message_text
from convlab.replaying.driver import replay
from convlab.tuning.sweep import tune
from convlab.tuning.retention import PROBE_COLUMNS, RETENTION_COLUMNS, compactions, retention, retention_cost
from convlab.tuning.probes import ANSWER, GRADE, WINDOW_SHARE, Judge, Probed, grade, questions_from
from convlab.tokens import count_tokens

from retention_support import Knowing, config, conv, said, turns


def judge(tmp_path=None, **kwargs):
    llm = Knowing(**kwargs)
    return llm, Judge(llm, cache=tmp_path if tmp_path is not None else False)


# -- the arithmetic -------------------------------------------------------------------
def test_retained_is_correct_compacted_over_correct_full_and_nan_when_none_was_right():
    assert Probed(5, 4, 3).retained == 0.75
    assert math.isnan(Probed(5, 0, 0).retained) and math.isnan(Probed(0, 0, 0, "no JSON").retained)
    assert Probed(0, 0, 0, "nothing dropped", dropped=False).retained == 1.0


# -- questions and grades ---------------------------------------------------------------
def test_questions_are_the_first_json_checked_against_the_span():
    span = "Deploy /srv/app.py at 12:30, it takes 12 ms. Ask Ada Lovelace."
    reply = ('ok [{"question": "Where?", "answer": "/srv/app.py"}, {"question": "", "answer": "12:30"}, '
             '{"question": "When?", "answer": "13:00"}, {"question": "How long?", "answer": "12ms"}, '
             '{"question": "Where?", "answer": "/srv/app.py"}, {"question": "Who?", "answer": 7}, "junk"] [{"question": "x", "answer": "Ada"}]')
    assert questions_from(reply, span, 5) == [("Where?", "/srv/app.py"), ("How long?", "12ms")]
    assert questions_from(reply, span, 1) == [("Where?", "/srv/app.py")]
    assert questions_from('{"questions": [{"question": "Who?", "answer": "Ada Lovelace"}]}', span, 5) == [("Who?", "Ada Lovelace")]
    assert questions_from('{"question": "Who?", "answer": "ada  lovelace"}', span, 5) == [("Who?", "ada  lovelace")]
    assert questions_from("[not json", span, 5) is None and questions_from("no json here", span, 5) is None
    assert questions_from("[]", span, 5) == []


class Grader:
    def __init__(self, says):
        self.says, self.calls = says, 0

    def complete(self, request):
        self.calls += 1
        assert said(request)[0].startswith(GRADE.split("{")[0])
        return {"content": self.says}


def test_grade_asks_the_judge_only_when_the_cheap_checks_cannot_say():
    j = Judge(Grader("no"), cache=False)
    assert grade("The file is /SRV/app.py.", "/srv/app.py", j) is True  # normal forms
    assert grade("it took 12 ms", "12ms", j) is True
    assert grade("I do not know.", "/srv/app.py", j) is False  # no shared word
    assert grade("step 12", "12 steps", j) is False and j.provider.calls == 1  # a shared number: the judge says no
    yes = Judge(Grader("Yes, it does."), cache=False)
    assert grade("the app file in srv", "/srv/app.py", yes) is True and yes.provider.calls == 1


# -- one replay, probed -------------------------------------------------------------------
def test_a_reset_retains_nothing_and_the_frame_has_the_probe_columns():
    llm, j = judge()
    r = replay(conv(turns(4)), config("reset", 1500))
    df = retention(r, judge=j, probes=2)
    assert list(df.columns) == [*RETENTION_COLUMNS, *PROBE_COLUMNS] and len(df) == len(compactions(r))
    row = df.iloc[0]
    assert (row["probes"], row["correct_full"], row["correct_compacted"], row["retained"]) == (2, 2, 0, 0.0)
    assert row["probe_note"] == "" and row["facts_kept"] == 0.0
    assert llm.pids == [os.getpid()] * llm.calls and llm.calls == len(df) * (1 + 2 * 2)  # no grade needed
    assert df.attrs["judge_cost"].calls == llm.calls


def keep_as_new(decision):
    """A worker whose compaction writes every message again, as new messages (no copies): all is dropped, all is said."""
    if decision["type"] != "context.limit":
        return chat_worker(decision)
    again = [{"role": m["role"], "content": m["content"]} for m in decision["messages"]]
    return [{"type": "context.replace", "messages": again}, {"type": "llm.call", "id": decision["call"]["id"]}]


def keep_all(decision):
    if decision["type"] != "context.limit":
        return chat_worker(decision)
    copies = [{"id": m["id"], "role": m["role"], "content": m["content"]} for m in decision["messages"]]
    return [{"type": "context.replace", "messages": copies}, {"type": "llm.call", "id": decision["call"]["id"]}]


def test_a_replace_that_says_everything_again_retains_everything():
    llm, j = judge()
    r = replay(conv(turns(4)), config("reset", 1500), worker=keep_as_new)
    df = retention(r, judge=j, probes=3)
    assert len(df) and (df["dropped_messages"] > 0).all() and (df["probes"] == 3).all()
    assert df["retained"].tolist() == [1.0] * len(df) and (df["correct_compacted"] == df["correct_full"]).all()


def test_a_replace_that_keeps_every_message_drops_nothing_retains_one_and_calls_nothing():
    llm, j = judge()
    df = retention(replay(conv(turns(4)), config("reset", 1500), worker=keep_all), judge=j)
    assert df["retained"].tolist() == [1.0] * len(df) and set(df["probe_note"]) == {"nothing dropped"} and llm.calls == 0


def test_the_cache_answers_a_second_run_with_no_call(tmp_path):
    r = replay(conv(turns(5)), config("reset", 1500))
    llm, j = judge(tmp_path)
    first = retention(r, judge=j, probes=2)
    assert llm.calls > 0 and first.attrs["judge_cost"].cached == 0
    again_llm, again = judge(tmp_path)  # a new process: only the disk
    second = retention(r, judge=again, probes=2)
    assert again_llm.calls == 0 and second.attrs["judge_cost"].calls == 0
    assert second.attrs["judge_cost"].cached == llm.calls
    pd.testing.assert_frame_equal(first, second)


def test_retention_cost_calls_nothing_and_counts_the_calls_a_real_run_makes(tmp_path):
    r = replay(conv(turns(5)), config("reset", 1500))
    llm = Knowing()
    cost = retention_cost(r, llm, probes=2, judge_cache=tmp_path)
    assert llm.calls == 0 and not any(tmp_path.iterdir())  # nothing called, nothing written
    df = retention(r, judge=llm, probes=2, judge_cache=tmp_path)
    assert cost.calls == llm.calls == df.attrs["judge_cost"].calls and cost.cached == 0
    assert cost.estimated == cost.calls - len(df)  # the answer calls rest on stand-in questions; the questions calls do not
    questions = [q for q in llm.requests if "question" in q["messages"][-1]["content"] and not q["messages"][-1]["content"].startswith("Answer")]
    assert cost.input_tokens >= sum(count_tokens(q["messages"]) for q in questions) > 0
    after = retention_cost(r, llm, probes=2, judge_cache=tmp_path)
    assert (after.calls, after.cached, after.estimated) == (0, llm.calls, 0) and llm.calls == df.attrs["judge_cost"].calls


def test_bad_json_is_asked_again_once_then_the_compaction_has_no_probes():
    llm, j = judge(questions="I cannot do JSON, sorry.")
    df = retention(replay(conv(turns(4)), config("reset", 1500)), judge=j)
    assert (df["probes"] == 0).all() and df["retained"].isna().all()
    assert set(df["probe_note"]) == {"the judge's questions were not JSON, twice"}
    assert llm.calls == 2 * len(df) and llm.requests[1]["messages"][-1]["content"].startswith("That was not a JSON array")
    assert llm.requests[1]["messages"][-2] == {"role": "assistant", "content": "I cannot do JSON, sorry."}


def test_a_failing_judge_is_the_rows_note():
    class Failing:
        def complete(self, request):
            raise RuntimeError("the network is down")

    df = retention(replay(conv(turns(4)), config("reset", 1500)), judge=Failing(), judge_cache=False)
    assert (df["probes"] == 0).all() and all(n.startswith("the judge failed: RuntimeError: the network is down") for n in df["probe_note"])


def test_a_long_history_is_cut_to_its_newest_messages_within_the_judges_window():
    llm = Knowing()
    j = Judge(llm, cache=False, window=1200)
    r = replay(conv(turns(6)), config("reset", 1500))
    retention(r, judge=j, probes=1)
    answers = [q for q in llm.requests if q["messages"][-1]["content"].startswith("Answer")]
    assert answers and all(count_tokens(q["messages"][:-1]) <= 1200 * WINDOW_SHARE for q in answers)
    old = compactions(r)[-1].old
    full = [q["messages"][:-1] for q in answers if q["messages"][-2]["content"] == message_text(old[-1])]
    assert full and all(1 <= len(h) < len(old) for h in full)  # the newest kept, the oldest left out
    assert ANSWER.format(question="x").startswith("Answer")


def test_stand_in_summaries_are_probed_flagged_and_left_out_of_tune():
    cs = [conv(turns(4), "c1")]
    llm, j = judge()
    df = retention(replay(cs[0], config("summarize", 1500)), judge=j, probes=1)
    assert set(df["summary"]) == {"stand-in"} and (df["probes"] == 1).all()
    calls = llm.calls
    frame = tune(cs, [config("summarize", 1500)], judge=j, probes=1, progress=False, jobs=1)
    assert math.isnan(frame["retained"].iloc[0]) and llm.calls == calls  # not probed: its score would say nothing


def test_tune_has_retained_the_mean_over_its_compactions_with_calls_only_here(tmp_path):
    cs = [conv(turns(4), "c1"), conv(turns(6), "c2")]
    configs = [config("reset", 1500), config("reset", 2500), config("reset", 10**6)]
    llm, j = judge()
    df = tune(cs, configs, judge=j, probes=2, progress=False, jobs=1)
    assert list(df.columns).index("retained") == list(df.columns).index("facts_kept") + 1
    by = df.set_index(["conversation", "config"])["retained"]
    assert by[("c1", 0)] == 0.0 and by[("c2", 1)] == 0.0 and math.isnan(by[("c1", 2)])  # no compaction: NaN
    made = llm.calls
    assert made == df.attrs["judge_cost"].calls > 0
    assert "retained" not in tune(cs, configs, progress=False, jobs=1).columns  # no judge: no column
    other, in_processes = judge()
    parallel = tune(cs, configs, judge=in_processes, probes=2, progress=False, jobs=2)
    pd.testing.assert_frame_equal(parallel, df)
    assert other.calls == made and other.pids == [os.getpid()] * made  # every call made here, none in a worker


def test_bad_arguments_are_clear_errors():
    r = replay(conv(turns(4)), config("reset", 1500))
    with pytest.raises(ValueError, match="probes must be a whole number"):
        retention(r, judge=Knowing(), probes=0, judge_cache=False)
    with pytest.raises(TypeError, match="judge must be a provider"):
        retention(r, judge=Knowing, judge_cache=False)
    with pytest.raises(ValueError, match="give judge= too"):
        retention(r, judge_cache=False)
    with pytest.raises(ValueError, match="cache= goes to the Judge itself"):
        retention(r, judge=Judge(Knowing(), cache=False), judge_cache=False)
    with pytest.raises(ValueError, match="not dask"):
        tune([conv(turns(2))], config("reset", 1500), judge=Knowing(), scheduler="dask")


def test_the_judges_default_folder_is_under_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert Judge(Knowing()).folder == tmp_path / "convlab" / "judge"


def test_retention_cost_is_on_the_package_face():
    assert convlab.retention_cost is retention_cost


# -- a real judge ------------------------------------------------------------------------
@pytest.mark.localmodel
@pytest.mark.timeout(300)
def test_a_real_local_judge_end_to_end_then_from_the_cache(tmp_path):
    """SmolLM2 (135M) as the judge, for real: what it writes is not asserted (it is a weak judge),
    only that every step ran through it once and a second run is answered by the cache."""
    try:
        llm = convlab.LocalChat(n_ctx=1024, params={"max_completion_tokens": 48})
        llm.start()
    except (ImportError, ValueError, convlab.ProviderError) as err:
        cannot_run(f"the local model cannot start: {err}")
    rows = [("u0", None, "user", "The server is at /srv/app.py and the port is 8080. " + "x" * 600, {}),
            ("a0", "u0", "assistant", "Noted: /srv/app.py on port 8080.", {}),
            ("u1", "a0", "user", "Now restart it. " + "y" * 600, {}),
            ("a1", "u1", "assistant", "Restarted.", {})]
    r = replay(conv(rows), config("reset", 200))
    try:
        with llm:
            cost = retention_cost(r, llm, probes=1, judge_cache=tmp_path)
            df = retention(r, judge=llm, probes=1, judge_cache=tmp_path)
            made = llm.calls
            again = retention(r, judge=llm, probes=1, judge_cache=tmp_path)
    finally:
        llm.close()
    assert len(df) >= 1 and cost.calls >= len(df) and made >= len(df)  # at least the questions calls, for real
    assert df.attrs["judge_cost"].calls == made and (df["probes"] <= 1).all()
    assert llm.calls == made and again.attrs["judge_cost"].calls == 0 and again.attrs["judge_cost"].cached == made
    assert again.equals(df)


def test_one_message_longer_than_the_judge_window_is_cut_to_it_in_tokens():
    """Hex and CJK count more than a token per character: the cut is by tokens, not by characters."""
    from convlab.tuning.probes import _newest

    for text in ("a3f9" * 2000, "漢字仮名交じり文" * 600, "word " * 3000):
        [kept] = _newest([{"role": "user", "content": text}], 200)
        assert 0 < count_tokens(kept["content"]) <= 196 and text.endswith(kept["content"])


@pytest.mark.parametrize("reply, at", [("[" * 3000 + "]" * 3000, 0), ("Here: " + '{"q": ' * 3000 + "1" + "}" * 3000, 6),
                                       ('[{"question": "x", "answer": ' + "[" * 5000, 0)])
def test_a_judge_reply_nested_thousands_deep_is_a_failed_probe_said_in_its_note(reply, at):
    """Issue 40 (3): "A judge's reply nested 3,000 deep makes convlab.retention(r, judge=...) raise RecursionError
    (probes._first_json catches only ValueError): a model's reply is untrusted text; it is a failed probe, said in
    probe_note"."""
    llm, j = judge(questions=reply)
    r = replay(conv(turns(4)), config("reset", 1500))
    df = retention(r, judge=j, probes=2)
    assert len(df) == len(compactions(r)) > 0
    note = (f"the judge failed: the judge's reply nests deeper than Python's JSON reader follows (from character {at}); "
            "it is not read")
    assert df["probe_note"].tolist() == [note] * len(df)
    assert (df["probes"] == 0).all() and df["retained"].isna().all()
