"""Python's cyclic collector, paused around work whose objects live on.

A read or a replay builds hundreds of thousands of containers that all stay
alive (the trees it returns, the replays a sweep still compares, a sweep's
rows and frame in the process that called it). With the
collector on, each full collection walks every one of them again, for
nothing: what such work leaves behind holds no cycle, and reference counting
frees it. ``paused`` turns the collector off for the work and back on after.
The collector is the process's: while it is paused, another thread's cycles
wait for it too (they are collected when it is back on).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused(collect: bool = True) -> Iterator[None]:
    """The cyclic collector off while the work in the ``with`` runs; one collection at the end when ``collect``
    (what the work made is garbage: a sweep's replays once their rows are taken). Left as it was if it was off,
    so a pause inside another changes nothing.

    >>> import gc
    >>> with paused(collect=False):
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        if collect:
            gc.collect()
