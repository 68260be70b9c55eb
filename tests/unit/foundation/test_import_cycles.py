"""No import cycle among the product's modules, nor among the benchmark scripts: a module that needs another's
helpers imports them from a module of their own, not from the module that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

from source_trees import parse_file

REPO = Path(__file__).resolve().parents[3]


def modules() -> dict[str, Path]:
    found = {}
    for path in (REPO / "src").rglob("*.py"):
        if "pb" in path.relative_to(REPO / "src").parts:
            continue  # generated code
        name = ".".join(path.relative_to(REPO / "src").with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    for path in (REPO / "benchmarks").glob("*.py"):
        found[path.stem] = path  # scripts import each other by bare name
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules `path` imports, at module level or inside a function (a lazy import still closes a
    cycle); `from package import submodule` names the submodule, not the package."""
    named: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known.keys()
            named.update(submodules)
            if len(submodules) < len(node.names):
                named.add(node.module)
    return named & known.keys()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    known = modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
