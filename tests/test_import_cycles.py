"""No import cycle between paretotune modules, counting imports inside functions too.

An import inside a function hides a cycle from Python's loader (it runs after both modules are loaded) but
not from a reader: the two modules still cannot be understood, tested or moved apart. This test parses every
module with :mod:`ast` (nothing is imported), lists its import edges to other paretotune modules at module
level and at function level, and fails on a strongly connected component of more than one module unless
:data:`ALLOWED` names it with the reason. Imports under ``if TYPE_CHECKING:`` are left out: they never run.

Edges: ``import a.b.c`` and ``from a.b import c`` (``c`` a module) point at ``a.b.c``; ``from a.b import
name`` (``name`` not a module) points at ``a.b``. Importing ``a.b.c`` also runs the ``__init__`` of every
package above it, so an edge to each of those is added too, except packages above the importer itself
(they are loaded before it, so they cannot close a cycle through it).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "paretotune"
PACKAGE = "paretotune"

# Each entry: the modules of one tolerated cycle (its strongly connected component, exactly) -> why.
ALLOWED: dict[frozenset[str], str] = {}

# The same at package granularity (paretotune.<package>, or a top-level module): what a layer diagram shows.
ALLOWED_PACKAGES: dict[frozenset[str], str] = {}

# Layers that must not reach each other at all (module or function level): importer prefix -> forbidden prefixes.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # campaign/ parses and resolves campaign files; running them is runner/'s job (issue 20)
    "paretotune.campaign": ("paretotune.build", "paretotune.measure", "paretotune.validate", "paretotune.ship", "paretotune.cluster",
                           "paretotune.runner", "paretotune.commands"),
    "paretotune.search": ("paretotune.build", "paretotune.measure", "paretotune.validate", "paretotune.ship", "paretotune.cluster",
                           "paretotune.runner", "paretotune.commands"),
    # the run directory is read by every layer above it, so it reads none of them
    "paretotune.store": ("paretotune.campaign", "paretotune.runner", "paretotune.search", "paretotune.build", "paretotune.measure",
                         "paretotune.pareto", "paretotune.report", "paretotune.service", "paretotune.commands"),
}


def module_name(path: Path, root: Path = ROOT.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve_from(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_edges(known: dict[str, Path], *, type_checking: bool = False) -> dict[str, set[str]]:
    """importer -> the paretotune modules it imports (module and function level)."""
    edges: dict[str, set[str]] = {name: set() for name in known}
    for importer, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found = (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))) if type_checking \
            else _imports(tree)
        targets: set[str] = set()
        for node in found:
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = _resolve_from(node, importer, path.name == "__init__.py")
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in known else base)
        own = set(_ancestors(importer))
        for target in targets:
            if target not in known or target == importer:
                continue
            edges[importer].add(target)
            edges[importer].update(a for a in _ancestors(target) if a in known and a not in own)
        edges[importer].discard(importer)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def package_of(name: str) -> str:
    """``paretotune.<package>`` of a module (a top-level module is its own package)."""
    return ".".join(name.split(".")[:2])


def package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto package nodes."""
    out: dict[str, set[str]] = {}
    for importer, targets in edges.items():
        out.setdefault(package_of(importer), set()).update(
            package_of(t) for t in targets if package_of(t) != package_of(importer))
    for targets in list(out.values()):
        for t in targets:
            out.setdefault(t, set())
    return out


def _describe(component: frozenset[str], edges: dict[str, set[str]]) -> str:
    inner = sorted(f"{a} -> {b}" for a in component for b in edges[a] if b in component)
    return "{" + ", ".join(sorted(component)) + "}: " + "; ".join(inner)


def test_edges_are_found(tmp_path: Path) -> None:
    """The parser sees function-level and relative imports and skips TYPE_CHECKING ones (a checker that finds
    nothing cannot fail)."""
    edges = import_edges(modules())
    assert "paretotune.runner.loop" in edges["paretotune.runner.session"]  # imported inside execute()
    assert "paretotune.search.base" not in edges["paretotune.runner.session"]  # only under TYPE_CHECKING
    assert "paretotune.search.base" in import_edges(modules(), type_checking=True)["paretotune.runner.session"]
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from ..b import thing\n")
    (pkg / "b.py").write_text("from pkg.sub.a import f\n")
    known = {module_name(p, tmp_path): p for p in sorted(pkg.rglob("*.py"))}
    found = import_edges(known)
    assert found["pkg.sub"] == {"pkg.sub.a"} and found["pkg.sub.a"] == {"pkg.b"}
    assert found["pkg.b"] == {"pkg.sub.a", "pkg.sub"}  # importing pkg.sub.a runs pkg/sub/__init__.py first
    assert cycles(found) == [frozenset({"pkg.sub", "pkg.sub.a", "pkg.b"})]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    edges = import_edges(modules())
    found = cycles(edges)
    new = [c for c in found if c not in ALLOWED]
    assert not new, "import cycles (add imports in the other direction, or an ALLOWED entry saying why):\n" + \
        "\n".join(_describe(c, edges) for c in new)


def test_no_package_cycles() -> None:
    """``campaign -> runner -> search -> execution -> store -> pareto -> report/service`` (docs/architecture.md)
    only holds if no package reaches back up, not even through a function-level import."""
    edges = import_edges(modules())
    new = [c for c in cycles(package_edges(edges)) if c not in ALLOWED_PACKAGES]
    detail = ["{" + ", ".join(sorted(c)) + "}: " + "; ".join(
        sorted(f"{a} -> {b}" for a, ts in edges.items() for b in ts
               if package_of(a) in c and package_of(b) in c and package_of(a) != package_of(b))) for c in new]
    assert not new, "package import cycles:\n" + "\n".join(detail)


def test_allow_lists_are_current() -> None:
    """An allowed cycle that is gone must leave the list, so the list only shrinks."""
    edges = import_edges(modules())
    stale = [sorted(c) for c in ALLOWED if c not in set(cycles(edges))]
    stale += [sorted(c) for c in ALLOWED_PACKAGES if c not in set(cycles(package_edges(edges)))]
    assert not stale, f"allow-list entries that are no longer cycles: {stale}"


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_boundaries(layer: str) -> None:
    """Counting TYPE_CHECKING imports too: a layer below does not name a layer above at all."""
    edges = import_edges(modules(), type_checking=True)
    bad = sorted(f"{a} -> {b}" for a, targets in edges.items() if a == layer or a.startswith(layer + ".")
                 for b in targets if any(b == f or b.startswith(f + ".") for f in FORBIDDEN[layer]))
    assert not bad, f"{layer} must not import {FORBIDDEN[layer]}: {bad}"
