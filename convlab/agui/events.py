"""One run's engine events as AG-UI events.

A run is one turn. ``RunEvents`` is fed the session's events while the turn
runs (``on_event``, called from ``Session.subscribe``) and collects the AG-UI
events they mean, built with ``ag_ui.core``'s own models:

- every engine event first as ``CUSTOM`` (``name: "convlab.<type>"``, the
  event as ``value``), so a client loses nothing (``llm.delta`` is not an
  engine event: it is the text of ``TEXT_MESSAGE_CONTENT``);
- a model reply as ``TEXT_MESSAGE_START/CONTENT/END`` streamed from its
  ``llm.delta``\\s, its ``messageId`` the id the tree records, then a
  ``TOOL_CALL_START/ARGS/END`` per tool call (a reply with tool calls and no
  text has no text message: ``TOOL_CALL_START.parentMessageId`` names it);
- each summary call between ``STEP_STARTED`` and ``STEP_FINISHED`` (step
  ``summary <call id>``): its text is never a text message;
- ``MESSAGES_SNAPSHOT`` (the active path) whenever what the model reads changes
  other than by appending (a ``context.replace``, a head moved: a branch
  switch, a regenerate), and whenever it is not what the client holds plus
  what was streamed: after a streamed reply that failed, and when the history
  the client sent has other content than the tree under a known id (the tree
  keeps its own: docs/protocol.md 2, matching is by id only);
- ``STATE_SNAPSHOT`` (the worker state along the active path) when it changes
  during the run (``state.set``, another branch);
- ``RUN_FINISHED`` with ``usage`` (every model call of the run, per provider
  and model) and its outcome, or ``RUN_ERROR``;
- the server's own notices as ``CUSTOM`` ``convlab.serve.<what>`` (``note``).

A cancelled run's ``RUN_FINISHED`` depends on the client: one that sends
``protocolVersion`` 1.0 or later (``@ag-ui/client`` 1.0, convlab's own page
and client) gets outcome ``cancelled``; one that sends none, as the 0.0.5x
clients CopilotKit 1.74 and assistant-ui 0.15 ship do, gets no outcome: their
schema knows only ``success`` and ``interrupt`` and rejects the run otherwise
("Invalid discriminator value"), and both schemas take an absent one. The
``CUSTOM`` ``convlab.turn.cancelled`` before it says what happened.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

from ..tokens import content_text
from ..tree import input_tokens, path_to
from .messages import to_agui

if TYPE_CHECKING:
    from ..engine import Session

__all__ = ["RunEvents", "summary_step", "refusal", "snapshot_run", "speaks_cancelled", "NOTE"]

#: The ``CUSTOM`` name prefix of the server's own notices (engine events are ``convlab.<type>``).
NOTE = "convlab.serve."


def summary_step(call_id: str) -> str:
    """The ``stepName`` of a summary call.

    >>> summary_step("llm-4")
    'summary llm-4'
    """
    return f"summary {call_id}"


def refusal(message: str, code: str, metadata: Mapping[str, Any] | None = None,
            at: float | None = None) -> list[BaseEvent]:
    """A run refused before it began: ``RUN_ERROR`` alone (nothing was written), at
    ``at`` (seconds; default now).

    >>> [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in refusal("no", "400", at=1.5)]
    [{'type': 'RUN_ERROR', 'timestamp': 1500, 'message': 'no', 'code': '400'}]
    """
    when = time.time() if at is None else at
    return [RunErrorEvent(message=message, code=code, metadata=dict(metadata) if metadata else None,
                          timestamp=round(when * 1000))]


def speaks_cancelled(run: RunAgentInput) -> bool:
    """Whether the client knows RUN_FINISHED's ``cancelled`` outcome (it said AG-UI 1.0 or later).

    >>> speaks_cancelled(RunAgentInput(thread_id="t", run_id="r", messages=[], tools=[], context=[], state={},
    ...                                forwarded_props={}, protocol_version="1.0"))
    True
    """
    version = run.protocol_version or ""
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) >= 1


def snapshot_run(run: RunAgentInput, messages: list[dict[str, Any]], state: Mapping[str, Any] | None = None,
                 notes: Mapping[str, Any] | None = None, at: float | None = None) -> list[BaseEvent]:
    """A run that only says what the thread holds: ``RUN_STARTED``, ``MESSAGES_SNAPSHOT``
    of ``messages`` (AG-UI wire dicts), ``STATE_SNAPSHOT`` when there is state, a
    ``CUSTOM`` notice each (``notes``: what -> value), ``RUN_FINISHED``.

    >>> inp = RunAgentInput(thread_id="t", run_id="r", messages=[], tools=[], context=[], state={}, forwarded_props={})
    >>> [e.type.value for e in snapshot_run(inp, [], at=1.0)]
    ['RUN_STARTED', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']
    """
    ts = round((time.time() if at is None else at) * 1000)
    out: list[BaseEvent] = [RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION,
                                            input=run, timestamp=ts),
                            _snapshot(messages, ts)]
    if state:
        out.append(StateSnapshotEvent(snapshot=state, timestamp=ts))
    out += [CustomEvent(name=NOTE + what, value=value, timestamp=ts) for what, value in (notes or {}).items()]
    out.append(RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id, outcome=RunFinishedSuccessOutcome(),
                                timestamp=ts))
    return out


def _snapshot(messages: list[dict[str, Any]], ts: int) -> MessagesSnapshotEvent:
    """``MESSAGES_SNAPSHOT`` of wire dicts (``to_agui``'s), validated into ag_ui's message models."""
    return MessagesSnapshotEvent.model_validate({"messages": messages, "timestamp": ts})


class RunEvents:
    """The AG-UI events of one run on ``session``, collected in ``events``.

    ``client`` is the ids of the messages the client sent (it holds them);
    ``events`` starts with ``RUN_STARTED``.
    """

    def __init__(self, session: Session, run: RunAgentInput, client: list[str]):
        self.session = session
        self.thread_id = run.thread_id
        self.run_id = run.run_id
        self.cancellable = speaks_cancelled(run)
        self.client = list(client)
        self.stale = False
        self.events: list[BaseEvent] = [RunStartedEvent(
            thread_id=run.thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION,
            input=run, timestamp=self._now())]
        self._open: str | None = None  # the text message being streamed
        self._reply_next = False  # the next assistant message.new is a model reply
        self._calls: dict[str, tuple[str | None, str | None]] = {}  # call id -> (llm, model)
        self._usage: dict[tuple[str | None, str | None], dict[str, int]] = {}
        self._state = session.state

    def _now(self, time: float | None = None) -> int:
        return round((self.session.clock if time is None else time) * 1000)

    def _add(self, event: BaseEvent) -> None:
        self.events.append(event)

    def note(self, what: str, value: Mapping[str, Any]) -> None:
        """A notice of the server's own, as ``CUSTOM`` ``convlab.serve.<what>``."""
        self._add(CustomEvent(name=NOTE + what, value=dict(value), timestamp=self._now()))

    # -- the engine's events ---------------------------------------------------
    def on_event(self, ev: Mapping[str, Any]) -> None:
        kind = ev["type"]
        ts = self._now(ev.get("time"))
        if kind == "llm.delta":
            mid = ev["message_id"]
            if self._open != mid:
                self._close_text(ts)
                self._open = mid
                self.client.append(mid)
                self._add(TextMessageStartEvent(message_id=mid, role="assistant", timestamp=ts))
            self._add(TextMessageContentEvent(message_id=mid, delta=ev["text"], timestamp=ts))
            return
        self._add(CustomEvent(name=f"convlab.{kind}", value=dict(ev), timestamp=ts))
        if kind == "llm.started":
            self._calls[ev["call_id"]] = (ev.get("llm"), ev.get("model"))
            if ev.get("summary"):
                self._add(StepStartedEvent(step_name=summary_step(ev["call_id"]), timestamp=ts))
        elif kind in ("llm.completed", "llm.failed"):
            if kind == "llm.completed":
                self._count(ev["call_id"], ev.get("usage") or {})
            if ev.get("summary"):
                self._add(StepFinishedEvent(step_name=summary_step(ev["call_id"]), timestamp=ts))
            elif kind == "llm.completed":
                self._reply_next = True
            else:
                self._close_text(ts)  # the client holds a reply the tree never got: sync() sends the path
        elif kind == "message.new":
            node = ev["message"]
            if self._reply_next and node["role"] == "assistant":
                self._reply_next = False
                self._reply(node, ts)
        elif kind in ("head.moved", "context.replaced"):
            self.sync(moved=True)
        elif kind == "state.changed":
            self.sync()

    def _count(self, call_id: str, usage: Mapping[str, Any]) -> None:
        total = self._usage.setdefault(self._calls.get(call_id, (None, None)), {})
        read = input_tokens(usage)
        parts = {"input_tokens": read, "output_tokens": usage.get("output_tokens"),
                 "cached_input_tokens": usage.get("cache_read_input_tokens"),
                 "cache_write_input_tokens": usage.get("cache_creation_input_tokens")}
        for key, value in parts.items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value

    def _reply(self, node: Mapping[str, Any], ts: int) -> None:
        """A recorded model reply: close its streamed text (or send it whole), then its tool calls."""
        mid = node["id"]
        message = to_agui(node)
        calls = message.get("toolCalls") or []
        if self._open == mid:
            self._close_text(ts)
        elif message.get("content") or not calls:
            self.client.append(mid)
            self._add(TextMessageStartEvent(message_id=mid, role="assistant", timestamp=ts))
            if message.get("content"):
                self._add(TextMessageContentEvent(message_id=mid, delta=message["content"], timestamp=ts))
            self._add(TextMessageEndEvent(message_id=mid, timestamp=ts))
        else:
            self.client.append(mid)  # TOOL_CALL_START's parentMessageId makes the message on the client
        for call in calls:
            cid = call["id"]
            self._add(ToolCallStartEvent(tool_call_id=cid, tool_call_name=call["function"]["name"],
                                         parent_message_id=mid, timestamp=ts))
            if call["function"]["arguments"]:
                self._add(ToolCallArgsEvent(tool_call_id=cid, delta=call["function"]["arguments"], timestamp=ts))
            self._add(ToolCallEndEvent(tool_call_id=cid, timestamp=ts))

    def _close_text(self, ts: int) -> None:
        if self._open is not None:
            self._add(TextMessageEndEvent(message_id=self._open, timestamp=ts))
            self._open = None

    # -- what the client holds -------------------------------------------------
    def taken(self, view: list[Mapping[str, Any]], new_from: int) -> None:
        """The view was taken: mark the client stale when a known id came with
        other content than the tree records (the tree's wins), then sync."""
        nodes = self.session.tree.nodes
        self.stale = any(
            m["role"] != nodes[m["id"]]["role"]
            or content_text(m["content"]) != content_text(nodes[m["id"]]["content"])
            for m in view[:new_from]
        )
        self.sync()

    def sync(self, moved: bool = False) -> None:
        """Send the active path when it ``moved`` (a head moved, a replace: what the
        model reads changed other than by appending) or the client holds anything
        else, and the worker state when it changed."""
        ids = path_to(self.session.tree.nodes, self.session.head)  # ids only: Session.path() copies every node
        if moved or ids != self.client or self.stale:
            self._add(_snapshot([to_agui(n) for n in self.session.path()], self._now()))
            self.client = ids
            self.stale = False
        state = self.session.state
        if state != self._state:
            self._add(StateSnapshotEvent(snapshot=state, timestamp=self._now()))
            self._state = state

    # -- the end ---------------------------------------------------------------
    def _usage_list(self) -> list[TokenUsage] | None:
        out = []
        for (llm, model), counts in self._usage.items():
            entry = dict(counts)
            if "input_tokens" in entry and "output_tokens" in entry:
                entry["total_tokens"] = entry["input_tokens"] + entry["output_tokens"]
            out.append(TokenUsage(provider=llm, model=model, **entry))
        return out or None

    def finished(self, outcome: str = "success", interrupt: Mapping[str, Any] | None = None) -> None:
        """End with ``RUN_FINISHED``: outcome ``success``, ``cancelled`` (none for a client
        before AG-UI 1.0, the module docstring) or ``interrupt`` (with ``interrupt``)."""
        self._close_text(self._now())
        self.sync()
        result: Any
        if outcome == "interrupt":
            result = RunFinishedInterruptOutcome(interrupts=[Interrupt.model_validate(interrupt)])
        elif outcome == "cancelled":
            result = RunFinishedCancelledOutcome() if self.cancellable else None
        else:
            result = RunFinishedSuccessOutcome()
        self._add(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=result,
                                   usage=self._usage_list(), timestamp=self._now()))

    def failed(self, message: str, code: str, metadata: Mapping[str, Any] | None = None) -> None:
        """End with ``RUN_ERROR`` after what the run sent so far (``metadata``: what a program reads of it)."""
        self._close_text(self._now())
        self.sync()
        self._add(RunErrorEvent(message=message, code=code, usage=self._usage_list(), timestamp=self._now(),
                                metadata=dict(metadata) if metadata else None))

    def refused(self, message: str, code: str, metadata: Mapping[str, Any] | None = None) -> None:
        """The run was refused before it began: ``RUN_ERROR`` alone (nothing was written)."""
        self.events = refusal(message, code, metadata, self.session.clock)
