"""How what a run starts is named and found again, the same way for every runtime.

Every name a runtime gives (containers, cgroups, VMs, log files) is `eb-<run tag>-<runtime>-...`.
The run tag may carry a prefix from EDGEBENCH_RUN_TAG_PREFIX, so that several people or test
sessions sharing a device each find only their own. A launched process carries LAUNCH_TAG=<its
name> in its environment (native apps, ops and its QEMU), which is how it is found after its
launcher is gone, and stopped (`kill_pid`). `Runtime.leftovers(target, prefix)` lists what runs
with that prefix left.
"""

from __future__ import annotations

import os

from edgebench.targets import Target
from edgebench.waiting import wait_until
from edgebench.scripts import shell_script

RUN_TAG_PREFIX_ENV = "EDGEBENCH_RUN_TAG_PREFIX"
LAUNCH_TAG = "EDGEBENCH_LAUNCH"  # environment variable that marks a launch's processes


def run_tag_prefix() -> str:
    return os.environ.get(RUN_TAG_PREFIX_ENV, "")


_FIND_TAGGED = shell_script("tags_find_tagged.sh")


def tagged(target: Target, tag: str, prefix: bool = False) -> list[tuple[int, str]]:
    """[(pid, comm)] of live processes carrying `tag` (NAME=VALUE) in their environment, or with
    prefix=True any that starts with `tag`."""
    r = target.run(["sh", "-c", _FIND_TAGGED, "find-tagged", tag, "prefix" if prefix else "exact"], check=False)
    out = []
    for line in r.stdout.splitlines():
        pid, _, comm = line.partition(" ")
        if pid.isdigit():
            out.append((int(pid), comm.strip()))
    return out


_FIND_CGROUPS = shell_script("tags_find_cgroups.sh")


def cgroups_named(target: Target, name_start: str) -> list[str]:
    r = target.run(["sh", "-c", _FIND_CGROUPS, "find-cgroups", name_start], check=False)
    return r.stdout.split()


def leftovers(target: Target, tag_prefix: str = "") -> list[str]:
    """cgroups and tagged processes that runs whose tag starts with `tag_prefix` left, whichever
    runtime made them (each runtime adds its own kinds: Runtime.leftovers)."""
    start = f"eb-{tag_prefix}"
    found = [f"cgroup {d}" for d in cgroups_named(target, start)]
    found += [f"process {pid} ({comm})" for pid, comm in tagged(target, f"{LAUNCH_TAG}={start}", prefix=True)]
    return found


def is_alive(target: Target, pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie lingers where PID 1 does not reap)."""
    r = target.run(["sh", "-c", 's=$(awk \'/^State:/{print $2}\' /proc/"$1"/status 2>/dev/null); '
                    '[ -n "$s" ] && [ "$s" != Z ]', "is-alive", str(pid)], check=False)
    return r.ok


def wait_until_gone(target: Target, pid: int, timeout_s: float = 5.0) -> bool:
    return bool(wait_until(lambda: not is_alive(target, pid), timeout_s, 0.05))


def kill_pid(target: Target, pid: int, grace_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited after grace_s."""
    target.run(["kill", "-TERM", str(pid)], check=False)
    if not wait_until_gone(target, pid, grace_s):
        target.run(["kill", "-KILL", str(pid)], check=False)
        wait_until_gone(target, pid, 2.0)
