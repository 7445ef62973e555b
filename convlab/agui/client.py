"""``AGUIAgent``: any AG-UI agent endpoint as a convlab provider.

Each model call sends the path it reads as one run (``RunAgentInput``) and
reads the run's SSE stream with ``ag_ui.core``'s own event models. What the
reply is made of:

- ``content``: the text of the run's assistant messages, in order, joined by
  a blank line (streamed as it comes: ``llm.delta``);
- ``tool_calls``: the tool calls the run started and did not answer itself
  (no ``TOOL_CALL_RESULT``), OpenAI-shaped;
- ``usage``: what ``RUN_FINISHED.usage`` reports, summed over its entries;
  without it the exact count (``convlab.count_tokens``) of what was sent and
  of the reply;
- ``metadata.agui``: the run's thread and run ids, the reply's message id at
  the agent and the id it follows there.

Message ids (decided here: AG-UI expects ids to be unique, and a session's
ids are only unique in the session). A message is sent under
``<thread_id>:<its id>``, except a reply this provider returned, which goes
back under the agent's own id for it when it still follows what it followed
at the agent (``metadata.agui.parent_id``): so an agent that keeps the
thread's tree (a convlab server) matches the history by id and branches
where the session branches, and a copy made by ``context.replace`` (same
metadata, new place) is a new message there. A message without an id (a
summary call's prompt) gets a fresh uuid. Summary calls run on the thread
``<thread_id>-summaries``, so they never move the conversation's head at an
agent that keeps threads.

A run that ends in an interrupt is answered by ``on_interrupt(interrupt)``
(the AG-UI ``Interrupt`` as a wire dict): its return value is the resume
payload; ``None`` cancels it, and a call whose agent then gives no reply fails. Without ``on_interrupt``, or when the run ends
with ``RUN_ERROR``, is cancelled, or the stream breaks, the call fails:
``ProviderError("failed")`` with what the agent said.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..tokens import count_tokens
from .messages import to_agui

if TYPE_CHECKING:  # ag_ui is imported where it is used (the agui extra)
    from ag_ui.core import (
        RunAgentInput,
        RunFinishedEvent,
        TextMessageChunkEvent,
        TextMessageContentEvent,
        TextMessageStartEvent,
        TokenUsage,
        ToolCallChunkEvent,
        ToolCallStartEvent,
    )
    from pydantic import ValidationError

__all__ = ["AGUIAgent"]

#: At most this many interrupts are answered in one model call.
MAX_RESUMES = 8


class AGUIAgent:
    """A provider (``complete``, ``stream``) that drives an AG-UI endpoint.

    ``url`` is the endpoint (runs are POSTed there), ``headers`` extra HTTP
    headers (``{"Authorization": "Bearer ..."}``; never shown in a repr),
    ``thread_id`` the AG-UI thread (default: a new uuid), ``on_interrupt``
    answers interrupts, ``timeout`` is seconds per read.

    >>> import tempfile, convlab
    >>> from convlab import agui
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     served = agui.app(tmp)
    ...     with agui.start(served) as server:
    ...         s = convlab.Session(llm=agui.AGUIAgent(server.url, thread_id="doc"))
    ...         _ = s.submit({"type": "client.message", "agent_id": "bot",
    ...                       "message": {"id": "u1", "role": "user", "content": "hello"}})
    ...         remote = served.session("doc")
    ...     served.close()
    >>> s.path()[-1]["content"], [m["id"] for m in remote.path()]
    ('echo: hello', ['doc:u1', 'e1'])
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, *, thread_id: str | None = None,
                 on_interrupt: Callable[[dict], Any] | None = None, timeout: float = 60.0):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url: an http(s) URL of an AG-UI endpoint, got {url!r}")
        self.url = url
        self.headers = dict(headers or {})
        self.thread_id = thread_id or uuid.uuid4().hex
        self.on_interrupt = on_interrupt
        self.timeout = float(timeout)
        self.latency = 0.0  # seconds the last call took: the session's clock moves that much
        self._client: Any = None

    def __repr__(self) -> str:
        return f"AGUIAgent(url={self.url!r}, thread_id={self.thread_id!r})"

    def close(self) -> None:
        """Close the HTTP connection (a later call opens a new one)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> AGUIAgent:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- the provider ------------------------------------------------------
    def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Run the agent on ``request["messages"]`` and return its reply."""
        reply: dict[str, Any] | None = None
        for item in self.stream(request):
            if not isinstance(item, str):
                reply = item
        assert reply is not None, "stream() ends with the reply or raises"
        return reply

    def stream(self, request: Mapping[str, Any]) -> Iterator[str | dict[str, Any]]:
        """The reply's text deltas as the agent streams them, then the reply."""
        from ag_ui.core import PROTOCOL_VERSION, ResumeEntry, RunAgentInput
        from pydantic import ValidationError

        started = time.monotonic()
        try:
            thread = self.thread_id + ("-summaries" if request.get("summary") else "")
            messages = self._messages(request.get("messages") or [], thread)
            run = _CallRuns(thread, [m["id"] for m in messages])
            resume = None
            cancelled = False
            for _ in range(MAX_RESUMES + 1):
                try:
                    # validated from wire dicts (the messages are to_agui's dicts, checked here)
                    body = RunAgentInput.model_validate(
                        {"thread_id": thread, "run_id": uuid.uuid4().hex, "protocol_version": PROTOCOL_VERSION,
                         "state": {}, "messages": messages, "tools": [], "context": [], "forwarded_props": {},
                         "resume": resume})
                except ValidationError as err:
                    raise ProviderError("failed", f"the request is not an AG-UI run: {_first(err)}") from None
                yield from run.read(self._post(body))
                if run.interrupts is None:
                    break
                try:
                    resume = [ResumeEntry.model_validate(self._answer(i)) for i in run.interrupts]
                except ValidationError as err:
                    raise ProviderError("failed", f"on_interrupt's answer is not a resume entry: {_first(err)}") from None
                cancelled = any(entry.status == "cancelled" for entry in resume)
                run.interrupts = None
            else:
                raise ProviderError("failed", f"{self.url}: the agent asked more than {MAX_RESUMES} interrupts in one call")
            if cancelled and not run.texts and not run.calls:
                raise ProviderError("failed", f"{self.url}: on_interrupt cancelled the interrupt (it gave None): the agent did not reply")
            yield run.reply(request.get("messages") or [], thread)
        finally:
            self.latency = time.monotonic() - started

    def _messages(self, messages: list[Mapping[str, Any]], thread: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        previous = None
        for m in messages:
            ours = ((m.get("metadata") or {}).get("agui") or {}) if isinstance(m.get("metadata"), Mapping) else {}
            if ours.get("thread_id") == thread and ours.get("message_id") and ours.get("parent_id") == previous:
                sent = ours["message_id"]
            elif m.get("id"):
                sent = f"{self.thread_id}:{m['id']}"
            else:
                sent = uuid.uuid4().hex
            out.append(to_agui(m, sent))
            previous = sent
        return out

    def _answer(self, interrupt: dict[str, Any]) -> dict[str, Any]:
        where = f"{self.url}: the agent stopped for {interrupt.get('reason')!r} ({interrupt.get('message') or 'no message'})"
        if self.on_interrupt is None:
            raise ProviderError("failed", where + "; pass AGUIAgent(on_interrupt=...) to answer it")
        payload = self.on_interrupt(interrupt)
        if payload is None:
            return {"interruptId": interrupt["id"], "status": "cancelled"}
        return {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}

    def _post(self, body: RunAgentInput) -> Iterator[str]:
        """The ``data:`` payloads of the SSE response to one run."""
        import httpx

        if self._client is None:
            transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            self._client = httpx.Client(transport=transport, timeout=self.timeout)
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json", **self.headers}
        try:
            with self._client.stream("POST", self.url, content=body.model_dump_json(by_alias=True), headers=headers) as response:
                if response.status_code != 200:
                    text = response.read().decode("utf-8", "replace")[:500]
                    raise ProviderError("failed", f"{self.url}: HTTP {response.status_code}: {text}")
                data: list[str] = []
                for line in response.iter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif not line and data:
                        yield "\n".join(data)
                        data = []
                if data:
                    yield "\n".join(data)
        except httpx.HTTPError as err:
            raise ProviderError("failed", f"{self.url}: {type(err).__name__}: {err}") from None


def _first(err: ValidationError) -> str:
    """A pydantic ValidationError's first problem, its place named."""
    e = err.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"


class _CallRuns:
    """What the runs of one model call said: texts, tool calls, usage, the agent's path."""

    def __init__(self, thread: str, sent: list[str]):
        self.thread = thread
        self.path = list(sent)  # the message ids the agent holds, in order
        self.texts: dict[str, str] = {}  # assistant message id -> text, in order
        self.calls: dict[str, dict[str, Any]] = {}
        self.answered: set[str] = set()
        self.pending_calls: list[str] | None = None
        self.usage: list[TokenUsage] = []
        self.interrupts: list[dict[str, Any]] | None = None
        self.run_id: str | None = None
        self.last: str | None = None  # the last assistant message of the run (the reply at the agent)
        self._open: str | None = None
        self._finished = False

    def read(self, payloads: Iterator[str]) -> Iterator[str]:
        """Follow one run's events; yield the text deltas as they come."""
        from ag_ui.core import (
            Event,
            MessagesSnapshotEvent,
            RunErrorEvent,
            RunFinishedEvent,
            RunStartedEvent,
            TextMessageChunkEvent,
            TextMessageContentEvent,
            TextMessageStartEvent,
            ToolCallArgsEvent,
            ToolCallChunkEvent,
            ToolCallResultEvent,
            ToolCallStartEvent,
        )
        from pydantic import TypeAdapter, ValidationError

        adapter: TypeAdapter[Event] = TypeAdapter(Event)
        self._finished = False
        for raw in payloads:
            try:
                event = adapter.validate_json(raw)
            except ValidationError as err:
                raise ProviderError("failed", f"the agent sent an event that is not AG-UI: {raw[:200]} ({_first(err)})") from None
            if isinstance(event, RunStartedEvent):
                self.run_id = event.run_id
            elif isinstance(event, (TextMessageStartEvent, TextMessageContentEvent, TextMessageChunkEvent)):
                yield from self._text(event)
            elif isinstance(event, (ToolCallStartEvent, ToolCallChunkEvent)):
                self._tool_call(event)
            elif isinstance(event, ToolCallArgsEvent):
                if event.tool_call_id in self.calls:
                    self.calls[event.tool_call_id]["function"]["arguments"] += event.delta
            elif isinstance(event, ToolCallResultEvent):
                self.answered.add(event.tool_call_id)
                self.path.append(event.message_id)
            elif isinstance(event, MessagesSnapshotEvent):
                self.path = [m.id for m in event.messages]
            elif isinstance(event, RunErrorEvent):
                raise ProviderError("failed", f"the agent's run failed: {event.message}"
                                              + (f" ({event.code})" if event.code else ""))
            elif isinstance(event, RunFinishedEvent):
                self._finish(event)
        if not self._finished:
            raise ProviderError("failed", "the agent's stream ended before RUN_FINISHED or RUN_ERROR")

    def _text(self, event: TextMessageStartEvent | TextMessageContentEvent | TextMessageChunkEvent) -> Iterator[str]:
        from ag_ui.core import TextMessageStartEvent

        mid = event.message_id or self._open
        if mid is None:
            return
        self._open = self.last = mid
        if mid not in self.texts:
            self.texts[mid] = ""
            if mid not in self.path:
                self.path.append(mid)
        delta = None if isinstance(event, TextMessageStartEvent) else event.delta
        if delta:
            if not self.texts[mid] and any(t for k, t in self.texts.items() if k != mid):
                yield "\n\n"
            self.texts[mid] += delta
            yield delta

    def _tool_call(self, event: ToolCallStartEvent | ToolCallChunkEvent) -> None:
        from ag_ui.core import ToolCallChunkEvent

        cid = event.tool_call_id
        if cid is None:
            return
        call = self.calls.setdefault(cid, {"id": cid, "type": "function", "function": {"name": "", "arguments": ""}})
        if event.tool_call_name:
            call["function"]["name"] = event.tool_call_name
        parent = event.parent_message_id
        if parent is not None:
            self.last = parent
            if parent not in self.path:
                self.path.append(parent)
        if isinstance(event, ToolCallChunkEvent) and event.delta:
            call["function"]["arguments"] += event.delta

    def _finish(self, event: RunFinishedEvent) -> None:
        from ag_ui.core import RunFinishedCancelledOutcome, RunFinishedInterruptOutcome

        self._finished = True
        self.usage.extend(event.usage or [])
        outcome = event.outcome
        if isinstance(outcome, RunFinishedInterruptOutcome):
            self.interrupts = [i.model_dump(by_alias=True) for i in outcome.interrupts]
        elif isinstance(outcome, RunFinishedCancelledOutcome):
            raise ProviderError("failed", "the agent cancelled the run")
        elif outcome is not None and outcome.pending_tool_call_ids:
            self.pending_calls = list(outcome.pending_tool_call_ids)

    def reply(self, messages: list[Mapping[str, Any]], thread: str) -> dict[str, Any]:
        content = "\n\n".join(t for t in self.texts.values() if t)
        reply: dict[str, Any] = {"content": content}
        wanted = self.pending_calls if self.pending_calls is not None else [c for c in self.calls if c not in self.answered]
        calls = [self.calls[c] for c in wanted if c in self.calls]
        if calls:
            reply["tool_calls"] = calls
        reply["usage"] = self._usage(messages, content)
        if self.last is not None and self.last in self.path:
            i = self.path.index(self.last)
            reply["metadata"] = {"agui": {"thread_id": thread, "run_id": self.run_id, "message_id": self.last,
                                          "parent_id": self.path[i - 1] if i > 0 else None}}
        return reply

    def _usage(self, messages: list[Mapping[str, Any]], content: str) -> dict[str, int]:
        read = [u.input_tokens for u in self.usage if u.input_tokens is not None]
        wrote = [u.output_tokens for u in self.usage if u.output_tokens is not None]
        if read and wrote:
            return {"input_tokens": sum(read), "output_tokens": sum(wrote)}
        return {"input_tokens": count_tokens(list(messages)),
                "output_tokens": count_tokens(content)}
