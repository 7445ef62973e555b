"""convlab.replaying.summaries: a summarizer behind an on-disk cache (issue 12 part 2)."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
import warnings

import pandas as pd
import pytest

import convlab
from ci_support import tmpfs
from convlab.providers import EchoLLM
from convlab.replaying.options import Options
from convlab.replaying.summaries import Summaries, answerer, default_folder, model_of, request_key


def request(text, prompt="Summarize.", model=None, ids=True):
    first = {"id": "e1", "role": "user", "content": text} if ids else {"role": "user", "content": text}
    return {"model": model, "messages": [first, {"role": "user", "content": prompt}], "stream": False, "summary": True}


class Slow(EchoLLM):
    """EchoLLM that takes a moment per call and remembers how many ran at once."""

    def __init__(self, pause=0.05):
        super().__init__()
        self.pause, self.running, self.most = pause, 0, 0
        self.lock = threading.Lock()

    def complete(self, request):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.pause)
        try:
            return super().complete(request)
        finally:
            with self.lock:
                self.running -= 1


def test_the_key_is_the_model_the_prompt_and_the_exact_input_not_the_ids():
    """Issue 12: summaries are "keyed by the model, the prompt and the exact input"."""
    key = request_key("EchoLLM", request("a b c"))
    assert key == request_key("EchoLLM", request("a b c", ids=False))  # a replayed history gets new ids
    assert key != request_key("EchoLLM", request("a b c "))
    assert key != request_key("EchoLLM", request("a b c", prompt="Shorter."))
    assert key != request_key("EchoLLM:small", request("a b c"))
    assert model_of(EchoLLM(), request("x", model="small")) == "EchoLLM:small"

    class Named:
        model = "gpt-test"

        def complete(self, request):
            return {"content": "s", "usage": {}}

    assert model_of(Named(), request("x")) == "Named:gpt-test"
    assert model_of(Named(), request("x", model="other")) == "Named:other"


def test_a_second_run_reads_the_disk_and_calls_nothing(tmp_path):
    llm = EchoLLM()
    first = Summaries(llm, tmp_path)
    a = first.complete(request("one two three"))
    assert llm.calls == 1 and first.cost().calls == 1 and first.cost().cached == 0
    assert first.complete(request("one two three")) == a and llm.calls == 1  # memory
    second = Summaries(llm, tmp_path)
    assert second.complete(request("one two three")) == a and llm.calls == 1
    assert (second.cost().calls, second.cost().cached, second.cost().cached_input_tokens) == (0, 1, first.cost().input_tokens)
    entries = list(tmp_path.rglob("*.json"))
    assert len(entries) == 1 and json.loads(entries[0].read_text())["reply"] == a
    # memory only: nothing on disk, a new Summaries calls again
    Summaries(llm, None).complete(request("one two three"))
    assert llm.calls == 2 and len(list(tmp_path.rglob("*.json"))) == 1


def test_a_refusal_as_too_long_is_kept_a_failure_is_not(tmp_path):
    class Refusing:
        def __init__(self, kind):
            self.kind, self.calls = kind, 0

        def complete(self, request):
            self.calls += 1
            raise convlab.ProviderError(self.kind, f"{self.kind} for this input")

    too_long = Refusing("too_long")
    costs = []
    for _ in range(2):
        summaries = Summaries(too_long, tmp_path)
        with pytest.raises(convlab.ProviderError, match="too_long for this input"):
            summaries.complete(request("long"))
        costs.append(summaries.cost())
    assert too_long.calls == 1
    # issue 34 (4): what a sweep's summaries line says of them: refused as too long, made or from the cache
    assert [(c.calls, c.cached, c.refused) for c in costs] == [(1, 0, 1), (0, 1, 1)]
    failed = Refusing("failed")
    for _ in range(2):
        summaries = Summaries(failed, tmp_path)
        with pytest.raises(convlab.ProviderError) as err:
            summaries.complete(request("other"))
        assert err.value.kind == "failed"
        cost = summaries.cost()
        assert (cost.calls, cost.failed, cost.refused, cost.error) == (0, 1, 0, "failed for this input")
    assert failed.calls == 2


def test_an_entry_that_cannot_be_read_is_made_again(tmp_path):
    llm = EchoLLM()
    Summaries(llm, tmp_path).complete(request("x y"))
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text('{"key": "', encoding="utf-8")  # torn by hand
    reply = Summaries(llm, tmp_path).complete(request("x y"))
    assert llm.calls == 2 and json.loads(entry.read_text())["reply"] == reply


def test_the_same_request_from_many_threads_at_once_is_one_call(tmp_path):
    llm = Slow()
    s = Summaries(llm, tmp_path)
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(s.complete(request("same")))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert llm.calls == 1 and len(replies) == 8 and all(r == replies[0] for r in replies)


def _write_many(folder, n):
    s = Summaries(EchoLLM(), folder)
    for i in range(n):
        s.complete(request(f"text {i % 25}"))  # the same 25 entries, written by every process
        s.complete(request(f"own {i} {multiprocessing.current_process().pid}"))
    return s.cost().calls


def test_concurrent_writers_leave_every_entry_whole(tmp_path):
    """Issue 12: "concurrent writers to the cache do not corrupt it"."""
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ctx.Pool(4) as pool:
        made = pool.starmap(_write_many, [(tmp_path, 60)] * 4)
    assert sum(made) >= 25 + 4 * 60
    entries = list(tmp_path.rglob("*.json"))
    assert len(entries) == 25 + 4 * 60
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".json"]  # no temporary file left
    for p in entries:
        entry = json.loads(p.read_text(encoding="utf-8"))
        assert p.stem == entry["key"] and entry["reply"]["content"].startswith("Summary of 1 messages.")
    llm = EchoLLM()
    s = Summaries(llm, tmp_path)
    for i in range(25):
        s.complete(request(f"text {i}"))
    assert llm.calls == 0 and s.cost().cached == 25


def test_the_default_folder_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_folder() == tmp_path / "convlab" / "summaries"
    Options(summarizer=EchoLLM()).summaries().complete(request("x"))
    assert len(list((tmp_path / "convlab" / "summaries").rglob("*.json"))) == 1
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_folder() == tmp_path / "home" / ".cache" / "convlab" / "summaries"


def test_what_the_summary_options_take():
    """The summarizer and its cache, checked where every option is (``Options``; was ``summaries_for``)."""
    assert Options().summaries() is None
    with pytest.raises(ValueError, match="cache= is where a summarizer's summaries are kept"):
        Options(summary_cache=False)
    with pytest.raises(ValueError, match=r"tune_cost \(a dry run\) says what a summarizer's calls would cost"):
        Options().summaries(dry_run=True)
    with pytest.raises(TypeError, match="summarizer must be a provider"):
        Options(summarizer="openai:gpt-4.1-mini")
    with pytest.raises(TypeError, match="cache must be a folder"):
        Options(summarizer=EchoLLM(), summary_cache=True)
    assert Options(summarizer=EchoLLM(), summary_cache=False).summaries().folder is None



# -- issue 40 (1): a cache that cannot be written never throws a written summary away ---------------------------


def _unwritable(kind, tmp_path):
    """A cache folder on a real read-only tmpfs, or on a full one."""
    return tmpfs(tmp_path / "disk", "64k", read_only=kind == "read-only", full=kind == "full")


@pytest.mark.parametrize("kind", ["read-only", "full"])
@pytest.mark.parametrize("where", ["the disk itself", "a folder not made yet"])
def test_a_cache_that_cannot_be_written_loses_no_summary_and_says_so_once(kind, where, tmp_path):
    llm = EchoLLM()
    with _unwritable(kind, tmp_path) as disk:
        folder = disk if where == "the disk itself" else disk / "convlab" / "summaries"
        s = Summaries(llm, folder)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = s.complete(request("one two three " * 300))  # more than the tmpfs page left, on a full disk
            second = s.complete(request("four five six " * 300))
            again = s.complete(request("one two three " * 300))  # from memory: no call
        said = [w.message for w in caught if issubclass(w.category, convlab.CacheWarning)]
        assert first["content"].startswith("Summary of 1 messages.") and again == first and second != first
        assert llm.calls == 2
        cost = s.cost()
        assert (cost.calls, cost.failed, cost.unkept, cost.cached) == (2, 0, 2, 0)
        assert cost.input_tokens > 0
        assert len(said) == 1, [str(w) for w in said]  # once, however many entries it could not keep
        assert said[0].folder == str(folder) and str(folder) in str(said[0])
        expected = "Read-only file system" if kind == "read-only" else "No space left on device"
        assert said[0].reason == expected and expected in str(said[0])
        assert [p.name for p in disk.rglob("*") if p.is_file()] == (["filler"] if kind == "full" else [])  # no torn entry


def test_a_sweep_on_an_unwritable_cache_holds_the_same_summaries_as_on_a_writable_one(tmp_path):
    from test_tuning import claude_code_lines

    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(claude_code_lines(8, chars=3000)))
    [c] = convlab.read(path, progress=False)
    cfg = "[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = 'summarize'\nover_tokens = 2000\n"
    writable = convlab.tune([c], cfg, progress=False, summarizer=EchoLLM(), summary_cache=tmp_path / "ok")
    with _unwritable("read-only", tmp_path) as disk, pytest.warns(convlab.CacheWarning, match="cannot be written"):
        unwritable = convlab.tune([c], cfg, progress=False, summarizer=EchoLLM(), summary_cache=disk)
    columns = ["summaries", "summary_tokens", "tokens_read", "saved", "stale", "failed_turns"]
    assert writable["summaries"].iloc[0] > 0
    assert unwritable[columns].values.tolist() == writable[columns].values.tolist()
    made, lost = writable.attrs["summary_cost"], unwritable.attrs["summary_cost"]
    assert (lost.calls, lost.unkept, lost.failed) == (made.calls, made.calls, 0) and made.unkept == 0


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_the_judge_cache_that_cannot_be_written_loses_no_answer(kind, tmp_path):
    from convlab.tuning.probes import Judge

    llm = EchoLLM()
    with _unwritable(kind, tmp_path) as disk, pytest.warns(convlab.CacheWarning) as said:
        j = Judge(llm, cache=disk / "judge")
        assert j.complete({"messages": [{"role": "user", "content": "hi " * 2000}]})["content"].startswith("echo: hi")
        assert j.complete({"messages": [{"role": "user", "content": "hi " * 2000}]}) is not None
    assert llm.calls == 1 and j.cost().calls == 1 and j.cost().unkept == 1
    assert [w.message.folder for w in said] == [str(disk / "judge")]


def test_the_key_holds_the_server_its_params_and_its_context(tmp_path, monkeypatch):
    """Issue 40 (1): "after OPENAI_BASE_URL changed, cached too_long refusals from the first server answered for the
    second": two real servers on loopback, one that refuses as too long and one that answers."""
    from providers_wire import LLAMACPP_TOO_LONG, Loopback, openai_completion

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
    with Loopback(lambda path, body, headers: (400, LLAMACPP_TOO_LONG)) as small, \
            Loopback(lambda path, body, headers: (200, openai_completion("the summary"))) as large:
        monkeypatch.setenv("OPENAI_BASE_URL", small.url)
        with pytest.raises(convlab.ProviderError, match="exceeds the available context size"):
            Summaries(convlab.provider("openai:gpt-4.1-mini"), tmp_path).complete(request("long text"))
        monkeypatch.setenv("OPENAI_BASE_URL", large.url)
        s = Summaries(convlab.provider("openai:gpt-4.1-mini"), tmp_path)
        assert s.complete(request("long text"))["content"] == "the summary"
        assert (len(small.requests), len(large.requests), s.cost().calls, s.cost().cached) == (1, 1, 1, 0)
        # the same server again: the cache answers
        again = Summaries(convlab.provider("openai:gpt-4.1-mini"), tmp_path)
        assert again.complete(request("long text"))["content"] == "the summary" and len(large.requests) == 1
        # other params (temperature, max tokens) change the answer: another key
        hot = Summaries(convlab.OpenAIChat("gpt-4.1-mini", params={"temperature": 1.0}), tmp_path)
        hot.complete(request("long text"))
        assert len(large.requests) == 2 and large.requests[-1][1]["temperature"] == 1.0
    assert answerer(EchoLLM(window=100)) != answerer(EchoLLM(window=200))
    key = "sk-proj-" + "k" * 40
    said = answerer(convlab.OpenAIChat("m", api_key=key, base_url=f"http://me:{key}@127.0.0.1:9/v1?key={key}"))
    assert said == {"server": "http://127.0.0.1:9/v1"}  # the public part of the URL: no credential in a key or an entry


@pytest.mark.parametrize("damage", ["nested 2,000 deep", "a reply nested 150 deep", "a message that is a list",
                                    "a usage no provider reports", "not an object", "another key"])
def test_a_damaged_cache_entry_is_made_again_never_a_crash(damage, tmp_path):
    """Issue 40 (3): "A cache entry nested 2,000 deep was an internal error in one run: read every cache entry as
    untrusted too (made again when damaged)"."""
    llm = EchoLLM()
    made = Summaries(llm, tmp_path).complete(request("x y"))
    (entry,) = tmp_path.rglob("*.json")
    good = json.loads(entry.read_text())
    deep = lambda n: "[" * n + "]" * n  # noqa: E731
    text = {"nested 2,000 deep": '{"key": "%s", "reply": %s}' % (good["key"], deep(2000)),
            "a reply nested 150 deep": json.dumps({**good, "reply": {"content": json.loads(deep(150)), "usage": {}}}),
            "a message that is a list": json.dumps({"key": good["key"], "error": "too_long", "message": json.loads(deep(50))}),
            "a usage no provider reports": json.dumps({**good, "reply": {**good["reply"], "usage": {"input_tokens": -10**9}}}),
            "not an object": deep(3000),
            "another key": json.dumps({**good, "key": "0" * 64})}[damage]
    entry.write_text(text)
    s = Summaries(llm, tmp_path)
    reply = s.complete(request("x y"))
    if damage == "a usage no provider reports":  # the entry is whole, its usage is not: used, without the usage
        assert llm.calls == 1 and reply["content"] == made["content"] and reply["usage"] == {}
        return
    assert llm.calls == 2 and reply == made and s.cost().cached == 0
    assert json.loads(entry.read_text()) == good  # made again, and written whole


class _Refusing:
    """A summarizer that refuses every summary call (``kind``: ``too_long``, as a small model's context does, or
    ``failed``, as a server's HTTP 400 does), naming a model other than the session's."""

    model = "gpt-4.1-mini"

    def __init__(self, kind):
        self.kind, self.calls = kind, 0

    def complete(self, request):
        self.calls += 1
        raise convlab.ProviderError(self.kind, "maximum context length is 8192 tokens" if self.kind == "too_long" else
                                    "HTTP 400 invalid_request_error: unsupported content[].type")


@pytest.mark.realdata
@pytest.mark.filterwarnings("ignore::convlab.errors.SummaryWarning")  # (the failed ones are said: tested elsewhere)
@pytest.mark.parametrize("kind", ["too_long", "failed"])
@pytest.mark.parametrize("model", [None, "claude-sonnet-4-5"])
def test_a_summary_call_the_summarizer_refused_or_failed_reads_caches_and_costs_nothing(kind, model):
    """The audit of issue 34: on the real subagent.jsonl at a window of 48,000 with a summarizer that refuses every
    summary, the model calls read exactly the baseline's 454,704 tokens, yet the row said 1,434,989 (saved -216%)
    refused as too long and 837,765 failed; with a model 30 refused summaries cost $0.39; its cached was 1,169,935
    without a model and 428,853 with one; the records said refused: False. A summary call the provider refused or
    failed reads nothing, caches nothing, costs nothing, and its record says which: the row is the baseline's,
    column for column, with or without a model."""
    from realdata import require

    from convlab.replaying.driver import replay
    from convlab.tuning.measures import measures

    conv = convlab.read(require() / "claude_code" / "subagent.jsonl")[0]
    config = {"agent": {"bot": {"context": {"window": 48000, "strategy": [{"use": "summarize"}]}}}}
    summarizer = _Refusing(kind)
    df = convlab.tune([conv], config, summarizer=summarizer, summary_cache=False, model=model, progress=False, jobs=1)
    row = df.iloc[0]
    base = measures(replay(conv, model=model))  # the log as it was: no strategy
    assert summarizer.calls and row["summary_calls"] >= 10 and row["summaries"] == 0
    assert (row["tokens_read"], row["baseline_tokens_read"], row["saved"]) == (base["tokens_read"], 454_704, 0.0)
    assert (row["cached"], row["cache_write"]) == (base["cached"], base["cache_write"]) == (428_853, 25_850)
    if model is None:
        assert pd.isna(row["usd"])
    else:
        assert row["usd"] == pytest.approx(row["baseline_usd"]) and row["usd"] == pytest.approx(base["usd"])
    calls = replay(conv, config, summarizer=summarizer, summary_cache=False, model=model).summary_calls
    assert calls and all((c.refused, c.failed) == (kind == "too_long", kind == "failed") and not c.answered for c in calls)
    assert all(c.cached == 0 and c.cache_write == 0 and c.usd == (None if model is None else 0.0) for c in calls)


def test_a_summarizer_on_another_model_reads_nothing_cached_with_or_without_a_model_to_price_in():
    """The audit of issue 34: a column must not depend on --model. Without a model to price in, the summarizer's
    model was dropped, and its calls read the session's cache as if on the session's model; with one they read
    nothing cached. A summarizer naming another model than the log's reads nothing cached either way."""
    from convlab.tree import Tree
    from convlab.conversation import Conversation
    from convlab.replaying.driver import replay

    t, parent = Tree(), None
    for i in range(6):
        t.add({"id": f"u{i}", "role": "user", "content": f"question {i} " + "word " * 3000, "time": 10.0 * i}, parent)
        t.add({"id": f"a{i}", "role": "assistant", "content": "ok", "time": 10.0 * i + 1, "metadata": {"model": "claude-opus-4-6"},
               "usage": {"input_tokens": 3100 * (i + 1), "output_tokens": 1}}, f"u{i}")
        parent = f"a{i}"
    t.head = parent
    conv = Conversation(t, id="c")
    config = {"agent": {"bot": {"context": {"window": 24000, "strategy": [{"use": "summarize"}]}}}}

    class Named(EchoLLM):
        def __init__(self, model):
            super().__init__()
            self.model = model

    for name, shares in (("gpt-4.1-mini", False), ("claude-opus-4-6", True)):
        runs = [replay(conv, config, summarizer=Named(name), summary_cache=False, model=m).summary_calls
                for m in (None, "claude-opus-4-6")]
        assert runs[0] and [[c.cached for c in r] for r in runs][0] == [[c.cached for c in r] for r in runs][1]
        assert all((c.cached > 0) == shares for c in runs[0]), (name, [c.cached for c in runs[0]])
