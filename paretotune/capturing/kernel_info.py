"""What a captured kernel object is (Triton's decorators peeled off, or a Helion kernel) and where it is defined.

A campaign names its kernel by file, ``path/to/file.py:qualname``, taken from the function object, and the
capture records the module's dotted name beside it: the file is imported as part of its package
(:mod:`paretotune.campaign.kernel_file`), so the kernel resolves wherever the program found it (``__main__``,
a ``sys.path`` edit, ``PYTHONPATH``, site-packages, a namespace package). A kernel with no such name (a
closure or a kernel made inside a function, a lambda, code without a source file, a kernel in a program file
that has no ``if __name__ == "__main__":`` guard, so importing it would run the program) is recorded with the
reason and never becomes a campaign.
"""
from __future__ import annotations

import ast
import inspect
import os
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


def triton_info(obj: Any) -> KernelInfo:
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
    info = _base("triton", obj, fn, tuple(layers))
    info.constexprs = frozenset(n for n, p in _signature(fn).items() if "constexpr" in str(p.annotation))
    info.tuned, info.autotuner = frozenset(tuned), autotuner
    return info


def helion_info(obj: Any) -> KernelInfo:
    """A ``@helion.kernel`` or ``@helion.aot_kernel`` kernel."""
    return _base("helion", obj, getattr(obj, "fn", None), ("helion",))


def _signature(fn: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _base(kind: Literal["triton", "helion"], obj: Any, fn: Any, layers: tuple[str, ...]) -> KernelInfo:
    if not inspect.isfunction(fn):
        return KernelInfo(kind, obj, fn, type(obj).__name__, layers, (), problem=f"{type(obj).__name__} wraps no "
                          "Python function")
    params = _signature(fn)
    info = KernelInfo(kind, obj, fn, fn.__name__, layers, tuple(params),
                      defaults={n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty})
    info.source, info.problem = where_defined(obj, fn)
    return info


def where_defined(obj: Any, fn: Any) -> tuple[dict[str, Any], str | None]:
    """(``{module, qualname, attr, file, line}``, why a campaign cannot import it, in one line, or None). A
    campaign names the kernel by ``file`` and ``attr`` (its qualified name, or another module-level name of the
    same object), so it resolves wherever the program found the module; ``module`` tells its package."""
    code = fn.__code__
    module, qualname, file = fn.__module__, fn.__qualname__, code.co_filename
    has_file = not file.startswith("<") and os.path.isfile(file)
    source: dict[str, Any] = {"module": module, "qualname": qualname, "attr": None,
                              "file": os.path.abspath(file) if has_file else file, "line": code.co_firstlineno}
    if "<lambda>" in qualname:
        return source, "a lambda: it has no name a campaign can import"
    if "<locals>" in qualname:
        outer = qualname.rpartition(".<locals>.")[0].replace(".<locals>", "")
        return source, (f"defined inside {outer}() as {qualname}: each call of {outer} makes a new kernel, which no "
                        "file and name can reach from a campaign; define it at module level to tune it")
    if not has_file:
        return source, (f"no source file ({file}: exec'd code or a notebook cell); put it in a .py file to tune it")
    namespace = fn.__globals__
    attr = qualname if _lookup(namespace, qualname) is obj else next(
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


def _lookup(namespace: dict[str, Any], qualname: str) -> Any:
    """The object at a dotted qualified name of a module namespace (a class attribute too), or None."""
    head, _, rest = qualname.partition(".")
    found = namespace.get(head)
    for part in rest.split(".") if rest else ():
        found = getattr(found, part, None)
    return found


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
