"""LXD system containers, driven with the `lxc` CLI on the target (the same commands a user
would type, and the same path over SSH as locally).

The artifact is edgebench's base image (debootstrap minbase of the target's release with a
minimal init, `edgebench.lxd_image`) plus the app, pushed into each new container before the
clock starts. Node apps run the target's own `node` (the binary the native runtime and Docker's
offline image use), bind-mounted read-only into the container at /usr/local/bin/node, with any
library `ldd` lists that the image lacks or holds in another version mounted over the image's
(none on a Debian 12 target: the image is the same release). Tools (sysbench) are the target's
binary mounted the same way, run through tools/steps, which is pushed.

One start, as `launch_plan` + the probe see it (start_mode="service", the default):
- untimed: create the container from the image (on a `dir` pool this unpacks the whole root
  filesystem: `init_s` in the details), boot it once and stop it (LXD rewrites the rootfs' owners
  to the container's uid map on the first start of an unprivileged container: ~150 ms here, a
  storage cost like the unpacking: `first_boot_s`), add the proxy device for the port, push the
  app and the service definition (/etc/edgebench/service) that the image's init starts;
- timed (the probe's launch): `lxc start NAME`: namespaces, cgroup, veth on the bridge, the
  proxy, init, which starts the app at once; the probe polls the forwarded port until the app
  answers. So time to ready = boot of an existing system container up to its service answering,
  without `lxc init`. LXD itself waits for the proxy device's helper by polling its log once a
  second, so `lxc start` returns about 1 s after the app can already answer; the time it returned
  is written to a file on the target (`container_started_unix_ns` in the details). After
  `lxc start` the launcher becomes `lxc exec NAME -- edgebench-wait-app`, which exits 1 when the
  app dies, so the probe fails at once (OOM kill, crash) instead of waiting for its timeout.
start_mode="exec": the timed launch is `lxc start NAME && lxc exec NAME -- APP` (the app as an
  exec'd process, like `docker exec`): it includes that 1 s.

Network path: LXD's proxy device (`forkproxy`, a userland proxy on the target like
docker-proxy) listens on the target's PORT (all addresses, like `docker run -p`) and connects to
127.0.0.1:8080 inside the container's network namespace; the container also has eth0 on the LXD
bridge (DHCP from init, in the background), its address is in the details. forkproxy starts
after the container is up, so the probe's lag behind the app's listening clock includes it (tens
of ms). It runs outside the container's cgroup: the CPU limit does not cover it (nor does
Docker's for docker-proxy).

Limits: `limits.cpu.allowance=Qms/100ms` (hard CFS quota; raw.lxc sets it when cpus is not a
multiple of 0.01, since LXD takes whole milliseconds) for cpus, `limits.cpu=A-B` pins
(LXD reads a bare number as a CPU count), `limits.memory` in bytes (LXD reads "256MB" as
decimal), and for swap=False `limits.memory.swap=false` plus the cgroup's memory+swap limit set
to the memory limit through raw.lxc (LXD 5.0 on cgroup v1 only sets swappiness to 0 then;
with swap allowed it sets memory+swap = memory, i.e. no swap either: read back, not assumed).
Everything is read back from the app's cgroup after start.

Batch programs (`batch_plan`): a container with the limits and no NIC, the program pushed,
started (untimed); the timed command is `lxc exec NAME -- PROGRAM ARGS`. The counting cgroup is
the container's (`lxc.payload.NAME` with LXD 5.0 / liblxc 5, `container_cgroup`); its memory.stat
also holds init's faults from the boot, read just before the exec and kept in the details.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from edgebench.apps import BuiltApp
from edgebench.cgroups import CFS_PERIOD_US, read_fault_counters, read_limits
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.lxd_image import BaseImage, ensure_image, lxc_query
from edgebench.runtimes.base import (Artifact, Availability, BatchOutcome, Instance, LaunchPlan, Limits, Runtime,
                                     StartFailed, app_env, is_alive, kill_pid)
from edgebench.targets import sh

# "native" is what the experiments pass to every runtime but Docker; both mean the same here.
BUILD_MODES = ("offline", "native")
RUN_KEY = "user.edgebench.run"
APP_KEY = "user.edgebench.app"
APP_ROOT = "/opt/edgebench"          # the app's directory is pushed below this
BIN_DIR = "/usr/local/bin"            # where the target's node (or a tool) is mounted, on PATH
PROXY_DEVICE = "edgebench-http"
# Every address of the target, as `docker run -p PORT:8080` publishes: the probe uses 127.0.0.1,
# a load generator on the controlling machine the target's own address.
LISTEN_ADDRESS = "0.0.0.0"
START_MODES = ("service", "exec")
SERVICE_FILE = "/etc/edgebench/service"    # read by the image's /sbin/init (tools/lxd/build-rootfs.sh)
SERVICE_LOG = "/var/log/edgebench"         # app.out, app.err, app.pid of that service
WAIT_APP = "/usr/local/sbin/edgebench-wait-app"
CREATE_TIMEOUT_S = 300
DELETE_TIMEOUT_S = 120
NETWORK_PATH = "lxd-proxy(forkproxy)+container-loopback"
_NAME_OK = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]{0,62}$")
_CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")

# A dynamically linked binary of the target and each library ldd lists: the real path on the
# target, the path inside the image, the size, and whether the image holds identical bytes there.
_BUNDLE = r"""
set -e
rootfs=$1; binary=$(readlink -f "$2")
echo "bin $binary - $(stat -L -c %s "$binary") -"
for lib in $(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
  real=$(readlink -f "$lib")
  inside=$(chroot "$rootfs" readlink -f "$lib" 2>/dev/null || echo "$lib")
  if cmp -s "$real" "$rootfs$inside"; then same=same; else same=differ; fi
  echo "lib $real $inside $(stat -L -c %s "$real") $same"
done
"""

# The first process in the container's cgroup whose command line contains $2 (host PIDs).
_FIND_PID = r"""
init=$1; pat=$2
cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/"$init"/cgroup)
if [ -n "$cg" ]; then d=/sys/fs/cgroup/memory$cg; else d=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/"$init"/cgroup); fi
for f in $(find "$d" -name cgroup.procs 2>/dev/null); do
  for p in $(cat "$f"); do
    case "$(tr '\0' ' ' < /proc/"$p"/cmdline 2>/dev/null)" in *"$pat"*) echo "$p"; exit 0 ;; esac
  done
done
exit 1
"""

# OOM kills so far in the cgroup of PID $1 (v1 memory.oom_control, v2 memory.events).
_OOM_KILLS = r"""
pid=$1
cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/"$pid"/cgroup 2>/dev/null)
if [ -n "$cg" ]; then f=/sys/fs/cgroup/memory$cg/memory.oom_control
else f=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/"$pid"/cgroup 2>/dev/null)/memory.events; fi
awk '$1 == "oom_kill" {print $2}' "$f" 2>/dev/null
"""

# The memory+swap accounting the kernel offers, for swap=False.
_SWAP_ACCOUNTING = r"""
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  ls /sys/fs/cgroup/*/memory.swap.max >/dev/null 2>&1 && echo v2-swap || echo v2
elif [ -f /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ]; then echo v1-memsw
else echo v1; fi
"""


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


def _cpus_in(cpuset: str) -> list[int]:
    out = []
    for part in cpuset.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


class LxdRuntime(Runtime):
    name = "lxd"
    colour = "#8c564b"
    # Measured on Debian 12 / LXD 5.0.2 / kernel 6.18 with this image: at 1 MiB the container
    # does not come up, at 2 MiB it boots but go-http is OOM-killed, at 4 MiB go-http serves
    # (node-http needs 16 MiB: OOM-killed at 8). Below 4 nothing can start.
    min_memory_mb = 4

    def __init__(self, target, run_tag: str | None = None, start_mode: str = "service"):
        super().__init__(target, run_tag)
        if start_mode not in START_MODES:
            raise ConfigError(f"lxd start_mode {start_mode!r} unknown; use one of {', '.join(START_MODES)}")
        self.start_mode = start_mode
        self._image: BaseImage | None = None
        self._swap_accounting: str | None = None

    # -- availability --------------------------------------------------------------
    def availability(self) -> Availability:
        t = self.target
        if not t.which("lxc"):
            return Availability(False, f"no lxc CLI on {t.name}; install LXD there (Debian 12: "
                                "`apt-get install lxd debootstrap`, or run tools/lxd/setup.sh)")
        r = t.run(["lxc", "query", "/1.0"], timeout=20, check=False)
        if not r.ok:
            tail = (r.stderr.strip().splitlines() or ["no answer"])[-1]
            return Availability(False, f"the LXD daemon on {t.name} does not answer ({tail}); start it "
                                "(tools/lxd/setup.sh, `systemctl start lxd` or `lxd --group lxd &`)")
        pools = lxc_query(t, "/1.0/storage-pools")
        if not pools:
            return Availability(False, f"LXD on {t.name} has no storage pool; run tools/lxd/setup.sh "
                                "(`lxd init --preseed` with a dir pool and a bridge)")
        profile = lxc_query(t, "/1.0/profiles/default") or {}
        if not any(d.get("type") == "disk" and d.get("path") == "/"
                   for d in (profile.get("devices") or {}).values()):
            return Availability(False, f"LXD's default profile on {t.name} has no root disk; run "
                                "tools/lxd/setup.sh")
        if not t.which("debootstrap") and not self._image_present():
            return Availability(False, f"{t.name} has no edgebench LXD image and no debootstrap to build "
                                "one; `apt-get install debootstrap` (tools/lxd/setup.sh does)")
        return Availability(True)

    def _image_present(self) -> bool:
        images = lxc_query(self.target, "/1.0/images?recursion=1") or []
        return any((i.get("properties") or {}).get("edgebench") == "base" for i in images)

    # -- image and artifact -----------------------------------------------------------
    def image(self) -> BaseImage:
        """The base image, built or checked once per runtime object."""
        if self._image is None:
            self._image = ensure_image(self.target)
        return self._image

    def package(self, built: BuiltApp, build: str = "offline") -> Artifact:
        """The base image plus what each start puts in the container: a Go binary is pushed;
        node (and a tool such as sysbench) is the target's own binary, bind-mounted read-only at
        /usr/local/bin with every library the image lacks or holds in another version, and the
        script (or tools/steps) is pushed."""
        if build not in BUILD_MODES:
            raise ConfigError(f"lxd build mode {build!r} unknown; use 'offline' (a debootstrap image made "
                              "on the target; the paper's images.linuxcontainers.org images need internet)")
        app = built.app
        image = self.image()
        inner_dir = f"{APP_ROOT}/{app.name}"
        pushes: list[tuple[str, str]] = []   # (path on the target, path in the container; "/" = a directory)
        mounts: dict[str, dict] = {}
        bound = {"binary_bytes": 0, "lib_bytes": 0}
        if app.language == "go":
            dest = f"{inner_dir}/{posixpath.basename(built.remote_path)}"
            pushes.append((built.remote_path, dest))
            inner = [dest]
        elif app.language == "node":
            mounts, bound = self._bundle(self.target.which("node") or "node", f"{BIN_DIR}/node", image)
            src_dir = posixpath.dirname(built.remote_path)
            pushes.append((src_dir, f"{APP_ROOT}/"))
            inner = [f"{BIN_DIR}/node",
                     f"{APP_ROOT}/{posixpath.basename(src_dir)}/{posixpath.basename(built.remote_path)}"]
        elif app.language == "tool":  # the target's binary, run through tools/steps (found on PATH)
            mounts, bound = self._bundle(built.remote_path, f"{BIN_DIR}/{app.entry}", image)
            dest = f"{inner_dir}/steps"
            pushes.append((built.argv[0], dest))
            inner = [dest]
        else:
            raise ConfigError(f"lxd: app {app.name} has language {app.language!r}; use go, node or tool")
        pushed_bytes = sum(int(line.split()[0]) for line in self.target.run(
            ["du", "-sbL", *[src for src, _ in pushes]]).stdout.splitlines())
        size = image.size_bytes + pushed_bytes + bound["binary_bytes"] + bound["lib_bytes"]
        return Artifact(self.name, app.name, image.alias, size, built.size_bytes, built, build="offline",
                        details={"image_alias": image.alias, "image_fingerprint": image.fingerprint,
                                 "image_bytes": image.size_bytes, "rootfs_bytes": image.rootfs_bytes,
                                 "pushes": pushes, "pushed_bytes": pushed_bytes, "inner_argv": inner,
                                 "mounts": mounts, "bound_binary_bytes": bound["binary_bytes"],
                                 "bound_lib_bytes": bound["lib_bytes"], "image_suite": image.suite,
                                 "image_mirror": image.mirror,
                                 "build_command": f"debootstrap --variant=minbase --include=busybox "
                                                  f"{image.suite} {image.mirror}; lxc image import "
                                                  f"--alias {image.alias}; app pushed at each start"})

    def _bundle(self, binary: str, at: str, image: BaseImage) -> tuple[dict[str, dict], dict]:
        """Read-only disk devices: the binary at `at`, and the libraries it needs that the image
        lacks or holds in another version, at their own paths inside the container."""
        r = self.target.run(["sh", "-c", _BUNDLE, "bundle", image.rootfs_dir, binary])
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

    # -- names and limits -------------------------------------------------------------
    def new_name(self, app: str) -> str:
        self._seq += 1
        name = re.sub(r"[^a-zA-Z0-9-]", "-", f"eb-{self.run_tag}-{self.name}-{app}-{self._seq}")
        if not _NAME_OK.match(name):
            raise ConfigError(f"container name {name!r} is not valid for LXD (at most 63 letters, digits "
                              f"and dashes); use a shorter run tag than {self.run_tag!r}")
        return name

    @property
    def name_prefix(self) -> str:
        return re.sub(r"[^a-zA-Z0-9-]", "-", f"eb-{self.run_tag}-{self.name}-")

    def check_limits(self, app: str, limits: Limits) -> None:
        for what, v in (("cpus", limits.cpus), ("memory_mb", limits.memory_mb)):
            if v is not None and not v > 0:
                raise ConfigError(f"{what}={v!r} must be positive (or None for no limit)")
        if limits.cpus is not None and round(limits.cpus * CFS_PERIOD_US) < 1000:
            raise ConfigError(f"cpus={limits.cpus:g} is below the kernel's smallest CFS quota "
                              f"(1 ms per {CFS_PERIOD_US // 1000} ms = 0.01 CPU); ask for at least 0.01")
        if limits.gomaxprocs is not None and (not isinstance(limits.gomaxprocs, int) or limits.gomaxprocs < 1):
            raise ConfigError(f"gomaxprocs={limits.gomaxprocs!r} must be a positive integer")
        if limits.cpuset is not None:
            cores = self.target.facts().get("cores")
            if not isinstance(limits.cpuset, str) or not _CPUSET.match(limits.cpuset):
                raise ConfigError(f"cpuset={limits.cpuset!r} is not a list of cores like '0', '0-1' or '0,2'")
            bad = [c for c in _cpus_in(limits.cpuset) if cores and c >= cores]
            if bad:
                raise ConfigError(f"cpuset={limits.cpuset!r} names core(s) {bad} but {self.target.name} has "
                                  f"{cores} (0-{cores - 1})")
        super().check_limits(app, limits)

    def swap_accounting(self) -> str:
        if self._swap_accounting is None:
            self._swap_accounting = self.target.run(["sh", "-c", _SWAP_ACCOUNTING]).stdout.strip()
        return self._swap_accounting

    def instance_config(self, app: str, limits: Limits) -> dict[str, str]:
        """The container's config keys: the run tag, and the limits in LXD's terms."""
        cfg = {RUN_KEY: self.run_tag, APP_KEY: app}
        raw = []
        v2 = self.target.facts().get("cgroup_version") == 2
        if limits.cpus is not None:
            allowance = cpu_allowance(limits.cpus)
            quota = round(limits.cpus * CFS_PERIOD_US)
            if allowance:
                cfg["limits.cpu.allowance"] = allowance
            elif v2:
                raw.append(f"lxc.cgroup2.cpu.max = {quota} {CFS_PERIOD_US}")
            else:
                raw += [f"lxc.cgroup.cpu.cfs_period_us = {CFS_PERIOD_US}", f"lxc.cgroup.cpu.cfs_quota_us = {quota}"]
        if limits.cpuset:
            cfg["limits.cpu"] = lxd_cpuset(limits.cpuset)
            # LXD's CPU balancer applies limits.cpu only after the container started, so a fast
            # app could see every core at exec; liblxc pins it before init runs.
            raw.append(f"lxc.cgroup2.cpuset.cpus = {limits.cpuset}" if v2 else f"lxc.cgroup.cpuset.cpus = {limits.cpuset}")
        if limits.memory_mb is not None:
            mem = int(limits.memory_mb * 2**20)
            cfg["limits.memory"] = str(mem)  # bytes: LXD reads a bare number as bytes
            if not limits.swap:
                cfg["limits.memory.swap"] = "false"
                acct = self.swap_accounting()
                if acct == "v1-memsw":
                    raw.append(f"lxc.cgroup.memory.memsw.limit_in_bytes = {mem}")
                elif acct == "v2-swap":
                    raw.append("lxc.cgroup2.memory.swap.max = 0")
        if raw:
            cfg["raw.lxc"] = "\n".join(raw)
        return cfg

    # -- containers ---------------------------------------------------------------------
    def create(self, name: str, artifact: Artifact, limits: Limits, devices: Mapping[str, dict] | None = None,
               network: bool = True) -> float:
        """Create (not start) a container from the artifact's image; returns the seconds it took."""
        devs = {**artifact.details.get("mounts", {}), **(devices or {})}
        if not network:
            devs["eth0"] = {"type": "none"}  # drops the default profile's NIC
        body = {"name": name, "type": "container", "profiles": ["default"],
                "source": {"type": "image", "fingerprint": artifact.details["image_fingerprint"]},
                "config": self.instance_config(artifact.app, limits), "devices": devs}
        started = time.monotonic()
        r = self.target.run(["lxc", "query", "--wait", "-X", "POST", "/1.0/instances", "--data",
                             json.dumps(body)], timeout=CREATE_TIMEOUT_S, check=False)
        took = time.monotonic() - started
        if not r.ok:
            self._delete_if_ours(name)
            raise EdgebenchError(f"creating LXD container {name} on {self.target.name} failed: "
                                 f"{r.stderr.strip()[-800:]}")
        return took

    def start_container(self, name: str, limits: Limits | None = None) -> None:
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

    def delete(self, name: str) -> None:
        """Stop and delete the container; nothing happens if it is already gone."""
        for _ in range(3):
            r = self.target.run(["lxc", "delete", "--force", name], timeout=DELETE_TIMEOUT_S, check=False)
            if r.ok or self.instance(name) is None:
                return
            time.sleep(0.5)
        raise EdgebenchError(f"could not delete LXD container {name} on {self.target.name}: "
                             f"{r.stderr.strip()[-500:]}")

    def _delete_if_ours(self, name: str) -> None:
        """After a failed preparation: a half-made container of this run goes; one that was there
        before under the same name (another run's) stays."""
        if ((self.instance(name) or {}).get("config") or {}).get(RUN_KEY) == self.run_tag:
            self.delete(name)

    def instance(self, name: str) -> dict | None:
        got = lxc_query(self.target, f"/1.0/instances/{name}")
        return got if isinstance(got, dict) else None

    def state(self, name: str) -> dict | None:
        """LXD's view of the running container (status, init PID, network), None if gone."""
        got = lxc_query(self.target, f"/1.0/instances/{name}/state")
        return got if isinstance(got, dict) else None

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

    def exec_argv(self, name: str, argv: Sequence[str], env: Mapping[str, str] | Sequence[str] | None = None,
                  stdin: bool = False) -> list[str]:
        """The `lxc exec` command line that runs argv in the container, in the foreground,
        without a pseudo-terminal (and with stdin from /dev/null unless stdin=True)."""
        pairs = [f"{k}={v}" for k, v in env.items()] if isinstance(env, Mapping) else list(env or [])
        return ["lxc", "exec", name, "--force-noninteractive", *([] if stdin else ["--disable-stdin"]),
                *[f"--env={e}" for e in pairs], "--", *argv]

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

    def _push_app(self, name: str, artifact: Artifact) -> float:
        started = time.monotonic()
        for src, dest in artifact.details["pushes"]:
            self.push(name, src, dest)
        return time.monotonic() - started

    def _prepare(self, name: str, artifact: Artifact, limits: Limits, network: bool = True) -> dict:
        """Untimed: create the container, boot it once and stop it (the first start rewrites the
        rootfs' owners for the uid map), push the app. Returns how long each step took."""
        took = {"init_s": self.create(name, artifact, limits, network=network)}
        started = time.monotonic()
        self.start_container(name, limits)
        r = self.target.run(["lxc", "stop", "--force", name], timeout=DELETE_TIMEOUT_S, check=False)
        if not r.ok:
            raise EdgebenchError(f"lxc stop {name} on {self.target.name} failed: {r.stderr.strip()[-500:]}")
        took["first_boot_s"] = time.monotonic() - started
        took["push_s"] = self._push_app(name, artifact)
        return took

    def _write_in(self, name: str, dest: str, text: str) -> None:
        """Write text to a file inside the container (through a file on the target)."""
        staged = f"{self.logs_dir()}/{name}.{posixpath.basename(dest)}"
        self.target.write_text(staged, text)
        self.push(name, staged, dest, mode="0644")

    def read_in(self, name: str, path: str) -> str | None:
        """A file inside the container, or None if it (or the container) is gone."""
        r = self.target.run(["lxc", "file", "pull", "-q", f"{name}{path}", "-"], check=False)
        return r.stdout if r.ok else None

    # -- services --------------------------------------------------------------------
    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        self.check_limits(artifact.app, limits)
        name = self.new_name(artifact.app)
        logs = self.logs_dir()
        self.target.run(["mkdir", "-p", logs])
        marker = f"{logs}/{name}.started"
        cport = artifact.built.app.container_port
        plan = LaunchPlan(self.name, artifact.app, name, [], port, detaches=False, limits=limits,
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          network_path=NETWORK_PATH,
                          state={"container": name, "marker": marker, "start_mode": self.start_mode})
        env = app_env(artifact.built, limits, cport)
        app_argv = artifact.details["inner_argv"]
        try:
            plan.state.update(self._prepare(name, artifact, limits))
            r = self.target.run(["lxc", "config", "device", "add", name, PROXY_DEVICE, "proxy",
                                 f"listen=tcp:{LISTEN_ADDRESS}:{port}", f"connect=tcp:127.0.0.1:{cport}", "bind=host"],
                                check=False)
            if not r.ok:
                raise EdgebenchError(f"adding the proxy device for port {port} to {name} failed: "
                                     f"{r.stderr.strip()[-500:]}")
            if self.start_mode == "service":
                self._write_in(name, SERVICE_FILE, service_definition(env, app_argv))
                then = self.exec_argv(name, [WAIT_APP])
            else:
                then = self.exec_argv(name, app_argv, env)
        except BaseException:
            self._delete_if_ours(name)
            raise
        # The clock reading after `lxc start` returns splits the launch (see the module doc).
        plan.argv = ["sh", "-c", 'lxc start "$1" || exit; date +%s%N >"$2"; shift 2; exec "$@"',
                     "edgebench-lxd-start", name, marker, *then]
        return plan

    def _find_pid(self, init_pid: int, pattern: str = APP_ROOT + "/") -> int | None:
        r = self.target.run(["sh", "-c", _FIND_PID, "find-pid", str(init_pid), pattern], check=False)
        return int(r.stdout.strip()) if r.ok and r.stdout.strip().isdigit() else None

    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        name = plan.state["container"]
        plan.state["launcher_pid"] = launcher_pid
        # The app can answer before `lxc start` returns (LXD's 1 s proxy poll): wait for it, so
        # that the launch's split and LXD's full view of the container are there.
        self.target.run(["sh", "-c", 'for i in $(seq 300); do [ -s "$1" ] && exit 0; sleep 0.05; done; exit 1',
                         "wait-started", plan.state["marker"]], timeout=30, check=False)
        st = self.state(name) or {}
        init_pid = st.get("pid") or None
        app_pid = self._find_pid(init_pid) if init_pid else None
        # Read from init: the limits sit on lxc.payload.NAME, where init (and the service) run;
        # on cgroup v2 an exec'd process sits one level below it (.lxc), whose own files say "max".
        applied = read_limits(self.target, init_pid or app_pid) if (app_pid or init_pid) else None
        config = (self.instance(name) or {}).get("config", {})
        marker = (self.target.read_text(plan.state["marker"], missing_ok=True) or "").strip()
        addresses = [a["address"] for a in ((st.get("network") or {}).get("eth0") or {}).get("addresses", [])
                     if a.get("family") == "inet"]
        details = {"init_pid": init_pid, "launcher_pid": launcher_pid,
                   "cgroup": self.container_cgroup(name),
                   "lxd_config": {k: v for k, v in config.items() if k.startswith(("limits.", "raw.", "user."))},
                   "container_started_unix_ns": int(marker) if marker.isdigit() else None,
                   "start_mode": plan.state.get("start_mode"),
                   **{k: plan.state.get(k) for k in ("init_s", "first_boot_s", "push_s")},
                   "bridge_ipv4": addresses[0] if addresses else None}
        return Instance(self.name, plan.app, name, plan.port, f"http://127.0.0.1:{plan.port}", app_pid,
                        plan.limits, applied, plan.network_path, plan, details=details)

    def app_output(self, instance: Instance) -> str:
        return self._app_stream(instance.plan, "out")

    def _app_stream(self, plan: LaunchPlan, which: str) -> str:
        if plan.state.get("start_mode") == "service":
            return self.read_in(plan.state["container"], f"{SERVICE_LOG}/app.{which}") or ""
        path = plan.stdout_path if which == "out" else plan.stderr_path
        return self.target.read_text(path, missing_ok=True) or "" if path else ""

    def oom_kills(self, name: str) -> int | None:
        st = self.state(name)
        if not st or not st.get("pid"):
            return None
        r = self.target.run(["sh", "-c", _OOM_KILLS, "oom-kills", str(st["pid"])], check=False)
        return int(r.stdout.strip()) if r.stdout.strip().isdigit() else None

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        name = plan.state.get("container")
        parts = []
        if name:
            st = self.state(name)
            oom = self.oom_kills(name)
            if oom:
                parts.append(f"OOM-killed in the container's cgroup (oom_kill {oom})")
            if st is None:
                parts.append("container gone")
            elif st.get("status") != "Running":
                parts.append(f"container {str(st.get('status')).lower()}")
        launcher = (self.target.read_text(plan.stderr_path, missing_ok=True) or "").strip() if plan.stderr_path else ""
        app = self._app_stream(plan, "err").strip() if plan.state.get("start_mode") == "service" else ""
        for text in (app, launcher):
            tail = text.splitlines()[-3:]
            if tail:
                parts.append(" | ".join(tail))
        return "; ".join(parts) or None

    def died(self, plan: LaunchPlan) -> str | None:
        st = self.state(plan.state["container"])
        if st is None or st.get("status") != "Running":
            return self.failure_reason(plan)
        return None

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        name = plan.state.get("container")
        if name:
            self.delete(name)
        launcher = plan.state.pop("launcher_pid", None)
        if launcher and is_alive(self.target, launcher):
            kill_pid(self.target, launcher)  # `lxc exec` ends with its container; this is a backstop
        if plan.state.get("marker"):
            self.target.run(["rm", "-f", plan.state["marker"]], check=False)

    def tagged(self) -> list[str]:
        """Containers on the target that belong to this run (by config key or name)."""
        items = lxc_query(self.target, "/1.0/instances?recursion=1") or []
        return [i["name"] for i in items if (i.get("config") or {}).get(RUN_KEY) == self.run_tag
                or i.get("name", "").startswith(self.name_prefix)]

    def cleanup(self) -> None:
        try:
            super().cleanup()
        finally:
            # Anything of this run that a crash kept from the bookkeeping.
            for name in self.tagged():
                self.delete(name)

    # -- batch -----------------------------------------------------------------------
    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        """Untimed: a container with the limits and no network, the program pushed in, started
        (init only); argv is the `lxc exec` that runs the program to completion. Its cgroup is
        the container's: it holds init (a shell asleep) besides the program, so the memory.stat
        fault counts read before the exec are kept in the details to subtract."""
        name = self.new_name(artifact.app)
        logs = self.logs_dir()
        self.target.run(["mkdir", "-p", logs])
        plan = LaunchPlan(self.name, artifact.app, name, [], 0, limits=limits, network_path="none",
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          state={"container": name})
        try:
            plan.state["init_s"] = self.create(name, artifact, limits, network=False)
            plan.state["push_s"] = self._push_app(name, artifact)
            started = time.monotonic()
            self.start_container(name, limits)  # the first start, with the rootfs' uid shift: untimed
            plan.state["start_s"] = time.monotonic() - started
            cgroup = self.container_cgroup(name)
            plan.counting_cgroup = cgroup
            plan.state["cgroup"] = cgroup
            plan.faults_before_exec = read_fault_counters(self.target, cgroup, settle=False)
        except BaseException:
            self._delete_if_ours(name)
            raise
        env = app_env(artifact.built, limits)
        plan.argv = self.exec_argv(name, [*artifact.details["inner_argv"], *args], env)
        return plan

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        name = plan.state["container"]
        st = self.state(name) or {}
        pid = st.get("pid")
        applied = read_limits(self.target, pid) if pid else None
        before = plan.faults_before_exec
        return BatchOutcome(applied, oom_killed=bool(applied.oom_kills) if applied else None, details={
            "container": name, "cgroup": plan.state.get("cgroup"),
            "cgroup_faults_before_exec": ({"pgfault": before.pgfault, "pgmajfault": before.pgmajfault}
                                          if before else None),
            "init_s": plan.state.get("init_s"), "push_s": plan.state.get("push_s"),
            "start_s": plan.state.get("start_s")})


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


__all__ = ["LxdRuntime", "cpu_allowance", "lxd_cpuset", "service_definition", "NETWORK_PATH", "START_MODES"]
