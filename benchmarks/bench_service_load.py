"""Load on ``paretotune serve`` (issue 9): 50 small static campaigns queued, status endpoints polled at a
fixed rate while campaigns run; p50/p99 latency recorded. Goal: p99 < 100 ms at >= 50 requests/s.

Bounded and loopback only: a server on 127.0.0.1 with a fresh work directory, 50 submissions of the CPU
quickstart at generations 1 / pool_size 10 (the server runs one static campaign at a time, so most stay
queued), then ``--seconds`` of polling (default 30; the whole run stays under 60 s) that cycles through
``GET /campaigns``, ``GET /campaigns/{id}`` of a running, a queued and a finished campaign, and
``GET /campaigns/{id}/front`` of a finished one. Requests are paced on a fixed schedule from one client
(a late request is not skipped, so a slow answer shows as latency and a lower achieved rate, not hidden).

Run: ``CIQ_SEARCH_SPACES_DIR=... python benchmarks/bench_service_load.py`` (writes
benchmarks/results/service_load.json).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import httpx
import numpy as np
import yaml
from common import cpu_model, load_average

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS, RATE, GOAL_P99_MS = 50, 60.0, 100.0


def campaign_text(i: int) -> str:
    data = yaml.safe_load((ROOT / "configs" / "quickstart.yaml").read_text())
    data["search"].update(generations=1, pool_size=10)
    data["name"] = f"load-{i:02d}"
    data["seed"] = i
    return yaml.safe_dump(data, sort_keys=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="polling phase (default 30)")
    parser.add_argument("--rate", type=float, default=RATE, help="requests per second (default 60)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "service_load.json")
    args = parser.parse_args()
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="paretotune-load-"))
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    server = subprocess.Popen([sys.executable, "-m", "paretotune.cli", "serve", "--host", "127.0.0.1", "--port",
                               str(port), "--workdir", str(workdir / "work")], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        while True:
            try:
                if client.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
            if server.poll() is not None or time.monotonic() - started > 30:
                raise SystemExit(f"server did not start: {(workdir / 'server.log').read_text()[-2000:]}")
        t0 = time.perf_counter()
        ids = []
        for i in range(CAMPAIGNS):
            r = client.post("/campaigns", content=campaign_text(i), headers={"content-type": "application/yaml"})
            r.raise_for_status()
            ids.append(r.json()["id"])
        submit_s = time.perf_counter() - t0

        def pick() -> dict[str, list[str]]:
            by: dict[str, list[str]] = {}
            for c in client.get("/campaigns").json()["campaigns"]:
                by.setdefault(c["status"], []).append(c["id"])
            return by

        latencies: dict[str, list[float]] = {}
        statuses: dict[int, int] = {}
        n, interval = 0, 1.0 / args.rate
        poll_start = time.perf_counter()
        by = pick()
        while time.perf_counter() - poll_start < args.seconds:
            due = poll_start + n * interval
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            if n % 30 == 0:
                by = pick()
            kind = n % 5
            if kind == 0:
                name, path = "list", "/campaigns"
            elif kind == 1:
                name, path = "running", f"/campaigns/{(by.get('running') or ids)[0]}"
            elif kind == 2:
                name, path = "queued", f"/campaigns/{(by.get('queued') or ids)[-1]}"
            elif kind == 3 and by.get("done"):
                name, path = "done", f"/campaigns/{by['done'][-1]}"
            elif by.get("done"):
                name, path = "front", f"/campaigns/{by['done'][0]}/front"
            else:
                name, path = "one", f"/campaigns/{ids[n % len(ids)]}"
            t = time.perf_counter()
            r = client.get(path)
            latencies.setdefault(name, []).append((time.perf_counter() - t) * 1000)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            n += 1
        poll_s = time.perf_counter() - poll_start
        final = pick()
    finally:
        client.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()

    every = np.array([x for v in latencies.values() for x in v])

    def p(a: np.ndarray | list[float], q: int) -> float:
        return round(float(np.percentile(a, q)), 2)

    result = {
        "benchmark": "service_load",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
                    "load_average_after": load_average()},
        "versions": {d: version(d) for d in ("fastapi", "starlette", "uvicorn", "httpx", "pydantic")}
        | {"python": platform.python_version()},
        "campaigns_submitted": CAMPAIGNS, "submit_s": round(submit_s, 2),
        "campaigns_by_status_at_end": {k: len(v) for k, v in final.items()},
        "target_rate_rps": args.rate, "requests": int(every.size), "poll_s": round(poll_s, 2),
        "achieved_rate_rps": round(every.size / poll_s, 1), "http_status": statuses,
        "latency_ms": {"p50": p(every, 50), "p90": p(every, 90), "p99": p(every, 99),
                       "max": round(float(every.max()), 2)},
        "latency_ms_by_endpoint": {k: {"n": len(v), "p50": p(v, 50), "p99": p(v, 99)} for k, v in latencies.items()},
        "goal": {"p99_ms_below": GOAL_P99_MS, "rate_rps_at_least": 50},
        "wall_s": round(time.monotonic() - started, 1),
    }
    result["goal_met"] = result["latency_ms"]["p99"] < GOAL_P99_MS and result["achieved_rate_rps"] >= 50 \
        and set(statuses) == {200}
    shutil.rmtree(workdir, ignore_errors=True)  # kept (with server.log) only when the run fails
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
