"""Check a submitted campaign with the same loader the CLI uses, plus the server's own limits.

The loader's UserError becomes a 422 whose ``field`` is the field path it names. On top of the CLI's checks:
``kernel.source`` must name a module under a configured import root (or a file under a configured kernel
folder), and campaigns may not name ACF files or packs (those are paths on the server's disk).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from paretotune.errors import UserError
from paretotune.service.config import ServiceConfig

_FIELD_RE = re.compile(r"^([A-Za-z_]\w*(?:\[\d+\]|\.\w+)*): ")


class Invalid(Exception):
    """A submission the server refuses: HTTP 422 with the field path and a one-line message."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message, self.field = message, field


@dataclass(frozen=True)
class Accepted:
    text: str  # the campaign as YAML, stored as the campaign file
    name: str
    kind: Literal["static", "gpu"]


def body_to_yaml(body: bytes, content_type: str) -> str:
    """JSON object or YAML text → YAML text (JSON is YAML, but re-dumping keeps the stored copy readable)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("the body is not UTF-8 text") from None
    if "json" in content_type.split(";")[0]:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise Invalid(f"not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise Invalid(f"a campaign must be a JSON object (got {type(data).__name__})")
        return yaml.safe_dump(data, sort_keys=False)
    return text


def check_campaign(text: str, scratch: Path, config: ServiceConfig) -> Accepted:
    """Validate fully (schema, kernel import, knobs, shapes, objectives) or raise :class:`Invalid`.

    ``scratch`` is a folder inside the work directory standing in for the campaign's folder; it is only used
    in paths (messages, relative-path resolution), never written.
    """
    from paretotune.campaign.load import campaign_from_text, make_adapter, make_objectives

    path = scratch / "campaign.yaml"
    try:
        campaign = campaign_from_text(text, path)
        spec = campaign.spec
        if spec.acf.files is not None:
            raise UserError(f"{path}: acf.files: not accepted by the server (ACF files are paths on its disk); "
                            "use acf.search_space")
        if spec.acf.pack is not None:
            raise UserError(f"{path}: acf.pack: not accepted by the server (a pack is a path on its disk)")
        _check_source(spec.kernel.source, path, config)
        objectives = make_objectives(campaign)
        make_adapter(campaign)
    except UserError as exc:
        raise _invalid(str(exc), path) from None
    kind: Literal["static", "gpu"] = "static" if all(o.stage == "static" for o in objectives) else "gpu"
    if kind == "gpu" and not config.gpus:
        raise Invalid("objectives: this server has no GPU; only static objectives (a ptxas build) can run here",
                      "objectives")
    return Accepted(text=text, name=spec.name, kind=kind)


def _check_source(source: str, path: Path, config: ServiceConfig) -> None:
    target = source.rpartition(":")[0]
    where = f"{path}: kernel.source"
    if target.endswith(".py"):
        file = (path.parent / target).resolve()
        if not any(file.is_relative_to(d.resolve()) for d in config.kernel_dirs):
            raise UserError(f"{where}: kernel files are accepted only from the server's kernel folders "
                            f"({', '.join(map(str, config.kernel_dirs)) or 'none configured'}); name a module")
        return
    if not any(target == root or target.startswith(root + ".") for root in config.import_roots):
        raise UserError(f"{where}: module '{target}' is outside the server's import roots "
                        f"({', '.join(config.import_roots)})")


def _invalid(message: str, path: Path) -> Invalid:
    """Strip the scratch path (the client never saw it) and pick out the field path the message starts with."""
    for prefix in (str(path.resolve()), str(path)):
        if message.startswith(prefix):
            message = message[len(prefix):]
            break
    line = re.match(r"^(?::(\d+))?: ", message)
    where = ""
    if line is not None:
        where = f"line {line.group(1)}: " if line.group(1) else ""
        message = message[line.end():]
    field = _FIELD_RE.match(message)
    message = message.replace(str(path.parent.resolve()), "<campaign>")
    return Invalid(where + message, field.group(1) if field else None)
