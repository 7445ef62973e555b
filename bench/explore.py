"""Find in a big tree: ``convlab.find`` on a 100,000-message tree, against the plainest search there is.

The issue: "searching a 100,000-message tree stays interactive". The numerator is ``convlab.find(tree,
word)`` (a word in a few dozen messages): every message's searchable text (its text, each other part as
JSON), case-folded and searched, then the matches' branches, paths and the frame. The denominator is
the least any search must do on the same tree: walk the nodes in order and look for the word in each
message's text, case-folded (``content_text``), returning the ids. The ratio says what find costs beyond
that walk; the note says how long find took (interactive: well under a second).
"""

from __future__ import annotations

import random

from .harness import Row, paired, per_call

#: The word searched for, and how many messages hold it.
NEEDLE, HITS = "quetzalcoatlus", 40


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


def run(smoke: bool) -> Row:
    import gc

    from convlab.explore.matches import find
    from convlab.tokens import content_text

    n = 10_000 if smoke else 100_000
    row = Row("find", f"find: convlab.find of a word in a {n:,}-message tree / the plainest walk and search", 3, "<=",
              num_label="convlab.find", den_label="walk + casefold + in")
    tree = build(n)
    gc.collect()
    gc.freeze()
    try:
        def plain() -> list[str]:
            return [a["id"] for a in tree.nodes_in_order() if NEEDLE in content_text(a["content"]).casefold()]

        found = find(tree, NEEDLE)
        assert found["id"].tolist() == plain() and len(found) == HITS, (len(found), len(plain()))
        t = 0.05 if smoke else 0.5
        num, den, a, b = paired(lambda: per_call(lambda: find(tree, NEEDLE), min_time=t),
                                lambda: per_call(plain, min_time=t), 3 if smoke else 5)
    finally:
        gc.unfreeze()
    row.finish(num, den)
    row.note = f"find took {num * 1000:.0f} ms for {HITS} matches in {n:,} messages (the walk: {den * 1000:.0f} ms); best of paired runs"
    row.extra = {"samples_num": a, "samples_den": b, "messages": n, "matches": HITS}
    return row
