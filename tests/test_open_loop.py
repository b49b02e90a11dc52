"""Open-loop load: the tools' reports parsed into the one LoadReport, rates and settings checked
before anything starts, the keeps-up rule, and each tool present here run for real against the
native Go app, including a stall the open-loop latency must show."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import free_port, need
from edgebench.apps import APPS, place_app
from edgebench.errors import ConfigError, MissingTool
from edgebench.experiments.http_load import open_loop_settings
from edgebench.plotting.http_load import open_loop_table
from edgebench.runtimes import Limits, NativeRuntime
from edgebench.tools.load import LOAD_PROFILES
from edgebench.tools.open_loop import (OPEN_LOOP_GENERATORS, OpenLoopSettings, offered_rates, open_loop_generator,
                                       parse_oha, parse_openloop, parse_rates, parse_wrk2)

DATA = Path(__file__).parent / "data"

# wrk2's report with --latency, in the layout its README shows (no wrk2 here to record one).
WRK2_OUTPUT = """Running 30s test @ http://127.0.0.1:8080/io
  2 threads and 100 connections
  Thread calibration: mean lat.: 1.234ms, rate sampling interval: 10ms
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.20ms  640.00us   9.98ms   70.11%
    Req/Sec     1.05k   120.00     1.60k    80.00%
  Latency Distribution (HdrHistogram - Recorded Latency)
 50.000%    1.10ms
 75.000%    1.50ms
 90.000%    2.00ms
 99.000%    3.37ms
 99.900%    5.19ms
 99.990%    6.50ms
 99.999%    7.06ms
100.000%    9.98ms

  Detailed Percentile spectrum:
       Value   Percentile   TotalCount 1/(1-Percentile)

       0.100     0.000000            1         1.00
#[Mean    =        1.200, StdDeviation   =        0.640]
  59998 requests in 30.00s, 7.02MB read
  Socket errors: connect 0, read 2, write 0, timeout 5
  Non-2xx or 3xx responses: 3
Requests/sec:   1999.93
Transfer/sec:    239.71KB
"""


def test_oha_json_recorded_here():
    text = (DATA / "oha-1.16.0-500rps.json").read_text()
    r = parse_oha(text, "oha ...", offered_rps=500)
    assert r.requests == 1000 and r.error_count == 0 and r.offered_rps == 500
    assert r.requests_per_second == pytest.approx(499.79, abs=0.01)
    assert r.latency_us["p50"] == pytest.approx(130.104) and r.latency_us["p99_9"] == pytest.approx(597.44)
    assert r.latency_us["p50"] <= r.latency_us["p90"] <= r.latency_us["p99"] <= r.latency_us["max"]
    broken = json.loads(text)
    broken["statusCodeDistribution"] = {"200": 990, "503": 6}
    broken["errorDistribution"] = {"connection timed out": 3, "connection refused (connect)": 1,
                                   "aborted due to deadline": 4}
    r = parse_oha(json.dumps(broken))
    assert r.errors == {"status": 6, "timeout": 3, "connect": 1, "other": 0} and r.requests == 1000


def test_wrk2_report():
    r = parse_wrk2(WRK2_OUTPUT, "wrk2 ...", offered_rps=2000)
    assert r.requests == 59998 and r.duration_us == 30_000_000
    assert r.requests_per_second == pytest.approx(1999.93)
    assert r.latency_us["p50"] == pytest.approx(1100) and r.latency_us["p99_9"] == pytest.approx(5190)
    assert r.latency_us["max"] == pytest.approx(9980) and r.latency_us["stdev"] == pytest.approx(640)
    assert r.errors == {"connect": 0, "read": 2, "write": 0, "timeout": 5, "status": 3}


def test_reports_without_numbers_are_errors_not_zeros():
    from edgebench.errors import EdgebenchError
    for parse in (parse_oha, parse_wrk2, parse_openloop):
        with pytest.raises(EdgebenchError, match="no"):
            parse("connection refused", "cmd")


def test_rates_and_settings_are_checked_before_anything_starts():
    assert parse_rates("25%, 50%,1500") == ("25%", "50%", "1500")
    for bad in ("fast", "0%", "250%", "-5", ""):
        with pytest.raises(ConfigError):
            parse_rates(bad)
    assert offered_rates(("50%", "100%", "300"), 1000.0) == [(500.0, 0.5), (1000.0, 1.0), (300.0, 0.3)]
    assert offered_rates(("50%",), None) == []   # a share needs a saturation throughput
    closed = LOAD_PROFILES["quick"]
    assert open_loop_settings("quick", "none", "", None, closed) is None
    s = open_loop_settings("standard", "auto", "10%,20%", 7, closed)
    assert s.rates == ("10%", "20%") and s.duration_s == 7 and s.connections == closed.connections
    with pytest.raises(ConfigError, match="'ab'"):
        open_loop_settings("quick", "ab", "", None, closed)
    with pytest.raises(ConfigError, match="open_loop_duration_s"):
        open_loop_settings("quick", "auto", "", "x", closed)


def test_keeping_up_needs_the_rate_served_and_p99_under_the_bound():
    import pandas as pd
    base = dict(experiment="io_bound", scenario="constrained", cpus=1.0, memory_mb=64.0, app="go-http",
                runtime="native", protocol="fair", status="ok", error="", load_tool="openloop", unit="ms")
    rows = []
    for offered, achieved, p99 in ((100.0, 100.0, 5.0), (200.0, 150.0, 5.0), (300.0, 299.0, 500.0)):
        rows += [dict(base, offered_rps=offered, metric="ol_achieved_rps", value=achieved),
                 dict(base, offered_rps=offered, metric="ol_latency_p99", value=p99),
                 dict(base, offered_rps=offered, metric="ol_latency_p50", value=1.0)]
    t = open_loop_table(pd.DataFrame(rows), p99_bound_ms=100)
    assert list(t["keeps_up"]) == [True, False, False]
    assert "served 150 of 200" in t["why"].iloc[1] and "p99 500.0 ms > 100 ms" in t["why"].iloc[2]


def test_auto_finds_a_tool_and_a_named_missing_one_says_how_to_install_it(local):
    assert open_loop_generator(local, "none") is None
    assert open_loop_generator(local, "auto").name in OPEN_LOOP_GENERATORS
    if not OPEN_LOOP_GENERATORS["wrk2"].find(local):
        with pytest.raises(MissingTool, match="wrk2"):
            open_loop_generator(local, "wrk2")


# -- for real ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def go_app():
    from edgebench.targets import LocalTarget
    target = LocalTarget()
    rt = NativeRuntime(target, "openloop")
    artifact = rt.package(place_app(target, APPS["go-http"]))
    instance, _ = rt.start(artifact, Limits(), free_port())
    yield instance
    rt.cleanup()


def generator(local, name):
    cls = OPEN_LOOP_GENERATORS[name]
    program = cls.find(local)
    need(name, None if program else f"no {name} on this machine: {cls.install_hint}")
    return cls(local, program)


@pytest.mark.parametrize("name", list(OPEN_LOOP_GENERATORS))
def test_a_rate_well_below_saturation_is_served_on_schedule(name, local, go_app, no_leftovers):
    gen = generator(local, name)
    r = gen.run_at_rate(f"{go_app.url}/io", 400, OpenLoopSettings(("400",), duration_s=3, connections=8))
    assert r.error_count == 0
    assert r.requests_per_second == pytest.approx(400, rel=0.05), r.stdout[-500:]
    lat = r.latency_us
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["p50"] < 20_000, "an idle local app answers /io in well under 20 ms"


@pytest.mark.parametrize("name", list(OPEN_LOOP_GENERATORS))
def test_a_stall_shows_in_the_open_loop_tail(name, local, go_app, no_leftovers):
    """The app is stopped (SIGSTOP) for 600 ms in the middle of a 3 s run at 200 req/s: 120 of
    the 600 requests fall due during the stall and wait from 0 to 600 ms, so the slowest 10%
    wait about 300 ms or more (p90 >= 150 ms with a margin), while p50 stays that of an idle
    server. A closed-loop tool would have paused its sending instead."""
    gen = generator(local, name)
    stall_s = 0.6

    def stall():
        time.sleep(1.2)
        os.kill(go_app.pid, signal.SIGSTOP)
        time.sleep(stall_s)
        os.kill(go_app.pid, signal.SIGCONT)

    t = threading.Thread(target=stall)
    t.start()
    try:
        r = gen.run_at_rate(f"{go_app.url}/io", 200, OpenLoopSettings(("200",), duration_s=3, connections=8))
    finally:
        t.join()
        os.kill(go_app.pid, signal.SIGCONT)
    assert r.latency_us["max"] >= 0.75 * stall_s * 1e6, r.latency_us
    assert r.latency_us["p90"] >= 150_000, r.latency_us
    assert r.latency_us["p50"] < 50_000, r.latency_us
