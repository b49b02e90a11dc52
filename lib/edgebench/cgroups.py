"""Creating cgroups for native processes and reading back the limits any process runs under.

Works on cgroup v1 (one hierarchy per controller) and v2 (unified), through shell commands
on the target, so the same code serves a local machine and a Raspberry Pi over SSH.

The module holds every read and write of cgroup files edgebench does: the limits a process runs
under, its OOM kills and memory pressure, the native runtime's own cgroups, the counting cgroups
(and systemd slices) that page-fault counters are read from, and the cpusets limits pin to. It is
one module because each of them has a v1 and a v2 form: with all of them beside each other, the
two layouts are told apart in one place and a difference between them is handled once for every
caller.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from edgebench.errors import ConfigError
from edgebench.targets import Target

CFS_PERIOD_US = 100_000
V1_CONTROLLERS = ("memory", "cpu", "cpuset")

# The OOM counters of a memory cgroup, the first found in the directories given: v2 memory.events
# or v1 memory.oom_control. Both hold a line "oom_kill N" (v1 only since Linux 4.13); the one
# parser of that text is `parse_oom_kills`.
_OOM_COUNTERS = r"""
oom_counters() {
  for d in "$@"; do
    for f in "$d/memory.events" "$d/memory.oom_control"; do
      [ -f "$f" ] && { cat "$f"; return 0; }
    done
  done
}
"""

# Reads the limits of the cgroup(s) PID belongs to. Prints key=value; "max" means unlimited.
_READ_LIMITS = _OOM_COUNTERS + r"""
pid=$1
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  p=$(awk -F: '$1=="0"{print $3}' /proc/$pid/cgroup)
  d=/sys/fs/cgroup$p
  echo "cgroup_version=2"; echo "cgroup_path=$p"
  grep -qw memory /sys/fs/cgroup/cgroup.controllers && echo "memory_controller=1" || echo "memory_controller=0"
  echo "memory_max=$(cat $d/memory.max 2>/dev/null)"
  echo "swap_max=$(cat $d/memory.swap.max 2>/dev/null)"
  echo "cpu_max=$(cat $d/cpu.max 2>/dev/null)"
  echo "cpuset=$(cat $d/cpuset.cpus.effective 2>/dev/null)"
  echo "oom_counters=$(oom_counters "$d" | tr '\n' ' ')"
else
  mp=$(awk -F: '$2 ~ /(^|,)memory(,|$)/{print $3}' /proc/$pid/cgroup)
  cp=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/{print $3}' /proc/$pid/cgroup)
  sp=$(awk -F: '$2 ~ /(^|,)cpuset(,|$)/{print $3}' /proc/$pid/cgroup)
  m=/sys/fs/cgroup/memory$mp; c=/sys/fs/cgroup/cpu$cp; [ -d "$c" ] || c=/sys/fs/cgroup/cpu,cpuacct$cp
  echo "cgroup_version=1"; echo "cgroup_path=$mp"
  grep -qw memory /proc/cgroups && awk '$1 == "memory" {print "memory_controller=" $4}' /proc/cgroups
  echo "memory_max=$(cat $m/memory.limit_in_bytes 2>/dev/null)"
  echo "memsw_max=$(cat $m/memory.memsw.limit_in_bytes 2>/dev/null)"
  echo "cpu_quota_us=$(cat $c/cpu.cfs_quota_us 2>/dev/null)"
  echo "cpu_period_us=$(cat $c/cpu.cfs_period_us 2>/dev/null)"
  s=/sys/fs/cgroup/cpuset$sp
  echo "cpuset=$(cat $s/cpuset.effective_cpus 2>/dev/null || cat $s/cpuset.cpus 2>/dev/null)"
  echo "oom_counters=$(oom_counters "$m" | tr '\n' ' ')"
fi
echo "nproc_visible=$(cat /proc/$pid/status 2>/dev/null | awk '/^Cpus_allowed_list/{print $2}')"
"""

NO_MEMORY_CONTROLLER = ("the device's kernel has no memory controller (read back from its cgroups); on a "
                        "Raspberry Pi add cgroup_enable=memory to /boot/firmware/cmdline.txt and reboot")

# Anything at or above this is the kernel's "no limit" on v1 (PAGE_COUNTER_MAX * page size).
_V1_UNLIMITED = 1 << 62
# Where a VM's limits are read from (runtimes/qemu.py): no cgroup holds the guest's vCPUs or memory.
QEMU_COMMAND_LINE = "QEMU command line"


@dataclass
class AppliedLimits:
    """Limits as read back from the kernel, in the units the rows use."""
    cpus: float | None          # CFS quota / period; None = no quota
    memory_mb: float | None     # None = no limit
    swap_mb: float | None       # extra swap allowed beyond memory; 0 = none; None = unlimited/unknown
    cpuset: str | None
    cgroup_version: int | None
    cgroup_path: str | None
    oom_kills: int | None
    # False where the kernel has no memory controller (cgroup_disable=memory, a stock Raspberry
    # Pi OS): a memory limit asked for is then not applied by any runtime.
    memory_controller: bool | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    @property
    def holder(self) -> str:
        """Who holds these limits, for a note that they differ from what was asked."""
        return "QEMU gave the VM" if self.cgroup_path == QEMU_COMMAND_LINE else "cgroup has"


def _num(v: str | None) -> int | None:
    try:
        return int(v) if v not in (None, "", "max") else None
    except ValueError:
        return None


def parse_limits(text: str) -> AppliedLimits:
    kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    version = _num(kv.get("cgroup_version"))
    cpus = memory_mb = swap_mb = None
    if version == 2:
        mem = _num(kv.get("memory_max"))
        memory_mb = mem / 2**20 if mem is not None else None
        swap = kv.get("swap_max")
        swap_mb = None if swap in (None, "", "max") else int(swap) / 2**20
        quota, _, period = (kv.get("cpu_max") or "max").partition(" ")
        if quota != "max" and period:
            cpus = int(quota) / int(period)
    else:
        mem = _num(kv.get("memory_max"))
        memory_mb = mem / 2**20 if mem is not None and mem < _V1_UNLIMITED else None
        memsw = _num(kv.get("memsw_max"))
        if memsw is not None and mem is not None and memsw < _V1_UNLIMITED:
            swap_mb = (memsw - mem) / 2**20
        quota, period = _num(kv.get("cpu_quota_us")), _num(kv.get("cpu_period_us"))
        if kv.get("cpu_quota_us", "").strip() not in ("", "-1") and quota and period:
            cpus = quota / period
    return AppliedLimits(cpus=cpus, memory_mb=memory_mb, swap_mb=swap_mb,
                         cpuset=kv.get("cpuset") or kv.get("nproc_visible") or None,
                         cgroup_version=version, cgroup_path=kv.get("cgroup_path") or None,
                         oom_kills=parse_oom_kills(kv.get("oom_counters")),
                         memory_controller={"1": True, "0": False}.get(kv.get("memory_controller", "")))


def read_limits(target: Target, pid: int) -> AppliedLimits:
    r = target.run(["sh", "-c", _READ_LIMITS, "read-limits", str(pid)])
    return parse_limits(r.stdout)


# -- OOM kills: one reader, one parser, one phrase ------------------------------------------

# $1: a PID whose memory cgroup is read, or "-"; then the cgroup directories to read instead.
# Leaves the directories to read in "$@".
_MEMORY_CGROUP = r"""
pid=$1; shift
if [ "$pid" != - ]; then
  [ -r /proc/"$pid"/cgroup ] || exit 0
  cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/"$pid"/cgroup)
  if [ -n "$cg" ]; then set -- /sys/fs/cgroup/memory"$cg"
  else
    cg=$(awk -F: '$1 == "0" {print $3}' /proc/"$pid"/cgroup)
    [ -n "$cg" ] || exit 0
    set -- /sys/fs/cgroup"$cg"
  fi
fi
"""

_OOM_KILLS = _OOM_COUNTERS + _MEMORY_CGROUP + 'oom_counters "$@"\n'


def _cgroup_args(pid: int | None, cgroup_dirs: list[str] | None) -> list[str]:
    if pid is None and not cgroup_dirs:
        raise ValueError("a memory cgroup reader needs a pid or cgroup directories")
    return [str(pid)] if pid is not None else ["-", *cgroup_dirs]


def parse_oom_kills(text: str | None) -> int | None:
    """The kernel's OOM kill count in memory.events (v2) or memory.oom_control (v1) text, also
    with its lines joined by spaces. None when there is no such count (no file, a v1 kernel
    before 4.13, the process gone): unknown, never 0."""
    words = (text or "").split()
    for key, value in zip(words, words[1:]):
        if key == "oom_kill" and value.isdigit():
            return int(value)
    return None


def oom_kills(target: Target, pid: int | None = None, cgroup_dirs: list[str] | None = None) -> int | None:
    """OOM kills so far in the memory cgroup of `pid`, or else in the first of `cgroup_dirs` that
    has the counters (v1 or v2); None when unknown."""
    r = target.run(["sh", "-c", _OOM_KILLS, "oom-kills", *_cgroup_args(pid, cgroup_dirs)], check=False)
    return parse_oom_kills(r.stdout)


def parse_kernel_oom_kill(kernel_log: str | None, cgroup_part: str) -> str | None:
    """The task the kernel's log says it OOM-killed in a memory cgroup whose path contains
    `cgroup_part` (a container id), as "node, pid 24743"; None when the log has no such kill.
    The line is the kernel's own, written before the task dies:
    `oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/docker/<id>,task_memcg=/docker/<id>,task=node,pid=24743,uid=0`."""
    for line in reversed((kernel_log or "").splitlines()):
        _, found, fields = line.partition("oom-kill:")
        if not found:
            continue
        kv = dict(f.split("=", 1) for f in fields.strip().split(",") if "=" in f)
        if cgroup_part and any(cgroup_part in kv.get(k, "") for k in ("oom_memcg", "task_memcg")):
            return f"{kv.get('task', '?')}, pid {kv.get('pid', '?')}"
    return None


def kernel_oom_kill(target: Target, cgroup_part: str) -> str | None:
    """`parse_kernel_oom_kill` on the target's kernel log; None also when the log cannot be read
    (dmesg restricted to root, a rotated ring buffer): unknown, not "no kill"."""
    r = target.run(["dmesg"], check=False, timeout=30)
    return parse_kernel_oom_kill(r.stdout, cgroup_part) if r.ok else None


def oom_reason(count: int | None) -> str | None:
    """The failure reason every runtime gives for OOM kills it read from a cgroup; None for none
    or unknown."""
    return f"OOM-killed in the cgroup (oom_kill {count})" if count else None


# -- Thrashing: a limit the kernel meets by reclaiming the app's own code, not by an OOM kill ----

# Usage, limit (v1 or v2) and major faults of the first directory that has them.
_MEMORY_PRESSURE = _MEMORY_CGROUP + r"""
for d in "$@"; do
  if [ -f "$d/memory.current" ]; then
    echo "usage=$(cat "$d/memory.current") limit=$(cat "$d/memory.max")"
    grep '^pgmajfault ' "$d/memory.stat"; exit 0
  elif [ -f "$d/memory.usage_in_bytes" ]; then
    echo "usage=$(cat "$d/memory.max_usage_in_bytes") limit=$(cat "$d/memory.limit_in_bytes")"
    grep '^total_pgmajfault ' "$d/memory.stat"; exit 0
  fi
done
"""

# Fewer major faults than this is a cold start reading its files once, not thrashing.
THRASH_MAJOR_FAULTS = 200


def parse_memory_pressure(text: str | None) -> tuple[int, int, int] | None:
    """(usage or peak bytes, limit bytes, major faults) from the _MEMORY_PRESSURE output; None
    when any is missing or the cgroup has no limit."""
    kv = {}
    for word in (text or "").split():
        if "=" in word:
            key, _, value = word.partition("=")
            kv[key] = value
    words = (text or "").split()
    for key, value in zip(words, words[1:]):
        if key in ("pgmajfault", "total_pgmajfault"):
            kv["faults"] = value
    values = [kv.get(k, "") for k in ("usage", "limit", "faults")]
    if not all(v.isdigit() for v in values) or int(values[1]) >= _V1_UNLIMITED:
        return None
    return int(values[0]), int(values[1]), int(values[2])


def thrash_reason(pressure: tuple[int, int, int] | None) -> str | None:
    """The phrase for an app that reached its memory limit and kept faulting its pages back in:
    under a limit too small for its code the kernel may reclaim page cache forever instead of
    OOM-killing, so the app is neither killed nor ready."""
    if pressure is None:
        return None
    usage, limit, faults = pressure
    if usage < 0.9 * limit or faults < THRASH_MAJOR_FAULTS:
        return None
    return (f"thrashing at its memory limit ({usage / 2**20:.1f} of {limit / 2**20:g} MiB used, "
            f"{faults} major page faults): the app's code does not fit; raise the memory limit")


def memory_thrash(target: Target, pid: int | None = None, cgroup_dirs: list[str] | None = None) -> str | None:
    """thrash_reason for the memory cgroup of `pid` or the first of `cgroup_dirs`."""
    r = target.run(["sh", "-c", _MEMORY_PRESSURE, "memory-pressure", *_cgroup_args(pid, cgroup_dirs)],
                   check=False)
    return thrash_reason(parse_memory_pressure(r.stdout))


def cpuset_for(cpus: float | None, cores: int, first_core: int = 0) -> str | None:
    """The cores a fair run pins to: ceil(cpus) cores starting at first_core."""
    if cpus is None:
        return None
    n = max(1, -(-int(cpus * 1000) // 1000))
    if n > cores:
        raise ConfigError(f"cannot pin {cpus:g} CPU(s): the target has {cores} cores; ask for at most {cores}")
    last = first_core + n - 1
    if last >= cores:
        raise ConfigError(f"cannot pin {n} CPU(s) starting at core {first_core}: the target has {cores}")
    return str(first_core) if n == 1 else f"{first_core}-{last}"


def taskset(cpuset: str | None) -> list[str]:
    """The prefix that runs a command, and every thread it starts, on the cpuset's cores; [] for none."""
    return ["taskset", "-c", cpuset] if cpuset else []


def cores_in(cpuset: str | None) -> list[int]:
    """The cores of a cpuset as the kernel writes one ('1', '1-3', '0,2-3'); [] for None or ""."""
    cores: list[int] = []
    for part in (cpuset or "").split(","):
        if part.strip():
            first, _, last = part.strip().partition("-")
            cores.extend(range(int(first), int(last or first) + 1))
    return cores


class NativeCgroup:
    """A cgroup the library creates for one native process, removed on `destroy`."""

    def __init__(self, target: Target, name: str):
        self.target = target
        self.name = name
        self.version = target.facts().get("cgroup_version")
        if self.version not in (1, 2):
            raise ConfigError(f"{target.name}: no cgroup filesystem found at /sys/fs/cgroup; run "
                              "without cpus/memory limits or mount cgroups")
        self.relpath = f"edgebench/{name}"
        if self.version == 2:
            self.dirs = [f"/sys/fs/cgroup/{self.relpath}"]
        else:
            self.dirs = [f"/sys/fs/cgroup/{c}/{self.relpath}" for c in V1_CONTROLLERS]
            # Joined too on a hybrid machine, so that perf can count this group (-G).
            unified = target.facts().get("cgroup_unified")
            if unified:
                self.dirs.append(f"{unified}/{self.relpath}")

    def create(self, cpus: float | None, memory_mb: float | None, cpuset: str | None,
               swap: bool) -> None:
        if not self.target.is_root:
            raise ConfigError(f"{self.target.name}: limits for the native runtime need a cgroup, which "
                              "needs root there; connect as root or set cpus/memory to None")
        q = shlex.quote
        lines = ["set -e"]
        mem_bytes = int(memory_mb * 2**20) if memory_mb else None
        quota = int(cpus * CFS_PERIOD_US) if cpus else None
        if self.version == 2:
            d = self.dirs[0]
            lines += [
                # One controller at a time: a kernel without one (a Raspberry Pi's memory controller
                # is off unless cmdline.txt says cgroup_enable=memory) refuses the whole line.
                "for c in cpu memory cpuset; do grep -qw $c /sys/fs/cgroup/cgroup.controllers && "
                "{ echo +$c > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true; }; done",
                "mkdir -p /sys/fs/cgroup/edgebench",
                "for c in cpu memory cpuset; do ! grep -qw $c /sys/fs/cgroup/edgebench/cgroup.controllers || "
                "echo +$c > /sys/fs/cgroup/edgebench/cgroup.subtree_control; done",
                f"mkdir -p {q(d)}",
            ]
            if mem_bytes:
                # Without the memory controller there is no memory.max: the run goes on, and the
                # limit read back (none) says in the row that it was not applied.
                lines.append(f"[ ! -f {q(d)}/memory.max ] || echo {mem_bytes} > {q(d)}/memory.max")
                if not swap:
                    lines.append(f"[ ! -f {q(d)}/memory.swap.max ] || echo 0 > {q(d)}/memory.swap.max")
            if quota:
                lines.append(f"echo '{quota} {CFS_PERIOD_US}' > {q(d)}/cpu.max")
            if cpuset:
                lines.append(f"echo {q(cpuset)} > {q(d)}/cpuset.cpus")
        else:
            mem_d, cpu_d, set_d = self.dirs[:3]
            # A v1 cpuset group accepts no task until cpus and mems are set, parent first.
            lines += [f"mkdir -p {q(d)}" for d in self.dirs]
            lines += [
                "p=/sys/fs/cgroup/cpuset/edgebench",
                "[ -n \"$(cat $p/cpuset.cpus)\" ] || cat /sys/fs/cgroup/cpuset/cpuset.cpus > $p/cpuset.cpus",
                "[ -n \"$(cat $p/cpuset.mems)\" ] || cat /sys/fs/cgroup/cpuset/cpuset.mems > $p/cpuset.mems",
                f"cat $p/cpuset.mems > {q(set_d)}/cpuset.mems",
                f"echo {q(cpuset) if cpuset else '$(cat $p/cpuset.cpus)'} > {q(set_d)}/cpuset.cpus",
            ]
            if mem_bytes:
                lines.append(f"echo {mem_bytes} > {q(mem_d)}/memory.limit_in_bytes")
                if not swap:
                    lines.append(f"[ ! -f {q(mem_d)}/memory.memsw.limit_in_bytes ] || "
                                 f"echo {mem_bytes} > {q(mem_d)}/memory.memsw.limit_in_bytes")
            if quota:
                lines += [f"echo {CFS_PERIOD_US} > {q(cpu_d)}/cpu.cfs_period_us",
                          f"echo {quota} > {q(cpu_d)}/cpu.cfs_quota_us"]
        self.target.run(["sh", "-c", "\n".join(lines)])

    def wrap(self, argv: list[str]) -> list[str]:
        """argv that joins this cgroup and then execs the command, keeping its PID."""
        joins = " && ".join(f"echo $$ > {shlex.quote(d)}/cgroup.procs" for d in self.dirs)
        return ["sh", "-c", f'{joins} && exec "$@"', "edgebench-launch", *argv]

    def destroy(self) -> None:
        """Kill whatever is left inside and remove the directories (retrying while tasks exit)."""
        dirs = " ".join(shlex.quote(d) for d in self.dirs)
        script = f"""
for d in {dirs}; do
  [ -d "$d" ] || continue
  for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
done
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  left=0
  for d in {dirs}; do [ -d "$d" ] && {{ rmdir "$d" 2>/dev/null || left=1; }}; done
  [ $left = 0 ] && exit 0
  sleep 0.1
done
exit 1
"""
        try:
            self.target.run(["sh", "-c", script], check=False)
        except KeyboardInterrupt:
            # Ctrl-C (or SIGTERM) while it ran stopped the script half-way: finish removing, then stop.
            self.target.run(["sh", "-c", script], check=False)
            raise


# -- counting a batch program's faults from its cgroup ------------------------------------

def counting_dirs(target: Target, relpath: str) -> list[str]:
    """The directories a counting cgroup needs before anything joins it: memory (for
    memory.stat) and, for perf -G, the hierarchy perf_event lives in (v2, or v1's unified)."""
    facts = target.facts()
    if facts.get("cgroup_version") == 2:
        return [f"/sys/fs/cgroup/{relpath}"]
    dirs = [f"/sys/fs/cgroup/memory/{relpath}"]
    if facts.get("cgroup_unified"):
        dirs.append(f"{facts['cgroup_unified']}/{relpath}")
    return dirs


def create_counting_cgroup(target: Target, relpath: str) -> None:
    q = shlex.quote
    lines = []
    if target.facts().get("cgroup_version") == 2:
        # memory.stat appears only where every ancestor delegates the memory controller.
        parent = "/sys/fs/cgroup"
        for part in relpath.split("/")[:-1]:
            lines.append(f"echo +memory > {q(parent)}/cgroup.subtree_control 2>/dev/null || true")
            parent = f"{parent}/{part}"
            lines.append(f"mkdir -p {q(parent)}")
        lines.append(f"echo +memory > {q(parent)}/cgroup.subtree_control 2>/dev/null || true")
    lines += [f"mkdir -p {q(d)}" for d in counting_dirs(target, relpath)]
    target.run(["sh", "-c", "set -e\n" + "\n".join(lines)])


@dataclass
class FaultCounters:
    pgfault: int | None
    pgmajfault: int | None
    source: str        # the memory.stat read
    note: str = ""     # why a value is missing


# Reads memory.stat until the fault count is non-zero and the same twice in a row: a finished
# container's cgroup hands its counts to the parent only when it is released, a moment after
# `docker run` returns, and a read in between sees 0.
_SETTLED_STAT = r"""
f=$1; key=$2; last=; n=0
while [ $n -lt 30 ]; do
  [ -f "$f" ] || { echo missing; exit 0; }
  v=$(awk -v k="$key" '$1==k {print $2}' "$f")
  if [ -n "$v" ] && [ "$v" != 0 ] && [ "$v" = "$last" ]; then break; fi
  last=$v; n=$((n+1)); sleep 0.1
done
cat "$f"
"""


def read_fault_counters(target: Target, relpath: str, settle: bool = True) -> FaultCounters:
    """pgfault/pgmajfault of a cgroup and everything below it (v1 total_*, v2 is hierarchical).
    Counts survive the removal of child cgroups (a finished container's), so the parent is read;
    settle=False reads once (a live cgroup, e.g. before a launch)."""
    v2 = target.facts().get("cgroup_version") == 2
    path = f"/sys/fs/cgroup/{relpath}/memory.stat" if v2 else f"/sys/fs/cgroup/memory/{relpath}/memory.stat"
    prefix = "" if v2 else "total_"
    if settle:
        text = target.run(["sh", "-c", _SETTLED_STAT, "settled-stat", path, prefix + "pgfault"]).stdout
    else:
        text = target.read_text(path, missing_ok=True) or "missing"
    if text.strip() == "missing":
        why = (": the device's kernel has no memory controller" if target.facts().get("memory_controller") == "no"
               else "")
        return FaultCounters(None, None, path, f"{path} is missing{why}")
    stat = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
    minor, major = _num(stat.get(prefix + "pgfault")), _num(stat.get(prefix + "pgmajfault"))
    if not minor:
        return FaultCounters(None, None, path, f"{prefix}pgfault in {path} stayed {minor} for 3 s "
                             "(the cgroup's counts never arrived)")
    return FaultCounters(minor, major, path)


# -- counting under systemd's cgroup driver ----------------------------------------------------
# Docker on systemd's driver (Debian's and Raspberry Pi OS's docker.io on cgroup v2) places a
# container in a scope that goes with it, and takes only a slice as its --cgroup-parent. An empty
# slice of the run's own outlives the scope, and its memory.stat keeps what the container counted.

def slice_unit(name: str) -> str:
    """The slice named after `name`: a '-' in a slice's name means nesting, so every other
    character than letters, digits and '_' becomes '_'."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name) + ".slice"


def slice_glob(prefix: str) -> str:
    """The slices whose `name` starts with `prefix`, as a systemctl pattern."""
    return slice_unit(prefix).removesuffix(".slice") + "*.slice"


def start_counting_slice(target: Target, unit: str) -> str:
    """Start an empty slice (systemd makes one without a unit file); return its cgroup relative to
    the cgroup root, as perf -G and memory.stat want it."""
    target.run(["systemctl", "start", unit], timeout=60)
    path = target.run(["systemctl", "show", "--property=ControlGroup", "--value", unit]).stdout.strip()
    if not path:
        target.run(["systemctl", "stop", unit], check=False, timeout=60)
        raise ConfigError(f"systemd on {target.name} started {unit} but gave it no cgroup")
    return path.lstrip("/")


def stop_counting_slices(target: Target, pattern: str) -> None:
    """Stop the slices matching `pattern` (a unit name or a glob); systemd removes their cgroups."""
    target.run(["systemctl", "stop", pattern], check=False, timeout=60)


def counting_slices(target: Target, pattern: str) -> list[str]:
    """The active slices matching `pattern`; none where systemd is not init."""
    r = target.run(["sh", "-c", "command -v systemctl >/dev/null || exit 0; "
                    'systemctl list-units --type=slice --plain --no-legend "$1" 2>/dev/null', "slices", pattern],
                   check=False, timeout=30)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def remove_cgroup_everywhere(target: Target, relpath: str) -> None:
    """rmdir relpath and whatever a runtime created below it, in every mounted hierarchy
    (docker creates its --cgroup-parent in each v1 controller)."""
    script = r"""
rel=$1
for root in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts); do
  [ -d "$root/$rel" ] || continue
  for i in 1 2 3 4 5 6 7 8 9 10; do
    find "$root/$rel" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$root/$rel" ] || break
    sleep 0.1
  done
done
true
"""
    target.run(["sh", "-c", script, "rm-cgroup", relpath], check=False)
