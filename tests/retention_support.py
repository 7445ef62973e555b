"""For the retention tests (tests/test_compactions.py, tests/test_probes.py, tests/test_search.py): turns
whose user messages each state facts of their own, the one-strategy config that compacts them, and a fake
judge that knows what they state."""

from __future__ import annotations

import json
import os
import re

from convlab.conversation import Conversation
from convlab.tuning.probes import QUESTIONS
from convlab.tokens import count_tokens
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


def said(request):
    """The prompt of a judge request and what came before it."""
    messages = request["messages"]
    return messages[-1]["content"], "\n".join(m["content"] for m in messages[:-1])


class Knowing:
    """A fake judge: asks which file each step opened (the paths its span states), answers a question
    iff the reference is in its prompt, and says yes to a grade iff the reference is in the answer."""

    def __init__(self, questions=None):
        self.calls, self.pids, self.requests = 0, [], []
        self.questions = questions  # a fixed reply to the questions call (bad JSON, ...)

    def complete(self, request):
        self.calls += 1
        self.pids.append(os.getpid())
        self.requests.append(request)
        prompt, before = said(request)
        usage = {"input_tokens": count_tokens(request["messages"]), "output_tokens": 5}
        if prompt.startswith(QUESTIONS.split("{")[0]) or prompt.startswith("That was not"):
            if self.questions is not None:
                return {"content": self.questions, "usage": usage}
            n = int(re.search(r"up to \(?(\d+)", prompt).group(1))
            steps = dict.fromkeys(re.findall(r"/srv/step(\d+)\.py", before))
            pairs = [{"question": f"Which file did step {s} open?", "answer": f"/srv/step{s}.py"} for s in steps][:n]
            return {"content": "Here: " + json.dumps(pairs), "usage": usage}
        if prompt.startswith("Answer"):
            step = re.search(r"step (\d+)", prompt).group(1)
            path = f"/srv/step{step}.py"
            return {"content": path if path in before else "I do not know.", "usage": usage}
        m = re.search(r"Reference answer: (.*)\nGiven answer: (.*)\n", prompt)
        return {"content": "yes" if m and m.group(1) in m.group(2) else "no", "usage": usage}
