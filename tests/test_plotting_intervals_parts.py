"""Figures that stack the medians of a time's parts (boot phases, a request's parts, a face
recognition run's parts) or draw one median per bar (the VMM/guest split) draw the interval of
the whole beside it: the 95% CI of the median from three runs, both runs of two, nothing for
one. The synthetic results are built like the experiments' own tests build them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from edgebench.claims import median_interval
from edgebench.plotting import boot_time, face_recognition, home_automation, tables
from edgebench.plotting.style import plt
from edgebench.reference import load_reference
from test_boot_time import PC, _rows as boot_rows


def whiskers(ax, horizontal: bool = False) -> dict[float, tuple[float, float]]:
    """Position (x of a vertical whisker, y of a horizontal one) -> its ends, over every errorbar."""
    out = {}
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            for segment in container.lines[2][0].get_segments():
                (x0, y0), (x1, y1) = segment
                out[round(float(y0 if horizontal else x0), 6)] = (min(x0, x1), max(x0, x1)) if horizontal \
                    else (min(y0, y1), max(y0, y1))
    return out


def expected(values) -> tuple[float, float]:
    """What the whisker should span: the CI from 3 values, lowest to highest of 2."""
    v = pd.Series(values, dtype=float)
    return median_interval(v.to_numpy()) if len(v) >= 3 else (v.min(), v.max())


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_interval_is_the_ci_from_three_runs_both_runs_of_two_and_none_for_one():
    five = [10.0, 12.0, 11.0, 15.0, 9.0]
    assert tables.interval(five) == pytest.approx(median_interval(np.array(five)))
    assert tables.interval([10.0, 14.0]) == pytest.approx((10.0, 14.0))
    assert all(np.isnan(tables.interval([10.0])))


# -- boot time ---------------------------------------------------------------------------

def _boot_df() -> tuple[pd.DataFrame, dict[str, list[float]]]:
    """native: 5 starts, linux-vm pc (TCG): 4, nanos: 2 (both runs), docker: 1 (no whisker);
    each start's phases add up to its time to ready."""
    rng = np.random.default_rng(3)
    rows, totals = [], {}
    plan = {("native", ""): ({"launch": 0.0, "listen": 3.0, "ready": 3.5}, 5),
            ("linux-vm", "pc"): (PC, 4), ("nanos", ""): ({"launch": 0.0, "listen": 1500.0, "ready": 1640.0}, 2),
            ("docker", ""): ({"launch": 0.0, "listen": 400.0, "ready": 420.0}, 1)}
    for key, (events, starts) in plan.items():
        for rep in range(1, starts + 1):
            scale = float(rng.lognormal(0, 0.15))
            scaled = {e: t * scale for e, t in events.items()}
            rows += [dict(r, rep=rep) for r in boot_rows({key: scaled}, accelerator="tcg" if key[1] else None)]
            totals.setdefault(key, []).append(scaled["ready"])
    names = {("native", ""): "native", ("linux-vm", "pc"): "linux-vm (TCG) pc", ("nanos", ""): "nanos",
             ("docker", ""): "docker"}
    return pd.DataFrame(rows), {names[k]: v for k, v in totals.items()}


def test_boot_phases_draw_the_interval_of_each_starts_total():
    df, totals = _boot_df()
    table = boot_time.phase_table(df)
    native = table[table["variant"] == "native"].iloc[0]
    assert native["total_ms"] == pytest.approx(np.median(totals["native"]))
    assert (native["total_low_ms"], native["total_high_ms"]) == pytest.approx(expected(totals["native"]))
    fig = boot_time.boot_phases_figure(table)
    ax = fig.axes[0]
    variants = [t.get_text() for t in ax.get_yticklabels()]
    drawn = whiskers(ax, horizontal=True)
    for name in ("native", "linux-vm (TCG) pc", "nanos"):
        assert drawn[variants.index(name)] == pytest.approx(expected(totals[name])), name
    assert variants.index("docker") not in drawn  # one start: no spread to draw
    assert "95% CI" in ax.get_xlabel() and "lowest to highest for 2" in ax.get_xlabel()
    # The total is written past the whisker, not under it.
    texts = {round(t.get_position()[1]): t.get_position()[0] for t in ax.texts}
    for y, (_, high) in drawn.items():
        assert texts[round(y)] >= high


def test_the_vm_split_draws_the_measured_interval_and_none_for_the_papers_values():
    df, _ = _boot_df()
    vm = df[df["runtime"] == "linux-vm"]
    split = boot_time.split_table(df, load_reference("boot_time"))
    fig = boot_time.split_figure(split)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    drawn = whiskers(ax, horizontal=True)
    row = labels.index("measured: linux-vm (TCG) pc")
    for offset, metric in zip((-0.2, 0.0, 0.2), ("vmm_part", "guest_part", "total_boot")):
        values = vm[(vm["metric"] == metric) & (vm["status"] == "ok")]["value"].astype(float)
        assert len(values) == 4
        assert drawn[round(row + offset, 6)] == pytest.approx(expected(values)), metric
    assert len(drawn) == 3  # the page's rows are single published values: no whisker
    paper = split[split["source"] == "paper 002"]
    assert paper["low_ms"].isna().all() and paper["high_ms"].isna().all()
    assert "95% CI" in ax.get_xlabel()


# -- home automation and face recognition: stacked parts with the total's line ------------------

HOME_PLAN = (("native", "", 1.0, 5), ("docker", "bridge", 3.0, 4), ("docker", "host", 1.5, 2), ("lxd", "", 2.0, 1))


def _home_df() -> tuple[pd.DataFrame, dict[str, list[float]]]:
    rng = np.random.default_rng(5)
    rows, totals = [], {}
    for runtime, mode, outside, reps in HOME_PLAN:
        lab = f"{runtime} ({mode})" if mode else runtime
        for rep in range(1, reps + 1):
            o = outside * float(rng.lognormal(0, 0.2))
            parts = {"request_time": 2.0 + o, "sensor_per_request": 1.8, "handler_rest_per_request": 0.2,
                     "outside_handler_per_request": o, "throughput": 1000 / (2 + o), "latency_p99": 30.0}
            totals.setdefault(lab, []).append(parts["request_time"])
            for metric, value in parts.items():
                rows.append(dict(app="home-automation", runtime=runtime, network_mode=mode, protocol="fair", rep=rep,
                                 metric=metric, value=value, status="ok", sensor="simulated-dht11", accelerator=None))
    return pd.DataFrame(rows), totals


def _face_df() -> tuple[pd.DataFrame, dict[str, list[float]]]:
    rng = np.random.default_rng(9)
    rows, totals = [], {}
    for runtime, mode, images_s, reps in (("native", "", 1.0, 5), ("docker", "bridge", 1.5, 3),
                                          ("docker", "host", 1.2, 2), ("lxd", "", 1.1, 1)):
        lab = f"{runtime} ({mode})" if mode else runtime
        for rep in range(1, reps + 1):
            s = images_s * float(rng.lognormal(0, 0.2))
            totals.setdefault(lab, []).append(s + 2)
            for metric, value in {"end_to_end_latency": s + 2, "inference_time": s, "read_per_image": 1.0,
                                  "detect_per_image": 8.0, "recognize_per_image": 1.0, "enroll_time": 0.5,
                                  "import_time": 0.4, "startup_overhead": 0.6, "accuracy": 0.9,
                                  "detected_fraction": 0.95, "cpu_utilization": 99.0, "max_rss": 90000}.items():
                rows.append(dict(app="face-recognition", runtime=runtime, network_mode=mode, protocol="fair",
                                 rep=rep, metric=metric, value=value, status="ok", images=100, dataset="built-in",
                                 predictions_sha256="aa", accelerator=None))
    return pd.DataFrame(rows), totals


def _check_stacked(fig, table: pd.DataFrame, total: str, totals: dict[str, list[float]]) -> None:
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == list(table["label"])
    drawn = whiskers(ax)
    for name, values in totals.items():
        x = labels.index(name)
        if len(values) == 1:
            assert x not in drawn, f"{name}: one run, no whisker"
            continue
        assert drawn[x] == pytest.approx(expected(values)), name
        r = table.set_index("label").loc[name]
        assert (r[f"{total}_low"], r[f"{total}_high"]) == pytest.approx(expected(values))
        assert r[total] == pytest.approx(np.median(values))
        # The whisker sits on the total's line: the line's median lies within it.
        assert drawn[x][0] <= r[total] <= drawn[x][1]
    # Notes (the ratio to native) sit above the whisker's top, inside the panel.
    assert any(round(text.xy[0]) in drawn for text in ax.texts)
    for text in ax.texts:
        x, y = text.xy
        if round(x) in drawn:
            assert y >= drawn[round(x)][1]
        assert y < ax.get_ylim()[1]
    title = " ".join(fig.get_suptitle().split())  # wrapped to the figure's width
    assert "95% CI" in title and "lowest to highest for 2 runs" in title


def test_home_automation_draws_the_interval_of_the_mean_latency_on_its_line():
    df, totals = _home_df()
    table = home_automation.latency_table(df)
    _check_stacked(home_automation.latency_figure(table), table, "mean_ms", totals)


def test_face_recognition_draws_the_interval_of_the_end_to_end_time_on_its_line():
    df, totals = _face_df()
    table = face_recognition.face_table(df)
    _check_stacked(face_recognition.face_figure(table), table, "end_to_end_latency", totals)


def test_one_run_each_draws_no_whisker_but_still_the_bars():
    df, _ = _home_df()
    one = df[df["rep"] == 1]
    fig = home_automation.latency_figure(home_automation.latency_table(one))
    assert not whiskers(fig.axes[0]) and fig.axes[0].patches
    df, _ = _boot_df()
    fig = boot_time.boot_phases_figure(boot_time.phase_table(df[df["rep"] == 1]))
    assert not whiskers(fig.axes[0], horizontal=True)
