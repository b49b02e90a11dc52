"""`make verdicts`: every claim of data/reference/claims.csv judged on the latest run of its
experiment on TARGET, with its 95% interval (edgebench.claims has the rules).

    python -m edgebench.drivers.verdicts [--target NAME] [--profile any|quick|standard] [--papers 000,002]

runs notebooks/00_verdicts.ipynb headless into figures/verdicts/ (edgebench.drivers.figures'
runner), which writes verdicts.csv (claim_id, paper, verdict, effect, ci_low, ci_high, n, reason,
...) and verdicts.md (the table grouped by paper, each verdict linking the experiment's figures)
beside it; `make report` starts its front page with them.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from edgebench.claims import CLAIMS_FILE, CONTRADICTED, HOLDS, INCONCLUSIVE, NOT_MEASURABLE, Claim, judge, load_claims
from edgebench.drivers.figures import run_headless
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import EXPERIMENTS, NOTEBOOKS_DIR
from edgebench.paths import DATA_DIR, FIGURES_DIR
from edgebench.results import latest_run, load_meta, load_results
from edgebench.units import as_list

COLUMNS = ["claim_id", "paper", "verdict", "effect", "ci_low", "ci_high", "n", "reason", "repetitions_to_settle",
           "statement", "where", "experiment", "run", "figures"]


NOTEBOOK = NOTEBOOKS_DIR / "00_verdicts.ipynb"


def figure_of(claim: Claim) -> str:
    """The figure beside verdicts.md that shows the claim: the metric's own where its notebook
    draws several, else the experiment's main figure (its record's metric_figures and
    main_figure), else its experiment's folder."""
    if not claim.experiment:
        return ""
    experiment = EXPERIMENTS.get(claim.experiment)
    name = (experiment.metric_figures.get(claim.metric) or experiment.main_figure) if experiment else ""
    return f"../{claim.experiment}/{name}.png" if name else f"../{claim.experiment}/"


def verdicts(claims: list[Claim], target: str | None = None, data_dir: Path = DATA_DIR,
             profile: str = "any") -> pd.DataFrame:
    """One row per claim, judged on the latest run of its experiment (each run read once)."""
    runs: dict[str, tuple[pd.DataFrame, dict, str] | None] = {}
    out = []
    for claim in claims:
        if claim.experiment and claim.experiment not in runs:
            run_dir = latest_run(claim.experiment, target, profile, data_dir)
            runs[claim.experiment] = (load_results(run_dir), load_meta(run_dir), run_dir.name) if run_dir else None
        found = runs.get(claim.experiment)
        df, meta, run_id = found if found else (None, {}, "")
        emulated = (meta.get("target") or {}).get("emulated_device") or ""
        verdict = judge(claim, df, emulated)
        out.append({**asdict(verdict), "statement": claim.statement, "where": claim.where,
                    "experiment": claim.experiment, "run": run_id,
                    "figures": figure_of(claim)})
    return pd.DataFrame(out, columns=COLUMNS)


def _number(v) -> str:
    return "" if v is None or pd.isna(v) else f"{v:.3g}"


def markdown(table: pd.DataFrame) -> str:
    """The table grouped by paper: claim, verdict, effect [interval], n, why; a link to its figures."""
    lines = []
    for paper, rows in table.groupby("paper", sort=True):
        lines += [f"## Paper {paper}", "", "| claim | statement | verdict | effect [95% CI] | n | why |",
                  "|---|---|---|---|---|---|"]
        for r in rows.itertuples():
            effect = _number(r.effect) + (f" [{_number(r.ci_low)}, {_number(r.ci_high)}]" if _number(r.ci_low) else "")
            verdict = f"[{r.verdict}]({r.figures})" if r.figures else r.verdict
            if r.verdict == "inconclusive" and pd.notna(r.repetitions_to_settle):
                verdict += f" (~{int(r.repetitions_to_settle)} reps would settle it)"
            lines.append(f"| {r.claim_id} ({r.where}) | {r.statement} | {verdict} | {effect} | {r.n} | {r.reason} |")
        lines.append("")
    return "\n".join(lines)


def counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims per paper and verdict, every verdict a column (0 where none)."""
    out = table.groupby(["paper", "verdict"]).size().unstack(fill_value=0)
    return out.reindex(columns=[HOLDS, CONTRADICTED, INCONCLUSIVE, NOT_MEASURABLE], fill_value=0)


def judge_claims(target: str = "local", runtimes: str = "all", profile: str = "any", papers: str = "all",
                 run_id: str = "latest", claims_file: Path = CLAIMS_FILE, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """What the notebook shows: the claims (of those papers, about those runtimes) judged on the
    target's latest runs. Claims span experiments, so one run id cannot name their runs: `run_id`
    other than 'latest' is refused rather than ignored."""
    if run_id not in ("latest", ""):
        raise ConfigError(f"run_id={run_id!r}: verdicts judge each experiment's latest run on the target; "
                          "leave run_id at 'latest' (choose runs with target and profile)")
    claims = load_claims(claims_file)
    wanted_papers = as_list(papers, sorted({c.paper for c in claims}))
    wanted_runtimes = None if runtimes in ("all", "") else set(as_list(runtimes, []))
    chosen = [c for c in claims if c.paper in wanted_papers
              and (wanted_runtimes is None or {c.a, c.b} - {""} <= wanted_runtimes)]
    if not chosen:
        raise ConfigError(f"no claim of papers {papers} about runtimes {runtimes}; widen `papers` or `runtimes`")
    return verdicts(chosen, target or None, data_dir, profile)


def save(table: pd.DataFrame, out: Path | None = None, answer_table: pd.DataFrame | None = None,
         answer_text: str = "") -> Path:
    """verdicts.csv and verdicts.md in figures/verdicts/ (or `out`), and edgebench's own answer
    (answer.csv, answer.md) when given."""
    out = Path(out or FIGURES_DIR / "verdicts")
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "verdicts.csv", index=False)
    (out / "verdicts.md").write_text("# Verdicts on the papers' claims\n\n" + markdown(table))
    if answer_table is not None:
        answer_table.to_csv(out / "answer.csv", index=False)
        (out / "answer.md").write_text("# edgebench's answer for this device\n\n" + answer_text + "\n")
    return out / "verdicts.csv"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="local", help="the device whose runs are judged, as its runs name it")
    ap.add_argument("--runtimes", default="all", help="'all' or the runtimes whose claims to judge")
    ap.add_argument("--profile", default="any", help="'any', or only runs made with 'quick' or 'standard'")
    ap.add_argument("--papers", default="all", help="'all' or papers such as 000,002")
    ap.add_argument("--tolerance", type=float, default=0.05,
                    help="edgebench's answer: the share of native's throughput and p99 a runtime may lose (0.05)")
    ap.add_argument("--quiet", action="store_true", help="do not stream the notebook's output")
    args = ap.parse_args(argv)
    try:  # a catalogue that does not load, or a selection of no claim, is refused before a kernel starts
        judge_claims(args.target, args.runtimes, args.profile, args.papers)
    except EdgebenchError as e:
        print(f"make verdicts: {e}", file=sys.stderr)
        return 2
    if not 0 < args.tolerance < 1:
        print(f"make verdicts: tolerance {args.tolerance:g} is not a share of native; give one such as 0.05",
              file=sys.stderr)
        return 2
    params = dict(target=args.target, runtimes=args.runtimes, profile=args.profile, papers=args.papers,
                  tolerance=args.tolerance)
    return run_headless("verdicts", NOTEBOOK, params, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
