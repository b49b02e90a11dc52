"""edgebench.cgroups: reading limits back (v1 and v2 text), pinning, and a real native cgroup."""

import os
import uuid

import pytest

from edgebench.cgroups import (NativeCgroup, cpuset_for, memory_thrash, oom_kills, oom_reason, parse_limits,
                               parse_kernel_oom_kill, parse_memory_pressure, parse_oom_kills, read_limits,
                               thrash_reason)
from edgebench.cgroups import _MEMORY_PRESSURE
from edgebench.errors import ConfigError
from edgebench.runtimes.tags import is_alive, wait_until_gone
from edgebench.targets import sh

V1_UNLIMITED = "9223372036854771712"
MiB = 2**20
# The OOM counter files as the kernel writes them (v1 memory.oom_control, v2 memory.events).
V1_OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill {}\n"
V1_OOM_CONTROL_BEFORE_4_13 = "oom_kill_disable 0\nunder_oom 0\n"
V2_MEMORY_EVENTS = "low 0\nhigh 0\nmax 57\noom 3\noom_kill {}\noom_group_kill 0\n"


def joined(counters: str) -> str:
    """A counter file as the limits reader prints it: on one line."""
    return counters.replace("\n", " ")


def v1(memory=str(64 * MiB), memsw=str(64 * MiB), quota="50000", period="100000", cpuset="0",
       oom="0", visible="0-3"):
    counters = joined(V1_OOM_CONTROL.format(oom)) if oom else ""
    return (f"cgroup_version=1\ncgroup_path=/edgebench/x\nmemory_max={memory}\nmemsw_max={memsw}\n"
            f"cpu_quota_us={quota}\ncpu_period_us={period}\ncpuset={cpuset}\noom_counters={counters}\n"
            f"nproc_visible={visible}\n")


def v2(memory=str(64 * MiB), swap="0", cpu="150000 100000", cpuset="0-1", oom="2"):
    counters = joined(V2_MEMORY_EVENTS.format(oom)) if oom else ""
    return (f"cgroup_version=2\ncgroup_path=/edgebench/x\nmemory_max={memory}\nswap_max={swap}\n"
            f"cpu_max={cpu}\ncpuset={cpuset}\noom_counters={counters}\nnproc_visible=0-3\n")


def test_v1_limited():
    a = parse_limits(v1())
    assert (a.cpus, a.memory_mb, a.swap_mb, a.cpuset) == (0.5, 64, 0, "0")
    assert (a.cgroup_version, a.cgroup_path, a.oom_kills) == (1, "/edgebench/x", 0)


def test_v1_unlimited():
    a = parse_limits(v1(memory=V1_UNLIMITED, memsw=V1_UNLIMITED, quota="-1", cpuset=""))
    assert (a.cpus, a.memory_mb, a.swap_mb) == (None, None, None)
    assert a.cpuset == "0-3"  # falls back to the CPUs the process may use


def test_v1_swap_is_memsw_minus_memory():
    assert parse_limits(v1(memsw=str(96 * MiB))).swap_mb == 32
    assert parse_limits(v1(memsw=V1_UNLIMITED)).swap_mb is None
    assert parse_limits(v1(memsw="")).swap_mb is None  # no swap accounting


def test_v2_limited():
    a = parse_limits(v2())
    assert (a.cpus, a.memory_mb, a.swap_mb, a.cpuset, a.cgroup_version, a.oom_kills) == \
        (1.5, 64, 0, "0-1", 2, 2)


def test_v2_unlimited():
    a = parse_limits(v2(memory="max", swap="max", cpu="max 100000", oom=""))
    assert (a.cpus, a.memory_mb, a.swap_mb, a.oom_kills) == (None, None, None, None)


@pytest.mark.parametrize("text, expected", [
    (V1_OOM_CONTROL.format(0), 0),
    (V1_OOM_CONTROL.format(4), 4),
    (V2_MEMORY_EVENTS.format(0), 0),
    (V2_MEMORY_EVENTS.format(1), 1),             # not `oom` (3) nor `oom_group_kill` (0)
    (joined(V2_MEMORY_EVENTS.format(7)), 7),     # as the limits reader prints it
    (V1_OOM_CONTROL_BEFORE_4_13, None),          # v1 kernel without the count: unknown
    ("", None),                                  # no file: unknown, not 0
    (None, None),
])
def test_oom_kills_parsed_from_v1_and_v2_counters(text, expected):
    assert parse_oom_kills(text) == expected


def test_oom_kills_unknown_is_none_in_the_limits_too():
    assert parse_limits(v1(oom="")).oom_kills is None
    assert parse_limits(v1(oom="5")).oom_kills == 5
    assert parse_limits(v2(oom="0")).oom_kills == 0


# A kernel log as dmesg printed it here for a container OOM-killed under `docker run --memory 6m`.
KERNEL_LOG = """\
[21913.797956] node invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[21913.798389] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c2c507ce94fb,mems_allowed=0,\
oom_memcg=/docker/c2c507ce94fbcac051ce,task_memcg=/docker/c2c507ce94fbcac051ce,task=node,pid=24743,uid=0
[21913.798422] Memory cgroup out of memory: Killed process 24743 (node) total-vm:727132kB, anon-rss:5120kB
[22001.000001] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,\
oom_memcg=/system.slice/docker-ffee0011.scope,task_memcg=/system.slice/docker-ffee0011.scope,task=stress,pid=99,uid=0
"""


@pytest.mark.parametrize("cgroup_part, expected", [
    ("c2c507ce94fbcac051ce", "node, pid 24743"),
    ("ffee0011", "stress, pid 99"),            # systemd's cgroup driver names the scope
    ("0123456789ab", None),                    # another container: no kill of its own
    ("", None),                                # no id: never a match for everything
])
def test_kernel_log_names_the_task_killed_in_a_cgroup(cgroup_part, expected):
    assert parse_kernel_oom_kill(KERNEL_LOG, cgroup_part) == expected
    assert parse_kernel_oom_kill("", cgroup_part) is None and parse_kernel_oom_kill(None, cgroup_part) is None


def test_oom_reason_is_one_phrase_and_nothing_for_none_or_unknown():
    assert oom_reason(2) == "OOM-killed in the cgroup (oom_kill 2)"
    assert oom_reason(0) is None and oom_reason(None) is None


@pytest.mark.parametrize("name, text, expected", [
    ("memory.events", V2_MEMORY_EVENTS.format(3), 3),
    ("memory.oom_control", V1_OOM_CONTROL.format(2), 2),
    (None, None, None),
])
def test_oom_kills_read_from_cgroup_directories(local, tmp_path, name, text, expected):
    """The reader takes the first directory that has a counter file; none at all is unknown."""
    empty, cg = tmp_path / "empty", tmp_path / "cg"
    empty.mkdir()
    cg.mkdir()
    if name:
        (cg / name).write_text(text)
    assert oom_kills(local, cgroup_dirs=[str(empty), str(cg)]) == expected


def test_oom_kills_of_no_process_is_unknown(local):
    assert oom_kills(local, pid=2**22 + 1) is None  # above pid_max: no such process
    with pytest.raises(ValueError):
        oom_kills(local)


# What _MEMORY_PRESSURE prints: node at a 6 MiB Docker limit from a cold page cache (v1), and v2.
V1_THRASHING = "usage=6291456 limit=6291456\ntotal_pgmajfault 2313\n"
V2_THRASHING = "usage=8300000 limit=8388608\npgmajfault 950\n"


@pytest.mark.parametrize("text, expected", [
    (V1_THRASHING, (6291456, 6291456, 2313)),
    (V2_THRASHING, (8300000, 8388608, 950)),
    (f"usage=1000 limit={V1_UNLIMITED}\ntotal_pgmajfault 9000\n", None),  # no limit: nothing to thrash on
    ("usage=1000 limit=max\npgmajfault 9000\n", None),
    ("usage=1000 limit=8388608\n", None),  # no fault count: unknown
    ("", None),
])
def test_memory_pressure_parsed_from_v1_and_v2(text, expected):
    assert parse_memory_pressure(text) == expected


def test_thrashing_needs_both_a_full_cgroup_and_many_major_faults():
    assert "thrashing at its memory limit (6.0 of 6 MiB used, 2313 major page faults)" in \
        thrash_reason(parse_memory_pressure(V1_THRASHING))
    assert "raise the memory limit" in thrash_reason(parse_memory_pressure(V2_THRASHING))
    assert thrash_reason((6 * MiB, 64 * MiB, 5000)) is None  # far below its limit: not the limit's fault
    assert thrash_reason((6 * MiB, 6 * MiB, 40)) is None  # full, but a cold start reads its files once
    assert thrash_reason(None) is None


@pytest.mark.parametrize("cpus, cores, expected", [
    (1, 4, "0"), (2, 4, "0-1"), (0.5, 4, "0"), (1.5, 4, "0-1"), (4, 4, "0-3"), (None, 4, None),
])
def test_cpuset_for(cpus, cores, expected):
    assert cpuset_for(cpus, cores) == expected


@pytest.mark.parametrize("cpus, cores, first", [(5, 4, 0), (8, 1, 0), (2, 4, 3)])
def test_cpuset_for_more_than_the_cores_is_refused(cpus, cores, first):
    with pytest.raises(ConfigError):
        cpuset_for(cpus, cores, first_core=first)


def test_native_cgroup_applies_and_cleans_up(local, cgroups_ready, no_leftovers):
    cg = NativeCgroup(local, f"test-{uuid.uuid4().hex[:8]}")
    try:
        cg.create(cpus=0.5, memory_mb=64, cpuset="0", swap=False)
        joined = f"grep -q edgebench/{cg.name} /proc/$p/cgroup"
        pid = int(local.run(f"{sh(cg.wrap(['sleep', '30']))} >/dev/null 2>&1 & p=$!; "
                            f"for i in $(seq 200); do {joined} && break; sleep 0.01; done; echo $p"
                            ).stdout.strip())
        a = read_limits(local, pid)
        assert (a.cpus, a.memory_mb, a.cpuset) == (0.5, 64, "0")
        assert a.cgroup_version == local.facts()["cgroup_version"]
        assert cg.name in a.cgroup_path
        memsw = f"{cg.dirs[0]}/memory.memsw.limit_in_bytes"
        if cg.version == 2 or os.path.exists(memsw):  # v1 without swap accounting: unknown
            assert a.swap_mb == 0
        assert is_alive(local, pid)
        assert a.oom_kills == 0 and oom_kills(local, pid=pid) == 0  # found from the PID: known, none
        # The real files parse (a limit, a fault count), and an idle sleep is no thrash.
        out = local.run(["sh", "-c", _MEMORY_PRESSURE, "p", "-", cg.dirs[0]]).stdout
        usage, limit, faults = parse_memory_pressure(out)
        assert limit == 64 * MiB and 0 < usage <= limit and faults >= 0
        assert memory_thrash(local, pid=pid) is None and memory_thrash(local, cgroup_dirs=cg.dirs[:1]) is None
    finally:
        cg.destroy()
    assert wait_until_gone(local, pid, 2)
    assert [d for d in cg.dirs if os.path.isdir(d)] == []


class CutOnce:
    """A target whose first command is cut by a Ctrl-C before it does anything (LocalTarget stops the
    command it waits for when one arrives), then runs every command as the real one does."""

    def __init__(self, target):
        self.target, self.cut = target, False

    def run(self, *args, **kwargs):
        if not self.cut:
            self.cut = True
            raise KeyboardInterrupt
        return self.target.run(*args, **kwargs)


def test_a_ctrl_c_while_a_cgroup_is_removed_still_removes_it(local, cgroups_ready, no_leftovers):
    """Seen in CI: a SIGTERM that landed while a native app's cgroup was being removed left the
    cgroup behind, as the interrupted script never reached its rmdir and nothing tried again."""
    cg = NativeCgroup(local, f"test-{uuid.uuid4().hex[:8]}")
    cg.create(cpus=0.5, memory_mb=64, cpuset="0", swap=False)
    cg.target = CutOnce(local)
    with pytest.raises(KeyboardInterrupt):
        cg.destroy()
    assert not [d for d in cg.dirs if os.path.isdir(d)]
