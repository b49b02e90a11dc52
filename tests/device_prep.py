"""The emulated debian-v2 device made ready for test_device_v2 (conftest's `debian_v2`): built
(cached), booted, Docker and LXD provisioned as `make provision` does, and the two Debian packages
its tests run (nodejs, linux-perf). Under TCG that is about 10 minutes of a CI run, most of it apt
inside the device; `make test` runs the device's tests in a session of their own beside the others
(tests/run.py), so those minutes go by while this machine's tests run."""

from __future__ import annotations

import os
import subprocess
import tempfile

from conftest import device_log
from edgebench.provisioning.apt import install_argv
from edgebench.provisioning.provision import provision
from edgebench.runtimes.lxd_image import cache_root
from edgebench.targets import LocalTarget, Target

# What the device's tests run beyond Docker and LXD: (a program, the Debian package that brings it).
TEST_PACKAGES = (("node", "nodejs"), ("perf", "linux-perf"))


def install_missing(device: Target, program: str, package: str) -> None:
    """apt-get install `package` (as provisioning does) unless `program` is there already."""
    if not device.which(program):
        device.run(install_argv([package]), timeout=900)


def seed_lxd_image(device: Target) -> None:
    """Copy this machine's LXD base image cache (built by `make test`'s provisioning) to a device of
    the same architecture, where provisioning then finds it and only imports it. The same recipe
    built by debootstrap on the device, under TCG, takes about 15 minutes: too long for every CI
    run, and `make figures TARGET=debian-v2` still builds it there as on any device."""
    local = LocalTarget()
    folder = f"debian-bookworm-{device.facts()['arch']}"
    here, there = f"{cache_root(local)}/{folder}", f"{cache_root(device)}/{folder}"
    if device.facts()["arch"] != local.facts()["arch"] or not os.path.exists(f"{here}/fingerprint"):
        return
    with open(f"{here}/fingerprint") as f:
        if device.read_text(f"{there}/fingerprint", missing_ok=True) == f.read():
            return
    with tempfile.TemporaryDirectory() as tmp:
        bundle = f"{tmp}/lxd-image.tar.gz"
        subprocess.run(["tar", "-C", here, "-czf", bundle, "fingerprint", "recipe", "metadata.tar", "rootfs.tar"],
                       check=True, timeout=300)
        device.put(bundle, f"{there}.tar.gz")
    device.run(["sh", "-c", 'mkdir -p "$1/rootfs" && tar -C "$1" -xzf "$1.tar.gz" && rm "$1.tar.gz" && '
                'tar -C "$1/rootfs" -xf "$1/rootfs.tar"', "seed", there], timeout=600)
    device_log(f"seeded {device.name}'s LXD base image cache from this machine's ({here})")


def prepare(device: Target) -> str | None:
    """Provision the booted device for its tests; None when it is ready, else why not."""
    seed_lxd_image(device)
    report = provision(device, runtimes=("docker", "lxd"), log=device_log)
    if not report.ok:
        return f"provisioning {device.name} failed:\n{report.table()}"
    for program, package in TEST_PACKAGES:
        install_missing(device, program, package)
    return None
