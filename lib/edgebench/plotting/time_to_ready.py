"""Time to ready (paper 000, Fig. 3): launch to first HTTP 200, beside the paper's medians."""

from __future__ import annotations

import numpy as np
import pandas as pd

from edgebench.plotting.style import (COLD, PROTOCOL_TITLE, figure_legend, in_runtime_order, mark_health, mark_paper_values,
                                      protocol_grid, protocols_in, runtime_artist, runtime_colour)
from edgebench.plotting.tables import (beside_published, mark_cold, mark_emulated, mark_health as health_column,
                                       ok_rows, sort_by_runtime, spread)

PAPER = "paper 000 median"


def ttr_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Median and IQR of time to ready per app, runtime and protocol, with the published median;
    for the fair protocol also the split into 'until the app listens' and 'until the probe sees it',
    and for a VM that stamps its console, when its /init ran and when the app started (NaN elsewhere)."""
    df = mark_cold(mark_emulated(df))
    ttr = ok_rows(df, "time_to_ready")
    ok = df[df["status"] == "ok"]
    failed = df[(df["metric"] == "time_to_ready") & (df["status"] == "failed")]
    keys = ["app", "runtime", "protocol"]
    rows = []
    for key, g in ttr.groupby(keys):
        s = spread(g["value"])
        row = dict(zip(keys, key), n=s["n"], median_ms=s["median"], q1_ms=s["q1"], q3_ms=s["q3"],
                   min_ms=s["min"], max_ms=s["max"])
        same = lambda t: t[(t[keys] == pd.Series(key, index=keys)).all(axis=1)]  # noqa: E731
        # A VM's boot, on the host's clock (console lines): its /init runs, then the app starts.
        for metric, col in (("time_to_guest_init", "guest_init_median_ms"), ("time_to_app_exec", "app_exec_median_ms"),
                            ("time_to_listen", "listen_median_ms"), ("probe_lag", "probe_lag_median_ms")):
            row[col] = same(ok[ok["metric"] == metric])["value"].median()
        row["failed"] = len(same(failed))
        rows.append(row)
    table = beside_published(pd.DataFrame(rows), reference, "time_to_ready_median",
                             {"app": "app", "runtime": "runtime"}, "published_median_ms", value="value_base")
    return sort_by_runtime(health_column(table, df, keys), keys)


def ttr_figure(df: pd.DataFrame, reference: pd.DataFrame):
    """Distributions like paper 000 Fig. 3: one row per app, one column per protocol; a box
    (quartiles, whiskers within the data) and every launch as a dot per runtime, the paper's
    median as a cross."""
    table = ttr_table(df, reference)
    ttr = ok_rows(mark_cold(mark_emulated(df)), "time_to_ready")
    apps = list(dict.fromkeys(ttr["app"]))
    protocols = protocols_in(ttr["protocol"])
    fig, axes = protocol_grid(len(apps), protocols, panel_size=(5.0, 3.8))
    rng = np.random.default_rng(0)  # the dots' horizontal jitter, the same in every rendering
    for i, app in enumerate(apps):
        runtimes = in_runtime_order(ttr[ttr["app"] == app]["runtime"])
        for j, proto in enumerate(protocols):
            ax = axes[i][j]
            sub = ttr[(ttr["app"] == app) & (ttr["protocol"] == proto)]
            for k, rt in enumerate(runtimes):
                launches = sub[sub["runtime"] == rt]
                v = launches["value"]
                if v.empty:
                    continue
                box = ax.boxplot(v, positions=[k], widths=0.6, showfliers=False, patch_artist=True,
                                 medianprops=dict(color="black"))
                for patch in box["boxes"]:
                    patch.set(facecolor=runtime_colour(rt), edgecolor=runtime_colour(rt), alpha=0.35, gid=rt)
                xs = k + rng.uniform(-0.15, 0.15, len(v))
                ax.scatter(xs, v, s=8, alpha=0.7, label=rt, **runtime_artist(rt))
                mark_health(ax, xs, v, launches.get("health"))
            for k, rt in enumerate(runtimes):
                paper = table[(table["app"] == app) & (table["runtime"] == rt)]["published_median_ms"].dropna()
                mark_paper_values(ax, [k + 0.35] * len(paper[:1]), paper[:1], rt, PAPER)
            ax.set_xticks(range(len(runtimes)), runtimes)
            ax.set_xlim(-0.6, len(runtimes) - 0.4)
            ax.set_yscale("log")
            ax.set_title(f"{app}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        axes[i][0].set_ylabel("time to ready (ms, log)")
    fig.suptitle("Time to ready: launch to first HTTP 200 (box: quartiles; x: the paper's median)")
    figure_legend(fig)
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
    medians = table.set_index(["app", "protocol", "runtime"])["median_ms"]
    for r in table[table["runtime"].str.endswith(COLD)].itertuples():
        warm = medians.get((r.app, r.protocol, r.runtime.removesuffix(COLD)))
        if warm is not None and warm == warm:
            lines.append(f"- {r.app}/{r.runtime.removesuffix(COLD)}: cold start (page cache dropped) {r.median_ms:.1f} ms "
                         f"against {warm:.1f} ms warm ({r.median_ms / warm:.1f}x).")
    pub = table.dropna(subset=["published_median_ms"])
    for r in pub[pub["protocol"] == "fair"].itertuples():
        lines.append(f"- {r.app}/{r.runtime}: paper 000 reports a median of {r.published_median_ms:g} ms; "
                     f"measured here (fair) {r.median_ms:.1f} ms.")
    return "\n".join(lines)
