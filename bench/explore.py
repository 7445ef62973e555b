"""Find in a big tree: ``convlab.find`` on 100,000-message trees of two shapes, against the plainest search there is.

The issue: "searching a 100,000-message tree stays interactive". Two shapes, each measured alone: a bushy
tree (branches forking off earlier messages, a word in a few dozen of them) and one long chain (an agent
session: user, assistant calling a tool, its result, ..., the word in one message in ``CHAIN_EVERY``, so
hundreds of matches whose paths are tens of thousands of messages long). The numerator is ``convlab.find(tree,
word)``: every message's searchable text (its text, each other part as JSON), case-folded and searched, then
the matches' branches, paths and the frame. The denominator is the least any search must do on the same
tree: walk the nodes in order and look for the word in each message's text, case-folded (``content_text``),
returning the ids. The row's ratio is the worse shape's (what find costs beyond that walk); the note gives
both shapes' times (interactive: well under a second).
"""

from __future__ import annotations

import random

from .harness import Row, paired, per_call

#: The word searched for, and how many messages of the bushy tree hold it.
NEEDLE, HITS = "quetzalcoatlus", 40
#: One message in this many of the long chain holds the word.
CHAIN_EVERY = 500


def build(n: int, seed: int = 38):
    """A tree of ``n`` messages (branches forking off earlier messages), varied text (sentences of a
    2,000-word vocabulary), one assistant message in five calling a tool, ``HITS`` messages holding ``NEEDLE``."""
    from convlab.tree import Tree

    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(2000)]
    hits = set(rng.sample(range(n), HITS))
    tree, depth, ids = Tree(), {}, []
    i = 0
    while i < n:
        fork = ids[rng.randrange(len(ids))] if ids and rng.random() < 0.97 else None
        d = depth[fork] if fork is not None else 0
        parent = fork
        for _ in range(rng.randint(1, max(1, 100 - d))):
            if i >= n:
                break
            words = rng.choices(vocab, k=rng.randint(8, 60))
            if i in hits:
                words[rng.randrange(len(words))] = NEEDLE.capitalize()
            text = " ".join(words)
            role = ("user", "assistant")[d % 2]
            content: object = text
            if role == "assistant" and rng.random() < 0.2:
                content = [{"type": "text", "text": text},
                           {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"command": " ".join(rng.choices(vocab, k=4))}}]
            nid = f"n{i}"
            tree.add({"id": nid, "role": role, "content": content}, parent)
            d += 1
            depth[nid], parent = d, nid
            ids.append(nid)
            i += 1
    tree.head = ids[-1]
    return tree


def chain(n: int, seed: int = 39):
    """One chain of ``n`` messages, an agent session's shape: a user message, then assistant messages calling a tool
    (``tool_use``), each answered by a ``tool`` result (its ``tool_call_id``), now and then a plain reply; varied
    text (a 2,000-word vocabulary); one message in ``CHAIN_EVERY`` holds ``NEEDLE``."""
    from convlab.tree import Tree

    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(2000)]
    tree, parent = Tree(), None
    role = "user"
    for i in range(n):
        words = rng.choices(vocab, k=rng.randint(8, 60))
        if i % CHAIN_EVERY == CHAIN_EVERY // 2:
            words[rng.randrange(len(words))] = NEEDLE.capitalize()
        text = " ".join(words)
        nid = f"m{i}"
        content: object = text
        extra: dict = {}
        if role == "assistant" and rng.random() < 0.8:
            content = [{"type": "text", "text": text},
                       {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"command": " ".join(rng.choices(vocab, k=4))}}]
        elif role == "tool":
            extra = {"tool_call_id": f"c{i - 1}"}
        tree.add({"id": nid, "role": role, "content": content, **extra}, parent)
        calls = isinstance(content, list)
        role = "tool" if calls else "user" if role == "assistant" and rng.random() < 0.3 else "assistant"
        parent = nid
    tree.head = parent
    return tree


def _shape(tree, hits: int, t: float, repeats: int) -> tuple[float, float, list[float], list[float]]:
    """find and the plain walk on one tree, paired: (best find, best walk, the samples of each)."""
    from convlab.explore.matches import find
    from convlab.tokens import content_text

    def plain() -> list[str]:
        return [a["id"] for a in tree.nodes_in_order() if NEEDLE in content_text(a["content"]).casefold()]

    found = find(tree, NEEDLE)
    assert found["id"].tolist() == plain() and len(found) == hits, (len(found), len(plain()), hits)
    return paired(lambda: per_call(lambda: find(tree, NEEDLE), min_time=t), lambda: per_call(plain, min_time=t), repeats)


def run(smoke: bool) -> Row:
    import gc

    n = 10_000 if smoke else 100_000
    row = Row("find", f"find: convlab.find of a word in a {n:,}-message tree and a {n:,}-message chain / the plainest "
              "walk and search (the worse shape)", 3, "<=", num_label="convlab.find", den_label="walk + casefold + in")
    t, repeats = (0.05, 3) if smoke else (0.5, 5)
    chain_hits = n // CHAIN_EVERY
    shapes = {}
    for name, make, hits in (("tree", build, HITS), ("chain", chain, chain_hits)):
        tree = make(n)
        gc.collect()
        gc.freeze()
        try:
            shapes[name] = _shape(tree, hits, t, repeats)
        finally:
            gc.unfreeze()
            del tree
            gc.collect()
    worse = max(shapes, key=lambda k: shapes[k][0] / shapes[k][1])
    num, den = shapes[worse][:2]
    row.finish(num, den)
    (tn, td, *_), (cn, cd, *_) = shapes["tree"], shapes["chain"]
    row.note = (f"the {worse}'s ratio; find took {tn * 1000:.0f} ms for {HITS} matches in the {n:,}-message tree (the walk: "
                f"{td * 1000:.0f} ms, ratio {tn / td:.2f}) and {cn * 1000:.0f} ms for {chain_hits:,} matches down the "
                f"{n:,}-message chain (the walk: {cd * 1000:.0f} ms, ratio {cn / cd:.2f}); best of paired runs")
    row.extra = {"messages": n, "matches": HITS, "chain_matches": chain_hits, "worse": worse,
                 **{f"{k}_{side}": v for k, (a, b, sa, sb) in shapes.items()
                    for side, v in (("num", a), ("den", b), ("samples_num", sa), ("samples_den", sb))}}
    return row
