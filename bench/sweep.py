"""A 100-config sweep / one replay of the same corpus (filled in once convlab.tune exists)."""

from __future__ import annotations

from .harness import Row


def run(smoke: bool) -> Row:
    row = Row("sweep", "a 100-config sweep / one replay of the same corpus", 5, "<=", num_label="tune", den_label="replay")
    try:
        import convlab.tune  # noqa: F401
    except ImportError as err:
        row.error = f"not available: {err}"
    return row
