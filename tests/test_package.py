"""The package as a whole (convlab/__init__.py and the rules of the team's style that code can check).

- ``convlab.__all__`` is pinned: adding or removing a public name is a visible change here,
  and every public name is documented: in docs/api.md or in docs/modules.md.
- Every public name resolves (the lazy table points at real definitions).
- No module imports another module's private names (nor a private module).
- No function in the engine or the Claude Code importer is over 80 lines.
- tests/ mirrors the modules: each has its test file, so dead code has nowhere to hide.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import convlab

PACKAGE = Path(convlab.__file__).parent

PUBLIC = [
    "AnthropicChat", "OpenAIChat", "LocalChat", "provider", "CallCancelled",
    "input_tokens",
    "ChatView", "ConfigError", "ContextConfig", "ContextGauge", "Conversation", "DecisionPanel", "EchoLLM", "EventLog", "Lab",
    "LogError", "LogWarning", "PriceError", "ProviderError", "ReadError", "ReadWarning", "Refused", "Replay", "ReplayLLM", "ScriptedLLM",
    "Session", "Strategy", "SummaryWarning", "TokenizerError", "Tree", "TreeView", "brief", "chat_worker", "config_grid", "content_text",
    "readable",
    "conversations_frame", "count_tokens", "frame", "kept", "load_config", "newest_leaf", "read", "replay", "tune",
    "rank", "TuneWarning",
]


def test_all_is_pinned():
    assert convlab.__all__ == sorted(PUBLIC)


def test_every_public_name_is_documented():
    api = (PACKAGE.parent / "docs" / "api.md").read_text()
    ours = (PACKAGE.parent / "docs" / "modules.md").read_text().split("## Public names beyond", 1)[1]
    assert [n for n in convlab.__all__ if not re.search(rf"\b{n}\b", api) and f"`{n}`" not in ours] == []


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves(name):
    value = getattr(convlab, name)
    assert value is not None and name in dir(convlab)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'Sesion'"):
        convlab.Sesion  # noqa: B018


def functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.end_lineno - node.lineno + 1


@pytest.mark.parametrize("module", ["engine.py", "importers/claude_code.py"])
def test_no_function_is_over_80_lines(module):
    long = [(name, n) for name, n in functions(PACKAGE / module) if n > 80]
    assert long == []


def private_imports(path: Path) -> list[str]:
    """``from x import _name`` or ``from ._module import ...`` in one module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if any(p.startswith("_") and not p.startswith("__") for p in parts):
                out.append(f"from {node.module} import ...")
            out += [f"from {node.module} import {a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if any(p.startswith("_") and not p.startswith("__") for p in a.name.split("."))]
    return out


MODULES = sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_no_module_imports_a_private_name(module):
    assert private_imports(PACKAGE / module) == []


def test_the_private_import_check_can_fail(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("from ._common import x\nfrom .tree import _hidden\nimport convlab._secret\n")
    assert private_imports(bad) == ["from _common import ...", "from tree import _hidden", "convlab._secret"]


#: Modules whose tests carry another name.
TESTED_AS = {"engine": "test_session_", "__init__": "test_package", "__main__": "test_cli"}


@pytest.mark.parametrize("module", sorted({p.parts[0].removesuffix(".py") for p in MODULES}))
def test_tests_mirror_the_modules(module):
    """STYLE.md: "tests/ mirrors the modules" (a package by its name: test_importers*, test_widgets*)."""
    tests = Path(__file__).parent
    prefix = TESTED_AS.get(module, f"test_{module}")
    found = [p.name for p in tests.glob("test_*.py") if p.stem == prefix or p.stem.startswith(prefix.rstrip("_") + "_")]
    assert found, f"no tests/{prefix}*.py for convlab/{module}"
