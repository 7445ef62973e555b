"""PROTOCOL.md 2 / tree.py: matching a view uses the id index and one parent check per message: it
never walks the tree. Every networkx traversal a walk would use is made to raise while views are
matched against a big tree (autorun=False: submit only matches, records and starts the turn)."""

from __future__ import annotations

import sys

import networkx as nx
import pytest

from session_support import a, m, make, message, path_ids, view

TRAVERSALS = ("dfs_preorder_nodes", "descendants", "ancestors", "shortest_path", "bfs_tree", "dfs_tree")
DEPTH = 3000
BRANCHES = 40


class Walked(AssertionError):
    pass


def _raiser(name):
    def walk(*args, **kwargs):
        raise Walked(f"matching a view walked the tree: {name}")

    return walk


def forbid_walks(monkeypatch):
    """Make every traversal raise, wherever it was imported from (networkx or a convlab module)."""
    for name in TRAVERSALS:
        original = getattr(nx, name)
        for modname, mod in list(sys.modules.items()):
            if mod is None or not (modname == "networkx" or modname.startswith(("networkx.", "convlab"))):
                continue
            try:
                if getattr(mod, name, None) is original:
                    monkeypatch.setattr(mod, name, _raiser(name))
            except Exception:  # pragma: no cover - odd lazy modules
                continue
    for meth in ("predecessors", "successors", "neighbors"):
        monkeypatch.setattr(nx.DiGraph, meth, _raiser(f"DiGraph.{meth}"))


def big_tree():
    s = make(autorun=False, worker=lambda d: [])
    chain = [(m if i % 2 == 0 else a)(f"n{i}", f"message {i}") for i in range(DEPTH)]
    s.submit(view(chain))
    s.run()
    for b in range(BRANCHES):
        cut = (b * 997) % (DEPTH - 1) + 1
        s.submit(view([{"id": f"n{i}", "role": "user", "content": ""} for i in range(cut)] + [m(f"b{b}", f"branch {b}")]))
        s.run()
    assert len(s.tree) == DEPTH + BRANCHES
    return s, chain


def test_the_patch_does_catch_a_walk(monkeypatch):
    """A test that cannot fail is a defect: the patched traversals do raise."""
    s, _ = big_tree()
    forbid_walks(monkeypatch)
    with pytest.raises(Walked):
        nx.descendants(s.tree, "n0")
    with pytest.raises(Walked):
        list(s.tree.successors("n0"))


def matched(monkeypatch, s, inp):
    """Submit ``inp`` with every traversal forbidden (only while the view is matched and recorded)."""
    with monkeypatch.context() as mp:
        forbid_walks(mp)
        return s.submit(inp)


def known(ids):
    return [{"id": i, "role": "user", "content": ""} for i in ids]


def test_matching_views_never_walks_the_tree(monkeypatch):
    import convlab

    s, chain = big_tree()
    ids = [f"n{i}" for i in range(DEPTH)]
    # the whole chain again: switches back to it from the last branch
    matched(monkeypatch, s, view(known(ids)))
    assert s.head == ids[-1]
    s.run()
    # an edit deep in the tree
    r = matched(monkeypatch, s, view(known(ids[:2500]) + [m(None, "edit")]))
    assert r["new_from"] == 2500
    s.run()
    # a view that stops at an earlier node (head only)
    matched(monkeypatch, s, view(known(ids[:1234])))
    assert s.head == ids[1233]
    s.run()
    # a view onto another branch
    matched(monkeypatch, s, view(known(ids[:998]) + known(["b1"])))  # b1 hangs under n997
    assert s.head == "b1"
    s.run()
    # a refused view that is not a path
    with pytest.raises(convlab.Refused) as info:
        matched(monkeypatch, s, view(known(ids[:10]) + known(["n2999"])))
    assert info.value.status == 400
    # a message appended under the head
    matched(monkeypatch, s, message(m("last", "end")))
    s.run()
    assert path_ids(s)[-1] == "last" and len(path_ids(s)) == 1000
