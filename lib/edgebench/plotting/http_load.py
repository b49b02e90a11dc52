"""HTTP load (paper 000, Figs. 4-13): throughput and latency per memory level, beside the paper's.

Latency is never drawn as mean +- stdev: under memory pressure paper 000's "jitter" (the
standard deviation) exceeds the mean, and the bar would reach below zero. The mean, the jitter
and the percentiles (p50, p90, p99) are panels of their own."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.lines import Line2D

from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import (FAILED_STYLE, PROTOCOL_TITLE, dodge, figure_legend, in_runtime_order,
                                      keep_in_view, mark_health, mark_paper_values, protocol_grid, protocol_line,
                                      protocols_in, readable_log_ticks, room_for_health_marks, runtime_artist,
                                      runtime_colour)
from edgebench.reference import load_reference
from edgebench.plotting.tables import NoData, beside_published, mark_emulated, ok_rows, sort_by_runtime, spread
from edgebench.plotting.tables import mark_health as health_column

KEYS = ["scenario", "cpus", "memory_mb", "app", "runtime", "protocol"]
PAPER = "paper 000"
# Percentiles as marker shapes on one vertical stroke per runtime: p50 at the bottom, p99 on top.
PERCENTILES = [("latency_p50_ms", "o", "p50"), ("latency_p90_ms", "D", "p90"), ("latency_p99_ms", "^", "p99")]
# Every panel on a log axis: measured rates of 12-30k req/s beside the paper's 149k, a TCG
# runtime's hundred and Nanos' latency far above the rest all stay readable. Two lines where a label is long.
PANELS = [("requests/s (log)\nmedian, bars: IQR where n > 1", "throughput"), ("mean latency (ms, log)", "mean"),
          ("jitter: stdev of latency (ms, log)", "jitter"), ("latency p50 / p90 / p99\n(ms, log; medians of runs)",
                                                             "percentiles")]
# The mean and jitter rows' whiskers: the runs' quartiles, as the throughput row's (what the suptitle says).
QUARTILES = {"mean": "latency_mean", "jitter": "latency_stdev"}
# A pair that cannot run (node-http on unikraft) is no failure at a level: no triangle for it.
CANNOT_RUN = "cannot run"


def level_label(row) -> str:
    return "rich" if row["scenario"] == "rich" else f"{row['memory_mb']:g} MB"


def http_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median throughput, latency mean and stdev (each with the runs' quartiles), percentiles and
    the Little's-law ratio per level, app, runtime and protocol, with the paper's published values
    beside."""
    df = mark_emulated(df)
    rps = ok_rows(df, "requests_per_second")
    ok = df[df["status"] == "ok"]
    rows = []
    for key, g in rps.groupby(KEYS):
        s = spread(g["value"])
        sel = ok[(ok[KEYS] == pd.Series(key, index=KEYS)).all(axis=1)]

        def med(m: str, q: float = 0.5, sel: pd.DataFrame = sel) -> float:
            return sel[sel["metric"] == m]["value"].quantile(q)

        quartiles = {f"{m}_{name}_ms": med(m, q) for m in QUARTILES.values()
                     for name, q in (("q1", 0.25), ("q3", 0.75))}
        rows.append(dict(zip(KEYS, key), n=s["n"], rps_median=s["median"], rps_ci95_low=s["ci_low"],
                         rps_ci95_high=s["ci_high"], rps_q1=s["q1"], rps_q3=s["q3"],
                         rps_iqr=s["iqr"], latency_mean_ms=med("latency_mean"),
                         latency_stdev_ms=med("latency_stdev"), latency_p50_ms=med("latency_p50"),
                         latency_p90_ms=med("latency_p90"), latency_p99_ms=med("latency_p99"),
                         latency_p99_9_ms=med("latency_p99_9"), latency_max_ms=med("latency_max"),
                         timeouts=med("errors_timeout"), littles_law=g["littles_law"].median(), **quartiles))
    table = pd.DataFrame(rows)
    failed = df[(df["metric"] == "requests_per_second") & (df["status"] == "failed")]
    failed = failed[~failed["error"].astype(str).str.contains(CANNOT_RUN, regex=False)]
    fails = failed.groupby(KEYS).size().rename("failed").reset_index()
    table = table.merge(fails, on=KEYS, how="outer").fillna({"failed": 0})
    on = {"app": "app", "runtime": "runtime", "memory_mb": "memory_mb"}
    for metric, column in (("requests_per_second", "published_rps"), ("latency_mean", "published_latency_mean_ms"),
                           ("latency_stdev", "published_latency_stdev_ms")):
        table = beside_published(table, reference, metric, on, column, value="value_base")
    table["level"] = table.apply(level_label, axis=1)
    return sort_by_runtime(health_column(table, df, KEYS), ["app", "scenario", "memory_mb", "runtime", "protocol"],
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
    fig, axes = protocol_grid(len(apps) * len(PANELS), protocols, panel_size=(6.0, 2.1))
    x = np.arange(len(levels))
    runtimes = in_runtime_order(table["runtime"])  # one place per runtime in every panel
    for a, app in enumerate(apps):
        for j, proto in enumerate(protocols):
            panel = {name: axes[a * len(PANELS) + p][j] for p, (_, name) in enumerate(PANELS)}
            t = table[(table["app"] == app) & (table["protocol"] == proto)]
            n = sorted({int(v) for v in t["n"].dropna()})
            runs = (f"n = {n[0]} run" + ("s" if n[0] != 1 else "") if len(n) == 1 else
                    f"n = {n[0]}-{n[-1]} runs" if n else "no run")
            for k, rt in enumerate(runtimes):
                g = t[t["runtime"] == rt].set_index("level").reindex(levels)
                if g["rps_median"].isna().all() and not (g["failed"] > 0).any():
                    continue
                # Side by side within a level in every panel: seven runtimes at one value showed one.
                draw_runtime(panel, x + dodge(k, len(runtimes), 0.6), g, rt, proto)
            for ylabel, name in PANELS:
                ax = panel[name]
                ax.set_xticks(x, levels)
                ax.set_xlim(-0.5, len(levels) - 0.5)  # room for the runtimes' side-by-side offsets
                ax.set_title(f"{app}, {PROTOCOL_TITLE.get(proto, proto)} ({runs} per point)", fontsize=9)
                ax.grid(alpha=0.3, which="both")
                if j == 0:
                    ax.set_ylabel(ylabel, fontsize=8)
                ax.set_yscale("log")
    keep_in_view(axes)  # y is shared per row: what the published column or a paper's value adds
    room_for_health_marks(axes)  # else a dagger above a row's highest point prints on the panel's title
    for ax in np.ravel(axes):
        readable_log_ticks(ax)
    shapes = [Line2D([], [], color="grey", marker=m, linestyle="", label=lab) for _, m, lab in PERCENTILES]
    fig.suptitle(f"{title}: one line per runtime, the median of the runs (bars: their quartiles, where n > 1);\n"
                 f"x = {PAPER}; ▼ (at the panel's foot) = failed at that level; (TCG) = emulated")
    figure_legend(fig, extra=shapes)
    return fig


def draw_runtime(panel: dict, x: np.ndarray, g: pd.DataFrame, rt: str, protocol: str) -> None:
    """One runtime's values over the levels, in each panel, at its own x beside each level's (dodge)."""
    style = protocol_line(rt, protocol)
    # Quartiles of the runs: asymmetric, so they stay within the measured values.
    below = (g["rps_median"] - g["rps_q1"]).clip(lower=0).fillna(0)
    above = (g["rps_q3"] - g["rps_median"]).clip(lower=0).fillna(0)
    panel["throughput"].errorbar(x, g["rps_median"], yerr=[below, above], capsize=3, label=rt, **style)
    mark_health(panel["throughput"], x, g["rps_median"], g.get("health"))
    dead = (g["rps_median"].isna() & (g["failed"] > 0)).to_numpy()
    if dead.any():  # at the panel's foot, above the axis line (a log axis has no zero)
        ax = panel["throughput"]
        ax.scatter(x[dead], np.full(dead.sum(), 0.04), transform=ax.get_xaxis_transform(),
                   **runtime_artist(rt), **FAILED_STYLE)
    for name, metric in QUARTILES.items():
        panel[name].plot(x, g[f"{metric}_ms"], **style)
        quartile_whiskers(panel[name], x, g[f"{metric}_q1_ms"], g[f"{metric}_q3_ms"], rt)
    for column, name in (("published_rps", "throughput"), ("published_latency_mean_ms", "mean"),
                         ("published_latency_stdev_ms", "jitter")):
        mark_paper_values(panel[name], x, g[column], rt, PAPER)
    low, high = g["latency_p50_ms"], g["latency_p99_ms"]
    has = (low.notna() & high.notna()).to_numpy()
    panel["percentiles"].vlines(x[has], low[has], high[has], linewidth=1.5, **runtime_artist(rt))
    for column, marker, _ in PERCENTILES:
        panel["percentiles"].scatter(x, g[column], marker=marker, s=22, **runtime_artist(rt))


def quartile_whiskers(ax, x, q1, q3, rt: str) -> None:
    """The runs' quartiles around a latency median: a stroke with small caps in the runtime's
    colour, as the throughput row's error bars look, where the runs differ. Drawn as strokes, not
    an errorbar: a latency panel has no error bars, so no one reads a mean +- stdev into it (the
    mean, jitter and open-loop panels all draw these)."""
    x, low, high = (np.asarray(v, dtype=float) for v in (x, q1, q3))
    keep = np.isfinite(x) & np.isfinite(low) & np.isfinite(high) & (high > low)
    if keep.any():
        ax.vlines(x[keep], low[keep], high[keep], linewidth=1.2, **runtime_artist(rt))
        ax.scatter(np.tile(x[keep], 2), np.concatenate([low[keep], high[keep]]), marker="_", s=36, linewidths=1.2,
                   **runtime_artist(rt))


def separated(level: pd.DataFrame, ahead: str, behind: str) -> bool:
    """Whether `ahead` beats `behind` at one level beyond the runs' spread."""
    rows = level.set_index("runtime")
    if ahead not in rows.index or behind not in rows.index or "none" in (ahead, behind):
        return False
    a, b = rows.loc[ahead], rows.loc[behind]
    return bool(min(a["n"], b["n"]) >= 2 and a["rps_q1"] > b["rps_q3"])


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
            winners.append((mem, ok.loc[ok["rps_median"].idxmax(), "runtime"] if not ok.empty else "none", ok))
        seq = ", ".join(f"{w} at {m:g} MB" for m, w, _ in winners)
        flips = [(m, w0, w, lvl) for (_, w0, _), (m, w, lvl) in zip(winners, winners[1:]) if w != w0]
        # A crossover is claimed only where the runs' intervals separate: the new leader's lower
        # quartile above the old leader's upper one, from 2 runs or more each.
        real = [m for m, old, new, lvl in flips if separated(lvl, new, old)]
        verdict = (f"the ranking flips at {real[0]:g} MB (crossover: the runs' quartiles separate)" if real else
                   f"the order changes at {flips[0][0]:g} MB, within the runs' spread (or from one run): "
                   "no crossover claimed" if flips else "no crossover in this sweep")
        lines.append(f"- **{app}**, {proto}: fastest {seq}; {verdict}.")
    bad = table[(table["littles_law"] > 1.5)]
    if not bad.empty:
        lines.append(f"- {len(bad)} of {len(table)} cells have a Little's-law ratio above 1.5 "
                     "(throughput x mean latency exceeds the connections): wrk's coordinated-omission "
                     "correction inflates the mean under stalls, so read percentiles there.")
    return "\n".join(lines) or "- Only one runtime measured: no ranking to compare."


# -- open loop: latency vs offered rate (fair protocol) ----------------------------------------

# A runtime keeps up at a rate while it serves at least this share of it, with p99 under the bound.
KEEPS_UP_SHARE = 0.95
P99_BOUND_MS = 100.0
OPEN_METRICS = {"ol_achieved_rps": "achieved_rps", "ol_latency_p50": "p50_ms", "ol_latency_p90": "p90_ms",
                "ol_latency_p99": "p99_ms", "ol_latency_p99_9": "p99_9_ms", "ol_latency_max": "max_ms",
                "ol_errors": "errors"}
OPEN_GROUP = ["scenario", "cpus", "memory_mb", "app", "runtime"]
OPEN_KEYS = [*OPEN_GROUP, "rate"]  # rate: the offered rate a run shares with its repetitions (offered_point)
# The curves the figure draws, each with the runs' quartiles at every rate (p99_q1_ms, p99_q3_ms, ...).
OPEN_CURVES = {"p99_ms": dict(marker="o", linestyle="-"), "p50_ms": dict(marker=".", linestyle="--")}


def offered_point(ol: pd.DataFrame) -> pd.Series:
    """The offered rate a row's run shares with its repetitions: its share of the run's own
    throughput where rates were given as shares (tools.open_loop.offered_rates: then each run
    offers its own req/s, no two the same), else the req/s given (each run its own share)."""
    rps = ol["offered_rps"].astype(float)
    if "offered_share" not in ol or "rep" not in ol:
        return rps.map(lambda v: f"{v:g} req/s")
    share = ol["offered_share"].astype(float)
    keyed = ol.assign(_share=share, _rps=rps)
    runs = {col: keyed.groupby([*OPEN_GROUP, col], dropna=False)["rep"].transform("nunique")
            for col in ("_share", "_rps")}
    by_share = share.notna() & (runs["_share"] > runs["_rps"])
    return pd.Series(np.where(by_share, share.map(lambda v: f"{v:.1%} of own throughput"),
                              rps.map(lambda v: f"{v:g} req/s")), index=ol.index)


def open_loop_table(df: pd.DataFrame, p99_bound_ms: float = P99_BOUND_MS) -> pd.DataFrame:
    """Per level, app, runtime and offered rate (offered_point: with rates given as shares of each
    run's throughput, the same share over the repetitions): the median offered rate and share,
    the runs (n), achieved rate and latency percentiles (medians over the runs; p99 and p50 with
    their quartiles), whether the runtime kept up, and why not. Empty without open-loop rows."""
    df = mark_emulated(df)
    ol = df[df["metric"].isin(OPEN_METRICS)] if "offered_rps" in df else df.iloc[0:0]
    quartiles = [f"{c.removesuffix('_ms')}_{q}_ms" for c in OPEN_CURVES for q in ("q1", "q3")]
    if ol.empty:
        return pd.DataFrame(columns=[*OPEN_GROUP, "offered_rps", "offered_share", "n", "level", *OPEN_METRICS.values(),
                                     *quartiles, "keeps_up", "why"])
    ol = ol.assign(rate=offered_point(ol), offered_share=ol.get("offered_share", np.nan))
    ok = ol[ol["status"] == "ok"]
    runs = ol[ol["metric"] == "ol_achieved_rps"].groupby(OPEN_KEYS)
    table = runs.agg(offered_rps=("offered_rps", "median"), offered_share=("offered_share", "median"),
                     n=("status", lambda v: int((v == "ok").sum()))).reset_index()
    curves = ok[ok["metric"].map(OPEN_METRICS).isin(list(OPEN_CURVES))]
    for rows, at, q in ((ok, 0.5, ""), (curves, 0.25, "q1"), (curves, 0.75, "q3")):  # medians, then quartiles
        if not rows.empty:
            wide = rows.pivot_table(index=OPEN_KEYS, columns="metric", values="value",
                                    aggfunc=lambda v, at=at: v.quantile(at))
            names = {m: f"{OPEN_METRICS[m].removesuffix('_ms')}_{q}_ms" if q else OPEN_METRICS[m] for m in wide.columns}
            table = table.merge(wide.rename(columns=names).reset_index(), on=OPEN_KEYS, how="left")
    for column in [*OPEN_METRICS.values(), *quartiles]:
        if column not in table:
            table[column] = np.nan
    failed = ol[(ol["status"] == "failed") & (ol["metric"] == "ol_achieved_rps")]
    errors = failed.groupby(OPEN_KEYS)["error"].first().rename("failed_error").reset_index()
    table = table.merge(errors, on=OPEN_KEYS, how="left") if not failed.empty else table.assign(failed_error=None)
    tool = ol.groupby(OPEN_KEYS)["load_tool"].first().rename("load_tool").reset_index()
    table = table.merge(tool, on=OPEN_KEYS, how="left")

    def why(r) -> str:
        if isinstance(r.get("failed_error"), str):
            return r["failed_error"]
        reasons = []
        if not r["achieved_rps"] >= KEEPS_UP_SHARE * r["offered_rps"]:
            reasons.append(f"served {r['achieved_rps']:.0f} of {r['offered_rps']:.0f} req/s")
        if not r["p99_ms"] <= p99_bound_ms:
            reasons.append(f"p99 {r['p99_ms']:.1f} ms > {p99_bound_ms:g} ms")
        return "; ".join(reasons)

    table["why"] = table.apply(why, axis=1)
    table["keeps_up"] = table["why"] == ""
    table["level"] = table.apply(level_label, axis=1)
    table = health_column(table.drop(columns=["failed_error"]), ol, OPEN_KEYS).drop(columns="rate")
    return sort_by_runtime(table, ["app", "scenario", "memory_mb", "runtime", "offered_rps"],
                           ascending=[True, False, False, True, True])


def open_loop_figure(table: pd.DataFrame, title: str, p99_bound_ms: float = P99_BOUND_MS):
    """One panel per app and level: p50 (dashed) and p99 (solid) latency against the offered
    rate, one colour per runtime, each point the median of the runs at that rate (x: their
    median offered rate) with the runs' quartiles as bars; an open circle on the first rate a
    runtime no longer keeps up with (served < 95% of it, or p99 above the bound)."""
    if table.empty:
        raise NoData("no open-loop rows (open_loop='none', or only the published protocol ran)")
    apps = list(dict.fromkeys(table["app"]))
    levels = list(dict.fromkeys(table.sort_values(["scenario", "memory_mb"], ascending=[False, False])["level"]))
    fig, axes = plt.subplots(len(apps), len(levels), figsize=(4.6 * len(levels), 3.4 * len(apps)),
                             squeeze=False, sharey=True)
    for a, app in enumerate(apps):
        for c, level in enumerate(levels):
            ax = axes[a][c]
            t = table[(table["app"] == app) & (table["level"] == level)]
            for rt in in_runtime_order(t["runtime"]):
                g = t[t["runtime"] == rt].sort_values("offered_rps")
                for curve, line in OPEN_CURVES.items():
                    ax.plot(g["offered_rps"], g[curve], label=rt if curve == "p99_ms" else None, **line,
                            **runtime_artist(rt))
                    quartile_whiskers(ax, g["offered_rps"], g[f"{curve[:-3]}_q1_ms"], g[f"{curve[:-3]}_q3_ms"], rt)
                mark_health(ax, g["offered_rps"], g[["p99_ms", "p99_q3_ms"]].max(axis=1), g.get("health"))
                over = g[~g["keeps_up"]]
                if not over.empty:
                    first = over.iloc[0]
                    y = first["p99_ms"] if pd.notna(first["p99_ms"]) else p99_bound_ms
                    ax.scatter([first["offered_rps"]], [y], s=160, facecolors="none", linewidths=1.8,
                               zorder=6, edgecolors=runtime_colour(rt))
            ax.axhline(p99_bound_ms, color="grey", linewidth=0.8, linestyle=":")
            ax.set_yscale("log")
            ax.set_title(f"{app}, {level}", fontsize=9)
            ax.set_xlabel("offered rate (req/s; median of the runs)", fontsize=8)
            if c == 0:
                ax.set_ylabel("latency (ms, log)", fontsize=8)
            ax.grid(alpha=0.3)
    keep_in_view(axes)
    tools = ", ".join(sorted(set(table["load_tool"].dropna())))
    n = sorted({int(v) for v in table["n"].dropna() if v > 0})
    runs = f"n = {n[0]}" if len(n) == 1 else f"n = {n[0]}-{n[-1]}" if n else "no"
    runs = f"{runs} run{'s' if n != [1] else ''}".replace(" ", "\u00a0")  # not wrapped apart
    text = (f"{title}, open loop ({tools}): p99 solid, p50 dashed, each the median of the runs at a rate ({runs}; "
            f"bars: their quartiles, where n > 1)\n○ = first rate not kept up "
            f"(< {KEEPS_UP_SHARE:.0%} served or p99 > {p99_bound_ms:g} ms)")
    width = int(fig.get_figwidth() / 0.085)  # characters of 10 pt across the figure
    text = "\n".join(textwrap.fill(line, width) for line in text.split("\n"))
    fig.suptitle(text, fontsize=10)
    figure_legend(fig, extra=[Line2D([], [], color="grey", label=name.removesuffix("_ms"), **line)
                              for name, line in OPEN_CURVES.items()])
    # figure_legend keeps room for one line of suptitle: a wrapped one needs more.
    fig.subplots_adjust(top=min(fig.subplotpars.top, 1 - (0.15 + 0.2 * (text.count("\n") + 1)) / fig.get_figheight()))
    return fig


def open_loop_findings(table: pd.DataFrame) -> str:
    """Per app and level: the highest offered rate each runtime kept up with."""
    lines = []
    for (app, level), g in table.groupby(["app", "level"], sort=False):
        parts = []
        for rt in in_runtime_order(g["runtime"]):
            r = g[g["runtime"] == rt].sort_values("offered_rps")
            kept = r[r["keeps_up"]]
            first_miss = r[~r["keeps_up"]]
            kept_up = f"up to {kept['offered_rps'].max():.0f} req/s" if not kept.empty else "at none of the rates"
            miss = f" (then {first_miss.iloc[0]['why']})" if not first_miss.empty else ""
            parts.append(f"{rt} kept up {kept_up}{miss}")
        lines.append(f"- **{app}**, {level}: " + "; ".join(parts) + ".")
    return "\n".join(lines) or "- No open-loop rows."


@dataclass
class HttpLoadPage(Page):
    """What notebooks 03 and 04 show: `table` per level, app, runtime and protocol, beside the paper's."""
    open_table: pd.DataFrame   # the open-loop rates (fair protocol only)


@said_if_nothing_measured
def show_http_load(run_dir: Path, params) -> HttpLoadPage:
    """Notebooks 03 (I/O-bound) and 04 (CPU-bound), written once (edgebench.plotting.io_bound and
    cpu_bound call it): the run's notes, the table, the figure and its findings, then the
    open-loop curves. `params`: the notebook's record (edgebench.experiments.io_bound.Params or
    cpu_bound.Params)."""
    experiment, title = params.EXPERIMENT, params.TITLE
    df = open_page(run_dir)
    table = http_table(df, load_reference(experiment))
    show_table(table.drop(columns=["level"]), 2)
    show_figure(http_figure(table, title), experiment, experiment, run_dir)
    show_findings(crossover_findings(table))
    open_table = open_loop_table(df, params.p99_bound_ms)
    if open_table.empty:
        show_findings("No open-loop rows in this run (open_loop='none', or only the published protocol).")
    else:
        show_findings("## Latency at fixed offered rates (open loop)\n\nwrk above is closed loop: a stalled "
                      "server also stalls the load, so its latency misses the stall. Here, in the fair "
                      "protocol, each runtime is offered fixed rates (shares of its own closed-loop "
                      "throughput) by an open-loop tool that times every request from when it was due.")
        show_table(open_table.drop(columns=["level"]), 2)
        show_figure(open_loop_figure(open_table, title, params.p99_bound_ms), experiment,
                    f"{experiment}_open_loop", run_dir)
        show_findings(open_loop_findings(open_table))
    return HttpLoadPage(run_dir, df, table, open_table)
