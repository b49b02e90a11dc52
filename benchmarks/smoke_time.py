"""`make figures PROFILE=smoke` against its target (issue 36: every notebook, every available
runtime, in 10 minutes or less): the wall time of the whole run into a scratch data folder, each
notebook's time and its share outside measured points (from the run's own summary), and the load
average before, which says whether something else ran: a figure from a busy machine is no proof.

    python benchmarks/smoke_time.py [--runtimes auto] [--provision]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from edgebench.paths import PROJECT_ROOT

TARGET_S = 600.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default="auto")
    ap.add_argument("--provision", action="store_true", help="provision first, as make figures does")
    args = ap.parse_args()
    print(f"cores {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="edgebench-smoke-") as scratch:
        env = dict(os.environ, EDGEBENCH_DATA_DIR=f"{scratch}/data", EDGEBENCH_FIGURES_DIR=f"{scratch}/figures")
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--profile", "smoke", "--quiet",
                            "--runtimes", args.runtimes, *(["--provision"] if args.provision else [])],
                           cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - start
    for line in r.stderr.splitlines():
        m = re.match(r"== (\S+\.ipynb) done in (\d+) s .*?(\d+)% of the time outside them", line)
        if m:
            print(f"  {m[1]:<32} {m[2]:>4} s, {m[3]:>3}% outside measured points")
    print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-2000:])
    print(f"make figures PROFILE=smoke RUNTIMES={args.runtimes}: {wall:.0f} s wall, exit {r.returncode}; "
          f"{wall / TARGET_S:.2f}x the {TARGET_S:.0f} s target")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
