"""Compare two branches: the two paths from their common ancestor, aligned turn by turn.

The paths come from the one walk in ``tree.py`` (``Tree.path_ids``); what differs between two
texts is said as a word diff (git's ``--word-diff`` marks: ``[-gone-]{+added+}``), so an edited
message reads as its edit and a regenerated reply sits beside the original. The cost of going on
from each leaf is the engine's own count there (``Tree.count``: docs/protocol.md 5.1), what the
model would read at the next call.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from ..text import readable
from ..tokens import count_batch
from ..tree import Tree
from .sources import Source, name_of, node_of, table, tree_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["compare", "COMPARE_COLUMNS", "word_diff", "common_ancestor"]

#: The columns of ``compare``, in order.
COMPARE_COLUMNS = ("step", "a_id", "a_role", "a_text", "a_tokens", "b_id", "b_role", "b_text", "b_tokens", "change", "diff")

def word_diff(a: str, b: str) -> str:
    """``b`` against ``a``, word by word, on one line: ``[-removed-]``, ``{+added+}``, the rest as it is
    (words are what spaces and line breaks separate; a change of spacing alone is no change).

    >>> word_diff("weather in NYC today?", "weather in LA today?")
    'weather in [-NYC-] {+LA+} today?'
    """
    wa, wb = a.split(), b.split()
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(wa[i1:i2])
            continue
        if i2 > i1:
            out.append("[-" + " ".join(wa[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(wb[j1:j2]) + "+}")
    return " ".join(out)


def common_ancestor(tree: Tree, a: str, b: str) -> tuple[str | None, list[str], list[str]]:
    """The last message the paths to ``a`` and ``b`` share (None: they share none, only the root), and what each
    path holds below it (``Tree.fork``, the one rule merge reads too).

    >>> t = Tree()
    >>> for nid, parent in [("u1", None), ("a1", "u1"), ("a2", "u1"), ("u2", "a2")]:
    ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
    >>> common_ancestor(t, "a1", "u2")
    ('u1', ['a1'], ['a2', 'u2'])
    """
    return tree.fork(a, b)


def _change(step: int, na: dict[str, Any] | None, nb: dict[str, Any] | None, ta: str, tb: str) -> str:
    if nb is None:
        return "only a"
    if na is None:
        return "only b"
    if step == 1 and any(n.get("kind") == "summary" or n.get("replaces") for n in (na, nb)):
        return "replaced"  # one side starts a new history (a context.replace, a log's compaction): no edit
    if step == 1 and na["role"] == nb["role"]:  # two children of the ancestor: a message sent again, or a reply again
        return "regenerated" if na["role"] == "assistant" else "edited"
    return "same" if ta == tb and na["role"] == nb["role"] else "differs"


def compare(source: Source, a: str, b: str, *, encoding: str = "o200k_base") -> pd.DataFrame:
    """Two branches of ``source`` (a Session, a Conversation, a Replay) side by side: the paths to
    the messages ``a`` and ``b`` (any depth) from their common ancestor, one row per step below it.

    Columns: ``step`` (1: the first message below the ancestor), for each side ``a_id``, ``a_role``,
    ``a_text`` (as a person reads it: ``convlab.readable``), ``a_tokens`` (exact, ``encoding``) and the
    same for ``b`` (None where that side has no message at that step); ``change``: ``edited`` (the
    first step, the same role but not an assistant's: a message sent again, changed), ``regenerated``
    (the first step, two replies of the assistant, whatever their texts), ``replaced`` (the first step, where
    one side starts a new history: a summary, or the first message of a ``context.replace``), ``same`` (a later step, the same
    role and text), ``differs``,
    ``only a``, ``only b``; ``diff``: ``b_text`` against ``a_text`` word by word (``[-gone-]{+added+}``)
    where both sides have a message and the texts differ.

    ``df.attrs``: ``ancestor`` (None: only the root is shared), for each side ``a`` and ``b`` a dict of
    ``leaf``, ``messages`` and ``tokens`` (what it adds below the ancestor) and ``count`` (what the engine
    counts at that leaf, the model's read if it went on from there: docs/protocol.md 5.1), and
    ``summary``, one line saying all that.

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "weather in NYC?"}})
    >>> _ = s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "weather in LA?"}]})
    >>> df = convlab.compare(s, "e1", "e3")
    >>> df[["step", "a_id", "b_id", "change", "diff"]].values.tolist()
    [[1, 'u1', 'e2', 'edited', 'weather in [-NYC?-] {+LA?+}'], [2, 'e1', 'e3', 'differs', 'echo: weather in [-NYC?-] {+LA?+}']]
    >>> df.attrs["summary"]
    'bot: e1 and e3 share no message (each starts at its own root); e1 adds 2 messages (10 tokens), e3 adds 2 (10); going on reads about 10 tokens from e1, 9 from e3'
    """
    tree = tree_of(source)
    a, b = node_of(tree, a, "a"), node_of(tree, b, "b")
    ancestor, below_a, below_b = common_ancestor(tree, a, b)
    nodes_a, nodes_b = [tree.node(n) for n in below_a], [tree.node(n) for n in below_b]
    texts_a, texts_b = [readable(n["content"]) for n in nodes_a], [readable(n["content"]) for n in nodes_b]
    counts = count_batch(texts_a + texts_b, encoding) if texts_a or texts_b else []
    tok_a, tok_b = counts[: len(texts_a)], counts[len(texts_a):]
    rows = []
    for i in range(max(len(nodes_a), len(nodes_b))):
        na = nodes_a[i] if i < len(nodes_a) else None
        nb = nodes_b[i] if i < len(nodes_b) else None
        ta = texts_a[i] if na is not None else None
        tb = texts_b[i] if nb is not None else None
        change = _change(i + 1, na, nb, ta or "", tb or "")
        diff = word_diff(ta, tb) if ta is not None and tb is not None and ta != tb else None
        rows.append((i + 1, na and na["id"], na and na["role"], ta, tok_a[i] if na is not None else None,
                     nb and nb["id"], nb and nb["role"], tb, tok_b[i] if nb is not None else None, change, diff))
    df = table(rows, COMPARE_COLUMNS, {"step": "int64", "a_tokens": "Int64", "b_tokens": "Int64"})
    sides = {side: {"leaf": leaf, "messages": len(ids), "tokens": sum(toks), "count": tree.count(leaf)}
             for side, leaf, ids, toks in (("a", a, below_a, tok_a), ("b", b, below_b, tok_b))}
    df.attrs.update(ancestor=ancestor, a=sides["a"], b=sides["b"], summary=_summary(name_of(source), ancestor, sides))
    return df


def _summary(name: str, ancestor: str | None, sides: dict[str, dict[str, Any]]) -> str:
    a, b = sides["a"], sides["b"]
    shared = "share no message (each starts at its own root)" if ancestor is None else f"diverge after {ancestor}"
    plural = "" if a["messages"] == 1 else "s"
    return (f"{name}: {a['leaf']} and {b['leaf']} {shared}; {a['leaf']} adds {a['messages']} message{plural} "
            f"({a['tokens']:,} tokens), {b['leaf']} adds {b['messages']} ({b['tokens']:,}); going on reads about "
            f"{a['count']:,} tokens from {a['leaf']}, {b['count']:,} from {b['leaf']}")
