"""Find anything in a tree: every message that matches a text, a role, a tool, as a DataFrame.

One pass over the nodes in creation order; a message's searchable text is built once (its text
parts as written, every other part and its tool calls as JSON with their characters as they are,
so a command, a file name or a word in another script is found where it sits). The branch of a
match is the one ``frame`` gives (``frames.branches``: the lane it is drawn in), so a row of
``find`` names the same branch a row of ``frame`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ExploreError
from ..frames import branches
from ..text import brief
from ..toolcalls import answers, calls
from ..tree import ROLES, Tree, ancestors, path_to
from .sources import Source, table, tree_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["find", "FIND_COLUMNS", "searchable", "tools_of", "call_names", "SNIPPET"]

#: The columns of ``find``, in order.
FIND_COLUMNS = ("id", "role", "kind", "seq", "depth", "branch", "on_path", "label", "match", "path")

#: What a text to find becomes: a message's searchable text -> the span found in it (None: not there).
Matcher = Callable[[str], "tuple[int, int] | None"]

#: Characters of context a ``match`` shows on each side of what was found.
SNIPPET = 40


def searchable(node: Mapping[str, Any]) -> str:
    """The text ``find`` searches in a message: its text parts as written, each other part (and each tool
    call) as JSON that keeps its characters.

    >>> searchable({"content": [{"type": "text", "text": "Ça va"}, {"type": "tool_use", "name": "Bash", "input": {"command": "ls é"}}]})
    'Ça va\\n{"type": "tool_use", "name": "Bash", "input": {"command": "ls é"}}'
    """
    content = node.get("content")
    if content.__class__ is str and not node.get("tool_calls"):
        return content
    if isinstance(content, str):
        pieces = [content]
    else:
        pieces = [p["text"] if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
                  else json.dumps(p, ensure_ascii=False, default=str) for p in content or ()]
    if node.get("tool_calls"):
        pieces.append(json.dumps(node["tool_calls"], ensure_ascii=False, default=str))
    return "\n".join(pieces)


def tools_of(node: Mapping[str, Any], named: Mapping[str, str | None] | None = None) -> set[str]:
    """The tools a message calls, or whose result it is: a result's own ``name`` or ``metadata.tool_name`` (pi's),
    and the name of each call it answers (``convlab.toolcalls.answers``: a ``tool`` message's ``tool_call_id``, a
    user message's ``tool_result`` parts), looked up in ``named`` (call id -> tool name: ``call_names``).

    >>> sorted(tools_of({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}))
    ['Bash']
    >>> tools_of({"role": "tool", "content": "ok", "metadata": {"tool_name": "read"}})
    {'read'}
    >>> tools_of({"role": "tool", "tool_call_id": "t1", "content": "ok"}, {"t1": "Bash"})
    {'Bash'}
    """
    names = {n for n in calls(node).values() if isinstance(n, str)}
    if node.get("role") == "tool":
        meta = node.get("metadata") or {}
        names |= {n for n in (node.get("name"), meta.get("tool_name") if isinstance(meta, Mapping) else None) if isinstance(n, str)}
    if named:
        names |= {n for n in map(named.get, answers(node)) if isinstance(n, str)}
    return names


def call_names(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str | None]:
    """Every tool call of ``nodes``, ``{call id: tool name}``, in one pass: what names a result that carries only its
    call's id (Claude Code's, Codex's, Gemini CLI's, Copilot CLI's logs). A call id logged twice (a copy of a call
    after a compaction) names the same call; the later one is kept.

    >>> call_names([{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
    ...             {"role": "tool", "tool_call_id": "t1", "content": "ok"}])
    {'t1': 'Bash'}
    """
    named: dict[str, str | None] = {}
    for node in nodes:
        if node.get("role") == "assistant":
            named.update(calls(node))
    return named


def _roles(role: str | Iterable[str] | None) -> set[str] | None:
    if role is None:
        return None
    wanted = {role} if isinstance(role, str) else set(role) if isinstance(role, Iterable) else None
    if wanted is None or not all(isinstance(r, str) for r in wanted):
        raise ExploreError(f"role: a role or a list of roles ({', '.join(ROLES)}) was expected, got {role!r}")
    unknown = sorted(wanted - set(ROLES))
    if unknown:
        raise ExploreError(f"role: {unknown[0]!r} is not a role (one of {', '.join(ROLES)})")
    return wanted


def _matcher(text: str | None, regex: bool) -> Matcher | None:
    """A function from a message's searchable text to the span found (None: not found)."""
    if text is None:
        return None
    if not isinstance(text, str) or not text:
        raise ExploreError(f"text: a non-empty string was expected, got {text!r}")
    if regex:
        try:
            pattern = re.compile(text)
        except re.error as err:
            raise ExploreError(f"text: {text!r} is not a regular expression ({err})") from None

        def found(s: str) -> tuple[int, int] | None:
            m = pattern.search(s)
            return None if m is None else m.span()
        return found
    needle = text.casefold()

    def found_text(s: str) -> tuple[int, int] | None:
        folded = s.casefold()
        at = folded.find(needle)
        if at < 0:
            return None
        if len(folded) != len(s):  # casefolding changed lengths (ß -> ss): show the start of the message
            return 0, min(len(s), len(text))
        return at, at + len(text)
    return found_text


def snippet(text: str, span: tuple[int, int]) -> str:
    """What was found with ``SNIPPET`` characters either side, on one line, an ellipsis where it is cut.

    >>> snippet("x" * 100 + "needle" + "y" * 100, (100, 106))
    '…xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxneedleyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy…'
    """
    start, end = max(0, span[0] - SNIPPET), min(len(text), span[1] + SNIPPET)
    return ("…" if start else "") + brief(text[start:end]) + ("…" if end < len(text) else "")


def find(source: Source, text: str | None = None, *, role: str | Iterable[str] | None = None, tool: str | None = None,
         regex: bool = False) -> pd.DataFrame:
    """Every message of ``source`` (a Session, a Conversation, a Replay) that matches, one row each, in
    creation order. Every condition given must hold; none given matches every message.

    - ``text``: found in the message's text, case-insensitive (its text parts, and each other part and
      tool call as JSON); ``regex=True``: ``text`` is a Python regular expression, searched as written;
    - ``role``: a role or a list of them; ``tool``: the name of a tool the message calls or answers.

    Columns: ``id``, ``role``, ``kind``, ``seq``, ``depth`` (1 for a top-level message), ``branch`` (the
    lane it is drawn in, as ``convlab.frame``'s column), ``on_path`` (on the active path, root -> head),
    ``label`` (its label, None without), ``match`` (what was found, with some context, on one line;
    the start of the message when no text was asked) and ``path`` (the ids from the root to it).

    >>> import convlab
    >>> s = convlab.Session()
    >>> _ = s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "weather in NYC?"}})
    >>> _ = s.submit({"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "weather in LA?"}]})
    >>> convlab.find(s, "weather", role="user")[["id", "role", "branch", "on_path"]].values.tolist()
    [['u1', 'user', 0, False], ['e2', 'user', 1, True]]
    >>> convlab.find(s, r"echo: .* (NYC|LA)", regex=True, role="assistant")[["id", "match", "path"]].values.tolist()
    [['e1', 'echo: weather in NYC?', ('u1', 'e1')], ['e3', 'echo: weather in LA?', ('e2', 'e3')]]
    """
    tree = tree_of(source)
    found = _matcher(text, bool(regex))
    roles = _roles(role)
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise ExploreError(f"tool: a tool's name was expected, got {tool!r}")
    rows = _rows(tree, found, roles, tool)
    return table(rows, FIND_COLUMNS, {"seq": "int64", "depth": "int64", "branch": "int64", "on_path": "bool"})


def _rows(tree: Tree, found: Matcher | None, roles: set[str] | None, tool: str | None) -> list[tuple[Any, ...]]:
    nodes = tree.nodes_in_order()
    named = call_names(nodes) if tool is not None else None
    hits: list[tuple[dict[str, Any], str]] = []
    for node in nodes:
        if roles is not None and node["role"] not in roles:
            continue
        if tool is not None and tool not in tools_of(node, named):
            continue
        if found is None:
            hits.append((node, brief(node["content"])[: 2 * SNIPPET]))
            continue
        s = searchable(node)
        span = found(s)
        if span is not None:
            hits.append((node, snippet(s, span)))
    if not hits:
        return []
    by_id = {a["id"]: a for a in nodes}
    path = path_to(by_id, tree.head)  # the active path
    on_path = set(path)
    ids = [node["id"] for node, _ in hits]
    branch = branches(nodes, path, of=ids)
    paths = paths_to(by_id, ids)
    labels = tree.labels
    out = []
    for node, match in hits:
        nid = node["id"]
        p = paths[nid]
        out.append((nid, node["role"], node.get("kind") or "message", node["seq"], len(p), branch[nid], nid in on_path,
                    labels.get(nid), match, p))
    return out


def paths_to(nodes: Mapping[str, Mapping[str, Any]], ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The ids root -> each of ``ids`` (``nodes``: id -> node, as ``convlab.tree.path_to`` reads them), each walk up
    (``convlab.tree.ancestors``) stopping at the first message a walk before it passed: a path is the part of an
    earlier one above that message plus the new ids (a slice and a join, at C speed). The walks together pass each
    message at most once, so a search with thousands of matches down one long chain (an agent's session) walks the
    chain once, not once a match. (The paths themselves hold a reference per message each: the ``path`` column.)

    >>> t = Tree()
    >>> for nid, parent in [("u1", None), ("a1", "u1"), ("u2", "a1"), ("a2", "u1")]:
    ...     _ = t.add({"id": nid, "role": "user", "content": ""}, parent)
    >>> paths_to(t.graph.nodes, ["a1", "u2", "a2"])
    {'a1': ('u1', 'a1'), 'u2': ('u1', 'a1', 'u2'), 'a2': ('u1', 'a2')}
    """
    out: dict[str, tuple[str, ...]] = {}
    # a message walked past -> the id whose path holds it, and its index there (two flat maps, not a pair a
    # message: a long chain would make the collector walk the paths already built once per thousand pairs)
    owner: dict[str, str] = {}
    index: dict[str, int] = {}
    for nid in ids:
        if nid in out:
            continue
        walked: list[str] = []
        for n in ancestors(nodes, nid):
            if n in owner:
                above, at = out[owner[n]], index[n]
                walked.reverse()
                p = (above if at + 1 == len(above) else above[: at + 1]) + tuple(walked)  # (one copy, not two, down a chain)
                break
            walked.append(n)
        else:
            walked.reverse()
            p = tuple(walked)
        out[nid] = p
        for k, w in enumerate(walked, len(p) - len(walked)):
            owner[w] = nid
            index[w] = k
    return out
