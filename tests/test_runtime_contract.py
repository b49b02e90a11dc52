"""What every runtime in the registry promises the experiments, checked the same way for each
(`edgebench.runtimes.RUNTIMES`), with go-http, the one app they all run:

- a start serves, reads back the limits it applied, says when the app listened (after the launch,
  before the probe saw it ready) and, for a VM, which accelerator it got; what it runs is visible
  to the leftover checks until stopped, and nothing of it is left afterwards; stopping again and
  cleaning up twice are no errors;
- a port another program listens on moves the start to the next free one, and so does a port
  taken between the check and the bind; a service whose configuration fixes its port is refused
  before anything starts when that port is taken;
- memory below what the runtime can start anything with is refused before anything starts;
- a start the timeout cuts off says that it was still going, and leaves nothing;
- a program run to completion gives its exit status under the limits read back, or, where the
  runtime runs no batch programs, is refused before anything starts.

Each runtime skips with the reason where this machine lacks it. The VMs boot under TCG where KVM
is unusable: each case boots at most one VM. Runtime-specific behaviour stays in test_<runtime>.py."""

from __future__ import annotations

import json
import socket
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from conftest import free_port, leftovers, need
from edgebench.apps import APPS, BuiltApp, place_app
from edgebench.errors import BelowMinimum, ConfigError
from edgebench.runtimes import RUNTIMES
from edgebench.runtimes.base import Runtime
from edgebench.runtimes.contract import Artifact, Instance, Limits, StartFailed
from edgebench.runtimes.tags import is_alive
from edgebench.runtimes.vm import VmRuntime

LIMITS = Limits(cpus=1, memory_mb=128, cpuset="0", swap=False, gomaxprocs=1)
# Promises a runtime does not keep yet, each with the reason: expected to fail until it does (strict:
# the day it passes, this says to remove it).
NOT_KEPT_YET = {
    ("nanos", "batch exit status"): "Nanos halts the VM without the program's exit status, and a batch run "
                                    "reports ops' own (0): a program that failed looks like one that succeeded",
}


def expect_kept(request: pytest.FixtureRequest, runtime: Runtime, promise: str) -> None:
    reason = NOT_KEPT_YET.get((runtime.name, promise))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.fixture(scope="module", params=list(RUNTIMES))
def runtime(request: pytest.FixtureRequest, local) -> Iterator[Runtime]:
    if request.param == "native":
        request.getfixturevalue("cgroups_ready")  # its limits are cgroups this test session makes
    rt = RUNTIMES[request.param](local, f"contract-{uuid.uuid4().hex[:6]}")
    why = rt.availability()
    need(request.param, None if why else why.reason)
    yield rt
    rt.cleanup()


@pytest.fixture(scope="module")
def go_http(runtime: Runtime, local) -> Artifact:
    return runtime.package(place_app(local, APPS["go-http"]))


def serves(instance: Instance) -> bool:
    with urllib.request.urlopen(instance.url + "/io", timeout=10) as r:
        return (r.status, r.read()) == (200, b"ok\n")


def names(instance: Instance, found: list[str]) -> bool:
    """Whether one of the leftover checks' lines is this instance (container, process, cgroup)."""
    return any(instance.name in line or f"process {instance.pid} " in line for line in found)


def test_a_start_serves_under_the_limits_it_reads_back_and_a_stop_leaves_nothing(runtime, go_http, local,
                                                                                  no_leftovers):
    instance, probe = runtime.start(go_http, LIMITS, free_port(), timeout_s=120)
    try:
        assert serves(instance)
        applied = instance.limits_applied
        assert (applied.cpus, applied.memory_mb, applied.cpuset) == (1.0, 128.0, "0")
        listening = [json.loads(line) for line in runtime.app_output(instance).splitlines() if '"listening"' in line]
        assert listening and (listening[0]["num_cpu"], listening[0]["gomaxprocs"]) == (1, 1)  # the app sees them
        # The app listened after the launch and before the probe saw it ready; a VM's boot phases
        # come before, in their order.
        listen = runtime.listen_unix_ns(instance)
        assert probe.start_unix_ns <= listen <= probe.ready_unix_ns
        phases = list(runtime.boot_phases(instance).values())
        assert phases == sorted(phases) and all(probe.start_unix_ns < ns <= listen for ns in phases)
        if isinstance(runtime, VmRuntime):
            assert phases, "a VM's console times its boot"
            assert instance.accelerator == ("tcg" if runtime.kvm_unusable() else "kvm")
            assert instance.pinned_to == "0"  # every QEMU thread, not only the vCPUs
        else:
            assert instance.accelerator is None
        assert names(instance, leftovers()), "what the start runs is invisible to the leftover checks"
    finally:
        runtime.stop(instance)
    assert not (instance.pid and is_alive(local, instance.pid))
    assert not names(instance, leftovers()) and not runtime._live
    runtime.stop(instance)  # stopping is idempotent
    runtime.cleanup()
    runtime.cleanup()


def test_a_port_another_program_listens_on_moves_the_start_to_a_free_one(runtime, go_http, no_leftovers):
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        instance, _ = runtime.start(go_http, Limits(), port, timeout_s=120)
        try:
            assert instance.port != port and instance.url.endswith(f":{instance.port}")
            assert serves(instance)
        finally:
            runtime.stop(instance)


def test_a_port_taken_between_the_check_and_the_bind_is_tried_again_on_the_next(runtime, go_http, no_leftovers):
    """A socket bound and not listening is invisible to the check (ss) yet makes the bind fail, as
    a port taken in between does (CI saw Docker's proxy fail so)."""
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        port = held.getsockname()[1]
        instance, _ = runtime.start(go_http, Limits(), port, timeout_s=120)
        try:
            assert instance.port > port and instance.url.endswith(f":{instance.port}")
            assert serves(instance)
        finally:
            runtime.stop(instance)


def test_a_taken_fixed_port_is_refused_before_anything_starts(runtime, local, no_leftovers):
    # Refused before the artifact is looked at: an artifact that was never made does for this.
    app = next(app for app in APPS.values() if app.fixed_port)  # nginx: its port is in its nginx.conf
    built = BuiltApp(app, local.facts()["arch"], f"/nonexistent/{app.entry}", 0, [app.entry])
    never_made = Artifact(runtime.name, app.name, "/nonexistent", 0, 0, built)
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            held.bind(("127.0.0.1", app.container_port))
            held.listen()
        except OSError:
            pass  # something listens there already: taken all the same
        with pytest.raises(ConfigError, match=f"listens on port {app.container_port}, which its configuration names"):
            runtime.start(never_made, Limits(), app.container_port)
    assert not runtime._live


def test_memory_below_the_minimum_is_refused_before_anything_starts(runtime, go_http, no_leftovers):
    with pytest.raises(BelowMinimum, match=f"below what {runtime.name} can start go-http with"):
        runtime.start(go_http, Limits(memory_mb=runtime.min_memory_mb / 2), free_port())
    assert not runtime._live


def test_a_start_cut_by_the_timeout_says_it_was_still_going_and_leaves_nothing(runtime, go_http, no_leftovers):
    # No app is ready a millisecond after its launch: the timeout comes first, and the failure says
    # so, which min_memory needs to tell a slow start from too little memory.
    with pytest.raises(StartFailed) as e:
        runtime.start(go_http, Limits(), free_port(), timeout_s=0.001)
    assert e.value.timed_out and "after 1ms" in str(e.value), str(e.value)
    assert not runtime._live


def test_a_batch_program_gives_its_exit_status_under_the_limits_or_is_refused(runtime, go_http, request,
                                                                              no_leftovers):
    expect_kept(request, runtime, "batch exit status")
    if not runtime.runs(APPS["iomt"]):  # it runs no batch programs: refused before anything starts
        with pytest.raises(ConfigError, match="cannot run as a batch program"):
            runtime.run_batch(go_http, ["-port", "not-a-port"], LIMITS, timeout_s=120)
        assert not runtime._live
        return
    result = runtime.run_batch(go_http, ["-port", "not-a-port"], LIMITS, timeout_s=120)
    assert not runtime._live
    applied = result.limits_applied
    assert (applied.cpus, applied.memory_mb, applied.cpuset) == (1.0, 128.0, "0")
    # A VM's console is its stdout; elsewhere the program's stderr is its own.
    assert 'invalid value "not-a-port" for flag -port' in result.stdout + result.stderr
    assert result.accelerator == (("tcg" if runtime.kvm_unusable() else "kvm") if isinstance(runtime, VmRuntime)
                                  else None)
    assert result.exit_code == 2, (result.stdout[-800:], result.stderr[-800:])
