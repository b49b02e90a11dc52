"""Minimum memory (paper 002, Fig. 4): the bisection on recorded pass/fail answers, and a real
search with native and Docker."""

from __future__ import annotations

import pytest
from conftest import need_tool

from edgebench.errors import ConfigError
from edgebench.experiments import min_memory as mm
from edgebench.results import load_results


def threshold(needed: float, also_fails: tuple[float, ...] = ()):
    calls = []

    def passes(mb: float):
        calls.append(mb)
        ok = mb >= needed and mb not in also_fails
        return ok, "" if ok else f"OOM at {mb:g}"
    return passes, calls


def test_bisects_down_to_the_resolution_from_a_passing_start():
    passes, calls = threshold(37)
    found = mm.bisect_minimum(passes, floor_mb=4, start_mb=256, ceiling_mb=2048, resolution_mb=1)
    assert found.minimum_mb == 37 and found.bound == "bisected" and not found.note
    assert calls[:2] == [256, 4] and len(calls) <= 2 + 8  # start, floor, then ~log2(252) halvings
    assert [ok for mb, ok, _ in found.trials if mb == 36] == [False]


def test_doubles_from_a_failing_start_and_never_retries_below_what_failed():
    passes, calls = threshold(700)
    found = mm.bisect_minimum(passes, floor_mb=6, start_mb=256, ceiling_mb=2048, resolution_mb=4)
    assert calls[:3] == [256, 512, 1024] and 696 < found.minimum_mb <= 704
    assert min(calls[3:]) > 512 or calls[3] == 6


def test_an_app_that_runs_at_the_floor_is_reported_as_at_most_the_floor():
    passes, _ = threshold(1)
    found = mm.bisect_minimum(passes, floor_mb=6, start_mb=256, ceiling_mb=2048, resolution_mb=1)
    assert (found.minimum_mb, found.bound) == (6, "runtime floor")


def test_none_when_nothing_passes_and_never_below_a_size_that_failed():
    passes, _ = threshold(10_000)
    found = mm.bisect_minimum(passes, floor_mb=4, start_mb=256, ceiling_mb=1024, resolution_mb=1)
    assert found.minimum_mb is None and "1024" in found.note
    # A flaky boundary: 256 failed once although 20 would do. The search trusts the failure.
    passes, calls = threshold(20, also_fails=(256,))
    found = mm.bisect_minimum(passes, floor_mb=4, start_mb=256, ceiling_mb=1024, resolution_mb=1)
    assert found.minimum_mb == 257 and min(c for c in calls if c != 4) == 256


@pytest.mark.parametrize("kw, message", [
    (dict(floor_mb=8, start_mb=4, ceiling_mb=64, resolution_mb=1), "floor"),
    (dict(floor_mb=4, start_mb=8, ceiling_mb=64, resolution_mb=0), "positive resolution"),
])
def test_bad_search_bounds_are_refused(kw, message):
    with pytest.raises(ConfigError, match=message):
        mm.bisect_minimum(lambda mb: (True, ""), **kw)


def test_bad_parameters_fail_before_anything_starts():
    with pytest.raises(ConfigError, match="start_mb"):
        mm.Params(runtimes="native", start_mb=0, profile="quick")
    with pytest.raises(ConfigError, match="resolution_mb"):
        mm.Params(profile="quick", resolution_mb=-1)
    for hold in (0, -1):
        with pytest.raises(ConfigError, match="hold_s"):
            mm.Params(profile="quick", hold_s=hold)


def test_a_start_cut_off_while_going_waits_longer_until_one_passes_then_keeps_to_the_starts_seen():
    # debian-v2: linux-vm inside the emulated device booted for minutes; every 30 s trial timed out and
    # the search said "not ready even with 2048 MiB".
    p = mm.Patience(30)
    assert p.timed_out(256) and p.wait_s == 120
    assert p.timed_out(256) and p.wait_s == 480
    assert not p.timed_out(256) and p.wait_s == 480  # 16 times the first wait: no longer
    assert "too slow here to tell a memory limit from a slow start" in p.why_failed("x")
    assert len(p.raised) == 2 and "at 256 MiB" in p.raised[0]
    p.passed(None)
    assert p.slowest_s is None
    p.passed(200.0)
    assert p.wait_s == 800 and not p.timed_out(128)  # a timeout now is a failure at 128 MiB
    assert "four times the slowest start" in p.why_failed("x")
    fast = mm.Patience(30)
    fast.passed(0.05)
    assert fast.wait_s == 30  # never below the first wait


def test_a_trial_timeout_below_zero_is_refused():
    with pytest.raises(ConfigError, match="trial_timeout_s"):
        mm.Params(profile="quick", trial_timeout_s=-1)
    assert mm.Params(profile="quick", trial_timeout_s=300).settings.trial_timeout_s == 300
    assert mm.Params(profile="quick").settings.trial_timeout_s == mm.PROFILE_SETTINGS["quick"].trial_timeout_s


def test_a_start_slower_than_the_trial_timeout_waits_longer_and_the_ceiling_keeps_to_the_device(
        local, cgroups_ready, no_leftovers):
    # No app is ready 1 ms after its launch: the first trial is cut off still starting and tried again
    # with a longer wait, recorded in the result's note; a ceiling beyond the machine is clipped.
    run_dir = mm.run(mm.Params(runtimes="native", apps="go-http", profile="quick", start_mb=64,
                               ceiling_mb=10**7, trial_timeout_s=0.001, progress=False))
    df = load_results(run_dir)
    found = df[df["metric"] == "min_memory"].iloc[0]
    assert "waited" in found["note"] and "while still starting" in found["note"], found["note"]
    assert found["status"] == "ok" or "too slow here" in found["error"], found["error"]
    assert "clipped to the target's" in found["limits_note"]


def test_without_the_memory_controller_nothing_is_searched_and_the_row_says_why(local, monkeypatch, no_leftovers):
    """A stock Raspberry Pi OS kernel has no memory controller: every trial would serve, unlimited,
    and the search would end at the runtime's floor as if that were the app's minimum. This
    machine has the controller, so the device's fact is the one thing set here."""
    from edgebench.targets import LocalTarget
    real = LocalTarget.facts
    monkeypatch.setattr(LocalTarget, "facts", lambda self, refresh=False: dict(real(self, refresh),
                                                                                memory_controller="no"))
    run_dir = mm.run(mm.Params(runtimes="native", apps="go-http", profile="quick", start_mb=64, progress=False))
    df = load_results(run_dir)
    assert list(df["metric"]) == ["min_memory"] and list(df["status"]) == ["not measurable"]
    assert "cannot be applied: the device's kernel has no memory controller" in df["error"].iloc[0]


def test_native_and_docker_find_a_minimum_that_serves(local, docker_ready, cgroups_ready, no_leftovers):
    run_dir = mm.run(mm.Params(runtimes="native,docker", apps="go-http", profile="quick", start_mb=64, progress=False))
    df = load_results(run_dir)
    found = df[df["metric"] == "min_memory"].set_index("runtime")
    assert set(found.index) == {"native", "docker"} and (found["status"] == "ok").all()
    trials = df[df["metric"] == "ready_at_memory"]
    for rt, row in found.iterrows():
        mine = trials[trials["runtime"] == rt]
        minimum = float(row["value"])
        # A passing trial at the minimum, read back from the cgroup; none passed below it.
        at = mine[mine["memory_mb"].astype(float) == minimum]
        assert (at["value"].astype(float) == 1).all() and len(at)
        assert (at["memory_mb_applied"].astype(float) - minimum).abs().max() <= 1
        below = mine[mine["memory_mb"].astype(float) < minimum]
        assert (below["value"].astype(float) == 0).all()
        assert row["bound"] in ("bisected", "runtime floor") and minimum <= 64


def test_the_services_of_the_unikraft_page_are_searched_on_their_own_port_and_readiness(
        local, cgroups_ready, no_leftovers):
    """nginx (its port named in its configuration) and Redis (ready when it answers PING), as Fig. 4
    measured them; natively both serve at the floor of 4 MiB, an upper bound a claim reads so."""
    need_tool(local, "nginx")
    need_tool(local, "redis-server")
    run_dir = mm.run(mm.Params(runtimes="native", apps="nginx,redis", profile="quick", start_mb=64, progress=False))
    df = load_results(run_dir)
    found = df[df["metric"] == "min_memory"].set_index("app")
    assert set(found.index) == {"nginx", "redis"} and (found["status"] == "ok").all(), df[["app", "note"]]
    assert (found["value"].astype(float) <= 64).all() and set(found["bound"]) <= {"bisected", mm.AT_THE_FLOOR}
    passed = df[(df["metric"] == "ready_at_memory") & (df["value"].astype(float) == 1)]
    assert set(passed["app"]) == {"nginx", "redis"}


def test_table_and_figure_keep_emulated_vms_apart_and_mark_floors():
    import pandas as pd
    from edgebench.plotting.min_memory import min_memory_figure, min_memory_findings, min_memory_table
    from edgebench.reference import load_reference
    rows = [dict(app="go-http", runtime="native", metric="min_memory", value=v, status="ok", bound="bisected",
                 accelerator=None, rep=i) for i, v in enumerate((10, 12, 14), 1)]
    rows += [dict(app="go-http", runtime="linux-vm", metric="min_memory", value=96, status="ok",
                  bound="runtime floor", accelerator="tcg", rep=1),
             dict(app="go-http", runtime="native", metric="ready_at_memory", value=0, status="ok", bound="",
                  accelerator=None, rep=1)]
    table = min_memory_table(pd.DataFrame(rows))
    assert list(table["runtime"]) == ["native", "linux-vm (TCG)"]
    native = table.iloc[0]
    assert (native["min_MiB"], native["lowest_MiB"], native["highest_MiB"], native["trials"]) == (12, 10, 14, 1)
    reference = load_reference("min_memory")
    assert "linux-vm (TCG) ≤96 MiB" in min_memory_findings(table, reference)
    assert "2-6 MB" in min_memory_findings(table, reference)
    fig = min_memory_figure(table, reference)
    assert [a.get_title() for a in fig.axes] == ["go-http"]
