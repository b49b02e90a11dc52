"""HTTP load (paper 000, Figs. 4-13): throughput and latency per memory level, beside the paper's.

Latency is never drawn as mean +- stdev: under memory pressure paper 000's "jitter" (the
standard deviation) exceeds the mean, and the bar would reach below zero. The mean, the jitter
and the percentiles (p50, p90, p99) are panels of their own."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from edgebench.plotting.style import (FAILED_STYLE, PROTOCOL_TITLE, figure_legend, in_runtime_order, keep_in_view,
                                      mark_paper_values, protocol_grid, protocol_line, protocols_in, runtime_artist)
from edgebench.plotting.tables import NoData, beside_published, mark_emulated, ok_rows, sort_by_runtime, spread

KEYS = ["scenario", "cpus", "memory_mb", "app", "runtime", "protocol"]
PAPER = "paper 000"
# Percentiles as marker shapes on one vertical stroke per runtime: p50 at the bottom, p99 on top.
PERCENTILES = [("latency_p50_ms", "o", "p50"), ("latency_p90_ms", "D", "p90"), ("latency_p99_ms", "^", "p99")]
PANELS = [("requests/s (median, IQR of runs)", "throughput"), ("mean latency (ms)", "mean"),
          ("jitter: stdev of latency (ms)", "jitter"), ("latency p50 / p90 / p99 (ms, log)", "percentiles")]


def level_label(row) -> str:
    return "rich" if row["scenario"] == "rich" else f"{row['memory_mb']:g} MB"


def http_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median throughput (quartiles), latency mean, stdev and percentiles and the Little's-law
    ratio per level, app, runtime and protocol, with the paper's published values beside."""
    df = mark_emulated(df)
    rps = ok_rows(df, "requests_per_second")
    ok = df[df["status"] == "ok"]
    rows = []
    for key, g in rps.groupby(KEYS):
        s = spread(g["value"])
        sel = ok[(ok[KEYS] == pd.Series(key, index=KEYS)).all(axis=1)]
        med = lambda m: sel[sel["metric"] == m]["value"].median()  # noqa: E731
        rows.append(dict(zip(KEYS, key), n=s["n"], rps_median=s["median"], rps_q1=s["q1"], rps_q3=s["q3"],
                         rps_iqr=s["iqr"], latency_mean_ms=med("latency_mean"),
                         latency_stdev_ms=med("latency_stdev"), latency_p50_ms=med("latency_p50"),
                         latency_p90_ms=med("latency_p90"), latency_p99_ms=med("latency_p99"),
                         latency_p99_9_ms=med("latency_p99_9"), latency_max_ms=med("latency_max"),
                         timeouts=med("errors_timeout"), littles_law=g["littles_law"].median()))
    table = pd.DataFrame(rows)
    failed = df[(df["metric"] == "requests_per_second") & (df["status"] == "failed")]
    fails = failed.groupby(KEYS).size().rename("failed").reset_index()
    table = table.merge(fails, on=KEYS, how="outer").fillna({"failed": 0})
    on = {"app": "app", "runtime": "runtime", "memory_mb": "memory_mb"}
    for metric, column in (("requests_per_second", "published_rps"), ("latency_mean", "published_latency_mean_ms"),
                           ("latency_stdev", "published_latency_stdev_ms")):
        table = beside_published(table, reference, metric, on, column, value="value_base")
    table["level"] = table.apply(level_label, axis=1)
    return sort_by_runtime(table, ["app", "scenario", "memory_mb", "runtime", "protocol"],
                           ascending=[True, False, False, True, True])


def http_figure(table: pd.DataFrame, title: str):
    """One column per protocol; per app four rows: throughput, mean latency, jitter and
    percentiles over the memory levels (rich first). One line per runtime; the paper's values
    as crosses; a level where the runtime failed as a triangle on the axis."""
    if table.empty:
        raise NoData("HTTP load table is empty")
    apps = list(dict.fromkeys(table["app"]))
    levels = list(dict.fromkeys(table.sort_values(["scenario", "memory_mb"], ascending=[False, False])["level"]))
    protocols = protocols_in(table["protocol"])
    fig, axes = protocol_grid(len(apps) * len(PANELS), protocols, panel_size=(6.0, 2.6))
    x = np.arange(len(levels))
    for a, app in enumerate(apps):
        runtimes = in_runtime_order(table[table["app"] == app]["runtime"])
        for j, proto in enumerate(protocols):
            panel = {name: axes[a * len(PANELS) + p][j] for p, (_, name) in enumerate(PANELS)}
            t = table[(table["app"] == app) & (table["protocol"] == proto)]
            for k, rt in enumerate(runtimes):
                g = t[t["runtime"] == rt].set_index("level").reindex(levels)
                if g["rps_median"].isna().all() and not (g["failed"] > 0).any():
                    continue
                # Side by side within a level in the percentile panel, so the strokes do not overlap.
                offset = (k - (len(runtimes) - 1) / 2) * 0.5 / len(runtimes)
                draw_runtime(panel, x, g, rt, proto, offset)
            for ylabel, name in PANELS:
                ax = panel[name]
                ax.set_xticks(x, levels)
                ax.set_title(f"{app}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
                ax.grid(alpha=0.3)
                if j == 0:
                    ax.set_ylabel(ylabel, fontsize=8)
                if name == "percentiles":
                    ax.set_yscale("log")
                else:
                    ax.set_ylim(bottom=0)
    keep_in_view(axes)  # y is shared per row: what the published column or a paper's value adds
    shapes = [Line2D([], [], color="grey", marker=m, linestyle="", label=lab) for _, m, lab in PERCENTILES]
    fig.suptitle(f"{title}: one line per runtime; x = {PAPER}; ▼ = failed at that level")
    figure_legend(fig, extra=shapes)
    return fig


def draw_runtime(panel: dict, x: np.ndarray, g: pd.DataFrame, rt: str, protocol: str, offset: float) -> None:
    """One runtime's values over the levels, in each panel."""
    style = protocol_line(rt, protocol)
    # Quartiles of the runs: asymmetric, so they stay within the measured values.
    below = (g["rps_median"] - g["rps_q1"]).clip(lower=0).fillna(0)
    above = (g["rps_q3"] - g["rps_median"]).clip(lower=0).fillna(0)
    panel["throughput"].errorbar(x, g["rps_median"], yerr=[below, above], capsize=3, label=rt, **style)
    dead = (g["rps_median"].isna() & (g["failed"] > 0)).to_numpy()
    if dead.any():
        panel["throughput"].scatter(x[dead], np.zeros(dead.sum()), **runtime_artist(rt), **FAILED_STYLE)
    panel["mean"].plot(x, g["latency_mean_ms"], **style)
    panel["jitter"].plot(x, g["latency_stdev_ms"], **style)
    for column, name in (("published_rps", "throughput"), ("published_latency_mean_ms", "mean"),
                         ("published_latency_stdev_ms", "jitter")):
        mark_paper_values(panel[name], x, g[column], rt, PAPER)
    xs = x + offset
    low, high = g["latency_p50_ms"], g["latency_p99_ms"]
    has = (low.notna() & high.notna()).to_numpy()
    panel["percentiles"].vlines(xs[has], low[has], high[has], linewidth=1.5, **runtime_artist(rt))
    for column, marker, _ in PERCENTILES:
        panel["percentiles"].scatter(xs, g[column], marker=marker, s=22, **runtime_artist(rt))


def crossover_findings(table: pd.DataFrame) -> str:
    """Per app and protocol: the best runtime at each constrained level, and where it flips."""
    lines = []
    con = table[table["scenario"] == "constrained"]
    for (app, proto), g in con.groupby(["app", "protocol"]):
        if g["runtime"].nunique() < 2:
            continue
        winners = []
        for mem, lvl in sorted(g.groupby("memory_mb"), key=lambda kv: -kv[0]):
            ok = lvl.dropna(subset=["rps_median"])
            winners.append((mem, ok.loc[ok["rps_median"].idxmax(), "runtime"] if not ok.empty else "none"))
        seq = ", ".join(f"{w} at {m:g} MB" for m, w in winners)
        flips = [m for (m0, w0), (m, w) in zip(winners, winners[1:]) if w != w0]
        verdict = (f"the ranking flips at {flips[0]:g} MB (crossover)" if flips
                   else "no crossover in this sweep")
        lines.append(f"- **{app}**, {proto}: fastest {seq}; {verdict}.")
    bad = table[(table["littles_law"] > 1.5)]
    if not bad.empty:
        lines.append(f"- {len(bad)} of {len(table)} cells have a Little's-law ratio above 1.5 "
                     "(throughput x mean latency exceeds the connections): wrk's coordinated-omission "
                     "correction inflates the mean under stalls, so read percentiles there.")
    return "\n".join(lines) or "- Only one runtime measured: no ranking to compare."
