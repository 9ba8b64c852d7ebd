"""The one reader of a run directory: every command (front, report, export, validate, resume), the service and
the API open a run here, so the same damage gets the same one-line answer (exit code 2) everywhere.

:meth:`paretotune.store.run_dir.RunDir.open` checks the files (run.json, the results lines, the checkpoint
against the records, a torn last line); this adds the campaign copy's fields, through the schema a resume
reads it with, so a broken ``campaign.yaml`` is refused by ``front`` as by ``resume``, and the integrity
rule of :mod:`paretotune.front.integrity` (the copy against its hash, records against their measurements
and each other, ACF files against their names).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from paretotune.campaign.load import parse_text
from paretotune.front.integrity import Declared, check_run
from paretotune.store import ObjectiveColumn, RunDir
from paretotune.store.run_dir import CAMPAIGN


def open_run(path: Path | str, *, repairing: bool = False) -> RunDir:
    """The checked run directory (read-only): its files, its campaign copy's fields, then the integrity rule
    (:mod:`paretotune.front.integrity`). ``repairing``: the caller is ``resume``, which reads past a torn
    last line and cuts it off once its own checks passed."""
    run = RunDir.open(path, repairing=repairing)
    text = run.campaign_text()
    check_run(run, _declared(text, str(run.path / CAMPAIGN)), text)
    return run


def _declared(text: str, where: str) -> Declared:
    """The fields of the campaign copy that the integrity rule holds the records to (the schema checks them)."""
    spec = parse_text(text, where)
    return Declared(shapes=tuple(s.label() for s in spec.shapes),
                    objectives=tuple((o.name, o.params()) for o in spec.objectives), target=spec.target)


def load_run(path: Path) -> tuple[RunDir, list[ObjectiveColumn], pd.DataFrame]:
    """The run, its objective columns and its results table; bad directories are one-line UserErrors."""
    run = open_run(path)
    return run, run.objective_columns(), run.results()
