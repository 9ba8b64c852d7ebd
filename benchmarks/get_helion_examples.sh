#!/usr/bin/env bash
# Materialises Helion's examples/ (someone else's code, BSD-3-Clause: never committed) for bench_capture.py:
# OUT/examples/*.py (run as `python -m examples.NAME` from OUT, as Helion's own docs run them), OUT/LICENSE, and
# OUT/pretuned_kernels/ (run as `python -m pretuned_kernels.K.K`: the pretuned kernels' main()s, for breadth).
# Source: a git mirror of the public Helion repository (the library's `fetch` tool: github:pytorch/helion).
# Usage (repository root): bash benchmarks/get_helion_examples.sh GIT_DIR [OUT_DIR]   (default .workloads/helion-examples)
set -euo pipefail
GIT_DIR=${1:?usage: get_helion_examples.sh GIT_DIR [OUT_DIR]}
OUT=${2:-.workloads/helion-examples}
PIN=ef091f416a50c443b38e4c8bff2980777f5ff225   # 2026-08-22, the commit ../shared/workloads uses for the pretuned kernels
g() { git --git-dir="$GIT_DIR" "$@"; }
rev=$PIN; g cat-file -e "$rev^{commit}" 2>/dev/null || { rev=HEAD; echo "note: $PIN not in this mirror; using its HEAD $(g rev-parse --short HEAD)"; }
rm -rf "$OUT/examples" "$OUT/pretuned_kernels"; mkdir -p "$OUT"
g archive "$rev" examples pretuned_kernels LICENSE | tar -x -C "$OUT"
echo "$(find "$OUT/examples" -name '*.py' | wc -l) files in $OUT/examples, $(ls -d "$OUT"/pretuned_kernels/*/ | wc -l) pretuned kernels (Helion commit $(g rev-parse --short "$rev"))"
