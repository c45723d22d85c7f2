# SPDX-License-Identifier: Apache-2.0
"""The package map (docs/architecture.md) against the code: every subpackage
is listed, and no two subpackages import each other, directly or around a
loop (imports inside functions count: a lazy import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "fastvqa"


def _subpackages() -> list:
    return sorted(p.name for p in PACKAGE.iterdir()
                  if p.is_dir() and (p / "__init__.py").exists())


def _room(module: str) -> str:
    """The subpackage or top-level module a dotted fastvqa name lives in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "fastvqa"


def _imports(path: Path, module: str):
    """Every fastvqa module named by an import anywhere in ``path``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("fastvqa."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("fastvqa."):
                yield target
            elif target == "fastvqa":  # from fastvqa import errors, _checks, ...
                yield from (f"fastvqa.{a.name}" for a in node.names)


def _graph() -> dict:
    graph: dict = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        room = _room(module)
        for target in _imports(path, module):
            if _room(target) != room:
                graph.setdefault(room, {}).setdefault(_room(target), str(path))
    return graph


def _cycle(graph: dict):
    """One import loop between rooms as a list of them, or None (depth-first)."""
    state: dict = {}

    def visit(room, trail):
        state[room] = "open"
        for nxt in graph.get(room, {}):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[room] = "done"
        return None

    for room in list(graph):
        if room not in state:
            found = visit(room, [room])
            if found:
                return found
    return None


def test_no_subpackage_imports_one_that_imports_it_back():
    graph = _graph()
    loop = _cycle(graph)
    where = [] if loop is None else [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(loop, loop[1:])]
    assert loop is None, "import loop: " + "; ".join(where)


def test_the_cycle_check_finds_a_loop():
    assert _cycle({"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b": ""}, "b": {}, "c": {"a": ""}}) is None


def test_the_package_map_lists_every_subpackage():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The package map", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in _subpackages() if f"`{name}/`" not in section]
    assert not missing, f"docs/architecture.md's package map lacks {missing}"


def test_the_readme_layout_names_every_subpackage():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text.split("python/fastvqa/", 1)[1].split("tests/", 1)[0]
    missing = [name for name in _subpackages() if f"{name}/" not in layout]
    assert not missing, f"README's Layout lacks {missing}"
