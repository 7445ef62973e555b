"""pi coding-agent sessions (``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``), layouts v1 to v3.

One JSON entry per line after a ``{"type": "session", ...}`` header
(badlogic/pi-mono, ``packages/coding-agent/src/core/session-manager.ts``).
v2 and v3 entries carry ``id``/``parentId``: the file is a tree, every branch
kept, and the head is the last entry of the file (pi's leaf on load). v1
entries have neither: each hangs under the one before (pi's ``migrateV1ToV2``),
with ids ``L<line>``.

- ``message`` entries are messages, read as pi sends them to the model
  (``convertToLlm``): ``user``; ``assistant`` (``text``, ``thinking`` and
  ``toolCall`` parts, the calls also as ``tool_calls``; ``usage`` per call,
  its ``input`` the uncached input beside ``cacheRead`` and ``cacheWrite``,
  so that the usage's input is their sum; ``model``, ``provider``,
  ``stopReason`` in ``metadata``); ``toolResult`` (a ``tool`` message paired
  by ``toolCallId``); ``bashExecution`` (a ``!`` command the person ran: the
  user message pi writes for it, ``Ran `cmd```...; one excluded from the
  context, ``!!``, is not read); ``custom`` (v2's ``hookMessage``) as a user
  message, but one of type ``convlab.system`` (what ``convlab.write`` makes of
  a system message) as a system message.
- An aborted or failed reply whose usage is all zeros reports no usage (pi's
  own count passes over it, ``getAssistantUsage``): read without ``usage``.
- ``compaction`` is the log's own compaction: a ``kind: "summary"`` root (the
  summary as pi sends it, in its ``<summary>`` wrapper) replacing the message
  before it, then copies (``copied_from``) of the messages from
  ``firstKeptEntryId`` (v1: ``firstKeptEntryIndex``, the header being 0) to
  the compaction, as pi's ``buildSessionContext`` sends them;
  ``tokensBefore`` in ``metadata.compaction``.
- ``branch_summary`` (written where a person moved to another branch: the
  summary of the branch left) is what pi sends it as, a user message in the
  branch's history (it replaces nothing: the branch below it still reads
  what is above it), ``metadata.branch_summary`` naming ``fromId``;
  ``custom_message`` is a user message.
- ``model_change``, ``thinking_level_change``, ``custom``, ``label`` and
  ``session_info`` are not messages: links in the chain. Labels are the
  conversation's labels (``Conversation.labels()``, the tree's; also
  ``metadata["labels"]``, node id -> label), the last ``session_info`` name
  its title.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..conversation import Conversation
from .documents import Document
from .records import (
    MAPPING,
    ImportedMessage,
    Problems,
    conversation,
    kept_copy,
    logged_counts,
    summary_root,
    text_or_parts,
    to_time,
)

NAME = "pi"
_ENTRIES = {"message", "model_change", "thinking_level_change", "compaction", "branch_summary", "custom",
            "custom_message", "label", "session_info"}
#: pi's wrappers around a summary it sends (``packages/coding-agent/src/core/messages.ts``)
COMPACTION_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"
#: The ``customType`` of a ``custom`` message that ``convlab.write`` wrote for a system message (pi's sessions hold
#: none): read back as the system message it was.
SYSTEM_TYPE = "convlab.system"


def detect(doc: Document) -> bool:
    if doc.kind != "lines":
        return False
    rows = [r for r in doc.head if isinstance(r, MAPPING)]
    if not rows or rows[0].get("type") != "session" or "cwd" not in rows[0]:
        return False
    return all(isinstance(r.get("type"), str) and r["type"] in _ENTRIES for r in rows[1:])


def parse(doc: Document) -> list[Conversation]:
    return [_Session(doc.source, list(doc.items)).conversation()]


def bash_text(m: Mapping[str, Any]) -> str:
    """A ``bashExecution`` message as the user message pi sends for it (``bashExecutionToText``).

    >>> print(bash_text({"command": "ls", "output": "a.txt", "exitCode": 1, "cancelled": False}))
    Ran `ls`
    ```
    a.txt
    ```
    <BLANKLINE>
    Command exited with code 1
    """
    text = f"Ran `{m.get('command')}`\n"
    text += f"```\n{m.get('output')}\n```" if m.get("output") else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(m.get("exitCode"), int) and m["exitCode"] != 0:
        text += f"\n\nCommand exited with code {m['exitCode']}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def _usage(m: Mapping[str, Any]) -> dict[str, Any] | None:
    """An assistant message's usage (None: none reported, as on a reply aborted before the provider answered)."""
    raw = m.get("usage")
    if not isinstance(raw, MAPPING):
        return raw  # None, or what no provider reports: records.build says it
    usage, _sound = logged_counts(raw, {"input_tokens": "input", "cache_read_input_tokens": "cacheRead",  # as written: build checks
                                        "cache_creation_input_tokens": "cacheWrite", "output_tokens": "output"})
    if m.get("stopReason") in ("aborted", "error") and not any(usage.values()):
        return None
    cost = raw.get("cost")
    if isinstance(cost, MAPPING) and isinstance(cost.get("total"), (int, float)) and not isinstance(cost.get("total"), bool):
        usage["cost"] = cost["total"]
    return usage


def _assistant(m: Mapping[str, Any]) -> dict[str, Any]:
    parts: list[Any] = []
    calls: list[dict[str, Any]] = []
    content = m.get("content")
    for p in content if isinstance(content, list) else [content] if isinstance(content, str) else []:
        if isinstance(p, str):
            parts.append({"type": "text", "text": p})
        elif isinstance(p, MAPPING) and p.get("type") == "toolCall":
            cid, name, args = str(p.get("id") or ""), str(p.get("name") or ""), p.get("arguments")
            parts.append({"type": "tool_use", "id": cid, "name": name, "input": args})
            calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": args}})
        elif isinstance(p, MAPPING) and p.get("type") == "thinking":
            parts.append({"type": "thinking", "thinking": str(p.get("thinking") or "")})
        elif p is not None:
            parts.append(p)
    meta = {k: m[k] for k in ("model", "provider", "api") if isinstance(m.get(k), str)}
    if isinstance(m.get("stopReason"), str):
        meta["stop_reason"] = m["stopReason"]
    if isinstance(m.get("errorMessage"), str):
        meta["error"] = m["errorMessage"]
    node: dict[str, Any] = {"role": "assistant", "content": parts, "usage": _usage(m), "metadata": meta}
    if calls:
        node["tool_calls"] = calls
    return node


def _message(m: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``message`` entry's message as pi sends it (None: one it does not send); its node attributes."""
    role = m.get("role")
    content = m.get("content")
    parts = text_or_parts(content) if isinstance(content, list) else content if isinstance(content, str) else ""
    if role == "user":
        return {"role": "user", "content": parts}
    if role == "assistant":
        return _assistant(m)
    if role == "toolResult":
        meta: dict[str, Any] = {"tool_name": m["toolName"]} if isinstance(m.get("toolName"), str) else {}
        if m.get("isError") is True:
            meta["is_error"] = True
        return {"role": "tool", "content": parts, "tool_call_id": str(m.get("toolCallId") or ""), "metadata": meta}
    if role == "bashExecution":
        if m.get("excludeFromContext"):
            return None
        return {"role": "user", "content": bash_text(m), "metadata": {"pi_role": "bashExecution"}}
    if role == "custom" and m.get("customType") == SYSTEM_TYPE:  # a system message convlab.write wrote
        return {"role": "system", "content": parts}
    if role in ("custom", "hookMessage"):
        meta = {"pi_role": "custom"}
        if isinstance(m.get("customType"), str):
            meta["custom_type"] = m["customType"]
        return {"role": "user", "content": parts, "metadata": meta}
    return {"role": role}  # a role pi does not know: a problem, said by the caller


class _Session:
    """The records of one session file, entry by entry: where each entry's children hang (``at``)."""

    def __init__(self, source: str, rows: list[Any]) -> None:
        self.source = source
        self.header: Mapping[str, Any] = rows[0] if rows and isinstance(rows[0], MAPPING) else {}
        self.id = str(self.header.get("id") or PurePath(source.split("!")[-1]).name.split(".")[0])
        self.problems = Problems(source, self.id)
        self.entries: list[tuple[str, str | None, Mapping[str, Any]]] = []  # (id, parent id, entry)
        previous: str | None = None
        for line, e in enumerate(rows[1:], 2):
            if not isinstance(e, MAPPING) or not isinstance(e.get("type"), str) or e["type"] not in _ENTRIES:
                continue
            eid = str(e["id"]) if isinstance(e.get("id"), (str, int)) and not isinstance(e.get("id"), bool) else f"L{line}"
            parent = e.get("parentId", previous) if "id" in e else previous
            self.entries.append((eid, None if parent is None else str(parent), e))
            previous = eid
        self.records: list[ImportedMessage] = []
        self.node_of: dict[str, ImportedMessage] = {}  # entry id -> its message's record
        self.at: dict[str, str | None] = {}  # entry id -> the node a child of it hangs under
        self.parent_of: dict[str, str | None] = {}
        self.models: list[str] = []
        self.labels: dict[str, str] = {}
        self.title: str | None = None

    def conversation(self) -> Conversation:
        for eid, parent, e in self.entries:
            self.parent_of[eid] = parent
            if parent is not None and parent not in self.at:
                self.problems.add(eid, f"parentId {parent!r} is not an entry of the file; kept as a top-level entry")
                parent = None
            under = self.at[parent] if parent is not None else None
            self.at[eid] = self.entry(eid, parent, under, e)
        head = self.at[self.entries[-1][0]] if self.entries else None
        meta = {k: self.header[k] for k in ("cwd", "version", "provider", "modelId", "branchedFrom", "parentSession")
                if self.header.get(k) is not None}
        meta["session_id"] = self.id
        meta["models"] = self.models
        if self.labels:
            meta["labels"] = self.labels
        return conversation(self.records, self.problems, id=self.id, title=self.title, format=NAME, source=self.source,
                            head=head, metadata=meta, labels=self.labels)

    def add(self, rec: ImportedMessage) -> str:
        self.records.append(rec)
        return rec.id

    def entry(self, eid: str, parent: str | None, under: str | None, e: Mapping[str, Any]) -> str | None:
        """Read one entry; the node its children hang under."""
        kind, time = e.get("type"), to_time(e.get("timestamp"))
        if kind == "message" and isinstance(e.get("message"), MAPPING):
            node = _message(e["message"])
            if node is None:
                return under
            if "content" not in node:
                self.problems.left_out(eid, f"unknown role {node['role']!r}; message left out")
                return under
            model = (node.get("metadata") or {}).get("model")
            if model and model not in self.models:
                self.models.append(model)
            node["time"] = time  # the node is _message's own: set, not copied
            rec = ImportedMessage(eid, under, node)
            self.node_of[eid] = rec
            return self.add(rec)
        if kind == "compaction":
            return self.compaction(eid, parent, under, e, time)
        if kind in ("branch_summary", "custom_message"):
            if kind == "branch_summary":
                node = {"role": "user", "content": BRANCH_PREFIX + str(e.get("summary") or "") + BRANCH_SUFFIX,
                        "metadata": {"branch_summary": e.get("fromId")}}
            else:
                content = e.get("content")
                node = {"role": "user", "content": text_or_parts(content) if isinstance(content, list) else str(content or ""),
                        "metadata": {"custom_type": e.get("customType")}}
            rec = ImportedMessage(eid, under, {**node, "time": time})
            self.node_of[eid] = rec
            return self.add(rec)
        if kind == "label" and isinstance(e.get("targetId"), str):
            target = self.node_of.get(e["targetId"])
            if target is not None:
                if isinstance(e.get("label"), str) and e["label"]:
                    self.labels[target.id] = e["label"]
                else:
                    self.labels.pop(target.id, None)
        elif kind == "session_info" and isinstance(e.get("name"), str):
            self.title = e["name"]
        return under

    def compaction(self, eid: str, parent: str | None, under: str | None, e: Mapping[str, Any], time: float | None) -> str:
        """The log's own compaction: its summary root, then copies of what it kept (``buildSessionContext``)."""
        first = e.get("firstKeptEntryId")
        if first is None and isinstance(e.get("firstKeptEntryIndex"), int):  # v1: an index into the file, the header 0
            first = f"L{e['firstKeptEntryIndex'] + 1}"
        path: list[str] = []
        at = parent
        while at is not None:
            path.append(at)
            at = self.parent_of.get(at)
        path.reverse()
        kept = path[path.index(first):] if first in path else []
        meta = {k: e[k] for k in ("tokensBefore", "firstKeptEntryId", "firstKeptEntryIndex", "fromHook") if k in e}
        if first is not None and not kept:
            self.problems.add(eid, f"first kept entry {first!r} is not on the path to the compaction; nothing kept")
        last = self.add(summary_root(eid, under, COMPACTION_PREFIX + str(e.get("summary") or "") + COMPACTION_SUFFIX, time,
                                     {"compaction": meta}))
        for k in kept:
            original = self.node_of.get(k)
            if original is not None:
                last = self.add(kept_copy(original, f"{k}@{eid}", last, time))
        return last
