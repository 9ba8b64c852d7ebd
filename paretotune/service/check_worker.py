"""A checker process: reads submissions from stdin, answers each with one JSON line on stdout.

``python -m paretotune.service.check_worker SERVER_PID``. The first stdin line is the server's configuration
(JSON); then ``ready`` is written once the heavy imports are done, and every request line
``{"body": <base64>, "content_type": ...}`` gets one answer: ``{"ok": true, "text", "name", "kind"}``,
``{"ok": false, "field", "error"}`` (a 422) or ``{"internal": ...}`` (a bug: a 500). Parsing and kernel
imports of submitted campaigns happen here, so however long one takes, the server's event loop never waits
on it, and the server can kill this process when it takes too long. A checker runs at nice +10 and starts
light (torch and triton are imported by the first check that names a kernel): one killed for a hostile body
is replaced often, and must not take CPU from the server while it starts.
"""
from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import traceback
from dataclasses import fields
from pathlib import Path
from typing import Any

from paretotune.service.child import die_with_parent
from paretotune.service.config import ServiceConfig, ServiceLimits


def config_to_json(config: ServiceConfig) -> str:
    """What a checker needs of the server's configuration (no token: checkers never see requests' headers)."""
    return json.dumps({
        "workdir": str(config.workdir), "import_roots": list(config.import_roots),
        "kernel_dirs": [str(d) for d in config.kernel_dirs], "gpus": list(config.gpus),
        "ray_address": config.ray_address, "limits": {f.name: getattr(config.limits, f.name)
                                                      for f in fields(ServiceLimits)},
    })


def config_from_json(line: str) -> ServiceConfig:
    raw = json.loads(line)
    return ServiceConfig(workdir=Path(raw["workdir"]), import_roots=tuple(raw["import_roots"]),
                         kernel_dirs=tuple(Path(d) for d in raw["kernel_dirs"]), gpus=tuple(raw["gpus"]),
                         ray_address=raw["ray_address"], limits=ServiceLimits(**raw["limits"]))


def answer(request: dict[str, Any], config: ServiceConfig) -> dict[str, Any]:
    from paretotune.service.campaign_check import Invalid, body_to_yaml, check_campaign

    try:
        text = body_to_yaml(base64.b64decode(request["body"]), request["content_type"])
        scratch = config.workdir / "campaigns"
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch, prefix=".incoming-") as tmp:
            accepted = check_campaign(text, Path(tmp), config)
    except Invalid as exc:
        return {"ok": False, "field": exc.field, "error": exc.message}
    except MemoryError:
        return {"ok": False, "field": None, "error": "the campaign needs too much memory to check"}
    return {"ok": True, "text": accepted.text, "name": accepted.name, "kind": accepted.kind}


def main(argv: list[str]) -> int:
    if not die_with_parent(int(argv[0])):
        return 1
    config = config_from_json(sys.stdin.readline())
    try:
        os.nice(10)  # a hostile body must never win the CPU from the server's event loop
    except OSError:
        pass
    import paretotune.campaign.resolve  # noqa: F401
    import paretotune.service.campaign_check  # noqa: F401

    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line), config)
        except Exception as exc:  # noqa: BLE001 - a bug in checking: the server answers 500 and logs it
            reply = {"internal": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
