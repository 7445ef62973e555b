"""What the real providers share: the model, the SDK client, the measured time,
the refusals and the secrets.

``OpenAIChat`` and ``AnthropicChat`` differ only in how messages, replies and
errors look in their API; everything around a call is here, once: the call is
timed (``latency``, which moves the session's clock), an SDK error becomes a
``ProviderError`` whose text never holds a key, and the repr names the model
and the server, never a credential.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..errors import ProviderError

__all__ = ["SDKChat", "redact", "public_url", "SECRET_MIN", "PIECE_MIN"]

#: the SDK's synchronous client (``openai.OpenAI``, ``anthropic.Anthropic``)
Client = TypeVar("Client")

# what looks like an API key in a provider's own error text (OpenAI echoes a
# masked key on a 401: "Incorrect API key provided: sk-proj-****abcd"; both
# OpenAI's and Anthropic's keys start with sk-)
_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*]{4,}")
# a credential as a transport prints a request's headers ("Authorization:
# Bearer ...", "x-api-key: ...", "api_key=..."): the value goes, the name stays
_HEADERLIKE = re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=\-]{8,}")
_ASSIGNLIKE = re.compile(r"(?i)\b(x-api-key|api[-_]?key|auth[-_]?token|password)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",;&]{4,}")


#: a key shorter than this is no secret (a local server's ``api_key="-"``, ``"none"``,
#: ``"EMPTY"``): replacing it would mangle every text it occurs in (``chatcmpl***abc``)
SECRET_MIN = 8

#: a run of this many characters of a secret, or more, is a piece of it: redacted wherever it
#: appears (a server that echoes the key without its ``sk-proj-`` prefix, or cut in two)
PIECE_MIN = 12


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret of ``SECRET_MIN`` characters or more, every run of
    ``PIECE_MIN`` characters or more of a secret (a piece of it, case-sensitive, wherever
    it appears), and anything shaped like an API key or a credential header's value,
    replaced by ``***``.

    >>> redact("Incorrect API key provided: sk-proj-****wxyz. Key sk-abcdef123456 used", ["sk-abcdef123456"])
    'Incorrect API key provided: ***. Key *** used'
    >>> redact("no choices in chatcmpl-abc", ["-"])
    'no choices in chatcmpl-abc'
    >>> redact("headers={'Authorization': 'Bearer abc.def-ghi_jkl', 'x-api-key': 'k3y-value'}", [])
    "headers={'Authorization': 'Bearer ***', 'x-api-key': '***'}"
    >>> redact("key Zq8R2mX4vN7pL1 and wK9sT3yB6c0123 (invalid)", ["sk-proj-Zq8R2mX4vN7pL1wK9sT3yB6c0123"])
    'key *** and *** (invalid)'
    """
    for secret in secrets:
        if len(secret) >= SECRET_MIN:
            text = text.replace(secret, "***")
    for secret in secrets:
        if len(secret) >= PIECE_MIN:
            text = _without_pieces(text, secret)
    text = _HEADERLIKE.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    text = _ASSIGNLIKE.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    return _KEYLIKE.sub("***", text)


def _without_pieces(text: str, secret: str) -> str:
    """``text`` with every run of ``PIECE_MIN`` characters or more of ``secret`` replaced by ``***``: each
    ``PIECE_MIN``-character piece of the secret is found where it occurs (``str.find``), and the runs the
    found pieces make, overlapping or side by side, go whole."""
    spans = []
    for piece in {secret[i:i + PIECE_MIN] for i in range(len(secret) - PIECE_MIN + 1)}:
        at = text.find(piece)
        while at != -1:
            spans.append((at, at + PIECE_MIN))
            at = text.find(piece, at + 1)
    if not spans:
        return text
    spans.sort()
    out, kept_to, run_start, run_end = [], 0, spans[0][0], spans[0][1]
    for start, end in [*spans[1:], (len(text) + 1, len(text) + 1)]:
        if start <= run_end:
            run_end = max(run_end, end)
            continue
        out += [text[kept_to:run_start], "***"]
        kept_to, run_start, run_end = run_end, start, end
    return "".join(out) + text[kept_to:]


def public_url(url: object) -> str:
    """A base URL as it may be shown: no user, password, query or fragment.

    >>> public_url("http://me:secret@127.0.0.1:8000/v1?key=abc")
    'http://127.0.0.1:8000/v1'
    """
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


class SDKChat(Generic[Client]):
    """A chat model behind an official SDK: subclasses say how their API speaks.

    A subclass sets ``sdk`` (the import name), ``reserved`` (request
    parameters the provider sets itself), ``client_class`` and
    ``client_call`` (what a ready client is, and the method a call uses) and
    implements ``make_client``, ``call`` (one reply), ``call_streaming``
    (text deltas, then the reply), ``refusal`` (an SDK error -> a
    ``ProviderError`` made by ``failed``, or None when it is not the SDK's)
    and ``secrets`` (the client's credentials, to keep out of every text).
    """

    sdk = ""
    reserved: tuple[str, ...] = ("model", "messages", "stream")
    client_class = ""  # what a ready client is, e.g. "openai.OpenAI"
    client_call: tuple[str, ...] = ()  # the attribute path of the method a call uses

    def __init__(self, model: str, client: Client | None = None, params: Mapping[str, Any] | None = None, client_kwargs: Mapping[str, Any] | None = None):
        name = type(self).__name__
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"{name}: model must be a non-empty string, got {model!r}")
        if client is not None and client_kwargs:
            raise ValueError(f"{name}: give a ready client or the options to make one ({', '.join(sorted(client_kwargs))}), not both")
        if params is not None and not isinstance(params, Mapping):
            raise ValueError(f"{name}: params must be a dict of request parameters, got {type(params).__name__}")
        for key in params or {}:
            if key in self.reserved:
                raise ValueError(f"{name}: params[{key!r}] is set by convlab on every call; {self.why_reserved(key)}")
        if client is not None:
            self.check_client(client)
        self.model = model
        self.params = dict(params or {})
        self.client: Client = client if client is not None else self.make_client(dict(client_kwargs or {}))
        self.latency = 0.0
        self.calls = 0

    def check_client(self, client: object) -> None:
        """A ready client must be the SDK's synchronous one (a mistake here would only show at the first call)."""
        name = type(self).__name__
        kind = type(client).__name__
        if kind.startswith("Async"):
            raise ValueError(f"{name}: client is an {kind}; convlab calls the model synchronously: pass an {self.client_class}")
        target = client
        for attr in self.client_call:
            target = getattr(target, attr, None)
        if not callable(target):
            hint = " (an httpx client goes in http_client=..., or in the SDK client you pass)" if "httpx" in type(client).__module__ else ""
            raise ValueError(f"{name}: client must be an {self.client_class} (it has no {'.'.join(self.client_call)}), got a {kind}{hint}")

    def sdk_client(self, make: Callable[..., Client], options: dict[str, Any]) -> Client:
        """The SDK's client made from ``options``; a keyword the client does not take says where it belongs."""
        try:
            return make(**options)
        except TypeError as err:
            raise TypeError(f"{type(self).__name__}({self.model!r}): {err}; request parameters (temperature, max_tokens, "
                            "tools, ...) go in params={...}") from None

    # -- what a subclass provides ---------------------------------------------
    def make_client(self, options: dict[str, Any]) -> Client:
        raise NotImplementedError

    def call(self, model: str, messages: list[Mapping[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def call_streaming(self, model: str, messages: list[Mapping[str, Any]]) -> Iterator[Any]:
        raise NotImplementedError

    def refusal(self, err: BaseException, model: str) -> ProviderError | None:
        raise NotImplementedError

    def secrets(self) -> list[str]:
        raise NotImplementedError

    @staticmethod
    def why_reserved(key: str) -> str:
        return "the call's model comes from the provider or the llm.call action, the messages from the session"

    # -- the provider protocol (convlab.providers) -----------------------------
    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One reply to ``request`` (not streamed); ``latency`` is how long it took."""
        model = request.get("model") or self.model
        with self._calling(model):
            return self.call(model, list(request.get("messages") or []))

    def stream(self, request: Mapping[str, Any]) -> Iterator[Any]:
        """The reply to ``request`` through the SDK's streaming API: its text
        deltas as they arrive, then the reply; ``latency`` is how long it took."""
        model = request.get("model") or self.model
        with self._calling(model):
            yield from self.call_streaming(model, list(request.get("messages") or []))

    @contextlib.contextmanager
    def _calling(self, model: str) -> Iterator[None]:
        """One call: counted, timed into ``latency``, and an SDK error turned into a ``ProviderError``."""
        start = time.monotonic()
        self.calls += 1
        try:
            yield
        except Exception as err:
            refused = self.refusal(err, model)
            if refused is None:
                raise
            raise refused from None
        finally:
            self.latency = time.monotonic() - start

    def failed(self, detail: str, model: str, kind: str = "failed") -> ProviderError:
        """A refusal whose text names the provider and the model called, and holds no secret."""
        return ProviderError(kind, redact(f"{self.sdk} {model}: {detail}", self.secrets()))

    def __repr__(self) -> str:
        url = getattr(self.client, "base_url", None)
        where = f", base_url={redact(public_url(url), self.secrets())!r}" if url is not None else ""
        return f"{type(self).__name__}({self.model!r}{where})"

    def __getstate__(self) -> Any:
        raise TypeError(f"{self!r} holds a live SDK client (and its key) and is not pickled; make one in each process")
