"""The ``convlab`` command: look at real logs and sweep context configs over them.

No mistake passes silently and none ends in a traceback. A mistake in how
the command was called, in a config or in the input (a missing file, a
misspelled table, a wrong ``--agent``, an output folder that is not there)
is one line on stderr and exit status 2, found before any work starts
wherever it can be. What reading repaired or passed over (every
``ReadWarning`` and ``LogWarning``, and the files skipped, with why) goes to
stderr, grouped with counts (``--quiet`` silences it); the output goes to
stdout and the command exits 0 when it produced it, and 3 when the work ran
but its answer is none: no config met a search's constraints (the closest
trials are listed), or every summary call of a sweep failed.

One module per command (``show``, ``tune``, ``search``, ``serve``), each
with ``add`` (its parser, registered by ``main.build_parser``) and ``run``;
what they share once: ``notes`` (stderr, the two ways a command stops,
reading the logs), ``arguments`` (what the commands take, checked) and
``figures`` (how a table shows a figure, a file, a conversation).
"""

from .main import build_parser, main

__all__ = ["main", "build_parser"]
