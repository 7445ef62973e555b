"""Serving the app with uvicorn: in the foreground (``convlab serve``) or from a
background thread on a free port (a notebook, a test).

A free port is taken by binding the socket here (port 0) and handing it to
uvicorn, so there is no window in which another process can take it.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from typing import Any

__all__ = ["Server", "start", "serve", "listen", "is_loopback"]


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


def _config(app: Any) -> Any:
    import uvicorn

    return uvicorn.Config(app, lifespan="off", log_level="warning", timeout_graceful_shutdown=2)


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

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self._socket = listen(host, port)
        self.host, self.port = host, self._socket.getsockname()[1]
        self.app = app
        self._server = uvicorn.Server(_config(app))
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

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start(app: Any, host: str = "127.0.0.1", port: int = 0) -> Server:
    """Serve ``app`` from a background thread (port 0: a free one) and return the running ``Server``.

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
    return Server(app, host, port)


def serve(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` (``listen(host, port)``) in the foreground until
    Ctrl-C or SIGTERM (what ``convlab serve`` runs)."""
    import uvicorn

    try:
        uvicorn.Server(_config(app)).run(sockets=[sock])
    finally:
        sock.close()
