"""PROTOCOL.md 1: messages and the tree, through the public Session surface."""

from __future__ import annotations

import json

import networkx as nx

from session_support import a, children, m, make, message, node, nodes, path_ids, reply, view

import convlab


def chat(**kw):
    kw.setdefault("llm", convlab.ScriptedLLM([reply(f"r{i}") for i in range(1, 20)]))
    return make(**kw)


def test_empty_session_head_is_root():
    """"The head is the active leaf (or the root when empty)." """
    s = make()
    assert s.head is None
    assert s.path() == []
    snap = s.snapshot()
    assert snap["agent"] == "bot"
    assert snap["head"] is None
    assert snap["nodes"] == []
    assert snap["turns"] == []


def test_top_level_messages_hang_under_the_root():
    """"Top-level messages hang under a root that is not a message (parent is null in JSON)." """
    s = chat()
    s.submit(message(m("u1", "hello")))
    n = node(s, "u1")
    assert n["parent"] is None
    assert json.loads(json.dumps(s.snapshot()))["nodes"][0]["parent"] is None
    # the root is not a node of the graph
    assert None not in s.tree.nodes
    assert set(s.tree.nodes) == set(nodes(s))


def test_each_message_has_one_parent_and_the_graph_is_a_forest_of_edges_parent_to_child():
    """"Each recorded message is a node with one parent." / "edge parent -> child" (API.md)."""
    s = chat()
    s.submit(message(m("u1", "q1")))
    s.submit(view([m("u1"), m(None, "q1 edited")]))
    g = s.tree
    assert isinstance(g, nx.DiGraph)
    for nid, attrs in g.nodes(data=True):
        preds = list(g.predecessors(nid))
        if attrs["parent"] is None:
            assert preds == []
        else:
            assert preds == [attrs["parent"]]
    assert nx.is_forest(g)


def test_recorded_node_attributes():
    """"Recorded node attributes: id, parent, role, content, seq (creation order), time (clock),
    turn_id, copied_from, kind (message or summary), usage ({input_tokens, output_tokens} on model
    replies), and state." """
    s = chat(clock=100.0)
    s.submit(message(m("u1", "hello")))
    u1, r1 = s.path()
    for n in (u1, r1):
        for key in ("id", "parent", "role", "content", "seq", "time", "turn_id", "copied_from", "kind", "usage", "state"):
            assert key in n, key
    assert u1["role"] == "user" and u1["content"] == "hello"
    assert u1["kind"] == "message" and r1["kind"] == "message"
    assert u1["copied_from"] is None
    assert u1["turn_id"] == "t1" and r1["turn_id"] == "t1"
    assert u1["time"] == 100.0
    assert r1["parent"] == "u1"
    assert r1["role"] == "assistant" and r1["content"] == "r1"
    assert r1["usage"]["input_tokens"] == 1 and r1["usage"]["output_tokens"] == 1
    # the tree's node attributes are the same as path() and snapshot() give
    assert dict(s.tree.nodes["u1"]) == u1 == node(s, "u1")


def test_seq_is_creation_order():
    """"seq (creation order)"; docs/wire.md: 1, 2, ... and snapshot nodes in seq order."""
    s = chat()
    s.submit(view([m("u1", "a"), a("a1", "b"), m("u2", "c")]))
    s.submit(view([m("u1"), m("x1", "branch")]))
    snap = s.snapshot()
    seqs = [n["seq"] for n in snap["nodes"]]
    assert seqs == list(range(1, len(seqs) + 1))
    order = [n["id"] for n in snap["nodes"]]
    reply_id = [n["id"] for n in snap["nodes"] if n["content"] == "r1"][0]
    assert order[:4] == ["u1", "a1", "u2", reply_id]
    assert order.index("x1") > order.index(reply_id)


def test_content_parts_and_other_keys_are_kept_as_given():
    """"content is a string or a list of parts (text or any other part, kept as given). Other keys
    (name, tool_calls, tool_call_id, metadata) are kept as given." """
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:x"}}]
    calls = [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    s = make(worker=lambda d: [])
    s.submit(
        view(
            [
                m("u1", parts, name="sam", metadata={"k": [1, 2]}),
                a("a1", "", tool_calls=calls),
                m("tool1", "42", role="tool", tool_call_id="call_1"),
            ]
        )
    )
    n = nodes(s)
    assert n["u1"]["content"] == parts
    assert n["u1"]["name"] == "sam"
    assert n["u1"]["metadata"] == {"k": [1, 2]}
    assert n["a1"]["tool_calls"] == calls
    assert n["tool1"]["tool_call_id"] == "call_1"
    assert n["tool1"]["role"] == "tool"


def test_system_role_is_a_message():
    """"role is one of system, user, assistant, tool." """
    s = make(worker=lambda d: [])
    s.submit(view([m("s1", "be brief", role="system"), m("u1", "hi")]))
    assert [n["role"] for n in s.path()] == ["system", "user"]


def test_engine_owned_attributes_sent_by_a_client_are_ignored():
    """"The engine owns the recorded attributes. On a new message a client may send them; they are
    ignored, never recorded (gap)." """
    s = make(worker=lambda d: [], clock=5.0)
    s.submit(
        message(
            m(
                "u1",
                "hi",
                parent="nope",
                seq=99,
                time=-1,
                turn_id="t77",
                copied_from="zzz",
                kind="summary",
                usage={"input_tokens": 5000, "output_tokens": 1},
                state={"x": 1},
                replaces="old",
            )
        )
    )
    n = node(s, "u1")
    assert n["parent"] is None
    assert n["seq"] == 1
    assert n["time"] == 5.0
    assert n["turn_id"] == "t1"
    assert n["copied_from"] is None
    assert n["kind"] == "message"
    assert n["usage"] is None
    assert n["state"] is None
    assert n.get("replaces") is None
    assert s.state == {}
    # the ignored usage plays no part in the count (5.1): chars/4 of "hi"
    assert s.tokens() == 1


def test_ids_are_unique_and_the_tree_only_grows():
    """"Ids are unique in a session. The tree only grows: no message is ever deleted and no
    content ever changes." """
    s = chat()
    seen: dict[str, object] = {}
    inputs = [
        message(m("u1", "one")),
        view([m("u1", "CHANGED")]),  # regenerate under a known id: content must not change
        view([m("u1"), m(None, "edit")]),
        message(m(None, "more")),
    ]
    for inp in inputs:
        s.submit(inp)
        snap = s.snapshot()
        ids = [n["id"] for n in snap["nodes"]]
        assert len(ids) == len(set(ids))
        for nid, content in seen.items():
            assert node(s, nid)["content"] == content
        seen.update({n["id"]: n["content"] for n in snap["nodes"]})
    assert node(s, "u1")["content"] == "one"


def test_engine_ids_turn_ids_and_call_ids():
    """"Engine-made ids are e1, e2, ... in order of creation; turn ids t1, t2, ...; model call ids
    llm-1, llm-2, ..." """
    s = make()  # EchoLLM
    s.submit(message(m(None, "first")))
    s.submit(message(m(None, "second")))
    assert path_ids(s) == ["e1", "e2", "e3", "e4"]
    assert [t["id"] for t in s.turns] == ["t1", "t2"]
    calls = [e["call_id"] for e in s.events if e["type"] == "llm.started"]
    assert calls == ["llm-1", "llm-2"]


def test_path_is_root_to_head_and_is_what_the_model_sees():
    """"The active path is root -> head; it is what the model sees." """
    from session_support import RecordingLLM

    llm = RecordingLLM()
    s = make(llm=llm)
    s.submit(message(m("u1", "hello")))
    s.submit(message(m("u2", "again")))
    p = s.path()
    assert p[-1]["id"] == s.head
    for parent, child in zip(p, p[1:]):
        assert child["parent"] == parent["id"]
    assert p[0]["parent"] is None
    # the second call read the path as it was at the call: u1, r1, u2
    assert [msg["content"] for msg in llm.requests[1]["messages"]] == ["hello", "r1", "again"]


def test_snapshot_is_the_whole_tree_as_json():
    """"snapshot() returns the whole tree as JSON: agent id, head, every node with its attributes, turns." """
    s = chat()
    s.submit(message(m("u1", "q")))
    s.submit(view([m("u1"), m("x", "other")]))
    snap = s.snapshot()
    assert json.loads(json.dumps(snap)) == snap
    assert set(snap) >= {"agent", "head", "nodes", "turns"}
    assert {n["id"] for n in snap["nodes"]} == set(s.tree.nodes)  # every branch, not only the active one
    assert snap["head"] == s.head
    assert [t["id"] for t in snap["turns"]] == [t["id"] for t in s.turns]
    # a snapshot is a copy: changing it changes nothing
    snap["nodes"][0]["content"] = "tampered"
    assert node(s, "u1")["content"] == "q"


def test_path_returns_copies():
    """The tree only grows and no content ever changes: path() hands out copies."""
    s = chat()
    s.submit(message(m("u1", "q")))
    p = s.path()
    p[0]["content"] = "tampered"
    assert s.path()[0]["content"] == "q"


def test_children_of_a_branch_point():
    """Two replies to one message are siblings under it (one parent each)."""
    s = chat()
    s.submit(message(m("u1", "q")))
    s.submit(view([m("u1")]))  # regenerate
    assert [node(s, c)["content"] for c in children(s, "u1")] == ["r1", "r2"]


def test_usage_sent_on_a_client_assistant_message_is_ignored():
    """1: usage is engine-owned ("usage on model replies"); sent by a client it is ignored, so it plays no
    part in the count (5.1: "the last node whose usage came from a model reply")."""
    s = make(worker=lambda d: [])
    s.submit(view([m("u1", "abcd"), a("a1", "efgh", usage={"input_tokens": 90000, "output_tokens": 1})]))
    assert node(s, "a1")["usage"] is None
    assert s.tokens() == 2
