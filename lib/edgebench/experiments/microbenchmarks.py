"""Microbenchmarks (paper 001/004, Table 2 and §3.0.1): sysbench CPU and memory under both
protocols, each as a batch through `tools/steps` in every runtime, then Docker host vs bridge
networking (iperf3, edgebench.experiments.network). lxd_appendix runs the same sysbench batches.

Protocols:
- `published`: Table 2's points as the paper labels them ("1MB / 10T" ...): memory totals of
  1/10/100 MB with 10/100/1000 threads (runs of milliseconds: thread creation dominates), CPU
  with 10/100/1000 threads and 10,000 events (sysbench 0.4's default), timed end to end.
- `fair`: runs long enough to measure (a fixed duration), thread counts the cores can run
  (1 and every core), the same cores and limits for every runtime.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from edgebench.errors import EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import Opening, check_protocols, check_repetitions, opening
from edgebench.experiments.network import iperf3_points, measure_docker_networking
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.steps import run_steps
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Artifact, Runtime
from edgebench.tools import sysbench as sb

TOOL = "sysbench"
EXTRA_COLUMNS = ["benchmark", "point", "threads", "files", "total", "build", "cpus_applied",
                 "memory_mb_applied", "cpuset_applied", "limits_note", "note"]
TABLE2_POINTS = [("1MB / 10T", "1M", 10), ("10MB / 100T", "10M", 100), ("100MB / 1000T", "100M", 1000)]
SECONDS = {"smoke": 1, "quick": 1, "standard": 10}
REPETITIONS = {"smoke": 1, "quick": 2, "standard": 5}


def max_threads(target) -> int | None:
    """Threads one process can create on the target: the smallest of the kernel's threads-max,
    pid_max and the user's process limit (the paper's 10,000-thread runs failed with EAGAIN)."""
    r = target.run(["sh", "-c", "cat /proc/sys/kernel/threads-max /proc/sys/kernel/pid_max; ulimit -u"],
                   check=False)
    values = [int(v) for v in r.stdout.split() if v.isdigit()]
    return min(values) - 64 if values else None


def runnable(o: Opening, rt: Runtime, threads: int | None, limit: int | None) -> Artifact:
    """The runtime's sysbench; raises the reason it cannot run (its failed row says it)."""
    artifact = artifact_for(o.artifacts, TOOL, rt)
    if threads is not None and limit is not None and threads > limit:
        raise EdgebenchError(f"{threads} threads exceed what {rt.target.name} can create ({limit})")
    return artifact


def sysbench_batch(o: Opening, p: Point, threads: int | None, limit: int | None, words: list[str], protocol: str,
                   row: dict, tag: str, timeout_s: float) -> tuple[list[dict], dict]:
    """One sysbench batch of the point (page faults counted), under `protocol`'s limits."""
    return run_steps(o.run, p.runtime, runnable(o, p.runtime, threads, limit), words, o.limits(protocol), row,
                     f"sysbench-{tag}", timeout_s, events=("page-faults",))


def add_parsed(run: Run, parsed: dict, row: dict, wall_s: float | None = None) -> None:
    units = {"total_time_s": ("total_time", "s"), "events_per_s": ("events_per_second", "1/s"),
             "latency_avg_ms": ("latency_avg", "ms"), "latency_p95_ms": ("latency_p95", "ms"),
             "latency_max_ms": ("latency_max", "ms"), "mib_per_s": ("throughput", "MiB/s"),
             "read_mib_per_s": ("read_throughput", "MiB/s"), "written_mib_per_s": ("write_throughput", "MiB/s")}
    for key, (metric, unit) in units.items():
        if key in parsed:
            run.add(metric=metric, value=parsed[key], unit=unit, **row)
    if wall_s is not None:
        run.add(metric="wall_time", value=wall_s, unit="s", note="the step as tools/steps timed it", **row)


@dataclass(frozen=True)
class Params(Limited):
    """The parameters of notebook 08: Table 2 under both protocols, then Docker host vs bridge."""
    EXPERIMENT: ClassVar[str] = "microbenchmarks"
    SMOKE: ClassVar[dict] = {**Limited.SMOKE, "network": False}  # sysbench's points only

    repetitions: int = 0            # 0 takes the profile's
    protocols: str = "fair,published"
    cpus: str = ""                  # "" for no limit
    memory: str = ""                # "" for no limit; with a unit
    network: bool = True
    load_generator: str = "local"
    progress: bool = library(True)
    # parsed when made
    reps: int = parsed()
    protocol_names: list[str] = parsed()
    seconds: int = parsed()         # of each fair run and each iperf3 run: the profile's

    def check(self):
        reps = check_repetitions(self.repetitions or REPETITIONS[self.profile])
        protocol_names = check_protocols(self.protocols)
        self.limits()  # parsed once; refused here, before connecting
        self.set(reps=reps, protocol_names=protocol_names, seconds=SECONDS[self.profile])


def run(params: Params) -> Path:
    """Table 2 (sysbench CPU and memory) under both protocols, then Docker host vs bridge."""
    seconds, reps = params.seconds, params.reps
    with opening(params, [TOOL], EXTRA_COLUMNS) as o:
        limit = max_threads(o.target)
        o.run.note("max_threads", limit)
        o.package([TOOL])
        cells = []
        for proto in params.protocol_names:
            if proto == "published":
                for label, total, threads in TABLE2_POINTS:
                    cells.append((proto, "memory", label, threads, total, sb.memory(threads, total)))
                    cells.append((proto, "cpu", label, threads, None, sb.cpu(threads, events=10000)))
            else:
                for threads in sorted({1, o.cores}):
                    cells.append((proto, "memory", f"{threads}T, {seconds} s", threads, "100G",
                                  sb.memory(threads, "100G", seconds=seconds, block="1M")))
                    cells.append((proto, "cpu", f"{threads}T, {seconds} s", threads, None,
                                  sb.cpu(threads, seconds=seconds)))

        def row_for(p: Point) -> dict:
            proto, bench, label, threads, total, _ = p.outer
            return dict(app=TOOL, runtime=p.runtime.name, protocol=proto, rep=p.rep, cpus=o.cpus,
                        memory_mb=o.memory_mb, benchmark=bench, point=label, threads=threads, total=total,
                        build=o.build_of(TOOL, p.runtime), limits_note=o.clip)

        def measure(p: Point, row: dict) -> None:
            proto, bench, _, threads, _, words = p.outer
            steps, row = sysbench_batch(o, p, threads, limit, words, proto, row,
                                        f"{bench}-{p.runtime.name}-{proto}-{p.rep}", timeout_s=600)
            add_parsed(o.run, sb.parse(steps[0]["stdout"]), row, steps[0]["elapsed_ns"] / 1e9)

        sweep(o.run, o.runtimes, reps=reps, outer=cells, row_for=row_for, measure=measure,
              failed=("total_time", "s"), desc=params.EXPERIMENT, progress=params.progress)
        if params.network:
            measure_docker_networking(o.run, o.target, o.runtimes, reps, seconds, params.load_generator,
                                      params.progress)
        return o.run.dir


# For the run plan only, sysbench on the reference machine (the standard run of 2026-11-25, raw
# files' times): Table 2's fixed-work points take about 0.5 s; a memory point moving up to 100 GiB
# ends when they are moved (about 2.5 s) if its seconds have not run out first; CPU events run at
# about 6,500 per second; writing the appendix's files goes at about 256 MiB/s.
PLAN_FIXED_WORK_S = 0.5
PLAN_MEMORY_100G_S = 2.5
PLAN_CPU_EVENTS_PER_S = 6500
PLAN_FILES_MB_PER_S = 256


def plan_memory_s(seconds: float) -> float:
    return min(seconds, PLAN_MEMORY_100G_S)


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """Table 2's points under each protocol in every tool runtime, then iperf3 for the runtimes
    with several network modes (Docker host and bridge) beside the host-only ones."""
    protocols, reps, seconds = params.protocol_names, params.reps, params.seconds
    used = [r for r in runtimes if r in estimate.TOOL_RUNTIMES]
    cores = os.cpu_count() or 1  # the target's cores decide the fair points; the local count is a guess
    fair = 2 * len({1, cores}) if "fair" in protocols else 0
    published = 2 * len(TABLE2_POINTS) if "published" in protocols else 0
    # Fair points run sysbench for the set seconds (memory: at most those), published ones a set amount.
    timed = reps * fair / 2 * (seconds + plan_memory_s(seconds))
    total = estimate.model_seconds(used, 1, reps * (fair + published), timed + reps * published * PLAN_FIXED_WORK_S)
    windows = estimate.window_seconds(used, timed)
    points = reps * (fair + published) * len(used)
    if params.network:
        net = len(iperf3_points([RUNTIMES[r] for r in used if r in RUNTIMES])) * reps
        points += net
        total += net * (seconds + estimate.RUNTIME_COST_S["docker"][1] + 1)
        windows += net * seconds  # iperf3 for the set seconds
    return estimate.Work(points=points, seconds=total, apps=[TOOL], repetitions=reps, runtimes=used, window_s=windows,
                         levels=f"protocols {','.join(protocols)}" + (", network" if params.network else ""))
