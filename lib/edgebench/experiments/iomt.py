"""IoMT batch workloads (paper 001/004, Tables 4-5, Fig. 1): LZW compression, AES encryption and
k-means clustering over input sizes, run to completion in every runtime.

Each run is one `apps/iomt` process. Rows per run (long format, one metric each):
- `end_to_end_latency`: launch to exit, timed on the target by the probe (-batch);
- `program_time`, `work_time`: the program's own clock (all phases; the work alone), and
  `startup_overhead` = end-to-end minus the program's own time (runtime start and teardown);
- `faults_inprocess` (+ `_major`): the workload's own getrusage (for a container this includes
  runc's init, which exec'd into it), and `faults_program`: since the program's main() started;
- `faults_cgroup` (+ `_major`): memory.stat pgfault of the run's cgroup (v1 total_*, v2);
- `perf_*`: perf stat counters; under `fair` of the run's cgroup (the workload itself), under
  `published` of the launch command as the paper ran it (`perf stat -- docker run`: the client);
  a counter the machine cannot count is a row with no value and the reason in `note`;
- `launcher_faults`: faults of the process the probe waited for (the workload natively, the
  docker client for Docker), which is what the paper's Table 5 shows for Docker;
- `throughput`: MB/s or points/s of the work phase, `max_rss`.
Outputs carry a checksum; runs of the same (workload, size, seed, entropy) must agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from edgebench import plan
from edgebench.counters import COLUMNS as PERF_COLUMNS
from edgebench.counters import EVENTS
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import (as_list, check_profile, check_protocols, check_repetitions, open_run,
                                          resolve_limits, runtime_options, session)
from edgebench.experiments.common import collect as _collect
from edgebench.experiments.protocols import batch_failure, fair_limits, package_all, published_limits, with_applied
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.results import Run, new_run_id
from edgebench.runtimes import Limits

APP = "iomt"
WORKLOADS = ("lzw", "aes", "kmeans")
LABELS = {"lzw": "LZW Compression", "aes": "AES Encryption", "kmeans": "kMeans Clustering"}
# Table 4's sizes (bytes for LZW/AES, points for k-means); quick keeps the small end.
SIZES = {
    "standard": {"lzw": "10KB,100KB,1MB,10MB,100MB", "aes": "100KB,1MB,10MB,100MB",
                 "kmeans": "1K,10K,100K,1M"},
    "quick": {"lzw": "10KB,1MB", "aes": "100KB,1MB", "kmeans": "1K,10K"},
}
# Table 5 counts faults for LZW and AES from 100 KB up.
PAGE_FAULT_SIZES = {
    "standard": {"lzw": "100KB,1MB,10MB,100MB", "aes": "100KB,1MB,10MB,100MB"},
    "quick": {"lzw": "100KB,4MB", "aes": "100KB,4MB"},
}
REPETITIONS = {"standard": 5, "quick": 2}
ENTROPIES = ("random", "sensor")
EXTRA_COLUMNS = ["workload", "input_size", "input_bytes", "points", "entropy", "seed", "checksum",
                 "input_checksum", "build", "accelerator", "perf_scope", "counting_cgroup", "cpus_applied",
                 "memory_mb_applied", "cpuset_applied", "limits_note", "note"]
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(|K|KB|M|MB|G|GB)\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 10**3, "KB": 10**3, "M": 10**6, "MB": 10**6, "G": 10**9, "GB": 10**9}


def parse_size(label: str) -> int:
    """'10KB' -> 10000 bytes, '1K' -> 1000 points: decimal, as the paper's labels read."""
    m = _SIZE_RE.match(str(label))
    if not m:
        raise ConfigError(f"input size {label!r} not understood; write e.g. 10KB, 100MB (bytes, decimal) "
                          "or 1K, 1M (k-means points)")
    n = int(float(m.group(1)) * _SCALE[m.group(2).upper()])
    if n < 1:
        raise ConfigError(f"input size {label!r} must be at least 1")
    return n


def check_sizes(workloads: list[str], sizes, profile: str, table=SIZES) -> dict[str, list[str]]:
    """sizes: None/'' (the profile's), a dict {workload: 'a,b'}, or 'a,b' for every workload."""
    chosen = {}
    for w in workloads:
        if not sizes:
            value = table[profile].get(w, SIZES[profile][w])
        elif isinstance(sizes, dict):
            value = sizes.get(w, table[profile].get(w, SIZES[profile][w]))
        else:
            value = sizes
        labels = as_list(value, [])
        if not labels:
            raise ConfigError(f"no input sizes for {w}")
        for label in labels:
            parse_size(label)
        chosen[w] = labels
    return chosen


def workload_args(workload: str, label: str, seed: int, entropy: str, k: int, dims: int,
                  iterations: int) -> list[str]:
    args = ["-workload", workload, "-seed", str(seed), "-entropy", entropy]
    if workload == "kmeans":
        return args + ["-points", str(parse_size(label)), "-k", str(k), "-dims", str(dims),
                       "-iterations", str(iterations)]
    return args + ["-size", str(parse_size(label))]


def parse_record(stdout: str) -> dict:
    """The program's one JSON line (the last line that parses)."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise EdgebenchError(f"the iomt program printed no JSON record: {stdout[-300:]!r}")


def run_iomt(experiment: str = "iomt", target="local", runtimes="auto", workloads="all", sizes=None,
             entropy: str = "random", seed: int = 1, k: int = 8, dims: int = 2, iterations: int = 20,
             protocols="fair,published", cpus=None, memory=None, repetitions: int | None = None,
             docker_build: str = "offline", timeout_s: float = 3600, profile: str = "standard",
             run_id: str | None = None, progress: bool = True, require_kvm=False,
             nanos_accel: str | None = None) -> Path:
    """Measure, write data/<experiment>/<run_id>/, return that directory."""
    check_profile(profile)
    names = as_list(workloads, WORKLOADS)
    for w in names:
        if w not in WORKLOADS:
            raise ConfigError(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")
    if entropy not in ENTROPIES:
        raise ConfigError(f"entropy {entropy!r} unknown; use 'random' (the paper's /dev/urandom input) "
                          "or 'sensor' (a compressible sensor series)")
    table = PAGE_FAULT_SIZES if experiment == "page_faults" else SIZES
    size_plan = check_sizes(names, sizes, profile, table)
    reps = check_repetitions(repetitions if repetitions not in (None, "", 0) else REPETITIONS[profile])
    protocol_names = check_protocols(protocols)
    for name, v in (("k", k), ("dims", dims), ("iterations", iterations), ("seed", seed)):
        if int(v) < (0 if name == "seed" else 1):
            raise ConfigError(f"{name}={v!r} is too small")
    run_id = run_id or new_run_id()
    params = dict(experiment=experiment, target=str(target), runtimes=runtimes, workloads=names,
                  sizes=size_plan, entropy=entropy, seed=int(seed), k=int(k), dims=int(dims),
                  iterations=int(iterations), protocols=protocol_names, cpus=cpus, memory=memory,
                  repetitions=reps, docker_build=docker_build, profile=profile)
    with session(target, runtimes, run_id, [APP], runtime_options(require_kvm, nanos_accel)) as (tgt, selection):
        cpus_v, mem_v, clip = resolve_limits(tgt, cpus, memory)
        cores = tgt.facts()["cores"]
        for rt in selection.runtimes:
            rt.check_limits(APP, Limits(cpus=cpus_v, memory_mb=mem_v))
        with open_run(experiment, params, tgt, extra_columns=EXTRA_COLUMNS, run_id=run_id) as run:
            run.note("skipped_runtimes", selection.skipped)
            artifacts = package_all(run, tgt, selection.runtimes, [APP], docker_build)

            def limits_for(protocol: str) -> Limits:
                return fair_limits(cpus_v, mem_v, cores) if protocol == "fair" else published_limits(cpus_v, mem_v)

            def row_for(p: Point) -> dict:
                w, label = p.outer
                artifact = artifacts.get((APP, p.runtime.name))
                size = parse_size(label)
                return dict(app=APP, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, cpus=cpus_v,
                            memory_mb=mem_v, workload=w, input_size=label, entropy=entropy, seed=int(seed),
                            input_bytes=None if w == "kmeans" else size, points=size if w == "kmeans" else None,
                            build=artifact.build if artifact else "", limits_note=clip)

            def measure(p: Point, row: dict) -> None:
                w, label = p.outer
                artifact = artifact_for(artifacts, APP, p.runtime)
                args = workload_args(w, label, int(seed), entropy, int(k), int(dims), int(iterations))
                limits = limits_for(p.protocol)
                result = p.runtime.run_batch(artifact, args, limits, timeout_s=timeout_s, protocol=p.protocol)
                record_batch(run, result, limits, row, f"{w}-{label}-{p.runtime.name}-{p.protocol}-rep{p.rep}")

            sweep(run, selection.runtimes, reps=reps, outer=[(w, label) for w in names for label in size_plan[w]],
                  protocols=protocol_names, row_for=row_for, measure=measure,
                  failed=("end_to_end_latency", "s"), desc=experiment, progress=progress)
            return run.dir


def record_batch(run: Run, result, limits: Limits, row: dict, tag: str) -> None:
    """Raw output first, then one row per metric; a failed run gives one failed row."""
    run.save_raw(f"batch-{tag}", command=result.command, stdout=result.stdout, stderr=result.stderr,
                 exit_code=result.exit_code, probe=result.raw.get("probe"), perf=result.raw.get("perf"),
                 limits_applied=result.limits_applied, details=result.details)
    row = with_applied(dict(row, perf_scope=result.perf_scope, accelerator=result.accelerator,
                            counting_cgroup=result.cgroup_faults.source if result.cgroup_faults else ""),
                       limits, result.limits_applied)
    if not result.ok:
        run.failed(metric="end_to_end_latency", unit="s", error=batch_failure(result), **row)
        return
    try:
        rec = parse_record(result.stdout)
    except EdgebenchError as e:
        run.failed(metric="end_to_end_latency", unit="s", error=str(e), **row)
        return
    row = dict(row, checksum=rec.get("checksum"), input_checksum=rec.get("input_checksum"),
               input_bytes=rec.get("input_bytes") or row["input_bytes"])
    ns = 1e-9
    program = rec.get("total_ns")
    work = (rec.get("phases_ns") or {}).get("work")
    ru = rec.get("rusage") or {}
    add = lambda metric, value, unit, note="": run.add(metric=metric, value=value, unit=unit, note=note, **row)
    add("end_to_end_latency", result.wall_s, "s")
    add("program_time", program * ns if program is not None else None, "s")
    add("work_time", work * ns if work is not None else None, "s")
    add("startup_overhead", result.wall_s - program * ns if program is not None and result.wall_s else None, "s",
        "end-to-end minus the program's own time: runtime start-up and teardown")
    if row["workload"] == "kmeans":
        add("throughput", rec.get("work_points_per_s"), "points/s")
    else:
        add("throughput", rec.get("work_throughput_mb_s"), "MB/s")
    # A kernel whose getrusage leaves these at 0 (Nanos) has not counted them: missing, not zero.
    no_counts = (result.outcome.rusage_counts_missing
                 if not ru.get("minflt") and not ru.get("maxrss_kb") else None)
    if no_counts:
        ru = {k: v for k, v in ru.items() if k not in ("minflt", "majflt", "maxrss_kb")}
        start = {}
    add("max_rss", ru.get("maxrss_kb"), "KiB", no_counts or "")
    add("faults_inprocess", _sum(ru.get("minflt"), ru.get("majflt")), "count",
        no_counts or "getrusage(RUSAGE_SELF) in the program")
    add("faults_inprocess_major", ru.get("majflt"), "count", no_counts or "")
    # getrusage carries over execve: in a container it includes runc's init before it exec'd
    # the program. Since main() started is the program alone.
    start = {} if no_counts else rec.get("rusage_start") or {}
    add("faults_program", _sum(ru.get("minflt"), ru.get("majflt"), *(-(start.get(k) or 0) for k in ("minflt", "majflt")))
        if start else None, "count", no_counts or "getrusage at exit minus at the start of main()")
    cg = result.cgroup_faults
    scope = result.outcome.faults_scope
    add("faults_cgroup", cg.pgfault if cg else None, "count",
        "; ".join(x for x in (scope, cg.note if cg and cg.note else "memory.stat pgfault") if x))
    add("faults_cgroup_major", cg.pgmajfault if cg else None, "count", cg.note if cg else "")
    lr = result.launcher_rusage or {}
    add("launcher_faults", _sum(lr.get("minflt"), lr.get("majflt")), "count",
        "rusage of the process the probe waited for (the docker CLI for docker)")
    for event in EVENTS:
        count = result.perf.get(event)
        add(PERF_COLUMNS[event], count.value if count else None, "count", count.note if count else "not asked")


def _sum(*values):
    return None if any(v is None for v in values) else sum(values)


def collect(run_id: str = "", experiment: str = "iomt", **params) -> Path:
    """Replot run_id ('latest' or an id) if given, else measure now."""
    return _collect(experiment, lambda **p: run_iomt(experiment, **p), run_id, **params)


# Rough work rates of the IoMT program on the reference machine, for the run plan only.
PLAN_BYTES_PER_S = {"lzw": 15e6, "aes": 60e6}
PLAN_KMEANS_OPS_PER_S = 5e7


def plan_iomt(params: dict, runtimes: list[str]):
    """One batch run per (workload size, runtime, protocol, repetition), each a fresh instance."""
    profile = params.get("profile", "standard")
    experiment = params.get("experiment", "iomt")
    workloads = plan.names(params.get("workloads", "all"), WORKLOADS)
    sizes = check_sizes(workloads, params.get("sizes"), profile,
                        PAGE_FAULT_SIZES if experiment == "page_faults" else SIZES)
    protocols = plan.names(params.get("protocols", "fair,published"), ["fair", "published"])
    reps = plan.reps_or(params.get("repetitions"), REPETITIONS[profile])
    work_s = 0.0
    for w, labels in sizes.items():
        for label in labels:
            n = parse_size(label)
            if w == "kmeans":
                work_s += n * int(params.get("iterations", 20)) * int(params.get("k", 8)) / PLAN_KMEANS_OPS_PER_S
            else:
                work_s += n / PLAN_BYTES_PER_S[w]
    cells = sum(len(v) for v in sizes.values())
    runs = cells * len(protocols) * reps
    return plan.Work(points=runs * len(runtimes),
                     seconds=plan.model_seconds(runtimes, 1, runs, work_s * len(protocols) * reps), apps=[APP],
                     levels=f"{cells} workload sizes, protocols {','.join(protocols)}", repetitions=reps)
