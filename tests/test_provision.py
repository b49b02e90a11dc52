"""`make provision`: the plan (which packages, which install command), and that `--check` and a
second run change nothing. The plan and the executor's decisions are tested against a scripted
target; the last tests run against this machine."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest
from conftest import ScriptedTarget, need
from edgebench.provisioning import provision as pv
from edgebench.provisioning.apt import Package
from edgebench.provisioning.needs import parse_versions
from edgebench.runtimes import RUNTIMES, docker_daemon
from edgebench.runtimes.linux_guest import DESCRIBE_KIT

DEBIAN = {"os_id": "debian", "os_like": "", "os_name": "Debian GNU/Linux 12 (bookworm)"}


# -- the plan, as data ------------------------------------------------------------------------

@pytest.mark.parametrize("survey,family", [
    (DEBIAN, "debian"),
    ({"os_id": "ubuntu", "os_like": "debian"}, "ubuntu"),
    ({"os_id": "raspbian", "os_like": "debian"}, "raspbian"),
    ({"os_id": "linuxmint", "os_like": "ubuntu debian"}, "ubuntu"),
    ({"os_id": "fedora", "os_like": ""}, None),
    ({"os_id": "alpine"}, None),
])
def test_os_family(survey, family):
    assert pv.os_family(survey) == family


def names(family, arch, kernel="6.1.0-18-amd64"):
    packages, unresolved = pv.packages_for(family, arch, kernel)
    return [p.name for p in packages], unresolved


@pytest.mark.parametrize("arch,qemu", [("x86_64", "qemu-system-x86"), ("aarch64", "qemu-system-arm"),
                                       ("armv7l", "qemu-system-arm")])
def test_qemu_follows_the_architecture(arch, qemu):
    pkgs, unresolved = names("debian", arch)
    assert qemu in pkgs and not unresolved
    assert [p for p in pkgs if p.startswith("qemu-system-")] == [qemu]


def test_every_purpose_is_covered_on_debian():
    pkgs, _ = names("debian", "x86_64")
    for p in ("docker.io", "wrk", "sysbench", "iperf3", "lxd", "debootstrap", "qemu-system-x86",
              "linux-perf", "ncompress", "openssl", "curl", "nodejs", "procps", "iproute2"):
        assert p in pkgs
    assert len(pkgs) == len(set(pkgs))


def test_perf_is_linux_tools_on_ubuntu():
    pkgs, _ = names("ubuntu", "aarch64", "5.15.0-1049-raspi")
    assert "linux-perf" not in pkgs
    assert "linux-tools-common" in pkgs and "linux-tools-5.15.0-1049-raspi" in pkgs


def test_an_architecture_without_qemu_is_reported_not_fatal():
    pkgs, unresolved = names("debian", "riscv64")
    assert not any(p.startswith("qemu-system") for p in pkgs)
    assert "riscv64" in unresolved["qemu"]


def test_unknown_package_manager_lists_what_to_install_by_hand():
    with pytest.raises(pv.UnsupportedTarget) as e:
        pv.packages_for("fedora", "x86_64")
    msg = str(e.value)
    assert "apt-get" in msg and "Install these with its package manager" in msg
    for what in ("Docker", "wrk", "sysbench", "iperf3", "LXD", "debootstrap", "qemu", "perf", "compress",
                 "openssl", "curl", "node", "ops.city"):
        assert what in msg


def plan_for(installed, candidates, on_path=None, arch="x86_64"):
    packages, unresolved = pv.packages_for("debian", arch)
    return pv.make_plan("debian", arch, packages, installed, on_path or {}, candidates, unresolved)


ALL = names("debian", "x86_64")[0]


def test_plan_installs_only_what_is_missing():
    installed = {p: "1.0" for p in ALL if p not in ("sysbench", "qemu-system-x86", "ncompress")}
    plan = plan_for(installed, {"sysbench": "1.0.20", "qemu-system-x86": "1:7.2", "ncompress": "4.2"})
    assert plan.to_install == ["qemu-system-x86", "sysbench", "ncompress"]  # in PURPOSES order
    assert pv.install_argv(plan.to_install) == [
        "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", "--no-install-recommends",
        "-o", "DPkg::Lock::Timeout=300", "-o", "Dpkg::Options::=--force-confdef",
        "-o", "Dpkg::Options::=--force-confold", "qemu-system-x86", "sysbench", "ncompress"]
    assert pv.install_argv(["wrk"], ["sudo", "-n"])[:4] == ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    assert not plan.unavailable


def test_plan_on_aarch64_installs_qemu_system_arm():
    installed = {p: "1" for p in names("debian", "aarch64")[0] if not p.startswith("qemu-system")}
    plan = plan_for(installed, {"qemu-system-arm": "1:7.2"}, arch="aarch64")
    assert plan.to_install == ["qemu-system-arm"]


def test_nothing_missing_means_nothing_to_do():
    plan = plan_for({p: "1" for p in ALL}, {})
    assert plan.to_install == [] and plan.missing == [] and len(plan.present) == len(ALL)


def test_a_package_without_candidate_is_unavailable_not_installed():
    installed = {p: "1" for p in ALL if p not in ("lxd", "wrk")}
    plan = plan_for(installed, {"lxd": None, "wrk": "4.1"})
    assert plan.to_install == ["wrk"]
    assert list(plan.unavailable) == ["lxd"]
    assert "not in the target's debian repositories" in plan.unavailable["lxd"]
    assert "lxd runtime" in plan.unavailable["lxd"]


def test_what_runs_a_part_on_path_satisfies_its_package():
    # Docker CE (conflicts with docker.io) and node from nodesource/nvm must not be replaced.
    docker = ("docker.io", "containerd", "runc")
    installed = {p: "1" for p in ALL if p not in (*docker, "nodejs")}
    installed.update({"docker-ce": "27.0", "containerd.io": "1.7"})
    plan = plan_for(installed, {p: "1" for p in (*docker, "nodejs")},
                    on_path={"docker": "/usr/bin/docker", "dockerd": "/usr/bin/dockerd",
                             "containerd": "/usr/bin/containerd", "runc": "/usr/bin/runc",
                             "node": "/home/pi/.nvm/bin/node"})
    assert plan.to_install == [] and plan.missing == [] and plan.notes == []


DOCKER_DAEMON = ("docker.io", "containerd", "runc", "iptables")


def test_a_docker_client_without_its_daemon_plans_docker_io():
    """The fresh machine of issue 11: /usr/local/bin/docker, but no dockerd, containerd, runc."""
    installed = {p: "1" for p in ALL if p not in DOCKER_DAEMON}
    plan = plan_for(installed, {p: "1" for p in DOCKER_DAEMON}, on_path={"docker": "/usr/local/bin/docker"})
    assert plan.to_install == list(DOCKER_DAEMON)
    (note,) = plan.notes
    assert "/usr/local/bin/docker is a client without what runs it (no dockerd)" in note
    assert "docker.io brings it" in note


def test_docker_ce_client_is_not_replaced_by_docker_io():
    """docker.io conflicts with docker-ce-cli: apt would remove it. Say what to do instead."""
    installed = {p: "1" for p in ALL if p not in DOCKER_DAEMON}
    installed["docker-ce-cli"] = "27.0"
    plan = plan_for(installed, {p: "1" for p in DOCKER_DAEMON}, on_path={"docker": "/usr/bin/docker"})
    assert "docker.io" not in plan.to_install and "containerd" in plan.to_install
    why = plan.unavailable["docker.io"]
    assert "docker-ce-cli" in why and "conflict" in why and "remove docker-ce-cli" in why


def test_lxd_without_a_firewall_tool_plans_iptables_and_nft_satisfies_it():
    installed = {p: "1" for p in ALL if p != "iptables"}
    assert plan_for(installed, {"iptables": "1.8"}).to_install == ["iptables"]
    packages, _ = pv.packages_for("debian", "x86_64")
    (iptables,) = [p for p in packages if p.name == "iptables"]
    assert "lxd runtime" in iptables.purpose and "docker runtime" in iptables.purpose
    from edgebench.runtimes.lxd_image import NEEDS as LXD_NEEDS
    (firewall,) = [n for n in LXD_NEEDS.packages if n.package == "iptables"]
    lxd_only = Package(firewall, "lxd runtime")
    plan = pv.make_plan("debian", "x86_64", [lxd_only], {}, {"nft": "/usr/sbin/nft"}, {"iptables": "1.8"})
    assert plan.to_install == [] and plan.states[0].on_path == "/usr/sbin/nft"


def test_sshd_only_for_the_tests():
    assert "openssh-server" not in names("debian", "x86_64")[0]
    packages, _ = pv.packages_for("debian", "x86_64", for_tests=True)
    assert "openssh-server" in [p.name for p in packages]


def test_parse_dpkg_query_counts_only_installed():
    text = ("docker.io\tii \t20.10.24\nwrk\trc \t4.1.0\nlxd\thi \t5.0.2\n"
            "libc6:amd64\tii \t2.36\nsysbench\tun \t\n")
    assert pv.parse_dpkg_query(text) == {"docker.io": "20.10.24", "lxd": "5.0.2", "libc6": "2.36"}


def test_parse_apt_policy():
    text = """qemu-system-x86:
  Installed: (none)
  Candidate: 1:7.2+dfsg-7+deb12u18+b3
  Version table:
     1:7.2+dfsg-7+deb12u18+b3 500
lxd:
  Installed: (none)
  Candidate: (none)
  Version table:
"""
    assert pv.parse_apt_policy(text) == {"qemu-system-x86": "1:7.2+dfsg-7+deb12u18+b3", "lxd": None}


def test_versions_table_parsing():
    tools = pv.table_versions("x86_64")
    text = ("wrk\t1\t/usr/bin/wrk\twrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer\n"
            "perf\t2\t/usr/bin/perf\tWARNING: perf not found for kernel 5.15.0-91\n"
            "openssl\t0\t/usr/bin/openssl\tOpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19)\n"
            "node\t0\t/usr/bin/node\tv20.20.2\n"
            "ops\tabsent\t\t\n")
    s = parse_versions(text, tools)
    assert (s["wrk"].ok, s["wrk"].version) == (True, "4.1.0-3+b2")
    assert not s["perf"].ok and "perf not found for kernel" in s["perf"].detail
    assert s["openssl"].version == "3.0.19" and s["node"].version == "20.20.2"
    assert not s["ops"].ok and s["ops"].detail == "not installed"
    assert not s["sysbench"].ok  # not in the output at all


# -- the executor, against a scripted target ---------------------------------------------------

READ_ONLY = ("sh -c 'export PATH=", "dpkg-query ", "apt-cache policy ", "docker version ", "docker info ", "lxc query ",
             "curl -sfI ", "command -v ", "sh -c 'command -v ", "sha256sum ", "cat ",
             shlex.join(["sh", "-c", DESCRIBE_KIT]), "ls -1 ",  # is the linux-vm kit there
             "test -x ")  # iozone: is the one provisioning fetched there


def survey(os_id="debian", apt=True, privilege="root", pid1="init", commands=("docker", "dockerd", "curl"),
           os_like=""):
    lines = [f"os_id={os_id}", f"os_like={os_like}", f"os_name={os_id} test", f"pid1={pid1}",
             f"apt_get={'/usr/bin/apt-get' if apt else ''}", f"privilege={privilege}", "apt_lists=3",
             "apt_update_age_s=60"]
    lines += [f"cmd:{c}=/usr/bin/{c}" for c in commands]
    return "\n".join(lines) + "\n"


def scripted(missing=(), unavailable=(), privilege="root", docker_up=True, fail=(), **kw):
    """A Debian target where `missing` are not installed (`unavailable` of them not in the
    repositories); apt-get install installs its packages unless one of them is in `fail`."""
    installed = {p for p in ALL if p not in missing}

    def dpkg(cmd):
        return "".join(f"{p}\tii \t1.0\n" for p in sorted(installed) if f" {p}" in cmd), 0

    def install(cmd):
        pkgs = cmd.split("--force-confold ", 1)[1].split()
        if set(pkgs) & set(fail):
            return "", 100
        installed.update(pkgs)
        return "", 0

    def policy(cmd):
        return "".join(f"{p}:\n  Installed: (none)\n  Candidate: {'(none)' if p in unavailable else '1.0'}\n"
                       for p in missing if f" {p}" in cmd), 0

    return ScriptedTarget([
        ("apt_lists=", survey(privilege=privilege, **kw)),
        ("dpkg-query", dpkg),
        ("apt-cache policy", policy),
        ("apt-get install", install),
        ("docker version", ("27.0", 0) if docker_up else ("", 1)),
        ("curl -sfI", ("", 6)),
    ], read_only=READ_ONLY)


QUIET = dict(log=lambda msg: None)


def test_fresh_machine_installs_the_docker_daemon_and_iptables_before_lxd_is_set_up(monkeypatch):
    """Only a docker client on PATH, no iptables: the plan installs docker.io (which brings dockerd)
    and iptables, and both are installed before tools/lxd/setup.sh runs."""
    import edgebench.runtimes.lxd_image as lxd_image
    monkeypatch.setattr(lxd_image, "ensure_image", lambda target: type("I", (), {
        "alias": "edgebench/debian-bookworm", "built": False, "imported": False})())
    t = scripted(missing=DOCKER_DAEMON, commands=("docker", "lxd", "lxc", "curl"))
    t.answers.insert(0, ("sha256sum", ("", 1)))
    check = pv.provision(t, check=True, **QUIET)
    assert check.would_install == list(DOCKER_DAEMON)
    assert any("a client without what runs it" in n for n in check.notes)
    assert "note: docker at /usr/bin/docker is a client" in check.table()
    t.commands.clear()
    report = pv.provision(t, **QUIET)
    assert report.installed_now == list(DOCKER_DAEMON), report.failed
    changing = t.changing()
    install = next(i for i, c in enumerate(changing) if "apt-get install" in c)
    lxd = next(i for i, c in enumerate(changing) if "lxd-setup.sh" in c)
    assert install < lxd and "iptables" in changing[install]


def test_before_a_run_without_root_it_reports_and_changes_nothing():
    t = scripted(missing=("wrk",), privilege="none")
    t._facts.update(uid=1000, user="pi", home="/home/pi")
    report = pv.provision(t, before_run=True, **QUIET)
    assert report.unprivileged and report.check and report.would_install == ["wrk"]
    assert t.changing() == [] and t.uploads == []
    assert "would do (needs root): apt-get update; apt-get install wrk" in report.brief()


def test_check_changes_nothing():
    t = scripted(missing=("sysbench", "qemu-system-x86"), docker_up=False,
                 commands=("docker", "dockerd", "lxd", "curl"))
    report = pv.provision(t, check=True, **QUIET)
    assert report.check and report.would_install == ["qemu-system-x86", "sysbench"]
    assert report.installed_now == []
    assert t.changing() == [] and t.uploads == []
    assert any("apt-get install qemu-system-x86 sysbench" in a for a in report.actions)
    assert any("start the Docker daemon (dockerd" in a for a in report.actions)
    assert "2 to install (qemu-system-x86 sysbench)" in report.table()


def test_check_works_without_root_but_provisioning_refuses_first():
    t = scripted(missing=("wrk",), privilege="none")
    t._facts.update(uid=1000, user="pi", home="/home/pi")
    assert pv.provision(t, check=True, **QUIET).would_install == ["wrk"]
    t.commands.clear()
    with pytest.raises(pv.ProvisionError) as e:
        pv.provision(t, **QUIET)
    assert "passwordless sudo" in str(e.value) and "/etc/sudoers.d/" in str(e.value) and "pi" in str(e.value)
    assert t.changing() == [] and t.uploads == []


def test_sudo_is_used_when_not_root():
    t = scripted(missing=("wrk",), privilege="sudo")
    t._facts.update(uid=1000, user="pi", home="/home/pi")
    pv.provision(t, **QUIET)
    installs = t.ran("apt-get install")
    assert installs and all(c.startswith("sudo -n env DEBIAN_FRONTEND=noninteractive apt-get") for c in installs)


def test_unknown_package_manager_stops_before_anything():
    t = ScriptedTarget([("apt_lists=", survey(os_id="fedora", apt=False))])
    with pytest.raises(pv.UnsupportedTarget) as e:
        pv.provision(t, **QUIET)
    assert "fedora" in str(e.value) and "sysbench" in str(e.value)
    assert t.commands and all(c.startswith(READ_ONLY[0]) for c in t.commands)  # the survey only


def test_install_builds_one_command_and_reports_unavailable_without_failing():
    t = scripted(missing=("sysbench", "lxd"), unavailable=("lxd",))
    report = pv.provision(t, **QUIET)
    installs = t.ran("apt-get install")
    assert len(installs) == 1 and installs[0].endswith("--force-confold sysbench")
    assert len(t.ran("apt-get update")) == 1  # before installing, once
    assert report.unavailable == {"lxd": "not in the target's debian repositories (needed for lxd runtime)"}
    assert report.ok and report.installed_now == ["sysbench"]
    assert "1 not available" in report.summary()


def test_a_failing_package_is_isolated_and_reported():
    t = scripted(missing=("sysbench", "wrk"), fail=("wrk",))
    report = pv.provision(t, **QUIET)
    assert [c.split("--force-confold ")[1] for c in t.ran("apt-get install")] == [
        "wrk sysbench", "wrk", "sysbench"]  # together, then one at a time
    assert list(report.failed) == ["wrk"] and "apt-get install failed" in report.failed["wrk"]
    assert report.installed_now == ["sysbench"]
    assert not report.ok


def test_second_run_with_everything_installed_does_nothing():
    t = scripted()
    report = pv.provision(t, **QUIET)
    assert report.installed_now == [] and report.already_installed == ALL
    assert t.changing() == []
    assert f"{len(ALL)} already installed, 0 installed now" in report.summary()


def test_docker_is_started_by_hand_without_systemd():
    state = {"calls": 0}

    def docker_version(cmd):
        state["calls"] += 1
        return ("27.0", 0) if state["calls"] > 2 else ("", 1)
    t = scripted()
    t.answers.insert(0, ("docker version", docker_version))
    report = pv.provision(t, **QUIET)
    start = t.ran("dockerd")
    assert len(start) == 1 and "setsid nohup dockerd" in start[0]
    assert "/root/.cache/edgebench/dockerd.log" in start[0]
    assert not t.ran("systemctl")
    assert report.ok and any("started the Docker daemon" in a for a in report.actions)


def test_docker_uses_systemctl_under_systemd():
    t = scripted(docker_up=False, pid1="systemd")
    t.answers.insert(0, ("systemctl start docker", ("", 0)))
    docker_daemon.WAIT_S, saved = 0, docker_daemon.WAIT_S
    try:
        report = pv.provision(t, **QUIET)
    finally:
        docker_daemon.WAIT_S = saved
    assert t.ran("systemctl start docker") and not t.ran("dockerd")
    assert "docker daemon" in report.failed  # it never answered


def test_lxd_setup_script_is_uploaded_and_run(monkeypatch):
    import edgebench.runtimes.lxd_image as lxd_image
    monkeypatch.setattr(lxd_image, "ensure_image", lambda target: type("I", (), {
        "alias": "edgebench/debian-bookworm", "built": False, "imported": False})())
    t = scripted(commands=("docker", "dockerd", "lxd", "curl"))
    t.answers.insert(0, ("sha256sum", ("", 1)))
    report = pv.provision(t, **QUIET)
    assert report.ok, report.failed
    script = "/root/.cache/edgebench/bin/lxd-setup.sh"
    (staged,) = t.uploads  # staged beside it, then renamed into place
    assert staged.startswith(script + ".part-") and t.ran(f"mv -f {staged} {script}")
    assert t.ran("sh /root/.cache/edgebench/bin/lxd-setup.sh")


def test_table_has_a_row_for_every_runtime_and_tool():
    report = pv.provision(scripted(), check=True, **QUIET)
    rows = {(r.kind, r.name) for r in report.rows}
    for name in RUNTIMES:
        assert ("runtime", name) in rows
    for tool in pv.table_versions("x86_64"):
        assert ("tool", tool.name) in rows
    nanos = next(r for r in report.rows if r.name == "nanos")
    if not nanos.ok:  # the scripted machine has no ops: the row names every part and its state
        assert "no ops" in nanos.detail
        assert "ops missing" in nanos.detail and "qemu-system-x86_64" in nanos.detail and "kvm: yes" in nanos.detail


def test_named_runtimes_keep_the_tools_but_not_the_other_runtimes():
    """`make figures RUNTIMES=native,docker`: LXD's base image (debootstrap, 10 minutes on an
    emulated Pi) and the VMs' kits are not set up; wrk and perf are."""
    t = scripted(missing=("wrk", "lxd", "qemu-system-x86"), commands=("docker", "dockerd", "curl"))
    report = pv.provision(t, check=True, runtimes=("native", "docker"), tools=True, **QUIET)
    assert report.would_install == ["wrk"]
    names = {r.name for r in report.rows}
    assert {"native", "docker", "wrk", "perf"} <= names and not {"lxd", "linux-vm", "qemu-system-x86_64"} & names
    assert not any("LXD" in a or "lxd" in a for a in report.actions), report.actions
    bare = pv.provision(scripted(missing=("wrk",)), check=True, runtimes=("native", "docker"), **QUIET)
    assert bare.would_install == [] and "wrk" not in {r.name for r in bare.rows}  # the test devices' way


def test_make_figures_provisions_only_runtimes_named_one_by_one(monkeypatch):
    from edgebench.drivers import figures
    calls = []
    monkeypatch.setattr(figures.provision, "main", lambda argv: calls.append(argv) or 0)
    for runtimes in ("native,docker", "auto", "auto,docker-crun", None):
        figures.provision_first("pi", runtimes=runtimes)
    assert calls[0][-3:] == ["--runtimes", "native,docker", "--with-tools"]
    assert all("--runtimes" not in argv for argv in calls[1:])


def test_a_load_generator_gets_its_tools_and_no_runtime():
    """A fresh laptop driving a Pi: `make figures TARGET=pi` set up the Pi, and time to ready's
    first starts then failed for want of a registry here, services for want of wrk."""
    loadgen = [n for n in pv.TOOL_NEEDS if n.on_load_generator]
    packages = {need.package for n in loadgen for need in n.packages}
    assert {"wrk", "apache2-utils", "iperf3", "redis-tools", "docker-registry", "curl"} <= packages
    t = scripted(missing=("wrk", "redis-tools", "docker-registry", "docker.io", "lxd", "gcc", "nginx", "sysbench"))
    report = pv.provision(t, check=True, load_generator=True, **QUIET)
    assert sorted(report.would_install) == ["docker-registry", "redis-tools", "wrk"]
    names = {r.name for r in report.rows}
    assert "wrk" in names and not set(RUNTIMES) & names and not {"sysbench", "cc", "nginx"} & names


def test_make_figures_provisions_the_load_generator_when_it_is_another_host(monkeypatch):
    from edgebench.drivers import figures, fleet
    calls = []
    monkeypatch.setattr(figures.provision, "main", lambda argv: calls.append(argv) or 0)
    figures.provision_first("pi")  # the load generator is this machine
    assert calls == [["--target", "pi", "--before-run"], ["--target", "local", "--before-run", "--load-generator"]]
    for target, lg in (("local", "local"), ("localhost", "local"), ("pi", "pi"), ("pi", None)):
        calls.clear()
        figures.provision_first(target, load_generator=lg)  # None: a fleet provisioned it already
        assert [argv[1] for argv in calls] == [target], (target, lg)
    calls.clear()
    figures.provision_first("local", load_generator="lg@box")
    assert calls[1] == ["--target", "lg@box", "--before-run", "--load-generator"]
    # A fleet provisions each shared load generator once, before its devices' drivers start.
    monkeypatch.setattr(pv, "main", lambda argv: calls.append(argv) or 0)
    calls.clear()
    fleet.provision_load_generators([fleet.Device("pi1", "pi@a", "local"), fleet.Device("pi2", "pi@b", "local"),
                                     fleet.Device("box", "local", "local")])
    assert calls == [["--target", "local", "--before-run", "--load-generator"]]


# -- this machine --------------------------------------------------------------------------

ROW = re.compile(r"^(runtime|tool)\s+(\S+)\s+(ok|missing)\s+(.*)$")


def test_check_prints_a_row_for_every_runtime_and_tool(local):
    r = subprocess.run([sys.executable, "-m", "edgebench.provisioning.provision", "--target", "local", "--check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    rows = {m.group(2): m.group(3) for m in map(ROW.match, r.stdout.splitlines()) if m}
    expected = list(RUNTIMES) + [t.name for t in pv.table_versions(local.facts()["arch"])]
    assert [n for n in expected if n not in rows] == [], r.stdout
    assert rows["native"] == "ok"
    assert re.search(r"^packages: \d+ already installed, \d+ to install", r.stdout, re.M), r.stdout


def test_check_of_a_load_generator_lists_only_its_tools(local):
    r = subprocess.run([sys.executable, "-m", "edgebench.provisioning.provision", "--target", "local", "--check",
                        "--load-generator"], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    rows = {m.group(2): m.group(1) for m in map(ROW.match, r.stdout.splitlines()) if m}
    wanted = {v.name for n in pv.TOOL_NEEDS if n.on_load_generator for v in n.versions}
    assert set(rows) == wanted and set(rows.values()) == {"tool"}, r.stdout


def test_a_second_run_installs_nothing_and_is_quick(local):
    """A real run on a machine `make provision` already prepared (CI does, before the tests)."""
    need("provision", None if local.is_root else "a real provisioning run needs root")
    try:
        before = pv.provision(local, check=True, for_tests=True, **QUIET)
    except pv.UnsupportedTarget as e:
        need("provision", str(e))
    need("provision", f"this machine is not provisioned (would install {' '.join(before.would_install)}); "
         "run `make provision` first" if before.would_install else None)
    start = time.monotonic()
    # As `make test` provisions (for_tests).
    report = pv.provision(local, for_tests=True, **QUIET)
    elapsed = time.monotonic() - start
    assert report.installed_now == [] and not any(a.startswith("apt-get install") for a in report.actions)
    assert f"{len(report.already_installed)} already installed, 0 installed now" in report.summary()
    assert report.ok, report.failed
    assert elapsed < 60, f"a provisioning run with nothing to install took {elapsed:.1f} s"


def test_check_over_ssh_sees_what_local_sees(local, ssh_host):
    """Every command goes through Target.run: the SSH host (this machine behind sshd in a network
    namespace) gets the same plan and the same tool rows."""
    from edgebench.targets import SSHTarget
    with SSHTarget(f"root@{ssh_host.host}", key_file=ssh_host.key_file, known_hosts=ssh_host.known_hosts) as t:
        remote = pv.provision(t, check=True, **QUIET)
    here = pv.provision(local, check=True, **QUIET)
    assert remote.target == f"root@{ssh_host.host}"
    assert remote.would_install == here.would_install and remote.already_installed == here.already_installed
    # ops and NPB: this session's own (OPS_HOME, EDGEBENCH_NPB_DIR from ../shared) reach only this
    # process's commands, not the SSH host's login shell.
    def tools(rep):
        return {(r.name, r.ok) for r in rep.rows if r.kind == "tool" and r.name not in ("ops", "npb")}
    assert tools(remote) == tools(here)
    assert {r.name for r in remote.rows if r.kind == "runtime"} == set(RUNTIMES)


def test_meta_json_records_every_declared_program(local, wrk_ready):
    """tool_versions come from the registry's declarations: one key per program, the version
    where it runs and None where it does not."""
    from edgebench.provisioning.parts import tool_versions, versions_for
    versions = tool_versions(local)
    assert set(versions) == {v.name for v in versions_for(local.facts()["arch"])}
    assert {"docker", "docker_server", "lxd", "ops", "wrk", "go"} <= set(versions)
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout
    assert versions["wrk"] and versions["wrk"] in wrk
    if not shutil.which("ops") and not os.path.exists(os.path.expanduser("~/.ops/bin/ops")):
        assert versions["ops"] is None


def test_oha_is_built_with_cargo_for_figures_and_for_tests():
    """`make test` builds oha as `make figures` does, so that the open-loop path a run takes is the
    one tested; --check only says it would."""
    def with_cargo():
        t = scripted()
        t.answers.insert(0, ("command -v cargo", "/root/.cargo/bin/cargo\n"))
        return t
    t = with_cargo()
    report = pv.provision(t, check=True, **QUIET)
    assert t.ran("cargo install") == [] and any("build oha" in a for a in report.actions)
    for for_tests in (False, True):
        t = with_cargo()
        pv.provision(t, for_tests=for_tests, **QUIET)
        assert t.ran("cargo install") == ["/root/.cargo/bin/cargo install oha --locked --root /usr/local"]


def test_without_cargo_oha_is_missing_with_how_to_get_it():
    report = pv.provision(scripted(), **QUIET)
    row = next(r for r in report.rows if r.name == "oha")
    assert not row.ok and "rustup" in row.detail and "openloop" in row.detail


def test_a_service_a_package_started_is_stopped_where_edgebench_installed_it():
    """redis-server starts and enables its service on install (systemd): edgebench starts Redis
    itself, so it disables the service it brought, and only that one."""
    t = scripted(missing=("redis-server",))
    t.answers.insert(0, ("systemctl disable", ("", 0)))
    report = pv.provision(t, **QUIET)
    assert report.installed_now == ["redis-server"], report.failed
    disabling = t.ran("systemctl disable")
    assert len(disabling) == 1 and "redis-server" in disabling[0] and "/run/systemd/system" in disabling[0]
    assert "systemctl disable --now redis-server" in report.actions
    # Already installed (the user's own Redis): left as it is.
    t = scripted(missing=("sysbench",))
    pv.provision(t, **QUIET)
    assert not t.ran("systemctl disable")


def test_a_version_that_does_not_come_in_time_is_said_so():
    """On the emulated pi-arm64 dockerd --version outlasted its 20 s (exit 124 from timeout), and
    the table said '`dockerd` fails (exit 124)' of a working daemon."""
    from edgebench.provisioning.needs import Version, parse_versions
    states = parse_versions("dockerd\t124\t/usr/sbin/dockerd\t\n", [Version("dockerd", ("dockerd", "--version"))])
    assert not states["dockerd"].ok and "gave no version within 90 s" in states["dockerd"].detail
