"""edgebench's own question, answered for one device from its latest runs: per app and memory
level of the HTTP load sweeps (io_bound, cpu_bound), which runtimes serve within a tolerance of
native's throughput and p99 latency, each with its time to ready and its memory floor.

Every number carries its 95% bootstrap interval by the verdicts' rule (`edgebench.claims`; none
below 3 repetitions) and the run it comes from. A runtime is

- `within`: both intervals (throughput / native, p99 / native) lie inside the tolerance;
- `costs more`: either interval lies wholly outside it;
- `inconclusive`: an interval straddles its edge;
- `fails`: it ran at that level and no repetition served (the error says why);
- `not measurable`: this device cannot run it there (below its minimum memory, ...);
- `emulated`: its VM ran under TCG, QEMU's software emulation: its ratios are kept, not judged.

With fewer than 3 repetitions there is no interval: the row carries the point estimates' verdict
and says so, and what a reader reads (sentences, markdown) calls it undecided.
Only the fair protocol is read: it is the one that treats every runtime the same.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.claims import CONTRADICTED, HOLDS, MIN_N, decide, median_interval, ratio_interval
from edgebench.paths import DATA_DIR
from edgebench.plotting.tables import PROFILE_CAVEATS
from edgebench.results import NOT_MEASURABLE, latest_run, load_meta, load_results

LOAD_EXPERIMENTS = ("io_bound", "cpu_bound")
THROUGHPUT, P99 = "requests_per_second", "latency_p99"
PROTOCOL = "fair"
WITHIN, COSTS_MORE, INCONCLUSIVE, FAILS, NOT_MEASURABLE_HERE, EMULATED = (
    "within", "costs more", "inconclusive", "fails", "not measurable", "emulated")
EMULATED_WHY = "ran under TCG, QEMU's software emulation (no KVM): its times are the emulator's"
COLUMNS = ["tolerance", "profile", "experiment", "endpoint", "app", "scenario", "cpus", "memory_mb", "runtime",
           "accelerator", "serves", "why", "n", "rps", "rps_vs_native", "rps_ci_low", "rps_ci_high", "p99_ms",
           "p99_vs_native", "p99_ci_low", "p99_ci_high", "ready_ms", "ready_ci_low", "ready_ci_high", "floor_mb",
           "load_run", "ready_run", "floor_run"]


def _ok(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    return df[(df["metric"] == metric) & (df["status"] == "ok") & df["value"].notna()]


def _fair(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["protocol"] == PROTOCOL] if "protocol" in df else df


def ready_times(df: pd.DataFrame | None) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(app, runtime) -> median time to ready of a warm start (ms) with its interval."""
    if df is None:
        return {}
    rows = _ok(_fair(df), "time_to_ready")
    if "cache" in rows:
        rows = rows[rows["cache"] == "warm"]
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


def answer(target: str | None = "local", data_dir: Path = DATA_DIR, profile: str = "any",
           tolerance: float = 0.05) -> pd.DataFrame:
    """The table over the target's latest runs of the HTTP load sweeps, time to ready and
    minimum memory (empty, with its columns, when no load run exists yet)."""
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance={tolerance!r}: give a share of native such as 0.05 (5%)")
    found = {e: latest_run(e, target, profile, data_dir) for e in (*LOAD_EXPERIMENTS, "time_to_ready", "min_memory")}
    ready_dir, floor_dir = found["time_to_ready"], found["min_memory"]
    ready = ready_times(load_results(ready_dir) if ready_dir else None)
    floors = memory_floors(load_results(floor_dir) if floor_dir else None)
    rows = []
    for experiment in LOAD_EXPERIMENTS:
        if found[experiment]:
            profile_made = (load_meta(found[experiment]).get("parameters") or {}).get("profile") or ""
            rows += answer_rows(load_results(found[experiment]), experiment, found[experiment].name, tolerance,
                                ready, floors, ready_dir.name if ready_dir else "", floor_dir.name if floor_dir else "",
                                profile_made)
    table = pd.DataFrame(rows, columns=COLUMNS)
    # A runtime's accelerator is known from any row that started it (a failed start has none).
    known = table[table["accelerator"] != ""].groupby("runtime")["accelerator"].first()
    table["accelerator"] = [known.get(r, a) for r, a in zip(table["runtime"], table["accelerator"])]
    # An emulated VM's ratio to native measures QEMU's emulator, not the runtime: kept, not judged.
    emulated = (table["accelerator"].astype(str).str.lower().eq("tcg")
                & table["serves"].isin([WITHIN, COSTS_MORE, INCONCLUSIVE]))
    table.loc[emulated, "serves"] = EMULATED
    table.loc[emulated, "why"] = EMULATED_WHY
    return table


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
    cpus = f", {r.cpus:g} CPU" if pd.notna(r.cpus) else ""
    return f"{r.app} at {mem}{cpus} ({r.endpoint or r.experiment})"


def _point_estimate(r) -> bool:
    """Compared with native without an interval (fewer than MIN_N repetitions): nothing decided."""
    return r.runtime != "native" and pd.notna(r.rps_vs_native) and pd.isna(r.rps_ci_low)


def _repetitions(rows: pd.DataFrame) -> str:
    """'n=1', or 'n=1-2' where runtimes had different numbers of repetitions."""
    counts = sorted({int(n) for n in rows["n"] if pd.notna(n) and n > 0})
    return f"n={counts[0]}" + (f"-{counts[-1]}" if len(counts) > 1 else "") if counts else "n=0"


def profile_caveats(table: pd.DataFrame) -> list[str]:
    """What the profiles of the runs behind the table make of its numbers (smoke, quick), said first."""
    made = set(table["profile"].dropna().astype(str)) if "profile" in table else set()
    return [caveat for profile, caveat in PROFILE_CAVEATS.items() if profile in made]


def sentences(table: pd.DataFrame, tolerance: float | None = None) -> list[str]:
    """One line per app and level: who serves within the tolerance (the table's own by default), who
    costs more and how much, who fails or cannot run there, whose VM ran emulated. A level whose
    comparisons have no interval says so first, and its verdicts read as point estimates; where
    every level is such, one line before them says it for all."""
    if tolerance is None:
        tolerance = float(table["tolerance"].iloc[0]) if len(table) else 0.05
    labels = {WITHIN: f"within {tolerance:.0%} of native", INCONCLUSIVE: "not yet settled",
              COSTS_MORE: "costs more", FAILS: "fails", NOT_MEASURABLE_HERE: "cannot run here",
              EMULATED: "emulated under TCG, not judged"}
    levels = [level for _, level in table.groupby(["experiment", "app", "scenario", "cpus", "memory_mb"],
                                                  dropna=False, sort=False)]
    # Per level, its repetitions ("n=1") where a comparison with native has no interval, else "".
    undecided = [_repetitions(level) if any(_point_estimate(r) and r.serves != EMULATED for r in level.itertuples())
                 else "" for level in levels]
    said_once = bool(levels) and all(undecided) and len(set(undecided)) == 1
    lines = [f"{undecided[0]} at every level, no interval (one needs {MIN_N} repetitions): nothing below is "
             "decided; its verdicts are point estimates."] if said_once else []
    for level, repetitions in zip(levels, undecided):
        first = next(level.itertuples())
        native = level[level["runtime"] == "native"]
        parts = []
        if len(native) and pd.notna(native["rps"].iloc[0]):
            parts.append(f"native serves {native['rps'].iloc[0]:,.0f} req/s, p99 {native['p99_ms'].iloc[0]:.3g} ms")
        named: dict[str, list[str]] = {}
        for verdict, label in labels.items():
            for r in level[level["serves"] == verdict].itertuples():
                name = _name(r)
                if verdict in (COSTS_MORE, EMULATED):
                    # As multiples of native's, like the table: "35% of its throughput" read as a 35% cost.
                    name += f" (req/s x{r.rps_vs_native:.3g}, p99 x{r.p99_vs_native:.3g} of native's)"
                point = _point_estimate(r) and verdict in (WITHIN, COSTS_MORE)
                named.setdefault(f"{label} by point estimate" if point else label, []).append(name)
        parts += [f"{label}: {', '.join(names)}" for label, names in named.items()]
        head = _level(first)
        if repetitions and not said_once:
            head += f", {repetitions}, no interval (one needs {MIN_N} repetitions), so nothing here is decided"
        lines.append(f"{head}: " + "; ".join(parts))
    return lines


MARKS = {WITHIN: "yes", COSTS_MORE: "no", INCONCLUSIVE: "unsettled", FAILS: "fails", NOT_MEASURABLE_HERE: "cannot run",
         EMULATED: "emulated, not judged", "baseline": "baseline"}


def _cell(r) -> str:
    """One runtime at one level: the verdict (none from a point estimate: its n instead), then
    throughput and p99 as shares of native's."""
    mark = MARKS.get(r.serves, r.serves)
    if r.serves == "baseline":
        return f"{r.rps:,.0f} req/s, p99 {r.p99_ms:.3g} ms"
    if pd.isna(r.rps_vs_native):
        return mark
    if _point_estimate(r) and r.serves != EMULATED:
        mark = f"n={int(r.n)}, undecided"
    return (f"{mark}: req/s x{_with_interval(r.rps_vs_native, r.rps_ci_low, r.rps_ci_high)}, "
            f"p99 x{_with_interval(r.p99_vs_native, r.p99_ci_low, r.p99_ci_high)}")



def _runtimes(table: pd.DataFrame) -> list[str]:
    names = list(dict.fromkeys(_name(r) for r in table.itertuples()))
    return sorted(names, key=lambda n: (n != "native", n))


def markdown(table: pd.DataFrame, tolerance: float = 0.05, emulated: str = "") -> str:
    """What the runs' profiles make of the numbers; the sentences; a table of app x level by runtime,
    every ratio with its interval where it has one; then each runtime's time to ready and memory
    floor per app; and the runs they come from."""
    if table.empty:
        return ("No HTTP load run on this device yet: `make figures ONLY=io_bound,time_to_ready,min_memory` "
                "gives the answer.")
    lines = [line for caveat in profile_caveats(table) for line in (f"**{caveat}**", "")]
    if emulated:
        lines += [f"**Measured on an {emulated}: its times and rates are the emulator's, not a device's.**", ""]
    lines += [f"- {s}" for s in sentences(table, tolerance)] + [""]
    names = _runtimes(table)
    # "[95% CI]" only over intervals that exist: a header over point estimates reads as decided.
    has_interval = table.loc[(table["runtime"] != "native") & table["rps_vs_native"].notna(), "rps_ci_low"].notna()
    if has_interval.all():
        how = "as multiples of native's [95% CI]"
    elif has_interval.any():
        how = (f"as multiples of native's [95% CI]; a cell from fewer than {MIN_N} repetitions has no interval "
               "and gives its n instead of a verdict")
    else:
        how = (f"as multiples of native's; every cell is from fewer than {MIN_N} repetitions: no interval, so it "
               "gives its n instead of a verdict")
    lines += [f"Within {tolerance:.0%} of native's throughput and p99 latency? Each cell: the verdict, then req/s and "
              f"p99 {how}; native's cell gives its own.", "",
              "| app, level | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for _, level in table.groupby(["experiment", "app", "scenario", "cpus", "memory_mb"], dropna=False, sort=False):
        cells = {_name(r): _cell(r) for r in level.itertuples()}
        lines.append(f"| {_level(next(level.itertuples()))} | " + " | ".join(cells.get(n, "") for n in names) + " |")
    starts = table.drop_duplicates(["app", "runtime"])
    starts = starts[starts["ready_ms"].notna() | starts["floor_mb"].notna()]
    ready_interval = starts.loc[starts["ready_ms"].notna(), "ready_ci_low"].notna()
    ready = ("[95% CI]" if ready_interval.all() else f"[95% CI; none below {MIN_N} starts]" if ready_interval.any()
             else f"(below {MIN_N} starts: no interval)")
    if len(starts):
        lines += ["", f"| app | runtime | time to ready, warm, median ms {ready} | memory floor, MiB |",
                  "|---|---|---|---|"]
    for r in starts.sort_values(["app", "runtime"], key=lambda c: c.map(lambda v: (v != "native", v))).itertuples():
        ready = _with_interval(r.ready_ms, r.ready_ci_low, r.ready_ci_high, '{:.0f}')
        lines.append(f"| {r.app} | {_name(r)} | {ready} "
                     f"| {_num(r.floor_mb, '{:g}')} |")
    why = table[table["serves"].isin([FAILS, NOT_MEASURABLE_HERE]) & (table["why"] != "")]
    if len(why):
        lines += [""] + [f"- {r.runtime}, {_level(r)}: {r.why}"
                         for r in why.drop_duplicates(["runtime", "why"]).itertuples()]
    runs = {f"{e}: {x}" for col, e in (("load_run", None), ("ready_run", "time_to_ready"), ("floor_run", "min_memory"))
            for x, e in zip(table[col], table["experiment"] if e is None else [e] * len(table)) if x and pd.notna(x)}
    lines += ["", "Runs: " + ", ".join(sorted(runs)) + "."]
    return "\n".join(lines)


def emulated_device(target: str | None, data_dir: Path = DATA_DIR, profile: str = "any") -> str:
    """What the latest load run's target says it is, when it is an emulated device."""
    for experiment in LOAD_EXPERIMENTS:
        d = latest_run(experiment, target, profile, data_dir)
        if d:
            return (load_meta(d).get("target") or {}).get("emulated_device") or ""
    return ""
