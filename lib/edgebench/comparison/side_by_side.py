"""What notebooks/compare.ipynb shows: the runs selected, their ratios to native beside the
papers', and what a reader should know first (compare_runs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from edgebench.comparison.paper_ratios import paper_ratios, with_paper
from edgebench.comparison.ratios import BASELINE, headline_rows, ratios_to_native, ruled_out
from edgebench.comparison.runs import chosen_names, load_runs, runs_index, select_runs
from edgebench.experiments import EXPERIMENTS
from edgebench.paths import DATA_DIR
from edgebench.plotting.style import base_runtime
from edgebench.plotting.tables import NoData
from edgebench.runtimes import check_runtime_names


@dataclass
class Comparison:
    index: pd.DataFrame    # every run found under data/
    runs: pd.DataFrame     # those compared, each with its column label
    ratios: pd.DataFrame   # ratios_to_native of their rows, with the papers' beside
    paper: pd.DataFrame    # the papers' ratios for these experiments
    notes: list[str]       # what a reader should know first

    def targets(self) -> list[str]:
        """The targets compared, as `make verdicts` names them (local, debian-v2, user@host)."""
        return list(dict.fromkeys(self.runs.sort_values("device_rank", kind="stable")["target"]))

    def runs_table(self) -> pd.DataFrame:
        cols = ["experiment", "label", "run_id", "started_at", "status", "profile", "version", "rows_ok",
                "rows_failed"]
        return self.runs[cols].rename(columns={"label": "column"}).reset_index(drop=True)

    def summary(self) -> str:
        """Markdown: what is compared, and what cannot be."""
        devices = list(dict.fromkeys(self.runs.sort_values("device_rank", kind="stable")["device"]))
        one_each = not self.runs.duplicated(["experiment"], keep=False).any()
        lines = [f"Comparing {len(self.runs)} run(s) of {self.runs['experiment'].nunique()} experiment(s) "
                 f"on {len(devices)} device(s): {', '.join(devices)}."]
        if one_each:
            lines.append("**Nothing to compare side by side yet:** every experiment here has one run "
                         f"({', '.join(devices)}), so the table and the figure show that run's ratios to native "
                         "alone. Measure another device (`make figures TARGET=...`) or this one again, then "
                         "`run_id = \"all\"` puts dates and versions side by side.")
        return "\n".join(lines + [f"- {n}" for n in self.notes])


def blank_reasons(blank: pd.DataFrame) -> str:
    """The blank points by kind of reason ("implausible", "too coarse", ...), each with its count and
    one point's full reason: every point's own reason (its numbers in it) would be a page of text."""
    kinds = blank["why"].astype(str).str.split(":", n=1).str[0]
    parts = []
    for kind, rows in blank.groupby(kinds, sort=False):
        first = rows.iloc[0]
        example = f"{first['experiment']} {first['runtime']} {first['metric']} at {first['key']}"
        parts.append(f"{len(rows)} {kind}" + (f" (e.g. {example}: {first['why']})" if kind != first["why"]
                                               else f" (e.g. {example})"))
    return "; ".join(parts)


def _headline_metrics(experiment: str) -> list[str]:
    known = EXPERIMENTS.get(experiment)
    return list(known.headline_metrics) if known else []


def compare_runs(experiments="all", targets="all", runs="latest", runtimes="all", profile="any",
                 metrics="headline", data_dir: Path = DATA_DIR) -> Comparison:
    """Find, select and load the runs, and compute their ratios to native beside the papers'.
    Raises NoData, saying what exists, when there is nothing to show."""
    index = runs_index(data_dir)
    notes = [f"left out (unreadable): {s}" for s in index.attrs.get("skipped", [])]
    if index.empty:
        raise NoData(f"no runs under {data_dir}: measure first (`make figures`), then compare")
    selected = select_runs(index, experiments, targets, runs, profile)
    if selected.empty:
        statuses = ", ".join(f"{n} {s}" for s, n in index["status"].value_counts().items())
        raise NoData(f"no {'completed ' if runs in ('latest', 'all') else ''}run matches experiments={experiments!r}, "
                     f"targets={targets!r}, runs={runs!r}, profile={profile!r} among {len(index)} run(s) "
                     f"({statuses})")
    df = load_runs(selected)
    notes += [f"left out (unreadable results): {s}" for s in df.attrs.get("skipped", [])]
    if "limits_note" in df.columns and df["limits_note"].astype(str).str.contains("clipped to the target").any():
        notes.append("A level bigger than a device (such as the papers' rich 8 CPUs / 2048 MB) ran at the device's "
                     "size: its points are named by the level asked for, so the same level lines up across devices "
                     "(each row's limits_note says what the device gave).")
    wanted = chosen_names(runtimes, "runtimes")
    if wanted and not df.empty:
        check_runtime_names(wanted)
        df = df[df["runtime"].map(lambda r: base_runtime(str(r))).isin([BASELINE, *wanted])]
    metric_names = chosen_names(metrics, "metrics")
    headline_only = metric_names == ["headline"]
    if headline_only:
        df = headline_rows(df)
    elif metric_names:
        df = df[df["metric"].isin(metric_names)]
    ratios = ruled_out(ratios_to_native(df))
    with_ratio = set(ratios.loc[ratios["ratio"].notna(), "experiment"])
    for exp in selected["experiment"].unique():
        if headline_only and not _headline_metrics(exp):
            notes.append(f"**{exp}**: no headline metric named for it (its record's headline_metrics, "
                         "edgebench.experiments.reading); `metrics = \"all\"` shows every metric it records")
        elif exp not in set(ratios["experiment"]):
            notes.append(f"**{exp}**: no runtime besides native has a value for "
                         f"{', '.join(_headline_metrics(exp)) if headline_only else metrics} in the selected runs")
        elif exp not in with_ratio:
            notes.append(f"**{exp}**: native has no value at any point, so no ratio (did its runs include native?)")
    blank = ratios[ratios["ratio"].isna() & ratios["experiment"].isin(with_ratio)]
    if not blank.empty:
        notes.append(f"{len(blank)} point(s) have no ratio (left blank): {blank_reasons(blank)}")
    if not ratios["ratio"].notna().any():
        raise NoData("no ratio to native in the selected runs: " + " ".join(n.replace("**", "") for n in notes)
                     if notes else "no ratio to native in the selected runs")
    paper = pd.concat([paper_ratios(e) for e in selected["experiment"].unique()], ignore_index=True)
    labels = selected[["experiment", "run_id", "device", "device_rank", "label", "started_at", "version", "emulated"]]
    ratios = with_paper(ratios.merge(labels, on=["experiment", "run_id"], how="left"), paper)
    return Comparison(index, selected, ratios, paper, notes)
