"""Read a campaign file and validate every field; errors become one-line UserErrors naming file and field.

Validation runs in three steps, each before anything expensive:

1. :func:`load_campaign`: the YAML (``yaml.safe_load``; duplicate keys are errors) through the pydantic
   schema, then the checks that need the campaign's folder (ACF files) or several fields at once (the
   engine's minimum pool size for the number of objective columns).
2. :func:`~paretotune.campaign.acf_check.check_toolchain`: the ptxas found against the ACFs the campaign
   would apply.
3. :func:`~paretotune.campaign.resolve.make_adapter` / :func:`~paretotune.campaign.resolve.make_objectives`:
   the kernel import, its knobs and shapes, and the objective parameters.

Every message starts with the file and the field path: ``x.yaml: objectives[2].name: unknown objective ...``.
"""
from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from paretotune.campaign.safe_yaml import load_bounded
from paretotune.campaign.schema import CampaignSpec
from paretotune.campaign.safe_yaml import MAX_BYTES
from paretotune.errors import UserError
from paretotune.records import Shape
from paretotune.search.catalog import pool_size_problem
from paretotune.text_file import not_a_file, read_text
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


def load_campaign(path: Path | str) -> Campaign:
    """Read and validate a campaign file (structure; kernels and objectives resolve in make_adapter/-objectives)."""
    path = Path(path)
    return campaign_from_text(read_text(path, "no such campaign file", MAX_BYTES, what="a campaign file"), path)


def campaign_from_text(text: str, path: Path) -> Campaign:
    """A campaign from its text (``path``: where it is, for messages and relative paths): the schema, then the
    checks of several fields at once and of the files it names (existence only: see
    :func:`~paretotune.campaign.acf_check.check_acf_files`)."""
    spec = parse_text(text, str(path))
    for i, shape in enumerate(spec.shapes):
        if not shape.params():
            raise UserError(f"{path}: shapes[{i}]: no sizes given (e.g. {{name: wide, M: 4096, N: 16384}})")
        for key, value in shape.params().items():
            if not isinstance(value, SCALAR):
                raise UserError(f"{path}: shapes[{i}].{key}: must be a number or a string (got {type(value).__name__})")
    for field, name, missing in [*((f"acf.files[{i}]", n, "no such ACF file") for i, n in
                                   enumerate(spec.acf.files or ())),
                                 *((("acf.pack", spec.acf.pack, "no such file"),) if spec.acf.pack else ())]:
        where = (path.parent / name).resolve()
        problem = not_a_file(path.parent / name)
        if problem == "missing":
            raise UserError(f"{path}: {field}: {missing}: {where}")
        if problem:
            raise UserError(f"{path}: {field}: {where}: not a regular file ({problem})")
    shapes = tuple(Shape(label=s.label(), params=s.params()) for s in spec.shapes)
    campaign = Campaign(spec=spec, path=path.resolve(), text=text, shapes=shapes, target=TARGETS[spec.target])
    problem = pool_size_problem(spec.search.engine, spec.search.pool_size, campaign.n_columns)
    if problem:
        raise UserError(f"{path}: search.pool_size: {problem}")
    return campaign
