"""Facts: what a text states that can be checked by string.

Why: a compaction drops messages, and what the model can no longer read is
what they stated. Probing a model for it costs calls; many statements can be
checked for free, by looking for their string in what the model still reads
(``convlab.retention``). This module is that rule, once: which strings of a
text are facts, their normal form, and when a context still holds one.

The kinds, each a regular expression over the text (a fact never starts or
ends inside a word: the character beside it is not a letter, digit or ``_``):

- ``url``: ``http(s)://`` or ``ftp://`` and what follows up to a space or a
  bracket, trailing punctuation left out;
- ``path``: unix-ish paths with a slash: the last segment has a dot-extension
  (``src/app.py``), or the path is absolute (``/``, ``~/``, ``./``) with at
  least two segments (``/usr/bin``), or relative with three (``a/b/c``);
  ``and/or`` is not a path;
- ``date``: ISO (``2024-05-01``, with an optional ``T12:30:00Z`` time) and
  month-name dates (``May 1, 2024``, ``1 May 2024``);
- ``time``: ``12:30`` and ``12:30:05``, with an optional am/pm;
- ``id``: hex of 7 characters or more with a digit and a letter (a git
  hash), UUIDs, and ids like ``ABC-123``;
- ``symbol``: code symbols: snake_case (an ``_`` between letters or digits),
  CamelCase with an inner capital (``ReplayLLM``, ``iPhone``), dotted names
  and calls (``os.path.join``, ``run()``), and anything in backticks;
- ``number``: a number with a unit (``12 ms``, ``3.5 GB``, ``40%``, ``$12``)
  and bare numbers of two digits or more (``42``, ``1,024``, ``3.5``); never
  inside a word (``12abc`` and ``v12`` give no number) nor a part of a longer
  dotted or dashed run (``1.2.3``, ``10-20``);
- ``quote``: ``"..."``, ``'...'`` or curly quotes of 3 to 80 characters on
  one line that do not look like code (no brackets, ``;``, ``=``, ``<``,
  ``>`` or backslash); the fact is the text inside;
- ``name``: runs of capitalised words (``Ada Lovelace``, ``New York``), a
  common sentence opener in front stripped (``The``, ``When``, ...); a single
  capitalised word counts only mid-sentence (not at the start of the text, a
  line or a sentence), and never a month or a weekday;
- ``tool``: from a message's tool calls (``facts_of``), not from its text: the
  tool's name and each scalar argument of at most 200 characters.

The normal form (``Fact.normal``) is casefolded with every run of
whitespace one space; a number's unit is joined to it (``12 ms`` and
``12ms`` are one fact, ``12ms``). A context holds a fact (``holds``) when its
normal form (``normal(text)``) contains the fact's (for a number, joined or
spaced) with no letter, digit or ``_`` just beside it. So every fact a text
yields is held by that text's own normal form.

>>> sorted((f.kind, f.normal) for f in facts_in("Ada Lovelace ran tune() on 2024-05-01: 12 ms, see src/app.py"))
[('date', '2024-05-01'), ('name', 'ada lovelace'), ('number', '12ms'), ('path', 'src/app.py'), ('symbol', 'tune()')]
>>> holds(normal("It took 12ms."), Fact("number", "12 ms")), holds(normal("It took 120 ms."), Fact("number", "12 ms"))
(True, False)
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Fact", "KINDS", "facts_in", "facts_of", "holds", "message_text", "normal"]

#: The kinds of fact, in the order the module docstring gives them.
KINDS = ("url", "path", "date", "time", "id", "symbol", "number", "quote", "name", "tool")

#: The longest tool argument that is a fact by itself (a longer one's text still yields facts).
MAX_ARGUMENT = 200

_SPACE = re.compile(r"\s+")
# U+0345 is the one character that is not a word character but casefolds to one (a Greek iota):
# it reads as a space, so a fact beside it is still beside a non-word character once normal.
_NOT_WORD_BUT_FOLDS = "\u0345"

_UNIT = (r"(?i:ns|µs|μs|us|ms|secs?|seconds?|s|mins?|minutes?|hrs?|hours?|h|days?|weeks?|months?|years?|"
         r"[kmgtp]i?b|bytes?|bits?|[kmg]?hz|rpm|fps|qps|rps|tokens?|px|pt|rem|em|km|cm|mm|m|kg|mg|g|lbs?|"
         r"usd|eur|gbp|dollars?|euros?|cents?|°c|°f|k|x)(?![\w°])|%")
_NUM = r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?"
_NUMBER = re.compile(rf"(?=[$€£0-9])(?<![\w.,:/\-$€£])(?P<cur>[$€£]\s?)?(?P<num>{_NUM})(?:(?P<sp>\s?)(?P<unit>{_UNIT}))?(?!\w|[.,:\-][0-9])")

_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
          r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)")
_MONTHS_AND_DAYS = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split())
_OPENERS = frozenset(
    "the a an and but or so then this that these those there here it its we i you he she they our my your "
    "in on at of for from to by with as if when while after before since until once yes no not also however "
    "please thanks thank ok okay hi hello hey now next first finally note see let all some each every what "
    "which who why how where do does did is are was were be can could will would should may might must "
    "ask tell use try run check make go get set add put show give call read write open find".split())

# A pattern opens with the character it needs and looks behind it after: the regex engine then skips to
# where that character is, not trying every position (three times faster on prose).
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"(?<!\w)(?:https?|ftp)://[^\s<>\"'`()\[\]{}]+")),
    ("path", re.compile(r"(?<![\w/.~:\-])(?:~|\.{1,2})?/?(?:[\w.@+\-]+/)+[\w.@+\-]*\w")),
    ("date", re.compile(r"[0-9](?<![\w\-][0-9])[0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
                        r"(?:T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+\-][0-9]{2}:?[0-9]{2})?)?(?!\w)")),
    ("date", re.compile(rf"(?<!\w){_MONTH}\.?\s[0-9]{{1,2}}(?:st|nd|rd|th)?,?\s[0-9]{{4}}(?!\w)")),
    ("date", re.compile(rf"(?<!\w)[0-9]{{1,2}}\s{_MONTH}\.?,?\s[0-9]{{4}}(?!\w)")),
    ("time", re.compile(r"(?=[0-9])(?<![\w:.])(?:[01]?[0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])?(?:\s?[AaPp]\.?[Mm]\.?)?(?![\w:])")),
    ("id", re.compile(r"[0-9a-fA-F](?<![\w\-][0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w\-])")),
    ("id", re.compile(r"[0-9a-fA-F](?<![\w\-][0-9a-fA-F])[0-9a-fA-F]{6,}(?![\w\-])")),
    ("id", re.compile(r"[A-Z](?<![\w\-][A-Z])[A-Z]+[A-Z0-9]*(?:-[0-9]+)+(?![\w\-])")),
    ("symbol", re.compile(r"`([^`\n]{1,200})`")),
    # a word the rule may take as a symbol: an "_" or a capital after its first character, a dot, "()"
    # (the lookahead keeps the plain words, most of any text, inside the regex engine)
    ("symbol", re.compile(r"(?<![\w./])(?=[A-Za-z_][A-Za-z0-9_]*(?:[_A-Z]|\.[A-Za-z_]|\(\))|_[A-Za-z0-9])"
                          r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?(?!\w)")),
    ("quote", re.compile(r"\"(?<!\w\")([^\"\n]{3,80})\"(?!\w)|'(?<!\w')([^'\n]{3,80})'(?!\w)|\u201c([^\u201d\n]{3,80})\u201d|\u2018([^\u2019\n]{3,80})\u2019")),
    ("name", re.compile(r"[A-Z](?<![\w'\u2019][A-Z])[a-zß-öø-ÿ]+(?:[ ][A-Z][a-zß-öø-ÿ]+)*(?![\w'\u2019])")),
)
_ANY_DIGIT = re.compile("[0-9]")
_MONTH_NAMED = re.compile("Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec")
#: Per pattern of ``_PATTERNS``, a search that any text it matches in also matches (None: none): a text
#: without it is not scanned for that pattern (the scans are most of the time a text's facts take).
_NEEDS: tuple[re.Pattern[str] | None, ...] = (
    re.compile("://"), re.compile("/"), re.compile("-"), _MONTH_NAMED, _MONTH_NAMED, re.compile(":"), re.compile("-"),
    _ANY_DIGIT, re.compile("-"), re.compile("`"), None, re.compile("[\"'\u201c\u2018]"), None,
)
_CODE_LIKE = re.compile(r"[{}()\[\];=<>\\]")
_EXTENSION = re.compile(r"[^/.]\.[A-Za-z0-9]{1,8}$")
_HEX_LETTER = re.compile(r"[a-fA-F]")
_SENTENCE_END = ".!?:;\n"
_NO_NUMBER_INSIDE = ("url", "path", "date", "time", "id")


def _folded(text: str) -> str:
    return text.replace(_NOT_WORD_BUT_FOLDS, " ").casefold()


def normal(text: str) -> str:
    """``text`` as facts are looked for in it: casefolded, every run of whitespace one space.

    >>> normal("  Took  12\\n MS ")
    'took 12 ms'
    """
    return _SPACE.sub(" ", _folded(text)).strip()


@dataclass(frozen=True)
class Fact:
    """A fact: its ``kind`` (one of ``KINDS``) and its ``text`` as found; two facts are
    the same when their kind and ``normal`` form are (``12 ms`` and ``12ms``).

    >>> Fact("number", "3.5 GB").normal, Fact("name", "Ada  Lovelace").normal
    ('3.5gb', 'ada lovelace')
    >>> Fact("number", "12 ms") == Fact("number", "12ms")
    True
    """

    kind: str
    text: str = field(compare=False)
    normal: str = field(init=False)
    #: the normal strings that count as this fact in a context (a number: joined and spaced)
    forms: tuple[str, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        collapsed = normal(self.text)
        forms = [collapsed]
        m = _NUMBER.fullmatch(collapsed) if self.kind == "number" else None
        if m is not None and (m["cur"] or m["unit"]):
            cur, unit = (m["cur"] or "").strip(), m["unit"] or ""
            forms = [cur + m["num"] + unit, " ".join(x for x in (cur, m["num"], unit) if x), collapsed]
        object.__setattr__(self, "normal", forms[0])
        object.__setattr__(self, "forms", tuple(dict.fromkeys(forms)))


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def holds(context: str, fact: Fact) -> bool:
    """Whether ``context`` (a ``normal`` form) still holds ``fact``: it contains one of the
    fact's normal forms with no letter, digit or ``_`` just beside it (when the fact's own
    edge is one).

    >>> ctx = normal("Deploy app_v2 at 12:30, took 3.5 GB")
    >>> holds(ctx, Fact("time", "12:30")), holds(ctx, Fact("symbol", "app_v")), holds(ctx, Fact("number", "3.5GB"))
    (True, False, True)
    """
    for form in fact.forms:
        if not form:
            continue
        left, right = _is_word(form[0]), _is_word(form[-1])
        i = context.find(form)
        while i >= 0:
            end = i + len(form)
            if not (left and i > 0 and _is_word(context[i - 1])) and not (right and end < len(context) and _is_word(context[end])):
                return True
            i = context.find(form, i + 1)
    return False


def _found(kind: str, m: re.Match[str], text: str) -> str | None:
    """The fact a match of ``kind``'s pattern states, or None (the rule's checks beyond the pattern)."""
    s = next((g for g in m.groups() if g is not None), None) if m.groups() else m.group()
    if s is None:
        return None
    s = s.strip()
    if kind == "url":
        s = s.rstrip(".,;:!?$*")
        return s if len(s) > len(s.split("://")[0]) + 3 else None
    if kind == "path":
        segments = [x for x in s.split("/") if x not in ("", ".", "..", "~")]
        absolute = s.startswith(("/", "~/", "./", "../"))
        ok = bool(segments) and _EXTENSION.search(segments[-1]) is not None
        return s if ok or len(segments) >= (2 if absolute else 3) else None
    if kind == "id" and "-" not in s:  # hex: a git hash has a digit and a letter
        return s if _HEX_LETTER.search(s) and any(c.isdigit() for c in s) else None
    if kind == "symbol":
        return s if m.groups() or _is_symbol(s) else None
    if kind == "quote":
        return s if len(s) >= 3 and not _CODE_LIKE.search(s) else None
    if kind == "name":
        return _name(s, m.start(), text)
    return s or None


def _is_symbol(s: str) -> bool:
    """A call (``run()``), a dotted name (every part two characters or more: not ``e.g``), snake_case
    (an ``_`` inside) or CamelCase (a lowercase letter and a capital after the first character)."""
    bare = s.removesuffix("()")
    if s.endswith("()") or "." in bare:
        return len(bare) >= 2 and all(len(p) >= 2 for p in bare.split("."))
    if "_" in bare.strip("_") or (bare.startswith("_") and len(bare.strip("_")) >= 2):
        return True
    return any(c.islower() for c in bare) and any(c.isupper() for c in bare[1:])


def _name(s: str, start: int, text: str) -> str | None:
    words = s.split(" ")
    dropped = 0
    while words and words[0].casefold() in _OPENERS:
        words, dropped = words[1:], dropped + 1
    if not words:
        return None
    if len(words) == 1:
        if words[0].casefold() in _MONTHS_AND_DAYS:
            return None
        i = start - 1
        while i >= 0 and text[i] in " \t":
            i -= 1
        if not dropped and (i < 0 or text[i] in _SENTENCE_END):
            return None  # a capitalised word that opens a sentence says nothing
    return " ".join(words)


def _number(m: re.Match[str]) -> str | None:
    if m["cur"] or m["unit"]:
        return m.group()
    return m["num"] if sum(c.isdigit() for c in m["num"]) >= 2 else None


def _scan(text: str) -> Iterator[Fact]:
    spans: list[tuple[int, int]] = []  # where a url, path, date, time or id is: no number is found inside one
    known: dict[tuple[str, str], bool] = {}  # (kind, string) met before in this text: whether it is a fact
    for (kind, pattern), needs in zip(_PATTERNS, _NEEDS, strict=True):
        if needs is not None and not needs.search(text):
            continue
        for m in pattern.finditer(text):
            g = m.group()
            if kind == "symbol" and g.isalpha() and g[1:].islower():
                continue  # a plain word (most of any text): not a symbol
            s = _found(kind, m, text)
            if not s:
                continue
            seen = known.get((kind, s))
            if seen is None:
                seen = known[kind, s] = bool(normal(s))  # a fact of nothing but what normal removes is none
                if seen:
                    yield Fact(kind, s)
            if seen and kind in _NO_NUMBER_INSIDE:
                spans.append(m.span())
    if not _ANY_DIGIT.search(text):
        return
    spans.sort()
    starts = [a for a, _ in spans]
    reach = list(itertools.accumulate((b for _, b in spans), max))  # the furthest end of the spans up to each
    for m in _NUMBER.finditer(text):
        k = bisect.bisect_right(starts, m.start()) - 1
        if k >= 0 and reach[k] >= m.end():
            continue  # part of a date, a time, an id, a path or a url
        s = _number(m)
        if s and ("number", s) not in known:
            known["number", s] = True
            yield Fact("number", s)


@functools.lru_cache(maxsize=8192)
def facts_in(text: str) -> frozenset[Fact]:
    """The facts ``text`` states (every kind but ``tool``: those come from tool calls,
    ``facts_of``). Never raises on a str.

    >>> sorted(f.text for f in facts_in("Ask Grace Hopper about ABC-123 and 40% of 'the answer'."))
    ['40%', 'ABC-123', 'Grace Hopper', 'the answer']
    >>> facts_in("12abc")
    frozenset()
    """
    return frozenset(_scan(text))


def _scalars(value: object) -> Iterator[str]:
    """Every scalar inside ``value`` (a tool call's input), as text."""
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _scalars(v)
    elif isinstance(value, bool):
        yield "true" if value else "false"
    elif isinstance(value, (str, int, float)):
        yield str(value)


def _calls(message: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, arguments)`` of each tool call ``message`` makes, in either shape, each once."""
    seen: set[str] = set()
    content = message.get("content")
    for part in content if isinstance(content, list) else ():
        if isinstance(part, Mapping) and part.get("type") in ("tool_use", "server_tool_use"):
            seen.add(str(part.get("id")))
            yield str(part.get("name") or ""), part.get("input")
    for call in message.get("tool_calls") or ():
        if not isinstance(call, Mapping) or (str(call.get("id")) in seen and call.get("id") is not None):
            continue
        fn = call.get("function")
        fn = fn if isinstance(fn, Mapping) else call
        args = fn.get("arguments", fn.get("input"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        yield str(fn.get("name") or ""), args


def _part_text(part: object) -> Iterator[str]:
    if isinstance(part, str):
        yield part
    elif isinstance(part, list):
        for p in part:
            yield from _part_text(p)
    elif isinstance(part, Mapping):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            yield part["text"]
        elif kind == "tool_result":
            yield from _part_text(part.get("content"))


def message_text(message: Mapping[str, Any]) -> str:
    """What a message states, as text: its content's text (text parts and tool results; no
    JSON of the parts), then each tool call's name and every scalar of its arguments.

    >>> message_text({"role": "assistant", "content": "Listing.",
    ...               "tool_calls": [{"id": "c1", "function": {"name": "Bash", "arguments": '{"command": "ls /tmp"}'}}]})
    'Listing.\\nBash\\nls /tmp'
    """
    pieces = list(_part_text(message.get("content")))
    for name, args in _calls(message):
        pieces.append(name)
        pieces.extend(_scalars(args))
    return "\n".join(p for p in pieces if p)


def _tool_facts(message: Mapping[str, Any]) -> Iterator[Fact]:
    for name, args in _calls(message):
        if name:
            yield Fact("tool", name)
        values = args.values() if isinstance(args, Mapping) else args if isinstance(args, (list, tuple)) else [args]
        for v in values:
            if isinstance(v, (Mapping, list, tuple)) or v is None:
                continue
            s = next(_scalars(v), "").strip()
            if s and len(s) <= MAX_ARGUMENT:
                yield Fact("tool", s)


def facts_of(messages: Iterable[Mapping[str, Any]]) -> frozenset[Fact]:
    """The facts a list of messages states: each one's text's (``message_text``) and its tool calls'.

    >>> sorted((f.kind, f.text) for f in facts_of([{"role": "assistant", "content": "",
    ...     "tool_calls": [{"id": "c1", "function": {"name": "Read", "arguments": {"file_path": "/etc/hosts"}}}]}]))
    [('path', '/etc/hosts'), ('tool', '/etc/hosts'), ('tool', 'Read')]
    """
    out: set[Fact] = set()
    for m in messages:
        out |= facts_in(message_text(m))
        out.update(_tool_facts(m))
    return frozenset(out)
