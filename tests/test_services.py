"""Off-the-shelf services (paper 002, Figs. 5 and 6): redis-benchmark's report parsed, a stalled
server failing instead of hanging, nginx's fixed port refused when taken, the table against native,
and real Redis and nginx natively and in Docker (host and bridge)."""

from __future__ import annotations

import socket
import threading
import time

import pandas as pd
import pytest
from conftest import need
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import services as sv
from edgebench.results import load_results
from edgebench.tools.load import RedisBenchmark, parse_redis_benchmark, redis_benchmark_command

# redis-benchmark 7.0.15 --csv, as printed here.
REPORT = ('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",'
          '"max_latency_ms"\n'
          '"SET","512820.50","0.769","0.224","0.591","2.175","2.671","2.999"\n'
          '"GET","740740.75","0.493","0.096","0.463","0.847","1.255","1.879"\n')


def test_the_csv_report_becomes_one_load_report_per_test():
    reports = parse_redis_benchmark(REPORT, 20000, "redis-benchmark ...")
    assert set(reports) == {"get", "set"}
    get = reports["get"]
    assert get.requests_per_second == 740740.75 and get.latency_us["p99"] == pytest.approx(1255)
    assert get.latency_us["mean"] == pytest.approx(493) and get.duration_us == int(20000 / 740740.75 * 1e6)
    with pytest.raises(EdgebenchError, match="no CSV report with percentiles"):
        parse_redis_benchmark("SET: 1000.00 requests per second\n", 100)


def test_command_is_the_pages_and_refuses_nonsense():
    argv = redis_benchmark_command("10.0.0.2", 6380, connections=30, requests=100000, pipeline=16, cpuset="1")
    assert argv == ["taskset", "-c", "1", "redis-benchmark", "-h", "10.0.0.2", "-p", "6380", "-c", "30", "-n", "100000",
                    "-P", "16", "-t", "get,set", "--csv"]
    with pytest.raises(ConfigError, match="requests >= connections"):
        redis_benchmark_command("h", 1, connections=30, requests=10, pipeline=16)


def test_a_server_that_never_answers_fails_with_the_reason_instead_of_hanging(local):
    need("redis-benchmark",
         None if local.which("redis-benchmark") else "no redis-benchmark (apt-get install redis-tools)")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    held = []
    stop = threading.Event()

    def accept_and_say_nothing():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept_and_say_nothing, daemon=True)
    t.start()
    try:
        started = time.monotonic()
        with pytest.raises(EdgebenchError, match="did not finish 100 requests per test in 3 s"):
            RedisBenchmark(local).run("127.0.0.1", port, connections=2, requests=100, pipeline=1, limit_s=3)
        assert time.monotonic() - started < 20
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        listener.close()


def test_unknown_services_are_refused_before_anything_starts():
    with pytest.raises(ConfigError, match="services apache unknown; choose from redis, nginx"):
        sv.Params(runtimes="native", services="apache", profile="quick")


def test_limits_are_checked_when_the_record_is_made():
    with pytest.raises(ConfigError, match="memory='256' is not a size with a unit; write e.g. '256m'"):
        sv.Params(memory="256")
    with pytest.raises(ConfigError, match="cpus='one' is not a number"):
        sv.Params(cpus="one")
    assert sv.Params(repetitions=0).reps == sv.REPETITIONS["standard"]
    assert sv.Params().service_names == ["redis", "nginx"]


def test_plan_counts_every_runtime_that_serves_and_docker_twice():
    # Nanos runs Debian's redis-server as an ELF program; Docker once per network mode.
    work = sv.plan(sv.Params(profile="quick", repetitions=1, services="redis"), ["native", "docker", "nanos"])
    assert work.runtimes == ["native", "docker", "nanos"] and work.points == 2 * (1 + 2 + 1)
    # linux-vm serves Debian's binaries from its initramfs.
    vm = sv.plan(sv.Params(profile="quick", repetitions=1, services="redis"), ["native", "linux-vm"])
    assert vm.runtimes == ["native", "linux-vm"]
    both = sv.plan(sv.Params(profile="quick", repetitions=1), ["native", "docker", "nanos"])
    assert both.points == 2 * work.points and both.apps == ["redis", "nginx"]
    # nginx's points last wrk's duration: at least 2 protocols x 3 points x 5 s more.
    assert both.seconds - work.seconds >= 2 * 3 * sv.WRK_DURATION_S["quick"]


def test_the_page_is_612_bytes_and_nginx_serves_it_from_its_own_folder(local, no_leftovers):
    """The same configuration natively: the page the Unikraft page's Fig. 6 serves, byte for byte."""
    import urllib.request

    from edgebench.apps import APPS, place_app
    from edgebench.runtimes.native import NativeRuntime
    need("nginx", None if local.which("nginx") else "no nginx (apt-get install nginx)")
    built = place_app(local, APPS["nginx"])
    assert built.data_dir and (APPS["nginx"].source_dir / "html" / "index.html").stat().st_size == 612
    rt = NativeRuntime(local, "svc-nginx")
    try:
        inst, _ = rt.start(rt.package(built), sv.Limits(cpus=1), APPS["nginx"].container_port, timeout_s=20)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{inst.port}/index.html", timeout=5) as r:
                assert r.status == 200 and len(r.read()) == 612
        finally:
            rt.stop(inst)
    finally:
        rt.cleanup()


def test_a_taken_fixed_port_is_refused_before_anything_starts(local, no_leftovers):
    from edgebench.apps import APPS, place_app
    from edgebench.runtimes.native import NativeRuntime
    need("nginx", None if local.which("nginx") else "no nginx (apt-get install nginx)")
    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    taken.bind(("127.0.0.1", APPS["nginx"].container_port))
    taken.listen(1)
    rt = NativeRuntime(local, "svc-port")
    try:
        with pytest.raises(ConfigError, match="listens on port 18480, which its configuration names"):
            rt.start(rt.package(place_app(local, APPS["nginx"])), sv.Limits(), APPS["nginx"].container_port)
    finally:
        taken.close()
        rt.cleanup()


def test_table_is_relative_to_native_per_test_and_protocol():
    from edgebench.plotting.services import services_findings, throughput_figure, throughput_table
    from edgebench.reference import load_reference
    rows = []
    for runtime, mode, get in (("native", "", 800.0), ("docker", "host", 600.0), ("docker", "bridge", 400.0)):
        for rep in (1, 2):
            rows.append(dict(app="redis", test="get", protocol="fair", runtime=runtime, network_mode=mode, rep=rep,
                             metric="throughput", value=get + rep, status="ok", accelerator=None))
            rows.append(dict(app="redis", test="get", protocol="fair", runtime=runtime, network_mode=mode, rep=rep,
                             metric="latency_p99", value=1.0 * rep, status="ok", accelerator=None))
    table = throughput_table(pd.DataFrame(rows)).set_index("label")
    assert list(table.index) == ["native", "docker (bridge)", "docker (host)"]
    assert table.loc["docker (bridge)", "vs_native"] == pytest.approx(401.5 / 801.5)
    assert table.loc["native", "p99_ms"] == 1.5 and table.loc["native", "runs"] == 2
    assert pd.isna(table.loc["docker (bridge)", "vs_native_ci95_low"])  # two runs give no interval
    findings = services_findings(table.reset_index(), load_reference("services"))
    # one test: no name and "1.3-1.8x the throughput of container" in findings
    assert "docker (bridge) 0.50x" in findings
    assert throughput_figure(table.reset_index()).axes


def test_redis_and_nginx_natively_and_in_docker_host_and_bridge(local, docker_ready, cgroups_ready, wrk_ready,
                                                                 no_leftovers):
    for tool in ("redis-server", "redis-benchmark", "nginx"):
        need(tool, None if local.which(tool) else f"no {tool} (apt-get install redis-server redis-tools nginx)")
    run_dir = sv.run(sv.Params(runtimes="native,docker", profile="quick", repetitions=1, protocols="fair",
                               progress=False))
    df = load_results(run_dir)
    assert (df["status"] == "ok").all(), df[df["status"] != "ok"][["runtime", "error"]]
    rps = df[df["metric"] == "throughput"]
    got = {(r.app, r.runtime, r.network_mode if isinstance(r.network_mode, str) else "", r.test)
           for r in rps.itertuples()}
    variants = (("native", ""), ("docker", "host"), ("docker", "bridge"))
    assert got == {("redis", rt, mode, test) for rt, mode in variants for test in ("get", "set")} | \
        {("nginx", rt, mode, "static") for rt, mode in variants}
    # nginx answered every request: no connect, read, write, timeout or non-2xx errors.
    assert (df[df["metric"] == "errors"]["value"].astype(float) == 0).all()
    assert (rps["value"].astype(float) > 1000).all()
    # The fair protocol pinned the service to its core, read back from its cgroup.
    assert set(rps["cpuset_applied"].astype(str)) == {"0"}
    p99 = df[df["metric"] == "latency_p99"]["value"].astype(float)
    assert (p99 > 0).all() and len(p99) == len(rps)
    # Fair Redis tests last the profile's window (not the page's 20k requests, a tenth of a second
    # here), and the run that measured the rate is kept raw; nginx's window is wrk's duration.
    redis = rps[rps["app"] == "redis"]
    long_enough = (redis["window_s"] >= sv.MIN_WINDOW_S["quick"]) | redis["note"].str.contains("shorter than")
    assert long_enough.all() and (redis["window_s"] >= 1).all(), redis[["runtime", "test", "window_s", "note"]]
    assert (rps[rps["app"] == "nginx"]["window_s"] >= sv.WRK_DURATION_S["quick"] - 0.5).all()
    assert list((run_dir / "raw").glob("*redis-benchmark-*-rate1.json"))


def test_fair_asks_for_the_requests_that_last_the_window():
    assert sv.requests_for(20_000, 0.05, 2.0) == 1_200_000  # 20k in 50 ms: 400k req/s for 2 s, with 50% margin
    assert sv.requests_for(20_000, 0.0, 2.0) > 20_000
