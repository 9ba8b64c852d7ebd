"""Optional dependencies: each pip extra serves one area, so a CPU static campaign installs none of them.

    paretotune[ray]      ray                  execution.backend: ray
    paretotune[service]  fastapi, uvicorn     paretotune serve
    paretotune[report]   plotly, matplotlib   paretotune report (HTML page, PNGs)
    paretotune[parquet]  pyarrow              paretotune export --format parquet
    paretotune[ncu]      ncu-report           reads .ncu-rep files directly (else ``ncu --import``)

Code that needs one imports it through :func:`require` at the point of use (never at module level outside the
area's own package), so a missing extra is a one-line :class:`UserError` naming the ``pip install`` to run
(exit code 2 from the CLI) rather than an ImportError from deep inside a command.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from paretotune.errors import UserError


def missing(package: str, extra: str, what: str, *, instead: str = "") -> UserError:
    """The one-line error for ``what`` when ``package`` (from ``paretotune[extra]``) is not installed."""
    return UserError(f"{what} needs {package}: pip install 'paretotune[{extra}]'" + (f" (or {instead})" if instead
                                                                                      else ""))


def require(module: str, extra: str, what: str, *, instead: str = "") -> ModuleType:
    """Import ``module`` or raise :func:`missing` for its top-level package."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing(module.split(".")[0], extra, what, instead=instead) from None
