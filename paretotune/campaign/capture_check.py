"""Does each campaign a capture wrote resolve as ``paretotune run`` will resolve it? Checked in a fresh process
without ``TRITON_INTERPRET`` (the campaigns build real kernels even when the program ran under the interpreter).

``python -m paretotune.campaign.capture_check --check FILE...`` prints one JSON object: file -> the one-line
error, or null.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from paretotune.errors import UserError


def check_in_child(files: list[Path]) -> dict[str, str | None]:
    """Resolve each campaign in a child process: file -> the one-line error, or None. A check that cannot run at
    all leaves the campaigns as they are (an empty answer, and a line on stderr saying so)."""
    if not files:
        return {}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-m", "paretotune.campaign.capture_check", "--check", *map(str, files)],
                          capture_output=True, text=True, env=env, cwd=files[0].parent, timeout=600)
    try:
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"paretotune: capture: the campaigns could not be checked ({tail})", file=sys.stderr)
        return {}


def _check(files: list[str]) -> dict[str, str | None]:
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter, make_objectives

    out: dict[str, str | None] = {}
    for file in files:
        try:
            campaign = load_campaign(file)
            make_objectives(campaign)
            make_adapter(campaign)
            out[file] = None
        except UserError as exc:
            out[file] = str(exc).removeprefix(f"{Path(file).resolve()}: ")
        except Exception as exc:  # noqa: BLE001 - whatever the kernel's import raises is the reason
            out[file] = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
    return out


if __name__ == "__main__" and sys.argv[1:2] == ["--check"]:
    print(json.dumps(_check(sys.argv[2:])))
