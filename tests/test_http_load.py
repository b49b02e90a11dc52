"""The HTTP load experiment for real: rows per level with limits read back, and a memory limit
that kills the app gives failed rows with the OOM reason, not an exception."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid

import pytest

from conftest import need_tool
from edgebench.errors import ConfigError
from edgebench.experiments import cpu_bound, io_bound
from edgebench.experiments.http_load import loadgen_cpuset, run
from edgebench.results import load_meta, load_results

QUICK = dict(profile="quick", repetitions=1, progress=False, duration_s=1, warmup_s=0, window_scale="1")
RECORDS = {"io_bound": io_bound.Params, "cpu_bound": cpu_bound.Params}


def run_http_load(experiment: str, **params):
    return run(RECORDS[experiment](**params))


def listening_pids(url: str) -> list[int]:
    """The processes listening on the URL's port on this machine (the app a test acts on as the OS
    would): one for a Go app, nginx's master and worker."""
    port = url.split(":")[2].split("/")[0]
    listening = subprocess.run(["ss", "-Htlnp", f"sport = :{port}"], capture_output=True, text=True).stdout
    return sorted({int(pid) for pid in re.findall(r"pid=(\d+)", listening)})


def listening_pid(url: str) -> int:
    return listening_pids(url)[0]


@pytest.fixture
def run_dirs():
    dirs = []
    yield dirs
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("runtime", ["native", "docker"])
def test_oom_at_a_memory_level_gives_failed_rows(runtime, request, run_dirs, cgroups_ready, wrk_ready,
                                                 no_leftovers):
    if runtime == "docker":
        request.getfixturevalue("docker_ready")
    run_dir = run_http_load("io_bound", runtimes=runtime, apps="node-http", protocols="fair",
                            memory_levels="8m", run_id=f"it-oom-{runtime}-{uuid.uuid4().hex[:6]}",
                            open_loop="none", **QUICK)
    run_dirs.append(run_dir)
    df = load_results(run_dir)
    rps = df[df.metric == "requests_per_second"]
    rich = rps[rps.scenario == "rich"]
    assert list(rich.status) == ["ok"] and rich.value.iloc[0] > 0
    starved = rps[(rps.scenario == "constrained") & (rps.memory_mb == 8)]
    assert list(starved.status) == ["failed"], starved[["status", "error"]]
    assert "oom" in starved.error.iloc[0].lower(), starved.error.iloc[0]
    assert starved.value.isna().all()
    assert load_meta(run_dir)["status"] == "completed"  # the sweep went on to the end
    assert not df.metric.str.startswith("ol_").any()  # open_loop="none"


def test_a_level_below_one_runtimes_minimum_is_not_measurable_for_it_alone(run_dirs, docker_ready, cgroups_ready,
                                                                           wrk_ready, no_leftovers):
    # 5 MiB: below Docker's 6 MiB minimum, not below native's 4 MiB. Docker's rows at that level
    # are not measurable, with the reason (nothing started, nothing went wrong), and the run goes
    # on with the rest.
    run_dir = run_http_load("io_bound", runtimes="native,docker", apps="go-http", protocols="fair",
                            memory_levels="5m", run_id=f"it-minimum-{uuid.uuid4().hex[:6]}", open_loop="none",
                            **QUICK)
    run_dirs.append(run_dir)
    df = load_results(run_dir)
    rps = df[df.metric == "requests_per_second"]
    docker_low = rps[(rps.runtime == "docker") & (rps.memory_mb == 5)]
    assert list(docker_low.status) == ["not measurable"]
    assert "below what docker can start go-http with (minimum 6 MiB)" in docker_low.error.iloc[0]
    assert list(rps[(rps.runtime == "docker") & (rps.scenario == "rich")].status) == ["ok"]
    assert len(rps[rps.runtime == "native"]) == 2  # its rich and its 5 MiB rows, whatever they measured
    assert load_meta(run_dir)["status"] == "completed"


def test_docker_limit_verified_from_the_cgroup(run_dirs, docker_ready, cgroups_ready, wrk_ready, no_leftovers):
    run_dir = run_http_load("cpu_bound", runtimes="native,docker", apps="go-http", protocols="fair,published",
                            memory_levels="128m", iterations=50, run_id=f"it-load-{uuid.uuid4().hex[:6]}",
                            **QUICK)
    run_dirs.append(run_dir)
    df = load_results(run_dir)
    ok = df[(df.metric == "requests_per_second") & (df.status == "ok")]
    assert set(ok.runtime) == {"native", "docker"} and set(ok.protocol) == {"fair", "published"}
    con = ok[ok.scenario == "constrained"]
    assert (con.memory_mb_applied == 128).all() and (con.cpus_applied == 1).all()
    fair = con[con.protocol == "fair"]
    assert set(fair.cpuset_applied) == {"0"}
    assert set(df[df.runtime == "docker"].network.dropna()) == {"docker-proxy+bridge"}
    assert (ok.littles_law > 0).all() and (df[df.metric == "latency_p99"].value > 0).all()
    # Each row says how long its load lasted by the load tool's own clock, near what was asked.
    assert ((ok.window_s > 0.9 * ok.duration_s) & (ok.window_s < 1.5 * ok.duration_s)).all(), ok[["window_s"]]
    assert set(df[df.endpoint.notna()].endpoint) == {"/compute"} and set(df.iter.dropna()) == {50}
    # Open loop, fair only: each runtime offered half and all of its own closed-loop throughput.
    ol = df[df.metric == "ol_achieved_rps"]
    assert set(ol.protocol) == {"fair"} and set(ol.runtime) == {"native", "docker"}
    assert set(ol.offered_share) == {0.5, 1.0} and (ol.status == "ok").all(), ol[["status", "error"]]
    closed = ok[ok.protocol == "fair"].set_index(["runtime", "scenario", "memory_mb"])["value"]
    half = ol[ol.offered_share == 0.5]
    for _, r in half.iterrows():
        assert r.offered_rps == pytest.approx(closed[(r.runtime, r.scenario, r.memory_mb)] / 2, rel=0.01)
    p99 = df[df.metric == "ol_latency_p99"]
    assert len(p99) == len(ol) and (p99.value > 0).all()
    assert ((ol.window_s > 0.9 * ol.duration_s) & (ol.window_s < 1.5 * ol.duration_s)).all(), ol[["window_s"]]
    open_loop_tool = load_meta(run_dir)["notes"]["load_generator"]["open_loop"]
    assert set(df[df.metric.str.startswith("ol_")].load_tool) == {open_loop_tool}


def test_loadgen_is_pinned_apart_and_bad_input_is_refused():
    assert loadgen_cpuset(True, "0", 4) == ("1,2,3", "")
    assert loadgen_cpuset(True, "0-1", 2)[0] is None and "no core left" in loadgen_cpuset(True, "0-1", 2)[1]
    assert loadgen_cpuset(False, "0", 4) == (None, "")
    with pytest.raises(ConfigError, match="'64'"):  # when the record is made, before anything runs
        io_bound.Params(memory_levels="256m,64")
    with pytest.raises(ConfigError, match="open_loop='fast' unknown"):
        cpu_bound.Params(open_loop="fast")
    with pytest.raises(ConfigError, match="iterations=0 must be at least 1"):
        cpu_bound.Params(iterations=0)


def test_remote_target_loaded_from_this_machine(ssh_host, run_dirs, cgroups_ready, wrk_ready, no_leftovers):
    """The app runs on the SSH host (a network namespace); wrk runs here and reaches it over the
    veth pair, so nothing is pinned apart and the meta says who generated the load."""
    from edgebench.targets import SSHTarget
    target = SSHTarget(f"root@{ssh_host.host}", key_file=ssh_host.key_file, known_hosts=ssh_host.known_hosts)
    run_dir = run_http_load("io_bound", target=target, runtimes="native", apps="go-http", protocols="fair",
                            memory_levels="128m", run_id=f"it-remote-load-{uuid.uuid4().hex[:6]}", **QUICK)
    run_dirs.append(run_dir)
    df = load_results(run_dir)
    rps = df[df.metric == "requests_per_second"]
    assert (rps.status == "ok").all() and (rps.value > 0).all(), rps[["status", "error"]]
    assert rps.loadgen_cpuset.isna().all()
    meta = load_meta(run_dir)
    assert meta["notes"]["load_generator"]["host"] == "local"
    assert meta["notes"]["load_generator"]["shares_target"] is False
    assert any(ssh_host.host in json.loads(p.read_text())["command"] for p in (run_dir / "raw").glob("*wrk-*"))


def test_a_service_that_dies_during_the_open_loop_rates_is_said_dead_and_not_loaded_again(
        monkeypatch, run_dirs, cgroups_ready, wrk_ready, no_leftovers):
    """LXD's node-http at 64 MiB was OOM-killed after the closed-loop run: its 25 open-loop rows
    then said "no request answered" at every rate, and never why. The app is killed here before
    the second rate, as an OOM kill would."""
    import os
    import signal
    from edgebench.tools.open_loop import OpenLoopGenerator

    offered = OpenLoopGenerator.run_at_rate
    calls = []

    def killed_before_the_second_rate(self, url, rate, settings, cpuset=None):
        calls.append(rate)
        if len(calls) == 2:
            os.kill(listening_pid(url), signal.SIGKILL)
        return offered(self, url, rate, settings, cpuset)

    monkeypatch.setattr(OpenLoopGenerator, "run_at_rate", killed_before_the_second_rate)
    run_dir = run_http_load("io_bound", runtimes="native", apps="go-http", protocols="fair",
                            memory_levels="256m", run_id=f"it-died-{uuid.uuid4().hex[:6]}", open_loop="openloop",
                            open_loop_rates="20%,40%,60%", open_loop_duration_s=1, **QUICK)
    run_dirs.append(run_dir)
    df = load_results(run_dir)
    first = df[(df.scenario == "rich") & df.metric.str.startswith("ol_")]
    rates = sorted(first.offered_rps.unique())
    assert len(rates) == 2, rates  # the third rate was not offered to a dead service
    assert (first[first.offered_rps == rates[0]].status == "ok").all()
    died = first[first.offered_rps == rates[1]]
    assert (died.status == "failed").all(), died[["metric", "status", "error"]]
    assert died.error.str.startswith(f"died under load at {rates[1]:g} req/s").all(), died.error.iloc[0]
    assert "not offered" in died.error.iloc[0]
    again = df[(df.scenario == "constrained") & df.metric.str.startswith("ol_")]
    assert (again.status == "ok").all() and again.offered_rps.nunique() == 3  # a fresh start: every rate


@pytest.mark.parametrize("frozen", ["for good", "under load only", "midway for good"])
def test_a_service_that_stops_answering_is_told_from_a_slow_one_and_keeps_its_output(
        frozen, monkeypatch, run_dirs, cgroups_ready, wrk_ready, no_leftovers):
    """Unikraft's go-http stopped answering under 100 connections in 7 of 18 standard-run points,
    from the start or midway, while its VM ran on: the row kept only wrk's output, told the user a
    longer run would measure it, and a midway stop was an ok row with a low value. A real stall
    here: the app is frozen (SIGSTOP) while wrk runs, so the kernel accepts and nobody answers.
    One connection tried after the run tells a service that stopped (frozen also then) from one
    that was only slow (frozen under load only)."""
    import os
    import signal
    import threading
    from edgebench.tools.load import Wrk

    measured = Wrk.run

    def frozen_while_measured(self, url, settings, cpuset=None, **kw):
        after_the_run, warm_up = settings.connections == 1, kw.get("duration_s") is not None
        if warm_up or (after_the_run and frozen == "under load only"):
            return measured(self, url, settings, cpuset, **kw)
        pid = listening_pid(url)
        freeze = threading.Timer(0.3 if frozen == "midway for good" and not after_the_run else 0,
                                 os.kill, (pid, signal.SIGSTOP))
        freeze.start()
        try:
            return measured(self, url, settings, cpuset, **kw)
        finally:
            freeze.join()
            os.kill(pid, signal.SIGCONT)

    monkeypatch.setattr(Wrk, "run", frozen_while_measured)
    run_dir = run_http_load("io_bound", runtimes="native", apps="go-http", protocols="published",
                            memory_levels="256m", run_id=f"it-froze-{uuid.uuid4().hex[:6]}", **QUICK)
    run_dirs.append(run_dir)
    df = load_results(run_dir)
    rps = df[df.metric == "requests_per_second"]
    assert (rps.status == "failed").all(), rps[["status", "error"]]
    stopped = "the service stopped answering (a longer run would not help)"
    slow = "if the app is only slow on this device, a longer run measures it"
    assert list((run_dir / "raw").glob("*-wrk-after-*.json"))  # what the connection after the run got
    if frozen == "midway for good":  # what it answered before it stopped is kept, and the row failed
        assert (rps.value > 0).all() and rps.error.str.startswith("stopped answering under load after").all()
        assert rps.error.str.contains("one connection after the run got none in", regex=False).all(), rps.error
        # every row of the run says so
        for _, point in df[df.metric.isin(["requests_per_second", "latency_p99", "requests"])].groupby("point_id"):
            assert len(point) == 3 and (point.status == "failed").all() and point.error.nunique() == 1, point.error
        return
    assert rps.value.isna().all()
    error = rps.error.iloc[0]
    said, other = (stopped, slow) if frozen == "for good" else (slow, stopped)
    assert said in error and other not in error, error
    kept = re.search(r"its output: raw/(\S+\.json)", error)  # the service's own output (a VM's console)
    assert kept, error
    record = json.loads((run_dir / "raw" / kept.group(1)).read_text())
    assert record["stdout"].strip() and "native" in record["command"]


@pytest.mark.parametrize("experiment", ["services", "home_automation"])
@pytest.mark.parametrize("frozen", ["from the start", "midway"])
def test_nginx_and_home_automation_judge_their_load_runs_by_the_same_test(
        experiment, frozen, monkeypatch, local, cgroups_ready, wrk_ready, no_leftovers):
    """Services' nginx and home automation ran wrk too, without the check after the run: a service
    that stopped midway was an ok row with a low rate, and one that answered nothing a rate of 0.
    The service is frozen (SIGSTOP) while wrk measures it and while one connection asks after the
    run, and thawed between (home automation reads its counters then)."""
    import os
    import signal
    import threading
    from edgebench.experiments import home_automation, services
    from edgebench.tools.load import Wrk
    if experiment == "services":
        need_tool(local, "nginx")
    else:
        need_tool(local, "curl")
    measured = Wrk.run

    def frozen_while_measured(self, url, settings, cpuset=None, **kw):
        after_the_run = settings.connections == 1
        pids = listening_pids(url)
        delay = 0.3 if frozen == "midway" and not after_the_run else 0
        freeze = threading.Timer(delay, lambda: [os.kill(pid, signal.SIGSTOP) for pid in pids])
        freeze.start()
        try:
            return measured(self, url, settings, cpuset, **kw)
        finally:
            freeze.join()
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    monkeypatch.setattr(Wrk, "run", frozen_while_measured)
    common = dict(runtimes="native", repetitions=1, protocols="fair", profile="quick", progress=False,
                  run_id=f"it-{experiment}-froze-{uuid.uuid4().hex[:6]}")
    if experiment == "services":
        run_dir = services.run(services.Params(services="nginx", **common))
    else:
        run_dir = home_automation.run(home_automation.Params(**common))
    try:
        df = load_results(run_dir)
        rps = df[df.metric == "throughput"]
        assert len(rps) == 1 and (rps.status == "failed").all(), df[["metric", "status", "error"]]
        assert list((run_dir / "raw").glob("*wrk-after-*.json"))
        error = rps.error.iloc[0]
        if frozen == "from the start":  # missing, never a rate of 0
            assert rps.value.isna().all() and "the service stopped answering (a longer run would not help)" in error
            return
        assert (rps.value > 0).all() and error.startswith("stopped answering under load after"), error
        run_rows = df[df.metric.isin(["latency_p99", "errors"])]
        assert len(run_rows) == 2 and (run_rows.status == "failed").all() and (run_rows.error == error).all()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def test_a_service_that_answers_only_with_errors_after_the_run_still_answers(tmp_path, local, wrk_ready):
    """A 503 is an answer: the service is there, busy or broken, not stopped. Real wrk, one
    connection, against a server that answers every request with 503 and one that never does."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from edgebench.experiments.http_load import answers_after
    from edgebench.results import Run
    from edgebench.tools.load import LoadSettings, Wrk

    class Unavailable(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    silent = socket.socket()  # accepts (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = LoadSettings(threads=1, connections=1, duration_s=1, timeout_s=1)
    try:
        with Run("after_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="after") as run:
            wrk = Wrk(local)
            assert answers_after(run, wrk, f"http://127.0.0.1:{server.server_address[1]}/", settings, None,
                                 "errors") == (True, 1)
            assert answers_after(run, wrk, f"http://127.0.0.1:{silent.getsockname()[1]}/", settings, None,
                                 "silent") == (False, 3)
    finally:
        server.shutdown()
        silent.close()


def test_container_overheads_ab_and_wrk_runs_are_judged_by_the_same_test(
        monkeypatch, local, cgroups_ready, wrk_ready, no_leftovers):
    """Paper 003's network part loads the app with ab, then wrk: each run is followed by the same
    one connection. Here the app serves both runs and is frozen only while that connection asks:
    both runs are then failed with what they measured kept (a real stop looks so to the check)."""
    import os
    import signal
    from edgebench.experiments import container_overhead as co
    from edgebench.tools.load import Wrk
    need_tool(local, "ab")
    measured = Wrk.run

    def frozen_after_the_run(self, url, settings, cpuset=None, **kw):
        if settings.connections != 1:
            return measured(self, url, settings, cpuset, **kw)
        pids = listening_pids(url)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            return measured(self, url, settings, cpuset, **kw)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    monkeypatch.setattr(Wrk, "run", frozen_after_the_run)
    run_dir = co.run(co.Params(benchmarks="network", runtimes="native", apps="go-http", profile="quick", repetitions=1,
                               protocols="fair", progress=False, run_id=f"it-co-froze-{uuid.uuid4().hex[:6]}"))
    try:
        df = load_results(run_dir)
        rps = df[df.metric == "requests_per_second"]
        assert set(rps.operation) == {"ab", "wrk"} and (rps.status == "failed").all(), rps[["operation", "error"]]
        assert (rps.value > 0).all() and rps.error.str.startswith("stopped answering under load after").all()
        assert len(list((run_dir / "raw").glob("*wrk-after-*.json"))) == 4  # 1 s, then longer, after each run
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def test_a_service_killed_while_the_connection_asks_died_and_did_not_stop(
        monkeypatch, run_dirs, cgroups_ready, wrk_ready, no_leftovers):
    """The connection after the run finds a silent service: if its process is gone by then (an OOM
    kill while it was asked), the row says it died, with the runtime's reason, not that it stopped."""
    import os
    import signal
    from edgebench.tools.load import Wrk
    measured = Wrk.run

    def killed_when_asked(self, url, settings, cpuset=None, **kw):
        if settings.connections == 1 and kw.get("duration_s") is None:
            for pid in listening_pids(url):
                os.kill(pid, signal.SIGKILL)
        return measured(self, url, settings, cpuset, **kw)

    monkeypatch.setattr(Wrk, "run", killed_when_asked)
    run_dir = run_http_load("io_bound", runtimes="native", apps="go-http", protocols="published",
                            memory_levels="256m", run_id=f"it-killed-{uuid.uuid4().hex[:6]}", **QUICK)
    run_dirs.append(run_dir)
    rps = load_results(run_dir).query("metric == 'requests_per_second'")
    assert (rps.status == "failed").all() and (rps.value > 0).all(), rps[["status", "error"]]
    assert rps.error.str.startswith("died under load: ").all(), rps.error.tolist()
