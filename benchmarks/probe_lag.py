"""Probe detection lag: how long after the app starts listening the fair probe sees it ready.

For each of N native launches of go-http, lag = probe's ready time - the app's own clock
reading right after listen(). Both are CLOCK_REALTIME on the same machine. Target: median
<= 1 ms. For scale, the same is measured in the same run for the published method's 50 ms curl
polling (its readiness time is `date +%s%3N`, so millisecond resolution).

    python benchmarks/probe_lag.py [--launches 50] [--target local]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from edgebench.apps import APPS, place_app
from edgebench.runtimes import Limits
from edgebench.runtimes.base import PROBE_INTERVAL, parse_listen_line
from edgebench.runtimes.native import NativeRuntime
from edgebench.targets import connect
from edgebench.experiments.time_to_ready import published_command

TARGET_MEDIAN_MS = 1.0


def probe_lags(rt: NativeRuntime, artifact, n: int) -> list[float]:
    lags = []
    for i in range(n):
        instance, probe = rt.start(artifact, Limits(), 18500 + i % 50)
        try:
            listen = rt.listen_unix_ns(instance)
            lags.append((probe.ready_unix_ns - listen) / 1e6)
        finally:
            rt.stop(instance)
    return lags


def curl_lags(rt: NativeRuntime, artifact, n: int) -> list[float]:
    lags = []
    for i in range(n):
        plan = rt.launch_plan(artifact, Limits(), 18600 + i % 50)
        r = rt.target.run(published_command(plan), check=False)
        fields = r.stdout.split()
        pid = int(fields[3]) if fields and fields[0] == "ready" else None
        try:
            listen = parse_listen_line(rt.target.read_text(plan.stdout_path, missing_ok=True) or "")
            if pid and listen:
                lags.append(int(fields[2]) - listen / 1e6)
        finally:
            rt.stop_plan(plan, pid)
    return lags


def describe(values: list[float]) -> str:
    q = statistics.quantiles(values, n=10)
    return (f"n={len(values)} median={statistics.median(values):.3f} ms p90={q[-1]:.3f} ms "
            f"min={min(values):.3f} ms max={max(values):.3f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--target", default="local")
    args = ap.parse_args()
    target = connect(args.target)
    rt = NativeRuntime(target, f"bench-{os.getpid()}")
    try:
        artifact = rt.package(place_app(target, APPS["go-http"]))
        probe = probe_lags(rt, artifact, args.launches)
        curl = curl_lags(rt, artifact, max(10, args.launches // 5))
    finally:
        rt.cleanup()
        target.close()
    median = statistics.median(probe)
    print(f"probe (socket polling every {PROBE_INTERVAL}): {describe(probe)}")
    print(f"published (curl every 50 ms): {describe(curl)}")
    print(f"probe detection lag median {median:.3f} ms; target <= {TARGET_MEDIAN_MS} ms: "
          f"{'PASS' if median <= TARGET_MEDIAN_MS else 'FAIL'}; "
          f"{statistics.median(curl) / median:.0f}x less than the published method's")
    return 0 if median <= TARGET_MEDIAN_MS else 1


if __name__ == "__main__":
    sys.exit(main())
