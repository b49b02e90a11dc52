"""How each experiment's rows are read once measured: the metrics `make compare` shows by default
and which way is better, the coordinates a value is compared on, the papers' rows that give a
ratio to native, the figure `make verdicts` links for a metric, and the metrics its tools print
too coarsely to compare where they are short (`printed`). They are fields of the experiment's
record (edgebench.experiments.Experiment), filled from READING below.

The coordinates of a measurement (`key_columns`): a runtime's median is divided by native's at
the same values of these (those a result has), in the order a point's label reads them. Each names
a point of the experiment's sweep or what was measured; none is a reading of the run
(`*_applied`, `littles_law`, `duration_s`, `offered_rps`, `storage`, `checksum`), a build detail
(`build`, `artifact`, `tool`, `accelerator`: an emulated VM is its own runtime label instead) or
a note. Every one of an experiment's columns that is a coordinate is listed, or two points would
be merged into one median.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, TypedDict

import pandas as pd


@dataclass(frozen=True)
class Headline:
    """A metric the comparison shows by default, which way is better, and the words for it."""
    higher_is_better: bool
    where: tuple[tuple[str, str], ...] = ()  # only rows with these (column, value): where it means something
    worse: str = "slower"
    better: str = "faster"


@dataclass(frozen=True)
class PaperRule:
    """Which of an experiment's published rows to read (`where`), what they are in the measured
    rows' terms (`to`: the metric and coordinates it fixes; `keys`: paper column -> measured
    column, carried per row; a coordinate not given matches any value), and how to read them:
    `value` (an absolute number, divided by native's for the same keys), `ratio` (a printed
    runtime/native ratio), `increase_pct` (ratio = 1 + p/100) or `overhead_pct` (see
    edgebench.comparison.paper_ratios)."""
    where: dict
    to: dict
    keys: dict = field(default_factory=dict)
    kind: str = "value"


@dataclass(frozen=True)
class Printed:
    """A metric its tool prints rounded to `step` `unit` on the rows `where` names: NPB's 'Time in
    seconds' to 0.01 s. Comparisons read it only where it is many steps long
    (edgebench.tools.sanity.below_resolution)."""
    step: float
    unit: str
    by: str  # the tool's printed field, for the reason a reader sees
    where: tuple[tuple[str, str], ...] = ()


class Reading(TypedDict, total=False):
    """The Experiment fields READING fills, by name."""
    headline_metrics: Mapping[str, Headline]
    key_columns: tuple[str, ...]
    results_in_keys: Mapping[str, tuple[str, ...]]
    paper_rules: tuple[PaperRule, ...]
    main_figure: str
    metric_figures: Mapping[str, str]
    printed: Mapping[str, Printed]


_SIZE = dict(worse="larger", better="smaller")
_FAULTS = dict(worse="more faults", better="fewer faults")
# Every experiment's rows have these (edgebench.results.CORE_COLUMNS); cpus and memory_mb read
# late in a label, after the sweep's own coordinates.
_NAMED = ("app", "protocol", "metric", "unit")
_LIMITS = ("cpus", "memory_mb")
_HTTP_KEYS = (*_NAMED, "scenario", "endpoint", "iter", "load_tool", "offered_share", "threads", "network", *_LIMITS)
_IOMT_KEYS = (*_NAMED, "workload", "input_size", "entropy", *_LIMITS)
_SYSBENCH_KEYS = (*_NAMED, "benchmark", "point", "files", "total", "threads", *_LIMITS)


_HTTP_LOAD_RULES = tuple(PaperRule({"metric": m}, {"metric": m}, {"app": "app", "endpoint": "endpoint", "cpus": "cpus",
                                                                   "memory_mb": "memory_mb"})
                         for m in ("requests_per_second", "latency_mean"))


# Fixed-duration runs make their total time meaningless, so those show a rate instead. A
# paper_rules tuple that finds no pair in the reference gives no paper ratio (said in the rule).
READING: dict[str, Reading] = {
    "static_footprint": Reading(
        headline_metrics={"image_size": Headline(False, **_SIZE)},
        key_columns=(*_NAMED, *_LIMITS),
        paper_rules=(PaperRule({"metric": "image_size"}, {"metric": "image_size"}, {"app": "app"}),),
        main_figure="footprint"),
    "time_to_ready": Reading(
        headline_metrics={"time_to_ready": Headline(False)},
        key_columns=(*_NAMED, "network", *_LIMITS, "cache"),
        # Paper 000 prints no native number for these (Docker and Nanos only): the rule finds no pair.
        paper_rules=(PaperRule({"metric": "time_to_ready_median"}, {"metric": "time_to_ready"}, {"app": "app"}),),
        main_figure="time_to_ready", metric_figures={"first_start": "first_start"}),
    "io_bound": Reading(
        headline_metrics={"requests_per_second": Headline(True)},
        key_columns=_HTTP_KEYS, paper_rules=_HTTP_LOAD_RULES, main_figure="io_bound"),
    "cpu_bound": Reading(
        headline_metrics={"requests_per_second": Headline(True)},
        key_columns=_HTTP_KEYS, paper_rules=_HTTP_LOAD_RULES, main_figure="cpu_bound"),
    "iomt": Reading(
        headline_metrics={"end_to_end_latency": Headline(False)},
        key_columns=_IOMT_KEYS,
        paper_rules=(PaperRule({"metric": "end_to_end_latency"}, {"metric": "end_to_end_latency"},
                               {"app": "workload", "input_size": "input_size"}),),
        main_figure="iomt_latency"),
    "page_faults": Reading(
        # published: perf counted the launch command, as the paper did (the docker client for Docker);
        # fair: the workload's own faults, from its cgroup.
        headline_metrics={"perf_page_faults": Headline(False, (("protocol", "published"),), **_FAULTS),
                          "faults_cgroup": Headline(False, (("protocol", "fair"),), **_FAULTS)},
        key_columns=_IOMT_KEYS,
        # perf stat of the launch command: our published protocol's perf count (the docker client).
        paper_rules=(PaperRule({"metric": "page_faults"}, {"metric": "perf_page_faults", "protocol": "published"},
                               {"app": "workload", "input_size": "input_size"}),),
        main_figure="page_faults", metric_figures={"perf_cache_misses": "cache_misses"}),
    "lxd_appendix": Reading(
        headline_metrics={"file_creation_latency": Headline(False, (("benchmark", "fileio"),)),
                          "latency_avg": Headline(False, (("benchmark", "memory"),)),
                          "total_time": Headline(False, (("benchmark", "cpu"),))},
        key_columns=_SYSBENCH_KEYS,
        # The appendix's statements. Left out: (b) "plateau at 100 MB/s" vs "up to 10,000 MB/s",
        # one curve's plateau against the other's maximum, at no common point.
        paper_rules=(
            PaperRule({"workload": "disk", "metric": "file_creation_latency"},
                      {"benchmark": "fileio", "metric": "file_creation_latency"}),
            PaperRule({"workload": "disk", "metric": "slowdown_vs_native"},
                      {"benchmark": "fileio", "metric": "file_creation_latency"}, kind="ratio"),
            PaperRule({"workload": "cpu", "metric": "latency"}, {"benchmark": "cpu", "metric": "total_time"},
                      {"threads": "threads"}),
            PaperRule({"workload": "cpu", "metric": "slowdown_vs_native"}, {"benchmark": "cpu", "metric": "total_time"},
                      {"threads": "threads"}, kind="ratio"),
            PaperRule({"workload": "memory", "metric": "latency_increase_vs_native_pct"},
                      {"benchmark": "memory", "metric": "latency_avg"}, kind="increase_pct"),
        ),
        main_figure="lxd_appendix"),
    "microbenchmarks": Reading(
        headline_metrics={"total_time": Headline(False, (("protocol", "published"),)),
                          "events_per_second": Headline(True, (("benchmark", "cpu"), ("protocol", "fair"))),
                          "throughput": Headline(True, (("benchmark", "memory"), ("protocol", "fair"))),
                          "network_throughput": Headline(True)},
        key_columns=_SYSBENCH_KEYS,
        # Table 2's "latency" is the run's total time at the published points ("1MB / 10T").
        paper_rules=(PaperRule({"metric": "latency"}, {"metric": "total_time", "protocol": "published"},
                               {"workload": "benchmark", "column_label": "point"}),),
        main_figure="sysbench_table2", metric_figures={"network_rtt": "network", "network_throughput": "network"}),
    "container_overhead": Reading(
        headline_metrics={"throughput": Headline(True, (("benchmark", "disk"),)),
                          "best_rate": Headline(True, (("benchmark", "memory"),)),
                          "time": Headline(False, (("benchmark", "hpc"),)),
                          "requests_per_second": Headline(True, (("benchmark", "network"),))},
        key_columns=(*_NAMED, "load_tool", "benchmark", "operation", "point", "npb_class", "array_mib", "threads",
                     "network", *_LIMITS),
        # Paper 003 prints only overhead_pct, on each benchmark's headline metric. Disk: 1.53% "on all
        # the executed operations", so beside every operation. Left out: read and re-read (2.36%, which
        # the reference's own note reads as an order of magnitude), EP (no number) and every
        # edp_change_pct (EDP is no headline metric; DC's 8.53% may be its time).
        paper_rules=(
            PaperRule({"benchmark": "disk", "operation": "all", "metric": "overhead_pct"},
                      {"benchmark": "disk", "metric": "throughput"}, kind="overhead_pct"),
            PaperRule({"benchmark": "memory", "metric": "overhead_pct"}, {"benchmark": "memory", "metric": "best_rate"},
                      {"operation": "operation"}, kind="overhead_pct"),
            PaperRule({"benchmark": "hpc", "metric": "overhead_pct"}, {"benchmark": "hpc", "metric": "time"},
                      {"operation": "operation"}, kind="overhead_pct"),
            # ab against Docker's default network: our bridge rows.
            PaperRule({"benchmark": "network", "operation": "ab", "metric": "overhead_pct"},
                      {"benchmark": "network", "operation": "ab", "point": "docker (bridge)",
                       "metric": "requests_per_second"}, kind="overhead_pct"),
        ),
        main_figure="overhead", metric_figures={"edp": "edp"},
        # Class S runs for hundredths of a second: a quarter of its times print as 0.00.
        printed={"time": Printed(0.01, "s", "NPB's 'Time in seconds'", (("benchmark", "hpc"),))}),
    "min_memory": Reading(
        headline_metrics={"min_memory": Headline(False, worse="more memory", better="less memory")},
        key_columns=(*_NAMED, "network", *_LIMITS),
        # Runs before the rows left it blank carried the minimum found as the row's memory_mb, so
        # no two runtimes ever met at the same coordinates.
        results_in_keys={"min_memory": ("memory_mb",)},
        main_figure="min_memory"),
    "boot_time": Reading(
        headline_metrics={"time_to_ready": Headline(False)},
        key_columns=(*_NAMED, "network", *_LIMITS, "machine"),
        main_figure="boot_phases",
        metric_figures={"vmm_part": "vmm_guest_split", "guest_part": "vmm_guest_split",
                        "total_boot": "vmm_guest_split"}),
    "services": Reading(
        headline_metrics={"throughput": Headline(True)},
        key_columns=(*_NAMED, "network", *_LIMITS, "test", "network_mode"),
        main_figure="services_throughput"),
    # Table 3 (004): Docker against native per network mode, as printed (seconds).
    "home_automation": Reading(
        headline_metrics={"request_time": Headline(False)},
        key_columns=(*_NAMED, "network", *_LIMITS, "network_mode"),
        paper_rules=(PaperRule({"metric": "latency"}, {"metric": "request_time"}, {"network_mode": "network_mode"}),),
        main_figure="home_automation_latency"),
    # Face-KNN's time over the images is ours over the probe images; its OpenCV row is detection
    # alone, which has no run-level metric here.
    "face_recognition": Reading(
        headline_metrics={"inference_time": Headline(False)},
        key_columns=(*_NAMED, *_LIMITS, "network_mode"),
        paper_rules=(PaperRule({"metric": "inference_latency", "method": "Face-KNN"}, {"metric": "inference_time"},
                               {"network_mode": "network_mode"}),),
        main_figure="face_recognition_time"),
}


def printed_of(experiment: str, rows: pd.DataFrame) -> pd.Series:
    """Per row of `rows` (with `metric` and the columns a Printed's `where` names), the Printed its
    value was rounded by, None where its tool printed it finer than any comparison notices."""
    out = pd.Series([None] * len(rows), index=rows.index, dtype=object)
    for metric, printed in READING.get(experiment, {}).get("printed", {}).items():
        mask = rows["metric"].astype(str) == metric
        for column, value in printed.where:
            mask &= rows[column].astype(str) == value if column in rows.columns else False
        out[mask] = printed
    return out
