"""The one loop every measuring experiment runs: cells x repetitions x runtimes x protocols.

It owns what the experiments used to copy: the order (runtimes alternate, and their order turns
with each repetition, A B then B A, so drift favours none), the progress bar, and turning an
error a measurement raises into a `failed` row with the reason (a `not measurable` one for what the
device or runtime cannot measure, errors.NotMeasurable), after which the sweep goes on. A target
(or load generator) that stops answering ends the sweep instead: every point left would wait its
timeouts on a host that is gone, so the run stops, marked interrupted, to be resumed when it answers.
Experiments supply two functions: `row_for(point)` (the row's columns) and `measure(point, row)`.
A point whose row names an app its runtime cannot run (node-http on unikraft) is left out, said
once and noted in the run (`left_out`), not measured into failed rows.
A run with a `focus` (make settle's: (runtime, {column: "v1|v2"}) pairs) measures only the points
whose runtime and row match one of them; the others are neither measured nor counted.
A point whose row asks for a memory limit the device cannot apply (no memory controller) is a
`not measurable` row, not run (protocols.memory_not_applicable).
Each point is bracketed by `run.begin_point()` / `run.end_point()`: the run's health monitor checks
there, while nothing of the point runs yet, whether other processes keep the device busy, and
marks the point's rows with what it saw (edgebench.tools.health).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from tqdm import tqdm

from edgebench.apps import APPS
from edgebench.errors import EdgebenchError, NotMeasurable, TargetUnreachable
from edgebench.experiments.protocols import memory_not_applicable
from edgebench.resume import point_id
from edgebench.results import Run
from edgebench.runtimes import Artifact, Runtime


@dataclass(frozen=True)
class Point:
    """One measurement: which runtime, which repetition, and the experiment's own coordinates:
    `outer` (all its repetitions before the next one: a scenario, a workload and size) and
    `inner` (within one repetition: an app), `protocol` innermost, after the runtime."""
    runtime: Runtime
    rep: int
    protocol: str | None
    outer: Any
    inner: Any


def points(runtimes: Sequence[Runtime], reps: int, outer: Sequence = (None,), inner: Sequence = (None,),
           protocols: Sequence = (None,)) -> list[Point]:
    out = []
    for o in outer:
        for rep in range(1, reps + 1):
            for c in inner:
                for i in range(len(runtimes)):
                    rt = runtimes[(i + rep) % len(runtimes)]
                    out.extend(Point(rt, rep, p, o, c) for p in protocols)
    return out


def sweep(run: Run, runtimes: Sequence[Runtime], *, reps: int, row_for: Callable[[Point], dict],
          measure: Callable[[Point, dict], None], failed: tuple[str, str], desc: str, progress: bool = True,
          outer: Sequence = (None,), inner: Sequence = (None,), protocols: Sequence = (None,),
          applies: Callable[[Point], bool] | None = None) -> None:
    """Measure every point; `failed` = (metric, unit) of the row an error becomes. A point a
    resumed run has already measured to its end is not measured again (edgebench.resume).
    `applies(point)` False: a coordinate that does not exist for the point's runtime (Docker's
    bridge for native, a first start for a runtime with nothing to fetch): no point at all, so
    neither the progress bar nor the run's points count it."""
    metric, unit = failed
    todo, left_out = [], {}
    focus = run.focus
    for p in points(runtimes, reps, outer, inner, protocols):
        if applies is not None and not applies(p):
            continue
        if focus and not in_focus(focus, p.runtime.name, row_for(p)):
            continue
        app = APPS.get(row_for(p).get("app") or "")
        if app is not None and not p.runtime.runs(app):  # a pair that cannot run: not a failure
            left_out[f"{app.name} on {p.runtime.name}"] = f"{p.runtime.name} runs {p.runtime.runs_what()}"
            continue
        todo.append((p, point_id(desc, runtime_key(p.runtime), p.rep, p.protocol, p.outer, p.inner)))
    if left_out:
        print(f"[edgebench] {desc}: left out, as they cannot run: "
              + "; ".join(f"{pair} ({why})" for pair, why in left_out.items()), file=sys.stderr)
        run.note("left_out", {**(run.meta.get("notes") or {}).get("left_out", {}), **left_out})
    done = sum(key in run.ended_points for _, key in todo)
    if done:
        print(f"[edgebench] {desc}: {done} of {len(todo)} points measured in an earlier sitting; "
              f"measuring the other {len(todo) - done}", file=sys.stderr)
    for point, key in tqdm([(p, k) for p, k in todo if k not in run.ended_points], desc=desc,
                           disable=not progress):
        row = row_for(point)
        run.begin_point(key)
        ended = False
        try:
            why = memory_not_applicable(point.runtime, row.get("memory_mb"), run.meta.get("target") or {})
            if why:
                raise NotMeasurable(why)
            measure(point, row)
            ended = True
        except TargetUnreachable:
            raise  # not the point's failure: the point has not ended, and is measured again on resume
        except EdgebenchError as e:
            if run.stop_asked():  # the error of a cleanup the user's stop cut short, not the point's
                raise KeyboardInterrupt(f"stopped by {run.stop_asked()}") from e
            if isinstance(e, NotMeasurable):
                run.not_measurable(metric=metric, unit=unit, why=str(e), **row)
            else:
                run.failed(metric=metric, unit=unit, error=str(e), **row)
            ended = True
        finally:
            run.end_point(ended)


def in_focus(focus, runtime: str, row: dict) -> bool:
    """Whether a point (its runtime and row) is one a focus names. A column the row does not carry
    does not narrow it: a point is left out only on what it says."""
    return any(name == runtime and all(_matches(row[key], wanted) for key, wanted in dict(conditions).items()
                                       if key in row)
               for name, conditions in focus)


def _matches(value, wanted: str) -> bool:
    for one in str(wanted).split("|"):
        try:
            if float(value) == float(one):
                return True
        except (TypeError, ValueError):
            if str(value) == one.strip():
                return True
    return False


def modes_of(rt: Runtime) -> tuple[str, ...]:
    """Network modes a runtime serves in, a coordinate of the points that have one: each of
    several (Docker: bridge, host), else its one, as "" (the runtime's own network)."""
    return rt.network_modes if len(rt.network_modes) > 1 else ("",)


def runtime_key(rt: Runtime) -> str:
    """The runtime in a point's identity: a VM runtime measured once per machine type (boot time's
    pc and microvm) is one runtime with two machines."""
    machine = getattr(rt, "machine", None)
    return f"{rt.name}@{machine}" if isinstance(machine, str) and machine else rt.name


def artifact_for(artifacts: dict, app: str, rt: Runtime) -> Artifact:
    """The artifact packaged before the sweep, or the error its row records."""
    artifact = artifacts.get((app, rt.name))
    if artifact is None:
        why = getattr(artifacts, "failures", {}).get((app, rt.name))
        raise EdgebenchError(f"packaging {app} for {rt.name} failed: {why}" if why else "packaging failed (see raw/)")
    return artifact
