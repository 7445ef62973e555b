"""Messages in each provider's own shape, whatever shape the log wrote them in.

convlab keeps a message as its log gave it: in Chat Completions' shape
(``tool_calls``, ``role: "tool"`` results, ``image_url`` parts) or in
Anthropic's (``tool_use`` and ``tool_result`` parts, ``thinking``, ``image``
blocks), and an imported Claude Code session has both at once (a reply's
``tool_use`` parts, and ``tool_calls`` naming them). An API takes only its
own, and refuses the rest (llama.cpp's server: "unsupported content[].type";
OpenAI's: a ``tool`` message with no call before it; Anthropic's: a
``tool_use`` with no ``tool_result`` after it). So every provider's request is
made here, in two steps written once:

- ``read``: each message as what it says, in order: its text, images,
  thinking, the tool calls it makes (from ``tool_calls`` and ``tool_use``
  parts alike, once per id) and the results it gives (a ``tool`` message, or
  ``tool_result`` parts), and any other part as it came;
- a writer per API: ``openai_messages`` (Chat Completions), ``text_messages``
  (a server whose chat template knows no tools: ``LocalChat``) and
  ``anthropic_messages`` (the Messages API).

What each API has no place for is said in text, never dropped silently,
except thinking (the model's own reasoning: Chat Completions takes none back,
and Anthropic takes only its own signed blocks). A tool call is sent as a call
only when its result follows it before the next assistant message, and a
result only when its call came before (a slice of a history, as a summary
call sends, can cut either off): otherwise each is said in text, where no API
refuses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["read", "Said", "openai_messages", "text_messages", "anthropic_messages", "render"]

#: The longest a part an API has no place for is said in text (a base64 blob says nothing to a model).
PART_CHARS = 2_000


@dataclass
class ToolCall:
    """A tool call: its ``id``, ``name`` and ``arguments`` (the JSON text, as Chat Completions carries it)."""

    id: str
    name: str
    arguments: str

    def input(self) -> dict[str, Any]:
        """The arguments as the JSON object Anthropic's ``tool_use`` takes (``{}`` when they are not one)."""
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return {"arguments": self.arguments}
        return value if isinstance(value, dict) else {"arguments": value}


@dataclass
class Said:
    """One message as what it says: ``role``; ``parts`` (text, images, thinking, any other part, in order, each
    a part dict); the tool ``calls`` it makes; the ``results`` it gives (``(call id, content, is_error)``);
    ``name``; ``plain`` when its content was one string."""

    role: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[tuple[str, Any, bool]] = field(default_factory=list)
    name: str | None = None
    plain: bool = False  # its content was one string


def _table(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a log's field of another type reads as none)."""
    return value if isinstance(value, Mapping) else {}


def _arguments(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps({} if value is None else value, ensure_ascii=False)


def _said(m: Mapping[str, Any]) -> Said:
    role = str(m.get("role"))
    content = m.get("content")
    said = Said(role, name=m.get("name") if isinstance(m.get("name"), str) else None, plain=isinstance(content, str))
    if role == "tool":
        said.results.append((str(m.get("tool_call_id")), content, bool(m.get("is_error"))))
        return said
    seen: set[str] = set()
    for call in m.get("tool_calls") or ():
        if isinstance(call, Mapping):
            fn = _table(call.get("function"))
            cid = str(call.get("id"))
            if cid not in seen:
                seen.add(cid)
                said.calls.append(ToolCall(cid, str(fn.get("name") or call.get("name") or "tool"), _arguments(fn.get("arguments"))))
    for part in ([{"type": "text", "text": content}] if isinstance(content, str) and content.strip() else
                 content if isinstance(content, list) else ()):
        if not isinstance(part, Mapping):
            said.parts.append({"type": "text", "text": str(part)})
        elif part.get("type") == "text" and not str(part.get("text") or "").strip():
            continue  # says nothing (and the Messages API refuses a text block of whitespace: "\n\n" between thinking and a call)
        elif part.get("type") == "tool_use" and role == "assistant":
            cid = str(part.get("id"))
            if cid not in seen:
                seen.add(cid)
                said.calls.append(ToolCall(cid, str(part.get("name") or "tool"), _arguments(part.get("input"))))
        elif part.get("type") == "tool_result" and role == "user":
            said.results.append((str(part.get("tool_use_id")), part.get("content"), bool(part.get("is_error"))))
        else:
            said.parts.append(dict(part))
    return said


def read(messages: Iterable[Mapping[str, Any]]) -> list[Said]:
    """``messages`` as what each says, with every call and result paired or not: a call keeps its place as a
    call only when its result follows before the next assistant message, and a result only when its call came
    before it; the others are moved into the text (``render``), where no API refuses them.

    >>> said = read([{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
    ...               "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "Bash", "arguments": {"command": "ls"}}}]},
    ...              {"role": "tool", "tool_call_id": "t1", "content": "a.txt"},
    ...              {"role": "tool", "tool_call_id": "gone", "content": "b.txt"}])
    >>> [(s.role, [c.id for c in s.calls], [r[0] for r in s.results], [p["text"] for p in s.parts]) for s in said]
    [('assistant', ['t1'], [], []), ('tool', [], ['t1'], []), ('tool', [], [], ['[result of a tool call not in this request: gone]\\nb.txt'])]
    """
    out = [_said(m) for m in messages]
    answered: set[tuple[int, str]] = set()  # (the calling message, call id): its result follows it
    paired: set[tuple[int, int]] = set()  # (message, result): the result of a call just before it
    open_calls: dict[str, int] = {}  # the calls still waiting for their results, and where they were made
    for i, s in enumerate(out):
        if s.role == "assistant":
            open_calls = {c.id: i for c in s.calls}
            continue
        for k, (cid, _content, _error) in enumerate(s.results):
            if cid in open_calls:
                answered.add((open_calls.pop(cid), cid))
                paired.add((i, k))
        if s.parts or not s.results:  # anything but results between a call and its result: too late for it
            open_calls = {}
    held: list[dict[str, Any]] = []  # what unpaired results say, held to the end of the run of results they are in
    for i, s in enumerate(out):
        for c in [c for c in s.calls if (i, c.id) not in answered]:
            s.calls.remove(c)
            s.parts.append({"type": "text", "text": f"[tool call {c.name} {c.arguments}]"})
        said_more = bool(s.parts) or not s.results  # the run of results ends with this message
        for k, r in list(enumerate(s.results)):
            if (i, k) not in paired:
                s.results.remove(r)
                held.append({"type": "text", "text": f"[result of a tool call not in this request: {r[0]}]\n{render(r[1])}"})
        run_ends = said_more or i + 1 == len(out) or not out[i + 1].results or out[i + 1].role == "assistant"
        if held and run_ends:  # after every result of the run: no text comes between a call and its result
            s.parts.extend(held)
            held = []
    return out


def render(content: object) -> str:
    """Content as text for an API that has no place for a part: text as it is, an image or a document as a
    label, any other part as its type and JSON (at most ``PART_CHARS``).

    >>> render([{"type": "text", "text": "Two files:"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}])
    'Two files:\\n[image/png image]'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, (list, tuple)):
        return str(content)
    pieces = []
    for part in content:
        text = _text_of(part)
        if text is not None:
            pieces.append(text)
    return "\n".join(p for p in pieces if p)


def _text_of(part: object) -> str | None:
    """A part as text (None: a part that says nothing to another model, thinking)."""
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return str(part)
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text") or "")
    if kind in ("thinking", "redacted_thinking", "reasoning"):
        return None
    if kind == "refusal":
        return f"[refused: {part.get('refusal')}]"
    if kind in ("image", "image_url"):
        return f"[{_media(part) or 'an'} image]"
    if kind == "document":
        source = _table(part.get("source"))
        if source.get("type") == "text" and isinstance(source.get("data"), str):
            return source["data"]
        return f"[{source.get('media_type') or 'a'} document{': ' + str(part['title']) if part.get('title') else ''}]"
    if kind == "tool_result":
        return f"[tool result {part.get('tool_use_id')}]\n{render(part.get('content'))}"
    text = json.dumps(part, ensure_ascii=False)
    return f"[{kind}] " + (text if len(text) <= PART_CHARS else text[:PART_CHARS] + "…")


def _media(part: Mapping[str, Any]) -> str | None:
    source = part.get("source")
    if isinstance(source, Mapping) and isinstance(source.get("media_type"), str):
        return source["media_type"]
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, Mapping) else url
    if isinstance(url, str) and url.startswith("data:"):
        return url[5:].split(";", 1)[0] or None
    return None


# -- Chat Completions ---------------------------------------------------------------


def _openai_part(part: Mapping[str, Any], role: str) -> dict[str, Any] | None:
    """A part as Chat Completions takes it (images only from a user), else as text; None: not sent."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": str(part.get("text") or "")}
    if kind == "refusal" and role == "assistant":
        return {"type": "refusal", "refusal": part.get("refusal")}
    if role == "user" and kind in ("image_url", "input_audio", "file"):
        return dict(part)
    if role == "user" and kind == "image":
        source = _table(part.get("source"))
        if source.get("type") == "base64":
            return {"type": "image_url", "image_url": {"url": f"data:{source.get('media_type')};base64,{source.get('data')}"}}
        if source.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": source.get("url")}}
    text = _text_of(part)
    return None if text is None else {"type": "text", "text": text}


def _content(parts: list[dict[str, Any]], plain: bool) -> str | list[dict[str, Any]]:
    """Parts as content: one string where the message had one (``plain``) or its parts are all text
    that was said in place of something, else the parts as they are (each one the API takes)."""
    if plain and all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts if p["text"])
    return parts


def _tool_content(body: object) -> str | list[dict[str, Any]]:
    """A result's content as a ``tool`` message takes it: text, or a list of text parts as given."""
    if isinstance(body, list) and body and all(isinstance(p, Mapping) and p.get("type") == "text" for p in body):
        return [{"type": "text", "text": str(p.get("text") or "")} for p in body]
    return render(body)


def openai_messages(messages: Iterable[Mapping[str, Any]], tools: bool = True) -> list[dict[str, Any]]:
    """convlab messages as the Chat Completions API takes them, whatever shape the log wrote them in.

    Roles, text and ``name`` go as they are; a tool call (``tool_calls``, or an Anthropic ``tool_use`` part)
    goes in ``tool_calls`` (its arguments as JSON text), its result (a ``tool`` message, or ``tool_result``
    parts) as a ``tool`` message; an Anthropic image as an ``image_url`` (from a user: the API takes images
    from no one else); thinking is left out (the API takes no reasoning back); any other part the API has no
    place for is said in text (``render``), as is a call or a result whose other half the request does not hold
    (``read``). Ids and ``metadata`` stay in convlab. ``tools=False`` says the calls and results in text too: a
    server whose chat template knows no tools (``LocalChat``'s SmolLM2) gets plain text messages only.

    >>> openai_messages([{"id": "u1", "role": "user", "content": "hi", "name": "ann"},
    ...                  {"id": "e1", "role": "assistant", "content": "", "metadata": {"model": "m"},
    ...                   "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ...                  {"id": "u2", "role": "tool", "content": "42", "tool_call_id": "c1"}])
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'user', 'content': 'hi', 'name': 'ann'},
     {'role': 'assistant', 'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{}'}}]},
     {'role': 'tool', 'content': '42', 'tool_call_id': 'c1'}]
    >>> openai_messages([{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
    ...                                                   {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
    ...                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.txt"}]}]}],
    ...                 tools=False)
    [{'role': 'assistant', 'content': '[tool call Bash {"command": "ls"}]'}, {'role': 'user', 'content': '[result of tool call t1 (Bash)]\\na.txt'}]
    """
    said = read(messages)
    names = {c.id: c.name for s in said for c in s.calls}
    out: list[dict[str, Any]] = []
    for s in said:
        role = s.role if s.role in ("system", "user", "assistant", "developer") else "user"
        if not tools:  # every part as text: a template that knows no tools knows no images either
            parts = [{"type": "text", "text": t} for t in (_text_of(p) for p in s.parts) if t is not None]
        else:
            parts = [p for p in (_openai_part(p, role) for p in s.parts) if p is not None]
        if not tools:
            parts += [{"type": "text", "text": f"[tool call {c.name} {c.arguments}]"} for c in s.calls]
            parts += [{"type": "text", "text": f"[result of tool call {cid} ({names.get(cid, 'a tool')})]\n{render(body)}"}
                      for cid, body, _ in s.results]
            if parts or s.plain:
                out.append({"role": role, "content": _content(parts, True)})
            continue
        out += [{"role": "tool", "content": _tool_content(body), "tool_call_id": cid} for cid, body, _ in s.results]
        if s.role == "tool" or (s.results and not parts):
            continue
        msg: dict[str, Any] = {"role": role, "content": _content(parts, s.plain or s.role == "tool")}
        if role == "assistant" and s.calls and msg["content"] in ("", []):
            msg["content"] = None
        if s.name is not None:
            msg["name"] = s.name
        if role == "assistant" and s.calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in s.calls]
        if msg.get("tool_calls") or (parts if role == "assistant" else parts or s.plain):
            out.append(msg)
    return out


def text_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Plain text messages (``openai_messages(..., tools=False)``): every call, result and part said in text."""
    return openai_messages(messages, tools=False)


# -- Anthropic's Messages API ---------------------------------------------------------


def _anthropic_part(part: Mapping[str, Any], role: str) -> dict[str, Any] | None:
    """A part as the Messages API takes it, else as text; None: not sent (empty text, unsigned thinking)."""
    kind = part.get("type")
    if kind == "text":
        text = str(part.get("text") or "")
        return {**part, "text": text} if text.strip() else None  # the API refuses a text block of whitespace
    if kind == "thinking":
        return dict(part) if role == "assistant" and part.get("signature") else None  # the API takes only its own, signed
    if kind == "redacted_thinking":
        return dict(part) if role == "assistant" and part.get("data") else None
    if kind in ("image", "document") and role == "user":
        return dict(part)
    if kind == "image_url" and role == "user":
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) else url
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            media, data = url[5:].split(";base64,", 1)
            return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
        if isinstance(url, str):
            return {"type": "image", "source": {"type": "url", "url": url}}
    if kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
                "citations", "search_result") and role == "assistant":
        return dict(part)  # the API's own blocks, as it gave them
    said = _text_of(part)
    return {"type": "text", "text": said} if said and said.strip() else None


#: A failed tool call's result that said nothing: the API refuses an empty ``tool_result`` with ``is_error``.
NO_OUTPUT = "[the tool failed with no output]"

#: What a message that says nothing is sent as when it is the last one, the turn the model answers (leaving it
#: out would end the request on the assistant's turn, or leave no message at all, which the API refuses).
EMPTY = "[an empty message]"


def _result(body: object) -> str | list[dict[str, Any]]:
    """A tool result's content as ``tool_result`` takes it: text, or text and image blocks ("" for whitespace)."""
    if isinstance(body, str) or body is None:
        return body if body and body.strip() else ""
    parts = body if isinstance(body, (list, tuple)) else [body]
    blocks = [b for b in (_anthropic_part(p, "user") if isinstance(p, Mapping) else {"type": "text", "text": str(p)}
                          for p in parts) if b is not None and b.get("type") in ("text", "image", "document")]
    return blocks or ""


def anthropic_messages(messages: Iterable[Mapping[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """convlab messages as the Messages API takes them: ``(system, messages)``, whatever shape the log wrote them in.

    - every ``system`` message goes to the top-level ``system``, in order (one string stays a string;
      otherwise a list of text blocks);
    - text, images (an ``image_url`` becomes an ``image`` block) and the API's own blocks go as they are;
      thinking only as the API gave it (signed), never someone else's; what the API has no place for is
      said in text (``render``);
    - a tool call (``tool_calls``, or a ``tool_use`` part: once per id) is a ``tool_use`` block (JSON
      arguments parsed back into ``input``), its result a ``tool_result`` block; consecutive results share
      one user turn; a call or a result whose other half the request does not hold is said in text (``read``);
    - ids, ``name`` and ``metadata`` have no place in this API and stay in convlab;
    - the API refuses a text block of whitespace alone ("text content blocks must contain non-whitespace
      text": a Claude Code reply's ``"\\n\\n"`` between its thinking and its call), an empty message, an empty
      ``tool_result`` marked ``is_error`` and a last assistant message ending in whitespace: such a text block
      is left out (a system of whitespace too), a message left with nothing is left out, except the last one,
      which is sent as ``EMPTY`` (the model answers it), a failed call's empty result says ``NO_OUTPUT``, and the
      last text of a request that ends on the assistant's turn loses its trailing whitespace.

    >>> system, msgs = anthropic_messages([
    ...     {"id": "s", "role": "system", "content": "Be brief."},
    ...     {"id": "u1", "role": "user", "content": "Weather in Paris?"},
    ...     {"id": "e1", "role": "assistant", "content": "",
    ...      "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    ...     {"id": "u2", "role": "tool", "content": "18C", "tool_call_id": "toolu_1"}])
    >>> system
    'Be brief.'
    >>> msgs  # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'user', 'content': 'Weather in Paris?'},
     {'role': 'assistant', 'content': [{'type': 'tool_use', 'id': 'toolu_1', 'name': 'get_weather', 'input': {'city': 'Paris'}}]},
     {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 'toolu_1', 'content': '18C'}]}]
    """
    system: list[Any] = []
    system_given: list[Any] = []
    out: list[dict[str, Any]] = []
    previous_result = False
    last: Said | None = None  # the last message, when it was left out for saying nothing
    for s in read(messages):
        if s.role == "system":
            system_given.append(s.parts[0]["text"] if len(s.parts) == 1 and s.parts[0].get("type") == "text" else s.parts)
            system.extend(b for b in (_anthropic_part(p, "user") for p in s.parts) if b is not None and b["type"] == "text")
            previous_result = False
            continue
        role = "assistant" if s.role == "assistant" else "user"
        results = [{"type": "tool_result", "tool_use_id": cid, "content": _result(body) or (NO_OUTPUT if error else ""),
                    **({"is_error": True} if error else {})} for cid, body, error in s.results]
        blocks = [b for b in (_anthropic_part(p, role) for p in s.parts) if b is not None]
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input()} for c in s.calls]
        last = None if results or blocks else s
        if results:
            if previous_result:
                out[-1]["content"].extend(results)
            else:
                out.append({"role": "user", "content": results})
            previous_result = True
            if blocks:  # text that came with the results: after them, in the same turn
                out[-1]["content"].extend(blocks)
                previous_result = False
            continue
        previous_result = False
        if not blocks:
            continue
        simple = s.plain and not s.calls and len(blocks) == 1 and set(blocks[0]) == {"type", "text"}
        out.append({"role": role, "content": blocks[0]["text"] if simple else blocks})
    if (last is not None and last.role != "assistant") or not out:  # the turn the model answers said nothing
        out.append({"role": "user", "content": EMPTY})
    elif out[-1]["role"] == "assistant":  # the request ends on the assistant's turn: no trailing whitespace
        _trim_end(out[-1])
    if len(system_given) == 1 and isinstance(system_given[0], str):
        return (system_given[0] if system_given[0].strip() else None), out
    return system or None, out


def _trim_end(message: dict[str, Any]) -> None:
    """``message`` without trailing whitespace in its last text block (the API refuses it in a final assistant
    turn; every text block has more than whitespace, so none is emptied)."""
    if isinstance(message["content"], str):
        message["content"] = message["content"].rstrip()
    elif message["content"][-1].get("type") == "text":
        message["content"][-1] = {**message["content"][-1], "text": message["content"][-1]["text"].rstrip()}
