"""Serving the app with uvicorn: in the foreground (``convlab serve``) or from a
background thread on a free port (a notebook, a test).

A free port is taken by binding the socket here (port 0) and handing it to
uvicorn, so there is no window in which another process can take it.

Uvicorn closes a keep-alive connection that idles, but waits for ever for a
request's head: a client that opens connections and sends a header byte now
and then holds them all (slowloris). So the HTTP protocol here is uvicorn's
h11 one with a deadline: a connection whose request line and headers are not
all there within ``header_timeout`` seconds of its first byte (or of its
opening, or of the last response) gets 408 and is closed. The body has its
own deadline in the app (``BODY_TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

__all__ = ["Server", "start", "serve", "listen", "is_loopback", "HEADER_TIMEOUT"]

#: Seconds a request's line and headers may take to arrive.
HEADER_TIMEOUT = 10.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _config(app: ASGIApp, header_timeout: float) -> uvicorn.Config:
    import uvicorn

    return uvicorn.Config(app, lifespan="off", log_level="warning", timeout_graceful_shutdown=2,
                          http=_deadlined(header_timeout))


_SLOW = b"the request's line and headers did not arrive in time\n"
_TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
              b"content-length: %d\r\n\r\n%s" % (len(_SLOW), _SLOW))


def _deadlined(header_timeout: float) -> type:
    """uvicorn's h11 protocol, with a deadline on each request's head (the module docstring)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Deadlined(H11Protocol):
        _deadline: Any = None

        # uvicorn narrows asyncio.BaseProtocol's BaseTransport to Transport itself; this override keeps its signature
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            super().data_received(data)
            if self.cycle is not cycle:  # a request's head arrived: its route has it now
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request on this connection gets its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
                return
            self.transport.write(_TIMED_OUT)
            self.transport.close()

    return Deadlined


def listen(host: str, port: int) -> socket.socket:
    """A listening socket for uvicorn, with ``TCP_NODELAY`` (accepted sockets inherit it).

    Without it, a run's events wait for the client's delayed ACK (about 40 ms on
    Linux) behind the response headers: uvicorn does not set it on the sockets
    it is handed.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


class Server:
    """An app served by uvicorn from a background thread; ``url`` ends with ``/``.

    Also a context manager: the server stops when the block ends.
    """

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, header_timeout: float = HEADER_TIMEOUT):
        import uvicorn

        self._socket = listen(host, port)
        self.host, self.port = host, self._socket.getsockname()[1]
        self.app = app
        self._server = uvicorn.Server(_config(app, header_timeout))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"convlab-agui-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._socket.close()
                raise RuntimeError(f"the AG-UI server did not start on {host}:{self.port}")
            time.sleep(0.01)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def __repr__(self) -> str:
        return f"Server(url={self.url!r}, running={self._thread.is_alive()})"

    def stop(self) -> None:
        """Stop serving (open streams get two seconds to end). The app stays open: ``app.close()`` releases it."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(app: ASGIApp, host: str = "127.0.0.1", port: int = 0, header_timeout: float = HEADER_TIMEOUT) -> Server:
    """Serve ``app`` from a background thread (port 0: a free one) and return the running ``Server``
    (``header_timeout``: the seconds a request's head may take, the module docstring).

    >>> import tempfile, httpx
    >>> from convlab import agui
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     served = agui.app(tmp)
    ...     with agui.start(served) as server:
    ...         status = httpx.get(server.url + "health").json()
    ...     served.close()
    >>> status
    {'status': 'ok'}
    """
    return Server(app, host, port, header_timeout)


def serve(app: ASGIApp, sock: socket.socket, header_timeout: float = HEADER_TIMEOUT) -> None:
    """Serve ``app`` on ``sock`` (``listen(host, port)``) in the foreground until
    Ctrl-C or SIGTERM (what ``convlab serve`` runs)."""
    import uvicorn

    try:
        uvicorn.Server(_config(app, header_timeout)).run(sockets=[sock])
    finally:
        sock.close()
