"""Export a run's results with their Pareto ranking, as CSV, Parquet or JSON, for notebooks and spreadsheets.

One row per evaluated candidate, in evaluation order: the stored columns plus ``front`` (0 = non-dominated;
empty for rows that could not be ranked), ``crowding``, ``excluded_reason`` and, after the objective columns,
``gain:<column>``: each value's gain over the baseline as every other view shows it (pareto/convention, > 1
better; empty where undefined or without a successful baseline). CSV and Parquet keep
``config`` and ``extra`` as JSON text and also split the config into one ``config.<knob>`` column per
knob (list values as JSON text), so a spreadsheet can filter by knob; JSON output is a list of objects with
them as nested objects and non-finite numbers as null. Parquet needs pyarrow (or fastparquet).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is loaded when the command runs: --help answers at once
    import pandas as pd

from paretotune.errors import UserError
from paretotune.extras import missing

FORMATS = ("csv", "parquet", "json")
FIRST = ["candidate_id", "generation", "is_baseline", "status", "front", "crowding"]
LAST = ["acf", "config", "error", "excluded_reason", "compile_s", "measure_s", "stages", "extra"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory written by 'paretotune run'")
    parser.add_argument("--format", choices=FORMATS, default="csv", help="output format (default: csv)")
    parser.add_argument("--out", help="output file, or - for standard output (csv and json only); "
                                      "default: RUN_DIR/export/results.FORMAT")


def main(args: argparse.Namespace) -> int:
    from paretotune.front import load_run

    _, columns, results = load_run(Path(args.run_dir))
    table = export_table(results, {c.column: c.direction for c in columns})
    if args.format != "json":
        table = with_config_columns(table)
    out = args.out or str(Path(args.run_dir) / "export" / f"results.{args.format}")
    if out == "-":
        if args.format == "parquet":
            raise UserError("--out -: Parquet is binary; give a file name")
        sys.stdout.write(_text(table, args.format))
        return 0
    path = Path(out)
    if args.format == "parquet":
        parquet_engine()  # before the folder is made: a missing extra leaves nothing behind
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if args.format == "parquet":
            write_parquet(table, path)
        else:
            path.write_text(_text(table, args.format), encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror})") from None
    print(f"{len(table)} rows -> {path}")
    return 0


def export_table(results: pd.DataFrame, directions: dict[str, Any]) -> pd.DataFrame:
    """The results table with the ranking joined on: front, crowding, excluded_reason; evaluation order."""
    import pandas as pd

    from paretotune.pareto import rank_fronts
    from paretotune.pareto.convention import gain
    from paretotune.pareto.table import baseline_row

    if results.empty:
        return pd.DataFrame(columns=FIRST + list(directions) + [f"gain:{c}" for c in directions] + LAST)
    ranking = rank_fronts(results, directions)
    base = baseline_row(results, directions)
    table = results.copy()
    table["front"] = pd.Series(ranking.ranked["front"], dtype="Int64").reindex(table.index)
    table["crowding"] = ranking.ranked["crowding"].reindex(table.index)
    table["excluded_reason"] = ranking.excluded["reason"].reindex(table.index).fillna("")
    for column in directions:
        if column not in table.columns:
            table[column] = math.nan
    gains = {f"gain:{column}": [math.nan if base is None else gain(float(v), float(base[column]), direction)
                                for v in table[column]] for column, direction in directions.items()}
    table = pd.concat([table, pd.DataFrame(gains, index=table.index)], axis=1)
    order = [c for c in FIRST + list(directions) + list(gains) if c in table.columns]
    order += [c for c in table.columns if c not in order and c not in LAST]
    order += [c for c in LAST if c in table.columns]
    table = table[order]
    if "candidate_id" in table.columns:
        table = table.sort_values("candidate_id", kind="stable")
    return table.reset_index(drop=True)


def with_config_columns(table: pd.DataFrame) -> pd.DataFrame:
    """``config.<knob>`` columns from the ``config`` JSON, placed before ``acf``; lists and dicts as JSON text,
    a knob whose values differ in type as text (Parquet columns hold one type)."""
    import pandas as pd

    if "config" not in table.columns or table.empty:
        return table
    configs = [json.loads(c) if isinstance(c, str) and c else {} for c in table["config"]]
    knobs = list(dict.fromkeys(k for c in configs for k in c))
    split = {}
    for knob in knobs:
        values = [c.get(knob) for c in configs]
        values = [json.dumps(v) if isinstance(v, list | dict) else v for v in values]
        if len({type(v) for v in values if v is not None}) > 1:
            values = [None if v is None else str(v) for v in values]
        split[f"config.{knob}"] = values
    at = list(table.columns).index("acf") if "acf" in table.columns else len(table.columns)
    left, right = table.iloc[:, :at], table.iloc[:, at:]
    return pd.concat([left, pd.DataFrame(split, index=table.index), right], axis=1)


def parquet_engine() -> None:
    """Raise the one-line error unless pandas has a Parquet engine (pyarrow, or fastparquet)."""
    import importlib

    for name in ("pyarrow", "fastparquet"):
        try:
            importlib.import_module(name)
            return
        except ImportError:
            continue
    raise missing("pyarrow", "parquet", "--format parquet", instead="use --format csv")


def write_parquet(table: pd.DataFrame, path: Path) -> None:
    try:
        table.to_parquet(path, index=False)
    except ImportError:
        raise missing("pyarrow", "parquet", "--format parquet", instead="use --format csv") from None


def _text(table: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        return str(table.to_csv(index=False))
    return json.dumps([_json_row(row) for row in table.to_dict(orient="records")], indent=1, allow_nan=False) + "\n"


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        if key in ("config", "extra") and isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        out[str(key)] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """numpy / pandas scalars to JSON types; NaN, inf and pd.NA to None."""
    import pandas as pd

    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
