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

from pathlib import Path

from tqdm import tqdm

from edgebench import sysbench as sb
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import (as_list, check_profile, check_protocols, check_repetitions,
                                          collect as _collect, session)
from edgebench.experiments.protocols import fair_limits, package_all, published_limits, verify_limits
from edgebench.results import Run, new_run_id
from edgebench.runtimes import Limits

TOOL = "sysbench"
EXTRA_COLUMNS = ["benchmark", "point", "threads", "files", "total", "build", "cpus_applied",
                 "memory_mb_applied", "cpuset_applied", "limits_note", "note"]
TABLE2_POINTS = [("1MB / 10T", "1M", 10), ("10MB / 100T", "10M", 100), ("100MB / 1000T", "100M", 1000)]
SECONDS = {"quick": 1, "standard": 10}
REPETITIONS = {"quick": 2, "standard": 5}
APPENDIX = {
    "quick": {"files": [8, 32], "threads": [1, 16, 256], "cpu_events": 2000, "seconds": 1},
    "standard": {"files": [16, 64, 256], "threads": [1, 10, 100, 1000, 10000], "cpu_events": 20000,
                 "seconds": 5},
}


def max_threads(target) -> int | None:
    """Threads one process can create on the target: the smallest of the kernel's threads-max,
    pid_max and the user's process limit (the paper's 10,000-thread runs failed with EAGAIN)."""
    r = target.run(["sh", "-c", "cat /proc/sys/kernel/threads-max /proc/sys/kernel/pid_max; ulimit -u"],
                   check=False)
    values = [int(v) for v in r.stdout.split() if v.isdigit()]
    return min(values) - 64 if values else None


def scratch_dir(rt) -> str:
    """Where fileio writes: inside the container's own filesystem for containers; the
    workspace for native (/tmp may be tmpfs on the host)."""
    return f"{rt.target.workspace}/scratch/{rt.run_tag}" if rt.name == "native" else "/tmp/edgebench"


def _run_steps(run: Run, rt, artifact, words: list[str], limits: Limits, row: dict, tag: str,
               timeout_s: float) -> list[dict] | None:
    """One batch run; raw output kept; a failure becomes a failed row and None."""
    try:
        result = rt.run_batch(artifact, ["-dir", scratch_dir(rt), *words], limits, timeout_s=timeout_s,
                              events=("page-faults",))
    except EdgebenchError as e:
        run.failed(metric="total_time", unit="s", error=str(e), **row)
        return None
    run.save_raw(f"sysbench-{tag}", command=result.command, stdout=result.stdout, stderr=result.stderr,
                 exit_code=result.exit_code, limits_applied=result.limits_applied)
    a = result.limits_applied
    row.update(cpus_applied=a.cpus if a else None, memory_mb_applied=a.memory_mb if a else None,
               cpuset_applied=a.cpuset if a else None,
               limits_note="; ".join(x for x in (row.get("limits_note"),
                                                 verify_limits(limits, a) if limits.any else "") if x))
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


def _setup(tgt, selection, run, cpus, memory):
    cores = tgt.facts()["cores"]
    artifacts = package_all(run, tgt, selection.runtimes, [TOOL], "offline")
    return cores, artifacts


def run_microbenchmarks(target="local", runtimes="auto", protocols="fair,published", cpus=None, memory=None,
                        repetitions: int | None = None, network: bool = True, profile: str = "standard",
                        load_generator="local", run_id: str | None = None, progress: bool = True) -> Path:
    """Table 2 (sysbench CPU and memory) under both protocols, then Docker host vs bridge."""
    check_profile(profile)
    reps = check_repetitions(repetitions if repetitions not in (None, "", 0) else REPETITIONS[profile])
    protocol_names = check_protocols(protocols)
    seconds = SECONDS[profile]
    run_id = run_id or new_run_id()
    params = dict(target=str(target), runtimes=runtimes, protocols=protocol_names, cpus=cpus, memory=memory,
                  repetitions=reps, network=network, profile=profile, seconds=seconds)
    from edgebench.experiments.common import resolve_limits
    with session(target, runtimes, run_id) as (tgt, selection):
        cpus_v, mem_v, clip = resolve_limits(tgt, cpus, memory)
        limit = max_threads(tgt)
        with Run("microbenchmarks", params, tgt.facts(), extra_columns=EXTRA_COLUMNS, run_id=run_id) as run:
            run.note("skipped_runtimes", selection.skipped)
            run.note("max_threads", limit)
            cores, artifacts = _setup(tgt, selection, run, cpus_v, mem_v)
            plan = []
            for proto in protocol_names:
                if proto == "published":
                    for label, total, threads in TABLE2_POINTS:
                        plan.append((proto, "memory", label, threads, total, sb.memory(threads, total)))
                        plan.append((proto, "cpu", label, threads, None, sb.cpu(threads, events=10000)))
                else:
                    for threads in sorted({1, cores}):
                        plan.append((proto, "memory", f"{threads}T, {seconds} s", threads, "100G",
                                     sb.memory(threads, "100G", seconds=seconds, block="1M")))
                        plan.append((proto, "cpu", f"{threads}T, {seconds} s", threads, None,
                                     sb.cpu(threads, seconds=seconds)))
            steps = [(p, rep, i) for p in plan for rep in range(1, reps + 1) for i in range(len(selection.runtimes))]
            for (proto, bench, label, threads, total, words), rep, i in tqdm(steps, desc="microbenchmarks",
                                                                             disable=not progress):
                rt = selection.runtimes[(i + rep) % len(selection.runtimes)]
                limits = fair_limits(cpus_v, mem_v, cores) if proto == "fair" else published_limits(cpus_v, mem_v)
                row = dict(app=TOOL, runtime=rt.name, protocol=proto, rep=rep, cpus=cpus_v, memory_mb=mem_v,
                           benchmark=bench, point=label, threads=threads, total=total, build="", limits_note=clip)
                artifact = artifacts.get((TOOL, rt.name))
                if artifact is None:
                    run.failed(metric="total_time", unit="s", error="packaging failed (see raw/)", **row)
                    continue
                if limit is not None and threads > limit:
                    run.failed(metric="total_time", unit="s", error=f"{threads} threads exceed what "
                               f"{tgt.name} can create ({limit})", **row)
                    continue
                row["build"] = artifact.build
                result = _run_steps(run, rt, artifact, words, limits, row, f"{bench}-{rt.name}-{proto}-{rep}",
                                    timeout_s=600)
                if result:
                    _add_parsed(run, sb.parse(result[0]["stdout"]), row, result[0]["elapsed_ns"] / 1e9)
            if network:
                from edgebench.experiments.network import measure_docker_networking
                measure_docker_networking(run, tgt, selection, reps, seconds, load_generator, progress)
            return run.dir


def run_lxd_appendix(target="local", runtimes="auto", cpus=None, memory=None, repetitions: int | None = None,
                     file_counts=None, thread_counts=None, profile: str = "standard", run_id: str | None = None,
                     progress: bool = True) -> Path:
    """Fig. 2 of the appendix, host vs LXD (and Docker): (a) creating N 1 MB files, (b) file I/O
    as N grows, (c) memory and (d) CPU over thread counts, alternating runtimes."""
    check_profile(profile)
    cfg = APPENDIX[profile]
    reps = check_repetitions(repetitions if repetitions not in (None, "", 0) else REPETITIONS[profile])
    files = [int(x) for x in as_list(file_counts, [])] if file_counts else cfg["files"]
    threads_list = [int(x) for x in as_list(thread_counts, [])] if thread_counts else cfg["threads"]
    if not files or min(files) < 1 or not threads_list or min(threads_list) < 1:
        raise ConfigError("file_counts and thread_counts must be positive whole numbers")
    seconds = cfg["seconds"]
    run_id = run_id or new_run_id()
    params = dict(target=str(target), runtimes=runtimes, cpus=cpus, memory=memory, repetitions=reps,
                  file_counts=files, thread_counts=threads_list, profile=profile, seconds=seconds)
    from edgebench.experiments.common import resolve_limits
    with session(target, runtimes, run_id) as (tgt, selection):
        cpus_v, mem_v, clip = resolve_limits(tgt, cpus, memory)
        limit = max_threads(tgt)
        with Run("lxd_appendix", params, tgt.facts(), extra_columns=EXTRA_COLUMNS, run_id=run_id) as run:
            run.note("skipped_runtimes", selection.skipped)
            run.note("max_threads", limit)
            cores, artifacts = _setup(tgt, selection, run, cpus_v, mem_v)
            plan = [("fileio", n, None, sb.fileio(n, 1, seconds)) for n in files]
            plan += [("memory", None, t, sb.memory(t, "100G", seconds=seconds, block="1M")) for t in threads_list]
            plan += [("cpu", None, t, sb.cpu(t, events=cfg["cpu_events"])) for t in threads_list]
            steps = [(p, rep, i) for p in plan for rep in range(1, reps + 1) for i in range(len(selection.runtimes))]
            for (bench, n, t, words), rep, i in tqdm(steps, desc="lxd_appendix", disable=not progress):
                rt = selection.runtimes[(i + rep) % len(selection.runtimes)]
                limits = fair_limits(cpus_v, mem_v, cores)
                row = dict(app=TOOL, runtime=rt.name, protocol="fair", rep=rep, cpus=cpus_v, memory_mb=mem_v,
                           benchmark=bench, files=n, threads=t, point=f"{n} files" if n else f"{t} threads",
                           build="", limits_note=clip)
                artifact = artifacts.get((TOOL, rt.name))
                if artifact is None:
                    run.failed(metric="total_time", unit="s", error="packaging failed (see raw/)", **row)
                    continue
                if t is not None and limit is not None and t > limit:
                    run.failed(metric="total_time", unit="s",
                               error=f"{t} threads exceed what {tgt.name} can create ({limit})", **row)
                    continue
                row["build"] = artifact.build
                result = _run_steps(run, rt, artifact, words, limits, row, f"{bench}-{n or t}-{rt.name}-{rep}",
                                    timeout_s=900)
                if not result:
                    continue
                if bench == "fileio":
                    prepare, main = result[0], result[1]
                    run.add(metric="file_creation_time", value=prepare["elapsed_ns"] / 1e9, unit="s",
                            note=f"sysbench fileio prepare: {n} files of 1 MiB", **row)
                    run.add(metric="file_creation_latency", value=prepare["elapsed_ns"] / 1e6 / n, unit="ms",
                            note="per 1 MiB file", **row)
                    _add_parsed(run, sb.parse(main["stdout"]), row)
                else:
                    _add_parsed(run, sb.parse(result[0]["stdout"]), row, result[0]["elapsed_ns"] / 1e9)
            return run.dir


def collect_microbenchmarks(run_id: str = "", **params) -> Path:
    return _collect("microbenchmarks", run_microbenchmarks, run_id, **params)


def collect_lxd_appendix(run_id: str = "", **params) -> Path:
    return _collect("lxd_appendix", run_lxd_appendix, run_id, **params)
