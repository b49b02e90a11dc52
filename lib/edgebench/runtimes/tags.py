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

RUN_TAG_PREFIX_ENV = "EDGEBENCH_RUN_TAG_PREFIX"
LAUNCH_TAG = "EDGEBENCH_LAUNCH"  # environment variable that marks a launch's processes


def run_tag_prefix() -> str:
    return os.environ.get(RUN_TAG_PREFIX_ENV, "")


# [(pid, comm)] of live processes whose environment holds the line $1 (or one starting with it).
_FIND_TAGGED = r"""
tag=$1; match=-qxF; [ "$2" = prefix ] && { match=-q; tag="^$tag"; }
for e in /proc/[0-9]*/environ; do
  p=${e#/proc/}; p=${p%/environ}
  tr '\0' '\n' <"$e" 2>/dev/null | grep $match -- "$tag" || continue
  s=$(awk '/^State:/{print $2}' /proc/$p/status 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] || continue
  echo "$p $(cat /proc/$p/comm 2>/dev/null)"
done
"""


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


# cgroups named NAME_PREFIX* under edgebench/ in every mounted hierarchy (v1: one per controller).
_FIND_CGROUPS = r"""
awk '$3 ~ /^cgroup2?$/ {print $2}' /proc/mounts | sort -u | while read -r root; do
  for d in "$root"/edgebench/"$1"*; do [ -d "$d" ] && echo "$d"; done
done
true
"""


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
