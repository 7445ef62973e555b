"""Hypothesis: random sequences of inputs (valid and invalid), steps, decisions, configs, provider
errors and clock moves keep every invariant of PROTOCOL.md:

- one tree: unique ids, one parent each (or the root), the graph matches the snapshot (1)
- the head is on the tree; path() is root -> head (1)
- at most one running turn; a pending decision belongs to it (3)
- queued turns start in the order they arrived (3), and a queue never waits while no turn runs (2, rev 3)
- a proposed plan leaves the model something new: a reset never copies the whole path (5.3, rev 3)
- every event, turn, node, snapshot and decision has the shape of docs/wire.md (convlab.wire)
- a refused input changes nothing: snapshot, events, turns, head, state, pending (2)
- inputs whose outcome the protocol fixes get it (fresh messages, views built from the tree, retries)
- context.limited is always followed by exactly one of context.replaced / context.kept once answered (5.3)
- events: seq in order, session.started first and once; the log holds exactly the events (7, 8)
- Session.load(log) equals the live snapshot (8), eagerly and lazily
- rev 4: whatever a provider raises fails only its turn; values JSON cannot carry (lone surrogates,
  NaN and infinities, integers past 64 bits, deep nesting) are refused with nothing written; a log
  write that fails anywhere (a torn line or none) refuses the whole entry point and changes nothing,
  so memory equals the log at every step; a streamed id is never given to another message
- a model call reads the path root -> head as a read-only view, its exact count the tree's running
  one, and what it read never changes; the state is the nearest one walking up (6)

Profiles (tests/conftest.py): "ci" (300 examples, the default) and HYPOTHESIS_PROFILE=deep.
"""

from __future__ import annotations

import builtins
import errno
import json
import math
import os
import shutil
import tempfile

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from session_support import PAGE_CONFIG, check_limited_then_exactly_one, check_wire, config, frozen, types

import convlab
import convlab.log
from convlab.tree import PathView

CONFIGS = [
    None,
    PAGE_CONFIG,
    config({"use": "summarize", "over_tokens": 40}),
    config({"use": "reset", "idle_secs": 60}, {"use": "summarize", "over_tokens": 60}),
    config({"use": "reset", "idle_secs": 60, "over_tokens": 30}),
    config({"use": "summarize", "idle_secs": 3600}, window=16001),
]

OUTCOMES = st.one_of(
    st.builds(
        lambda text, tokens: {"content": text, "usage": {"input_tokens": tokens, "output_tokens": 1}},
        st.sampled_from(["ok", "a longer reply with some words", "x" * 80, ""]),
        st.sampled_from([1, 10, 35, 100, 184001, 10**6]),
    ),
    st.sampled_from([{"error": "failed"}, {"error": "too_long"}]),
    st.sampled_from(["AssertionError", "AttributeError", "KeyError", "RuntimeError", "ValueError"]).map(lambda e: {"raise": e}),
)


class FaultyScript(convlab.ScriptedLLM):
    """ScriptedLLM whose script may also hold ``{"raise": "KeyError"}``: the call raises that exception,
    as an SDK or a transport does (not a ProviderError)."""

    def __init__(self, script):
        self.raises = {i: item["raise"] for i, item in enumerate(script) if "raise" in item}
        super().__init__([{"content": "unused"} if "raise" in item else item for item in script])
        self.session = None
        self.read: list[tuple[PathView, list]] = []  # each path a call read, and what it read then
        self.wrong: list[str] = []  # kept, not raised: an assertion inside a provider is a failed call

    def complete(self, request):
        messages = request.get("messages")
        if isinstance(messages, PathView):
            then = [dict(m) for m in messages]
            if then != self.session.view(messages.head):
                self.wrong.append(f"call {len(self.requests) + 1} read {then}, not the path to {messages.head}")
            if messages.tokens() != convlab.count_tokens(then):
                self.wrong.append(f"call {len(self.requests) + 1}: the running count {messages.tokens()} is not the exact one")
            self.read.append((messages, then))
        name = self.raises.get(len(self.requests))
        if name is not None:
            self.requests.append(dict(request))
            raise getattr(builtins, name)("raised inside the provider")
        return super().complete(request)


def _nested(depth):
    out: object = "deep"
    for _ in range(depth):
        out = [out]
    return out


# values JSON cannot carry (rev 4), and where they can hide in an input
HOSTILE = st.one_of(
    st.characters(categories=["Cs"]).map(lambda c: f"text {c} here"),
    st.sampled_from([math.nan, math.inf, -math.inf, 2**63, -(10**400)]),
    st.integers(101, 400).map(_nested),
)
HIDING_PLACES = ["content", "part", "id", "name", "metadata", "metadata key", "state", "view", "tool_calls"]

CONTENTS = st.sampled_from(["hi", "a question?", "y" * 90, "", [{"type": "text", "text": "part"}]])

MALFORMED = [
    None,
    [],
    {"agent_id": "bot"},
    {"type": "client.nope", "agent_id": "bot"},
    {"type": "client.message", "agent_id": "bot"},
    {"type": "client.message", "agent_id": "bot", "message": {"role": "robot", "content": "x"}},
    {"type": "client.message", "agent_id": "bot", "message": {"role": "user"}},
    {"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "x"}, "queue": "later"},
    {"type": "client.append", "agent_id": "bot", "messages": "x"},
    {"type": "client.messages", "agent_id": "bot", "messages": []},
    {"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "x"}], "queue": False},
    {"type": "client.interrupt", "agent_id": "bot", "queue": True},
    {"type": "client.message", "agent_id": "elsewhere", "message": {"role": "user", "content": "x"}},
]

RUNNING = "running"


class SessionMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.s = None
        self.dir = tempfile.mkdtemp(prefix="convlab-prop-")
        self.log = os.path.join(self.dir, "session.jsonl")
        self.fresh = 0
        self.faults = 0  # how many log writes fail from now on
        self.torn = False  # and whether each writes half its line first
        self._real_write = convlab.log.write_fd
        convlab.log.write_fd = self._write
        self.streamed_ids: set[str] = set()

    def _write(self, fd, data):
        if self.faults > 0:
            self.faults -= 1
            if self.torn and len(data) > 2:
                self._real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._real_write(fd, data)

    # -- helpers --------------------------------------------------------
    def new_id(self):
        self.fresh += 1
        return f"c{self.fresh}"

    def nodes(self):
        return {n["id"]: n for n in self.s.snapshot()["nodes"]}

    def running(self):
        return [t["id"] for t in self.s.turns if t["status"] == RUNNING]

    def path_to(self, nid, nodes):
        out = []
        while nid is not None:
            out.append(nid)
            nid = nodes[nid]["parent"]
        return out[::-1]

    def submit(self, inp, expect=None):
        """Submit; a refusal must change nothing. ``expect``: the status the protocol fixes, if any."""
        before = frozen(self.s)
        n = len(self.s.events)
        try:
            receipt = self.s.submit(inp)
        except convlab.LogError:
            assert self.faults_were_set, "a LogError with no write failing"
            assert len(self.s.events) == n and frozen(self.s) == before, "a submit that could not be written changed the session"
            return None
        except convlab.Refused as err:
            assert len(self.s.events) == n, "a refused input emitted events"
            assert frozen(self.s) == before, f"a refused input changed the session: {err}"
            if expect is not None:
                assert err.status == expect, f"{inp!r}: expected {expect}, refused {err.status}: {err}"
            if err.status == 409 and self.running():
                assert err.turn_id == self.running()[0]
            return None
        if expect is not None:
            assert receipt["status"] == expect, f"{inp!r}: expected {expect}, got {receipt!r}"
        return receipt

    # -- setup ------------------------------------------------------------
    @initialize(
        cfg=st.sampled_from(CONFIGS),
        worker=st.sampled_from(["manual", "chat", "callable"]),
        autorun=st.booleans(),
        script=st.lists(OUTCOMES, max_size=30),
    )
    def start(self, cfg, worker, autorun, script):
        self.faults_were_set = False
        tail = [{"content": f"tail {i}", "usage": {"input_tokens": 5, "output_tokens": 1}} for i in range(400)]
        if worker == "callable":

            def worker(decision):
                if decision["type"] == "context.limit":
                    return decision["proposed"]
                if decision["type"] == "turn.start":
                    return [{"type": "state.set", "state": {"turns": len(decision["messages"])}}, {"type": "llm.call"}]
                return []

        llm = FaultyScript(script + tail)
        self.s = convlab.Session(config=cfg, worker=worker, autorun=autorun, llm=llm, log=self.log, clock=0.0)
        llm.session = self.s
        self.s.subscribe(self._saw)

    def _saw(self, event):
        if event["type"] == "llm.delta":
            self.streamed_ids.add(event["message_id"])

    # -- inputs -----------------------------------------------------------
    @rule(
        data=st.data(),
        kind=st.sampled_from(["client.message", "client.append"]),
        queue=st.sampled_from([None, True, "merge"]),
        n=st.integers(1, 3),
    )
    def submit_messages(self, data, kind, queue, n):
        known = list(self.nodes())
        msgs = []
        all_fresh = True
        picks = ["fresh", "none", "known", "eid"] if known else ["fresh", "none", "eid"]
        for _ in range(n if kind == "client.append" else 1):
            pick = data.draw(st.sampled_from(picks))
            if pick == "fresh":
                mid = self.new_id()
            elif pick == "none":
                mid = None
            elif pick == "known":
                mid = data.draw(st.sampled_from(known))
                all_fresh = False
            else:
                mid = f"e{data.draw(st.integers(1, 12))}"
                all_fresh = False
            msg = {"role": data.draw(st.sampled_from(["user", "user", "tool", "system"])), "content": data.draw(CONTENTS)}
            if msg["role"] == "tool":
                msg["tool_call_id"] = "call"
            if mid is not None:
                msg["id"] = mid
            msgs.append(msg)
        inp = {"type": kind, "agent_id": "bot"}
        if kind == "client.message":
            inp["message"] = msgs[0]
        else:
            inp["messages"] = msgs
        if queue is not None:
            inp["queue"] = queue
        if data.draw(st.booleans()):
            inp["state"] = {"k": data.draw(st.integers(0, 3))}
        expect = None
        waiting = any(t["status"] == "queued" for t in self.s.turns)
        if all_fresh:
            busy = bool(self.running())
            if busy:
                expect = 202 if queue else 409
            elif not waiting:
                expect = 200  # 3: "With no turn running, a queued or merge submit starts at once"
            elif queue:
                # nothing runs but turns wait (autorun=False after an interrupt): arrival order queues it
                expect = 202
        receipt = self.submit(inp, expect)
        if receipt is not None and all_fresh:
            assert receipt["duplicate"] is False
            assert receipt["queued"] is (receipt["status"] == 202)

    @rule(data=st.data())
    def resend_known(self, data):
        """2: a submit whose messages are all already recorded is a duplicate (200), never a 409."""
        known = list(self.nodes())
        if not known:
            return
        mid = data.draw(st.sampled_from(known))
        n = self.nodes()[mid]
        inp = {"type": "client.message", "agent_id": "bot", "message": {"id": mid, "role": n["role"], "content": "again"}}
        if data.draw(st.booleans()):
            inp["queue"] = data.draw(st.sampled_from([True, "merge"]))
        before = frozen(self.s)
        receipt = self.submit(inp, 200)
        assert receipt["duplicate"] is True and receipt["queued"] is False and receipt["merged"] is False
        assert frozen(self.s) == before

    @rule(data=st.data(), extra=st.integers(0, 3), cut=st.integers(0, 1000), edit=st.booleans())
    def submit_view(self, data, extra, cut, edit):
        nodes = self.nodes()
        target = data.draw(st.sampled_from([None] + list(nodes)))
        ids = self.path_to(target, nodes)
        ids = ids[: len(ids) - (cut % (len(ids) + 1))] if ids else []
        view = [{"id": i, "role": nodes[i]["role"], "content": "changed" if edit else nodes[i]["content"]} for i in ids]
        for _ in range(extra):
            msg = {"role": data.draw(st.sampled_from(["user", "assistant"])), "content": data.draw(CONTENTS)}
            if data.draw(st.booleans()):
                msg["id"] = self.new_id()
            view.append(msg)
        if not view:
            self.submit({"type": "client.messages", "agent_id": "bot", "messages": view}, 400)
            return
        busy = self.running()
        last = ids[-1] if ids else None
        if not busy:
            expect = 200
        elif extra == 0 and last != self.s.head:
            expect = 200
        else:
            expect = 409
        head_before = self.s.head
        n_events = len(self.s.events)
        receipt = self.submit({"type": "client.messages", "agent_id": "bot", "messages": view}, expect)
        if receipt is not None:
            assert receipt["new_from"] == len(ids)
            new = self.s.events[n_events:]
            if extra == 0:
                assert "message.new" not in types(new[: types(new).index("turn.started")])
                moved = [e for e in new if e["type"] == "head.moved"]
                if last != head_before:
                    assert moved and (moved[0]["from"], moved[0]["to"]) == (head_before, last)
                else:
                    assert not moved
            if busy and extra == 0:
                kinds = types(new)
                assert kinds.index("head.moved") < kinds.index("turn.cancelled") < kinds.index("turn.started")

    @rule(data=st.data())
    def submit_bad_view(self, data):
        """A view whose known ids are not a path (2.1), or that reuses a recorded id in the rest (2.3)."""
        nodes = self.nodes()
        if len(nodes) < 2:
            return
        x, y = data.draw(st.sampled_from(list(nodes))), data.draw(st.sampled_from(list(nodes)))
        if nodes[y]["parent"] == x or x == y:
            return
        path = self.path_to(x, nodes)
        bad = [{"id": i, "role": "user", "content": ""} for i in path]
        if data.draw(st.booleans()):
            bad.append({"id": y, "role": "user", "content": ""})  # not a child of x
        else:
            bad += [{"id": self.new_id(), "role": "user", "content": "new"}, {"id": y, "role": "user", "content": ""}]
        self.submit({"type": "client.messages", "agent_id": "bot", "messages": bad}, 400)

    @rule(bad=st.sampled_from(MALFORMED))
    def submit_malformed(self, bad):
        status = 404 if isinstance(bad, dict) and bad.get("agent_id") == "elsewhere" else 400
        self.submit(bad, status)

    @rule()
    def interrupt(self):
        busy = self.running()
        receipt = self.submit({"type": "client.interrupt", "agent_id": "bot"}, None if busy else 409)
        if busy and receipt is not None:  # None: the log could not take it (disk_trouble), nothing changed
            assert {t["id"]: t["status"] for t in self.s.turns}[busy[0]] == "cancelled"
        elif busy:
            assert self.faults_were_set and self.running() == busy

    @rule(bad=HOSTILE, where=st.sampled_from(HIDING_PLACES), queue=st.sampled_from([None, True, "merge"]))
    def submit_hostile(self, bad, where, queue):
        """rev 4: "Values JSON cannot carry are refused at the door (400), nothing written"."""
        msg = {"id": self.new_id(), "role": "user", "content": "fine"}
        inp = {"type": "client.message", "agent_id": "bot", "message": msg}
        if where == "content":
            msg["content"] = bad if isinstance(bad, str) else [{"type": "data", "value": bad}]
        elif where == "part":
            msg["content"] = [{"type": "text", "text": "ok"}, {"type": "image", "detail": bad}]
        elif where == "id":
            msg["id"] = bad if isinstance(bad, str) else msg["id"]
            if not isinstance(bad, str):
                msg["metadata"] = {"id": bad}
        elif where == "name":
            msg["name"] = bad if isinstance(bad, str) else "n"
            msg["metadata"] = {"name": bad}
        elif where == "metadata":
            msg["metadata"] = {"x": {"y": [bad]}}
        elif where == "metadata key":
            msg["metadata"] = {bad if isinstance(bad, str) else "k\udc80": 1}
        elif where == "state":
            inp["state"] = {"s": bad}
        elif where == "tool_calls":
            msg["role"], msg["content"] = "assistant", ""
            inp = {"type": "client.messages", "agent_id": "bot",
                   "messages": [msg | {"tool_calls": [{"id": "c", "function": {"arguments": bad}}]}]}
        else:
            inp = {"type": "client.messages", "agent_id": "bot", "messages": [{"role": "user", "content": "x", "metadata": {"v": bad}}]}
        if queue is not None and inp["type"] == "client.message":
            inp["queue"] = queue
        self.submit(inp, 400)

    @rule(seconds=st.sampled_from([math.nan, math.inf, -math.inf, -1.0]))
    def advance_hostile(self, seconds):
        t = self.s.clock
        try:
            self.s.advance(seconds)
        except ValueError as err:
            assert "finite, non-negative" in str(err)
        else:
            raise AssertionError(f"advance({seconds}) was accepted")
        assert self.s.clock == t

    @rule(count=st.integers(1, 4), torn=st.booleans())
    def disk_trouble(self, count, torn):
        """The next ``count`` log writes fail (a full disk), each tearing its line or not."""
        self.faults, self.torn, self.faults_were_set = count, torn, True

    @rule()
    def disk_fine(self):
        self.faults = 0

    # -- the engine -------------------------------------------------------
    def _entry(self, call):
        """An entry point: a LogError changes nothing at all."""
        before = frozen(self.s)
        n = len(self.s.events)
        try:
            call()
        except convlab.LogError:
            assert self.faults_were_set
            assert len(self.s.events) == n and frozen(self.s) == before

    @rule()
    def step(self):
        self._entry(self.s.step)

    @rule()
    def run(self):
        self._entry(self.s.run)

    @precondition(lambda self: self.s is not None and self.s.pending is not None)
    @rule(data=st.data())
    def decide(self, data):
        d = self.s.pending
        if d["type"] == "context.limit":
            held = d["call"]["id"]
            actions = data.draw(
                st.sampled_from(
                    [d["proposed"], [{"type": "llm.call", "id": held}], [{"type": "turn.end"}], [], [{"type": "state.set", "state": {"x": 1}}]]
                )
            )
        else:
            path = [m["id"] for m in d["messages"]]
            choices = [
                [],
                [{"type": "llm.call"}],
                [{"type": "llm.call"}, {"type": "llm.call"}],
                [{"type": "state.set", "state": {"n": len(path)}}],
                [{"type": "message.add", "message": {"role": "tool", "content": "42", "tool_call_id": "call"}}, {"type": "llm.call"}],
                [{"type": "turn.end"}, {"type": "llm.call"}],
                [{"type": "context.replace", "summary": "so far"}, {"type": "llm.call"}],
                [{"type": "context.replace", "messages": [{"id": i, "role": "user", "content": ""} for i in path[-2:]]}],
                [{"type": "context.replace", "summary": "s", "messages": [{"role": "user", "content": "fresh"}]}],
                [{"type": "context.replace"}],
            ]
            actions = data.draw(st.sampled_from(choices))
        before = len(self.s.turns)
        self._entry(lambda: self.s.decide(actions))
        assert len(self.s.turns) == before  # deciding submits nothing

    @precondition(lambda self: self.s is not None and self.s.pending is None)
    @rule()
    def decide_nothing_pending(self):
        before = frozen(self.s)
        try:
            self.s.decide([])
        except convlab.Refused as err:
            assert err.status == 409
        else:
            raise AssertionError("decide() with nothing pending was accepted")
        assert frozen(self.s) == before

    @rule(seconds=st.sampled_from([0, 1, 59, 60, 3599, 3600, 7200]))
    def advance(self, seconds):
        t = self.s.clock
        self.s.advance(seconds)
        assert self.s.clock == t + seconds

    @rule()
    def load_equals_live(self):
        """8 and rev 4: memory equals the log after every step, whatever failed to be written."""
        loaded = convlab.Session.load(self.log, append=False)
        assert loaded.snapshot() == self.s.snapshot()
        lazy = convlab.Session.load(self.log, lazy=True, append=False)  # issue 8: lazy equals eager
        assert lazy.snapshot() == self.s.snapshot()
        assert (lazy.tokens(), lazy.path(), lazy.state) == (self.s.tokens(), self.s.path(), self.s.state)

    # -- invariants ---------------------------------------------------------
    @invariant()
    def one_tree(self):
        if self.s is None:
            return
        snap = self.s.snapshot()
        ids = [n["id"] for n in snap["nodes"]]
        assert len(ids) == len(set(ids)), "ids are unique"
        seq = {n["id"]: n["seq"] for n in snap["nodes"]}
        assert [n["seq"] for n in snap["nodes"]] == list(range(1, len(ids) + 1))
        for n in snap["nodes"]:
            p = n["parent"]
            assert p is None or (p in seq and seq[p] < seq[n["id"]]), n
        g = self.s.tree
        assert set(g.nodes) == set(ids)
        assert set(g.edges) == {(n["parent"], n["id"]) for n in snap["nodes"] if n["parent"] is not None}

    @invariant()
    def head_on_the_path(self):
        if self.s is None:
            return
        nodes = self.nodes()
        head = self.s.head
        assert head is None or head in nodes
        assert self.s.snapshot()["head"] == head
        assert [n["id"] for n in self.s.path()] == self.path_to(head, nodes)

    @invariant()
    def one_turn_at_a_time(self):
        if self.s is None:
            return
        busy = self.running()
        assert len(busy) <= 1
        d = self.s.pending
        if d is not None:
            assert busy == [d["turn_id"]]
            assert [m["id"] for m in d["messages"]] == [n["id"] for n in self.s.path()]
        assert {t["status"] for t in self.s.turns} <= {"queued", "running", "completed", "failed", "cancelled"}

    @invariant()
    def queued_turns_in_arrival_order(self):
        if self.s is None:
            return
        queued = [e["turn"]["id"] for e in self.s.events if e["type"] == "turn.queued"]
        started = [e["turn_id"] for e in self.s.events if e["type"] == "turn.started" and e["turn_id"] in queued]
        assert started == queued[: len(started)], (queued, started)
        waiting = [t["id"] for t in self.s.turns if t["status"] == "queued"]
        assert waiting == [q for q in queued if q in waiting]

    @invariant()
    def the_queue_never_waits(self):
        """2 (rev 3): "whenever a turn ends, however it ends, the next queued turn starts at once"."""
        if self.s is None:
            return
        if not self.running():
            assert self.s.queued == [], f"turns {self.s.queued} wait while no turn runs"

    @invariant()
    def a_plan_leaves_the_model_something_new(self):
        """5.3 (rev 3): "when nothing precedes kept ... proposed is the call as it was"."""
        if self.s is None:
            return
        for e in self.s.events:
            d = e.get("decision")
            if e["type"] != "decision.requested" or d["type"] != "context.limit" or d["proposed"][0]["type"] != "context.replace":
                continue
            depth = len(self.s.path(d["head"])) if d["head"] is not None else 0
            assert d["proposed"][0].get("summary") or len(d["proposed"][0]["messages"]) < depth, d

    @invariant()
    def events_in_order(self):
        if self.s is None:
            return
        ev = self.s.events
        assert ev[0]["type"] == "session.started"
        assert sum(1 for e in ev if e["type"] == "session.started") == 1
        seqs = [e["seq"] for e in ev]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        times = [e["time"] for e in ev]
        assert times == sorted(times)

    @invariant()
    def a_streamed_id_is_never_another_message_s(self):
        """rev 4: once announced in llm.delta, an id belongs to that reply: recorded as it, or by nothing."""
        if self.s is None:
            return
        replies = {e["message"]["id"]: e["message"] for e in self.s.events if e["type"] == "message.new"}
        for mid in self.streamed_ids:
            if mid in replies:
                started = [e for e in self.s.events if e["type"] == "llm.started" and e.get("message_id") == mid]
                assert started and replies[mid]["role"] == "assistant", mid

    @invariant()
    def a_call_reads_the_path_and_what_it_read_holds(self):
        """A model call reads the path root -> head, as a read-only view whose exact count is the
        tree's running one; what a call read never changes, whatever the session did since
        (a refused entry point restored included)."""
        if self.s is None:
            return
        llm = self.s.llms["default"]
        assert not llm.wrong, llm.wrong[0]
        for view, then in llm.read[-10:]:
            assert list(view) == then and len(view) == len(then)

    @invariant()
    def state_is_the_nearest_on_the_path(self):
        """6: the state is the one nearest the head walking up (the tree answers in O(1))."""
        if self.s is None:
            return
        nodes = self.nodes()
        states = [nodes[n]["state"] for n in reversed(self.path_to(self.s.head, nodes)) if nodes[n]["state"] is not None]
        assert self.s.state == (states[0] if states else {})

    @invariant()
    def limited_then_exactly_one(self):
        if self.s is None:
            return
        check_limited_then_exactly_one(self.s.events)
        for e in self.s.events:
            if e["type"] == "llm.started" and e["summary"]:
                assert e.get("turn_id") is not None

    def teardown(self):
        convlab.log.write_fd = self._real_write
        try:
            if self.s is not None:
                check_wire(self.s)
                with open(self.log) as f:
                    assert [json.loads(line) for line in f] == self.s.events
                assert convlab.Session.load(self.log, append=False).snapshot() == self.s.snapshot()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


_DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
SessionMachine.TestCase.settings = settings(settings.default, stateful_step_count=80 if _DEEP else 50)
TestSession = SessionMachine.TestCase
