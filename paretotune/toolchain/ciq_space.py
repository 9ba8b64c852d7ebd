"""Where CompileIQ's PTXAS control space comes from, resolved once and before any work.

CompileIQ reads the space from the folder ``CIQ_SEARCH_SPACES_DIR`` names, else downloads its published
catalog from GitHub. On a machine without internet access and without the variable that download failed
only after the baseline had been built ("internal error: ConnectionError ... api.github.com"). The order here:

1. ``CIQ_SEARCH_SPACES_DIR`` when it is set (CompileIQ's own offline mechanism);
2. else the offline copy beside a source checkout, ``<checkout>/../shared/compileiq``: the folder the test suite
   and CI read (its README says not to copy it into the project). It is used only when paretotune runs from a
   checkout (a folder with ``pyproject.toml`` above the package) that has it there; an install from a wheel
   never finds it. It is then set as ``CIQ_SEARCH_SPACES_DIR`` for this process and the workers it starts, so
   every CompileIQ call of the run reads the same space;
3. else CompileIQ's catalog online (the latest release for that ptxas version).

A space that cannot be had is one line naming ``CIQ_SEARCH_SPACES_DIR`` and where the offline copy was looked
for (:class:`~paretotune.errors.UserError`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from paretotune.errors import UserError

ENV_VAR = "CIQ_SEARCH_SPACES_DIR"  # compileiq.search_spaces.resolver.LOCAL_DIR_ENV_VAR
CHECKOUT_COPY = Path("..") / "shared" / "compileiq"  # relative to the checkout's root


@dataclass(frozen=True)
class SpaceFile:
    """The resolved space: the local ``.bin`` CompileIQ samples from, and where it came from (for run.json)."""

    path: Path
    source: str  # "CIQ_SEARCH_SPACES_DIR", "checkout copy" or "CompileIQ catalog"
    tag: str
    sha256: str

    def as_meta(self) -> dict[str, str]:
        return {"path": str(self.path), "source": self.source, "tag": self.tag, "sha256": self.sha256}


def checkout_copy() -> Path | None:
    """``<checkout>/../shared/compileiq`` when paretotune runs from a source checkout that has it; else None."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        return None  # installed (site-packages): there is no checkout to look beside
    folder = (root / CHECKOUT_COPY).resolve()
    return folder if (folder / "manifest.json").is_file() else None


_resolved: dict[tuple[str, str | None], SpaceFile] = {}


def ptxas_space_file(version: str, where: str = "acf.search_space") -> SpaceFile:
    """The PTXAS ``version`` control space as a local file (see the module docstring for the order), resolved
    once per process and setting; a UserError naming ``where`` and ``CIQ_SEARCH_SPACES_DIR`` when there is none."""
    origin = ENV_VAR
    if not os.environ.get(ENV_VAR):
        copy = checkout_copy()
        origin = "CompileIQ catalog" if copy is None else "checkout copy"
        if copy is not None:
            os.environ[ENV_VAR] = str(copy)  # CompileIQ's own switch, for this process and its workers
    key = (version, os.environ.get(ENV_VAR))
    if key not in _resolved:
        _resolved[key] = _resolve(version, where, origin)
    return _resolved[key]


def _resolve(version: str, where: str, origin: str) -> SpaceFile:
    from compileiq.search_spaces.compilers import PtxasSearchSpace

    provider = PtxasSearchSpace(version=version)
    try:
        path = provider.retrieve()
    except Exception as exc:  # noqa: BLE001 - CompileIQ raises requests', OSError's and its own types here
        raise UserError(f"{where}: cannot load CompileIQ's PTXAS {version} search space ({_reason(exc)}); "
                        f"{_fix(origin)}") from None
    meta = provider.resolution_metadata
    return SpaceFile(path=Path(path), source=origin, tag=meta.resolved_tag if meta else "",
                     sha256=meta.sha256 if meta else "")


def _reason(exc: BaseException) -> str:
    """CompileIQ's message, shortened for a network failure (requests' own is several hundred characters)."""
    if type(exc).__module__.startswith(("requests", "urllib3")):
        return f"no network: {type(exc).__name__} reaching GitHub"
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


def _fix(origin: str) -> str:
    """What to do: the variable to set, and where the offline copy was looked for."""
    if origin == ENV_VAR:
        return f"check {ENV_VAR}={os.environ.get(ENV_VAR)} (a folder with CompileIQ's manifest.json and its .bin files)"
    root = Path(__file__).resolve().parents[2]
    if origin == "checkout copy":
        return (f"the offline copy at {(root / CHECKOUT_COPY).resolve()} was read because {ENV_VAR} is unset; "
                f"set {ENV_VAR} to a folder with CompileIQ's manifest.json and its .bin files")
    looked = (f"none at {(root / CHECKOUT_COPY).resolve()}" if (root / "pyproject.toml").is_file()
              else "none looked for: paretotune is installed, not run from a checkout")
    return (f"without internet access set {ENV_VAR} to a folder with CompileIQ's manifest.json and its .bin files "
            f"(the project's offline copy sits at ../shared/compileiq beside a clone; {looked})")
