"""``convlab show``: a log's conversations as trees, like ``git log --graph``.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, TextIO

from .arguments import add_reading_options, width
from .notes import Notes, Usage, plural, read_logs

if TYPE_CHECKING:
    from .arguments import Parser

def add(sub: argparse._SubParsersAction[Parser]) -> None:
    show = sub.add_parser(
        "show", help="print a log's conversations as trees, like git log --graph",
        description="Print each conversation of a chat log (any format convlab reads: a file, an archive or a folder) "
                    "as a tree, like git log --graph: the active path in one column, a branch indented where it "
                    "leaves it, thinking, tool calls and results as short labels, no line wider than --width. A "
                    "summary line first says what is counted: the messages of the tree, those on the active path, "
                    "the branch points. What reading repaired or passed over goes to stderr.")
    show.add_argument("file", metavar="FILE_OR_DIR")
    show.add_argument("--width", type=width, help="no line is wider than this, stderr's included (default 100, at least 20)")
    show.add_argument("--path", action="store_true", help="only the active path (root to head), one line a message")
    show.add_argument("--conversation", metavar="ID", help="only the conversation with this id")
    add_reading_options(show)
    show.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, notes: Notes) -> None:
    from ..conversation import LOG_ROWS
    from ..text import brief, fit, render_path, render_summary, render_tree

    convs = read_logs([args.file], args, notes)
    if args.conversation is not None:
        chosen = [c for c in convs if c.id == args.conversation]
        if not chosen:
            ids = ", ".join(c.id for c in convs[:5]) + (", ..." if len(convs) > 5 else "")
            raise Usage(f"{args.file}: no conversation {args.conversation!r} (its {plural(len(convs), 'conversation')}: {ids})")
        convs = chosen
    render = render_path if args.path else render_tree
    for i, c in enumerate(convs):
        if i:
            out.write("\n")
        title = f": {brief(c.title)!r}" if c.title else ""
        width = args.width or 100
        out.write(fit(f"conversation {brief(c.id)}{title}", width) + "\n")
        out.write(render_summary(c.tree, c.head, width) + "\n")
        rows = c.metadata.get(LOG_ROWS)
        if isinstance(rows, int) and rows != len(c):  # what a count of the log's raw rows counts instead
            out.write("\n".join(textwrap.wrap(
                f"(read from {rows:,} message rows of the log: a reply written over several rows, one per content "
                f"block, is one message, and the log's forks between its rows are none here; a row of several tool results is "
                f"one message each)", width)) + "\n")
        out.write(render(c.tree, c.head, width, labels=c.labels()) + "\n")
