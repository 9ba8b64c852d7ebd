"""What the campaign loop's thread spends per record on the search engine: ask, tell and checkpoint save.

Why: on the H200 (2026-12-01e) a 200-candidate Helion softmax campaign left the GPU idle a third of the time
while the steady schedule committed CompileIQ's checkpoint after every record. This replays that loop's engine
calls without building or measuring anything: the bundled Helion softmax 4096 x 8192 space with CompileIQ ACFs
(pool 20, as ``bench_vs_helion.py``), up to 20 candidates in flight, one random score told per record, the
engine saved after every ask and every tell (the schedule before saves were spaced out), timed per call.

    CIQ_SEARCH_SPACES_DIR=../shared/compileiq python benchmarks/bench_engine_save.py --out OUT.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import statistics
import sys
import tempfile
import textwrap
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CAMPAIGN = textwrap.dedent("""\
    name: engine-save
    kernel: {source: "paretotune.kernels.bundled.helion_softmax:helion_softmax"}
    shapes: [{name: s, M: 4096, N: 8192, dtype: float16}]
    objectives: [registers]
    target: sm_90
    search: {engine: compileiq, generations: 10, pool_size: 20}
    """)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--records", type=int, default=200)
    args = parser.parse_args()
    from paretotune.campaign.load import load_campaign
    from paretotune.campaign.resolve import make_adapter
    from paretotune.runner.start import make_engine

    work = Path(tempfile.mkdtemp(prefix="engine-save-"))
    (work / "campaign.yaml").write_text(CAMPAIGN)
    campaign = load_campaign(work / "campaign.yaml")
    engine = make_engine(campaign, make_adapter(campaign), 1)
    rng = random.Random(0)
    pending: list[str] = []
    saves: list[tuple[int, float]] = []  # (records told so far, seconds)
    asks: list[float] = []
    tells: list[float] = []

    def save(told: int) -> None:
        t = time.perf_counter()
        engine.save(str(work / f"engine-{len(saves):06d}.ckpt"))
        saves.append((told, time.perf_counter() - t))

    for told in range(args.records):
        if len(pending) < 20:
            t = time.perf_counter()
            pending += [p.engine_id for p in engine.ask()]
            asks.append(time.perf_counter() - t)
            save(told)
        t = time.perf_counter()
        engine.tell({pending.pop(0): (rng.random(),)})
        tells.append(time.perf_counter() - t)
        save(told + 1)

    def median_save(lo: int, hi: int) -> float:
        chosen = [s for n, s in saves if lo < n <= hi]
        return round(statistics.median(chosen), 4) if chosen else float("nan")

    result = {
        "command": " ".join([sys.executable, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "compileiq": version("compileiq"),
                     "helion": version("helion"), "torch": version("torch")},
        "records": args.records,
        "ask_s_median": round(statistics.median(asks), 4), "asks": len(asks),
        "tell_s_median": round(statistics.median(tells), 4),
        "save_s_median_by_records_told": {"1-50": median_save(0, 50), "51-100": median_save(50, 100),
                                          "101-150": median_save(100, 150), "151-200": median_save(150, 200)},
        "save_s_total": round(sum(s for _, s in saves), 2), "saves": len(saves),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
