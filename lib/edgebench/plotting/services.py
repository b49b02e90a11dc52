"""Off-the-shelf services (paper 002, Figs. 5 and 6): Redis GET/SET throughput per runtime and
network mode, each against native's in the same run, beside the page's relative claims."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.claims import ratio_interval
from edgebench.experiments.services import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.reasons import plain_reason, run_meta
from edgebench.plotting.style import PROTOCOL_TITLE, plt, protocols_in, runtime_colour, times
from edgebench.plotting.tables import (NoData, mark_emulated, mark_health, ok_rows, ratio_to_baseline, sort_by_runtime,
                                       spread, wrapped_suptitle)
from edgebench.reference import load_reference

BASELINE = "native"


def label(df: pd.DataFrame) -> pd.Series:
    """'docker (bridge)': the runtime, with the network mode where it has several."""
    mode = df["network_mode"].fillna("").astype(str) if "network_mode" in df else pd.Series("", index=df.index)
    return df["runtime"] + np.where(mode != "", " (" + mode + ")", "")


def throughput_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median req/s per (service, test, protocol, runtime label), its spread, the median p99 and
    the ratio to native's median in the same run and protocol."""
    rows = mark_emulated(ok_rows(df, "throughput"))
    rows = rows.assign(label=label(rows))
    p99 = df[(df["metric"] == "latency_p99") & (df["status"] == "ok")]
    p99 = p99.assign(label=label(mark_emulated(p99)))
    out, values = [], {}
    for (app, test, protocol, lab), g in rows.groupby(["app", "test", "protocol", "label"]):
        values[(app, test, protocol, lab)] = g["value"].astype(float).to_numpy()
        s = spread(g["value"].astype(float))
        mine = p99[(p99["app"] == app) & (p99["test"] == test) & (p99["protocol"] == protocol) & (p99["label"] == lab)]
        out.append({"app": app, "test": test, "protocol": protocol, "runtime": g["runtime"].iloc[0], "label": lab,
                    "median_rps": s["median"], "ci95_low_rps": s["ci_low"], "ci95_high_rps": s["ci_high"],
                    "min_rps": s["min"], "max_rps": s["max"], "runs": s["n"],
                    "p99_ms": mine["value"].astype(float).median() if len(mine) else np.nan})
    table = pd.DataFrame(out)
    table["vs_native"] = ratio_to_baseline(table, "median_rps", table["label"] == BASELINE, ["app", "test", "protocol"])
    intervals = [ratio_interval(values[(r.app, r.test, r.protocol, r.label)],
                                values.get((r.app, r.test, r.protocol, BASELINE), [])) for r in table.itertuples()]
    table["vs_native_ci95_low"], table["vs_native_ci95_high"] = zip(*intervals) if intervals else ((), ())
    table = mark_health(table, rows, ["app", "test", "protocol", "label"])
    table = sort_by_runtime(table, ["app", "protocol", "test", "runtime", "label"])
    table.attrs["absent"] = absent_notes(df, table)
    return table


def absent_notes(df: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """Why a service the figure promises (the page's Redis and nginx) has no panel, and why a
    runtime the run tried has no bar in a service's panel, in plain words."""
    params = run_meta(df).get("parameters") or {}
    notes = []
    for app in LOADS:
        if app in set(table["app"]):
            continue
        tried = df[df["app"] == app] if "app" in df else df.iloc[:0]
        if tried.empty:
            served = params.get("services") or []
            profile = f", as the {params['profile']} profile does" if params.get("profile") == "smoke" else ""
            why = (f"this run served {', '.join(served)} only (services = \"{','.join(served)}\"{profile})"
                   if served else "this run has no rows for it")
        else:
            why = f"no start served it, most often: {top_reason(tried)}"
        notes.append(f"{app} ({LOADS[app]}) has no panel: {why}.")
    ok = df[(df["metric"] == "throughput") & (df["status"] == "ok")] if "metric" in df else df.iloc[:0]
    for app in dict.fromkeys(table["app"]):
        tried = df[(df["app"] == app) & (df["metric"] == "throughput")]
        for rt in dict.fromkeys(tried["runtime"]):
            if not ((ok["app"] == app) & (ok["runtime"] == rt)).any():
                notes.append(f"{app}: {rt} has no bar, every start failed, most often: "
                             f"{top_reason(tried[tried['runtime'] == rt])}.")
    return notes


def top_reason(rows: pd.DataFrame) -> str:
    errors = rows["error"].dropna().astype(str) if "error" in rows else pd.Series(dtype=str)
    errors = errors[errors.str.strip() != ""].value_counts()
    return plain_reason(errors.index[0]) if not errors.empty else "no reason recorded"


HATCHES = (None, "//", "..", "xx")
LOADS = {"redis": "redis-benchmark -c 30 -P 16", "nginx": "wrk -c30, 612-byte page"}


def throughput_figure(table: pd.DataFrame):
    """Bars of req/s per runtime label, a service per row, a protocol per column, the service's
    tests (Redis GET and SET) side by side; each bar's ratio to native written on it."""
    if table.empty:
        raise NoData("services table is empty")
    apps = list(dict.fromkeys(table["app"]))
    protocols = protocols_in(table["protocol"])  # fair on the left, as in every figure
    most = max(table.groupby(["app", "protocol"])["label"].nunique())
    panel = max(5.2, 0.72 * most + 1.4)  # nine labels' names side by side, not over each other
    fig, axes = plt.subplots(len(apps), len(protocols), figsize=(panel * len(protocols), 3.9 * len(apps)),
                             squeeze=False, sharey="row")
    for i, app in enumerate(apps):
        tests = list(dict.fromkeys(table[table["app"] == app]["test"]))
        width = 0.8 / len(tests)
        # A label's height in the row's units: two tiny bars side by side (GET and SET under TCG)
        # put their labels at one height, where they run into each other; the second goes above.
        line = 0.05 * np.nanmax(table[table["app"] == app][["median_rps", "max_rps", "ci95_high_rps"]]
                                .to_numpy(dtype=float)) / 1000
        highest = 0.0  # the row's highest label: the shared y axis keeps room above it
        for j, protocol in enumerate(protocols):
            ax = axes[i][j]
            t = table[(table["app"] == app) & (table["protocol"] == protocol)]
            labels = list(dict.fromkeys(t["label"]))
            x = np.arange(len(labels))
            label_at = {}  # bar group -> the height of its last label
            for k, test in enumerate(tests):
                offset = (k - (len(tests) - 1) / 2) * width
                m = t[t["test"] == test].set_index("label")
                for xi, lab in zip(x, labels):
                    if lab not in m.index:
                        continue
                    r = m.loc[lab]
                    ax.bar(xi + offset, r.median_rps / 1000, width * 0.95, color=runtime_colour(r.runtime),
                           hatch=HATCHES[k % len(HATCHES)], edgecolor="black", linewidth=0.4)
                    ax.vlines(xi + offset, r.min_rps / 1000, r.max_rps / 1000, color="black", linewidth=0.8)
                    if np.isfinite(r.ci95_low_rps):  # 3 repetitions or more
                        ax.vlines(xi + offset, r.ci95_low_rps / 1000, r.ci95_high_rps / 1000, color="black",
                                  linewidth=3)
                    if np.isfinite(r.vs_native) and lab != BASELINE:
                        top = np.nanmax([r.median_rps, r.max_rps, r.ci95_high_rps]) / 1000  # above the whiskers
                        if xi in label_at and abs(top - label_at[xi]) < line:
                            top = label_at[xi] + line
                        label_at[xi] = top
                        highest = max(highest, top)
                        ax.text(xi + offset, top, times(r.vs_native), ha="center", va="bottom", fontsize=7)
            ax.set_xticks(x, labels, rotation=30, ha="right", rotation_mode="anchor")
            ax.set_title(f"{app} ({LOADS.get(app, '')}), {PROTOCOL_TITLE.get(protocol, protocol)}", fontsize=9)
            ax.set_ylabel("thousand requests/s\n(median; thin: range, thick: 95% CI)")
        axes[i][0].set_ylim(top=max(axes[i][0].get_ylim()[1], highest + 2 * line))
        if len(tests) > 1:
            handles = [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch=HATCHES[k])
                       for k in range(len(tests))]
            axes[i][-1].legend(handles, [x.upper() for x in tests], fontsize=8, loc="upper right")
    wrapped_suptitle(fig, "Off-the-shelf services on one core (ratio to native on each bar)", fontsize=11)
    fig.tight_layout()
    notes = table.attrs.get("absent") or []
    if notes:  # under the panels: a service or a runtime the figure promises and cannot draw, and why
        width = max(60, int(fig.get_figwidth() / 0.06))
        fig.text(0.5, 0, "\n".join(textwrap.fill(n, width) for n in notes), ha="center", va="top", fontsize=8,
                 color="#555555", gid=ABSENT_GID)
    return fig


ABSENT_GID = "eb-absent"


def services_findings(table: pd.DataFrame, reference: pd.DataFrame) -> str:
    lines = []
    for (app, protocol), g in table.groupby(["app", "protocol"], sort=False):
        parts = []
        for lab, h in g.groupby("label", sort=False):
            named = h["test"].nunique() > 1  # Redis's GET and SET; nginx has one test, the page
            ratios = ", ".join(f"{r.test.upper() + ' ' if named else ''}{times(r.vs_native)}"
                               for r in h.itertuples() if np.isfinite(r.vs_native))
            if lab != BASELINE and ratios:
                parts.append(f"{lab} {ratios}")
        if parts:
            lines.append(f"- **{app}, {protocol}** (against native): " + "; ".join(parts) + ".")
    ref = reference[reference["metric"].str.startswith("throughput_ratio_vs_")] if not reference.empty else reference
    claims = ref.assign(other=ref["metric"].str.extract(r"_vs_(.+)_(?:low|high)$")[0]) if not ref.empty else ref
    for other, g in (claims.groupby("other", sort=False) if not claims.empty else []):
        g = g.drop_duplicates("metric")  # the page's one sentence, filed under Redis and under nginx
        values = g.set_index(g["metric"].str.rsplit("_", n=1).str[-1])["value"]
        lines.append(f"- Paper 002 (KVM, Redis and nginx together): Unikraft "
                     f"{values.get('low'):g}-{values.get('high'):g}x the throughput of {other.replace('_', ' ')}.")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> Page:
    """Notebook 12: the run's notes, each service's throughput per runtime, the figure and the
    findings beside the page's ratios."""
    df = open_page(run_dir)
    table = throughput_table(df)
    show_table(table)
    show_figure(throughput_figure(table), params.EXPERIMENT, "services_throughput", run_dir)
    show_findings(services_findings(table, load_reference(params.EXPERIMENT)))
    return Page(run_dir, df, table)
