"""``paretotune run`` writes only into a folder it owns: it takes the run's lock before writing anything, never
writes into a folder that holds files (another run, running or not, or a user's folder), checks what it can
(the GPU a campaign needs) before the folder exists, and a start that fails before the first generation
leaves nothing behind."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from paretotune.store import RunDir
from reliability.conftest import QUICKSTART, refused, small_quickstart


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}



@pytest.fixture
def started_run(small_real_run: Path, tmp_path: Path) -> Path:
    """Run A as it is right after its start: campaign.yaml and run.json written, no record yet."""
    out = Path(shutil.copytree(small_real_run, tmp_path / "started"))
    for name in ("results.jsonl", "checkpoint.json", "progress.csv"):
        (out / name).unlink()
    for ckpt in out.glob("engine-*"):
        ckpt.unlink()
    return out


def _campaign_b(folder: Path) -> Path:
    """Another campaign: other objectives, so its run.json would differ from A's."""
    path = folder / "b.yaml"
    path.write_text(QUICKSTART.replace("  - theoretical_occupancy  # max\n", "")
                    .replace("pool_size: 10", "pool_size: 8").replace("generations: 4", "generations: 1"))
    return path


def test_concurrent_run_into_a_running_runs_folder_changes_nothing(started_run: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The audit's case: B into A's --out while A runs (before A wrote records) overwrote A's run.json and
    campaign.yaml, then was refused."""
    a = Path(shutil.copytree(started_run, tmp_path / "a"))
    before = _digest(a)
    with RunDir(a).lock():  # A is running
        line = refused(["run", str(_campaign_b(tmp_path)), "--out", str(a), "--quiet"], capsys)
    assert str(a) in line
    assert _digest(a) == before


def test_a_run_is_never_started_over_another(started_run: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    a = Path(shutil.copytree(started_run, tmp_path / "a"))
    before = _digest(a)
    assert "already holds a run" in refused(["run", str(_campaign_b(tmp_path)), "--out", str(a), "--quiet"], capsys)
    assert _digest(a) == before


@pytest.mark.parametrize("files", [{"campaign.yaml": "mine\n"}, {"run.json": "{}"}, {"notes.txt": "keep me"},
                                   {"sub/data.csv": "1,2"}])
def test_out_into_a_users_folder_with_files_isrefused(tmp_path: Path, files: dict[str, str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine"
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    before = _digest(out)
    line = refused(["run", str(_campaign_b(tmp_path)), "--out", str(out), "--quiet"], capsys)
    assert "already holds a run" in line or "not empty" in line
    assert _digest(out) == before and sorted(p.name for p in out.iterdir()) == sorted(
        Path(n).parts[0] for n in files)


def test_out_that_is_a_file_isrefused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "file"
    out.write_text("data")
    assert "is not a directory" in refused(["run", str(_campaign_b(tmp_path)), "--out", str(out)], capsys)
    assert out.read_text() == "data"


@pytest.mark.parametrize("existing", [False, True])
def test_a_failed_baseline_leaves_no_half_made_run(tmp_path: Path, existing: bool,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline cannot compile in 1 µs: the run fails after its folder was claimed, and takes it back."""
    campaign = small_quickstart(tmp_path, generations=1, pool_size=9, workers=1,
                                extra_evaluation="\n  compile_timeout_s: 0.000001")
    out = tmp_path / "out"
    if existing:
        out.mkdir()
    line = refused(["run", str(campaign), "--out", str(out), "--quiet"], capsys)
    assert "the baseline (the spec's default, no ACF) failed" in line and "nothing was kept" in line
    if existing:
        assert [p.name for p in out.iterdir() if p.name != ".lock"] == []
    else:
        assert not out.exists()
    # and a second `run` is not told to resume a run that never started
    line = refused(["run", str(campaign), "--out", str(out), "--quiet"], capsys)
    assert "use 'paretotune resume" not in line


def test_gpu_campaign_without_a_gpu_is_refused_before_its_folder_exists(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from paretotune.measure.gpu_check import gpu_problem

    if gpu_problem() is None:
        pytest.skip("this machine has a CUDA GPU")
    campaign = tmp_path / "gpu.yaml"
    campaign.write_text(QUICKSTART.replace("  - spill_bytes            # min\n", "  - runtime\n"))
    out = tmp_path / "out"
    line = refused(["run", str(campaign), "--out", str(out), "--quiet"], capsys)
    assert "objectives: runtime needs a CUDA GPU" in line
    assert not out.exists()
