"""Every median the load figures draw carries its spread: sysbench's Table 2 bars and the network
bars a black whisker (the median's 95% CI from 3 runs on, else the lowest to highest run), the
HTTP figure's mean latency and jitter the runs' quartiles, the open-loop curves the quartiles of
the runs at each offered share (a share each run turns into its own req/s), a first start's
bars each start as a dot; whisker ends are the data's, and the label or title says what they are."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.container import ErrorbarContainer
from test_plotting import ALL_RUNTIMES, frame, http_results, microbench_results, row_label

from edgebench.claims import median_interval
from edgebench.experiments import http_load as http_exp
from edgebench.plotting import http_load, microbenchmarks, time_to_ready
from edgebench.plotting.style import plt
from edgebench.reference import load_reference

# Per repetition, a factor on each value: uneven, so median, quartiles, CI and range all differ.
FACTORS = [1.0, 1.3, 0.8, 1.1, 1.6]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def varied(df: pd.DataFrame, reps: int) -> pd.DataFrame:
    """`df` with `reps` repetitions of every row, each value times its repetition's factor."""
    one = df[df["rep"] == df["rep"].min()]
    return pd.concat([one.assign(rep=r + 1, value=one["value"] * FACTORS[r]) for r in range(reps)], ignore_index=True)


def whiskers(ax) -> dict[float, tuple[float, float]]:
    """x -> (low, high) of every error bar an axis draws (fmt='none': segments only)."""
    out = {}
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            for seg in c.lines[2][0].get_segments():
                out[round(float(seg[0][0]), 6)] = (float(min(seg[0][1], seg[1][1])), float(max(seg[0][1], seg[1][1])))
    return out


def strokes(ax, gid: str) -> dict[float, tuple[float, float]]:
    """x -> (low, high) of the vertical strokes (vlines) drawn for one runtime."""
    out = {}
    for c in ax.collections:
        if isinstance(c, LineCollection) and c.get_gid() == gid:
            for seg in c.get_segments():
                out[round(float(seg[0][0]), 6)] = (float(min(seg[:, 1])), float(max(seg[:, 1])))
    return out


def runs_of(df: pd.DataFrame, metric: str, **where) -> np.ndarray:
    sel = df[(df["metric"] == metric) & (df["status"] == "ok")]
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return sel["value"].to_numpy(float)


# -- sysbench (Table 2) and networking ---------------------------------------------------

@pytest.mark.parametrize("reps, kind, note", [(2, "range", "lowest to highest run"),
                                             (5, "ci95", "95% CI of the median")])
def test_sysbench_bars_carry_the_runs_spread(reps, kind, note):
    df = varied(microbench_results(), reps)
    table = microbenchmarks.sysbench_table(df, load_reference("microbenchmarks"))
    fig = microbenchmarks.sysbench_figure(table)
    checked = 0
    for ax in fig.axes:
        bench = "cpu" if "cpu" in ax.get_title() else "memory"
        proto = "fair" if "fair protocol" in ax.get_title() else "published"
        column, _ = microbenchmarks.SYSBENCH_VALUE[(bench, proto)]
        metric = {"total_time_s": "total_time", "events_per_s": "events_per_second", "MiB_per_s": "throughput"}[column]
        assert note in ax.get_ylabel() and f"median of {reps} runs" in ax.get_ylabel()
        drawn = whiskers(ax)
        bars = [p for p in ax.patches if p.get_gid()]
        assert len(drawn) == len(bars) > 0, "one whisker per bar"
        panel = table[(table["benchmark"] == bench) & (table["protocol"] == proto)]
        points = list(dict.fromkeys(panel.sort_values("threads")["point"]))  # the figure's order
        for bar in bars:
            x = round(bar.get_x() + bar.get_width() / 2, 6)
            point = points[int(round(x))]  # bars sit within 0.4 of their point's tick
            values = runs_of(df, metric, benchmark=bench, protocol=proto, runtime=bar.get_gid(), point=point)
            assert len(values) == reps and bar.get_height() == pytest.approx(np.median(values))
            expected = median_interval(values) if kind == "ci95" else (values.min(), values.max())
            assert drawn[x] == pytest.approx(expected), (ax.get_title(), bar.get_gid(), point)
            checked += 1
    assert checked


def test_sysbench_one_run_draws_no_whisker_and_says_so():
    df = varied(microbench_results(), 1)
    fig = microbenchmarks.sysbench_figure(microbenchmarks.sysbench_table(df, load_reference("microbenchmarks")))
    for ax in fig.axes:
        assert not any(lo < hi for lo, hi in whiskers(ax).values())
        assert "one run each: its value, no whisker" in ax.get_ylabel()  # not "median of 1 runs"
        assert not whiskers(ax)  # not even a flat cap on each bar


@pytest.mark.parametrize("reps, kind", [(2, "range"), (5, "ci95")])
def test_network_bars_carry_the_runs_spread_and_write_their_value_above_it(reps, kind):
    df = varied(microbench_results(), reps)
    table = microbenchmarks.network_table(df, load_reference("microbenchmarks"))
    fig = microbenchmarks.network_figure(table)
    for ax, metric, column in zip(fig.axes, ("network_throughput", "network_rtt"), ("throughput_Gbps", "rtt_ms")):
        assert microbenchmarks.INTERVALS[kind][0] in ax.get_ylabel()
        drawn = whiskers(ax)
        assert sorted(drawn) == list(range(len(table)))
        for x, mode in enumerate(table["mode"]):
            values = runs_of(df, metric, benchmark="network", point=mode)
            expected = median_interval(values) if kind == "ci95" else (values.min(), values.max())
            assert drawn[x] == pytest.approx(expected)
            assert table.loc[x, column] == pytest.approx(np.median(values))
            label = [t for t in ax.texts if t.get_text() == f"{table.loc[x, column]:.3g}"]
            assert label and label[0].xy[1] == pytest.approx(expected[1]), "the value is written above the whisker"


def test_every_network_value_is_written_inside_its_panel():
    """On an emulated board native's RTT runs spread 6-150 ms: its written value sat on the log
    panel's top frame."""
    df = varied(microbench_results(), 2)
    rtt = (df["metric"] == "network_rtt") & (df["point"] == "native")
    df.loc[rtt, "value"] = np.linspace(6.4, 150, rtt.sum())  # pi-arm64's two runs, 2026-12-01
    fig = microbenchmarks.network_figure(microbenchmarks.network_table(df, load_reference("microbenchmarks")))
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes[:2]:
        frame = ax.get_window_extent(renderer)
        for text in ax.texts:
            box = text.get_window_extent(renderer)
            assert box.y1 <= frame.y1 and box.y0 >= frame.y0, (ax.get_ylabel(), text.get_text())


# -- HTTP load: mean latency and jitter ----------------------------------------------------

def http_varied() -> pd.DataFrame:
    df = http_results()
    ok = df["metric"].isin(["latency_mean", "latency_stdev"]) & df["value"].notna()
    df.loc[ok, "value"] = df.loc[ok, "value"] * df.loc[ok, "rep"].map(lambda r: FACTORS[int(r) - 1])
    return df


def test_http_table_has_the_latency_quartiles():
    df = http_varied()
    table = http_load.http_table(df, load_reference("io_bound"))
    r = table[(table["app"] == "go-http") & (table["runtime"] == "docker") & (table["memory_mb"] == 512)
              & (table["protocol"] == "fair")].iloc[0]
    for metric in ("latency_mean", "latency_stdev"):
        values = pd.Series(runs_of(df, metric, app="go-http", runtime="docker", memory_mb=512, protocol="fair"))
        assert len(values) == 3
        assert (r[f"{metric}_q1_ms"], r[f"{metric}_ms"], r[f"{metric}_q3_ms"]) == pytest.approx(
            (values.quantile(0.25), values.median(), values.quantile(0.75)))


def test_http_mean_and_jitter_rows_draw_the_runs_quartiles():
    df = http_varied()
    table = http_load.http_table(df, load_reference("io_bound"))
    fig = http_load.http_figure(table, "I/O-bound HTTP load")
    assert "bars: their quartiles, where n > 1" in fig.get_suptitle()
    levels = ["rich", "512 MB", "256 MB", "64 MB"]
    seen = 0
    for ax in fig.axes:
        label = row_label(fig, ax)
        metric = {"mean latency (ms, log)": "latency_mean",
                  "jitter: stdev of latency (ms, log)": "latency_stdev"}.get(label)
        if metric is None:
            continue
        app, proto = ax.get_title().split(",")[0], "fair" if "fair protocol" in ax.get_title() else "published"
        for rt in ALL_RUNTIMES:
            # Each runtime beside the level (style.dodge), by one offset: keyed here by the level's own x.
            offsets = {round(x - round(x), 6) for x in strokes(ax, rt)}
            assert len(offsets) == 1 and abs(offsets.pop()) < 0.5
            drawn = {round(x): ends for x, ends in strokes(ax, rt).items()}
            for x, level in enumerate(levels):
                mem = {"rich": 2048, "512 MB": 512, "256 MB": 256, "64 MB": 64}[level]
                values = pd.Series(runs_of(df, metric, app=app, runtime=rt, memory_mb=mem, protocol=proto))
                if values.empty:  # nanos at 64 MB never started
                    assert x not in drawn
                    continue
                assert drawn[x] == pytest.approx((values.quantile(0.25), values.quantile(0.75)))
                seen += 1
        # Still one line per runtime (the caps are markers, the strokes a collection).
        lines = [line for line in ax.lines if line.get_gid() and line.get_linestyle() != "None"]
        assert len(lines) <= len(ALL_RUNTIMES)
    assert seen == 2 * 2 * 2 * (4 * 4 - 1)  # rows, apps, protocols, runtimes x levels less nanos at 64 MB


def test_http_runs_that_agree_draw_no_stroke():
    fig = http_load.http_figure(http_load.http_table(http_results(), load_reference("io_bound")), "I/O-bound")
    assert not [c for ax in fig.axes for c in ax.collections if isinstance(c, LineCollection)
                and row_label(fig, ax).startswith(("mean", "jitter"))]


# -- open loop: grouped by the offered share -----------------------------------------------

SATURATION = {1: 1000.0, 2: 1210.0, 3: 890.0}  # each repetition's own closed-loop req/s


def open_loop_results(shares=(0.5, 1.0), absolute=()) -> pd.DataFrame:
    """Rates given as shares of each repetition's own throughput (so no two runs are offered the
    same req/s), or as req/s (`absolute`: then each run records its own share)."""
    rows = []
    for k, rt in enumerate(("native", "docker")):
        for rep, sat in SATURATION.items():
            base = dict(app="go-http", runtime=rt, protocol="fair", cpus=8.0, memory_mb=2048.0, rep=rep,
                        scenario="rich", load_tool="openloop", health="")
            points = [(round(sat * s, 1), s) for s in shares] + [(r, round(r / sat, 3)) for r in absolute]
            for rate, share in points:
                at = dict(base, offered_rps=rate, offered_share=share)
                factor = FACTORS[rep - 1]
                rows += [dict(at, metric="ol_achieved_rps", value=rate * 0.99, unit="req/s"),
                         dict(at, metric="ol_latency_p99", value=(k + 1) * 20.0 * share * factor, unit="ms"),
                         dict(at, metric="ol_latency_p50", value=(k + 1) * 2.0 * share * factor, unit="ms"),
                         dict(at, metric="ol_errors", value=0.0, unit="count")]
    return frame("io_bound", http_exp.EXTRA_COLUMNS, rows)


def test_open_loop_groups_the_runs_by_their_offered_share():
    df = open_loop_results()
    table = http_load.open_loop_table(df)
    assert len(table) == 4 and (table["n"] == 3).all()  # 2 runtimes x 2 shares, not 2 x 2 x 3 runs
    for r in table.itertuples():
        sel = df[(df["runtime"] == r.runtime) & (df["offered_share"] == r.offered_share)]
        assert r.offered_rps == pytest.approx(sel[sel["metric"] == "ol_achieved_rps"]["offered_rps"].median())
        p99 = pd.Series(runs_of(sel, "ol_latency_p99"))
        assert (r.p99_q1_ms, r.p99_ms, r.p99_q3_ms) == pytest.approx((p99.quantile(0.25), p99.median(),
                                                                      p99.quantile(0.75)))
        p50 = pd.Series(runs_of(sel, "ol_latency_p50"))
        assert (r.p50_q1_ms, r.p50_q3_ms) == pytest.approx((p50.quantile(0.25), p50.quantile(0.75)))


def test_open_loop_rates_in_req_per_s_stay_grouped_by_rate():
    table = http_load.open_loop_table(open_loop_results(shares=(0.5,), absolute=(700.0,)))
    native = table[table["runtime"] == "native"]
    assert sorted(native["offered_rps"]) == pytest.approx(sorted([700.0, np.median([500.0, 605.0, 445.0])]))
    assert (native["n"] == 3).all()


def test_open_loop_figure_draws_the_quartiles_of_the_runs_at_each_share():
    df = open_loop_results()
    table = http_load.open_loop_table(df)
    fig = http_load.open_loop_figure(table, "I/O-bound")
    assert "n = 3 runs; bars: their quartiles" in fig.get_suptitle().replace("\n", " ").replace("\u00a0", " ")
    ax = fig.axes[0]
    for rt in ("native", "docker"):
        drawn = strokes(ax, rt)
        expected = {}
        for r in table[table["runtime"] == rt].itertuples():
            for curve in ("p99", "p50"):
                quartiles = (getattr(r, f"{curve}_q1_ms"), getattr(r, f"{curve}_q3_ms"))
                expected[(round(r.offered_rps, 6), curve)] = quartiles
        # p99 and p50 share their x: both strokes are there, in the runtime's colour.
        segments = [(round(float(s[0][0]), 6), (float(min(s[:, 1])), float(max(s[:, 1]))))
                    for c in ax.collections if isinstance(c, LineCollection) and c.get_gid() == rt
                    for s in c.get_segments()]
        assert len(segments) == len(expected) and drawn
        for (x, _), ends in expected.items():
            assert any(sx == x and ends == pytest.approx(se) for sx, se in segments)
        assert len([line for line in ax.lines if line.get_gid() == rt and line.get_linestyle() != "None"]) == 2


def test_open_loop_rows_without_a_share_still_group_by_rate():
    df = open_loop_results().drop(columns="offered_share")
    df = df[df["rep"] == 1]
    table = http_load.open_loop_table(df)
    assert len(table) == 4 and (table["n"] == 1).all() and table["p99_q1_ms"].equals(table["p99_q3_ms"])
    fig = http_load.open_loop_figure(table, "I/O-bound")
    assert not [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]  # one run: no spread


# -- first start: each start as a dot --------------------------------------------------------

def first_start_results() -> pd.DataFrame:
    rows = []
    for rep, f in enumerate(FACTORS[:3], start=1):
        base = dict(app="go-http", runtime="docker", protocol="fair", rep=rep, status="ok")
        rows += [dict(base, cache="first", metric=m, value=v * f) for m, v in
                 (("image_pull", 300.0), ("time_to_ready", 400.0), ("first_start", 700.0), ("image_transfer", 50.0),
                  ("image_unpack", 120.0), ("image_compressed", 3.5), ("layers_fetched", 1))]
        rows += [dict(base, cache="warm", metric="time_to_ready", value=350.0 * f),
                 dict(base, cache="warm", metric="time_to_ready", value=330.0 * f, rep=rep + 10)]
    return pd.DataFrame(rows)


def test_first_start_bars_show_each_start_as_a_dot():
    df = first_start_results()
    fig = time_to_ready.first_start_figure(df)
    ax = fig.axes[0]
    dots = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(dots) == 3
    f = np.array(FACTORS[:3])
    expected = [np.sort(700.0 * f), np.sort(170.0 * f), np.sort(np.concatenate([350.0 * f, 330.0 * f]))]
    for bar_y, (c, values) in zip((0.0, 0.8, 1.6), zip(dots, expected)):
        xy = np.asarray(c.get_offsets())
        assert xy[:, 0] == pytest.approx(values)
        assert (np.abs(xy[:, 1] - bar_y) <= 0.35).all(), "on its own bar (0.7 high)"
    assert "dots: each start" in ax.get_xlabel() and "dots: each start" in ax.get_title()
    assert "each start" in [t.get_text() for t in fig.legends[0].get_texts()]
