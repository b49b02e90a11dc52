"""Home automation (paper 001, Table 3): the service answers over TLS in every runtime with the
simulated DHT11 named in every row, and a request's latency splits into the sensor, the handler's
rest and everything outside it."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import need_tool
from edgebench.errors import ConfigError
from edgebench.experiments import home_automation as ha
from edgebench.results import load_results


def test_sensor_access_is_named_from_the_backend():
    assert ha.sensor_access("iio:/sys/bus/iio/devices/iio:device0").startswith("sysfs")
    assert ha.sensor_access("simulated-dht11").startswith("simulated")
    assert ha.sensor_access("") == "unknown"


def test_repetitions_protocols_and_limits_are_checked_when_the_record_is_made():
    assert ha.Params().reps == ha.REPETITIONS["standard"] and ha.Params(profile="smoke").reps == 1
    assert ha.Params(protocols="fair").protocol_names == ["fair"]
    with pytest.raises(ConfigError, match="unknown protocol 'fast'"):
        ha.Params(protocols="fast")
    with pytest.raises(ConfigError, match="repetitions=-1 must be at least 1"):
        ha.Params(repetitions=-1)
    with pytest.raises(ConfigError, match="memory='64' is not a size with a unit"):
        ha.Params(memory="64")


def test_plan_counts_docker_twice():
    work = ha.plan(ha.Params(profile="quick", repetitions=2, protocols="fair"), ["native", "docker"])
    assert work.points == 2 + 2 * 2 and work.seconds > 6 * ha.WRK_DURATION_S["quick"]


def test_table_splits_the_latency_and_compares_with_native():
    from edgebench.plotting.home_automation import latency_figure, latency_findings, latency_table
    from edgebench.reference import load_reference
    rows = []
    for runtime, mode, outside in (("native", "", 1.0), ("docker", "bridge", 3.0), ("docker", "host", 1.5)):
        parts = {"request_time": 2.0 + outside, "sensor_per_request": 1.8, "handler_rest_per_request": 0.2,
                 "outside_handler_per_request": outside, "throughput": 1000 / (2 + outside), "latency_p99": 30.0}
        for metric, value in parts.items():
            rows.append(dict(app="home-automation", runtime=runtime, network_mode=mode, protocol="fair", rep=1,
                             metric=metric, value=value, status="ok", sensor="simulated-dht11", accelerator=None))
    table = latency_table(pd.DataFrame(rows)).set_index("label")
    assert table.loc["docker (bridge)", "vs_native"] == pytest.approx(5.0 / 3.0)
    findings = latency_findings(table.reset_index(), load_reference(ha.EXPERIMENT))
    assert "docker (bridge) 5.00 ms (1.67x" in findings and "DHT11-Bridge" in findings
    assert latency_figure(table.reset_index()).axes


def test_the_service_answers_over_tls_natively_and_in_docker_with_its_latency_split(local, docker_ready,
                                                                                    cgroups_ready, wrk_ready,
                                                                                    no_leftovers):
    need_tool(local, "curl")
    run_dir = ha.run(ha.Params(runtimes="native,docker", repetitions=1, protocols="fair", profile="quick",
                               progress=False))
    df = load_results(run_dir)
    assert not (df["status"] == "failed").any(), df[df["status"] == "failed"][["runtime", "metric", "error"]]
    rps = df[df["metric"] == "throughput"]
    assert {(r.runtime, r.network_mode if isinstance(r.network_mode, str) else "") for r in rps.itertuples()} == {
        ("native", ""), ("docker", "bridge"), ("docker", "host")}
    assert (rps["value"] > 0).all() and set(rps["sensor"]) == {"simulated-dht11"}
    assert set(rps["sensor_access"]) == {"simulated (no DHT11 on the target)"}
    def by(metric):
        return df[df["metric"] == metric]["value"]

    assert (by("errors") == 0).all()
    # Most requests get the kept reading; a fresh read (22 ms) every 2 s keeps the mean sensor time
    # above zero and below one read.
    assert ((by("sensor_per_request") > 0) & (by("sensor_per_request") < 22)).all()
    assert (by("fresh_sensor_reads") >= 2).all() and (by("outside_handler_per_request") > 0).all()
    # The parts add up to the request's time (connections / throughput of wrk's closed loop).
    parts = by("sensor_per_request").values + by("handler_rest_per_request").values + \
        by("outside_handler_per_request").values
    assert parts == pytest.approx(by("request_time").values)
    assert by("request_time").values == pytest.approx(ha.CONNECTIONS / rps["value"].values * 1000)


def test_the_service_answers_over_tls_in_lxd(local, lxd_ready, cgroups_ready, wrk_ready, no_leftovers):
    run_dir = ha.run(ha.Params(runtimes="lxd", repetitions=1, protocols="fair", profile="quick", progress=False))
    df = load_results(run_dir)
    rps = df[df["metric"] == "throughput"]
    assert len(rps) == 1 and (rps["status"] == "ok").all() and (rps["value"] > 0).all(), df["error"].dropna().tolist()
    assert set(rps["sensor"]) == {"simulated-dht11"}
