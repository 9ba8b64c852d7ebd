"""``run`` starts its worker processes while the kernel is imported and checked, and hands the loop the adapter
the checks built. Real campaign, real pool, no GPU (a static campaign: the pool is the whole evaluator)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paretotune.campaign.load import campaign_from_text, load_campaign
from paretotune.errors import UserError
from paretotune.runner import loop, session
from paretotune.store.run_dir import RunDir
from paretotune.toolchain.ptxas import export_for_triton, find_ptxas

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


@pytest.fixture
def ptxas() -> Any:
    found = find_ptxas()
    export_for_triton(found)
    return found


def test_loop_reuses_the_adapter_the_checks_built(tmp_path: Path, ptxas: Any, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text = QUICKSTART.read_text().replace("generations: 4", "generations: 1")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")

    def no_second_adapter(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the loop made its own adapter")

    monkeypatch.setattr(loop, "make_adapter", no_second_adapter)
    assert session.start_and_execute(campaign, tmp_path / "run", ptxas, quiet=True) == 0
    meta = RunDir(tmp_path / "run").meta()
    assert set(meta["start_s"]) == {"process_to_run", "workers_started", "checks", "kernel_import",
                                    "baselines_and_space"}
    assert {"trial_import", "import", "adapter", "heuristic", "space_and_checks"} <= set(
        meta["kernel_import_s"])  # the kernel import's own steps (the trial's phases where it ran one)
    assert "where the time went: before the loop" in capsys.readouterr().out


def test_a_failed_check_kills_the_early_workers_and_leaves_nothing(tmp_path: Path, ptxas: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel file raises at import: the trial import refuses it after the workers were started."""
    (tmp_path / "broken.py").write_text("raise RuntimeError('broken at import')\n")
    text = QUICKSTART.read_text().replace("paretotune.kernels.bundled.softmax:triton_softmax",
                                          f"{tmp_path / 'broken.py'}:kernel")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    workers: list[Any] = []
    real = session.start_workers_early

    def keep(*args: Any) -> Any:
        evaluator = real(*args)
        evaluator.pool._starting.join()  # start() spawns them in a thread, while the checks go on
        workers.extend(evaluator.pool._executor._processes.values())  # spawned by start(), before the checks
        return evaluator

    monkeypatch.setattr(session, "start_workers_early", keep)
    with pytest.raises(UserError, match="broken at import"):
        session.start_and_execute(campaign, tmp_path / "run", ptxas, quiet=True)
    assert not (tmp_path / "run").exists()
    assert len(workers) == 2 and not any(p.is_alive() for p in workers)  # quickstart's 2 workers, killed


def test_an_existing_out_folder_is_not_read_before_it_is_claimed(tmp_path: Path, ptxas: Any) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "something").write_text("x")
    campaign = load_campaign(QUICKSTART)
    assert session.start_workers_early(campaign, ptxas, RunDir(out), []) is None


def test_the_wall_clock_budget_counts_the_start_up(tmp_path: Path, ptxas: Any) -> None:
    """``search.wall_clock_s`` is the user's wall time: a command that spent the budget before the loop (here a
    pretended process age) proposes nothing after the baseline; the checkpoint's elapsed time includes it."""
    from paretotune.store.checkpoint import read_checkpoint

    text = QUICKSTART.read_text().replace("generations: 4", "generations: 1\n  wall_clock_s: 600")
    campaign = campaign_from_text(text, tmp_path / "campaign.yaml")
    assert campaign.spec.search.wall_clock_s == 600
    assert session.start_and_execute(campaign, tmp_path / "late", ptxas, quiet=True, spent_s=601.0) == 0
    late = RunDir(tmp_path / "late")
    assert [r.is_baseline for r in late.records()] == [True]
    cp = read_checkpoint(tmp_path / "late")
    assert cp is not None and cp.evaluated == 0 and cp.elapsed_s > 601.0
    assert late.meta()["start_s"]["process_to_run"] == 601.0
    assert session.start_and_execute(campaign, tmp_path / "early", ptxas, quiet=True, spent_s=1.0) == 0
    assert len(RunDir(tmp_path / "early").records()) > 1  # the same campaign with its budget left searches


def test_the_command_s_age_leaves_out_what_ran_before_it_in_its_process() -> None:
    """A shell that runs its setup and then replaces itself with the command (``sh -c "setup && paretotune run"``
    does so with its last command) keeps one process: the setup must not count against the wall clock."""
    import subprocess
    import sys

    code = "from paretotune.runner.session import process_age_s; print(process_age_s())"
    out = subprocess.run(["bash", "-c", f"sleep 3; exec {sys.executable} -c '{code}'"], check=True, timeout=120,
                         capture_output=True, text=True)
    assert 0 <= float(out.stdout) < 3  # /proc's start time of the process said 3 s and more
