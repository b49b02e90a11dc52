"""Shared fixtures. A test that needs a part this machine lacks skips with the reason, unless
EDGEBENCH_REQUIRE names that part (CI provisioned it): then the test fails instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from edgebench.targets import LocalTarget  # noqa: E402

REQUIRED = {p.strip() for p in os.environ.get("EDGEBENCH_REQUIRE", "").split(",") if p.strip()}


def need(part: str, missing_reason: str | None) -> None:
    """Skip (or fail, if the part is required) when missing_reason is not None."""
    if missing_reason is None:
        return
    if part in REQUIRED:
        pytest.fail(f"{part} is required (EDGEBENCH_REQUIRE={','.join(sorted(REQUIRED))}) "
                    f"but unavailable: {missing_reason}")
    pytest.skip(f"{part} unavailable: {missing_reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """The library names a program it cannot find (MissingTool): that is a missing part, so it goes
    through need() like every other one, whichever test ran into it."""
    from edgebench.errors import MissingTool
    try:
        return (yield)
    except MissingTool as e:
        need(e.tool, str(e))


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice), so tests never collide on a fixed one."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cgroup_roots() -> list[str]:
    """Every mounted cgroup hierarchy (v1: one per controller; v2: one)."""
    with open("/proc/mounts") as mounts:
        return [f.split()[1] for f in mounts if f.split()[2] in ("cgroup", "cgroup2")]


@pytest.fixture(scope="session")
def local():
    return LocalTarget()


@pytest.fixture(scope="session")
def wrk_ready(local):
    need_tool(local, "wrk")
    return True


@pytest.fixture(scope="session")
def docker_ready(local):
    from edgebench.runtimes.docker import DockerRuntime
    why = DockerRuntime(local).availability()
    need("docker", None if why else why.reason)
    return True


@pytest.fixture(scope="session")
def lxd_ready(local):
    from edgebench.runtimes.lxd import LxdRuntime
    why = LxdRuntime(local).availability()
    need("lxd", None if why else why.reason)
    return True


def need_tool(target, tool: str) -> None:
    """A program the experiments run on the target (make provision installs them)."""
    need(tool, None if target.which(tool) else f"no `{tool}` on {target.name} (make provision installs it)")


@pytest.fixture(scope="session")
def cgroups_ready(local):
    facts = local.facts()
    reason = None
    if facts.get("cgroup_version") not in (1, 2):
        reason = "no cgroup filesystem"
    elif facts.get("uid") != 0:
        reason = "creating cgroups needs root"
    need("cgroups", reason)
    return True


@pytest.fixture(scope="session")
def ssh_host(tmp_path_factory):
    import sshhost
    need("ssh", sshhost.unavailable_reason())
    with sshhost.ssh_host(tmp_path_factory.mktemp("sshhost")) as host:
        yield host


def leftovers() -> list[str]:
    """Anything edgebench started that is still there: containers, cgroups, app processes."""
    found = []
    r = subprocess.run(["docker", "ps", "-aq", "--filter", "label=edgebench.run"], capture_output=True,
                       text=True)
    if r.returncode == 0 and r.stdout.strip():
        found.append(f"containers: {r.stdout.split()}")
    # every hierarchy: docker makes its cgroup parent in each
    for base in (f"{root}/edgebench" for root in cgroup_roots()):
        if os.path.isdir(base):
            subs = [d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d))]
            if subs:
                found.append(f"cgroups under {base}: {subs}")
    r = subprocess.run(["lxc", "query", "/1.0/instances?recursion=1"], capture_output=True, text=True) \
        if shutil.which("lxc") else None
    if r is not None and r.returncode == 0:
        tagged = [i["name"] for i in json.loads(r.stdout) if "user.edgebench.run" in (i.get("config") or {})]
        if tagged:
            found.append(f"lxd containers: {tagged}")
    r = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        pid, stat, args = line.split(None, 2) if len(line.split(None, 2)) == 3 else (None, "", "")
        if "Z" in stat:
            continue  # zombies of orphans: PID 1 here does not always reap promptly
        if "/.cache/edgebench/apps/" in args or "edgebench-launch" in args or args.startswith("lxc exec eb-"):
            found.append(f"process {pid}: {args}")
        elif "qemu-system" in args and "/images/edgebench-" in args:
            found.append(f"VM {pid}: {args[:200]}")
    found += [f"tagged process {pid} ({tag})" for pid, tag in vm_tagged_processes()]
    return found


def vm_tagged_processes() -> list[tuple[str, str]]:
    """Processes a Nanos launch started (ops, QEMU), found by the tag in their environment."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/status") as f:
                if any(line.startswith("State:") and "Z" in line for line in f):
                    continue
        except OSError:
            continue
        tags = [e.decode(errors="replace") for e in env if e.startswith(b"EDGEBENCH_VM=")]
        if tags:
            out.append((pid, tags[0]))
    return out


@pytest.fixture
def no_leftovers():
    """Use in every test that starts something: it must all be gone afterwards."""
    before = leftovers()
    yield
    after = [x for x in leftovers() if x not in before]
    assert not after, f"left running: {after}"
