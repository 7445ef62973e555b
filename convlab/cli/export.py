"""``convlab export``: a log's conversations written out again, every branch and the head, one file each.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .arguments import add_reading_options
from .notes import Notes, Usage, plural, read_logs

if TYPE_CHECKING:
    from .arguments import Parser

#: The file name ending of each format's files.
ENDINGS = {"convlab": ".jsonl", "pi": ".jsonl", "chatgpt": ".json", "openai": ".json", "atif": ".trajectory.json"}


def add(sub: argparse._SubParsersAction[Parser]) -> None:
    from ..explore.writing import FORMATS

    export = sub.add_parser(
        "export", help="write a log's conversations out again in another format (pi, chatgpt, convlab, openai, atif)",
        description="Write each conversation of a chat log (any format convlab reads) to a file of its own in "
                    "--out, with every branch and the head: pi's session layout (v3), a ChatGPT export with its "
                    "current_node, convlab's own session log, the active path as OpenAI chat messages, or the "
                    "active path as an ATIF trajectory (written only). convlab read (and convlab show) reads each "
                    "tree format back as the same tree. Prints the files written.")
    export.add_argument("file", metavar="FILE_OR_DIR")
    export.add_argument("--format", choices=FORMATS, default="pi", help="the layout to write (default: pi)")
    export.add_argument("--out", metavar="DIR", required=True, help="the folder to write into (made if missing)")
    export.add_argument("--conversation", metavar="ID", help="only the conversation with this id")
    export.add_argument("--overwrite", action="store_true", help="replace files that are already there")
    add_reading_options(export)
    export.set_defaults(run=run)


def file_name(cid: str, taken: set[str], ending: str) -> str:
    """A file name for a conversation id: its letters, digits, ``.``, ``_`` and ``-`` (others ``_``), at most 100
    of them, and a number after it when two ids make the same name.

    >>> taken = set()
    >>> file_name("a/b c", taken, ".jsonl"), file_name("a:b c", taken, ".jsonl"), file_name("..", taken, ".json")
    ('a_b_c.jsonl', 'a_b_c-2.jsonl', 'conversation.json')
    """
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", cid)[:100].strip(".") or "conversation"
    name, n = stem + ending, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}{ending}"
    taken.add(name)
    return name


def run(args: argparse.Namespace, out: TextIO, notes: Notes) -> None:
    from ..errors import ExploreError
    from ..explore.writing import write

    convs = [c for c in read_logs([args.file], args, notes) if len(c)]
    if args.conversation is not None:
        convs = [c for c in convs if c.id == args.conversation]
        if not convs:
            raise Usage(f"{args.file}: no conversation {args.conversation!r}")
    folder = Path(args.out)
    if folder.exists() and not folder.is_dir():
        raise Usage(f"--out {folder}: not a folder")
    taken: set[str] = set()
    targets = [(c, folder / file_name(c.id, taken, ENDINGS[args.format])) for c in convs]
    there = [t for _c, t in targets if t.exists()]
    if there and not args.overwrite:
        raise Usage(f"--out {folder}: {plural(len(there), 'file')} already there ({there[0].name}, ...); --overwrite replaces them")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise Usage(f"--out {folder}: cannot make the folder: {err.strerror or err}") from None
    for c, target in targets:
        try:
            write(c, target, format=args.format, overwrite=args.overwrite)
        except ExploreError as err:
            raise Usage(str(err)) from None
        out.write(f"{target}\n")
