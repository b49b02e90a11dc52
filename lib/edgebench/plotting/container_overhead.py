"""Container overhead (paper 003): each container's loss against native per benchmark operation,
and its Energy-Delay Product against native's, beside the paper's relative numbers (the paper
prints only relative numbers for Docker on a Raspberry Pi 2)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import transforms

from edgebench.claims import ratio_interval
from edgebench.experiments.container_overhead import EXPERIMENT, Params
from edgebench.plotting.page import Page, open_page, show_absent, show_figure, show_findings, show_table
from edgebench.plotting.reasons import plain_reason, ruled_out_note, run_meta
from edgebench.plotting.style import (EMULATED, FIGURE_NOTES_MARK, PROTOCOL_TITLE, failed_runtimes, figure_legend,
                                      in_runtime_order, mark_health, mark_paper_values, protocol_grid, protocols_in,
                                      runtime_artist)
from edgebench.plotting.tables import NoData, mark_emulated, without_coarse
from edgebench.plotting.tables import mark_health as health_column
from edgebench.reference import load_reference
from edgebench.tools import sanity

PAPER = "paper 003"
BENCHMARK_ORDER = ("disk", "memory", "hpc", "network")
# The value each benchmark is compared on, and whether more is better.
MAIN_METRIC = {"disk": ("throughput", True), "memory": ("best_rate", True), "hpc": ("time", False),
               "network": ("requests_per_second", True)}
# The paper groups NPB's benchmarks when it gives EDP.
NPB_GROUP = {**dict.fromkeys(("is", "ep", "cg", "mg", "ft"), "kernels"),
             **dict.fromkeys(("bt", "sp", "lu"), "pseudo_apps"), **dict.fromkeys(("ua", "dc"), "io")}
BASELINE = "native"


def _labelled(df: pd.DataFrame) -> pd.DataFrame:
    """`label`: what is compared (the runtime; for HTTP, the runtime and its network mode);
    `size`: the point within an operation (file size, array size, NPB class; for HTTP the app)."""
    df = mark_emulated(df)
    network = df["benchmark"] == "network"
    # A network point names the runtime and its mode ("nanos"); under TCG it says so too.
    point = df["point"].astype(str)
    tcg = df["runtime"].astype(str).str.endswith(EMULATED) & ~point.str.contains(EMULATED, regex=False)
    point = point.where(~tcg, point + EMULATED)
    return df.assign(label=np.where(network, point, df["runtime"]),
                     size=np.where(network, df["app"], df["point"]))


def _paper_value(reference: pd.DataFrame, metric: str, benchmark: str, operation: str) -> float:
    """The paper's number for one operation: its own, else its NPB group's, else the benchmark's 'all'."""
    ref = reference[(reference["metric"] == metric) & (reference["benchmark"] == benchmark)]
    for key in (operation, NPB_GROUP.get(operation) if benchmark == "hpc" else None, "all"):
        hit = ref[ref["operation"] == key]["value"].dropna()
        if key and not hit.empty:
            return float(hit.iloc[0])
    return np.nan


def _relative(rows: pd.DataFrame, higher_better: dict, reference: pd.DataFrame, ref_metric: str,
              column: str) -> pd.DataFrame:
    keys = ["benchmark", "operation", "size", "protocol"]
    g = rows.groupby([*keys, "label"])["value"].agg(["median", "count"]).reset_index()
    base = g[g["label"] == BASELINE][[*keys, "median"]].rename(columns={"median": "native_median"})
    table = g[g["label"] != BASELINE].merge(base, on=keys, how="left")
    ratio = table["median"] / table["native_median"]
    better = table["benchmark"].map(higher_better).fillna(True).astype(bool)
    table[column] = np.where(better, (1 - ratio) * 100, (ratio - 1) * 100)
    # Its 95% interval, from the ratio's (claims.ratio_interval): the same transform, ends swapped
    # where higher is better.
    values = {key: g["value"].to_numpy(float) for key, g in rows.groupby([*keys, "label"])}
    intervals = np.array([ratio_interval(values[(*(getattr(r, k) for k in keys), r.label)],
                                         values.get((*(getattr(r, k) for k in keys), BASELINE), []))
                          for r in table.itertuples()], dtype=float).reshape(-1, 2)
    low, high = intervals[:, 0], intervals[:, 1]
    table[f"{column}_ci95_low"] = np.where(better, (1 - high) * 100, (low - 1) * 100)
    table[f"{column}_ci95_high"] = np.where(better, (1 - low) * 100, (high - 1) * 100)
    # The paper measured Docker (its default bridge for HTTP): its numbers sit on those rows.
    docker = table["label"].isin(["docker", "docker (bridge)"])
    table["published_pct"] = [(_paper_value(reference, ref_metric, r.benchmark, r.operation) if d else np.nan)
                              for r, d in zip(table.itertuples(), docker)]
    order = {b: i for i, b in enumerate(BENCHMARK_ORDER)}
    table = health_column(table, rows, [*keys, "label"])
    return table.sort_values(["benchmark", "protocol", "operation", "size", "label"],
                             key=lambda c: c.map(order) if c.name == "benchmark" else c).reset_index(drop=True)


def overhead_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark, operation, size, protocol and container: medians, native's median, and
    `overhead_pct`, the container's performance loss (positive: slower or less throughput), with
    the paper's where it printed one. HTTP compares ab's rows (the paper's tool)."""
    df = _labelled(df)
    wanted = pd.Series(False, index=df.index)
    for bench, (metric, _) in MAIN_METRIC.items():
        wanted |= (df["benchmark"] == bench) & (df["metric"] == metric)
    wanted &= (df["benchmark"] != "network") | (df["load_tool"] == "ab")
    rows = df[wanted & (df["status"] == "ok") & df["value"].notna()]
    if rows.empty:
        raise NoData(f"no successful measurement to compare: {failure_summary(df)}")
    higher = {b: hb for b, (_, hb) in MAIN_METRIC.items()}
    table = _relative(rows, higher, reference, "overhead_pct", "overhead_pct")
    metric = table["benchmark"].map(lambda b: MAIN_METRIC.get(b, ("",))[0])
    table, too_short = without_coarse(table.assign(metric=metric), EXPERIMENT, ["benchmark", "protocol"],
                                      ["operation", "size"])
    table = table.drop(columns="metric")
    table = with_sanity(table, df)
    drawn = set(zip(table["benchmark"], table["protocol"]))
    # A panel whose every point was too short says so, not that nothing succeeded.
    table.attrs["missing"] = {**missing_panels(table, df), **{k: v for k, v in too_short.items() if k not in drawn}}
    table.attrs["too_short"] = too_short
    table.attrs["notes"] = figure_footnotes(df)
    return table


def figure_footnotes(df: pd.DataFrame) -> list[str]:
    """The figure's footnote: an emulated device (from the run's meta.json, where the rows name a
    run under DATA_DIR), and each runtime without an ok row, in plain words (plain_reason)."""
    notes = []
    facts = run_meta(df).get("target") or {}
    if facts.get("emulated_device"):
        notes.append(f"{facts.get('target')}: {facts['emulated_device']}. Its numbers measure QEMU's emulator, "
                     "not a device.")
    for runtime, (_, why, what) in failed_runtimes(df).items():
        happened = "every row failed" if what == "failed" else "it is not measurable here"
        notes.append(f"{runtime} is not drawn: {happened}; {plain_reason(why)}.")
    return notes


def missing_panels(table: pd.DataFrame, df: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(benchmark, protocol) the run measured or tried with nothing to compare there, and why
    (the most frequent reason of its failed rows): the figure says it in the empty panel."""
    have = set(zip(table["benchmark"], table["protocol"]))
    out = {}
    tried = df[df["benchmark"].isin(BENCHMARK_ORDER)]
    for (bench, proto), g in tried.groupby(["benchmark", "protocol"]):
        if (bench, proto) in have:
            continue
        errors = g[g["status"] != "ok"]["error"].dropna().astype(str).value_counts()
        out[(bench, proto)] = (errors.index[0] if not errors.empty
                               else "native or every container lacks a successful row")
    return out


def with_sanity(table: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """`sanity`: why a row's comparison is ruled out (see edgebench.tools.sanity), or ''. A
    container far ahead of native on the same kernel, and, for every fair memory row, native's
    STREAM rate far below the independent tool's in the same run."""
    reasons = [sanity.container_ahead(r.label, r.benchmark, -r.overhead_pct / 100) for r in table.itertuples()]
    try:
        cross = crosscheck_table(df)
    except NoData:
        cross = pd.DataFrame()
    baseline = ""
    for r in cross.to_dict("records"):
        baseline = baseline or sanity.below_crosscheck(r["ratio stream / tool"], r["independent tool"])
    if baseline:
        reasons = ["; ".join(x for x in (why, baseline) if x) if (b == "memory" and p == "fair") else why
                   for why, b, p in zip(reasons, table["benchmark"], table["protocol"])]
    return table.assign(sanity=reasons)


def edp_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """The same for the Energy-Delay Product (`edp_change_pct`: positive = the container's EDP is
    larger). Raises NoData with the reason when no run had a power meter."""
    df = _labelled(df)
    rows = df[(df["metric"] == "edp") & (df["status"] == "ok") & df["value"].notna()]
    if rows.empty:
        failed = df[(df["metric"] == "edp") & (df["status"] != "ok")]
        why = "; ".join(sorted(set(failed["error"].astype(str))))[:400] or "no energy rows"
        raise NoData(f"no energy measured, so no EDP: {why}")
    table = _relative(rows, dict.fromkeys(BENCHMARK_ORDER, False), reference, "edp_change_pct", "edp_change_pct")
    table.attrs["notes"] = figure_footnotes(df)
    return table


def failure_summary(df: pd.DataFrame) -> str:
    failed = df[df["status"] != "ok"]
    return "; ".join(sorted(set(failed["error"].astype(str))))[:500] or "no rows"


def legend_label(label: str, labels) -> str:
    """A bar's name in the legend: a runtime's network mode where the panel sets its modes side
    by side ("docker (bridge)" beside the hatched "docker (host)", as every figure names them),
    the runtime alone where it has one ("docker (bridge)" with no host bar is plain "docker")."""
    base = label.split(" (")[0]
    modes = [lab for lab in labels if lab.split(" (")[0] == base and lab.endswith(("(bridge)", "(host)"))]
    return label if len(modes) > 1 else base if label.endswith(("(bridge)", "(host)")) else label


# Where physics rules a bar out (edgebench.tools.sanity), none is drawn: this mark on the zero line
# instead, in the ruled-out red, and the reason under the panel.
RULED_OUT = dict(marker="$\u2205$", s=70, color="#a00000", zorder=5, clip_on=False)
RULED_OUT_LABEL = "ruled out, not drawn (why: under its panel)"


def _relative_figure(table: pd.DataFrame, column: str, ylabel: str, title: str):
    missing = table.attrs.get("missing") or {}
    benchmarks = [b for b in BENCHMARK_ORDER if b in set(table["benchmark"]) | {b for b, _ in missing}]
    protocols = protocols_in(list(table["protocol"]) + [p for _, p in missing])
    fig, axes = protocol_grid(len(benchmarks), protocols, panel_size=(6.5, 3.2), sharey=False)
    width_chars = int(6.5 / 0.06)  # an 8-point line under a panel
    for i, bench in enumerate(benchmarks):
        for j, proto in enumerate(protocols):
            ax = axes[i][j]
            sub = table[(table["benchmark"] == bench) & (table["protocol"] == proto)]
            ax.set_title(f"{bench}, {PROTOCOL_TITLE.get(proto, proto)}", fontsize=9)
            if sub.empty:  # said in the panel, not left blank
                ax.set_xticks([])
                ax.set_yticks([])
                why = plain_reason(missing.get((bench, proto), "not measured in this run"))
                ax.text(0.5, 0.5, textwrap.fill(f"Nothing to compare: {why}.", 60), ha="center", va="center",
                        fontsize=8, color="#555555", transform=ax.transAxes)
                continue
            draw_panel(ax, sub, column)
            ax.set_ylabel(ylabel)
            labels = in_runtime_order(sub["label"])
            if any(legend_label(lab, labels).endswith("(host)") for lab in labels):
                ax.set_title(f"{bench}, {PROTOCOL_TITLE.get(proto, proto)}\nsolid: bridge network (-p), "
                             "the default; hatched: host network", fontsize=9)
            ruled_out = [w for w in sub.get("sanity", pd.Series(dtype=str)).fillna("") if w]
            if ruled_out:  # under the panel, where its marks are
                ax.set_xlabel(textwrap.fill(ruled_out_note(ruled_out), width_chars), fontsize=8,
                              color=RULED_OUT["color"])
            too_short = (table.attrs.get("too_short") or {}).get((bench, proto))
            if too_short:  # under its title: no mark of its own, as no bar was left out for physics
                ax.set_title(f"{ax.get_title()}\n{too_short}", fontsize=9)
    if f"{column}_ci95_low" in table and table[f"{column}_ci95_low"].notna().any():
        title += "\nwhiskers: the 95% interval (bootstrap, where both sides ran 3 times or more)"
    fig.suptitle(title, fontsize=10)
    figure_legend(fig, ncol=3 * len(protocols))  # as wide as the panels: wider, it widened the figure
    footnote(fig, table.attrs.get("notes") or [])
    return fig


def draw_panel(ax, sub: pd.DataFrame, column: str) -> None:
    """One panel's bars: per operation and size, a bar per container (its modes side by side, host
    hatched), whiskers, daggers and the paper's crosses; a ruled-out value is no bar but RULED_OUT."""
    cells = list(dict.fromkeys(zip(sub["operation"], sub["size"])))
    labels = in_runtime_order(sub["label"])
    width = 0.8 / len(labels)
    for k, label in enumerate(labels):
        g = sub[sub["label"] == label].set_index(["operation", "size"]).reindex(cells)
        x = np.arange(len(cells)) - 0.4 + width * (k + 0.5)
        # One runtime's network modes share its colour; host networking is hatched.
        mode = dict(hatch="//", edgecolor="white") if label.endswith("(host)") else {}
        key = legend_label(label, labels)
        flagged = (g["sanity"].fillna("").astype(bool) if "sanity" in g else pd.Series(False, index=g.index)).to_numpy()
        shown = g.assign(**{column: g[column].where(~flagged)})  # a ruled-out value draws nothing of its own
        ax.bar(x, shown[column], width * 0.9, label=key, **runtime_artist(label), **mode)
        if flagged.any():  # just above the zero line, where the paper's cross near 0 leaves it visible
            above = transforms.offset_copy(ax.transData, fig=ax.figure, y=8, units="points")
            ax.scatter(x[flagged], np.zeros(flagged.sum()), label=RULED_OUT_LABEL, transform=above, **RULED_OUT)
        draw_interval(ax, x, shown, column)
        mark_health(ax, x, shown[column], g.get("health"))
        # The paper measured Docker (its default bridge for HTTP): one name for its crosses.
        mark_paper_values(ax, x, g["published_pct"], label.split(" (")[0], PAPER)
    ax.axhline(0, color="black", linewidth=0.8)
    low, high = ax.get_ylim()  # room for a dagger beyond the longest bar, either way
    ax.set_ylim(low - 0.12 * (high - low), high + 0.12 * (high - low))
    ax.set_xlim(-0.5, len(cells) - 0.5)  # every cell's slot, drawn or not: marks alone shrank the axis to them
    names = [op if sub["size"].nunique() == 1 else f"{op}\n{size}" for op, size in cells]
    ax.set_xticks(range(len(cells)), names, fontsize=7, rotation=0 if len(cells) < 8 else 45)
    ax.grid(axis="y", alpha=0.3)


def footnote(fig, notes: list[str]) -> None:
    """What the reader must know about the whole figure (runtimes it cannot draw, an emulated
    device), in plain words under it. It takes the place of the raw reasons that saving would
    print above the title (style.mark_figure_notes writes nothing where this note is)."""
    if not notes:
        return
    width = max(60, int(fig.get_figwidth() / 0.06))
    text = "\n".join(textwrap.fill(n, width) for n in notes)
    fig.text(0.5, 0, text, ha="center", va="top", fontsize=8, color="#555555", gid=FIGURE_NOTES_MARK)


def draw_interval(ax, x: np.ndarray, g: pd.DataFrame, column: str) -> None:
    """Whiskers from the table's 95% interval of `column`, where it has one."""
    low, high = (g.get(f"{column}_ci95_{end}") for end in ("low", "high"))
    if low is None or high is None:
        return
    value, low, high = (s.astype(float).to_numpy() for s in (g[column], low, high))
    ok = np.isfinite(value) & np.isfinite(low) & np.isfinite(high)
    if ok.any():
        ax.errorbar(x[ok], value[ok], yerr=[np.clip(value - low, 0, None)[ok], np.clip(high - value, 0, None)[ok]],
                    fmt="none", ecolor="black", elinewidth=0.8, capsize=2)


def overhead_figure(table: pd.DataFrame):
    """One row per benchmark, one column per protocol: each container's loss against native per
    operation (bars), the paper's Docker numbers as crosses."""
    if table.empty:
        raise NoData("the overhead table is empty")
    return _relative_figure(table, "overhead_pct", "loss vs native (%)",
                            "Container overhead against native (positive: slower)")


def edp_figure(table: pd.DataFrame):
    if table.empty:
        raise NoData("the EDP table is empty")
    return _relative_figure(table, "edp_change_pct", "EDP vs native (%)",
                            "Energy-Delay Product against native (positive: worse)")


def crosscheck_table(df: pd.DataFrame) -> pd.DataFrame:
    """apps/stream's native rates (fair protocol, its largest array) against an independent tool
    run natively in the same run: the ratio says whether our kernels measure the same memory."""
    cross = df[(df["benchmark"] == "memory_crosscheck") & (df["status"] == "ok")]
    ours = df[(df["benchmark"] == "memory") & (df["runtime"] == BASELINE) & (df["protocol"] == "fair")
              & (df["metric"] == "best_rate") & (df["status"] == "ok")]
    if cross.empty or ours.empty:
        raise NoData("no cross-check: it needs native STREAM rows (fair) and a stress-ng or sysbench run "
                     f"({failure_summary(df[df['benchmark'] == 'memory_crosscheck'])})")
    ours = ours[ours["array_mib"] == ours["array_mib"].max()]
    rates = ours.groupby("operation")["value"].median()
    out = []
    for tool, value in cross.groupby("tool")["value"].median().items():
        for kernel in ("copy", "triad"):
            if kernel in rates:
                out.append({"independent tool": tool, "its rate (MB/s)": value, "stream kernel": kernel,
                            "stream best rate (MB/s)": rates[kernel], "ratio stream / tool": rates[kernel] / value})
    return pd.DataFrame(out)


def findings(table: pd.DataFrame) -> str:
    """One line per benchmark and protocol: each container's median loss over its operations,
    beside the paper's."""
    lines = []
    for (bench, proto), sub in table.groupby(["benchmark", "protocol"], sort=False):
        parts = []
        for label in in_runtime_order(sub["label"]):
            s = sub[sub["label"] == label]
            paper = s["published_pct"].dropna()
            paper_text = f" (paper, Docker: {paper.median():+.2f}%)" if not paper.empty else ""
            ruled_out = [w for w in s.get("sanity", pd.Series(dtype=str)).fillna("") if w]
            if ruled_out:  # physics rules the number out: say why instead of reporting it
                parts.append(f"{label} not reported, {ruled_out[0]}{paper_text}")
            else:
                parts.append(f"{label} {s['overhead_pct'].median():+.1f}%{paper_text}")
        short = (table.attrs.get("too_short") or {}).get((bench, proto))
        lines.append(f"- **{bench}**, {proto}: median loss vs native over its operations: " + "; ".join(parts)
                     + (f" ({short})" if short else ""))
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

# Said where each section of the page begins (the page is one call: no Markdown cell sits between its parts).
OVERHEAD_SECTION = ("## Performance: each container against native\n\nLoss against native's median per operation "
                    "(positive: the container is slower or moves less data); the paper's Docker numbers as crosses "
                    "where it printed one. Disk: throughput per operation; memory: STREAM's best rate per kernel; HPC: "
                    "NPB's own time; HTTP: ab's requests per second (wrk's are in the table, `operation` = wrk).")
EDP_SECTION = ("## Energy-Delay Product\n\nEDP per run (energy above the device's idle power x the run's duration), "
               "each container's against native's. Without a power meter the rows are missing and the reason is "
               "printed instead of a figure.")
CROSSCHECK_SECTION = ("## Is apps/stream measuring memory? An independent tool in the same run\n\nThe project's STREAM "
                      "kernels (native, fair protocol, largest array) against stress-ng's stream stressor and sysbench "
                      "memory, run natively in the same run. The ratio is a sanity check, not a comparison: the tools "
                      "count bytes differently.")


@dataclass
class ContainerOverheadPage(Page):
    """`table`: each container's loss against native per benchmark and operation, beside the paper's
    (empty where the run has nothing to set against native)."""
    edp: pd.DataFrame         # the energy-delay product against native (empty without a power meter)
    crosscheck: pd.DataFrame  # STREAM's rates against an independent tool's (empty without one)


def show(run_dir: Path, params: Params) -> ContainerOverheadPage:
    """Notebook 09: the run's notes, the overhead beside the paper's with its figure and findings,
    the energy-delay product, and STREAM's cross-check; a part the run cannot show says why."""
    df = open_page(run_dir)
    reference = load_reference(params.EXPERIMENT)
    table = edp = crosscheck = pd.DataFrame()
    show_findings(OVERHEAD_SECTION)
    try:  # a run without a container (runtimes="native") has nothing to set against native
        table = overhead_table(df, reference)
        show_table(table, 3)
        show_figure(overhead_figure(table), params.EXPERIMENT, "overhead", run_dir)
        show_findings(findings(table))
    except NoData as e:
        show_absent("overhead figure", e)
    show_findings(EDP_SECTION)
    try:
        edp = edp_table(df, reference)
        show_table(edp, 3)
        show_figure(edp_figure(edp), params.EXPERIMENT, "edp", run_dir)
    except NoData as e:
        show_absent("EDP figure", e)
    show_findings(CROSSCHECK_SECTION)
    try:
        crosscheck = crosscheck_table(df)
        show_table(crosscheck, 3)
    except NoData as e:
        show_absent("cross-check", e)
    return ContainerOverheadPage(run_dir, df, table, edp, crosscheck)
