"""`make verdicts`: every claim of data/reference/claims.csv judged on the latest run of its
experiment (on TARGET, if given), with its 95% interval (edgebench.claims has the rules).

    python -m edgebench.drivers.verdicts [--target NAME] [--out figures/verdicts]

writes verdicts.csv (claim_id, paper, verdict, effect, ci_low, ci_high, n, reason, ...) and
verdicts.md (the table grouped by paper, each verdict linking the experiment's figures), and
prints how many claims hold, are contradicted, inconclusive or not measurable here, per paper.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from edgebench.claims import CLAIMS_FILE, Claim, judge, load_claims
from edgebench.errors import EdgebenchError
from edgebench.paths import DATA_DIR, FIGURES_DIR
from edgebench.results import find_run, load_meta, load_results

COLUMNS = ["claim_id", "paper", "verdict", "effect", "ci_low", "ci_high", "n", "reason", "repetitions_to_settle",
           "statement", "where", "experiment", "run", "figures"]


def verdicts(claims: list[Claim], target: str | None = None, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """One row per claim, judged on the latest run of its experiment (each run read once)."""
    runs: dict[str, tuple[pd.DataFrame, dict, str] | None] = {}
    out = []
    for claim in claims:
        if claim.experiment and claim.experiment not in runs:
            try:
                run_dir = find_run(claim.experiment, "latest", data_dir, target=target)
                runs[claim.experiment] = (load_results(run_dir), load_meta(run_dir), run_dir.name)
            except EdgebenchError:
                runs[claim.experiment] = None
        found = runs.get(claim.experiment)
        df, meta, run_id = found if found else (None, {}, "")
        emulated = (meta.get("target") or {}).get("emulated_device") or ""
        verdict = judge(claim, df, emulated)
        out.append({**asdict(verdict), "statement": claim.statement, "where": claim.where,
                    "experiment": claim.experiment, "run": run_id,
                    "figures": f"../{claim.experiment}/" if claim.experiment else ""})
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


def summary(table: pd.DataFrame) -> str:
    counts = table.groupby(["paper", "verdict"]).size().unstack(fill_value=0)
    return counts.to_string()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=None, help="judge only this device's runs (default: the latest of any)")
    ap.add_argument("--out", type=Path, default=FIGURES_DIR / "verdicts")
    ap.add_argument("--claims", type=Path, default=CLAIMS_FILE)
    args = ap.parse_args(argv)
    try:
        table = verdicts(load_claims(args.claims), args.target)
    except EdgebenchError as e:
        print(f"make verdicts: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "verdicts.csv", index=False)
    (args.out / "verdicts.md").write_text("# Verdicts on the papers' claims\n\n" + markdown(table))
    print(summary(table))
    print(f"{len(table)} claims: {args.out / 'verdicts.csv'}, {args.out / 'verdicts.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
