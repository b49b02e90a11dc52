"""The LXD appendix (paper 001/004, Fig. 2): host vs system container (and Docker), sysbench 1.0.
The paper's figure carries no numbers, only statements: the findings list them beside ours."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.ticker import NullFormatter

from edgebench.experiments.lxd_appendix import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import (figure_legend, in_runtime_order, log_dodge, mark_health, plt, runtime_artist,
                                      runtime_colour)
from edgebench.plotting.tables import NoData, cell_health, ratio_to_baseline
from edgebench.reference import load_reference

# (benchmark, x column, metric, unit, title) per panel of the paper's Fig. 2.
PANELS = [("fileio", "files", "file_creation_latency", "ms per 1 MiB file", "(a) file creation"),
          ("fileio", "files", "io_throughput", "MiB/s (read + write)", "(b) file I/O, random r/w"),
          ("memory", "threads", "latency_avg", "avg latency per 1 MiB block (ms)", "(c) memory"),
          ("cpu", "threads", "total_time", "time for a fixed amount of work (s)", "(d) CPU")]
PAPER_STATEMENTS = {"(a) file creation": "LXD 7x slower (350 s vs 50 s)",
                    "(b) file I/O, random r/w": "LXD plateaus at 100 MB/s, host up to 10,000 MB/s",
                    "(c) memory": "LXD 10-20% slower",
                    "(d) CPU": "LXD 3x slower at 10,000 threads (30 s vs 10 s)"}


def appendix_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median and quartiles per panel, runtime and x, and the ratio to native's median."""
    ok = df[(df["status"] == "ok") & df["value"].notna()].copy()
    io = ok[ok["metric"].isin(["read_throughput", "write_throughput"])]
    # A read and a write throughput make one point: it carries both rows' health.
    agg = {"value": "sum", **({"health": lambda h: ",".join(h.dropna())} if "health" in io else {})}
    io_sum = io.groupby(["runtime", "files", "rep"]).agg(agg).reset_index().assign(
        metric="io_throughput", benchmark="fileio")
    ok = pd.concat([ok, io_sum], ignore_index=True, sort=False)
    rows = []
    for bench, x, metric, unit, title in PANELS:
        sel = ok[(ok["benchmark"] == bench) & (ok["metric"] == metric)]
        for (rt, xv), g in sel.groupby(["runtime", x]):
            rows.append(dict(panel=title, runtime=rt, x=int(xv), x_name=x, metric=metric, unit=unit,
                             median=g["value"].median(), q1=g["value"].quantile(0.25),
                             q3=g["value"].quantile(0.75), n=len(g),
                             **({"health": cell_health(g)} if "health" in g else {})))
    if not rows:
        raise NoData("no successful appendix measurements")
    table = pd.DataFrame(rows)
    table["vs_native"] = ratio_to_baseline(table, "median", table["runtime"] == "native", ["panel", "x"])
    return table


def appendix_figure(table: pd.DataFrame):
    """The four panels of Fig. 2: one line per runtime, the median with its quartiles, each runtime
    beside the swept value (the tick) rather than on it (style.log_dodge): native, Docker and LXD
    at one value drew one point, LXD's, over the other two."""
    if table.empty:
        raise NoData("LXD appendix table is empty")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    runtimes = in_runtime_order(table["runtime"])  # one place per runtime in every panel
    for ax, (_, x, _, unit, title) in zip(axes.flat, PANELS):
        sub = table[table["panel"] == title]
        for place, rt in enumerate(in_runtime_order(sub["runtime"])):
            g = sub[sub["runtime"] == rt].sort_values("x")
            xs = g["x"] * log_dodge(sub["x"], runtimes.index(rt), len(runtimes))
            # Quartiles, not mean +- stdev: they stay within the measured values.
            ax.errorbar(xs, g["median"], yerr=[g["median"] - g["q1"], g["q3"] - g["median"]], marker="o",
                        capsize=3, label=rt, **runtime_artist(rt))
            mark_health(ax, xs, g["median"], g.get("health"), beside=(5 + 7 * place, 0),
                        colour=runtime_colour(rt))
        ax.set_xscale("log")
        ax.margins(x=0.12)  # room right of the last points for their daggers
        # Ticks at the swept values (8, 32 files; 1, 16, 256 threads), not at 2x10^1, 3x10^1.
        swept = sorted(set(sub["x"]))
        ax.set_xticks(swept, [f"{v:g}" for v in swept])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("files of 1 MiB" if x == "files" else "threads")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.suptitle("LXD appendix: host vs system container (and Docker), sysbench 1.0\n"
                 "(each runtime beside the swept value, in the same place in every panel)")
    figure_legend(fig)
    return fig


def span(g: pd.DataFrame) -> str:
    """One runtime's ratios to native in a panel: a range over the swept values, or the one value
    where there is one ("2.35x of native (at 8 files)", not "2.35x-2.35x (over files 8-8)")."""
    low, high = f"{g['vs_native'].min():.2f}x", f"{g['vs_native'].max():.2f}x"
    xs, name = sorted(set(g["x"])), g["x_name"].iloc[0]
    where = f"at {xs[0]} {name[:-1] if xs[0] == 1 else name}" if len(xs) == 1 else f"over {xs[0]}-{xs[-1]} {name}"
    return f"{low if low == high else f'{low}-{high}'} of native ({where})"


def appendix_findings(table: pd.DataFrame, reference: pd.DataFrame, df: pd.DataFrame) -> str:
    """Each panel's range of ratios to native, beside what the paper states."""
    lines = []
    for title in dict.fromkeys(table["panel"]):
        sub = table[(table["panel"] == title) & (table["runtime"] != "native")].dropna(subset=["vs_native"])
        if sub.empty:
            continue
        parts = [f"{rt} {span(g)}" for rt, g in sub.groupby("runtime")]
        lines.append(f"- **{title}**: " + "; ".join(parts) + f". Paper: {PAPER_STATEMENTS.get(title, '-')}.")
    failed = df[df["status"] == "failed"]
    for _, r in failed.drop_duplicates(["runtime", "point"]).iterrows():
        lines.append(f"- {r['runtime']} {r['point']}: failed ({str(r['error'])[:160]})")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@dataclass
class LxdAppendixPage(Page):
    """`table`: per panel, runtime and swept value, each ratio to native."""
    reference: pd.DataFrame  # what the appendix states, which the findings set the ratios beside


@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> LxdAppendixPage:
    """Notebook 07: the run's notes, the ratios to native, their figure and findings beside what
    the appendix states, and the appendix's own values."""
    df = open_page(run_dir)
    reference = load_reference(params.EXPERIMENT)
    table = appendix_table(df)
    show_table(table, 3)
    show_figure(appendix_figure(table), params.EXPERIMENT, "lxd_appendix", run_dir)
    show_findings(appendix_findings(table, reference, df))
    show_table(reference[["runtime", "workload", "threads", "metric", "value", "unit", "qualifier"]])
    return LxdAppendixPage(run_dir, df, table, reference)
