"""Several devices at once: TARGET=a,b and fleet files, checked before anything runs; and a real
fleet of two SSH hosts in network namespaces measured in parallel, with a third that cannot be
reached failing alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import need
from edgebench.drivers import fleet
from edgebench.errors import ConfigError
from edgebench.results import load_meta, load_results


def test_targets_become_devices_named_for_folders():
    devices = fleet.parse_targets("pi@raspberrypi:2222, lab-pi2")
    assert [(d.name, d.target, d.load_generator) for d in devices] == [
        ("pi_raspberrypi_2222", "pi@raspberrypi:2222", "local"), ("lab-pi2", "lab-pi2", "local")]
    assert devices[0].figures_dir.parts[-2:] == ("devices", "pi_raspberrypi_2222")


@pytest.mark.parametrize("spec, message", [
    ("pi1,pi1", "more than once"),
    ("local,pi1", "'local' cannot be one of several"),
    (" , ", "names no device"),
])
def test_bad_target_lists_are_refused_with_what_to_change(spec, message):
    with pytest.raises(ConfigError, match=message):
        fleet.parse_targets(spec)


def test_fleet_file_names_devices_and_their_load_generators(tmp_path):
    f = tmp_path / "lab.yml"
    f.write_text("devices:\n  pi1: {target: pi@10.0.0.11, load_generator: lg1}\n  pi2: pi2-alias\n")
    assert fleet.load_fleet(f) == [fleet.Device("pi1", "pi@10.0.0.11", "lg1"), fleet.Device("pi2", "pi2-alias")]


@pytest.mark.parametrize("text, message", [
    ("devices: []\n", "expected `devices:`"),
    ("devices:\n  pi1: {host: x}\n", "needs `target`.*unknown: host"),
    ("devices:\n  'bad name': {target: x}\n", "use letters, digits"),
    ("devices: {pi1: [\n", "not valid YAML"),
])
def test_bad_fleet_files_say_what_is_wrong(tmp_path, text, message):
    f = tmp_path / "lab.yml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message):
        fleet.load_fleet(f)
    with pytest.raises(ConfigError, match="does not exist"):
        fleet.load_fleet(tmp_path / "missing.yml")


def _combined_ssh_config(hosts: dict, path: Path, dead: str | None = None) -> Path:
    """One ssh_config with an alias per namespace host (and one for an address nobody answers)."""
    blocks = []
    for alias, h in hosts.items():
        blocks.append(f"Host {alias}\n    HostName {h.host}\n    User {h.user}\n    Port {h.port}\n"
                      f"    IdentityFile {h.key_file}\n    IdentitiesOnly yes\n"
                      f"    UserKnownHostsFile {h.known_hosts}\n")
    if dead:
        first = next(iter(hosts.values()))
        # The root namespace's end of a veth pair, on a port nothing listens on: refused at once.
        blocks.append(f"Host {dead}\n    HostName {first.host_side_ip}\n    User root\n    Port 1\n"
                      f"    IdentityFile {first.key_file}\n")
    path.write_text("\n".join(blocks))
    return path


@pytest.fixture
def two_hosts(tmp_path):
    import sshhost
    need("ssh", sshhost.unavailable_reason())
    with ExitStack() as stack:
        hosts = {alias: stack.enter_context(sshhost.ssh_host(tmp_path / alias)) for alias in ("dev-a", "dev-b")}
        yield hosts


def _figures(tmp_path: Path, ssh_config: Path, targets: str, only: str) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, EDGEBENCH_SSH_CONFIG=str(ssh_config), EDGEBENCH_DATA_DIR=str(tmp_path / "data"),
               EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"))
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--target", targets, "--profile", "quick",
                        "--only", only, "--runtimes", "native", "--apps", "go-http", "--quiet"],
                       capture_output=True, text=True, env=env, timeout=900)
    return r, time.monotonic() - start


def test_two_devices_measured_in_parallel_and_a_dead_one_fails_alone(tmp_path, two_hosts, no_leftovers):
    config = _combined_ssh_config(two_hosts, tmp_path / "ssh_config", dead="dev-dead")
    r, _ = _figures(tmp_path, config, "dev-a,dev-b,dev-dead", "time_to_ready")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out  # one device failed
    assert "dev-dead" in out and "unreachable" in out and "cannot connect" in out
    assert "2 of 3 devices measured in parallel" in out
    for device in ("dev-a", "dev-b"):
        # Each device's notebook and figures under its own folder; its rows name it.
        assert (tmp_path / "figures" / "devices" / device / "time_to_ready" / "02_time_to_ready.ipynb").exists(), out
        assert f"[{device}] " in out
    runs = sorted((tmp_path / "data" / "time_to_ready").iterdir())
    by_target = {load_meta(d)["target"]["target"]: d for d in runs}
    assert set(by_target) == {"dev-a", "dev-b"}
    for device, run_dir in by_target.items():
        df = load_results(run_dir)
        assert (df["target"] == device).all() and (df["status"] == "ok").any()
        assert load_meta(run_dir)["status"] == "completed"
        assert load_meta(run_dir)["device"] == device  # what compare and report call it
    assert not (tmp_path / "figures" / "devices" / "dev-dead").exists()


def test_parallel_drivers_kernels_never_share_sockets():
    """Two drivers of a fleet start kernels from the same notebooks/ folder at once; jupyter_client's
    own default would give both the sockets kernel-ipc-1..5 there, and each kernel would then read the
    other's messages (CI saw "Invalid Signature")."""
    from edgebench.drivers.figures import ipc_kernel_manager

    cls = ipc_kernel_manager()
    a, b = cls(), cls()
    assert a.transport == "ipc" and a.ip != b.ip
    assert Path(a.ip).is_absolute() and Path(a.ip).parent == Path(b.ip).parent


def test_each_device_driver_gets_the_fleets_settings_and_plan_only():
    import argparse
    args = argparse.Namespace(profile="quick", runtimes="native", apps=None, repetitions="2", target="a,b",
                              load_generator=None, only="time_to_ready", quiet=True, provision=False, plan_only=True,
                              set=["iterations=5", "protocols=fair"])
    argv = fleet.driver_argv(fleet.Device("pi1", "pi@pi1", "lg@box"), args,
                             ("target", "runtimes", "apps", "profile", "repetitions", "load_generator"))
    assert argv[1:] == ["-m", "edgebench.drivers.figures", "--target", "pi@pi1", "--runtimes", "native",
                        "--profile", "quick", "--repetitions", "2", "--load_generator", "lg@box",
                        "--only", "time_to_ready",
                        "--set", "iterations=5", "--set", "protocols=fair", "--quiet", "--plan-only"]
