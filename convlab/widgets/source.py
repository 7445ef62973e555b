"""What a widget shows: a live ``convlab.Session``, or an imported ``convlab.Conversation`` read-only.

Why: the first thing a user with a log tries is ``convlab.Lab(conversation)``.
A Conversation has a tree and a head but no engine: nothing to submit, no
decisions, no events. ``ReadOnly`` gives the widgets the little they read
(tree, head, path, children, subscribe) and lets a person switch branches by
moving the conversation's head in memory (nothing is written anywhere); the
widgets of one conversation share one ``ReadOnly``, so a click in the tree
redraws the chat. Widgets that need an engine say in one line what to pass.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..conversation import Conversation
from ..engine import Session
from ..tree import Tree

if TYPE_CHECKING:
    from ..replaying.result import Replay

__all__ = ["ReadOnly", "source_of", "shown", "REPLAY_HINT", "Source", "Given"]

#: How to get a Session for an imported conversation (``replay`` re-enacts it through the protocol).
REPLAY_HINT = "convlab.replay(conversation) re-enacts it as a live Session"

_shared: weakref.WeakValueDictionary[int, ReadOnly] = weakref.WeakValueDictionary()


class ReadOnly:
    """An imported conversation as the widgets read it; ``move_head`` switches branches in memory.

    >>> import convlab
    >>> t = convlab.Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "hi"}, parent=None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "yo"}, parent="u1")
    >>> _ = t.add({"id": "a2", "role": "assistant", "content": "hey"}, parent="u1")
    >>> t.head = "a1"
    >>> conv = convlab.Conversation(t, id="c1")
    >>> ro = source_of(conv, "TreeView")
    >>> ro.move_head("a2"); conv.head
    'a2'
    """

    readonly = True

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self._subscribers: list[Callable[[dict], None]] = []

    @property
    def tree(self) -> Any:
        return self.conversation.tree

    @property
    def message_tree(self) -> Tree:
        return self.conversation.message_tree

    @property
    def head(self) -> str | None:
        return self.conversation.head

    def path(self, node_id: str | None = None) -> list[dict[str, Any]]:
        return self.conversation.path(node_id)

    def children(self, node_id: str | None) -> list[str]:
        return self.conversation.children(node_id)

    def tokens(self) -> int:
        """The count of docs/protocol.md 5.1 for the path to the head (the log's usage where it has it)."""
        return self.conversation.tokens()

    def subscribe(self, fn: Callable[[dict], None], types: Iterable[str] | None = None) -> Callable[[], None]:
        """As ``Session.subscribe``: the only event of a read-only conversation is a local ``head.moved``."""
        if types is not None and "head.moved" not in set(types):
            return lambda: None
        self._subscribers.append(fn)

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

        return unsubscribe

    def move_head(self, node_id: str) -> None:
        """Put the conversation's head on ``node_id`` (in memory) and tell the widgets."""
        before = self.conversation.head
        self.conversation.checkout(node_id)
        if node_id == before:
            return
        event = {"type": "head.moved", "from": before, "to": node_id}  # local: no seq, no time
        for fn in list(self._subscribers):
            fn(event)


#: What a widget shows (``source_of``): a live Session, or an imported conversation read-only.
Source: TypeAlias = "Session | ReadOnly"
#: What a widget is given: a Session, a Replay (its session), an imported Conversation, or the
#: ``ReadOnly`` the widgets of one conversation share.
Given: TypeAlias = "Session | Replay | Conversation | ReadOnly"


def source_of(given: object, widget: str, *, needs_session: bool = False) -> Source:
    """The Session or the ``ReadOnly`` conversation a widget reads, or a TypeError saying what to pass.

    A ``Replay`` (anything whose ``.session`` is a Session) counts as its session.
    """
    if isinstance(given, (Session, ReadOnly)):
        source = given
    elif isinstance(session := getattr(given, "session", None), Session):
        source = session
    elif isinstance(given, Conversation):
        shared = _shared.get(id(given))
        if shared is None or shared.conversation is not given:
            shared = _shared[id(given)] = ReadOnly(given)
        source = shared
    elif isinstance(given, (list, tuple)):
        raise TypeError(f"{widget} shows one conversation, got a {type(given).__name__} of {len(given)}: "
                        f"convlab.read() returns a list, pass one of its items, e.g. {widget}(convs[0])")
    elif isinstance(given, (str, os.PathLike)):
        raise TypeError(f"{widget} takes a convlab.Session, not a path: convlab.Session.load(path) for a "
                        "session log, convlab.read(path) for another tool's log (or convlab.Lab(path))")
    else:
        raise TypeError(f"{widget} shows a convlab.Session or an imported convlab.Conversation, "
                        f"got {type(given).__name__}")
    if needs_session and isinstance(source, ReadOnly):
        raise TypeError(f"{widget} needs a live convlab.Session and an imported Conversation has none: "
                        f"{REPLAY_HINT}, pass that")
    return source


def shown(source: Source) -> tuple[Session | None, Any]:
    """What a widget on ``source`` (what ``source_of`` gave) shows: ``(session, conversation)``, the
    live Session or the imported Conversation, the other None. Every widget and the Lab read it here.

    >>> import convlab
    >>> s = convlab.Session(); shown(source_of(s, "Lab")) == (s, None)
    True
    """
    if isinstance(source, ReadOnly):
        return None, source.conversation
    return source, None
