"""What the explorers take: a ``Session``, a ``Conversation``, a ``Replay`` (its session) or a
``Tree``, each read through the one ``Tree`` under it, and the node ids they are given, checked
once here so that a wrong one is an ``ExploreError`` naming it, never a ``KeyError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from ..conversation import Conversation
from ..engine import Session
from ..errors import ExploreError
from ..replaying.result import Replay
from ..tree import Tree

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Source", "tree_of", "node_of", "name_of", "table"]

#: What ``find``, ``compare`` and ``write`` read.
Source: TypeAlias = "Session | Conversation | Replay | Tree"


def tree_of(source: Source) -> Tree:
    """The message tree under ``source`` (a Replay's: its session's).

    >>> t = Tree(); tree_of(t) is t
    True
    >>> tree_of([])
    Traceback (most recent call last):
    ...
    convlab.errors.ExploreError: a Session, a Conversation, a Replay or a Tree was expected, got a list (convlab.read returns a list: take one of its conversations)
    """
    if isinstance(source, Replay):
        source = source.session
    if isinstance(source, (Session, Conversation)):
        return source.message_tree
    if isinstance(source, Tree):
        return source
    hint = " (convlab.read returns a list: take one of its conversations)" if isinstance(source, (list, tuple)) else ""
    raise ExploreError(f"a Session, a Conversation, a Replay or a Tree was expected, got a {type(source).__name__}{hint}")


def node_of(tree: Tree, node: object, what: str = "node") -> str:
    """``node`` when it is a message id of ``tree``; else an ``ExploreError`` saying ``what`` it was meant to be.

    >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> node_of(t, "u1")
    'u1'
    >>> node_of(t, "u9", "a")
    Traceback (most recent call last):
    ...
    convlab.errors.ExploreError: a: 'u9' is no message of this tree (1 message)
    """
    if not isinstance(node, str):
        raise ExploreError(f"{what}: a message id (a string) was expected, got a {type(node).__name__}")
    if node not in tree:
        n = len(tree)
        raise ExploreError(f"{what}: {node[:80]!r} is no message of this tree ({n:,} message{'s' if n != 1 else ''})")
    return node


def name_of(source: Source) -> str:
    """How an error or a file names ``source``: a conversation's id, a session's agent."""
    if isinstance(source, Replay):
        source = source.session
    if isinstance(source, Conversation):
        return source.id
    if isinstance(source, Session):
        return source.agent
    return "tree"


def table(rows: list[tuple[Any, ...]], columns: tuple[str, ...], dtypes: dict[str, str]) -> pd.DataFrame:
    """A DataFrame of ``rows``: each column ``dtypes`` names has that dtype, every other one ``object`` (so a
    missing id or label stays None, and ids stay the strings they are, whatever pandas infers).

    >>> table([("u1", 1), ("a1", None)], ("id", "n"), {"n": "Int64"}).dtypes.tolist()
    [dtype('O'), Int64Dtype()]
    """
    import pandas as pd

    cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    return pd.DataFrame({c: pd.Series(list(v), dtype=dtypes.get(c, "object")) for c, v in zip(columns, cols, strict=True)},
                        columns=list(columns))
