"""Check a submitted campaign with the same loader the CLI uses, plus the server's own rules and limits.

The loader's UserError becomes a 422 whose ``field`` is the field path it names. On top of the CLI's checks:

- the server decides where it connects: a campaign may not name a network endpoint (``execution.address``,
  any ``host``/``url``-like field, any URL, ``host:port`` or IP address value); ``execution.backend: ray`` is
  accepted only when the operator gave ``serve --ray-address``, and then runs on that cluster;
- every field that names code (``kernel.source``, ``kernel.inputs``, ``kernel.heuristic``:
  :data:`~paretotune.campaign.schema.CODE_FIELDS`) must name a module under a configured import root or a file
  under a configured kernel folder, one rule for all of them, checked before anything is imported;
- campaigns may not name ACF files or packs (those are paths on the server's disk); the refusal is the same
  whatever the path, so answers never tell whether a file exists;
- budgets, workers, shapes, timeouts are capped by the operator's :class:`ServiceLimits`.

Parsing uses the campaign loader's YAML budgets (size, nesting, alias expansion); the server runs this module
in checker processes (:mod:`.checkers`), never in its event loop.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from paretotune.errors import UserError
from paretotune.service.config import ServiceConfig, ServiceLimits

_FIELD_RE = re.compile(r"^([A-Za-z_]\w*(?:\[\d+\]|\.\w+)*): ")
MAX_JSON_DEPTH = 64
ENDPOINT_KEYS = frozenset({"address", "addresses", "host", "hosts", "hostname", "url", "urls", "uri", "endpoint",
                           "endpoints", "server", "port", "ray_address", "head"})
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HOST_PORT_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):\d{1,5}$")
NO_ENDPOINTS = ("a submitted campaign may not name a network address; this server decides where it connects "
                "(its operator sets that with serve --ray-address)")
NO_ACF_PATHS = ("not accepted by the server (ACF files and packs are paths on its disk); use acf.search_space")


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
        except RecursionError:
            raise Invalid(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
        except ValueError as exc:
            raise Invalid(f"not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise Invalid(f"a campaign must be a JSON object (got {type(data).__name__})")
        if _depth(data) > MAX_JSON_DEPTH:
            raise Invalid(f"nested more than {MAX_JSON_DEPTH} levels deep")
        return yaml.safe_dump(data, sort_keys=False)
    return text


def _depth(data: Any) -> int:
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, dict):
            stack.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, level + 1) for v in node)
    return deepest


def check_campaign(text: str, scratch: Path, config: ServiceConfig) -> Accepted:
    """Validate fully (server rules, schema, limits, kernel import, knobs, shapes, objectives) or raise
    :class:`Invalid`.

    ``scratch`` is a folder inside the work directory standing in for the campaign's folder; it is only used
    in paths (messages, relative-path resolution), never written.
    """
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter, make_objectives
    from paretotune.campaign.safe_yaml import load_bounded

    path = scratch / "campaign.yaml"
    try:
        data = load_bounded(text, str(path))  # the loader's YAML budgets: size, nesting, alias expansion
        if isinstance(data, dict):
            check_server_rules(data, config)  # before the loader: it would look at ACF paths on disk
        campaign = campaign_from_text(text, path)  # nothing imported: the schema and the file's own checks
        spec = campaign.spec
        check_code(campaign, config)  # before any import
        check_limits(spec, config.limits)
        objectives = make_objectives(campaign)
        make_adapter(campaign)
    except UserError as exc:
        raise _invalid(str(exc), path) from None
    except RecursionError:
        raise Invalid("nested too deeply") from None
    kind: Literal["static", "gpu"] = "static" if all(o.stage == "static" for o in objectives) else "gpu"
    if kind == "gpu" and not config.gpus:
        raise Invalid("objectives: this server has no GPU; only static objectives (a ptxas build) can run here",
                      "objectives")
    return Accepted(text=text, name=spec.name, kind=kind)


def check_server_rules(data: dict[str, Any], config: ServiceConfig) -> None:
    """Endpoints, ACF paths and Ray, on the parsed document (each node visited once, aliases or not)."""
    where = _endpoint(data)
    if where is not None:
        raise Invalid(f"{where}: {NO_ENDPOINTS}", where)
    acf = data.get("acf")
    if isinstance(acf, dict):
        for key in ("files", "pack"):
            if key in acf:
                raise Invalid(f"acf.{key}: {NO_ACF_PATHS}", f"acf.{key}")
    kernel = data.get("kernel")
    if isinstance(kernel, dict) and "captured" in kernel:
        raise Invalid("kernel.captured: not accepted by the server (a capture's calls file is a path on its disk); "
                      "run captured campaigns with paretotune run", "kernel.captured")
    execution = data.get("execution")
    if isinstance(execution, dict) and execution.get("backend") == "ray" and config.ray_address is None:
        raise Invalid("execution.backend: 'ray' is not enabled on this server (its operator enables it with "
                      "serve --ray-address)", "execution.backend")


def _endpoint(data: Any) -> str | None:
    """Field path of the first key or value that names a network endpoint, or None."""
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
        if isinstance(node, dict):
            for key, value in node.items():
                path = f"{where}.{key}" if where else str(key)
                if str(key).lower() in ENDPOINT_KEYS:
                    return path
                stack.append((value, path))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node))
        elif isinstance(node, str) and _names_endpoint(node):
            return where or "(document)"
    return None


def _names_endpoint(value: str) -> bool:
    value = value.strip()
    if _URL_RE.match(value) or _HOST_PORT_RE.match(value):
        return True
    try:
        ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return False
    return True


def check_limits(spec: Any, limits: ServiceLimits) -> None:
    """Refuse what asks for more than the operator allows: 422 naming the field, the value and the limit."""
    ev, search = spec.evaluation, spec.search
    checks: list[tuple[str, float, float, str]] = [
        ("evaluation.workers", ev.workers, limits.max_workers, "--max-workers"),
        ("search", search.generations * search.pool_size, limits.max_evaluations, "--max-evaluations"),
        ("shapes", len(spec.shapes), limits.max_shapes, "--max-shapes"),
        ("objectives", len(spec.objectives), limits.max_objectives, "--max-objectives"),
        ("search.wall_clock_s", search.wall_clock_s or 0, limits.max_wall_clock_s, "--max-wall-clock-s"),
        ("evaluation.compile_timeout_s", ev.compile_timeout_s, limits.max_timeout_s, "--max-timeout-s"),
        ("evaluation.compile_timeout_min_s", ev.compile_timeout_min_s, limits.max_timeout_s, "--max-timeout-s"),
        ("evaluation.measure_timeout_s", ev.measure_timeout_s, limits.max_timeout_s, "--max-timeout-s"),
        ("evaluation.gpu_spares", ev.gpu_spares, limits.max_gpu_spares, "--max-gpu-spares"),
        ("evaluation.warmup_ms", ev.warmup_ms, limits.max_measure_ms, "--max-measure-ms"),
        ("evaluation.rep_ms", ev.rep_ms, limits.max_measure_ms, "--max-measure-ms"),
        ("name", len(spec.name), limits.max_name_chars, "--max-name-chars"),
    ]
    for knob, values in (spec.kernel.space or {}).items():
        checks.append((f"kernel.space.{knob}", len(values), limits.max_knob_values, "--max-knob-values"))
    for field, value, limit, flag in checks:
        if value > limit:
            what = {"search": "search.generations × search.pool_size evaluations",
                    "shapes": "shapes", "objectives": "objectives", "name": "characters"}.get(field)
            shown = f"{_number(value)} {what}" if what else _number(value)
            raise Invalid(f"{field}: {shown} is over this server's limit of {_number(limit)} (serve {flag})", field)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def check_code(campaign: Any, config: ServiceConfig) -> None:
    """Every field that names code goes through one rule, before any of it is imported: a module under one of
    the server's import roots, or a file (resolved, links followed) under one of its kernel folders."""
    from paretotune.campaign.user_code import named_code

    roots, folders = config.import_roots, [d.resolve() for d in config.kernel_dirs]
    for code in named_code(campaign.spec.kernel, campaign.path.parent, str(campaign.path)):
        if code.is_file:
            if not any(Path(code.target).is_relative_to(d) for d in folders):
                raise UserError(f"{code.where}: kernel files are accepted only from the server's kernel folders "
                                f"({', '.join(map(str, config.kernel_dirs)) or 'none configured'}); name a module")
        elif not any(code.target == root or code.target.startswith(root + ".") for root in roots):
            raise UserError(f"{code.where}: module '{code.target}' is outside the server's import roots "
                            f"({', '.join(roots)})")


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
