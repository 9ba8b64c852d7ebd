"""Kernels given as Python objects (e.g. defined in a notebook cell) instead of ``module:attr`` strings.

Worker processes build kernels from the campaign text, so an object has to reach them by name.
:func:`register` pickles the object by value (cloudpickle: a function from ``__main__`` or a notebook cell
travels with its code) into a folder named by ``$PARETOTUNE_INLINE_DIR`` and returns the campaign source
``paretotune.kernels.inline:<name>``. Every worker inherits that variable (pool workers take the campaign
process's environment when the pool starts; validation and ncu children inherit it), and this module's
``__getattr__`` unpickles the object on first use. The registering process keeps the object itself.

Triton's ``JITFunction`` cannot be pickled as is (it holds a lock and its module's globals), and rebuilding it
with ``triton.jit`` would need its source file, which a notebook cell does not have: it is pickled as its
state (source text included) and rebuilt without re-reading source.
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import tempfile
import threading
from pathlib import Path
from typing import Any

from paretotune.compat import triton as compat_triton
from paretotune.store.atomic import atomic_write

ENV = "PARETOTUNE_INLINE_DIR"
MODULE = __name__
_OBJECTS: dict[str, Any] = {}
_LOCK = threading.Lock()


def register(obj: Any, name: str = "kernel") -> str:
    """Make ``obj`` importable by every worker; returns its campaign source string."""
    blob = dumps(obj)
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "kernel"
    key = f"{stem}_{hashlib.sha256(blob).hexdigest()[:12]}"
    with _LOCK:
        folder = os.environ.get(ENV)
        if not folder or not Path(folder).is_dir():
            folder = tempfile.mkdtemp(prefix="paretotune-inline-")
            os.environ[ENV] = folder
        path = Path(folder) / f"{key}.pkl"
        if not path.exists():
            atomic_write(path, blob)
        _OBJECTS[key] = obj
    return f"{MODULE}:{key}"


def dumps(obj: Any) -> bytes:
    """cloudpickle, with Triton's JIT functions reduced to their state."""
    buf = io.BytesIO()
    _pickler_class()(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def _pickler_class() -> type:
    import cloudpickle

    try:
        compat_triton.checked()
        from triton.runtime.jit import JITFunction
    except ImportError:
        return cloudpickle.CloudPickler

    class Pickler(cloudpickle.CloudPickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, JITFunction):
                return _reduce_jit(obj)
            return super().reducer_override(obj)

    return Pickler


def _reduce_jit(fn: Any) -> tuple[Any, tuple[Any, ...]]:
    return _rebuild_jit, (type(fn), compat_triton.jit_function_state(fn))


def _rebuild_jit(cls: type, state: dict[str, Any]) -> Any:
    """The unpickling side of :func:`_reduce_jit` (named by reference in each pickle)."""
    return compat_triton.jit_function_from_state(cls, state)


def __getattr__(name: str) -> Any:
    """Load a registered object in a process that did not register it."""
    if name.startswith("__"):
        raise AttributeError(name)
    with _LOCK:
        if name not in _OBJECTS:
            folder = os.environ.get(ENV)
            path = Path(folder) / f"{name}.pkl" if folder else None
            if path is None or not path.is_file():
                raise AttributeError(f"no kernel object '{name}' registered in this session (kernels given as "
                                     "objects live as long as the Python session that gave them)")
            _OBJECTS[name] = pickle.loads(path.read_bytes())
        return _OBJECTS[name]
