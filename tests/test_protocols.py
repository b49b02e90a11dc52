"""The protocols' limits and the columns a running instance adds to a row."""

from __future__ import annotations

import pytest
from edgebench.cgroups import QEMU_COMMAND_LINE, AppliedLimits, cores_in, cpuset_for
from edgebench.experiments.protocols import fair_limits, published_limits, verify_limits, with_instance
from edgebench.runtimes import Instance, LaunchPlan, Limits


def instance(applied: AppliedLimits | None) -> Instance:
    plan = LaunchPlan("docker", "go-http", "n", [], 1, network_path="docker-proxy+bridge")
    return Instance("docker", "go-http", "n", 1, "http://127.0.0.1:1", 42, plan.limits, applied,
                    plan.network_path, plan)


def test_fair_pins_and_sets_gomaxprocs_published_does_not():
    assert fair_limits(1.5, 256, 4) == Limits(cpus=1.5, memory_mb=256, cpuset="0-1", swap=False, gomaxprocs=2)
    assert published_limits(1.5, 256) == Limits(cpus=1.5, memory_mb=256)


def test_row_keeps_its_earlier_note_and_adds_a_mismatch():
    asked = fair_limits(1, 128, 2)
    held = AppliedLimits(cpus=1.0, memory_mb=128.0, swap_mb=0, cpuset="0", cgroup_version=1,
                         cgroup_path="/x", oom_kills=0)
    row = with_instance({"limits_note": "cpus 8 clipped to the target's 2"}, asked, instance(held))
    assert row["limits_note"] == "cpus 8 clipped to the target's 2"
    assert (row["cpus_applied"], row["memory_mb_applied"], row["cpuset_applied"]) == (1.0, 128.0, "0")
    assert row["network"] == "docker-proxy+bridge"
    short = AppliedLimits(**{**held.as_dict(), "memory_mb": 64.0})
    row = with_instance({"limits_note": "clipped"}, asked, instance(short))
    assert row["limits_note"].startswith("clipped; memory asked 128 MiB, cgroup has 64.0")
    assert with_instance({}, asked, instance(None))["limits_note"] == "limits not read back"
    assert verify_limits(asked, held) == ""
    # A VM's limits are QEMU's, not a cgroup's: Unikraft's one vCPU under fair at 2 CPUs.
    vm = AppliedLimits(cpus=1.0, memory_mb=128.0, swap_mb=None, cpuset="0-1", cgroup_version=None,
                       cgroup_path=QEMU_COMMAND_LINE, oom_kills=None)
    assert verify_limits(fair_limits(2, 128, 2), vm) == "cpus asked 2, QEMU gave the VM 1.0"


@pytest.mark.parametrize("cpuset, cores", [("1", [1]), ("0-3", [0, 1, 2, 3]), ("0,2-3", [0, 2, 3]), (" 4 ", [4]),
                                           ("", []), (None, [])])
def test_a_cpuset_is_read_one_way(cpuset, cores):
    """cgroups.cores_in is the one reader: LXD's check, wrk's free cores and its thread count use it."""
    assert cores_in(cpuset) == cores
    if cores:  # what the fair protocol writes, read back
        assert cores_in(cpuset_for(len(cores), 8)) == list(range(len(cores)))
