"""AG-UI 1.0 for convlab: drive a session from any browser chat UI, and drive anyone's AG-UI agent.

- ``app(log_dir, ...)``: an ASGI app (Starlette). ``POST /`` speaks AG-UI 1.0
  over SSE, one ``Session`` per thread (its log ``log_dir/<threadId>.jsonl``);
  ``GET /`` is a chat page; ``GET /threads``, ``GET /threads/{id}``,
  ``GET /health``. ``convlab serve`` runs it with uvicorn.
- ``start(app)``: serve it from a background thread on a free loopback port
  (a notebook, a test): ``server.url``, ``server.stop()``.
- ``AGUIAgent(url)``: a provider that sends the active path to any AG-UI
  endpoint and returns its reply, so ``Session(llm=AGUIAgent(url))`` explores
  branching over someone else's agent.

Needs the ``agui`` extra (``pip install convlab[agui]``): ``ag-ui-protocol``,
Starlette, uvicorn, httpx. ``convlab.agui.messages`` (how messages map) needs
none of them.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "app": "convlab.agui.server",
    "AGUIApp": "convlab.agui.server",
    "check_thread_id": "convlab.agui.server",
    "start": "convlab.agui.serving",
    "Server": "convlab.agui.serving",
    "AGUIAgent": "convlab.agui.client",
}

__all__ = sorted(_LAZY)  # noqa: PLE0605 (built from _LAZY so that each name is written once)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'convlab.agui' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
