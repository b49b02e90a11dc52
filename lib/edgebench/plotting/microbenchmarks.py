"""Microbenchmarks (paper 001/004): sysbench CPU and memory (Table 2), and Docker's host vs
bridge networking (§3.0.1), beside the paper's values."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.experiments.microbenchmarks import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.reasons import plain_reason, run_meta
from edgebench.plotting.style import (HEALTH_GID, HEALTH_MARK, PROTOCOL_TITLE, figure_legend, health_marked,
                                      in_runtime_order, mark_health, mark_paper_values, protocol_grid, protocols_in,
                                      plt, readable_log_ticks, runtime_artist)
from edgebench.plotting.tables import (NoData, absent_figure, interval_kind, mark_health as health_column, ok_rows,
                                       sort_by_runtime, spread)
from edgebench.reference import load_reference

PAPER_TABLE_2 = "paper 001, Table 2"
PAPER_NETWORK = "paper 001, iperf on its Pi (published)"
# What each protocol's panel shows: the published points are Table 2's total time; the fair
# runs last a fixed time, so their rate is what compares.
SYSBENCH_VALUE = {("cpu", "fair"): ("events_per_s", "events/s"), ("memory", "fair"): ("MiB_per_s", "MiB/s"),
                  ("cpu", "published"): ("total_time_s", "total time (s, log)"),
                  ("memory", "published"): ("total_time_s", "total time (s, log)")}
NETWORK_MODES = ["native", "host", "bridge"]
# Above the highest whisker on a log axis, a written value's 8 points need about a fifth of a decade or more.
LOG_HEADROOM = 2.0


def median_of(df: pd.DataFrame, metric: str, keys: list[str]) -> pd.Series:
    sel = df[(df["metric"] == metric) & (df["status"] == "ok")]
    return sel.groupby(keys, dropna=False)["value"].median()


# The whisker drawn on a median bar (tables.interval_kind picks one), with its words for a label:
# the median's 95% interval (tables.spread: a bootstrap, NaN below 3 runs), else the lowest and
# highest run (with 2 runs, both runs).
INTERVALS = {"ci95": ("95% CI of the median", "ci_low", "ci_high"), "range": ("lowest to highest run", "min", "max")}


def with_spread(table: pd.DataFrame, df: pd.DataFrame, metric: str, keys: list[str], column: str) -> pd.DataFrame:
    """`table` (keys as columns) with `{column}_ci95_low`/`_high` and `{column}_range_low`/`_high`:
    the spread of each group's successful runs of `metric` (NaN where it has none)."""
    sel = df[(df["metric"] == metric) & (df["status"] == "ok") & df["value"].notna()]
    names = {f"{column}_{kind}_{end}": stat for kind, (_, low, high) in INTERVALS.items()
             for end, stat in (("low", low), ("high", high))}
    rows = []
    for key, g in sel.groupby(keys, dropna=False)["value"]:
        s = spread(g)
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                     **{name: s[stat] for name, stat in names.items()}})
    if not rows:
        return table.assign(**{name: np.nan for name in names})
    return table.merge(pd.DataFrame(rows), on=keys, how="left")


def draw_interval(ax, x, g: pd.DataFrame, column: str, kind: str | None, capsize: float = 3) -> np.ndarray:
    """Black whiskers with small caps on the bars of `column` at `x`, from the table's
    `{column}_{kind}_low` to `_high`; the whisker's top per bar (the bar's value where none)."""
    value = g[column].to_numpy(dtype=float)
    if kind is None:
        return value
    low, high = (g[f"{column}_{kind}_{end}"].to_numpy(dtype=float) for end in ("low", "high"))
    keep = np.isfinite(value) & np.isfinite(low) & np.isfinite(high)
    if keep.any():
        err = [np.clip(value - low, 0, None)[keep], np.clip(high - value, 0, None)[keep]]
        ax.errorbar(np.asarray(x, dtype=float)[keep], value[keep], yerr=err, fmt="none", ecolor="black",
                    elinewidth=1, capsize=capsize, capthick=1, zorder=4)
    return np.where(keep, np.fmax(value, high), value)


def whisker_note(table: pd.DataFrame, kind: str | None) -> str:
    """What a panel's bars and whiskers are, for its axis label: 'median of 5 runs; whiskers: ...'."""
    n = sorted({int(v) for v in table["n"].dropna()}) if "n" in table else []
    if n == [1]:  # no median and no spread of one run: its value, and no whisker
        return "one run each: its value, no whisker"
    runs = f"{n[0]}" if len(n) == 1 else f"{n[0]}-{n[-1]}" if n else "the"
    return f"median of {runs} runs" + (f"; whiskers: {INTERVALS[kind][0]}" if kind else "")


# -- Table 2 ---------------------------------------------------------------------------

def sysbench_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark, point, runtime and protocol: medians of total time, events/s and MiB/s (with
    their spread over the runs: with_spread), with Table 2's latency (its 'latency' is the run's
    total time) for the published points."""
    rows = ok_rows(df[df["benchmark"].isin(["cpu", "memory"])], "total_time")
    keys = ["benchmark", "point", "threads", "runtime", "protocol"]
    table = rows.groupby(keys)["value"].agg(["median", "count"]).rename(columns={"median": "total_time_s",
                                                                                 "count": "n"})
    for metric, col in (("events_per_second", "events_per_s"), ("throughput", "MiB_per_s"),
                        ("latency_avg", "latency_avg_ms"), ("latency_p95", "latency_p95_ms")):
        table = table.join(median_of(df, metric, keys).rename(col), how="left")
    table = table.reset_index()
    for metric, col in (("total_time", "total_time_s"), ("events_per_second", "events_per_s"),
                        ("throughput", "MiB_per_s")):  # the values the figure draws: their spread too
        table = with_spread(table, df, metric, keys, col)
    ref = reference[(reference["metric"] == "latency")][["workload", "column_label", "runtime", "value"]]
    ref = ref.rename(columns={"workload": "benchmark", "column_label": "point", "value": "published_s"})
    table = table.merge(ref.drop_duplicates(["benchmark", "point", "runtime"]), on=["benchmark", "point", "runtime"],
                        how="left")
    failed = df[(df["status"] == "failed") & df["benchmark"].isin(["cpu", "memory"])]
    table["failed"] = [int(((failed["benchmark"] == r.benchmark) & (failed["point"] == r.point)
                            & (failed["runtime"] == r.runtime)).sum()) for r in table.itertuples()]
    table = sort_by_runtime(health_column(table, df, keys), ["protocol", "benchmark", "threads", "runtime"])
    net = df[df["benchmark"] == "network"]
    if not ((net["metric"] == "network_throughput") & (net["status"] == "ok")).any():
        table.attrs["network_absent"] = why_no_network(df)  # the notebook's other half: sysbench_figure says so
    return table


def tick_label(bench: str, point: str, sub: pd.DataFrame) -> str:
    """Table 2 heads its columns '1MB / 10T' for both tests; the CPU test has no memory size,
    so its ticks name the threads alone."""
    if bench != "cpu" or "/" not in str(point):
        return str(point)
    threads = sub[sub["point"] == point]["threads"].dropna()
    return f"{int(threads.iloc[0])} threads" if not threads.empty else str(point)


def sysbench_figure(table: pd.DataFrame):
    """Rows: CPU, memory; one column per protocol. Bars per runtime at each point (the median of
    the runs, a black whisker for their spread: interval_kind); Table 2's values as crosses on the
    published points."""
    if table.empty:
        raise NoData("sysbench table is empty")
    protocols = protocols_in(table["protocol"])
    # Not sharing y: the fair panels show rates, the published ones total times.
    fig, axes = protocol_grid(2, protocols, panel_size=(5.5, 3.5), sharey=False)
    for i, bench in enumerate(("cpu", "memory")):
        for j, proto in enumerate(protocols):
            ax = axes[i][j]
            sub = table[(table["benchmark"] == bench) & (table["protocol"] == proto)]
            if sub.empty:
                ax.set_axis_off()
                continue
            value, ylabel = SYSBENCH_VALUE.get((bench, proto), ("total_time_s", "total time (s)"))
            points = list(dict.fromkeys(sub.sort_values("threads")["point"]))
            runtimes = in_runtime_order(sub["runtime"])
            width = 0.8 / len(runtimes)
            kind = interval_kind(sub, value) if sub["n"].max() > 1 else None  # one run: no spread to draw
            for k, rt in enumerate(runtimes):
                g = sub[sub["runtime"] == rt].set_index("point").reindex(points)
                x = np.arange(len(points)) - 0.4 + width * (k + 0.5)
                ax.bar(x, g[value], width * 0.9, label=rt, **runtime_artist(rt))
                top = draw_interval(ax, x, g, value, kind, capsize=min(3.0, 12 * width))
                mark_health(ax, x, top, g.get("health"))  # above the whisker
                mark_paper_values(ax, x, g["published_s"], rt, PAPER_TABLE_2)
            ax.set_xticks(range(len(points)), [tick_label(bench, point, sub) for point in points], fontsize=8)
            if "log" in ylabel:
                ax.set_yscale("log")
                readable_log_ticks(ax)  # 10, 20, 50, not 2x10^1 over 3x10^1
            ax.set_ylabel(f"{ylabel}\n{whisker_note(sub, kind)}", fontsize=8)
            ax.set_title(f"sysbench {bench}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
    for ax in np.ravel(axes):  # a dagger above the tallest bar, under the panel's title
        if ax.get_yscale() != "log" and any(t.get_gid() == HEALTH_GID for t in ax.texts):
            ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    figure_legend(fig)
    why = table.attrs.get("network_absent")
    if why:  # under the legend: the notebook's title promises host vs bridge networking too
        width = max(60, int(fig.get_figwidth() / 0.06))
        fig.text(0.5, 0, textwrap.fill(f"Docker host vs bridge networking (iperf3) is not in this run: {why}.",
                                       width), ha="center", va="top", fontsize=8, color="#555555", gid=ABSENT_GID)
    return fig


ABSENT_GID = "eb-absent"


def sysbench_findings(table: pd.DataFrame) -> str:
    lines = []
    pub = table[table["protocol"] == "published"]
    for bench in ("memory", "cpu"):
        sub = pub[pub["benchmark"] == bench]
        piv = sub.pivot_table(index="point", columns="runtime", values="total_time_s")
        if {"native", "docker"} <= set(piv.columns):
            for point, r in piv.iterrows():
                ref = sub[(sub["point"] == point)].set_index("runtime")["published_s"]
                paper = (f"; paper: docker {ref.get('docker'):g} s vs native {ref.get('native'):g} s"
                         if ref.notna().all() and {"docker", "native"} <= set(ref.index) else "")
                lines.append(f"- {bench} {point} (published): docker {r['docker']:.3g} s vs native "
                             f"{r['native']:.3g} s{paper}.")
    mem = pub[pub["benchmark"] == "memory"]
    if not mem.empty and mem["total_time_s"].max() < 1:
        lines.append(f"- The published memory points finish in {mem['total_time_s'].max() * 1000:.0f} ms or less: "
                     "thread start-up, not memory, is what they time. The fair runs last seconds.")
    fair = table[table["protocol"] == "fair"]
    for bench, col, unit in (("cpu", "events_per_s", "events/s"), ("memory", "MiB_per_s", "MiB/s")):
        sub = fair[fair["benchmark"] == bench]
        for point, g in sub.groupby("point"):
            vals = g.set_index("runtime")[col]
            if "native" in vals and vals["native"]:
                rel = ", ".join(f"{rt} {v / vals['native']:.2f}x" for rt, v in vals.items() if rt != "native")
                lines.append(f"- {bench} {point} (fair): native {vals['native']:.4g} {unit}; {rel} of native.")
    return "\n".join(lines)


# -- networking ------------------------------------------------------------------------

def network_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median iperf3 throughput and RTT per runtime and mode (native; each runtime with two modes
    on host and on bridge), with their spread over the runs (with_spread), the paper's beside
    Docker's; `label` names each bar ('docker (bridge)'). A run without networking rows gives an
    empty table whose attrs["absent"] says why (network_figure draws that sentence)."""
    net = df[df["benchmark"] == "network"] if "benchmark" in df else df.iloc[:0]
    if not ((net["metric"] == "network_throughput") & (net["status"] == "ok")).any():
        empty = pd.DataFrame(columns=["runtime", "mode", "label", "throughput_Gbps", "n", "rtt_ms"])
        empty.attrs["absent"] = why_no_network(df)
        return empty
    # Per runtime and mode: Docker and Docker with crun both name their points "host" and "bridge".
    keys = ["runtime", "point"]
    thr = ok_rows(net, "network_throughput").groupby(keys)["value"].agg(["median", "count"])
    table = thr.rename(columns={"median": "throughput_Gbps", "count": "n"})
    table = table.join(median_of(net, "network_rtt", keys).rename("rtt_ms"), how="left").reset_index()
    for metric, col in (("network_throughput", "throughput_Gbps"), ("network_rtt", "rtt_ms")):
        table = with_spread(table, net, metric, keys, col)
    table = health_column(table, net, keys).rename(columns={"point": "mode"})
    table.insert(2, "label", [network_label(r.runtime, r.mode) for r in table.itertuples()])
    ref = reference[reference["metric"].isin(["network_throughput", "network_latency", "ping_latency"])]
    pivot = ref.pivot_table(index="network_mode", columns="metric", values="value", aggfunc="first")
    pivot = pivot.rename(columns={"network_throughput": "published_Gbps",
                                  "network_latency": "published_iperf_latency_ms", "ping_latency": "published_ping_ms"})
    table = table.merge(pivot, left_on="mode", right_index=True, how="left")
    # The paper measured Docker's modes: its values beside Docker's bars, not beside Docker with crun's.
    table.loc[~table["runtime"].isin(["native", "docker"]), list(pivot.columns)] = np.nan
    rank = {m: i for i, m in enumerate(NETWORK_MODES)}
    table["mode_rank"] = table["mode"].map(rank).fillna(len(rank))
    return sort_by_runtime(table, ["runtime", "mode_rank"]).drop(columns="mode_rank")


def network_label(runtime: str, mode: str) -> str:
    """'docker (bridge)' beside 'docker (host)', as every figure names a runtime's network modes;
    the baseline (native, on the host's own network) by its name alone."""
    return runtime if mode in ("", runtime, "native") else f"{runtime} ({mode})"


def why_no_network(df: pd.DataFrame) -> str:
    """Why a run has no host vs bridge numbers: its failed rows' reason, or the run's own note
    (no runtime with two network modes, no iperf3 on the load generator), or its parameters."""
    net = df[df["benchmark"] == "network"] if "benchmark" in df else df.iloc[:0]
    errors = net["error"].dropna().astype(str) if "error" in net else pd.Series(dtype=str)
    errors = errors[errors.str.strip() != ""].value_counts()
    if not errors.empty:
        return f"every iperf3 run failed, most often: {plain_reason(errors.index[0])}"
    meta = run_meta(df)
    note, params = (meta.get("notes") or {}).get("network"), meta.get("parameters") or {}
    if note:
        return plain_reason(str(note))
    if params.get("network") is False:
        smoke = " (the smoke profile measures sysbench's points only)" if params.get("profile") == "smoke" else ""
        return f"this run did not measure it: network = False{smoke}"
    return "this run has no networking rows"


def network_figure(table: pd.DataFrame):
    """Throughput and RTT per mode, each mode its own legend entry (host and bridge are both
    Docker's colour, the bridge hatched), a black whisker for the runs' spread (interval_kind);
    RTT on a log axis with its value written (above the whisker), as a tenth of a millisecond is
    no visible bar beside the paper's milliseconds."""
    if table.empty:
        if table.attrs.get("absent"):  # the notebook promises it: said, with why
            return absent_figure(NETWORK_TITLE, table.attrs["absent"])
        raise NoData("network table is empty")
    fig, axes = plt.subplots(1, 2, figsize=(max(9.0, 2.4 + 1.1 * len(table)), 3.8 + 0.6 * (len(table) > 3)))
    x = np.arange(len(table))
    # One source for both panels' crosses: two names for one black x made two legend entries.
    panels = [("throughput_Gbps", "published_Gbps", "iperf3 throughput (Gbps)", PAPER_NETWORK),
              ("rtt_ms", "published_iperf_latency_ms", "mean TCP RTT of the stream (ms, log)", PAPER_NETWORK)]
    # A dagger on every bar tells nothing: then the title says it once.
    health = table["health"] if "health" in table else pd.Series(None, index=table.index)
    all_busy = bool(len(health)) and health_marked(health).all()
    for ax, (measured, published, ylabel, source) in zip(axes, panels):
        kind = interval_kind(table, measured)
        tops = draw_interval(ax, x, table, measured, kind)
        for xi, top, r in zip(x, tops, table.itertuples()):
            value = getattr(r, measured)
            ax.bar(xi, value, 0.6, hatch="//" if r.mode == "bridge" else None, edgecolor="white",
                   label=r.label, **runtime_artist(r.runtime))
            label = f"{value:.3g}"
            if pd.notna(value):  # above the whisker, not over it
                ax.annotate(label, (xi, top), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=8)
            if not all_busy:  # after the written value, on its line (8-point digits are ~4.5 points wide)
                mark_health(ax, [xi], [top], [getattr(r, "health", None)], beside=(2.3 * len(label) + 2, 7))
            if published in table and pd.notna(table.loc[xi, published]):
                ax.scatter([xi], [table.loc[xi, published]], color="black", marker="x", s=40, zorder=5,
                           label=source)
        many = len(table) > 3  # Docker's and Docker with crun's modes: names at a slant
        ax.set_xticks(x, table["label"], rotation=20 if many else 0, ha="right" if many else "center")
        ax.set_ylabel(f"{ylabel}\n{whisker_note(table, kind)}", fontsize=8)
        if "log" in ylabel:
            ax.set_yscale("log")
            # room for the written values above the whiskers: the highest one sat on the frame
            ax.set_ylim(top=max(ax.get_ylim()[1], LOG_HEADROOM * np.nanmax(tops)))
            readable_log_ticks(ax)
        else:  # room for the written values above the whiskers
            ax.set_ylim(0, max(ax.get_ylim()[1], 1.15 * np.nanmax(tops)))
    title = NETWORK_TITLE
    if all_busy:
        title += f"\n{HEALTH_MARK} every value was measured while the device was busy or throttled"
    fig.suptitle(title)
    figure_legend(fig, ncol=3)  # one entry per label across both panels
    return fig


NETWORK_TITLE = "Docker networking: native (loopback), host (--network host), bridge (hatched: -p)"


def network_findings(table: pd.DataFrame) -> str:
    if table.empty and table.attrs.get("absent"):
        return f"- Docker host vs bridge networking is not in this run: {table.attrs['absent']}."
    native = table[table["mode"] == "native"].set_index("runtime")
    lines = []
    for rt, g in table[table["mode"].isin(["host", "bridge"])].groupby("runtime", sort=False):
        t = g.set_index("mode")
        if not {"host", "bridge"} <= set(t.index):
            continue
        gbps, rtt = t["throughput_Gbps"], t["rtt_ms"]
        lines.append(f"- {rt} (bridge) vs {rt} (host): {gbps['bridge']:.3g} vs {gbps['host']:.3g} Gbps "
                     f"({gbps['bridge'] / gbps['host'] - 1:+.0%}); RTT {rtt['bridge']:.3g} vs {rtt['host']:.3g} ms.")
        if "native" in native.index:
            lines.append(f"- {rt} (host) vs native: {gbps['host'] / native.loc['native', 'throughput_Gbps']:.2f}x "
                         "the throughput (the same network stack; the difference is noise or CPU sharing).")
    if not lines:
        raise NoData("need both host and bridge rows")
    lines.append("- From the load generator to a published port, bridge mode passes docker-proxy (userland) "
                 "when the client is on the same host, and NAT plus the bridge otherwise. Over loopback the "
                 "absolute values are not the paper's Ethernet; the host/bridge gap is what compares (the "
                 "paper prints 3.6 vs 3.1 Gbps).")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@dataclass
class MicrobenchmarksPage(Page):
    """`table`: sysbench per benchmark, point, runtime and protocol, beside Table 2."""
    network: pd.DataFrame  # iperf3 per runtime and mode, beside the paper's (empty, with why, without rows)


@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> MicrobenchmarksPage:
    """Notebook 08: the run's notes, sysbench beside Table 2 with its figure and findings, then
    host against bridge networking where the notebook asks for it (`network`)."""
    df = open_page(run_dir)
    reference = load_reference(params.EXPERIMENT)
    table = sysbench_table(df, reference)
    show_table(table, 3)
    show_figure(sysbench_figure(table), params.EXPERIMENT, "sysbench_table2", run_dir)
    show_findings(sysbench_findings(table))
    network = network_table(df, reference)
    if params.network:
        show_table(network, 3)
        show_figure(network_figure(network), params.EXPERIMENT, "network", run_dir)
        show_findings(network_findings(network))
    return MicrobenchmarksPage(run_dir, df, table, network)
