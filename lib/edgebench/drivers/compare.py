"""`make compare`: notebooks/compare.ipynb run headless into figures/compare/compare.ipynb, with its
figure beside it: the runs under data/ side by side as ratios to each device's native, beside the
papers' (edgebench.comparison computes them).

    python -m edgebench.drivers.compare [--experiments io_bound,iomt] [--targets pi1,pi2] [--runs latest|all|IDS]
        [--runtimes docker,lxd] [--profile any|quick|standard] [--metrics headline|all|NAMES]
"""

from __future__ import annotations

import argparse
import sys

from edgebench.comparison.runs import runs_index, select_runs
from edgebench.drivers.figures import run_headless
from edgebench.errors import ConfigError
from edgebench.experiments import NOTEBOOKS_DIR
from edgebench.paths import DATA_DIR
from edgebench.plotting.tables import NoData

NOTEBOOK = NOTEBOOKS_DIR / "compare.ipynb"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", default="all", help="'all' or e.g. time_to_ready,io_bound")
    ap.add_argument("--targets", default="all", help="'all' or devices, as their runs name them")
    ap.add_argument("--runs", default="latest", help="'latest', 'all' or run ids")
    ap.add_argument("--runtimes", default="all", help="'all' or those to show against native")
    ap.add_argument("--profile", default="any", help="'any', 'quick' or 'standard'")
    ap.add_argument("--metrics", default="headline", help="'headline', 'all' or metric names")
    ap.add_argument("--quiet", action="store_true", help="do not stream the notebook's output")
    args = ap.parse_args(argv)
    try:  # refuse a selection that matches nothing before a kernel starts
        index = runs_index()
        if index.empty:
            raise NoData(f"no runs under {DATA_DIR}: measure first (`make figures`), then compare")
        if select_runs(index, args.experiments, args.targets, args.runs, args.profile).empty:
            raise NoData("no completed run matches that selection (see `python -m edgebench.drivers.compare --help`)")
    except (ConfigError, NoData) as e:
        print(f"make compare: {e}", file=sys.stderr)
        return 2
    # The notebook's names for them: `target` and `run_id`, as in every notebook.
    params = dict(experiments=args.experiments, target=args.targets, run_id=args.runs, runtimes=args.runtimes,
                  profile=args.profile, metrics=args.metrics)
    return run_headless("compare", NOTEBOOK, params, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
