"""Home automation (paper 001, Table 3 'DHT11'): a request's mean latency split into the sensor, the
rest of the handler and everything outside it, per runtime and network mode (on a log axis, the
parts side by side), beside the paper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from edgebench.experiments.home_automation import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.services import label
from edgebench.plotting.style import (PROTOCOL_TITLE, part_colours, plt, protocols_in, readable_log_ticks,
                                      runtime_artist, times)
from edgebench.plotting.tables import (WHISKERS, NoData, draw_whiskers, interval, mark_emulated, mark_health,
                                       ratio_to_baseline, sort_by_runtime, wrapped_suptitle)
from edgebench.reference import load_reference

BASELINE = "native"
PARTS = tuple((metric, name, colour) for (metric, name), colour in zip(
    (("sensor_per_request", "sensor (DHT11 read or its kept reading)"),
     ("handler_rest_per_request", "rest of the handler"),
     ("outside_handler_per_request", "outside the handler: TLS, HTTP, network path")), part_colours(3)))


def latency_table(df: pd.DataFrame) -> pd.DataFrame:
    """Medians per (protocol, runtime label): the latency's parts, wrk's mean and p99, req/s, the
    sensor used, and the mean latency's ratio to native's in the same protocol; beside the mean,
    its interval over the runs (mean_ms_low, mean_ms_high: interval())."""
    ok = mark_emulated(df[df["status"] == "ok"])
    ok = ok.assign(label=label(ok))
    rows = []
    for (protocol, lab), g in ok.groupby(["protocol", "label"], sort=False):
        med = g.groupby("metric")["value"].median()
        low, high = interval(g[g["metric"] == "request_time"]["value"])
        rows.append({"protocol": protocol, "label": lab, "runtime": g["runtime"].iloc[0],
                     "runs": int((g["metric"] == "throughput").sum()),
                     "sensor": ", ".join(sorted(set(g["sensor"].dropna().astype(str)))) if "sensor" in g else "",
                     "throughput_rps": med.get("throughput"), "mean_ms": med.get("request_time"),
                     "mean_ms_low": low, "mean_ms_high": high,
                     "p99_ms": med.get("latency_p99"), "errors": med.get("errors"),
                     **{metric: med.get(metric) for metric, _, _ in PARTS}})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["vs_native"] = ratio_to_baseline(table, "mean_ms", table["label"] == BASELINE, ["protocol"])
    table = mark_health(table, ok, ["protocol", "label"])
    return sort_by_runtime(table, ["protocol", "runtime", "label"])


PANEL_HEIGHT = 4.0  # inches: the panel with its rotated runtime labels


def parts_side_by_side(ax, t: pd.DataFrame, parts, total: str, note) -> None:
    """Per row of `t` (x labels from its `label` column): its `parts` as bars side by side in their
    shades (none where a part is missing or 0: a log axis has no 0), the row's `total` as a line
    across them in its runtime's colour with its interval as a whisker (`{total}_low`, `_high`),
    and `note(row)` above the highest of parts, line and whisker. Side by side on a log axis, each
    runtime's split shows whether its requests take 0.3 ms or 30: stacked, the parts of the fast
    ones were slivers at the foot of the slow ones' scale."""
    x = np.arange(len(t))
    width = 0.84 / len(parts)
    for k, (column, name, colour) in enumerate(parts):
        values = t[column].astype(float).where(lambda v: v > 0)
        ax.bar(x - 0.42 + width * (k + 0.5), values, width * 0.92, color=colour, label=name, edgecolor="white",
               linewidth=0.4)
    for xi, r in zip(x, t.itertuples()):
        ax.plot([xi - 0.45, xi + 0.45], [getattr(r, total)] * 2, linewidth=2.5, solid_capstyle="butt",
                **runtime_artist(r.runtime))
    draw_whiskers(ax, x, t[total], t[f"{total}_low"], t[f"{total}_high"])
    tops = pd.concat([t[[column for column, _, _ in parts]].astype(float),
                      t[[total, f"{total}_high"]].astype(float)], axis=1).max(axis=1)
    for xi, top, r in zip(x, tops, t.itertuples()):
        text = note(r)
        if text and np.isfinite(top):
            ax.annotate(text, (xi, top), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                        fontsize=8)
    ax.set_xticks(x, t["label"], rotation=25, ha="right")


def log_limits(table: pd.DataFrame, columns: list[str]) -> tuple[float, float]:
    """A log axis's range for every positive value in `columns`, with room above for the notes."""
    values = table[columns].astype(float).to_numpy().ravel()
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:
        return 0.1, 10.0
    low, high = values.min() / 3, values.max()  # the least part still a visible bar, half a decade
    return low, high * (high / low) ** 0.14


def latency_figure(table: pd.DataFrame):
    """A request's mean latency per runtime label, one panel per protocol, on a log axis: its parts
    side by side (sensor, rest of the handler, outside the handler), the whole request's mean time
    as a line in the runtime's colour with its interval over the runs as a whisker, and its ratio
    to native's above."""
    if table.empty:
        raise NoData("home automation table is empty")
    protocols = protocols_in(table["protocol"])  # fair on the left, as in every figure
    most = max(table.groupby("protocol")["label"].nunique())
    width = max(5.4, 0.62 * most + 1.6)  # three bars a runtime: room for nine runtimes' groups
    fig, axes = plt.subplots(1, len(protocols), figsize=(width * len(protocols), PANEL_HEIGHT), squeeze=False,
                             sharey=True)
    parts = [column for column, _, _ in PARTS]
    low, high = log_limits(table, [*parts, "mean_ms", "mean_ms_low", "mean_ms_high"])
    for j, protocol in enumerate(protocols):
        ax = axes[0][j]
        ax.set_yscale("log")
        parts_side_by_side(ax, table[table["protocol"] == protocol], PARTS, "mean_ms",
                           lambda r: times(r.vs_native) if r.label != BASELINE and np.isfinite(r.vs_native) else "")
        ax.set_ylim(low, high)
        readable_log_ticks(ax)
        ax.set_title(f"{PROTOCOL_TITLE.get(protocol, protocol)}", fontsize=9)
        ax.grid(axis="y", alpha=0.3, which="major")
    axes[0][0].set_ylabel("ms per request (log; medians over the runs)")
    handles, names = axes[0][0].get_legend_handles_labels()
    line = Line2D([], [], color="grey", linewidth=2.5, label="the request's mean time (line, the runtime's colour)")
    key = [*handles[:len(PARTS)], line]
    ncol = 2 if len(protocols) > 1 else 1
    fig.legend(key, [h.get_label() for h in key], fontsize=8, loc="lower center", ncol=ncol, frameon=False)
    sensors = ", ".join(sorted(set(s for s in table["sensor"] if s)))
    wrapped_suptitle(fig, f"Home automation over HTTPS (sensor: {sensors or 'unknown'}): a request's mean time "
                          "(line) and its parts (bars), log scale; above: its ratio to native's\n"
                          f"whisker on the line: {WHISKERS}")
    # The panel keeps its height whatever the title's and the legend's lines take.
    rows, title = -(-len(key) // ncol), fig.get_suptitle().count("\n") + 1
    fig.set_figheight(PANEL_HEIGHT + 0.2 * title + 0.2 * rows + 0.3)
    fig.tight_layout(rect=(0, (0.2 * rows + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def latency_findings(table: pd.DataFrame, reference: pd.DataFrame) -> str:
    lines = []
    for protocol, g in table.groupby("protocol", sort=False):
        parts = [f"{r.label} {r.mean_ms:.2f} ms ({r.vs_native:.2f}x; sensor {r.sensor_per_request:.2f}, outside "
                 f"the handler {r.outside_handler_per_request:.2f})" for r in g.itertuples()
                 if r.label != BASELINE and np.isfinite(r.vs_native)]
        native = g[g["label"] == BASELINE]
        if parts and not native.empty:
            lines.append(f"- **{protocol}**: native {native['mean_ms'].iloc[0]:.2f} ms; " + "; ".join(parts) + ".")
    ref = reference[reference["app"] == "home_automation"] if not reference.empty else reference
    for mode, g in (ref.groupby("network_mode") if not ref.empty else []):
        values = g.set_index("runtime")["value"]
        if {"docker", "native"} <= set(values.index):
            lines.append(f"- Paper 001 Table 3 (DHT11-{mode.capitalize()}, as printed): Docker {values['docker']:g} s, "
                         f"native {values['native']:g} s ({values['docker'] / values['native']:.1f}x); its unit covers "
                         "the sensor's read and retries, so compare ratios, not times.")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> Page:
    """Notebook 13: the run's notes, each request's latency split into its parts, the figure and
    the findings beside the paper's ratios."""
    df = open_page(run_dir)
    table = latency_table(df)
    show_table(table)
    show_figure(latency_figure(table), params.EXPERIMENT, "home_automation_latency", run_dir)
    show_findings(latency_findings(table, load_reference(params.EXPERIMENT)))
    return Page(run_dir, df, table)
