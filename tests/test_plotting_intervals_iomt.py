"""Every median the IoMT figures draw (latency, page faults, cache misses) carries its interval:
the median's 95% bootstrap CI where every point has 3 runs or more, else the range of the runs,
drawn as error bars in the runtime's colour whose ends are the data's, and named in the row's
y label."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from test_plotting import frame

from edgebench.claims import median_interval
from edgebench.experiments import iomt as iomt_exp
from edgebench.plotting import iomt, page_faults
from edgebench.plotting.style import PROTOCOL_TITLE, runtime_colour
from edgebench.reference import load_reference

SIZES = {"lzw": ["10KB", "100KB", "1MB"], "aes": ["100KB", "1MB"], "kmeans": ["1K", "10K"]}
RUNTIMES = ["native", "docker", "lxd"]
# Per repetition, a factor on each point's value: uneven, so the median, its interval and the
# range all differ (the median of all five is 1.1).
FACTORS = [1.0, 1.3, 0.8, 1.1, 1.6]


def base_values(workload: str, size: str, k: int) -> dict[str, float]:
    n = iomt_exp.parse_size(size)
    e2e = 0.05 * (k + 1) + n / 1e7
    start = 0.01 * (k + 1)
    return {"end_to_end_latency": e2e, "program_time": e2e - start, "work_time": (e2e - start) * 0.9,
            "startup_overhead": start, "throughput": n / e2e, "perf_page_faults": 100.0 * (k + 1) + n / 4096,
            "faults_cgroup": 120.0 * (k + 1) + n / 4096, "faults_inprocess": 110.0 + n / 4096,
            "perf_cache_misses": 1e4 * (k + 1) + n}


def results(reps: int = 5, experiment: str = "iomt") -> pd.DataFrame:
    """Results in the experiment's long format, every value times its repetition's factor."""
    rows = []
    for w, sizes in SIZES.items():
        for size in sizes:
            for proto in ("fair", "published"):
                for k, rt in enumerate(RUNTIMES):
                    for rep in range(1, reps + 1):
                        row = dict(app="iomt", workload=w, input_size=size, runtime=rt, protocol=proto, rep=rep,
                                   entropy="random", seed=1, checksum=f"{w}-{size}", note="")
                        for metric, value in base_values(w, size, k).items():
                            rows.append(dict(row, metric=metric, value=value * FACTORS[rep - 1], unit="s"))
    return frame(experiment, iomt_exp.EXTRA_COLUMNS, rows)


def runs(df: pd.DataFrame, metric: str, workload: str, size: str, runtime: str, protocol: str) -> np.ndarray:
    sel = df[(df["metric"] == metric) & (df["workload"] == workload) & (df["input_size"] == size)
             & (df["runtime"] == runtime) & (df["protocol"] == protocol)]
    return sel["value"].to_numpy(float)


def panel(fig, workload: str, protocol: str, row: int = 0):
    """The panel of a workload and protocol; `row` 0 its first row (iomt: end to end), 1 its second."""
    title = f"{iomt_exp.LABELS[workload]}, {PROTOCOL_TITLE[protocol]}"
    axes = sorted((ax for ax in fig.axes if ax.get_title() == title), key=lambda a: a.get_subplotspec().rowspan.start)
    return axes[row]


def row_label(fig, ax) -> str:
    start = ax.get_subplotspec().rowspan.start
    return next(a for a in fig.axes if a.get_subplotspec().rowspan.start == start
                and a.get_subplotspec().colspan.start == 0).get_ylabel()


def bars_of(ax, runtime: str) -> dict[float, tuple[float, float]]:
    """x -> (low, high) of the one error-bar container drawn for `runtime` on `ax`."""
    found = [c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.lines[0].get_gid() == runtime]
    assert len(found) == 1, f"{runtime}: {len(found)} error-bar containers"
    (segments,) = [coll.get_segments() for coll in found[0].lines[2]]
    return {float(s[0][0]): (float(min(s[0][1], s[1][1])), float(max(s[0][1], s[1][1]))) for s in segments}


def expected(values: np.ndarray, kind: str) -> tuple[float, float]:
    return median_interval(values) if kind == "ci95" else (float(values.min()), float(values.max()))


def check_bars(fig, df, metric, workload, row, kind, scale=1.0):
    sizes = sorted(float(iomt_exp.parse_size(s)) for s in SIZES[workload])
    for protocol in ("fair", "published"):
        ax = panel(fig, workload, protocol, row)
        places = []
        for rt in RUNTIMES:
            bars = bars_of(ax, rt)
            # Beside each size (iomt.beside_size): one factor on x per runtime, within a fraction of a decade.
            xs = sorted(bars)
            places.append(xs[0] / sizes[0])
            assert xs == pytest.approx([size * places[-1] for size in sizes], rel=1e-9)
            assert 10 ** -0.3 < places[-1] < 10 ** 0.3
            at_size = dict(zip(sizes, (bars[x] for x in xs)))
            for size in SIZES[workload]:
                values = runs(df, metric, workload, size, rt, protocol)
                low, high = expected(values, kind)
                assert high > low, "the data spread, so must the bars"
                assert at_size[float(iomt_exp.parse_size(size))] == pytest.approx((low * scale, high * scale),
                                                                                   rel=1e-9)
            # The runtime's colour, and still one line per runtime (the caps draw no line).
            container = next(c for c in ax.containers if c.lines[0].get_gid() == rt)
            assert container.lines[0].get_color() == runtime_colour(rt)
            lines = [line for line in ax.lines if line.get_gid() == rt and line.get_linestyle() != "None"]
            assert len(lines) == 1
        assert places == sorted(places) and len(set(places)) == len(RUNTIMES), "side by side, in the registry's order"


@pytest.mark.parametrize("reps, kind, note", [(5, "ci95", "bars: its 95% CI"), (2, "range", "bars: range of runs")])
def test_iomt_latency_draws_each_medians_interval(reps, kind, note):
    df = results(reps)
    table = iomt.latency_table(df, load_reference("iomt"))
    for column in iomt.LATENCY_DRAWN:
        assert {f"{column}_{k}_{end}" for k in iomt.INTERVALS for end in ("low", "high")} <= set(table.columns)
    fig = iomt.latency_figure(table)
    for w in SIZES:
        check_bars(fig, df, "end_to_end_latency", w, 0, kind)
        check_bars(fig, df, "startup_overhead", w, 1, kind)  # in seconds, as the end-to-end row
        assert row_label(fig, panel(fig, w, "fair", 0)).endswith("median, " + note)
        assert row_label(fig, panel(fig, w, "fair", 1)).endswith("median, " + note)


@pytest.mark.parametrize("reps, kind", [(5, "ci95"), (2, "range")])
def test_page_fault_and_cache_miss_figures_draw_each_medians_interval(reps, kind):
    df = results(reps, experiment="page_faults")
    table = page_faults.faults_table(df, load_reference("page_faults"))
    fig = page_faults.faults_figure(table)
    for w in SIZES:
        check_bars(fig, df, "perf_page_faults", w, 0, kind)
        assert iomt.INTERVALS[kind][0] in row_label(fig, panel(fig, w, "fair"))
    fig = page_faults.cache_miss_figure(table)
    for w in page_faults.CACHE_MISS_WORKLOADS:
        check_bars(fig, df, "perf_cache_misses", w, 0, kind)
        assert iomt.INTERVALS[kind][0] in row_label(fig, panel(fig, w, "fair"))


def test_one_point_under_three_runs_draws_the_range_everywhere():
    """The figure draws one kind of bar, the one its label names: a point with 2 runs among
    points with 5 has no 95% interval, so every point shows the range of its runs."""
    df = results(5)
    one = (df["workload"] == "aes") & (df["input_size"] == "1MB") & (df["runtime"] == "docker") & (df["rep"] > 2)
    df = df[~one]
    table = iomt.latency_table(df, load_reference("iomt"))
    assert iomt.interval_kind(table, "end_to_end_latency") == "range"
    fig = iomt.latency_figure(table)
    check_bars(fig, df, "end_to_end_latency", "lzw", 0, "range")
    check_bars(fig, df, "end_to_end_latency", "aes", 0, "range")


def test_a_table_without_the_spread_draws_plain_lines_and_says_median():
    table = page_faults.faults_table(results(5, experiment="page_faults"), load_reference("page_faults"))
    bare = table[[c for c in table.columns if not any(f"_{k}_" in c for k in iomt.INTERVALS)]]
    assert iomt.interval_kind(bare, "perf_page_faults") is None
    fig = page_faults.faults_figure(bare)
    assert not [c for ax in fig.axes for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert all(len([ln for ln in panel(fig, w, "fair").lines if ln.get_gid()]) == len(RUNTIMES) for w in SIZES)
    assert row_label(fig, panel(fig, "lzw", "fair")).endswith("\nmedian")


def test_the_health_dagger_sits_above_the_bar():
    """A point measured on a throttled device keeps its dagger above its bar, not on it."""
    df = results(5)
    df["health"] = np.where((df["runtime"] == "docker") & (df["workload"] == "lzw"), "throttled", "")
    fig = iomt.latency_figure(iomt.latency_table(df, load_reference("iomt")))
    ax = panel(fig, "lzw", "fair", 0)
    tops = {x: high for x, (_, high) in bars_of(ax, "docker").items()}
    daggers = {float(t.xy[0]): float(t.xy[1]) for t in ax.texts if t.get_gid() == "health-mark"}
    assert set(daggers) == set(tops)
    for x, top in tops.items():
        assert daggers[x] == pytest.approx(top)
