"""IoMT batch workloads (paper 001/004, Table 4, Fig. 1): LZW compression, AES encryption and
k-means clustering over input sizes, run to completion in every runtime. page_faults measures
Table 5 with this code (edgebench.experiments.page_faults holds its sizes).

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
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import as_list, check_protocols, check_repetitions, opening
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.packaging import batch_failure
from edgebench.experiments.protocols import with_applied
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.results import Run
from edgebench.runtimes import Limits
from edgebench.tools.counters import COLUMNS as PERF_COLUMNS
from edgebench.tools.counters import EVENTS

APP = "iomt"
WORKLOADS = ("lzw", "aes", "kmeans")
LABELS = {"lzw": "LZW Compression", "aes": "AES Encryption", "kmeans": "kMeans Clustering"}
# Table 4's sizes (bytes for LZW/AES, points for k-means); quick keeps the small end.
SIZES = {
    "standard": {"lzw": "10KB,100KB,1MB,10MB,100MB", "aes": "100KB,1MB,10MB,100MB",
                 "kmeans": "1K,10K,100K,1M"},
    "quick": {"lzw": "10KB,1MB", "aes": "100KB,1MB", "kmeans": "1K,10K"},
    "smoke": {"lzw": "10KB", "aes": "100KB", "kmeans": "1K"},
}
REPETITIONS = {"standard": 5, "quick": 2, "smoke": 1}
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
    return batch_args(workload, parse_size(label), seed, entropy, k, dims, iterations)


def batch_args(workload: str, count: int, seed: int, entropy: str, k: int, dims: int, iterations: int) -> list[str]:
    """The program's arguments for `count` bytes (LZW, AES) or points (k-means)."""
    args = ["-workload", workload, "-seed", str(seed), "-entropy", entropy]
    if workload == "kmeans":
        return args + ["-points", str(count), "-k", str(k), "-dims", str(dims), "-iterations", str(iterations)]
    return args + ["-size", str(count)]


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


@dataclass(frozen=True)
class IomtBatch(Limited):
    """What notebooks 05 (iomt: latency, Table 4) and 06 (page_faults: Table 5) share: one record,
    two tables of input sizes (edgebench.experiments.page_faults holds the second)."""
    SIZE_TABLE: ClassVar[dict] = SIZES  # the profile's sizes when `sizes` is ""
    SMOKE: ClassVar[dict] = {**Limited.SMOKE, "workloads": "lzw"}  # one workload, one size

    workloads: str = "all"
    repetitions: int = 0            # 0 takes the profile's
    protocols: str = "fair,published"
    sizes: str = ""                 # "" takes the profile's; else one list for every workload
    entropy: str = "random"
    seed: int = 1
    cpus: str = ""                  # "" for no limit
    memory: str = ""                # "" for no limit; with a unit
    docker_build: str = "offline"
    require_kvm: bool = False
    k: int = library(8)
    dims: int = library(2)
    iterations: int = library(20)
    timeout_s: float = library(3600)
    progress: bool = library(True)
    nanos_accel: str | None = library()
    # parsed when made
    workload_names: list[str] = parsed()
    size_plan: dict[str, list[str]] = parsed()      # {workload: [size label, ...]}
    inputs: list[tuple[str, str, int]] = parsed()   # (workload, size label, bytes or points), in order
    reps: int = parsed()
    protocol_names: list[str] = parsed()

    def check(self):
        names = as_list(self.workloads, WORKLOADS)
        for w in names:
            if w not in WORKLOADS:
                raise ConfigError(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")
        if self.entropy not in ENTROPIES:
            raise ConfigError(f"entropy {self.entropy!r} unknown; use 'random' (the paper's /dev/urandom input) "
                              "or 'sensor' (a compressible sensor series)")
        size_plan = check_sizes(names, self.sizes, self.profile, self.SIZE_TABLE)
        reps = check_repetitions(self.repetitions or REPETITIONS[self.profile])
        protocol_names = check_protocols(self.protocols)
        for name, v in (("k", self.k), ("dims", self.dims), ("iterations", self.iterations), ("seed", self.seed)):
            if v < (0 if name == "seed" else 1):
                raise ConfigError(f"{name}={v!r} is too small")
        self.limits()  # parsed once; refused here, before connecting
        inputs = [(w, label, parse_size(label)) for w in names for label in size_plan[w]]
        self.set(workload_names=names, size_plan=size_plan, inputs=inputs, reps=reps, protocol_names=protocol_names)


@dataclass(frozen=True)
class Params(IomtBatch):
    """The parameters of notebook 05 (Table 4's latency); page_faults' record is its sibling."""
    EXPERIMENT: ClassVar[str] = "iomt"


def run(params: IomtBatch) -> Path:
    """Measure, write data/<iomt|page_faults>/<run_id>/, return that directory."""
    entropy, seed = params.entropy, params.seed
    with opening(params, [APP], EXTRA_COLUMNS) as o:
        run, artifacts = o.run, o.package([APP], params.docker_build)

        def row_for(p: Point) -> dict:
            w, label, size = p.outer
            return dict(app=APP, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, cpus=o.cpus,
                        memory_mb=o.memory_mb, workload=w, input_size=label, entropy=entropy, seed=seed,
                        input_bytes=None if w == "kmeans" else size, points=size if w == "kmeans" else None,
                        build=o.build_of(APP, p.runtime), limits_note=o.clip)

        def measure(p: Point, row: dict) -> None:
            w, label, size = p.outer
            artifact = artifact_for(artifacts, APP, p.runtime)
            args = batch_args(w, size, seed, entropy, params.k, params.dims, params.iterations)
            limits = o.limits(p.protocol)
            result = p.runtime.run_batch(artifact, args, limits, timeout_s=params.timeout_s, protocol=p.protocol)
            record_batch(run, result, limits, row, f"{w}-{label}-{p.runtime.name}-{p.protocol}-rep{p.rep}")

        sweep(run, o.runtimes, reps=params.reps, outer=params.inputs, protocols=params.protocol_names,
              row_for=row_for, measure=measure, failed=("end_to_end_latency", "s"), desc=params.EXPERIMENT,
              progress=params.progress)
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

    def add(metric, value, unit, note=""):
        if value is None:  # not counted here (no hardware counter, no memory.stat, ...): said, not ok
            run.not_measurable(metric=metric, unit=unit, why=note or f"the run reported no {metric}", note=note, **row)
        else:
            run.add(metric=metric, value=value, unit=unit, note=note, **row)
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
    since_main = _sum(ru.get("minflt"), ru.get("majflt"), *(-(start.get(k) or 0) for k in ("minflt", "majflt")))
    add("faults_program", since_main if start else None, "count",
        no_counts or "getrusage at exit minus at the start of main()")
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


# Rough work rates of the IoMT program on the reference machine, for the run plan only.
PLAN_BYTES_PER_S = {"lzw": 15e6, "aes": 60e6}
PLAN_KMEANS_OPS_PER_S = 5e7


def plan(params: IomtBatch, runtimes: list[str]) -> estimate.Work:
    """One batch run per (workload size, runtime, protocol, repetition), each a fresh instance."""
    protocols, reps = params.protocol_names, params.reps
    work_s = 0.0
    for w, _, n in params.inputs:
        if w == "kmeans":
            work_s += n * params.iterations * params.k / PLAN_KMEANS_OPS_PER_S
        else:
            work_s += n / PLAN_BYTES_PER_S[w]
    cells = len(params.inputs)
    runs = cells * len(protocols) * reps
    return estimate.Work(points=runs * estimate.pairs(runtimes, [APP]),
                         seconds=estimate.model_seconds(runtimes, 1, runs, work_s * len(protocols) * reps, [APP]),
                         apps=[APP], levels=f"{cells} workload sizes, protocols {','.join(protocols)}",
                         repetitions=reps)
