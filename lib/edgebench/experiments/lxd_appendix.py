"""The LXD appendix (paper 001/004, appendix Fig. 2), host vs LXD (and Docker): (a) creating N 1 MB
files, (b) file I/O as N grows, (c) memory and (d) CPU over thread counts, each a sysbench batch
(edgebench.experiments.microbenchmarks) through `tools/steps`, alternating runtimes. Thread
counts the target cannot create are failed rows with the reason."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from edgebench.errors import ConfigError
from edgebench.experiments import estimate
from edgebench.experiments.common import as_list, check_repetitions, opening
from edgebench.experiments.microbenchmarks import (EXTRA_COLUMNS, PLAN_CPU_EVENTS_PER_S, PLAN_FILES_MB_PER_S,
                                                   REPETITIONS, TOOL, add_parsed, max_threads, plan_memory_s,
                                                   sysbench_batch)
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.sweep import Point, sweep
from edgebench.tools import sysbench as sb

# cpu_events: the CPU panel's fixed work, which the paper does not give; enough for a run of a
# second or more (quick) and of several (standard) at about 3,300 events/s per core (2 cores here,
# 12 cores still get 1 s in standard): 2,000 events lasted 0.3-0.6 s, mostly threads starting.
APPENDIX = {
    "smoke": {"files": [8], "threads": [1], "cpu_events": 500, "seconds": 1},
    "quick": {"files": [8, 32], "threads": [1, 16, 256], "cpu_events": 8000, "seconds": 1},
    "standard": {"files": [16, 64, 256], "threads": [1, 10, 100, 1000, 10000], "cpu_events": 40000,
                 "seconds": 5},
}


@dataclass(frozen=True)
class Params(Limited):
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


def run(params: Params) -> Path:
    """Fig. 2 of the appendix: the file panels over file counts, memory and CPU over thread
    counts, every point in every runtime, fair limits."""
    cfg = APPENDIX[params.profile]
    seconds = cfg["seconds"]
    with opening(params, [TOOL], EXTRA_COLUMNS) as o:
        limit = max_threads(o.target)
        o.run.note("max_threads", limit)
        o.package([TOOL])
        cells = [("fileio", n, None, sb.fileio(n, 1, seconds)) for n in params.files]
        cells += [("memory", None, t, sb.memory(t, "100G", seconds=seconds, block="1M")) for t in params.threads]
        cells += [("cpu", None, t, sb.cpu(t, events=cfg["cpu_events"])) for t in params.threads]

        def row_for(p: Point) -> dict:
            bench, n, t, _ = p.outer
            return dict(app=TOOL, runtime=p.runtime.name, protocol="fair", rep=p.rep, cpus=o.cpus,
                        memory_mb=o.memory_mb, benchmark=bench, files=n, threads=t,
                        point=f"{n} files" if n else f"{t} threads", build=o.build_of(TOOL, p.runtime),
                        limits_note=o.clip)

        def measure(p: Point, row: dict) -> None:
            bench, n, t, words = p.outer
            steps, row = sysbench_batch(o, p, t, limit, words, "fair", row,
                                        f"{bench}-{n or t}-{p.runtime.name}-{p.rep}", timeout_s=900)
            if bench == "fileio":
                prepare, main = steps[0], steps[1]
                o.run.add(metric="file_creation_time", value=prepare["elapsed_ns"] / 1e9, unit="s",
                          note=f"sysbench fileio prepare: {n} files of 1 MiB", **row)
                o.run.add(metric="file_creation_latency", value=prepare["elapsed_ns"] / 1e6 / n, unit="ms",
                          note="per 1 MiB file", **row)
                add_parsed(o.run, sb.parse(main["stdout"]), row)
            else:
                add_parsed(o.run, sb.parse(steps[0]["stdout"]), row, steps[0]["elapsed_ns"] / 1e9)

        sweep(o.run, o.runtimes, reps=params.reps, outer=cells, row_for=row_for, measure=measure,
              failed=("total_time", "s"), desc=params.EXPERIMENT, progress=params.progress)
        return o.run.dir


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
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
