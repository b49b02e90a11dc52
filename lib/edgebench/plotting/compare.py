"""Runs side by side (edgebench.comparison): each runtime's ratio to the same device's native, one
column (table) or bar (figure) per device or run, the papers' ratios beside them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from edgebench.claims import UNTIMED_UNITS
from edgebench.comparison.ratios import ALL_KEY_COLUMNS, headline, key_columns_of, verdict
from edgebench.experiments import EXPERIMENTS
from edgebench.plotting.style import (PAPER_VALUE_STYLE, figure_legend, in_runtime_order, plt, protocols_in,
                                      readable_log_ticks, runtime_artist, runtime_colour, runtime_rank)
from edgebench.plotting.tables import NoData

ROW_LEVELS = ["experiment", "metric", "runtime", "at"]
PAPER_COLUMN = "paper"
# One hatch per device or run within a runtime's bars (the colour is the runtime's).
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "--", "oo")
# Above this spread a panel's ratios go on a log axis (where 0.5 and 2 are as far from 1).
LOG_SPAN = 4.0
PANEL_SIZE = (5.2, 3.6)
# An emulated device's times and rates are the emulator's: its bars in such a panel are pale, so
# they read as the emulator's numbers beside a real device's; its sizes and counts are drawn plain.
EMULATED_ALPHA = 0.35
EMULATOR_NOTE = "pale: an emulated device's time or rate (the emulator's, not a board's)"


def emulator_timed(rows: pd.DataFrame) -> set[str]:
    """The labels whose values in these rows are an emulator's times or rates (not sizes or counts)."""
    if "emulated" not in rows.columns or set(rows["unit"].astype(str)) <= UNTIMED_UNITS:
        return set()
    return set(rows.loc[rows["emulated"].fillna(False).astype(bool), "label"])


def _experiment_rank(name: str) -> int:
    known = list(EXPERIMENTS)
    return known.index(name) if name in known else len(known)


def _metric_rank(experiment: str, metric: str) -> tuple:
    order = list(EXPERIMENTS[experiment].headline_metrics) if experiment in EXPERIMENTS else []
    return (order.index(metric) if metric in order else len(order), metric)


def ordered(ratios: pd.DataFrame) -> pd.DataFrame:
    """Experiments in the registry's order, metrics in the headline's, runtimes in the runtime
    registry's, and each coordinate's values in the order the experiment measured them (its
    sweep's: write before read, the rich level before the constrained ones)."""
    keys = [c for c in ALL_KEY_COLUMNS if c in ratios.columns and c not in ("metric", "unit")]
    first_seen = {k: {v: i for i, v in enumerate(dict.fromkeys(ratios[k]))} for k in keys}
    # Each row by its own experiment's coordinates (another's are blank on it).
    keys_of = {e: [k for k in key_columns_of(e) if k in first_seen] for e in ratios["experiment"].unique()}
    sort_key = [(_experiment_rank(r["experiment"]), _metric_rank(r["experiment"], r["metric"]),
                 runtime_rank(r["runtime"]), r["runtime"], tuple(first_seen[k][r[k]] for k in keys_of[r["experiment"]]))
                for _, r in ratios.iterrows()]
    order = sorted(range(len(ratios)), key=lambda i: sort_key[i])
    return ratios.iloc[order]


def column_order(ratios: pd.DataFrame) -> list[str]:
    """Devices in the order TARGET named them (by name when it named none), each one's runs oldest first."""
    device = "device_rank" if "device_rank" in ratios.columns else "device"  # TARGET's order, when given
    cols = [device, "started_at"] if {device, "started_at"} <= set(ratios.columns) else []
    return list(dict.fromkeys(ratios.sort_values(cols)["label"] if cols else ratios["label"]))


def _paper_text(row) -> str:
    if not np.isfinite(row["paper_ratio"]):
        return ""
    if row["paper_high"] > row["paper_low"]:
        return f"{row['paper_low']:.2f}-{row['paper_high']:.2f}"
    return ("" if row["paper_qualifier"] == "exact" else "~") + f"{row['paper_ratio']:.4g}"


def compare_table(ratios: pd.DataFrame, text: bool = False) -> pd.DataFrame:
    """Rows (experiment, metric, runtime, at), one column per device or run, the paper's ratio
    last. Numbers by default; `text=True` reads each one ("0.83, 17% slower") and marks the
    paper's approximate values with ~. A point with no native value is blank."""
    if ratios.empty:
        raise NoData("no ratios to tabulate")
    r = ordered(ratios).rename(columns={"key": "at"})
    index = list(dict.fromkeys(map(tuple, r[ROW_LEVELS].to_numpy())))
    if text:
        cell = [f"{x:.2f}, {verdict(x, headline(e, m))}" if np.isfinite(x) else ""
                for x, e, m in zip(r["ratio"], r["experiment"], r["metric"])]
        values = r.assign(cell=cell)["cell"]
    else:
        values = r["ratio"]
    wide = pd.Series(values.to_numpy(), index=pd.MultiIndex.from_frame(r[ROW_LEVELS + ["label"]])).unstack("label")
    wide = wide.reindex(index=pd.MultiIndex.from_tuples(index, names=ROW_LEVELS), columns=column_order(r))
    paper = r.drop_duplicates(ROW_LEVELS).set_index(ROW_LEVELS)
    wide[PAPER_COLUMN] = paper.apply(_paper_text, axis=1) if text else paper["paper_ratio"]
    wide.columns.name = None
    return wide.fillna("") if text else wide


def panel_protocol(rows: pd.DataFrame) -> str:
    """The figure shows the `fair` protocol where a panel has it (every runtime measured alike),
    else the one it has."""
    present = protocols_in(rows["protocol"]) if "protocol" in rows.columns else [""]
    return "fair" if "fair" in present else present[0]


def _geomean(values: pd.Series) -> float:
    return float(np.exp(np.log(values).mean()))


def compare_figure(ratios: pd.DataFrame):
    """One panel per experiment and metric: per runtime one bar per device or run (the geometric
    mean of its ratios over the panel's points, whiskers their range), drawn from the line at 1
    (native); the papers' ratios as crosses, a range as a line."""
    data = ratios[ratios["ratio"].notna() & (ratios["ratio"] > 0)]
    if data.empty:
        raise NoData("no ratio to native to draw: every point lacks a native value (see the notes above)")
    panels = list(dict.fromkeys(map(tuple, ordered(data)[["experiment", "metric"]].to_numpy())))
    labels = column_order(data)
    hatch = {lab: HATCHES[i % len(HATCHES)] for i, lab in enumerate(labels)}
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(PANEL_SIZE[0] * ncols, PANEL_SIZE[1] * nrows + 0.8),
                             squeeze=False)
    pale_drawn = False
    for ax, (exp, metric) in zip(axes.flat, panels):
        rows = data[(data["experiment"] == exp) & (data["metric"] == metric)]
        proto = panel_protocol(rows)
        if "protocol" in rows.columns:
            rows = rows[rows["protocol"] == proto]
        pale = emulator_timed(rows)
        pale_drawn |= bool(pale)
        _panel(ax, rows, [lab for lab in labels if lab in set(rows["label"])], hatch, pale)
        how = headline(exp, metric)
        ax.set_ylabel(f"ratio to native\n({'higher' if how.higher_is_better else 'lower'} is better)", fontsize=8)
        points = rows.groupby(["runtime", "label"]).size().max()
        ax.set_title(f"{exp}: {metric}\n{proto or 'one protocol'}; geometric mean of {points} point(s)", fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    # The legend's own keys: a runtime is its colour, a device or run its hatch.
    runtimes = [Patch(facecolor=runtime_colour(rt), edgecolor="black", linewidth=0.5, label=rt)
                for rt in in_runtime_order(data["runtime"])]
    runs = [Patch(facecolor="white", edgecolor="black", hatch=hatch[lab], label=lab) for lab in labels]
    paper = Line2D([], [], linestyle="", marker=PAPER_VALUE_STYLE["marker"], markerfacecolor="lightgrey",
                   markeredgecolor="black", markersize=8, label="paper's ratio (a line: its range)")
    fig.suptitle("Each runtime against the same device's native runtime (1 = native); whiskers: "
                 "lowest and highest ratio over the panel's points", fontsize=10)
    emulator = [Patch(facecolor=to_rgba("grey", EMULATED_ALPHA), edgecolor="black", linewidth=0.5,
                      label=EMULATOR_NOTE)] if pale_drawn else []
    figure_legend(fig, extra=[*runtimes, *runs, paper, *emulator], ncol=4)
    return fig


def _panel(ax, rows: pd.DataFrame, labels: list[str], hatch: dict, pale: set[str] = frozenset()) -> None:
    runtimes = in_runtime_order(rows["runtime"])
    width = 0.8 / max(1, len(labels))
    drawn = [1.0]
    for i, rt in enumerate(runtimes):
        mine = rows[rows["runtime"] == rt]
        for j, lab in enumerate(labels):
            vals = mine.loc[mine["label"] == lab, "ratio"]
            if vals.empty:
                continue
            gm = _geomean(vals)
            x = i - 0.4 + width * (j + 0.5)
            face = to_rgba(runtime_colour(rt), EMULATED_ALPHA if lab in pale else 1.0)
            ax.bar(x, gm - 1, width * 0.9, bottom=1, hatch=hatch[lab], edgecolor="black", linewidth=0.5,
                   **{**runtime_artist(rt), "color": face})
            if len(vals) > 1:
                ax.errorbar(x, gm, yerr=[[gm - vals.min()], [vals.max() - gm]], fmt="none", ecolor="black",
                            elinewidth=0.8, capsize=2)
            drawn += [vals.min(), vals.max()]
        paper = mine[mine["paper_ratio"].notna()].drop_duplicates(["paper_ratio", "paper_low", "paper_high"])
        for p in paper.itertuples():
            if p.paper_high > p.paper_low:
                ax.vlines(i, p.paper_low, p.paper_high, color="black", linewidth=1.5, zorder=4)
            ax.scatter([i], [p.paper_ratio], **runtime_artist(rt), **PAPER_VALUE_STYLE)
            drawn += [p.paper_low, p.paper_high]
    ax.axhline(1, color="black", linewidth=0.9)
    lo, hi = min(drawn), max(drawn)
    if hi / lo > LOG_SPAN:
        ax.set_yscale("log")
        ax.set_ylim(lo / 1.3, hi * 1.3)
        readable_log_ticks(ax)
    else:
        pad = max(0.02, 0.1 * (hi - lo))
        ax.set_ylim(lo - pad, hi + pad)
    # "nanos (TCG)" on two lines: seven runtimes' names side by side otherwise run into each other.
    ax.set_xticks(range(len(runtimes)), [rt.replace(" (", "\n(") for rt in runtimes], fontsize=8)
    ax.set_xlim(-0.6, len(runtimes) - 0.4)
    ax.grid(axis="y", alpha=0.3)


def findings(ratios: pd.DataFrame) -> str:
    """One line per experiment and metric (the figure's protocol): each runtime's geometric-mean
    ratio per device or run, read in the metric's direction, and the papers' beside it."""
    data = ratios[ratios["ratio"].notna() & (ratios["ratio"] > 0)]
    if data.empty:
        return "- No ratio to native in these runs."
    lines = []
    for (exp, metric), rows in ordered(data).groupby(["experiment", "metric"], sort=False):
        proto = panel_protocol(rows)
        if "protocol" in rows.columns:
            rows = rows[rows["protocol"] == proto]
        how = headline(exp, metric)
        parts = []
        for rt in in_runtime_order(rows["runtime"]):
            mine = rows[rows["runtime"] == rt]
            pale = emulator_timed(mine)
            runs = [f"{_geomean(g['ratio']):.2f} ({verdict(_geomean(g['ratio']), how)}) on {lab}"
                    + (" (the emulator's)" if lab in pale else "") for lab, g in mine.groupby("label", sort=False)]
            paper = mine["paper_ratio"].dropna()
            paper_text = f"; paper {paper.min():.4g}" + (f"-{paper.max():.4g}" if paper.max() > paper.min() else "") \
                if not paper.empty else ""
            parts.append(f"{rt} {', '.join(runs)}{paper_text}")
        lines.append(f"- **{exp}, {metric}** ({proto}): " + "; ".join(parts))
    return "\n".join(lines)
