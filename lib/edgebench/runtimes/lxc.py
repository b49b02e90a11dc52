"""The `lxc` CLI on a target, and what edgebench puts into an LXD container, as LxdRuntime uses
them (the runtime's own bookkeeping, names and timed launch are in lxd.py):

- a container's name (`container_name`), the limits it can take (`check_limits`), its config
  keys for them, in LXD's terms (`instance_config`), and the service definition the image's
  init starts (`service_definition`);
- the `lxc exec` command line (`exec_argv`);
- `Lxc`, the CLI on one target: whether LXD can make containers there, create a container from a
  request body, start, stop and delete
  it, query it, push and pull files, its cgroup, a process in it and its OOM kills, and the
  target's binaries with the libraries the image lacks, as read-only disk devices (`bundle`).

Limits: `limits.cpu.allowance=Qms/100ms` (hard CFS quota; raw.lxc sets it when cpus is not a
multiple of 0.01, since LXD takes whole milliseconds) for cpus, `limits.cpu=A-B` pins
(LXD reads a bare number as a CPU count), `limits.memory` in bytes (LXD reads "256MB" as
decimal), and for swap=False `limits.memory.swap=false` plus the cgroup's memory+swap limit set
to the memory limit through raw.lxc (LXD 5.0 on cgroup v1 only sets swappiness to 0 then;
with swap allowed it sets memory+swap = memory, i.e. no swap either: read back, not assumed).
LxdRuntime reads all of it back from the app's cgroup after start.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from edgebench import rootfs
from edgebench.cgroups import CFS_PERIOD_US, cores_in, oom_kills
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.runtimes.contract import Limits, StartFailed
from edgebench.runtimes.lxd_image import lxc_query
from edgebench.targets import Target, sh
from edgebench.scripts import shell_script

RUN_KEY = "user.edgebench.run"
APP_KEY = "user.edgebench.app"
APP_ROOT = "/opt/edgebench"          # the app's directory is pushed below this
BIN_DIR = "/usr/local/bin"            # where the target's node (or a tool) is mounted, on PATH
SERVICE_FILE = "/etc/edgebench/service"    # read by the image's /sbin/init (tools/lxd/build-rootfs.sh)
SERVICE_LOG = "/var/log/edgebench"         # app.out, app.err, app.pid of that service
WAIT_APP = "/usr/local/sbin/edgebench-wait-app"
CREATE_TIMEOUT_S = 300
DELETE_TIMEOUT_S = 120
_NAME_OK = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]{0,62}$")
_CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")

# A dynamically linked binary of the target and each library ldd lists: the real path on the
# target, the path inside the image, the size, and whether the image holds identical bytes there.
_BUNDLE = r"""
set -e
rootfs=$1; binary=$(readlink -f "$2"); shift 2
echo "bin $binary - $(stat -L -c %s "$binary") -"
# The binary's libraries, and those of the shared objects in the folders named after it (Python's
# extensions), except what those folders hold themselves (they are mounted whole); and the files
# they read by a compiled-in path (Debian's node).
for lib in $({ ldd "$binary"
               for d in "$@"; do find "$d" -name '*.so*' -type f -exec ldd {} + 2>/dev/null | grep -v ':$'; done; } |
             """ + rootfs.LDD_PATHS + r""" | sort -u) \
           $(""" + rootfs.compiled_in_files('"$binary"') + r"""); do
  inside_folder=""
  for d in "$@"; do case "$lib" in "$d"/*) inside_folder=1 ;; esac; done
  [ -z "$inside_folder" ] || continue
  real=$(readlink -f "$lib")
  inside=$(chroot "$rootfs" readlink -f "$lib" 2>/dev/null || echo "$lib")
  if cmp -s "$real" "$rootfs$inside"; then same=same; else same=differ; fi
  echo "lib $real $inside $(stat -L -c %s "$real") $same"
done
"""

_FIND_PID = shell_script("lxc_find_pid.sh")

_SWAP_ACCOUNTING = shell_script("lxc_swap_accounting.sh")


# -- pure: names, limits, config keys, the service, command lines ---------------------------
def container_name(text: str, run_tag: str) -> str:
    """`text` with what LXD refuses in a name replaced by dashes; ConfigError if still invalid."""
    name = re.sub(r"[^a-zA-Z0-9-]", "-", text)
    if not _NAME_OK.match(name):
        raise ConfigError(f"container name {name!r} is not valid for LXD (at most 63 letters, digits "
                          f"and dashes); use a shorter run tag than {run_tag!r}")
    return name


def check_limits(limits: Limits, cores: int | None, target_name: str) -> None:
    """Refuse limits LXD or the kernel cannot apply on a target with `cores` CPUs."""
    for what, v in (("cpus", limits.cpus), ("memory_mb", limits.memory_mb)):
        if v is not None and not v > 0:
            raise ConfigError(f"{what}={v!r} must be positive (or None for no limit)")
    if limits.cpus is not None and round(limits.cpus * CFS_PERIOD_US) < 1000:
        raise ConfigError(f"cpus={limits.cpus:g} is below the kernel's smallest CFS quota "
                          f"(1 ms per {CFS_PERIOD_US // 1000} ms = 0.01 CPU); ask for at least 0.01")
    if limits.gomaxprocs is not None and (not isinstance(limits.gomaxprocs, int) or limits.gomaxprocs < 1):
        raise ConfigError(f"gomaxprocs={limits.gomaxprocs!r} must be a positive integer")
    if limits.cpuset is not None:
        if not isinstance(limits.cpuset, str) or not _CPUSET.match(limits.cpuset):
            raise ConfigError(f"cpuset={limits.cpuset!r} is not a list of cores like '0', '0-1' or '0,2'")
        bad = [c for c in cores_in(limits.cpuset) if cores and c >= cores]
        if bad:
            raise ConfigError(f"cpuset={limits.cpuset!r} names core(s) {bad} but {target_name} has "
                              f"{cores} (0-{cores - 1})")


def cpu_allowance(cpus: float) -> str | None:
    """LXD's hard CFS quota per 100 ms period (limits.cpu.allowance), which takes whole
    milliseconds; None when cpus is not a multiple of 0.01 (then raw.lxc sets the quota)."""
    quota_us = round(cpus * CFS_PERIOD_US)
    if quota_us % 1000:
        return None
    return f"{quota_us // 1000}ms/{CFS_PERIOD_US // 1000}ms"


def lxd_cpuset(cpuset: str) -> str:
    """limits.cpu pins with a range or list; a bare number would be a count of CPUs."""
    return f"{cpuset}-{cpuset}" if cpuset.isdigit() else cpuset


def instance_config(run_tag: str, app: str, limits: Limits, cgroup_v2: bool,
                    swap_accounting: str | None = None) -> dict[str, str]:
    """The container's config keys: the run tag, and the limits in LXD's terms. swap_accounting
    (`Lxc.swap_accounting`) is needed only for a memory limit with swap=False."""
    cfg = {RUN_KEY: run_tag, APP_KEY: app}
    raw = []
    if limits.cpus is not None:
        allowance = cpu_allowance(limits.cpus)
        quota = round(limits.cpus * CFS_PERIOD_US)
        if allowance:
            cfg["limits.cpu.allowance"] = allowance
        elif cgroup_v2:
            raw.append(f"lxc.cgroup2.cpu.max = {quota} {CFS_PERIOD_US}")
        else:
            raw += [f"lxc.cgroup.cpu.cfs_period_us = {CFS_PERIOD_US}", f"lxc.cgroup.cpu.cfs_quota_us = {quota}"]
    if limits.cpuset:
        cfg["limits.cpu"] = lxd_cpuset(limits.cpuset)
        # LXD's CPU balancer applies limits.cpu only after the container started, so a fast
        # app could see every core at exec; liblxc pins it before init runs.
        raw.append(f"lxc.cgroup2.cpuset.cpus = {limits.cpuset}" if cgroup_v2
                   else f"lxc.cgroup.cpuset.cpus = {limits.cpuset}")
    if limits.memory_mb is not None:
        mem = int(limits.memory_mb * 2**20)
        cfg["limits.memory"] = str(mem)  # bytes: LXD reads a bare number as bytes
        if not limits.swap:
            cfg["limits.memory.swap"] = "false"
            if swap_accounting == "v1-memsw":
                raw.append(f"lxc.cgroup.memory.memsw.limit_in_bytes = {mem}")
            elif swap_accounting == "v2-swap":
                raw.append("lxc.cgroup2.memory.swap.max = 0")
    if raw:
        cfg["raw.lxc"] = "\n".join(raw)
    return cfg


def service_definition(env: Sequence[str], argv: Sequence[str]) -> str:
    """/etc/edgebench/service: sourced by the image's init in a subshell, which becomes the app."""
    lines = ["# written by edgebench (runtimes/lxd.py); started by /sbin/init"]
    for pair in env:
        key, _, value = pair.partition("=")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ConfigError(f"environment variable name {key!r} is not valid")
        lines.append(f"export {key}={shlex.quote(value)}")
    lines.append(f"exec {sh(argv)}")
    return "\n".join(lines) + "\n"


def exec_argv(name: str, argv: Sequence[str], env: Mapping[str, str] | Sequence[str] | None = None,
              stdin: bool = False) -> list[str]:
    """The `lxc exec` command line that runs argv in the container, in the foreground,
    without a pseudo-terminal (and with stdin from /dev/null unless stdin=True)."""
    pairs = [f"{k}={v}" for k, v in env.items()] if isinstance(env, Mapping) else list(env or [])
    return ["lxc", "exec", name, "--force-noninteractive", *([] if stdin else ["--disable-stdin"]),
            *[f"--env={e}" for e in pairs], "--", *argv]


# -- the CLI on a target --------------------------------------------------------------------
class Lxc:
    """The `lxc` CLI on one target; every failure names the container and LXD's words."""

    def __init__(self, target: Target):
        self.target = target
        self._swap_accounting: str | None = None

    def unavailable(self) -> str | None:
        """Why containers cannot be made on the target (what to install or start), or None."""
        t = self.target
        if not t.which("lxc"):
            return (f"no lxc CLI on {t.name}; install LXD there (Debian 12: "
                    "`apt-get install lxd debootstrap`, or run tools/lxd/setup.sh)")
        r = t.run(["lxc", "query", "/1.0"], timeout=20, check=False)
        if not r.ok:
            tail = (r.stderr.strip().splitlines() or ["no answer"])[-1]
            return (f"the LXD daemon on {t.name} does not answer ({tail}); start it "
                    "(tools/lxd/setup.sh, `systemctl start lxd` or `lxd --group lxd &`)")
        if not lxc_query(t, "/1.0/storage-pools"):
            return (f"LXD on {t.name} has no storage pool; run tools/lxd/setup.sh "
                    "(`lxd init --preseed` with a dir pool and a bridge)")
        profile = lxc_query(t, "/1.0/profiles/default") or {}
        if not any(d.get("type") == "disk" and d.get("path") == "/"
                   for d in (profile.get("devices") or {}).values()):
            return f"LXD's default profile on {t.name} has no root disk; run tools/lxd/setup.sh"
        return None

    def root_storage(self) -> str:
        """The default profile's root disk pool and its driver (dir, btrfs, zfs, lvm ...)."""
        profile = lxc_query(self.target, "/1.0/profiles/default") or {}
        pool = ((profile.get("devices") or {}).get("root") or {}).get("pool") or "default"
        driver = (lxc_query(self.target, f"/1.0/storage-pools/{pool}") or {}).get("driver")
        return f"LXD storage pool {pool} ({driver or 'driver unknown'})"

    def has_base_image(self) -> bool:
        images = lxc_query(self.target, "/1.0/images?recursion=1") or []
        return any((i.get("properties") or {}).get("edgebench") == "base" for i in images)

    def instance(self, name: str) -> dict | None:
        got = lxc_query(self.target, f"/1.0/instances/{name}")
        return got if isinstance(got, dict) else None

    def instances(self) -> list[dict]:
        return lxc_query(self.target, "/1.0/instances?recursion=1") or []

    def state(self, name: str) -> dict | None:
        """LXD's view of the running container (status, init PID, network), None if gone."""
        got = lxc_query(self.target, f"/1.0/instances/{name}/state")
        return got if isinstance(got, dict) else None

    def swap_accounting(self) -> str:
        if self._swap_accounting is None:
            self._swap_accounting = self.target.run(["sh", "-c", _SWAP_ACCOUNTING]).stdout.strip()
        return self._swap_accounting

    def create(self, body: dict) -> float:
        """Create (not start) a container from a `POST /1.0/instances` body; returns the seconds it
        took. A half-made container of the body's run is deleted before the error is raised."""
        name = body["name"]
        started = time.monotonic()
        r = self.target.run(["lxc", "query", "--wait", "-X", "POST", "/1.0/instances", "--data",
                             json.dumps(body)], timeout=CREATE_TIMEOUT_S, check=False)
        took = time.monotonic() - started
        if not r.ok:
            self.delete_if_ours(name, body["config"][RUN_KEY])
            raise EdgebenchError(f"creating LXD container {name} on {self.target.name} failed: "
                                 f"{r.stderr.strip()[-800:]}")
        return took

    def start(self, name: str, limits: Limits | None = None) -> None:
        """Start and check that it stays up (init can be OOM-killed at once under a tiny limit)."""
        r = self.target.run(["lxc", "start", name], timeout=CREATE_TIMEOUT_S, check=False)
        st = self.state(name) if r.ok else None
        if r.ok and st and st.get("status") == "Running":
            return
        log = self.target.run(["lxc", "info", "--show-log", name], check=False).stdout.strip().splitlines()
        why = r.stderr.strip()[-500:] if not r.ok else f"it is {str((st or {}).get('status', 'gone')).lower()}"
        mem = f" under limits.memory={limits.memory_mb:g} MiB" if limits and limits.memory_mb else ""
        raise StartFailed(f"lxd: container {name} did not stay up after `lxc start`{mem}: {why}; "
                          f"log: {' | '.join(log[-3:])}")

    def stop(self, name: str) -> None:
        r = self.target.run(["lxc", "stop", "--force", name], timeout=DELETE_TIMEOUT_S, check=False)
        if not r.ok:
            raise EdgebenchError(f"lxc stop {name} on {self.target.name} failed: {r.stderr.strip()[-500:]}")

    def delete(self, name: str) -> None:
        """Stop and delete the container; nothing happens if it is already gone. LXD refuses while
        an operation on it still runs (a create whose `lxc` client a Ctrl-C killed goes on in the
        daemon): that is waited out, up to DELETE_TIMEOUT_S."""
        deadline, tries = time.monotonic() + DELETE_TIMEOUT_S, 0
        while True:
            r = self.target.run(["lxc", "delete", "--force", name], timeout=DELETE_TIMEOUT_S, check=False)
            if r.ok or self.instance(name) is None:
                return
            tries += 1
            if tries >= 3 and not ("is busy running" in r.stderr and time.monotonic() < deadline):
                break
            time.sleep(0.5)
        raise EdgebenchError(f"could not delete LXD container {name} on {self.target.name}: "
                             f"{r.stderr.strip()[-500:]}")

    def delete_if_ours(self, name: str, run_tag: str) -> None:
        """After a failed preparation: a half-made container of this run goes; one that was there
        before under the same name (another run's) stays."""
        if ((self.instance(name) or {}).get("config") or {}).get(RUN_KEY) == run_tag:
            self.delete(name)

    def push(self, name: str, src: str | Path, dest: str, *, from_controller: bool = False,
             mode: str | None = None) -> None:
        """Copy a file or directory into the container (dest: a path inside it; a directory is
        copied below dest). src is a path on the target, or on this machine with from_controller."""
        if from_controller:
            staged = f"{self.target.workspace}/lxd/push/{Path(src).name}"
            if Path(src).is_dir():
                raise ConfigError("push(from_controller=True) copies files; upload a directory first")
            self.target.upload_if_changed(Path(src), staged)
            src = staged
        recursive = dest.endswith("/") or self.target.run(["test", "-d", str(src)], check=False).ok
        argv = ["lxc", "file", "push", "-q", "-p", *(["-r"] if recursive else []),
                *([f"--mode={mode}"] if mode and not recursive else []), str(src), f"{name}{dest}"]
        r = self.target.run(argv, timeout=CREATE_TIMEOUT_S, check=False)
        if not r.ok:
            raise EdgebenchError(f"lxc file push to {name}:{dest} failed: {r.stderr.strip()[-500:]}")

    def pull(self, name: str, src: str, dest: str | Path, *, to_controller: bool = False) -> None:
        """Copy a file out of the container to dest on the target (or on this machine)."""
        target_dest = f"{self.target.workspace}/lxd/pull/{posixpath.basename(src)}" if to_controller else str(dest)
        self.target.run(["mkdir", "-p", posixpath.dirname(target_dest)])
        r = self.target.run(["lxc", "file", "pull", "-q", f"{name}{src}", target_dest],
                            timeout=CREATE_TIMEOUT_S, check=False)
        if not r.ok:
            raise EdgebenchError(f"lxc file pull {name}:{src} failed: {r.stderr.strip()[-500:]}")
        if to_controller:
            self.target.get(target_dest, dest)

    def write_in(self, name: str, dest: str, text: str, staged: str) -> None:
        """Write text to a file inside the container, through `staged`, a file on the target."""
        self.target.write_text(staged, text)
        self.push(name, staged, dest, mode="0644")

    def read_in(self, name: str, path: str) -> str | None:
        """A file inside the container, or None if it (or the container) is gone."""
        r = self.target.run(["lxc", "file", "pull", "-q", f"{name}{path}", "-"], check=False)
        return r.stdout if r.ok else None

    def container_cgroup(self, name: str) -> str:
        """The container's cgroup below each controller's root (v1: /sys/fs/cgroup/memory/<this>),
        as its init process shows it; LXD 5.0 with liblxc 5 names it lxc.payload.NAME."""
        st = self.state(name)
        pid = st.get("pid") if st else None
        if pid:
            r = self.target.run(["awk", "-F:", '$2 ~ /(^|,)memory(,|$)/ {m=$3} $1 == "0" {u=$3} '
                                 'END {print (m != "" ? m : u)}', f"/proc/{pid}/cgroup"], check=False)
            path = r.stdout.strip().lstrip("/")
            if r.ok and path:
                return path
        return f"lxc.payload.{name}"

    def find_pid(self, init_pid: int, pattern: str = APP_ROOT + "/") -> int | None:
        """The host PID of the first process in init's container whose command line has `pattern`."""
        r = self.target.run(["sh", "-c", _FIND_PID, "find-pid", str(init_pid), pattern], check=False)
        return int(r.stdout.strip()) if r.ok and r.stdout.strip().isdigit() else None

    def oom_kills(self, name: str) -> int | None:
        """OOM kills so far in the container's cgroup (through its init), None if unknown."""
        st = self.state(name)
        if not st or not st.get("pid"):
            return None
        return oom_kills(self.target, pid=st["pid"])

    def bundle(self, binary: str, at: str, rootfs_dir: str,
               folders: tuple[str, ...] = ()) -> tuple[dict[str, dict], dict]:
        """Read-only disk devices: the binary at `at`, and the libraries it needs that the image
        (unpacked at rootfs_dir) lacks or holds in another version, at their own paths inside the
        container; and their sizes. `folders` (mounted by the caller) add their shared objects'
        libraries."""
        r = self.target.run(["sh", "-c", _BUNDLE, "bundle", rootfs_dir, binary, *folders])
        mounts: dict[str, dict] = {}
        sizes = {"binary_bytes": 0, "lib_bytes": 0}
        for line in r.stdout.splitlines():
            kind, real, inside, size, same = line.split()
            if kind == "bin":
                mounts["edgebench-bin"] = {"type": "disk", "source": real, "path": at, "readonly": "true"}
                sizes["binary_bytes"] = int(size)
            elif same == "differ":
                mounts[f"edgebench-lib{len(mounts)}"] = {"type": "disk", "source": real, "path": inside,
                                                         "readonly": "true"}
                sizes["lib_bytes"] += int(size)
        return mounts, sizes


def leftovers(target: Target, tag_prefix: str = "") -> list[str]:
    """LXD instances of runs whose tag starts with tag_prefix, and their `lxc exec` launchers."""
    if not target.which("lxc"):
        return []
    found = [f"lxd container {i['name']} ({str(i.get('status') or 'state unknown').lower()})"
             for i in Lxc(target).instances()
             if str((i.get("config") or {}).get(RUN_KEY, "")).startswith(tag_prefix)
             and RUN_KEY in (i.get("config") or {})]
    # `lxc exec` clients on the host (the app's launcher), by the container name they name.
    r = target.run(["ps", "-eo", "pid=,args="], check=False)
    for line in r.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        words = args.split()
        # lxc itself, not a process that merely names it (a shell or script quoting the command)
        if len(words) > 2 and words[0].rsplit("/", 1)[-1] == "lxc" and words[1] == "exec" \
                and words[2].startswith(f"eb-{tag_prefix}"):
            found.append(f"process {pid} ({args})")
    return found
