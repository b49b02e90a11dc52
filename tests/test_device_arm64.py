"""The emulated Raspberry Pi (`make device NAME=pi-arm64`): an aarch64 Debian under QEMU's `virt`,
reached over SSH, with apps cross-built for it; and the same board booted without the memory
controller (pi-arm64-nomemcg), as a stock Raspberry Pi OS kernel boots. Slow: its first build runs
the arm64 packages' scripts through qemu-user (about 10 minutes here) and each boot takes one to two
minutes, so these run only with EDGEBENCH_SLOW=1 (or when `device-arm64` is required); otherwise
they skip with that reason."""

from __future__ import annotations

import os
import urllib.request

import pytest

from conftest import device_log, need
from edgebench.apps import APPS, place_app
from edgebench.runtimes import Limits, NativeRuntime

MiB = 2**20
LIMITED = Limits(cpus=0.5, memory_mb=96, cpuset="1", swap=False, gomaxprocs=1)


def booted(name: str):
    """The device booted for one test module (one board runs as one device at a time)."""
    from edgebench.devices import device_spec, image, machine
    from edgebench.targets import connect
    spec = device_spec(name)
    slow = os.environ.get("EDGEBENCH_SLOW") == "1"
    # What the build needs (qemu-user, binfmt, QEMU for aarch64) it installs itself, as `make device` does.
    need("device-arm64", "an arm64 device takes about 10 minutes to build and 2 to boot: EDGEBENCH_SLOW=1 runs it"
         if not slow else "building and booting a device needs root" if os.geteuid() != 0 else None)
    image.build(spec, device_log)
    for other in (s for s in machine.DEVICES.values() if s.image_name == spec.image_name and s.name != name):
        machine.stop(other, device_log)
    was_running = machine.running(spec) is not None
    machine.start(spec, device_log)
    try:
        with connect(name) as target:
            yield target
    finally:
        if not was_running:
            machine.stop(spec, device_log)


@pytest.fixture(scope="module")
def pi():
    yield from booted("pi-arm64")


def serve_limited(target, limits: Limits):
    """go-http cross-built for the device, started natively with `limits`: (its limits read back,
    what it answered at the device's address)."""
    runtime = NativeRuntime(target)
    try:
        instance, _ = runtime.start(runtime.package(place_app(target, APPS["go-http"])), limits,
                                    target.free_port(18080))
        try:
            with urllib.request.urlopen(f"http://{target.address}:{instance.port}/io", timeout=60) as r:
                return instance.limits_applied, r.read()
        finally:
            runtime.stop(instance)
    finally:
        runtime.cleanup()


@pytest.mark.slow
def test_pi_is_an_emulated_aarch64_with_cgroup_v2(pi):
    facts = pi.facts()
    assert facts["arch"] == "aarch64" and facts["cgroup_version"] == 2 and facts["memory_controller"] == "yes"
    assert facts["emulated_device"].startswith("emulated device (aarch64, QEMU virt cortex-a72 under TCG")
    assert facts["cores"] == 2 and facts["memory_mb"] < 1024


@pytest.mark.slow
def test_an_app_cross_built_for_arm64_serves_with_its_limits_read_back(pi):
    applied, body = serve_limited(pi, LIMITED)
    assert body == b"ok\n"
    assert (applied.cgroup_version, applied.cpus, applied.memory_mb, applied.cpuset, applied.memory_controller) == \
        (2, 0.5, 96, "1", True)


@pytest.mark.slow
def test_without_the_memory_controller_the_limit_is_said_not_applied():
    """The same board booted as pi-arm64-nomemcg: the run goes on, the memory limit is read back as
    absent, and the row's note says it was not applied and how to enable the controller."""
    from edgebench.experiments.protocols import verify_limits
    for target in booted("pi-arm64-nomemcg"):
        assert target.facts()["memory_controller"] == "no"
        assert "memory controller off" in target.facts()["emulated_device"]
        applied, body = serve_limited(target, LIMITED)
        assert body == b"ok\n"
        assert applied.memory_controller is False and applied.memory_mb is None
        assert (applied.cpus, applied.cpuset) == (0.5, "1")  # the other controllers still apply
        note = verify_limits(LIMITED, applied)
        assert note.startswith("memory limit of 96 MiB not applied") and "cgroup_enable=memory" in note
