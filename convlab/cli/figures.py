"""How a command shows a figure, a file and a conversation in its tables: the rules every table follows, once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

def terminal_width() -> int:
    import shutil

    return max(40, shutil.get_terminal_size((100, 24)).columns)


def where(sources: list[Any]) -> list[str]:
    """Each conversation's file, relative to the folder they share (one file: its name); with several
    files, less the ending they all share (``.owi.json``), so a column cut down to its end still tells
    them apart.

    >>> where(["logs/chatgpt/photosynthesis.owi.json", "logs/openwebui/goldwater.owi.json", None])
    ['chatgpt/photosynthesis', 'openwebui/goldwater', '-']
    """
    from ..tables import plain

    paths = [None if plain(s) is None else str(s) for s in sources]
    files = {p.split("!", 1)[0] for p in paths if p}
    if not files:
        return ["-"] * len(paths)
    common = os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in files])
    shown = {f: os.path.relpath(os.path.abspath(f), common) for f in files}
    ending = _shared_ending(list(shown.values())) if len(files) > 1 else ""
    shown = {f: name[:len(name) - len(ending)] for f, name in shown.items()}
    return ["-" if p is None else shown[p.split("!", 1)[0]] + (("!" + p.split("!", 1)[1]) if "!" in p else "") for p in paths]


def _shared_ending(names: list[str]) -> str:
    """The file ending (from a dot, within the last part) every name has and none is only: ``.owi.json``."""
    first, k = names[0], 0
    while k < len(first) and all(len(n) > k and n[-1 - k] == first[-1 - k] for n in names):
        k += 1  # the characters every name ends with
    tail = first[len(first) - k:]
    tail = tail[tail.find("."):] if "." in tail and "/" not in tail and os.sep not in tail else ""
    return tail if all(len(n) > len(tail) and n[-len(tail) - 1] not in "/." for n in names) else ""


def conversation_names(df: pd.DataFrame) -> list[str]:
    """Each row's conversation as the table names it: its id, or where the id only numbers the conversation in
    its file (``#0``: the file gave none) or another file has it too, the file's name before it."""
    ids = [str(i) for i in df["conversation"]]
    files: dict[str, set[str]] = {}
    for i, source in zip(ids, df["source"], strict=True):
        files.setdefault(i, set()).add(str(source))
    out = []
    for i, source in zip(ids, df["source"], strict=True):
        if i.startswith("#") or len(files[i]) > 1:
            stem = Path(str(source).split("!", 1)[0]).name.split(".", 1)[0]
            out.append(f"{stem}{i}" if i.startswith("#") else f"{stem}:{i}")
        else:
            out.append(i)
    return out


def percent(v: float) -> str:
    """A share as a whole percentage; one that rounds to zero is ``0%``, never ``-0%``.

    >>> percent(0.44), percent(-0.0001), percent(-0.006), percent(float("nan"))
    ('44%', '0%', '-1%', 'nan%')
    """
    shown = f"{v:.0%}"
    return "0%" if shown == "-0%" else shown


def broke(failed_turns: object, lost_calls: object) -> str:
    """How a config (or a row) broke turns, for a listing that must not pass it off as an answer; "" when it did not.

    >>> broke(26, 108), broke(0, 3), broke(0, 0)
    ('it breaks turns: 26 turns failed, 108 logged calls never made', 'it breaks turns: 3 logged calls never made', '')
    """
    failed, lost = _whole(failed_turns), _whole(lost_calls)
    said = ([f"{failed:,} turn{'s' if failed != 1 else ''} failed"] if failed else []) + \
        ([f"{lost:,} logged call{'s' if lost != 1 else ''} never made"] if lost else [])
    return f"it breaks turns: {', '.join(said)}" if said else ""


def _whole(v: object) -> int:
    """A count from a frame's cell (NaN or missing: 0)."""
    try:
        f = float(v)  # type: ignore[arg-type]  # a frame's cell: a number, NaN, None or NA
    except (TypeError, ValueError):
        return 0
    return 0 if f != f else int(f)


#: Columns in dollars, and shares, as ``figure`` shows them.
DOLLARS = ("usd", "baseline_usd", "usd_saved")


SHARES = ("saved", "saved_usd", "cached_share", "facts_kept", "retained")

#: Columns counted in tokens, as ``figure`` shows them: a whole number with its unit.
TOKENS = ("tokens_read", "baseline_tokens_read", "cached", "cache_write", "logged_cached", "summary_tokens",
          "summary_tokens_max", "max_count", "overhead", "err_cached_mean", "err_cached_p95", "err_exact_mean",
          "err_exact_p95", "err_usage_mean", "err_usage_p95")


#: What a search's objective is over the corpus (``convlab.tuning.ranking.totals``), said beside its value.
SCOPE = {**{c: "the sum of every conversation's, as tune's rows add up" for c in (*DOLLARS, "tokens_read", "calls", "summaries", "resets", "stale")},
          "saved": "the share of the tokens the logs read, as tune's ranking says",
          "facts_kept": "the mean of the conversations'", "retained": "the mean of the conversations'"}


def figure(column: str, value: float) -> str:
    """A figure with its unit: dollars, a share, tokens, or a number.

    >>> figure("saved", -0.00002), figure("saved", 0.1234), figure("usd", 8.956), figure("calls", 1234.0)
    ('0.0%', '12.3%', '$8.96', '1,234')
    >>> figure("tokens_read", 14268812.0), figure("summary_tokens", 1.0)
    ('14,268,812 tokens', '1 token')
    """
    if value != value:
        return "NaN"
    if column in DOLLARS:
        return dollars(value)
    if column in SHARES:
        shown = f"{value:.1%}"
        return "0.0%" if shown == "-0.0%" else shown  # as percent: a share that rounds to zero has no sign
    if column in TOKENS:
        n = round(value)
        return f"{n:,} token{'' if n == 1 else 's'}"
    return f"{value:,.6g}"


def dollars(v: float) -> str:
    if v != v:  # NaN: not priced
        return "-"
    return f"${v:,.2f}" if abs(v) >= 1 or v == 0 else f"${v:.4f}"
