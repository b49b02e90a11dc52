"""Tables and figures the notebooks show, with the published values beside the measured ones.

Every function validates its input first: a figure drawn from no data is a defect, so an
empty selection raises with what is missing instead of rendering empty axes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless under papermill; JupyterLab's inline backend still displays
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from edgebench.errors import EdgebenchError  # noqa: E402
from edgebench.paths import FIGURES_DIR  # noqa: E402
from edgebench.runtimes import runtime_colours, runtime_order as registry_order  # noqa: E402

# One order and one colour per runtime in every figure: the runtime registry's.
RUNTIME_ORDER = registry_order()
RUNTIME_COLOR = runtime_colours()

PROTOCOL_STYLE = {"fair": dict(color="#1f77b4"), "published": dict(color="#ff7f0e")}


class NoData(EdgebenchError):
    """The results hold nothing to plot for this selection."""


def ok_rows(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    sel = df[(df["metric"] == metric) & (df["status"] == "ok") & df["value"].notna()]
    if sel.empty:
        failed = df[(df["metric"] == metric) & (df["status"] == "failed")]
        why = "; ".join(sorted(set(failed["error"].astype(str))))[:500] if not failed.empty else "no rows"
        raise NoData(f"no successful '{metric}' measurements to plot ({why})")
    return sel


def save_figure(fig, experiment: str, name: str, run_dir: Path | None = None) -> list[Path]:
    """figures/<experiment>/<name>.png, and a copy next to the data it came from."""
    paths = [FIGURES_DIR / experiment / f"{name}.png"]
    if run_dir is not None:
        paths.append(Path(run_dir) / "figures" / f"{name}.png")
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=130, bbox_inches="tight")
    return paths


EMULATED = " (TCG)"


def base_runtime(label: str) -> str:
    return label.removesuffix(EMULATED)


def runtime_colour(label: str) -> str:
    """'nanos (TCG)' has nanos' colour: the label, not the colour, says it was emulated."""
    return RUNTIME_COLOR.get(base_runtime(label), "grey")


def runtime_order(values) -> list[str]:
    present = list(dict.fromkeys(values))
    rank = {r: i for i, r in enumerate(RUNTIME_ORDER)}
    return sorted(present, key=lambda r: (rank.get(base_runtime(r), len(rank)), r))


def mark_emulated(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of a VM that ran under software emulation get their own runtime label, "nanos (TCG)":
    they measure QEMU's emulator, not the unikernel on hardware virtualisation, and every table
    and figure keeps them apart."""
    if "accelerator" not in df.columns or df.empty:
        return df
    tcg = df["accelerator"].astype(str).str.lower().eq("tcg") & ~df["runtime"].str.endswith(EMULATED)
    if not tcg.any():
        return df
    df = df.copy()
    df.loc[tcg, "runtime"] = df.loc[tcg, "runtime"] + EMULATED
    return df


def reference_for(reference: pd.DataFrame, runtimes) -> pd.DataFrame:
    """The papers' values also under each emulated label, so "nanos (TCG)" shows the paper's
    Nanos number beside it (the paper ran on KVM: the gap is the emulator's)."""
    extra = [reference[reference["runtime"] == base_runtime(r)].assign(runtime=r)
             for r in dict.fromkeys(runtimes) if r != base_runtime(r)]
    return pd.concat([reference, *extra], ignore_index=True) if extra else reference


def run_notes(run_dir, df: pd.DataFrame | None = None) -> str:
    """What a reader needs before the numbers: runtimes that were not measured and why, and
    which VM rows ran under software emulation."""
    from edgebench.results import load_meta
    lines = []
    skipped = (load_meta(Path(run_dir)).get("notes") or {}).get("skipped_runtimes") or {}
    for name, why in skipped.items():
        lines.append(f"- **{name}** not measured: {why}")
    if df is not None and "accelerator" in df.columns:
        for rt, accels in df.dropna(subset=["accelerator"]).groupby("runtime")["accelerator"]:
            kinds = ", ".join(sorted(set(accels.astype(str))))
            emulated = " (labelled *" + rt + EMULATED + "*: software emulation, not comparable with the " \
                "paper's KVM numbers)" if "tcg" in kinds else ""
            lines.append(f"- **{rt}** ran with accelerator: {kinds}{emulated}")
    return "\n".join(lines) or "- Every runtime was measured."


def spread(values: pd.Series) -> dict:
    v = values.dropna()
    return {"n": len(v), "median": v.median(), "q1": v.quantile(0.25), "q3": v.quantile(0.75),
            "iqr": v.quantile(0.75) - v.quantile(0.25), "min": v.min(), "max": v.max()}


# -- static footprint ---------------------------------------------------------------

def footprint_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """One row per app/runtime/build: measured MB beside the paper's MB (decimal MB)."""
    sizes = ok_rows(df, "image_size")
    app_sizes = df[(df["metric"] == "app_size") & (df["status"] == "ok")]
    table = sizes[["app", "runtime", "build", "value"]].rename(columns={"value": "image_bytes"})
    table = table.merge(app_sizes[["app", "runtime", "build", "value"]].rename(columns={"value": "app_bytes"}),
                        on=["app", "runtime", "build"], how="left")
    ref = reference[reference["metric"] == "image_size"][["app", "runtime", "value_base"]]
    table = table.merge(ref.rename(columns={"value_base": "published_bytes"}), on=["app", "runtime"],
                        how="left")
    for col in ("image_bytes", "app_bytes", "published_bytes"):
        table[col.replace("_bytes", "_MB")] = table[col] / 1e6
    table["measured/published"] = table["image_bytes"] / table["published_bytes"]
    order = {r: i for i, r in enumerate(runtime_order(table["runtime"]))}
    table = table.sort_values(["app", "runtime", "build"], key=lambda c: c.map(order) if c.name == "runtime" else c)
    return table[["app", "runtime", "build", "app_MB", "image_MB", "published_MB", "measured/published"]] \
        .reset_index(drop=True)


def footprint_figure(table: pd.DataFrame):
    """Bars like paper 000 Fig. 2: measured (solid) and published (hatched) per app and runtime."""
    if table.empty:
        raise NoData("footprint table is empty")
    apps = list(dict.fromkeys(table["app"]))
    fig, axes = plt.subplots(1, len(apps), figsize=(4.5 * len(apps), 3.8), squeeze=False)
    for ax, app in zip(axes[0], apps):
        t = table[table["app"] == app].copy()
        t["label"] = t["runtime"] + np.where(t["build"].isin(["native", "offline"]), "", " (" + t["build"] + ")")
        x = np.arange(len(t))
        ax.bar(x - 0.2, t["image_MB"], 0.4, label="measured", color="#1f77b4")
        ax.bar(x + 0.2, t["published_MB"].fillna(0), 0.4, label="published (paper 000)",
               color="white", edgecolor="#ff7f0e", hatch="//")
        for xi, (m, p) in enumerate(zip(t["image_MB"], t["published_MB"])):
            ax.text(xi - 0.2, m, f"{m:.1f}", ha="center", va="bottom", fontsize=8)
            if pd.notna(p):
                ax.text(xi + 0.2, p, f"{p:.1f}", ha="center", va="bottom", fontsize=8, color="#ff7f0e")
        ax.set_xticks(x, t["label"])
        ax.set_title(app)
        ax.set_ylabel("size (MB, 10^6 bytes)")
        ax.margins(y=0.15)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("Static footprint: app and runtime artifact size")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


# -- time to ready ------------------------------------------------------------------

def ttr_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median and IQR of time to ready per app, runtime and protocol, with the published median;
    for the fair protocol also the split into 'until the app listens' and 'until the probe sees it'."""
    df = mark_emulated(df)
    reference = reference_for(reference, df["runtime"])
    ttr = ok_rows(df, "time_to_ready")
    keys = ["app", "runtime", "protocol"]
    rows = []
    for key, g in ttr.groupby(keys):
        s = spread(g["value"])
        row = dict(zip(keys, key), n=s["n"], median_ms=s["median"], q1_ms=s["q1"], q3_ms=s["q3"],
                   min_ms=s["min"], max_ms=s["max"])
        for metric, col in (("time_to_listen", "listen_median_ms"), ("probe_lag", "probe_lag_median_ms")):
            part = df[(df["metric"] == metric) & (df["status"] == "ok")]
            part = part[(part["app"] == key[0]) & (part["runtime"] == key[1]) & (part["protocol"] == key[2])]
            row[col] = part["value"].median() if not part.empty else np.nan
        failed = df[(df["metric"] == "time_to_ready") & (df["status"] == "failed") & (df["app"] == key[0])
                    & (df["runtime"] == key[1]) & (df["protocol"] == key[2])]
        row["failed"] = len(failed)
        rows.append(row)
    table = pd.DataFrame(rows)
    ref = reference[reference["metric"] == "time_to_ready_median"][["app", "runtime", "value_base"]]
    table = table.merge(ref.rename(columns={"value_base": "published_median_ms"}), on=["app", "runtime"],
                        how="left")
    order = {r: i for i, r in enumerate(runtime_order(table["runtime"]))}
    return table.sort_values(["app", "runtime", "protocol"],
                             key=lambda c: c.map(order) if c.name == "runtime" else c).reset_index(drop=True)


def ttr_figure(df: pd.DataFrame, reference: pd.DataFrame):
    """Distributions like paper 000 Fig. 3, one panel per app, published medians marked."""
    df = mark_emulated(df)
    reference = reference_for(reference, df["runtime"])
    ttr = ok_rows(df, "time_to_ready")
    apps = list(dict.fromkeys(ttr["app"]))
    protocols = [p for p in ("fair", "published") if p in set(ttr["protocol"])]
    ref = reference[reference["metric"] == "time_to_ready_median"]
    fig, axes = plt.subplots(1, len(apps), figsize=(5 * len(apps), 4), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, app in zip(axes[0], apps):
        sub = ttr[ttr["app"] == app]
        runtimes = runtime_order(sub["runtime"])
        width = 0.8 / max(1, len(protocols))
        for j, proto in enumerate(protocols):
            for i, rt in enumerate(runtimes):
                v = sub[(sub["runtime"] == rt) & (sub["protocol"] == proto)]["value"]
                if v.empty:
                    continue
                pos = i - 0.4 + width * (j + 0.5)
                ax.boxplot(v, positions=[pos], widths=width * 0.8, showfliers=False,
                           medianprops=dict(color=PROTOCOL_STYLE[proto]["color"]))
                ax.scatter(pos + rng.uniform(-width / 4, width / 4, len(v)), v, s=8, alpha=0.6,
                           label=proto if i == 0 else None, **PROTOCOL_STYLE[proto])
        for i, rt in enumerate(runtimes):
            p = ref[(ref["app"] == app) & (ref["runtime"] == rt)]["value_base"]
            if not p.empty:
                ax.hlines(p.iloc[0], i - 0.45, i + 0.45, colors="red", linestyles="--",
                          label="published median (paper 000)")
        ax.set_xticks(range(len(runtimes)), runtimes)
        ax.set_yscale("log")
        ax.set_ylabel("time to ready (ms, log)")
        ax.set_title(app)
        ax.grid(axis="y", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles))
        ax.legend(uniq.values(), uniq.keys(), fontsize=8)
    fig.suptitle("Time to ready: launch to first HTTP 200")
    fig.tight_layout()
    return fig


def ttr_findings(table: pd.DataFrame) -> str:
    """Two sentences from the data: the fastest runtime per app, and fair vs published."""
    lines = []
    fair = table[table["protocol"] == "fair"]
    for app, g in fair.groupby("app"):
        g = g.sort_values("median_ms")
        parts = ", ".join(f"{r.runtime} {r.median_ms:.1f} ms" for r in g.itertuples())
        lines.append(f"- **{app}** (fair, median): {parts}.")
    both = table.pivot_table(index=["app", "runtime"], columns="protocol", values="median_ms")
    if {"fair", "published"} <= set(both.columns):
        for (app, rt), r in both.dropna().iterrows():
            lines.append(f"- {app}/{rt}: the published method reports {r['published']:.0f} ms where the "
                         f"fair probe sees {r['fair']:.1f} ms ({r['published'] - r['fair']:+.0f} ms: "
                         "curl every 50 ms, a new process per poll, millisecond `date` stamps).")
    pub = table.dropna(subset=["published_median_ms"])
    for r in pub[pub["protocol"] == "fair"].itertuples():
        lines.append(f"- {r.app}/{r.runtime}: paper 000 reports a median of {r.published_median_ms:g} ms; "
                     f"measured here (fair) {r.median_ms:.1f} ms.")
    return "\n".join(lines)


def footprint_findings(table: pd.DataFrame) -> str:
    """What the sizes show, per app: the smallest artifact and the ratio to the published size."""
    lines = []
    for app, g in table.groupby("app"):
        g = g.sort_values("image_MB")
        parts = ", ".join(f"{r.runtime}{'' if r.build in ('native', 'offline') else ' ' + r.build} "
                          f"{r.image_MB:.1f} MB" for r in g.itertuples())
        lines.append(f"- **{app}**: {parts}.")
        for r in g.dropna(subset=["published_MB"]).itertuples():
            lines.append(f"  - {r.runtime}: {r.image_MB:.1f} MB measured vs {r.published_MB:g} MB published "
                         f"(x{r.image_MB / r.published_MB:.2f}).")
    return "\n".join(lines)


# -- HTTP load ----------------------------------------------------------------------

def _level(row) -> str:
    return "rich" if row["scenario"] == "rich" else f"{row['memory_mb']:g} MB"


def http_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median throughput (IQR), latency mean/p99 and the Little's-law ratio per level, app,
    runtime and protocol, with the paper's published throughput beside."""
    df = mark_emulated(df)
    reference = reference_for(reference, df["runtime"])
    rps = ok_rows(df, "requests_per_second")
    keys = ["scenario", "cpus", "memory_mb", "app", "runtime", "protocol"]
    rows = []
    for key, g in rps.groupby(keys):
        s = spread(g["value"])
        sel = df[(df[keys] == pd.Series(key, index=keys)).all(axis=1) & (df["status"] == "ok")]
        med = lambda m: sel[sel["metric"] == m]["value"].median()  # noqa: E731
        rows.append(dict(zip(keys, key), n=s["n"], rps_median=s["median"], rps_iqr=s["iqr"],
                         latency_mean_ms=med("latency_mean"), latency_stdev_ms=med("latency_stdev"),
                         latency_p50_ms=med("latency_p50"), latency_p99_ms=med("latency_p99"),
                         timeouts=med("errors_timeout"),
                         littles_law=g["littles_law"].median()))
    table = pd.DataFrame(rows)
    failed = df[(df["metric"] == "requests_per_second") & (df["status"] == "failed")]
    fails = failed.groupby(keys).size().rename("failed").reset_index()
    table = table.merge(fails, on=keys, how="outer").fillna({"failed": 0})
    ref = reference[reference["metric"] == "requests_per_second"][["app", "runtime", "cpus", "memory_mb",
                                                                   "value"]]
    table = table.merge(ref.rename(columns={"value": "published_rps"}), on=["app", "runtime", "memory_mb"],
                        how="left", suffixes=("", "_ref")).drop(columns=["cpus_ref"], errors="ignore")
    table["level"] = table.apply(_level, axis=1)
    order = {r: i for i, r in enumerate(runtime_order(table["runtime"]))}
    return table.sort_values(["app", "scenario", "memory_mb", "runtime", "protocol"],
                             ascending=[True, False, False, True, True],
                             key=lambda c: c.map(order) if c.name == "runtime" else c).reset_index(drop=True)


def http_figure(table: pd.DataFrame, title: str):
    """Throughput, mean latency, its "jitter" (paper 000's standard deviation, a metric of its
    own: mean +- stdev would reach below zero) and p50/p99 per memory level (rich first), one
    row per app, published values as crosses; failed levels marked at the bottom."""
    if table.empty:
        raise NoData("HTTP load table is empty")
    apps = list(dict.fromkeys(table["app"]))
    levels = list(dict.fromkeys(table.sort_values(["scenario", "memory_mb"], ascending=[False, False])["level"]))
    fig, axes = plt.subplots(len(apps), 4, figsize=(19, 3.6 * len(apps)), squeeze=False)
    for r, app in enumerate(apps):
        t = table[table["app"] == app]
        for (rt, proto), g in t.groupby(["runtime", "protocol"]):
            g = g.set_index("level").reindex(levels)
            x = np.arange(len(levels))
            style = dict(color=runtime_colour(rt), ls="-" if proto == "fair" else "--", marker="o")
            axes[r][0].errorbar(x, g["rps_median"], yerr=g["rps_iqr"] / 2, label=f"{rt} {proto}", **style)
            axes[r][1].plot(x, g["latency_mean_ms"], **style)
            axes[r][2].plot(x, g["latency_stdev_ms"], **style)
            axes[r][3].plot(x, g["latency_p99_ms"], **style)
            axes[r][3].plot(x, g["latency_p50_ms"], **dict(style, marker=".", alpha=0.5))
            dead = g["rps_median"].isna() & (g["failed"] > 0)
            axes[r][0].scatter(x[dead.values], np.zeros(dead.sum()), marker="v", color=style["color"], s=40)
            pub = g["published_rps"]
            if proto == "published" and pub.notna().any():
                axes[r][0].scatter(x, pub, marker="x", color=runtime_colour(rt), s=50,
                                   label=f"{rt} (paper 000)")
        axes[r][3].set_yscale("log")
        for ax, ylabel in zip(axes[r], ("requests/s (median, IQR)", "mean latency (ms)",
                                        "jitter: stdev of latency (ms)", "p99 (o) and p50 (.) latency (ms, log)")):
            ax.set_xticks(range(len(levels)), levels)
            ax.set_ylabel(ylabel)
            ax.set_title(app)
            ax.grid(alpha=0.3)
        for ax in axes[r][:3]:
            ax.set_ylim(bottom=0)
        axes[r][0].legend(fontsize=7)
    fig.suptitle(f"{title}: ▼ = failed at that level; x = paper 000")
    fig.tight_layout()
    return fig


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
