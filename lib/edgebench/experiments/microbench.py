"""Microbenchmarks (paper 001/004): sysbench CPU and memory (Table 2), Docker host vs bridge
networking (iperf3), and the LXD appendix (file creation, file I/O, memory and CPU over thread
counts, Fig. 2), each as a batch of sysbench phases run through `tools/steps` in every runtime.

Protocols:
- `published`: Table 2's points as the paper labels them ("1MB / 10T" ...): memory totals of
  1/10/100 MB with 10/100/1000 threads (runs of milliseconds: thread creation dominates), CPU
  with 10/100/1000 threads and 10,000 events (sysbench 0.4's default), timed end to end.
- `fair`: runs long enough to measure (a fixed duration), thread counts the cores can run
  (1 and every core), the same cores and limits for every runtime.
The appendix panels sweep file counts and thread counts up to what the target can create.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterator

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import as_list, check_protocols, check_repetitions, open_run, resolve_limits, session
from edgebench.experiments.network import measure_docker_networking, network_points
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.protocols import fair_limits, package_all, published_limits, with_applied
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Limits
from edgebench.tools import sysbench as sb

TOOL = "sysbench"
EXTRA_COLUMNS = ["benchmark", "point", "threads", "files", "total", "build", "cpus_applied",
                 "memory_mb_applied", "cpuset_applied", "limits_note", "note"]
TABLE2_POINTS = [("1MB / 10T", "1M", 10), ("10MB / 100T", "10M", 100), ("100MB / 1000T", "100M", 1000)]
SECONDS = {"smoke": 1, "quick": 1, "standard": 10}
REPETITIONS = {"smoke": 1, "quick": 2, "standard": 5}
# cpu_events: the CPU panel's fixed work, which the paper does not give; enough for a run of a
# second or more (quick) and of several (standard) at about 3,300 events/s per core (2 cores here,
# 12 cores still get 1 s in standard): 2,000 events lasted 0.3-0.6 s, mostly threads starting.
APPENDIX = {
    "smoke": {"files": [8], "threads": [1], "cpu_events": 500, "seconds": 1},
    "quick": {"files": [8, 32], "threads": [1, 16, 256], "cpu_events": 8000, "seconds": 1},
    "standard": {"files": [16, 64, 256], "threads": [1, 10, 100, 1000, 10000], "cpu_events": 40000,
                 "seconds": 5},
}


def max_threads(target) -> int | None:
    """Threads one process can create on the target: the smallest of the kernel's threads-max,
    pid_max and the user's process limit (the paper's 10,000-thread runs failed with EAGAIN)."""
    r = target.run(["sh", "-c", "cat /proc/sys/kernel/threads-max /proc/sys/kernel/pid_max; ulimit -u"],
                   check=False)
    values = [int(v) for v in r.stdout.split() if v.isdigit()]
    return min(values) - 64 if values else None


def _run_steps(run: Run, rt, artifact, words: list[str], limits: Limits, row: dict, tag: str,
               timeout_s: float) -> list[dict] | None:
    """One batch run; raw output kept; a failure becomes a failed row and None."""
    try:
        result = rt.run_batch(artifact, ["-dir", rt.scratch_dir(), *words], limits, timeout_s=timeout_s,
                              events=("page-faults",))
    except EdgebenchError as e:
        run.failed(metric="total_time", unit="s", error=str(e), **row)
        return None
    run.save_raw(f"sysbench-{tag}", command=result.command, stdout=result.stdout, stderr=result.stderr,
                 exit_code=result.exit_code, limits_applied=result.limits_applied)
    row.update(with_applied(row, limits, result.limits_applied))
    try:
        steps = sb.steps_record(result.stdout)
    except EdgebenchError as e:
        run.failed(metric="total_time", unit="s", error=f"exit {result.exit_code}: {e} {result.stderr[-200:]}",
                   **row)
        return None
    bad = [s for s in steps if s["exit_code"] != 0]
    if bad or not result.ok:
        why = (bad[0]["stderr"] or bad[0]["stdout"])[-300:] if bad else f"exit {result.exit_code}"
        run.failed(metric="total_time", unit="s", error=f"sysbench failed: {why}", **row)
        return None
    return steps


def _add_parsed(run: Run, parsed: dict, row: dict, wall_s: float | None = None) -> None:
    units = {"total_time_s": ("total_time", "s"), "events_per_s": ("events_per_second", "1/s"),
             "latency_avg_ms": ("latency_avg", "ms"), "latency_p95_ms": ("latency_p95", "ms"),
             "latency_max_ms": ("latency_max", "ms"), "mib_per_s": ("throughput", "MiB/s"),
             "read_mib_per_s": ("read_throughput", "MiB/s"), "written_mib_per_s": ("write_throughput", "MiB/s")}
    for key, (metric, unit) in units.items():
        if key in parsed:
            run.add(metric=metric, value=parsed[key], unit=unit, **row)
    if wall_s is not None:
        run.add(metric="wall_time", value=wall_s, unit="s", note="the step as tools/steps timed it", **row)


@dataclass
class _Bench:
    """What both sysbench experiments share once the target is reached."""
    run: Run
    target: object
    selection: object
    artifacts: dict
    cores: int
    cpus: float | None
    memory_mb: float | None
    clip: str
    max_threads: int | None

    def sweep(self, plan: list, reps: int, row_for, measure, desc: str, progress: bool) -> None:
        sweep(self.run, self.selection.runtimes, reps=reps, outer=plan, row_for=row_for, measure=measure,
              failed=("total_time", "s"), desc=desc, progress=progress)

    def build_of(self, rt) -> str:
        artifact = self.artifacts.get((TOOL, rt.name))
        return artifact.build if artifact else ""

    def runnable(self, rt, threads: int | None):
        """The runtime's artifact; raises the reason it cannot run (its failed row says it)."""
        artifact = artifact_for(self.artifacts, TOOL, rt)
        if threads is not None and self.max_threads is not None and threads > self.max_threads:
            raise EdgebenchError(f"{threads} threads exceed what {rt.target.name} can create "
                                 f"({self.max_threads})")
        return artifact


@contextmanager
def _bench(experiment: str, params: dict, target, runtimes, cpus: float | None, memory_mb: float | None,
           run_id: str, record) -> Iterator[_Bench]:
    with session(target, runtimes, run_id, [TOOL]) as (tgt, selection):
        cpus_v, mem_v, clip = resolve_limits(tgt, cpus, memory_mb)
        limit = max_threads(tgt)
        with open_run(experiment, params, tgt, extra_columns=EXTRA_COLUMNS, run_id=run_id, record=record) as run:
            run.note("skipped_runtimes", selection.skipped)
            run.note("max_threads", limit)
            artifacts = package_all(run, tgt, selection.runtimes, [TOOL], "offline")
            yield _Bench(run, tgt, selection, artifacts, tgt.facts()["cores"], cpus_v, mem_v, clip, limit)


@dataclass(frozen=True)
class Microbenchmarks(Limited):
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


@dataclass(frozen=True)
class LxdAppendix(Limited):
    """The parameters of notebook 07: the appendix's file, memory and CPU panels."""
    EXPERIMENT: ClassVar[str] = "lxd_appendix"

    repetitions: int = 0            # 0 takes the profile's
    file_counts: str = ""           # "" takes the profile's
    thread_counts: str = ""         # "" takes the profile's
    cpus: str = ""                  # "" for no limit
    memory: str = ""                # "" for no limit; with a unit
    progress: bool = library(True)
    # parsed when made
    reps: int = parsed()
    files: list[int] = parsed()     # file counts
    threads: list[int] = parsed()   # thread counts

    def check(self):
        cfg = APPENDIX[self.profile]
        reps = check_repetitions(self.repetitions or REPETITIONS[self.profile])
        try:
            files = [int(x) for x in as_list(self.file_counts, [])] if self.file_counts else cfg["files"]
            threads = [int(x) for x in as_list(self.thread_counts, [])] if self.thread_counts else cfg["threads"]
        except ValueError:
            files = threads = []  # not whole numbers: refused below with the same words
        if not files or min(files) < 1 or not threads or min(threads) < 1:
            raise ConfigError("file_counts and thread_counts must be positive whole numbers")
        self.limits()  # parsed once; refused here, before connecting
        self.set(reps=reps, files=files, threads=threads)


def run_microbenchmarks(params: Microbenchmarks) -> Path:
    """Table 2 (sysbench CPU and memory) under both protocols, then Docker host vs bridge."""
    seconds, reps, cpus, memory = params.seconds, params.reps, params.cpus or None, params.memory or None
    run_id = params.measuring_run_id()
    recorded = dict(target=str(params.target), runtimes=params.runtimes, protocols=params.protocol_names, cpus=cpus,
                    memory=memory, repetitions=reps, network=params.network, profile=params.profile, seconds=seconds)
    with _bench(params.EXPERIMENT, recorded, params.target, params.runtimes, params.cpus_limit,
                params.memory_limit_mb, run_id, params) as b:
        cells = []
        for proto in params.protocol_names:
            if proto == "published":
                for label, total, threads in TABLE2_POINTS:
                    cells.append((proto, "memory", label, threads, total, sb.memory(threads, total)))
                    cells.append((proto, "cpu", label, threads, None, sb.cpu(threads, events=10000)))
            else:
                for threads in sorted({1, b.cores}):
                    cells.append((proto, "memory", f"{threads}T, {seconds} s", threads, "100G",
                                  sb.memory(threads, "100G", seconds=seconds, block="1M")))
                    cells.append((proto, "cpu", f"{threads}T, {seconds} s", threads, None,
                                  sb.cpu(threads, seconds=seconds)))
        def row_for(p: Point) -> dict:
            proto, bench, label, threads, total, _ = p.outer
            return dict(app=TOOL, runtime=p.runtime.name, protocol=proto, rep=p.rep, cpus=b.cpus,
                        memory_mb=b.memory_mb, benchmark=bench, point=label, threads=threads, total=total,
                        build=b.build_of(p.runtime), limits_note=b.clip)

        def measure(p: Point, row: dict) -> None:
            proto, bench, _, threads, _, words = p.outer
            rt = p.runtime
            limits = (fair_limits(b.cpus, b.memory_mb, b.cores) if proto == "fair"
                      else published_limits(b.cpus, b.memory_mb))
            result = _run_steps(b.run, rt, b.runnable(rt, threads), words, limits, row,
                                f"{bench}-{rt.name}-{proto}-{p.rep}", timeout_s=600)
            if result:
                _add_parsed(b.run, sb.parse(result[0]["stdout"]), row, result[0]["elapsed_ns"] / 1e9)

        b.sweep(cells, reps, row_for, measure, params.EXPERIMENT, params.progress)
        if params.network:
            measure_docker_networking(b.run, b.target, b.selection, reps, seconds, params.load_generator,
                                      params.progress)
        return b.run.dir


def run_lxd_appendix(params: LxdAppendix) -> Path:
    """Fig. 2 of the appendix, host vs LXD (and Docker): (a) creating N 1 MB files, (b) file I/O
    as N grows, (c) memory and (d) CPU over thread counts, alternating runtimes."""
    cfg = APPENDIX[params.profile]
    seconds, cpus, memory = cfg["seconds"], params.cpus or None, params.memory or None
    run_id = params.measuring_run_id()
    recorded = dict(target=str(params.target), runtimes=params.runtimes, cpus=cpus, memory=memory,
                    repetitions=params.reps, file_counts=params.files, thread_counts=params.threads,
                    profile=params.profile, seconds=seconds)
    with _bench(params.EXPERIMENT, recorded, params.target, params.runtimes, params.cpus_limit,
                params.memory_limit_mb, run_id, params) as b:
        cells = [("fileio", n, None, sb.fileio(n, 1, seconds)) for n in params.files]
        cells += [("memory", None, t, sb.memory(t, "100G", seconds=seconds, block="1M")) for t in params.threads]
        cells += [("cpu", None, t, sb.cpu(t, events=cfg["cpu_events"])) for t in params.threads]
        def row_for(p: Point) -> dict:
            bench, n, t, _ = p.outer
            return dict(app=TOOL, runtime=p.runtime.name, protocol="fair", rep=p.rep, cpus=b.cpus,
                        memory_mb=b.memory_mb, benchmark=bench, files=n, threads=t,
                        point=f"{n} files" if n else f"{t} threads", build=b.build_of(p.runtime),
                        limits_note=b.clip)

        def measure(p: Point, row: dict) -> None:
            bench, n, t, words = p.outer
            rt = p.runtime
            result = _run_steps(b.run, rt, b.runnable(rt, t), words, fair_limits(b.cpus, b.memory_mb, b.cores),
                                row, f"{bench}-{n or t}-{rt.name}-{p.rep}", timeout_s=900)
            if not result:
                return
            if bench == "fileio":
                prepare, main = result[0], result[1]
                b.run.add(metric="file_creation_time", value=prepare["elapsed_ns"] / 1e9, unit="s",
                          note=f"sysbench fileio prepare: {n} files of 1 MiB", **row)
                b.run.add(metric="file_creation_latency", value=prepare["elapsed_ns"] / 1e6 / n, unit="ms",
                          note="per 1 MiB file", **row)
                _add_parsed(b.run, sb.parse(main["stdout"]), row)
            else:
                _add_parsed(b.run, sb.parse(result[0]["stdout"]), row, result[0]["elapsed_ns"] / 1e9)

        b.sweep(cells, params.reps, row_for, measure, params.EXPERIMENT, params.progress)
        return b.run.dir


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


def plan_microbenchmarks(params: Microbenchmarks, runtimes: list[str]) -> estimate.Work:
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
        net = len(network_points([RUNTIMES[r] for r in used if r in RUNTIMES])) * reps
        points += net
        total += net * (seconds + estimate.RUNTIME_COST_S["docker"][1] + 1)
        windows += net * seconds  # iperf3 for the set seconds
    return estimate.Work(points=points, seconds=total, apps=[TOOL], repetitions=reps, runtimes=used, window_s=windows,
                         levels=f"protocols {','.join(protocols)}" + (", network" if params.network else ""))


def plan_lxd_appendix(params: LxdAppendix, runtimes: list[str]) -> estimate.Work:
    """Files, then memory and CPU over thread counts, every point in every tool runtime."""
    cfg = APPENDIX[params.profile]
    reps, files, threads = params.reps, params.files, params.threads
    used = [r for r in runtimes if r in estimate.TOOL_RUNTIMES]
    cells = len(files) + 2 * len(threads)
    # fileio: writing the files, then the timed run; memory: the seconds or 100 GiB; CPU: fixed events.
    busy = reps * (sum(n / PLAN_FILES_MB_PER_S + cfg["seconds"] for n in files)
                   + len(threads) * (plan_memory_s(cfg["seconds"]) + cfg["cpu_events"] / PLAN_CPU_EVENTS_PER_S))
    # Set times: fileio's timed run and memory's (at most the seconds); writing the files and CPU's events are work.
    windows = reps * (len(files) * cfg["seconds"] + len(threads) * plan_memory_s(cfg["seconds"]))
    return estimate.Work(points=reps * cells * len(used), seconds=estimate.model_seconds(used, 1, reps * cells, busy),
                         window_s=estimate.window_seconds(used, windows),
                         apps=[TOOL], repetitions=reps, runtimes=used,
                         levels=f"files {','.join(map(str, files))}; threads {','.join(map(str, threads))}")
