"""Find ptxas ≥ 13.3 (the first with ``--apply-controls``), and build PTX with it to read resource usage.

Triton must use the same ptxas, and every process that builds a candidate must agree on Triton's cache key,
so :func:`export_for_triton` sets the build environment before Triton is imported in any process that compiles.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from paretotune.compat.triton import nvidia_backend_source
from paretotune.errors import ToolchainError
from paretotune.toolchain.arch import TargetArch

MIN_VERSION = (13, 3)
_VERSION_RE = re.compile(r"release (\d+)\.(\d+), V(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class Ptxas:
    path: Path
    version: str  # "13.3.73"

    @property
    def major_minor(self) -> str:
        return ".".join(self.version.split(".")[:2])


def _wheel_ptxas() -> Path | None:
    """ptxas from the ``nvidia-cuda-nvcc`` wheel (``nvidia/cu13/bin/ptxas``), if installed."""
    try:
        import nvidia  # namespace package
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        candidate = Path(root) / "cu13" / "bin" / "ptxas"
        if candidate.is_file():
            return candidate
    return None


def ptxas_version(path: Path) -> str:
    """Parse ``ptxas --version``; raise ToolchainError if the binary cannot run."""
    try:
        out = subprocess.run([str(path), "--version"], check=False, capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{path}: cannot run ptxas ({exc})") from None
    match = _VERSION_RE.search(out)
    if not match:
        raise ToolchainError(f"{path}: not a ptxas binary (unexpected --version output)")
    return ".".join(match.group(3, 4, 5))


def find_ptxas() -> Ptxas:
    """Locate ptxas ≥ 13.3: $PARETOTUNE_PTXAS, $TRITON_PTXAS_PATH, the nvidia-cuda-nvcc wheel, then $PATH."""
    tried: list[str] = []
    for source, value in (
        ("PARETOTUNE_PTXAS", os.environ.get("PARETOTUNE_PTXAS")),
        ("TRITON_PTXAS_PATH", os.environ.get("TRITON_PTXAS_PATH")),
        ("nvidia-cuda-nvcc wheel", _wheel_ptxas()),
        ("PATH", shutil.which("ptxas")),
    ):
        if not value:
            continue
        path = Path(value)
        explicit = source in ("PARETOTUNE_PTXAS", "TRITON_PTXAS_PATH")  # named by the user: fail, don't skip
        if explicit and not path.is_file():
            raise ToolchainError(f"${source}={value}: no such file")
        version = ptxas_version(path)
        if tuple(int(x) for x in version.split(".")[:2]) < MIN_VERSION:
            if explicit:
                raise ToolchainError(f"${source}={value}: ptxas {version} is too old; --apply-controls needs "
                                     f">= 13.3 (pip install nvidia-cuda-nvcc==13.3.73)")
            tried.append(f"{path} ({version}, too old)")
            continue
        return Ptxas(path=path.resolve(), version=version)
    hint = f"; found only {', '.join(tried)}" if tried else ""
    raise ToolchainError("ptxas >= 13.3 not found (set PARETOTUNE_PTXAS or pip install nvidia-cuda-nvcc==13.3.73)"
                         + hint)


# Variables that enter Triton's cache key when set (``get_cache_invalidating_env_vars``), with the value every
# paretotune process that builds takes when the caller left them unset. Set in one process and unset in another
# (the CLI set it, a benchmark script or the Python API did not), they gave the CPU pool's precompile and the GPU
# worker's launch different keys, and the GPU worker rebuilt every candidate (docs/results.md has the cost).
BUILD_ENV_DEFAULTS = {"TRITON_DEFAULT_FP_FUSION": "1"}  # Triton's default, spelled out (also silences its warning)


def export_for_triton(ptxas: Ptxas) -> None:
    """Set this process's build environment: Triton runs our ptxas, and Triton's cache key does not depend on
    who started the campaign. Called first in every process that compiles (pool workers, GPU workers, the
    validation worker, the CLI); must run before ``import triton`` (Triton reads the ptxas paths once)."""
    os.environ["TRITON_PTXAS_PATH"] = str(ptxas.path)
    os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = str(ptxas.path)
    set_build_env_defaults()


def set_build_env_defaults() -> None:
    """:data:`BUILD_ENV_DEFAULTS` where the caller left them unset; for a process that imports Triton without
    building through our ptxas (test sessions, benchmark scripts). :func:`export_for_triton` includes it."""
    for name, value in BUILD_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)


@dataclass(frozen=True)
class BuildStats:
    """Resource usage of one kernel build, as ``ptxas -v`` reports it (plus Triton's launch metadata)."""

    registers: int
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    stack_frame: int  # bytes
    static_shared: int  # bytes, from ptxas ("N bytes smem")
    dynamic_shared: int  # bytes Triton requests at launch
    num_warps: int
    compile_s: float

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads

    def stored(self) -> dict[str, int]:
        """The build as a record stores it per shape (``extra[<shape>]``): every count, not the wall time."""
        return {key: getattr(self, name) for key, name in STORED_BUILD.items()}

    @classmethod
    def from_stored(cls, per_shape: dict[str, object]) -> BuildStats | None:
        """The build back from a record's ``extra[<shape>]`` (``compile_s`` unknown: NaN); None where the
        record does not hold all of it as integers (a failed build, an older record, an edited one)."""
        values = {name: per_shape.get(key) for key, name in STORED_BUILD.items()}
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values.values()):
            return None
        return cls(**values, compile_s=float("nan"))  # type: ignore[arg-type]


# key in a record's extra[<shape>] -> BuildStats field
STORED_BUILD = {"registers": "registers", "spill_stores": "spill_stores", "spill_loads": "spill_loads",
                "stack": "stack_frame", "static_shared": "static_shared", "dynamic_shared": "dynamic_shared",
                "num_warps": "num_warps"}


_USED_RE = re.compile(r"Used (\d+) registers")
_SPILL_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_SMEM_RE = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str, kernel_name: str | None = None) -> tuple[int, int, int, int, int]:
    """(registers, spill stores, spill loads, stack frame, static smem) for one kernel of a ``ptxas -v`` log.

    The log has a "Compiling entry function 'NAME'" block per kernel; with ``kernel_name`` we read that block.
    """
    blocks = re.split(r"ptxas info\s*: Compiling entry function ", log)
    if kernel_name is not None:
        blocks = [b for b in blocks if b.startswith(f"'{kernel_name}'")] or blocks
    block = blocks[-1]
    used, spill = _USED_RE.search(block), _SPILL_RE.search(block)
    if not used or not spill:
        raise ValueError(f"unexpected ptxas -v output: {log[-300:]!r}")
    smem = _SMEM_RE.search(block)
    return (int(used.group(1)), int(spill.group(2)), int(spill.group(3)), int(spill.group(1)),
            int(smem.group(1)) if smem else 0)


def stats_from_log(log: str, kernel_name: str, *, num_warps: int, dynamic_shared: int) -> BuildStats | None:
    """The resource usage of ``kernel_name`` from a ``ptxas -v`` log that another tool ran (Triton's own
    ptxas, captured by the worker's wrapper); None when the log has no block for that kernel."""
    if f"Compiling entry function '{kernel_name}'" not in log:
        return None
    try:
        regs, st, ld, stack, smem = parse_ptxas_log(log, kernel_name)
    except ValueError:
        return None
    return BuildStats(registers=regs, spill_stores=st, spill_loads=ld, stack_frame=stack, static_shared=smem,
                      dynamic_shared=dynamic_shared, num_warps=num_warps, compile_s=0.0)


REG_ALLOC_FLAG = "--regAllocOptLevel=2"


@functools.cache
def triton_passes_reg_alloc_flag() -> bool:
    """Does the installed Triton pass ``--regAllocOptLevel=2`` to ptxas (its workaround for a ptxas 13.x bug, in
    newer releases: 3.9 does)? Read from its NVIDIA backend's source text, never by importing Triton (that must
    wait for :func:`export_for_triton`). Without the flag, 2 of 120 sampled ACFs gave machine code other than
    Triton's on the bundled softmax (triton 3.9, ``benchmarks/results/static_build_devbox.json``), so static
    figures would not be the launched build's."""
    source = nvidia_backend_source()
    return source is not None and REG_ALLOC_FLAG in source


def ptxas_flags(target: TargetArch, acf: Path | None, *, enable_fp_fusion: bool = True) -> list[str]:
    """The flags Triton passes to ptxas, in its order, so our build equals the one Triton launches."""
    flags = ["-lineinfo"]
    if not enable_fp_fusion:
        flags.append("--fmad=false")
    flags.append("-v")
    if triton_passes_reg_alloc_flag():
        flags.append(REG_ALLOC_FLAG)
    if acf is not None:
        flags += ["--apply-controls", str(acf)]
    flags.append(f"--gpu-name={target.gpu_name}")
    return flags


TEMP_PREFIX = "paretotune-ptxas-"  # + "<pid>-": the process that made it, so a dead one's folders can be found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def clean_stale_temp_folders() -> int:
    """Remove the ptxas temp folders (:func:`build_ptx`) of processes that are gone, and return how many: a
    worker killed mid-build (a hang, a crash, a killed run) cannot remove its own. Folders of live processes,
    and names that carry no pid, are left alone."""
    removed = 0
    for path in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*-*"):
        pid = path.name[len(TEMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)) or not path.is_dir() or path.is_symlink():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += not path.exists()
    return removed


def _die_with_parent() -> None:
    """Runs in the ptxas child before exec: if the worker that started it is killed (a pool restart after a
    hang or crash elsewhere), ptxas gets SIGKILL too instead of living on as an orphan (Linux prctl)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def build_ptx(ptxas: Ptxas, ptx: str, target: TargetArch, acf: Path | None, *, kernel_name: str | None,
              num_warps: int, dynamic_shared: int, timeout_s: float = 120.0,
              enable_fp_fusion: bool = True) -> BuildStats:
    """Assemble PTX with ptxas (optionally applying an ACF) and return its resource usage.

    A ptxas failure or hang raises :class:`paretotune.errors.CandidateFailure` with the reason.
    """
    from paretotune.errors import CandidateFailure

    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        cmd = [str(ptxas.path), *ptxas_flags(target, acf, enable_fp_fusion=enable_fp_fusion), str(src), "-o", str(out)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s,
                                  preexec_fn=_die_with_parent if os.name == "posix" else None)
        except subprocess.TimeoutExpired:
            raise CandidateFailure(f"ptxas timed out after {timeout_s:g} s") from None
        except OSError as exc:
            raise CandidateFailure(f"ptxas could not run: {exc}") from None
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise CandidateFailure(f"ptxas exited {proc.returncode}: {msg[-1] if msg else 'no output'}")
        try:
            regs, st, ld, stack, smem = parse_ptxas_log(proc.stderr + proc.stdout, kernel_name)
        except ValueError as exc:
            raise CandidateFailure(f"ptxas output not understood: {exc}") from None
    return BuildStats(registers=regs, spill_stores=st, spill_loads=ld, stack_frame=stack, static_shared=smem,
                      dynamic_shared=dynamic_shared, num_warps=num_warps, compile_s=elapsed)
