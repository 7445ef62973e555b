"""The examples of docs/api.md (its ``>>>`` blocks: exploring a tree) run as written."""

from __future__ import annotations

import doctest
from pathlib import Path

API = Path(__file__).parents[1] / "docs" / "api.md"


def test_the_examples_of_docs_api_md_run():
    result = doctest.testfile(str(API), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0
