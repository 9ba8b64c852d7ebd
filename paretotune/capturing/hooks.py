"""The patches a capture installs on Triton and Helion, and removes afterwards.

``run`` of ``JITFunction`` (what ``kernel[grid](...)`` calls), of the interpreter's ``InterpretedFunction``
(``TRITON_INTERPRET=1``), of ``Autotuner`` and ``Heuristics``, and ``helion.Kernel.__call__`` hand each call
to the active :class:`~paretotune.capturing.recorder.Recorder`; Triton's ``launch_enter_hook`` and
``launch_exit_hook`` chains get its hooks, which time each launch with CUDA events. A module not imported yet
is patched right after its import (a finder on ``sys.meta_path``), so a capture neither imports Triton or
Helion itself nor changes when the program does.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from paretotune.capturing.recorder import Recorder

_active: Recorder | None = None
_saved: list[tuple[type, str, Any]] = []  # (class, attribute, original) of every patch in place
_chains: list[tuple[Any, Any]] = []  # (Triton hook chain, the recorder's hook in it)
_lock = threading.Lock()


def _patch_triton_run(cls: type, launch_level: bool) -> None:
    original = cls.__dict__["run"]

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder = _active
        if recorder is None:
            return original(self, *args, **kwargs)
        return recorder.triton_run(self, original, args, kwargs, launch_level)

    run.__wrapped__ = original  # type: ignore[attr-defined]
    _saved.append((cls, "run", original))
    cls.run = run  # type: ignore[attr-defined]


def _patch_helion_call(cls: type) -> None:
    original = cls.__dict__["__call__"]

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder = _active
        if recorder is None:
            return original(self, *args, **kwargs)
        return recorder.helion_call(self, original, args, kwargs)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    _saved.append((cls, "__call__", original))
    cls.__call__ = __call__  # type: ignore[operator]


def _jit(module: ModuleType) -> None:
    _patch_triton_run(module.JITFunction, True)


def _interpreter(module: ModuleType) -> None:
    _patch_triton_run(module.InterpretedFunction, True)


def _autotuner(module: ModuleType) -> None:
    _patch_triton_run(module.Autotuner, False)
    _patch_triton_run(module.Heuristics, False)


def _helion(module: ModuleType) -> None:
    _patch_helion_call(module.Kernel)


def _knobs(module: ModuleType) -> None:
    """The recorder's launch hooks in Triton's hook chains (beside any the program added itself)."""
    runtime = getattr(module, "runtime", None)
    recorder = _active
    if recorder is None:
        return
    for name, hook in (("launch_enter_hook", recorder.launch_enter), ("launch_exit_hook", recorder.launch_exit)):
        chain = getattr(runtime, name, None)
        if chain is not None and hasattr(chain, "add") and hasattr(chain, "remove"):
            chain.add(hook)
            _chains.append((chain, hook))


# module -> what to patch in it once it is imported
TARGETS: dict[str, Callable[[ModuleType], None]] = {
    "triton.knobs": _knobs,
    "triton.runtime.jit": _jit,
    "triton.runtime.interpreter": _interpreter,
    "triton.runtime.autotuner": _autotuner,
    "helion.runtime.kernel": _helion,
}


class _Loader(importlib.abc.Loader):
    """The module's own loader, then its patch."""

    def __init__(self, inner: Any, patch: Callable[[ModuleType], None]) -> None:
        self._inner, self._patch = inner, patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        with _lock:
            if _active is not None and _finder.waiting.pop(module.__name__, None) is not None:
                self._patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... for inspect and tracebacks
        return getattr(self._inner, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds the target modules with the other finders and hands back a spec whose loader patches them."""

    def __init__(self) -> None:
        self.waiting: dict[str, Callable[[ModuleType], None]] = {}

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        patch = self.waiting.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader, patch)
                return spec
        return None


_finder = _AfterImport()


def install(recorder: Recorder) -> None:
    """Route kernel calls to ``recorder`` until :func:`uninstall`."""
    global _active
    with _lock:
        if _active is not None:
            raise RuntimeError("a capture is already running in this process")
        _active = recorder
        for name, patch in TARGETS.items():
            module = sys.modules.get(name)
            if module is not None:
                patch(module)
            else:
                _finder.waiting[name] = patch
        if _finder.waiting and _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Put every patched method back; later calls are not recorded."""
    global _active
    with _lock:
        _active = None
        _finder.waiting.clear()
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        while _saved:
            cls, attr, original = _saved.pop()
            setattr(cls, attr, original)
        while _chains:
            chain, hook = _chains.pop()
            chain.remove(hook)
