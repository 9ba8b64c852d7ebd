"""The patches a capture installs on Triton and Helion, and removes afterwards.

``run`` of ``JITFunction`` (what ``kernel[grid](...)`` calls), of the interpreter's ``InterpretedFunction``
(``TRITON_INTERPRET=1``), of ``Autotuner`` and ``Heuristics``, and ``helion.Kernel.__call__`` hand each call
to the active :class:`~paretotune.capturing.recorder.Recorder`; Triton's ``launch_enter_hook`` and
``launch_exit_hook`` chains get its hooks, which time each launch with CUDA events. A module not imported yet
is patched right after its import (a finder on ``sys.meta_path``), so a capture neither imports Triton or
Helion itself nor changes when the program does. Which modules, classes and methods those are, and how each is
wrapped, is :mod:`paretotune.compat`'s (``compat.triton.RUN_CLASSES``, ``compat.helion.KERNEL_MODULE``).
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
from paretotune.compat import helion as compat_helion
from paretotune.compat import triton as compat_triton
from paretotune.compat.patching import Undo

_active: Recorder | None = None
_undos: list[Undo] = []  # puts back each patch and hook in place, newest last
_lock = threading.Lock()


def _triton_handler(launch_level: bool) -> compat_triton.Handler:
    def handle(kernel: Any, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        recorder = _active
        if recorder is None:
            return original(kernel, *args, **kwargs)
        return recorder.triton_run(kernel, original, args, kwargs, launch_level)

    return handle


def _helion_handler(kernel: Any, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    recorder = _active
    if recorder is None:
        return original(kernel, *args, **kwargs)
    return recorder.helion_call(kernel, original, args, kwargs)


def _runs(module: ModuleType) -> None:
    _undos.extend(compat_triton.wrap_runs(module, _triton_handler))


def _helion(module: ModuleType) -> None:
    _undos.append(compat_helion.wrap_kernel_call(module, _helion_handler))


def _knobs(module: ModuleType) -> None:
    """The recorder's launch hooks in Triton's hook chains (beside any the program added itself)."""
    recorder = _active
    if recorder is not None:
        _undos.extend(compat_triton.add_launch_hooks(module, recorder.launch_enter, recorder.launch_exit))


# module -> what to patch in it once it is imported (which classes and methods: paretotune.compat)
TARGETS: dict[str, Callable[[ModuleType], None]] = {
    compat_triton.KNOBS_MODULE: _knobs,
    **{name: _runs for name in compat_triton.RUN_CLASSES},
    compat_helion.KERNEL_MODULE: _helion,
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
        while _undos:
            _undos.pop()()
