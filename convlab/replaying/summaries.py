"""Real summaries for replay and tune: a summarizer behind an on-disk cache.

A replay answers every model call from the log, but a log holds no reply for
a summary it never asked for. Given a summarizer (any provider), a replay
sends its summary calls there instead of writing a stand-in. Summaries cost
money and time, and a sweep asks for the same one many times (every config
that summarizes at the same point of the same history), so each is made
once: ``Summaries`` answers from memory, then from the disk cache, and only
then calls the model, once per distinct request even when several replays
ask at the same moment (from threads, or from worker processes through
their calling process, ``convlab.tune``).

A request's key is the model (the provider's class and model name, or the
strategy's ``model``), what else of the provider changes its answer
(``answerer``: the server it calls, the public part of its base URL; the
parameters every call sends, temperature, max tokens; the context it answers
within), the prompt (the request's last message) and the exact input (every
message before it: role, content and the message keys, without ids: the same
history replayed twice gets new ids). An entry is one JSON file written to a
temporary name and renamed into place, so a reader never sees a half-written
one and concurrent writers of the same entry leave one whole file. An entry is
read as untrusted: one that cannot be read, is not whole, or nests deeper than
JSON data may (``jsondata.MAX_DEPTH``) is made again. A refusal as too long is
kept too (the same input is refused again); a failed call is not.

A folder that cannot be written (read-only, a full disk) costs nothing the
model returned: the reply is used all the same, counted as not kept
(``SummaryCost.unkept``), and one ``CacheWarning`` names the folder and why.

The cache's folder: ``summary_cache=`` (a path), or ``$XDG_CACHE_HOME/convlab/summaries``
(default ``~/.cache/convlab/summaries``); ``summary_cache=False`` keeps summaries in
memory only, for one replay or one sweep.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from .. import inputs, jsondata, providers
from ..errors import CacheWarning, ProviderError, SummaryWarning
from ..providers.sdk import public_url
from ..tree import MESSAGE_KEYS, input_tokens

__all__ = ["Summaries", "SummaryCost", "default_folder", "model_of", "answerer", "request_key",
           "SummaryFolder", "SUMMARY_HINT"]


#: Where a summarizer's summaries are kept (``Options.summary_cache``): None (``default_folder``), a folder,
#: or False (memory only).
SummaryFolder: TypeAlias = str | os.PathLike[str] | Literal[False] | None

#: How a caller gives the summary cache a folder that can be written, or does without one: what the
#: ``CacheWarning`` of a folder that cannot be written says. The same words reach a caller of ``tune`` or
#: ``replay`` and a user of ``convlab tune``, so each names what it has.
SUMMARY_HINT = ("summary_cache=DIR to tune or replay, or XDG_CACHE_HOME=DIR (the default folder is under it, "
                "for `convlab tune` too); summary_cache=False or --no-summary-cache keeps them in memory only")


def default_folder() -> Path:
    """Where summaries are cached unless told otherwise: ``$XDG_CACHE_HOME/convlab/summaries``
    (``~/.cache/convlab/summaries`` when ``XDG_CACHE_HOME`` is not set)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "convlab" / "summaries"


def model_of(provider: object, request: Mapping[str, Any]) -> str:
    """The model that answers ``request``: the provider's class and the request's model
    (a strategy's ``model``), else the provider's own ``model``.

    >>> from convlab.providers import EchoLLM
    >>> model_of(EchoLLM(), {"model": None}), model_of(EchoLLM(), {"model": "small"})
    ('EchoLLM', 'EchoLLM:small')
    """
    model = request.get("model") or getattr(provider, "model", None)
    name = type(provider).__name__
    return f"{name}:{model}" if model else name


def answerer(provider: object) -> dict[str, Any]:
    """What of ``provider`` beside its model changes its answer, for the cache key: the server it calls
    (``server``: the public part of its client's base URL, ``providers.sdk.public_url``; a server that
    answered ``too_long`` says nothing of another), the parameters every call sends (``params``:
    temperature, max tokens, ...), and the context it answers within (``n_ctx``, ``window``). A local
    model's own server (a free port each run) is none of them: its model and ``n_ctx`` are.

    >>> from convlab.providers import EchoLLM
    >>> answerer(EchoLLM()), answerer(EchoLLM(window=500))
    ({}, {'window': 500})
    """
    out: dict[str, Any] = {}
    client = vars(provider).get("client") if hasattr(provider, "__dict__") else None  # an SDK's client, never one a property makes
    url = getattr(client, "base_url", None)
    if url is not None:
        out["server"] = public_url(url)
    params = getattr(provider, "params", None)
    if isinstance(params, Mapping) and params:
        out["params"] = json.loads(json.dumps(dict(params), sort_keys=True, default=repr))
    for name in ("n_ctx", "window"):
        value = getattr(provider, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def request_key(model: str, request: Mapping[str, Any], answering: Mapping[str, Any] | None = None) -> str:
    """The cache key of a summary request: sha256 of the model, what else of the provider changes
    its answer (``answering``, ``answerer``'s), the prompt (the last message) and the exact input
    before it, ids left out.

    >>> a = {"messages": [{"id": "e1", "role": "user", "content": "hi"}, {"role": "user", "content": "Summarize."}]}
    >>> b = {"messages": [{"id": "e9", "role": "user", "content": "hi"}, {"role": "user", "content": "Summarize."}]}
    >>> request_key("EchoLLM", a) == request_key("EchoLLM", b) != request_key("Other", a)
    True
    >>> request_key("OpenAIChat:m", a, {"server": "http://one/v1"}) != request_key("OpenAIChat:m", a, {"server": "http://two/v1"})
    True
    """
    messages = list(request.get("messages") or [])
    prompt, before = (messages[-1], messages[:-1]) if messages else ({}, [])
    body = {
        "model": model,
        "prompt": prompt.get("content"),
        "input": [{k: m[k] for k in ("role", "content", *MESSAGE_KEYS) if m.get(k) is not None} for m in before],
    }
    if answering:  # left out when empty: the keys of a provider with nothing more to say stay as they were
        body["answerer"] = dict(answering)
    raw = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SummaryCost:
    """What the summaries of a replay or a sweep cost, or would cost.

    ``calls``: distinct summary calls made, answered (or refused as too
    long), or in a dry run still to make (not in the cache); ``input_tokens``:
    what they read (the provider's usage; in a dry run the exact o200k_base
    count of what each would send).
    ``cached``: distinct summaries the cache answered (or holds), and
    ``cached_input_tokens`` what they read when they were made: what the
    cache saves. ``estimated``: in a dry run, the calls among ``calls`` whose
    input is known only once another call the sweep makes is answered (a
    later summary of a replay whose earlier summary is not cached yet): they
    were counted with the stand-in summary in its place, so ``calls`` and
    ``input_tokens`` are estimates unless ``exact``. ``failed``: distinct
    summary calls the provider failed (kept nowhere: asked again next time;
    not among ``calls``), and ``error`` what it said to the first of them.
    ``refused``: the calls among ``calls`` (and ``cached``) the provider
    refused as too long (the summarizer's context is smaller than what it
    was asked to summarize: the engine shortens it, at most three times, then
    runs the held call as it was), and ``refusal`` what it said to the first of
    them. ``answered``: the summaries made or from the cache that the provider
    did not refuse. ``unkept``: the calls among ``calls`` whose
    answer the cache's folder could not keep (read-only, full: a
    ``CacheWarning`` says which and why): used all the same, made again by a
    later run.
    """

    calls: int
    input_tokens: int
    cached: int
    cached_input_tokens: int
    estimated: int = 0
    failed: int = 0
    error: str = field(default="", repr=False)
    refused: int = 0
    unkept: int = 0
    refusal: str = field(default="", repr=False)

    @property
    def exact(self) -> bool:
        """True when no figure rests on a stand-in for a summary not made yet."""
        return self.estimated == 0

    @property
    def answered(self) -> int:
        """The summary calls the provider answered with a summary (made in this run or from the cache):
        ``calls`` and ``cached`` less the ones it refused as too long."""
        return self.calls + self.cached - self.refused

    def __add__(self, other: SummaryCost) -> SummaryCost:
        """Two sweeps' summaries together (``tune`` with ``presets.AUTO`` runs one per agent): the counts added,
        the first error said."""
        return SummaryCost(self.calls + other.calls, self.input_tokens + other.input_tokens, self.cached + other.cached,
                           self.cached_input_tokens + other.cached_input_tokens, self.estimated + other.estimated,
                           self.failed + other.failed, self.error or other.error, self.refused + other.refused,
                           self.unkept + other.unkept, self.refusal or other.refusal)


class Summaries:
    """Summary calls to ``provider``, each distinct one made once: from memory, from
    the disk cache (``folder``; None: no disk), else from the provider.

    ``complete(request)`` is a provider's ``complete``: the reply, or a
    ``ProviderError``. It is safe to call from several threads at once: the
    same request asked twice at the same moment makes one call.
    ``estimate(request, tokens, guessed)`` spends nothing: the reply the
    cache holds, or None, noting the call a real run would make. ``cost()``
    says what was spent (or, after ``estimate``, what would be).

    >>> import tempfile
    >>> from convlab.providers import EchoLLM
    >>> llm = EchoLLM()
    >>> s = Summaries(llm, tempfile.mkdtemp())
    >>> request = {"model": None, "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "Sum up."}], "summary": True}
    >>> s.complete(request)["content"]
    'Summary of 1 messages.\\nuser: hi'
    >>> again = Summaries(llm, s.folder)  # a second sweep: from the disk
    >>> _ = again.complete(request); llm.calls, again.cost()
    (1, SummaryCost(calls=0, input_tokens=0, cached=1, cached_input_tokens=4, estimated=0, failed=0, refused=0, unkept=0))
    """

    def __init__(self, provider: providers.Provider, folder: str | os.PathLike | None, *, hint: str = SUMMARY_HINT):
        """``hint``: how the caller gives the folder, said when it cannot be written (a judge's cache: ``probes.JUDGE_HINT``)."""
        if not callable(getattr(provider, "complete", None)):
            raise TypeError(f"a summarizer is a provider (with complete(request)), got {provider!r}")
        self.provider = provider
        self.folder = Path(folder).expanduser() if folder is not None else None
        self.hint = hint
        self._answering = answerer(provider)  # what else of the provider changes its answer: in every key
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, Any]] = {}  # key -> entry
        self._asked: dict[str, Future] = {}  # key -> the call in flight
        self._made: dict[str, int] = {}  # key -> input tokens, per call made
        self._from_disk: dict[str, int] = {}  # key -> input tokens when it was made, per entry the disk answered
        self._needed: dict[str, list] = {}  # estimate: key -> [tokens, guessed], per call a real run would make
        self._failed: dict[str, str] = {}  # key -> what the provider said, per call that failed
        self._unkept: set[str] = set()  # the keys of entries made that the folder could not keep
        self._unwritable = ""  # why the folder cannot be written (said once, by a CacheWarning)

    def __repr__(self) -> str:
        return f"Summaries({self.provider!r}, folder={None if self.folder is None else str(self.folder)!r})"

    def cost(self) -> SummaryCost:
        with self._lock:
            refused = [entry for key in (*self._made, *self._from_disk)
                       if (entry := self._known.get(key, {})).get("error") == "too_long"]
            return SummaryCost(
                calls=len(self._made) + len(self._needed),
                input_tokens=sum(self._made.values()) + sum(t for t, _ in self._needed.values()),
                cached=len(self._from_disk),
                cached_input_tokens=sum(self._from_disk.values()),
                estimated=sum(1 for _, guessed in self._needed.values() if guessed),
                failed=len(self._failed),
                error=next(iter(self._failed.values()), ""),
                refused=len(refused),
                unkept=len(self._unkept),
                refusal=next((str(entry.get("message") or "") for entry in refused), ""),
            )

    def warn_failed(self, stacklevel: int = 3) -> None:
        """A ``SummaryWarning`` when summary calls failed: the replays that asked went on without them."""
        with self._lock:
            failed = list(self._failed.values())
        if failed:
            many = f"{len(failed)} summary calls" if len(failed) > 1 else "a summary call"
            warnings.warn(SummaryWarning(
                f"{many} to {self.provider!r} failed ({failed[0]}): the replays that asked went on without that summary, "
                "so their rows are not what the summarizer makes; run again to retry (the summaries made are cached)"),
                stacklevel=stacklevel)

    # -- entries -----------------------------------------------------------
    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        """The entry on disk, checked as untrusted, or None (not there, not whole, not an entry, nested
        deeper than JSON data may: made again)."""
        if self.folder is None:
            return None
        try:
            with open(self._path(key), encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError, RecursionError):  # RecursionError: json's reader, on an entry nested thousands deep
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or not ("reply" in entry or entry.get("error") == "too_long"):
            return None
        if not isinstance(entry.get("message", ""), str):
            return None
        if "reply" in entry:
            try:
                entry["reply"] = inputs.reply_from(entry["reply"])
            except ProviderError:
                return None
        return entry

    def _keep(self, key: str, entry: dict[str, Any]) -> None:
        """The entry onto the disk. A folder that cannot be written (read-only, full) loses nothing the model
        returned: the entry is used from memory all the same, counted as not kept, and one ``CacheWarning``
        names the folder and why."""
        if self.folder is None:
            return
        try:
            self._write(key, entry)
        except OSError as err:
            reason = err.strerror or str(err) or type(err).__name__
            with self._lock:
                self._unkept.add(key)
                first, self._unwritable = not self._unwritable, self._unwritable or reason
            if first:
                warnings.warn(CacheWarning(
                    f"the cache folder {self.folder} cannot be written ({reason}): the replies {self.provider!r} makes are "
                    f"used in this run but not kept, so a later run asks for them again (give it a folder that can be "
                    f"written: {self.hint})", folder=str(self.folder), reason=reason), stacklevel=2)

    def _write(self, key: str, entry: dict[str, Any]) -> None:
        if self.folder is None:
            return
        jsondata.write_whole(self._path(key), entry)  # atomic: readers see the old file or the whole new one

    def _remembered(self, key: str) -> dict[str, Any] | None:
        """The entry memory holds, else the disk's (then remembered, and counted as cached)."""
        with self._lock:
            entry = self._known.get(key)
        if entry is not None:
            return entry
        entry = self._read(key)
        if entry is not None:
            with self._lock:
                self._known.setdefault(key, entry)
                self._from_disk.setdefault(key, _read_tokens(entry))
        return entry

    # -- what a replay asks --------------------------------------------------
    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        model = model_of(self.provider, request)
        key = request_key(model, request, self._answering)
        mine: Future[dict[str, Any]] | None = None
        with self._lock:
            entry = self._known.get(key)
            waiting = self._asked.get(key) if entry is None else None
            if entry is None and waiting is None:
                mine = self._asked[key] = Future()
        if entry is None and waiting is not None:
            entry = waiting.result()  # another thread is making it
        elif entry is None:
            assert mine is not None, "made above, under the lock: this thread makes the entry"
            try:
                entry = self._remembered(key) or self._call(key, model, request)
                mine.set_result(entry)
            except BaseException as err:
                mine.set_exception(err)
                raise
            finally:
                with self._lock:
                    self._asked.pop(key, None)
        return _answer(entry)

    def estimate(self, request: Mapping[str, Any], tokens: int, guessed: bool) -> dict[str, Any] | None:
        """The cached reply to ``request``, or None (a real run would call: counted,
        with ``tokens``, its input's exact count; ``guessed``: the input holds a
        stand-in for an earlier summary). Spends nothing."""
        key = request_key(model_of(self.provider, request), request, self._answering)
        entry = self._remembered(key)
        if entry is not None:
            return _answer(entry)
        with self._lock:
            need = self._needed.setdefault(key, [tokens, guessed])
            need[1] = need[1] and guessed  # known for sure once any replay asks for it unguessed
        return None

    def _call(self, key: str, model: str, request: Mapping[str, Any]) -> dict[str, Any]:
        try:
            reply = providers.call(self.provider, dict(request))  # whatever it raises is a failed call, redacted
        except ProviderError as err:
            if err.kind != "too_long":
                with self._lock:
                    self._failed.setdefault(key, str(err))
                raise  # a failure is not the input's: asked again next time
            entry: dict[str, Any] = {"key": key, "model": model, "error": "too_long", "message": str(err)}
        else:
            entry = {"key": key, "model": model, "reply": reply}
        with self._lock:  # the model's answer is this run's from here, whatever the disk does
            self._known[key] = entry
            self._made[key] = _read_tokens(entry)
        self._keep(key, entry)
        return entry


def _read_tokens(entry: Mapping[str, Any]) -> int:
    return input_tokens(entry["reply"].get("usage")) or 0 if "reply" in entry else 0


def _answer(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A cache entry as a provider answers: a fresh copy of the reply, or the refusal."""
    if "reply" in entry:
        return jsondata.copy(entry["reply"])
    raise ProviderError("too_long", entry.get("message"))
