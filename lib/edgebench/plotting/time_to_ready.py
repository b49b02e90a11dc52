"""Time to ready (paper 000, Fig. 3): launch to first HTTP 200, beside the paper's medians."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from edgebench.experiments.time_to_ready import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import (COLD, FIRST, HEALTH_MARK, PROTOCOL_TITLE, base_runtime, figure_legend,
                                      in_runtime_order, mark_health, mark_paper_values, part_colours, protocol_grid,
                                      protocols_in, readable_log_ticks, runtime_artist, runtime_colour)
from edgebench.plotting.tables import (absent_figure, beside_published, mark_cold, mark_emulated,
                                       mark_health as health_column, ok_rows, sort_by_runtime, spread,
                                       wrapped_suptitle)
from edgebench.reference import load_reference
from edgebench.runtimes import RUNTIMES

PAPER = "paper 000 median"

# Matplotlib 3.10 named it `orientation` and deprecated `vert` (gone in 3.13); 3.7-3.9 know only `vert`.
HORIZONTAL = ({"orientation": "horizontal"} if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
              else {"vert": False})


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
        row = dict(zip(keys, key), n=s["n"], median_ms=s["median"], ci95_low_ms=s["ci_low"],
                   ci95_high_ms=s["ci_high"], q1_ms=s["q1"], q3_ms=s["q3"], min_ms=s["min"], max_ms=s["max"])

        def same(t: pd.DataFrame, key=key) -> pd.DataFrame:
            return t[(t[keys] == pd.Series(key, index=keys)).all(axis=1)]

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
    """Distributions like paper 000 Fig. 3, runtimes down the side (warm, cold and first starts
    of 14 variants do not fit side by side as x labels): one row per app, one column per
    protocol; a box (quartiles, whiskers within the data) and every launch as a dot per runtime,
    the paper's median as a cross."""
    table = ttr_table(df, reference)
    ttr = ok_rows(mark_cold(mark_emulated(df)), "time_to_ready")
    apps = list(dict.fromkeys(ttr["app"]))
    protocols = protocols_in(ttr["protocol"])
    most = max(len(in_runtime_order(ttr[ttr["app"] == app]["runtime"])) for app in apps)
    row_height = 0.3 * most + 1.0  # a panel's runtimes, its title and its ticks
    fig, axes = protocol_grid(len(apps), protocols, panel_size=(5.2, row_height), sharey=False)
    rng = np.random.default_rng(0)  # the dots' vertical jitter, the same in every rendering
    for i, app in enumerate(apps):
        for j, proto in enumerate(protocols):
            ax = axes[i][j]
            sub = ttr[(ttr["app"] == app) & (ttr["protocol"] == proto)]
            runtimes = in_runtime_order(sub["runtime"])
            for k, rt in enumerate(runtimes):
                launches = sub[sub["runtime"] == rt]
                v = launches["value"]
                if len(v) > 1:  # one launch has no quartiles: its dot alone
                    box = ax.boxplot(v, positions=[k], widths=0.6, **HORIZONTAL, showfliers=False,
                                     patch_artist=True, medianprops=dict(color="black"))
                    for patch in box["boxes"]:
                        patch.set(facecolor=runtime_colour(rt), edgecolor=runtime_colour(rt), alpha=0.35, gid=rt)
                ys = k + rng.uniform(-0.15, 0.15, len(v))
                ax.scatter(v, ys, s=8, alpha=0.7, **runtime_artist(rt))
                mark_health(ax, v, ys, launches.get("health"))
                if rt.endswith((COLD, FIRST)):
                    continue  # the paper's median once per runtime, on its warm row: it timed no variants
                paper = table[(table["app"] == app) & (table["runtime"] == rt)]["published_median_ms"].dropna()
                mark_paper_values(ax, paper[:1], [k - 0.35] * len(paper[:1]), rt, PAPER)
            ax.set_yticks(range(len(runtimes)), runtimes, fontsize=8)
            ax.set_ylim(len(runtimes) - 0.5, -0.6)  # the registry's order, top down
            ax.set_xscale("log")
            ax.set_title(f"{app}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
            ax.grid(axis="x", alpha=0.3, which="both")
            if i == len(apps) - 1:
                ax.set_xlabel("time to ready (ms, log)")
    for ax in np.ravel(axes):
        readable_log_ticks(ax, "x")
    counts = ttr.groupby(["app", "runtime", "protocol"]).size()
    what = ("dots: the one launch of each" if counts.max() == 1 else
            f"box: quartiles of {how_many(counts, 'launch', 'launches')}; dots: each launch")
    # Wrapped to the figure's width: one narrow panel's figure was a long title over a blank canvas.
    wrapped_suptitle(fig, f"Time to ready: launch to first HTTP 200 ({what}; x: the paper's median)")
    # The figure as high as its panels plus what is around them (the title's lines, the x label,
    # the legend's rows): a fixed height left a narrow panel's figure mostly title and legend.
    lines = fig.get_suptitle().count("\n") + 1
    entries = {lab for ax in fig.axes for lab in ax.get_legend_handles_labels()[1]}
    daggers = any(t.get_text() == HEALTH_MARK for ax in fig.axes for t in ax.texts)
    legend_rows = -(-(len(entries) + daggers) // 6)
    fig.set_figheight(len(apps) * row_height + 0.2 + 0.2 * lines + 0.45 + 0.25 * legend_rows)
    figure_legend(fig)
    # figure_legend keeps a line of room above the suptitle, which tight_layout already keeps clear.
    height = fig.get_figheight()
    fig.tight_layout(rect=(0, min(0.3, (0.25 * legend_rows + 0.15) / height), 1, 1 - 0.1 / height))
    return fig


def how_many(counts, one: str, many: str) -> str:
    """'1 start', '3 starts', '2-3 starts': how many values each median or box summarises."""
    low, high = int(min(counts)), int(max(counts))
    return f"{low} {one if low == high == 1 else many}" if low == high else f"{low}-{high} {many}"


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
            lines.append(f"- {r.app}/{r.runtime.removesuffix(COLD)}: cold start (page cache dropped) "
                         f"{r.median_ms:.1f} ms against {warm:.1f} ms warm ({r.median_ms / warm:.1f}x).")
    for r in table[table["runtime"].str.endswith(FIRST)].itertuples():
        warm = medians.get((r.app, r.protocol, r.runtime.removesuffix(FIRST)))
        if warm is not None and warm == warm:
            lines.append(f"- {r.app}/{r.runtime.removesuffix(FIRST)}: started right after its image was pulled "
                         f"{r.median_ms:.1f} ms against {warm:.1f} ms warm (the pull itself: below).")
    pub = table.dropna(subset=["published_median_ms"])
    for r in pub[pub["protocol"] == "fair"].itertuples():
        lines.append(f"- {r.app}/{r.runtime}: paper 000 reports a median of {r.published_median_ms:g} ms; "
                     f"measured here (fair) {r.median_ms:.1f} ms.")
    return "\n".join(lines)


# The parts of a first start, in the order they are drawn: what the start waits for, then what the
# pull does, each alone.
_SHADES = part_colours(5)
FIRST_PARTS = (("image_pull", "pull (docker pull)", _SHADES[1]), ("time_to_ready", "start to ready", _SHADES[4]))
PULL_PARTS = (("image_transfer", "layers' transfer alone", _SHADES[0]),
              ("image_unpack", "decompression + extraction alone", _SHADES[2]))
WARM_COLOUR = _SHADES[3]


def first_start_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per app and runtime with first starts: the medians of the pull, the start after it, the
    first start in all, the pull's transfer and unpacking measured alone, the compressed image,
    and the warm fair start for contrast (NaN where not measured)."""
    first = df[(df.get("cache", pd.Series(dtype=str)).astype(str) == "first") & (df["status"] == "ok")]
    rows = []
    for (app, rt), g in first.groupby(["app", "runtime"], sort=False):
        med = g.groupby("metric")["value"].median()
        warm = df[(df["app"] == app) & (df["runtime"] == rt) & (df["metric"] == "time_to_ready")
                  & (df["status"] == "ok") & (df["protocol"] == "fair") & (df["cache"].astype(str) == "warm")]
        rows.append(dict(app=app, runtime=rt, n=int((g["metric"] == "first_start").sum()),
                         first_start_ms=med.get("first_start"), pull_ms=med.get("image_pull"),
                         start_ms=med.get("time_to_ready"), transfer_ms=med.get("image_transfer"),
                         unpack_ms=med.get("image_unpack"), compressed_mib=med.get("image_compressed"),
                         layers=med.get("layers_fetched"), warm_ms=warm["value"].median()))
    return sort_by_runtime(pd.DataFrame(rows), ["app", "runtime"]) if rows else pd.DataFrame(rows)


def first_start_figure(df: pd.DataFrame):
    """Where a first start's time goes: per app and runtime, the pull then the start (what a user
    waits for), the pull's transfer and its decompression and extraction each measured alone, and
    the warm start; medians, with each start's total as a dot on its bar (each_start). A run
    without first starts gets the figure the notebook promises as a sentence: why (absent_figure)."""
    import matplotlib.pyplot as plt

    def each_start(app: str, rt: str) -> list:
        """Per bar, what its medians summarise: each first start's total (first_start), each
        start's transfer + unpacking (both measured in the same repetition), each warm fair start."""
        ok = df[(df["status"] == "ok") & (df["app"] == app) & (df["runtime"] == rt)]
        cache = ok["cache"].astype(str)
        first, warm = ok[cache == "first"], ok[(cache == "warm") & (ok["protocol"] == "fair")]
        parts = first[first["metric"].isin(["image_transfer", "image_unpack"])]
        pull = (parts.groupby("rep")["value"].agg(["sum", "count"]).query("count == 2")["sum"] if "rep" in parts
                else pd.Series(dtype=float))
        return [first[first["metric"] == "first_start"]["value"], pull,
                warm[warm["metric"] == "time_to_ready"]["value"]]

    table = first_start_table(df)
    if table.empty:
        return absent_figure("First start: the image pulled from a registry, then started", why_no_first_starts(df))
    labels = [f"{r.app}, {r.runtime}" for r in table.itertuples()]
    fig, ax = plt.subplots(figsize=(8.5, 2.0 + 1.1 * len(labels)))
    y = np.arange(len(labels)) * 3.0
    for bar, parts in ((0.0, FIRST_PARTS), (0.8, PULL_PARTS)):
        left = np.zeros(len(labels))
        for metric, name, colour in parts:
            col = {"image_pull": "pull_ms", "time_to_ready": "start_ms", "image_transfer": "transfer_ms",
                   "image_unpack": "unpack_ms"}[metric]
            width = table[col].astype(float).fillna(0).to_numpy()
            ax.barh(y + bar, width, left=left, height=0.7, color=colour, label=name, edgecolor="white")
            left = left + width
    ax.barh(y + 1.6, table["warm_ms"].astype(float).fillna(0), height=0.7, color=WARM_COLOUR, label="warm start")
    for yi, r in zip(y, table.itertuples()):
        for bar, values in zip((0.0, 0.8, 1.6), each_start(r.app, r.runtime)):
            v = np.sort(np.asarray(values, dtype=float))
            # Spread over the bar's height (not random: the same figure each time), a white rim on dark shades.
            ax.scatter(v, yi + bar + np.linspace(-0.22, 0.22, len(v)) * (len(v) > 1), s=14, color="black",
                       edgecolors="white", linewidths=0.4, zorder=4, label="each start")
    ax.set_yticks(y + 0.8, labels)
    ax.invert_yaxis()
    bars = ("bars: one start's own values (one start each)" if table["n"].max() <= 1 else
            f"bars: medians over {how_many(table['n'], 'start', 'starts')}")
    ax.set_xlabel(f"ms ({bars}; dots: each start's own total, i.e. its pull + start,\n"
                  "its transfer + unpacking, or its warm start)", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    entries = dict(zip(names, handles))  # one "each start" (a scatter per bar), after the bars' parts
    entries.update({name: entries.pop(name) for name in ["each start"] if name in entries})
    # Under the axis label, whatever the figure's height: in the figure's coordinates, with room kept for it.
    fig.legend(list(entries.values()), list(entries), loc="lower center", bbox_to_anchor=(0.5, 0.01), ncol=3,
               fontsize=8)
    ax.set_title("First start: the image pulled from a registry, then started\n(bars: first start; the pull's "
                 "parts alone; a warm start; dots: each start)", fontsize=9)
    # A part of width 0 (a start that failed after its pull) leaves a sticky edge at the longest bar's end.
    ax.set_xlim(0, ax.get_xlim()[1] * 1.03)
    fig.tight_layout(rect=(0, 0.75 / fig.get_figheight(), 1, 1))
    return fig


def why_no_first_starts(df: pd.DataFrame) -> str:
    """Why a run has no first start to draw, in words for the figure that says so."""
    cache = df["cache"].astype(str) if "cache" in df else pd.Series("", index=df.index)
    tried = df[cache == "first"]
    if not tried.empty:
        errors = tried[tried["status"] != "ok"]["error"].dropna().astype(str)
        errors = errors[errors.str.strip() != ""].value_counts()
        reason = errors.index[0] if not errors.empty else "no reason recorded"
        return f"every first start in this run failed, most often: {reason[:200]}"
    fetching = [name for name, cls in RUNTIMES.items() if not cls.no_image_fetch]
    runtimes = in_runtime_order({base_runtime(r) for r in df["runtime"].dropna()})
    if not set(runtimes) & set(fetching):
        return (f"none of this run's runtimes ({', '.join(runtimes)}) has an image that the device fetches before "
                f"a start; first starts are {', '.join(fetching)}'s")
    started = ", ".join(c for c in ("warm", "cold") if (cache == c).any()) or "warm"
    return (f"this run made {started} starts only (its caches); caches = \"warm,cold,first\" adds first starts for "
            f"{', '.join(r for r in runtimes if r in fetching)}")


def first_start_findings(table: pd.DataFrame) -> str:
    lines = []
    for r in table.itertuples():
        if r.first_start_ms != r.first_start_ms:
            continue
        warm = (f", {r.first_start_ms / r.warm_ms:.1f}x a warm start ({r.warm_ms:.0f} ms)" if r.warm_ms == r.warm_ms
                else "")
        lines.append(f"- **{r.app}/{r.runtime}**: first start {r.first_start_ms:.0f} ms = pull {r.pull_ms:.0f} ms "
                     f"({r.compressed_mib:.1f} MiB compressed, {r.layers:.0f} layer(s); alone, the transfer takes "
                     f"{r.transfer_ms:.0f} ms and decompression + extraction {r.unpack_ms:.0f} ms) + start "
                     f"{r.start_ms:.0f} ms{warm}.")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@dataclass
class TimeToReadyPage(Page):
    """`table`: per app, runtime and protocol, beside the paper's medians."""
    first_starts: pd.DataFrame  # per app and runtime with first starts: the pull, then the start


@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> TimeToReadyPage:
    """Notebook 02: the run's notes, the times to ready beside the paper's, their figure and
    findings, then where a first start's time goes (the figure says why where the run has none)."""
    df = open_page(run_dir)
    reference = load_reference(params.EXPERIMENT)
    table = ttr_table(df, reference)
    show_table(table, 1)
    show_figure(ttr_figure(df, reference), params.EXPERIMENT, "time_to_ready", run_dir)
    show_findings(ttr_findings(table))
    first = first_start_table(df)
    show_figure(first_start_figure(df), params.EXPERIMENT, "first_start", run_dir)
    show_findings(first_start_findings(first))
    return TimeToReadyPage(run_dir, df, table, first)
