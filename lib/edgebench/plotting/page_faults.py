"""Page faults and cache misses of the IoMT workloads (paper 001/004, Table 5 and Fig. 1),
beside the paper's counts."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.experiments.iomt import LABELS, parse_size
from edgebench.experiments.page_faults import Params
from edgebench.plotting.iomt import (beside_paper, beside_size, interval_kind, interval_note, lines_over_size,
                                     mark_papers_sizes, size_axis, workload_grid, workload_medians)
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import PROTOCOL_TITLE, figure_legend, paper_key, readable_log_ticks, room_for_health_marks
from edgebench.plotting.tables import NoData, mark_emulated
from edgebench.reference import load_reference
from edgebench.results import NOT_MEASURABLE

FAULT_METRICS = ["perf_page_faults", "faults_cgroup", "faults_inprocess", "launcher_faults", "perf_cache_misses"]
# The counts a figure may draw (counted_faults picks one of the first two), kept with their spread.
DRAWN = ["perf_page_faults", "faults_cgroup", "perf_cache_misses"]
PAPER_TABLE_5 = "paper 001, Table 5"
CACHE_MISS_WORKLOADS = ("lzw", "aes")  # the workloads the paper's Fig. 1 shows


def faults_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median fault counts per source, faults per MB of input, and Table 5 beside. `perf_page_faults`
    is what perf counted: the run's cgroup under `fair`, the launch command under `published`. The
    counts the figures draw also with their spread over the runs (iomt.spread_columns)."""
    present = [m for m in FAULT_METRICS if m in set(df["metric"])]
    table = workload_medians(df, ["end_to_end_latency"] + present, spread_of=[m for m in DRAWN if m in present])
    table = beside_paper(table, reference, "page_faults", "published_faults")
    mb = table["size_n"].where(table["workload"] != "kmeans") / 1e6
    for metric, column in (("perf_page_faults", "perf_faults_per_MB"), ("faults_cgroup", "cgroup_faults_per_MB")):
        table[column] = table[metric] / mb if metric in table else np.nan
    return table.drop(columns=["size_n", "end_to_end_latency"], errors="ignore")


def counted_faults(table: pd.DataFrame) -> tuple[str, str]:
    """perf's count where the machine has one, else the cgroup's memory.stat."""
    if "perf_page_faults" in table and table["perf_page_faults"].notna().any():
        return "perf_page_faults", "page faults (perf stat)"
    return "faults_cgroup", "faults (cgroup memory.stat)"


def missing_counters(df: pd.DataFrame) -> pd.DataFrame:
    """Counters this device could not count, with the reason each time (e.g. no hardware PMU):
    `not measurable` rows, and runs from before that status, ok rows without a value."""
    perf = df[df["metric"].str.startswith("perf_") | df["metric"].str.startswith("faults_")]
    missing = perf[perf["value"].isna() & perf["status"].isin(["ok", NOT_MEASURABLE])]
    if missing.empty:
        return pd.DataFrame(columns=["metric", "runtime", "protocol", "rows", "reason"])
    reason = missing["error"].astype(object).where(missing["status"] == NOT_MEASURABLE, missing.get("note"))
    # Each run has its own cgroup: said once for all of them.
    reason = reason.fillna("").astype(str).str.replace(r"/sys/fs/cgroup/\S+/memory\.stat",
                                                        "the run's cgroup's memory.stat", regex=True)
    return (missing.assign(reason=reason)
            .groupby(["metric", "runtime", "protocol", "reason"]).size().rename("rows").reset_index()
            [["metric", "runtime", "protocol", "rows", "reason"]])


def counts_figure(table: pd.DataFrame, metric: str, ylabel: str, paper_column: str | None):
    """One row per workload, one column per protocol: `metric` over input size, log-log, each
    median with its bars (iomt.interval_kind), which the row's label names; each runtime, and the
    paper's cross for it, beside the size (iomt.beside_size)."""
    table = table.assign(size_n=table["input_size"].map(parse_size))
    interval = interval_kind(table, metric)
    fig, axes, workloads, protocols = workload_grid(table, 1)
    for i, w in enumerate(workloads):
        for j, proto in enumerate(protocols):
            ax, beside = axes[i][j], beside_size(table, w)
            lines_over_size(ax, table[(table["workload"] == w) & (table["protocol"] == proto)], metric, proto,
                            interval=interval, beside=beside)
            if paper_column:
                mark_papers_sizes(ax, table, w, paper_column, PAPER_TABLE_5, beside)
            size_axis(ax, w)
            ax.set_yscale("log")
            ax.set_title(f"{LABELS.get(w, w)}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
        axes[i][0].set_ylabel(f"{ylabel}, log\n{interval_note(interval)}")
    room_for_health_marks(axes)
    for ax in np.ravel(axes):
        readable_log_ticks(ax)  # no 2x10^2, 3x10^2, ... printed over each other in a row under a decade or two
    return fig


def undrawn(table: pd.DataFrame, metric: str, missing: pd.DataFrame | None) -> list[str]:
    """'runtime, protocol: why' for each runtime a protocol's panels cannot draw: rows there, none
    with a value of `metric` (Docker without root on the device has no cgroup to count)."""
    if metric not in table:
        return []
    out = []
    for (runtime, protocol), g in table.groupby(["runtime", "protocol"], sort=False):
        if g[metric].notna().any():
            continue
        why = ""
        if missing is not None and not missing.empty:
            said = missing[(missing["metric"] == metric) & (missing["runtime"] == runtime)
                           & (missing["protocol"] == protocol)]
            why = str(said["reason"].iloc[0]) if not said.empty else ""
        out.append(f"{runtime}, {protocol}: {why or 'no value recorded'}")
    return out


def faults_figure(table: pd.DataFrame, missing: pd.DataFrame | None = None):
    """Faults over input size as each protocol counts them, Table 5 as crosses. `missing`
    (missing_counters of the rows): why a runtime without a value in a protocol is not drawn,
    said under the title."""
    if table.empty:
        raise NoData("page-fault table is empty")
    metric, label = counted_faults(table)
    fig = counts_figure(table, metric, label, "published_faults")
    fig.suptitle("Page faults: fair counts the workload's cgroup, published counts the launch command\n"
                 "(each runtime beside the input size it ran, in the same place in every panel)")
    notes = undrawn(table, metric, missing)
    if notes:
        width = max(40, int(fig.get_figwidth() / 0.06))
        fig.text(0.5, 0.955, "\n".join(textwrap.fill(f"Not drawn: {n}", width) for n in notes), ha="center",
                 va="top", fontsize=8, color="#a00000")
    papers = "published_faults" in table and table["published_faults"].notna().any()
    figure_legend(fig, extra=[paper_key(PAPER_TABLE_5)] if papers else [])
    return fig


def cache_miss_figure(table: pd.DataFrame):
    """Fig. 1 (cache misses, LZW and AES) where the machine counts them; None when it cannot.
    The paper's Fig. 1 prints no numbers, so there are none to mark."""
    if "perf_cache_misses" not in table:
        return None
    shown = table[table["workload"].isin(CACHE_MISS_WORKLOADS) & table["perf_cache_misses"].notna()]
    if shown.empty:
        return None
    fig = counts_figure(table[table["workload"].isin(CACHE_MISS_WORKLOADS)], "perf_cache_misses",
                        "cache misses (perf stat)", None)
    fig.suptitle("Cache misses (paper 001, Fig. 1)")
    figure_legend(fig)
    return fig


def growth(table: pd.DataFrame, metric: str, workload: str, runtime: str, protocol: str) -> float | None:
    """How many times the count grows from the smallest to the largest input size."""
    g = table[(table["workload"] == workload) & (table["runtime"] == runtime) & (table["protocol"] == protocol)]
    g = g.dropna(subset=[metric]).assign(size_n=lambda t: t["input_size"].map(parse_size)).sort_values("size_n")
    if len(g) < 2 or g[metric].iloc[0] <= 0:
        return None
    return float(g[metric].iloc[-1] / g[metric].iloc[0])


def faults_findings(table: pd.DataFrame) -> str:
    """Which protocol reproduces Table 5's shape: Docker flat while native grows with the input."""
    metric, _ = counted_faults(table)
    lines = []
    for w in dict.fromkeys(table["workload"]):
        sizes = sorted(set(table[table["workload"] == w]["input_size"]), key=parse_size)
        span = f"{sizes[0]} to {sizes[-1]}"
        verdicts = {}
        for proto in ("published", "fair"):
            d, n = growth(table, metric, w, "docker", proto), growth(table, metric, w, "native", proto)
            if d is None or n is None:
                continue
            # Table 5's shape: Docker within 1.5x across sizes while native grows at least 3x.
            verdicts[proto] = d < 1.5 and n >= 3
            lines.append(f"- **{LABELS.get(w, w)}**, {proto}: from {span} Docker's counted faults grow "
                         f"x{d:.2g}, native's x{n:.2g}"
                         + (" (Table 5's shape: Docker flat, native growing)." if verdicts[proto] else "."))
        if verdicts.get("published") and not verdicts.get("fair"):
            lines.append("  - So Table 5's flat Docker column comes from what was counted: the published "
                         "protocol counts the `docker run` client; the workload itself faults like native.")
        elif verdicts and not any(verdicts.values()):
            lines.append("  - Neither protocol shows Table 5's shape at these sizes; see the table.")
    if not lines:  # a finding, not a failed notebook: one size (the smoke profile, sizes="100KB") is a valid run
        sizes = ", ".join(sorted(set(table["input_size"].astype(str)), key=parse_size)) or "none"
        return ("- No growth to compare: Table 5's shape needs native and Docker rows at two or more input "
                f"sizes (this run has {sizes}); set `sizes`, for example \"100KB,10MB\".")
    return "\n".join(lines)


def agreement_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per fair run: the workload's own getrusage against its cgroup's and perf's counts."""
    df = mark_emulated(df)
    runs = df[(df["protocol"] == "fair") & (df["status"] == "ok")]
    piv = runs.pivot_table(index=["workload", "input_size", "runtime", "rep"], columns="metric", values="value",
                           aggfunc="first")
    cols = [c for c in ("faults_inprocess", "faults_cgroup", "perf_page_faults") if c in piv.columns]
    out = piv[cols].copy()
    if {"faults_inprocess", "faults_cgroup"} <= set(cols):
        out["cgroup/inprocess"] = out["faults_cgroup"] / out["faults_inprocess"]
    if {"faults_inprocess", "perf_page_faults"} <= set(cols):
        out["perf/inprocess"] = out["perf_page_faults"] / out["faults_inprocess"]
    return out.reset_index()


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

# Said where its section of the page begins (the page is one call: no Markdown cell sits between its parts).
AGREEMENT_SECTION = ("Where each count comes from, per fair run: the workload's own `getrusage` against its cgroup's "
                     "`memory.stat` and perf's cgroup count (a container's count also holds its runtime's "
                     "in-container init).")
CACHE_MISS_SECTION = ("Fig. 1 (cache misses) needs hardware counters; where the machine has none, the rows are missing "
                      "with the reason below.")


@dataclass
class PageFaultsPage(Page):
    """`table`: faults per workload, size, runtime and protocol, beside Table 5."""
    agreement: pd.DataFrame  # per fair run: the workload's own count against its cgroup's and perf's
    missing: pd.DataFrame    # counters this device could not count, and why


@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> PageFaultsPage:
    """Notebook 06: the run's notes, the faults beside Table 5, their figure (saying what it cannot
    draw) and findings, how the counters agree, the cache misses where the machine counts them, and
    the counters it could not count."""
    df = open_page(run_dir)
    table = faults_table(df, load_reference(params.EXPERIMENT))
    missing = missing_counters(df)
    show_table(table, 1)
    show_figure(faults_figure(table, missing), params.EXPERIMENT, "page_faults", run_dir)
    show_findings(faults_findings(table))
    agreement = agreement_table(df)
    show_findings(AGREEMENT_SECTION)
    show_table(agreement, 3)
    show_findings(CACHE_MISS_SECTION)
    misses = cache_miss_figure(table)
    if misses is not None:  # a machine without a hardware PMU counts no cache misses
        show_figure(misses, params.EXPERIMENT, "cache_misses", run_dir)
    show_table(missing)
    return PageFaultsPage(run_dir, df, table, agreement, missing)
