"""What every file ``paretotune ship`` writes shares: reading a validated run, the header, the self-check import,
and writing into a temporary folder that is renamed into place only once everything checked out."""
from __future__ import annotations

import datetime
import hashlib
import importlib.util
import json
import math
import shutil
import tempfile
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from paretotune.campaign.schema import KernelSpec
from paretotune.errors import UserError
from paretotune.records import Shape
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.arch import TargetArch

VALIDATION = "validation.csv"
RECHECK = "recheck.json"
SHIP_JSON = "ship.json"


@dataclass
class Shipped:
    """What ``ship`` wrote: the folder, the module in it, the decision per bucket, the ACFs copied, ship.json."""

    out: Path
    module: Path
    choices: list[Any]  # BucketChoice per bucket the campaign's shapes fall in
    acfs: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(c.winner is not None for c in self.choices)


@dataclass(frozen=True)
class ShipRequest:
    """What ship reads of a run's campaign: the file's path and text (where ship needs the kernel adapter it is
    re-created from them: :func:`kernel_adapter`), its shapes and target, its ``kernel`` section, and where a
    captured kernel came from in its program (:func:`~paretotune.campaign.resolve.captured_context`)."""

    campaign_path: Path  # also what messages name; the kernel's files are relative to its folder
    campaign_text: str
    shapes: tuple[Shape, ...]
    target: TargetArch
    kernel: KernelSpec
    captured: tuple[str | None, list[str]]


def ship_request(text: str, path: Path) -> ShipRequest:
    """The request for the campaign file ``text`` (at ``path``: paths in it are relative to its folder)."""
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import captured_context

    campaign = campaign_from_text(text, path)
    return ShipRequest(campaign_path=campaign.path, campaign_text=text, shapes=campaign.shapes,
                       target=campaign.target, kernel=campaign.spec.kernel, captured=captured_context(campaign))


def stored_request(run: RunDir) -> ShipRequest:
    """The request for the run's campaign, from its stored copy (paths relative to where the campaign file was)."""
    return ship_request(run.campaign_text(), Path(run.meta()["campaign_path"]))


def kernel_adapter(request: ShipRequest) -> Any:
    """The campaign's kernel adapter, re-created from the campaign file's path and text."""
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter

    return make_adapter(campaign_from_text(request.campaign_text, request.campaign_path))


def validated(run: RunDir) -> tuple[pd.DataFrame, dict[tuple[int, str], dict[str, Any]]]:
    """The run's verdicts and re-checks ((candidate, shape) -> record), or a one-line refusal."""
    csv = run.path / VALIDATION
    if not csv.is_file():
        raise UserError(f"{run.path}: not validated (no {VALIDATION}): run `paretotune validate {run.path}` on a "
                        "GPU first; ship ships validated winners only")
    recheck = run.path / RECHECK
    if not recheck.is_file():
        raise UserError(f"{run.path}: its winners were never re-checked (no {RECHECK}): run `paretotune validate "
                        f"{run.path}` on a GPU (it re-checks every winner against its no-ACF twin on fresh inputs)")
    try:
        checks = json.loads(recheck.read_text())
        belongs = checks.get("validation_sha256") == hashlib.sha256(csv.read_bytes()).hexdigest()
        records = {(int(c["candidate_id"]), str(c["shape"])): c for c in checks["checks"]}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UserError(f"{recheck}: not a re-check record written by paretotune validate") from None
    if not belongs:
        raise UserError(f"{recheck}: belongs to another {VALIDATION} (validated again since?): run `paretotune "
                        f"validate {run.path}` again")
    verdicts = pd.read_csv(csv)
    need = {"shape", "candidate_id", "role", "significant", "speedup", "ci_low", "ci_high", "reliable"}
    if not need <= set(verdicts.columns):
        raise UserError(f"{csv}: not a verdict table of paretotune validate (missing {sorted(need - set(verdicts))})")
    verdicts["shape"] = verdicts["shape"].astype(str)
    return verdicts, records


_MISSING = object()


def completes(stored: Any, asked: Any) -> bool:
    """Whether the run's stored baseline value is the heuristic's ``asked`` value as Helion's normalize completes
    it: equal, or a list the heuristic gave shorter (``range_num_stages: []``) and normalize padded with defaults
    (``[0, 0, 0]``; the pretuned fp8 quant kernels' heuristics do this)."""
    if stored == asked:
        return True
    return isinstance(stored, list) and isinstance(asked, list) and len(asked) < len(stored) \
        and stored[:len(asked)] == asked


def check_baselines(run: RunDir, request: ShipRequest, now: dict[str, dict[str, Any]], *, helion: bool) -> None:
    """The run's baselines must be what the kernel still gives each shape (``now``: its answer per shape; for a
    Helion kernel the heuristic's, which must have been the run's baseline: the speedups are over it)."""
    meta = run.meta().get("kernel", {})
    sources, stored = meta.get("baseline_sources", {}), meta.get("baselines", {})
    if helion and request.kernel.default:
        raise UserError(f"{request.campaign_path}: kernel.default sets baseline values, so the run's speedups are "
                        "not over the heuristic's configs; ship needs a run whose baseline is the heuristic")
    for shape in request.shapes:
        if helion and not str(sources.get(shape.label, "")).startswith("AOT heuristic"):
            raise UserError(f"{run.path}: shape {shape.label}'s baseline was {sources.get(shape.label, 'unknown')!r},"
                            " not an AOT heuristic: the speedups are not over what Helion loads")
        before = stored.get(shape.label)
        # a Helion baseline is stored completed by Helion's normalize: the heuristic's answer must be part of it
        if before is not None and not all(completes(before.get(k, _MISSING), v) for k, v in now[shape.label].items()):
            raise UserError(f"{run.path}: the kernel now gives shape {shape.label} another baseline config than in "
                            "the run (its heuristic or default changed since?): run the campaign again")


def fmt_x(value: float) -> str:
    return f"{value:.3f}x" if isinstance(value, float) and math.isfinite(value) else "n/a"


def shape_line(label: str, row: dict[str, Any], check: dict[str, Any]) -> str:
    floor = row.get("noise_floor", math.nan)
    parts = [f"{label}: {fmt_x(row['speedup'])} [{fmt_x(row['ci_low'])}, {fmt_x(row['ci_high'])}]",
             f"noise floor {floor:.2%}" if math.isfinite(floor) else "noise floor n/a",
             f"config {fmt_x(row['config_speedup'])}", f"ACF {fmt_x(row['acf_speedup'])}"]
    if check:
        parts.append(f"re-check {check.get('passed', 0)}/{check.get('run', 0)} passed"
                     + (", bit-identical to its twin" if check.get("bit_identical") else ", not bit-identical"))
    return ", ".join(parts)


def header_lines(run: RunDir, request: ShipRequest, about: str, baseline: str, choices: list[Any],
                 new: dict[Hashable, tuple[dict[str, Any], dict[str, Any], str | None]], release: str) -> list[str]:
    """The shipped file's header: where it comes from, the rule, the ACFs' ptxas, then per bucket old config,
    new config and per shape the validated speedup with its CI, the config and ACF shares and the re-check."""
    from paretotune.version import __version__
    from paretotune.pareto.buckets import RULE

    meta = run.meta()
    changed = sum(c.winner is not None for c in choices)
    lines = [f"Shipped by paretotune {__version__} on {datetime.date.today()} from run {run.path} (campaign "
             f"{meta.get('campaign', '?')}, {len(request.shapes)} shape{'s' if len(request.shapes) != 1 else ''}, "
             f"target {request.target.name}).", about,
             f"Speedups: validated by paretotune validate against the baseline = {baseline}, no ACF (ratio of mean "
             "runtimes, bootstrap CI); config and ACF shares measured against the no-ACF twin.",
             f"Rule: {RULE}",
             f"ACFs: {', '.join(sorted({n[2] for n in new.values() if n[2]})) or 'none'} in acf/ beside this file; "
             f"made for ptxas {release} (ptxas {meta.get('versions', {}).get('ptxas', '?')} in the run) and "
             f"{request.target.name} only. Triton must run that ptxas: set TRITON_PTXAS_PATH (and "
             "TRITON_PTXAS_BLACKWELL_PATH) to it before importing triton. Without it, with an ACF missing or in a "
             "folder whose path has a space, nothing changes (a warning says why).",
             f"Buckets the campaign's shapes fall in: {len(choices)}, changed: {changed}; any other bucket is "
             "unchanged.", ""]
    for choice in choices:
        head = f"bucket {choice.bucket!r} (shapes: {', '.join(choice.shapes)}): "
        if choice.winner is None:
            lines.append(head + f"unchanged: {choice.reason}")
            continue
        old, cfg, acf = new[choice.bucket]
        lines += [head + f"CHANGED to candidate {choice.winner}" + (f", ACF acf/{acf}" if acf else ", no ACF"),
                  f"  old config: {old!r}", f"  new config: {cfg!r}" + (f" + ACF acf/{acf}" if acf else "")]
        if choice.acf_left_out:
            lines.append(f"  the candidate's ACF is left out: {choice.acf_left_out}; what ships is the config alone, "
                         "its speedup each shape's config figure below")
        lines += ["  " + shape_line(s, choice.per_shape[s], choice.recheck.get(s, {})) for s in choice.shapes]
    return lines


def plain(value: Any) -> Any:
    """JSON-ready: non-finite floats become None (ship.json is read by other tools)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def import_module(path: Path) -> Any:
    """Import a written file by path, as Helion does (``spec_from_file_location``), under a private name."""
    name = f"paretotune_shipped_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ptxas_release(run: RunDir) -> str:
    """The ptxas release (``13.3``) the run's ACFs were built with, from ``run.json``."""
    version = str(run.meta().get("versions", {}).get("ptxas", ""))
    parts = version.split(".")
    if len(parts) < 2:
        raise UserError(f"{run.path}/run.json: no ptxas version recorded, so the ACFs' ptxas is unknown")
    return ".".join(parts[:2])


def use_ptxas(release: str) -> None:
    """This process's Triton ptxas (and the shipped module's self-check) must be the ACFs' release."""
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    ptxas = find_ptxas()
    if ".".join(ptxas.version.split(".")[:2]) != release:
        raise UserError(f"the ptxas found here ({ptxas.path}, {ptxas.version}) is not {release}, the release the "
                        "run's ACFs were made for")
    export_for_triton(ptxas)


def publish(out: Path, acfs: list[str], run: RunDir, fill: Callable[[Path], Any]) -> Any:
    """Copy ``acfs`` (names ``<sha>.acf``) into a temporary folder beside ``out``, let ``fill(folder)`` write and
    check the rest, then rename the folder to ``out``; on any failure nothing is left."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if acfs:
            (tmp / "acf").mkdir()
        for acf in acfs:
            shutil.copyfile(run.acf_path(acf.removesuffix(".acf")), tmp / "acf" / acf)
        result = fill(tmp)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def exec_index(folder: Path, request: ShipRequest, adapter: Callable[[], Any], choices: list[Any],
               new: dict[Hashable, Any]) -> int:
    """``folder/acfs.json`` for ``paretotune exec --acfs folder``: per changed bucket with an ACF (``new``: bucket
    -> (old config, new config, ACF file name)), the PTX of its new config on each of the bucket's campaign
    shapes (built here by the run's ptxas release, which :func:`use_ptxas` made Triton's; for a Helion kernel
    Helion's codegen first: the build a program makes of that config) keyed to that ACF, with the validation's
    numbers as evidence. ``adapter`` makes the kernel adapter, called only if there is an entry to build.
    Returns the number of entries (shapes of one bucket often share one PTX)."""
    from triton.backends.nvidia.compiler import sm_arch_from_capability

    from paretotune.ship.shipped_acfs import add_entry
    from paretotune.toolchain.ptxas import find_ptxas

    changed = [c for c in choices if c.winner is not None and new.get(c.bucket) and new[c.bucket][2]]
    if not changed:
        return 0
    built, version = adapter(), find_ptxas().version
    arch = sm_arch_from_capability(request.target.capability)
    shapes = {s.label: s for s in request.shapes}
    seen = set()
    for choice in changed:
        _, config, acf_name = new[choice.bucket]
        acf = (folder / "acf" / acf_name).read_bytes()
        for label in choice.shapes:
            ptx = built.compile_ptx(config, shapes[label], request.target).ptx
            evidence = {"run_candidate": choice.winner, "shape": label, "validation": choice.per_shape.get(label),
                        "recheck": choice.recheck.get(label)}
            seen.add(add_entry(folder, ptx=ptx, arch=arch, ptxas_version=version, acf=acf,
                               evidence=json.loads(json.dumps(evidence, default=str)))["ptx_sha256"])
    return len(seen)
