"""The package's shape: no import circle, imports go down the layers, nothing imports the package root, the
import table in docs/architecture.md holds, and modules and functions stay small enough to read.

How edges are counted. Every module under ``paretotune/`` is parsed with :mod:`ast` (nothing is imported) and
every import statement in it counts, wherever it is: at module level, inside a function (Python's loader does
not see a circle closed there, a reader does: the two modules still cannot be understood, tested or moved
apart) and under ``if TYPE_CHECKING:`` (it never runs, but the module still names the other one: a layer below
that names a layer above knows about it). ``import a.b.c`` and ``from a.b import c`` (``c`` a module) point at
``a.b.c``; ``from a.b import name`` (``name`` not a module) points at ``a.b``. Importing ``a.b.c`` also runs the
``__init__`` of every package above it, so an edge to each of those is added too, except packages above the
importer itself (they are loaded before it, so they cannot close a circle through it). Imports by name in a
string (``importlib.import_module``, ``python -m``) are not edges: the CLI's subcommand table and the service's
child process use them to call upward on purpose.

Packages: ``paretotune.<name>`` (a package or a top-level module); the base modules (:data:`BASE`) form one
layer, ``base``. The package root (``paretotune/__init__.py``, the lazy public names) and ``__main__`` stand
outside the layers: the root may name anything, and only ``__main__`` may import it.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "paretotune"
DOC = REPO / "docs" / "architecture.md"
PACKAGE = "paretotune"

# base values: import nothing of paretotune above them
BASE = ("errors", "records", "processes", "text_file", "extras", "version")
# The layer order, low to high: a module may import its own package or a lower one. The same list, in the same
# order, is the table in docs/architecture.md (test_doc_table_is_the_layer_order).
LAYERS = ("base", "compat", "store", "toolchain", "ncu", "objectives", "pareto", "search", "kernels", "capturing",
          "campaign", "build", "measure", "cluster", "front", "validate", "ship", "report", "runner", "service",
          "api", "commands", "cli")
OUTSIDE = (PACKAGE, f"{PACKAGE}.__main__")  # the root and the entry point: not in any layer
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def module_name(path: Path, root: Path = ROOT.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth: module level, in functions, under ``if TYPE_CHECKING:``."""
    return (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))


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


def import_edges(known: dict[str, Path]) -> dict[str, set[str]]:
    """importer -> the known modules it imports (see the module docstring for what counts)."""
    edges: dict[str, set[str]] = {name: set() for name in known}
    for importer, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets: set[str] = set()
        for node in _imports(tree):
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
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(edges[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
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


def layer_of(name: str) -> str:
    """The layer of a module: ``base`` for the base modules, else its package under paretotune (the root and
    ``__main__`` are their own names)."""
    parts = name.split(".")
    if len(parts) == 1 or name in OUTSIDE:
        return name
    return "base" if parts[1] in BASE else parts[1]


def layer_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto layers (edges inside a layer dropped)."""
    out: dict[str, set[str]] = {}
    for importer, targets in edges.items():
        here = layer_of(importer)
        out.setdefault(here, set()).update(layer_of(t) for t in targets if layer_of(t) != here)
    for targets in list(out.values()):
        for t in targets:
            out.setdefault(t, set())
    return out


def _witnesses(edges: dict[str, set[str]], a: str, b: str) -> list[str]:
    """The module edges behind the layer edge a -> b."""
    return sorted(f"{m} -> {t}" for m, ts in edges.items() if layer_of(m) == a for t in ts if layer_of(t) == b)


def doc_table(text: str) -> list[tuple[str, set[str]]]:
    """The import table of docs/architecture.md: rows of ``| `layer` | job | `a`, `b` |`` (the first column's
    ``/`` or ``.py`` dropped; "nothing" for no import), in the document's order."""
    rows: list[tuple[str, set[str]]] = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*layer\s*\|.*\|\s*may import\s*\|", line))
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = re.fullmatch(r"`([\w.]+?)(?:/|\.py)?`", cells[0])
        assert name, f"docs/architecture.md: a table row's first cell is not a `layer`: {line}"
        allowed = {m.removesuffix("/").removesuffix(".py") for m in re.findall(r"`([\w./]+)`", cells[-1])}
        rows.append((name.group(1), allowed))
    return rows


EDGES = import_edges(modules())


def test_edges_are_found(tmp_path: Path) -> None:
    """The parser sees relative, function-level and TYPE_CHECKING imports and the ``__init__`` an import runs
    (a checker that finds nothing cannot fail)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from ..b import thing\n")
    (pkg / "b.py").write_text("from pkg.sub.a import f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n")
    known = {module_name(p, tmp_path): p for p in sorted(pkg.rglob("*.py"))}
    found = import_edges(known)
    assert found["pkg.sub"] == {"pkg.sub.a"} and found["pkg.sub.a"] == {"pkg.b"}
    assert found["pkg.b"] == {"pkg.sub.a", "pkg.sub"}  # importing pkg.sub.a runs pkg/sub/__init__.py first
    assert found["pkg.c"] == {"pkg.b"}  # under TYPE_CHECKING: counted
    assert cycles(found) == [frozenset({"pkg.sub", "pkg.sub.a", "pkg.b"})]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert sum(map(len, EDGES.values())) > 500  # the real package is read


def test_no_module_cycles() -> None:
    found = cycles(EDGES)
    detail = ["{" + ", ".join(sorted(c)) + "}: " + "; ".join(
        sorted(f"{a} -> {b}" for a in c for b in EDGES[a] if b in c)) for c in found]
    assert not found, "import circles between modules:\n" + "\n".join(detail)


def _rank(layer: str) -> int:
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


def test_no_layer_cycles() -> None:
    """The layers only read as stages if no package reaches back up, not even inside a function. (The root
    and ``__main__`` are left out here: test_nothing_imports_the_package_root covers them.)"""
    layers = {a: {b for b in targets if b not in OUTSIDE} for a, targets in layer_edges(EDGES).items()
              if a not in OUTSIDE}
    found = cycles(layers)
    detail = []
    for c in found:  # the edges that close each circle: those going up LAYERS (or, failing that, all of them)
        inner = [(a, b) for a in sorted(c) for b in sorted(layers[a] & c)]
        closing = [(a, b) for a, b in inner if _rank(b) > _rank(a)] or inner
        detail.append("{" + ", ".join(sorted(c)) + "}, closed by: " + "; ".join(
            w for a, b in closing for w in _witnesses(EDGES, a, b)[:5]))
    assert not found, "import circles between packages:\n" + "\n".join(detail)


def test_imports_go_down_the_layers() -> None:
    """A module imports its own layer or a lower one (LAYERS, low to high)."""
    up = [w for a, targets in layer_edges(EDGES).items() if a in LAYERS for b in targets if b in LAYERS
          and LAYERS.index(b) > LAYERS.index(a) for w in _witnesses(EDGES, a, b)]
    assert not up, "imports from a lower layer to a higher one:\n" + "\n".join(up)


def test_every_module_has_a_layer() -> None:
    stray = sorted(m for m in EDGES if layer_of(m) not in LAYERS and m not in OUTSIDE)
    assert not stray, f"modules in no layer (add the package to LAYERS and the table): {stray}"


def test_nothing_imports_the_package_root() -> None:
    """``paretotune/__init__.py`` holds the lazy public names; importing it from inside hides an upward edge
    (its names come from api, the top of the library)."""
    bad = sorted(m for m, targets in EDGES.items() if PACKAGE in targets and m != f"{PACKAGE}.__main__")
    assert not bad, f"modules importing the package root {PACKAGE!r} (import the module that defines it): {bad}"


def test_doc_table_is_the_layer_order() -> None:
    """docs/architecture.md's import table lists the layers in LAYERS' order, each once, and each package it
    names exists."""
    rows = doc_table(DOC.read_text(encoding="utf-8"))
    assert tuple(name for name, _ in rows) == LAYERS
    named = {name for _, allowed in rows for name in allowed} | set(LAYERS)
    present = {layer_of(m) for m in EDGES}
    missing = sorted(named - present - {"nothing"})
    assert not missing, f"docs/architecture.md names packages that do not exist: {missing}"
    unknown = sorted({b for _, allowed in rows for b in allowed} - set(LAYERS) - {"nothing"})
    assert not unknown, f"docs/architecture.md's table allows imports of unknown layers: {unknown}"


def test_doc_table_allows_only_lower_layers() -> None:
    rows = doc_table(DOC.read_text(encoding="utf-8"))
    up = sorted(f"{name} -> {b}" for name, allowed in rows for b in allowed - {"nothing"}
                if LAYERS.index(b) >= LAYERS.index(name))
    assert not up, f"docs/architecture.md's table allows imports of the same or a higher layer: {up}"


def test_code_follows_the_doc_table() -> None:
    """Every real import between layers is one the table in docs/architecture.md allows."""
    table = dict(doc_table(DOC.read_text(encoding="utf-8")))
    bad = [w for a, targets in sorted(layer_edges(EDGES).items()) if a in table
           for b in sorted(targets - table[a]) if b not in OUTSIDE for w in _witnesses(EDGES, a, b)]
    assert not bad, "imports docs/architecture.md's table does not allow (add them there, or import less):\n" + \
        "\n".join(bad)


def _function_lengths(path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{node.name} (line {node.lineno})", (node.end_lineno or node.lineno) - node.lineno + 1


def test_modules_are_short() -> None:
    """A library module does one job: at most 400 lines, docstrings and comments included."""
    limit = MAX_MODULE_LINES
    long = sorted(f"{path.relative_to(REPO)}: {n} lines" for path in modules().values()
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit)
    assert not long, f"library modules over {limit} lines:\n" + "\n".join(long)


def test_functions_are_short() -> None:
    """A function fits on a screen: at most 80 lines from its ``def`` to its last line (nested ones count
    inside their parent too)."""
    limit = MAX_FUNCTION_LINES
    long = sorted(f"{path.relative_to(REPO)}: {name}: {n} lines" for path in modules().values()
                  for name, n in _function_lengths(path) if n > limit)
    assert not long, f"functions over {limit} lines:\n" + "\n".join(long)
