"""What a person does with the branches of a session beyond the engine's inputs: labels (convlab's own
events, ``label.set`` and ``label.removed``: marks on messages that no model reads, kept in the log so that
they survive ``Session.load``); merging a branch back and summarizing from a point, each submitted through
the protocol (a view, a ``context.replace``), so the engine records them as it records anything else."""

from __future__ import annotations

from .. import jsondata
from ..errors import Refused
from .intake import Intake

#: The longest label, in characters: a bookmark's name, not a note.
MAX_LABEL = 200


class Branches(Intake):
    """``label``, ``unlabel``, ``labels``."""

    def label(self, node: str, text: str) -> None:
        """Put ``text`` on the message ``node`` as its label (a new one replaces the old), recorded in the
        session log as ``label.set`` (convlab's own event, docs/wire.md), so it survives ``Session.load``.
        A label is a person's mark: no model reads it, no turn is started, and it can be set while a turn
        runs. A node the tree does not hold, or a text that is empty, longer than ``MAX_LABEL`` characters
        or not JSON text, is refused (``Refused``, 400), nothing written.

        >>> from convlab.engine import Session
        >>> s = Session(); _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
        >>> s.label("u1", "the greeting"); s.labels()
        {'u1': 'the greeting'}
        >>> s.events[-1]["type"], s.events[-1]["node"], s.events[-1]["label"]
        ('label.set', 'u1', 'the greeting')
        """
        node = self._labelled_node(node)
        if not isinstance(text, str) or not text.strip():
            raise Refused(400, f"label: a non-empty text was expected, got {text!r}")
        if len(text) > MAX_LABEL:
            raise Refused(400, f"label: {len(text):,} characters; a label holds at most {MAX_LABEL}")
        why = jsondata.problem(text, "label")
        if why is not None:
            raise Refused(400, why)
        if self._tree.labels.get(node) == text:
            return
        with self._atomic():
            self._emit("label.set", node=node, label=text)

    def unlabel(self, node: str) -> None:
        """Take the label off ``node`` (``label.removed`` in the log); a node with no label is left as it is.

        >>> from convlab.engine import Session
        >>> s = Session(); _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
        >>> s.label("u1", "x"); s.unlabel("u1"); s.labels(), s.events[-1]["type"]
        ({}, 'label.removed')
        """
        node = self._labelled_node(node)
        if node not in self._tree.labels:
            return
        with self._atomic():
            self._emit("label.removed", node=node)

    def labels(self) -> dict[str, str]:
        """The labels on the session's messages, ``{id: text}``, in the order they were set (a copy)."""
        return dict(self._tree.labels)

    def _labelled_node(self, node: object) -> str:
        if not isinstance(node, str) or node not in self._tree:
            shown = repr(node)[:80]
            raise Refused(400, f"node: {shown} is not a recorded message of this session")
        return node
