"""Minimum memory (paper 002, Unikraft's Fig. 4): the least memory each runtime served an app in,
beside the range the Unikraft page gives for its guests."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from edgebench.plotting.style import plt, runtime_artist
from edgebench.plotting.tables import NoData, mark_emulated, ok_rows, sort_by_runtime, spread


def paper_range(reference: pd.DataFrame) -> tuple[float, float] | None:
    """(low, high) MB the page gives for Unikraft guests, or None."""
    ref = reference[reference["runtime"] == "unikraft"].set_index("metric")["value"]
    if not {"min_memory_low", "min_memory_high"} <= set(ref.index):
        return None
    return float(ref["min_memory_low"]), float(ref["min_memory_high"])


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
    apps = list(dict.fromkeys(table["app"]))
    fig, axes = plt.subplots(1, len(apps), figsize=(4.8 * len(apps), 3.8), squeeze=False)
    band = paper_range(reference)
    for ax, app in zip(axes[0], apps):
        t = table[table["app"] == app]
        x = np.arange(len(t))
        for xi, r in zip(x, t.itertuples()):
            floor = "runtime floor" in r.bound
            ax.bar(xi, r.min_MiB, 0.6, hatch="//" if floor else None, **runtime_artist(r.runtime))
            ax.vlines(xi, r.lowest_MiB, r.highest_MiB, color="black", linewidth=1)
            ax.text(xi, r.min_MiB, f"{'≤' if floor else ''}{r.min_MiB:g}", ha="center", va="bottom", fontsize=8)
        if band:
            ax.axhspan(*band, color="tab:purple", alpha=0.15)
        ax.set_xticks(x, t["runtime"], rotation=20, ha="right")
        ax.set_yscale("log")
        ax.set_ylim(1, max(t["highest_MiB"].max() * 2, 10))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel("minimum memory that serves (MiB)")
        ax.set_title(app)
    key = [Patch(facecolor="grey", label="bisected"),
           Patch(facecolor="grey", hatch="//", label="at the lowest limit the runtime accepts (≤)")]
    if band:
        key.append(Patch(facecolor="tab:purple", alpha=0.15, label="Unikraft guests, Unikraft page (2-6 MB)"))
    fig.legend(handles=key, loc="lower center", ncol=len(key), fontsize=8, frameon=False)
    fig.suptitle("Minimum memory: ready and still answering its readiness check, by bisection on the limit")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def min_memory_findings(table: pd.DataFrame, reference: pd.DataFrame) -> str:
    lines = []
    for app, g in table.groupby("app"):
        g = g.sort_values("min_MiB")
        lines.append(f"- **{app}**: " + ", ".join(
            f"{r.runtime} {'≤' if 'floor' in r.bound else ''}{r.min_MiB:g} MiB" for r in g.itertuples()) + ".")
    band = paper_range(reference)
    if band:
        lines.append(f"- The Unikraft page: {band[0]:g}-{band[1]:g} MB suffice for its guests (Fig. 4; nginx, Redis, "
                     "SQLite, helloworld).")
    return "\n".join(lines)
