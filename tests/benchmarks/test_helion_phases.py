"""benchmarks/helion_phases.py reads where a Helion autotuner arm's time went from the CSV and log it left (Helion
1.5.0's wording), run as the command it is on files written the way Helion writes them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
CSV_HEAD = "run_id,timestamp_s,config_id,generation,status,perf_ms,compile_time_s,config\n"


def helion_arm(parts: Path, kernel: str, rows: list[tuple[float, str, float]], log: str) -> None:
    """An arm folder as the time-to-quality script leaves it: its ttq.json, and Helion's files below it."""
    arm = parts / f"{kernel}.other"
    files = arm / kernel / "helion-full"
    files.mkdir(parents=True)
    (files / "helion_autotune.csv").write_text(CSV_HEAD + "".join(
        f'r,{t},c{i},0,{status},{"0.1" if status == "ok" else ""},{compile_s},"Config(x)"\n'
        for i, (t, status, compile_s) in enumerate(rows)))
    (files / "helion_autotune.log").write_text(log)
    record = {"kernels": {kernel: {"arms": [{"tool": "helion-autotune-full", "start_epoch": 1017.5,
                                            "process_epoch": 1000.0}]}}}
    (arm / "ttq.json").write_text(json.dumps(record))


def test_an_arms_first_benchmark_timeouts_and_skips_are_read_from_its_files(tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    log = ("[0s] Starting LFBOTreeSearch with initial_population=FROM_RANDOM\n"
           "[65s] Timeout after 60s compiling Config(advanced_controls_file='a.acf')\n"
           "[86s] Skipping config that triggered an unrecoverable runtime error in the benchmark subprocess\n"
           "[90s] Benchmark subprocess failed for helion.Config(x): benchmark timeout after 30.0s\n"
           "[95s] Skipping config with accuracy mismatch: helion.Config(y)\n"
           "[105s] Autotune budget 102s exceeded (elapsed 107.0s); returning best-so-far.\n")
    helion_arm(parts, "vector_add", [(65.1, "started", 0.31), (84.45, "ok", 0.31), (84.45, "started", 0.29),
                                     (84.51, "ok", 0.29), (85.0, "started", 23.9), (85.01, "error", 23.9)], log)
    done = subprocess.run([sys.executable, str(BENCHMARKS / "helion_phases.py"), str(parts), "--out",
                           str(tmp_path / "phases.json")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    phases = json.loads((tmp_path / "phases.json").read_text())
    assert list(phases) == ["vector_add.other/vector_add/helion-full"]
    arm = phases["vector_add.other/vector_add/helion-full"]
    assert arm["benchmarked"] == 3 and arm["ok"] == 2 and arm["failed"] == 1
    assert arm["first_benchmark_s"] == 65.1 and arm["first_result_s"] == 84.45 and arm["first_answer_after_s"] == 19.35
    assert arm["compile_s_median"] == 0.31 and arm["budget_s"] == 102.0 and arm["start_offset_s"] == 17.5
    assert (arm["compile_timeouts"], arm["benchmark_timeouts"], arm["runtime_errors_skipped"],
            arm["accuracy_mismatches_skipped"]) == (1, 1, 1, 1)


def test_a_folder_without_helion_files_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / "helion_phases.py"), str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and str(tmp_path) in done.stderr and done.stderr.count("\n") == 1
