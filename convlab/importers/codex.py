"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``).

One JSON row per line, ``{"timestamp", "type", "payload"}`` (openai/codex,
``codex-rs/protocol/src/protocol.rs``: ``RolloutItem``). The rows hold no ids
and no parent links: the conversation is the file's order, one branch.

- ``response_item`` rows are what the model reads and writes. What one model
  call wrote (``reasoning``, an assistant ``message``, ``function_call``,
  ``custom_tool_call``, ``web_search_call``, ...) is ONE reply: its parts in the
  order written (reasoning as a ``thinking`` part, a call as a ``tool_use``
  part, a web search, which the server runs, as a ``server_tool_use`` part),
  ``tool_calls`` naming the calls. A call's output
  (``function_call_output``, ``custom_tool_call_output``) is a ``tool``
  message paired by ``call_id``. A ``turn_context`` row is written before
  every model call: it ends the reply before it and names the model
  (``metadata.model``).
- User and developer (read as ``system``) messages are inputs. The ones a
  person typed are those an ``event_msg`` ``user_message`` repeats; the
  others (``<environment_context>``, AGENTS.md, ``<turn_aborted>``) were
  injected by Codex: read as they are, with ``metadata.injected``. The
  ``event_msg`` rows that repeat a message (``user_message``,
  ``agent_message``, ``agent_reasoning``) add nothing.
- Usage: ``event_msg`` ``token_count``'s ``last_token_usage`` is the usage of
  one call; a row whose cumulative ``total_token_usage`` equals the last one
  kept repeats it (Codex writes one after every call, and zeros around a
  compaction) and is not a call. It belongs to the reply of the model call it
  follows (0.39 writes it before that call's items, newer builds after them).
  ``input_tokens`` includes the cached input: read as ``input_tokens`` less
  ``cache_read_input_tokens`` (``cached_input_tokens``), so that the usage's
  input (``tree.input_tokens``) is all the call read.
- A ``compacted`` row is the log's own compaction: a ``kind: "summary"`` root
  (its ``message``, the summary text; empty in builds that summarize on the
  server) that replaces the message before it. Its new history is
  ``replacement_history`` (newer builds): each message of it that an earlier
  message of the log holds word for word is a copy of that message
  (``copied_from``), any other is a new message kept by the compaction
  (``conversation.KEPT``); the opaque ``compaction`` item (the server's
  summary, encrypted) is left out, and Codex's order (the summary last) is
  the protocol's (the summary first): the model reads the same messages.
  Without ``replacement_history`` (older builds) Codex rebuilds the history
  from the summary and the most recent typed prompts, up to 20,000 tokens
  (``codex-rs/core/src/compact.rs``, ``COMPACT_USER_MESSAGE_MAX_TOKENS``): so
  is it read, the tokens estimated at four characters each.
- Ids are ``L<line>``: the file line of the message's first row (a kept
  message: ``L<line>.<k>``, the compaction's line and its place in it).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..conversation import KEPT, Conversation
from ..tokens import content_text
from .documents import Document
from .records import (
    MAPPING,
    ImportedMessage,
    Problems,
    as_text,
    conversation,
    kept_copy,
    logged_counts,
    summary_root,
    to_time,
)

NAME = "codex"
_ROW_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
#: response items a model call writes (its reply's parts); everything else is an input
_REPLY_ITEMS = {"message", "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output"}
#: what Codex keeps of the prompts when a compaction records no replacement history (codex-rs/core/src/compact.rs)
_KEPT_PROMPT_TOKENS = 20_000
#: the prefixes of the user messages Codex injects, for a rollout that records no ``user_message`` events
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>", "<INSTRUCTIONS>",
             "<user_shell_command>")
#: a text the upstream sanitizer replaced (``[REDACTED_TEXT len=32 sha=821fd802]``): the same text has the same len and sha
_REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ (len=\d+ sha=[0-9a-f]+)\]")


def _row(x: object) -> bool:
    return isinstance(x, MAPPING) and isinstance(x.get("type"), str) and x["type"] in _ROW_TYPES and isinstance(x.get("payload"), MAPPING)


def detect(doc: Document) -> bool:
    if doc.kind != "lines":
        return False
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    return bool(rows) and all(_row(r) for r in rows) and any(r["type"] in ("session_meta", "response_item") for r in rows)


def parse(doc: Document) -> list[Conversation]:
    return [_Rollout(doc.source, list(doc.items)).conversation()]


# -- small readers ---------------------------------------------------------------


def _text(content: object) -> str:
    """The text of a message item's content (``input_text`` / ``output_text`` parts, or a string)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(p.get("text") or "") for p in content if isinstance(p, MAPPING) and isinstance(p.get("text"), str))


def _content(content: object) -> str | list[Any]:
    """A message item's content as the protocol's: its text, or its parts when one is not text (an image)."""
    if isinstance(content, list) and any(isinstance(p, MAPPING) and not isinstance(p.get("text"), str) for p in content):
        return [{"type": "text", "text": p["text"]} if isinstance(p, MAPPING) and isinstance(p.get("text"), str) else p
                for p in content if p is not None]
    return _text(content)


def _same(text: str) -> str:
    """A text as two rows that hold the same text compare it (a sanitized text: its length and hash)."""
    found = _REDACTED.fullmatch(text.strip())
    return f"redacted {found.group(1)}" if found else text.strip()


def _usage(last: Mapping[str, Any]) -> dict[str, Any]:
    """``last_token_usage`` as a node's usage: the uncached input apart from the cached (their sum is the input);
    counts no provider reports kept as they are, for ``records.build`` to leave out and say."""
    more = {key: key for key in ("reasoning_output_tokens", "total_tokens") if key in last}
    usage, sound = logged_counts(last, {"input_tokens": "input_tokens", "cache_read_input_tokens": "cached_input_tokens",
                                        "output_tokens": "output_tokens", **more})
    if sound:
        cached = min(usage["cache_read_input_tokens"], usage["input_tokens"])
        usage.update(input_tokens=usage["input_tokens"] - cached, cache_read_input_tokens=cached)
    return usage


def _arguments(raw: object) -> Any:
    """A call's ``arguments`` (a JSON string) as the ``tool_use`` part's input: the object, else the text."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _output(raw: object) -> str | list[Any]:
    """A call output's ``output``: a string, content items, or an object (``{content, success}``)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return _content(raw)
    if isinstance(raw, MAPPING) and isinstance(raw.get("content"), (str, list)):
        return _output(raw["content"])
    return as_text(raw)


def _prompts(rows: list[Mapping[str, Any]]) -> Counter[str] | None:
    """The texts a person typed, as ``event_msg`` ``user_message`` rows repeat them (None: the rollout has none)."""
    typed = [_same(str(r["payload"].get("message") or "")) for r in rows
             if r["type"] == "event_msg" and r["payload"].get("type") == "user_message"]
    return Counter(typed) if typed else None


# -- one rollout, row by row --------------------------------------------------------------


class _Rollout:
    """The records of one rollout, built row by row (the reply in the making, where usage goes)."""

    def __init__(self, source: str, rows: list[Any]) -> None:
        self.source = source
        self.rows = [(n, r) for n, r in enumerate(rows, 1) if _row(r)]
        meta: Mapping[str, Any] = next((r["payload"] for _, r in self.rows if r["type"] == "session_meta"), {})
        self.meta = meta
        self.id = str(meta.get("id") or PurePath(source.split("!")[-1]).name.split(".")[0])
        self.problems = Problems(source, self.id)
        self.prompts = _prompts([r for _, r in self.rows])
        self.records: list[ImportedMessage] = []
        self.by_id: dict[str, ImportedMessage] = {}
        self.last: str | None = None  # the message the next one hangs under
        self.reply: ImportedMessage | None = None  # the reply of the model call under way
        self.parts: list[Any] = []  # its content
        self.calls: list[dict[str, Any]] = []  # its tool_calls
        self.open = False  # whether the reply may still grow (no input since it started)
        self.usage: dict[str, Any] | None = None  # a call's usage written before its reply (0.39)
        self.previous: object = None  # the last total_token_usage kept (a row repeating it is no call)
        self.model: str | None = None
        self.models: list[str] = []
        self.window: int | None = None

    def conversation(self) -> Conversation:
        for line, r in self.rows:
            kind, p = r["type"], r["payload"]
            time = to_time(r.get("timestamp"))
            if kind == "turn_context":
                self.end_call(line)
                model = p.get("model")
                if isinstance(model, str) and model:
                    self.model = model
                    if model not in self.models:
                        self.models.append(model)
            elif kind == "event_msg":
                self.event(p)
            elif kind == "compacted":
                self.end_call(line)
                self.compacted(line, p, time)
            elif kind == "response_item":
                self.item(line, p, time)
        self.end_call(len(self.rows) + 1)
        meta = {k: self.meta[k] for k in ("id", "cwd", "originator", "cli_version", "model_provider", "source", "git")
                if self.meta.get(k) is not None}
        meta["models"] = self.models
        if self.window is not None:
            meta["model_context_window"] = self.window
        return conversation(self.records, self.problems, id=self.id, title=None, format=NAME, source=self.source,
                            head=self.last, metadata=meta)

    def add(self, rec: ImportedMessage) -> ImportedMessage:
        self.records.append(rec)
        self.by_id[rec.id] = rec
        self.last = rec.id
        return rec

    # -- model calls ------------------------------------------------------------------

    def end_call(self, line: int) -> None:
        """A model call is over (at ``line`` a new one starts, or a compaction): its reply takes no more parts, and
        a usage no reply took (a call that wrote nothing the rollout kept) is a reply of its own, empty."""
        if self.usage is not None:
            self.add(ImportedMessage(f"L{line}.call", self.last, {
                "role": "assistant", "content": "", "usage": self.usage, "metadata": self.meta_of_reply()}))
        self.usage = None
        self.open = False
        self.reply = None

    def meta_of_reply(self) -> dict[str, Any]:
        return {"model": self.model} if self.model else {}

    def event(self, p: Mapping[str, Any]) -> None:
        kind = p.get("type")
        info = p.get("info")
        if kind == "token_count" and isinstance(info, MAPPING) and isinstance(info.get("last_token_usage"), MAPPING):
            window = info.get("model_context_window")
            if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                self.window = window
            total = info.get("total_token_usage")
            if total is not None and total == self.previous:
                return  # a repeat of the last call's usage, not a call
            self.previous = total
            usage = _usage(info["last_token_usage"])
            if self.reply is not None and self.reply.node.get("usage") is None:
                self.reply.node["usage"] = usage
            else:
                self.usage = usage  # 0.39: the call's items come after its usage
        elif kind == "task_started":
            window = p.get("model_context_window")
            if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                self.window = window

    def item(self, line: int, p: Mapping[str, Any], time: float | None) -> None:
        kind = p.get("type") if isinstance(p.get("type"), str) else None
        if (kind == "message" and p.get("role") == "assistant") or (kind in _REPLY_ITEMS and kind != "message"):
            self.part(line, p, time)
        elif kind == "message":
            self.input(line, p, time)
        elif kind in _OUTPUTS or (isinstance(kind, str) and kind.endswith("_call_output")):
            self.open = False
            self.add(ImportedMessage(f"L{line}", self.last, {"role": "tool", "content": _output(p.get("output")),
                                                             "tool_call_id": str(p.get("call_id") or ""), "time": time}))
        elif isinstance(kind, str) and kind.endswith("_call"):
            self.part(line, p, time)
        # anything else (ghost snapshots, ...) is not what the model reads

    def input(self, line: int, p: Mapping[str, Any], time: float | None) -> None:
        """A user or developer message: an input of the next call (injected, unless a person typed it)."""
        self.open = False
        role = {"user": "user", "developer": "system", "system": "system"}.get(str(p.get("role")))
        if role is None:
            self.problems.left_out(f"L{line}", f"unknown role {p.get('role')!r}; message left out")
            return
        meta: dict[str, Any] = {}
        if role == "user" and not self.typed(p.get("content")):
            meta["injected"] = True
        self.add(ImportedMessage(f"L{line}", self.last, {"role": role, "content": _content(p.get("content")), "time": time, "metadata": meta}))

    def typed(self, content: object) -> bool:
        """Whether a person typed this user message (an ``event_msg`` repeats its text, or the text of its first part
        when images follow it), else Codex injected it."""
        text = _text(content)
        if self.prompts is None:
            return not text.lstrip().startswith(_INJECTED)
        first = next((str(p["text"]) for p in content if isinstance(p, MAPPING) and isinstance(p.get("text"), str)), text) \
            if isinstance(content, list) else text
        for key in dict.fromkeys((_same(text), _same(first))):
            if self.prompts[key] > 0:
                self.prompts[key] -= 1
                return True
        return False

    def part(self, line: int, p: Mapping[str, Any], time: float | None) -> None:
        """One item of a model call's output: a part of its reply (the reply begins with it if none is open)."""
        if self.reply is None or not self.open:
            # a second reply in one call's rows (an input came between) takes no usage of the first's
            self.parts, self.calls = [], []
            node = {"role": "assistant", "content": self.parts, "time": time, "usage": self.usage, "metadata": self.meta_of_reply()}
            self.usage = None
            self.reply = self.add(ImportedMessage(f"L{line}", self.last, node))
            self.open = True
        kind = p.get("type")
        if kind == "message":
            self.parts.extend({"type": "text", "text": t} for t in [_text(p.get("content"))] if t)
        elif kind == "reasoning":
            thinking = _thinking(p)
            if thinking["thinking"] or "encrypted_content" in thinking:  # 0.39 writes empty ones: nothing the model reads
                self.parts.append(thinking)
        elif kind == "web_search_call":
            self.parts.append({"type": "server_tool_use", "id": str(p.get("id") or f"L{line}"), "name": "web_search",
                               "input": p.get("action")})
        else:
            call_id = str(p.get("call_id") or p.get("id") or f"L{line}")
            name = str(p.get("name") or kind)
            raw = p.get("arguments") if "arguments" in p else p.get("input", p.get("action"))
            self.parts.append({"type": "tool_use", "id": call_id, "name": name, "input": _arguments(raw)})
            self.calls.append({"id": call_id, "type": "function", "function": {
                "name": name, "arguments": raw}})
            self.reply.node["tool_calls"] = self.calls
        self.last = self.reply.id

    # -- the log's own compaction ----------------------------------------------------------

    def compacted(self, line: int, p: Mapping[str, Any], time: float | None) -> None:
        summary = f"L{line}"
        history = p.get("replacement_history")
        meta: dict[str, Any] = {"compacted": {"replacement_history": len(history)} if isinstance(history, list) else {}}
        before = self.last
        originals = [r for r in self.records if r.node.get("kind") != "summary" and r.node.get("copied_from") is None]
        self.add(summary_root(summary, before, str(p.get("message") or ""), time, meta))
        kept: list[tuple[object, object]]
        if isinstance(history, list):
            kept = [(item.get("role"), item.get("content")) for item in history
                    if isinstance(item, MAPPING) and item.get("type") == "message"]
        else:
            kept = self.recent_prompts(originals)
        for k, (role, content) in enumerate(kept, 1):
            self.keep(f"{summary}.{k}", summary, originals, (role, content), time)

    def recent_prompts(self, originals: list[ImportedMessage]) -> list[tuple[object, object]]:
        """The typed prompts Codex keeps when it records no replacement history: the newest, 20,000 tokens at most."""
        prompts = [r for r in originals if r.node["role"] == "user" and not (r.node.get("metadata") or {}).get("injected")]
        out: list[tuple[object, object]] = []
        room = _KEPT_PROMPT_TOKENS
        for r in reversed(prompts):
            tokens = (len(content_text(r.node["content"])) + 3) // 4
            if tokens > room:
                break
            room -= tokens
            out.append(("user", r.node["content"]))
        return list(reversed(out))

    def keep(self, nid: str, summary: str, originals: list[ImportedMessage], message: tuple[object, object], time: float | None) -> None:
        """One message (role, content) of a compaction's new history: a copy of the newest earlier message holding
        it word for word, else a new message the compaction kept."""
        role, content = message
        parent = self.last or summary
        mapped = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}.get(str(role))
        if mapped is None:
            self.problems.left_out(nid, f"a compaction kept a message of unknown role {role!r}; left out")
            return
        text = content if isinstance(content, str) else _text(content) if isinstance(content, list) else ""
        body = _content(content) if isinstance(content, list) else text
        for r in reversed(originals):
            if r.node["role"] == mapped and r.node["content"] == body:
                self.add(kept_copy(r, nid, parent, time))
                return
        self.add(ImportedMessage(nid, parent, {"role": mapped, "content": body, "time": time, "metadata": {KEPT: summary}}))


def _thinking(p: Mapping[str, Any]) -> dict[str, Any]:
    """A reasoning item as a ``thinking`` part: its summary text (and the reasoning text where a build records it),
    with the encrypted reasoning the model reads back when there is some."""
    summary = "\n".join(str(s.get("text") or "") for s in p.get("summary") or [] if isinstance(s, MAPPING))
    content = p.get("content")
    text = "\n".join(str(s.get("text") or "") for s in content if isinstance(s, MAPPING)) if isinstance(content, list) else ""
    part: dict[str, Any] = {"type": "thinking", "thinking": text or summary}
    if isinstance(p.get("encrypted_content"), str) and p["encrypted_content"]:
        part["encrypted_content"] = p["encrypted_content"]
    return part
