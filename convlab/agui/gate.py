"""What a request must pass before the server's routes see it: its Host, its Origin,
the token, and for a run its body.

Why, and where the rules come from (Jupyter Server's ``check_host`` and
``check_origin`` are the model):

- **Host** (DNS rebinding). A page on ``evil.example`` whose name is made to
  resolve to 127.0.0.1 reaches a loopback server as a same-origin page, with
  ``Host: evil.example``. So a request is answered only when its Host (the
  port aside) is ``localhost``, ``127.0.0.1``, ``::1``, the address the
  connection came in on (the bound address; on a wildcard bind, the address
  the client dialled), or a name ``--allowed-host`` gives; any other gets 421.
  A request with no Host (HTTP/1.0, a script) passes: a browser always sends one.
- **Origin** (cross-site requests). A browser names the page that sent a
  request in ``Origin``. A request whose Origin is neither the server's own
  (``scheme://`` + its Host) nor one ``--cors-origin`` names gets 403, on
  every route. No Origin (curl, a script, a plain navigation) passes, as in
  Jupyter.
- **Token.** With a token every route but ``/health`` needs
  ``Authorization: Bearer <token>`` (the chat page may take ``?token=`` once),
  compared in constant time; 401 otherwise.
- **A run's body** must be ``Content-Type: application/json`` (415 otherwise:
  a form or a ``text/plain`` POST, the ones a page may send cross-site without
  asking, never starts a run), at most ``max_body`` bytes (413), all there
  within ``timeout`` seconds (408), and JSON data as the engine takes it
  (400, ``convlab.jsondata.problem``: no ``NaN``/``Infinity``, no integer
  past 64 bits, no lone surrogate, at most 100 levels deep), all of it: a
  run echoes its input back in ``RUN_STARTED``, ``tools`` and
  ``forwardedProps`` included, so what no reader can carry is refused at
  the door, before any file is touched.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..jsondata import MAX_DEPTH, problem

__all__ = ["Gate", "Guard", "Rejected", "read_json", "parse", "error", "host_name", "LOCAL_HOSTS", "BODY_TIMEOUT"]

#: Host names (the port aside) a server always answers to.
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

#: Seconds a run's body may take to arrive, all of it.
BODY_TIMEOUT = 30.0


class Rejected(Exception):
    """A request refused before it reached its route: ``status`` and what is wrong."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _AsciiJSON(JSONResponse):
    """JSON with every non-ASCII character escaped: an error text that quotes odd input
    (a lone surrogate among it) is always sendable."""

    def render(self, content: object) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error(status: int, message: str, **fields: object) -> JSONResponse:
    """The JSON error every refusal of the server is: ``{"error": message, **fields}``.

    >>> error(404, "no thread 'x'").body
    b'{"error":"no thread \\'x\\'"}'
    """
    return _AsciiJSON({"error": message, **fields}, status_code=status)


def host_name(host: str) -> str:
    """The name in a Host header, without its port or IPv6 brackets, lowercased.

    >>> host_name("LocalHost:8000"), host_name("[::1]:8000"), host_name("127.0.0.1")
    ('localhost', '::1', '127.0.0.1')
    """
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


class Gate:
    """ASGI middleware, outermost: the Host and Origin checks (the module docstring)."""

    def __init__(self, app: ASGIApp, cors_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()):
        self.app = app
        self.origins = frozenset(o.rstrip("/").lower() for o in cors_origins)
        self.hosts = LOCAL_HOSTS | {host_name(h) for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._host(scope, headers) or self._origin(scope, headers)
        await (self.app if refusal is None else refusal)(scope, receive, send)

    def _host(self, scope: Scope, headers: dict[str, str]) -> JSONResponse | None:
        host = headers.get("host")
        if host is None:
            return None
        name = host_name(host)
        server = scope.get("server")
        if name in self.hosts or _loopback(name) or (server and name == host_name(_bracketed(server[0]))):
            return None
        return error(421, f"Host {host!r} is not this server's name: it answers to localhost, its loopback and "
                          f"own addresses and the names --allowed-host gives (a page on another name that "
                          f"resolves here is how DNS rebinding starts); to serve under that name, start convlab "
                          f"serve with --allowed-host {name}")

    def _origin(self, scope: Scope, headers: dict[str, str]) -> JSONResponse | None:
        origin = headers.get("origin")
        if origin is None:
            return None
        own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()
        if origin.rstrip("/").lower() in self.origins or origin.lower() == own:
            return None
        return error(403, f"Origin {origin!r} may not use this server (a page on another site cannot write "
                          f"threads or run the model); to let that page in, start convlab serve with "
                          f"--cors-origin {origin}")


class Guard:
    """ASGI middleware, inside CORS (so a 401 reaches a page it allows): every route but
    ``/health`` (and a CORS preflight) needs the token, compared in constant time."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/health" or scope["method"] == "OPTIONS" or self._given(scope):
            await self.app(scope, receive, send)
            return
        response = error(401, "this server needs its token: send 'Authorization: Bearer <token>' "
                              "(the chat page: open it with ?token=<token>)")
        response.headers["WWW-Authenticate"] = "Bearer"
        await response(scope, receive, send)

    def _given(self, scope: Scope) -> bool:
        given = b""
        auth = _headers(scope).get("authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip().encode("latin-1")
        if not given and scope["path"] == "/" and scope["method"] == "GET":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode("latin-1", "replace")
        return hmac.compare_digest(given, self.token)


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope.get("headers", [])}


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


# -- a run's body ----------------------------------------------------------------------------------

async def read_json(request: Request, limit: int, timeout: float = BODY_TIMEOUT) -> Any:
    """A run's body, parsed: raises ``Rejected`` with the status the module docstring gives."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Rejected(415, f"a run's body must be sent as Content-Type: application/json, got "
                            f"{kind or 'no Content-Type'!r}")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Rejected(413, f"the request body is over {limit} bytes")
    try:
        async with asyncio.timeout(timeout):
            raw = await _body(request, limit)
    except TimeoutError:
        raise Rejected(408, f"the request body did not arrive within {timeout:g} s") from None
    except ClientDisconnect:
        raise Rejected(400, "the client went away before its body arrived") from None
    return parse(raw)


async def _body(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Rejected(413, f"the request body is over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse(raw: bytes) -> Any:
    """JSON data as the engine takes it, or ``Rejected(400)`` saying what is not.

    >>> parse(b'{"a": [1, 2.5, "x"]}')
    {'a': [1, 2.5, 'x']}
    >>> parse(b'{"a": NaN}')
    Traceback (most recent call last):
    ...
    convlab.agui.gate.Rejected: body.a: nan is not a JSON number
    """
    try:
        data = json.loads(raw)
    except RecursionError:
        raise Rejected(400, f"body: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as err:  # a 5,000-digit integer too: Python's own limit says so
        raise Rejected(400, f"the body is not JSON: {err}") from None
    found = problem(data, "body")
    if found:
        raise Rejected(400, found)
    return data
