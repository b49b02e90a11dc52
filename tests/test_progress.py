"""The overall progress line of `make figures`: its position follows the clock inside a notebook
but never passes that notebook's estimate, and its ETA follows the pace seen so far."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from edgebench.drivers import plan
from edgebench.experiments import estimate
from edgebench.paths import PROJECT_ROOT


def _plan(name: str, seconds: float) -> plan.NotebookPlan:
    return plan.NotebookPlan(name, name, "local", "quick", ["native"], estimate.Work(points=10, seconds=seconds),
                             seconds, "model")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_position_and_eta_follow_the_plan_and_the_pace():
    lines: list[str] = []
    a, b = _plan("a", 100), _plan("b", 300)
    progress = plan.Progress([a, b], every_s=3600, write=lines.append)
    clock = Clock()
    progress._time, progress.start = clock, clock.now
    try:
        progress.begin(a)
        clock.now += 50
        assert progress.position() == 50 and "12%" in progress.line()
        clock.now += 500  # a overruns: the bar waits at its estimate instead of eating into b's
        assert progress.position() == 99
        progress.end(a)
        assert progress.position() == 100 and "1/2 notebooks" in lines[-1]
        # 100 s of planned work took 550 s, blended with the plan worth 100 s at pace 1.0:
        # (100 + 100) / (550 + 100) s of work per second, so the 300 s left take 975 s.
        assert "ETA 16m15s" in lines[-1]
        progress.begin(b)
        clock.now += 300
        progress.end(b)
        assert "100%" in lines[-1] and "2/2 notebooks" in lines[-1] and "ETA 0s" in lines[-1]
    finally:
        progress.close()


def test_on_a_slow_device_the_bar_keeps_to_the_points_measured():
    # An emulated Pi ran lxd_appendix's first point of 48 in 42 s against a plan of 2m38s for all:
    # the clock alone put the bar at 99% with an ETA of 2 s for the next half hour.
    ended = {"n": 0}
    a = plan.NotebookPlan("a", "a", "pi", "quick", ["native"], estimate.Work(points=48, seconds=158), 158, "model")
    progress = plan.Progress([a], every_s=3600, write=lambda line: None, points_done=lambda p: ended["n"])
    clock = Clock()
    progress._time, progress.start = clock, clock.now
    try:
        progress.begin(a)
        clock.now += 2
        assert progress.position() == 2  # the clock moves it within the point being measured
        clock.now += 208
        assert progress.position() == pytest.approx(158 / 48)  # not past the first point
        ended["n"] = 24
        assert progress.position() == pytest.approx(158 * 25 / 48)
        left = progress.line().split("ETA ")[1]
        assert left not in ("0s", "1s", "2s")
        ended["n"] = 48
        assert progress.position() == pytest.approx(158 * 0.99)
        progress.points_done = lambda p: 1 / 0  # a run folder being written: the clock alone
        assert progress.position() == pytest.approx(158 * 0.99)
    finally:
        progress.close()


def test_a_resumed_run_is_planned_for_the_points_it_has_left(tmp_path):
    """cpu_bound resumed with 88 of 200 points measured was planned, and its bar drawn, for all 200."""
    import json
    run_dir = tmp_path / "cpu_bound" / "20261129T164516Z-8068"
    run_dir.mkdir(parents=True)
    (run_dir / "results.csv").write_text("point_id\n")
    (run_dir / "points.jsonl").write_text("".join(json.dumps({"point_id": f"p{i}"}) + "\n" for i in range(88)))
    assert plan.resumed_points("cpu_bound", run_dir.name, tmp_path) == 88
    assert plan.resumed_points("cpu_bound", "no-such-run", tmp_path) == 0
    resumed = plan.NotebookPlan("04_cpu_bound.ipynb", "cpu_bound", "local", "standard", ["native"],
                                estimate.Work(points=200, seconds=1000), 1000, "model", measured_before=88)
    fresh = _plan("b", 300)
    assert resumed.left_s == pytest.approx(1000 * 112 / 200)
    printed = plan.table([resumed, fresh])
    assert "resumed: 88 of 200 points measured in earlier sittings; the time is for the 112 left" in printed
    assert printed.splitlines()[-1].endswith("14m20s  for the 122 left (88 measured in earlier sittings)"), printed
    progress = plan.Progress([resumed, fresh], every_s=3600, write=lambda line: None)
    try:
        assert progress.total == pytest.approx(560 + 300)
    finally:
        progress.close()


def test_one_fast_notebook_does_not_collapse_the_eta():
    # The case seen in a real quick run: the first notebook took 12 s of its planned 67 s.
    progress = plan.Progress([_plan("a", 67), _plan("b", 2700)], every_s=3600, write=lambda line: None)
    try:
        left = (progress.total - 67) / progress.pace(67, 12)
        assert 0.85 * 2700 < left < 2700  # a little faster than planned, not five times faster
        # Late in a run the pace seen dominates: 2000 s of work in 4000 s means about twice as long.
        assert 0.55 < progress.pace(2000, 4000) < 0.65
    finally:
        progress.close()


def test_durations_read_like_a_person_writes_them():
    assert [plan.duration(s) for s in (9.6, 75, 3600 + 125)] == ["10s", "1m15s", "1h02m"]


# -- the plan before the run ------------------------------------------------------------------

def test_every_experiment_plans_its_notebook_defaults_in_every_profile():
    from edgebench.experiments import EXPERIMENTS
    from edgebench.experiments.common import PROFILES
    for exp in EXPERIMENTS.values():
        for profile in PROFILES:  # the record's defaults are the notebook's (test_experiments)
            work = exp.plan_work({"profile": profile}, ["native", "docker"])
            assert work.points > 0 and work.seconds > 0, (exp.name, profile)
        quick = exp.plan_work({"profile": "quick"}, ["native", "docker"])
        standard = exp.plan_work({"profile": "standard"}, ["native", "docker"])
        assert standard.seconds >= quick.seconds, exp.name  # footprint is the same in both


def test_points_follow_repetitions_runtimes_and_apps():
    from edgebench.experiments import EXPERIMENTS
    ttr = EXPERIMENTS["time_to_ready"]
    base = dict(profile="quick", apps="go-http", protocols="fair,published", repetitions=3, caches="warm")
    one = ttr.plan_work(base, ["native"])
    assert one.points == 1 * 2 * 3 and one.repetitions == 3 and one.apps == ["go-http"]
    assert ttr.plan_work({**base, "repetitions": 6}, ["native"]).points == 12
    assert ttr.plan_work({**base, "apps": "all"}, ["native", "docker"]).points == 2 * 2 * 2 * 3
    # A VM costs more per start than a process: the same points take longer.
    assert ttr.plan_work(base, ["linux-vm"]).seconds > one.seconds
    # sysbench runs only where Linux tools run: a unikernel is left out of the plan, as of the run.
    micro = EXPERIMENTS["microbenchmarks"].plan_work({"profile": "quick", "network": False}, ["native", "nanos"])
    assert micro.runtimes == ["native"]
    http = EXPERIMENTS["io_bound"].plan_work({"profile": "quick", "apps": "go-http", "memory_levels": "256m"},
                                             ["native"])
    longer = EXPERIMENTS["io_bound"].plan_work({"profile": "quick", "apps": "go-http", "memory_levels": "256m",
                                                "duration_s": 30}, ["native"])
    assert http.points == longer.points == 2 * 2 and longer.seconds - http.seconds >= 4 * 29 - 1e-6


def test_an_app_a_runtime_cannot_run_costs_it_nothing_in_every_plan():
    # node-http on linux-vm fails before any start; the run measured here took 44 s of linux-vm
    # time in io_bound (go-http only) where counting both apps planned 126 s.
    from edgebench.experiments import EXPERIMENTS
    for name in ("static_footprint", "time_to_ready", "io_bound", "cpu_bound", "min_memory", "boot_time"):
        exp = EXPERIMENTS[name]
        params = {"profile": "quick", "repetitions": 2}
        if "repetitions" not in exp.parameters.cell_fields():  # footprint measures each size once
            params.pop("repetitions")
        go = exp.plan_work({**params, "apps": "go-http"}, ["linux-vm"])
        both = exp.plan_work({**params, "apps": "go-http,node-http"}, ["linux-vm"])
        assert both.seconds == pytest.approx(go.seconds), name
        # where both run, both cost
        assert exp.plan_work({**params, "apps": "go-http,node-http"}, ["docker"]).seconds > \
            exp.plan_work({**params, "apps": "go-http"}, ["docker"]).seconds, name
    assert estimate.runnable("linux-vm", ["go-http", "node-http"]) == ["go-http"]
    assert estimate.runnable("some-new-runtime", ["node-http"]) == ["node-http"]


def test_a_device_without_a_memory_controller_plans_what_it_cannot_run_in_no_time(tmp_path):
    # pi-arm64-nomemcg's io_bound took a quarter of the Pi's time (496 s to 1,921 s): its 256 and
    # 64 MiB points for the runtimes that limit memory with a cgroup are rows saying why, which the
    # plan counted at full time (and the pace learnt from them came out too fast).
    from edgebench.drivers.figures import notebooks
    from edgebench.experiments import EXPERIMENTS
    nomemcg, with_controller = {"memory_controller": "no", "memory_mb": 977}, {"memory_mb": 977}
    quick, runtimes = {"profile": "quick"}, ["native", "docker", "linux-vm"]
    io = EXPERIMENTS["io_bound"]
    whole, here = io.plan_work(quick, runtimes), io.plan_work(quick, runtimes, nomemcg)
    assert io.plan_work(quick, runtimes, with_controller) == whole
    vm = io.plan_work(quick, ["linux-vm"])
    assert len(io.params(quick).asked) == 3  # rich (2048 MiB, clipped to the device's own) and 256, 64 MiB
    assert here.points == whole.points and here.not_run == (whole.points - vm.points) * 2 // 3
    assert io.plan_work(quick, ["linux-vm"], nomemcg) == vm  # QEMU's -m needs no controller
    assert vm.seconds < here.seconds < whole.seconds - 100 and here.window_s < whole.window_s
    # min_memory searches below the device's memory: no trial for a cgroup runtime, only its packaging.
    mm = EXPERIMENTS["min_memory"]
    searched = mm.plan_work(quick, ["native", "docker"], nomemcg)
    assert searched.not_run == searched.points > 0
    assert searched.seconds < mm.plan_work(quick, ["native", "docker"]).seconds / 5
    # Every other experiment asks one limit for all its points: a runtime runs at it or not at all.
    ttr = EXPERIMENTS["time_to_ready"]
    asked = {**quick, "memory": "256m"}
    alone = ttr.plan_work(asked, ["linux-vm"])
    limited = ttr.plan_work(asked, runtimes, nomemcg)
    assert limited.not_run == limited.points - alone.points > 0 and limited.seconds == pytest.approx(alone.seconds)
    assert ttr.plan_work(quick, runtimes, nomemcg).not_run == 0  # 2048 MiB, above the device's: clipped, run
    # The plan's line says so, and its estimate is the smaller one.
    nb = next(n for n in notebooks() if n.name.startswith("03_"))
    params = {**quick, "target": "pi-arm64-nomemcg", "runtimes": "native,docker,linux-vm"}
    line = plan.make_plan(nb, params, runtimes, tmp_path, facts=nomemcg)
    assert line.work == here and line.estimate_s < plan.make_plan(nb, params, runtimes, tmp_path).estimate_s
    assert f"{here.not_run} of them not run, in no time: the device's kernel has no memory controller" in line.line()


def test_history_of_the_same_device_replaces_the_model_scaled_by_points(tmp_path):
    nb = plan.NotebookPlan("02_time_to_ready.ipynb", "time_to_ready", "pi1", "quick", ["native"],
                           estimate.Work(points=10, seconds=30), 30, "model")
    plan.record(nb, 120.0, "completed", tmp_path)
    plan.record(nb, 500.0, "failed", tmp_path)  # a failed run says nothing about a whole one
    (tmp_path / plan.HISTORY_FILE).open("a").write('{"cut short by a crash\n')
    entries = plan.history(tmp_path)
    assert len(entries) == 2
    seconds, basis = plan.from_history("time_to_ready", "pi1", "quick", ["native"], 20, entries)
    assert seconds == 240.0 and basis.startswith("history: 2m00s for 10 points")
    # Another device, or another profile, has no history of its own: the model stands.
    assert plan.from_history("time_to_ready", "pi2", "quick", ["native"], 20, entries) is None
    assert plan.from_history("time_to_ready", "pi1", "standard", ["native"], 20, entries) is None


def test_a_recorded_run_keeps_its_parameters_so_a_recalibrated_model_can_re_plan_it(tmp_path):
    from edgebench.drivers.figures import notebooks
    nb = next(n for n in notebooks() if n.name.startswith("02_"))
    params = {"target": "local", "profile": "quick", "runtimes": "native", "apps": "go-http", "repetitions": 3}
    made = plan.make_plan(nb, params, ["native"], data_dir=tmp_path)
    plan.record(made, 42.0, "completed", tmp_path)
    entry = plan.history(tmp_path)[-1]
    assert entry["params"] == params and entry["points"] == made.work.points
    again = plan.make_plan(nb, entry["params"], entry["runtimes"], data_dir=tmp_path / "none").work
    assert (again.points, again.seconds) == (made.work.points, made.work.seconds)
    assert again.points < plan.make_plan(nb, {**params, "repetitions": 6}, ["native"], tmp_path / "none").work.points


def test_plan_only_prints_the_plan_and_measures_nothing(tmp_path):
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path / "data"), EDGEBENCH_FIGURES_DIR=str(tmp_path / "f"))
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--plan-only", "--profile", "quick",
                        "--runtimes", "native", "--only", "time_to_ready,iomt"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "02_time_to_ready.ipynb" in r.stderr and "05_iomt.ipynb" in r.stderr and "total" in r.stderr
    assert "[model]" in r.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "f").exists()


def test_the_plan_names_what_earlier_runs_left_on_the_target_and_how_to_remove_it(tmp_path):
    """A run that could not stop its app (its host stopped answering, make killed with SIGKILL)
    leaves it running on the device, where the next run would measure beside it unawares."""
    import uuid
    from edgebench.runtimes import tags
    prefix = f"left{uuid.uuid4().hex[:6]}-"
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path / "data"), EDGEBENCH_FIGURES_DIR=str(tmp_path / "f"),
               **{tags.RUN_TAG_PREFIX_ENV: prefix})
    plan_only = [sys.executable, "-m", "edgebench.drivers.figures", "--plan-only", "--profile", "quick",
                 "--runtimes", "native", "--only", "time_to_ready"]
    clean = subprocess.run(plan_only, capture_output=True, text=True, env=env, timeout=120)
    assert clean.returncode == 0 and "earlier edgebench run left" not in clean.stderr, clean.stderr
    app = subprocess.Popen(["sleep", "120"], env={**env, tags.LAUNCH_TAG: f"eb-{prefix}20261128-native-go-http"})
    try:
        r = subprocess.run(plan_only, capture_output=True, text=True, env=env, timeout=120)
    finally:
        app.kill()
        app.wait()
    assert r.returncode == 0, r.stderr
    assert "== local still has what an earlier edgebench run left there" in r.stderr
    assert f"  process {app.pid} (sleep): kill {app.pid}" in r.stderr


def test_the_plan_names_every_runtime_auto_leaves_out_and_why(tmp_path):
    # Made right after `make device`, a plan left LXD out (its daemon was still starting) without a word.
    from edgebench.runtimes import RUNTIMES
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEBENCH_")}
    env.update(EDGEBENCH_DATA_DIR=str(tmp_path / "data"), EDGEBENCH_FIGURES_DIR=str(tmp_path / "f"))
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--plan-only", "--profile", "quick",
                        "--runtimes", "auto", "--only", "time_to_ready"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    planned = r.stderr.split("  runtimes ", 1)[1].split(",  apps", 1)[0].split(", apps")[0].split(",")
    _, _, skipped = r.stderr.partition("left out by RUNTIMES=auto:\n")
    block = skipped.splitlines()
    block = block[:next((i for i, line in enumerate(block) if not line.startswith("  ")), len(block))]
    reasons = dict(line.strip().split(": ", 1) for line in block)  # the indented lines right below
    auto = {name for name, cls in RUNTIMES.items() if cls.in_auto}  # docker-crun joins only when named
    assert set(planned) | set(reasons) == auto and not set(planned) & set(reasons)
    assert all(len(why) > 20 for why in reasons.values()), reasons
    if reasons:  # a device not provisioned yet: `make figures` will plan more than `make plan` did
        assert "`make plan` installs nothing: `make figures` provisions local first" in r.stderr


def test_plan_accuracy_reads_history_kept_from_other_machines(tmp_path):
    # The reference machine's default-profile timings are measured across sessions on fresh
    # machines and kept in files: the benchmark sums whatever files it is given.
    for sub, experiment, seconds in (("a", "time_to_ready", 120.0), ("b", "iomt", 300.0)):
        made = plan.NotebookPlan("x.ipynb", experiment, "local", "standard", ["native"],
                                 estimate.Work(points=10, seconds=100), 100, "model")
        plan.record(made, seconds, "completed", tmp_path / sub)
    files = [str(tmp_path / sub / plan.HISTORY_FILE) for sub in ("a", "b")]
    r = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "plan_accuracy.py"), "--profile", "standard",
                        "--history", files[0], "--history", files[1]], capture_output=True, text=True, timeout=120)
    assert "time_to_ready" in r.stdout and "iomt" in r.stdout, r.stdout + r.stderr
    total = next(line for line in r.stdout.splitlines() if line.startswith("total"))
    assert total.split()[-1] == "0.48"  # 200 s planned against 420 s measured
    assert r.returncode == 1 and "outside 25%" in r.stdout and "not measured in this profile" in r.stdout


def test_the_harness_table_takes_each_notebooks_newest_share_beside_its_first(tmp_path):
    def ran(experiment, seconds, in_points):
        done = plan.NotebookPlan("x.ipynb", experiment, "local", "standard", ["native"],
                                 estimate.Work(points=10, seconds=100), 100, "model")
        plan.record(done, seconds, "completed", tmp_path / "kept",
                    in_points=(10, in_points) if in_points is not None else None)
    ran("boot_time", 100, 70)       # 30% first
    ran("boot_time", 100, 95)       # then 5%
    ran("iomt", 200, 150)           # 25%: above the target
    ran("static_footprint", 12, None)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEBENCH_")}
    env["EDGEBENCH_DATA_DIR"] = str(tmp_path / "empty")
    r = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "harness_overhead.py"),
                        "--history", str(tmp_path / "kept" / plan.HISTORY_FILE)],
                       capture_output=True, text=True, env=env, timeout=120)
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()}
    assert rows["boot_time"][4:6] == ["5%", "30%"] and rows["iomt"][4:6] == ["25%", "-"], r.stdout + r.stderr
    assert rows["static_footprint"][2:5] == ["-", "-", "-"]
    assert rows["total"][-1] == "18%"  # 55 s outside points of 300 s
    assert "above 10%: iomt" in r.stdout and "time_to_ready" in r.stdout.split("not measured with a share")[1]
    assert r.returncode == 1


def test_a_notebook_the_device_has_not_run_gets_the_model_times_the_devices_pace(tmp_path):
    from edgebench.drivers.figures import notebooks
    def ran(target, model_s, seconds, status="completed"):
        done = plan.NotebookPlan("01_static_footprint.ipynb", "static_footprint", target, "quick", ["native"],
                                 estimate.Work(points=8, seconds=model_s), model_s, "model")
        plan.record(done, seconds, status, tmp_path)
    ran("pi1", 10, 200)    # 20x
    ran("pi1", 100, 3000)  # 30x
    ran("pi1", 10, 250)    # 25x: the median
    ran("pi1", 10, 9999, status="failed")  # a failed run says nothing of the pace
    ran("laptop", 10, 15)
    assert plan.pace("pi1", plan.history(tmp_path)) == (25.0, 3)
    assert plan.pace("pi2", plan.history(tmp_path)) is None
    nb = next(n for n in notebooks() if n.name.startswith("02_"))
    params = {"profile": "quick", "runtimes": "native", "apps": "go-http"}
    fresh = plan.make_plan(nb, {**params, "target": "pi2"}, ["native"], data_dir=tmp_path)
    assert fresh.basis == "model" and fresh.estimate_s == fresh.work.seconds
    paced = plan.make_plan(nb, {**params, "target": "pi1"}, ["native"], data_dir=tmp_path)
    assert paced.estimate_s == pytest.approx(25 * paced.work.seconds)
    assert paced.basis.startswith("model x25.0, this device's pace over 3 notebooks")
    # An emulated device's first plan: its typical pace under TCG, not the model's (3 minutes said for 40).
    from edgebench.devices.spec import DEVICES
    for device in ("debian-v2", "pi-arm64-nomemcg"):
        first = plan.make_plan(nb, {**params, "target": device}, ["native"], data_dir=tmp_path)
        assert DEVICES[device].typical_pace > 5
        assert first.estimate_s == pytest.approx(DEVICES[device].typical_pace * first.work.seconds)
        assert first.basis == f"model x{DEVICES[device].typical_pace:g}, typical of {device} under TCG"
    # A variant of an emulated board (its memory controller off) runs at the board's pace until it has its own.
    ran("pi-arm64", 10, 300)
    variant = plan.make_plan(nb, {**params, "target": "pi-arm64-nomemcg"}, ["native"], data_dir=tmp_path)
    assert variant.estimate_s == pytest.approx(30 * variant.work.seconds)
    assert "pi-arm64's (the same board) pace over 1 notebook" in variant.basis
    ran("pi-arm64-nomemcg", 10, 100)
    own = plan.make_plan(nb, {**params, "target": "pi-arm64-nomemcg"}, ["native"], data_dir=tmp_path)
    assert own.estimate_s == pytest.approx(10 * own.work.seconds) and "this device's" in own.basis


def test_a_slower_device_stretches_the_work_and_not_the_set_load_windows(tmp_path):
    """debian-v2's first container_overhead was planned at 2h09m (the model x14) and took 36
    minutes: most of that notebook is load and benchmark runs of a set length, which last as long
    on an emulated device. The pace applies to the rest; a device's pace is learnt the same way."""
    from edgebench.devices.spec import DEVICES
    from edgebench.drivers.figures import notebooks
    nb = next(n for n in notebooks() if n.name.startswith("03_"))
    # Closed-loop runs only (fair adds open-loop rates, timed too), their windows kept as set
    # (window_scale=1: quick's would follow the device's pace, the next test's case).
    params = {"profile": "quick", "runtimes": "native,docker", "apps": "go-http", "target": "debian-v2",
              "protocols": "published", "window_scale": "1"}
    first = plan.make_plan(nb, params, ["native", "docker"], data_dir=tmp_path)
    work = first.work
    from edgebench.experiments.http_load import LOAD_PROFILES
    load = LOAD_PROFILES["quick"]
    # Every point of io_bound is one closed-loop run: its warm-up and measured seconds are set.
    assert work.window_s == pytest.approx(work.points * (load.warmup_s + load.duration_s))
    assert 0 < work.window_s < work.seconds
    typical = DEVICES["debian-v2"].typical_pace
    assert first.estimate_s == pytest.approx((work.seconds - work.window_s) * typical + work.window_s)
    assert first.estimate_s < typical * work.seconds
    # The device's own pace: its wall time over the model's, windows out of both.
    plan.record(first, work.window_s + 20 * (work.seconds - work.window_s), "completed", tmp_path)
    entries = plan.history(tmp_path)
    assert entries[-1]["model_window_s"] == pytest.approx(work.window_s, abs=0.1)
    assert plan.pace("debian-v2", entries)[0] == pytest.approx(20, rel=1e-3)
    cpu_bound = next(n for n in notebooks() if n.name.startswith("04_"))  # not run there yet: paced
    again = plan.make_plan(cpu_bound, params, ["native", "docker"], data_dir=tmp_path)
    assert "this device's pace over 1 notebook" in again.basis and again.work.window_s > 0
    assert again.estimate_s == pytest.approx(again.work.paced(plan.pace("debian-v2", entries)[0]))
    # An entry written before windows were modelled counts whole, as before.
    assert plan.work_pace({"model_s": 10, "seconds": 50}) == 5


def test_quicks_load_windows_stretch_with_the_device_and_its_pace_is_learnt_through_them(tmp_path):
    """Quick's load windows follow the device's pace (experiments/windows.py), up to MAX_SCALE:
    the plan stretches them with the rest, and the pace a run teaches is solved the same way."""
    from edgebench.devices.spec import DEVICES
    from edgebench.drivers.figures import notebooks
    from edgebench.experiments.windows import MAX_SCALE
    nb = next(n for n in notebooks() if n.name.startswith("03_"))
    params = {"profile": "quick", "runtimes": "native,docker", "apps": "go-http", "target": "debian-v2",
              "protocols": "published"}
    first = plan.make_plan(nb, params, ["native", "docker"], data_dir=tmp_path)
    work, typical = first.work, DEVICES["debian-v2"].typical_pace
    assert work.windows_follow_pace
    stretch = min(MAX_SCALE, typical)  # the windows stretch with the device's pace, up to the cap
    assert first.estimate_s == pytest.approx((work.seconds - work.window_s) * typical + work.window_s * stretch)
    for pace in (0.5, 4.0, 20.0):  # slower than the model's machine by less, within and beyond the cap
        plan.record(first, work.paced(pace), "completed", tmp_path)
        assert plan.work_pace(plan.history(tmp_path)[-1]) == pytest.approx(pace, rel=1e-3)
