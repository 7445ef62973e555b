"""View matching: a 50-message view against a big tree / against a small one.

``Tree.match`` is what ``client.messages`` runs first. The view is the first
49 messages of a deep path plus one new message (what a client sends to add
a message at the end of a branch). Matching must not depend on the tree's
size: an id lookup and a parent check per message.
"""

from __future__ import annotations

from .corpus import build_tree
from .harness import Row, paired, per_call


def _view(path_ids: list[str]) -> list[dict]:
    if len(path_ids) < 49:
        raise RuntimeError(f"the generated tree's deepest path has {len(path_ids)} messages, the view needs 49")
    view = [{"id": nid, "role": "user" if i % 2 == 0 else "assistant", "content": "..."} for i, nid in enumerate(path_ids[:49])]
    view.append({"role": "user", "content": "and now?"})
    return view


def run(smoke: bool) -> Row:
    big_n, small_n = (20_000, 1_000) if smoke else (1_000_000, 1_000)
    row = Row("match", f"view matching: 50-message view, {big_n:,}-node tree / {small_n:,}-node tree", 1.5, "<=",
              num_label=f"per match ({big_n:,})", den_label=f"per match ({small_n:,})")
    import gc

    gc.disable()  # building a million nodes with the collector on only measures the collector
    try:
        big, big_path = build_tree(big_n, seed=3)
        small, small_path = build_tree(small_n, seed=3)
    finally:
        gc.enable()
    gc.collect()
    gc.freeze()  # the trees are long-lived: keep them out of later collections
    try:
        vb, vs = _view(big_path), _view(small_path)
        assert big.match(vb) == (49, big_path[48]) and small.match(vs) == (49, small_path[48])
        t = 0.02 if smoke else 0.2
        num, den, a, b = paired(lambda: per_call(lambda: big.match(vb), min_time=t),
                                lambda: per_call(lambda: small.match(vs), min_time=t), 3 if smoke else 7)
    finally:
        gc.unfreeze()
    row.finish(num, den)
    row.note = "convlab.tree.Tree.match, best of paired runs"
    row.extra = {"samples_num": a, "samples_den": b}
    del big, small
    gc.collect()
    return row
