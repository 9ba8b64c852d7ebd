#!/usr/bin/env bash
# One device call's steps: install the bundle, run GPU tests, campaigns and benchmarks, write results to $OUT.
# Usage on the GPU machine (repository root): bash benchmarks/gpu_session.sh STEP...
#   steps: env clock rope keys tests noise attribution ship pretuned pretuned_joint pretuned_mo shared occupancy ncu helion fusion imports forkserver ttq ttq_more compile strategies ray capture ablation
# Steps use the GPUs in CUDA_VISIBLE_DEVICES; two invocations with different GPUs and OUT folders can run at once.
# Every script runs as `python3 benchmarks/NAME.py` from the repository root, paretotune found through PYTHONPATH
# (set below): the script's folder is then first on sys.path, so `import common` works (benchmarks/README.md).
set -uo pipefail
{ [ -f /tmp/devenv ] || bash .devbundle/install.sh >/dev/null; } && source /tmp/devenv
export PYTHONPATH=$PWD:${PYTHONPATH:-} CIQ_SEARCH_SPACES_DIR=$PWD/.ciq PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton-cache}
OUTDIR=${OUT:-/tmp/out}; mkdir -p "$OUTDIR/runs"
log() { echo "=== $(date -u +%H:%M:%S) $*"; }
run_tests() {  # $1: test paths, $2: log tag; ncu tests keep their outputs as fixtures under $OUTDIR/ncu_fixtures
  # TESTS_XDIST=N: N test files at once (pytest-xdist, on the GPU image): the suite's campaigns are mostly start-up
  local par=(); [ -n "${TESTS_XDIST:-}" ] && par=(-n "$TESTS_XDIST" --dist loadfile)
  PARETOTUNE_NCU_RECORD_DIR=$OUTDIR/ncu_fixtures timeout ${TESTS_TIMEOUT:-330} python3 -m pytest ${1//,/ } -m gpu -v "${par[@]}" \
    --tb=short --timeout=${TEST_TIMEOUT:-170} --durations=0 -p no:cacheprovider 2>&1 | tee "$OUTDIR/gpu_tests$2.log" | tail -25
}
ttq_deadline() { [ -n "${TTQ_END:-}" ] && echo "--max-s $(( TTQ_END - $(date +%s) ))"; }
pack() {  # only 8 files come back from a device call: everything but the top-level logs goes into one archive
  (cd "$OUTDIR" && find . -mindepth 1 -maxdepth 1 ! -name '*.log' ! -name 'session.tgz' -print0 | xargs -0 -r tar czf session.tgz \
    && find . -mindepth 1 -maxdepth 1 ! -name '*.log' ! -name 'session.tgz' -exec rm -rf {} +)
  log done
}
trap 'log "interrupted: packing what there is"; pack; exit 130' INT TERM  # a call cut at its limit still returns its files
for step in "$@"; do
  case $step in
    env)
      log env; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv
      python3 -c "import sys,importlib.metadata as m;print(sys.version.split()[0],*(d+' '+m.version(d) for d in ('torch','triton','helion','compileiq')))"
      ptxas --version | tail -1; ncu --version | tail -1 ;;
    tests)  # GPU_TEST_PATHS: which tests, comma-separated (default: all but Ray's, which the ray step runs).
      # With TESTS_XDIST the ncu tests run after the others, alone: other processes' kernels beside an ncu profile
      # move its counters (on an H100, 2026-12-05: a Helion candidate's achieved occupancy 80 % in a batch, 53 % in
      # its single run beside the other tests; alone the two agreed. benchmarks/results/h100_gpu_tests_2026-12-05/)
      log tests; paths=${GPU_TEST_PATHS:-tests/gpu tests/kernels tests/ncu}; paths=${paths//,/ }
      if [ -n "${TESTS_XDIST:-}" ]; then
        others=$(tr ' ' '\n' <<<"$paths" | grep -v ncu | xargs); ncu_paths=$(tr ' ' '\n' <<<"$paths" | grep ncu | xargs)
        [ -n "$others" ] && run_tests "$others" "${TESTS_TAG:-}"
        [ -n "$ncu_paths" ] && TESTS_XDIST= run_tests "$ncu_paths" "${TESTS_TAG:-}_ncu"
      else run_tests "$paths" "${TESTS_TAG:-}"; fi ;;
    clock)  # configs of pretuned rms_norm timed by each clock, idle and beside CPU burners (CLOCK_ARGS: --burners --rounds)
      log clock; timeout ${CLOCK_TIMEOUT:-200} python3 benchmarks/bench_clock_under_load.py --out "$OUTDIR/clock" \
        ${CLOCK_ARGS:-} 2>&1 | tail -12 ;;
    rope)  # a short Helion kernel with ncu objectives beside its runtime, its front validated; the runtime-only run's throughput beside
      for c in rope_ncu rope_runtime; do
        log "rope $c"; timeout ${ROPE_TIMEOUT:-200} python3 -m paretotune.cli run configs/pretuned/$c.yaml \
          --out "$OUTDIR/runs/$c" --quiet 2>&1 | tail -25
      done
      log "rope validate"; timeout ${ROPE_VALIDATE_TIMEOUT:-150} python3 -m paretotune.cli validate "$OUTDIR/runs/rope_ncu" \
        --top ${ROPE_TOP:-4} --rounds ${ROPE_ROUNDS:-15} 2>&1 | tail -30
      python3 benchmarks/search_vs_validation.py "$OUTDIR/runs/rope_ncu" "$OUTDIR/runs/rope_runtime" \
        --out "$OUTDIR/rope_search_vs_validation.json" 2>&1 | tail -20 ;;
    noise)  # issue 16: significant baseline-vs-baseline controls in 20 validate runs, shared vs own buffers
      log noise; timeout ${NOISE_TIMEOUT:-330} python3 benchmarks/bench_noise_floor.py --out "$OUTDIR/noise_floor" \
        ${NOISE_ARGS:-} 2>&1 | tail -30 ;;
    attribution)  # issue 16: total, config-only and ACF-only ratios as validate reports them
      log attribution; timeout ${ATTRIBUTION_TIMEOUT:-300} python3 benchmarks/bench_attribution.py --out "$OUTDIR/attribution" \
        ${ATTRIBUTION_ARGS:-} 2>&1 | tail -40 ;;
    pretuned)  # issue 17: ACFs on top of Helion's pretuned sm90 kernels (PRETUNED_ARGS: --kernels, --budget-s)
      log pretuned; timeout ${PRETUNED_TIMEOUT:-560} python3 benchmarks/bench_pretuned.py --out "$OUTDIR/pretuned" \
        ${PRETUNED_ARGS:-} 2>&1 | tail -40 ;;
    ship)  # issue 30: a shipped heuristic per kernel over its whole main() sweep, re-timed against the kernel's own
      log ship; timeout ${SHIP_TIMEOUT:-560} python3 benchmarks/bench_ship.py --out "$OUTDIR/ship" ${SHIP_ARGS:-} 2>&1 | tail -40 ;;
    keys)  # the pool's (meta tensors; also with no GPU visible) and the GPU worker's (CUDA) Helion code per workload kernel
      log keys; timeout ${KEYS_TIMEOUT:-180} python3 benchmarks/check_build_keys.py --out "$OUTDIR/build_keys.json" 2>&1 | tail -12 ;;
    pretuned_joint)  # issue 17: a second pretuned call in the same session (PRETUNED_JOINT_ARGS), e.g. joint campaigns
      log pretuned_joint; timeout ${PRETUNED_JOINT_TIMEOUT:-560} python3 benchmarks/bench_pretuned.py --out "$OUTDIR/pretuned_joint" \
        ${PRETUNED_JOINT_ARGS:-} 2>&1 | tail -40 ;;
    pretuned_mo)  # issue 17: the post's runtime + L1TEX campaign and an occupancy-targeted one on the pretuned softmax
      for c in softmax_l1tex softmax_occupancy; do
        log "pretuned_mo $c"; timeout ${PRETUNED_MO_TIMEOUT:-200} python3 -m paretotune.cli run configs/pretuned/$c.yaml \
          --out "$OUTDIR/runs/$c" --quiet 2>&1 | tail -15
        timeout 150 python3 -m paretotune.cli validate "$OUTDIR/runs/$c" --top 3 --rounds 20 2>&1 | tail -25
        timeout 60 python3 -m paretotune.cli report "$OUTDIR/runs/$c" 2>&1 | tail -3
      done ;;
    shared)
      log shared; timeout 300 python3 -m paretotune.cli run configs/shared_acf_softmax.yaml --out "$OUTDIR/runs/shared" --quiet
      timeout 200 python3 -m paretotune.cli validate "$OUTDIR/runs/shared" --top 4 --rounds 30 ;;
    occupancy)
      log occupancy; timeout 300 python3 -m paretotune.cli run configs/occupancy_softmax.yaml --out "$OUTDIR/runs/occupancy" --quiet
      timeout 200 python3 -m paretotune.cli validate "$OUTDIR/runs/occupancy" --top 3 --rounds 30 ;;
    ncu)
      log ncu; timeout 150 python3 benchmarks/bench_ncu_batch.py --out "$OUTDIR/ncu_batch.json" --singles 3 2>&1 | tail -30 ;;
    helion)  # paretotune with A/B pairs and with a 5 s baseline interval, then Helion's autotuner on the same ACFs
      log helion; timeout ${HELION_TIMEOUT:-260} python3 benchmarks/bench_vs_helion.py --out "$OUTDIR/vs_helion.json" \
        --helion-budget-s ${HELION_BUDGET_S:-40} --generations ${HELION_GENERATIONS:-3} --pool ${HELION_POOL:-20} --workers ${HELION_WORKERS:-12} \
        --baseline-intervals ${HELION_INTERVALS:-0,5} --keep-runs "$OUTDIR/runs/vs_helion" 2>&1 | tail -60 ;;
    fusion)  # issue 19: the GPU-side build per candidate with TRITON_DEFAULT_FP_FUSION unset (200 candidates)
      log fusion; env -u TRITON_DEFAULT_FP_FUSION timeout ${FUSION_TIMEOUT:-330} python3 benchmarks/bench_vs_helion.py \
        --out "$OUTDIR/vs_helion_fusion_unset.json" --generations ${FUSION_GENERATIONS:-10} --pool 20 --workers 12 \
        --helion-budget-s ${FUSION_HELION_S:-40} --baseline-intervals 0 --keep-runs "$OUTDIR/runs/fusion_unset" 2>&1 | tail -40 ;;
    imports)  # where a Helion campaign's imports go and which initializes CUDA; which processes of a short runtime
      # campaign hold a CUDA context, sampled every 2 s (nvidia-smi), while it starts and searches
      # (IMPORTS_CAMPAIGN=0: the import trace alone, without the 40 s campaign)
      # then a build worker's path on that kernel, traced apart (--build: which call opens the workers' CUDA contexts)
      log imports; timeout ${IMPORTS_TIMEOUT:-60} python3 benchmarks/check_import_cuda.py --out "$OUTDIR/import_cuda.json" \
        --kernel .workloads/helion-pretuned-sm90/rms_norm/rms_norm.py --build 2>&1 | tail -30
      # can a fork server preload Helion when torch asks NVML, not the driver, whether CUDA is there?
      timeout ${FORK_TIMEOUT:-90} python3 benchmarks/check_fork_cuda.py --helion-only --out "$OUTDIR/fork_cuda.json" 2>&1 | tail -12
      # where Helion's import spends its seconds on this host (twice: the second finds the page cache warm), and the
      # interpreter's settings that change imports (PYTHONDONTWRITEBYTECODE: every import compiles its sources)
      env | grep -E '^PYTHON' > "$OUTDIR/python_env.txt"
      for i in 1 2; do timeout 60 python3 -X importtime -c "import helion" 2> "$OUTDIR/importtime_helion_$i.txt"
        sort -t'|' -k2 -n "$OUTDIR/importtime_helion_$i.txt" | tail -4; done
      [ "${IMPORTS_CAMPAIGN:-1}" = 0 ] && continue
      (while sleep 2; do date -u +%T; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
       done) > "$OUTDIR/cuda_contexts.txt" 2>&1 & sampler=$!
      sed 's/generations: 6/generations: 1, wall_clock_s: 40/' configs/pretuned/rms_norm_acf_only.yaml > /tmp/imports_run.yaml
      sed -i "s#\.\./\.\./\.workloads#$PWD/.workloads#" /tmp/imports_run.yaml
      timeout 90 python3 -m paretotune.cli run /tmp/imports_run.yaml --out "$OUTDIR/runs/imports" --quiet 2>&1 | tail -5
      kill $sampler; python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['start_s'])" "$OUTDIR/runs/imports/run.json"
      awk -F, 'NF==3 {print $1}' "$OUTDIR/cuda_contexts.txt" | sort -u | wc -l | sed 's/^/processes that held a CUDA context: /' ;;
    forkserver)  # a Helion campaign's fork server on this host: the GPU test, then a restarted pool's first build with
      # Helion preloaded, without it, and spawned (3 repeats did not end in 150 s on an H100: each run is a fresh
      # process that imports Helion; the record is written after every repeat)
      log forkserver; run_tests tests/gpu/test_fork_server_gpu.py _forkserver
      timeout ${FORKSERVER_TIMEOUT:-240} python3 benchmarks/bench_pool_start.py --repeats ${FORKSERVER_REPEATS:-2} \
        --out "$OUTDIR/pool_start_helion.json" 2>&1 | tail -14 ;;
    ttq)  # time to quality, every tool on the same GPU (TTQ_ARGS: --kernels --budgets --strategies --max-s);
      # TTQ_OUT: a results folder that travels with the tree (a table recorded over several calls); TTQ_END: the
      # epoch second by which the ttq steps must end (--max-s from it, for ttq and ttq_more alike)
      log ttq; timeout ${TTQ_TIMEOUT:-560} python3 benchmarks/bench_time_to_quality.py --out "${TTQ_OUT:-$OUTDIR/ttq}" \
        $(ttq_deadline) ${TTQ_ARGS:-} 2>&1 | tail -40 ;;
    ttq_more)  # a second time-to-quality run in the same call, e.g. other kernels with other strategies (TTQ_MORE_ARGS)
      log ttq_more; timeout ${TTQ_MORE_TIMEOUT:-560} python3 benchmarks/bench_time_to_quality.py \
        --out "${TTQ_OUT:-$OUTDIR/ttq_more}" $(ttq_deadline) ${TTQ_MORE_ARGS:-} 2>&1 | tail -40 ;;
    compile)  # seconds per Helion compile on this host's CPU, one process alone and twelve at once
      log compile; timeout ${COMPILE_TIMEOUT:-150} python3 benchmarks/bench_helion_compile.py \
        --out "$OUTDIR/helion_compile.json" --configs 6 --parallel 1,12 2>&1 | grep -v "^{" | tail -8 ;;
    strategies)  # joint vs sequential vs random with runtime (speedup) objectives, 5 repeats, 2 kernels
      log strategies; timeout ${STRATEGIES_TIMEOUT:-330} python3 benchmarks/bench_strategies.py --evaluator kept \
        --kernels softmax,layer_norm --objectives "speedup, registers" --repeats ${STRATEGIES_REPEATS:-5} --generations 2 --workers 6 \
        --warmup-ms 5 --rep-ms 25 --bootstrap 10000 --out "$OUTDIR/strategies_h200" 2>&1 | tail -40 ;;
    capture)  # issue 31: capture a Liger training step and Helion's examples' main()s, tune/run their campaigns (CAPTURE_ARGS)
      log capture; timeout ${CAPTURE_TIMEOUT:-570} python3 benchmarks/bench_capture.py --out "$OUTDIR/capture" \
        ${CAPTURE_ARGS:-} 2>&1 | tail -60 ;;
    ablation)  # issue 31: the capture's cost taken apart in one process (plain, patched, no events, sampled, all)
      w=$(ls .whl/liger_kernel-*.whl 2>/dev/null | tail -1)  # Liger-Kernel is pure Python: its wheel, unzipped
      [ -n "$w" ] && [ ! -d /tmp/liger_site ] && python3 -m zipfile -e "$w" /tmp/liger_site
      for p in ${ABLATION_PROGRAMS:-liger loop}; do
        log "ablation $p"; PYTHONPATH=/tmp/liger_site:$PWD/tests/capture/programs/lib:$PYTHONPATH timeout ${ABLATION_TIMEOUT:-150} \
          python3 benchmarks/bench_capture_ablation.py --program $p \
          --out "$OUTDIR/ablation_$p.json" ${ABLATION_ARGS:-} 2>&1 | tail -8
      done ;;
    ray)  # the Ray GPU test, then the Ray backend on every visible GPU vs the local backend on one (needs the full bundle, not benchmarks/slim_bundle.sh's)
      log ray; TESTS_TIMEOUT=150 TEST_TIMEOUT=140 run_tests tests/cluster/test_ray_backend.py _ray
      timeout ${RAY_TIMEOUT:-260} python3 benchmarks/bench_ray_gpus.py --out "$OUTDIR/ray_gpus.json" --generations 6 \
        --rep-ms 100 --workers 12 --timeout 120 2>&1 | tail -30 ;;
  esac
done
pack
