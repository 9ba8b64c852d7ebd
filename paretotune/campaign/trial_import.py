"""Import a campaign's code (``kernel.source``, ``kernel.inputs``, ``kernel.heuristic``: every field that names
code) once in a forked child first, so that what user code does at import time cannot end or hang the campaign
process: ``sys.exit(3)``, ``os._exit(0)``, a segfault, an endless loop, an exception or a missing attribute
become one-line errors naming the field and the file. Only then does the caller import it for real (workers
import it normally, as before). One child imports every module in turn, within one deadline; what they print
is shown once, capped (:data:`OUTPUT_CAP_BYTES`), and only if they all passed.

A fork, not a spawn: the child starts with the parent's modules (torch and Triton are imported first, and Helion
where that is fork-safe), so the trial costs about what the user's own module costs to import, not another
interpreter start-up.
"""
from __future__ import annotations

import contextlib
import faulthandler
import importlib
import importlib.util
import os
import select
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paretotune.campaign.kernel_file import load_file
from paretotune.errors import UserError
from paretotune.processes import kill_group, kill_own_group_when_closed, lead_own_group

DEFAULT_TIMEOUT_S = 120.0  # importing Helion on a busy 2-core machine takes tens of seconds
TIMEOUT_ENV = "PARETOTUNE_IMPORT_TIMEOUT_S"
OUTPUT_CAP_BYTES = 4096  # of what the trial's imports print, shown (a kernel file may print megabytes)


@dataclass(frozen=True)
class Code:
    """One piece of code a campaign names, as the trial imports it."""

    where: str  # message prefix: the campaign file and the field, e.g. ``x.yaml: kernel.inputs``
    target: str  # a resolved file path or a module name
    is_file: bool
    written: str  # the file or module as the campaign writes it (named in messages)
    attr: str | None = None  # the attribute it must have (dotted: a qualified name); None: a file imported whole
    module: str | None = None  # a file's dotted name where it was captured (its package: kernel_file.load_file)

    @property
    def what(self) -> str:
        return self.target if self.is_file else f"module '{self.target}'"


def timeout_s() -> float:
    raw = os.environ.get(TIMEOUT_ENV)
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise UserError(f"${TIMEOUT_ENV}={raw!r}: not a number of seconds") from None


def mentions_helion(target: str, is_file: bool) -> bool:
    """Whether the code at ``target`` (a file path or a module name) mentions Helion; read, never imported."""
    try:
        if is_file:
            path: Path | None = Path(target)
        else:
            spec = importlib.util.find_spec(target)
            path = Path(spec.origin) if spec is not None and spec.origin else None
        return path is not None and "helion" in path.read_text(errors="replace")
    except (ImportError, OSError, ValueError):
        return False


def kernel_mentions_helion(campaign: Any) -> bool:
    """Whether a campaign's kernel comes from code that mentions Helion (read, never imported): such a
    campaign's processes import Helion (trusted, seconds) while its kernel is checked."""
    kernel = campaign.spec.kernel
    if kernel.inputs is not None:  # a bare Helion kernel with an input factory
        return True
    where = kernel.source.rpartition(":")[0]
    if where.endswith(".py"):
        return mentions_helion(str((campaign.path.parent / where).resolve()), True)
    return mentions_helion(where, False)  # False where unreadable: the checks that follow say what is wrong


def _preload(helion: bool) -> bool:
    """Import torch and Triton here before the fork, so that the child need not (absent or broken ones are the
    trial import's to report); ``helion``: Helion too, where its import leaves the fork able to use CUDA
    (:func:`~paretotune.compat.torch.availability_check_is_fork_safe`: a CPU build of torch, or torch's NVML check
    on). Returns whether Helion was imported. Elsewhere Helion comes after the fork, while the child imports
    (:func:`preload_helion`): Helion's import asks the CUDA driver (``benchmarks/check_fork_cuda.py``), and a
    child forked after that fails on any CUDA call at import time; imported in the child and then here, one after
    the other, the two imports would delay a Helion campaign's first record by both."""
    for name in ("torch", "triton"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - absent or broken: the trial import reports it for the kernel
            pass
    return helion and preload_helion_where_fork_safe()


def preload_helion_where_fork_safe() -> bool:
    """:func:`preload_helion` where its import leaves this process's later forks able to use CUDA
    (:func:`~paretotune.compat.torch.availability_check_is_fork_safe`: a CPU build of torch, or torch's NVML check
    on and NVML answering); whether it did. The trial import's parent and the workers' fork server ask it."""
    from paretotune.compat.torch import availability_check_is_fork_safe

    if not availability_check_is_fork_safe():
        return False
    preload_helion()
    return True


def preload_helion() -> None:
    """Import Helion (trusted, seconds) through paretotune's door to it, so that its NVIDIA-only answers come with
    it (:func:`paretotune.kernels.helion.import_helion`); a Helion that is absent, broken or refused is the
    kernel's import to report."""
    from paretotune.kernels.helion import import_helion

    with contextlib.suppress(Exception):
        import_helion()


def _import_in_child(code: Code) -> str:
    """Runs in the forked child: import ``code`` and look its attribute up; '' or why not (one line, the message
    after the field)."""
    try:
        if code.is_file:
            module = load_file(Path(code.target), code.module, private="paretotune_trial")
        else:
            module = importlib.import_module(code.target)
    except SystemExit as exc:
        return f"cannot import {code.what} (it called sys.exit({exc.code!r}) while being imported)"
    except BaseException as exc:  # noqa: BLE001 - anything user code raises
        return f"cannot import {code.what} ({type(exc).__name__}: {' '.join(str(exc).split())})"
    if code.attr is None:
        return ""
    try:
        found: Any = module
        for part in code.attr.split("."):
            found = getattr(found, part)
        return ""
    except AttributeError as exc:
        return missing_attribute(code.written, code.attr, module, exc)
    except BaseException as exc:  # noqa: BLE001 - a module __getattr__ that fails otherwise
        return f"module '{code.written}': looking up '{code.attr}' failed ({type(exc).__name__}: {exc})"


def missing_attribute(written: str, attr: str, module: Any, exc: AttributeError) -> str:
    """The message for a module without ``attr`` (a module that looks names up says why not)."""
    why = " ".join(str(exc).split()) if hasattr(module, "__getattr__") else ""
    return f"module '{written}' has no attribute '{attr}'" + (f" ({why})" if why else "")


def trial_import(target: str, is_file: bool, where: str) -> None:
    """:func:`trial_imports` of one file or module, no attribute looked up."""
    trial_imports([Code(where=where, target=target, is_file=is_file, written=target)])


def trial_imports(codes: Sequence[Code]) -> dict[str, float]:
    """Import ``codes`` in turn in one forked child within :func:`timeout_s` (all of them together); raise a
    one-line UserError naming the field if an import fails, exits, crashes, does not finish, or lacks its
    attribute. Then show what the imports printed (capped) on stderr. Returns the seconds of its phases:
    ``before_fork`` (torch, Triton, and Helion where that is fork-safe, imported here), then from the fork:
    ``helion_here`` (else Helion's import here meanwhile), ``child_answer`` (until the child answered) and
    ``child_end`` (from the answer until the child and its group were gone).

    The child leads its own process group, and the group (the child and whatever the imports started) is
    killed when the trial ends, however it ends; the child kills it too if this process dies. The answer is the
    child's one-line message, read as soon as it is whole: a process an import forked may hold the pipes open
    long after (waiting for them reported a trial that had finished as one that timed out)."""
    if not codes:
        return {}
    limit = timeout_s()
    helion = any(mentions_helion(c.target, c.is_file) for c in codes)
    started = time.monotonic()
    before_fork = _preload(helion)  # then the child finds Helion imported
    preloaded = time.monotonic() - started
    read_fd, write_fd = os.pipe()  # the child's progress and answer: B<i>, then K or E<i> <message>
    out_r, out_w = os.pipe()  # what the imports print
    watch_r, watch_w = os.pipe()  # end of file in the child when this process is gone
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never return into the caller's code
        code = 0
        try:
            lead_own_group()
            faulthandler.disable()  # a crash at import is reported by the parent, in one line
            for fd in (read_fd, out_r, watch_w):
                os.close(fd)
            kill_own_group_when_closed(watch_r)
            os.dup2(out_w, 1)  # user code's output goes to the parent, which caps it
            os.dup2(out_w, 2)
            _child(codes, write_fd)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):  # set on both sides: no window where the child is still in ours
        os.setpgid(pid, pid)
    for fd in (write_fd, out_w, watch_r):
        os.close(fd)
    forked = time.monotonic()
    deadline = forked + limit
    output = _Output()
    try:
        if helion and not before_fork:
            preload_helion()  # in this process, at the same time as the child's import
        helion_here = time.monotonic()
        data, status = _wait_for_child(pid, read_fd, out_r, output, deadline)
        answered = time.monotonic()
    finally:
        os.close(read_fd)
        kill_group(pid)  # the child and everything its imports started; the child is not reaped yet
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        output.drain(out_r)
        os.close(out_r)
        os.close(watch_w)
    lines = data.decode("utf-8", "replace").splitlines()
    answer = next((line for line in lines if line[:1] in ("K", "E")), None)
    if answer == "K":
        output.show()
        return {"before_fork": preloaded, "helion_here": helion_here - forked, "child_answer": answered - forked,
                "child_end": time.monotonic() - answered}
    begun = [int(line[1:]) for line in lines if line[:1] == "B" and line[1:].isdigit()]
    at = codes[begun[-1]] if begun and begun[-1] < len(codes) else codes[0]
    if answer is not None:
        index, _, message = answer[1:].partition(" ")
        failed = codes[int(index)] if index.isdigit() and int(index) < len(codes) else at
        raise UserError(f"{failed.where}: {message.strip()}")
    if status is None:
        raise UserError(f"{at.where}: importing {at.what} did not finish within {limit:g} s "
                        f"(an endless loop at import time? ${TIMEOUT_ENV} sets the limit)")
    how = (f"killed by signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status)
           else f"exit code {os.waitstatus_to_exitcode(status)}")
    raise UserError(f"{at.where}: importing {at.what} ended the process ({how}; os._exit or a crash at import time)")


def _child(codes: Sequence[Code], fd: int) -> None:
    """The child's work: each import in turn, its progress and its answer written to ``fd``."""
    for i, code in enumerate(codes):
        os.write(fd, f"B{i}\n".encode())
        message = _import_in_child(code)
        with contextlib.suppress(Exception):  # what it printed reaches the parent before the answer
            sys.stdout.flush()
            sys.stderr.flush()
        if message:
            os.write(fd, f"E{i} {message}".encode("utf-8", "replace")[:4000] + b"\n")
            return
    os.write(fd, b"K\n")


class _Output:
    """What the trial's imports printed: the first :data:`OUTPUT_CAP_BYTES` kept, the rest only counted."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_CAP_BYTES - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    def drain(self, fd: int) -> None:
        """What is there to read now (bounded: a process an import forked may go on printing)."""
        with contextlib.suppress(OSError):
            for _ in range(256):
                if not select.select([fd], [], [], 0)[0]:
                    return
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                self.add(chunk)

    def show(self) -> None:
        if not self.total:
            return
        text = self.kept.decode("utf-8", "replace")
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        if self.total > len(self.kept):
            sys.stderr.write(f"paretotune: the campaign's code printed {self.total} bytes while being imported; "
                             f"only the first {len(self.kept)} are shown\n")
        sys.stderr.flush()


@contextlib.contextmanager
def hidden_output() -> Iterator[None]:
    """File descriptors 1 and 2 to /dev/null for the block (C extensions print there too), then back: for
    imports of code whose output the trial import has shown already."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        saved = os.dup(1), os.dup(2)
    except OSError:  # a process started with either closed: there is nothing to hide it from
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _wait_for_child(pid: int, fd: int, out_fd: int, output: _Output, deadline: float
                    ) -> tuple[bytes, int | None]:
    """The child's messages (its answer K or E last, b'' if none) and its wait status if it ended by itself
    (None: it was still running at the deadline, or it answered and may still be ending); what the imports
    print meanwhile goes to ``output``."""
    data = b""
    watched = [fd, out_fd]
    while time.monotonic() < deadline:
        ready, _, _ = select.select(watched, [], [], min(0.05, max(0.0, deadline - time.monotonic())))
        if out_fd in ready:
            chunk = os.read(out_fd, 65536)
            if chunk:
                output.add(chunk)
            else:
                watched.remove(out_fd)
        if fd in ready:
            chunk = os.read(fd, 4096)
            data += chunk
            if _answered(data):
                return data, None
            if chunk:
                continue
        elif ready:
            continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            with contextlib.suppress(OSError):  # what it wrote just before it ended
                while select.select([fd], [], [], 0)[0] and (chunk := os.read(fd, 4096)):
                    data += chunk
            return data, status
        if fd in ready:  # end of file without an answer, the child still there (it closed the pipe): wait for it
            watched = [w for w in watched if w != fd]
            time.sleep(0.05)
    return data, None


def _answered(data: bytes) -> bool:
    return any(line[:1] in (b"K", b"E") for line in data.split(b"\n")[:-1])
