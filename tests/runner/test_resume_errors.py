"""What ``paretotune resume`` (and ``run --resume``) refuses: not a run, another campaign, another seed, an
in-flight ACF made for another architecture, a run made with another ptxas release. One line, exit code 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability.test_bad_environment import refused

from runner.conftest import Crash, write_campaign
from runner.test_resume import crash_after, start

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


def test_resume_refuses_what_it_cannot_continue(tmp_path: Path, fake_evaluator: object, ptxas: object,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a paretotune run directory" in refused(["resume", str(tmp_path)], capsys)
    assert "--resume needs --out" in refused(["run", str(QUICKSTART), "--resume"], capsys)
    out = tmp_path / "run"
    campaign = write_campaign(tmp_path)
    with pytest.raises(Crash):
        start(campaign, out, ptxas, on_record=crash_after(4))
    assert "holds a run of another campaign" in refused(["run", str(QUICKSTART), "--resume", "--out", str(out)],
                                                        capsys)
    assert "already holds a run; use 'paretotune resume" in refused(["run", str(campaign), "--out", str(out)], capsys)
    assert "the run was started with seed 7, not 8" in refused(
        ["run", str(campaign), "--resume", "--out", str(out), "--seed", "8"], capsys)
    from paretotune.store import RunDir

    with RunDir(out).lock():  # another process is running it
        assert f"{out}: in use by another paretotune process (pid " in refused(["resume", str(out)], capsys)
    # an in-flight ACF made for another architecture
    cp = json.loads((out / "checkpoint.json").read_text())
    sha = next(c["acf"] for c in cp["pending"] if c["acf"] and c["candidate_id"] not in
               {json.loads(line)["candidate_id"] for line in (out / "results.jsonl").read_text().splitlines()})
    record = out / "acf" / f"{sha}.json"
    record.write_text(record.read_text().replace('"sm_90"', '"sm_80"'))
    assert f"{sha}.acf: ACF made for sm_80, but the target is sm_90" in refused(["resume", str(out)], capsys)
    # the run was made with another ptxas release
    meta = json.loads((out / "run.json").read_text())
    meta["versions"]["ptxas"] = "13.2.51"
    (out / "run.json").write_text(json.dumps(meta))
    assert "the run was made with ptxas 13.2.51" in refused(["resume", str(out)], capsys)
