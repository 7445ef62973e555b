"""Probes: what a model can still answer about what a compaction dropped, asked of a judge model.

Why: ``facts_kept`` checks by string what a new context still states; a
model may still know more (a summary that paraphrases) or less (a fact
buried where it is not found). Probing asks: a judge writes question/answer
pairs about the dropped span, each question is asked with the full history
and with the compacted one, and each answer is graded against the
reference. ``retained`` is the share of the questions answered right with
the full history that are still answered right with the compacted one.

The three prompts (``QUESTIONS``, ``ANSWER``, ``GRADE``) and their rules:

- questions: one call over the dropped span (its messages as plain text,
  then the ``QUESTIONS`` prompt). The reply's first JSON array or object
  is read (``questions_from``): pairs with a non-empty ``question`` and
  ``answer`` whose answer the span states (``convlab.tuning.facts.holds`` on the
  span's normal form); up to ``n``. A reply with no JSON is asked again
  once (``RETRY``, after the bad reply); twice bad, the compaction has no
  probes, and a note says so;
- answers: each question in a prompt of its own (several in one prompt
  bias the score), after the history as plain text;
- grades (``grade``): an answer that holds the reference (normal forms) is
  right; one that shares no word of three letters or more, nor a number,
  with it is wrong; only in between is the judge asked (``GRADE``, yes or
  no).

A history longer than about 70% of the judge's window (``Judge.window``,
o200k_base tokens) is cut to its newest messages that fit.

Every call goes through a ``Judge``: a provider behind a disk cache keyed by
the model, the prompt and the exact input, as summaries are
(``convlab.replaying.summaries``; the folder ``$XDG_CACHE_HOME/convlab/judge``,
``cache=False`` in memory), so a rerun makes no call. Calls are made in the
calling process only: a sweep's worker processes hold a ``Relayed`` judge
that sends each request back there, as their summary calls go.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import providers
from ..errors import ProviderError
from ..replaying.model import Summarize
from ..replaying.options import folder_of
from ..replaying.summaries import Summaries, SummaryFolder, default_folder
from ..tokens import count_tokens
from .facts import Fact, holds, message_text, normal

__all__ = ["QUESTIONS", "RETRY", "ANSWER", "GRADE", "Judge", "JudgeCost", "Relayed", "Probed", "Asking",
           "questions_from", "grade", "probe", "judge_for", "DEFAULT_WINDOW", "WINDOW_SHARE", "JUDGE_KEY", "JUDGE_HINT"]

QUESTIONS = ("Write up to {n} short questions that the conversation above answers, each with its answer copied "
             "word for word from it (a number, a name, a path, a date, a word). Reply with only a JSON array: "
             '[{{"question": "...", "answer": "..."}}]')
RETRY = ('That was not a JSON array. Reply with only the JSON array, nothing else: [{{"question": "...", "answer": "..."}}] '
         "(up to {n} objects).")
ANSWER = "Answer in a few words, from the conversation above only: {question}"
GRADE = ("Reference answer: {reference}\nGiven answer: {answer}\n"
         "Does the given answer state the reference answer? Reply with one word: yes or no.")

#: The judge's window when neither ``window=`` nor the provider's ``n_ctx`` says it (tokens).
DEFAULT_WINDOW = 128_000
#: The share of the judge's window a history may take (the rest: the prompt, the reply, the tokenizer's drift).
WINDOW_SHARE = 0.7
#: The key a ``Relayed`` judge's requests carry to the calling process (taken off before the call).
JUDGE_KEY = "judge"
#: How a caller gives the judge's cache a folder that can be written, or does without one: what the
#: ``CacheWarning`` of a folder that cannot be written says (``convlab tune`` has no judge).
JUDGE_HINT = ("judge_cache=DIR to tune or retention, Judge(provider, cache=DIR), or XDG_CACHE_HOME=DIR (the default "
              "folder is under it); judge_cache=False keeps them in memory only")

_WORD = re.compile(r"[^\W_]+")


class Asking(Protocol):
    """What probing calls: ``complete(request)``, the reply (None: not known, in a dry run), and the
    judge's ``window`` in tokens."""

    window: int

    def complete(self, request: Mapping[str, Any], guessed: bool = False) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class JudgeCost:
    """What a judge's calls cost, or in a dry run would: ``calls`` made (or still to make: not in the
    cache), ``input_tokens`` they read (the provider's usage; in a dry run the exact o200k_base count of
    what each would send), ``cached`` answered by the cache; ``estimated``: in a dry run, calls counted on
    a stand-in (an answer call for a question not written yet); grades needed are not known before the
    answers, so a dry run counts only those whose answers the cache holds. ``unkept``: calls among
    ``calls`` whose answer the cache's folder could not keep (read-only, full: a ``CacheWarning`` says
    which and why), used all the same and made again by a later run."""

    calls: int
    input_tokens: int
    cached: int
    estimated: int = 0
    unkept: int = 0

    def __add__(self, other: JudgeCost) -> JudgeCost:
        """Two sweeps' judge costs together (``tune`` with ``presets.AUTO`` runs one per agent)."""
        return JudgeCost(*(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)))


class Judge:
    """A judge model: ``provider`` behind a disk cache (``cache``: None for ``$XDG_CACHE_HOME/convlab/judge``,
    a folder, or False for memory only), each distinct request (model, prompt, exact input) made once.
    ``window`` (tokens): ``window=``, else the provider's ``n_ctx`` (``convlab.LocalChat``), else
    ``DEFAULT_WINDOW``. ``dry_run=True``: ``complete`` calls nothing, answering from the cache or None,
    and ``cost()`` says what a real run would spend.

    >>> from convlab.providers import EchoLLM
    >>> j = Judge(EchoLLM(), cache=False)
    >>> j.complete({"messages": [{"role": "user", "content": "hi"}]})["content"], j.window, j.cost()
    ('echo: hi', 128000, JudgeCost(calls=1, input_tokens=1, cached=0, estimated=0, unkept=0))
    """

    def __init__(self, provider: providers.Provider, cache: SummaryFolder = None, *, window: int | None = None,
                 dry_run: bool = False):
        if isinstance(provider, type) or not callable(getattr(provider, "complete", None)):
            raise TypeError(f"judge must be a provider (with complete(request)), e.g. convlab.LocalChat(), got {provider!r}")
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 64):
            raise ValueError(f"judge window must be a whole number of tokens (at least 64) or None, got {window!r}")
        folder = folder_of(cache, "cache", default_folder().parent / "judge")
        n_ctx = getattr(provider, "n_ctx", None)
        self.window = window or (n_ctx if isinstance(n_ctx, int) else DEFAULT_WINDOW)
        self.provider = provider
        self.dry_run = dry_run
        self._calls = Summaries(provider, folder, hint=JUDGE_HINT)  # the cache of model calls, as summaries are kept

    @property
    def folder(self) -> Path | None:
        return self._calls.folder

    def __repr__(self) -> str:
        return f"Judge({self.provider!r}, folder={None if self.folder is None else str(self.folder)!r}, window={self.window})"

    def complete(self, request: Mapping[str, Any], guessed: bool = False) -> dict[str, Any] | None:
        """The reply (a ``ProviderError`` when the provider fails); in a dry run the cached reply or None.
        ``guessed``: the request rests on a stand-in (dry runs only)."""
        if not self.dry_run:
            return self._calls.complete(request)
        return self._calls.estimate(request, count_tokens(request["messages"]), guessed)

    def cost(self) -> JudgeCost:
        c = self._calls.cost()
        return JudgeCost(calls=c.calls, input_tokens=c.input_tokens, cached=c.cached, estimated=c.estimated, unkept=c.unkept)


def judge_for(judge: providers.Provider | Judge, cache: SummaryFolder = None, *, dry_run: bool = False) -> Judge:
    """``judge`` as a ``Judge``: a provider wrapped (with ``cache``), a ``Judge`` as it is (for a dry
    run, its twin that calls nothing, on the same cache)."""
    if isinstance(judge, Judge):
        if cache is not None:
            raise ValueError("judge_cache= goes to the Judge itself (Judge(provider, cache=...)), not beside it")
        if dry_run and not judge.dry_run:
            return Judge(judge.provider, judge.folder or False, window=judge.window, dry_run=True)
        return judge
    return Judge(judge, cache, dry_run=dry_run)


class Relayed:
    """In a sweep's worker process: a judge whose requests go to the calling process (``ask``, the
    worker's channel, as summary calls go), which holds the ``Judge`` and its cache."""

    def __init__(self, ask: Summarize, window: int):
        self.ask, self.window = ask, window

    def complete(self, request: Mapping[str, Any], guessed: bool = False) -> dict[str, Any] | None:
        return self.ask({**request, JUDGE_KEY: True}, 0, guessed)


# -- the questions ------------------------------------------------------------------
def _first_json(text: str) -> Any:
    """The first JSON array or object in ``text`` (None: there is none). The text is a model's, untrusted: a
    value nested deeper than Python's JSON reader follows is a failed call (``ProviderError``), never a crash."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text, m.start())[0]
        except ValueError:
            continue
        except RecursionError:
            raise ProviderError("failed", f"the judge's reply nests deeper than Python's JSON reader follows (from "
                                          f"character {m.start():,}); it is not read") from None
    return None


def questions_from(reply_text: str, span_text: str, n: int) -> list[tuple[str, str]] | None:
    """The question/answer pairs of a judge's reply, checked: the first JSON array or object in it
    (an object is one pair, or holds the list of them), each pair's ``question`` and ``answer``
    non-empty strings and the answer stated by ``span_text`` (normal forms, ``convlab.tuning.facts.holds``);
    the first ``n``, each question once. None when the reply holds no JSON (asked again once); a reply
    nested deeper than JSON can be read is a ``ProviderError`` (a failed probe, said in its note).

    >>> questions_from('Sure: [{"question": "Who?", "answer": "Ada"}, {"question": "When?", "answer": "May"}]', "Ask Ada.", 5)
    [('Who?', 'Ada')]
    >>> questions_from("no idea", "Ask Ada.", 5) is None
    True
    """
    found = _first_json(reply_text)
    if found is None:
        return None
    if isinstance(found, Mapping):
        lists = [v for v in found.values() if isinstance(v, list)]
        found = lists[0] if lists and "question" not in found else [found]
    span = normal(span_text)
    out: dict[str, str] = {}
    for pair in found if isinstance(found, list) else ():
        if not isinstance(pair, Mapping):
            continue
        q, a = pair.get("question"), pair.get("answer")
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            a = str(a)
        if not (isinstance(q, str) and isinstance(a, str) and q.strip() and normal(a)):
            continue
        if holds(span, _reference(a)) and q.strip() not in out:
            out[q.strip()] = a.strip()
    return list(out.items())[:n]


def _reference(text: str) -> Fact:
    # a "number" fact: a number with a unit holds joined or spaced (12 ms, 12ms); any other text as it is
    return Fact("number", text)


# -- grading ------------------------------------------------------------------------
def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(normal(text)) if len(w) >= 3 or w.isdigit()}


def grade(answer: str, reference: str, judge: Asking) -> bool | None:
    """Whether ``answer`` states ``reference``: True when it holds it (normal forms); False when the two
    share no word of three letters or more and no number; else the judge says (``GRADE``: a reply
    starting with yes). None only when the judge's reply is not known (a dry run).

    >>> from convlab.providers import EchoLLM
    >>> j = Judge(EchoLLM(), cache=False)
    >>> grade("It took 12 ms.", "12ms", j), grade("Blue.", "red", j), j.cost().calls
    (True, False, 0)
    """
    if holds(normal(answer), _reference(reference)):
        return True
    if not _words(answer) & _words(reference):
        return False
    reply = judge.complete({"model": None, "messages": [
        {"role": "user", "content": GRADE.format(reference=reference, answer=answer)}]})
    if reply is None:
        return None
    return normal(str(reply.get("content") or "")).lstrip("\"'*` ").startswith("yes")


# -- one compaction -----------------------------------------------------------------
@dataclass(frozen=True)
class Probed:
    """A compaction probed: ``probes`` questions asked, ``correct_full`` answered right with the full
    history, ``correct_compacted`` with the compacted one (right with both: a question the full
    history cannot answer says nothing of the compaction); ``note``: why there are fewer probes
    than asked ("" when nothing is to say); ``dropped``: whether the compaction dropped anything."""

    probes: int
    correct_full: int
    correct_compacted: int
    note: str = ""
    dropped: bool = True

    @property
    def retained(self) -> float:
        """``correct_compacted / correct_full``; 1.0 when nothing was dropped, NaN when no question
        was answered with the full history."""
        if not self.dropped:
            return 1.0
        return self.correct_compacted / self.correct_full if self.correct_full else math.nan


def _plain(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as plain text a judge reads (``message_text``), user or assistant, the empty left out."""
    out = []
    for m in messages:
        text = message_text(m)
        if text.strip():
            out.append({"role": "assistant" if m.get("role") == "assistant" else "user", "content": text})
    return out


def _tail(text: str, budget: int) -> str:
    """The end of ``text`` that counts ``budget`` o200k_base tokens or fewer (a text's token count is not
    its characters': hex or CJK count more than one a character)."""
    cut = text[-budget * 4:]  # prose runs about 4 characters a token: start there, then cut until it fits
    while cut and count_tokens(cut) > budget:
        cut = cut[len(cut) // 8 or 1:]  # drop an eighth of the head at a time
    return cut


def _newest(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The newest messages whose o200k_base count fits ``budget`` (one at least, cut to its tail)."""
    kept: list[dict[str, Any]] = []
    left = budget
    for m in reversed(messages):
        n = count_tokens(m["content"]) + 4
        if n > left:
            if not kept:
                kept.append({**m, "content": _tail(m["content"], max(1, budget - 4))})
            break
        kept.append(m)
        left -= n
    return kept[::-1]


def _request(history: list[dict[str, Any]], prompt: str) -> dict[str, Any]:
    return {"model": None, "messages": [*history, {"role": "user", "content": prompt}]}


def _questions(span: list[dict[str, Any]], judge: Asking, n: int) -> tuple[list[tuple[str, str]] | None, bool]:
    """The judge's pairs about ``span`` (a retry on a reply with no JSON), and whether they are
    stand-ins (a dry run: the reply is not known, so ``n`` placeholder questions are counted)."""
    text = "\n".join(m["content"] for m in span)
    request = _request(span, QUESTIONS.format(n=n))
    reply = judge.complete(request)
    if reply is None:
        return [(f"(question {k + 1})", "") for k in range(n)], True
    pairs = questions_from(str(reply.get("content") or ""), text, n)
    if pairs is None:
        again = {**request, "messages": [*request["messages"], {"role": "assistant", "content": str(reply.get("content") or "")},
                                         {"role": "user", "content": RETRY.format(n=n)}]}
        reply = judge.complete(again)
        if reply is None:
            return [(f"(question {k + 1})", "") for k in range(n)], True
        pairs = questions_from(str(reply.get("content") or ""), text, n)
    return pairs, False


def probe(dropped: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]],
          judge: Asking, n: int = 5) -> Probed:
    """One compaction probed (``Probed``): up to ``n`` questions about ``dropped``, each asked after
    ``old`` (the full history) and after ``new`` (the compacted one), one per prompt, then graded.
    A ``ProviderError`` of the judge's is the row's note (no probes).

    >>> class Knows:  # a judge that writes one question and answers it from what its prompt holds
    ...     window = 1000
    ...     def complete(self, request, guessed=False):
    ...         said = request["messages"][-1]["content"]
    ...         if said.startswith("Write"):
    ...             return {"content": '[{"question": "Where?", "answer": "/srv/app.py"}]'}
    ...         seen = " ".join(m["content"] for m in request["messages"][:-1])
    ...         return {"content": "/srv/app.py" if "/srv/app.py" in seen else "no idea"}
    >>> old = [{"role": "user", "content": "deploy /srv/app.py"}, {"role": "assistant", "content": "done"}]
    >>> p = probe(old[:1], old, old[1:], Knows(), 3)
    >>> p.probes, p.correct_full, p.correct_compacted, p.retained
    (1, 1, 0, 0.0)
    """
    if not dropped:
        return Probed(0, 0, 0, "nothing dropped", dropped=False)
    budget = int(judge.window * WINDOW_SHARE)
    try:
        pairs, guessed = _questions(_newest(_plain(dropped), budget), judge, n)
        if pairs is None:
            return Probed(0, 0, 0, "the judge's questions were not JSON, twice")
        if not pairs:
            return Probed(0, 0, 0, "none of the judge's answers is stated by the dropped span")
        histories = [_newest(_plain(h), budget) for h in (old, new)]
        full = compacted = 0
        for question, reference in pairs:
            right = []
            for history in histories:
                reply = judge.complete(_request(history, ANSWER.format(question=question)), guessed)
                right.append(reply is not None and bool(grade(str(reply.get("content") or ""), reference, judge)))
            full += right[0]
            compacted += right[0] and right[1]
    except ProviderError as err:
        return Probed(0, 0, 0, f"the judge failed: {err}")
    note = "" if len(pairs) == n else f"the judge wrote {len(pairs)} questions the dropped span answers ({n} asked)"
    return Probed(len(pairs), full, compacted, note)
