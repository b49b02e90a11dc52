"""What a review of a quick run with all seven runtimes found in the figures, each held here: home
automation's split shown for the sub-millisecond runtimes too (a log axis, the parts side by
side), face recognition's printed ratio being the one its bar shows, time to ready's figure sized
to its panels and worded for one launch, minimum memory's band in the axis's unit, and a panel the
figure promises saying why the run has nothing for it (services' nginx, microbenchmarks'
networking). Container overhead's are in test_container_overhead.py, first starts' in
test_first_start.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Polygon, Rectangle
from test_plotting import microbench_results, ttr_results

from edgebench.plotting import (face_recognition, home_automation, microbenchmarks, min_memory, services, style,
                                time_to_ready)
from edgebench.plotting.style import plt, times
from edgebench.reference import load_reference


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts_of(fig) -> str:
    return " ".join(" ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))).split())


# -- home automation: the split of a 0.3 ms request beside a 30 ms one ----------------------------

def _home_rows(plan) -> pd.DataFrame:
    rows = []
    for runtime, mode, sensor, handler, outside in plan:
        total = sensor + handler + outside
        parts = {"request_time": total, "sensor_per_request": sensor, "handler_rest_per_request": handler,
                 "outside_handler_per_request": outside, "throughput": 4000 / total, "latency_p99": 3 * total}
        rows += [dict(app="home-automation", runtime=runtime, network_mode=mode, protocol=protocol, rep=rep,
                      metric=metric, value=value, status="ok", sensor="simulated-dht11", accelerator=None)
                 for protocol in ("fair", "published") for rep in (1, 2, 3) for metric, value in parts.items()]
    return pd.DataFrame(rows)


HOME = (("native", "", 0.004, 0.002, 0.3), ("docker", "bridge", 0.005, 0.002, 0.5),
        ("docker", "host", 0.005, 0.002, 0.4), ("linux-vm", "", 0.02, 0.05, 30.0))


def test_home_automation_shows_each_runtimes_split_on_a_log_axis():
    """The review: on a linear axis up to linux-vm's 30 ms, native's 0.3 ms request and its
    sensor's 4 us were no visible bar at all, the split (the figure's point) invisible."""
    table = home_automation.latency_table(_home_rows(HOME))
    fig = home_automation.latency_figure(table)
    for ax in fig.axes:
        assert ax.get_yscale() == "log"
        low, high = ax.get_ylim()
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels == ["native", "docker (bridge)", "docker (host)", "linux-vm"]
        bars = [p for p in ax.patches if isinstance(p, Rectangle)]
        for x, (runtime, mode, *parts) in enumerate(HOME):
            near = sorted((b for b in bars if abs(b.get_x() + b.get_width() / 2 - x) < 0.45), key=lambda b: b.get_x())
            # Each part its own bar beside the others, its top at the part's value, inside the axis: a
            # part a thousandth of the slowest request's still spans a visible share of the panel.
            assert [b.get_height() for b in near] == pytest.approx(parts), (runtime, mode)
            for value in parts:
                assert low < value < high
                assert np.log10(value / low) / np.log10(high / low) > 0.05
        # The ratio to native above each runtime's line, readable (inside the panel).
        notes = {round(t.xy[0]): t.get_text() for t in ax.texts}
        assert notes[3] == times(table.set_index("label").loc["linux-vm", "vs_native"].iloc[0])
        assert all(t.xy[1] < high for t in ax.texts)
    assert "log" in fig.axes[0].get_ylabel()


# -- face recognition: the label is the bar's ratio ---------------------------------------------

def test_face_recognition_prints_the_ratio_its_bar_shows():
    """The review: "1.08x" over a bar 1.5x native's height: the label was the images' ratio
    (inference_time), the bar the whole run end to end (start, imports, enrolment, images)."""
    rows = []
    for runtime, mode, images_s, start_s in (("native", "", 2.0, 1.0), ("docker", "bridge", 2.16, 2.84)):
        for rep in (1, 2, 3):
            parts = {"startup_overhead": start_s, "import_time": 0.5, "enroll_time": 0.5, "inference_time": images_s,
                     "end_to_end_latency": start_s + 1.0 + images_s, "read_per_image": 2.0, "detect_per_image": 15.0,
                     "recognize_per_image": images_s * 10 - 17.0, "accuracy": 0.9, "detected_fraction": 1.0,
                     "cpu_utilization": 99.0, "max_rss": 90000}
            rows += [dict(app="face-recognition", runtime=runtime, network_mode=mode, protocol="fair", rep=rep,
                          metric=m, value=v, status="ok", images=100, dataset="built-in", predictions_sha256="aa",
                          accelerator=None) for m, v in parts.items()]
    table = face_recognition.face_table(pd.DataFrame(rows))
    docker = table.set_index("label").loc["docker (bridge)"]
    assert docker["vs_native"] == pytest.approx(1.08) and docker["end_to_end_vs_native"] == pytest.approx(1.5)
    fig = face_recognition.face_figure(table)
    ax = fig.axes[0]
    # What the bar shows, read off the drawn artists: the end-to-end line's height, and the stack's.
    lines = {round(np.mean(line.get_xdata())): line.get_ydata()[0] for line in ax.lines if len(line.get_xdata()) == 2}
    stacks = {}
    for p in ax.patches:
        stacks[round(p.get_x() + p.get_width() / 2)] = max(stacks.get(round(p.get_x() + p.get_width() / 2), 0),
                                                           p.get_y() + p.get_height())
    label = next(t.get_text() for t in ax.texts if round(t.xy[0]) == 1)
    assert label.split("\n")[0] == times(lines[1] / lines[0]) == "1.50x"
    assert stacks[1] / stacks[0] == pytest.approx(1.5, rel=0.02)
    assert "1.08x" not in texts_of(fig)
    assert "end to end against native" in " ".join(fig.get_suptitle().split())


# -- time to ready: the figure's size follows its panels ----------------------------------------

def test_time_to_ready_is_sized_to_its_panels_and_worded_for_one_launch():
    """The review: a small plot in a large blank canvas (a title far wider than its one panel),
    "box: quartiles" over single launches."""
    df = ttr_results(runtimes=["native", "docker"], protocols=("fair",))
    one = df[(df["app"] == "go-http") & (df["rep"] == 1)]
    fig = time_to_ready.ttr_figure(one, load_reference("time_to_ready"))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width = fig.get_figwidth() * fig.dpi
    assert fig.get_figwidth() == pytest.approx(5.2)
    assert fig._suptitle.get_window_extent(renderer).width <= width  # wrapped to the panel, not past it
    assert fig.get_tightbbox(renderer).width <= fig.get_figwidth() + 0.05
    panel = fig.axes[0].get_window_extent(renderer)
    assert panel.height / (fig.get_figheight() * fig.dpi) > 0.3, "the panel, not the title and legend, fills it"
    title = " ".join(fig.get_suptitle().split())
    assert "the one launch of each" in title and "quartiles" not in title
    assert not [p for p in fig.axes[0].patches if p.get_gid() in ("native", "docker")], "no box from one launch"
    # More runtimes, more panel rows: taller; with several launches, the box says of how many.
    eight = [f"r{k}" for k in range(6)] + ["native", "docker"]
    many = time_to_ready.ttr_figure(ttr_results(runtimes=eight, protocols=("fair",)).query("app == 'go-http'"),
                                    load_reference("time_to_ready"))
    assert many.get_figheight() - fig.get_figheight() == pytest.approx(0.3 * 6, abs=0.3)
    assert "box: quartiles of 5 launches" in " ".join(many.get_suptitle().split())


# -- minimum memory: the page's band in the axis's unit -----------------------------------------

def test_min_memory_draws_the_pages_band_in_mib_as_its_bars():
    """The page prints 2-6 MB; the bars and the axis are MiB: the band was drawn at 2-6 on a MiB axis."""
    rows = [dict(app="go-http", runtime="native", metric="min_memory", value=5.0, status="ok", bound="bisected",
                 accelerator=None, rep=1)]
    reference = load_reference("min_memory")
    fig = min_memory.min_memory_figure(min_memory.min_memory_table(pd.DataFrame(rows)), reference)
    ax = fig.axes[0]
    band = [p for p in ax.patches if isinstance(p, Polygon) or (isinstance(p, Rectangle) and p.get_alpha() == 0.15)]
    ys = np.asarray(band[0].get_path().transformed(band[0].get_patch_transform()).vertices)[:, 1] \
        if isinstance(band[0], Rectangle) else np.asarray(band[0].get_xy())[:, 1]
    low_mb, high_mb = min_memory.paper_range(reference)
    assert (ys.min(), ys.max()) == pytest.approx((low_mb * 1e6 / 2 ** 20, high_mb * 1e6 / 2 ** 20))
    assert "MiB" in ax.get_ylabel()
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert f"{low_mb:g}-{high_mb:g} MB = 1.9-5.7 MiB" in legend
    assert "(1.9-5.7 MiB" in min_memory.min_memory_findings(min_memory.min_memory_table(pd.DataFrame(rows)), reference)


# -- a panel the figure promises says why it is absent -------------------------------------------

def _redis_rows(**extra) -> list[dict]:
    return [dict(app="redis", test=test, protocol="fair", runtime=rt, network_mode=mode, rep=rep, metric="throughput",
                 value=value, status="ok", error="", accelerator=None, **extra)
            for test in ("get", "set") for rt, mode, value in (("native", "", 5e5), ("docker", "bridge", 3e5),
                                                                ("docker", "host", 4e5)) for rep in (1, 2)]


def test_services_say_why_nginx_has_no_panel_and_a_runtime_no_bar():
    rows = _redis_rows()
    table = services.throughput_table(pd.DataFrame(rows))
    said = texts_of(services.throughput_figure(table))
    assert "nginx (wrk -c30, 612-byte page) has no panel: this run has no rows for it" in said
    # Tried and failed: the reason, in plain words; a runtime without a bar in a drawn panel too.
    failed = [dict(r, app="nginx", test="static", value=np.nan, status="failed",
                   error="start: never ready in 20 s; log in /tmp/eb/raw/nginx.log") for r in rows[:2]]
    failed += [dict(rows[0], runtime="unikraft", network_mode="", value=np.nan, status="failed",
                    error="no Unikraft image of redis: EDGEBENCH_UNIKRAFT_IMAGES names none")]
    table = services.throughput_table(pd.DataFrame(rows + failed))
    said = texts_of(services.throughput_figure(table))
    assert "nginx (wrk -c30, 612-byte page) has no panel: no start served it, most often: start: never ready in 20 s" \
        in said
    assert "redis: unikraft has no bar, every start failed, most often: no Unikraft image of redis" in said
    assert "/tmp" not in said and "EDGEBENCH_" not in said


def test_microbenchmarks_say_why_the_networking_figure_is_absent():
    ref = load_reference("microbenchmarks")
    df = microbench_results()
    sysbench_only = df[df["benchmark"] != "network"]
    fig = microbenchmarks.sysbench_figure(microbenchmarks.sysbench_table(sysbench_only, ref))
    assert "Docker host vs bridge networking (iperf3) is not in this run: this run has no networking rows" \
        in texts_of(fig)
    net = microbenchmarks.network_table(sysbench_only, ref)
    assert net.empty and "Not in this run" in texts_of(microbenchmarks.network_figure(net))
    assert "not in this run" in microbenchmarks.network_findings(net)
    failed = df[df["benchmark"] == "network"].assign(status="failed", value=np.nan,
                                                      error="no iperf3 on the load generator local: install iperf3")
    net = microbenchmarks.network_table(pd.concat([sysbench_only, failed]), ref)
    assert "every iperf3 run failed, most often: no iperf3 on the load generator" in \
        texts_of(microbenchmarks.network_figure(net))
    # With the networking measured, no such note.
    assert "not in this run" not in texts_of(microbenchmarks.sysbench_figure(microbenchmarks.sysbench_table(df, ref)))


def test_docker_with_crun_keeps_its_own_host_and_bridge_bars():
    """Docker and Docker with crun both name their points "host" and "bridge": grouped by point
    alone, the two runtimes' runs were one median under Docker's name."""
    df = microbench_results()
    crun = df[(df["benchmark"] == "network") & (df["runtime"] == "docker")].assign(
        runtime="docker-crun", value=lambda d: d["value"] * 10)
    table = microbenchmarks.network_table(pd.concat([df, crun]), load_reference("microbenchmarks"))
    assert list(table["label"]) == ["native", "docker (host)", "docker (bridge)", "docker-crun (host)",
                                    "docker-crun (bridge)"]
    by = table.set_index("label")["throughput_Gbps"]
    assert by["docker-crun (host)"] == pytest.approx(10 * by["docker (host)"])
    fig = microbenchmarks.network_figure(table)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list(table["label"])
    bridge = [p for p in fig.axes[0].patches if p.get_hatch() == "//"]
    assert {p.get_gid() for p in bridge} == {"docker", "docker-crun"} and len(bridge) == 2
    assert style.runtime_colour("docker-crun") in {style.runtime_colour(p.get_gid()) for p in bridge}
    text = microbenchmarks.network_findings(table)
    assert "docker (bridge) vs docker (host)" in text and "docker-crun (bridge) vs docker-crun (host)" in text
