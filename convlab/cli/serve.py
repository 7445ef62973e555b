"""``convlab serve``: sessions over AG-UI 1.0, with a chat page.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .notes import Notes, Usage

if TYPE_CHECKING:
    from ..providers import Provider
    from .arguments import Parser

def add(sub: argparse._SubParsersAction[Parser]) -> None:
    serve = sub.add_parser(
        "serve", help="serve sessions over AG-UI 1.0, with a chat page at / (needs the agui extra)",
        description="Serve sessions over AG-UI 1.0 until Ctrl-C: POST / runs a thread (one session log per thread in "
                    "--log-dir, continued across restarts), GET / is a chat page with edit, regenerate and branch "
                    "arrows, and any AG-UI front end (CopilotKit, assistant-ui) can connect. The model is --llm; a "
                    "context.limit is answered by the engine's proposal, or with --worker manual by a person (an "
                    "AG-UI interrupt). Listens on 127.0.0.1 unless --host says otherwise (then --token is needed).")
    serve.add_argument("--log-dir", required=True, metavar="DIR", help="one session log per thread: DIR/<threadId>.jsonl")
    serve.add_argument("--config", metavar="agent.toml", help="the context config of new threads")
    serve.add_argument("--agent", default="bot", help="the agent whose [agent.<id>.context] to use (default bot)")
    serve.add_argument("--llm", default="echo", metavar="SPEC",
                       help="the model: echo (default, offline), local (a real small model on this machine, offline), "
                            "openai:MODEL or anthropic:MODEL (convlab.provider)")
    serve.add_argument("--worker", choices=("chat", "manual"), default="chat",
                       help="manual: a context.limit waits for a person (an AG-UI interrupt)")
    serve.add_argument("--on-unanswered", choices=("refuse", "end", "default"), default="end",
                       help="a new message with no resume while a decision waits: end the waiting turn as "
                            "'End the turn' does (default), answer it with its default (what the engine "
                            "proposed), or refuse the message (409)")
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1; any other address needs --token")
    serve.add_argument("--port", type=int, default=8000, help="default 8000 (0: a free port)")
    serve.add_argument("--token", default=os.environ.get("CONVLAB_TOKEN"),
                       help="bearer token every route but /health needs (default: $CONVLAB_TOKEN)")
    serve.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                       help="allow a browser page from ORIGIN (repeatable; default: only the server's own page)")
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="answer requests whose Host is NAME too (repeatable; default: localhost, loopback "
                            "addresses and the address served; any other Host gets 421)")
    serve.add_argument("--max-body", type=int, default=10 * 1024 * 1024, metavar="BYTES",
                       help="request bodies over this get 413 (default 10 MB)")
    serve.set_defaults(run=run, quiet=False)


def run(args: argparse.Namespace, out: TextIO, notes: Notes) -> None:
    """Serve the threads of --log-dir over AG-UI until Ctrl-C (warnings, a torn log line say, go to stderr)."""
    try:
        from ..agui import server, serving  # noqa: F401  # the agui extra, checked before any work (listen serves with it)
    except ImportError as err:
        raise Usage(f"serve needs the agui extra (pip install 'convlab[agui]'): {err}") from None
    from ..errors import ProviderError
    from ..providers import provider

    if not serving.is_loopback(args.host) and not args.token:
        raise Usage(f"--host {args.host} listens beyond this machine: give --token too")
    if args.config is not None and not Path(args.config).is_file():
        raise Usage(f"--config {args.config}: no such file")
    if Path(args.log_dir).exists() and not Path(args.log_dir).is_dir():
        raise Usage(f"--log-dir {args.log_dir}: not a folder")
    if args.max_body <= 0:
        raise Usage(f"--max-body {args.max_body}: a positive number of bytes")
    for origin in args.cors_origin:
        if not re.fullmatch(r"https?://[^/\s]+|null", origin.rstrip("/")):
            raise Usage(f"--cors-origin {origin}: an origin is scheme://host[:port], e.g. http://localhost:5173")
    for name in args.allowed_host:
        if not re.fullmatch(r"\[?[\w.:-]+\]?", name):
            raise Usage(f"--allowed-host {name}: a host name or address, e.g. chat.example.com (no scheme, no path)")
    try:
        llm = provider(args.llm)
        if hasattr(llm, "start"):  # a local model: one that does not load says so now, not at the first run
            llm.start()
    except (ValueError, ImportError, ProviderError) as err:
        raise Usage(f"--llm: {err}") from None
    with contextlib.closing(llm) if hasattr(llm, "close") else contextlib.nullcontext():  # LocalChat's server stops with it
        _listen(args, llm, out)


def _listen(args: argparse.Namespace, llm: Provider, out: TextIO) -> None:
    """The AG-UI app on --host/--port until Ctrl-C (``run`` imported the agui extra)."""
    from ..agui import server, serving

    served = server.app(args.log_dir, config=args.config, llm=llm, worker=args.worker, token=args.token,
                        agent=args.agent, cors_origins=args.cors_origin, allowed_hosts=args.allowed_host,
                        max_body=args.max_body, on_unanswered=args.on_unanswered)
    try:
        sock = serving.listen(args.host, args.port)
    except OSError as err:
        served.close()
        raise Usage(f"--host {args.host} --port {args.port}: {err.strerror or err}") from None
    host = f"[{args.host}]" if ":" in args.host else args.host
    page = f"http://{host}:{sock.getsockname()[1]}/" + (f"?token={args.token}" if args.token else "")
    out.write(f"convlab serve: {page} (log dir {args.log_dir}, worker {args.worker}, llm {args.llm}); Ctrl-C stops\n")
    out.flush()
    try:
        serving.serve(served, sock)
    finally:
        served.close()
