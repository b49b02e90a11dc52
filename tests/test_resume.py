"""Resuming a stopped run (edgebench.resume): the points that ended are not measured again, a
point cut by the stop is measured again whole, and a run is only continued with the parameters,
code and device that measured it."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from edgebench import resume
from edgebench.drivers import plan
from edgebench.errors import ConfigError
from edgebench.experiments import time_to_ready
from edgebench.experiments.sweep import sweep
from edgebench.paths import PROJECT_ROOT
from edgebench.results import POINTS_FILE, Run, ended_points, load_meta, time_in_points
from edgebench.waiting import wait_until

from test_stop_figures import data_lines, processes_with_env


@dataclass(frozen=True)
class Named:
    """What a sweep needs of a runtime here: its name."""
    name: str


FACTS = {"target": "local", "hostname": "h", "arch": "x86_64", "cores": 2, "memory_mb": 1000, "kernel": "6.1"}


def measure_into(run: Run, stop_after: int | None = None, seen: list | None = None):
    count = iter(range(10**6))

    def measure(p, row):
        n = next(count)
        run.add(metric="first", value=1.0, unit="u", **row)
        if stop_after is not None and n == stop_after:
            raise KeyboardInterrupt("stopped in the middle of a point")
        run.add(metric="second", value=2.0, unit="u", **row)
        if seen is not None:
            seen.append((p.runtime.name, p.rep, p.inner))
    return measure


def swept(run: Run, measure) -> None:
    sweep(run, [Named("a"), Named("b")], reps=3, inner=["x", "y"], row_for=lambda p: dict(
        runtime=p.runtime.name, rep=p.rep, app=p.inner), measure=measure, failed=("first", "u"), desc="t",
        progress=False)


def test_a_point_cut_by_a_stop_is_measured_again_whole_and_ended_ones_are_not(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with Run("exp", {}, FACTS, data_dir=tmp_path) as run:
            run.add(metric="size", value=3.0, unit="u", runtime="a", app="x")  # outside the points
            swept(run, measure_into(run, stop_after=4))
    run_dir = run.dir
    assert len(ended_points(run_dir)) == 4
    kept, cut, outside = resume.keep_ended_rows(run_dir, run.columns)
    assert (kept, cut, outside) == (8, 1, 1)  # set aside, not lost
    assert len(data_lines(run_dir / resume.DISCARDED_FILE)) == 2
    # A cross-check measured outside the points was said to be "of points cut by the stop".
    assert resume.discarded_words(cut, outside) == (
        ", 1 rows of points cut by the stop and 1 rows measured outside its points (sizes, cross-checks) moved "
        "to discarded.csv and measured again")
    assert resume.discarded_words(0, 3).startswith(", 3 rows measured outside") and not resume.discarded_words(0, 0)
    seen = []
    with Run("exp", {}, FACTS, data_dir=tmp_path, run_id=run.run_id, resume=True, sitting={"resumed": True}) as again:
        swept(again, measure_into(again, seen=seen))
    assert len(seen) == 12 - 4, seen  # only the points that had not ended
    with open(run_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    per_point = Counter(r["point_id"] for r in rows)
    assert len(per_point) == 12 and set(per_point.values()) == {2}
    lines = (run_dir / POINTS_FILE).read_text().splitlines()
    assert len(lines) == 12 == len({json.loads(line)["point_id"] for line in lines})
    meta = load_meta(run_dir)
    assert [s["status"] for s in meta["sittings"]] == ["interrupted", "completed"]
    assert meta["status"] == "completed" and "error" not in meta and meta["rows"]["ok"] == 24


def test_a_resumed_run_numbers_its_raw_files_on(tmp_path):
    with Run("exp", {}, FACTS, data_dir=tmp_path) as run:
        first = run.save_raw("one", command="true")
    with Run("exp", {}, FACTS, data_dir=tmp_path, run_id=run.run_id, resume=True) as again:
        second = again.save_raw("one", command="true")
    assert first != second and first.exists() and second.exists()


def record(tmp_path, monkeypatch, **values):
    monkeypatch.setattr(resume, "DATA_DIR", tmp_path)
    return time_to_ready.Params.from_values(dict(dict(runtimes="native", profile="quick"), **values))


def write_run(tmp_path, status: str, given: dict, digest: str, run_id="r1", started="2026-01-01T00:00:00"):
    run_dir = tmp_path / "time_to_ready" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "results.csv").write_text("experiment\n")
    (run_dir / "meta.json").write_text(json.dumps(dict(
        status=status, started_at=started, record=given, code_digest=digest, parameters={"target": "local"},
        target=FACTS)))
    return run_dir


def resolve(tmp_path, params, which="latest", anyway=False):
    return resume.resolve("time_to_ready", which, "local", resume.plain_given(params.given()),
                          type(params).__module__, anyway, data_dir=tmp_path)


def test_resume_goes_on_only_with_the_same_parameters_and_code(tmp_path, monkeypatch):
    params = record(tmp_path, monkeypatch)
    given, digest = resume.plain_given(params.given()), resume.code_digest(type(params).__module__)
    assert resolve(tmp_path, params) is None  # nothing yet: measure from the start
    run_dir = write_run(tmp_path, "interrupted", given, digest)
    assert resolve(tmp_path, params) == resume.Resumption(run_dir, completed=False)
    other = params.replace(memory="1024m")
    with pytest.raises(ConfigError, match=r"memory was '2048m', now '1024m'.*RESUME_ANYWAY=yes"):
        resolve(tmp_path, other)
    forced = resolve(tmp_path, other, anyway=True)
    assert forced.run_dir == run_dir and forced.differences == ("memory was '2048m', now '1024m'",)
    meta = json.loads((run_dir / "meta.json").read_text())
    (run_dir / "meta.json").write_text(json.dumps(dict(meta, code_digest="0" * 16)))
    with pytest.raises(ConfigError, match="the experiment's code changed"):
        resolve(tmp_path, params)


def test_a_completed_run_is_left_alone_or_replaced_by_a_fresh_one(tmp_path, monkeypatch):
    params = record(tmp_path, monkeypatch)
    given, digest = resume.plain_given(params.given()), resume.code_digest(type(params).__module__)
    run_dir = write_run(tmp_path, "completed", given, digest)
    assert resolve(tmp_path, params).completed
    # The latest run completed with other settings: an earlier, unrelated run, not this one's to go on with.
    assert resolve(tmp_path, params.replace(repetitions=7)) is None
    # Named by its id, it must match.
    with pytest.raises(ConfigError, match="repetitions"):
        resolve(tmp_path, params.replace(repetitions=7), which=run_dir.name)


def test_a_completed_run_measured_by_other_code_is_kept_only_when_told(tmp_path, monkeypatch):
    params = record(tmp_path, monkeypatch)
    run_dir = write_run(tmp_path, "completed", resume.plain_given(params.given()), "0" * 16)
    # New code: a new run, unless RESUME_ANYWAY keeps the finished one (a run carried across sittings).
    assert resolve(tmp_path, params) is None
    kept = resolve(tmp_path, params, anyway=True)
    assert kept.run_dir == run_dir and kept.completed
    assert kept.differences and kept.differences[0].startswith(resume.CODE_CHANGED)
    # Other settings too: an earlier, unrelated run, whatever RESUME_ANYWAY says.
    assert resolve(tmp_path, params.replace(repetitions=7), anyway=True) is None


def test_the_record_refuses_resume_with_run_id_and_a_missing_run(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="give only one of them"):
        record(tmp_path, monkeypatch, resume="latest", run_id="latest")
    with pytest.raises(ConfigError, match="no run 'nope'"):
        record(tmp_path, monkeypatch, resume="nope")


def test_the_experiments_code_is_what_measures_not_what_plots():
    modules = resume._closure("edgebench.experiments.time_to_ready")
    assert {"edgebench.experiments.sweep", "edgebench.runtimes.docker", "edgebench.results"} <= modules
    assert not any(m.startswith(("edgebench.plotting", "edgebench.drivers")) for m in modules)


def test_a_point_id_is_the_same_in_every_sitting():
    @dataclass(frozen=True)
    class Cell:
        scenario: str
        cpus: float

    a = resume.point_id("s", "docker", 2, "fair", (Cell("idle", 1.0), 512.0), "go-http")
    assert a == resume.point_id("s", "docker", 2, "fair", (Cell("idle", 1.0), 512.0), "go-http")
    assert " at 0x" not in a and a != resume.point_id("s2", "docker", 2, "fair", (Cell("idle", 1.0), 512.0), "go-http")


# -- a real make figures, stopped twice and resumed ------------------------------------------

# REPS=8 x (fair warm, cold; published) for one runtime and app: native has no image to fetch, so
# no first start (no point, since the sweep's `applies`; before, an empty one)
POINTS = 8 * 3
ARGS = ["PROVISION=no", "PROFILE=quick", "ONLY=time_to_ready", "RUNTIMES=native", "APPS=go-http", "REPS=8"]


def make_figures(env, *extra) -> subprocess.Popen:
    return subprocess.Popen(["make", "--no-print-directory", "figures", *ARGS, *extra], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def run_points(run_dir) -> list[str]:
    return [json.loads(line)["point_id"] for line in (run_dir / POINTS_FILE).read_text().splitlines()]


def rows_reached(results: Path, rows: int, make: subprocess.Popen, seed: int) -> bool:
    """Whether the runs under `results` hold `rows` rows; make figures must still run until then."""
    if sum(len(data_lines(p)) for p in results.glob("*/results.csv")) >= rows:
        return True
    assert make.poll() is None, f"seed {seed}: ended before row {rows}: {make.communicate()[1][-3000:]}"
    return False


@pytest.mark.slow
def test_make_figures_stopped_twice_and_resumed_measures_each_point_once(tmp_path, cgroups_ready, no_leftovers):
    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    base = dict(os.environ, EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"))
    whole = dict(base, EDGEBENCH_DATA_DIR=str(tmp_path / "whole"))
    stopped = dict(base, EDGEBENCH_DATA_DIR=str(tmp_path / f"stopped-{uuid.uuid4().hex[:6]}"))
    out, err = make_figures(whole).communicate(timeout=300)
    assert "Error" not in err[-500:], err[-3000:]
    (whole_dir,) = (tmp_path / "whole" / "time_to_ready").iterdir()
    assert len(run_points(whole_dir)) == POINTS
    # The notebook's time and its points' are read on one clock: the points fit inside it.
    (timed,) = plan.read_history(tmp_path / "whole" / plan.HISTORY_FILE)
    assert 0 < timed["in_points_s"] <= timed["seconds"], timed

    results = Path(stopped["EDGEBENCH_DATA_DIR"]) / "time_to_ready"
    for sitting in range(2):  # stopped at a random row, once from the start and once resumed
        make = make_figures(stopped, *(["RESUME=latest"] if sitting else []))
        try:
            before = sum(len(data_lines(p)) for p in results.glob("*/results.csv"))
            stop_at = before + rng.randrange(2, POINTS)  # a point writes 3-4 rows
            # A random look interval too: the signal lands anywhere in the row being written.
            reached = wait_until(partial(rows_reached, results, stop_at, make, seed), 240, rng.uniform(0.0, 0.1))
            assert reached, f"seed {seed}: no row {stop_at} after 240 s"
            os.killpg(make.pid, signal.SIGTERM)
            out, err = make.communicate(timeout=120)
            assert make.returncode != 0 and "stopped by SIGTERM" in out, f"seed {seed}: {err[-2000:]}"
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()
        (run_dir,) = results.iterdir()
        assert load_meta(run_dir)["status"] == "interrupted", f"seed {seed}: {err[-2000:]}"
    # The plan of the resumed run is for the points left, as the run measures only those.
    ended = len(run_points(results.iterdir().__next__()))
    planned = subprocess.run(["make", "--no-print-directory", "plan", *ARGS, "RESUME=latest"], cwd=PROJECT_ROOT,
                             env=stopped, capture_output=True, text=True, timeout=120)
    assert f"resumed: {ended} of {POINTS} points measured in earlier sittings" in planned.stderr, planned.stderr
    assert f"for the {POINTS - ended} left" in planned.stderr, planned.stderr
    out, err = make_figures(stopped, "RESUME=latest").communicate(timeout=300)
    assert "time to ready:" in err and "measured in an earlier sitting" in err, err[-3000:]

    (run_dir,) = results.iterdir()
    meta = load_meta(run_dir)
    assert [s["status"] for s in meta["sittings"]] == ["interrupted", "interrupted", "completed"], seed
    points = run_points(run_dir)
    assert len(points) == len(set(points)), f"seed {seed}: a point measured twice"
    assert sorted(points) == sorted(run_points(whole_dir)), f"seed {seed}"
    with open(run_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(whole_dir / "results.csv", newline="") as f:
        whole_rows = list(csv.DictReader(f))
    # Every point's rows once: the same metrics per point as the uninterrupted run.
    assert Counter((r["point_id"], r["metric"]) for r in rows) == \
        Counter((r["point_id"], r["metric"]) for r in whole_rows), f"seed {seed}"
    assert not processes_with_env(stopped["EDGEBENCH_DATA_DIR"]), "left running"
    # Once completed, resuming again measures nothing.
    out, err = make_figures(stopped, "RESUME=latest").communicate(timeout=300)
    assert "completed with these settings; skipped (RESUME)" in err, err[-2000:]
    assert len(run_points(run_dir)) == POINTS


def test_the_time_in_points_is_what_the_harness_share_is_taken_from(tmp_path):
    measure = measure_into(run := Run("exp", {}, FACTS, data_dir=tmp_path))

    def measure_for_10_ms(p, row):  # longer than the timestamps' millisecond, on any machine
        time.sleep(0.01)
        measure(p, row)
    with run:
        swept(run, measure_for_10_ms)
    n, seconds = time_in_points(run.dir)
    assert n == 12 and 0.12 <= seconds < 5
    assert time_in_points(run.dir, since="9999") == (0, 0.0)  # a later sitting measured none of them
    assert plan.harness_share(10.0, 9.0) == pytest.approx(0.1) and plan.harness_share(1.0, 2.0) == 0.0


def test_more_repetitions_go_on_with_a_completed_run_where_only_repetitions_differ(tmp_path, monkeypatch):
    """make settle's resume: a completed run is continued for more repetitions of some points, and
    anything else that differs is still refused."""
    params = record(tmp_path, monkeypatch)
    given, digest = resume.plain_given(params.given()), resume.code_digest(type(params).__module__)
    run_dir = write_run(tmp_path, "completed", given, digest)
    more = resume.resolve("time_to_ready", run_dir.name, "local", resume.plain_given(params.replace(
        repetitions=7).given()), type(params).__module__, data_dir=tmp_path, more_repetitions=True)
    assert more == resume.Resumption(run_dir, completed=False, more_repetitions=True)
    fewer = resume.resolve("time_to_ready", run_dir.name, "local", resume.plain_given(params.replace(
        repetitions=7, runtimes="docker").given()), type(params).__module__, data_dir=tmp_path, more_repetitions=True)
    assert fewer.differences == ()  # only the runtimes the points need
    with pytest.raises(ConfigError, match="memory was"):
        resume.resolve("time_to_ready", run_dir.name, "local", resume.plain_given(params.replace(
            repetitions=7, memory="1024m").given()), type(params).__module__, data_dir=tmp_path,
            more_repetitions=True)


def test_a_focused_sweep_adds_repetitions_to_the_points_it_names_only(tmp_path):
    with Run("exp", {}, FACTS, data_dir=tmp_path) as run:
        swept(run, measure_into(run))
    seen = []
    with Run("exp", {}, FACTS, data_dir=tmp_path, run_id=run.run_id, resume=True) as again:
        again.focus = (("b", {"app": "y|z"}),)
        sweep(again, [Named("a"), Named("b")], reps=5, inner=["x", "y"], row_for=lambda p: dict(
            runtime=p.runtime.name, rep=p.rep, app=p.inner), measure=measure_into(again, seen=seen),
            failed=("first", "u"), desc="t", progress=False)
    assert seen == [("b", 4, "y"), ("b", 5, "y")]  # the new repetitions of b on y, nothing measured twice
    assert len(ended_points(run.dir)) == 12 + 2
