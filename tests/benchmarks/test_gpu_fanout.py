"""Spreading the time-to-quality jobs over the GPUs of one host (benchmarks/common.py ``run_on_gpus``,
bench_time_to_quality.py ``--gpus``): one job per GPU at a time, each pinned to that GPU's share of the host's
cores and seeing only its GPU, prerequisites before dependants, nothing started that would end past the
deadline, and the parts merged into one table. Real processes; no GPU needed (the GPU is only named)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # as `python benchmarks/NAME.py` finds common.py
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def common(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return load("common", monkeypatch)


@pytest.fixture()
def ttq(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return load("bench_time_to_quality", monkeypatch)


def test_each_gpu_gets_its_own_share_of_the_hosts_cores_whoever_asks(common: ModuleType) -> None:
    eight = common.gpu_slots(list(range(8)), 8, cores=list(range(128)))
    assert [s.gpu for s in eight] == [str(i) for i in range(8)] and all(len(s.cores) == 16 for s in eight)
    assert len(set().union(*(s.cores for s in eight))) == 128  # disjoint
    # a second command on GPUs 2 and 3 of a 4-GPU host: the shares the first command's GPUs 0 and 1 do not use
    assert [sorted(s.cores) for s in common.gpu_slots([2, 3], 4, cores=list(range(16)))] == [
        [8, 9, 10, 11], [12, 13, 14, 15]]
    assert all(s.cores == {0, 1} for s in common.gpu_slots([0, 1, 2], 3, cores=[0, 1]))  # fewer cores: shared
    assert common.slot_env(eight[3], {"PATH": "/bin"}) == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "3",
                                                           "HELION_AUTOTUNE_PRECOMPILE_JOBS": "16"}


def report_job(tmp_path: Path, name: str, sleep_s: float, exit_code: int = 0) -> list[str]:
    """A job that writes what it saw (its GPU, core count, affinity) and when it ran."""
    code = (f"import json, os, sys, time; t0 = time.time(); time.sleep({sleep_s}); "
            f"json.dump({{'gpu': os.environ['CUDA_VISIBLE_DEVICES'], "
            f"'jobs': os.environ['HELION_AUTOTUNE_PRECOMPILE_JOBS'], 'cores': sorted(os.sched_getaffinity(0)), "
            f"'t0': t0, 't1': time.time()}}, open({str(tmp_path / (name + '.json'))!r}, 'w')); sys.exit({exit_code})")
    return [sys.executable, "-c", code]


def test_jobs_run_one_per_gpu_on_its_cores_after_their_prerequisites(common: ModuleType, tmp_path: Path) -> None:
    cores = sorted(os.sched_getaffinity(0))
    slots = common.gpu_slots([0, 1], 2, cores=cores)

    def job(name: str, sleep_s: float = 0.5, exit_code: int = 0, estimate_s: float = 1.0,
            after: tuple[str, ...] = ()) -> object:
        return common.GpuJob(name, report_job(tmp_path, name, sleep_s, exit_code), tmp_path / f"{name}.log",
                             estimate_s, after)

    jobs = [job("a"), job("b"), job("c", after=("a", "b")), job("fails", exit_code=3),
            job("after_fail", after=("fails",)), job("too_long", estimate_s=1e6), job("hangs", sleep_s=600)]
    common.run_on_gpus(jobs, slots, deadline_s=8.0, poll_s=0.1)
    by = {j.name: j for j in jobs}
    seen = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in ("a", "b", "c", "fails")}
    for name, saw in seen.items():
        slot = next(s for s in slots if s.gpu == by[name].outcome["gpu"])
        assert saw["gpu"] == slot.gpu and saw["cores"] == sorted(slot.cores) and saw["jobs"] == str(len(slot.cores))
    assert seen["a"]["gpu"] != seen["b"]["gpu"] and seen["a"]["t0"] < seen["b"]["t1"]  # side by side
    assert seen["c"]["t0"] >= max(seen["a"]["t1"], seen["b"]["t1"])
    spans = sorted((s["t0"], s["t1"]) for s in seen.values())
    assert all(sum(t0 <= at < t1 for t0, t1 in spans) <= 2 for at, _ in spans)  # never more jobs than GPUs
    assert by["fails"].outcome["returncode"] == 3
    assert "fails" in by["after_fail"].outcome["skipped"] and not (tmp_path / "after_fail.json").exists()
    assert "would end past the deadline" in by["too_long"].outcome["skipped"]
    assert by["hangs"].outcome["error"].startswith("killed at the deadline") and by["hangs"].outcome["returncode"] < 0


def test_the_expected_wall_follows_slots_and_prerequisites(ttq: ModuleType, tmp_path: Path) -> None:
    def job(name: str, s: float, after: tuple[str, ...] = ()) -> object:
        return ttq.GpuJob(name, ["true"], tmp_path / name, s, after)

    jobs = [job("k1.p", 300), job("k1.o", 300), job("k1", 45, ("k1.p", "k1.o")), job("k2", 250), job("k3", 250)]
    assert ttq.expected_wall_s(jobs, 2) == 300 + 45 + 250  # k2 waits for a GPU; k3 starts after k1's re-timing
    assert ttq.expected_wall_s(jobs, 4) == 345


def arm(tool: str) -> dict:
    return {"tool": tool, "timeline": [], "points": {}}


def seed_part(out: Path, job: str, kernel: str, tools: list[str], budgets: list[float]) -> None:
    folder = out / "parts" / job
    folder.mkdir(parents=True)
    (folder / "ttq.json").write_text(json.dumps({"budgets_s": budgets, "kernels": {
        kernel: {"shape": {"M": 4096, "N": 4096}, "arms": [arm(t) for t in tools]}}}))


def test_split_arms_run_side_by_side_then_one_retiming_gets_both(tmp_path: Path) -> None:
    """A kernel's two arms (here: arms an earlier command left in their parts; no tool runs) on GPUs 0 and 1 at
    once, then its re-timing after both, with both arms folded in; the merged table has its row per tool."""
    out, kernel = tmp_path / "ttq", "pretuned_rms_norm"
    seed_part(out, f"{kernel}.paretotune", kernel, ["paretotune-default"], [60.0, 120.0, 300.0])
    seed_part(out, f"{kernel}.other", kernel, ["helion-autotune-full"], [60.0, 120.0, 300.0])
    seed_part(out, "pretuned_softmax", "pretuned_softmax", ["paretotune-default"], [60.0, 120.0])  # an earlier call
    cmd = [sys.executable, str(BENCHMARKS / "bench_time_to_quality.py"), "--out", str(out), "--gpus", "2",
           "--split-arms", "--kernels", kernel, "--budgets", "60,120,300", "--strategies", "none",
           "--helion-effort", "none"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(BENCHMARKS.parent)})
    assert done.returncode == 0, done.stderr[-2000:]
    (call,) = [json.loads(line) for line in (out / "fanout.jsonl").read_text().splitlines()]
    jobs = {j["name"]: j for j in call["jobs"]}
    assert {jobs[f"{kernel}.paretotune"]["gpu"], jobs[f"{kernel}.other"]["gpu"]} == {"0", "1"}
    arms_end = max(jobs[f"{kernel}.{p}"]["start_s"] + jobs[f"{kernel}.{p}"]["wall_s"] for p in ("paretotune", "other"))
    assert jobs[kernel]["start_s"] >= arms_end - 0.2 and jobs[kernel]["returncode"] == 0  # (the poll's rounding)
    merged = json.loads((out / "ttq.json").read_text())
    row = merged["kernels"][kernel]
    assert sorted(a["tool"] for a in row["arms"]) == ["helion-autotune-full", "paretotune-default"]
    assert all(a["budgets"] == ["60", "120", "300"] for a in row["arms"])  # filled in by the re-timing
    assert row["retime"]["error"] == "no arm reached a kernel by any budget"
    assert row["retime"]["cuda_visible_devices"] == jobs[kernel]["gpu"]
    assert merged["budgets_s"] == [60.0, 120.0, 300.0] and "pretuned_softmax" in merged["kernels"]
    # reaching nothing is "baseline kept" (1.0) for both tools: counted as level at every budget
    assert merged["summary"]["300"]["scores"] == {kernel: {"paretotune": 1.0, "helion": 1.0}}
    assert not merged["summary"]["300"]["met"]  # one kernel at 300 s; the target needs two


def test_stopping_the_command_stops_its_jobs(tmp_path: Path) -> None:
    """``timeout`` stops a device call's step with SIGTERM: the jobs, each in a session of its own, go with it
    instead of holding their GPUs for the rest of the call."""
    import signal
    import time

    pid_file = tmp_path / "job.pid"
    job = [sys.executable, "-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
                                 "time.sleep(600)"]
    code = ("import sys; from pathlib import Path; import common; "
            f"common.run_on_gpus([common.GpuJob('long', {job!r}, Path({str(tmp_path / 'long.log')!r}), 1.0)], "
            "common.gpu_slots([0], 1), deadline_s=900)")
    runner = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(BENCHMARKS)})
    waited = time.monotonic()
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() - waited < 60:
        time.sleep(0.1)
    job_pid = int(pid_file.read_text())
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=60) == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):  # killed and reaped by the runner
        os.kill(job_pid, 0)


@pytest.mark.parametrize(("retime", "expected"), [("auto", {"k.paretotune": (), "k.other": (),
                                                            "k": ("k.paretotune", "k.other")}),
                                                  ("skip", {"k.paretotune": (), "k.other": ()}),
                                                  ("only", {"k": ()})])
def test_split_jobs_follow_the_retime_mode(ttq: ModuleType, tmp_path: Path, retime: str, expected: dict) -> None:
    """``--retime only`` re-times the arms an earlier ``--retime skip`` call left in the kernel's two parts."""
    import argparse

    args = argparse.Namespace(out=tmp_path, budgets="60,120,300", workers=8, rounds=15, split_arms=True,
                              retime=retime, strategies="default", helion_effort="full",
                              helion_in_process=False)
    jobs = ttq.fanout_jobs(args, ["k"], [700.0], [306.0, 306.0], "compileiq")
    assert {j.name: j.after for j in jobs} == expected
    parts = tmp_path / "parts"
    for job in jobs:
        if job.name == "k":
            assert job.cmd[job.cmd.index("--arms-from") + 1] == f"{parts / 'k.paretotune'},{parts / 'k.other'}"


def test_a_later_call_runs_only_what_earlier_calls_left(ttq: ModuleType, tmp_path: Path) -> None:
    """A table recorded over several device calls: the same command again leaves out the jobs an earlier call
    ran to exit code 0 whose parts are still there; a job killed at the deadline, skipped, failed, run with other
    arguments, or whose part was deleted runs again, and a re-timing no longer waits for arms done before."""
    import argparse

    args = argparse.Namespace(out=tmp_path, budgets="60,120", workers=8, rounds=15, split_arms=True,
                              retime="auto", strategies="default", helion_effort="full",
                              helion_in_process=False)
    jobs = ttq.fanout_jobs(args, ["a", "b", "c"], [300.0] * 3, [135.0, 135.0], "acfs")
    by = {j.name: j for j in jobs}

    def outcome(name: str, **extra: object) -> dict:
        return {"name": name, "cmd": by[name].cmd, "returncode": 0, **extra}

    earlier = [outcome("a.paretotune"), outcome("a.other"), outcome("a"), outcome("b.paretotune"),
               outcome("b.other", error="killed at the deadline (560 s)", returncode=-9),
               outcome("b", skipped="after b.other, which did not end with exit code 0"),
               outcome("c.paretotune", returncode=1)]
    other_args = {**outcome("c.other"), "cmd": [*by["c.other"].cmd[:-1], str(tmp_path / "elsewhere")]}
    (tmp_path / "fanout.jsonl").write_text(json.dumps({"jobs": earlier}) + "\n" + json.dumps({"jobs": [other_args]}))
    for name in ("a.paretotune", "a.other", "a", "b.paretotune", "b.other", "c.other"):
        (tmp_path / "parts" / name).mkdir(parents=True)
        (tmp_path / "parts" / name / "ttq.json").write_text("{}")
    (tmp_path / "parts" / "a" / "ttq.json").unlink()  # deleted: run again

    left, done = ttq.done_before(tmp_path, ttq.fanout_jobs(args, ["a", "b", "c"], [300.0] * 3, [135.0, 135.0], "acfs"))
    assert done == ["a.paretotune", "a.other", "b.paretotune"]
    assert {j.name: j.after for j in left} == {"a": (), "b.other": (), "b": ("b.other",), "c.paretotune": (),
                                               "c.other": (), "c": ("c.paretotune", "c.other")}


def test_every_call_on_one_table_gives_helion_the_same_acf_list(ttq: ModuleType, tmp_path: Path) -> None:
    """Helion's 8 CompileIQ samples are drawn once per results folder: a later call (or a later command of the
    same call) reuses them, so every kernel of the table is tuned with one list and resumed jobs keep their
    arguments. A folder left half-written is not taken."""
    (tmp_path / "helion_acfs_000000").mkdir()
    (tmp_path / "helion_acfs_000000" / "one.acf").write_text("x")  # not a whole list
    first = ttq.helion_acf_list(tmp_path, "compileiq")
    assert len(first) == ttq.HELION_ACFS and all(Path(p).read_bytes() for p in first)
    assert Path(first[0]).parent.name != "helion_acfs_000000"
    assert ttq.helion_acf_list(tmp_path, "compileiq") == first


def test_the_merge_orders_parts_by_when_their_commands_ran_not_by_file_times(ttq: ModuleType, tmp_path: Path) -> None:
    """A copy or a checkout gives every part a new file time: the re-timing's part (started after its arms ended)
    still wins over the arms' own parts, and an arm run again after a re-timing replaces the re-timed one."""
    def part(job: str, date: str, tool: str, retimed: bool) -> None:
        folder = tmp_path / "parts" / job
        folder.mkdir(parents=True)
        one = {**arm(tool), **({"budgets": ["60"], "best_by": {"60": {"retimed": {"speedup": 1.02}}}} if retimed
                               else {})}
        (folder / "ttq.json").write_text(json.dumps({"date": date, "budgets_s": [60.0], "kernels": {
            "k": {"arms": [one]}}}))

    part("k", "2026-12-05T03:55:00Z", "paretotune-default", retimed=True)  # written first here, ran last there
    part("k.paretotune", "2026-12-05T03:02:00Z", "paretotune-default", retimed=False)
    part("j", "2026-12-05T03:55:00Z", "helion-autotune-full", retimed=True)
    part("j.other", "2026-12-05T04:30:00Z", "helion-autotune-full", retimed=False)  # run again since
    arms = {a["tool"]: a for a in ttq.merge_parts(tmp_path)["kernels"]["k"]["arms"]}
    assert arms["paretotune-default"]["best_by"]["60"]["retimed"]["speedup"] == 1.02
    assert "best_by" not in arms["helion-autotune-full"]


def test_a_folder_whose_runs_are_packed_is_refused_until_unpacked(ttq: ModuleType, tmp_path: Path) -> None:
    """Between sessions the raw runs live in runs.tar.xz: the next call must not draw a new Helion ACF list (and
    run every Helion arm again) or re-time arms without their ACF files; it says how to unpack, exit 2. The table
    itself (--merge) needs only the parts."""
    import tarfile

    out = tmp_path / "ttq"
    (out / "helion_acfs_1").mkdir(parents=True)
    (out / "helion_acfs_1" / "a.acf").write_text("x")
    with tarfile.open(out / "runs.tar.xz", "w:xz") as tar:
        tar.add(out / "helion_acfs_1", arcname="helion_acfs_1")
    (out / "helion_acfs_1" / "a.acf").unlink()
    cmd = [sys.executable, str(BENCHMARKS / "bench_time_to_quality.py"), "--out", str(out), "--kernels",
           "helion_softmax", "--check"]
    refused = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False,
                             env={**os.environ, "PYTHONPATH": str(BENCHMARKS.parent)})
    assert refused.returncode == 2 and f"tar -xJf {out / 'runs.tar.xz'} -C {out}" in refused.stderr
    assert not (out / "helion_softmax").exists() and not list(out.glob("helion_acfs_*/*.acf"))  # nothing drawn
    subprocess.run(["tar", "-xJf", str(out / "runs.tar.xz"), "-C", str(out)], check=True)
    ttq.packed(out)  # unpacked: no refusal


def test_a_part_removed_to_be_run_again_is_not_asked_for(ttq: ModuleType, tmp_path: Path) -> None:
    """A kernel begun on one GPU model and run again whole on another: its part folder is deleted, and its packed
    run is not asked for; a part still there with its run not unpacked still is."""
    import tarfile

    run = tmp_path / "parts" / "k.paretotune" / "k" / "default" / "run"
    run.mkdir(parents=True)
    (run / "results.jsonl").write_text("{}\n")
    with tarfile.open(tmp_path / "runs.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "parts", arcname="parts")
    (run / "results.jsonl").unlink()
    with pytest.raises(SystemExit) as refused:
        ttq.packed(tmp_path)  # its part is there: not unpacked
    assert refused.value.code == 2
    import shutil

    shutil.rmtree(tmp_path / "parts" / "k.paretotune")
    ttq.packed(tmp_path)  # removed on purpose


def test_the_gpu_models_are_read_from_nvidia_smi(common: ModuleType, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The models come from ``nvidia-smi -L`` (no CUDA context), as torch's ``get_device_name`` names them."""
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1a2b)'\n"
                    "echo 'GPU 1: NVIDIA H200 (UUID: GPU-3c4d)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    assert common.host_gpu_names() == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] and common.host_gpus() == 2
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert common.host_gpu_names() == [] and common.host_gpus() == 0


def test_the_cuda_context_look_places_each_holder_in_the_arms_process_tree(common: ModuleType, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Which of an arm's processes hold a CUDA context: ``nvidia-smi --query-compute-apps`` lists the holders on the
    host, the arm's tree is read from /proc. A real tree (a campaign process, a server under it, two workers under
    that) and a stand-in nvidia-smi that names the campaign, one worker and a process outside the tree."""
    import time

    script = ("import subprocess, sys, time\n"
              "if sys.argv[1] == '0':\n"
              "    subprocess.Popen([sys.executable, __file__, '1'])\n"
              "elif sys.argv[1] == '1':\n"
              "    [subprocess.Popen([sys.executable, __file__, '2']) for _ in range(2)]\n"
              "time.sleep(60)\n")
    tree_py = tmp_path / "tree.py"
    tree_py.write_text(script)
    root = subprocess.Popen([sys.executable, str(tree_py), "0"], start_new_session=True)
    try:
        for _ in range(100):  # until all four are up
            depth = common.process_tree(root.pid, common.process_parents())
            if len(depth) == 4:
                break
            time.sleep(0.1)
        assert sorted(depth.values()) == [0, 1, 2, 2]
        worker = next(pid for pid, d in depth.items() if d == 2)
        outsider = os.getpid()
        fake = tmp_path / "bin" / "nvidia-smi"
        fake.parent.mkdir()
        fake.write_text(f"#!/bin/sh\necho '{root.pid}, 512'\necho '{worker}, 1024'\necho '{outsider}, 600'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
        look = common.cuda_context_holders(root.pid)
    finally:
        os.killpg(root.pid, 9)
        root.wait()
    assert look is not None and look["tree"] == 4 and look["by_depth"] == {"0": 1, "1": 1, "2": 2}
    assert look["holding"] == sorted([{"pid": root.pid, "depth": 0, "mib": 512.0, "children": 1},
                                      {"pid": worker, "depth": 2, "mib": 1024.0, "children": 0}],
                                     key=lambda h: h["pid"])
    assert look["others"] == 1
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert common.cuda_context_holders(root.pid) is None  # no nvidia-smi: no look


def test_a_kernel_begun_on_one_gpu_model_is_not_continued_on_another(ttq: ModuleType, tmp_path: Path) -> None:
    """A table recorded over calls that land on different machines: a kernel whose arms ran on an H200 is not
    re-timed (nor its other arm searched) on an H100; a kernel with no parts yet runs on whatever came, and on the
    model its parts ran on everything runs. The re-timing itself refuses arms from another model too."""
    import argparse

    args = argparse.Namespace(out=tmp_path, budgets="60,120", workers=8, rounds=15, split_arms=True,
                              retime="auto", strategies="default", helion_effort="full",
                              helion_in_process=False)
    jobs = ttq.fanout_jobs(args, ["pretuned_softmax", "pretuned_scaled_mm"], [320.0] * 2, [135.0, 135.0], "acfs")
    part = tmp_path / "parts" / "pretuned_softmax.paretotune"
    part.mkdir(parents=True)
    (part / "ttq.json").write_text(json.dumps({"gpu": "NVIDIA H200", "kernels": {}}))
    kept, why = ttq.elsewhere(tmp_path, jobs, {"NVIDIA H100 80GB HBM3"})
    assert [j.name for j in kept] == ["pretuned_scaled_mm.paretotune", "pretuned_scaled_mm.other",
                                      "pretuned_scaled_mm"]
    assert sorted(why) == ["pretuned_softmax", "pretuned_softmax.other", "pretuned_softmax.paretotune"]
    assert why["pretuned_softmax"] == "its kernel's parts ran on NVIDIA H200; this host has NVIDIA H100 80GB HBM3"
    assert ttq.elsewhere(tmp_path, jobs, {"NVIDIA H200"}) == (jobs, {})
    assert ttq.elsewhere(tmp_path, jobs, set()) == (jobs, {})  # no GPU named: nothing to compare
    merged: dict = {"kernels": {}}
    ttq.fold_arms(merged, {"gpu": "NVIDIA H200", "kernels": {"k": {"arms": [arm("paretotune-default")]}}})
    arms = merged["kernels"]["k"]["arms"]
    assert arms[0]["gpu"] == "NVIDIA H200"  # a part written before arms carried their model: the part's
    ttq.same_gpu(arms, "NVIDIA H200")
    with pytest.raises(RuntimeError, match="the arms ran on NVIDIA H200 and this GPU is NVIDIA H100 80GB HBM3"):
        ttq.same_gpu(arms, "NVIDIA H100 80GB HBM3")


def test_a_kernel_begun_on_another_model_can_be_run_whole_here(ttq: ModuleType, tmp_path: Path) -> None:
    """``--redo-other-gpu WHY``: a kernel whose parts ran on an H200 has every part moved to superseded/WHY/ on an
    H100, after which all its jobs run there (its recorded arm no longer counts as done); another kernel whose name
    begins the same, or whose parts ran here, is not touched. ``--check`` moves nothing; a name already in the
    folder is refused (exit 2) with nothing moved."""
    import argparse

    args = argparse.Namespace(out=tmp_path, budgets="60,120", workers=8, rounds=15, split_arms=True,
                              retime="auto", strategies="default", helion_effort="full",
                              helion_in_process=False)
    names = ["pretuned_rms_norm", "pretuned_rms_norm_dynamic_per_token_quant"]
    jobs = ttq.fanout_jobs(args, names, [320.0] * 2, [135.0, 135.0], "acfs")
    ours = next(j for j in jobs if j.name == "pretuned_rms_norm.paretotune")
    (tmp_path / "fanout.jsonl").write_text(json.dumps({"jobs": [{"cmd": ours.cmd, "returncode": 0}]}) + "\n")
    parts = tmp_path / "parts"
    for name, gpu in (("pretuned_rms_norm.paretotune", "NVIDIA H200"),
                      ("pretuned_rms_norm_dynamic_per_token_quant.paretotune", "NVIDIA H100 80GB HBM3")):
        (parts / name).mkdir(parents=True)
        (parts / name / "ttq.json").write_text(json.dumps({"gpu": gpu, "kernels": {}}))
        (parts / f"{name}.log").write_text("log\n")
    h100 = {"NVIDIA H100 80GB HBM3"}
    expected = ["pretuned_rms_norm.paretotune", "pretuned_rms_norm.paretotune.log"]

    assert ttq.redo_here(tmp_path, names, h100, "h200_arms", dry=True) == expected
    assert (parts / "pretuned_rms_norm.paretotune").is_dir() and not (tmp_path / "superseded").exists()
    assert ttq.redo_here(tmp_path, names, set(), "h200_arms", dry=False) == []  # no GPU named: nothing to compare
    assert ttq.redo_here(tmp_path, names, h100, "h200_arms", dry=False) == expected
    aside = tmp_path / "superseded" / "h200_arms"
    assert sorted(p.name for p in aside.iterdir()) == expected
    assert sorted(p.name for p in parts.iterdir()) == ["pretuned_rms_norm_dynamic_per_token_quant.paretotune",
                                                       "pretuned_rms_norm_dynamic_per_token_quant.paretotune.log"]
    left, done = ttq.done_before(tmp_path, ttq.fanout_jobs(args, names, [320.0] * 2, [135.0, 135.0], "acfs"))
    kept, why = ttq.elsewhere(tmp_path, left, h100)
    assert done == [] and why == {}
    assert [j.name for j in kept][:3] == ["pretuned_rms_norm.paretotune", "pretuned_rms_norm.other",
                                          "pretuned_rms_norm"]

    (parts / "pretuned_rms_norm.other").mkdir()  # an H200 part again, its name already aside
    (parts / "pretuned_rms_norm.other" / "ttq.json").write_text(json.dumps({"gpu": "NVIDIA H200"}))
    (aside / "pretuned_rms_norm.other").mkdir()
    with pytest.raises(SystemExit) as stop:
        ttq.redo_here(tmp_path, names, h100, "h200_arms", dry=False)
    assert stop.value.code == 2 and (parts / "pretuned_rms_norm.other" / "ttq.json").exists()
    assert ttq.folder_name("h200_arms") == "h200_arms"
    for bad in ("../x", "a/b", ".hidden", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            ttq.folder_name(bad)


def test_helion_without_its_guards_changes_its_arm_alone(ttq: ModuleType, tmp_path: Path) -> None:
    """``--helion-in-process`` reaches Helion's arm and nothing else: the paretotune arm and the re-timing keep
    the commands an earlier call ran, so a table whose Helion arms run again with other guards does not search
    again with paretotune."""
    import argparse

    def jobs(in_process: bool) -> dict[str, list[str]]:
        args = argparse.Namespace(out=tmp_path, budgets="60,120", workers=8, rounds=15, split_arms=True,
                                  retime="auto", strategies="default", helion_effort="full",
                                  helion_in_process=in_process)
        return {j.name: j.cmd for j in ttq.fanout_jobs(args, ["k"], [300.0], [135.0, 135.0], "acfs")}

    guarded, in_process = jobs(False), jobs(True)
    assert "--helion-in-process" in in_process["k.other"] and "--helion-in-process" not in guarded["k.other"]
    assert in_process["k.paretotune"] == guarded["k.paretotune"] and in_process["k"] == guarded["k"]
