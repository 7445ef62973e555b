"""What a session asks its decisions of: the ``Worker`` type, what ``Session(worker=...)``
takes (``WorkerLike``), and the built-in worker, ``chat_worker``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from ..wire import Decision

#: A worker (``Session(worker=...)``, a replay's ``worker``): the decision request as it sees it
#: (``Session.pending``) -> its actions, which the engine checks as they come back (``inputs.validate_actions``).
Worker: TypeAlias = Callable[[Decision], list[dict[str, Any]]]

#: What ``Session(worker=...)`` takes: ``"chat"``, ``"manual"`` or a worker; a worker typed to take a
#: plain ``dict`` too (a decision is one at run time: PEP 589 makes no TypedDict a ``dict`` to a type checker).
WorkerLike: TypeAlias = str | Worker | Callable[[dict], list]


def chat_worker(decision: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The built-in worker: call the model unless the path ends with an assistant
    message; end the turn on a result; accept what ``context.limit`` proposes.

    >>> chat_worker({"type": "turn.start", "messages": [{"role": "user", "content": "hi"}]})
    [{'type': 'llm.call'}]
    """
    kind = decision["type"]
    if kind == "turn.start":
        messages = decision["messages"]
        if messages and messages[-1]["role"] == "assistant":
            return []
        return [{"type": "llm.call"}]
    if kind == "context.limit":
        return list(decision["proposed"])
    return []
