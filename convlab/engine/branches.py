"""What a person does with the branches of a session beyond the engine's inputs: labels (convlab's own
events, ``label.set`` and ``label.removed``: marks on messages that no model reads, kept in the log so that
they survive ``Session.load``); merging a branch back and summarizing from a point, each submitted through
the protocol (a view, a ``context.replace``), so the engine records them as it records anything else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import jsondata, providers
from ..context import DEFAULT_PROMPT
from ..errors import Refused
from ..tokens import content_text
from ..toolcalls import is_result
from ..tree import Message, message_of
from ..wire import Receipt, receipt
from .calls import SUMMARY_PREFIX
from .intake import Intake

#: The longest label, in characters: a bookmark's name, not a note.
MAX_LABEL = 200

#: What a summarizer is asked for a merge: what the branch did, for the conversation it comes back to.
MERGE_PROMPT = ("Summarize what the conversation above did and found, for a conversation that continues without it: "
                "results, decisions, names and numbers, open questions. Do not address the user.")

#: The opening of a merge message, before the summary: which branch, left where.
MERGE_PREFIX = "A branch of this conversation was merged back (from {leaf}, which left it after {ancestor}):\n\n"

#: What ``merge`` and ``summarize`` take as ``summarizer``: a provider, the text itself, or None (the session's own
#: first provider, as the engine summarizes with).
Summarizer = providers.Provider | str | None


class Branches(Intake):
    """``label``, ``unlabel``, ``labels``; ``merge``; ``summarize``."""

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
        node = self._recorded(node, "node")
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
        node = self._recorded(node, "node")
        if node not in self._tree.labels:
            return
        with self._atomic():
            self._emit("label.removed", node=node)

    def labels(self) -> dict[str, str]:
        """The labels on the session's messages, ``{id: text}``, in the order they were set (a copy)."""
        return dict(self._tree.labels)

    def _recorded(self, node: object, what: str) -> str:
        if not isinstance(node, str) or node not in self._tree:
            shown = repr(node)[:80]
            raise Refused(400, f"{what}: {shown} is not a recorded message of this session")
        return node

    # -- merge a branch back --------------------------------------------------------------------------------
    def merge(self, leaf: str, into: str | None = None, summarizer: Summarizer = None) -> Receipt:
        """Merge the branch that ends at ``leaf`` back into the branch that ends at ``into`` (default: the head):
        what the branch did since it left the target's path (its messages below the common ancestor) becomes
        one user message on the target branch, written by ``summarizer`` (a provider, the text itself, or None:
        the session's first provider), with its provenance in ``metadata["merged_from"]``: ``{"leaf",
        "ancestor"}`` (None: the branch shares only the root). The message goes in through the protocol, as a
        view of the target branch plus the message (``client.messages``): the engine records it like any
        message, moves the head to it and starts a turn (the worker decides whether the model answers).
        Returns the receipt.

        Merging the same branch again adds nothing: when a message on the target's path already holds that
        provenance, the receipt says ``duplicate`` (its ``turn_id`` the turn that took it) and nothing is
        submitted. A leaf on the target's own path has nothing to merge; that, an unknown node, or a turn
        running (the view's 409) is refused (``Refused``), nothing written.

        >>> from convlab.engine import Session
        >>> s = Session()
        >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "plan a trip"}})
        >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u2", "role": "user", "content": "try Lisbon"}})
        >>> _ = s.submit({"type": "client.messages", "agent_id": "bot", "messages": s.view("e1") + [{"id": "u3", "role": "user", "content": "try Porto"}]})
        >>> s.merge("e2", summarizer="Lisbon: 3 days, 900 EUR.")["status"]
        200
        >>> merged = s.path()[-2]
        >>> merged["metadata"]["merged_from"], merged["content"].splitlines()[-1]
        ({'leaf': 'e2', 'ancestor': 'e1'}, 'Lisbon: 3 days, 900 EUR.')
        >>> s.merge("e2", summarizer="again")["duplicate"]
        True
        """
        leaf = self._recorded(leaf, "leaf")
        target = self.head if into is None else self._recorded(into, "into")
        if target is None:
            raise Refused(400, "into: the session has no messages to merge into")
        ancestor, _, delta = self._tree.fork(target, leaf)
        if not delta:
            raise Refused(400, f"leaf: {leaf} is on the path to {target}: its branch has nothing to merge")
        provenance = {"leaf": leaf, "ancestor": ancestor}
        for nid in self._tree.path_ids(target):
            meta = self._tree.node(nid).get("metadata")
            if isinstance(meta, Mapping) and meta.get("merged_from") == provenance:
                return receipt(200, self._tree.node(nid).get("turn_id"), duplicate=True)
        text = self._summary_text([message_of(self._tree.node(n)) for n in delta], summarizer, MERGE_PROMPT, "merge")
        message: Message = {"role": "user", "content": MERGE_PREFIX.format(leaf=leaf, ancestor=provenance["ancestor"] or "the root") + text,
                            "metadata": {"merged_from": provenance}}
        return self.submit({"type": "client.messages", "agent_id": self.agent, "messages": [*self.view(target), message]})

    # -- summarize from here --------------------------------------------------------------------------------
    def summarize(self, start: str, end: str | None = None, summarizer: Summarizer = None) -> list[dict[str, Any]]:
        """Claude Code's "summarize from here": the proposal of a ``context.replace`` (docs/protocol.md 5.4) that
        summarizes the active path's messages from ``start`` to ``end`` (default: the head) and keeps every
        other message of the path verbatim (as copies, in their order). Nothing changes until a decision is
        answered with it: like the engine's own proposed summary, a person reads it, edits it and answers a
        waiting decision with it (``s.decide(s.summarize(...) + [{"type": "llm.call"}])``, or in the
        Lab's decision panel); the engine then records it as any ``context.replace``.

        From the first message of the path the summary is the replace's ``summary`` (a ``kind: summary``
        message first); from a later one it is a user message in the place of what it summarizes, saying so
        (``metadata["summary_of"]``: ``{"start", "end"}``), after the messages before it. A range never cuts
        a tool call from its results: one that starts at a result starts at the call, one that ends before a
        result takes it in. ``summarizer``: a provider, the text itself, or None (the session's first
        provider). A node that is not on the active path, or an ``end`` above ``start``: ``Refused`` (400).

        >>> from convlab.engine import Session
        >>> s = Session(worker="manual")
        >>> for i in (1, 2):
        ...     _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": f"u{i}", "role": "user", "content": f"q{i}"}})
        ...     s.decide([{"type": "llm.call"}]); s.decide([])
        >>> proposal = s.summarize("e1", "u2", summarizer="one answer, then q2")
        >>> [(m.get("id"), m["content"]) for m in proposal[0]["messages"]]
        [('u1', 'q1'), (None, 'The earlier conversation was summarized:\\n\\none answer, then q2'), ('e2', 'echo: q2')]
        """
        path = self._tree.path_ids()
        start = self._recorded(start, "start")
        end = path[-1] if end is None and path else self._recorded(end, "end")
        for what, nid in (("start", start), ("end", end)):
            if nid not in path:
                raise Refused(400, f"{what}: {nid} is not on the active path (check its branch out first)")
        i, j = path.index(start), path.index(end)
        if j < i:
            raise Refused(400, f"end: {end} comes before start {start} on the active path")
        nodes = [self._tree.node(n) for n in path]
        while i > 0 and is_result(nodes[i]):  # a result keeps its call: start at the call
            i -= 1
        while j + 1 < len(nodes) and is_result(nodes[j + 1]):  # and a call its results
            j += 1
        text = self._summary_text([message_of(n) for n in nodes[i:j + 1]], summarizer, DEFAULT_PROMPT, "summarize")
        before, after = [message_of(n) for n in nodes[:i]], [message_of(n) for n in nodes[j + 1:]]
        if i == 0:
            return [{"type": "context.replace", "summary": text, "messages": after}]
        summary: Message = {"role": "user", "content": SUMMARY_PREFIX + text, "metadata": {"summary_of": {"start": path[i], "end": path[j]}}}
        return [{"type": "context.replace", "messages": [*before, summary, *after]}]

    def _summary_text(self, messages: Sequence[Message], summarizer: Summarizer, prompt: str, what: str) -> str:
        """The text a summarizer writes of ``messages`` (a string summarizer is that text)."""
        if isinstance(summarizer, str):
            if not summarizer.strip():
                raise Refused(400, "summarizer: the text given is empty")
            why = jsondata.problem(summarizer, "summarizer")
            if why is not None:
                raise Refused(400, why)
            return summarizer
        llm = next(iter(self.llms.values())) if summarizer is None else summarizer
        if not hasattr(llm, "complete"):
            raise Refused(400, f"summarizer: a provider, the text itself or None was expected, got a {type(llm).__name__}")
        request = {"model": None, "messages": [*messages, {"role": "user", "content": prompt}], "stream": False, "summary": True}
        reply = providers.call(llm, request)  # a ProviderError says what went wrong, nothing recorded
        text = content_text(reply["content"]).strip()
        if not text:
            raise Refused(400, f"summarizer: the {what} summary came back empty")
        return text
