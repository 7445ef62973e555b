"""Exploring a tree: find anything in it, compare two branches, write it out again.

Each works on a ``Session``, an imported ``Conversation`` and a replay's session alike
(``sources.tree_of``), and only reads the tree: what changes a tree (labels, a merge, a
summary) is the engine's, through the protocol (``convlab.engine.branches``). The modules are
named after what they hold, not after the face's functions (``convlab.find`` is
``matches.find``; ``convlab.compare`` is ``branches.compare``; ``convlab.write`` is
``writing.write``), so that no module shadows a function of the face.
"""
