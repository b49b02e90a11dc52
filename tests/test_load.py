"""The wrk driver run for real against a local app, natively and in Docker, and its parsing."""

from __future__ import annotations

import json

import pytest
from conftest import free_port
from edgebench.apps import APPS, place_app
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.runtimes import Limits
from edgebench.runtimes.docker import DockerRuntime
from edgebench.runtimes.native import NativeRuntime
from edgebench.tools.load import REPORT_MARKER, LoadSettings, Wrk, parse_report, wrk_command

SHORT = LoadSettings(threads=2, connections=8, duration_s=1, warmup_s=1)


def check_report(report, settings):
    lat = report.latency_us
    assert report.requests > 100 and report.requests_per_second > 100
    assert 0.9e6 < report.duration_us < 3e6
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    assert set(report.errors) == {"connect", "read", "write", "status", "timeout"}
    assert report.error_count == 0
    assert report.littles_law_ratio(settings.connections) > 0
    assert REPORT_MARKER in report.stdout and "wrk" in report.command


def test_driver_against_a_native_app(local, wrk_ready, no_leftovers):
    rt = NativeRuntime(local, "loadtest")
    try:
        instance, _ = rt.start(rt.package(place_app(local, APPS["go-http"])), Limits(), free_port())
        gen = Wrk(local)
        warm = gen.warm_up(instance.url + "/io", SHORT)
        assert warm is not None and warm.requests > 0
        check_report(gen.run(instance.url + "/io", SHORT), SHORT)
        compute = gen.run(instance.url + "/compute?iter=1000", SHORT)
        check_report(compute, SHORT)
    finally:
        rt.cleanup()


def test_driver_against_a_docker_container(local, wrk_ready, docker_ready, no_leftovers):
    rt = DockerRuntime(local, "loadtest")
    try:
        artifact = rt.package(place_app(local, APPS["go-http"]), "offline")
        instance, _ = rt.start(artifact, Limits(cpus=1, memory_mb=64), free_port())
        check_report(Wrk(local).run(instance.url + "/io", SHORT), SHORT)
    finally:
        rt.cleanup()


def test_status_errors_are_counted(local, wrk_ready, no_leftovers):
    """A 404 on every request: wrk counts non-2xx/3xx as status errors, and the driver keeps them."""
    rt = NativeRuntime(local, "loadtest")
    try:
        instance, _ = rt.start(rt.package(place_app(local, APPS["go-http"])), Limits(), free_port())
        report = Wrk(local).run(instance.url + "/nothing-here", SHORT)
        assert report.errors["status"] == report.requests > 0
    finally:
        rt.cleanup()


def test_unreachable_server_is_an_error_naming_wrks_reason(local, wrk_ready):
    """Nothing listens: wrk gives up before its first request (exit 1, "unable to connect"), and
    the driver raises that, with the host, rather than a report of zero requests."""
    with pytest.raises(EdgebenchError) as e:
        Wrk(local).run(f"http://127.0.0.1:{free_port()}/io", SHORT)
    assert "wrk on local exited 1" in str(e.value) and "unable to connect" in str(e.value)


def test_a_server_that_accepts_and_never_answers_is_reported_as_stalled(local, wrk_ready):
    """Unikraft's lwip under TCG once held every connection open without an answer: wrk counts no
    error then (its timeout is longer than the run), and the report must not say 'failed' with
    zero errors, nor a throughput."""
    import socket
    import threading
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held, stop = [], threading.Event()

    def hold():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    try:
        report = Wrk(local).run(f"http://127.0.0.1:{server.getsockname()[1]}/io",
                                LoadSettings(threads=1, connections=4, duration_s=1, timeout_s=5))
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        server.close()
    assert report.requests == 0 and report.error_count == 0 and held
    assert "no request was answered in the 1 s run and none failed" in report.nothing_answered()
    # What to change: each experiment names how it runs longer (io/cpu-bound: duration_s).
    assert report.nothing_answered().endswith("a longer run measures it")
    assert "a longer run measures it (duration_s" in report.nothing_answered("duration_s")


def test_parse_report_and_commands():
    line = REPORT_MARKER + json.dumps({
        "requests": 10, "duration_us": 1_000_000, "bytes": 100, "requests_per_second": 10.0,
        "latency_us": {"mean": 100_000.0, "stdev": 1.0, "min": 1, "max": 2, "p50": 1, "p90": 1, "p99": 2,
                       "p99_9": 2},
        "errors": {"connect": 0, "read": 1, "write": 0, "status": 2, "timeout": 3}})
    report = parse_report("wrk noise\n" + line + "\n")
    assert report.error_count == 6 and report.nothing_answered() is None
    assert report.littles_law_ratio(1) == pytest.approx(1.0)  # 10 req/s x 0.1 s = 1 in flight
    with pytest.raises(EdgebenchError, match="no report"):
        parse_report("Requests/sec: 5\n")
    argv = wrk_command("http://h/io", LoadSettings(), "/r.lua", cpuset="1")
    assert argv[:3] == ["taskset", "-c", "1"] and "-t4" in argv and "-c100" in argv and "-d30s" in argv
    for bad in (LoadSettings(threads=0), LoadSettings(threads=8, connections=4),
                LoadSettings(duration_s=0), LoadSettings(duration_s=1.5)):
        with pytest.raises(ConfigError):
            bad.check()


def test_load_generators_are_chosen_by_name_through_one_interface(local):
    from edgebench.tools.load import Ab, LoadGenerator, load_generator
    with pytest.raises(ConfigError, match="unknown load generator 'siege'; choose from wrk, ab"):
        load_generator(local, "siege")
    assert issubclass(Wrk, LoadGenerator) and Wrk.name == "wrk"
    assert issubclass(Ab, LoadGenerator) and Ab.name == "ab"


def test_readiness_is_what_the_app_declares():
    from edgebench.apps import APPS, HTTP_APPS, Readiness
    assert APPS["go-http"].readiness.probe_args(18080) == ["-url", "http://127.0.0.1:18080/io"]
    redis = Readiness(None, r"PING\r\n", "+PONG")
    assert redis.probe_args(6379) == ["-tcp", "127.0.0.1:6379", "-send", r"PING\r\n", "-expect", "+PONG"]
    assert Readiness(None).probe_args(1) == ["-tcp", "127.0.0.1:1"]
    with pytest.raises(ConfigError, match="no URL"):
        redis.url(6379)
    assert HTTP_APPS == ("go-http", "node-http")
    assert not APPS["iomt"].is_service and APPS["iomt"].readiness is None
