"""Options: the knobs a replay and a sweep share, as one checked value.

``convlab.replay``, ``convlab.tune``, ``convlab.tune_cost`` and
``convlab.search`` each take an ``Options`` (``options=``) or its fields as
keywords (``model="claude-sonnet-4-5"``), or both (the keywords win). Every
field is checked here, once, when the value is made: a bad one is a
``TypeError`` or ``ValueError`` naming it, before any work. What only a
sweep's scheduling needs (``jobs``, ``progress``, ``scheduler``, ``client``,
``chunk``) stays a parameter of the sweep.

Three caches, three names: ``summary_cache`` (the folder where a
summarizer's summaries are kept), ``judge_cache`` (where a judge's answers
are kept) and ``prompt_cache`` (the provider's own prompt cache, whose rule
and lifetime ``prompt_cache_ttl`` the replay predicts each call's reads by).
The earlier names ``cache`` and ``cache_ttl`` still work, with a
``DeprecationWarning``.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .cost import Pricing
from .summaries import Summaries, SummaryFolder, default_folder

if TYPE_CHECKING:
    from ..engine import Worker
    from ..providers import Provider

__all__ = ["Options", "options_of", "takes_options", "renamed", "check_worker", "check_summary_size", "check_overhead",
           "check_summary_request", "check_probes", "folder_of", "RENAMED", "SUMMARY_REQUESTS"]

#: Earlier names of options, and the option each is now.
RENAMED = {"cache": "summary_cache", "cache_ttl": "prompt_cache_ttl"}


def check_worker(worker: object) -> Worker | None:
    """``worker`` checked as a replay takes it: None (the engine's proposal answers each
    ``context.limit``) or a callable that takes a decision and returns actions
    (``convlab.compact``'s compactions; any worker ``Session(worker=...)`` takes)."""
    if worker is None or callable(worker):
        return worker
    hint = " (the engine's own proposal is worker=None)" if worker in ("chat", "manual") else ""
    raise TypeError(f"worker must be None or a callable worker such as convlab.compact.sliding_window(), got {worker!r}{hint}")


def check_summary_size(value: object) -> int | float | None:
    """``summary_size`` checked: None, a ratio in (0, 1], or a whole number of tokens."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"summary_size must be a ratio of what a summary summarizes (a float, 0 < r <= 1), "
                         f"a whole number of tokens, or None (the stand-in's own lines), got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"summary_size as tokens must be at least 1, got {value!r}")
        return value
    if not 0 < value <= 1:
        raise ValueError(f"summary_size as a ratio must be more than 0 and at most 1, got {value!r}"
                         + (f" (for {int(value)} tokens, give the whole number {int(value)})" if value > 1 and value.is_integer() else ""))
    return float(value)


#: How a summary call is sent (``Options.summary_request``).
SUMMARY_REQUESTS = ("shared", "bare")


def check_summary_request(value: object) -> str:
    """``summary_request`` checked: ``"shared"`` or ``"bare"``."""
    if value not in SUMMARY_REQUESTS:
        raise ValueError(f"summary_request must be 'shared' (sent as the engine sends it: the agent's system prompt "
                         f"and tools, then the path: the session's cached prefix) or 'bare' (the summary prompt and "
                         f"the messages alone: no cached prefix), got {value!r}")
    return str(value)


def check_overhead(value: object) -> int | None:
    """``overhead`` checked: None (measured from the log) or a whole number of tokens, 0 or more."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"overhead must be a whole number of tokens (0 or more), or None to measure it from the log, got {value!r}")
    return value


def check_probes(probes: object) -> int:
    """``probes`` checked: a whole number of questions per compaction, at least 1."""
    if not isinstance(probes, int) or isinstance(probes, bool) or probes < 1:
        raise ValueError(f"probes must be a whole number of questions per compaction (at least 1), got {probes!r}")
    return probes


def folder_of(cache: object, name: str, default: Path) -> Path | None:
    """A cache folder option checked: None (``default``), a folder, or False (memory only: None)."""
    if cache is None:
        return default
    if cache is False:
        return None
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache).expanduser()
    raise TypeError(f"{name} must be a folder (str or path), False (no cache) or None (the default folder), got {cache!r}")


def _provider(value: object, name: str) -> None:
    if value is None:
        return
    if isinstance(value, type):
        raise TypeError(f"{name} must be a provider, not its class: {value.__name__}(...)")
    if not callable(getattr(value, "complete", None)):
        hint = f": for a spec, {name}=convlab.provider({value!r})" if isinstance(value, str) else ""
        raise TypeError(f"{name} must be a provider (with complete(request)), e.g. convlab.EchoLLM(), got {value!r}{hint}")


@dataclass(frozen=True)
class Options:
    """The knobs of a replay, and of every replay of a sweep (the module says how they are given).

    - ``agent``: the agent id whose ``[agent.<id>.context]`` a config is read for.
    - ``worker``: what answers each ``context.limit`` (None: the engine's
      proposal; a ``convlab.compact`` compaction: its own, as in a live
      ``Session(worker=...)``).
    - ``summary_size``: how long the stand-in summary is (None: one short line
      per message summarized; a float ``0 < r <= 1``: that share of what it
      summarizes; an int: that many tokens). ``ReplayLLM`` says the rule.
    - ``overhead``: the hidden prompt (system prompt and tools) of a call the
      log's usage does not answer (None: measured from the log; an int: that
      many tokens).
    - ``summary_request``: how a summary call is sent. ``"shared"`` (the
      default) is what the engine's summarize does: the same provider with
      the same parameters (its tools) and the session's path from its root,
      then the prompt, so it reads the agent's hidden prompt too and, on
      the session's model while the cache is warm, reads that prefix from
      the prompt cache. ``"bare"``: the prompt and the messages alone (no
      system prompt, no tools: opencode's compaction call), so no cached
      prefix. A summarizer on another model (``summarizer=`` naming one
      other than ``model``) reads nothing cached either way: a cache is per
      model.
    - ``summarizer``: the provider summary calls go to (None: the stand-in);
      ``summary_cache``: where its summaries are kept (None:
      ``$XDG_CACHE_HOME/convlab/summaries``; a folder; False: memory only).
    - ``model``: the genai-prices model (or ``provider:model``) every call is
      priced at, in dollars (None: no dollars); ``prompt_cache``: the prompt
      cache's rule (``"anthropic"``, ``"openai"``, None for none, ``"auto"``:
      the model's, else the log's model's) and ``prompt_cache_ttl`` its
      lifetime (``"5m"``, ``"1h"`` or seconds; None: the provider's own,
      Anthropic's default 5 minutes, OpenAI's best-effort retention as the
      log's calls after idle gaps show it, else 5 minutes; docs/cache.md).
    - ``judge``: a provider (or a ``convlab.tuning.probes.Judge``) that probes
      what each compaction dropped (a sweep's ``retained``); ``judge_cache``:
      where its answers are kept (as ``summary_cache``; the default folder is
      ``$XDG_CACHE_HOME/convlab/judge``); ``probes``: questions per compaction.
    - ``result_cache``: where a sweep keeps each (conversation, config)'s
      row, so that running it again replays only what is new and a sweep
      stopped halfway goes on from where it stopped (None:
      ``$XDG_CACHE_HOME/convlab/tune``; a folder; False: nothing kept;
      ``convlab.tuning.results``). A replay keeps nothing.

    >>> Options(model="claude-sonnet-4-5").pricing is not None
    True
    >>> Options(summary_size=1.5)
    Traceback (most recent call last):
    ...
    ValueError: summary_size as a ratio must be more than 0 and at most 1, got 1.5
    """

    agent: str = "bot"
    worker: Worker | None = None
    summary_size: int | float | None = None
    overhead: int | None = None
    summary_request: str = "shared"
    summarizer: Provider | None = None
    summary_cache: SummaryFolder = None
    model: str | None = None
    prompt_cache: str | None = "auto"
    prompt_cache_ttl: float | str | None = None
    judge: Provider | None = None
    judge_cache: SummaryFolder = None
    probes: int = 5
    result_cache: SummaryFolder = None
    #: how the calls are priced (``cost.Pricing``), made from ``model``, ``prompt_cache`` and ``prompt_cache_ttl``
    pricing: Pricing | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.agent, str) or not self.agent:
            raise TypeError(f"agent must be an agent id (a non-empty str, as in [agent.<id>.context]), got {self.agent!r}")
        check_worker(self.worker)
        check_summary_size(self.summary_size)
        check_overhead(self.overhead)
        check_summary_request(self.summary_request)
        _provider(self.summarizer, "summarizer")
        if self.summarizer is None and self.summary_cache is not None:
            raise ValueError("summary_cache= is where a summarizer's summaries are kept: give summarizer= too")
        folder_of(self.summary_cache, "summary_cache", Path())
        _provider(self.judge, "judge")
        if self.judge is None and self.judge_cache is not None:
            raise ValueError("judge_cache= is where a judge's answers are kept: give judge= too")
        folder_of(self.judge_cache, "judge_cache", Path())
        check_probes(self.probes)
        folder_of(self.result_cache, "result_cache", Path())
        object.__setattr__(self, "pricing", self._pricing())

    def _pricing(self) -> Pricing | None:
        """How a replay's calls are priced, checked (an unknown model is a ``PriceError`` naming close ones);
        None when nothing is: no model and no cache rule."""
        if self.model is None and self.prompt_cache is None:
            return None
        named = getattr(self.summarizer, "model", None) if self.summarizer is not None else None
        # the summarizer's model with or without a model to price in: whether its calls share the session's
        # prompt cache is the same either way (a column of a row never depends on whether dollars were asked for)
        return Pricing(self.model, self.prompt_cache, self.prompt_cache_ttl, named if isinstance(named, str) else None)

    def summaries(self, *, dry_run: bool = False) -> Summaries | None:
        """The ``Summaries`` summary calls go to (None: no summarizer, the stand-in answers them)."""
        if self.summarizer is None:
            if dry_run:
                raise ValueError("tune_cost (a dry run) says what a summarizer's calls would cost: give summarizer= too")
            return None
        return Summaries(self.summarizer, folder_of(self.summary_cache, "summary_cache", default_folder()))

    def replaying(self) -> dict[str, Any]:
        """What every ``Replayer`` of a replay or a sweep takes (``summary_size``, ``overhead``,
        ``summary_request``, ``pricing``): nothing a worker process cannot be sent (no provider)."""
        return {"summary_size": self.summary_size, "overhead": self.overhead, "summary_request": self.summary_request,
                "pricing": self.pricing}


#: The option names, in order.
NAMES = tuple(f.name for f in dataclasses.fields(Options) if f.init)


def options_of(options: Options | None, knobs: Mapping[str, Any], where: str) -> Options:
    """``options`` (None: the defaults) with ``knobs`` (options by name) over it, checked. An earlier name
    (``RENAMED``) is taken with a ``DeprecationWarning``; any other unknown name is a ``TypeError`` naming
    the close ones, as Python names an unknown keyword.

    >>> options_of(None, {"modle": "gpt-4o"}, "replay")
    Traceback (most recent call last):
    ...
    TypeError: replay() got an unknown option 'modle' (did you mean 'model'?)
    """
    if options is not None and not isinstance(options, Options):
        raise TypeError(f"{where}: options must be a convlab.replaying.options.Options, got {type(options).__name__} "
                        f"(give the knobs by name: {where}(..., model=...))")
    given = renamed(knobs, RENAMED, where, stacklevel=4)
    if "dry_run" in given:
        raise TypeError(f"{where}() takes no dry_run: convlab.tune_cost(...) says what the summaries would cost")
    unknown = [k for k in given if k not in NAMES]
    if unknown:
        close = difflib.get_close_matches(unknown[0], NAMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (options: {', '.join(NAMES)})"
        raise TypeError(f"{where}() got an unknown option {unknown[0]!r}{hint}")
    if options is None:
        return Options(**given)
    return dataclasses.replace(options, **given) if given else options


def renamed(knobs: Mapping[str, Any], names: Mapping[str, str], where: str, stacklevel: int = 3) -> dict[str, Any]:
    """``knobs`` with each earlier name in ``names`` given its new name, with a ``DeprecationWarning`` (both
    given: a ``TypeError``)."""
    given = dict(knobs)
    for old, new in names.items():
        if old in given:
            if new in given:
                raise TypeError(f"{where}() got both {old}= and {new}=: {old} is {new}'s earlier name")
            warnings.warn(f"{where}({old}=...) is now {new}=", DeprecationWarning, stacklevel=stacklevel)
            given[new] = given.pop(old)
    return given


_F = TypeVar("_F", bound=Callable[..., Any])


def takes_options(fn: _F) -> _F:
    """``fn``'s signature, as ``help()`` and a notebook's completion show it, with each option as a keyword
    in place of its ``**knobs`` (the options are written once, in ``Options``)."""
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    defaults = {f.name: f.default for f in dataclasses.fields(Options) if f.init}
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name]) for name in NAMES]
    fn.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return fn
