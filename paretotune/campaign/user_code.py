"""Import the user code a campaign names (``module:attr`` or ``path/to/file.py:attr``; ``attr`` may be a dotted
qualified name), every failure a one-line UserError naming the field; optionally in a forked child first, so user
code that exits or hangs at import time cannot take this process with it. A file is imported as part of its
package (:mod:`paretotune.campaign.kernel_file`)."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paretotune.campaign.kernel_file import load_file
from paretotune.campaign.trial_import import trial_import
from paretotune.errors import UserError


def import_object(source: str, base_dir: Path, where: str, *, trial: bool = False,
                  after_trial: Callable[[], None] | None = None, module: str | None = None,
                  program_path: Sequence[str] = ()) -> Any:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` (relative paths from the campaign's folder).
    ``trial``: import it in a forked child first (:mod:`paretotune.campaign.trial_import`), so an exit or a
    hang at import time is a one-line error instead of the end of this process; ``after_trial`` is called
    once it passed (worker processes started early wait for it before they import the file). ``module``: the
    dotted name the file had where it was captured (its package, where no ``__init__.py`` says it);
    ``program_path``: the captured program's ``sys.path``, added after this process's own."""
    sys.path.extend(p for p in dict.fromkeys(program_path) if p not in sys.path)
    target, _, attr = source.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise UserError(f"{where}: kernel file not found: {path}")
        if trial:
            trial_import(str(path), True, where, module=module)
        if after_trial is not None:
            after_trial()
        try:
            module_obj = load_file(path, module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in user code is a bad kernel file
            raise UserError(f"{where}: cannot import {path} ({type(exc).__name__}: {exc})") from None
    else:
        if trial and target not in sys.modules:
            trial_import(target, False, where)
        if after_trial is not None:
            after_trial()
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
        # a module that looks names up says why not
        why = str(exc) if found is module_obj and hasattr(module_obj, "__getattr__") else ""
        detail = f" ({why})" if why else ""
        raise UserError(f"{where}: module '{target}' has no attribute '{attr}'{detail}") from None


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
