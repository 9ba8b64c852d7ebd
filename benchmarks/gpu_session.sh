#!/usr/bin/env bash
# One device call: install the bundle, run the GPU tests and the headline campaigns, pack results into $OUT.
# Usage on the GPU machine (repository root): bash benchmarks/gpu_session.sh STEP...   (steps: env tests shared occupancy ncu helion)
set -uo pipefail
bash .devbundle/install.sh >/dev/null && source /tmp/devenv
export PYTHONPATH=$PWD:${PYTHONPATH:-} CIQ_SEARCH_SPACES_DIR=$PWD/.ciq PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
export TRITON_CACHE_DIR=/tmp/triton-cache
OUTDIR=${OUT:-/tmp/out}; mkdir -p "$OUTDIR/runs"
log() { echo "=== $(date -u +%H:%M:%S) $*"; }
for step in "$@"; do
  case $step in
    env)
      log env; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
      python3 -c "import torch,triton,helion,compileiq,sys;print(sys.version.split()[0],torch.__version__,triton.__version__,helion.__version__,compileiq.__version__ if hasattr(compileiq,'__version__') else '')"
      ptxas --version | tail -1; ncu --version | tail -1 ;;
    tests)
      log tests; timeout ${TESTS_TIMEOUT:-330} python3 -m pytest ${GPU_TEST_PATHS:-tests/gpu tests/kernels tests/ncu} -m gpu -v --tb=short --timeout=${TEST_TIMEOUT:-170} -p no:cacheprovider 2>&1 | tee "$OUTDIR/gpu_tests.log" | tail -25 ;;
    shared)
      log shared; timeout 300 python3 -m paretotune.cli run configs/shared_acf_softmax.yaml --out "$OUTDIR/runs/shared" --quiet
      timeout 200 python3 -m paretotune.cli validate "$OUTDIR/runs/shared" --top 4 --rounds 30 ;;
    occupancy)
      log occupancy; timeout 300 python3 -m paretotune.cli run configs/occupancy_softmax.yaml --out "$OUTDIR/runs/occupancy" --quiet
      timeout 200 python3 -m paretotune.cli validate "$OUTDIR/runs/occupancy" --top 3 --rounds 30 ;;
    ncu)
      log ncu; timeout 150 python3 benchmarks/bench_ncu_batch.py --out "$OUTDIR/ncu_batch.json" --singles 3 2>&1 | tail -30 ;;
    helion)
      log helion; timeout 170 python3 benchmarks/bench_vs_helion.py --out "$OUTDIR/vs_helion.json" --helion-budget-s 60 2>&1 | tail -40 ;;
  esac
done
(cd "$OUTDIR" && tar czf runs.tgz runs && rm -rf runs)
log done
