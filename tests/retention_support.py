"""Conversations for the retention tests (tests/test_compactions.py, tests/test_probes.py): turns whose
user messages each state facts of their own, and the one-strategy config that compacts them."""

from __future__ import annotations

from convlab.conversation import Conversation
from convlab.tree import Tree

NAMES = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth"]


def conv(rows, cid="c"):
    """A conversation of ``(id, parent, role, content, extra)`` rows, its head the last one."""
    t = Tree()
    for nid, parent, role, content, extra in rows:
        t.add({"id": nid, "role": role, "content": content, **extra}, parent)
    t.head = rows[-1][0]
    return Conversation(t, id=cid)


def turns(n, chars=2000):
    """n turns, each user message stating facts of its own (a path, a number with a unit, a name)."""
    rows, parent = [], None
    for i in range(n):
        rows.append((f"u{i}", parent, "user", f"Please ask {NAMES[i]} to open /srv/step{i}.py, it takes {i}{i} ms " + "x" * chars, {}))
        rows.append((f"a{i}", f"u{i}", "assistant", f"ok {i}", {"usage": {"input_tokens": 600 * (i + 1), "output_tokens": 1}}))
        parent = f"a{i}"
    return rows


def config(use, over_tokens):
    return f"[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = '{use}'\nover_tokens = {over_tokens}"
