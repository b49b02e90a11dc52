"""Overhead of edgebench's wrk driver: requests per second through the Wrk load generator (Lua done()
reporter, run through the target's shell) over a plain `wrk` of the same settings against the
same native go-http server, alternating, in the same run. Target: ratio >= 0.95.

    python benchmarks/wrk_driver_overhead.py [--rounds 5] [--duration 5] [--path /io]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

from edgebench.apps import APPS, place_app
from edgebench.runtimes import Limits
from edgebench.runtimes.native import NativeRuntime
from edgebench.targets import LocalTarget
from edgebench.tools.load import LoadSettings, Wrk

TARGET_RATIO = 0.95


def plain_wrk(url: str, s: LoadSettings) -> float:
    out = subprocess.run(["wrk", f"-t{s.threads}", f"-c{s.connections}", f"-d{s.duration_s}s",
                          f"--timeout={s.timeout_s}s", url], capture_output=True, text=True,
                         timeout=s.duration_s + 60, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--path", default="/io")
    args = ap.parse_args()
    target = LocalTarget()
    rt = NativeRuntime(target, f"bench-wrk-{os.getpid()}")
    settings = LoadSettings(threads=2, connections=32, duration_s=args.duration)
    plain, driver = [], []
    try:
        instance, _ = rt.start(rt.package(place_app(target, APPS["go-http"])), Limits(), 18990)
        url = instance.url + args.path
        gen = Wrk(target)
        gen.run(url, LoadSettings(threads=2, connections=32, duration_s=1))  # warm-up, discarded
        for i in range(args.rounds):
            # Alternate which goes first so drift favours neither.
            order = [("plain", lambda: plain_wrk(url, settings)),
                     ("driver", lambda: gen.run(url, settings).requests_per_second)]
            for name, measure in (order if i % 2 == 0 else order[::-1]):
                (plain if name == "plain" else driver).append(measure())
    finally:
        rt.cleanup()
    ratio = statistics.median(driver) / statistics.median(plain)
    print(f"plain wrk   req/s: {', '.join(f'{v:.0f}' for v in plain)} (median {statistics.median(plain):.0f})")
    print(f"driver      req/s: {', '.join(f'{v:.0f}' for v in driver)} (median {statistics.median(driver):.0f})")
    print(f"driver / plain = {ratio:.3f}; target >= {TARGET_RATIO}: {'PASS' if ratio >= TARGET_RATIO else 'FAIL'}")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
