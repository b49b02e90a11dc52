"""The run plan's estimate against the wall time measured, per notebook and in all (issue 16: within
25% for `make figures PROFILE=quick` and for the default profile on the reference machine).

Reads this device's history (data/history/timings.jsonl: every notebook `make figures` finished,
with the model's estimate at the time) and takes, per notebook, the newest completed run of the
profile on the target; prints the model's estimate, the measured time and their ratio, and the
totals. A profile whose notebooks were not all measured says which are missing.

`--history FILE` reads other history files instead (repeatable): the reference machine's history
is kept in benchmarks/history/ because a default-profile run outlasts one working session there and
its machines come fresh, so the profile is measured notebook by notebook across sessions.

`--model now` compares today's model instead of the one recorded when the run was planned (after
a recalibration): it re-plans each notebook as `make figures` does by default, with the profile and the
runtimes it ran (or the parameters the run recorded), and says where the points differ.

    python benchmarks/plan_accuracy.py [--profile quick] [--target local] [--since 2026-11-25T06:00]
                                       [--until 2026-11-25T07:00]
                                       [--model recorded|now] [--history FILE ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgebench.drivers import plan
from edgebench.experiments import EXPERIMENTS

TOLERANCE = 0.25


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--target", default="local")
    ap.add_argument("--since", default="", help="only runs finished at or after this UTC time (ISO)")
    ap.add_argument("--until", default="~", help="only runs finished before this UTC time (ISO)")
    ap.add_argument("--model", choices=("recorded", "now"), default="recorded",
                    help="the estimate recorded with the run, or today's model of the same work")
    ap.add_argument("--history", action="append", type=Path, default=[],
                    help="a timings.jsonl to read instead of this device's (repeatable)")
    args = ap.parse_args()
    entries = [e for path in args.history for e in plan.read_history(path)] if args.history else plan.history()
    entries.sort(key=lambda e: str(e.get("finished_at", "")))
    newest: dict[str, dict] = {}
    for e in entries:
        if (e.get("profile") == args.profile and e.get("target") == args.target and e.get("status") == "completed"
                and args.since <= str(e.get("finished_at", "")) < args.until):
            newest[e["experiment"]] = e
    if not newest:
        where = ", ".join(map(str, args.history)) or plan.history_path()
        print(f"no completed {args.profile} runs on {args.target} in {where}; "
              f"run `make figures PROFILE={args.profile}` first")
        return 1
    print(f"{'notebook':<22} {'model':>9} {'measured':>9} {'ratio':>6}  runtimes")
    model = measured = 0.0
    for name in EXPERIMENTS:
        e = newest.get(name)
        if not e:
            continue
        estimate, why = (e["model_s"], "") if args.model == "recorded" else model_now(name, e)
        model += estimate
        measured += e["seconds"]
        print(f"{name:<22} {plan.duration(estimate):>9} {plan.duration(e['seconds']):>9} "
              f"{estimate / e['seconds']:>6.2f}  {','.join(e['runtimes'])}  ({e['finished_at'][:16]}){why}")
    missing = [n for n in EXPERIMENTS if n not in newest]
    ratio = model / measured
    print(f"{'total':<22} {plan.duration(model):>9} {plan.duration(measured):>9} {ratio:>6.2f}")
    if missing:
        print(f"not measured in this profile: {', '.join(missing)}")
    ok = abs(ratio - 1) <= TOLERANCE
    print(f"plan vs measured: {ratio:.2f}x ({'within' if ok else 'outside'} {TOLERANCE:.0%})")
    return 0 if ok and not missing else 1


def model_now(experiment: str, entry: dict) -> tuple[float, str]:
    """Today's model of the run's work: re-planned with the parameters the run was given (runs
    recorded before they were kept: what `make figures` passes by default, every app, with the
    profile and runtimes they ran; a different point count then shows other settings or a
    recount)."""
    from edgebench.drivers.figures import experiment_of, notebooks, parameters_for
    nb = next(nb for nb in notebooks() if experiment_of(nb) == experiment)
    params = entry.get("params") or parameters_for(nb, {
        "target": entry["target"], "profile": entry["profile"], "apps": "all", "runtimes": ",".join(entry["runtimes"])})
    work = plan.make_plan(nb, params, list(entry["runtimes"]), data_dir=Path("/nonexistent")).work
    why = f"  {work.points} points now, {entry['points']} then" if work.points != entry["points"] else ""
    return work.seconds, why

if __name__ == "__main__":
    sys.exit(main())
