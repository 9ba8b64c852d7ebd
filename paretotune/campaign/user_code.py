"""The user code a campaign names (``kernel.source``, ``kernel.inputs``, ``kernel.heuristic``: the fields of
:data:`~paretotune.campaign.schema.CODE_FIELDS`): which files and modules they are (:func:`named_code`, what the
service confines and the trial import imports in a child first), and importing one (``module:attr`` or
``path/to/file.py:attr``, a file as part of its package: :mod:`paretotune.campaign.kernel_file`), every failure a
one-line UserError naming the field."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paretotune.campaign.kernel_file import load_file
from paretotune.campaign.schema import CODE_FIELDS, KernelSpec
from paretotune.campaign.trial_import import Code, missing_attribute
from paretotune.errors import UserError
from paretotune.text_file import not_a_file


def named_code(kernel: KernelSpec, base_dir: Path, where: str, module: str | None = None) -> list[Code]:
    """Every piece of code ``kernel`` names, in :data:`CODE_FIELDS` order: files resolved from ``base_dir``
    (the campaign's folder), nothing read or imported. ``where``: the message prefix (the campaign file);
    ``module``: the source file's dotted name where it was captured."""
    out = []
    for field in CODE_FIELDS:
        value = getattr(kernel, field)
        if value is None:
            continue
        target, attr = (value, None) if field == "heuristic" else (value.rpartition(":")[0], value.rpartition(":")[2])
        is_file = target.endswith(".py")
        resolved = str((base_dir / target).resolve()) if is_file else target
        out.append(Code(where=f"{where}: kernel.{field}", target=resolved, is_file=is_file, written=target,
                        attr=attr, module=module if field == "source" else None))
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


def import_object(source: str, base_dir: Path, where: str, *, module: str | None = None,
                  program_path: Sequence[str] = ()) -> Any:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` (relative paths from the campaign's folder; ``attr``
    may be a dotted qualified name). A file is imported as part of its package
    (:func:`~paretotune.campaign.kernel_file.load_file`; ``module``: its dotted name where it was captured);
    ``program_path``: a captured program's ``sys.path``, added after this process's own. Code that may exit or
    hang at import time goes through :func:`~paretotune.campaign.trial_import.trial_imports` first
    (:func:`~paretotune.campaign.resolve.make_adapter` does)."""
    add_program_path(program_path)
    target, _, attr = source.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise UserError(f"{where}: kernel file not found: {path}")
        try:
            module_obj = load_file(path, module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in user code is a bad kernel file
            raise UserError(f"{where}: cannot import {path} ({type(exc).__name__}: {exc})") from None
    else:
        try:
            module_obj = importlib.import_module(target)
        except ImportError as exc:
            raise UserError(f"{where}: cannot import module '{target}' ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - the module exists but fails to import
            raise UserError(f"{where}: importing module '{target}' failed ({type(exc).__name__}: {exc})") from None
    found: Any = module_obj
    try:
        for part in attr.split("."):
            found = getattr(found, part)
        return found
    except AttributeError as exc:
        raise UserError(f"{where}: {missing_attribute(target, attr, module_obj, exc)}") from None


def add_program_path(program_path: Sequence[str]) -> None:
    """A captured program's ``sys.path`` entries, after this process's own (before a trial import forks, so the
    child finds what the kernel's module imports too)."""
    sys.path.extend(p for p in dict.fromkeys(program_path) if p not in sys.path)


def check_findable(campaign: Any) -> None:
    """Refuse at once a campaign whose kernel file or top-level module does not exist (before torch and Triton
    load for the real import), with the error the real import would give."""
    kernel = campaign.spec.kernel
    for field, source in (("kernel.source", kernel.source), ("kernel.inputs", kernel.inputs)):
        if source is None:
            continue
        where, target = f"{campaign.path}: {field}", source.rpartition(":")[0]
        if target.endswith(".py"):
            path = (campaign.path.parent / target).resolve()
            if not path.is_file():
                raise UserError(f"{where}: kernel file not found: {path}")
            continue
        top = target.partition(".")[0]
        try:
            found = top in sys.modules or importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = True  # the real import says what is wrong
        if not found:
            raise UserError(f"{where}: cannot import module '{target}' (ModuleNotFoundError: No module named "
                            f"'{top}')")
