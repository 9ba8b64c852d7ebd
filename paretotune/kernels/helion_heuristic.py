"""The config Helion itself runs a kernel with, found the way Helion finds it, for the campaign's target.

A pretuned kernel's baseline must be what its user gets from a plain call, or every ratio is to the wrong
thing. Helion 1.5 (``helion/autotuner/aot_cache.py``) decides that for an ``@helion.aot_kernel`` as follows,
and this module calls those same functions rather than copying them:

- ``find_heuristic_file`` names the file after the kernel's *source file* (``rope.py`` ->
  ``_helion_aot_rope_cuda_sm90.py``), honours ``$HELION_HEURISTIC_DIR`` first, falls back to older compute
  capabilities of the same family (an sm80 file serves sm90), then to ``heuristic_<kernel>.py`` in the AOT
  data directory. It asks ``get_hardware_info()`` for the device; here that question is answered as the
  campaign's target would answer it, so a CPU machine finds what the target GPU would.
- ``autotune_<kernel name>`` in that file is called with the kernel's arguments, or, for a kernel with a user
  key (``aot_kernel(key=...)``), with the key's values flattened as Helion flattens them
  (:func:`paretotune.compat.helion.flatten_key_value`).

Helion logs and falls back to its default config when a heuristic it found cannot be used; a tuning campaign
must not (its baseline would silently be another build), so that is a :class:`HeuristicError` here.
"""
from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from paretotune.compat import helion as compat_helion


class HeuristicError(ValueError):
    """A heuristic file exists for the kernel but cannot give it a config (the message names the file)."""


def is_aot_kernel(kernel: Any) -> bool:
    """Whether Helion looks up an AOT heuristic for ``kernel`` (``@helion.aot_kernel``; plain kernels autotune)."""
    settings = getattr(kernel, "settings", None)
    return (getattr(settings, "autotune_cache", None) == "AOTAutotuneCache"
            or compat_helion.has_aot_user_key_slot(kernel))


@contextlib.contextmanager
def answering_as(capability: int) -> Iterator[None]:
    """Make Helion's heuristic discovery see a CUDA device of ``capability`` (``90`` -> ``sm90``)."""
    with compat_helion.heuristic_lookup_as(capability):
        yield


def source_file(kernel: Any) -> str:
    """The file Helion names the heuristic after: the kernel function's own source file."""
    return str(kernel.__code__.co_filename)


def find_heuristic(kernel: Any, capability: int) -> Path | None:
    """Helion's own ``find_heuristic_file`` for ``kernel`` on a device of ``capability``; None for a kernel that
    is not an AOT kernel (Helion looks up no heuristic for it) or that has no heuristic."""
    if not is_aot_kernel(kernel):
        return None
    compat_helion.import_helion()
    from helion.autotuner import aot_cache

    with answering_as(capability):
        found = aot_cache.find_heuristic_file(source_file(kernel), kernel.name, aot_cache.get_aot_data_dir())
    return None if found is None else Path(found)


def expected_names(kernel: Any, capability: int) -> list[str]:
    """The file names Helion tries beside the kernel, most specific first (for a message saying none exists)."""
    stem = Path(source_file(kernel)).stem
    return [f"_helion_aot_{stem}_cuda_{cc}.py" for cc in compat_helion.compatible_compute_ids(capability)]


def load(path: Path) -> Any:
    """Import a heuristic file by path, under a private module name (one import per file and content)."""
    key = f"paretotune_heuristic_{abs(hash((str(path.resolve()), path.stat().st_mtime_ns)))}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None:
        raise HeuristicError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever the file raises makes it unusable
        raise HeuristicError(f"{path}: importing it failed ({type(exc).__name__}: {_one_line(exc)})") from None
    sys.modules[key] = module
    return module


def key_values(kernel: Any, args: Sequence[Any]) -> tuple[Any, ...]:
    """What Helion passes to ``autotune_<name>``: the flattened user key, or the arguments themselves."""
    user_key = compat_helion.aot_user_key(kernel)
    if user_key is None:
        return tuple(args)
    return tuple(compat_helion.flatten_key_value(user_key(*args)))


def heuristic_config(kernel: Any, path: Path, args: Sequence[Any]) -> dict[str, Any]:
    """The config the heuristic at ``path`` picks for ``args`` (raises :class:`HeuristicError` saying why not)."""
    name = kernel.name
    fn = getattr(load(path), f"autotune_{name}", None)
    if not callable(fn):
        raise HeuristicError(f"{path}: defines no autotune_{name}(...) (Helion calls that function)")
    try:
        values = key_values(kernel, args)
    except Exception as exc:  # noqa: BLE001 - the kernel's own key function failed on these arguments
        raise HeuristicError(f"{path}: the kernel's key function failed ({type(exc).__name__}: {_one_line(exc)})"
                             ) from None
    try:
        config = fn(*values)
    except Exception as exc:  # noqa: BLE001 - the heuristic failed on this shape
        raise HeuristicError(f"{path}: autotune_{name} failed ({type(exc).__name__}: {_one_line(exc)})") from None
    if hasattr(config, "config") and isinstance(config.config, Mapping):  # a helion.Config (or a structural one)
        config = config.config
    if not isinstance(config, Mapping):
        raise HeuristicError(f"{path}: autotune_{name} returned a {type(config).__name__}, not a config dict")
    return dict(config)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__
