"""Minimum memory (paper 002, Unikraft's Fig. 4): the least memory each runtime served an app in,
beside the range the Unikraft page gives for its guests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from edgebench.experiments.min_memory import MEASURED_APPS, Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import plt, readable_log_ticks, runtime_artist
from edgebench.plotting.tables import NoData, mark_emulated, ok_rows, sort_by_runtime, spread, wrapped_suptitle
from edgebench.reference import load_reference


def paper_range(reference: pd.DataFrame) -> tuple[float, float] | None:
    """(low, high) MB the page gives for Unikraft guests, as printed, or None."""
    ref = reference[reference["runtime"] == "unikraft"].set_index("metric")["value"]
    if not {"min_memory_low", "min_memory_high"} <= set(ref.index):
        return None
    return float(ref["min_memory_low"]), float(ref["min_memory_high"])


# The page prints MB (10^6 bytes); the limits here are MiB (2^20 bytes, what cgroups and QEMU take).
MIB_PER_MB = 1e6 / 2 ** 20


def paper_range_mib(reference: pd.DataFrame) -> tuple[float, float] | None:
    """paper_range in MiB, the unit of the bars it is drawn beside: 2-6 MB is 1.9-5.7 MiB."""
    band = paper_range(reference)
    return None if band is None else (band[0] * MIB_PER_MB, band[1] * MIB_PER_MB)


def min_memory_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per app and runtime: the median minimum over repetitions, its range, how it was
    bounded and how many trials the searches took."""
    found = mark_emulated(ok_rows(df, "min_memory"))
    trials = mark_emulated(df[df["metric"] == "ready_at_memory"])
    rows = []
    for (app, rt), g in found.groupby(["app", "runtime"]):
        s = spread(g["value"].astype(float))
        mine = trials[(trials["app"] == app) & (trials["runtime"] == rt)]
        rows.append({"app": app, "runtime": rt, "min_MiB": s["median"], "ci95_low_MiB": s["ci_low"],
                     "ci95_high_MiB": s["ci_high"], "lowest_MiB": s["min"],
                     "highest_MiB": s["max"], "searches": s["n"], "trials": len(mine),
                     "bound": ", ".join(sorted(set(g["bound"].astype(str))))})
    return sort_by_runtime(pd.DataFrame(rows), ["app", "runtime"])


def min_memory_figure(table: pd.DataFrame, reference: pd.DataFrame):
    """Bars per runtime (log scale: MiB to GiB), one panel per app; the page's Unikraft range as a
    band. A bar bounded by the runtime's floor is hatched: the app may need less."""
    if table.empty:
        raise NoData("minimum memory table is empty")
    # The HTTP apps first, then the Unikraft page's services, as the experiment lists them.
    apps = sorted(dict.fromkeys(table["app"]), key=lambda a: MEASURED_APPS.index(a) if a in MEASURED_APPS else 99)
    most = max(table.groupby("app")["runtime"].nunique())
    panel = max(4.8, 0.7 * most + 1.4)  # seven runtimes' names side by side, not run together
    # Two panels a row: four apps (the HTTP apps, nginx, Redis) in one row would be a banner.
    ncols = min(2, len(apps))
    nrows = -(-len(apps) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel * ncols, 4.0 * nrows), squeeze=False)
    for ax in axes.flat[len(apps):]:
        ax.set_axis_off()
    band = paper_range_mib(reference)  # in the bars' unit, MiB
    for ax, app in zip(axes.flat, apps):
        t = table[table["app"] == app]
        x = np.arange(len(t))
        for xi, r in zip(x, t.itertuples()):
            floor = "runtime floor" in r.bound
            ax.bar(xi, r.min_MiB, 0.6, hatch="//" if floor else None, **runtime_artist(r.runtime))
            ax.vlines(xi, r.lowest_MiB, r.highest_MiB, color="black", linewidth=1)
            ax.text(xi, r.min_MiB, f"{'≤' if floor else ''}{r.min_MiB:g}", ha="center", va="bottom", fontsize=8)
        if band:
            ax.axhspan(*band, color="tab:purple", alpha=0.15, zorder=0)  # behind the bars
        ax.set_xticks(x, t["runtime"], rotation=30, ha="right", rotation_mode="anchor")
        ax.set_yscale("log")
        ax.set_ylim(1, max(t["highest_MiB"].max() * 2, 10))
        readable_log_ticks(ax)  # 1, 2, 5, 10 within a decade: the band's 1.9-5.7 MiB can be read off
        ax.set_ylabel("minimum memory that serves\n(MiB = 2^20 bytes = 1.05 MB)")
        ax.set_title(app)
    key = [Patch(facecolor="grey", label="bisected"),
           Patch(facecolor="grey", hatch="//", label="at the lowest limit the runtime accepts (≤)")]
    if band:
        low, high = paper_range(reference)
        key.append(Patch(facecolor="tab:purple", alpha=0.15, label=f"Unikraft guests, Unikraft page: {low:g}-{high:g} "
                                                                    f"MB = {band[0]:.1f}-{band[1]:.1f} MiB"))
    # One entry per line under a single panel: side by side they ran past the figure's edges.
    ncol = len(key) if len(apps) > 1 else 1
    fig.legend(handles=key, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    wrapped_suptitle(fig, "Minimum memory: ready and still answering its readiness check, by bisection on the limit",
                     fontsize=11)
    rows = -(-len(key) // ncol)
    fig.tight_layout(rect=(0, (0.2 * rows + 0.15) / fig.get_figheight(), 1, 1))
    return fig


def min_memory_findings(table: pd.DataFrame, reference: pd.DataFrame) -> str:
    lines = []
    for app, g in table.groupby("app"):
        g = g.sort_values("min_MiB")
        lines.append(f"- **{app}**: " + ", ".join(
            f"{r.runtime} {'≤' if 'floor' in r.bound else ''}{r.min_MiB:g} MiB" for r in g.itertuples()) + ".")
    band, mib = paper_range(reference), paper_range_mib(reference)
    if band:
        lines.append(f"- The Unikraft page: {band[0]:g}-{band[1]:g} MB ({mib[0]:.1f}-{mib[1]:.1f} MiB, the unit above) "
                     "suffice for its guests (Fig. 4; nginx, Redis, SQLite, helloworld).")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> Page:
    """Notebook 10: the run's notes, each runtime's memory floor, the figure beside the paper's
    band and the findings."""
    df = open_page(run_dir)
    reference = load_reference(params.EXPERIMENT)
    table = min_memory_table(df)
    show_table(table)
    show_figure(min_memory_figure(table, reference), params.EXPERIMENT, "min_memory", run_dir)
    show_findings(min_memory_findings(table, reference))
    return Page(run_dir, df, table)
