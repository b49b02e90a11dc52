"""edgebench's own question, answered for one device from its latest runs: per app and memory
level of the HTTP load sweeps (io_bound, cpu_bound), which runtimes serve within a tolerance of
native's throughput and p99 latency, each with its time to ready and its memory floor.

Every number carries its 95% bootstrap interval by the verdicts' rule (`edgebench.claims`; none
below 3 repetitions) and the run it comes from. A runtime is

- `within`: both intervals (throughput / native, p99 / native) lie inside the tolerance;
- `costs more`: either interval lies wholly outside it;
- `inconclusive`: an interval straddles its edge;
- `fails`: it ran at that level and no repetition served (the error says why);
- `not measurable`: what was measured there is no finding, and `why` says so as the claims engine
  would: the device cannot run it there (below its minimum memory, ...), its VM ran under TCG
  (QEMU's software emulation: its times are the emulator's), the device is emulated, or the run
  is a smoke run (one point per runtime, to check the pipeline).

With fewer than 3 repetitions there is no interval: the row carries the point estimates' verdict
and says so, and what a reader reads (sentences, markdown) calls it undecided.
Only the fair protocol is read: it is the one that treats every runtime the same.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.claims import CONTRADICTED, HOLDS, MIN_N, TCG_WHY, decide, median_interval, ratio_interval
from edgebench.paths import DATA_DIR
from edgebench.plotting.tables import PROFILE_CAVEATS, counted
from edgebench.results import NOT_MEASURABLE, latest_run, load_meta, load_results

LOAD_EXPERIMENTS = ("io_bound", "cpu_bound")
THROUGHPUT, P99 = "requests_per_second", "latency_p99"
PROTOCOL = "fair"
WITHIN, COSTS_MORE, INCONCLUSIVE, FAILS, NOT_MEASURABLE_HERE = (
    "within", "costs more", "inconclusive", "fails", "not measurable")
JUDGED = (WITHIN, COSTS_MORE, INCONCLUSIVE)
# Why numbers that were measured are no findings, in the claims engine's words where it has them.
SMOKE_WHY = ("a smoke run: one point per runtime, to check that every part runs on the device; its numbers "
             "are not measurements (make figures PROFILE=quick or standard measures)")
COLUMNS = ["tolerance", "profile", "experiment", "endpoint", "app", "scenario", "cpus", "memory_mb", "runtime",
           "accelerator", "serves", "why", "n", "rps", "rps_vs_native", "rps_ci_low", "rps_ci_high", "p99_ms",
           "p99_vs_native", "p99_ci_low", "p99_ci_high", "ready_ms", "ready_ci_low", "ready_ci_high", "floor_mb",
           "load_run", "ready_run", "floor_run"]


def _ok(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    return df[(df["metric"] == metric) & (df["status"] == "ok") & df["value"].notna()]


def _fair(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["protocol"] == PROTOCOL] if "protocol" in df else df


def ready_times(df: pd.DataFrame | None) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(app, runtime) -> median time to ready of a warm start (ms) with its interval; a VM under TCG
    is left out (its times are the emulator's)."""
    if df is None:
        return {}
    rows = _ok(_fair(df), "time_to_ready")
    if "cache" in rows:
        rows = rows[rows["cache"] == "warm"]
    if "accelerator" in rows:
        rows = rows[rows["accelerator"].astype(str).str.lower() != "tcg"]
    return {key: (float(g["value"].median()), *median_interval(g["value"]))
            for key, g in rows.groupby(["app", "runtime"])}


def memory_floors(df: pd.DataFrame | None) -> dict[tuple[str, str], float]:
    """(app, runtime) -> the least memory (MiB) it became ready with (the median over repetitions)."""
    if df is None:
        return {}
    return {key: float(g["value"].median()) for key, g in _ok(_fair(df), "min_memory").groupby(["app", "runtime"])}


def _judge(rps_band: tuple[float, float], p99_band: tuple[float, float], rps: tuple, p99: tuple,
           n: int) -> tuple[str, str]:
    """The verdict on one runtime from its two ratios to native, (effect, low, high) each."""
    if any(math.isnan(x[1]) for x in (rps, p99)):
        within = rps_band[0] <= rps[0] and p99[0] <= p99_band[1]
        return (WITHIN if within else COSTS_MORE), f"n={n}: too few repetitions for an interval, point estimates"
    a, _ = decide(rps[1], rps[2], rps[0], n, rps_band)
    b, _ = decide(p99[1], p99[2], p99[0], n, p99_band)
    if a == HOLDS and b == HOLDS:
        return WITHIN, ""
    if CONTRADICTED in (a, b):
        return COSTS_MORE, ""
    return INCONCLUSIVE, "an interval straddles the tolerance: more repetitions would settle it"


def _unmeasured(rows: pd.DataFrame) -> tuple[str, str]:
    """Why a runtime gave no throughput at a level: fails, or cannot be measured here."""
    if rows.empty:
        return NOT_MEASURABLE_HERE, "no rows"
    errors = rows["error"].dropna().astype(str) if "error" in rows else pd.Series(dtype=str)
    errors = errors[errors != ""]
    first = errors.iloc[0] if len(errors) else ""
    if (rows["status"] == NOT_MEASURABLE).all():
        return NOT_MEASURABLE_HERE, first
    return FAILS, first


def answer_rows(load: pd.DataFrame, experiment: str, load_run: str, tolerance: float, ready: dict, floors: dict,
                ready_run: str = "", floor_run: str = "", profile: str = "") -> list[dict]:
    """One row per (app, level, runtime) of one HTTP load run (made with `profile`)."""
    rps_band, p99_band = (1 - tolerance, math.inf), (0.0, 1 + tolerance)
    df = _fair(load)
    out = []
    levels = ["app", "scenario", "cpus", "memory_mb"]
    for (app, scenario, cpus, mem), level in df.groupby(levels, dropna=False, sort=False):
        base_rps = _ok(level[level["runtime"] == "native"], THROUGHPUT)["value"].to_numpy(float)
        base_p99 = _ok(level[level["runtime"] == "native"], P99)["value"].to_numpy(float)
        has_endpoint = "endpoint" in level and level["endpoint"].notna().any()
        endpoint = str(level["endpoint"].dropna().iloc[0]) if has_endpoint else ""
        for runtime, rows in level.groupby("runtime", sort=False):
            rps, p99 = _ok(rows, THROUGHPUT)["value"].to_numpy(float), _ok(rows, P99)["value"].to_numpy(float)
            acc = rows["accelerator"].dropna().astype(str) if "accelerator" in rows else pd.Series(dtype=str)
            row = dict(tolerance=tolerance, profile=profile, experiment=experiment, endpoint=endpoint, app=app,
                       scenario=scenario, cpus=cpus, memory_mb=mem, runtime=runtime,
                       accelerator=acc.iloc[0] if len(acc) else "", n=len(rps), load_run=load_run,
                       floor_mb=floors.get((app, runtime), math.nan),
                       floor_run=floor_run if (app, runtime) in floors else "")
            if (app, runtime) in ready:
                row.update(zip(("ready_ms", "ready_ci_low", "ready_ci_high"), ready[(app, runtime)]))
                row["ready_run"] = ready_run
            if len(rps) == 0 or len(p99) == 0:
                row["serves"], row["why"] = _unmeasured(rows[rows["metric"] == THROUGHPUT])
                out.append(row)
                continue
            row.update(rps=float(np.median(rps)), p99_ms=float(np.median(p99)))
            if runtime == "native":
                row.update(serves="baseline", why="", rps_vs_native=1.0, p99_vs_native=1.0)
            elif len(base_rps) == 0 or len(base_p99) == 0:
                row.update(serves=INCONCLUSIVE, why="native has no ok rows at this level to compare with")
            else:
                r = (float(np.median(rps) / np.median(base_rps)), *ratio_interval(rps, base_rps))
                p = (float(np.median(p99) / np.median(base_p99)), *ratio_interval(p99, base_p99))
                row.update(rps_vs_native=r[0], rps_ci_low=r[1], rps_ci_high=r[2],
                           p99_vs_native=p[0], p99_ci_low=p[1], p99_ci_high=p[2])
                row["serves"], row["why"] = _judge(rps_band, p99_band, r, p, min(len(rps), len(base_rps)))
            out.append(row)
    return out


def emulated_why(device: str) -> str:
    """Why an emulated device's times and rates are no findings (the claims engine's words)."""
    return f"measured on an {device}: its times and rates are the emulator's"


def not_a_finding(meta: dict, timed: bool = True) -> str:
    """Why a run's numbers are no findings ('' when they are): a smoke run's never are, an emulated
    device's times and rates (`timed`) are not; its sizes are."""
    if ((meta.get("parameters") or {}).get("profile") or "") == "smoke":
        return SMOKE_WHY
    device = (meta.get("target") or {}).get("emulated_device") or ""
    return emulated_why(device) if device and timed else ""


def _latest(target: str | None, data_dir: Path, profile: str) -> dict[str, Path | None]:
    return {e: latest_run(e, target, profile, data_dir, finished_first=True)
            for e in (*LOAD_EXPERIMENTS, "time_to_ready", "min_memory")}


def _readable(run_dir: Path | None, timed: bool) -> Path | None:
    """The run, if its numbers are findings."""
    return run_dir if run_dir and not not_a_finding(load_meta(run_dir), timed) else None


def answer(target: str | None = "local", data_dir: Path = DATA_DIR, profile: str = "any",
           tolerance: float = 0.05) -> pd.DataFrame:
    """The table over the target's latest runs of the HTTP load sweeps, time to ready and
    minimum memory (empty, with its columns, when no load run exists yet). A runtime's numbers that
    are no finding (runs_not_read, mark_not_findings) are `not measurable`, with why."""
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance={tolerance!r}: give a share of native such as 0.05 (5%)")
    found = _latest(target, data_dir, profile)
    ready_dir, floor_dir = _readable(found["time_to_ready"], timed=True), _readable(found["min_memory"], timed=False)
    ready = ready_times(load_results(ready_dir) if ready_dir else None)
    floors = memory_floors(load_results(floor_dir) if floor_dir else None)
    rows, whys = [], {}
    for experiment in LOAD_EXPERIMENTS:
        if found[experiment]:
            meta = load_meta(found[experiment])
            whys[found[experiment].name] = not_a_finding(meta)
            rows += answer_rows(load_results(found[experiment]), experiment, found[experiment].name, tolerance,
                                ready, floors, ready_dir.name if ready_dir else "", floor_dir.name if floor_dir else "",
                                (meta.get("parameters") or {}).get("profile") or "")
    table = pd.DataFrame(rows, columns=COLUMNS)
    # A runtime's accelerator is known from any row that started it (a failed start has none).
    known = table[table["accelerator"] != ""].groupby("runtime")["accelerator"].first()
    table["accelerator"] = [known.get(r, a) for r, a in zip(table["runtime"], table["accelerator"])]
    return mark_not_findings(table, whys)


def mark_not_findings(table: pd.DataFrame, run_whys: dict[str, str]) -> pd.DataFrame:
    """Every row of a load run that is no finding (`run_whys`: run id -> why), and every judged VM
    under TCG, made `not measurable` with why; their numbers stay in the table, never read as a verdict."""
    whole_run = table["load_run"].map(lambda run: run_whys.get(run, "")).fillna("")
    tcg = table["accelerator"].astype(str).str.lower().eq("tcg") & table["serves"].isin(JUDGED)
    why = whole_run.where(whole_run != "", tcg.map({True: TCG_WHY, False: ""}))
    table.loc[why != "", "serves"] = NOT_MEASURABLE_HERE
    table.loc[why != "", "why"] = why[why != ""]
    return table


def runs_not_read(target: str | None = "local", data_dir: Path = DATA_DIR, profile: str = "any") -> list[str]:
    """The time-to-ready and memory-floor runs whose numbers are no findings, each with why: said
    before the answer, since nothing of theirs is shown (a load run's rows say it themselves)."""
    lines = []
    for experiment, run_dir in _latest(target, data_dir, profile).items():
        if experiment in LOAD_EXPERIMENTS:
            continue
        why = not_a_finding(load_meta(run_dir), timed=experiment != "min_memory") if run_dir else ""
        if why:
            lines.append(f"{experiment} run {run_dir.name}: {why}")
    return lines


# -- what a reader acts on ------------------------------------------------------------------------

def _num(v, fmt: str = "{:.3g}") -> str:
    return "" if v is None or pd.isna(v) else fmt.format(v)


def _with_interval(v, low, high, fmt: str = "{:.3g}") -> str:
    if pd.isna(v):
        return ""
    return fmt.format(v) + (f" [{fmt.format(low)}, {fmt.format(high)}]" if pd.notna(low) else "")


def _name(r) -> str:
    return f"{r.runtime} ({str(r.accelerator).upper()})" if str(r.accelerator).lower() == "tcg" else str(r.runtime)


def _level(r) -> str:
    mem = f"{r.memory_mb:g} MiB" if pd.notna(r.memory_mb) else "no memory limit"
    cpus = f", {r.cpus:g} CPU{'' if r.cpus == 1 else 's'}" if pd.notna(r.cpus) else ""
    return f"{r.app} at {mem}{cpus} ({r.endpoint or r.experiment})"


def _point_estimate(r) -> bool:
    """Judged against native without an interval (fewer than MIN_N repetitions): nothing decided."""
    return r.serves in JUDGED and pd.notna(r.rps_vs_native) and pd.isna(r.rps_ci_low)


def _repetitions(rows: pd.DataFrame) -> str:
    """'1 repetition', or '1-2 repetitions' where runtimes had different numbers of them."""
    counts = sorted({int(n) for n in rows["n"] if pd.notna(n) and n > 0})
    if not counts:
        return "no repetition"
    return counted(counts[0], "repetition") if len(counts) == 1 else f"{counts[0]}-{counts[-1]} repetitions"


def profile_caveats(table: pd.DataFrame) -> list[str]:
    """What the profiles of the runs behind the table make of its numbers (smoke, quick), said first."""
    made = set(table["profile"].dropna().astype(str)) if "profile" in table else set()
    return [caveat for profile, caveat in PROFILE_CAVEATS.items() if profile in made]


def _levels(table: pd.DataFrame) -> list[pd.DataFrame]:
    return [level for _, level in table.groupby(["experiment", "app", "scenario", "cpus", "memory_mb"],
                                                dropna=False, sort=False)]


def _no_finding(level: pd.DataFrame) -> str:
    """The one reason a whole level is no finding (a smoke run, an emulated device), else ''."""
    whys = set(level["why"])
    return whys.pop() if (level["serves"] == NOT_MEASURABLE_HERE).all() and len(whys) == 1 else ""


def _unfound_lines(levels: list[pd.DataFrame]) -> list[str]:
    """One line per experiment and reason for its levels that hold no finding at all."""
    by_reason: dict[tuple[str, str], int] = {}
    for level in levels:
        if _no_finding(level):
            key = (str(level["experiment"].iloc[0]), _no_finding(level))
            by_reason[key] = by_reason.get(key, 0) + 1
    every = {e: sum(1 for lv in levels if lv["experiment"].iloc[0] == e) for e, _ in by_reason}
    return [f"{experiment}, {'every level' if n == every[experiment] else counted(n, 'level')}: no finding, "
            f"not measurable here: {why}" for (experiment, why), n in by_reason.items()]


def _level_line(level: pd.DataFrame, labels: dict[str, str], repetitions: str) -> str:
    """Who serves within the tolerance at one level, who costs more and how much, who fails, and
    whose numbers are no finding there."""
    native = level[level["serves"] == "baseline"]
    parts = [f"native serves {native['rps'].iloc[0]:,.0f} req/s, p99 {native['p99_ms'].iloc[0]:.3g} ms"] \
        if len(native) else []
    named: dict[str, list[str]] = {}
    for verdict, label in labels.items():
        for r in level[level["serves"] == verdict].itertuples():
            name = _name(r)
            if verdict == COSTS_MORE:
                # As multiples of native's, like the table: "35% of its throughput" read as a 35% cost.
                name += f" (req/s x{r.rps_vs_native:.3g}, p99 x{r.p99_vs_native:.3g} of native's)"
            point = _point_estimate(r)
            named.setdefault(f"{label} by point estimate" if point else label, []).append(name)
    parts += [f"{label}: {', '.join(names)}" for label, names in named.items()]
    head = _level(next(level.itertuples()))
    if repetitions:
        head += f", {repetitions}, no interval (one needs {MIN_N} repetitions), so nothing here is decided"
    return f"{head}: " + "; ".join(parts)


def sentences(table: pd.DataFrame, tolerance: float | None = None) -> list[str]:
    """One line per app and level: who serves within the tolerance (the table's own by default), who
    costs more and how much, who fails, whose numbers are no finding there (not measurable here). A
    level whose comparisons have no interval says so first, and its verdicts read as point
    estimates; where every level is such, one line before them says it for all. Levels with no
    finding at all (a smoke run, an emulated device) take one line per experiment, with why."""
    if tolerance is None:
        tolerance = float(table["tolerance"].iloc[0]) if len(table) else 0.05
    labels = {WITHIN: f"within {tolerance:.0%} of native", INCONCLUSIVE: "not yet settled",
              COSTS_MORE: "costs more", FAILS: "fails", NOT_MEASURABLE_HERE: "not measurable here"}
    levels = _levels(table)
    found = [level for level in levels if not _no_finding(level)]
    # Per level, its repetitions ("1 repetition") where a verdict has no interval, else "".
    undecided = [_repetitions(level) if any(_point_estimate(r) for r in level.itertuples()) else ""
                 for level in found]
    said_once = bool(found) and all(undecided) and len(set(undecided)) == 1
    lines = [f"{undecided[0]} at every level, no interval (one needs {MIN_N} repetitions): nothing below is "
             "decided; its verdicts are point estimates."] if said_once else []
    lines += [_level_line(level, labels, "" if said_once else repetitions)
              for level, repetitions in zip(found, undecided)]
    return lines + _unfound_lines(levels)


MARKS = {WITHIN: "yes", COSTS_MORE: "no", INCONCLUSIVE: "unsettled", FAILS: "fails",
         NOT_MEASURABLE_HERE: "not measurable", "baseline": "baseline"}


def _cell(r) -> str:
    """One runtime at one level: the verdict (none from a point estimate: its repetitions instead),
    then throughput and p99 as shares of native's; no number where it is no finding."""
    mark = MARKS.get(r.serves, r.serves)
    if r.serves == "baseline":
        return f"{r.rps:,.0f} req/s, p99 {r.p99_ms:.3g} ms"
    if r.serves not in JUDGED or pd.isna(r.rps_vs_native):
        return mark
    if _point_estimate(r):
        mark = f"{counted(int(r.n), 'repetition')}, undecided"
    return (f"{mark}: req/s x{_with_interval(r.rps_vs_native, r.rps_ci_low, r.rps_ci_high)}, "
            f"p99 x{_with_interval(r.p99_vs_native, r.p99_ci_low, r.p99_ci_high)}")


def _runtimes(table: pd.DataFrame) -> list[str]:
    names = list(dict.fromkeys(_name(r) for r in table.itertuples()))
    return sorted(names, key=lambda n: (n != "native", n))


def _ratio_how(table: pd.DataFrame) -> str:
    """How the cells give their ratios: "[95% CI]" only over intervals that exist (a header over
    point estimates reads as decided)."""
    judged = table[table["serves"].isin(JUDGED) & table["rps_vs_native"].notna()]
    has_interval = judged["rps_ci_low"].notna()
    if len(judged) and has_interval.all():
        return "as multiples of native's [95% CI]"
    if has_interval.any():
        return (f"as multiples of native's [95% CI]; a cell from fewer than {MIN_N} repetitions has no interval "
                "and gives its repetitions instead of a verdict")
    if len(judged):
        return (f"as multiples of native's; every cell is from fewer than {MIN_N} repetitions: no interval, so it "
                "gives its repetitions instead of a verdict")
    return "as multiples of native's"


def _level_table(table: pd.DataFrame, tolerance: float) -> list[str]:
    names = _runtimes(table)
    lines = [f"Within {tolerance:.0%} of native's throughput and p99 latency? Each cell: the verdict, then req/s "
             f"and p99 {_ratio_how(table)}; native's cell gives its own.", "",
             "| app, level | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for level in _levels(table):
        cells = {_name(r): _cell(r) for r in level.itertuples()}
        lines.append(f"| {_level(next(level.itertuples()))} | " + " | ".join(cells.get(n, "") for n in names) + " |")
    return lines


def _starts_table(table: pd.DataFrame) -> list[str]:
    """Each runtime's warm time to ready [interval where it has one] and memory floor, per app."""
    starts = table.drop_duplicates(["app", "runtime"])
    starts = starts[starts["ready_ms"].notna() | starts["floor_mb"].notna()]
    if starts.empty:
        return []
    ready_interval = starts.loc[starts["ready_ms"].notna(), "ready_ci_low"].notna()
    how = ("[95% CI]" if ready_interval.all() else f"[95% CI; none below {MIN_N} starts]" if ready_interval.any()
           else f"(below {MIN_N} starts: no interval)")
    lines = ["", f"| app | runtime | time to ready, warm, median ms {how} | memory floor, MiB |", "|---|---|---|---|"]
    for r in starts.sort_values(["app", "runtime"], key=lambda c: c.map(lambda v: (v != "native", v))).itertuples():
        ready = _with_interval(r.ready_ms, r.ready_ci_low, r.ready_ci_high, '{:.0f}')
        lines.append(f"| {r.app} | {_name(r)} | {ready} | {_num(r.floor_mb, '{:g}')} |")
    return lines


def _whys(table: pd.DataFrame) -> list[str]:
    """Why runtimes failed (findings), then which numbers are no findings and why, each reason once."""
    lines = []
    failed = table[(table["serves"] == FAILS) & (table["why"] != "")]
    if len(failed):
        lines += ["", "Why they failed:"] + [f"- {r.runtime}, {_level(r)}: {r.why}"
                                            for r in failed.drop_duplicates(["runtime", "why"]).itertuples()]
    unfound = table[table["serves"] == NOT_MEASURABLE_HERE]
    if len(unfound):
        lines += ["", "Not findings (not measurable here), and why:"]
        for why, rows in unfound.groupby("why", sort=False):
            names = ", ".join(dict.fromkeys(_name(r) for r in rows.itertuples()))
            lines.append(f"- {names}: {why or 'no rows'}")
    return lines


def markdown(table: pd.DataFrame, tolerance: float = 0.05, notes: list[str] | tuple[str, ...] = ()) -> str:
    """What the runs' profiles make of the numbers and which runs are no findings (`notes`:
    runs_not_read); the sentences; a table of app x level by runtime, every ratio with its interval
    where it has one; each runtime's time to ready and memory floor per app; why runtimes failed and
    which numbers are no findings; and the runs they come from."""
    if table.empty:
        return ("No HTTP load run on this device yet: `make figures ONLY=io_bound,time_to_ready,min_memory` "
                "gives the answer.")
    lines = [line for caveat in profile_caveats(table) for line in (f"**{caveat}**", "")]
    lines += [line for note in notes for line in (f"**Not a finding: {note}.**", "")]
    lines += [f"A finding is a verdict on what this device measured: {MARKS[WITHIN]}, {MARKS[COSTS_MORE]}, "
              f"{MARKS[INCONCLUSIVE]} or {MARKS[FAILS]}. A runtime that is \"{MARKS[NOT_MEASURABLE_HERE]}\" there is "
              "no finding: the list under the tables says why.", ""]
    lines += [f"- {s}" for s in sentences(table, tolerance)] + [""]
    # A table of nothing but "not measurable" cells tells nothing the lines above do not.
    found = table["serves"] != NOT_MEASURABLE_HERE
    lines += (_level_table(table, tolerance) if found.any() else []) + _starts_table(table) + _whys(table)
    runs = {f"{e}: {x}" for col, e in (("load_run", None), ("ready_run", "time_to_ready"), ("floor_run", "min_memory"))
            for x, e in zip(table[col], table["experiment"] if e is None else [e] * len(table)) if x and pd.notna(x)}
    lines += ["", "Runs: " + ", ".join(sorted(runs)) + "."]
    return "\n".join(lines)
