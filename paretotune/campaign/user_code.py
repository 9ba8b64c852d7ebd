"""The user code a campaign names (``kernel.source``, ``kernel.inputs``, ``kernel.heuristic``: the fields of
:data:`~paretotune.campaign.schema.CODE_FIELDS`): which files and modules they are (:func:`named_code`, what the
service confines and the trial import imports in a child first), and importing one (``module:attr`` or
``path/to/file.py:attr``), every failure a one-line UserError naming the field."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from paretotune.campaign.schema import CODE_FIELDS, KernelSpec
from paretotune.campaign.trial_import import Code, missing_attribute
from paretotune.errors import UserError
from paretotune.text_file import not_a_file


def named_code(kernel: KernelSpec, base_dir: Path, where: str) -> list[Code]:
    """Every piece of code ``kernel`` names, in :data:`CODE_FIELDS` order: files resolved from ``base_dir``
    (the campaign's folder), nothing read or imported. ``where``: the message prefix (the campaign file)."""
    out = []
    for field in CODE_FIELDS:
        value = getattr(kernel, field)
        if value is None:
            continue
        target, attr = (value, None) if field == "heuristic" else (value.rpartition(":")[0], value.rpartition(":")[2])
        is_file = target.endswith(".py")
        resolved = str((base_dir / target).resolve()) if is_file else target
        out.append(Code(where=f"{where}: kernel.{field}", target=resolved, is_file=is_file, written=target,
                        attr=attr))
    return out


def check_files(codes: list[Code]) -> None:
    """Each named file is a regular file (a one-line error naming the field otherwise), before any import."""
    for code in codes:
        if not code.is_file:
            continue
        problem = not_a_file(Path(code.target))
        if problem == "missing":
            kind = "kernel file" if code.attr is not None else "file"
            raise UserError(f"{code.where}: {kind} not found: {code.target}")
        if problem:
            raise UserError(f"{code.where}: {code.target}: not a regular file ({problem})")


def import_object(source: str, base_dir: Path, where: str) -> Any:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` (relative paths from the campaign's folder). Code
    that may exit or hang at import time goes through :func:`~paretotune.campaign.trial_import.trial_imports`
    first (:func:`~paretotune.campaign.resolve.make_adapter` does)."""
    target, _, attr = source.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise UserError(f"{where}: kernel file not found: {path}")
        stat = path.stat()
        name = f"paretotune_user_{path.stem}_{abs(hash((str(path), stat.st_mtime_ns, stat.st_size)))}"
        if name in sys.modules:  # kernel.source and kernel.inputs in one file: imported once
            module = sys.modules[name]
        else:
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
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise UserError(f"{where}: cannot import module '{target}' ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - the module exists but fails to import
            raise UserError(f"{where}: importing module '{target}' failed ({type(exc).__name__}: {exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise UserError(f"{where}: {missing_attribute(target, attr, module, exc)}") from None
