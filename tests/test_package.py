"""The package as a whole (convlab/__init__.py and the rules of the team's style that code can check).

- ``convlab.__all__`` is pinned: adding or removing a public name is a visible change here,
  and every public name is documented: in docs/api.md or in docs/modules.md.
- Every public name resolves (the lazy table points at real definitions).
- Every ``convlab.x.y`` the docs name resolves from a fresh ``import convlab``.
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
    "AnthropicChat", "OpenAIChat", "LocalChat", "provider", "CacheWarning", "CallCancelled",
    "input_tokens",
    "ChatView", "ConfigError", "ContextConfig", "ContextGauge", "Conversation", "DecisionPanel", "EchoLLM", "EventLog", "Lab",
    "LogError", "LogWarning", "PriceError", "ProviderError", "ReadError", "ReadWarning", "Refused", "Replay", "ReplayLLM", "ScriptedLLM",
    "Session", "Strategy", "SummaryWarning", "TokenizerError", "Tree", "TreeView", "brief", "chat_worker", "config_grid", "content_text",
    "readable",
    "conversations_frame", "count_tokens", "frame", "kept", "load_config", "newest_leaf", "read", "replay", "tune", "tune_cost",
    "rank", "TuneWarning", "retention", "retention_cost", "search", "presets",
    "ExploreError", "find", "compare", "write", "merge", "summarize",
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


def type_checking_imports(path: Path) -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` at a module's top level."""
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    module = "convlab" + ("." + imp.module if imp.module else "")
                    out.update({a.asname or a.name: module for a in imp.names})
    return out


def test_type_checkers_see_the_lazy_names_where_they_are_defined():
    """The package face's ``if TYPE_CHECKING:`` imports (what mypy reads: ``convlab.Session`` is the engine's
    class, not Any) name the same module for each lazy name as the table ``__getattr__`` imports from."""
    assert type_checking_imports(PACKAGE / "__init__.py") == convlab._LAZY


def test_the_type_checking_check_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("if TYPE_CHECKING:\n    from .engine import Session as Session\n    from . import tree\n")
    assert type_checking_imports(probe) == {"Session": "convlab.engine", "tree": "convlab"}


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'Sesion'"):
        convlab.Sesion  # noqa: B018


# -- what the docs name resolves (issue 36: docs/api.md's convlab.replaying.options.Options failed) -----------

#: What the docs write as ``convlab.<name>...`` that is no Python name, each with what it is.
NOT_PATHS = {
    "convlab.tune.grid": "a config file's TOML table, [convlab.tune.grid]",
    "convlab.tune.presets": "docs/modules.md's example of the import a package named tune would break",
    "convlab.serve.unanswered": "a CUSTOM event the AG-UI server sends",
    "convlab.serve.view_filled": "a CUSTOM event the AG-UI server sends",
    "convlab.serve.waiting": "a CUSTOM event the AG-UI server sends",
    "convlab.turn.cancelled": "a CUSTOM event the AG-UI server sends",
    "convlab.head": "a custom entry type convlab writes in pi's layout",
    "convlab.system": "a custom message type convlab writes in pi's layout",
}

#: docs/modules.md's table of old names: its first column names what is no more.
MOVED = "## Where the tuning wing's modules moved"
DOCS = [PACKAGE.parent / "README.md", *sorted((PACKAGE.parent / "docs").glob("*.md"))]


def dotted_paths(files: list[Path], package: str = "convlab") -> set[str]:
    """Every dotted path ``convlab.x[.y...]`` the files name, but the old names in the first column of
    docs/modules.md's table of what moved."""
    found: set[str] = set()
    for f in files:
        head, sep, moved = f.read_text(encoding="utf-8").partition(MOVED)
        table, nxt, rest = moved.partition("\n## ")
        text = head + sep + re.sub(r"^\|[^|\n]*\|", "|", table, flags=re.M) + nxt + rest
        found |= set(re.findall(rf"\b{package}(?:\.[A-Za-z_]\w*)+", text))
    return found


#: Run in a fresh interpreter: each path after a fresh ``import convlab`` (every module of the package dropped from
#: ``sys.modules`` first, so that no path resolves because an earlier one imported a module). A name the package
#: offers as an attribute (``convlab.tuning``, ``convlab.Session``) is read as attributes all the way, as a user reads
#: it; a module it does not offer (``convlab.tree``) is imported by its path and the rest read from it. The names of
#: one module (``convlab.tuning.presets.AUTO``, ``.for_log``) are read after one fresh import: a module's names do not
#: come and go with what else is imported, a package's modules do.
RESOLVE = """
import importlib, json, sys
package, paths = json.load(sys.stdin)

def fresh():
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    return importlib.import_module(package)

def module(parts):
    for i in range(len(parts), 1, -1):
        name = ".".join(parts[:i])
        try:
            return importlib.import_module(name), parts[i:]
        except ModuleNotFoundError as err:
            if not (err.name and err.name.startswith(package + ".") and name.startswith(err.name)):
                raise
    raise AttributeError(f"module {package!r} has no attribute or module {parts[1]!r}")

def resolve(parts):  # what holds the last name (None: the path is a module, imported)
    value = fresh()
    value, rest = (value, parts[1:]) if hasattr(value, parts[1]) else module(parts)
    owner = None
    for part in rest:
        owner, value = value, getattr(value, part)
    return owner

failed, modules = {}, {}
for path in paths:
    parent, _, last = path.rpartition(".")
    try:
        if parent in modules:
            getattr(modules[parent], last)
        elif isinstance(owner := resolve(path.split(".")), type(sys)) and not hasattr(owner, "__path__"):
            modules[parent] = owner  # a module, not a package: its other names are read from it as it is
    except Exception as err:
        failed[path] = f"{type(err).__name__}: {err}"
print(json.dumps(failed))
"""


def unresolved(paths: set[str], package: str = "convlab", where: Path = PACKAGE.parent) -> dict[str, str]:
    """The paths of at least two names after the package's (``convlab.x.y``) that do not resolve from a fresh
    ``import <package>`` (``RESOLVE``), each with why."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", RESOLVE], input=json.dumps([package, sorted(paths)]), env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout)


def test_every_dotted_path_the_docs_name_resolves_from_a_fresh_import():
    """Issue 36: after ``import convlab``, every ``convlab.x.y`` that README.md and docs/*.md name is there (the
    lazily loaded packages left modules out: ``convlab.replaying.options``, ``convlab.tuning.measures``); a
    ``convlab.x`` is a name of the face or a module of the package."""
    import importlib.util

    named = dotted_paths(DOCS)
    assert {"convlab.replaying.options.Options", "convlab.tuning.measures.measures", "convlab.explore.writing.KEEPS"} <= named
    assert set(NOT_PATHS) <= named  # a name no doc writes any more leaves the list
    named -= set(NOT_PATHS)
    short = {n for n in named if n.count(".") == 1}
    assert [n for n in sorted(short) if not hasattr(convlab, n[8:]) and importlib.util.find_spec(n) is None] == []
    assert unresolved(named - short) == {}


def test_the_dotted_path_check_can_fail(tmp_path):
    """A module its package does not load (even one an earlier path imported), a name not there, an old name left
    out of the table of what moved."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    lazy = "import importlib\ndef __getattr__(name):\n    if name != {!r}:\n        raise AttributeError(name)\n" \
           "    return importlib.import_module(__name__ + '.' + name)\n"
    (pkg / "__init__.py").write_text(lazy.format("sub"))
    (pkg / "sub" / "__init__.py").write_text(lazy.format("a"))
    (pkg / "sub" / "a.py").write_text("from . import b\nx = 1\n")  # imports b: pkg.sub.b.y resolves after pkg.sub.a.x
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "other.py").write_text("w = 3\n")
    doc = tmp_path / "doc.md"
    doc.write_text(f"`pkg.sub.a.x`, `pkg.sub.b.y`, `pkg.other.w`, `pkg.other.v`, `pkg.gone.z`\n{MOVED}\n\n"
                   "| Was | Is |\n| --- | --- |\n| `pkg.old.name` | `pkg.sub.a.x` |\n\n## After\n| `pkg.sub.kept` | x |\n")
    paths = dotted_paths([doc], "pkg")
    assert paths == {"pkg.sub.a.x", "pkg.sub.b.y", "pkg.other.w", "pkg.other.v", "pkg.gone.z", "pkg.sub.kept"}
    assert sorted(unresolved(paths, "pkg", tmp_path)) == ["pkg.gone.z", "pkg.other.v", "pkg.sub.b.y", "pkg.sub.kept"]


def functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.end_lineno - node.lineno + 1


#: Functions over 80 lines, each with why (STYLE.md: "no function over 80 lines").
LONG = {
    ("tuning/sweep.py", "tune"): "its docstring defines every column of the frame (about 110 lines); its code is 25 lines",
    ("tuning/ranking.py", "rank"): "its docstring defines the ranking and its warnings, with a runnable example; its code is 30 lines",
    ("tuning/search.py", "search"): "its docstring defines the space, the objective, the constraints and the frame, with a runnable example; its code is 20 lines",
    ("importers/agui.py", "parse"): "one pass over an AG-UI event stream, a branch per event type (issue 20's importer)",
}


@pytest.mark.parametrize("module", MODULES := sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py")), ids=str)
def test_no_function_is_over_80_lines(module):
    long = [(name, n) for name, n in functions(PACKAGE / module) if n > 80 and (module.as_posix(), name) not in LONG]
    assert long == []


def test_the_long_functions_listed_are_long():
    """An exception that no longer applies is taken off the list."""
    assert [k for k in LONG if not any(n > 80 for name, n in functions(PACKAGE / k[0]) if name == k[1])] == []


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


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_no_module_imports_a_private_name(module):
    assert private_imports(PACKAGE / module) == []


def test_the_private_import_check_can_fail(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("from ._common import x\nfrom .tree import _hidden\nimport convlab._secret\n")
    assert private_imports(bad) == ["from _common import ...", "from tree import _hidden", "convlab._secret"]


#: Modules whose tests carry another name.
TESTED_AS = {"engine": "test_session_", "replaying": "test_replay", "tuning": "test_tuning", "__init__": "test_package", "__main__": "test_cli"}


@pytest.mark.parametrize("module", sorted({p.parts[0].removesuffix(".py") for p in MODULES}))
def test_tests_mirror_the_modules(module):
    """STYLE.md: "tests/ mirrors the modules" (a package by its name: test_importers*, test_widgets*)."""
    tests = Path(__file__).parent
    prefix = TESTED_AS.get(module, f"test_{module}")
    found = [p.name for p in tests.glob("test_*.py") if p.stem == prefix or p.stem.startswith(prefix.rstrip("_") + "_")]
    assert found, f"no tests/{prefix}*.py for convlab/{module}"


# -- the arrows: imports a reader can see (issues 21, 36) --------------------------------------


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name).is_dir()


def face_imports(path: Path, parts: tuple[str, ...] | None = None) -> list[str]:
    """What a module takes through the package face, ``convlab/__init__.py`` (issue 36: it is for users): ``import
    convlab`` (and whatever it then reads as ``convlab.X``), ``from convlab import X`` or ``from .. import X`` at
    convlab's level, where X is not a module of the package."""
    parts = parts or path.relative_to(PACKAGE).parts
    depth = len(parts)  # the level of a relative import that reaches convlab itself
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += ["import convlab" for a in node.names if a.name == "convlab"]
        elif isinstance(node, ast.ImportFrom) and ((node.level == 0 and node.module == "convlab") or (node.level == depth and not node.module)):
            out += [a.name for a in node.names if not _is_module(a.name)]
    return out


@pytest.mark.parametrize("module", [m for m in MODULES if m.name != "__init__.py" or len(m.parts) > 1], ids=str)
def test_nothing_inside_the_package_imports_its_face(module):
    """Issue 36: "inside the package nothing imports the face (convlab/__init__.py is for users)": every module
    imports each name from the module that defines it (``from ..engine import Session``)."""
    assert face_imports(PACKAGE / module) == []


def import_graph(root: Path = PACKAGE, name: str = "convlab") -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at the top, in a function or for types only: a dependency
    is a dependency), each by the file that defines it."""
    def modname(p: Path) -> str:
        parts = list(p.relative_to(root).with_suffix("").parts)
        return ".".join([name, *(parts[:-1] if parts[-1] == "__init__" else parts)])

    files = {modname(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == name):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                deps |= {f"{target}.{a.name}" if f"{target}.{a.name}" in files else target for a in node.names} & set(files)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names} & set(files)
        graph[mod] = deps - {mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = [stack.pop()]
                while part[-1] != v:
                    part.append(stack.pop())
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def test_no_import_circles():
    """Issue 36: "no import circles" (agui's server and threads imported each other; result and compactions)."""
    assert cycles(import_graph()) == []


#: What each part of the package never imports: dependencies point one way (docs/modules.md). The base is every
#: top-level module (the tree, the config, the log, tokens, text, providers, ...).
PARTS = ("engine", "importers", "replaying", "tuning", "explore", "widgets", "agui", "cli")
NEVER = {
    "base": set(PARTS),
    "engine": {"importers", "replaying", "tuning", "explore", "widgets", "agui", "cli"},
    "importers": {"engine", "replaying", "tuning", "explore", "widgets", "cli"},
    "replaying": {"importers", "tuning", "explore", "widgets", "agui", "cli"},
    "tuning": {"widgets", "agui", "cli"},  # importers: a streamed sweep reads each file where it sweeps it (issue 39)
    "explore": {"tuning", "widgets", "agui", "cli"},
    "widgets": {"importers", "tuning", "agui", "cli"},
    "agui": {"replaying", "tuning", "widgets", "cli"},
}


def backward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    def part(mod: str) -> str:
        bits = mod.split(".")
        return bits[1] if len(bits) > 1 and bits[1] in PARTS else "face" if len(bits) == 1 else "base"

    return sorted((a, b) for a, deps in graph.items() for b in deps if part(b) in NEVER.get(part(a), set()))


def test_dependencies_point_one_way():
    """Issue 36: "dependencies point one way": the engine knows nothing of importers, replays or tuning; a replay
    nothing of tuning; nothing but the command itself imports the CLI."""
    assert backward_arrows(import_graph()) == []


#: Modules that walk links of their own, not a message tree's: an importer its log's, before any tree exists; the
#: prompt cache its trie of cached blocks.
OWN_LINKS = ("importers/", "replaying/prompt_cache.py")


def walks_to_the_root(path: Path) -> list[int]:
    """Lines of ``while`` loops that walk parent links by hand: the loop's variable is set again from something
    named parent (``node = nodes[node]["parent"]``, ``at = parent_of(at)``)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.While):
            tested = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in tested for t in stmt.targets) \
                        and "parent" in ast.unparse(stmt.value):
                    out.append(node.lineno)
                    break
    return out


@pytest.mark.parametrize("module", [m for m in MODULES if m.as_posix() != "tree.py" and not m.as_posix().startswith(OWN_LINKS)], ids=str)
def test_the_walk_to_the_root_is_only_in_tree(module):
    """Issue 36: "the walk to the root only in tree.py" (``ancestors``, ``path_to``, ``Tree.ancestors``)."""
    assert walks_to_the_root(PACKAGE / module) == []


#: STYLE.md and issue 36: "no module over ~800 lines and no class over ~600".
MODULE_LINES, CLASS_LINES = 800, 600


def oversized(path: Path) -> list[str]:
    text = path.read_text()
    out = [f"{len(text.splitlines())} lines"] if len(text.splitlines()) > MODULE_LINES else []
    return out + [f"class {n.name}: {n.end_lineno - n.lineno + 1} lines" for n in ast.walk(ast.parse(text))
                  if isinstance(n, ast.ClassDef) and n.end_lineno - n.lineno + 1 > CLASS_LINES]


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_no_module_over_800_lines_and_no_class_over_600(module):
    assert oversized(PACKAGE / module) == []


def callable_modules(path: Path) -> list[str]:
    """A module made a callable: its class swapped (``sys.modules[__name__].__class__ = ...``), or a
    ``ModuleType`` subclass defined."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "__class__" for t in node.targets):
            out.append(f"line {node.lineno}: a class swapped")
        elif isinstance(node, ast.ClassDef) and any("ModuleType" in ast.unparse(b) for b in node.bases):
            out.append(f"line {node.lineno}: class {node.name}")
    return out


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_functions_are_functions_and_modules_are_modules(module):
    """Issue 36: "no module replaced by a callable" (convlab.replay, search and presets were callable modules)."""
    import importlib

    assert callable_modules(PACKAGE / module) == []
    name = ".".join(["convlab", *module.with_suffix("").parts]).removesuffix(".__init__")
    if module.name == "__main__.py":  # importing it runs the command
        return
    if not name.startswith(("convlab.agui", "convlab.widgets")) or importlib.util.find_spec("ipywidgets"):
        assert not callable(importlib.import_module(name))


def constructions(path: Path, name: str) -> list[int]:
    """Lines where ``path`` makes a ``name`` (a call of that name)."""
    return [n.lineno for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def test_one_record_per_model_call_made_in_one_place():
    """Issue 36: "one record per model call, built in one place": a replay's ``ModelCall`` is made by the Replayer's
    handler of a call's end, and nowhere else (pricing gives new records with ``dataclasses.replace``)."""
    import dataclasses

    from convlab.replaying.result import ModelCall

    made = {m.as_posix(): lines for m in MODULES if (lines := constructions(PACKAGE / m, "ModelCall"))}
    assert list(made) == ["replaying/driver.py"] and len(made["replaying/driver.py"]) == 1
    assert dataclasses.fields(ModelCall) and ModelCall.__dataclass_params__.frozen  # type: ignore[attr-defined]


def shared_class_names(root: Path) -> dict[str, list[str]]:
    """Each class name defined more than once under ``root`` (private ones too) -> the modules defining it."""
    seen: dict[str, list[str]] = {}
    for m in sorted(root.rglob("*.py")):
        for n in ast.walk(ast.parse(m.read_text())):
            if isinstance(n, ast.ClassDef):
                seen.setdefault(n.name, []).append(m.relative_to(root).as_posix())
    return {name: where for name, where in seen.items() if len(where) > 1}


def test_no_two_classes_share_a_name():
    """Issue 36: "names that lie or clash" (two classes named ``Record``; two named ``Compaction``), private ones too
    (two named ``_Record``: a replay's frozen records' base, and the driver's book of them)."""
    assert shared_class_names(PACKAGE) == {}


def test_the_class_name_check_can_fail(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("class _Record:\n    pass\nclass Call:\n    class _Record:\n        pass\n")
    (tmp_path / "sub" / "b.py").write_text("def f():\n    class Call:\n        pass\n")
    assert shared_class_names(tmp_path) == {"_Record": ["a.py", "a.py"], "Call": ["a.py", "sub/b.py"]}


#: What each entry point that takes the shared knobs declares of its own, none of them a knob of a replay: what it
#: replays (the conversations, their configs or a space of them) and how a sweep or a search runs. A parameter added
#: here is a visible change: a knob belongs in ``Options``, not beside it under a name of its own (``ttl=``).
OWN_PARAMETERS = {
    "replay": ("conversation", "config", "options"),
    "tune": ("conversations", "configs", "options", "grid", "jobs", "progress", "scheduler", "client", "chunk"),
    "tune_cost": ("conversations", "configs", "options", "grid", "jobs", "progress", "chunk"),
    "search": ("conversations", "space", "options", "base", "objective", "constraints", "trials", "jobs", "seed",
               "progress", "failed"),
}


def knob_problems(fn, own: tuple[str, ...]) -> list[str]:
    """What keeps ``fn`` from taking the shared knobs as one value: ``options`` and the knobs by name (``**knobs``),
    each shown in its signature (``takes_options``), no knob (nor an earlier name of one, nor ``dry_run``) declared
    of its own, and its own parameters ``own``, no more and no fewer."""
    import dataclasses
    import inspect

    from convlab.replaying.options import RENAMED, Options

    knobs = {f.name for f in dataclasses.fields(Options) if f.init}
    code = fn.__code__
    declared = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    shown = inspect.signature(fn).parameters
    out = [] if "options" in declared else ["no options"]
    out += [] if code.co_flags & inspect.CO_VARKEYWORDS else ["no **knobs"]
    out += [f"{k} not in its signature" for k in sorted(knobs - set(shown))]
    knob_like = knobs | set(RENAMED) | {"dry_run"}
    out += [f"{p}: a knob of its own" for p in declared if p in knob_like]
    out += [f"{p}: not one of its own {own}" for p in declared if p not in own and p not in knob_like]
    return out + [f"{p}: listed, not declared" for p in own if p not in declared]


def test_the_shared_knobs_are_one_value_every_entry_point_takes():
    """Issue 36: "the knobs a replay and a sweep share are one frozen, documented, typed value that replay, tune,
    tune_cost and search all take and check in one place": each takes ``options`` and the knobs by name (``**knobs``),
    and declares no knob of its own, under its name or another; the value cannot be changed once made."""
    import dataclasses

    from convlab.replaying.options import Options

    for fn in (convlab.replay, convlab.tune, convlab.tune_cost, convlab.search):
        assert knob_problems(fn, OWN_PARAMETERS[fn.__name__]) == [], fn
    options = Options(model=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.model = "claude-sonnet-4-5"  # type: ignore[misc]
    assert options == Options(model=None) and Options.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_the_shared_knobs_check_can_fail():
    from convlab.replaying.options import takes_options

    def renamed(conversation, config=None, options=None, *, ttl=None, **knobs): ...
    def earlier(conversation, config=None, options=None, *, cache=None, dry_run=False, **knobs): ...
    def declared(conversation, config=None, *, model=None, **knobs): ...
    def no_knobs(conversation, config=None, options=None): ...

    own = ("conversation", "config", "options")
    takes_options(renamed)
    assert knob_problems(renamed, own) == ["ttl: not one of its own ('conversation', 'config', 'options')"]
    assert knob_problems(takes_options(earlier), own) == ["cache: a knob of its own", "dry_run: a knob of its own"]
    assert [x for x in knob_problems(declared, own) if "signature" not in x] == [
        "no options", "model: a knob of its own", "options: listed, not declared"]
    assert knob_problems(no_knobs, own)[:2] == ["no **knobs", "agent not in its signature"]
    assert knob_problems(renamed, (*own, "ttl")) == []  # listed as its own, it passes: the list is the review
    assert knob_problems(renamed, (*own, "ttl", "gone")) == ["gone: listed, not declared"]


def test_the_arrow_checks_can_fail(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("from .. import Session, tree\nfrom ..engine import Session as S\nfrom .records import x\nimport convlab\n"
                   "x = convlab.tune\nfrom convlab import Refused\n")
    assert face_imports(bad, ("importers", "probe.py")) == ["Session", "import convlab", "Refused"]
    assert sorted(internal_modules_imported(bad, ("widgets", "probe.py"))) == ["engine", "tree"]
    assert sorted(internal_modules_imported(bad, ("cli.py",))) == ["engine", "records", "tree"]
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from .a import y\n")  # in a function: still a circle
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..a import x\nfrom . import d\n")
    (pkg / "sub" / "d.py").write_text("")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.sub.c"] == {"pkg.a", "pkg.sub.d"} and cycles(graph) == [["pkg.a", "pkg.b"]]
    assert backward_arrows({"convlab.engine.calls": {"convlab.replaying.plan"}, "convlab.tree": {"convlab.engine"},
                            "convlab.tuning.sweep": {"convlab.replaying.driver"}}) == [
        ("convlab.engine.calls", "convlab.replaying.plan"), ("convlab.tree", "convlab.engine")]
    walk = tmp_path / "walk.py"
    walk.write_text("def f(nodes, n):\n    while n is not None:\n        n = nodes[n]['parent']\n"
                    "def g(n):\n    while n:\n        n = n.next\n")
    assert walks_to_the_root(walk) == [2]
    big = tmp_path / "big.py"
    big.write_text("class Big:\n" + "    x = 1\n" * 700 + "y = 2\n" * 120)
    assert oversized(big) == ["821 lines", "class Big: 701 lines"]
    swapped = tmp_path / "swapped.py"
    swapped.write_text("import sys, types\nclass M(types.ModuleType):\n    pass\nsys.modules[__name__].__class__ = M\n")
    assert callable_modules(swapped) == ["line 2: class M", "line 4: a class swapped"]
    assert constructions(bad, "ModelCall") == [] and constructions(swapped, "M") == [] and constructions(walk, "f") == []
    made = tmp_path / "made.py"
    made.write_text("x = ModelCall(1)\ny = [ModelCall(2)]\n")
    assert constructions(made, "ModelCall") == [1, 2]


def allowed_internal_modules() -> dict[str, set[str]]:
    """docs/modules.md's table of what the widgets, the CLI and the AG-UI server import."""
    text = (PACKAGE.parent / "docs" / "modules.md").read_text().split("## What the widgets, the CLI and the AG-UI server import", 1)[1]
    allowed: dict[str, set[str]] = {"widgets": set(), "cli": set(), "agui": set()}
    for who, module in re.findall(r"^\| (widgets|cli|agui) \| `convlab\.([\w.]+)` \|", text, flags=re.M):
        allowed[who].add(module)
    return allowed


def internal_modules_imported(path: Path, parts: tuple[str, ...] | None = None) -> list[str]:
    """The convlab modules (other than its own package's) a module imports from, relative or absolute."""
    parts = parts or path.relative_to(PACKAGE).parts
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                module = node.module or ""
                if module.startswith("convlab."):
                    out.append(module.removeprefix("convlab."))
                continue
            base = list(parts[:-1])[: len(parts) - node.level]  # the package the dots reach
            if node.level == 1 and len(parts) > 1:
                continue  # inside its own package (widgets/)
            if node.module:
                out.append(".".join([*base, node.module]))
            else:  # from .. import x: a module only if x is not a public name
                out += [".".join([*base, a.name]) for a in node.names if a.name not in convlab.__all__]
        elif isinstance(node, ast.Import):
            out += [a.name.removeprefix("convlab.") for a in node.names if a.name.startswith("convlab.")]
    return [m.split(".")[0] for m in out]


@pytest.mark.parametrize("who", ["widgets", "cli", "agui"])
def test_widgets_the_cli_and_agui_import_only_the_modules_docs_names(who):
    """Issue 21: "widgets and the CLI import only the public surface or the modules docs/modules.md names"
    (the AG-UI server too); issue 36: each name from the module that defines it, so the table names them all."""
    allowed = allowed_internal_modules()[who]
    modules = [m for m in MODULES if m.parts[0] == who]
    found = {(m.as_posix(), name) for m in modules for name in internal_modules_imported(PACKAGE / m)}
    assert sorted((m, n) for m, n in found if n not in allowed) == []
    assert allowed and all(any(n == a for _m, n in found) for a in allowed), "docs/modules.md names a module no one imports"


# -- what a parameter is (issue 21: "Cut the Any parameters to what is truly any") -------------

#: The parameters whose values have a known type: none is annotated bare ``Any``.
TYPED_NAMES = {"session", "llm", "worker", "config", "client", "source", "replay", "tree"}

def bare_any_parameters(text: str) -> list[tuple[str, str]]:
    """``(function, parameter)`` for each parameter named in ``TYPED_NAMES`` annotated bare ``Any``."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]:
                if arg.arg in TYPED_NAMES and arg.annotation is not None and ast.unparse(arg.annotation) in ("Any", "typing.Any"):
                    out.append((node.name, arg.arg))
    return out


def test_no_session_llm_worker_config_client_source_replay_or_tree_parameter_is_bare_any():
    """Issue 21: a value whose type is known gets that type (a Session, a provider, a config source, ...)."""
    found = {(m.as_posix(), *p) for m in MODULES for p in bare_any_parameters((PACKAGE / m).read_text())}
    assert sorted(found) == []
    probe = "def f(session: Any, llm: 'Provider', *, tree: typing.Any, other: Any, **config: Any): ..."
    assert bare_any_parameters(probe) == [("f", "session"), ("f", "tree"), ("f", "config")]


#: The bare ``Any`` parameters that are truly any, apart from ``*args``/``**kwargs`` handed on: JSON of any
#: shape walked by ``type(v)`` (which mypy does not narrow), and what the importers' detectors get unchecked.
TRULY_ANY = {("jsondata.py", "copy", "value"), ("jsondata.py", "_problem", "v"), ("jsondata.py", "fix", "v"),
             ("jsondata.py", "_clean", "v"),
             ("importers/__init__.py", "detect", "value")}


def named_bare_any(text: str) -> list[tuple[str, str]]:
    """``(function, parameter)`` for each named parameter (not ``*args``/``**kwargs``) annotated bare ``Any``."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if arg.annotation is not None and ast.unparse(arg.annotation) in ("Any", "typing.Any"):
                    out.append((node.name, arg.arg))
    return out


def test_a_bare_any_parameter_is_handed_on_or_json_of_any_shape():
    """Issue 21: "Cut the Any parameters to what is truly any"."""
    found = {(m.as_posix(), *p) for m in MODULES for p in named_bare_any((PACKAGE / m).read_text())}
    assert sorted(found - TRULY_ANY) == []
    assert TRULY_ANY <= found  # a listed one typed since leaves the list
    assert named_bare_any("def f(a: Any, *b: Any, c: int, **d: Any): ...") == [("f", "a")]


def test_the_clone_cites_its_own_docs_not_the_workspaces():
    """Issue 34 (5): "Notebooks 01 and 02 cite ../shared/seed/conversations.txt, and the README and docs cite
    'PROTOCOL.md 5.2', neither of which is in a clone": the project documents itself (docs/protocol.md, its sections).
    Where the real logs are (../shared/data/real, or $CONVLAB_REAL_LOGS) is data, not documentation."""
    root = PACKAGE.parent
    files = [root / "README.md", *root.glob("docs/*.md"), *root.glob("notebooks/*.ipynb"), *root.glob("data/*.toml"),
             *PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.js"), *PACKAGE.rglob("*.html")]
    cited = [(str(f.relative_to(root)), word) for f in files for word in ("PROTOCOL.md", "shared/seed", "conversations.txt")
             if word in f.read_text(encoding="utf-8")]
    assert cited == []
    assert "docs/protocol.md" in (root / "notebooks" / "01-tour.ipynb").read_text(encoding="utf-8")
    assert (root / "docs" / "protocol.md").is_file()


def test_the_real_logs_are_named_by_one_resolved_path():
    """Issue 34 (5): "Skip messages print mixed paths (…/convlab/../shared/… and …/shared/…)": the tests, the notebooks'
    conftest and the bench name the real logs by one resolved path."""
    import importlib.util

    from agentdata import AGENTS
    from realdata import REAL

    spec = importlib.util.spec_from_file_location("notebooks_conftest", PACKAGE.parent / "notebooks" / "conftest.py")
    assert spec is not None and spec.loader is not None
    notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(notebooks)
    for path in (REAL, AGENTS, notebooks.REAL):
        assert path.is_absolute() and ".." not in path.parts and path == path.resolve()
