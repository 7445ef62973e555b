"""convlab.replaying.summaries: a summarizer behind an on-disk cache (issue 12 part 2)."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time

import pytest

import convlab
from convlab.providers import EchoLLM
from convlab.replaying.summaries import Summaries, default_folder, model_of, request_key
from convlab.replaying.options import Options


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