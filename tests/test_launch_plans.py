"""Every registered runtime turns the limits into its own configuration: a launch plan for go-http
is built against a scripted target (no daemon, no root, nothing started) and what the runtime
ran or wrote there is checked. Parametrized over the registry, so a new runtime is covered at
once, and fails until its expected configuration is added to SPECIFIC."""

from __future__ import annotations

import json
import shlex

import pytest

from conftest import ScriptedTarget
from edgebench.apps import APPS, BuiltApp
from edgebench.errors import ConfigError
from edgebench.runtimes import RUNTIMES
from edgebench.runtimes.contract import Artifact, LaunchPlan, Limits
from edgebench.runtimes.ops import image_config, load_base_config
from edgebench.runtimes.tags import LAUNCH_TAG

LIMITS = Limits(cpus=1, memory_mb=64, cpuset="0")
# A runtime whose minimum is above 64 MiB gets the same request with more memory.
LIMITS_FOR = {"linux-vm": Limits(cpus=1, memory_mb=128, cpuset="0")}
PORT = 18123
MIB_64 = str(64 * 2**20)
WORKSPACE = "/root/.cache/edgebench"   # the scripted target's home is /root
BINARY = f"{WORKSPACE}/apps/go-http/go-http"
IN_CONTAINER = "/opt/edgebench/go-http/go-http"

# What each runtime's launch_plan asks the target and needs answered (first matching substring
# wins; anything else succeeds with no output).
ANSWERS: dict[str, list] = {
    # ops found (runtimes/ops.py FIND_OPS)
    "nanos": [("command -v ops", "/usr/local/bin/ops\n")],
    # the container stays up after its first start (Lxc.start asks LXD for its state)
    "lxd": [("/state", '{"status": "Running", "pid": 4242}')],
}

# Where each runtime's package() leaves the artifact (Artifact.ref); the built binary otherwise.
REFS = {
    "docker": "edgebench/go-http:offline",
    "docker-crun": "edgebench/go-http:offline",
    "lxd": "edgebench/debian-bookworm",
    "nanos": "/root/.ops/images/edgebench-go-http",
    "linux-vm": f"{WORKSPACE}/linux-vm/go-http.initramfs",
    "unikraft": f"{WORKSPACE}/unikraft/go-http.cpio",
}

# Artifact.details, as each runtime's package() records them (their keys do not collide).
DETAILS = {
    # nanos
    "image_name": "edgebench-go-http",
    "config": image_config(load_base_config("go-http"), APPS["go-http"].container_port),
    "program": f"{WORKSPACE}/nanos/go-http/go-http",
    "program_mode": "static Go binary",
    # lxd
    "image_alias": "edgebench/debian-bookworm",
    "image_fingerprint": "0123456789abcdef",
    "pushes": [(BINARY, IN_CONTAINER)],
    "inner_argv": [IN_CONTAINER],
    "mounts": {},
    # docker
    "image_id": "sha256:0123456789abcdef",
    # linux-vm
    "kernel": f"{WORKSPACE}/linux-vm/kit/root/boot/vmlinuz-6.1.0-56-amd64",
    # unikraft
    "uk_kernel": f"{WORKSPACE}/unikraft/elfloader_qemu-x86_64",
    "initrd": f"{WORKSPACE}/unikraft/go-http.cpio",
}


def artifact(name: str) -> Artifact:
    built = BuiltApp(APPS["go-http"], "x86_64", BINARY, 7_000_000, [BINARY])
    return Artifact(name, "go-http", REFS.get(name, BINARY), 7_000_000, 7_000_000, built, details=dict(DETAILS))


def scripted(name: str) -> ScriptedTarget:
    return ScriptedTarget(list(ANSWERS.get(name, [])), facts={"cores": 4, "memory_mb": 4096})


def plan_for(name: str) -> tuple[LaunchPlan, ScriptedTarget, object]:
    target = scripted(name)
    rt = RUNTIMES[name](target, "plans")
    return rt.launch_plan(artifact(name), LIMITS_FOR.get(name, LIMITS), PORT), target, rt


# -- each runtime's own configuration ------------------------------------------------------

def check_native(plan, target, rt):
    cgroup = plan.state["cgroup"]
    (d,) = cgroup.dirs
    assert d == f"/sys/fs/cgroup/edgebench/{plan.name}"
    # the argv joins the cgroup, then execs the app (tagged, with its port)
    assert plan.argv[:2] == ["sh", "-c"] and f"{d}/cgroup.procs" in plan.argv[2]
    assert plan.argv[3] == "edgebench-launch"
    assert plan.argv[4:] == ["env", f"{LAUNCH_TAG}={plan.name}", f"PORT={PORT}", BINARY]
    # the cgroup is made (untimed) with the limits before the launch; nothing joined it yet
    (create,) = [shlex.split(c)[2] for c in target.commands if "memory.max" in c]  # sh -c SCRIPT
    assert f"echo {MIB_64} > {d}/memory.max" in create
    assert f"echo '100000 100000' > {d}/cpu.max" in create
    assert f"echo 0 > {d}/cpuset.cpus" in create
    assert not any("cgroup.procs" in c for c in target.commands)


def check_docker(plan, target, rt):
    argv = plan.argv
    assert argv[:3] == ["docker", "run", "-d"] and plan.detaches
    for flag in ("--cpus=1", "--memory=64m", "--cpuset-cpus=0"):
        assert flag in argv, argv
    assert "--memory-swap=64m" not in argv  # swap allowed: no memory+swap limit
    assert argv[argv.index("-p") + 1] == f"{PORT}:8080"
    assert argv[argv.index("--name") + 1] == plan.name == plan.state["container"]
    assert REFS[rt.name] in argv and ["-e", "PORT=8080"] == argv[argv.index("-e"):argv.index("-e") + 2]
    assert not any(c.startswith("docker ") for c in target.commands)  # nothing started yet


def check_docker_crun(plan, target, rt):
    """Docker's configuration, run by crun instead of the daemon's default (runc)."""
    check_docker(plan, target, rt)
    assert plan.argv[plan.argv.index("--runtime") + 1] == "crun"


def check_lxd(plan, target, rt):
    name = plan.state["container"]
    (create,) = [c for c in target.commands if "-X POST /1.0/instances" in c]
    words = shlex.split(create)
    body = json.loads(words[words.index("--data") + 1])
    assert body["name"] == name and body["source"]["fingerprint"] == DETAILS["image_fingerprint"]
    config = body["config"]
    assert config["limits.cpu.allowance"] == "100ms/100ms"
    assert config["limits.cpu"] == "0-0"          # a range: a bare "0" would be a CPU count
    assert config["limits.memory"] == MIB_64      # bytes
    assert config["raw.lxc"] == "lxc.cgroup2.cpuset.cpus = 0"
    assert "limits.memory.swap" not in config
    assert config["user.edgebench.run"] == rt.run_tag
    proxy = next(c for c in target.commands if c.startswith("lxc config device add"))
    assert f"listen=tcp:0.0.0.0:{PORT}" in proxy and "connect=tcp:127.0.0.1:8080" in proxy
    service = next(text for cmd, text in target.stdins if "service" in cmd)
    assert "export PORT=8080" in service and f"exec {IN_CONTAINER}" in service
    assert plan.argv[:2] == ["sh", "-c"] and "lxc start" in plan.argv[2] and name in plan.argv


def check_nanos(plan, target, rt):
    config_path = plan.state["config_path"]
    written = target.written(config_path)
    assert written is not None, f"no run configuration written to {config_path}: {target.stdins}"
    run = json.loads(written)["RunConfig"]
    assert run["CPUs"] == 1 and run["Memory"] == "64M"
    assert "Ports" not in run  # forwarded on the command line instead
    argv = plan.argv
    assert argv[0] == "env" and argv[1] == plan.state["tag"]
    assert argv[2:5] == ["taskset", "-c", "0"]   # ops and every QEMU thread on the granted core
    # The console through `probe -stamp` into the launch's stamps file (its boot phases), then ops.
    assert argv[5:7] == ["sh", "-c"] and argv[8:10] == ["console-stamp", plan.state["console_stamps"]]
    ops = argv[argv.index("/usr/local/bin/ops"):]
    assert ops[:2] == ["/usr/local/bin/ops", "run"] and "-s" in ops
    assert ops[ops.index("-c") + 1] == config_path
    assert ops[ops.index("-i") + 1] == DETAILS["image_name"]
    assert ops[ops.index("-p") + 1] == f"{PORT}-8080"


def check_linux_vm(plan, target, rt):
    argv = plan.argv
    assert argv[0] == "env" and argv[1] == plan.state["tag"]
    assert argv[2:5] == ["taskset", "-c", "0"]   # every QEMU thread on the granted core
    # QEMU's console through `probe -stamp` into the plan's stamp file (host clock per line)
    assert argv[5:7] == ["sh", "-c"] and argv[8:10] == ["console-stamp", plan.state["console_stamps"]]
    assert argv[10].endswith("/bin/probe")
    qemu = argv[11:]
    assert qemu[0] == "qemu-system-x86_64" and qemu[qemu.index("-M") + 1] == "pc"
    assert qemu[qemu.index("-m") + 1] == "128M" and qemu[qemu.index("-smp") + 1] == "1"
    # the scripted machine has a usable KVM (facts, and vmx/svm found): asked for by name
    assert qemu[qemu.index("-accel") + 1] == "kvm"
    assert qemu[qemu.index("-kernel") + 1] == DETAILS["kernel"] and qemu[qemu.index("-initrd") + 1] == REFS["linux-vm"]
    assert qemu[qemu.index("-netdev") + 1] == f"user,id=n0,hostfwd=tcp::{PORT}-:8080"
    append = qemu[qemu.index("-append") + 1]
    assert append.startswith("console=ttyS0 ") and "eb_env=" in append and "eb_args=" not in append
    assert not any("qemu" in c for c in target.commands)  # nothing started yet


def check_unikraft(plan, target, rt):
    argv = plan.argv
    assert argv[:5] == ["env", plan.state["tag"], "taskset", "-c", "0"]
    assert argv[5:7] == ["sh", "-c"] and argv[8:10] == ["console-stamp", plan.state["console_stamps"]]
    qemu = argv[11:]
    assert qemu[0] == "qemu-system-x86_64" and qemu[qemu.index("-M") + 1] == "pc"
    # one vCPU whatever the grant: Unikraft 0.16's loader schedules one
    assert qemu[qemu.index("-m") + 1] == "64M" and qemu[qemu.index("-smp") + 1] == "1"
    assert qemu[qemu.index("-accel") + 1] == "kvm" and qemu[qemu.index("-cpu") + 1] == "host"
    assert qemu[qemu.index("-kernel") + 1] == DETAILS["uk_kernel"]
    assert qemu[qemu.index("-initrd") + 1] == REFS["unikraft"]
    assert qemu[qemu.index("-netdev") + 1] == f"user,id=n0,hostfwd=tcp::{PORT}-:8080"
    # no images folder on this controller: the loader's environment support is unknown, so none is passed
    assert qemu[qemu.index("-append") + 1] == "netdev.ip=10.0.2.15/24:10.0.2.2 -- /app/program"
    assert not any("qemu" in c for c in target.commands)  # nothing started yet


SPECIFIC = {
    "native": check_native,
    "docker": check_docker,
    "docker-crun": check_docker_crun,
    "lxd": check_lxd,
    "nanos": check_nanos,
    "linux-vm": check_linux_vm,
    "unikraft": check_unikraft,
}


def specific(name: str):
    if name not in SPECIFIC:
        pytest.fail(f"add the expected configuration of {name} to SPECIFIC (tests/test_launch_plans.py): "
                    "what its launch plan must turn cpus=1, memory_mb=64, cpuset='0' into")
    return SPECIFIC[name]


# -- the tests -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(RUNTIMES))
def test_launch_plan_has_what_every_runtime_gives(name):
    plan, target, rt = plan_for(name)
    assert plan.runtime == name and plan.app == "go-http"
    assert plan.port == PORT
    assert plan.limits is LIMITS_FOR.get(name, LIMITS)
    assert plan.argv and plan.argv[0]
    assert plan.network_path
    logs = rt.logs_dir() + "/"
    assert plan.stdout_path.startswith(logs) and plan.stderr_path.startswith(logs)
    assert plan.stdout_path != plan.stderr_path
    assert plan.name.startswith(f"eb-{rt.run_tag}-{name}-")


@pytest.mark.parametrize("name", list(RUNTIMES))
def test_launch_plan_turns_the_limits_into_the_runtimes_configuration(name, monkeypatch):
    # The expected plans are this controller's without a Unikraft images folder, whatever the
    # user's EDGEBENCH_UNIKRAFT_IMAGES says (with one, the loader's environment support is known).
    monkeypatch.delenv("EDGEBENCH_UNIKRAFT_IMAGES", raising=False)
    check = specific(name)
    plan, target, rt = plan_for(name)
    check(plan, target, rt)


# Commands that only read the target (finding a program, asking LXD, reading a file).
READS = ("command -v ", "sh -c 'command -v ", "lxc query /", "cat ", "test ", "ss ")


@pytest.mark.parametrize("name", list(RUNTIMES))
def test_memory_below_the_runtimes_minimum_is_refused_before_anything_changes(name):
    target = scripted(name)
    rt = RUNTIMES[name](target, "plans")
    assert rt.min_memory_mb > 0
    with pytest.raises(ConfigError, match="below what"):
        rt.launch_plan(artifact(name), Limits(cpus=1, memory_mb=rt.min_memory_mb / 2, cpuset="0"), PORT)
    assert [c for c in target.commands if not c.startswith(READS)] == []
    assert target.stdins == [] and target.uploads == []


def test_every_runtime_has_its_expected_configuration():
    """The same check as above, as one line that names every runtime still missing."""
    missing = [name for name in RUNTIMES if name not in SPECIFIC]
    assert not missing, "; ".join(f"add the expected configuration of {n} to SPECIFIC" for n in missing)
