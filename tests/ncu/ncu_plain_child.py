"""A child program that knows nothing of paretotune's marker protocol: ``python ncu_plain_child.py SPEC``.

SPEC is JSON ``{"items": [{"range": ..., "values": {...}, "crash": bool}], "domain": null}``. If any item of
the batch has ``crash``, the process exits 1 before launching anything (like a fault during warm-up), so the
runner can only find the culprit by bisection.
"""
from __future__ import annotations

import json
import sys

import nvtx  # the fake one, put on the path by fake_ncu.py
from ncu_fake_kernels import _event

with open(sys.argv[1]) as f:
    spec = json.load(f)
if any(item.get("crash") for item in spec["items"]):
    print("Segmentation fault (simulated)", file=sys.stderr)
    sys.exit(1)
for item in spec["items"]:
    nvtx.push_range(item["range"], domain=spec.get("domain"))
    _event(event="launch", kernel="_plain_kernel", values=item.get("values", {}))
    nvtx.pop_range(domain=spec.get("domain"))
