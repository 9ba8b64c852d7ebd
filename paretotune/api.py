"""The public Python API: run a campaign from a file or a dict, with kernels given as objects, then read it.

Safe in a notebook cell or a script without an ``if __name__ == "__main__"`` guard: multiprocessing's
fork-server and spawn children re-run the main script unless ``__main__`` hides its path, so :func:`run` and
:meth:`Run.validate` hide it while they start workers (a notebook has none to hide); a kernel object reaches
the workers pickled by value (:mod:`paretotune.kernels.inline`), so a kernel defined in a cell works.
"""
from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from paretotune.errors import UserError


@dataclass(frozen=True)
class Run:
    """A run directory, read through the same code as the ``front``, ``validate`` and ``report`` commands."""

    path: Path

    @property
    def results(self) -> pd.DataFrame:
        """One row per evaluated candidate, as stored (``results.jsonl``)."""
        from paretotune.front import open_run as open_checked

        return open_checked(self.path).results()

    def front(self) -> pd.DataFrame:
        """Front 0 in the command's order: raw values and a ``gain:<column>`` per objective (> 1 better)."""
        from paretotune.front import build_front, front_table

        return front_table(build_front(self.path))

    def front_text(self) -> str:
        """The ``paretotune front`` table, as text."""
        from paretotune.front import build_front, render_text

        return render_text(build_front(self.path))

    def validate(self, candidates: list[int] | None = None, *, top: int = 6, rounds: int = 30, rep_ms: float = 50.0,
                 warmup_ms: float = 10.0, alpha: float = 0.01, min_effect: float = 0.5) -> pd.DataFrame:
        """Re-measure winners against the baseline on the GPU (``paretotune validate``); the verdict table."""
        from paretotune.validate.validation import require_gpu_to_validate, run_validation
        from paretotune.front import open_run as open_checked

        require_gpu_to_validate(open_checked(self.path), "Run.validate (it re-measures runtimes)")
        with main_not_reimported():
            return run_validation(self.path, candidates=candidates, top=top, rounds=rounds, rep_ms=rep_ms,
                                  warmup_ms=warmup_ms, alpha=alpha, min_effect=min_effect)

    def report(self, out: str | Path | None = None, *, png: bool = True) -> Path:
        """Write the self-contained HTML report (and PNGs); returns the page's path."""
        from paretotune.report import load_report_data, render_html, write_pngs

        data = load_report_data(self.path)
        folder = Path(out) if out is not None else self.path / "report"
        html = render_html(data)  # plotly, then matplotlib, before the folder is made (as the command)
        if png:
            from paretotune.report.png import require_matplotlib

            require_matplotlib()
        folder.mkdir(parents=True, exist_ok=True)
        page = folder / "report.html"
        page.write_text(html, encoding="utf-8")
        if png:
            write_pngs(data, folder)
        return page


def open_run(path: str | Path) -> Run:
    """A stored run directory, checked as the commands check it."""
    from paretotune.front import open_run as open_checked

    return Run(open_checked(path).path)


def run(campaign: str | Path | Mapping[str, Any], *, out: str | Path | None = None, kernel: Any = None,
        seed: int | None = None, quiet: bool = False) -> Run:
    """Run a campaign (a YAML file, or the same structure as a dict) and return its run directory.

    ``kernel`` (or ``campaign["kernel"]["source"]``) may be a spec object (``TritonKernel``,
    ``HelionKernel``) instead of an import string. It prints what ``paretotune run`` prints (the progress bar,
    the front); ``quiet=True`` prints nothing. ``out``: a new or empty folder (default ``runs/<name>-<time>``).
    Bad input raises :class:`~paretotune.errors.UserError`, its message the one line the CLI prints and its
    traceback from this call only (the frames below it are paretotune's checks, not the caller's problem).
    """
    names: dict[str, str] = {}  # paretotune's own names for the caller's things -> the caller's words
    try:
        return _run(campaign, out=out, kernel=kernel, seed=seed, quiet=quiet, names=names)
    except UserError as exc:
        exc.args = (in_user_words(str(exc), names),)
        raise exc.with_traceback(None) from None


def in_user_words(message: str, names: Mapping[str, str]) -> str:
    """``message`` with each internal name (a kernel object's registered name, the stand-in file of a campaign
    given as a dict) replaced by what the caller wrote, longest first (a name inside another is not split)."""
    for internal in sorted(names, key=len, reverse=True):
        message = message.replace(internal, names[internal])
    return message


def _run(campaign: str | Path | Mapping[str, Any], *, out: str | Path | None, kernel: Any, seed: int | None,
         quiet: bool, names: dict[str, str]) -> Run:
    from paretotune.campaign.acf_check import check_toolchain
    from paretotune.runner.session import start_and_execute
    from paretotune.runner.start import default_run_dir
    from paretotune.store.run_dir import META
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    if out is not None and (Path(out) / META).is_file():  # the CLI's own words would say --out
        raise UserError(f"out={str(out)!r}: already holds a run; pass another out= for a new one "
                        f"(paretotune.open_run({str(out)!r}) reads this one)")
    loaded = _load(campaign, kernel, names)
    if seed is not None:
        loaded = loaded.with_seed(seed)
    ptxas = find_ptxas()
    check_toolchain(loaded, ptxas)
    export_for_triton(ptxas)  # with the build environment's defaults (TRITON_DEFAULT_FP_FUSION)
    folder = Path(out) if out is not None else default_run_dir(loaded)
    with main_not_reimported(), (contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext()):
        start_and_execute(loaded, folder, ptxas, quiet=quiet)  # checks (GPU included) before the folder exists
    return Run(folder)


@dataclass
class Capture:
    """What ``with paretotune.capture(DIR) as cap:`` recorded; filled when the block ends."""

    path: Path
    kernels: list[Any] = field(default_factory=list)  # ranked rows (kernel, calls, time_ms, campaign, skipped, ...)
    summary: str = ""

    @property
    def campaigns(self) -> list[Path]:
        """The campaign files written, the most expensive kernel first (``paretotune.run`` each)."""
        return [self.path / row.campaign for row in self.kernels if row.campaign]


@contextlib.contextmanager
def capture(out: str | Path, *, values: bool | list[str] = False, shapes: int = 3, generations: int = 2,
            wall_clock_s: float | None = None, check: bool = True, timing: str = "sampled") -> Iterator[Capture]:
    """Record every Triton and Helion kernel call made inside the block, then write ``out``'s ranked summary
    and one campaign per kernel (as ``paretotune capture``; ``values``: save first-call tensors, for all
    kernels or the named ones; ``timing``: "sampled" (a sample of the calls read and timed, counts and
    times scaled) or "all" (every call)). Kernels defined in a notebook
    cell have no file and are listed, not tuned."""
    import os

    from paretotune.capturing import hooks
    from paretotune.capturing.recorder import Recorder
    from paretotune.campaign.capture_check import check_in_child
    from paretotune.capturing.folder import campaign_options, finish, prepare_out

    options = campaign_options(shapes, generations, wall_clock_s)
    folder = Path(out)
    try:  # before the folder is made: a bad argument leaves nothing behind
        recorder = Recorder(values=values, values_dir=folder, timing=timing)
    except ValueError as exc:
        raise UserError(f"capture: {exc}") from None
    prepare_out(folder)
    result = Capture(folder)
    hooks.install(recorder)
    status = 0
    try:
        yield result
    except BaseException:
        status = 1
        raise
    finally:
        hooks.uninstall()
        recorder.save(folder, {"argv": list(sys.argv), "cwd": os.getcwd(), "mode": "python"}, status)
        result.kernels, result.summary = finish(folder, options, check=check_in_child if check else None)


@contextlib.contextmanager
def main_not_reimported() -> Iterator[None]:
    """Hide ``__main__``'s file and spec while workers start: multiprocessing's spawn and fork-server children
    otherwise re-run the calling script, which without a ``__main__`` guard starts the campaign again in
    every worker ("worker process crashed", then a run-lock error). Workers need nothing from ``__main__``."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    for key in saved:
        if key == "__spec__":
            main.__spec__ = None  # type: ignore[union-attr]
        else:
            delattr(main, key)
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(main, key, value)


def _load(campaign: str | Path | Mapping[str, Any], kernel: Any, names: dict[str, str] | None = None) -> Any:
    """The campaign, kernel objects registered for the workers; ``names`` gets each internal name an error
    could show (:func:`in_user_words`)."""
    from paretotune.campaign.load import campaign_from_text, load_campaign

    if isinstance(campaign, str | Path):
        if kernel is None:
            return load_campaign(campaign)
        path = Path(campaign)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror})") from None
        return campaign_from_text(_to_yaml(_with_kernel(data, kernel, str(path), names)), path)
    if not isinstance(campaign, Mapping):
        raise UserError(f"campaign: expected a file path or a dict, got {type(campaign).__name__}")
    data = _with_kernel(dict(campaign), kernel, "campaign", names)
    stand_in = Path.cwd() / f"{data.get('name', 'campaign')}.campaign"  # relative paths are the working folder's
    if names is not None:
        names[str(stand_in)] = names[str(stand_in.resolve())] = "campaign"  # a dict has no file to name
    return campaign_from_text(_to_yaml(data), stand_in)


def _with_kernel(data: Any, kernel: Any, where: str, names: dict[str, str] | None = None) -> dict[str, Any]:
    """The campaign structure with any kernel object replaced by the source string that finds it in workers
    (``names``: that string and the object's registered name -> the object's own name, file and line)."""
    from paretotune.kernels.inline import register

    if not isinstance(data, dict):
        raise UserError(f"{where}: a campaign must be a mapping (got {type(data).__name__})")
    section = data.get("kernel")
    section = dict(section) if isinstance(section, Mapping) else ({"source": section} if section is not None else {})
    if kernel is not None:
        section["source"] = kernel
    source = section.get("source")
    if source is not None and not isinstance(source, str):
        name, origin = _origin(source)
        section["source"] = register(source, name)
        if names is not None:
            key = section["source"].rpartition(":")[2]
            names[section["source"]] = f"{name} ({origin})" if origin else name
            names[f"'{key}'"] = f"'{name}' ({origin})" if origin else f"'{name}'"
            names[key] = name
    return {**data, "kernel": section}


def _origin(obj: Any) -> tuple[str, str | None]:
    """(name, ``file:line`` or None) of the function under a kernel object (a spec's kernel, Triton's and
    Helion's wrappers peeled off)."""
    fn, seen = obj, 0
    while not hasattr(fn, "__code__") and hasattr(fn, "fn") and seen < 8:
        fn, seen = fn.fn, seen + 1
    name = getattr(fn, "__name__", None) or type(obj).__name__
    code = getattr(fn, "__code__", None)
    return str(name), (f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None)


def _to_yaml(data: Mapping[str, Any]) -> str:
    try:
        return yaml.safe_dump(dict(data), sort_keys=False)
    except yaml.YAMLError as exc:
        raise UserError(f"campaign: only plain values (numbers, strings, lists, dicts) can be given ({exc})") from None
