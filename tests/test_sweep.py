"""The sweep every measuring experiment runs: its order, and errors becoming failed rows."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import pytest

from edgebench.errors import EdgebenchError, NotMeasurable
from edgebench.experiments.sweep import artifact_for, points, sweep
from edgebench.results import Run, load_meta, load_results
from edgebench.runtimes import RUNTIMES
from edgebench.signals import deferred_signals
from edgebench.targets import connect

A, B, C = (SimpleNamespace(name=n) for n in "abc")


def order(pts):
    return [(p.outer, p.rep, p.inner, p.runtime.name, p.protocol) for p in pts]


def test_runtimes_turn_with_each_repetition_and_protocols_are_innermost():
    got = order(points([A, B], reps=2, inner=["go"], protocols=["fair", "published"]))
    assert got == [(None, 1, "go", "b", "fair"), (None, 1, "go", "b", "published"),
                   (None, 1, "go", "a", "fair"), (None, 1, "go", "a", "published"),
                   (None, 2, "go", "a", "fair"), (None, 2, "go", "a", "published"),
                   (None, 2, "go", "b", "fair"), (None, 2, "go", "b", "published")]


def test_outer_cells_finish_their_repetitions_first():
    got = [(p.outer, p.rep) for p in points([A, B, C], reps=2, outer=["rich", "64m"])]
    assert got == [("rich", 1)] * 3 + [("rich", 2)] * 3 + [("64m", 1)] * 3 + [("64m", 2)] * 3
    # Every runtime once per repetition, each first in turn.
    firsts = [p.runtime.name for p in points([A, B, C], reps=3)][::3]
    assert sorted(firsts) == ["a", "b", "c"]


def test_an_error_becomes_a_failed_row_and_the_sweep_goes_on(tmp_path):
    measured = []

    def measure(p, row):
        if p.runtime is B and p.rep == 1:
            raise EdgebenchError("b/go did not become ready: OOM-killed")
        measured.append((p.runtime.name, p.rep))
        run.add(metric="m", value=1.0, unit="ms", **row)

    with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r1") as run:
        sweep(run, [A, B], reps=2, row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep),
              measure=measure, failed=("m", "ms"), desc="test", progress=False)
    df = load_results(run.dir)
    assert len(measured) == 3 and len(df) == 4
    bad = df[df.status == "failed"]
    assert list(bad.runtime) == ["b"] and list(bad.rep) == [1] and bad.value.isna().all()
    assert "OOM-killed" in bad.error.iloc[0]
    assert load_meta(run.dir)["status"] == "completed"


def test_an_interrupt_is_not_swallowed(tmp_path):
    def measure(p, row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r2") as run:
            sweep(run, [A], reps=3, row_for=lambda p: {}, measure=measure, failed=("m", "ms"), desc="t",
                  progress=False)
    assert load_meta(run.dir)["status"] == "interrupted"


def test_a_stop_that_a_failing_cleanup_hid_still_stops_the_run(tmp_path):
    """The standard run's iomt went on measuring for minutes after make figures passed Ctrl-C on:
    the SIGINT came while LXD created a container, and the start's cleanup (LXD would not delete a
    container it was still creating) raised its own error in the interrupt's place, which became
    a failed row. The stop wins: no row for the cut point, not ended, no further point."""
    measured = []

    def undo():
        raise EdgebenchError("could not delete LXD container eb-1: Instance is busy running a create operation")

    def measure(p, row):
        measured.append(p.rep)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the signal arrives first
        except BaseException:  # as a runtime's start undoes what it made, and the undoing fails
            undo()
            raise

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r3") as run:
            sweep(run, [A], reps=3, row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep), measure=measure,
                  failed=("m", "ms"), desc="t", progress=False)
    assert measured == [1]
    assert load_results(run.dir).empty and not run.ended_points
    assert load_meta(run.dir)["status"] == "interrupted"
    assert signal.getsignal(signal.SIGINT) == before


def test_a_stop_a_deferred_cleanup_dropped_stops_the_next_point(tmp_path):
    """A signal held off during a cleanup that unwinds from an error is not raised again there;
    the run's next point does not start."""
    measured = []

    def measure(p, row):
        measured.append(p.rep)
        with deferred_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            raise EdgebenchError("the app did not become ready")

    with pytest.raises(KeyboardInterrupt):
        with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r4") as run:
            sweep(run, [A], reps=3, row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep), measure=measure,
                  failed=("m", "ms"), desc="t", progress=False)
    assert measured == [1] and load_meta(run.dir)["status"] == "interrupted"
    # The stop was this run's: the next run (a cell run again in the same kernel) measures.
    with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r5") as again:
        sweep(again, [A], reps=2, row_for=lambda p: {}, measure=lambda p, row: measured.append(p.rep),
              failed=("m", "ms"), desc="t", progress=False)
    assert measured == [1, 1, 2] and load_meta(again.dir)["status"] == "completed"


def test_a_missing_artifact_names_the_packaging():
    with pytest.raises(EdgebenchError, match="packaging failed"):
        artifact_for({}, "go-http", A)
    assert artifact_for({("go-http", "a"): "art"}, "go-http", A) == "art"


def test_what_cannot_be_measured_is_neither_ok_nor_failed_and_pairs_that_cannot_run_are_left_out(tmp_path):
    native, unikraft = (RUNTIMES[n](connect("local"), "t") for n in ("native", "unikraft"))
    measured = []

    def measure(p, row):
        if p.runtime is native and p.inner == "node-http":
            raise NotMeasurable("no power meter on local")
        measured.append((p.runtime.name, p.inner))
        run.add(metric="m", value=1.0, unit="ms", **row)

    with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r2") as run:
        sweep(run, [native, unikraft], reps=1, inner=["go-http", "node-http"],
              row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep, app=p.inner),
              measure=measure, failed=("m", "ms"), desc="test", progress=False)
    df = load_results(run.dir)
    assert sorted(measured) == [("native", "go-http"), ("unikraft", "go-http")]
    assert list(df.status.value_counts().sort_index().items()) == [("not measurable", 1), ("ok", 2)]
    assert df[df.status == "not measurable"].error.iloc[0] == "no power meter on local"
    meta = load_meta(run.dir)
    assert meta["rows"] == {"ok": 2, "failed": 0, "not measurable": 1}
    assert list(meta["notes"]["left_out"]) == ["node-http on unikraft"]  # no row, not a failure


def test_a_coordinate_a_runtime_does_not_have_is_no_point(tmp_path):
    # Docker's bridge is no network mode of native: face recognition's quick run counted 54 points
    # (30 of them empty) against the plan's 24, so its bar and its recorded points ran ahead.
    from edgebench.results import time_in_points
    measured = []

    def measure(p, row):
        measured.append((p.runtime.name, p.inner))
        run.add(metric="m", value=1.0, unit="ms", **row)

    modes = {"a": ("host", "bridge"), "b": ("",)}
    with Run("sweep_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r3") as run:
        sweep(run, [A, B], reps=2, inner=["host", "bridge", ""], protocols=["fair", "published"],
              row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep, protocol=p.protocol),
              measure=measure, failed=("m", "ms"), desc="test", progress=False,
              applies=lambda p: p.inner in modes[p.runtime.name])
    assert sorted(set(measured)) == [("a", "bridge"), ("a", "host"), ("b", "")]
    assert len(measured) == (2 + 1) * 2 * 2 == len(load_results(run.dir))
    assert time_in_points(run.dir)[0] == len(measured)  # the points recorded are the ones measured


def test_without_the_memory_controller_a_cgroup_limit_below_the_device_is_not_measured(tmp_path):
    """On a kernel without the memory controller (a stock Raspberry Pi OS; pi-arm64-nomemcg)
    Docker, LXD and native accept a memory limit and run the app unlimited: such a point was
    measured for minutes and written as ok under the limit it never had. It is now a not measurable
    row saying why, not run. A VM's memory is QEMU's -m, and a level clipped to the device's own
    memory asks for nothing the device lacks: both are measured."""
    local = connect("local")
    native, vm = RUNTIMES["native"](local), RUNTIMES["linux-vm"](local)
    facts = {"target": "pi", "memory_mb": 977, "memory_controller": "no"}
    measured = []

    def measure(p, row):
        measured.append((p.runtime.name, p.outer))
        run.add(metric="m", value=1.0, unit="ms", **row)

    with Run("sweep_test", {}, facts, data_dir=tmp_path, run_id="r1") as run:
        sweep(run, [native, vm], reps=1, outer=[977.0, 64.0], progress=False, failed=("m", "ms"), desc="t",
              row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep, memory_mb=p.outer), measure=measure)
    assert sorted(measured) == [("linux-vm", 64.0), ("linux-vm", 977.0), ("native", 977.0)]
    df = load_results(run.dir)
    (skipped,) = df[df.status == "not measurable"].itertuples()
    assert (skipped.runtime, skipped.memory_mb) == ("native", 64.0)
    assert skipped.error.startswith("a memory limit of 64 MiB cannot be applied: the device's kernel has no memory "
                                    "controller") and "cgroup_enable=memory" in skipped.error
    # With the controller, or with no limit asked, nothing changes.
    with Run("sweep_test", {}, dict(facts, memory_controller="yes"), data_dir=tmp_path, run_id="r2") as run:
        sweep(run, [native], reps=1, outer=[64.0, None], progress=False, failed=("m", "ms"), desc="t",
              row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep, memory_mb=p.outer), measure=measure)
    assert (load_results(run.dir).status == "ok").all() and len(measured) == 5
