"""Read a campaign file, validate every field, resolve names; errors become one-line UserErrors.

Validation runs in three steps, each before anything expensive:

1. :func:`load_campaign`: the YAML (``yaml.safe_load``; duplicate keys are errors) through the pydantic
   schema, then the checks that need the campaign's folder (ACF files) or several fields at once (the
   engine's minimum pool size for the number of objective columns).
2. :func:`check_toolchain`: the ptxas found against the ACFs the campaign would apply.
3. :func:`make_adapter` / :func:`make_objectives`: the kernel import, its knobs and shapes, and the objective
   parameters. ``start_run`` calls both before it creates the run directory, so a typo never costs a compile.

Every message starts with the file and the field path: ``x.yaml: objectives[2].name: unknown objective ...``.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import stat
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from paretotune.campaign.safe_yaml import load_bounded
from paretotune.campaign.schema import CampaignSpec
from paretotune.errors import ToolchainError, UserError
from paretotune.kernels.base import KernelAdapter, UnknownShapeKey, validate_config
from paretotune.objectives.base import Objective
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS, TargetArch

SCALAR = (int, float, str, bool)


@dataclass(frozen=True)
class Campaign:
    """A validated campaign with its names resolved: what the loop runs."""

    spec: CampaignSpec
    path: Path
    text: str
    shapes: tuple[Shape, ...]
    target: TargetArch

    @property
    def multi_shape(self) -> bool:
        return len(self.shapes) > 1

    @property
    def n_columns(self) -> int:
        """Objective columns (one per objective per shape): the engine's number of objectives."""
        return len(self.spec.objectives) * len(self.shapes)

    def with_seed(self, seed: int) -> Campaign:
        return Campaign(spec=self.spec.model_copy(update={"seed": seed}), path=self.path, text=self.text,
                        shapes=self.shapes, target=self.target)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_campaign_text(text: str, source: str) -> CampaignSpec:
    """Campaign YAML text → CampaignSpec, within the YAML budgets of :mod:`paretotune.campaign.safe_yaml`
    (size, nesting, alias expansion; safe tags only). Every failure is a one-line UserError starting with
    ``source``. The service parses submitted bodies with this function: keep its name and signature."""
    data = load_bounded(text, source)
    if data is None:
        raise UserError(f"{source}: the campaign file is empty")
    if not isinstance(data, dict):
        raise UserError(f"{source}: a campaign must be a YAML mapping (got {type(data).__name__})")
    try:
        return CampaignSpec.model_validate(data)
    except ValidationError as exc:
        # a misspelt key also makes the right one "missing": report the misspelling first
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        err = errors[0]
        field = _loc(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field" + _did_you_mean(err["loc"])
        elif err["type"] == "missing":
            msg = "required field is missing"
        msg = " ".join(msg.split())  # one line
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise UserError(f"{source}: {f'{field}: ' if field else ''}{msg}{more}") from None


parse_text = parse_campaign_text  # the name readers of stored campaigns use


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """`` (did you mean 'x'?)`` for an unknown key close to a field of the model it was given in."""
    model: Any = CampaignSpec
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = getattr(model, "model_fields", {}).get(part)
        if info is None:
            return ""
        candidates = [info.annotation, *typing.get_args(info.annotation)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def import_object(source: str, base_dir: Path, where: str, *, trial: bool = False) -> Any:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` (relative paths from the campaign's folder).
    ``trial``: import it in a forked child first (:mod:`paretotune.campaign.trial_import`), so an exit or a
    hang at import time is a one-line error instead of the end of this process."""
    from paretotune.campaign.trial_import import trial_import

    target, _, attr = source.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise UserError(f"{where}: kernel file not found: {path}")
        if trial:
            trial_import(str(path), True, where)
        name = f"paretotune_user_{path.stem}_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in user code is a bad kernel file
            del sys.modules[name]
            raise UserError(f"{where}: cannot import {path} ({type(exc).__name__}: {exc})") from None
    else:
        if trial and target not in sys.modules:
            trial_import(target, False, where)
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise UserError(f"{where}: cannot import module '{target}' ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - the module exists but fails to import
            raise UserError(f"{where}: importing module '{target}' failed ({type(exc).__name__}: {exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        why = str(exc) if hasattr(module, "__getattr__") else ""  # a module that looks names up says why not
        detail = f" ({why})" if why else ""
        raise UserError(f"{where}: module '{target}' has no attribute '{attr}'{detail}") from None


def make_adapter(campaign: Campaign, *, trial_import: bool = False) -> KernelAdapter:
    """Instantiate the adapter for the kernel spec object the campaign names (Triton or Helion).
    ``trial_import``: import user code in a child first (the CLI's first look at a campaign does)."""
    from paretotune.kernels.registry import adapter_for

    where = f"{campaign.path}: kernel.source"
    override = campaign.spec.kernel
    obj = import_object(override.source, campaign.path.parent, where, trial=trial_import)
    if override.inputs is not None:
        from paretotune.kernels.helion import spec_from_kernel

        factory = import_object(override.inputs, campaign.path.parent, f"{campaign.path}: kernel.inputs")
        try:
            obj = spec_from_kernel(obj, factory, atol=override.atol, rtol=override.rtol)
        except TypeError as exc:
            raise UserError(f"{where}: {exc}") from None
    adapter = adapter_for(obj, override.source.rpartition(":")[2], where)
    _use_campaign(campaign, adapter)
    restrict = getattr(adapter, "restrict_to", None)
    if restrict is not None:  # e.g. an autotuned kernel's configs that its pruning drops on every shape
        try:
            restrict(campaign.shapes)
        except Exception as exc:  # noqa: BLE001 - the kernel's own prune function or input factory failed
            raise UserError(f"{where}: pruning the kernel's configs for the campaign's shapes failed "
                            f"({type(exc).__name__}: {exc})") from None
    if override.space:
        from paretotune.search.space import CONFIG_LIST_KNOB

        known = adapter.space()
        in_list = {k for c in known.get(CONFIG_LIST_KNOB, []) if isinstance(c, dict) for k in c}
        for key in override.space:
            if key not in known and key not in in_list:
                raise UserError(f"{campaign.path}: kernel.space.{key}: unknown kernel knob '{key}' "
                                f"(known: {', '.join(sorted(set(known) - {CONFIG_LIST_KNOB} | in_list))})")
        if CONFIG_LIST_KNOB in known:
            from paretotune.kernels.overrides import OverriddenAdapter

            left = OverriddenAdapter(adapter, space=override.space, default=None).space().get(CONFIG_LIST_KNOB)
            if left is not None and not left:
                raise UserError(f"{campaign.path}: kernel.space: no listed config of the kernel has these values")
    if override.space or override.default:
        from paretotune.kernels.overrides import OverriddenAdapter

        adapter = OverriddenAdapter(adapter, space=override.space, default=override.default)
    try:
        adapter.check_space(adapter.space())
    except ValueError as exc:
        raise UserError(f"{campaign.path}: kernel.space.{exc}") from None
    _check_shapes(campaign, adapter)
    from paretotune.kernels.helion import HelionAdapter

    inner = getattr(adapter, "inner", adapter)
    derived = isinstance(inner, HelionAdapter) and inner.spec.space is None
    if not derived or override.default or override.space:
        # a Helion ConfigSpec space holds every shape's baseline by construction: other spaces are checked
        for shape in campaign.shapes:
            validate_config(adapter.space(), adapter.default_config(shape), f"{campaign.path}: kernel.default")
    return adapter


def _use_campaign(campaign: Campaign, adapter: Any) -> None:
    """Give a Helion adapter the campaign's shapes, target, kind (GPU or static) and heuristic file."""
    from dataclasses import replace

    from paretotune.kernels.helion import HelionAdapter

    if not isinstance(adapter, HelionAdapter):
        return
    heuristic = campaign.spec.kernel.heuristic
    if heuristic is not None:
        path = (campaign.path.parent / heuristic).resolve()
        if not path.is_file():
            raise UserError(f"{campaign.path}: kernel.heuristic: no such file: {path}")
        adapter.spec = replace(adapter.spec, heuristic=str(path))
    gpu = any(o.stage != "static" for o in make_objectives(campaign))
    adapter.use_campaign(campaign.shapes, campaign.target, gpu)


def _check_shapes(campaign: Campaign, adapter: KernelAdapter) -> None:
    """Each shape through the adapter's factories on the meta device (no memory, no GPU): a missing size or a
    key no factory reads fails here, not per candidate."""
    for i, shape in enumerate(campaign.shapes):
        try:
            adapter.check_shape(shape, adapter.default_config(shape))
        except UnknownShapeKey as exc:
            raise UserError(f"{campaign.path}: shapes[{i}].{exc.key}: kernel '{adapter.name}' has no shape key "
                            f"'{exc.key}' (it reads: {', '.join(exc.read) or 'nothing'})") from None
        except Exception as exc:  # noqa: BLE001 - whatever the kernel's factories raise means a bad shape
            what = f"missing parameter {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise UserError(f"{campaign.path}: shapes[{i}]: kernel '{adapter.name}' cannot make inputs for "
                            f"{shape.params} ({' '.join(what.split())})") from None


def make_objectives(campaign: Campaign) -> list[Objective]:
    from paretotune.objectives.registry import OBJECTIVES

    out = []
    for i, spec in enumerate(campaign.spec.objectives):
        where = f"{campaign.path}: objectives[{i}]"
        cls = OBJECTIVES.get(spec.name)
        if cls is None:
            raise UserError(f"{where}.name: unknown objective '{spec.name}' (known: {', '.join(sorted(OBJECTIVES))})")
        try:
            out.append(cls(**spec.params()))
        except (TypeError, ValueError) as exc:
            named = [p for p in spec.params() if f"'{p}'" in str(exc) or f"{p} " in str(exc)]
            raise UserError(f"{where}{f'.{named[0]}' if named else ''}: {exc}") from None
    seen: dict[str, int] = {}
    for i, obj in enumerate(out):
        if obj.label in seen:
            raise UserError(f"{campaign.path}: objectives[{i}]: '{obj.label}' is listed twice "
                            f"(also objectives[{seen[obj.label]}])")
        seen[obj.label] = i
    return out


def load_campaign(path: Path | str) -> Campaign:
    """Read and validate a campaign file (structure; kernels and objectives resolve in make_adapter/-objectives)."""
    path = Path(path)
    return campaign_from_text(read_campaign_file(path), path)


def read_campaign_file(path: Path) -> str:
    """The text of a campaign file; a FIFO, device, directory, oversized or non-UTF-8 file is refused before
    (or instead of) reading it, so ``/dev/zero`` or a pipe cannot hang or exhaust memory."""
    from paretotune.campaign.safe_yaml import MAX_BYTES

    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: no such campaign file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: is a directory, not a campaign file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: not a regular file (a pipe or device cannot be a campaign file)")
    if st.st_size > MAX_BYTES:
        raise UserError(f"{path}: too large for a campaign file ({st.st_size} bytes; the limit is {MAX_BYTES})")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise UserError(f"{path}: too large for a campaign file (over {MAX_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def campaign_from_text(text: str, path: Path) -> Campaign:
    spec = parse_text(text, str(path))
    for i, shape in enumerate(spec.shapes):
        if not shape.params():
            raise UserError(f"{path}: shapes[{i}]: no sizes given (e.g. {{name: wide, M: 4096, N: 16384}})")
        for key, value in shape.params().items():
            if not isinstance(value, SCALAR):
                raise UserError(f"{path}: shapes[{i}].{key}: must be a number or a string (got {type(value).__name__})")
    if spec.acf.files is not None:
        for i, name in enumerate(spec.acf.files):
            if not (path.parent / name).is_file():
                raise UserError(f"{path}: acf.files[{i}]: no such ACF file: {(path.parent / name).resolve()}")
    if spec.acf.pack is not None and not (path.parent / spec.acf.pack).is_file():
        raise UserError(f"{path}: acf.pack: no such file: {(path.parent / spec.acf.pack).resolve()}")
    shapes = tuple(Shape(label=s.label(), params=s.params()) for s in spec.shapes)
    campaign = Campaign(spec=spec, path=path.resolve(), text=text, shapes=shapes, target=TARGETS[spec.target])
    if spec.search.engine == "compileiq":
        from paretotune.search.compileiq_engine import min_pool_size

        need = min_pool_size(campaign.n_columns)
        if spec.search.pool_size < need:
            raise UserError(f"{path}: search.pool_size: {spec.search.pool_size} is too small for "
                            f"{campaign.n_columns} objective column(s) with the compileiq engine (need at least {need})")
    return campaign


def check_acf_files(campaign: Campaign) -> None:
    """Read and check every ACF a finite campaign names (a regular file, not empty, not too large, not text; a
    pack that is a real zip holding ACFs), so a bad one fails before the run directory exists, not candidate
    by candidate. Not part of :func:`campaign_from_text`: the service must not read paths a client names."""
    if campaign.spec.acf.kind != "finite":
        return
    from paretotune.toolchain.acf_sources import acf_options

    acf_options(campaign.spec.acf, campaign.path.parent, f"{campaign.path}: acf")


def check_toolchain(campaign: Campaign, ptxas: Any) -> None:
    """Refuse ACFs the ptxas found would reject: another release's search space, or files whose version record
    (``<name>.json`` next to ``<name>.acf``, as the run directory keeps them) names another ptxas or target."""
    acf = campaign.spec.acf
    have = ptxas.major_minor
    if acf.kind == "generated" and acf.ptxas_version != have:
        raise ToolchainError(f"{campaign.path}: acf.search_space: {acf.search_space} ACFs need ptxas "
                             f"{acf.ptxas_version}, but {ptxas.path} is {ptxas.version}")
    for i, name in enumerate(acf.files or []):
        check_acf_file(campaign.path.parent / name, have, campaign.target.name, f"{campaign.path}: acf.files[{i}]")


def check_acf_file(path: Path, ptxas_version: str, target: str, where: str) -> None:
    """An ACF with a version record is usable only with the ptxas major.minor and target it names.

    ACFs are encrypted, so the record is the only way to tell; an ACF without one is accepted (ptxas rejects
    a wrong one at build time, and that candidate is recorded as failed).
    """
    from paretotune.toolchain.acf import AcfStore

    if not path.with_suffix(".json").is_file():
        return
    try:
        AcfStore(path.parent).check_compatible(path.stem, ptxas_version, target)
    except ToolchainError as exc:
        raise ToolchainError(f"{where}: {exc}") from None
    except (OSError, ValueError, TypeError) as exc:
        raise ToolchainError(f"{where}: {path.with_suffix('.json')}: unreadable version record ({exc})") from None
