"""Seconds of Triton's own compile (to PTX, no ACF) of one config of a campaign's kernel, per shape, against the
campaign's baseline config: how far a single config's build can run past the baseline's (the build pool's limit
scales from the baseline's build, ``build/static_job.build_limit_s``). CPU only: no GPU is needed.

    python benchmarks/bench_build_time.py --campaign configs/pretuned/layer_norm_static.yaml \\
        --config '{"block_sizes": [64], ...}' --out benchmarks/results/build_time_devbox.json

Each compile runs with an empty Triton cache of its own; the result is added to ``--out`` with the machine,
its load and the date.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from common import append_result, cpu_model, cpu_topology, load_average


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaign", type=Path, required=True)
    parser.add_argument("--config", required=True, help="the config to time, as JSON")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-build-time-")  # before triton is imported
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    export_for_triton(find_ptxas())
    campaign = load_campaign(args.campaign)
    adapter = make_adapter(campaign)
    config = json.loads(args.config)
    seconds: dict[str, dict[str, float]] = {}
    loads = [load_average()]
    for shape in campaign.shapes:
        seconds[shape.label] = {}
        for name, cfg in (("baseline", adapter.default_config(shape)), ("config", config)):
            start = time.perf_counter()
            adapter.compile_ptx(cfg, shape, campaign.target)
            seconds[shape.label][name] = round(time.perf_counter() - start, 2)
    loads.append(load_average())
    result = {"what": "seconds of Triton's compile to PTX (no ACF), empty cache, baseline config then the config",
              "command": " ".join([sys.executable, *sys.argv]),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpu": cpu_model(), **cpu_topology(), "python": platform.python_version(),
                          "load_average_before_after": loads},
              "campaign": str(args.campaign), "config": config, "seconds": seconds}
    print(json.dumps(seconds))
    append_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
