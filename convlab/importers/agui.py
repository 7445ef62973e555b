"""A recorded AG-UI event stream: JSONL, one event a line (or a JSON array of events).

The stream is read as an AG-UI client keeps its messages, and every list of
messages it ever held is a path of the tree:

- a run's input (``RUN_STARTED.input``, or a ``RunAgentInput`` line of its
  own, as a recording proxy writes the request before the events) and a
  ``MESSAGES_SNAPSHOT`` set the list; a message the tree does not have yet
  hangs under the message before it in that list;
- ``TEXT_MESSAGE_START`` (or a ``TEXT_MESSAGE_CHUNK`` with a new id) and
  ``TOOL_CALL_RESULT`` append a message to the list, ``TEXT_MESSAGE_CONTENT``
  and the chunks fill its text, ``TOOL_CALL_START/ARGS`` add a tool call to
  the message ``parentMessageId`` names (or a new assistant message);
- ``RUN_FINISHED.usage`` becomes the ``usage`` of the run's reply when the
  run made exactly one assistant message;
- a message's ``time`` is the ``timestamp`` of the event that brought it (or
  the last one before it).

So the history a client sent with each run is what it branched from: an edit
(a new id) starts a sibling, a regenerate (the history cut before a reply)
puts the next reply beside it. The head is the last message of the last list.
Events of several threads (``threadId``) give one conversation each. A message
that shows up under another parent than its first keeps the first (a
``ReadWarning`` names it). ``convlab.agui.messages`` maps AG-UI messages, so
``developer`` reads as ``system`` and ``activity``/``reasoning`` messages are
left out, as the server does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from ..agui.messages import from_agui
from ..conversation import Conversation
from .documents import Document
from .records import MAPPING, ImportedMessage, Problems, conversation, to_time

NAME = "agui"

#: The event types of AG-UI 1.0 (``ag_ui.core.EventType``), for telling a stream apart.
EVENTS = frozenset("""
TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END TEXT_MESSAGE_CHUNK TOOL_CALL_START TOOL_CALL_ARGS
TOOL_CALL_END TOOL_CALL_CHUNK TOOL_CALL_RESULT STATE_SNAPSHOT STATE_DELTA MESSAGES_SNAPSHOT ACTIVITY_SNAPSHOT
ACTIVITY_DELTA RAW CUSTOM RUN_STARTED RUN_FINISHED RUN_ERROR STEP_STARTED STEP_FINISHED REASONING_START
REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT REASONING_MESSAGE_END REASONING_MESSAGE_CHUNK REASONING_END
REASONING_ENCRYPTED_VALUE SUBAGENT_STARTED SUBAGENT_FINISHED SUBAGENT_ERROR
""".split())


def _is_input(x: object) -> bool:
    return isinstance(x, MAPPING) and "type" not in x and isinstance(x.get("threadId"), str) and isinstance(x.get("messages"), list)


def _is_event(x: object) -> bool:
    return isinstance(x, MAPPING) and isinstance(x.get("type"), str) and x["type"] in EVENTS


def detect(doc: Document) -> bool:
    """AG-UI events (or run inputs), one a line or in a JSON array, or one event."""
    first = next((r for r in doc.head[:5] if isinstance(r, MAPPING)), None)
    return first is not None and (_is_event(first) or _is_input(first)) and any(_is_event(r) for r in doc.head)


class _StreamThread:
    """One thread of the stream: its records, the list the client holds, the run in flight."""

    def __init__(self, thread_id: str, source: str):
        self.id = thread_id
        self.problems = Problems(source, thread_id)
        self.records: dict[str, ImportedMessage] = {}
        self.current: list[str] = []
        self.replies: list[str] = []  # assistant messages the current run made

    def node(self, mid: str) -> dict[str, Any]:
        return self.records[mid].node

    def hold(self, messages: list[Any], time: float | None) -> None:
        """The client's list is now ``messages`` (AG-UI wire dicts)."""
        held: list[str] = []
        for i, raw in enumerate(messages):
            if not isinstance(raw, MAPPING) or not isinstance(raw.get("id"), str):
                self.problems.add(None, f"messages[{i}] has no id; left out")
                continue
            message = from_agui(raw)
            if message is None:
                continue
            self._record(message, held[-1] if held else None, time)
            held.append(message["id"])
        self.current = held

    def append(self, message: dict[str, Any], time: float | None) -> dict[str, Any]:
        """A message the run added after the list's last one (or the one with its id)."""
        if message["id"] not in self.records:
            self._record(message, self.current[-1] if self.current else None, time)
        if message["id"] not in self.current:
            self.current.append(message["id"])
        return self.node(message["id"])

    def _record(self, message: dict[str, Any], parent: str | None, time: float | None) -> None:
        mid = message["id"]
        known = self.records.get(mid)
        if known is None:
            node = {k: v for k, v in message.items() if k != "id"}
            node["time"] = time
            self.records[mid] = ImportedMessage(mid, parent, node)
        elif known.parent != parent:
            self.problems.add(mid, f"comes under {parent!r} after {known.parent!r}; kept under the first")

    def assistant(self, mid: str, time: float | None) -> dict[str, Any]:
        if mid not in self.records:
            self.replies.append(mid)
        return self.append({"id": mid, "role": "assistant", "content": ""}, time)


def parse(doc: Document) -> Iterable[Conversation]:
    source = doc.source
    stem = PurePath(source.split("!")[-1]).name.split(".")[0] or "thread"
    threads: dict[str, _StreamThread] = {}
    thread: _StreamThread | None = None
    calls: dict[str, str] = {}  # tool call id -> the assistant message that holds it
    time: float | None = None  # the last timestamp seen

    def on(tid: object) -> _StreamThread:
        key = tid if isinstance(tid, str) and tid else stem
        if key not in threads:
            threads[key] = _StreamThread(key, source)
        return threads[key]

    for n, ev in enumerate(doc.items, start=1):
        if _is_input(ev):
            thread = on(ev["threadId"])
            thread.hold(ev["messages"], None)
            continue
        if not _is_event(ev):
            (thread or on(None)).problems.add(None, f"line {n} is not an AG-UI event; left out")
            continue
        kind = ev["type"]
        time = to_time(ev.get("timestamp")) or time
        if kind == "RUN_STARTED":
            thread = on(ev.get("threadId"))
            thread.replies = []
            given = ev.get("input")
            if isinstance(given, MAPPING) and isinstance(given.get("messages"), list):
                thread.hold(given["messages"], time)
            continue
        here = thread or on(None)
        if kind in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK"):
            mid = ev.get("messageId")
            if not isinstance(mid, str):
                continue
            if kind != "TEXT_MESSAGE_CONTENT" and ev.get("role") not in (None, "assistant"):
                node = here.append({"id": mid, "role": ev["role"] if ev["role"] != "developer" else "system", "content": ""}, time)
            else:
                node = here.assistant(mid, time)
            if isinstance(ev.get("delta"), str) and isinstance(node["content"], str):
                node["content"] += ev["delta"]
        elif kind in ("TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            cid = ev.get("toolCallId")
            if not isinstance(cid, str):
                continue
            if cid not in calls:
                owner = ev.get("parentMessageId")
                owner = owner if isinstance(owner, str) else (here.current[-1] if here.current and here.node(here.current[-1])["role"] == "assistant" else cid)
                node = here.assistant(owner, time) if owner not in here.records else here.node(owner)
                node.setdefault("tool_calls", []).append(
                    {"id": cid, "type": "function", "function": {"name": ev.get("toolCallName") or "", "arguments": ""}})
                calls[cid] = owner
            if kind == "TOOL_CALL_CHUNK" and isinstance(ev.get("delta"), str):
                _call(here, calls, cid)["function"]["arguments"] += ev["delta"]
        elif kind == "TOOL_CALL_ARGS":
            cid = ev.get("toolCallId")
            if cid in calls and isinstance(ev.get("delta"), str):
                _call(here, calls, cid)["function"]["arguments"] += ev["delta"]
        elif kind == "TOOL_CALL_RESULT":
            if isinstance(ev.get("messageId"), str):
                here.append({"id": ev["messageId"], "role": "tool", "content": ev.get("content", ""),
                             "tool_call_id": ev.get("toolCallId")}, time)
        elif kind == "MESSAGES_SNAPSHOT" and isinstance(ev.get("messages"), list):
            here.hold(ev["messages"], time)
        elif kind == "RUN_FINISHED":
            usage = [u for u in ev.get("usage") or [] if isinstance(u, MAPPING)]
            if usage and len(here.replies) == 1:
                read = [u["inputTokens"] for u in usage if isinstance(u.get("inputTokens"), int)]
                wrote = [u["outputTokens"] for u in usage if isinstance(u.get("outputTokens"), int)]
                if read and wrote:
                    here.node(here.replies[0])["usage"] = {"input_tokens": sum(read), "output_tokens": sum(wrote)}
            here.replies = []

    out = []
    for t in threads.values():
        if not t.records:
            t.problems.warn()
            continue
        out.append(conversation(list(t.records.values()), t.problems, id=t.id, title=None, format=NAME,
                                source=source, head=t.current[-1] if t.current else None))
    return out


def _call(thread: _StreamThread, calls: dict[str, str], cid: str) -> dict[str, Any]:
    return next(c for c in thread.node(calls[cid])["tool_calls"] if c["id"] == cid)
