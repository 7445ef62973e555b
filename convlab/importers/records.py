"""The importer protocol, and what every importer shares: naming problems, turning records into a sound tree.

A format is a module of this package with three things (see ``chatgpt`` for
one conversation per item, ``claude_code`` for a whole file):

- ``NAME``, the format's name (``Conversation.format``, ``read(format=...)``);
- ``detect(doc) -> bool``: whether a :class:`Document` is in this format,
  from ``doc.first`` / ``doc.head`` (its first items) and ``doc.kind``;
- ``parse(doc) -> Iterable[Conversation]``: its conversations. A format
  whose items are conversations returns ``doc.each(parse_one)``, which
  reads the items one at a time (a large export is streamed) and counts
  them on the progress bar. Every conversation is built by
  :func:`conversation` from the format's flat :class:`ImportedMessage` list.

To add a format: write such a module and list it in ``_IMPORTERS``
(``__init__``) where detection should try it, more specific shapes first.
``detect`` looks only at ``doc.head`` and never raises on odd input; what is
wrong inside one conversation is a ``Problems`` entry (a warning), never an
exception; ``ReadError`` (``read_error``) is for a file that cannot be read
at all.

Outside logs are damaged in the same few ways whatever their format: a parent
id that points nowhere, a loop of parent ids, an id used twice, a current node
that is not there. Each importer turns its format into flat ``ImportedMessage``s
(id, parent, node attributes) and ``build`` makes the tree out of them the same
way for all: what is sound is kept, every repair is reported once per
conversation as a ``ReadWarning`` that names the file, the conversation and
the nodes. Nothing here raises a bare KeyError or TypeError on bad input.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import jsondata
from ..conversation import LOST_PARENT, Conversation
from ..errors import ReadError, ReadWarning
from ..tree import MESSAGE_KEYS, Tree, usage_problem

#: What the importers check a JSON object against: ``isinstance(x, MAPPING)`` says what ``isinstance(x, Mapping)``
#: says, a dict (every object ``json`` parses) told by its type in a few nanoseconds where the ABC's own check
#: takes a hundred (a read makes one or more a message: a few percent of reading a log of short messages).
MAPPING = (dict, Mapping)

__all__ = [
    "MAPPING",
    "ImportedMessage",
    "Problems",
    "lost",
    "Head",
    "build",
    "conversation",
    "fields",
    "table",
    "descend",
    "latest",
    "walk",
    "parent_of",
    "ROOT_IDS",
    "read_error",
    "warn",
    "where",
    "role_of",
    "to_time",
    "text_or_parts",
    "usage_of",
    "logged_counts",
    "summary_root",
    "kept_copy",
    "as_text",
]

#: How many problems one warning spells out before it says "and N more".
_SHOWN = 5


def where(source: str, conversation: str | None = None, node: str | None = None) -> str:
    """``file 'x.json', conversation 'c1', node 'n3'``: the prefix of every message."""
    out = f"{source}"
    if conversation is not None:
        out += f", conversation {conversation!r}"
    if node is not None:
        out += f", node {node!r}"
    return out


def read_error(source: str, what: str, conversation: str | None = None, node: str | None = None) -> ReadError:
    return ReadError(f"{where(source, conversation, node)}: {what}")


def warn(text: str, *, passed_over: str | None = None) -> None:
    """Warn ``ReadWarning``, attributed to the code that called ``convlab.read``
    (the first frame outside convlab), however deep in the reading it arose;
    ``passed_over`` names the file left out whole, if one was."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "convlab":
        frame, level = frame.f_back, level + 1
    warnings.warn(ReadWarning(text, passed_over=passed_over), stacklevel=level)


class Problems:
    """The repairs made while reading one conversation, warned about once."""

    def __init__(self, source: str, conversation: str | None) -> None:
        self.source = source
        self.conversation = conversation
        self.items: list[tuple[str | None, str]] = []
        self.left: list[str] = []  # what left a message of the log out, one line per message
        self.empty: list[str] = []  # the messages read with no text because none was where the format keeps it

    def add(self, node: str | None, what: str) -> None:
        self.items.append((node, what))

    def left_out(self, node: str | None, what: str) -> None:
        """A message of the log the importer could not read: a problem, and counted (``Conversation.left_out``)."""
        self.add(node, what)
        self.left.append(f"node {node!r}: {what}" if node is not None else what)

    def no_text(self, node: str, what: str) -> None:
        """A message read with no text because the importer found none where the format keeps a message's text (a
        key it does not read, an object where text goes): a problem, and counted (``Conversation.no_text``)."""
        self.add(node, what)
        self.empty.append(node)

    def __bool__(self) -> bool:
        return bool(self.items)

    def warn(self) -> None:
        if not self.items:
            return
        shown = [f"node {n!r}: {w}" if n is not None else w for n, w in self.items[:_SHOWN]]
        more = len(self.items) - _SHOWN
        text = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        warn(f"{where(self.source, self.conversation)}: {text}")
        self.items = []


@dataclass
class ImportedMessage:
    """One message as an importer found it: its id, its parent's id, its node attributes."""

    id: str
    parent: str | None
    node: dict[str, Any] = field(default_factory=dict)


# -- small converters ------------------------------------------------------

_ROLE_ALIASES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "prompter": "user",
    "assistant": "assistant",
    "model": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "claude": "assistant",  # exports that name the assistant (a real branching export: User / Claude)
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


def role_of(raw: object, problems: Problems, node: str | None) -> str | None:
    """The protocol role for a format's role name; ``None`` (and a problem) when there is none."""
    role = _ROLE_ALIASES.get(raw) if raw.__class__ is str else None  # as nearly every log writes it: no copies
    if role is None and isinstance(raw, str):
        role = _ROLE_ALIASES.get(raw.strip().lower())
    if role is not None:
        return role
    problems.left_out(node, f"unknown role {raw!r}; message left out")
    return None


def to_time(value: object) -> float | None:
    """Seconds since the epoch from a number (seconds or milliseconds) or an ISO 8601 string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v):
            return None
        return v / 1000.0 if v > 1e11 else v
    if isinstance(value, str) and value:
        try:
            t = _dt.datetime.fromisoformat(value)  # Python 3.11 reads a "Z" too
            if t.tzinfo is None:
                t = t.replace(tzinfo=_dt.UTC)
            return t.timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return None


def text_or_parts(parts: Iterable[Any]) -> str | list[Any]:
    """A list of parts as the protocol's content: one string when every part is text.

    Strings become text parts; ``{"type": "text", "text": ...}`` stays; any other part is kept as given.
    """
    kept: list[Any] = []
    texts: list[str | None] = []  # each kept part's text, None for a part of another kind
    for p in parts:
        if p.__class__ is str:
            text = p
        elif _is_text(p):
            text = p["text"]
        elif isinstance(p, str):  # a str subclass
            text = str(p)
        elif p is None:
            continue
        else:
            text = None
        kept.append(p)
        texts.append(text)
    if None not in texts:  # every part is text (nearly every message): one string, no part made
        return "".join(texts)  # type: ignore[arg-type]  # no None in it, as just checked
    return [p if t is None else {"type": "text", "text": t} for p, t in zip(kept, texts, strict=True)]


def _is_text(part: object) -> bool:
    return isinstance(part, MAPPING) and part.get("type") == "text" and isinstance(part.get("text"), str)


def usage_of(raw: object) -> Any:  # Any: a usage no provider reports comes back as the log wrote it, for build to say
    """A provider's usage as a node's ``usage``: ``input_tokens``/``output_tokens`` (+ cache fields).

    Anthropic names are kept; OpenAI (``prompt_tokens``/``completion_tokens``)
    and Ollama (``prompt_eval_count``/``eval_count``) names are mapped, the
    originals kept beside them. None: no usage. A count (or a usage that is no
    object) is taken as the log wrote it, never repaired here: ``build`` leaves
    out a usage no provider could report, and says which field
    (``tree.usage_problem``).

    >>> usage_of({"prompt_tokens": 9, "completion_tokens": 2, "cached_tokens": None})
    {'prompt_tokens': 9, 'completion_tokens': 2, 'input_tokens': 9, 'output_tokens': 2}
    >>> usage_of({"input_tokens": -5}), usage_of(-5), usage_of(None)
    ({'input_tokens': -5}, -5, None)
    """
    if not isinstance(raw, MAPPING):
        return raw
    usage = {k: v for k, v in raw.items() if v is not None}  # a count given as null is no count
    for ours, names in (("input_tokens", ("prompt_tokens", "prompt_eval_count")),
                        ("output_tokens", ("completion_tokens", "eval_count"))):
        found = next((name for name in names if name in usage), None)
        if ours not in usage and found is not None:
            usage[ours] = usage[found]
    if "input_tokens" not in usage and "output_tokens" not in usage and usage_problem(usage) is None:
        return None
    return usage


def logged_counts(raw: Mapping[str, Any], names: Mapping[str, str]) -> tuple[dict[str, Any], bool]:
    """The token counts a format names its own way (``names``: the node's name -> the log's), under the node's
    names as the log wrote them (0 when not given), and whether each is a count a provider could report
    (``tree.usage_problem``). A format computes with them (the uncached input as the input less the cached)
    only then; else it keeps them as they are, and ``build`` leaves that usage out, saying which field.

    >>> logged_counts({"input": 9, "cacheRead": None}, {"input_tokens": "input", "cache_read_input_tokens": "cacheRead"})
    ({'input_tokens': 9, 'cache_read_input_tokens': 0}, True)
    >>> logged_counts({"input": -9}, {"input_tokens": "input"})
    ({'input_tokens': -9}, False)
    """
    usage = {ours: 0 if raw.get(theirs) is None else raw[theirs] for ours, theirs in names.items()}
    return usage, usage_problem(usage) is None


def as_text(value: object) -> str:
    """A value a log gives where a model reads text (a tool's output as an object): its JSON, with what JSON
    cannot carry repaired (``jsondata.repaired``: nesting past 100 levels cut), so no value is too deep to write.

    >>> as_text({"ok": True}), as_text("done"), as_text(None)
    ('{"ok": true}', 'done', '')
    """
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(jsondata.repaired(value)[0])


# -- a log's own compaction ---------------------------------------------------


def summary_root(id: str, replaces: str | None, text: str, time: float | None, metadata: dict[str, Any]) -> ImportedMessage:
    """A log's own compaction, as the engine records one (docs/protocol.md 5.4): a ``kind: "summary"`` user message
    at the root whose ``replaces`` is the message the log's head was on when it compacted (None: nothing before it).

    >>> summary_root("s1", "a9", "We fixed the parser.", None, {}).node["kind"]
    'summary'
    """
    return ImportedMessage(id, None, {"role": "user", "content": text, "kind": "summary", "replaces": replaces, "time": time,
                                      "metadata": metadata})


def kept_copy(original: ImportedMessage, id: str, parent: str, time: float | None) -> ImportedMessage:
    """A message a compaction kept, as ``context.replace`` records one: the original's role, content and
    message keys (``tool_calls``, ``metadata``, ...), no usage, and ``copied_from`` naming the original.

    >>> reply = ImportedMessage("a1", "u1", {"role": "assistant", "content": "hi", "usage": {"input_tokens": 9}, "metadata": {"model": "m"}})
    >>> kept_copy(reply, "a1@s1", "s1", 5.0).node
    {'role': 'assistant', 'content': 'hi', 'copied_from': 'a1', 'time': 5.0, 'metadata': {'model': 'm'}}
    """
    node = {"role": original.node["role"], "content": original.node["content"], "copied_from": original.id, "time": time}
    for key in MESSAGE_KEYS:
        if original.node.get(key) is not None:
            node[key] = original.node[key]
    return ImportedMessage(id, parent, node)


# -- the tree ----------------------------------------------------------------


def lost(record: ImportedMessage, parent: str) -> None:
    """Make ``record`` a top-level message whose parent ``parent`` the file lost (``LOST_PARENT``)."""
    record.parent = None
    meta = record.node.get("metadata")
    record.node["metadata"] = {**(meta if isinstance(meta, MAPPING) else {}), LOST_PARENT: parent}


def _put(tree: Tree, rec: ImportedMessage) -> None:
    """``rec`` added to ``tree``: its node is the record's own dict, made for it by its importer, given its id (not
    copied: a read makes hundreds of thousands), an empty ``metadata`` left out."""
    node = rec.node
    node["id"] = rec.id
    if "metadata" in node and not node["metadata"]:
        del node["metadata"]
    tree.add(node, rec.parent)


def build(records: list[ImportedMessage], problems: Problems) -> Tree:
    """A sound tree from records in the log's order (its head is not set).

    - an id seen before: the later record is left out;
    - a parent id that is not a record: the message becomes a top-level one;
    - a loop of parent ids: broken at the member that comes first in the log,
      which becomes a top-level message;
    - such a message names the parent it lost in ``metadata["lost_parent"]``
      (``LOST_PARENT``): the history under it is not whole;
    - parents are recorded before their children (``seq``), otherwise the log's order is kept.
    """
    by_id: dict[str, ImportedMessage] = {}
    order: list[ImportedMessage] = []
    for r in records:
        if r.node.get("usage") is not None:
            _check_usage(r, problems)
        _repair_text(r, problems)
        if r.id in by_id:
            problems.left_out(r.id, "id used twice; the later message left out")
            continue
        by_id[r.id] = r
        order.append(r)
    for r in order:
        if r.parent is not None and r.parent not in by_id:
            problems.add(r.id, f"parent {r.parent!r} is not in the conversation; kept as a top-level message")
            lost(r, r.parent)
        elif r.parent == r.id:
            problems.add(r.id, "is its own parent; kept as a top-level message")
            lost(r, r.parent)

    tree = Tree()
    waiting: dict[str, list[ImportedMessage]] = {}

    def add_with_waiting(r: ImportedMessage) -> None:
        stack = [r]
        while stack:
            rec = stack.pop()
            _put(tree, rec)
            stack.extend(reversed(waiting.pop(rec.id, [])))

    for r in order:
        if r.parent is not None and r.parent not in tree:
            waiting.setdefault(r.parent, []).append(r)
        elif waiting:
            add_with_waiting(r)
        else:  # nothing waits (parents before their replies, as nearly every log has them): no stack to keep
            _put(tree, r)

    # What is still waiting hangs below a loop of parent ids.
    if waiting:
        position = {r.id: i for i, r in enumerate(order)}
        for r in order:
            if r.id in tree:
                continue
            seen: list[str] = []
            cur = r.id
            while cur not in seen:
                seen.append(cur)
                parent = by_id[cur].parent
                if parent is None or parent in tree:  # pragma: no cover - would have been added
                    break
                cur = parent
            else:
                loop = seen[seen.index(cur):]
                first = min(loop, key=position.__getitem__)
                problems.add(first, "parent ids loop (" + " -> ".join([*loop, loop[0]]) + "); kept as a top-level message")
                rec = by_id[first]
                parent = rec.parent
                assert parent is not None, "a message in a loop of parent ids has a parent"
                waiting[parent].remove(rec)
                if not waiting[parent]:
                    del waiting[parent]
                lost(rec, parent)
                add_with_waiting(rec)

    return tree


def _check_usage(r: ImportedMessage, problems: Problems) -> None:
    """A usage no provider could report (``tree.usage_problem``: a negative count, a float, one past any window,
    text) is left out of its message, and said: the message counts as having no usage, so nothing downstream
    (the count, the cache model, the prices) ever reads it."""
    usage = r.node.get("usage")
    why = None if usage is None else usage_problem(usage)
    if why is not None:
        problems.add(r.id, f"{why}; its usage left out (the message counts as having none)")
        r.node["usage"] = None


def _repair_text(r: ImportedMessage, problems: Problems) -> None:
    """What a file holds that JSON cannot carry on (``jsondata.repaired``: a lone
    surrogate, which no UTF-8 text holds, NaN, a 70-bit integer) is read repaired,
    and said: the engine refuses such values, and a terminal cannot print a
    surrogate, so a conversation holds only what every layer can carry."""
    ids = 0
    rid, parent = r.id, r.parent
    if not (rid.__class__ is str and rid.isascii() and (parent is None or (parent.__class__ is str and parent.isascii()))):
        # plain ASCII ids, as nearly all are, need none
        (r.id, r.parent), ids = jsondata.repaired([r.id, r.parent])
    r.node, fixed = jsondata.repaired(r.node)
    fixed += ids
    if fixed:
        problems.add(r.id, f"{fixed} value{'s' if fixed > 1 else ''} JSON cannot carry (a lone surrogate, NaN, an integer "
                           "past 64 bits, nesting past 100 levels), read repaired")


#: How a conversation's head is chosen: the id of the log's current node, a
#: rule over the built tree (for formats that record none), or None: the newest leaf.
Head = str | Callable[[Tree], str | None] | None


def descend(tree: Tree, node: str | None, pick: Callable[[str, list[str]], str]) -> str | None:
    """From ``node`` down to a leaf, taking ``pick(node, children)`` at every step (a head rule's walk).

    >>> t = Tree()
    >>> for nid, parent in [("q", None), ("a1", "q"), ("a2", "q"), ("f", "a1")]:
    ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
    >>> descend(t, "q", lambda node, kids: kids[0]), descend(t, "q", lambda node, kids: kids[-1]), descend(t, None, max)
    ('f', 'a2', None)
    """
    while node is not None:
        kids = tree.children(node)
        if not kids:
            break
        node = pick(node, kids)
    return node


def latest(tree: Tree) -> str | None:
    """The head of a log that records none, as chat UIs show it: from the last top-level
    message, the latest reply at every fork (LibreChat's default, and the generic tree's).

    >>> t = Tree()
    >>> for nid, parent in [("q", None), ("a1", "q"), ("a2", "q"), ("q2", None), ("b1", "q2"), ("b2", "q2")]:
    ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
    >>> latest(t)
    'b2'
    """
    return descend(tree, tree.roots[-1] if tree.roots else None, lambda node, kids: kids[-1])


#: Parent ids that mean "no parent" in exports of message records (LibreChat's, the generic tree's).
ROOT_IDS = (None, "", "00000000-0000-0000-0000-000000000000")


def walk(messages: list[Any], problems: Problems, id_key: str) -> Iterator[tuple[Mapping[str, Any], str, str | None]]:
    """Message records that may hold their replies as ``children``, in document order (parents before
    the replies they hold), walked without recursion however deep: ``(record, its id, the id of the
    record holding it or None)``. A record that is not an object, or has no usable ``id_key``, is a
    problem and left out with what it holds.

    >>> ms = [{"id": "q", "children": [{"id": "a"}, {"text": "no id"}]}, "junk"]
    >>> problems = Problems("x.json", "c")
    >>> [(mid, holder) for _, mid, holder in walk(ms, problems, "id")], len(problems.items)
    ([('q', None), ('a', 'q')], 2)
    """
    stack: list[tuple[Any, str | None, str]] = [(m, None, f"messages[{i}]") for i, m in enumerate(messages)]
    stack.reverse()
    while stack:
        m, holder, at = stack.pop()
        if not isinstance(m, MAPPING):
            problems.left_out(None, f"{at} is a {type(m).__name__}, not a message; left out")
            continue
        mid = m.get(id_key)
        if mid is None or (mid.__class__ is not str and isinstance(mid, (bool, dict, Mapping, list))):
            problems.left_out(None, f"{at} has no {id_key}{'' if mid is None else f' it can use ({mid!r})'}; left out with what hangs under it")
            continue
        mid = str(mid)
        yield m, mid, holder
        kids = m.get("children")
        if isinstance(kids, list):
            stack.extend(reversed([(k, mid, f"{at}.children[{j}]") for j, k in enumerate(kids)]))


def parent_of(record: Mapping[str, Any], keys: tuple[str, ...], holder: str | None) -> str | None:
    """The parent a record names under the first of ``keys`` it has (``ROOT_IDS``: none), else ``holder``."""
    for key in keys:
        if key in record:
            value = record[key]
            return None if value in ROOT_IDS else str(value)
    return holder


def conversation(
    records: list[ImportedMessage],
    problems: Problems,
    *,
    id: str,
    title: object,
    format: str,
    source: str,
    head: Head = None,
    metadata: dict[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Conversation:
    """The one builder: ``build`` the records, choose the head, warn about what was repaired, wrap it as a Conversation.

    ``head`` is the id of the log's current node (when that is not a message
    of the tree, the head is the newest leaf and the repair is reported), a
    rule called with the built tree (a format that records no current node:
    follow the latest reply, the best-ranked one, ...), or None: the newest leaf.
    ``labels``: the log's own marks on its messages (id -> text; pi's ``label`` entries), the tree's labels.
    A ``title`` that is not a string (a damaged export) is no title.

    >>> c = conversation([ImportedMessage("q", None, {"role": "user", "content": "hi"}),
    ...                   ImportedMessage("a", "q", {"role": "assistant", "content": "hello"})],
    ...                  Problems("chat.json", "c1"), id="c1", title=None, format="openai", source="chat.json")
    >>> c.head, [m["content"] for m in c.path()]
    ('a', ['hi', 'hello'])
    """
    tree = build(records, problems)
    if callable(head):
        head = head(tree)
    elif head is not None and head not in tree:
        problems.add(None, f"current node {head!r} is not a message of the conversation; head set to the newest leaf")
        head = None
    tree.head = head if head is not None else _newest_leaf(tree, records)
    for nid, text in (labels or {}).items():
        if nid in tree:
            tree.set_label(nid, text)
    (id, title_text), fixed = jsondata.repaired([id, title if isinstance(title, str) else None])
    metadata, more = jsondata.repaired(metadata)
    if fixed or more:
        problems.add(None, "its id, title or metadata held what JSON cannot carry; read repaired (jsondata.repaired)")
    left = list(problems.left)
    problems.warn()
    return Conversation(tree, id=id, title=title_text, format=format, source=source, metadata=metadata, left_out=left,
                        no_text=list(problems.empty))


def _newest_leaf(tree: Tree, records: list[ImportedMessage]) -> str | None:
    """``newest_leaf(tree.graph)`` without building the graph: the built message with no child and the highest ``seq``."""
    best, best_seq = None, -1
    for r in records:
        if r.id in tree and not tree.children(r.id):
            seq = tree.node(r.id)["seq"]
            if seq > best_seq:
                best, best_seq = r.id, seq
    return best


def table(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``raw[key]`` when it is a JSON object, else an empty one (a log that left it out, or holds something else).

    >>> table({"author": {"role": "user"}}, "author"), table({"author": "me"}, "author"), table({}, "author")
    ({'role': 'user'}, {}, {})
    """
    value = raw.get(key)
    return value if isinstance(value, MAPPING) else {}


def fields(item: object, *keys: str) -> dict[str, Any]:
    """The ``keys`` of ``item`` that hold something (not None, not empty), for a conversation's metadata.

    >>> fields({"create_time": 1.5, "title": "", "model": None}, "create_time", "title", "model", "missing")
    {'create_time': 1.5}
    >>> fields(["not", "a", "mapping"], "create_time")
    {}
    """
    if not isinstance(item, MAPPING):
        return {}
    return {k: item[k] for k in keys if item.get(k) is not None and item.get(k) not in ("", [], {})}
