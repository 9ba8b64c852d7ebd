"""Does the CPU pool generate the same Triton code as the GPU worker? (issue 19: one build key everywhere)

On the H200 (2026-12-01, call D1) two pretuned kernels, rms_norm_dynamic_per_token_quant and
rms_norm_per_block_quant, rebuilt every candidate in the GPU worker (0.9 s, the same as the pool's compile)
while the others found the pool's Triton cache entry (0.08 s). The pool generates Helion's code from meta
tensors; the GPU worker from CUDA tensors. This script generates both for each workload kernel's baseline
config on its first shape (and, where Helion's ConfigSpec takes ``maxnreg``, for a persistent config with
``maxnreg=64``, which reaches the launch) and writes whether they match, with the first differing lines.

The pool's side is also generated in a child that sees no GPU (``CUDA_VISIBLE_DEVICES`` empty): whether build
workers could be kept off the GPU (each held a 528 MiB CUDA context on an H100) without changing what they build.

    python benchmarks/check_build_keys.py --out OUT/build_keys.json      # needs a GPU and .workloads
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import workload_campaign

ROOT = Path(__file__).resolve().parents[1]


def campaigns(workloads: Path, folder: Path) -> dict[str, Any]:
    """Each materialised workload kernel's campaign (first shape, runtime), by name: ``WORKLOAD_SHAPES`` also
    names kernels the workloads script does not fetch (rope_fwd, fused_qk_norm_rope), left out here."""
    from paretotune.kernels.workloads import WORKLOAD_SHAPES

    files = {name: workloads / name / f"{name}.py" for name in WORKLOAD_SHAPES}
    return {name: workload_campaign(file, name, folder) for name, file in files.items() if file.exists()}


def variants(adapter: Any, shape: Any) -> dict[str, dict[str, Any]]:
    """The configs compared: the baseline, and a persistent one with maxnreg where Helion's ConfigSpec has it."""
    config = adapter.default_config(shape)
    out = {"baseline": config}
    if "maxnreg" in [key for key, _, _ in adapter.config_spec(shape).flat_key_layout()]:
        out["persistent_maxnreg64"] = {**config, "pid_type": "persistent_interleaved", "maxnreg": 64}
    return out


def pool_sources(workloads: Path, folder: Path) -> dict[str, Any]:
    """What the pool generates (meta tensors, no device features), per kernel and variant; errors as rows."""
    from paretotune.campaign.resolve import make_adapter
    from paretotune.kernels.helion_space import device_features

    out: dict[str, Any] = {}
    for name, campaign in campaigns(workloads, folder).items():
        try:
            adapter = make_adapter(campaign)
            shape = campaign.shapes[0]
            with device_features(False):
                out[name] = {v: adapter.triton_source(c, shape) for v, c in variants(adapter, shape).items()}
        except Exception as exc:  # noqa: BLE001 - a kernel that fails here is a row, not the end
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    return out


def diff_head(a: str, b: str, names: tuple[str, str]) -> list[str]:
    return list(difflib.unified_diff(a.splitlines(), b.splitlines(), *names, n=0, lineterm=""))[:40]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workloads", type=Path, default=ROOT / ".workloads" / "helion-pretuned-sm90")
    parser.add_argument("--pool-only", action="store_true", help="write only the pool's sources (the hidden child)")
    args = parser.parse_args()
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    export_for_triton(find_ptxas())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.pool_only:
        args.out.write_text(json.dumps(pool_sources(args.workloads, args.out.parent)))
        return 0
    hidden_file = args.out.with_name(args.out.stem + "_hidden_pool.json")
    child = subprocess.run([sys.executable, __file__, "--pool-only", "--out", str(hidden_file),
                            "--workloads", str(args.workloads)], check=False, capture_output=True, text=True,
                           env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=600)
    hidden = json.loads(hidden_file.read_text()) if child.returncode == 0 else {}
    from paretotune.campaign.resolve import make_adapter

    pool = pool_sources(args.workloads, args.out.parent)
    out: dict[str, object] = {"hidden_child": {"returncode": child.returncode, "stderr_tail": child.stderr[-1500:]}}
    for name, campaign in campaigns(args.workloads, args.out.parent).items():
        row: dict[str, Any] = {}
        try:
            adapter = make_adapter(campaign)
            shape = campaign.shapes[0]
            inputs = adapter.make_inputs(shape, "cuda", 0)
            bound = adapter.kernel.bind(tuple(adapter.spec.args(inputs, shape.params)))
            for variant, config in variants(adapter, shape).items():
                cuda = str(bound.to_triton_code(adapter.helion_config(config)))
                meta = pool.get(name, {}).get(variant, "")
                hid = hidden.get(name, {}).get(variant, "")
                row[variant] = {"same_as_pool": meta == cuda, "same_as_pool_without_gpu": hid == cuda,
                                "diff_head": diff_head(meta, cuda, ("pool", "cuda")),
                                "diff_head_without_gpu": diff_head(hid, cuda, ("pool_without_gpu", "cuda"))}
        except Exception as exc:  # noqa: BLE001 - a kernel that fails here is a row, not the end
            row["error"] = f"{type(exc).__name__}: {exc}"[:500]
        out[name] = row
        print(name, {v: {k: x for k, x in r.items() if not k.startswith("diff")} if isinstance(r, dict) else r
                     for v, r in row.items()}, flush=True)
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
