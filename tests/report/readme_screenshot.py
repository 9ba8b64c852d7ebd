"""The README's picture of the report: the top of the CPU quickstart's report in headless Chromium.

``python -m tests.report.readme_screenshot`` runs configs/quickstart.yaml (seed 0: the same records every run),
writes its report, screenshots the page's first screen into docs/img/quickstart-front.png and records beside it
(quickstart-front.json) what that screen shows, as data, with the PNG's hash. The browser test
(test_report_chromium.py) runs the same steps and checks the recorded data against the current report, so a
change to what the report shows fails until the picture is made again.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.browsers import find_browser

REPO = Path(__file__).resolve().parents[2]
PICTURE = REPO / "docs" / "img" / "quickstart-front.png"
RECORD = PICTURE.with_suffix(".json")
WINDOW = (1200, 1000)  # the first screen: the summary and the first trade-off plot
HEADER_PX = 110  # the run's folder and creation time: differ per run, left out of comparisons


def quickstart_report(folder: Path) -> Path:
    """Run the quickstart as the README does and write its report; returns the run's folder."""
    env = dict(os.environ)
    env.setdefault("CIQ_SEARCH_SPACES_DIR", str(REPO.parent / "shared" / "compileiq"))
    for args in (["run", str(REPO / "configs" / "quickstart.yaml"), "--out", "runs/quickstart", "--quiet"],
                 ["report", "runs/quickstart", "--no-png"]):
        done = subprocess.run([sys.executable, "-m", "paretotune.cli", *args], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
    return folder / "runs" / "quickstart"


def screenshot(page: Path, out: Path, chromium: str) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(out.parent))  # chromium writes a profile under HOME
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
                    "--hide-scrollbars", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=20000",
                    f"--user-data-dir={out.parent / 'profile'}", f"--screenshot={out}", page.resolve().as_uri()],
                   capture_output=True, text=True, timeout=180, env=env, check=True)
    return out


def shown(run: Path) -> dict[str, Any]:
    """What the first screen shows, as data: the summary (but the toolchain's versions, which differ per
    machine) and the first trade-off plot's points and baseline."""
    from paretotune.pareto.convention import RULE
    from paretotune.report import load_report_data

    data = load_report_data(run)
    s = data.summary
    pair = data.pairs[0]
    points = pair.points.sort_values(["x", "y"])
    return {
        "kernel": s.kernel, "shapes": s.shapes, "objectives": [list(o) for o in s.objectives], "budget": s.budget,
        "target": s.target, "seed": s.seed,
        "evaluations": [s.n_evaluated, s.n_failed, s.n_excluded, s.n_front],
        "hypervolume": f"{s.hypervolume:.4g}", "numbers": RULE, "baseline": data.baseline,
        "constant": data.notes.get("constant", ""),
        "plot": {"x": pair.x.column, "y": pair.y.column, "baseline": [float(v) for v in pair.baseline],
                 "points": [[float(r["x"]), float(r["y"]), int(r["front"]), int(r["count"])]
                            for _, r in points.iterrows()]},
    }


def thumbnail(png: Path) -> list[float]:
    """The screen below the header, grey, averaged over 40 x 30 blocks: layout and plot, not font details."""
    from PIL import Image

    image = Image.open(png).convert("L")
    image = image.crop((0, HEADER_PX, image.width, image.height)).resize((40, 30), Image.Resampling.BOX)
    return [v / 255 for v in image.tobytes()]


def distance(a: Path, b: Path) -> float:
    """Mean absolute difference of the two thumbnails, 0 (same) to 1."""
    x, y = thumbnail(a), thumbnail(b)
    return sum(abs(p - q) for p, q in zip(x, y, strict=True)) / len(x)


def main() -> int:
    chromium = find_browser()
    if chromium is None:
        print("no Chromium on PATH: bash .ci/install-chromium.sh", file=sys.stderr)
        return 2
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run = quickstart_report(Path(tmp))
        shutil.copyfile(screenshot(run / "report" / "report.html", Path(tmp) / "shot" / "picture.png", chromium),
                        PICTURE)  # the browser's profile stays in the temporary folder
        record = {"png_sha256": hashlib.sha256(PICTURE.read_bytes()).hexdigest(), "window": list(WINDOW),
                  "shown": shown(run)}
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{PICTURE}\n{RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
