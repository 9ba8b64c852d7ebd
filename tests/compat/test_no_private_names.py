"""No module of paretotune outside ``paretotune/compat/`` uses a private name of Helion, Triton or torch.

The rule, checked with :mod:`ast` on every ``paretotune/**/*.py`` except ``paretotune/compat/`` (nothing is
imported). A *private* name starts with one underscore (``_x``; dunders such as ``__globals__`` are not private).
A module fails when it has any of:

1. an import of a private module or name of ``helion``, ``triton`` or ``torch``: ``import helion._compat``,
   ``from torch.utils._pytree import tree_map``, ``from helion.autotuner.aot_kernel import _flatten_key_value``;
2. a private attribute on a name the module binds by importing from those libraries (``import triton``,
   ``from helion import runtime``, ``import triton.language as tl``; names are matched per file, wherever used):
   ``runtime._x``, ``triton.runtime.jit._x``, or ``getattr(runtime, "_x")``;
3. ``getattr``/``hasattr``/``setattr``/``delattr`` with a literal private name on any object (a Helion kernel's
   ``_aot_user_key``, a bound kernel's ``_config``), except the few in :data:`ALLOWED` that are not Helion's,
   Triton's or torch's;
4. a call with a private keyword argument (Helion's ``normalize(_fix_invalid=...)``, a host function's
   ``_launcher=``), except those in :data:`ALLOWED`: paretotune's own functions take none.

Not seen by this rule: a private attribute read directly on an object that is passed around (``fn._pack_args``
on a JIT function given as an argument): syntax cannot tell it from paretotune's own objects, so review keeps
those in ``compat/`` too.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "paretotune"
LIBRARIES = ("helion", "triton", "torch")
REFLECTION = ("getattr", "hasattr", "setattr", "delattr")

# (module path under paretotune/, private name) -> why a literal private name or keyword there is not Helion's,
# Triton's or torch's
ALLOWED: dict[tuple[str, str], str] = {
    ("cli.py", "_main"): "paretotune's own key in argparse's set_defaults (the subcommand's function)",
    ("build/pool.py", "_processes"): "the standard library's ProcessPoolExecutor (its worker processes)",
    ("ship/make.py", "_PARETOTUNE_NOT_READY"): "paretotune's own shipped module (kernels/acf_ready.py writes it)",
    ("ship/triton_table.py", "_PARETOTUNE_NOT_READY"): "paretotune's own shipped module (kernels/acf_ready.py)",
}


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _library(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in LIBRARIES  # type: ignore[union-attr]


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the module binds by importing from one of :data:`LIBRARIES`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _library(alias.name):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _library(node.module):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _chain_root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def violations(path: Path, root: Path = ROOT) -> Iterator[str]:
    """Each use of a private name of Helion, Triton or torch in one module, as ``line: what``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(root).as_posix()
    bound = _bound_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _library(alias.name) and any(private(p) for p in alias.name.split(".")):
                    yield f"{node.lineno}: import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _library(node.module):
            parts = node.module.split(".") + [a.name for a in node.names]  # type: ignore[union-attr]
            if any(private(p) for p in parts):
                yield f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}"
        elif isinstance(node, ast.Attribute) and private(node.attr) and _chain_root(node) in bound:
            yield f"{node.lineno}: {ast.unparse(node)}"
        elif isinstance(node, ast.Call):
            yield from _call_violations(node, where, bound)


def _call_violations(node: ast.Call, where: str, bound: set[str]) -> Iterator[str]:
    for keyword in node.keywords:
        if keyword.arg is not None and private(keyword.arg) and (where, keyword.arg) not in ALLOWED:
            yield f"{node.lineno}: keyword {keyword.arg}= in {ast.unparse(node.func)}(...)"
    if not (isinstance(node.func, ast.Name) and node.func.id in REFLECTION and len(node.args) >= 2):
        return
    name = node.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and private(name.value):
        if _chain_root(node.args[0]) in bound or (where, name.value) not in ALLOWED:
            yield f"{node.lineno}: {ast.unparse(node)}"


def test_no_private_name_of_helion_triton_or_torch_outside_compat() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] == "compat":
            continue
        found += [f"paretotune/{path.relative_to(ROOT).as_posix()}:{v}" for v in violations(path)]
    assert not found, "private names of Helion/Triton/torch outside paretotune/compat/:\n" + "\n".join(found)


def test_the_rule_sees_each_form(tmp_path: Path) -> None:
    """Each numbered form of the module docstring is found, and paretotune's own private names are not."""
    text = "\n".join([
        "import helion._compat",
        "from torch.utils import _pytree",
        "from helion.autotuner.aot_kernel import _flatten_key_value",
        "from triton import runtime",
        "runtime.jit._registry",
        "getattr(runtime, '_x')",
        "getattr(kernel, '_aot_user_key', None)",
        "spec.normalize(config, _fix_invalid=True)",
        "self._own, obj._own, getattr(obj, '__wrapped__'), runtime.__name__",
    ])
    sample = tmp_path / "sample.py"
    sample.write_text(text)
    lines = sorted(int(v.split(":")[0]) for v in violations(sample, tmp_path))
    assert lines == [1, 2, 3, 5, 6, 7, 8]
