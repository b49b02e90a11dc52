"""edgebench.comparison: runs side by side as ratios to the same device's native, beside the papers'.
Synthetic data folders in tmp_path (two devices, two dates), the papers' real reference CSVs, and
notebooks/compare.ipynb run headless (make compare: edgebench.drivers.compare) against a synthetic
data folder."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from edgebench.comparison.paper_ratios import paper_ratios, with_paper
from edgebench.comparison.ratios import (BASELINE, headline, headline_rows, key_columns_of, ratios_to_native,
                                         ruled_out, verdict)
from edgebench.comparison.runs import load_runs, runs_index, select_runs
from edgebench.comparison.side_by_side import blank_reasons, compare_runs
from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS
from edgebench.plotting import compare as plot
from edgebench.plotting.tables import NoData
from edgebench.reference import load_reference
from edgebench.results import CORE_COLUMNS, STATUSES
from matplotlib.patches import Rectangle

HTTP_COLUMNS = ["scenario", "endpoint", "network", "build", "cpus_applied"]
IOMT_COLUMNS = ["workload", "input_size", "entropy", "checksum"]


def write_run(data_dir, experiment, run_id, target, started_at, rows, *, status="completed", commit="abcdef0123",
              dirty=False, profile="quick", hostname="box", extra_columns=HTTP_COLUMNS):
    """A run folder as edgebench.results writes one: meta.json (with its rows counted by status,
    once the run ended) and results.csv."""
    run_dir = data_dir / experiment / run_id
    run_dir.mkdir(parents=True)
    columns = CORE_COLUMNS + extra_columns
    written = [{c: "" for c in columns} | dict(experiment=experiment, run_id=run_id, target=target, status="ok") | row
               for row in rows]
    with open(run_dir / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(written)
    statuses = [row["status"] for row in written]
    meta = {"experiment": experiment, "run_id": run_id, "status": status, "started_at": started_at,
            "ended_at": started_at, "parameters": {"profile": profile},
            "project": {"commit": commit, "dirty": dirty}, "target": {"target": target, "hostname": hostname}}
    if status != "running":
        meta["rows"] = {s: statuses.count(s) for s in STATUSES}
    (run_dir / "meta.json").write_text(json.dumps(meta))
    return run_dir


def http_rows(values: dict[tuple[str, str], list[float]], **extra) -> list[dict]:
    """{(app, runtime): [requests/s per repetition]} at the rich level, fair protocol."""
    rows = []
    for (app, runtime), reps in values.items():
        for rep, value in enumerate(reps, 1):
            rows.append(dict(app=app, runtime=runtime, protocol="fair", cpus=2, memory_mb=2048, rep=rep,
                             metric="requests_per_second", value=value, unit="req/s", status="ok", scenario="rich",
                             endpoint="/io", network="host" if runtime == "native" else "bridge",
                             cpus_applied=1.9 + rep / 100, **extra))
    return rows


@pytest.fixture
def fleet_data(tmp_path):
    """pi1 and pi2 (absolute numbers 10x apart, Docker's cost 20% and 10%), pi1 measured twice,
    its newest run interrupted; node-http was never run natively on pi1."""
    data = tmp_path / "data"
    write_run(data, "io_bound", "r-pi1-old", "pi@pi1", "2026-01-01T10:00:00.000+00:00",
              http_rows({("go-http", "native"): [1000, 1100, 900], ("go-http", "docker"): [800, 790, 5000],
                         ("node-http", "docker"): [300, 310]}), commit="1111111aaa")
    write_run(data, "io_bound", "r-pi1-new", "pi@pi1", "2026-02-01T10:00:00.000+00:00",
              http_rows({("go-http", "native"): [1000], ("go-http", "docker"): [500]}), status="interrupted",
              commit="2222222bbb", dirty=True)
    write_run(data, "io_bound", "r-pi2", "pi@pi2", "2026-01-15T10:00:00.000+00:00",
              http_rows({("go-http", "native"): [10000, 10000], ("go-http", "docker"): [9000, 9000]}),
              commit="2222222bbb")
    return data


# -- runs ----------------------------------------------------------------------------------

def test_index_lists_every_run_and_notes_an_unreadable_one(fleet_data):
    broken = write_run(fleet_data, "cpu_bound", "r-broken", "pi@pi1", "2026-01-01T00:00:00+00:00", [])
    (broken / "meta.json").write_text("{not json")
    (fleet_data / "io_bound" / "r-started").mkdir()  # no results.csv yet: no run (edgebench.results.run_dirs)
    (fleet_data / "reference").mkdir()  # not an experiment's folder
    index = runs_index(fleet_data)
    assert set(index["run_id"]) == {"r-pi1-old", "r-pi1-new", "r-pi2"}
    assert len(index.attrs["skipped"]) == 1 and "cpu_bound" in index.attrs["skipped"][0]
    new = index.set_index("run_id").loc["r-pi1-new"]
    assert new["status"] == "interrupted" and new["version"] == "2222222+dirty" and new["device"] == "pi@pi1"
    assert (new["rows_ok"], new["rows_failed"]) == (2, 0)
    assert index.set_index("run_id").loc["r-pi1-old", "profile"] == "quick"


def test_a_run_still_going_has_no_row_count_yet(tmp_path):
    # Its rows are counted when it ends (edgebench.results); until then the index says none, not 0.
    write_run(tmp_path, "io_bound", "r-1", "pi@pi1", "2026-01-01T00:00:00+00:00",
              http_rows({("go-http", "native"): [1000]}), status="running")
    (row,) = runs_index(tmp_path).to_dict("records")
    assert row["status"] == "running" and pd.isna(row["rows_ok"]) and pd.isna(row["rows_failed"])


def test_local_runs_of_two_machines_stay_apart(tmp_path):
    for host in ("lab-a", "lab-b"):
        write_run(tmp_path, "io_bound", f"r-{host}", "local", "2026-01-01T00:00:00+00:00", [], hostname=host)
    assert set(runs_index(tmp_path)["device"]) == {"local (lab-a)", "local (lab-b)"}


def test_a_fleet_files_device_name_is_the_runs_device(tmp_path):
    run = write_run(tmp_path, "io_bound", "r-1", "pi@10.0.0.5", "2026-01-01T00:00:00+00:00", [])
    meta = json.loads((run / "meta.json").read_text())
    (run / "meta.json").write_text(json.dumps(meta | {"device": "bench-pi"}))
    index = runs_index(tmp_path)
    assert list(index["device"]) == ["bench-pi"] and list(index["target"]) == ["pi@10.0.0.5"]


def test_latest_is_each_devices_newest_completed_run(fleet_data):
    index = runs_index(fleet_data)
    latest = select_runs(index, runs="latest")
    assert set(latest["run_id"]) == {"r-pi1-old", "r-pi2"}  # pi1's newer run was interrupted
    assert list(latest["label"]) == ["pi@pi1", "pi@pi2"]     # one run per device: the device names it
    every = select_runs(index, runs="all")
    assert set(every["run_id"]) == {"r-pi1-old", "r-pi2"}
    named = select_runs(index, runs="r-pi1-new,r-pi1-old")
    assert set(named["run_id"]) == {"r-pi1-new", "r-pi1-old"}  # named runs, whatever their status
    assert set(named["label"]) == {"pi@pi1 2026-01-01 10:00 1111111", "pi@pi1 2026-02-01 10:00 2222222+dirty"}
    assert set(select_runs(index, targets="pi@pi2")["run_id"]) == {"r-pi2"}
    # The columns follow TARGET's order (a user's "this board, then that one"), not the alphabet's.
    assert list(select_runs(index, targets="pi@pi2,pi@pi1")["label"]) == ["pi@pi2", "pi@pi1"]
    both = compare_runs(targets="pi@pi2,pi@pi1", data_dir=fleet_data)
    assert plot.column_order(both.ratios) == ["pi@pi2", "pi@pi1"] and "device(s): pi@pi2, pi@pi1." in both.summary()


@pytest.mark.parametrize("kwargs, message", [
    (dict(experiments="cpu_bound"), "no runs of cpu_bound.*runs exist of: io_bound"),
    (dict(targets="pi9"), "no runs on pi9.*pi@pi1"),
    (dict(runs="r-nope"), "no run r-nope"),
])
def test_a_selection_naming_nothing_says_what_exists(fleet_data, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        select_runs(runs_index(fleet_data), **kwargs)


# -- ratios --------------------------------------------------------------------------------

def test_ratio_is_median_over_median_within_device_and_run(fleet_data):
    index = runs_index(fleet_data)
    ratios = ratios_to_native(load_runs(select_runs(index)))
    assert BASELINE_NOT_IN(ratios)
    got = ratios.set_index(["run_id", "app"])
    # Medians, not means: docker's 5000 outlier on pi1 does not count.
    assert got.loc[("r-pi1-old", "go-http"), "ratio"] == pytest.approx(800 / 1000)
    assert got.loc[("r-pi2", "go-http"), "ratio"] == pytest.approx(0.9)
    assert got.loc[("r-pi1-old", "go-http"), "n"] == 3
    # Docker's `network` differs from native's (bridge vs host): native's only one is used, and said.
    assert got.loc[("r-pi1-old", "go-http"), "native_variant"] == "network=host"
    # node-http was never run natively there: no ratio, never 1.0, and why.
    node = got.loc[("r-pi1-old", "node-http")]
    assert np.isnan(node["ratio"]) and node["why"] == "native has no row at this point"
    assert ratios["key"].str.contains("scenario=rich").all()
    assert "cpus_applied" not in ratios.columns  # a reading, not a coordinate


def BASELINE_NOT_IN(ratios) -> bool:
    return BASELINE not in set(ratios["runtime"])


def test_a_native_that_failed_gives_no_ratio():
    rows = http_rows({("go-http", "docker"): [800.0]})
    rows += [dict(rows[0], runtime="native", value=np.nan, status="failed", error="start: OOM killed")]
    df = pd.DataFrame(rows).assign(experiment="io_bound", run_id="r", target="pi")
    (row,) = ratios_to_native(df).to_dict("records")
    assert np.isnan(row["ratio"]) and row["why"] == "native failed at this point"


def network_rows(points: dict[str, tuple[str, str, float]]) -> pd.DataFrame:
    """container_overhead's HTTP rows: the point names the runtime and its network mode."""
    rows = [dict(experiment="container_overhead", run_id="r", target="pi", app="go-http", runtime=rt,
                 protocol="fair", rep=1, metric="requests_per_second", value=v, unit="req/s", status="ok",
                 benchmark="network", operation="ab", load_tool="ab", point=point, network=net)
            for point, (rt, net, v) in points.items()]
    return pd.DataFrame(rows)


def test_a_runtimes_own_network_mode_is_compared_with_natives_only_one():
    df = network_rows({"native": ("native", "loopback", 1000.0), "docker (bridge)": ("docker", "bridge", 400.0),
                       "docker (host)": ("docker", "host network", 990.0)})
    got = ratios_to_native(df).set_index("point")
    assert got.loc["docker (bridge)", "ratio"] == pytest.approx(0.4)
    assert got.loc["docker (host)", "ratio"] == pytest.approx(0.99)
    assert got.loc["docker (host)", "native_variant"] == "network=loopback, point=native"
    # Two native variants: which one would be a guess, so there is none.
    two = pd.concat([df, network_rows({"native (2)": ("native", "other", 500.0)})])
    assert ratios_to_native(two)["ratio"].isna().all()


def test_dockers_network_mode_is_compared_with_native_which_has_none():
    # Services, home automation, face recognition: native's rows have no network_mode.
    rows = [dict(experiment="home_automation", run_id="r", target="pi", app="home-automation", runtime=rt,
                 protocol="fair", rep=1, metric="request_time", value=v, unit="ms", status="ok", network_mode=mode)
            for rt, mode, v in (("native", "", 0.1), ("docker", "bridge", 0.25), ("docker", "host", 0.1))]
    got = ratios_to_native(pd.DataFrame(rows)).set_index("network_mode")
    assert got.loc["bridge", "ratio"] == pytest.approx(2.5) and got.loc["host", "ratio"] == pytest.approx(1.0)
    paper = paper_ratios("home_automation").set_index("network_mode")["paper_ratio"]
    assert paper["bridge"] == pytest.approx(16.2 / 6.5) and paper["host"] == pytest.approx(9.1)
    face = paper_ratios("face_recognition").set_index("network_mode")["paper_ratio"]
    assert face["bridge"] == pytest.approx(900 / 320) and face["host"] == pytest.approx(320 / 110)


def test_a_container_far_ahead_of_native_on_compute_work_is_not_passed_on():
    """Docker's fair STREAM 1.42x native's (a broken native baseline, seen in a quick run) is
    blanked with the reason; Docker's HPC time 5% under native's is kept (within the spread)."""
    rows = [dict(experiment="container_overhead", run_id="r", target="pi", runtime=rt, protocol="fair", rep=1,
                 metric=metric, value=v, unit="", status="ok", benchmark=bench, operation=op, point="p")
            for rt, bench, op, metric, v in (("native", "memory", "triad", "best_rate", 10000.0),
                                             ("docker", "memory", "triad", "best_rate", 14200.0),
                                             ("native", "hpc", "ep", "time", 10.0),
                                             ("docker", "hpc", "ep", "time", 9.5))]
    got = ruled_out(ratios_to_native(pd.DataFrame(rows))).set_index("benchmark")
    assert np.isnan(got.loc["memory", "ratio"]) and "implausible: docker 42% ahead" in got.loc["memory", "why"]
    assert got.loc["hpc", "ratio"] == pytest.approx(0.95) and got.loc["hpc", "why"] == ""


def test_npb_times_a_few_hundredths_long_give_no_ratio():
    """NPB prints its time to 0.01 s: class S's 0.02 s against 0.03 s is the rounding's 1.5x, not
    a container 50% slower. Its class A seconds compare, and a 0.00 s native is no division."""
    rows = [dict(experiment="container_overhead", run_id="r", target="pi", runtime=rt, protocol="fair", rep=1,
                 metric="time", value=v, unit="s", status="ok", benchmark="hpc", operation="ft", npb_class=cls)
            for rt, cls, v in (("native", "S", 0.02), ("docker", "S", 0.03), ("native", "A", 4.10),
                               ("docker", "A", 4.20), ("native", "W", 0.0), ("docker", "W", 0.01))]
    got = ratios_to_native(pd.DataFrame(rows)).set_index("npb_class")
    assert np.isnan(got.loc["S", "ratio"]) and got.loc["S", "why"].startswith("too coarse: a median here is 0.02 s")
    assert "printed to 0.01 s" in got.loc["S", "why"] and "at least 1 s" in got.loc["S", "why"]
    assert np.isnan(got.loc["W", "ratio"]) and got.loc["W", "why"].startswith("too coarse")
    assert got.loc["A", "ratio"] == pytest.approx(4.2 / 4.1) and got.loc["A", "why"] == ""


def test_minimum_memory_meets_native_whatever_minimum_or_port_each_found():
    """Runs before the fix carried the minimum found as memory_mb, and each VM trial its own
    forwarded port: compare's minimum-memory panel was empty."""
    rows = [dict(experiment="min_memory", run_id="r", target="pi", app="go-http", runtime=rt, protocol="fair",
                 cpus=1.0, memory_mb=v, rep=1, metric="min_memory", value=v, unit="MiB", status="ok", network=None)
            for rt, v in (("native", 4.0), ("docker", 6.0), ("linux-vm", 96.0))]
    rows += [dict(rows[2], metric="ready_at_memory", value=1, unit="bool", memory_mb=256.0,
                  network=f"qemu user-mode (slirp), hostfwd tcp::{port}-:8080") for port in (18602, 18603)]
    got = ratios_to_native(pd.DataFrame(rows))
    found = got[got["metric"] == "min_memory"].set_index("runtime")["ratio"]
    assert found["docker"] == pytest.approx(1.5) and found["linux-vm"] == pytest.approx(24.0)
    trials = got[got["metric"] == "ready_at_memory"]
    assert len(trials) == 1 and trials["n"].iloc[0] == 2  # the two launches are one point


def test_a_count_of_zero_against_natives_is_a_ratio_not_a_crash():
    """make compare --metrics all stopped on 1/0: LXD's 0 major faults at ready against native's 8,
    beside container_overhead's rows (which bring the `benchmark` column sanity reads)."""
    rows = [dict(experiment="time_to_ready", run_id="r", target="pi", app="go-http", runtime=rt, protocol="fair",
                 rep=1, metric="major_faults_at_ready", value=v, unit="count", status="ok")
            for rt, v in (("native", 8.0), ("lxd", 0.0))]
    rows += [dict(experiment="container_overhead", run_id="r", target="pi", runtime=rt, protocol="fair", rep=1,
                  metric="time", value=1.0, unit="s", status="ok", benchmark="hpc", operation="ep")
             for rt in ("native", "docker")]
    got = ruled_out(ratios_to_native(pd.DataFrame(rows))).set_index("runtime")
    assert got.loc["lxd", "ratio"] == 0 and got.loc["lxd", "why"] == ""


def test_every_experiment_has_a_headline_metric():
    assert all(e.headline_metrics for e in EXPERIMENTS.values())


def test_what_a_papers_rule_fixes_is_a_coordinate_of_its_experiment():
    # A rule's coordinate outside its experiment's key_columns would be dropped from the paper's ratio.
    for e in EXPERIMENTS.values():
        assert e.key_columns[:4] == ("app", "protocol", "metric", "unit"), e.name
        for rule in e.paper_rules:
            assert set(rule.to) | set(rule.keys.values()) <= set(e.key_columns), (e.name, rule)
        for columns in e.results_in_keys.values():
            assert set(columns) <= set(e.key_columns), e.name


def test_one_experiments_coordinates_do_not_enter_anothers_points():
    """io_bound's load generator `threads` is a point of its sweep; iomt's rows beside it have
    none, and read as they do alone."""
    http = pd.DataFrame(http_rows({("go-http", "native"): [1000.0], ("go-http", "docker"): [800.0]}, threads=4))
    iomt = pd.DataFrame([dict(experiment="iomt", run_id="r", target="pi", app="iomt", workload="lzw", input_size="10KB",
                              runtime=rt, protocol="fair", rep=1, metric="end_to_end_latency", value=v, unit="s",
                              status="ok") for rt, v in (("native", 1.0), ("docker", 1.2))])
    both = ratios_to_native(pd.concat([http.assign(experiment="io_bound", run_id="r", target="pi"), iomt]))
    alone = ratios_to_native(iomt)
    assert list(both["experiment"]) == ["io_bound", "iomt"]
    assert both["key"].iloc[1] == alone["key"].iloc[0] == "iomt, fair, workload=lzw, input_size=10KB"
    assert both["threads"].tolist() == ["4", ""] and "threads=4" in both["key"].iloc[0]
    assert "threads" in key_columns_of("io_bound") and "threads" not in key_columns_of("iomt")


def test_an_emulated_vm_is_its_own_runtime():
    rows = http_rows({("go-http", "native"): [1000.0], ("go-http", "nanos"): [100.0]})
    df = pd.DataFrame(rows).assign(experiment="io_bound", run_id="r", target="pi",
                                   accelerator=["", "tcg"])
    assert list(ratios_to_native(df)["runtime"]) == ["nanos (TCG)"]


def test_headline_metrics_are_kept_only_where_they_mean_something():
    df = pd.DataFrame([dict(experiment="microbenchmarks", metric="total_time", protocol=p, benchmark="cpu")
                       for p in ("fair", "published")]
                      + [dict(experiment="microbenchmarks", metric="latency_max", protocol="fair", benchmark="cpu")])
    kept = headline_rows(df)
    # A fair run lasts a fixed time: its total time says nothing; the published points' does.
    assert kept[["metric", "protocol"]].values.tolist() == [["total_time", "published"]]


def test_verdict_reads_the_ratio_in_the_metrics_direction():
    rate, time = headline("io_bound", "requests_per_second"), headline("iomt", "end_to_end_latency")
    assert rate.higher_is_better and not time.higher_is_better
    assert verdict(0.8, rate) == "20% slower" and verdict(1.25, time) == "25% slower"
    assert verdict(0.8, time) == "20% faster" and verdict(3.0, time) == "3.0x slower"
    assert verdict(1.002, rate) == "as native" and verdict(np.nan, rate) == ""
    assert verdict(2.8, headline("static_footprint", "image_size")) == "2.8x larger"


# -- the papers' ratios (data/reference) ---------------------------------------------------

def paper_at(paper: pd.DataFrame, **where) -> pd.Series:
    sel = paper
    for k, v in where.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, sel
    return sel.iloc[0]


def test_paper_ratios_where_a_table_prints_both_runtimes():
    iomt = paper_ratios("iomt")  # Table 4: Docker 15 s vs native 10 s for LZW at 10 KB
    assert paper_at(iomt, workload="lzw", input_size="10KB", runtime="docker")["paper_ratio"] == pytest.approx(1.5)
    assert paper_at(iomt, workload="aes", input_size="100MB")["paper_ratio"] == pytest.approx(15.0)
    sysbench = paper_ratios("microbenchmarks")  # Table 2: 134 s vs 95 s, the published points
    row = paper_at(sysbench, benchmark="cpu", point="1MB / 10T")
    assert row["paper_ratio"] == pytest.approx(134 / 95) and row["protocol"] == "published"
    assert row["metric"] == "total_time" and row["qualifier"] == "exact"
    sizes = paper_ratios("static_footprint")
    assert paper_at(sizes, app="node-http", runtime="docker")["paper_ratio"] == pytest.approx(127 / 45)
    faults = paper_ratios("page_faults")  # perf counted the docker client: our published perf count
    assert paper_at(faults, workload="lzw", input_size="100MB")["paper_ratio"] == pytest.approx(6300 / 235000)
    assert set(faults["metric"]) == {"perf_page_faults"} and set(faults["protocol"]) == {"published"}


def test_paper_000_prints_no_native_number_so_it_gives_no_ratio():
    for exp in ("io_bound", "cpu_bound", "time_to_ready"):
        assert BASELINE not in set(load_reference(exp)["runtime"].dropna())
        assert paper_ratios(exp).empty


def test_printed_ratios_and_percentages():
    lxd = paper_ratios("lxd_appendix")
    cpu = paper_at(lxd, benchmark="cpu")  # "the 3x degradation" at 10,000 threads, printed
    assert cpu["paper_ratio"] == 3 and cpu["threads"] == "10000" and cpu["metric"] == "total_time"
    assert cpu["qualifier"] == "exact"  # the printed ratio, not 30 s / 10 s from the rounded prose
    memory = paper_at(lxd, benchmark="memory")  # "10-20% latency increase"
    assert (memory["paper_low"], memory["paper_high"]) == pytest.approx((1.10, 1.20))
    assert memory["qualifier"] == "range" and memory["paper_ratio"] == pytest.approx(1.15)
    assert "fileio" in set(lxd["benchmark"]) and len(lxd) == 3  # (b)'s plateau vs maximum is left out


def test_container_overhead_percentages_follow_the_metrics_direction():
    co = paper_ratios("container_overhead")
    # STREAM Add: "rise of 0.17%" in memory throughput; ab: a 23.9% overhead (less throughput).
    assert paper_at(co, metric="best_rate", operation="add")["paper_ratio"] == pytest.approx(1.0017)
    ab = paper_at(co, metric="requests_per_second")
    assert ab["paper_ratio"] == pytest.approx(0.761) and ab["point"] == "docker (bridge)"
    disk = paper_at(co, metric="throughput")
    assert disk["paper_ratio"] == pytest.approx(0.9847) and disk["operation"] == ""  # every operation
    assert set(co["metric"]) == {"throughput", "best_rate", "requests_per_second"}  # EP has no number; no EDP


def test_the_most_specific_paper_ratio_sits_beside_each_row():
    df = network_rows({"native": ("native", "loopback", 1000.0), "docker (bridge)": ("docker", "bridge", 400.0),
                       "docker (host)": ("docker", "host network", 990.0)})
    got = with_paper(ratios_to_native(df), paper_ratios("container_overhead"))
    got = got.set_index("point")
    assert got.loc["docker (bridge)", "paper_ratio"] == pytest.approx(0.761)
    assert np.isnan(got.loc["docker (host)", "paper_ratio"])  # the paper ran Docker's default bridge
    assert got.loc["docker (bridge)", "paper_source"].startswith("paper 003")


# -- what the notebook shows ---------------------------------------------------------------

def test_one_run_is_shown_and_said_to_have_nothing_beside_it(tmp_path):
    write_run(tmp_path, "io_bound", "r1", "pi@pi1", "2026-01-01T00:00:00+00:00",
              http_rows({("go-http", "native"): [1000], ("go-http", "docker"): [800]}))
    result = compare_runs(data_dir=tmp_path)
    assert "Nothing to compare side by side yet" in result.summary()
    assert result.ratios["ratio"].tolist() == [pytest.approx(0.8)]


def test_nothing_to_show_raises_before_any_figure(tmp_path):
    with pytest.raises(NoData, match="no runs under"):
        compare_runs(data_dir=tmp_path)
    write_run(tmp_path, "io_bound", "r1", "pi@pi1", "2026-01-01T00:00:00+00:00",
              http_rows({("go-http", "docker"): [800]}))
    with pytest.raises(NoData, match="no ratio to native"):
        compare_runs(data_dir=tmp_path)
    with pytest.raises(NoData, match="no completed run matches"):
        compare_runs(data_dir=tmp_path, profile="standard")


def test_table_has_a_column_per_device_and_the_papers_beside(fleet_data):
    result = compare_runs(data_dir=fleet_data)
    table = plot.compare_table(result.ratios)
    assert list(table.columns) == ["pi@pi1", "pi@pi2", plot.PAPER_COLUMN]
    go = table.xs("go-http, fair, scenario=rich, endpoint=/io, network=bridge, cpus=2, memory_mb=2048", level="at")
    assert go.loc[("io_bound", "requests_per_second", "docker"), "pi@pi1"] == pytest.approx(0.8)
    text = plot.compare_table(result.ratios, text=True)
    assert (text == "0.80, 20% slower").any().any() and (text == "0.90, 10% slower").any().any()


def test_figure_draws_one_bar_per_device_from_the_line_at_one(fleet_data):
    import matplotlib.pyplot as plt
    result = compare_runs(data_dir=fleet_data)
    fig = plot.compare_figure(result.ratios)
    (ax,) = [a for a in fig.axes if a.has_data()]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "docker"]
    assert len(bars) == 2
    assert sorted(round(b.get_y() + b.get_height(), 6) for b in bars) == [0.8, 0.9]
    assert all(b.get_y() == 1 for b in bars)
    assert any(list(line.get_ydata()) == [1, 1] for line in ax.get_lines())
    plt.close(fig)
    nan_only = result.ratios.assign(ratio=np.nan)
    with pytest.raises(NoData):
        plot.compare_figure(nan_only)


def test_the_papers_ratio_is_marked_in_the_figure(tmp_path):
    rows = [dict(app="iomt", workload="lzw", input_size="10KB", entropy="random", runtime=rt, protocol="fair",
                 rep=1, metric="end_to_end_latency", value=v, unit="s") for rt, v in (("native", 1.0), ("docker", 1.2))]
    write_run(tmp_path, "iomt", "r1", "pi@pi1", "2026-01-01T00:00:00+00:00", rows, extra_columns=IOMT_COLUMNS)
    result = compare_runs(data_dir=tmp_path)
    assert result.ratios["paper_ratio"].tolist() == [pytest.approx(1.5)]
    fig = plot.compare_figure(result.ratios)
    (ax,) = [a for a in fig.axes if a.has_data()]
    marks = [c for c in ax.collections if c.get_gid() == "docker" and len(c.get_offsets())]
    assert [list(c.get_offsets()[0]) for c in marks] == [[0, pytest.approx(1.5)]]


def test_a_level_clipped_to_a_smaller_device_lines_up_with_the_level_asked_for(tmp_path):
    """The papers' rich 2048 MB ran at 977 MB on a 1 GiB board: still the rich point, beside the others'."""
    write_run(tmp_path, "io_bound", "r-big", "pi@big", "2026-01-01T00:00:00+00:00",
              http_rows({("go-http", "native"): [100, 100], ("go-http", "docker"): [80, 80]}))
    small = http_rows({("go-http", "native"): [10, 10], ("go-http", "docker"): [5, 5]},
                      limits_note="memory 2048 MiB clipped to the target's 977")
    write_run(tmp_path, "io_bound", "r-small", "pi@small", "2026-01-01T00:00:00+00:00",
              [r | dict(memory_mb=977) for r in small], extra_columns=HTTP_COLUMNS + ["limits_note"])
    result = compare_runs(data_dir=tmp_path)
    table = plot.compare_table(result.ratios)
    assert table[["pi@big", "pi@small"]].notna().all(axis=1).tolist() == [True]
    assert table.index.get_level_values("at")[0].endswith("memory_mb=2048")
    assert any("named by the level asked for" in n for n in result.notes)


def test_the_asked_level_is_read_from_the_note_the_experiments_write():
    """asked_levels parses resolve_limits' words: a change to them must not quietly split the rows again."""
    from edgebench.comparison.ratios import asked_levels
    from edgebench.experiments.common import resolve_limits
    from edgebench.targets import LocalTarget
    facts = LocalTarget().facts()
    cpus, memory, note = resolve_limits(LocalTarget(), facts["cores"] + 6, facts["memory_mb"] + 2048)
    assert (cpus, memory) == (facts["cores"], facts["memory_mb"])
    asked = asked_levels(pd.DataFrame(dict(limits_note=[note, ""])))
    assert asked["cpus"].tolist() == [str(facts["cores"] + 6), ""]
    assert asked["memory_mb"].tolist() == [str(facts["memory_mb"] + 2048), ""]


def test_blank_points_are_said_by_kind_of_reason_not_each_one():
    """Each too-coarse point's reason names its own median: joined, 80 of them filled a page."""
    whys = [f"too coarse: a median here is 0.{i} s; under 1 s it is the rounding's" for i in range(80)]
    whys += ["native has no row at this point"] * 15 + ["implausible: docker 33% ahead of native"] * 3
    blank = pd.DataFrame(dict(experiment="x", runtime="docker", metric="time", key=[f"p{i}" for i in range(98)],
                              why=whys))
    text = blank_reasons(blank)
    assert text == ("80 too coarse (e.g. x docker time at p0: too coarse: a median here is 0.0 s; under 1 s it is "
                    "the rounding's); 15 native has no row at this point (e.g. x docker time at p80); "
                    "3 implausible (e.g. x docker time at p95: implausible: docker 33% ahead of native)")


def test_an_emulated_devices_times_are_pale_and_its_sizes_plain(tmp_path):
    """Its times and rates are QEMU's: beside a real device's they must not read as a board's."""
    import matplotlib.pyplot as plt
    rows = {"io_bound": http_rows({("go-http", "native"): [100, 100], ("go-http", "docker"): [80, 80]}),
            "static_footprint": [dict(app="go-http", runtime=rt, protocol="fair", rep=1, metric="image_size",
                                      value=v, unit="bytes") for rt, v in (("native", 4e6), ("docker", 7e6))]}
    for device, emulated in (("pi-arm64", True), ("pi@pi1", False)):
        for experiment, found in rows.items():
            run_dir = write_run(tmp_path, experiment, f"r-{experiment}-{emulated}", device,
                                "2026-01-01T00:00:00+00:00", found,
                                extra_columns=HTTP_COLUMNS if experiment == "io_bound" else [])
            if emulated:
                meta = json.loads((run_dir / "meta.json").read_text())
                meta["target"].update(emulated_device="emulated device (aarch64)", arch="aarch64")
                (run_dir / "meta.json").write_text(json.dumps(meta))
    result = compare_runs(data_dir=tmp_path)
    fig = plot.compare_figure(result.ratios)
    alphas = {}
    for ax in fig.axes:
        if ax.has_data():
            bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "docker"]
            alphas[ax.get_title().split(":")[0]] = sorted(round(b.get_facecolor()[3], 2) for b in bars)
    assert alphas == {"static_footprint": [1.0, 1.0], "io_bound": [plot.EMULATED_ALPHA, 1.0]}
    assert plot.EMULATOR_NOTE in [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    plt.close(fig)
    text = plot.findings(result.ratios)
    assert "on pi-arm64 (emulated aarch64) (the emulator's)" in text
    assert text.count("(the emulator's)") == 1  # io_bound's rate only, not the image size


@pytest.mark.slow
def test_make_compare_runs_the_notebook_headless(fleet_data, tmp_path):
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(fleet_data), EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"))
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.compare", "--quiet"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = tmp_path / "figures" / "compare"
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "compare.pdf").exists()
    cells = json.loads((out / "compare.ipynb").read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert not list(out.glob("*.partial.ipynb")) and not list(out.glob("*.failed.ipynb"))
    shown = json.dumps(outputs)
    assert "pi@pi2" in shown and "20% slower" in shown and "Nothing to compare" not in shown
    # A selection that matches nothing is refused before a kernel starts.
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.compare", "--quiet", "--targets", "pi9"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no runs on pi9" in r.stderr
