"""Does paretotune's static build (ptxas on the kernel's PTX, ``toolchain.ptxas.ptxas_flags``) give the machine code
Triton launches, for CompileIQ-sampled ACFs? Per ACF: our build twice (is ptxas deterministic?) and Triton's own
compile with ``ptx_options='--apply-controls ACF'``, compared on the kernel's ``.text`` section; with
``--without-reg-alloc`` our build leaves out ``--regAllocOptLevel=2`` (what it did before 62e3904). CPU only::

    python benchmarks/check_static_build.py --acfs 40 --out benchmarks/results/static_build_devbox.json
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acfs", type=int, default=40)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # Triton's side compiles afresh for every ACF
    from paretotune.toolchain.ptxas import REG_ALLOC_FLAG, export_for_triton, find_ptxas, ptxas_flags

    ptxas = find_ptxas()
    export_for_triton(ptxas)
    from compileiq.ciq import Search
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    from compileiq.types import SearchConfiguration, WorkerTypes

    from paretotune.kernels.bundled.softmax import triton_softmax
    from paretotune.kernels.triton import TritonAdapter
    from paretotune.kernels.triton_jit import compile_like_jit
    from paretotune.records import Shape
    from paretotune.toolchain.arch import get_target
    from tests.objectives.test_static import _elf_sections

    sm90 = get_target("sm_90")
    adapter = TritonAdapter("softmax", triton_softmax)
    shape = Shape("wide", {"M": 4096, "N": 16384})
    kptx = adapter.compile_ptx({"num_warps": 4, "num_stages": 1}, shape, sm90)
    launch_args = adapter._ordered_args(triton_softmax.inputs(shape.params, "meta", 0), shape, {"num_warps": 4})
    section = f".text.{kptx.kernel_name}"
    search = Search(objective_function=lambda _c: 0.0, search_space=PtxasSearchSpace(version="13.3"),
                    search_config=SearchConfiguration(problem_type="min", pool_size=8, generations=1),
                    worker_type=WorkerTypes.MANUAL)
    tmp = Path(tempfile.mkdtemp(prefix="static-build-"))
    (tmp / "k.ptx").write_text(kptx.ptx)

    def ours(acf: Path, flags: list[str], tag: str) -> bytes | None:
        cubin = tmp / f"{acf.stem}-{tag}.cubin"
        done = subprocess.run([str(ptxas.path), *flags, str(tmp / "k.ptx"), "-o", str(cubin)], capture_output=True)
        return _elf_sections(cubin.read_bytes()).get(section) if done.returncode == 0 else None

    rows = []
    for i, hex_string in enumerate(search.sample(args.acfs)):
        acf = tmp / f"s{i}.acf"
        acf.write_bytes(bytes.fromhex(hex_string))
        with_flag = ptxas_flags(sm90, acf)
        without = [f for f in with_flag if f != REG_ALLOC_FLAG]
        a, b, c = ours(acf, with_flag, "a"), ours(acf, with_flag, "b"), ours(acf, without, "c")
        if a is None:
            rows.append({"acf": i, "ptxas_failed": True})
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            theirs = compile_like_jit(triton_softmax.fn, launch_args, {"num_warps": 4, "num_stages": 1,
                                                                       "ptx_options": f"--apply-controls {acf}"}, sm90)
        t = _elf_sections(theirs.asm["cubin"]).get(section)
        rows.append({"acf": i, "ours_deterministic": a == b, "ours_equals_triton": a == t,
                     "without_reg_alloc_equals_triton": c == t})
    built = [r for r in rows if not r.get("ptxas_failed")]
    record = {
        "command": " ".join([sys.executable, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {d: importlib.metadata.version(d) for d in ("triton", "torch", "compileiq")} | {
            "ptxas": ptxas.version, "python": sys.version.split()[0]},
        "flags_now": ptxas_flags(sm90, Path("ACF")), "kernel": "bundled softmax 4096 x 16384, num_warps 4",
        "acfs": args.acfs, "built": len(built),
        "ours_equals_triton": sum(r["ours_equals_triton"] for r in built),
        "without_reg_alloc_equals_triton": sum(r["without_reg_alloc_equals_triton"] for r in built),
        "ours_deterministic": sum(r["ours_deterministic"] for r in built), "rows": rows}
    args.out.write_text(json.dumps(record, indent=1))
    print({k: v for k, v in record.items() if k != "rows"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
