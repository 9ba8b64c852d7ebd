"""The stock child measurement program: ``python -m paretotune.ncu.child SPEC.json``.

It runs under ncu. For every item of the spec it imports a factory (``"module:attr"``) and calls it with the
item's params; the factory compiles and prepares inputs and returns a zero-argument launch function. The
child first builds and warms up *every* item outside any NVTX range (JIT compilation, autotuning and first-call
allocations are then never profiled), then launches each item exactly once inside its own push/pop range,
synchronizing before the pop so the launch is complete inside the range.

Spec (JSON)::

    {"version": 1, "nvtx_domain": null, "warmup": 1, "sys_path": ["/extra/import/dir"],
     "items": [{"range": "pt_3_4096", "candidate_id": 3, "shape": "4096",
                "factory": "my_kernels:make_launch", "params": {"BLOCK": 256}}]}

Factories should share input tensors between items of the same shape (all launch functions of a batch are
alive at once). A Python exception in one item is reported (marker line) and the others go on; a CUDA error
that poisons the context ends the child with exit code 3 so the runner re-runs the rest in a new process.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paretotune.ncu.batch import BatchItem, ChildCommand, ChildRequest
from paretotune.ncu.protocol import emit

SPEC_VERSION = 1
EXIT_SETUP = 2
EXIT_CUDA_POISONED = 3
# Errors after which the CUDA context is unusable, so every later launch in this process would fail too.
_STICKY = ("illegal memory access", "unspecified launch failure", "misaligned address", "illegal instruction",
           "an illegal", "device-side assert", "CUDA error: launch failure", "uncorrectable ECC", "hardware stack")

Launch = Callable[[], Any]


def write_spec(path: Path, items: Sequence[BatchItem], factory: str | Callable[[BatchItem], str], *,
               nvtx_domain: str | None = None, warmup: int = 1, sys_path: Sequence[str] = ()) -> Path:
    """Write the child's JSON spec; ``factory`` is one ``"module:attr"`` for all items or a function of the item."""
    entries = []
    for item in items:
        params = dict(item.params)
        try:
            json.dumps(params)
        except TypeError as exc:
            raise ValueError(f"item {item.range_name}: params are not JSON-serializable ({exc})") from None
        entries.append({"range": item.range_name, "candidate_id": item.candidate_id, "shape": item.shape,
                        "factory": factory(item) if callable(factory) else factory, "params": params})
    spec = {"version": SPEC_VERSION, "nvtx_domain": nvtx_domain, "warmup": warmup,
            "sys_path": [str(p) for p in sys_path], "items": entries}
    path.write_text(json.dumps(spec, indent=1))
    return path


def python_child(factory: str | Callable[[BatchItem], str], *, python: str | None = None, warmup: int = 1,
                 sys_path: Sequence[str] = ()) -> ChildCommand:
    """A :data:`ChildCommand` that runs this module with a spec written into the run's directory."""

    def build(request: ChildRequest) -> list[str]:
        spec = write_spec(request.workdir / "child_spec.json", request.items, factory,
                          nvtx_domain=request.nvtx_domain, warmup=warmup, sys_path=sys_path)
        return [python or sys.executable, "-m", "paretotune.ncu.child", str(spec)]

    return build


def import_object(ref: str) -> Any:
    """``"package.module:attr.sub"`` → the object."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"factory {ref!r} must look like 'module:attr'")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _cuda_torch() -> Any:
    """torch, if a factory has imported it and CUDA works; the child itself never imports torch (CPU tests and
    non-torch children stay fast)."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and torch.cuda.is_available() else None


def _sync() -> None:
    torch = _cuda_torch()
    if torch is not None:
        torch.cuda.synchronize()


def _check_nvtx(domain: str | None) -> None:
    """Fail before any warm-up when no NVTX backend can exist for the domain."""
    have_nvtx = importlib.util.find_spec("nvtx") is not None
    if domain is not None and not have_nvtx:
        raise RuntimeError(f"NVTX domain {domain!r} needs the nvtx package (pip install nvtx)")
    if domain is None and not have_nvtx and importlib.util.find_spec("torch") is None:
        raise RuntimeError("NVTX ranges need torch or the nvtx package (pip install nvtx)")


def _nvtx_backend(domain: str | None) -> tuple[Callable[[str], None], Callable[[], None]]:
    """push(name) / pop() for the domain. The default domain uses ``torch.cuda.nvtx`` on a GPU (ASCII messages,
    the combination verified under ncu); named domains use the ``nvtx`` package."""
    torch = _cuda_torch()
    if domain is None and torch is not None:
        import torch.cuda.nvtx as tnvtx

        def push_torch(name: str) -> None:
            tnvtx.range_push(name)  # type: ignore[no-untyped-call,unused-ignore]

        def pop_torch() -> None:
            tnvtx.range_pop()  # type: ignore[no-untyped-call,unused-ignore]

        return push_torch, pop_torch
    import nvtx  # type: ignore[import-untyped]

    return (lambda name: nvtx.push_range(name, domain=domain)), (lambda: nvtx.pop_range(domain=domain))


def _is_sticky(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return any(s.lower() in text.lower() for s in _STICKY)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def run_spec(spec: dict[str, Any]) -> int:
    """Build, warm up, then measure every item; the exit code tells the runner what happened."""
    if spec.get("version") != SPEC_VERSION:
        raise ValueError(f"spec version {spec.get('version')!r} (expected {SPEC_VERSION})")
    for entry in reversed(spec.get("sys_path", [])):
        sys.path.insert(0, entry)
    domain = spec.get("nvtx_domain")
    warmup = int(spec.get("warmup", 1))
    _check_nvtx(domain)
    ready: list[tuple[str, Launch]] = []
    for entry in spec["items"]:
        name = entry["range"]
        emit("start", name)
        try:
            launch = import_object(entry["factory"])(dict(entry.get("params", {})))
            if not callable(launch):
                raise TypeError(f"factory {entry['factory']} returned {type(launch).__name__}, not a function")
            for _ in range(warmup):
                launch()
            _sync()
        except Exception as exc:  # noqa: BLE001 - one item's failure is data; the others go on
            emit("failed", name, _describe(exc))
            if _is_sticky(exc):
                return EXIT_CUDA_POISONED
            continue
        ready.append((name, launch))
    push, pop = _nvtx_backend(domain)  # after the factories: they import torch if they use it
    for name, launch in ready:
        emit("measure", name)
        push(name)
        try:
            launch()
            _sync()
        except Exception as exc:  # noqa: BLE001
            emit("failed", name, _describe(exc))
            if _is_sticky(exc):
                return EXIT_CUDA_POISONED
        finally:
            pop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        emit("fatal", "-", "usage: python -m paretotune.ncu.child SPEC.json")
        return EXIT_SETUP
    try:
        spec = json.loads(Path(args[0]).read_text())
        return run_spec(spec)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        emit("fatal", "-", f"{args[0]}: {_describe(exc)}")
        return EXIT_SETUP


if __name__ == "__main__":
    sys.exit(main())
