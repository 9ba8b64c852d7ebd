#!/usr/bin/env bash
# Two gpu_session.sh invocations at once, one per GPU, then optional steps on every GPU; results packed for $OUT.
# Usage (device machine, repository root): bash benchmarks/device_call.sh NAME "GPU0 STEPS" "GPU1 STEPS" "ALL-GPU STEPS"
# Extra environment (TESTS_TIMEOUT, GPU_TEST_PATHS, ...) is given per stream as VAR=value words before the steps.
# Each stream runs `bash benchmarks/gpu_session.sh` from the repository root, which runs every script as
# `python3 benchmarks/NAME.py` with PYTHONPATH=$PWD (benchmarks/README.md says why).
set -uo pipefail
name=$1; RES=${OUT:-/tmp/res}; W=/tmp/$name; mkdir -p "$W"
bash .devbundle/install.sh >/dev/null
stream() {  # $1: tag, $2: CUDA_VISIBLE_DEVICES, $3: words (VAR=value ... steps)
  local envs=() steps=()
  for w in $3; do if [[ $w == *=* ]]; then envs+=("$w"); else steps+=("$w"); fi; done
  [ ${#steps[@]} -eq 0 ] && return 0
  env CUDA_VISIBLE_DEVICES=$2 OUT=$W/$1 "${envs[@]}" bash benchmarks/gpu_session.sh "${steps[@]}" > "$W/$1.log" 2>&1
}
stream gpu0 0 "${2:-}" & stream gpu1 1 "${3:-}" & wait
stream all 0,1 "${4:-}"
tar czf "$RES/$name.tgz" -C /tmp "$name"
for f in "$W"/*.log; do echo "##### $f"; tail -45 "$f"; done
