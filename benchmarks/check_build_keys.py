"""Does the CPU pool generate the same Triton code as the GPU worker? (issue 19: one build key everywhere)

On the H200 (2026-12-01, call D1) two pretuned kernels, rms_norm_dynamic_per_token_quant and
rms_norm_per_block_quant, rebuilt every candidate in the GPU worker (0.9 s, the same as the pool's compile)
while the others found the pool's Triton cache entry (0.08 s). The pool generates Helion's code from meta
tensors; the GPU worker from CUDA tensors. This script generates both for each workload kernel's baseline
config on its first shape and writes whether they match, with the first differing lines.

    python benchmarks/check_build_keys.py --out OUT/build_keys.json      # needs a GPU and .workloads
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workloads", type=Path, default=ROOT / ".workloads" / "helion-pretuned-sm90")
    args = parser.parse_args()
    from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

    export_for_triton(find_ptxas())
    from paretotune.campaign.load import campaign_from_text
    from paretotune.campaign.resolve import make_adapter
    from paretotune.kernels.helion_space import device_features
    from paretotune.kernels.workloads import WORKLOAD_SHAPES

    out: dict[str, object] = {}
    for name, shapes in WORKLOAD_SHAPES.items():
        shape = "{" + ", ".join(f"{k}: {v}" for k, v in shapes[0].items()) + "}"
        text = (f"name: keys-{name}\nkernel:\n  source: {args.workloads / name / (name + '.py')}:{name}\n"
                f"  inputs: paretotune.kernels.workloads:{name}\nshapes: [{shape}]\nobjectives: [runtime]\n")
        try:
            campaign = campaign_from_text(text, args.out.parent / f"keys-{name}.yaml")
            adapter = make_adapter(campaign)
            s = campaign.shapes[0]
            config = adapter.default_config(s)
            meta = {}
            for features in (False, True):  # as the pool does it (no device features) and with them
                with device_features(features):
                    meta[features] = adapter.triton_source(config, s)
            inputs = adapter.make_inputs(s, "cuda", 0)
            bound = adapter.kernel.bind(tuple(adapter.spec.args(inputs, s.params)))
            cuda = str(bound.to_triton_code(adapter.helion_config(config)))
            diff = list(difflib.unified_diff(meta[False].splitlines(), cuda.splitlines(), "meta", "cuda", n=0,
                                             lineterm=""))
            out[name] = {"same_as_pool": meta[False] == cuda, "same_with_device_features": meta[True] == cuda,
                         "diff_head": diff[:40]}
        except Exception as exc:  # noqa: BLE001 - a kernel that fails here is a row, not the end
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        print(name, {k: v for k, v in out[name].items() if k != "diff_head"}, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
