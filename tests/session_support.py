"""Helpers for the black-box Session suites (tests/test_session_*.py and friends).

Only the public surface of shared/API.md and the shapes of docs/wire.md are
used. ``convlab.Session`` is looked up lazily, so the suites collect even
before the engine exists.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any, Iterable

import pytest

import convlab

AGENT = "bot"

#: The page's config: an hour idle resets; above 184,000 tokens summarizes.
PAGE_CONFIG = """
[agent.bot.context]
window = 200000

[[agent.bot.context.strategy]]
use = "reset"
idle_secs = 3600

[[agent.bot.context.strategy]]
use = "summarize"
"""


def make(**kwargs: Any):
    """A Session for agent "bot" (keyword arguments as in API.md)."""
    kwargs.setdefault("agent", AGENT)
    return convlab.Session(**kwargs)


def config(*strategies: dict[str, Any], window: int | None = None, agent: str = AGENT) -> str:
    """TOML text for ``[agent.<agent>.context]`` with the given strategies."""
    lines = [f"[agent.{agent}.context]"]
    if window is not None:
        lines.append(f"window = {window}")
    for strat in strategies:
        lines.append(f"[[agent.{agent}.context.strategy]]")
        for key, value in strat.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


# -- inputs -------------------------------------------------------------
def m(id: str | None = None, content: Any = "hi", role: str = "user", **extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": content}
    if id is not None:
        msg["id"] = id
    msg.update(extra)
    return msg


def a(id: str | None = None, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return m(id, content, role="assistant", **extra)


def message(msg: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"type": "client.message", "agent_id": AGENT, "message": msg, **kw}


def append(msgs: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"type": "client.append", "agent_id": AGENT, "messages": msgs, **kw}


def view(msgs: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"type": "client.messages", "agent_id": AGENT, "messages": msgs, **kw}


def interrupt(**kw: Any) -> dict[str, Any]:
    return {"type": "client.interrupt", "agent_id": AGENT, **kw}


# -- reading a session ----------------------------------------------------
def frozen(s) -> str:
    """Everything a refused input must leave alone: snapshot, events, turns, head, state."""
    return json.dumps(
        {"snapshot": s.snapshot(), "events": s.events, "turns": s.turns, "head": s.head, "state": s.state,
         "pending": s.pending},
        sort_keys=True,
        default=repr,
    )


def refused(s, inp: Any, status: int, *names: str) -> Exception:
    """Submit ``inp``; it must raise Refused(status) naming one of ``names``; nothing may change."""
    before = frozen(s)
    n_events = len(s.events)
    with pytest.raises(convlab.Refused) as info:
        s.submit(inp)
    err = info.value
    assert err.status == status, f"expected {status}, got {err.status}: {err}"
    if names:
        text = str(err)
        assert any(name in text for name in names), f"refusal {text!r} names none of {names}"
    assert len(s.events) == n_events, "a refused input emitted events"
    assert frozen(s) == before, "a refused input changed the session"
    return err


def types(events: Iterable[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def of_type(s_or_events, *kinds: str) -> list[dict[str, Any]]:
    events = s_or_events if isinstance(s_or_events, list) else s_or_events.events
    return [e for e in events if e["type"] in kinds]


def nodes(s) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in s.snapshot()["nodes"]}


def node(s, nid: str) -> dict[str, Any]:
    return nodes(s)[nid]


def path_ids(s) -> list[str]:
    return [n["id"] for n in s.path()]


def children(s, parent: str | None) -> list[str]:
    return [n["id"] for n in s.snapshot()["nodes"] if n["parent"] == parent]


def turn(s, tid: str) -> dict[str, Any]:
    for t in s.turns:
        if t["id"] == tid:
            return t
    raise KeyError(tid)


def statuses(s) -> dict[str, str]:
    return {t["id"]: t["status"] for t in s.turns}


def running(s) -> list[str]:
    return [t["id"] for t in s.turns if t["status"] == "running"]


def content_chars(content: Any) -> int:
    """PROTOCOL.md 5.1: a string's length, or text parts' lengths plus len(json.dumps(part)) of others."""
    if isinstance(content, str):
        return len(content)
    total = 0
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            total += len(part["text"])
        else:
            total += len(json.dumps(part))
    return total


def est(*contents: Any) -> int:
    """ceil(total chars / 4) over ``contents``."""
    return math.ceil(sum(content_chars(c) for c in contents) / 4)


def advance_to(s, t: float) -> None:
    """Move the simulated clock to time ``t`` (never backwards)."""
    delta = t - s.clock
    assert delta >= 0, f"clock is already at {s.clock}, past {t}"
    if delta:
        s.advance(delta)


def assert_receipt(receipt: dict[str, Any], **expected: Any) -> None:
    """The receipt has (at least) these keys with these values (API.md: add freely)."""
    got = {key: receipt.get(key, "<missing>") for key in expected}
    assert got == expected, f"receipt {receipt!r}"


def decide_until_idle(s, answer=lambda d: [], limit: int = 50) -> None:
    """Answer every pending decision with ``answer(decision)`` until nothing waits."""
    for _ in range(limit):
        if s.pending is None:
            return
        s.decide(answer(s.pending))
    raise AssertionError("decisions never stopped")


def reply(content: str = "ok", input_tokens: int = 1, output_tokens: int = 1, **usage: int) -> dict[str, Any]:
    return {"content": content, "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **usage}}


class RecordingLLM:
    """A provider (API.md: ``complete(request) -> {"content", "usage"}``) that plays ``script``
    in order and records every request it reads. A script item is a reply dict or
    ``{"error": "too_long" | "failed"}``; past the script it answers ``"r<n>"``."""

    def __init__(self, script: Iterable[dict[str, Any]] = ()):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(copy.deepcopy(request))
        n = len(self.requests)
        item = self.script[n - 1] if n <= len(self.script) else reply(f"r{n}")
        if "error" in item:
            raise convlab.ProviderError(item["error"])
        return copy.deepcopy(item)

    def read(self, i: int) -> str:
        """Request ``i``'s messages as one JSON text (to look for markers)."""
        return json.dumps(self.requests[i].get("messages"))


def request_contents(request: dict[str, Any]) -> list[Any]:
    return [msg["content"] for msg in request["messages"]]


def limit_decisions(s) -> list[dict[str, Any]]:
    return [e["decision"] for e in of_type(s, "decision.requested") if e["decision"]["type"] == "context.limit"]


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def check_limited_then_exactly_one(events: list[dict[str, Any]], settled_only: bool = False) -> None:
    """PROTOCOL.md 5.3: "After the worker answers context.limit, exactly one of two events follows:
    context.replaced when the answer's replace runs, else context.kept, right after the answer"; summary
    calls (llm.started with summary: true) "all fall between context.limited and that event".

    For each context.limited: no replaced/kept before its answer; after the answer, exactly one of them
    among the answer's own actions (before the next decision is requested); a turn that ends (cancelled)
    while the context.limit waits is followed by exactly one as well. An answer whose actions have not
    run yet (autorun=False, the next step runs them) may have none so far.
    """
    ends = ("turn.completed", "turn.failed", "turn.cancelled")
    for i, limited in enumerate(events):
        if limited["type"] != "context.limited":
            continue
        seg: list[dict[str, Any]] = []
        for e in events[i + 1 :]:
            if e["type"] == "context.limited":
                break
            seg.append(e)
            if e["type"] in ends and e.get("turn_id") == limited.get("turn_id"):
                break
        kinds = [e["type"] for e in seg]
        ended = any(k in ends for k in kinds)
        if "decision.answered" not in kinds:
            outcome = [k for k in kinds if k in ("context.replaced", "context.kept")]
            assert len(outcome) == (1 if ended else 0), kinds
            continue
        ans = kinds.index("decision.answered")
        before = [k for k in kinds[:ans] if k in ("context.replaced", "context.kept")]
        assert before == [], kinds
        for e in seg[:ans]:
            if e["type"] == "llm.started":
                assert e["summary"] is True, e
        rest = kinds[ans + 1 :]
        stop = rest.index("decision.requested") if "decision.requested" in rest else len(rest)
        own = [k for k in rest[:stop] if k in ("context.replaced", "context.kept")]
        if "decision.requested" in rest or ended:
            assert len(own) == 1, kinds
        else:
            assert len(own) <= 1, kinds
        if own == ["context.kept"]:
            assert rest[0] == "context.kept", kinds  # "right after the answer"


# -- the shapes of docs/wire.md (convlab.wire) --------------------------------
def _keys_fit(d: dict, typed: type, where: str) -> None:
    keys = set(d)
    missing = set(typed.__required_keys__) - keys
    extra = keys - set(typed.__required_keys__) - set(typed.__optional_keys__)
    assert not missing and not extra, f"{where}: missing {sorted(missing)}, unexpected {sorted(extra)}: {d!r}"


def check_wire(s) -> None:
    """Every event, turn, node, the snapshot and the waiting decision have exactly the
    keys convlab.wire / convlab.tree say (docs/wire.md)."""
    from convlab.tree import Node
    from convlab.wire import EVENT_FIELDS, Decision, Event, Snapshot, Turn

    for e in s.events:
        required, optional = EVENT_FIELDS[e["type"]]
        base = set(Event.__required_keys__) | set(Event.__optional_keys__)
        keys = set(e) - base
        assert required <= keys <= required | optional, f"event {e['type']}: {sorted(keys)} vs {sorted(required)} + {sorted(optional)}"
        if e["type"] == "message.new":
            _keys_fit(e["message"], Node, "message.new.message")
        if e["type"] in ("turn.queued", "turn.started") and "turn" in e:
            _keys_fit(e["turn"], Turn, f"{e['type']}.turn")
    snap = s.snapshot()
    _keys_fit(snap, Snapshot, "snapshot")
    for n in snap["nodes"]:
        _keys_fit(n, Node, "snapshot node")
    for t in snap["turns"]:
        _keys_fit(t, Turn, "turn")
    if s.pending is not None:
        _keys_fit(s.pending, Decision, f"decision {s.pending['type']}")


#: A credential a failing provider holds (and may leak into its errors): no text may show it.
KEY = "sk-live-abcdef0123456789"


class Raises:
    """A provider that raises ``exc`` (not a ProviderError: what an SDK or a transport raises) on its
    first call, then echoes; it holds ``KEY``. ``StreamRaises`` raises mid-stream, after a word."""

    def __init__(self, exc: BaseException):
        self.exc = exc
        self.calls = 0
        self.echo = convlab.EchoLLM()

    def secrets(self) -> list[str]:
        return [KEY]

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            raise self.exc
        return self.echo.complete(request)


class StreamRaises(Raises):
    def stream(self, request: dict[str, Any]):
        self.calls += 1
        if self.calls == 1:
            yield "partial "
            raise self.exc
        yield from self.echo.stream(request)
