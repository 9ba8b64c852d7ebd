"""Every duration field of the campaign schema is finite and bounded (issue 45, defect 3).

``evaluation.compile_timeout_s: .inf`` passed validation; the run then failed at the baseline with an
OverflowError from ``selectors`` and left an empty ``runs/`` folder. The fields are found by introspection (a
name ending in ``_s`` or ``_ms``, anywhere in the schema's model tree), so a duration field added later is
tested here without being listed; each must refuse infinity, NaN, 1e308, a negative number and its upper bound
exceeded, through ``paretotune run``: one line naming the field, exit code 2, and no ``runs/`` folder.
"""
from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from annotated_types import Le
from pydantic import BaseModel

from paretotune.campaign.schema import CampaignSpec
from paretotune.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART: dict[str, Any] = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            yield candidate


def duration_fields(model: type[BaseModel] = CampaignSpec, prefix: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], Any]]:
    """(path, FieldInfo) of every field named ``*_s`` or ``*_ms`` in the campaign's model tree."""
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        if name.endswith(("_s", "_ms")):
            yield path, info
        for sub in _models(info.annotation):
            yield from duration_fields(sub, path)


FIELDS = {".".join(path): info for path, info in duration_fields()}


def _upper(info: Any) -> float:
    bounds = [m.le for m in info.metadata if isinstance(m, Le)]
    assert bounds, "a duration field without an upper bound"
    return float(bounds[0])


def test_the_known_duration_fields_are_found() -> None:
    """The introspection sees the fields the audit named (a broken walk would make the cases below vacuous)."""
    assert {"evaluation.compile_timeout_s", "evaluation.measure_timeout_s", "search.wall_clock_s",
            "evaluation.rep_ms", "evaluation.warmup_ms", "evaluation.baseline_interval_s"} <= set(FIELDS)


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_duration_field_has_a_sane_upper_bound(field: str) -> None:
    most = _upper(FIELDS[field])
    week_s = 7 * 24 * 3600
    assert 0 < (most / 1000 if field.endswith("_ms") else most) <= week_s


def _campaign_with(field: str, value: Any) -> dict[str, Any]:
    data = yaml.safe_load(yaml.safe_dump(QUICKSTART))
    *parents, leaf = field.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return data


def _write(path: Path, field: str, value_text: str) -> None:
    """The campaign as YAML, the field's value written as the literal ``value_text`` (``.inf``, ``1e308``)."""
    text = yaml.safe_dump(_campaign_with(field, 12345.678), sort_keys=False)
    assert text.count("12345.678") == 1
    path.write_text(text.replace("12345.678", value_text))


BAD = {"inf": (".inf", "Input should be a finite number"),
       "minus_inf": ("-.inf", "Input should be a finite number"),
       "nan": (".nan", "Input should be a finite number"),
       "1e308": ("1.0e+308", "Input should be less than or equal to"),
       "negative": ("-1", "Input should be greater than"),
       "just_above_the_bound": (None, "Input should be less than or equal to")}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_a_duration_out_of_bounds_is_refused_and_nothing_is_made(field: str, case: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    literal, expected = BAD[case]
    if literal is None:
        literal = repr(_upper(FIELDS[field]) * 1.001)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # without --out a run goes to ./runs/<name>-<time>
    path = tmp_path / "campaign.yaml"
    _write(path, field, literal)
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"paretotune: error: {path}: {field}: {expected}"), lines[0]
    assert list(work.iterdir()) == [], "a refused campaign left something behind"


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_the_upper_bound_itself_is_accepted(field: str) -> None:
    """The bound is a limit, not a typo trap: the largest allowed value passes the schema."""
    CampaignSpec.model_validate(_campaign_with(field, _upper(FIELDS[field])))
