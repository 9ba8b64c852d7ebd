"""What a captured kernel object is (Triton's decorators peeled off, or a Helion kernel) and where it is defined.

A campaign names its kernel as ``module:attr`` when a fresh process can import the module (it is not the
program's ``__main__`` and does not come from the program's own folder or working directory) and as
``file.py:attr`` otherwise. A kernel with no such name (a closure, a lambda, code without a file, a kernel
in a program file that has no ``if __name__ == "__main__":`` guard, so importing it would run the program) is
recorded with the reason and never becomes a campaign.
"""
from __future__ import annotations

import ast
import inspect
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class KernelInfo:
    """One kernel object of the program, as the recorder and the replay need it."""

    kind: Literal["triton", "helion"]
    obj: Any
    fn: Any  # the innermost Python function
    name: str
    layers: tuple[str, ...]  # decorators, outermost first: autotune, heuristics, jit / helion
    params: tuple[str, ...]
    constexprs: frozenset[str] = frozenset()
    defaults: dict[str, Any] = field(default_factory=dict)
    tuned: frozenset[str] = frozenset()  # parameters the autotuner's configs or heuristics set, not the caller
    autotuner: Any = None
    source: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


def triton_info(obj: Any, program_dirs: Iterable[str]) -> KernelInfo:
    """A ``@triton.jit`` kernel (compiled or interpreted, under ``@triton.autotune`` / ``@triton.heuristics``)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    inner, autotuner, layers, tuned = obj, None, [], set()
    while isinstance(inner, (Autotuner, Heuristics)):
        if isinstance(inner, Autotuner):
            autotuner = autotuner or inner
            layers.append("autotune")
            tuned.update(k for c in inner.configs for k in c.kwargs)
        else:
            layers.append("heuristics")
            tuned.update(inner.values)
        inner = inner.fn
    layers.append("jit")
    fn = getattr(inner, "fn", None)
    info = _base("triton", obj, fn, tuple(layers), program_dirs)
    info.constexprs = frozenset(n for n, p in _signature(fn).items() if "constexpr" in str(p.annotation))
    info.tuned, info.autotuner = frozenset(tuned), autotuner
    return info


def helion_info(obj: Any, program_dirs: Iterable[str]) -> KernelInfo:
    """A ``@helion.kernel`` or ``@helion.aot_kernel`` kernel."""
    return _base("helion", obj, getattr(obj, "fn", None), ("helion",), program_dirs)


def _signature(fn: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _base(kind: Literal["triton", "helion"], obj: Any, fn: Any, layers: tuple[str, ...],
          program_dirs: Iterable[str]) -> KernelInfo:
    if not inspect.isfunction(fn):
        return KernelInfo(kind, obj, fn, type(obj).__name__, layers, (), problem=f"{type(obj).__name__} wraps no "
                          "Python function")
    params = _signature(fn)
    info = KernelInfo(kind, obj, fn, fn.__name__, layers, tuple(params),
                      defaults={n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty})
    info.source, info.problem = where_defined(obj, fn, program_dirs)
    return info


def where_defined(obj: Any, fn: Any, program_dirs: Iterable[str]) -> tuple[dict[str, Any], str | None]:
    """(``{module, attr, file, line, importable}``, why it cannot be named or None)."""
    code = fn.__code__
    module, qualname, file = fn.__module__, fn.__qualname__, code.co_filename
    source: dict[str, Any] = {"module": module, "attr": None, "file": os.path.abspath(file) if
                              not file.startswith("<") else file, "line": code.co_firstlineno, "importable": False}
    if "<lambda>" in qualname:
        return source, "a lambda: it has no importable name"
    if "<locals>" in qualname:
        return source, "defined inside a function (a closure or local kernel): it has no importable name"
    if file.startswith("<"):
        return source, f"defined in code without a file ({file})"
    namespace = fn.__globals__
    attr = fn.__name__ if namespace.get(fn.__name__) is obj else next(
        (k for k, v in list(namespace.items()) if v is obj), None)
    if attr is None:
        return source, f"no module-level name of {module} refers to this kernel object"
    source["attr"] = attr
    if module == "__main__" or namespace.get("__name__") == "__main__":
        source["module"] = "__main__"
        if not has_main_guard(source["file"]):
            return source, ("defined in the program's __main__, whose file has no `if __name__ == \"__main__\":` "
                            "guard: importing it would run the program")
        return source, None
    source["importable"] = _importable(module, source["file"], {os.path.abspath(d) for d in program_dirs})
    return source, None


def _importable(module: str, file: str, program_dirs: set[str]) -> bool:
    """Whether a fresh process imports ``module`` from ``file`` without the program's folder or working
    directory on its path (site-packages, PYTHONPATH)."""
    loaded = sys.modules.get(module)
    if loaded is None or os.path.abspath(getattr(loaded, "__file__", "") or "") != file:
        return False
    top = sys.modules.get(module.partition(".")[0])
    top_file = getattr(top, "__file__", None)
    if top_file:
        root = os.path.dirname(top_file)
        if os.path.basename(top_file) == "__init__.py":
            root = os.path.dirname(root)
    else:  # a namespace package
        paths = list(getattr(top, "__path__", []))
        if not paths:
            return False
        root = os.path.dirname(paths[0])
    return os.path.abspath(root) not in program_dirs


def has_main_guard(file: str) -> bool:
    """Whether a program file keeps its work under ``if __name__ == "__main__":`` (so importing it is safe)."""
    try:
        with open(file, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), file)
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1:
            sides = [node.test.left, node.test.comparators[0]]
            names = [s.id for s in sides if isinstance(s, ast.Name)]
            values = [s.value for s in sides if isinstance(s, ast.Constant)]
            if names == ["__name__"] and values == ["__main__"] and isinstance(node.test.ops[0], ast.Eq):
                return True
    return False
