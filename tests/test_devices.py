"""The emulated devices' parts that need no device: names, networks, the recipe's cache key, the
project's ssh configuration, and what the rows and notes say of a device without a memory
controller. The devices themselves are exercised in test_device_v2.py (and test_device_arm64.py)."""

from __future__ import annotations

import pytest
from edgebench.cgroups import parse_limits
from edgebench.devices import DEVICES, device_spec, image, machine
from edgebench.errors import ConfigError, TargetUnreachable
from edgebench.experiments.protocols import verify_limits
from edgebench.results import platform_of
from edgebench.runtimes import Limits
from edgebench.targets import connect
from edgebench.waiting import wait_until


@pytest.fixture(autouse=True)
def devices_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_DEVICES_DIR", str(tmp_path / "devices"))
    return tmp_path / "devices"


def test_each_board_has_its_own_link_and_tap():
    boards = [d for d in DEVICES.values() if not d.board]
    links = [d.lan for d in boards]
    assert len(set(links)) == len(links) and all(link.prefixlen == 30 for link in links)
    assert len({d.tap for d in boards}) == len(boards)
    assert all(len(d.tap) <= 15 for d in DEVICES.values())  # the kernel's limit for a link name
    pi = device_spec("pi-arm64")
    # The memory controller off is the same board booted another way: same image, disk and address.
    nomemcg = device_spec("pi-arm64-nomemcg")
    assert (nomemcg.dir, nomemcg.address, nomemcg.tap) == (pi.dir, pi.address, pi.tap)
    assert image.recipe_digest(nomemcg) == image.recipe_digest(pi)
    assert (pi.host_address, pi.address) == ("10.232.2.1", "10.232.2.2")
    assert pi.guest_arch == "aarch64" and pi.debian_arch == "arm64" and pi.memory_mb <= 1024 and pi.cpus <= 2
    assert device_spec("pi-arm64-nomemcg").memcg is False and pi.memcg is True
    assert "memory controller off" in device_spec("pi-arm64-nomemcg").description()
    with pytest.raises(ConfigError, match="choose one of debian-v2"):
        device_spec("raspberrypi")


def test_the_cache_key_follows_the_image_not_how_it_boots():
    v2 = device_spec("debian-v2")
    from dataclasses import replace
    assert image.recipe_digest(replace(v2, memory_mb=4096, cpu="max")) == image.recipe_digest(v2)
    assert image.recipe_digest(replace(v2, disk_gib=8)) != image.recipe_digest(v2)


def test_an_unbuilt_or_partial_image_is_not_taken_for_built(devices_dir):
    spec = device_spec("debian-v2")
    assert image.built(spec) is None
    spec.dir.mkdir(parents=True)
    (spec.dir / "image.json").write_text(
        f'{{"recipe_digest": "{image.recipe_digest(spec)}", "disk": "disk.raw", "kernel": "vmlinuz", '
        '"initrd": "initrd.img"}')
    assert image.built(spec) is None  # no disk, kernel or initramfs
    for f in ("disk.raw", "vmlinuz", "initrd.img"):
        (spec.dir / f).write_text("")
    assert image.built(spec)["disk"] == "disk.raw"


def test_a_device_that_is_not_running_is_named_with_what_to_do():
    with pytest.raises(TargetUnreachable,
                       match=r"device pi-arm64 is not running: start it with `make device NAME=pi-arm64`"):
        connect("pi-arm64")


def test_one_board_runs_as_one_device_at_a_time(devices_dir):
    import json
    import subprocess
    pi, nomemcg = device_spec("pi-arm64"), device_spec("pi-arm64-nomemcg")
    (pi.dir / "run").mkdir(parents=True)
    disk = pi.dir / "disk.raw"
    disk.write_text("")
    # A process standing in for pi-arm64's QEMU: alive, with the board's disk on its command line.
    qemu = subprocess.Popen(["sh", "-c", "sleep 60; true", str(disk)])  # no exec: sh keeps the disk in its argv
    try:
        (pi.dir / "run" / "state.json").write_text(json.dumps({"name": "pi-arm64", "pid": qemu.pid}))
        wait_until(lambda: machine.running(pi) is not None, 10, 0.01)  # until the fork has exec'd sh
        assert machine.running(pi)["pid"] == qemu.pid and machine.running(nomemcg) is None
        with pytest.raises(image.DeviceError, match="pi-arm64 runs on it now: `make device-stop NAME=pi-arm64` first"):
            machine.start(nomemcg, log=lambda m: None)
        assert machine.stop(nomemcg, log=lambda m: None) is False
        assert machine.running(pi) is not None  # stopping the other name left the board alone
    finally:
        qemu.kill()
        qemu.wait()
    assert machine.running(pi) is None


def test_the_ssh_configuration_names_a_booting_device_with_its_key_and_pinned_host_key(devices_dir):
    spec = device_spec("debian-v2")
    spec.dir.mkdir(parents=True)
    machine.write_known_hosts(spec, {"host_key": "ssh-ed25519 AAAAkey"})
    text = machine.write_ssh_config(extra=[spec]).read_text()
    assert "Host debian-v2\n  HostName 10.232.1.2\n  User root\n" in text
    assert f"IdentityFile {spec.dir / 'id_ed25519'}" in text and "StrictHostKeyChecking yes" in text
    assert "Host pi-arm64" not in text  # not running
    assert (spec.dir / "known_hosts").read_text() == "10.232.1.2 ssh-ed25519 AAAAkey\n"
    assert "Host debian-v2" not in machine.write_ssh_config().read_text()  # no longer booting


def test_qemu_is_told_the_devices_machine_cpu_and_links():
    pi = device_spec("pi-arm64-nomemcg")
    argv = machine.qemu_argv(pi, "tcg", 2222)
    assert argv[0] == "qemu-system-aarch64" and argv[argv.index("-M") + 1] == "virt"
    assert argv[argv.index("-cpu") + 1] == "cortex-a72" and argv[argv.index("-smp") + 1] == "2"
    append = argv[argv.index("-append") + 1]
    assert "console=ttyAMA0" in append and "cgroup_disable=memory" in append
    assert "user,id=wan,hostfwd=tcp:127.0.0.1:2222-:22" in argv
    assert f"tap,id=lan,ifname={pi.tap},script=no,downscript=no" in argv
    v2 = machine.qemu_argv(device_spec("debian-v2"), "tcg", 2222)
    assert "modprobe.blacklist=kvm_amd,kvm_intel" in v2[v2.index("-append") + 1]  # no nested KVM in the emulator


def test_mirror_lines_follow_this_machines_apt():
    lines = image.mirror_lines()
    assert lines[0].startswith("deb http") and lines[0].endswith("/debian bookworm main")
    assert lines[2].endswith("-security bookworm-security main")


def test_rows_and_limits_say_what_an_emulated_device_without_memory_controller_is():
    assert platform_of({"arch": "aarch64", "emulated_device": "emulated device (aarch64, ...)"}) == \
        "aarch64 (emulated device)"
    assert platform_of({"arch": "x86_64", "emulated_device": None}) == "x86_64"
    applied = parse_limits("cgroup_version=2\ncgroup_path=/system.slice/docker-1.scope\nmemory_controller=0\n"
                           "memory_max=\ncpu_max=100000 100000\ncpuset=0\n")
    assert applied.memory_controller is False and applied.memory_mb is None and applied.cpus == 1.0
    note = verify_limits(Limits(cpus=1, memory_mb=64, cpuset="0"), applied)
    assert note.startswith("memory limit of 64 MiB not applied: the device's kernel has no memory controller")
    assert "cgroup_enable=memory" in note and "cpus" not in note
    assert parse_limits("cgroup_version=2\nmemory_controller=1\nmemory_max=67108864\n").memory_controller is True


def test_compare_names_an_emulated_device_as_one():
    from edgebench.comparison.runs import device_name as _device
    facts = {"target": "pi-arm64", "arch": "aarch64", "hostname": "pi-arm64",
             "emulated_device": "emulated device (...)"}
    assert _device(facts) == "pi-arm64 (emulated aarch64)"
    assert _device({"target": "local", "hostname": "lab1"}) == "local (lab1)"


def test_provisioning_brings_what_a_fresh_debian_lacks():
    """Found on the emulated debian-v2: Docker's runs need apparmor_parser where the kernel has
    AppArmor on, and NPB's build needs make; neither comes with a fresh Debian or as a dependency."""
    from edgebench.provisioning.apt import packages_for
    names = {p.name for p in packages_for("debian", "aarch64")[0]}
    assert {"apparmor", "make", "docker.io", "lxd"} <= names


def test_a_figure_from_an_emulated_device_says_so_once(tmp_path, monkeypatch):
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from edgebench.plotting import style
    monkeypatch.setattr(style, "FIGURES_DIR", tmp_path / "figures")
    emulated, real = tmp_path / "emulated", tmp_path / "real"
    for run, facts in ((emulated, {"target": "pi-arm64", "emulated_device": "emulated device (aarch64, ...)"}),
                       (real, {"target": "pi4", "emulated_device": None})):
        run.mkdir()
        (run / "meta.json").write_text(json.dumps({"target": facts}))
    fig, _ = plt.subplots()
    style.save_figure(fig, "demo", "a", emulated)
    style.save_figure(fig, "demo", "b", emulated)  # saved twice, marked once
    marks = [" ".join(t.get_text().split()) for t in fig.texts if t.get_gid() == style.FIGURE_NOTES_MARK]
    assert marks == ["pi-arm64: emulated device (aarch64, ...). Its numbers measure QEMU's emulator, not a device."]
    fig2, _ = plt.subplots()
    style.save_figure(fig2, "demo", "c", real)
    assert not fig2.texts


def test_a_figure_says_which_runtime_it_cannot_draw_because_every_row_failed(tmp_path, monkeypatch):
    """Home automation's figure dropped unikraft and linux-vm without a word when all their rows
    failed; a runtime with one ok row is drawn and not named."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from edgebench.plotting import style
    monkeypatch.setattr(style, "FIGURES_DIR", tmp_path / "figures")
    run = tmp_path / "run"
    run.mkdir()
    (run / "meta.json").write_text(json.dumps({"target": {"target": "local"}}))
    (run / "results.csv").write_text(
        "runtime,metric,value,status,error\n"
        "native,request_time,0.1,ok,\n"
        "linux-vm,request_time,,failed,curl: (35) Recv failure: Connection reset by peer\n"
        "linux-vm,request_time,,failed,curl: (35) Recv failure: Connection reset by peer\n"
        "docker,request_time,,failed,timed out\ndocker,request_time,0.2,ok,\n"
        "lxd,energy_j,,not measurable,no power meter\n")
    fig, _ = plt.subplots()
    style.save_figure(fig, "demo", "a", run)
    (mark,) = [" ".join(t.get_text().split()) for t in fig.texts if t.get_gid() == style.FIGURE_NOTES_MARK]
    # What could not be measured is not said to have failed (the summary counts the two apart).
    assert mark == ("linux-vm is not drawn: every row failed (curl: (35) Recv failure: Connection reset by peer) "
                    "lxd is not drawn: every row is not measurable here (no power meter)")


def test_a_figure_says_which_memory_levels_a_device_without_memory_controller_did_not_run(tmp_path, monkeypatch):
    """On pi-arm64-nomemcg io_bound's figure showed the rich level alone, with no word of the 256
    and 64 MiB points its rows call not measurable (a cgroup's limit would not apply)."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from edgebench.experiments.protocols import memory_not_applicable
    from edgebench.plotting import style
    from edgebench.runtimes import RUNTIMES
    monkeypatch.setattr(style, "FIGURES_DIR", tmp_path / "figures")
    facts = {"target": "pi-arm64-nomemcg", "memory_controller": "no", "memory_mb": 977}
    run = tmp_path / "run"
    run.mkdir()
    (run / "meta.json").write_text(json.dumps({"target": facts}))
    rows = [dict(runtime=rt, memory_mb=m, status="not measurable", error=memory_not_applicable(RUNTIMES[rt], m, facts))
            for rt in ("lxd", "native") for m in (64, 256)]
    rows += [dict(runtime=rt, memory_mb=977, status="ok", error="") for rt in ("native", "lxd", "docker")]
    rows += [dict(runtime="docker", memory_mb=256, status="not measurable", error="no power meter")]
    pd.DataFrame(rows).assign(metric="requests_per_second").to_csv(run / "results.csv", index=False)
    assert all(r["error"] for r in rows[:4])  # the real rule's words, as the sweep writes them
    fig, _ = plt.subplots()
    style.save_figure(fig, "demo", "a", run)
    (mark,) = [" ".join(t.get_text().split()) for t in fig.texts if t.get_gid() == style.FIGURE_NOTES_MARK]
    assert mark == ("Not drawn: native, lxd at 256 MiB, 64 MiB (not run: the device's kernel has no memory "
                    "controller, so a cgroup's limit would not apply).")


def test_booting_a_cached_image_asks_only_for_what_a_boot_needs(monkeypatch):
    """Found on a machine provisioned afresh: the cached pi-arm64 image booted into
    FileNotFoundError 'qemu-system-aarch64' (its build had installed it; the boot checked nothing)."""
    from edgebench.devices import image
    from edgebench.devices.spec import device_spec
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(image.shutil, "which", lambda tool, path=None: None)
    boot = image.host_missing(device_spec("pi-arm64"), boot_only=True)
    assert boot == {"qemu-system-aarch64": "qemu-system-arm", "ip": "iproute2"}
    assert "mmdebstrap" in image.host_missing(device_spec("pi-arm64"))  # a build needs the rest


def test_the_page_of_a_device_without_memory_controller_says_what_it_still_measures():
    """It said "A sweep over memory measures nothing on this device", though the device's own
    memory (time_to_ready's level, io_bound's rich level) and VMs' memory are measured."""
    from edgebench.plotting.tables import device_notes
    (line,) = device_notes({}, {"memory_limits": "memory limits are not applied on pi-arm64-nomemcg"})
    assert "measures nothing" not in line
    assert "less memory than the device has are not run here" in line and "own memory" in line


def test_a_page_with_nothing_the_device_can_measure_says_so_and_does_not_fail(tmp_path, monkeypatch):
    """min_memory and boot_time on a device without a memory controller: every point is not run
    (a cgroup's limit would not apply), and their pages failed on NoData, so `make figures` called
    two notebooks failed on a stock Raspberry Pi. A run with a failed row and nothing ok still fails."""
    import json

    import pandas as pd
    from edgebench.experiments import min_memory
    from edgebench.experiments.protocols import memory_not_applicable
    from edgebench.plotting import NoData, page
    from edgebench.plotting import min_memory as plots
    from edgebench.plotting.tables import run_notes
    from edgebench.runtimes import RUNTIMES
    shown = []
    monkeypatch.setattr(page, "display", lambda what, **_: shown.append(getattr(what, "data", what)))
    facts = {"target": "pi-arm64-nomemcg", "memory_controller": "no", "memory_mb": 977}
    run = tmp_path / "run"
    run.mkdir()
    (run / "meta.json").write_text(json.dumps({"target": facts}))
    rows = [dict(runtime=rt, app=app, point_id=f"{rt}-{app}", metric="min_memory", value=None, status="not measurable",
                 error=memory_not_applicable(RUNTIMES[rt], RUNTIMES[rt].min_memory_mb, facts))
            for rt in ("native", "docker", "lxd") for app in ("go-http", "redis")]
    pd.DataFrame(rows).to_csv(run / "results.csv", index=False)
    made = plots.show(run, min_memory.Params())
    assert made.table.empty and len(made.df) == 6
    assert shown[-1].startswith("**Nothing measured on this device:** all 6 of its points are not measurable here")
    # The notes above say it once for every runtime and level, not a reason per row; another reason
    # is cut at a word (at 160 characters it read "cgroup_enable=memo").
    long_reason = "no power meter on pi-arm64-nomemcg: " + "powercap zone without an energy counter; " * 8
    notes = run_notes(run, pd.DataFrame(rows + [dict(rows[0], metric="energy", error=long_reason)]))
    assert ("- Not drawn: native, docker, lxd at its memory limits (not run: the device's kernel has no memory "
            "controller, so a cgroup's limit would not apply).") in notes
    assert "**1 row not measurable here** (not failures; native): no power meter" in notes
    assert "is in no figure" not in notes  # not once more per runtime
    assert "energy counter; powercap zone ... (1)" in notes  # the 260th character falls inside a word
    pd.DataFrame(rows + [dict(rows[0], status="failed", error="timed out")]).to_csv(run / "results.csv", index=False)
    with pytest.raises(NoData):
        plots.show(run, min_memory.Params())
