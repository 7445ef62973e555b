"""Widgets that keep up (issue 14): coalesced redraws, the TreeView's patches,
the chat that moves on only with the path, the log that appends, streaming.

The comm messages are counted as a kernel would send them: ``comm.create_comm``
gives every widget a comm that records what it publishes. Time is faked
where a test is about time (``live.time``), so nothing here is a timed test.
"""

from __future__ import annotations

import ast
import asyncio
import json
import threading

import comm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from convlab.widgets import ChatView, EventLog, Lab, TreeView, intents, layout, live
from test_widgets import branched

SUMMARIZE = """
[agent.bot.context]
[[agent.bot.context.strategy]]
use = "summarize"
over_tokens = 120
"""


def say(s, text, mid=None, **extra):
    message = {"role": "user", "content": text}
    if mid:
        message["id"] = mid
    return s.submit({"type": "client.message", "agent_id": "bot", "message": message, **extra})


class Wire:
    """Every comm message the widgets publish, as a kernel would send them to the browser."""

    def __init__(self):
        self.messages: list[tuple[str, str, dict]] = []  # (msg_type, comm_id, data)

    def comm_class(self):
        wire = self

        class Recording(comm.DummyComm):
            def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
                wire.messages.append((msg_type, self.comm_id, data or {}))

        return Recording

    def since(self, mark: int) -> list[tuple[str, str, dict]]:
        return self.messages[mark:]

    def custom(self, widget, mark: int = 0) -> list[dict]:
        """The custom messages (``widget.send``) sent to ``widget``'s views since ``mark``."""
        return [d["content"] for t, cid, d in self.messages[mark:]
                if t == "comm_msg" and cid == widget.comm.comm_id and d.get("method") == "custom"]


@pytest.fixture
def wire(monkeypatch):
    w = Wire()
    cls = w.comm_class()
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: cls(**kwargs))
    return w


class Clock:
    """``live.time`` with a clock the test moves."""

    def __init__(self):
        self.now = 1000.0
        self.cost = 0.0  # how long each draw takes, on this clock

    def monotonic(self):
        return self.now

    def perf_counter(self):
        self.now += self.cost  # read before and after a draw: the draw took `cost`
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(live, "time", c)
    return c


def draws(lab):
    return [p.redraw.count for p in lab._parts()]


def reference(tv, s):
    """The layout of the session from scratch, with the view's own settings."""
    statuses = {t["id"]: t["status"] for t in s.turns if t.get("status") in ("cancelled", "failed", "running")}
    return layout((a for _, a in s.tree.nodes(data=True)), s.head, turn_status=statuses, expanded=tv.expanded,
                  collapsed=tv.collapsed, max_depth=tv.max_depth, budget=tv.budget, selected=tv.selected,
                  status=tv.status)


def drawn(tv):
    d = tv.data
    d.pop("version")
    return d


# -- coalescing ------------------------------------------------------------------

def test_a_burst_costs_one_redraw_and_the_final_state_is_drawn(clock):
    """Issue 14: "Redraws are coalesced (a burst of events costs one redraw ... and the final state is always drawn)"."""
    s = convlab.Session()
    lab = Lab(s)
    before = draws(lab)
    for i in range(200):  # no time passes: one burst
        say(s, f"message {i}")
    assert draws(lab) == before  # nothing drawn during the burst
    assert lab.flush() == 5 and draws(lab) == [n + 1 for n in before]
    assert lab.flush() == 0  # nothing left to draw
    assert lab.tree.data["head"] == s.head and lab.tree.data["total"] == len(s.tree) == 400
    assert lab.chat._path_ids == [n["id"] for n in s.path()]
    assert lab.gauge.tokens == s.tokens() and lab.gauge.exact == convlab.count_tokens(s.path())
    assert lab.events.shown()[0] is s.events[-1]


def test_a_long_burst_draws_at_most_a_few_times_a_second(clock):
    """Issue 14: "at most a few per second": inside a running cell (no event loop) the
    listener itself draws, once ``interval`` has passed since the first undrawn event."""
    s = convlab.Session()
    lab = Lab(s)
    before = draws(lab)
    for i in range(100):  # 10 s of driving, 0.1 s a turn
        clock.now += 0.1
        say(s, f"message {i}")
    made = [n - b for n, b in zip(draws(lab), before)]
    assert all(20 <= n <= 10 / live.INTERVAL + 1 for n in made), made  # about 4 a second, never per event
    lab.flush()
    assert lab.tree.data["head"] == s.head and lab.chat._path_ids[-1] == s.head


def test_a_slow_draw_waits_longer_before_the_next(clock):
    """live: "the wait is at least RATIO times the last draw's time"."""
    clock.cost = 0.5
    calls = []
    r = live.Redraw(lambda: calls.append(clock.now))
    r.touch()
    clock.now += live.INTERVAL
    r.touch()  # waited long enough: draws, and the draw took 0.5 s
    assert len(calls) == 1 and r.wait == pytest.approx(live.RATIO * 0.5)
    r.touch()
    clock.now += 5.0
    r.touch()  # 5 s after the first undrawn event: not yet (10 s)
    assert len(calls) == 1
    clock.now += 5.0
    r.touch()
    assert len(calls) == 2


def test_a_timer_on_the_running_loop_draws_the_end_of_a_burst():
    """Issue 14: the final state is drawn when the event loop runs again (in Jupyter, when the cell ends)."""

    async def main():
        s = convlab.Session()
        lab = Lab(s, interval=0.05)
        before = draws(lab)
        for i in range(20):
            say(s, f"message {i}")
        await asyncio.sleep(0.3)
        return s, lab, before

    out = []  # in a thread of its own: the main thread may already run a loop (Playwright's sync API)
    runner = threading.Thread(target=lambda: out.append(asyncio.run(main())))
    runner.start()
    runner.join()
    s, lab, before = out[0]
    assert all(1 <= n - b <= 3 for n, b in zip(draws(lab), before)), (before, draws(lab))
    assert lab.flush() == 0 and lab.tree.data["head"] == s.head and lab.chat._path_ids[-1] == s.head


def test_a_notebook_cell_leaves_the_final_state_drawn():
    """Issue 14: in a kernel, a cell that drives the session redraws the Lab a few times
    a second while it runs (the event loop does not run) and once when it ends."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        def reply_to(msg_id):
            while True:
                reply = kc.get_shell_msg(timeout=120)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return reply

        def run(code):
            reply = reply_to(kc.execute(code))
            assert reply["content"]["status"] == "ok", reply["content"]

        run("import convlab, time\ns = convlab.Session()\nlab = convlab.Lab(s)\nbefore = [p.redraw.count for p in lab._parts()]")
        run("t0 = time.monotonic()\nfor i in range(300):\n"
            "    s.submit({'type': 'client.message', 'agent_id': 'bot', 'message': {'role': 'user', 'content': f'm{i}'}})\n"
            "elapsed = time.monotonic() - t0")
        expr = ("__import__('json').dumps([lab.tree.data['head'] == s.head, lab.chat._path_ids[-1] == s.head, "
                "lab.gauge.tokens == s.tokens(), lab.events.shown()[0]['seq'] == len(s.events), "
                "[p.redraw.dirty for p in lab._parts()], [p.redraw.count - b for p, b in zip(lab._parts(), before)], elapsed])")
        reply = reply_to(kc.execute("", silent=True, store_history=False, user_expressions={"v": expr}))
        raw = reply["content"]["user_expressions"]["v"]
        assert raw["status"] == "ok", raw
        head, chat, gauge, log, dirty, made, elapsed = json.loads(ast.literal_eval(raw["data"]["text/plain"]))
        assert head and chat and gauge and log and not any(dirty)  # the cell's end drew the final state
        assert all(1 <= n <= elapsed / 0.25 + 2 for n in made), (made, elapsed)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# -- the tree view's patches ---------------------------------------------------------

def test_the_tree_view_receives_only_new_rows_and_head_moves(wire):
    """Issue 14: "the TreeView receives only what changed (new nodes, head moves) instead of the whole layout"."""
    s = convlab.Session()
    for i in range(50):
        say(s, f"message {i}")
    tv = TreeView(s)
    mark = len(wire.messages)
    say(s, "one more")
    tv.flush()
    out = wire.since(mark)
    assert [t for t, cid, _ in out if cid == tv.comm.comm_id] == ["comm_msg"]  # one patch, no trait sync
    (patch,) = wire.custom(tv, mark)
    assert patch["type"] == "patch" and patch["base"] + 1 == patch["version"] == tv.data["version"]
    assert sorted((n["id"], n["head"]) for n in patch["set"]) == [("e100", False), ("e101", False), ("e102", True)]
    assert patch["drop"] == [] and "markers" not in patch and "links" not in patch
    assert patch["meta"]["total"] == 102 and patch["meta"]["head"] == "e102"
    # a head move to another branch: the rows that change, not the tree
    mark = len(wire.messages)
    tv.continue_from("e50")
    (patch,) = wire.custom(tv, mark)
    assert 0 < len(patch["set"]) < 102 and patch["meta"]["head"] == s.head == "e50"
    assert drawn(tv) == reference(tv, s)
    # nothing changed: nothing sent
    mark = len(wire.messages)
    tv.flush()
    tv.refresh()
    assert wire.custom(tv, mark) == []


def apply(data, patch):
    """What the browser does with a patch (treeview.js ``applyPatch``), in Python."""
    rows = {n["id"]: n for n in data["nodes"]}
    for nid in patch["drop"]:
        del rows[nid]
    rows.update((n["id"], n) for n in patch["set"])
    return {**data, **patch["meta"], "version": patch["version"], "nodes": sorted(rows.values(), key=lambda n: n["row"]),
            "markers": patch.get("markers", data["markers"]), "links": patch.get("links", data["links"])}


OPS = st.lists(st.tuples(st.sampled_from(["say", "queue", "edit", "regen", "look", "continue", "toggle", "run",
                                          "interrupt", "draw"]), st.integers(0, 10_000)), max_size=40)


@settings(max_examples=40)
@given(ops=OPS, autorun=st.booleans(), summarize=st.booleans())
def test_patches_applied_in_order_equal_the_layout_of_the_session(ops, autorun, summarize):
    """Issue 14: "what the page shows after a burst equals the session": the snapshot and every
    patch, applied in order as the browser does, equal ``layout`` of the session from scratch."""
    w = Wire()
    cls = w.comm_class()
    original = comm.create_comm
    comm.create_comm = lambda **kwargs: cls(**kwargs)
    try:
        s = convlab.Session(config=SUMMARIZE if summarize else None, autorun=autorun)
        tv = TreeView(s, max_depth=2, budget=6, interval=3600)
        shown = tv.snapshot

        def check():
            nonlocal shown
            tv.flush()
            for patch in w.custom(tv):
                assert patch["base"] == shown["version"]
                shown = apply(shown, patch)
            w.messages.clear()
            assert shown == tv.data
            assert drawn(tv) == reference(tv, s)

        for op, k in ops:
            path = s.path()
            try:
                if op == "say":
                    say(s, f"m{k}")
                elif op == "queue":
                    say(s, f"q{k}", queue=True)
                elif op == "edit" and path:
                    intents.edit(s, k % len(path), f"edit {k}")
                elif op == "regen" and len(path) > 1 and path[k % len(path)]["role"] == "assistant":
                    intents.regenerate(s, k % len(path))
                elif op == "look" and len(s.tree):
                    tv.checkout(list(s.tree)[k % len(s.tree)])
                elif op == "continue" and len(s.tree):
                    tv.continue_from(list(s.tree)[k % len(s.tree)])
                elif op == "toggle" and tv.data["markers"]:
                    tv.toggle(tv.data["markers"][k % len(tv.data["markers"])]["id"])
                elif op == "run":
                    s.run()
                elif op == "interrupt" and s.running:
                    s.submit({"type": "client.interrupt", "agent_id": "bot"})
                elif op == "draw":
                    check()
            except convlab.Refused:
                pass
        check()
        tv.close()
    finally:
        comm.create_comm = original


def test_a_view_that_missed_patches_gets_the_whole_layout(wire):
    """The JS asks ``{"type": "sync", "version"}`` when a patch does not follow what it holds."""
    s = convlab.Session()
    tv = TreeView(s)
    say(s, "hi")
    tv.flush()
    mark = len(wire.messages)
    tv._on_msg(tv, {"type": "sync", "version": tv.data["version"]}, [])
    assert wire.custom(tv, mark) == []  # up to date: nothing to send
    tv._on_msg(tv, {"type": "sync", "version": 1}, [])
    (snap,) = wire.custom(tv, mark)
    assert snap == {"type": "snapshot", "data": tv.data}


def test_the_selection_follows_the_head_when_it_moves():
    """Issue 14: "the selection panel ("selected e4 / Continue from here") follows the head when it moves"."""
    s = branched()
    lab = Lab(s)
    out = lab.tree.checkout("u1")
    assert out["ok"] and s.head == "e2" and lab.tree.data["selected"] == "u1"  # its own look: the selection stays
    lab.chat.send("and then?")  # the head moves elsewhere
    assert s.head not in ("u1", "e2") and lab.tree.data["selected"] == s.head == lab.tree.selected
    say(s, "more")  # a cell moves it
    lab.flush()
    assert lab.tree.data["selected"] == s.head and lab.tree.data["status"] == ""


def settle(s):
    """Answer the decisions as the chat worker would, up to a context.limit."""
    while s.pending and s.pending["type"] != "context.limit":
        s.decide([{"type": "llm.call"}] if s.pending["type"] == "turn.start" else [{"type": "turn.end"}])


def test_rows_keep_their_order_after_a_summary():
    """Issue 14: "the tree keeps its row order after a summary (a new root goes below; the old rows stay where they were)"."""
    s = convlab.Session(worker="manual", config=SUMMARIZE.replace("120", "45"))
    say(s, "Sam had 120ml of milk at noon.")
    settle(s)
    say(s, "Then a nap at 2.")
    settle(s)
    intents.edit(s, 2, "Then a nap at 2, forty minutes.")  # a branch beside it, the newest
    settle(s)
    intents.regenerate(s, 3)  # a second reply beside the first
    settle(s)
    say(s, "How much did Sam drink today?")
    settle(s)
    assert s.pending["type"] == "context.limit"
    tv = TreeView(s)
    before = [(n["id"], n["row"], n["lane"]) for n in tv.data["nodes"]]
    assert any(lane > 0 for _i, _r, lane in before)  # side branches
    s.decide(s.pending["proposed"])  # the summary: a new root and a copy
    settle(s)
    tv.flush()
    after = {n["id"]: n for n in tv.data["nodes"]}
    assert [(nid, after[nid]["row"]) for nid, _r, _l in before] == [(nid, r) for nid, r, _l in before]
    assert all(after[nid]["lane"] == lane + 1 for nid, _r, lane in before)  # one lane right: lane 0 is the path
    old = {nid for nid, _r, _l in before}
    new = [n for n in tv.data["nodes"] if n["id"] not in old]
    assert new and min(n["row"] for n in new) > max(r for _i, r, _l in before)  # the new root goes below
    assert new[0]["kind"] == "summary" and new[0]["parent"] is None and new[0]["path"]


# -- the chat, the gauge, the log ---------------------------------------------------

def test_the_chat_redraws_its_messages_only_when_the_path_changes(monkeypatch):
    """Issue 14: "the chat re-renders only when the active path changes"; a draw makes rows only for
    messages new to it, and the browser gets them in one message."""
    made = []
    real = ChatView._row
    monkeypatch.setattr(ChatView, "_row", lambda self, node, k, n: (made.append(node["id"]), real(self, node, k, n))[1])
    s = convlab.Session(worker="manual")
    chat = ChatView(s, limit=10)
    sent = []
    monkeypatch.setattr(chat.messages, "_send", lambda msg, buffers=None: sent.append(msg))
    for i in range(60):
        say(s, f"q{i}")
        s.decide([{"type": "llm.call"}])
        s.decide([{"type": "turn.end"}])
        if i % 7 == 0:
            chat.flush()
    chat.flush()
    assert len(made) <= 9 * chat.limit and len(made) == len(set(made))  # each shown message made once
    assert [r["id"] for r in chat.messages.rows] == [n["id"] for n in s.path()][-10:]
    made.clear()
    sent.clear()
    say(s, "one more")  # a turn starts and waits: the path grows by one
    chat.flush()
    assert made == [s.head]
    rows = [m["content"] for m in sent if m.get("method") == "custom" and m["content"]["type"] == "rows"]
    assert len(rows) == 1 and [r["id"] for r in rows[0]["set"]] == [s.head]  # the new row only, not the ten shown
    assert rows[0]["order"] == [n["id"] for n in s.path()][-10:] and rows[0]["base"] == rows[0]["version"] - 1
    s.decide([{"type": "turn.end"}])  # turn and decision events, the same path
    sent.clear()
    chat.flush()
    assert made == [s.head] and "running" not in chat.title.value
    assert not [m for m in sent if m.get("method") == "custom"]  # nothing new for the browser's rows
    chat.messages._handle_custom_msg({"type": "sync"}, [])  # a view that opens asks for everything
    (snapshot,) = [m["content"] for m in sent if m.get("method") == "custom"]
    assert snapshot["base"] is None and snapshot["set"] == chat.messages.rows and snapshot["version"] == rows[0]["version"]


def test_the_gauge_counts_only_the_messages_new_on_the_path(monkeypatch):
    """The exact count is a running total per message: a draw counts what is new on the path."""
    s = convlab.Session()
    lab = Lab(s)
    for i in range(100):
        say(s, f"message {i}")
    lab.flush()
    counted = []
    real = convlab.widgets.gauge.count_tokens
    monkeypatch.setattr(convlab.widgets.gauge, "count_tokens", lambda m: (counted.append(1), real(m))[1])
    say(s, "one more")
    lab.flush()
    assert len(counted) == 2 and lab.gauge.exact == convlab.count_tokens(s.path())
    intents.look(s, "e2")  # back up the path: nothing new to count
    lab.flush()
    assert len(counted) == 2 and lab.gauge.exact == convlab.count_tokens(s.path())


def test_the_event_log_appends(wire):
    """Issue 14: "the event log appends": a draw sends one new block with the new events' lines."""
    s = convlab.Session()
    say(s, "hi")
    log = EventLog(s)
    old = list(log.lines.children)
    mark = len(wire.messages)
    n = len(s.events)
    say(s, "again")
    log.flush()
    new = s.events[n:]
    opened = [d for t, _cid, d in wire.since(mark) if t == "comm_open" and d["state"].get("_model_name") == "HTMLModel"]
    assert len(opened) == 1
    lines = opened[0]["state"]["value"]
    assert all(f">{e['seq']} t=" in lines for e in new) and f">{n} t=" not in lines
    assert list(log.lines.children[1:]) == old  # the old block is kept as it was
    assert [e["seq"] for e in log.shown()] == [e["seq"] for e in reversed(s.events)]
    for i in range(30):  # many draws: blocks are merged, and only the newest `limit` lines are kept
        say(s, f"m{i}")
        log.flush()
    assert len(log.lines.children) <= 12
    log.limit = 50
    say(s, "last")
    log.flush()
    assert [e["seq"] for e in log.shown()] == [e["seq"] for e in reversed(s.events)][:50]


class Streamer:
    """A provider that streams its reply in chunks (and, given a chat, looks at it between them)."""

    def __init__(self, fail=False):
        self.chat, self.fail, self.seen = None, fail, []

    def complete(self, request):
        return {"content": "one two three four", "usage": {"input_tokens": 5, "output_tokens": 4}}

    def stream(self, request):
        for i, piece in enumerate(["one ", "two ", "three ", "four"]):
            yield piece
            if self.fail and i == 1:
                raise convlab.ProviderError("failed", "the connection dropped")
            if self.chat is not None:
                self.chat.flush()
                self.seen.append(dict(self.chat.messages.stream))
        yield self.complete(request)


def test_the_chat_shows_a_reply_as_it_streams_then_the_recorded_message(clock):
    """Issue 12/14: "the Lab's chat shows a reply as it streams (coalesced like the rest), then the recorded message replaces it"."""
    llm = Streamer()
    s = convlab.Session(llm=llm, worker="manual")
    lab = Lab(s)
    llm.chat = lab.chat
    say(s, "count to four")
    s.decide([{"type": "llm.call"}])
    assert [seen["text"] for seen in llm.seen] == ["one ", "one two ", "one two three ", "one two three four"]
    assert {seen["id"] for seen in llm.seen} == {s.path()[-1]["id"]}  # the reply's id, announced before it is recorded
    lab.flush()
    reply = s.path()[-1]
    rows = lab.chat.messages.rows
    assert lab.chat.messages.stream == {} and rows[-1]["id"] == reply["id"]
    assert rows[-1]["text"] == "one two three four"
    assert "llm.delta" not in {e["type"] for e in s.events} and lab.events.shown()[0] is s.events[-1]
    assert lab.tree.data["head"] == reply["id"]


def test_deltas_are_coalesced_and_a_failed_stream_goes_away(clock):
    """Deltas draw like any event, not one draw each; a call that fails takes its streaming row with it."""
    s = convlab.Session(llm=Streamer(fail=True), worker="manual")
    lab = Lab(s)
    say(s, "count")
    before = draws(lab)
    s.decide([{"type": "llm.call"}])
    assert draws(lab) == before  # the clock stood still: deltas and events, nothing drawn yet
    assert lab.flush() == 5
    assert s.turns[-1]["status"] == "failed" and lab.chat._stream is None
    assert lab.chat.messages.stream == {}


def test_listeners_cope_with_events_without_seq(clock):
    """PROTOCOL 7 (rev 3): ``llm.delta`` has no ``seq`` and is not in ``session.events``; every widget copes."""
    s = convlab.Session()
    lab = Lab(s)
    deltas = []
    s.subscribe(lambda e: deltas.append(e) if e["type"] == "llm.delta" else None)
    say(s, "stream this reply please")
    assert deltas and all("seq" not in d for d in deltas)
    lab.flush()
    assert lab.events.count.value.endswith(f">{len(s.events)} events</span>")
    assert [e["seq"] for e in lab.events.shown()] == [e["seq"] for e in reversed(s.events)]
    assert lab.chat.messages.stream == {} and lab.chat._path_ids[-1] == s.head


def test_replies_at_the_head_never_lay_the_tree_out_again():
    """The Lab's work per turn does not grow with the tree (the bench row measures the time)."""
    s = convlab.Session()
    lab = Lab(s, interval=0.0)
    tv = lab.tree
    for i in range(30):
        say(s, f"m{i}")
    laid_out = []
    real = tv._layout_again
    tv._layout_again = lambda head: (laid_out.append(head), real(head))[1]
    for i in range(30):
        say(s, f"n{i}")
        lab.flush()
    assert laid_out == [] and tv.redraw.count >= 30
    assert lab.chat._path_ids[-1] == s.head and drawn(tv) == reference(tv, s)


def test_a_decision_a_worker_answers_at_once_is_never_drawn(clock, monkeypatch):
    """The decision panel shows what waits for a person: a draw in the middle of a step (the
    chat worker about to answer ``turn.start``) would build a panel that is gone a moment later."""
    from convlab.widgets import DecisionPanel

    built = []
    real = DecisionPanel._turn_start
    monkeypatch.setattr(DecisionPanel, "_turn_start", lambda self, d: (built.append(d), real(self, d))[1])
    s = convlab.Session()
    panel = DecisionPanel(s)
    real_monotonic = clock.monotonic
    clock.monotonic = lambda: (setattr(clock, "now", clock.now + 1.0), real_monotonic())[1]  # every event: time to draw
    for i in range(10):
        say(s, f"m{i}")
    assert panel.redraw.count >= 10 and built == []
    manual = convlab.Session(worker="manual")
    panel = DecisionPanel(manual)
    say(manual, "waits for a person")
    panel.flush()
    assert len(built) == 1 and set(panel.buttons) == {"call", "end"}


def test_new_event_types_keep_the_filter_and_the_lines():
    """The filter's options grow with the event types seen; a chosen filter stays, and no line shows twice."""
    s = convlab.Session(worker="manual")
    log = EventLog(s)
    log.filter.value = "session.started"
    say(s, "hi")  # new types: turn.started, message.new, decision.requested
    log.flush()
    assert log.filter.value == "session.started" and "decision.requested" in log.filter.options
    assert [e["seq"] for e in log.shown()] == [1]
    log.filter.value = "decision.*"
    s.decide([{"type": "llm.call"}])  # new types: llm.*, decision.answered
    log.flush()
    seqs = [e["seq"] for e in log.shown()]
    assert seqs == sorted(set(seqs), reverse=True) == [e["seq"] for e in reversed(s.events) if e["type"].startswith("decision.")]


def test_a_long_burst_draws_less_often_as_it_goes_on(clock):
    """live: after t seconds without a pause the wait is t / DECAY, up to SLOWEST (about once a
    second): a replay of thousands of turns spends less and less on pictures."""
    times = []
    r = live.Redraw(lambda: times.append(clock.now))
    for _ in range(1200):  # 120 s of events, one every 0.1 s
        clock.now += 0.1
        r.touch()
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= live.SLOWEST + 0.2 + 1e-6  # still about once a second at the end (events come every 0.1 s)
    first = [t for t in times if t <= times[0] + 5]
    last = [t for t in times if t >= clock.now - 60]
    assert len(first) >= 11 and len(last) <= 61  # lively at first (events every 0.1 s: a draw every 0.4 s), then about once a second
    assert len(times) < 1200 * 0.1 / live.INTERVAL / 2  # far fewer than at 4 a second
    r.flush()
    clock.now += live.QUIET + 0.5  # a pause: the next burst is lively again
    r.touch()
    clock.now += live.INTERVAL + 0.01
    r.touch()
    assert times[-1] == clock.now


def test_a_session_driven_from_a_worker_thread_is_drawn_by_that_thread(clock):
    """live: a thread with no event loop (a server's worker, as convlab.agui runs sessions) cannot
    have a timer, so each widget draws there where a turn ends; the end of a cell (on the kernel's
    thread) leaves that session to its thread, never drawing it while the thread changes it."""
    s = convlab.Session()
    lab = Lab(s)
    before = draws(lab)

    def drive():
        for i in range(5):
            say(s, f"from a worker {i}")

    worker = threading.Thread(target=drive)
    worker.start()
    worker.join()
    made = [n - b for n, b in zip(draws(lab), before)]
    assert all(1 <= n <= 5 * 3 for n in made), made  # where a turn ends or asks for a decision, not per event
    assert not any(p.redraw.dirty for p in lab._parts())
    assert lab.tree.data["head"] == s.head and lab.chat._path_ids[-1] == s.head
    assert lab.events.shown()[0] is s.events[-1] and lab.gauge.tokens == s.tokens()
    # an event from the worker that ends nothing: the cell's end on this thread does not draw it
    tv = TreeView(convlab.Session(autorun=False))
    tv.redraw.touch("message.new")
    other = threading.Thread(target=lambda: tv.redraw.touch("message.new"))
    other.start()
    other.join()
    live._after_cell()
    assert tv.redraw.dirty  # its latest event came from another thread
    tv.redraw.touch("message.new")
    live._after_cell()
    assert not tv.redraw.dirty


SHOWN = {  # where each widget shows a drawing bug to the person
    "TreeView": lambda v: v.status,
    "ChatView": lambda v: v.status_line.value,
    "ContextGauge": lambda v: v.bar.value,
    "DecisionPanel": lambda v: v.body.children[0].value,
}


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_a_drawing_bug_is_shown_in_the_widget_never_raised_into_the_session(name, monkeypatch):
    s = convlab.Session(worker="manual")
    view = getattr(convlab, name)(s)
    monkeypatch.setattr(view, "_sync", lambda: (_ for _ in ()).throw(RuntimeError("boom <b>")))
    say(s, "hi")  # the session's events reach the broken widget: the submit still works
    view.refresh()
    shown = SHOWN[name](view)
    if name == "TreeView":  # sent as text: the page sets it as text, never as HTML
        assert shown == "display error: RuntimeError: boom <b>"
    else:  # HTML: the error is escaped
        assert '<span class="clw-status">display error: RuntimeError: boom &lt;b&gt;</span>' in shown
    assert s.pending["type"] == "turn.start"
