"""`make test-fast` against its target (issue 34: under 2 minutes): wall and CPU seconds of the
unit tier, and beside it the same tier on one worker, measured in the same run, so the ratio
says what the workers bring whatever the machine. The load average before each says whether
something else ran (an emulated device, a test suite): a figure from a busy machine is no proof.

    python benchmarks/test_fast_time.py [--serial]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

from edgebench.paths import PROJECT_ROOT

TARGET_S = 120.0
TIER = ["-m", "not integration and not slow", "-q", "-p", "no:cacheprovider"]


def timed(extra: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the children, exit code) of one pytest run of the unit tier."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "pytest", *TIER, *extra], cwd=PROJECT_ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serial", action="store_true", help="also run the tier on one worker, for the ratio")
    args = ap.parse_args()
    print(f"cores {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    wall, cpu, rc = timed(["-n", "auto"])
    print(f"make test-fast (-n auto): {wall:.1f} s wall, {cpu:.1f} s CPU, exit {rc}; "
          f"{wall / TARGET_S:.2f}x the {TARGET_S:.0f} s target")
    if args.serial:
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        wall1, cpu1, rc1 = timed([])
        print(f"one worker: {wall1:.1f} s wall, {cpu1:.1f} s CPU, exit {rc1}; workers: {wall1 / wall:.2f}x faster")
    return rc


if __name__ == "__main__":
    sys.exit(main())
