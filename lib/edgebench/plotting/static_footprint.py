"""Static footprint (paper 000, Fig. 2): app and artifact sizes beside the paper's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from edgebench.experiments.static_footprint import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import plt, runtime_artist, runtime_colour
from edgebench.plotting.tables import NoData, beside_published, ok_rows, sort_by_runtime
from edgebench.reference import load_reference

# Builds that need no label: the only build the runtime has, or the default one.
UNLABELLED_BUILDS = ("native", "offline")


def footprint_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """One row per app/runtime/build: measured MB beside the paper's MB (decimal MB)."""
    sizes = ok_rows(df, "image_size")
    app_sizes = df[(df["metric"] == "app_size") & (df["status"] == "ok")]
    keys = ["app", "runtime", "build"]
    table = sizes[keys + ["value"]].rename(columns={"value": "image_bytes"})
    table = table.merge(app_sizes[keys + ["value"]].rename(columns={"value": "app_bytes"}), on=keys, how="left")
    table = beside_published(table, reference, "image_size", {"app": "app", "runtime": "runtime"},
                             "published_bytes", value="value_base")
    for col in ("image_bytes", "app_bytes", "published_bytes"):
        table[col.replace("_bytes", "_MB")] = table[col] / 1e6
    table["measured/published"] = table["image_bytes"] / table["published_bytes"]
    table = sort_by_runtime(table, keys)
    return table[keys + ["app_MB", "image_MB", "published_MB", "measured/published"]]


def footprint_figure(table: pd.DataFrame):
    """Bars like paper 000 Fig. 2, one panel per app: measured solid, the paper's hatched, both
    in the runtime's colour."""
    if table.empty:
        raise NoData("footprint table is empty")
    apps = list(dict.fromkeys(table["app"]))
    fig, axes = plt.subplots(1, len(apps), figsize=(4.5 * len(apps), 3.8), squeeze=False)
    for ax, app in zip(axes[0], apps):
        t = table[table["app"] == app]
        labels = t["runtime"] + np.where(t["build"].isin(UNLABELLED_BUILDS), "", " (" + t["build"] + ")")
        x = np.arange(len(t))
        for xi, r in zip(x, t.itertuples()):
            ax.bar(xi - 0.2, r.image_MB, 0.4, **runtime_artist(r.runtime))
            ax.text(xi - 0.2, r.image_MB, f"{r.image_MB:.1f}", ha="center", va="bottom", fontsize=8)
            if pd.notna(r.published_MB):
                ax.bar(xi + 0.2, r.published_MB, 0.4, facecolor="white", edgecolor=runtime_colour(r.runtime),
                       hatch="//", gid=r.runtime)
                ax.text(xi + 0.2, r.published_MB, f"{r.published_MB:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x, labels, rotation=20, ha="right")
        ax.set_title(app)
        ax.set_ylabel("size (MB, 10^6 bytes)")
        # Room above the tallest bar for its label (margins() does nothing once the limits are set).
        tallest = np.nanmax(t[["image_MB", "published_MB"]].to_numpy(dtype=float))
        ax.set_ylim(0, 1.12 * tallest if tallest > 0 else 1)
    key = [Patch(facecolor="grey", label="measured"),
           Patch(facecolor="white", edgecolor="grey", hatch="//", label="paper 000 (published)")]
    fig.legend(handles=key, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("Static footprint: app and runtime artifact size")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def footprint_findings(table: pd.DataFrame) -> str:
    """What the sizes show, per app: the smallest artifact and the ratio to the published size."""
    lines = []
    for app, g in table.groupby("app"):
        g = g.sort_values("image_MB")
        parts = ", ".join(f"{r.runtime}{'' if r.build in UNLABELLED_BUILDS else ' ' + r.build} "
                          f"{r.image_MB:.1f} MB" for r in g.itertuples())
        lines.append(f"- **{app}**: {parts}.")
        for r in g.dropna(subset=["published_MB"]).itertuples():
            lines.append(f"  - {r.runtime}: {r.image_MB:.1f} MB measured vs {r.published_MB:g} MB published "
                         f"(x{r.image_MB / r.published_MB:.2f}).")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> Page:
    """Notebook 01: the run's notes, the sizes beside the paper's, the figure and its findings."""
    df = open_page(run_dir)
    table = footprint_table(df, load_reference(params.EXPERIMENT))
    show_table(table, 2)
    show_figure(footprint_figure(table), params.EXPERIMENT, "footprint", run_dir)
    show_findings(footprint_findings(table))
    return Page(run_dir, df, table)
