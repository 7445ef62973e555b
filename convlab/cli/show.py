"""``convlab show``: a log's conversations as trees, like ``git log --graph``.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, TextIO

from .arguments import add_reading_options, width
from .notes import Notes, Usage, plural, read_logs

if TYPE_CHECKING:
    import networkx as nx

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
    from ..conversation import LOG_FORKS, LOG_ROWS
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
            out.write("\n".join(textwrap.wrap(_rows_said(rows, c.metadata.get(LOG_FORKS), c.tree), width)) + "\n")
        out.write(render(c.tree, c.head, width, labels=c.labels()) + "\n")


def _rows_said(rows: int, forks: object, graph: nx.DiGraph) -> str:
    """What the count of the log's raw rows counts that the tree does not: its message rows, and its forks between
    them, beside the tree's messages and branch points.

    >>> from convlab.tree import Tree
    >>> t = Tree()
    >>> for mid, parent in [("u1", None), ("a1", "u1")]:
    ...     _ = t.add({"id": mid, "role": "user", "content": "x"}, parent)
    >>> _rows_said(3, 1, t.graph)
    "(read from 3 message rows of the log: a reply written over several rows, one per content block, is one message, and the log's 1 fork between its rows is 0 branch points here (a tool result written under one row of a reply whose next row hangs there too is no fork once the reply is one message); a row of several tool results is one message each)"
    """
    said = f"(read from {rows:,} message rows of the log: a reply written over several rows, one per content block, is one message"
    if isinstance(forks, int) and forks:
        branches = sum(1 for n in graph if graph.out_degree(n) > 1)
        said += (f", and the log's {plural(forks, 'fork')} between its rows {'is' if forks == 1 else 'are'} "
                 f"{plural(branches, 'branch point')} here (a tool result written under one row of a reply whose next "
                 f"row hangs there too is no fork once the reply is one message)")
    return said + "; a row of several tool results is one message each)"
