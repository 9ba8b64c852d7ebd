"""Check the ACFs a campaign names before any work: the files themselves (readable, not text, a real pack)
and their version records against the ptxas found (an ACF is made for one ptxas release and one target)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from paretotune.campaign.load import Campaign
from paretotune.errors import ToolchainError


def check_acf_files(campaign: Campaign) -> None:
    """Read and check every ACF a finite campaign names (a regular file, not empty, not too large, not text; a
    pack that is a real zip holding ACFs), so a bad one fails before the run directory exists, not candidate
    by candidate. Not part of :func:`~paretotune.campaign.load.campaign_from_text`: the service must not read
    paths a client names."""
    if campaign.spec.acf.kind != "finite":
        return
    from paretotune.toolchain.acf_sources import acf_options

    acf = campaign.spec.acf
    acf_options(acf.files, acf.pack, campaign.path.parent, f"{campaign.path}: acf")


def check_search_space(campaign: Campaign) -> dict[str, str] | None:
    """Find a generated ACF space (``acf.search_space``) before any work: offline without one is a one-line error
    naming ``CIQ_SEARCH_SPACES_DIR``, not a network failure after the baseline. Returns where it was found (for
    run.json), None for a campaign without a generated space."""
    acf = campaign.spec.acf
    if acf.kind != "generated":
        return None
    from paretotune.toolchain.ciq_space import ptxas_space_file

    return ptxas_space_file(acf.ptxas_version, f"{campaign.path}: acf.search_space").as_meta()


def check_toolchain(campaign: Campaign, ptxas: Any) -> None:
    """Refuse ACFs the ptxas found would reject: another release's search space, or files whose version record
    (``<name>.json`` next to ``<name>.acf``, as the run directory keeps them) names another ptxas or target."""
    acf = campaign.spec.acf
    have = ptxas.major_minor
    if acf.kind == "generated" and acf.ptxas_version != have:
        raise ToolchainError(f"{campaign.path}: acf.search_space: {acf.search_space} ACFs need ptxas "
                             f"{acf.ptxas_version}, but {ptxas.path} is {ptxas.version}")
    for i, name in enumerate(acf.files or []):
        check_acf_file(campaign.path.parent / name, have, campaign.target.name, f"{campaign.path}: acf.files[{i}]")


def check_acf_file(path: Path, ptxas_version: str, target: str, where: str) -> None:
    """An ACF with a version record is usable only with the ptxas major.minor and target it names.

    ACFs are encrypted, so the record is the only way to tell; an ACF without one is accepted (ptxas rejects
    a wrong one at build time, and that candidate is recorded as failed).
    """
    from paretotune.toolchain.acf import AcfStore

    if not path.with_suffix(".json").is_file():
        return
    try:
        AcfStore(path.parent).check_compatible(path.stem, ptxas_version, target)
    except ToolchainError as exc:
        raise ToolchainError(f"{where}: {exc}") from None
    except (OSError, ValueError, TypeError) as exc:
        raise ToolchainError(f"{where}: {path.with_suffix('.json')}: unreadable version record ({exc})") from None
