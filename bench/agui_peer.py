"""The peer of the AG-UI row (and of the AGUIAgent tests): pydantic-ai's AG-UI adapter.

A Starlette app with one ``POST /`` route that hands the request to
``pydantic_ai.ui.ag_ui.AGUIAdapter.dispatch_request`` with an agent on an
offline model (``TestModel`` by default). ``python -m bench.agui_peer`` serves it
on a free loopback port through the same uvicorn setup as ``convlab serve``
(``convlab.agui.serving``), so the two rows differ only in the app.
"""

from __future__ import annotations

import sys
from typing import Any

#: What the peer's TestModel answers: about as long as EchoLLM's echo of the bench's messages.
REPLY = "echo: a question about the weather and the plans for the day"


def peer_app(model: Any = None) -> Any:
    """The Starlette app serving an agent on ``model`` (default ``TestModel(custom_output_text=REPLY)``)."""
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    agent = Agent(model if model is not None else TestModel(custom_output_text=REPLY))

    async def run(request):
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/", run, methods=["POST"])])


def main() -> None:
    from convlab.agui import serving

    sock = serving.listen("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(f"peer: http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    serving.serve(peer_app(), sock)


if __name__ == "__main__":
    main()
