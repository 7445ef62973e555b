"""Plain-text tables fitted to a width: what ``convlab tune`` prints.

A sweep's table has ids and file paths that run to fifty characters beside
columns of short numbers, and it must read in an 80-column terminal as in a
wide one. Rather than wrap rows (pandas' ``to_string`` breaks a wide frame
into blocks that no longer line up), a table gives way one step at a time
(``STEPS``): headers take their short names and columns close up to one
space while ids and files stay whole; then long text is cut in the middle,
numbers take their compact form (16.8M), and the optional columns go. The columns that matter never go; past
the last step, lines run wider. Width is counted in terminal cells
(``convlab.text.cells``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from .text import cells, fit

__all__ = ["Column", "fit_table", "shorten", "compact", "plain", "STEPS"]


def plain(value: object) -> Any:
    """A value of a frame as it was given: 600 (not 600.0 from a CSV, nor numpy's int64), None for NA.

    >>> import numpy as np
    >>> plain(600.0), plain(np.int64(7)), plain(float("nan")), plain("a"), plain(0.25)
    (600, 7, None, 'a', 0.25)
    """
    import pandas as pd

    if value is None or (not isinstance(value, str) and pd.isna(value)):  # type: ignore[call-overload]  # isna takes any object
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def compact(n: float) -> str:
    """A count in at most 5 characters.

    >>> [compact(n) for n in (950, 9_419, 16_790_991, 137_357, -40_006)]
    ['950', '9.4k', '16.8M', '137k', '-40.0k']
    """
    n = float(n)
    for scale, unit in ((1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.1f}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"
    return f"{n:.0f}"


def shorten(text: str, width: int, keep_end: bool = False) -> str:
    """``text`` in ``width`` cells, cut in the middle (an id: both ends tell it apart), or with
    ``keep_end`` at the start (a path: its file's name tells it apart).

    >>> shorten("ae4a77f8-aedd-4bc1-888f-c94edc91af04", 12), shorten("logs/2025/agent-aac57f5.jsonl", 16, keep_end=True)
    ('ae4a77…1af04', '…t-aac57f5.jsonl')
    >>> shorten("日本語のタイトルです", 9)
    '日本…です'
    """
    if cells(text) <= width:
        return text
    room = width - 1 if keep_end else (width - 1) // 2  # cells for the end
    end = ""
    for ch in reversed(text):
        if cells(ch + end) > room:
            break
        end = ch + end
    return fit(text, width - cells(end)).removesuffix("…") + "…" + end


class Column:
    """One column of a table: a header and its short name, the values (shown with ``fmt``,
    and with ``short_fmt`` once numbers go compact), numbers (right-aligned) or text (left).

    ``optional``: dropped at the step that drops it (1 first, then 2; 0: never). ``least``: a
    text column, cut down to this many cells at most; ``keep_end``: cut at the start (a path).
    A value that is NA shows as ``-``.

    >>> Column("tokens_read", [16_790_991, None], short="read", short_fmt=compact).full
    ['16,790,991', '-']
    """

    def __init__(self, header: str, values: list[Any], *, short: str | None = None, number: bool = True,
                 fmt: Callable[[Any], str] | None = None, short_fmt: Callable[[Any], str] | None = None,
                 optional: int = 0, least: int = 0, keep_end: bool = False) -> None:
        def show(v: object, f: Callable[[Any], str]) -> str:
            return "-" if v is None else f(v)

        values = [plain(v) for v in values]
        fmt = fmt or (lambda x: f"{x:,}" if isinstance(x, int) else str(x))
        self.header, self.short, self.number = header, short or header, number
        self.full = [show(v, fmt) for v in values]
        self.small = [show(v, short_fmt) for v in values] if short_fmt is not None else self.full
        self.optional = optional
        self.least = least
        self.keep_end = keep_end


class _Step(TypedDict):
    """One step of STEPS."""

    text: int | None
    short: bool
    small: bool
    gap: int
    drop: int


#: How a table gives way to a narrow width, one step at a time: while text columns (ids, files)
#: stay whole, short headers, then one space between columns; then text cut down to ``text``
#: cells (0: as far as each column's ``least``), compact numbers, and the optional columns
#: (``drop``: those numbered up to it). ``text`` None: text as it is.
STEPS: tuple[_Step, ...] = (
    {"text": None, "short": False, "small": False, "gap": 2, "drop": 0},
    {"text": None, "short": True, "small": False, "gap": 2, "drop": 0},
    {"text": None, "short": True, "small": False, "gap": 1, "drop": 0},
    {"text": 16, "short": True, "small": False, "gap": 1, "drop": 0},
    {"text": 12, "short": True, "small": True, "gap": 1, "drop": 0},
    {"text": 0, "short": True, "small": True, "gap": 1, "drop": 0},
    {"text": 0, "short": True, "small": True, "gap": 1, "drop": 1},
    {"text": 0, "short": True, "small": True, "gap": 1, "drop": 2},
)


def fit_table(columns: list[Column], width: int) -> list[str]:
    """The columns as lines, a header and a line per row, no wider than ``width`` cells: the
    first of ``STEPS`` at which they fit (past the last, the lines run wider).

    >>> cols = [Column("conversation", ["ae4a77f8-aedd-4bc1-888f-c94edc91af04"], short="conv", number=False, least=9),
    ...         Column("tokens_read", [16_790_991], short="read", short_fmt=compact), Column("calls", [217], optional=1)]
    >>> print("\\n".join(fit_table(cols, 60)))
    conversation                          tokens_read  calls
    ae4a77f8-aedd-4bc1-888f-c94edc91af04   16,790,991    217
    >>> print("\\n".join(fit_table(cols, 24)))
    conv          read calls
    ae4a77…1af04 16.8M   217
    """
    for step in STEPS:
        kept = [c for c in columns if not c.optional or c.optional > step["drop"]]
        heads = [c.short if step["short"] else c.header for c in kept]
        cols = [c.small if step["small"] else c.full for c in kept]
        sizes = [max([cells(h)] + [cells(v) for v in vals]) for h, vals in zip(heads, cols, strict=True)]
        texts = [i for i, c in enumerate(kept) if c.least]
        room = width - step["gap"] * (len(kept) - 1) - sum(sz for i, sz in enumerate(sizes) if i not in texts)
        least = [sizes[i] if step["text"] is None else min(sizes[i], max(kept[i].least, cells(heads[i]), step["text"]))
                 for i in texts]
        if room >= sum(least) or step is STEPS[-1]:
            for i, size in zip(texts, _share(least, [sizes[i] for i in texts], room), strict=True):
                sizes[i] = size
            lines = [heads] + [[col[r] for col in cols] for r in range(len(cols[0]) if cols else 0)]
            return [_line(values, sizes, kept, step["gap"]) for values in lines]
    raise AssertionError("unreachable")  # pragma: no cover


def _share(least: list[int], most: list[int], room: int) -> list[int]:
    """Widths between ``least`` and ``most`` that add up to at most ``room`` (when they can), shared evenly.

    >>> _share([9, 9], [36, 60], 50), _share([9, 9], [12, 60], 50), _share([9, 9], [36, 60], 10)
    ([25, 25], [12, 38], [9, 9])
    """
    sizes = list(least)
    extra = room - sum(sizes)
    while extra > 0:
        growing = [k for k in range(len(sizes)) if sizes[k] < most[k]]
        if not growing:
            break
        each = max(1, extra // len(growing))
        for k in growing:
            add = min(each, most[k] - sizes[k], extra)
            sizes[k] += add
            extra -= add
    return sizes


def _line(values: list[str], sizes: list[int], kept: list[Column], gap: int) -> str:
    out = []
    for v, size, c in zip(values, sizes, kept, strict=True):
        v = shorten(v, size, c.keep_end)
        pad = " " * (size - cells(v))
        out.append(pad + v if c.number else v + pad)
    return (" " * gap).join(out).rstrip()
