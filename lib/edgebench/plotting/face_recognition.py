"""Face recognition (paper 001, Table 3 'OpenCV' and 'Face-KNN'): a run's time split into the
interpreter's start, the gallery's enrolment and the images (read, detection, recognition), per
runtime and network mode, with the accuracy beside it and the paper's ratios below."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.experiments.face_recognition import Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.services import label
from edgebench.plotting.style import PROTOCOL_TITLE, part_colours, plt, protocols_in, times
from edgebench.plotting.tables import WHISKERS, interval, stacked_with_interval, wrapped_suptitle
from edgebench.plotting.tables import NoData, mark_emulated, mark_health, sort_by_runtime, ratio_to_baseline
from edgebench.reference import load_reference

BASELINE = "native"
METRICS = ("end_to_end_latency", "inference_time", "read_per_image", "detect_per_image", "recognize_per_image",
           "enroll_time", "import_time", "startup_overhead", "accuracy", "detected_fraction", "cpu_utilization",
           "max_rss")
# A run's parts in seconds, bottom to top: what the table's per-image means add up to, times N.
PARTS = tuple((metric, name, colour) for (metric, name), colour in zip(
    (("startup_overhead", "runtime start and teardown"), ("import_time", "interpreter start and imports"),
     ("enroll_time", "gallery enrolment"), ("read_s", "reading the images"), ("detect_s", "Haar detection"),
     ("recognize_s", "features + k-NN")), part_colours(6)))


def face_table(df: pd.DataFrame) -> pd.DataFrame:
    """Medians per (protocol, runtime label), how many runs agreed on every prediction, the time
    over the images as a ratio to native's in the same protocol (vs_native) and the end-to-end
    time's (end_to_end_vs_native: what a bar shows); beside the end-to-end time, its interval over
    the runs (end_to_end_latency_low, _high: home_automation.interval())."""
    ok = mark_emulated(df[df["status"] == "ok"])
    if ok.empty:
        return pd.DataFrame()
    ok = ok.assign(label=label(ok))
    rows = []
    for (protocol, lab), g in ok.groupby(["protocol", "label"], sort=False):
        med = g.groupby("metric")["value"].median()
        images = pd.to_numeric(g["images"], errors="coerce").median() if "images" in g else np.nan
        answers = g[g["metric"] == "inference_time"]["predictions_sha256"].dropna().astype(str)
        low, high = interval(g[g["metric"] == "end_to_end_latency"]["value"])
        rows.append({"protocol": protocol, "label": lab, "runtime": g["runtime"].iloc[0],
                     "runs": int((g["metric"] == "inference_time").sum()), "images": images,
                     "dataset": ", ".join(sorted(set(g["dataset"].dropna().astype(str)))) if "dataset" in g else "",
                     "answers": ", ".join(sorted(set(a[:8] for a in answers))),
                     **{m: med.get(m) for m in METRICS},
                     "end_to_end_latency_low": low, "end_to_end_latency_high": high})
    table = pd.DataFrame(rows)
    for part, metric in (("read_s", "read_per_image"), ("detect_s", "detect_per_image"),
                         ("recognize_s", "recognize_per_image")):
        table[part] = table[metric] * table["images"] / 1000
    table["vs_native"] = ratio_to_baseline(table, "inference_time", table["label"] == BASELINE, ["protocol"])
    # What the figure's bar and line show, the whole run end to end, against native's: the label on a
    # bar is this ratio, not the images' (vs_native), which leaves out the start and the enrolment.
    table["end_to_end_vs_native"] = ratio_to_baseline(table, "end_to_end_latency", table["label"] == BASELINE,
                                                      ["protocol"])
    table = mark_health(table, ok, ["protocol", "label"])
    return sort_by_runtime(table, ["protocol", "runtime", "label"])


def face_figure(table: pd.DataFrame):
    """Stacked bars of a run's time, one panel per protocol, the end-to-end time's interval over
    the runs as a whisker on its line, and above each bar its end-to-end ratio to native's (the
    bar's own height against native's bar) and the accuracy."""
    if table.empty:
        raise NoData("face recognition table is empty")
    protocols = protocols_in(table["protocol"])  # fair on the left, as in every figure
    most = max(table.groupby("protocol")["label"].nunique())
    panel = max(5.4, 0.72 * most + 1.4)  # the runtimes' names and notes side by side, apart
    fig, axes = plt.subplots(1, len(protocols), figsize=(panel * len(protocols), 4.6), squeeze=False, sharey=True)
    for j, protocol in enumerate(protocols):
        ax = axes[0][j]
        stacked_with_interval(ax, table[table["protocol"] == protocol], PARTS, "end_to_end_latency",
                              lambda r: (f"{times(r.end_to_end_vs_native)}\n" if r.label != BASELINE
                                         and np.isfinite(r.end_to_end_vs_native) else "") + f"acc {r.accuracy:.0%}")
        # Two lines each: "1.32x, acc 89%" on one ran into its neighbour's.
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.08 * (high - low))
        ax.set_title(PROTOCOL_TITLE.get(protocol, protocol), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("seconds per run (medians)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles[:len(PARTS)], names[:len(PARTS)], fontsize=8, loc="lower center", ncol=3)
    n = table["images"].dropna()
    wrapped_suptitle(fig, f"Face recognition over {int(n.iloc[0]) if len(n) else '?'} images (line: end to end in "
                          "the runtime's colour; above it: end to end against native's, and accuracy)\n"
                          f"whisker on the line: {WHISKERS}")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def face_findings(table: pd.DataFrame, reference: pd.DataFrame) -> str:
    lines = []
    for protocol, g in table.groupby("protocol", sort=False):
        native = g[g["label"] == BASELINE]
        parts = [f"{r.label} {r.inference_time:.2f} s ({r.vs_native:.2f}x over the images, "
                 f"{r.end_to_end_vs_native:.2f}x end to end as its bar; detection {r.detect_per_image:.1f} ms/image, "
                 f"accuracy {r.accuracy:.0%})"
                 for r in g.itertuples()
                 if r.label != BASELINE and np.isfinite(r.vs_native)]
        if parts and not native.empty:
            n = native.iloc[0]
            lines.append(f"- **{protocol}**: native {n.inference_time:.2f} s over {int(n.images)} images (detection "
                         f"{n.detect_per_image:.1f} ms/image, accuracy {n.accuracy:.0%}); " + "; ".join(parts) + ".")
    answers = set(a for cell in table["answers"] for a in str(cell).split(", ") if a)
    if len(answers) > 1:
        lines.append(f"- The runtimes did not all give the same predictions ({len(answers)} different sets): "
                     "the same program on the same files should; see the raw output.")
    elif answers:
        lines.append("- Every run in every runtime gave the same predictions.")
    ref = reference[(reference["app"] == "facial_recognition") & (reference["metric"] == "inference_latency")] \
        if not reference.empty else reference
    for (method, mode), g in (ref.groupby(["method", "network_mode"]) if not ref.empty else []):
        values = g.set_index("runtime")["value"]
        if {"docker", "native"} <= set(values.index):
            lines.append(f"- Paper 001 Table 3 ({method}-{mode.capitalize()}, 100 images, as printed): Docker "
                         f"{values['docker']:g} s, native {values['native']:g} s "
                         f"({values['docker'] / values['native']:.2f}x).")
    if lines and not ref.empty:
        lines.append("- The paper's OpenCV row compares with the detection here, its Face-KNN row with the whole "
                     "time over the images; its images, model and device differ, so compare ratios, not seconds.")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> Page:
    """Notebook 14: the run's notes, the times over the images with the accuracy beside them, the
    figure and the findings beside the paper's ratios."""
    df = open_page(run_dir)
    table = face_table(df)
    show_table(table)
    show_figure(face_figure(table), params.EXPERIMENT, "face_recognition_time", run_dir)
    show_findings(face_findings(table, load_reference(params.EXPERIMENT)))
    return Page(run_dir, df, table)
