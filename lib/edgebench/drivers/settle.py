"""`make settle`: measure again what the inconclusive claims need, until each is decided.

    python -m edgebench.drivers.settle [--target NAME] [--budget 2h] [--max-reps 20] [--papers 000,002]

It judges the claims on the target's latest runs (edgebench.drivers.verdicts), and for each claim
left inconclusive whose estimate says more repetitions would decide it, measures again only the
points that claim uses: its two runtimes under its conditions (a record's `focus`), as new
repetitions of the same run (edgebench.resume: the run is continued, its record takes the new
count). Then it judges again, and goes on until each claim is decided, needs more repetitions
than the cap, has had its looks, or the time budget is spent. A claim it gives up on says why.

Looking again and again at data that grows inflates false decisions: three looks at 95% would
decide wrongly about three times as often. So settle makes a fixed number of looks, at most
LOOKS per claim, and judges each at a stricter interval, 1 - 0.05 / (LOOKS + 1) (Bonferroni over
them and make verdicts' own look): see docs/verdicts.md. A run remembers which claims settle
looked at (meta.json's notes, `settle_looks`), and `make verdicts` judges those at the same
stricter interval ever after.

Progress per claim goes to the terminal; figures/verdicts/settle.csv keeps every look (claim,
run, repetitions before and after, the verdict, its interval, the seconds measured) and
settle.md the counts per paper before and after.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from edgebench.claims import (CLAIMS_FILE, CONFIDENCE_OF_A_LOOK, CONTRADICTED, HOLDS, INCONCLUSIVE, LOOKS, LOOKS_NOTE,
                              NOT_MEASURABLE, Claim, conditions_for, judge, load_claims, rows_where)
from edgebench.claims import band as claim_band
from edgebench.drivers.verdicts import counts, judged, read_run
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import EXPERIMENTS
from edgebench.paths import DATA_DIR, FIGURES_DIR
from edgebench.results import ended_points, load_meta, load_results, point_seconds, time_in_points, write_meta
from edgebench.units import as_list

MAX_REPETITIONS = 20
BUDGET = "2h"
COLUMNS = ["claim_id", "paper", "experiment", "run", "look", "reps_before", "reps_after", "n", "verdict", "effect",
           "ci_low", "ci_high", "confidence", "seconds", "why"]


def seconds_of(text: str) -> float:
    """'90m', '2h', '1h30m', '45s' or plain seconds -> seconds."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s", "", text):
        raise ConfigError(f"BUDGET={text!r}: give a time such as 90m, 2h or 1h30m")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


@dataclass
class Look:
    """One claim's look: what was measured for it and what the verdict became."""
    claim_id: str
    paper: str
    experiment: str
    run: str
    look: int
    reps_before: int
    reps_after: int
    n: int
    verdict: str
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    seconds: float
    why: str = ""


# -- what a claim needs ---------------------------------------------------------------------------

def focus_of(claims: list[Claim]) -> tuple:
    """The points claims use: each claim's runtimes under its conditions for that side, each once."""
    sides = [(runtime, conditions_for(c, side)) for c in claims
             for runtime, side in ((c.a, "a"), (c.b, "b")) if runtime]
    return tuple({(runtime, tuple(sorted(cond.items()))): (runtime, cond) for runtime, cond in sides}.values())


def repetitions_of(run_dir: Path) -> int:
    """The repetitions a run measured: its parsed `reps` (runs before that name recorded the parsed
    count as `repetitions`), else the highest repetition among its rows."""
    params = load_meta(run_dir).get("parameters") or {}
    recorded = params.get("reps") or params.get("repetitions")
    if recorded:
        return int(recorded)
    reps = pd.to_numeric(load_results(run_dir).get("rep", pd.Series(dtype=float)), errors="coerce")
    return int(reps.max()) if reps.notna().any() else 0


def repetitions_wanted(reps: int, n: int, to_settle: int) -> int:
    """The run's repetitions that would give the claim `to_settle` values, from the `n` it has
    at `reps` (a repetition may give a claim several values: one per app or network mode)."""
    per_rep = max(n / reps, 1e-9) if reps else 1
    return max(reps + 1, math.ceil(to_settle / per_rep))


def why_not_settled(verdict, band: tuple[float, float], reps: int, cap: int) -> str:
    """Why more repetitions will not be tried for an inconclusive verdict ('' when they will)."""
    if verdict.repetitions_to_settle is None:
        if verdict.effect is not None and not math.isfinite(verdict.effect or 0.0):
            return "its interval has no end (a value over zero), which more repetitions would not bound"
        return ("no difference to find: the effect sits on the claim's edge, so more repetitions would narrow "
                "the interval around it without deciding")
    wanted = repetitions_wanted(reps, verdict.n, verdict.repetitions_to_settle)
    if wanted <= cap:
        return ""
    low, high = band
    if math.isfinite(low) and math.isfinite(high) and verdict.ci_high - verdict.ci_low > high - low:
        cause = "a spread wider than the band"
    else:
        cause = "no difference to find at this spread: the effect lies too near the claim's edge"
    return f"{cause}; about {wanted} repetitions would be needed, more than the cap of {cap} (MAX_REPS)"


def points_per_repetition(run_dir: Path, focus: tuple) -> int:
    """The points of the run's first repetition that a focus names: what each new repetition adds."""
    df = load_results(run_dir)
    if "point_id" not in df or "rep" not in df:
        return 0
    return len(focused_points(df[pd.to_numeric(df["rep"], errors="coerce") == 1], focus))


def focused_points(rows: pd.DataFrame, focus: tuple) -> set[str]:
    """The point ids of the rows a focus names."""
    ids = set()
    for runtime, conditions in focus:
        ids |= set(rows_where(rows[rows["runtime"] == runtime], conditions)["point_id"].dropna())
    return ids


def seconds_per_point(run_dir: Path, focus: tuple = ()) -> float:
    """The mean time the focused points took in the repetitions measured so far (a run's points
    differ a hundredfold: NPB's LU.A for minutes, EP.S for a second), else the run's mean point."""
    df = load_results(run_dir)
    ids = focused_points(df, focus) if "point_id" in df else set()
    took = [point_seconds(record) for point_id, record in ended_points(run_dir).items() if point_id in ids]
    if took:
        return sum(took) / len(took)
    n, seconds = time_in_points(run_dir)
    return seconds / n if n else 0.0


# -- measuring again ------------------------------------------------------------------------------

def measure_again(experiment: str, run_dir: Path, reps: int, focus: tuple, anyway: bool = False) -> Path:
    """Continue the run with `reps` repetitions of the focused points (its record as measured, with
    only the runtimes they need: a claim about Docker and native does not wait on a unikernel)."""
    given = dict(load_meta(run_dir).get("record") or {})
    if not given:
        raise ConfigError(f"{run_dir.name} was measured before runs recorded their parameters; it cannot be "
                          "continued: measure it anew with make figures")
    runtimes = ",".join(dict.fromkeys(runtime for runtime, _ in focus))  # only those the points need
    record = EXPERIMENTS[experiment].parameters.from_values(
        {**given, "repetitions": reps, "runtimes": runtimes, "run_id": "", "resume": run_dir.name,
         "resume_anyway": anyway, "focus": focus})
    return EXPERIMENTS[experiment].run(record)


def looks_taken(run_dir: Path, claim_id: str) -> int:
    """The looks settle has taken at a claim on this run, in this call or an earlier one."""
    return int(((load_meta(run_dir).get("notes") or {}).get(LOOKS_NOTE) or {}).get(claim_id, 0))


def note_looks(run_dir: Path, claim_ids: list[str]) -> None:
    """Count a look at each claim in the run's meta.json, which make verdicts reads."""
    meta = load_meta(run_dir)
    looks = meta.setdefault("notes", {}).setdefault(LOOKS_NOTE, {})
    for claim_id in claim_ids:
        looks[claim_id] = looks.get(claim_id, 0) + 1
    write_meta(run_dir, meta)


# -- the loop -------------------------------------------------------------------------------------

@dataclass
class Settling:
    """What settle needs to know and do; `measure` is measure_again (a test may time it)."""
    target: str = "local"
    budget_s: float = seconds_of(BUDGET)
    cap: int = MAX_REPETITIONS
    profile: str = "any"
    anyway: bool = False
    data_dir: Path = DATA_DIR
    measure: Callable[..., Path] = measure_again
    say: Callable[[str], None] = lambda text: print(f"[settle] {text}", flush=True)
    stopped: bool = False  # Ctrl-C: what was measured is kept and judged, nothing more is started


def judge_on_latest(claims: list[Claim], s: Settling) -> dict[str, tuple]:
    """claim id -> (verdict, run_dir or None), as make verdicts judges it (a smoke run is no
    finding; a claim settle has looked at, at the stricter interval)."""
    out, runs = {}, {}
    for claim in claims:
        if claim.experiment and claim.experiment not in runs:
            runs[claim.experiment] = read_run(claim.experiment, s.target, s.profile, s.data_dir)
        run = runs.get(claim.experiment) if claim.metric else None
        out[claim.claim_id] = (judged(claim, run), run.path if run else None)
    return out


def settle(claims: list[Claim], s: Settling) -> tuple[list[Look], dict[str, str], pd.DataFrame, pd.DataFrame]:
    """Measure again and judge again until every claim is decided or given up; (every look, why
    each claim still inconclusive is, the verdicts before, after)."""
    started = time.monotonic()
    judged = judge_on_latest(claims, s)
    before = _table(judged)
    by_id = {c.claim_id: c for c in claims}
    looks: list[Look] = []
    given_up: dict[str, str] = {}
    for _ in range(LOOKS):  # rounds; each claim's own count (looks_taken) stops it at LOOKS in all
        if s.stopped:
            break
        wanted: dict[Path, dict] = {}
        for claim_id, (verdict, run_dir) in judged.items():
            if verdict.verdict != INCONCLUSIVE or claim_id in given_up or run_dir is None:
                continue
            taken = looks_taken(run_dir, claim_id)
            if taken >= LOOKS:  # an earlier settle's looks count too: the correction allows LOOKS in all
                given_up[claim_id] = (f"has had its {LOOKS} looks on run {run_dir.name} (meta.json's "
                                      f"{LOOKS_NOTE}), all the correction for repeated looks allows")
                s.say(f"{claim_id}: not measured again: {given_up[claim_id]}")
                continue
            reps = repetitions_of(run_dir)
            why = why_not_settled(verdict, claim_band(by_id[claim_id]), reps, s.cap)
            if why:
                given_up[claim_id] = why
                s.say(f"{claim_id}: not measured again: {why}")
                continue
            plan = wanted.setdefault(run_dir, {"reps": reps, "to": reps, "claims": []})
            plan["to"] = max(plan["to"], repetitions_wanted(reps, verdict.n, verdict.repetitions_to_settle))
            plan["claims"].append(claim_id)
        if not wanted:
            break
        for run_dir, plan in wanted.items():
            if s.stopped:
                break
            chosen = [by_id[c] for c in plan["claims"]]
            focus = focus_of(chosen)
            need_s = (points_per_repetition(run_dir, focus) * (plan["to"] - plan["reps"])
                      * seconds_per_point(run_dir, focus))
            left_s = s.budget_s - (time.monotonic() - started)
            if need_s > left_s:
                for c in plan["claims"]:
                    given_up[c] = (f"the time budget ran out: about {need_s / 60:.0f} min more were needed, "
                                   f"{max(left_s, 0) / 60:.0f} min were left (BUDGET)")
                    s.say(f"{c}: {given_up[c]}")
                continue
            experiment = chosen[0].experiment
            which = ", ".join(f"{c} (look {looks_taken(run_dir, c) + 1} of {LOOKS})" for c in plan["claims"])
            s.say(f"looking at {which}: {experiment} run {run_dir.name}, repetitions "
                  f"{plan['reps']} -> {plan['to']} for {len(focus)} runtime(s) and condition(s), "
                  f"about {need_s / 60:.0f} min")
            t0 = time.monotonic()
            try:
                s.measure(experiment, run_dir, plan["to"], focus, s.anyway)
            except EdgebenchError as e:
                for c in plan["claims"]:
                    given_up[c] = f"could not measure it again: {e}"
                    s.say(f"{c}: {given_up[c]}")
                continue
            except KeyboardInterrupt:  # the experiment kept its rows and stopped what it started
                s.stopped = True
                s.say("stopped (Ctrl-C): judging what was measured, starting nothing more")
            finally:
                note_looks(run_dir, plan["claims"])  # a look was taken, even at what a stop kept
            seconds = time.monotonic() - t0
            rows, meta = load_results(run_dir), load_meta(run_dir)
            emulated = (meta.get("target") or {}).get("emulated_device") or ""
            for claim in chosen:
                verdict = judge(claim, rows, emulated, CONFIDENCE_OF_A_LOOK)
                judged[claim.claim_id] = (verdict, run_dir)
                looks.append(Look(claim.claim_id, claim.paper, experiment, run_dir.name,
                                  looks_taken(run_dir, claim.claim_id), plan["reps"],
                                  plan["to"], verdict.n, verdict.verdict, verdict.effect, verdict.ci_low,
                                  verdict.ci_high, CONFIDENCE_OF_A_LOOK, round(seconds, 1), verdict.reason))
                s.say(f"{claim.claim_id}: {verdict.verdict} from n={verdict.n}"
                      + (f" [{verdict.ci_low:.4g}, {verdict.ci_high:.4g}]" if verdict.ci_low is not None else ""))
    for claim_id, (verdict, _) in judged.items():
        if verdict.verdict == INCONCLUSIVE and claim_id not in given_up:
            looked = any(lk.claim_id == claim_id for lk in looks)
            given_up[claim_id] = ("settle was stopped (Ctrl-C) before it was decided" if s.stopped
                                  else f"still inconclusive after {LOOKS} looks" if looked else verdict.reason)
    return looks, given_up, before, _table(judged)


def _table(judged: dict[str, tuple]) -> pd.DataFrame:
    return pd.DataFrame([asdict(v) for v, _ in judged.values()])


def save(looks: list[Look], given_up: dict[str, str], before: pd.DataFrame, after: pd.DataFrame, seconds: float,
         out: Path | None = None) -> Path:
    """settle.csv (every look) and settle.md (counts per paper before and after, why each claim
    still inconclusive is) in figures/verdicts/."""
    out = Path(out or FIGURES_DIR / "verdicts")
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([asdict(lk) for lk in looks], columns=COLUMNS).to_csv(out / "settle.csv", index=False)
    lines = ["# make settle", "", f"Measured again for {seconds / 60:.0f} min; each look judged at a "
             f"{CONFIDENCE_OF_A_LOOK:.2%} interval (docs/verdicts.md).", "", *count_table(before, after), "",
             "## Still inconclusive", ""]
    still = after[after["verdict"] == INCONCLUSIVE]
    lines += [f"- {r.claim_id}: {given_up.get(r.claim_id, r.reason)}" for r in still.itertuples()] or ["- none"]
    (out / "settle.md").write_text("\n".join(lines) + "\n")
    return out / "settle.md"


def count_table(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """Claims per paper and verdict, before and after, as markdown lines."""
    b, a = counts(before), counts(after)
    header = ["paper"] + [f"{v} {when}" for v in b.columns for when in ("before", "after")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for paper in sorted(set(b.index) | set(a.index)):
        cells = [str(paper)] + [str(int(t.at[paper, v]) if paper in t.index else 0) for v in b.columns for t in (b, a)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="local", help="the device whose runs are continued")
    ap.add_argument("--budget", default=BUDGET, help="time to spend measuring, such as 90m or 2h (BUDGET)")
    ap.add_argument("--max-reps", type=int, default=MAX_REPETITIONS, help="the most repetitions a run grows to")
    ap.add_argument("--papers", default="all", help="'all' or papers such as 000,002")
    ap.add_argument("--profile", default="any", help="'any', or only runs made with 'quick' or 'standard'")
    ap.add_argument("--anyway", action="store_true", help="continue runs whose code or device changed (recorded)")
    args = ap.parse_args(argv)
    try:
        budget = seconds_of(args.budget)
        if args.max_reps < 3:
            raise ConfigError(f"MAX_REPS={args.max_reps}: an interval needs 3 repetitions; give 3 or more")
        claims = load_claims(CLAIMS_FILE)
        papers = as_list(args.papers, sorted({c.paper for c in claims}))
        chosen = [c for c in claims if c.paper in papers]
        if not chosen:
            raise ConfigError(f"no claim of papers {args.papers}; give papers such as 000,002")
    except EdgebenchError as e:
        print(f"make settle: {e}", file=sys.stderr)
        return 2
    started = time.monotonic()
    settling = Settling(args.target, budget, args.max_reps, args.profile, args.anyway)
    looks, given_up, before, after = settle(chosen, settling)
    path = save(looks, given_up, before, after, time.monotonic() - started)
    print(path.read_text())
    decided = {HOLDS, CONTRADICTED}
    print(f"[settle] decided before: {before['verdict'].isin(decided).sum()}, after: "
          f"{after['verdict'].isin(decided).sum()} of {len(after)} ({(after['verdict'] == NOT_MEASURABLE).sum()} "
          "not measurable here)")
    return 130 if settling.stopped else 0


if __name__ == "__main__":
    sys.exit(main())
