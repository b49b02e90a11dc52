"""IoMT workloads (paper 001/004, Table 4): end-to-end latency over input size, beside the paper's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.experiments.iomt import LABELS, Params, parse_size
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import (PROTOCOL_TITLE, figure_legend, in_runtime_order, log_dodge, mark_health,
                                      mark_paper_values, paper_key, protocol_grid, protocol_line, protocols_in,
                                      readable_log_ticks, room_for_health_marks)
from edgebench.plotting.tables import (NoData, beside_published, mark_emulated, mark_health as health_column, ok_rows,
                                       interval_kind, sort_by_runtime, spread)
from edgebench.reference import load_reference

KEYS = ["workload", "input_size", "runtime", "protocol"]
PAPER_TABLE_4 = "paper 001, Table 4"


def workload_medians(df: pd.DataFrame, metrics: list[str], spread_of: list[str] | tuple = ()) -> pd.DataFrame:
    """Median per (workload, size, runtime, protocol) of each metric, with n and failed runs of
    the first; `size_n` is the size as a number, to sort and plot by. Each metric in `spread_of`
    (those a figure draws) also gets its spread over the runs (spread_columns)."""
    df = mark_emulated(df)
    base = ok_rows(df, metrics[0])
    table = base.groupby(KEYS)["value"].agg(["median", "count"]).rename(columns={"median": metrics[0], "count": "n"})
    for m in metrics[1:]:
        sel = df[(df["metric"] == m) & (df["status"] == "ok")]
        table = table.join(sel.groupby(KEYS)["value"].median().rename(m), how="left")
    for m in spread_of:
        table = table.join(spread_columns(df, m), how="left")
    failed = df[(df["metric"] == metrics[0]) & (df["status"] == "failed")].groupby(KEYS).size()
    table = table.join(failed.rename("failed"), how="left").fillna({"failed": 0}).reset_index()
    table["size_n"] = table["input_size"].map(parse_size)
    return sort_by_runtime(health_column(table, df, KEYS), ["workload", "size_n", "runtime", "protocol"])


# The spread drawn around each median (tables.interval_kind picks one), with how a label names it
# and the tables.spread statistics that are its ends: the median's 95% interval (bootstrap, NaN
# below 3 runs), else the lowest and highest run (with 2 runs, both runs). The note is a y label's
# second line: short enough (28 characters) for a 3.2-inch panel.
INTERVALS = {"ci95": ("bars: its 95% CI", "ci_low", "ci_high"),
             "range": ("bars: range of runs", "min", "max")}


def spread_columns(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per (workload, size, runtime, protocol): `{metric}_ci95_low`/`_high` and `{metric}_min`/`_max`
    over the successful runs (tables.spread), indexed like workload_medians' table."""
    sel = df[(df["metric"] == metric) & (df["status"] == "ok")]
    columns = [f"{metric}_{kind}_{end}" for kind in INTERVALS for end in ("low", "high")]
    rows = {key: spread(g) for key, g in sel.groupby(KEYS)["value"]}
    if not rows:
        return pd.DataFrame(columns=columns, index=pd.MultiIndex.from_tuples([], names=KEYS), dtype=float)
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index = pd.MultiIndex.from_tuples(out.index, names=KEYS)
    return pd.DataFrame({f"{metric}_{kind}_{end}": out[name] for kind, (_, low, high) in INTERVALS.items()
                         for end, name in (("low", low), ("high", high))}, index=out.index)


def interval_note(kind: str | None) -> str:
    """What a panel's points and bars are, for its axis label."""
    return "median" + (f", {INTERVALS[kind][0]}" if kind else "")


def beside_paper(table: pd.DataFrame, reference: pd.DataFrame, metric: str, column: str) -> pd.DataFrame:
    """The paper's value per workload (its `app` column), size and runtime."""
    on = {"app": "workload", "input_size": "input_size", "runtime": "runtime"}
    return beside_published(table, reference, metric, on, column)


def workload_grid(table: pd.DataFrame, rows_per_workload: int):
    """One column per protocol; `rows_per_workload` rows for each workload."""
    # The paper's order (LZW, AES, k-means), not the alphabet's.
    workloads = sorted(dict.fromkeys(table["workload"]), key=lambda w: (list(LABELS).index(w) if w in LABELS
                                                                        else len(LABELS), w))
    protocols = protocols_in(table["protocol"])
    fig, axes = protocol_grid(len(workloads) * rows_per_workload, protocols, panel_size=(5.0, 3.2))
    return fig, axes, workloads, protocols


def size_axis(ax, workload: str) -> None:
    ax.set_xscale("log")
    ax.set_xlabel(f"input size ({'points' if workload == 'kmeans' else 'bytes'}, log)")
    ax.grid(alpha=0.3)


def beside_size(table: pd.DataFrame, workload: str) -> dict[str, float]:
    """Per runtime, the factor on x that sets it beside each input size of `workload`, in the same
    place in every panel (style.log_dodge): seven runtimes' points, and the paper's crosses for
    native and Docker (6,200 and 6,150 faults at 100KB), drew over one another at one size."""
    runtimes = in_runtime_order(table["runtime"])
    sizes = table[table["workload"] == workload]["input_size"].map(parse_size)
    return {rt: log_dodge(sizes, k, len(runtimes)) for k, rt in enumerate(runtimes)}


def lines_over_size(ax, sub: pd.DataFrame, column: str, protocol: str, scale: float = 1.0,
                    interval: str | None = None, beside: dict[str, float] | None = None) -> None:
    """One line per runtime of `column` over input size, each runtime at its own x beside the
    size (`beside`, from beside_size); with `interval` (a key of INTERVALS, from interval_kind)
    each median carries its bars, in the runtime's colour."""
    if column not in sub:  # a counter this machine never recorded
        return
    for rt in in_runtime_order(sub["runtime"]):
        g = sub[sub["runtime"] == rt].sort_values("size_n").dropna(subset=[column])
        if g.empty:
            continue
        x = g["size_n"].to_numpy(float) * (beside or {}).get(rt, 1.0)
        y = g[column].to_numpy(float) * scale
        if interval:
            low, high = (g[f"{column}_{interval}_{end}"].to_numpy(float) * scale for end in ("low", "high"))
            yerr = [np.clip(y - low, 0, None), np.clip(high - y, 0, None)]
            ax.errorbar(x, y, yerr=yerr, capsize=2.5, elinewidth=1, label=rt, **protocol_line(rt, protocol))
            y = np.fmax(y, high)  # the dagger above the bar, not on it
        else:
            ax.plot(x, y, label=rt, **protocol_line(rt, protocol))
        mark_health(ax, x, y, g.get("health"))


def mark_papers_sizes(ax, table: pd.DataFrame, workload: str, column: str, source: str,
                      beside: dict[str, float]) -> None:
    """The paper's values for `workload` as crosses, each beside its size where its runtime's
    own points are, one legend entry for them all (paper_key)."""
    paper = table[table["workload"] == workload].dropna(subset=[column]).drop_duplicates(["input_size", "runtime"])
    for rt in in_runtime_order(paper["runtime"]):
        g = paper[paper["runtime"] == rt]
        mark_paper_values(ax, g["input_size"].map(parse_size) * beside.get(rt, 1.0), g[column], rt, source,
                          legend=False)


# -- Table 4: end-to-end latency ------------------------------------------------------

LATENCY_DRAWN = ["end_to_end_latency", "startup_overhead"]


def latency_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Medians in seconds: end-to-end, the program's own time, its work phase and the start-up
    overhead (end-to-end minus the program's time), with Table 4's value beside; the two the
    figure draws also with their spread (spread_columns)."""
    table = workload_medians(df, ["end_to_end_latency", "program_time", "work_time", "startup_overhead",
                                  "throughput"], spread_of=LATENCY_DRAWN)
    return beside_paper(table, reference, "end_to_end_latency", "published_s").drop(columns="size_n")


def latency_figure(table: pd.DataFrame):
    """Per workload two rows, one column per protocol: end-to-end latency over input size
    (log-log, Table 4 as crosses), and the part that is not the program's own time; each median
    with its bars (interval_kind), which the row's label names."""
    if table.empty:
        raise NoData("IoMT latency table is empty")
    table = table.assign(size_n=table["input_size"].map(parse_size))
    e2e, startup = (interval_kind(table, c) for c in LATENCY_DRAWN)
    fig, axes, workloads, protocols = workload_grid(table, 2)
    for i, w in enumerate(workloads):
        for j, proto in enumerate(protocols):
            top, bottom = axes[2 * i][j], axes[2 * i + 1][j]
            sub = table[(table["workload"] == w) & (table["protocol"] == proto)]
            beside = beside_size(table, w)
            # Both rows in seconds, as Table 4: a reader compares the start-up with the whole.
            lines_over_size(top, sub, "end_to_end_latency", proto, interval=e2e, beside=beside)
            lines_over_size(bottom, sub, "startup_overhead", proto, interval=startup, beside=beside)
            mark_papers_sizes(top, table, w, "published_s", PAPER_TABLE_4, beside)
            for ax in (top, bottom):
                size_axis(ax, w)
                ax.set_title(f"{LABELS.get(w, w)}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
            # Log too: a VM's start-up under TCG (10-20 s) beside native's milliseconds.
            bottom.set_yscale("log")
            top.set_yscale("log")
        axes[2 * i][0].set_ylabel(f"end-to-end latency (s, log)\n{interval_note(e2e)}")
        axes[2 * i + 1][0].set_ylabel(f"start-up + teardown (s, log)\n{interval_note(startup)}")
    room_for_health_marks(axes)
    for ax in np.ravel(axes):
        readable_log_ticks(ax)  # once every column has widened its row's shared range
    fig.suptitle("IoMT workloads: launch to exit, and the part that is not the program's own time\n"
                 "(each runtime beside the input size it ran, in the same place in every panel)")
    papers = "published_s" in table and table["published_s"].notna().any()
    figure_legend(fig, extra=[paper_key(PAPER_TABLE_4)] if papers else [])
    return fig


def latency_findings(table: pd.DataFrame) -> str:
    """Docker/native ratios per workload at the smallest and largest size (once, where the run has
    one size), next to the paper's, and Docker's extra start-up + teardown over the sizes."""
    lines = []
    for proto in ("fair", "published"):
        t = table[table["protocol"] == proto]
        piv = t.pivot_table(index=["workload", "input_size"], columns="runtime",
                            values=["end_to_end_latency", "published_s", "startup_overhead"], aggfunc="first")
        if ("end_to_end_latency", "docker") not in piv.columns or ("end_to_end_latency", "native") not in piv.columns:
            continue
        for w in dict.fromkeys(t["workload"]):
            rows = piv.loc[w] if w in piv.index.get_level_values(0) else None
            if rows is None:
                continue
            rows = rows.iloc[np.argsort([parse_size(s) for s in rows.index])]
            parts = []
            for size in dict.fromkeys((rows.index[0], rows.index[-1])):
                r = rows.loc[size]
                d, n = r[("end_to_end_latency", "docker")], r[("end_to_end_latency", "native")]
                if pd.isna(d) or pd.isna(n):
                    continue
                part = f"{size}: docker {d:.3g} s vs native {n:.3g} s (x{d / n:.2g})"
                pd_, pn = r.get(("published_s", "docker")), r.get(("published_s", "native"))
                if pd_ is not None and pn is not None and not pd.isna(pd_) and not pd.isna(pn):
                    part += f"; paper x{pd_ / pn:.2g} ({pd_:g} s vs {pn:g} s)"
                parts.append(part)
            if parts:
                lines.append(f"- **{LABELS.get(w, w)}** ({proto}): " + "; ".join(parts) + ". " + extra_startup(rows))
    return "\n".join(lines)


def extra_startup(rows: pd.DataFrame) -> str:
    """Docker's start-up + teardown minus native's, per size (one workload's pivoted rows), in
    seconds as the figure: one value at one size, else its range over the sizes."""
    def get(rt):
        return rows.get(("startup_overhead", rt), pd.Series(np.nan, index=rows.index))

    extra = (get("docker") - get("native")).dropna()
    if extra.empty:
        return ""
    if len(extra) == 1:
        return f"Docker's extra start-up + teardown: {extra.iloc[0]:.3g} s (at {extra.index[0]})."
    low, high = f"{extra.min():.3g}", f"{extra.max():.3g}"
    span = f"{low} s at each of the" if low == high else f"{low} s to {high} s over the"
    return f"Docker's extra start-up + teardown: {span} {len(extra)} sizes."


def checksum_findings(df: pd.DataFrame) -> str:
    """Every runtime must produce the same output for the same input: a run that cannot show it
    is not a faster run, it is a broken one."""
    runs = df[(df["metric"] == "end_to_end_latency") & (df["status"] == "ok")]
    if runs.empty:
        raise NoData("no successful runs to compare outputs of")
    groups = runs.groupby(["workload", "input_size", "entropy", "seed"])["checksum"]
    split = {k: sorted(set(v.dropna())) for k, v in groups if len(set(v.dropna())) != 1}
    if not split:
        return (f"- Outputs agree: every one of the {len(runs)} runs of the same workload, size and seed "
                "produced the same checksum, whatever the runtime or protocol.")
    return "\n".join(f"- **Outputs differ** for {k[0]} {k[1]} (seed {k[3]}): {v}" for k, v in split.items())


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> Page:
    """Notebook 05: the run's notes, the latencies beside Table 4, the figure, its findings and
    whether every runtime computed the same outputs."""
    df = open_page(run_dir)
    table = latency_table(df, load_reference(params.EXPERIMENT))
    show_table(table, 4)
    show_figure(latency_figure(table), params.EXPERIMENT, "iomt_latency", run_dir)
    show_findings(latency_findings(table), checksum_findings(df))
    return Page(run_dir, df, table)
