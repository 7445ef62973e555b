"""Deterministic inputs for the benchmarks: texts, conversations and session logs.

Everything here is a pure function of its parameters (a seeded
``random.Random``), so two runs measure the same bytes. Text is cut from one
pre-generated buffer of prose, code, JSON and log lines: an agent session of
a million messages (gigabytes of content) is generated in seconds that way,
and every message is still distinct (each starts with its own index).

An agent session is a *script* of turns. ``write_log`` turns a script into the
JSONL events ``Session(log=...)`` writes (docs/wire.md) without running the
engine; ``drive`` runs the same script through a live ``convlab.Session``, so
a small script checks the generator (``check_generator``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

WORDS_SEED = 8

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "to", "sha", "vi", "den", "par", "quo", "ix", "zen", "bel", "cor", "dum", "fra", "gil"]
_CODE = [
    "def {w}({v}):\n    return {v} + 1\n",
    "for {v} in range(10):\n    print({v}, '{w}')\n",
    "if {v} is None:\n    raise ValueError('{w}')\n",
    "class {W}:\n    {v}: int = 0\n",
    "import {w}\n",
]


@lru_cache(maxsize=1)
def text_buffer(size: int = 1 << 22) -> str:
    """About ``size`` characters of mixed prose, code, JSON and log lines (fixed seed)."""
    rng = random.Random(WORDS_SEED)
    vocab = ["".join(rng.choices(_SYLLABLES, k=rng.randint(1, 4))) for _ in range(3000)]
    vocab += ["the", "a", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as", "this", "file", "test", "error"] * 40
    chunks: list[str] = []
    total = 0
    while total < size:
        kind = rng.random()
        if kind < 0.55:  # prose
            words = rng.choices(vocab, k=rng.randint(20, 120))
            s = " ".join(words).capitalize() + ". "
            if rng.random() < 0.2:
                s += "\n\n"
        elif kind < 0.75:  # code
            s = "".join(
                rng.choice(_CODE).format(w=rng.choice(vocab), W=rng.choice(vocab).capitalize(), v=rng.choice(vocab)[:3] or "x")
                for _ in range(rng.randint(2, 8))
            )
        elif kind < 0.9:  # json
            s = json.dumps({rng.choice(vocab): [rng.randint(0, 10**6), rng.choice(vocab), rng.random()] for _ in range(rng.randint(2, 10))}) + "\n"
        else:  # log lines
            s = "".join(
                f"2025-01-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00 "
                f"{rng.choice(['INFO', 'WARN', 'DEBUG', 'ERROR'])} {rng.choice(vocab)}: {' '.join(rng.choices(vocab, k=8))}\n"
                for _ in range(rng.randint(3, 12))
            )
        chunks.append(s)
        total += len(s)
    return "".join(chunks)


def text(rng: random.Random, n: int, tag: str) -> str:
    """A distinct text of about ``n`` characters: ``tag`` then a cut of the buffer."""
    buf = text_buffer()
    start = rng.randrange(0, len(buf) - n - 1)
    return f"[{tag}] " + buf[start:start + n]


def texts(count: int, *, seed: int = 1, low: int = 40, high: int = 4000) -> list[str]:
    """``count`` distinct texts with sizes spread log-uniformly in [low, high] characters."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        n = int(low * (high / low) ** rng.random())
        out.append(text(rng, n, f"t{i}"))
    return out


# ---------------------------------------------------------------------------
# A linear agent conversation (the count and the peer)
# ---------------------------------------------------------------------------
def agent_messages(n: int, *, seed: int = 2) -> list[dict[str, Any]]:
    """A linear agent conversation of ``n`` messages: user, then rounds of
    assistant tool call + tool result, then a final assistant answer. Model
    replies carry ``usage`` (what the provider reported reading)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    chars = 0
    k = 0
    while len(out) < n:
        # one turn
        msg = {"id": f"u{len(out)}", "role": "user", "content": text(rng, rng.randint(60, 600), f"u{len(out)}")}
        out.append(msg)
        chars += len(msg["content"])
        rounds = rng.randint(0, 4)
        for r in range(rounds + 1):
            if len(out) >= n:
                break
            final = r == rounds
            content = text(rng, rng.randint(200, 1500) if final else rng.randint(80, 300), f"a{len(out)}")
            call = None if final else {"name": "run", "args": {"cmd": content[:40]}, "id": f"call{len(out)}"}
            if call is not None:
                content += "\n" + json.dumps({"tool": call["name"], "args": call["args"]})
            usage = {"input_tokens": (chars + 3) // 4, "output_tokens": (len(content) + 3) // 4}
            msg = {"id": f"a{len(out)}", "role": "assistant", "content": content, "usage": usage}
            if call is not None:
                msg["tool_call"] = call
            out.append(msg)
            chars += len(content)
            if call is not None and len(out) < n:
                k += 1
                res = {"id": f"r{len(out)}", "role": "tool", "content": text(rng, rng.randint(800, 4000), f"r{len(out)}"), "tool_call_id": call["id"]}
                out.append(res)
                chars += len(res["content"])
    return out[:n]


# ---------------------------------------------------------------------------
# Branching trees (view matching, the tree view)
# ---------------------------------------------------------------------------
def build_tree(n: int, *, seed: int = 3, path_len: int = 100, content: int = 64):
    """A ``convlab.tree.Tree`` of ``n`` nodes: branches of up to ``path_len``
    messages forking off earlier ones. Returns ``(tree, deepest_path_ids)``.

    Built with ``Tree.add`` (what the engine and the importers do) and small
    contents: view matching reads ids and parents only.
    """
    from convlab.tree import Tree

    rng = random.Random(seed)
    tree = Tree()
    depth: dict[str, int] = {}
    ids: list[str] = []
    roles = ("user", "assistant")
    filler = "x" * content
    i = 0
    while i < n:
        if ids and rng.random() < 0.97:
            fork = ids[rng.randrange(len(ids))]
        else:
            fork = None
        d = depth[fork] if fork is not None else 0
        length = rng.randint(1, max(1, path_len - d))
        parent = fork
        for _ in range(length):
            if i >= n:
                break
            nid = f"n{i}"
            tree.add({"id": nid, "role": roles[d % 2], "content": filler}, parent)
            d += 1
            depth[nid] = d
            ids.append(nid)
            parent = nid
            i += 1
    deepest = max(ids, key=lambda x: depth[x])
    tree.head = deepest
    return tree, tree.path_ids(deepest)


# ---------------------------------------------------------------------------
# Agent session scripts -> session logs
# ---------------------------------------------------------------------------
@dataclass
class Turn:
    """One turn of a script.

    ``kind``: ``message`` (a user message under the head, ``client.message``),
    ``edit`` (``client.messages``: the path to ``fork``, an assistant message,
    plus a new user message) or ``regen`` (``client.messages``: the path to
    ``fork``, a user message; the model answers again).
    ``steps``: per model call ``(reply content, usage, tool result or None)``.
    """

    kind: str
    fork: str | None
    user: dict[str, Any] | None
    steps: list[tuple[str, dict[str, int], dict[str, Any] | None]] = field(default_factory=list)
    gap: float = 60.0


LATENCY = 2.0


def script(messages: int, *, path_len: int = 100, seed: int = 4, tool_low: int = 1000, tool_high: int = 4000) -> list[Turn]:
    """An agent session of about ``messages`` messages across many branches,
    ending on an active path of exactly ``path_len`` messages.

    Attempts fork off earlier ones (an edited user message, or a regenerated
    reply) and run agent turns: a user message, rounds of a tool call and its
    result (``tool_low``..``tool_high`` characters), a final answer.
    """
    if path_len % 2:
        raise ValueError("path_len must be even (turns end on an assistant message)")
    rng = random.Random(seed)
    turns: list[Turn] = []
    parent: dict[str, str | None] = {}
    depth: dict[str, int] = {}
    role: dict[str, str] = {}
    ends: list[str] = []  # assistant messages that end a turn (edit fork points)
    users: list[str] = []  # user messages (regen fork points)
    count = 0
    e = 0
    u = 0
    r = 0
    head: str | None = None

    def add(nid: str, rl: str, par: str | None) -> None:
        nonlocal count
        parent[nid] = par
        depth[nid] = (depth[par] if par is not None else 0) + 1
        role[nid] = rl
        count += 1

    def run_steps(under: str | None, rounds: int, t: Turn) -> str:
        nonlocal e, r
        cur = under
        chars = 0
        for k in range(rounds + 1):
            final = k == rounds
            e += 1
            aid = f"e{e}"
            content = text(rng, rng.randint(200, 1500) if final else rng.randint(80, 300), aid)
            if not final:
                content += "\n" + json.dumps({"tool": "run", "args": {"cmd": content[5:40]}, "id": f"call{e}"})
            usage = {"input_tokens": 1000 + chars // 4 + depth.get(cur, 0) * 300 if cur else 1000, "output_tokens": (len(content) + 3) // 4}
            add(aid, "assistant", cur)
            cur = aid
            result = None
            if not final:
                r += 1
                rid = f"r{r}"
                result = {"id": rid, "role": "tool", "content": text(rng, rng.randint(tool_low, tool_high), rid), "tool_call_id": f"call{e}"}
                add(rid, "tool", cur)
                cur = rid
                chars += len(result["content"])
            t.steps.append((content, usage, result))
            chars += len(content)
        return cur

    def new_user() -> dict[str, Any]:
        nonlocal u
        u += 1
        uid = f"u{u}"
        return {"id": uid, "role": "user", "content": text(rng, rng.randint(60, 600), uid)}

    last_attempt = False
    while True:
        if not last_attempt and count >= messages - path_len * 3 // 2:
            last_attempt = True
            # the final attempt forks shallow so that it can run to path_len
            shallow = [x for x in ends if depth[x] <= path_len // 2] if ends else []
            fork_end = rng.choice(shallow) if shallow and rng.random() < 0.8 else None
            target = path_len
            start_kind, start = ("edit", fork_end) if fork_end is not None else ("message", None)
        elif not last_attempt:
            target = rng.randrange(10, path_len + 1, 2)
            pick = rng.random()
            if ends and pick < 0.6:
                start_kind, start = "edit", rng.choice(ends)
            elif users and pick < 0.9:
                start_kind, start = "regen", rng.choice(users)
            else:
                start_kind, start = "message", None
        # one attempt: the forking turn, then turns under the head up to target depth
        first = True
        while True:
            d = depth[head] if head is not None else 0
            if not first and d >= target:
                break
            if first and start_kind == "regen":
                if depth[start] >= target - 1:
                    target = depth[start] + 1 + 2 * rng.randint(0, 3)
                t = Turn("regen", start, None, gap=rng.choice([5.0, 30.0, 600.0]))
                room = (target - depth[start] - 1) // 2
                head = run_steps(start, min(rng.randint(0, 4), room), t)
            else:
                if first and start_kind in ("edit", "message"):
                    # a new branch: under an earlier answer, or a new top-level message
                    fork = start if start_kind == "edit" else None
                    under = fork
                    d = depth[fork] if fork is not None else 0
                    if d + 2 > target:
                        target = d + 2
                    kind = "edit"
                else:
                    fork, under, kind = None, head, "message"
                user = new_user()
                add(user["id"], "user", under)
                users.append(user["id"])
                room = (target - d - 2) // 2
                t = Turn(kind, fork, user, gap=rng.choice([5.0, 30.0, 600.0]))
                head = run_steps(user["id"], min(rng.randint(0, 4), room), t)
            ends.append(head)
            turns.append(t)
            first = False
            if last_attempt and depth[head] >= target:
                break
        if last_attempt:
            break
    return turns


def _path(parent: dict[str, str | None], nid: str | None) -> list[str]:
    out = []
    while nid is not None:
        out.append(nid)
        nid = parent[nid]
    out.reverse()
    return out


def write_log(turns: list[Turn], path: str | os.PathLike, *, agent: str = "bot") -> dict[str, Any]:
    """Write the session log ``Session(log=path)`` would write for ``turns``,
    event for event (``check_generator`` compares it with a live session's).

    Returns ``{"messages", "events", "head", "bytes"}``.
    """
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    seq = 0
    clock = 0.0
    nseq = 0
    llm = 0
    head: str | None = None
    parent: dict[str, str | None] = {}
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        w = f.write

        def emit(ev: dict[str, Any]) -> None:
            w(dumps(ev))
            w("\n")

        def node(nid: str, par: str | None, rl: str, content: str, tid: str, usage=None, tool_call_id=None) -> dict:
            nonlocal nseq, head
            nseq += 1
            n = {"id": nid, "parent": par, "role": rl, "content": content, "seq": nseq, "time": clock, "turn_id": tid,
                 "copied_from": None, "kind": "message", "usage": usage, "state": None, "replaces": None}
            if tool_call_id is not None:
                n["tool_call_id"] = tool_call_id
            parent[nid] = par
            head = nid
            return n

        seq += 1
        emit({"seq": seq, "time": clock, "type": "session.started", "agent": agent, "config": {}})
        for i, t in enumerate(turns, start=1):
            clock += t.gap
            tid = f"t{i}"
            if t.kind == "regen":
                trigger = {"type": "client.messages", "new_from": len(_path(parent, t.fork))}
                if head != t.fork:
                    seq += 1
                    emit({"seq": seq, "time": clock, "type": "head.moved", "turn_id": tid, "from": head, "to": t.fork})
                    head = t.fork
                trigger_turn = trigger
            elif t.kind == "edit":
                trigger = {"type": "client.messages", "new_from": len(_path(parent, t.fork))}
                trigger_turn = trigger
            else:
                trigger = {"type": "client.message", "message_ids": [t.user["id"]]}
                trigger_turn = {"type": "client.message", "message_ids": []}
            turn = {"id": tid, "status": "running", "trigger": trigger_turn, "queue": None, "client_state": {},
                    "messages": [], "created": clock, "started": None, "ended": None, "error": None}
            seq += 1
            emit({"seq": seq, "time": clock, "type": "turn.started", "turn_id": tid, "trigger": trigger, "turn": turn})
            if t.user is not None:
                under = t.fork if t.kind == "edit" else head
                seq += 1
                emit({"seq": seq, "time": clock, "type": "message.new", "turn_id": tid,
                      "message": node(t.user["id"], under, "user", t.user["content"], tid)})
            seq += 1
            emit({"seq": seq, "time": clock, "type": "decision.requested", "turn_id": tid,
                  "decision": {"type": "turn.start", "turn_id": tid, "trigger": trigger, "head": head, "state": {}, "client_state": {}}})
            seq += 1
            emit({"seq": seq, "time": clock, "type": "decision.answered", "turn_id": tid, "actions": [{"type": "llm.call"}]})
            for content, usage, result in t.steps:
                llm += 1
                cid = f"llm-{llm}"
                aid = f"e{llm}"  # a streamed call announces its reply's id (docs/protocol.md, rev 4)
                seq += 1
                emit({"seq": seq, "time": clock, "type": "llm.started", "turn_id": tid, "call_id": cid, "summary": False, "llm": "default",
                      "model": None, "message_id": aid})
                clock += LATENCY
                seq += 1
                emit({"seq": seq, "time": clock, "type": "llm.completed", "turn_id": tid, "call_id": cid, "usage": usage})
                seq += 1
                emit({"seq": seq, "time": clock, "type": "message.new", "turn_id": tid,
                      "message": node(aid, head, "assistant", content, tid, usage=dict(usage))})
                seq += 1
                emit({"seq": seq, "time": clock, "type": "decision.requested", "turn_id": tid,
                      "decision": {"type": "llm.result", "turn_id": tid, "trigger": trigger, "head": aid, "state": {}, "client_state": {},
                                   "reply": {"id": aid, "role": "assistant", "content": content}}})
                actions = [] if result is None else [
                    {"type": "message.add", "message": {"role": "tool", "content": result["content"], "id": result["id"], "tool_call_id": result["tool_call_id"]}},
                    {"type": "llm.call"}]
                seq += 1
                emit({"seq": seq, "time": clock, "type": "decision.answered", "turn_id": tid, "actions": actions})
                if result is not None:
                    seq += 1
                    emit({"seq": seq, "time": clock, "type": "message.new", "turn_id": tid,
                          "message": node(result["id"], head, "tool", result["content"], tid, tool_call_id=result["tool_call_id"])})
            seq += 1
            emit({"seq": seq, "time": clock, "type": "turn.completed", "turn_id": tid})
        size = f.tell()
    return {"messages": nseq, "events": seq, "head": head, "bytes": size}


def drive(turns: list[Turn], log: str | os.PathLike | None = None):
    """Run ``turns`` through a live ``convlab.Session`` (a scripted worker and
    provider); returns the session. Its log has the decision events too."""
    import convlab

    steps: Iterator = iter(())
    current: list = []

    class Provider:
        latency = LATENCY

        def complete(self, request):
            content, usage, result = current[0]
            return {"content": content, "usage": dict(usage)}

    def worker(decision):
        if decision["type"] == "turn.start":
            current[:] = [next(steps)]
            return [{"type": "llm.call"}]
        if decision["type"] == "llm.result":
            _content, _usage, result = current[0]
            if result is None:
                return []
            current[:] = [next(steps)]
            return [{"type": "message.add", "message": dict(result)}, {"type": "llm.call"}]
        return []

    s = convlab.Session(llm=Provider(), worker=worker, log=log)
    for t in turns:
        steps = iter(t.steps)
        s.advance(t.gap)
        if t.kind == "message":
            s.submit({"type": "client.message", "agent_id": "bot", "message": dict(t.user)})
        elif t.kind == "edit":
            view = s.view(t.fork) if t.fork is not None else []
            s.submit({"type": "client.messages", "agent_id": "bot", "messages": view + [dict(t.user)]})
        else:
            s.submit({"type": "client.messages", "agent_id": "bot", "messages": s.view(t.fork)})
    return s


def check_generator(tmp: str | os.PathLike, *, messages: int = 400, path_len: int = 20) -> dict[str, Any]:
    """Generate a small log, run the same script live, and compare: the
    generated log must equal the live log line for line, and load to the same
    snapshot."""
    import convlab

    turns = script(messages, path_len=path_len, seed=11)
    tmp = Path(tmp)
    gen, live = tmp / "check-generated.jsonl", tmp / "check-live.jsonl"
    for p in (gen, live):
        if p.exists():
            p.unlink()
    info = write_log(turns, gen)
    s = drive(turns, log=live)
    s._log.close()
    live_lines = live.read_text(encoding="utf-8").splitlines()
    gen_lines = gen.read_text(encoding="utf-8").splitlines()
    same_lines = live_lines == gen_lines
    first_diff = next((i for i, (a, b) in enumerate(zip(live_lines, gen_lines)) if a != b), None)
    loaded = convlab.Session.load(gen)
    same_snapshot = loaded.snapshot() == s.snapshot()
    loaded._log.close()
    return {"same_lines": same_lines, "same_snapshot": same_snapshot, "messages": info["messages"],
            "path": len(s.path()), "head": s.head, "lines": [len(gen_lines), len(live_lines)],
            "first_diff": None if first_diff is None else {"line": first_diff + 1, "live": live_lines[first_diff][:300], "generated": gen_lines[first_diff][:300]}}


def cache_dir() -> Path:
    d = Path(os.environ.get("CONVLAB_BENCH_CACHE") or Path(tempfile.gettempdir()) / "convlab-bench")
    d.mkdir(parents=True, exist_ok=True)
    return d


def sources_key(*params: Any) -> str:
    """A cache key: the parameters, this module's source and convlab's sources
    (a change of the wire format makes new files)."""
    import convlab

    h = hashlib.sha256(repr(params).encode())
    h.update(Path(__file__).read_bytes())
    for f in sorted(Path(convlab.__file__).parent.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cached_log(messages: int, *, path_len: int = 100, seed: int = 4) -> tuple[Path, dict[str, Any]]:
    """The generated agent-session log for these parameters, written once and
    cached (keyed by the parameters and the sources, see ``sources_key``)."""
    key = sources_key(messages, path_len, seed)
    path = cache_dir() / f"agent-{messages}-{path_len}-{seed}-{key}.jsonl"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())
    for old in cache_dir().glob(f"agent-{messages}-{path_len}-{seed}-*"):  # stale: older sources
        if old.stem.rsplit("-", 1)[-1] != key:
            old.unlink(missing_ok=True)
    turns = script(messages, path_len=path_len, seed=seed)
    tmp = path.with_suffix(".tmp")
    info = write_log(turns, tmp)
    info["turns"] = len(turns)
    os.replace(tmp, path)
    meta.write_text(json.dumps(info))
    return path, info
