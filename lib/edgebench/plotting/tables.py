"""What every experiment's tables share: the rows that can be plotted, the spread of repeated
runs, emulated VMs kept apart, cells measured on a throttled or busy device marked, and the
papers' values beside the measured ones."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import patheffects

from edgebench.claims import MIN_N, median_interval
from edgebench.errors import EdgebenchError
from edgebench.experiments.reading import printed_of
from edgebench.experiments.protocols import LIMIT_NOT_APPLIED
from edgebench.plotting.style import (COLD, EMULATED, FIRST, HEALTH_LABEL, HEALTH_MARK, base_runtime, failed_runtimes,
                                      in_runtime_order, memory_limits_not_run, plt, runtime_colour)
from edgebench.results import NOT_MEASURABLE, load_meta
from edgebench.tools import sanity
from edgebench.tools.health import BUSY, MARKED, THROTTLED, UNKNOWN, flags


# A note or an error in a table is read whole: pandas would cut every cell at 50 characters and "...".
pd.set_option("display.max_colwidth", None)


class NoData(EdgebenchError):
    """The results hold nothing to plot for this selection."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 row', '3 rows': a count with its noun in the number it takes."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def ok_rows(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Successful rows of one metric; none raises with why the failed ones failed, because a
    figure drawn from no data is a defect, not an empty plot."""
    sel = df[(df["metric"] == metric) & (df["status"] == "ok") & df["value"].notna()]
    if sel.empty:
        failed = df[(df["metric"] == metric) & (df["status"] != "ok")]
        why = "; ".join(sorted(set(failed["error"].astype(str))))[:500] if not failed.empty else "no rows"
        raise NoData(f"no successful '{metric}' measurements to plot ({why})")
    return sel


def spread(values: pd.Series) -> dict:
    """Median and quartiles of repeated runs (robust to the one slow run, never below the data),
    and the median's 95% bootstrap interval (claims.median_interval; NaN below 3 runs)."""
    v = values.dropna()
    q1, q3 = v.quantile(0.25), v.quantile(0.75)
    low, high = median_interval(v.to_numpy(float))
    return {"n": len(v), "median": v.median(), "q1": q1, "q3": q3, "iqr": q3 - q1, "min": v.min(), "max": v.max(),
            "ci_low": low, "ci_high": high}


def sort_by_runtime(table: pd.DataFrame, by: list[str], ascending=True) -> pd.DataFrame:
    """Sort on `by`, the runtime column in the registry's order rather than alphabetically."""
    rank = {r: i for i, r in enumerate(in_runtime_order(table["runtime"]))}
    return table.sort_values(by, ascending=ascending, key=lambda c: c.map(rank) if c.name == "runtime" else c) \
        .reset_index(drop=True)


def ratio_to_baseline(table: pd.DataFrame, value: str, baseline: pd.Series, keys: list[str]) -> pd.Series:
    """Each row's `value` over the baseline row's (where `baseline` is True) with the same `keys`:
    the ratio to native of the same cell; NaN where the cell has no baseline."""
    base = table[baseline].drop_duplicates(keys).set_index(keys)[value]
    index = pd.MultiIndex.from_frame(table[keys]) if len(keys) > 1 else pd.Index(table[keys[0]])
    return pd.Series(table[value].to_numpy() / base.reindex(index).to_numpy(), index=table.index)


def too_coarse(table: pd.DataFrame, experiment: str, medians=("median", "native_median")) -> list[str]:
    """Per row, why its `medians` are too few of their tool's printed steps long to compare (NPB's
    class S, in hundredths of a second: tools.sanity.below_resolution), or ''."""
    printed = printed_of(experiment, table)
    return [sanity.below_resolution(m, p) for m, p in zip(table[list(medians)].to_numpy(), printed)]


def without_coarse(table: pd.DataFrame, experiment: str, by: list[str], point: list[str],
                   medians=("median", "native_median")) -> tuple[pd.DataFrame, dict[tuple, str]]:
    """The table without the rows too_coarse names, and per `by` group what its panel says of the
    points it left out."""
    printed = printed_of(experiment, table)
    coarse = np.array([bool(why) for why in too_coarse(table, experiment, medians)], dtype=bool)
    notes = {}
    for group, g in table[coarse].groupby(by, sort=False):
        rule, points = printed[g.index[0]], len(g[point].drop_duplicates())
        notes[group] = (f"{counted(points, 'point')} under {sanity.RESOLUTION_STEPS * rule.step:g} {rule.unit} "
                        f"not compared: {rule.by} is printed to {rule.step:g} {rule.unit}")
    out = table[~coarse].reset_index(drop=True)
    out.attrs = table.attrs
    return out, notes


def mark_emulated(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of a VM that ran under software emulation get their own runtime label, "nanos (TCG)":
    they measure QEMU's emulator, not the unikernel on hardware virtualisation, and every table
    and figure keeps them apart."""
    if "accelerator" not in df.columns or df.empty:
        return df
    tcg = df["accelerator"].astype(str).str.lower().eq("tcg")
    # A start that failed records no accelerator, but a run gives a runtime one for all its
    # starts: its failed rows belong with its emulated ones, not under a second name.
    tcg |= df["accelerator"].isna() & df["runtime"].isin(set(df.loc[tcg, "runtime"]))
    tcg &= ~df["runtime"].str.endswith(EMULATED)
    if not tcg.any():
        return df
    df = df.copy()
    df.loc[tcg, "runtime"] = df.loc[tcg, "runtime"] + EMULATED
    return df


def mark_cold(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of a start with the page cache dropped first (`cache` cold) get their own runtime
    label, "docker (cold)", and those of a start whose image was pulled first (`first`),
    "docker (first)": warm, cold and first starts are reported apart, never averaged together."""
    if "cache" not in df.columns or df.empty:
        return df
    out = df
    for cache, suffix in (("cold", COLD), ("first", FIRST)):
        rows = out["cache"].astype(str).eq(cache) & ~out["runtime"].str.endswith(suffix)
        if rows.any():
            out = out.copy() if out is df else out
            out.loc[rows, "runtime"] = out.loc[rows, "runtime"] + suffix
    return out


def cell_health(rows: pd.DataFrame, show_unknown: bool = True) -> str:
    """One cell's mark from the health of the rows behind it, counted in repetitions (a repetition
    is throttled if any of its rows is): '† throttled 2/5, busy 1/5' when any was throttled or
    busy, 'unknown 5/5' when that could not be told (unless `show_unknown` is False), '' when the
    device was fine throughout."""
    reps = rows.groupby("rep", dropna=False)["health"] if "rep" in rows else rows.groupby(rows.index)["health"]
    per_rep = [set().union(*(flags(h) for h in g)) for _, g in reps]
    counts = {f: sum(f in got for got in per_rep) for f in (THROTTLED, BUSY, UNKNOWN)}
    shown = [f"{f} {counts[f]}/{len(per_rep)}" for f in MARKED if counts[f]]
    if shown:
        return f"{HEALTH_MARK} " + ", ".join(shown)
    return f"{UNKNOWN} {counts[UNKNOWN]}/{len(per_rep)}" if counts[UNKNOWN] and show_unknown else ""


def mark_health(table: pd.DataFrame, df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`table` with a `health` column after its keys: each cell's mark (cell_health) from the rows
    of `df` that share its `keys`, whatever their metric or status. Where no row of `df` could
    tell throttling (a device without a sensor), 'unknown' would fill every cell and tell nothing:
    it is left out, and the run's notes say why throttling was not checked. Results recorded
    before health was sampled have no `health` column: the table is returned as it is."""
    if "health" not in df or table.empty:
        return table
    keys = [k for k in keys if k in table and k in df]
    if not keys:
        return table

    def key_of(values) -> tuple:  # NaN never equals NaN: a missing key matches as None
        return tuple(None if pd.isna(v) else v for v in (values if isinstance(values, tuple) else (values,)))

    unknown_everywhere = df["health"].map(lambda h: UNKNOWN in flags(h)).all()
    marks = {key_of(key): cell_health(g, show_unknown=not unknown_everywhere)
             for key, g in df.groupby(keys, dropna=False)}
    values = [marks.get(key_of(r), "") for r in table[keys].itertuples(index=False, name=None)]
    table = table.drop(columns="health", errors="ignore")
    table.insert(max(table.columns.get_loc(k) for k in keys) + 1, "health", values)
    return table


def health_notes(run_dir, df: pd.DataFrame | None = None) -> list[str]:
    """The footnote to the dagger, and why throttling could not be checked where it could not."""
    notes = (load_meta(Path(run_dir)).get("notes") or {}).get("health")
    lines = []
    if df is not None and "health" in df and len(df):
        hit = {f: int(df["health"].map(lambda h, f=f: f in flags(h)).sum()) for f in (THROTTLED, BUSY)}
        if any(hit.values()):
            lines.append(f"- **{HEALTH_MARK} {HEALTH_LABEL}**: {hit[THROTTLED]} of {counted(len(df), 'row')} "
                         f"throttled, {hit[BUSY]} busy (every sample is in health.csv beside the results)")
    if notes:
        if notes.get("throttle_unknown"):
            lines.append(f"- Throttling not checked: {notes['throttle_unknown']}")
        elif notes.get("throttle_sources"):
            lines.append(f"- Throttling checked with: {'; '.join(notes['throttle_sources'])}")
    return lines


def reference_for(reference: pd.DataFrame, runtimes) -> pd.DataFrame:
    """The papers' values also under each emulated label, so "nanos (TCG)" shows the paper's
    Nanos number beside it (the paper ran on KVM: the gap is the emulator's)."""
    extra = [reference[reference["runtime"] == base_runtime(r)].assign(runtime=r)
             for r in dict.fromkeys(runtimes) if r != base_runtime(r)]
    return pd.concat([reference, *extra], ignore_index=True) if extra else reference


def beside_published(table: pd.DataFrame, reference: pd.DataFrame, metric: str, on: dict[str, str],
                     column: str, value: str = "value", scale: float = 1.0) -> pd.DataFrame:
    """`table` with the papers' `metric` as `column`, matched on `on` (reference column -> table
    column). One paper value per key: a repeated key would duplicate the measured rows."""
    reference = reference_for(reference, table["runtime"])
    ref = reference[reference["metric"] == metric][[*on, value]].rename(columns={**on, value: column})
    ref[column] = ref[column] * scale
    keys = list(on.values())
    for k in keys:  # the reference CSVs leave some keys empty; match like with like
        if k in table and pd.api.types.is_numeric_dtype(table[k]):
            ref[k] = pd.to_numeric(ref[k], errors="coerce")
    return table.merge(ref.drop_duplicates(keys), on=keys, how="left")


def run_notes(run_dir, df: pd.DataFrame | None = None) -> str:
    """What a reader needs before the numbers: runtimes that were not measured and why, which VM
    rows ran under software emulation, and the device's health (the dagger's footnote)."""
    lines = []
    meta = load_meta(Path(run_dir))
    notes = meta.get("notes") or {}
    device = device_notes(meta.get("target") or {}, notes)
    for name, why in (notes.get("skipped_runtimes") or {}).items():
        lines.append(f"- **{name}** not measured: {why}")
    # Available, but this experiment's programs cannot run there (a unikernel runs no Linux tools).
    for name, why in (notes.get("absent_runtimes") or {}).items():
        lines.append(f"- **{name}** not in this experiment: {why}")
    left_out = notes.get("left_out") or {}
    if left_out:  # app and runtime pairs that cannot run: left out of the sweep, not failed
        pairs = "; ".join(f"{pair} ({why})" for pair, why in left_out.items())
        lines.append(f"- Left out, as they cannot run: {pairs}")
    if df is not None and "status" in df.columns:
        nm = df[df["status"] == NOT_MEASURABLE]
        not_run = memory_limits_not_run(df) if "error" in df.columns else ""
        if not_run:  # said once for all its levels and runtimes, not a reason per row
            lines.append(f"- {not_run}")
            nm = nm[~nm["error"].astype(str).str.contains(LIMIT_NOT_APPLIED, regex=False)]
        if not nm.empty:
            reasons = nm["error"].astype(str).map(lambda why: textwrap.shorten(why, 260, placeholder=" ...")) \
                .value_counts()  # cut at a word, long enough for what to change at the end of a reason
            more = f" ({counted(len(reasons) - 3, 'more reason')} in the table)" if len(reasons) > 3 else ""
            lines.append(f"- **{counted(len(nm), 'row')} not measurable here** (not failures; "
                         f"{', '.join(in_runtime_order(nm['runtime'].dropna().unique()))}): "
                         + "; ".join(f"{why} ({n})" for why, n in reasons.head(3).items()) + more)
    if df is not None and "accelerator" in df.columns:
        for rt, accels in df.dropna(subset=["accelerator"]).groupby("runtime")["accelerator"]:
            kinds = ", ".join(sorted(set(accels.astype(str))))
            emulated = " (labelled *" + rt + EMULATED + "*: software emulation, not comparable with the " \
                "paper's KVM numbers)" if "tcg" in kinds else ""
            lines.append(f"- **{rt}** ran with accelerator: {kinds}{emulated}")
    if df is not None and {"runtime", "status", "error"} <= set(df.columns):
        for rt, (rows, why, what) in failed_runtimes(df).items():
            if what != "failed" and LIMIT_NOT_APPLIED in why:
                continue  # the memory levels not run, said once above for every runtime
            if rows == 1:
                happened = f"its one row {'failed' if what == 'failed' else 'is ' + what}: {why}"
            else:
                happened = (f"all {rows} of its rows {'failed' if what == 'failed' else 'are ' + what}, "
                            f"most often: {why}")
            lines.append(f"- **{rt}** is in no figure: {happened}")
    health = health_notes(run_dir, df)
    return "\n".join(device + (lines or ["- Every runtime was measured."]) + health)


# What a run's profile makes of its numbers, said before them (report pages, edgebench's answer).
PROFILE_CAVEATS = {
    "smoke": "Smoke test: one point per runtime, to see that every part of the pipeline runs on this device. "
             "Its numbers mean nothing as measurements.",
    "quick": "Quick profile: small sizes and few repetitions. Its numbers are indicative only; the standard "
             "profile measures with the papers' settings.",
}


def device_notes(facts: dict, notes: dict) -> list[str]:
    """Said first: an emulated device's numbers are not a device's, and memory limits that the
    device's kernel did not apply."""
    lines = []
    if facts.get("emulated_device"):
        lines.append(f"- Measured on **{facts.get('target')}**, an {facts['emulated_device']}: its numbers "
                     "measure QEMU's emulator, not a device; what they show is that every code path runs there.")
    if notes.get("memory_limits"):
        lines.append(f"- **{notes['memory_limits'][0].upper()}{notes['memory_limits'][1:]}.** Points that ask a "
                     "cgroup for less memory than the device has are not run here (their rows say so); the "
                     "device's own memory and VMs' memory are measured.")
    if notes.get("sanity"):  # edgebench.tools.sanity: a result physics rules out, seen while measuring
        lines.append(f"- **Ruled out:** {notes['sanity']}.")
    if notes.get("stream_rule"):
        lines.append(f"- **{notes['stream_rule'][0].upper()}{notes['stream_rule'][1:]}.**")
    return lines


def stacked_parts(ax, t: pd.DataFrame, parts, total: str, note) -> None:
    """One bar per row of `t`, stacked from `parts` ((column, legend name, colour), bottom to top;
    missing and negative parts drawn as 0), the row's `total` as a line in its runtime's colour
    and `note(row)` above it; x labels from the `label` column."""
    import numpy as np
    x = np.arange(len(t))
    bottom = np.zeros(len(t))
    for column, name, colour in parts:
        values = t[column].astype(float).fillna(0).clip(lower=0).to_numpy()
        ax.bar(x, values, 0.7, bottom=bottom, color=colour, label=name, edgecolor="white")
        bottom += values
    for xi, r in zip(x, t.itertuples()):
        top = getattr(r, total)
        ax.plot([xi - 0.35, xi + 0.35], [top] * 2, color=runtime_colour(r.runtime), linewidth=2.5)
        text = note(r)
        if text:
            ax.text(xi, max(top, bottom[xi]), text, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, t["label"], rotation=20, ha="right")


# -- whiskers: the interval of a median of repeated runs (stacked parts, bars) ----------------

# What a whisker around a median of repeated runs shows (interval() below), for the figures' labels.
WHISKERS = "95% CI of the median over the runs; lowest to highest for 2 runs, none for 1"


# The spreads a figure may draw around a median, best first: the 95% interval, else the range.
INTERVAL_KINDS = ("ci95", "range")


def interval_kind(table: pd.DataFrame, column: str) -> str | None:
    """The one spread a figure draws for `column` (one of INTERVAL_KINDS), read from the table's
    `{column}_{kind}_low`/`_high`: the 95% interval where every drawn median has one, else the
    range; None where the table has neither."""
    drawn = table[column].notna() if column in table else pd.Series(False, index=table.index)
    for kind in INTERVAL_KINDS if drawn.any() else ():
        ends = [f"{column}_{kind}_low", f"{column}_{kind}_high"]
        if set(ends) <= set(table.columns) and table.loc[drawn, ends].notna().all(axis=None):
            return kind
    return None


def interval(values) -> tuple[float, float]:
    """The interval a whisker draws around the median of repeated runs: its 95% bootstrap
    interval from MIN_N runs on (tables.spread), both runs where there are two (the CI is NaN
    below MIN_N; as iomt's and microbenchmarks' figures), and nothing (NaN) for one run."""
    s = spread(pd.Series(values, dtype=float))
    if s["n"] >= MIN_N:
        return s["ci_low"], s["ci_high"]
    if s["n"] == 2:
        return s["min"], s["max"]
    return math.nan, math.nan


def draw_whiskers(ax, at, centre, low, high, horizontal: bool = False, capsize: float = 3):
    """Black whiskers (small caps, a white edge) from low to high at positions `at` (x for vertical
    bars, y for horizontal ones) around `centre`, one errorbar for all of them, rows without an
    interval left out; None if none has one."""
    at, centre, low, high = (np.asarray(v, dtype=float) for v in (at, centre, low, high))
    keep = np.isfinite(at) & np.isfinite(centre) & np.isfinite(low) & np.isfinite(high)
    if not keep.any():
        return None
    at, centre, low, high = at[keep], centre[keep], low[keep], high[keep]
    err = [np.clip(centre - low, 0, None), np.clip(high - centre, 0, None)]
    xy, errs = ((centre, at), dict(xerr=err)) if horizontal else ((at, centre), dict(yerr=err))
    bars = ax.errorbar(*xy, **errs, fmt="none", ecolor="black", elinewidth=1, capsize=capsize, capthick=1, zorder=4)
    # A thin white edge keeps the black whisker visible over the darkest part's shade.
    for artist in (*bars[1], *bars[2]):
        artist.set_path_effects([patheffects.withStroke(linewidth=2.2, foreground="white")])
    return bars


def stacked_with_interval(ax, t: pd.DataFrame, parts, total: str, note) -> None:
    """tables.stacked_parts (the parts' medians stacked, the total's median as a line in the
    runtime's colour) with the total's interval as a whisker (columns `{total}_low` and
    `{total}_high`), and `note(row)` above the highest of bar, line and whisker, with room for it
    under the panel's top (a shared y axis keeps the highest panel's room)."""
    stacked_parts(ax, t, parts, total, lambda r: "")
    x = np.arange(len(t))
    draw_whiskers(ax, x, t[total], t[f"{total}_low"], t[f"{total}_high"])
    stack = sum(t[column].astype(float).fillna(0).clip(lower=0).to_numpy() for column, _, _ in parts)
    tops = pd.DataFrame({"stack": stack, "total": t[total].astype(float).to_numpy(),
                         "high": t[f"{total}_high"].astype(float).to_numpy()}).max(axis=1)
    for xi, top, r in zip(x, tops, t.itertuples()):
        text = note(r)
        if text:
            ax.annotate(text, (xi, top), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                        fontsize=8)
    if tops.notna().any():
        low, high = ax.get_ylim()
        ax.set_ylim(low, max(high, tops.max() + 0.12 * (tops.max() - low)))


def wrapped_suptitle(fig, text: str, fontsize: float = 10) -> None:
    """A suptitle wrapped to the figure's width (a 10 pt character is about 0.075 in): one panel's
    figure cut the long title off at both edges."""
    width = max(50, int(fig.get_figwidth() / (0.0075 * fontsize)))
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in text.split("\n")), fontsize=fontsize)


def absent_figure(title: str, why: str):
    """A figure the notebook promises, drawn as a sentence when the run has nothing for it: why."""
    fig, ax = plt.subplots(figsize=(8, 1.4))
    ax.set_axis_off()
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.5, textwrap.fill(f"Not in this run: {why}.", 100), ha="center", va="center", fontsize=9,
            color="#555555", transform=ax.transAxes)
    return fig
