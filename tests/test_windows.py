"""Quick's windows follow the device's pace (experiments/windows.py): measured on the target with
tools/probe -pace, a slower target (here: this machine's CPU cut to a tenth by a real cgroup)
gets longer windows, a window the user set is kept, and a scale given by hand is checked before
anything starts."""

from __future__ import annotations

import shutil
import uuid

import pytest

from edgebench.cgroups import NativeCgroup
from edgebench.errors import ConfigError
from edgebench.experiments import cpu_bound
from edgebench.experiments.http_load import run, stretched
from edgebench.experiments.windows import MAX_SCALE, REFERENCE_PACE_NS, WindowScale, window_scale
from edgebench.results import load_meta, load_results
from edgebench.targets import LocalTarget


def test_a_scale_by_hand_is_checked_when_the_record_is_made():
    for bad in ("0.5", "fast", "0"):
        with pytest.raises(ConfigError, match=f"window_scale={bad!r}: 'auto'"):
            cpu_bound.Params(window_scale=bad)
    assert window_scale(LocalTarget(), "quick", "2.5") == WindowScale(2.5, "given")


def test_a_window_is_scaled_to_whole_seconds_and_never_shrinks():
    assert [WindowScale(s, "given").stretch(1) for s in (1.0, 1.2, 1.6, 10.0)] == [1, 1, 2, 10]
    assert WindowScale(2.5, "given").stretch(3) == 8 and WindowScale(9.0, "given").stretch(0) == 0


def test_windows_the_user_set_are_kept_and_the_others_stretched():
    params = cpu_bound.Params(profile="quick", duration_s=3)   # the user's window; quick's warm-up 1 s, timeout 2 s
    load, opened = stretched(params, WindowScale(4.0, "given"))
    assert (load.duration_s, load.warmup_s, load.timeout_s) == (3, 4, 8)
    assert (opened.duration_s, opened.timeout_s) == (12, 8)   # quick's 3 s per open-loop rate
    load, opened = stretched(cpu_bound.Params(profile="quick", open_loop_duration_s=2), WindowScale(4.0, "given"))
    assert (load.duration_s, opened.duration_s) == (4, 2)


class ThrottledTarget(LocalTarget):
    """This machine with every command it runs in a cgroup holding a twentieth of a CPU: a real,
    slower device for the pace's sake."""

    def __init__(self, cgroup: NativeCgroup):
        super().__init__()
        self.cgroup = cgroup

    def run(self, argv, *args, **kwargs):
        return super().run(self.cgroup.wrap(argv) if isinstance(argv, list) else argv, *args, **kwargs)


def test_the_pace_is_measured_on_the_device_and_a_slower_device_gets_longer_windows(local, cgroups_ready):
    here = window_scale(local, "quick")
    assert here.pace_ns > 0 and here.how.startswith("measured") and 1 <= here.scale <= MAX_SCALE
    assert window_scale(local, "standard") == WindowScale(1.0, "kept: standard keeps its windows")
    cgroup = NativeCgroup(local, f"eb-it-pace-{uuid.uuid4().hex[:6]}")
    cgroup.create(cpus=0.05, memory_mb=None, cpuset=None, swap=True)
    try:
        slow = window_scale(ThrottledTarget(cgroup), "quick")
    finally:
        cgroup.destroy()
    # A twentieth of a CPU takes about twenty times as long for the same work, however busy the machine.
    assert slow.pace_ns > MAX_SCALE * REFERENCE_PACE_NS and slow.pace_ns > 5 * here.pace_ns, (slow, here)
    assert slow.scale == MAX_SCALE and "capped" in slow.how


def test_a_quick_run_asks_for_the_scaled_window_and_notes_why(cgroups_ready, wrk_ready, no_leftovers):
    run_dir = run(cpu_bound.Params(runtimes="native", apps="go-http", protocols="published", memory_levels="128m",
                                   profile="quick", repetitions=1, window_scale="2", progress=False,
                                   run_id=f"it-window-{uuid.uuid4().hex[:6]}"))
    try:
        rps = load_results(run_dir).query("metric == 'requests_per_second'")
        assert list(rps.status) == ["ok", "ok"] and list(rps.duration_s) == [2, 2]  # quick's 1 s, twice
        assert (rps.window_s >= 1.9).all()  # and wrk measured over that long
        note = load_meta(run_dir)["notes"]["window_scale"]
        assert note["scale"] == 2 and note["how"] == "given" and note["closed_loop"]["timeout_s"] == 4
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def test_the_plan_stretches_quicks_windows_on_a_slower_device_and_takes_a_given_scale_as_it_is():
    from dataclasses import replace
    from edgebench.experiments.http_load import plan
    quick = plan(cpu_bound.Params(profile="quick"), ["native", "docker"])
    assert quick.windows_follow_pace and quick.window_s > 0
    kept = replace(quick, windows_follow_pace=False)
    # On a device 50 times slower than the model's machine, quick's windows last 10 times as long.
    assert quick.paced(50) - kept.paced(50) == pytest.approx(quick.window_s * (MAX_SCALE - 1))
    assert quick.paced(1) == kept.paced(1)
    tripled = plan(cpu_bound.Params(profile="quick", window_scale="3"), ["native", "docker"])
    assert not tripled.windows_follow_pace and tripled.window_s == pytest.approx(3 * quick.window_s)
    assert not plan(cpu_bound.Params(profile="standard"), ["native"]).windows_follow_pace
