"""The layering, checked on every import the code holds (module level, function level and
TYPE_CHECKING alike): no module imports itself round a cycle, `warehouse`'s first-level units
(its packages, and errors.py and demo.py) import one another without a cycle either, so they
stack in floors, `warehouse` never imports `service`, and `udfs` imports neither. (ruff's TID251
bans in pyproject.toml say the same per import statement; only a graph sees a cycle.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = ("warehouse", "service", "udfs")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _known(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports. `from pkg import sub` counts as importing
    `pkg.sub` (not `pkg` itself) when `sub` is a module."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [s for s in subs if s in modules]
                if len(targets) < len(subs):
                    targets.append(base)
            for target in targets:
                found = _known(target, modules)
                if found and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _unit(module: str) -> str | None:
    """The first-level unit of `warehouse` a module belongs to: its package, or the root
    module itself (errors, demo); None outside `warehouse` and for `warehouse` itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == "warehouse" and len(parts) > 1 else None


def package_graph(
    graph: dict[str, set[str]], leave_out: frozenset[tuple[str, str]] = frozenset()
) -> dict[str, set[str]]:
    """`warehouse`'s first-level units -> the other units their modules import, the edges in
    `leave_out` aside. A cycle of packages may pass through modules that form none."""
    found: dict[str, set[str]] = {}
    for name, deps in graph.items():
        unit = _unit(name)
        if unit is None:
            continue
        found.setdefault(unit, set()).update(
            other
            for dep in deps
            if (other := _unit(dep)) is not None
            and other != unit
            and (unit, other) not in leave_out
        )
    return found


def floor_of(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each unit of a DAG's floor: 1 for one that imports no other, else one above the
    highest it imports."""
    found: dict[str, int] = {}

    def floor(unit: str, path: tuple[str, ...]) -> int:
        if unit in path:
            raise ValueError(f"not a DAG: {' -> '.join((*path, unit))}")
        if unit not in found:
            found[unit] = 1 + max((floor(d, (*path, unit)) for d in graph[unit]), default=0)
        return found[unit]

    for unit in sorted(graph):
        floor(unit, ())
    return found


def floors(graph: dict[str, set[str]]) -> int:
    """How many floors a DAG stacks in: its longest import path, counted in units."""
    return max(floor_of(graph).values(), default=0)


def test_the_graph_sees_the_code() -> None:
    graph = import_graph()
    assert len(graph) > 150
    assert "warehouse.parsing.script" in graph["warehouse.query.executor"]
    assert "warehouse.security.policy" in graph["service.serve.session"] or any(
        "warehouse.security.policy" in deps for name, deps in graph.items() if "serve" in name
    )


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_a_planted_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_lower_layers_never_import_higher_ones() -> None:
    graph = import_graph()
    wrong = sorted(
        (name, dep)
        for name, deps in graph.items()
        for dep in deps
        if (name.startswith("warehouse") and dep.startswith("service"))
        or (name.startswith("udfs") and dep.startswith(("warehouse", "service")))
    )
    assert wrong == []


def test_warehouse_packages_form_a_dag() -> None:
    assert cycles(package_graph(import_graph())) == []


def test_a_planted_package_cycle_is_found() -> None:
    """a.x imports b.y, which imports a.z: no module cycle, but a package one."""
    graph = {"warehouse.a.x": {"warehouse.b.y"}, "warehouse.b.y": {"warehouse.a.z"}}
    graph |= {"warehouse.a.z": set(), "warehouse.errors": set(), "service.c": {"warehouse.a.x"}}
    assert cycles(graph) == []
    assert package_graph(graph) == {"a": {"b"}, "b": {"a"}, "errors": set()}
    assert cycles(package_graph(graph)) == [["a", "b"]]
    assert cycles(package_graph(graph, frozenset({("b", "a")}))) == []
    with pytest.raises(ValueError, match="not a DAG"):
        floors(package_graph(graph))


def test_floors_count_the_longest_import_path() -> None:
    assert floors({"a": set(), "b": {"a"}, "c": {"a", "b"}, "d": {"a"}}) == 3
    assert floors({}) == 0


def test_warehouse_stacks_in_at_most_ten_floors() -> None:
    dag = package_graph(import_graph())
    found = floor_of(dag)
    for level in range(1, floors(dag) + 1):
        print(level, sorted(unit for unit, at in found.items() if at == level))
    print(f"{len(dag)} rooms, {floors(dag)} floors")
    assert {"errors", "demo", "kernel", "dynamic"} <= dag.keys()  # root modules are rooms too
    assert floors(dag) <= 10
