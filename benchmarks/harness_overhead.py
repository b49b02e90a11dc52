"""How much of each notebook's wall time is the harness (issue 36: 10% or less under the default
profile), per notebook and in all, from the history `make figures` keeps.

The share is the notebook's wall time outside its measured points (connecting, building and
packaging, image imports, VM kits, waits, teardown, the kernel and the figures), as the driver
records it when a notebook ends (`harness_share` in data/history/timings.jsonl). Per notebook the
newest completed run of the profile on the target is taken; where an older run of it was recorded
with a share too, the first such run is printed beside it ("first"), so a change shows as before
and after. Notebooks without points (static footprint measures as it packages) print "-".

`--history FILE` reads other history files too (repeatable): the reference machine's default-profile
runs span sessions on fresh machines, so they are kept in benchmarks/history/.

    python benchmarks/harness_overhead.py [--profile standard] [--target local] [--history FILE ...]

Exit status 0 when every notebook of the profile has a share and none is above the target.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgebench.drivers import plan
from edgebench.experiments import EXPERIMENTS

TARGET_SHARE = 0.10
# Measures as it packages: its notebook has no points, so no share ("-"), and is not missing.
NO_POINTS = {"static_footprint"}


def runs_with_share(entries: list[dict], profile: str, target: str) -> dict[str, list[dict]]:
    """Completed runs of the profile on the target that recorded a harness share (or have no
    points), per experiment, oldest first."""
    out: dict[str, list[dict]] = {}
    for e in sorted(entries, key=lambda e: str(e.get("finished_at", ""))):
        if (e.get("profile") == profile and e.get("target") == target and e.get("status") == "completed"
                and ("harness_share" in e or e["experiment"] in NO_POINTS)):
            out.setdefault(e["experiment"], []).append(e)
    return out


def share_text(e: dict | None) -> str:
    if e is None:
        return "-"
    share = e.get("harness_share")
    return "-" if share is None or not e.get("points_measured") else f"{share:.0%}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="standard")
    ap.add_argument("--target", default="local")
    ap.add_argument("--history", action="append", type=Path, default=[],
                    help="a timings.jsonl to read as well as this device's (repeatable)")
    args = ap.parse_args()
    entries = plan.history() + [e for path in args.history for e in plan.read_history(path)]
    found = runs_with_share(entries, args.profile, args.target)
    if not found:
        print(f"no completed {args.profile} runs on {args.target} with a harness share; run "
              f"`make figures PROFILE={args.profile}` first")
        return 1
    print(f"{'notebook':<20} {'wall':>8} {'points':>7} {'in points':>9} {'harness':>7} {'first':>6}  finished")
    wall = inside = 0.0
    over = []
    for name in EXPERIMENTS:
        runs = found.get(name)
        if not runs:
            continue
        e, first = runs[-1], (runs[0] if len(runs) > 1 else None)
        in_points = e.get("in_points_s")
        if e.get("points_measured"):
            wall += e["seconds"]
            inside += in_points or 0.0
            if (e.get("harness_share") or 0) > TARGET_SHARE:
                over.append(name)
        print(f"{name:<20} {plan.duration(e['seconds']):>8} {e.get('points_measured') or '-':>7} "
              f"{plan.duration(in_points) if in_points else '-':>9} {share_text(e):>7} {share_text(first):>6}"
              f"  {e['finished_at'][:16]}")
    missing = [n for n in EXPERIMENTS if n not in found]
    total = plan.harness_share(wall, inside) if wall else float("nan")
    print(f"{'total':<20} {plan.duration(wall):>8} {'':>7} {plan.duration(inside):>9} {total:>7.0%}")
    if over:
        print(f"above {TARGET_SHARE:.0%}: {', '.join(over)}")
    if missing:
        print(f"not measured with a share in this profile: {', '.join(missing)}")
    return 0 if not over and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
