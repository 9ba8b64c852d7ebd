"""Import the user code a campaign names (``module:attr`` or ``path/to/file.py:attr``), every failure a
one-line UserError naming the field; optionally in a forked child first, so user code that exits or hangs at
import time cannot take this process with it."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paretotune.campaign.trial_import import trial_import
from paretotune.errors import UserError


def import_object(source: str, base_dir: Path, where: str, *, trial: bool = False,
                  after_trial: Callable[[], None] | None = None) -> Any:
    """Resolve ``module:attr`` or ``path/to/file.py:attr`` (relative paths from the campaign's folder).
    ``trial``: import it in a forked child first (:mod:`paretotune.campaign.trial_import`), so an exit or a
    hang at import time is a one-line error instead of the end of this process; ``after_trial`` is called
    once it passed (worker processes started early wait for it before they import the file)."""
    target, _, attr = source.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise UserError(f"{where}: kernel file not found: {path}")
        if trial:
            trial_import(str(path), True, where)
        if after_trial is not None:
            after_trial()
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
        if after_trial is not None:
            after_trial()
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
