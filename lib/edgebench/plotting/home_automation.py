"""Home automation (paper 001, Table 3 'DHT11'): a request's mean latency split into the sensor, the
rest of the handler and everything outside it, per runtime and network mode, beside the paper."""

from __future__ import annotations

import numpy as np
import pandas as pd

from edgebench.plotting.services import label
from edgebench.plotting.style import PROTOCOL_TITLE, part_colours, plt, protocols_in, times
from edgebench.plotting.tables import (WHISKERS, NoData, interval, mark_emulated, mark_health, ratio_to_baseline,
                                       sort_by_runtime, stacked_with_interval, wrapped_suptitle)

BASELINE = "native"
PARTS = tuple((metric, name, colour) for (metric, name), colour in zip(
    (("sensor_per_request", "sensor (DHT11 read or its kept reading)"), ("handler_rest_per_request", "rest of the handler"),
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


def latency_figure(table: pd.DataFrame):
    """Stacked bars of a request's mean latency, one panel per protocol; the mean's interval over
    the runs as a whisker on its line."""
    if table.empty:
        raise NoData("home automation table is empty")
    protocols = protocols_in(table["protocol"])  # fair on the left, as in every figure
    fig, axes = plt.subplots(1, len(protocols), figsize=(5.4 * len(protocols), 4.2), squeeze=False, sharey=True)
    for j, protocol in enumerate(protocols):
        ax = axes[0][j]
        stacked_with_interval(ax, table[table["protocol"] == protocol], PARTS, "mean_ms",
                              lambda r: times(r.vs_native) if r.label != BASELINE and np.isfinite(r.vs_native)
                              else "")
        ax.set_title(f"{PROTOCOL_TITLE.get(protocol, protocol)}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("mean latency per request (ms, medians)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles[:len(PARTS)], names[:len(PARTS)], fontsize=8, loc="lower center", ncol=len(PARTS))
    sensors = ", ".join(sorted(set(s for s in table["sensor"] if s)))
    wrapped_suptitle(fig, f"Home automation over HTTPS (sensor: {sensors or 'unknown'}; line: a request's mean "
                          f"time in the runtime's colour; ratio to native)\nwhisker on the line: {WHISKERS}")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
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
