"""The package as a whole (convlab/__init__.py and the rules of ../shared/STYLE.md that code can check).

- ``convlab.__all__`` is pinned: adding or removing a public name is a visible change here.
- Every public name resolves (the lazy table points at real definitions).
- No function in the engine is over 80 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import convlab

PACKAGE = Path(convlab.__file__).parent

PUBLIC = [
    "AnthropicChat", "OpenAIChat", "provider",
    "ChatView", "ConfigError", "ContextConfig", "ContextGauge", "Conversation", "DecisionPanel", "EchoLLM", "EventLog", "Lab",
    "LogError", "LogWarning", "ProviderError", "ReadError", "ReadWarning", "Refused", "Replay", "ReplayLLM", "ScriptedLLM",
    "Session", "Strategy", "TokenizerError", "Tree", "TreeView", "chat_worker", "config_grid", "content_text",
    "conversations_frame", "count_tokens", "frame", "kept", "load_config", "newest_leaf", "read", "replay", "tune",
]


def test_all_is_pinned():
    assert convlab.__all__ == sorted(PUBLIC)


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


@pytest.mark.parametrize("module", ["engine.py"])
def test_no_function_is_over_80_lines(module):
    long = [(name, n) for name, n in functions(PACKAGE / module) if n > 80]
    assert long == []
