"""Write a tree out again, in convlab's own session log or in another tool's layout, so that ``convlab.read``
gives the same tree back (what each layout can hold: ``KEEPS``).

- ``convlab``: the session log (docs/wire.md). A Session's own events, as logged (``Session.load`` gives the
  same session); any other tree as the events that record it: ``session.started``, a ``message.new`` per
  message in creation order (every attribute of the node), ``label.set`` per label, ``head.moved`` to the head.
- ``pi``: pi's session layout v3 (``id``/``parentId`` entries after a ``session`` header; pi-mono's
  ``session-manager.ts``). Every branch is there; pi takes the last entry as its leaf, so the entries end at
  the head (the labels, as pi's ``label`` entries, and the title, as ``session_info``, hang there; with
  neither, a ``custom`` entry of type ``convlab.head``). A system message is a ``custom`` message of type
  ``convlab.system`` (pi has no system messages in a session; the pi importer reads it back as one).
- ``chatgpt``: a ChatGPT export (a list of one conversation: ``mapping`` with ``current_node``), its
  placeholder root ``client-created-root`` above the top-level messages. Tool calls ride as ``tool_use``
  parts (an export has no ``tool_calls``); a tool result's ``tool_call_id`` and the labels have no place.
- ``openai``: the active path as chat messages (``{"id", "title", "messages"}``), each with its id.
- ``atif``: the active path as a trajectory in Harbor's Agent Trajectory Interchange Format (``ATIF``,
  ``ATIF_VERSION``): a step per user, system and assistant message (an assistant's thinking as its
  ``reasoning_content``, its tool calls as ``tool_calls``, its usage as ``metrics``), each tool result the
  ``observation`` of the step that called it. convlab reads no ATIF back: it is an export, not a tree format.

Each file is written whole to a temporary file beside it, then moved into place: a failure leaves no half
file. An existing file is refused unless ``overwrite=True``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..conversation import Conversation
from ..engine import Session
from ..errors import ExploreError
from ..importers.pi import SYSTEM_TYPE as PI_SYSTEM
from ..replaying.result import Replay
from ..toolcalls import answers
from ..tree import Tree, input_tokens, message_of
from .sources import Source, tree_of

__all__ = ["write", "FORMATS", "TREE_FORMATS", "KEEPS", "pi_entries", "chatgpt_export", "openai_messages", "log_events",
           "SYSTEM_TYPE", "HEAD_TYPE", "ROOT", "calls_of", "atif_trajectory", "ATIF_VERSION"]

#: The formats ``write`` writes, and those of them ``convlab.read`` reads back as the same tree.
FORMATS = ("convlab", "pi", "chatgpt", "openai", "atif")
TREE_FORMATS = ("convlab", "pi", "chatgpt", "openai")

#: The ATIF schema version ``atif_trajectory`` writes (every field it uses is in it).
ATIF_VERSION = "ATIF-v1.4"

#: What of a tree each format keeps, read back with ``convlab.read`` (the round trip's promise, tested).
KEEPS = {
    "convlab": "every node with every attribute, the head, the labels (a Session: every event)",
    "pi": "ids, parents, roles, content (text, thinking, tool calls, other parts), tool results' call ids, usage, the head, the labels, the title",
    "chatgpt": "ids, parents, roles, names, content (text, tool calls as tool_use parts, other parts), the head, the title",
    "openai": "the active path: ids, roles, content, names, tool calls, tool results' call ids, usage",
    "atif": "(written only) the active path as a trajectory: messages, thinking, tool calls and their results, usage",
}

#: The ``customType`` of a pi ``custom`` message that is a system message (the pi importer's own constant).
SYSTEM_TYPE = PI_SYSTEM
#: The ``customType`` of the pi ``custom`` entry that ends a file at its head when nothing else hangs there.
HEAD_TYPE = "convlab.head"
#: The placeholder root of a ChatGPT mapping (as exports write it since 2025).
ROOT = "client-created-root"


def _identity(source: Source) -> tuple[str, str | None, dict[str, Any]]:
    """A source's id, title and metadata, for the files that carry them."""
    if isinstance(source, Replay):
        source = source.session
    if isinstance(source, Conversation):
        return source.id, source.title, source.metadata
    if isinstance(source, Session):
        return source.agent, None, {}
    return "tree", None, {}


def _iso(t: object) -> str | None:
    if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < 1e11:
        return dt.datetime.fromtimestamp(t, dt.UTC).isoformat().replace("+00:00", "Z")
    return None


def _parts(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _arguments(raw: object) -> object:
    """A tool call's arguments as an object where they are JSON text of one (pi and Anthropic keep objects)."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw


def calls_of(node: Mapping[str, Any]) -> list[tuple[str, str, object]]:
    """An assistant message's tool calls (id, name, arguments): its ``tool_use`` parts, then any ``tool_calls``
    entry no part already holds."""
    out: list[tuple[str, str, object]] = []
    seen: set[str] = set()
    for p in _parts(node.get("content")):
        if isinstance(p, Mapping) and p.get("type") == "tool_use":
            out.append((str(p.get("id") or ""), str(p.get("name") or ""), p.get("input")))
            seen.add(str(p.get("id") or ""))
    for c in node.get("tool_calls") or ():
        if isinstance(c, Mapping) and str(c.get("id") or "") not in seen:
            fn: Mapping[str, Any] = c["function"] if isinstance(c.get("function"), Mapping) else c
            out.append((str(c.get("id") or ""), str(fn.get("name") or ""), _arguments(fn.get("arguments"))))
    return out


# -- pi ---------------------------------------------------------------------------------------------------


def _pi_message(node: Mapping[str, Any]) -> dict[str, Any]:
    role, parts = node["role"], _parts(node.get("content"))
    meta: Mapping[str, Any] = node["metadata"] if isinstance(node.get("metadata"), Mapping) else {}
    if role == "assistant":
        content: list[Any] = []
        for p in parts:
            if isinstance(p, Mapping) and p.get("type") == "tool_use":
                continue  # written from calls_of, in order, below
            if isinstance(p, Mapping) and p.get("type") == "thinking":
                content.append({"type": "thinking", "thinking": str(p.get("thinking") or "")})
            else:
                content.append(p)
        content += [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in calls_of(node)]
        out: dict[str, Any] = {"role": "assistant", "content": content}
        usage = node.get("usage")
        if isinstance(usage, Mapping):
            out["usage"] = {"input": usage.get("input_tokens") or 0, "output": usage.get("output_tokens") or 0,
                            "cacheRead": usage.get("cache_read_input_tokens") or 0,
                            "cacheWrite": usage.get("cache_creation_input_tokens") or 0}
        for key, theirs in (("model", "model"), ("provider", "provider"), ("stop_reason", "stopReason")):
            if isinstance(meta.get(key), str):
                out[theirs] = meta[key]
        return out
    if role == "tool":
        name = meta.get("tool_name") if isinstance(meta.get("tool_name"), str) else node.get("name")
        return {"role": "toolResult", "toolCallId": node.get("tool_call_id") or "", "toolName": name or "",
                "content": parts, "isError": meta.get("is_error") is True}
    if role == "system":
        return {"role": "custom", "customType": SYSTEM_TYPE, "content": parts, "display": False}
    return {"role": "user", "content": parts}


def pi_entries(tree: Tree, id: str, title: str | None = None, cwd: str = "") -> Iterator[dict[str, Any]]:
    """The entries of a pi v3 session file for ``tree``: the header, a ``message`` per node (parents first),
    then the labels and the title hanging at the head, so that the last entry is pi's leaf.

    >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1"); t.head = "u1"
    >>> [(e["type"], e.get("id"), e.get("parentId")) for e in pi_entries(t, "s1")]
    [('session', 's1', None), ('message', 'u1', None), ('message', 'a1', 'u1'), ('custom', 'convlab.head', 'u1')]
    """
    nodes = tree.nodes_in_order()
    started = next((t for t in (_iso(n.get("time")) for n in nodes) if t is not None), _iso(0))
    yield {"type": "session", "version": 3, "id": id, "timestamp": started, "cwd": cwd}
    last: str | None = None
    for node in nodes:
        entry = {"type": "message", "id": node["id"], "parentId": node["parent"], "message": _pi_message(node)}
        stamp = _iso(node.get("time"))
        if stamp is not None:
            entry["timestamp"] = stamp
            entry["message"]["timestamp"] = int(node["time"] * 1000)
        yield entry
        last = node["id"]
    at, n = tree.head, 0
    taken = set(tree.labels) | {"" if last is None else last}

    def fresh(base: str) -> str:
        nonlocal n
        n += 1
        made = f"{base}-{n}"
        while made in tree or made in taken:
            n += 1
            made = f"{base}-{n}"
        taken.add(made)
        return made

    for target, text in tree.labels.items():
        eid = fresh("label")
        yield {"type": "label", "id": eid, "parentId": at, "targetId": target, "label": text}
        at = eid
    if title:
        eid = fresh("title")
        yield {"type": "session_info", "id": eid, "parentId": at, "name": title}
        at = eid
    if at == tree.head and tree.head != last and tree.head is not None:
        yield {"type": "custom", "id": HEAD_TYPE if HEAD_TYPE not in tree else fresh(HEAD_TYPE), "parentId": tree.head,
               "customType": HEAD_TYPE, "data": {"head": tree.head}}


# -- ChatGPT ----------------------------------------------------------------------------------------------


def _chatgpt_content(node: Mapping[str, Any]) -> dict[str, Any]:
    content = node.get("content")
    calls = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls_of(node)
             if not any(isinstance(p, Mapping) and p.get("type") == "tool_use" and p.get("id") == i for p in _parts(content))]
    if isinstance(content, str) and not calls:
        return {"content_type": "text", "parts": [content]}
    return {"content_type": "multimodal_text", "parts": [*_parts(content), *calls]}


def chatgpt_export(tree: Tree, id: str, title: str | None = None) -> list[dict[str, Any]]:
    """``tree`` as a ChatGPT export: a list of one conversation, its ``mapping`` under the placeholder root.

    >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None); t.head = "u1"
    >>> conv = chatgpt_export(t, "c1", "Hi")[0]
    >>> conv["current_node"], conv["mapping"]["client-created-root"]["children"], conv["mapping"]["u1"]["message"]["content"]
    ('u1', ['u1'], {'content_type': 'text', 'parts': ['hi']})
    """
    root = ROOT
    while root in tree:
        root += "-"
    mapping: dict[str, Any] = {root: {"id": root, "message": None, "parent": None, "children": []}}
    for node in tree.nodes_in_order():
        nid, parent = node["id"], node["parent"]
        author: dict[str, Any] = {"role": node["role"], "metadata": {}}
        if node.get("name"):
            author["name"] = node["name"]
        message = {"id": nid, "author": author, "create_time": node.get("time"), "content": _chatgpt_content(node),
                   "status": "finished_successfully", "recipient": "all", "metadata": {}}
        mapping[nid] = {"id": nid, "message": message, "parent": root if parent is None else parent, "children": []}
        mapping[root if parent is None else parent]["children"].append(nid)
    times = [n["message"]["create_time"] for n in mapping.values() if n["message"] and isinstance(n["message"]["create_time"], (int, float))]
    return [{"title": title, "create_time": min(times, default=None), "update_time": max(times, default=None),
             "mapping": mapping, "current_node": tree.head if tree.head is not None else root, "conversation_id": id, "id": id}]


# -- OpenAI chat messages, the convlab log -----------------------------------------------------------------


def openai_messages(tree: Tree, id: str, title: str | None = None) -> dict[str, Any]:
    """The active path as OpenAI chat messages, each with its id (and its usage where it has one).

    >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None); t.head = "u1"
    >>> openai_messages(t, "c1")
    {'id': 'c1', 'title': None, 'messages': [{'id': 'u1', 'role': 'user', 'content': 'hi'}]}
    """
    messages = []
    for node in tree.path():
        m: dict[str, Any] = dict(message_of(node))
        if node.get("usage"):
            m["usage"] = node["usage"]
        messages.append(m)
    return {"id": id, "title": title, "messages": messages}


def log_events(tree: Tree, agent: str = "bot") -> Iterator[dict[str, Any]]:
    """The session log events that record ``tree``: what ``Session.load`` and ``convlab.read`` rebuild it from.

    >>> t = Tree(); _ = t.add({"id": "u1", "role": "user", "content": "hi"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "hello"}, "u1"); t.head = "u1"; t.set_label("a1", "x")
    >>> [e["type"] for e in log_events(t)]
    ['session.started', 'message.new', 'message.new', 'label.set', 'head.moved']
    """
    seq, time, last = 1, 0.0, None
    yield {"seq": seq, "time": time, "type": "session.started", "agent": agent, "config": {}}
    for node in tree.nodes_in_order():
        t = node.get("time")
        if isinstance(t, (int, float)) and not isinstance(t, bool) and t > time:
            time = float(t)
        seq += 1
        yield {"seq": seq, "time": time, "type": "message.new", "message": node}
        last = node["id"]
    for target, text in tree.labels.items():
        seq += 1
        yield {"seq": seq, "time": time, "type": "label.set", "node": target, "label": text}
    if tree.head != last:
        seq += 1
        yield {"seq": seq, "time": time, "type": "head.moved", "from": last, "to": tree.head}


# -- ATIF ---------------------------------------------------------------------------------------------------


def _text_and_thinking(content: object) -> tuple[str, str]:
    text, thinking = [], []
    for p in _parts(content):
        if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str):
            text.append(p["text"])
        elif isinstance(p, Mapping) and p.get("type") == "thinking":
            thinking.append(str(p.get("thinking") or ""))
        elif isinstance(p, Mapping) and p.get("type") == "tool_result":
            body = p.get("content")
            text.append(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False))
        elif not (isinstance(p, Mapping) and p.get("type") == "tool_use"):
            text.append(json.dumps(p, ensure_ascii=False))
    return "\n".join(text), "\n".join(thinking)


def atif_trajectory(tree: Tree, id: str, agent: str = "convlab", model: str | None = None) -> dict[str, Any]:
    """The active path of ``tree`` as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format).

    >>> t = Tree()
    >>> _ = t.add({"id": "u1", "role": "user", "content": "list files"}, None)
    >>> _ = t.add({"id": "a1", "role": "assistant", "content": "", "usage": {"input_tokens": 9, "output_tokens": 4},
    ...            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}, "u1")
    >>> _ = t.add({"id": "t1", "role": "tool", "tool_call_id": "c1", "content": "a.txt"}, "a1"); t.head = "t1"
    >>> steps = atif_trajectory(t, "s1")["steps"]
    >>> [(s["step_id"], s["source"]) for s in steps], steps[1]["observation"], steps[1]["metrics"]
    ([(1, 'user'), (2, 'agent')], {'results': [{'source_call_id': 'c1', 'content': 'a.txt'}]}, {'prompt_tokens': 9, 'completion_tokens': 4})
    """
    steps: list[dict[str, Any]] = []
    caller: dict[str, dict[str, Any]] = {}  # tool call id -> the step that made it
    totals = {"total_prompt_tokens": 0, "total_completion_tokens": 0, "total_cached_tokens": 0}
    for node in tree.path():
        called = answers(node)
        text, thinking = _text_and_thinking(node.get("content"))
        if called and all(c in caller for c in called):  # a tool result: the observation of the step that called it
            for c in called:
                results = caller[c].setdefault("observation", {"results": []})["results"]
                results.append({"source_call_id": c, "content": text})
            continue
        source = {"user": "user", "system": "system", "tool": "system"}.get(node["role"], "agent")  # a result whose call is not on the path: said by the system
        step: dict[str, Any] = {"step_id": len(steps) + 1, "source": source, "message": text}
        stamp = _iso(node.get("time"))
        if stamp is not None:
            step["timestamp"] = stamp
        meta: Mapping[str, Any] = node["metadata"] if isinstance(node.get("metadata"), Mapping) else {}
        if source == "agent":
            if isinstance(meta.get("model"), str):
                step["model_name"] = meta["model"]
            if thinking:
                step["reasoning_content"] = thinking
            calls: list[dict[str, Any]] = [{"tool_call_id": i, "function_name": n, "arguments": a if isinstance(a, dict) else {"input": a}}
                                           for i, n, a in calls_of(node)]
            if calls:
                step["tool_calls"] = calls
                caller.update((c["tool_call_id"], step) for c in calls)
            usage = node.get("usage")
            if isinstance(usage, Mapping):
                metrics: dict[str, int] = {"prompt_tokens": input_tokens(usage) or 0, "completion_tokens": int(usage.get("output_tokens") or 0)}
                if usage.get("cache_read_input_tokens"):
                    metrics["cached_tokens"] = int(usage["cache_read_input_tokens"])
                step["metrics"] = metrics
                totals["total_prompt_tokens"] += metrics["prompt_tokens"]
                totals["total_completion_tokens"] += metrics["completion_tokens"]
                totals["total_cached_tokens"] += metrics.get("cached_tokens", 0)
        step["extra"] = {"message_id": node["id"]}
        steps.append(step)
    return {"schema_version": ATIF_VERSION, "session_id": id,
            "agent": {"name": agent, "version": "convlab", **({"model_name": model} if model else {})},
            "steps": steps, "final_metrics": {**totals, "total_steps": len(steps)}}


# -- write --------------------------------------------------------------------------------------------------


def write(source: Source, path: str | os.PathLike, format: str = "convlab", *, overwrite: bool = False) -> Path:
    """Write the whole tree of ``source`` (a Session, a Conversation, a Replay) to ``path`` in ``format``:
    ``"convlab"`` (the session log), ``"pi"`` (pi's session layout v3), ``"chatgpt"`` (a ChatGPT export with
    ``current_node``), ``"openai"`` (the active path as chat messages) or ``"atif"`` (the active path as an ATIF
    trajectory, written only). ``convlab.read(path)`` gives the same tree back, as far as the format holds it
    (``KEEPS``). Returns the path written.

    An existing file is refused (``overwrite=True`` replaces it); a format convlab does not write, or a path
    that cannot be written, is an ``ExploreError`` naming it. Nothing is left half written.

    >>> import convlab, tempfile, os
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hi"}})
    >>> folder = tempfile.mkdtemp()
    >>> path = convlab.write(s, os.path.join(folder, "s.jsonl"), format="pi")
    >>> c = convlab.read(path)[0]
    >>> c.format, c.head, [(m["id"], m["role"]) for m in c.path()]
    ('pi', 'e1', [('u1', 'user'), ('e1', 'assistant')])
    """
    if format not in FORMATS:
        raise ExploreError(f"format: {format!r} is not a format convlab writes (one of {', '.join(FORMATS)})")
    if not isinstance(path, (str, os.PathLike)):
        raise ExploreError(f"path: a file path was expected, got a {type(path).__name__}")
    tree = tree_of(source)
    target = Path(path)
    if target.is_dir():
        raise ExploreError(f"path: {target} is a folder; give the file to write")
    if target.exists() and not overwrite:
        raise ExploreError(f"path: {target} exists (overwrite=True replaces it)")
    cid, title, meta = _identity(source)
    lines: Iterator[Any]
    if format == "convlab":
        session = source.session if isinstance(source, Replay) else source
        events = session.events if isinstance(session, Session) else log_events(tree, str(meta.get("agent") or "bot"))
        lines = iter(events)
    elif format == "pi":
        lines = pi_entries(tree, cid, title, str(meta.get("cwd") or ""))
    elif format == "atif":
        models: list[Any] = meta["models"] if isinstance(meta.get("models"), list) else []
        model = meta.get("model") if isinstance(meta.get("model"), str) else next((m for m in models if isinstance(m, str)), None)
        agent = source.format if isinstance(source, Conversation) and source.format else "convlab"
        lines = iter([atif_trajectory(tree, cid, agent, model)])
    else:
        lines = iter([chatgpt_export(tree, cid, title) if format == "chatgpt" else openai_messages(tree, cid, title)])
    _write_whole(target, lines, jsonl=format in ("convlab", "pi"))
    return target


def _write_whole(target: Path, items: Iterator[Any], *, jsonl: bool) -> None:
    folder = target.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise ExploreError(f"path: cannot write in {folder}: {err.strerror or err}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as open() would make it (mkstemp makes it private)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for item in items:
                f.write(json.dumps(item, ensure_ascii=False, allow_nan=False, separators=(",", ":") if jsonl else None))
                f.write("\n")
        os.replace(tmp, target)
    except (OSError, ValueError, TypeError) as err:
        Path(tmp).unlink(missing_ok=True)
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ExploreError(f"path: cannot write {target}: {why}") from None
