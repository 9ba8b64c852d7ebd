"""Read a campaign file, validate every field, resolve names; errors become one-line UserErrors."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from paretotune.campaign.schema import CampaignSpec
from paretotune.errors import UserError
from paretotune.kernels.base import KernelAdapter, validate_config
from paretotune.objectives.base import Objective
from paretotune.records import Shape
from paretotune.toolchain.arch import TARGETS, TargetArch


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


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_text(text: str, where: str) -> CampaignSpec:
    """YAML text → CampaignSpec (``yaml.safe_load`` only); the message names the file and the field."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UserError(f"{where}{line}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: a campaign must be a YAML mapping (got {type(data).__name__})")
    try:
        return CampaignSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = _loc(err["loc"]) or "<top>"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        raise UserError(f"{where}: {field}: {msg}") from None


def import_object(source: str, base_dir: Path, where: str) -> Any:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` (relative paths from the campaign's folder)."""
    target, _, attr = source.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise UserError(f"{where}: kernel file not found: {path}")
        name = f"paretotune_user_{path.stem}_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise UserError(f"{where}: cannot import module '{target}' ({exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UserError(f"{where}: module '{target}' has no attribute '{attr}'") from None


def make_adapter(campaign: Campaign) -> KernelAdapter:
    """Instantiate the adapter for the kernel spec object the campaign names (Triton or Helion)."""
    from paretotune.kernels.registry import adapter_for

    where = f"{campaign.path}: kernel.source"
    obj = import_object(campaign.spec.kernel.source, campaign.path.parent, where)
    adapter = adapter_for(obj, campaign.spec.kernel.source.rpartition(":")[2], where)
    override = campaign.spec.kernel
    if override.space or override.default:
        from paretotune.kernels.overrides import OverriddenAdapter

        adapter = OverriddenAdapter(adapter, space=override.space, default=override.default)
    validate_config(adapter.space(), adapter.default_config(), f"{campaign.path}: kernel.default")
    return adapter


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
            raise UserError(f"{where}: {exc}") from None
    names = [o.name if not o.required_ncu_metrics else f"{o.name}:{o.required_ncu_metrics}" for o in out]
    if len(set(names)) != len(names):
        raise UserError(f"{campaign.path}: objectives: listed twice")
    return out


def load_campaign(path: Path | str) -> Campaign:
    """Read and validate a campaign file (structure only; kernels and objectives resolve on use)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"{path}: no such campaign file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    return campaign_from_text(text, path)


def campaign_from_text(text: str, path: Path) -> Campaign:
    spec = parse_text(text, str(path))
    if spec.target not in TARGETS:
        raise UserError(f"{path}: target: unknown target '{spec.target}' (known: {', '.join(TARGETS)})")
    shapes = tuple(Shape(label=s.label(), params=s.params()) for s in spec.shapes)
    return Campaign(spec=spec, path=path.resolve(), text=text, shapes=shapes, target=TARGETS[spec.target])
