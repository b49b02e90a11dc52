"""The four benchmark families of the container-overhead experiment (paper 003), each measured
in every runtime that runs Linux tool binaries (the network part wherever the app runs):
disk (fio, or IOZone as published), memory bandwidth (apps/stream, with an independent native
cross-check), HPC kernels (NPB) and HTTP (ab, with wrk beside it under the fair protocol).
`container_overhead` checks the parameters and opens the run; `Bench` carries what the parts
share once the target is reached, each run's energy and EDP included.
"""

from __future__ import annotations

import itertools
import statistics
from contextlib import nullcontext
from dataclasses import dataclass, replace

from edgebench.apps import APPS, App
from edgebench.errors import EdgebenchError
from edgebench.experiments.http_load import AfterLoad, after_load, load_generator_for, loadgen_cpuset
from edgebench.experiments.packaging import package_all
from edgebench.experiments.protocols import limits_for, with_instance, with_limits_note
from edgebench.experiments.steps import run_steps
from edgebench.experiments.sweep import Point, artifact_for, modes_of, sweep
from edgebench.paths import TOOLS_DIR
from edgebench.results import Run
from edgebench.runtimes import Limits, StartFailed
from edgebench.targets import sh
from edgebench.tools import energy, fio, iozone, npb, sanity, stream, sysbench
from edgebench.tools.load import Ab, LoadSettings

PAPER_THREADS = 4          # the Raspberry Pi 2's four cores, as the paper ran STREAM, NPB and IOZone
PORT_BASE = 18300
READY_TIMEOUT_S = 60
CROSSCHECK_MIN_S = 6       # stress-ng's stream stressor reports no rate from shorter runs


@dataclass(frozen=True)
class Settings:
    """What one profile runs (container_overhead.PROFILE_SETTINGS); the notebook's parameters
    override parts of it."""
    repetitions: int
    file_mb: int                       # disk: each thread's file
    record_kib: int
    stream_mib: tuple[float, ...]      # memory: per array, as STREAM's "Memory per array"
    stream_ntimes: int
    npb_classes: tuple[str, ...]
    npb_benchmarks: tuple[str, ...]
    ab_requests: int                   # published: ab -n
    seconds: int                       # fair: ab -t and wrk -d
    connections: int
    idle_s: float                      # the power meter's idle baseline
    # fair: every disk operation lasts `seconds` or more (the files grown by fair_file_mb, re-write
    # and re-read going round them); not when the user chose file_mb, kept then as asked, nor in smoke.
    size_files_for_window: bool = True


# A published IOZone run: the target's own iozone, else the one provisioning fetched (edgebench.tools.iozone).
IOZONE = App("iozone", "tool", TOOLS_DIR / "steps", "iozone", kind="tool", readiness=None,
             package="iozone3 (Debian non-free; Raspberry Pi OS enables it)", locate=iozone.binary)


def npb_app(bench: str, cls: str, path: str) -> App:
    """One NPB binary as a tool (NPB compiles the class into the binary)."""
    return App(f"npb-{bench}-{cls.lower()}", "tool", TOOLS_DIR / "steps", npb.binary_name(bench, cls), kind="tool",
               readiness=None, package=f"NPB {npb.VERSION}", locate=lambda target, p=path: p)


def omp_env(threads: int, bind: bool) -> list[str]:
    """tools/steps flags that give every step the OpenMP settings (the same in every runtime)."""
    env = [f"OMP_NUM_THREADS={threads}", *(["OMP_PROC_BIND=close", "OMP_PLACES=cores"] if bind else [])]
    return [w for kv in env for w in ("-env", kv)]


@dataclass
class Bench:
    """What every part shares once the target is reached."""
    run: Run
    target: object
    runtimes: list          # those that run tools (Linux binaries)
    all_runtimes: list
    settings: Settings
    protocols: list[str]
    reps: int
    cores: int
    cpus: float | None
    memory_mb: float | None
    clip: str
    meter: object | None
    meter_reason: str
    idle_w: float | None
    progress: bool

    def limits(self, protocol: str) -> Limits:
        return limits_for(protocol, self.cpus, self.memory_mb, self.cores)

    def threads(self, protocol: str) -> int:
        return self.cores if protocol == "fair" else PAPER_THREADS

    def base_row(self, p: Point, benchmark: str, **extra) -> dict:
        return dict(runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, cpus=self.cpus,
                    memory_mb=self.memory_mb, benchmark=benchmark, limits_note=self.clip,
                    energy_meter=self.meter.describe() if self.meter else None, **extra)

    def metered(self):
        """A power measurement around one run, or nothing where there is no meter."""
        return self.meter.measure() if self.meter else nullcontext()

    def add_energy(self, measurement, row: dict) -> None:
        """Energy and EDP of one run; missing with the reason where there is no meter or the
        meter failed (never zero)."""
        row = dict(row, operation=row.get("operation") or "all")
        if measurement is None:
            for r in energy.missing_rows(self.meter_reason):  # no meter here: nothing went wrong
                self.run.not_measurable(metric=r["metric"], unit=r["unit"], why=r["error"], **row)
            return
        for r in energy.measurement_rows(measurement, self.idle_w):
            if r.get("value") is None:
                self.run.failed(metric=r["metric"], unit=r["unit"], error=r.get("error") or "not measured", **row)
            else:
                self.run.add(metric=r["metric"], value=r["value"], unit=r["unit"],
                             **dict(row, note="; ".join(x for x in (row.get("note"), r.get("note")) if x)))

    def batch(self, p: Point, artifact, words: list[str], row: dict, tag: str, timeout_s: float = 1800,
              energy: bool = True):
        """One run through tools/steps (edgebench.experiments.steps), metered (its energy rows
        added unless energy=False). Returns (steps, row); raises EdgebenchError when a step failed."""
        with self.metered() as m:
            steps, row = run_steps(self.run, p.runtime, artifact, words, self.limits(p.protocol), row, tag, timeout_s)
        if energy:
            self.add_energy(m, row)
        return steps, row


# -- disk --------------------------------------------------------------------------------

def fair_file_mb(b: Bench, artifacts: dict) -> int:
    """Each thread's file size under fair, the same for every runtime: the profile's, grown until
    the first write and the cold read last the profile's window on the first runtime (native where
    it runs, the fastest), as the HTTP loads' windows do. A calibration run far shorter than the
    window is mostly fio's start, and one busy moment skews it: a second one, sized from it for
    about half the window, gives the rate. Each calibration run is kept in raw/."""
    s = b.settings
    rt = next((r for r in b.runtimes if r.name == "native"), b.runtimes[0])
    file_mb, said = s.file_mb, []
    for attempt in (1, 2):
        words = fio.steps_words(rt.scratch_dir(), file_mb, s.record_kib, PAPER_THREADS)
        try:
            steps, _ = b.batch(Point(rt, 0, "fair", None, None), artifact_for(artifacts, "fio", rt), words, {},
                               f"disk-fio-calibration-{rt.name}{'' if attempt == 1 else '-2'}", energy=False)
            shortest = min(fio.parse_fio(step["stdout"])["runtime_s"]
                           for (op, _), step in zip(fio.operations("", 1, 1, 1), steps) if op in fio.ONE_PASS)
        except EdgebenchError as e:  # the sweep's own run of it will fail and say why, row by row
            b.run.note("disk_window", f"fio's calibration on {rt.name} failed ({e}); files of {s.file_mb} MB as asked")
            return s.file_mb
        said.append(f"{file_mb} MB took {shortest:.3g} s")
        if shortest >= s.seconds / 4 or file_mb >= fio.MAX_FILE_MB:
            break
        file_mb = fio.file_mb_for(s.seconds / 2 / fio.GROWTH_MARGIN, file_mb, shortest)
    sized = fio.file_mb_for(s.seconds, file_mb, shortest)
    b.run.note("disk_window", f"fio under fair: files of {sized} MB per thread (on {rt.name}, the shortest one-pass "
               f"operation at {' then at '.join(said)}; each should last {s.seconds} s or more"
               f"{'; capped at ' + str(fio.MAX_FILE_MB) + ' MB' if sized == fio.MAX_FILE_MB else ''})"
               f"; re-write and re-read go round them for {s.seconds} s")
    return sized


def measure_disk(b: Bench, artifacts: dict) -> None:
    s = b.settings
    storage = {rt.name: rt.scratch_storage() for rt in b.runtimes}
    fair_mb = fair_file_mb(b, artifacts) if "fair" in b.protocols and s.size_files_for_window else s.file_mb
    window = s.seconds if s.size_files_for_window else 0

    def row_for(p: Point) -> dict:
        tool = "fio" if p.protocol == "fair" else "iozone"
        mb = fair_mb if p.protocol == "fair" else s.file_mb
        return b.base_row(p, "disk", app=tool, tool=tool, point=f"{mb} MB x {PAPER_THREADS} threads, "
                          f"{s.record_kib} KiB records", threads=PAPER_THREADS, storage=storage[p.runtime.name])

    def measure(p: Point, row: dict) -> None:
        rt = p.runtime
        directory = rt.scratch_dir()
        if p.protocol == "fair":
            artifact = artifact_for(artifacts, "fio", rt)
            ops = fio.operations(directory, fair_mb, s.record_kib, PAPER_THREADS, window)
            words = fio.steps_words(directory, fair_mb, s.record_kib, PAPER_THREADS, window)
        else:
            artifact = artifact_for(artifacts, IOZONE.name, rt)
            ops = None
            words = fio.iozone_command(directory, s.file_mb, s.record_kib, PAPER_THREADS, include_flush=False)
        steps, row = b.batch(p, artifact, words, row, f"disk-{row['tool']}-{rt.name}-{p.rep}")
        if ops is None:
            parsed = fio.parse_iozone(steps[0]["stdout"])
            for op, values in parsed.items():
                b.run.add(metric="throughput", value=values["children_kib_s"] / 1024, unit="MiB/s",
                          **dict(row, operation=op, note="IOZone 'Children see throughput'"))
            return
        for (op, _argv), step in zip(ops, steps):
            parsed = fio.parse_fio(step["stdout"])
            at = dict(row, operation=op, file_mb=fair_mb, window_s=parsed["runtime_s"])
            b.run.add(metric="throughput", value=parsed["bw_mib_s"], unit="MiB/s", **at)
            b.run.add(metric="iops", value=parsed["iops"], unit="1/s", **at)
            b.run.add(metric="step_time", value=step["elapsed_ns"] / 1e9, unit="s",
                      **dict(at, note="the fio step as tools/steps timed it"))

    sweep(b.run, b.runtimes, reps=b.reps, protocols=b.protocols, row_for=row_for, measure=measure,
          failed=("throughput", "MiB/s"), desc="disk", progress=b.progress)


# -- memory (STREAM) ---------------------------------------------------------------------

def measure_memory(b: Bench, artifacts: dict, crosscheck: bool) -> None:
    s = b.settings
    native_rates: dict[str, list[float]] = {}  # the cross-check's other side

    llc_kib = b.target.facts().get("llc_kib")
    unmet = {mib: sanity.below_stream_rule(mib, llc_kib) for mib in s.stream_mib}
    if any(unmet.values()):
        b.run.note("stream_rule", next(w for w in unmet.values() if w))

    def row_for(p: Point) -> dict:
        return b.base_row(p, "memory", app="stream", tool="stream (apps/stream)", array_mib=p.outer,
                          point=f"{p.outer:g} MiB per array", threads=b.threads(p.protocol),
                          note=unmet[p.outer] or None)

    def measure(p: Point, row: dict) -> None:
        rt = p.runtime
        threads = b.threads(p.protocol)
        words = [*omp_env(threads, bind=p.protocol == "fair"),
                 *stream.command(stream.elements_for_mib(p.outer), s.stream_ntimes)]
        steps, row = b.batch(p, artifact_for(artifacts, "stream", rt), words, row,
                             f"stream-{p.outer:g}-{rt.name}-{p.protocol}-{p.rep}")
        parsed = stream.parse(steps[0]["stdout"])
        if not parsed.get("validates"):
            raise EdgebenchError(f"STREAM's results do not validate: {parsed.get('validation')}")
        if parsed.get("threads_counted") != threads:  # OMP_NUM_THREADS did not reach the program
            raise EdgebenchError(f"STREAM ran {parsed.get('threads_counted')} threads, not the {threads} asked")
        for kernel in stream.KERNELS:
            k = parsed["kernels"][kernel]
            at = dict(row, operation=kernel)
            b.run.add(metric="best_rate", value=k["best_rate_mb_s"], unit="MB/s", **at)
            if rt.name == "native" and p.protocol == "fair" and p.outer == max(s.stream_mib):
                native_rates.setdefault(kernel, []).append(k["best_rate_mb_s"])
            # The average over NTIMES (STREAM reports the best): the fair comparison's spread.
            avg_rate = k["best_rate_mb_s"] * k["min_time_s"] / k["avg_time_s"] if k["avg_time_s"] else None
            b.run.add(metric="avg_rate", value=avg_rate, unit="MB/s", **at)

    sweep(b.run, b.runtimes, reps=b.reps, outer=list(s.stream_mib), protocols=b.protocols, row_for=row_for,
          measure=measure, failed=("best_rate", "MB/s"), desc="memory", progress=b.progress)
    if crosscheck:
        _memory_crosscheck(b, native_rates)


def _memory_crosscheck(b: Bench, native_rates: dict[str, list[float]]) -> None:
    """An independent tool on the same machine in the same run (natively): stress-ng's stream
    stressor where the target has it; sysbench memory otherwise. The notebook shows the ratio."""
    t = b.target
    base = dict(runtime="native", protocol="fair", rep=1, benchmark="memory_crosscheck", cpus=None, memory_mb=None,
                threads=b.cores, limits_note="native, no limits: a sanity check of apps/stream's rates")
    seconds = max(CROSSCHECK_MIN_S, b.settings.seconds)
    if t.which("stress-ng"):
        got = stream.measure_with_stress_ng(t, b.cores, seconds, max(b.settings.stream_mib))
        for i, (argv, r) in enumerate(got.tries):
            b.run.save_raw("crosscheck-stress-ng" + ("-longer" if i else ""), command=sh(argv), stdout=r.stdout,
                           stderr=r.stderr, exit_code=r.exit_code)
        row = dict(base, app="stress-ng", tool="stress-ng --stream", operation="stream")
        if got.rates is None:
            b.run.failed(metric="memory_rate", unit="MB/s", error=f"stress-ng: {got.error}", **row)
        else:
            rate = got.rates["rate_mb_s"]
            triad = native_rates.get("triad")
            why = (sanity.below_crosscheck(statistics.median(triad) / rate, "stress-ng --stream")
                   if triad and rate else "")
            if why:  # said in the row and the run's notes as soon as it is known
                b.run.note("sanity", why)
            longer = (f"ran {got.rates['seconds']} s: {seconds} s was too short for stress-ng to print a rate on "
                      f"this device" if got.rates["seconds"] != seconds else "")
            b.run.add(metric="memory_rate", value=rate, unit="MB/s",
                      **dict(row, note="; ".join(filter(None, (why, longer))) or None))
    if t.which("sysbench"):
        for oper in ("read", "write"):
            argv = sysbench.memory(b.cores, "100G", seconds=seconds, block="256M")
            argv.insert(-1, f"--memory-oper={oper}")
            r = t.run(argv, timeout=120, check=False)
            b.run.save_raw(f"crosscheck-sysbench-{oper}", command=sh(argv), stdout=r.stdout, stderr=r.stderr,
                           exit_code=r.exit_code)
            rate = sysbench.parse(r.stdout).get("mib_per_s")
            row = dict(base, app="sysbench", tool=f"sysbench memory --memory-oper={oper} (256 MiB per thread)",
                       operation=oper)
            if rate is None:
                b.run.failed(metric="memory_rate", unit="MB/s", error=f"sysbench gave no rate: {r.stderr[-200:]}",
                             **row)
            else:
                b.run.add(metric="memory_rate", value=rate * 1.048576, unit="MB/s", **row)


# -- HPC (NPB) ---------------------------------------------------------------------------

def measure_hpc(b: Bench, benchmarks: list[str], classes: list[str], artifacts: dict, missing: dict) -> None:
    plan = [(bench, cls) for cls in classes for bench in benchmarks]
    for (bench, cls), why in missing.items():
        for rt in b.runtimes:
            for proto in b.protocols:
                b.run.not_measurable(metric="time", unit="s", why=why, runtime=rt.name, protocol=proto, rep=1,
                             benchmark="hpc", app=f"npb-{bench}", operation=bench, npb_class=cls,
                             point=f"{bench.upper()}.{cls}", tool=f"NPB {npb.VERSION} (OpenMP)", cpus=b.cpus,
                             memory_mb=b.memory_mb)
    plan = [x for x in plan if x not in missing]
    if not plan:
        return

    def row_for(p: Point) -> dict:
        bench, cls = p.outer
        return b.base_row(p, "hpc", app=f"npb-{bench}", tool=f"NPB {npb.VERSION} (OpenMP)", operation=bench,
                          npb_class=cls, point=f"{bench.upper()}.{cls}", threads=b.threads(p.protocol))

    def measure(p: Point, row: dict) -> None:
        bench, cls = p.outer
        rt = p.runtime
        name = f"npb-{bench}-{cls.lower()}"
        words = [*omp_env(b.threads(p.protocol), bind=p.protocol == "fair"), npb.binary_name(bench, cls)]
        steps, row = b.batch(p, artifact_for(artifacts, name, rt), words, row,
                             f"npb-{bench}.{cls}-{rt.name}-{p.protocol}-{p.rep}", timeout_s=7200)
        parsed = npb.parse(steps[0]["stdout"])
        if parsed.get("verified") is False:
            raise EdgebenchError(f"NPB {bench.upper()}.{cls} verification {parsed.get('verification')}")
        b.run.add(metric="time", value=parsed["time_s"], unit="s",
                  **dict(row, note="NPB's own 'Time in seconds' (the timed section)"))
        if parsed.get("mops_total") is not None:
            b.run.add(metric="mops", value=parsed["mops_total"], unit="Mop/s", **row)
        b.run.add(metric="step_time", value=steps[0]["elapsed_ns"] / 1e9, unit="s",
                  **dict(row, note="the whole program as tools/steps timed it"))

    sweep(b.run, b.runtimes, reps=b.reps, outer=plan, protocols=b.protocols, row_for=row_for, measure=measure,
          failed=("time", "s"), desc="hpc (NPB)", progress=b.progress)


# -- network (ab) ------------------------------------------------------------------------

AB_METRICS = (("latency_mean", "mean"), ("latency_p50", "p50"), ("latency_p90", "p90"), ("latency_p99", "p99"))


def measure_network(b: Bench, app_names: list[str], load_generator) -> None:
    """ab (and wrk beside it, fair) from the load-generator host against the app in each runtime
    and network mode (Docker's bridge and host; one point for a runtime with one), through the
    sweep as every part."""
    s = b.settings
    runnable = [rt for rt in b.all_runtimes if any(rt.runs(APPS[a]) for a in app_names)]
    artifacts = package_all(b.run, b.target, runnable, app_names, "offline")
    modes = list(dict.fromkeys(m for rt in runnable for m in modes_of(rt)))
    with load_generator_for(b.target, load_generator) as (wrk, shared):
        try:
            ab, no_ab = Ab(wrk.host), ""
        except EdgebenchError as e:
            ab, no_ab = None, str(e)
        ports = itertools.count()

        def row_for(p: Point) -> dict:
            app, mode = p.inner
            return dict(runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, cpus=b.cpus, memory_mb=b.memory_mb,
                        benchmark="network", app=app, point=f"{p.runtime.name} ({mode})" if mode else p.runtime.name,
                        network=mode or None, connections=s.connections, tool="ab", load_tool="ab",
                        limits_note=b.clip, energy_meter=b.meter.describe() if b.meter else None)

        def measure(p: Point, row: dict) -> None:
            if ab is None:
                raise EdgebenchError(no_ab)
            app, mode = p.inner
            _ab_point(b, ab, wrk, shared, p.runtime, artifact_for(artifacts, app, p.runtime), mode or None, row,
                      PORT_BASE + next(ports) % 200, f"{app}-{row['point']}-{p.protocol}-{p.rep}")

        sweep(b.run, runnable, reps=b.reps, inner=[(a, m) for a in app_names for m in modes], protocols=b.protocols,
              row_for=row_for, measure=measure, failed=("requests_per_second", "req/s"), desc="network (ab)",
              progress=b.progress, applies=lambda p: p.inner[1] in modes_of(p.runtime))


def _ab_point(b: Bench, ab, wrk, shared: bool, rt, artifact, mode, row: dict, port: int, tag: str) -> None:
    s = b.settings
    fair = row["protocol"] == "fair"
    limits = replace(b.limits(row["protocol"]), network=mode)
    lg_cpuset, lg_note = loadgen_cpuset(shared, limits.cpuset, b.cores) if fair else (None, "")
    row = with_limits_note(row, lg_note)
    try:
        instance, _ = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        raise EdgebenchError(f"start: {e}") from None
    tag = "".join(c if c.isalnum() or c in "-." else "-" for c in tag)
    try:
        row = with_instance(row, limits, instance)
        url = f"http://{b.target.address}:{instance.port}/io"
        settings = LoadSettings(threads=1, connections=s.connections, duration_s=s.seconds, warmup_s=1)
        if fair:
            ab.warm_up(url, settings, lg_cpuset)
        with b.metered() as m:
            report = ab.run(url, settings, lg_cpuset) if fair else ab.run_requests(url, s.ab_requests, s.connections)
        b.run.save_raw(f"ab-{tag}", command=report.command, stdout=report.stdout, stderr=report.stderr)
        # wrk's one connection asks after each run, ab's too: one check for every closed loop.
        after = after_load(b.run, rt, instance, wrk, url, settings, lg_cpuset, f"ab-{tag}")
        _add_load(b.run, report, dict(row, operation="ab", duration_s=round(report.duration_us / 1e6, 3)), after)
        b.add_energy(m, dict(row, operation="ab"))
        if fair:  # the same load from wrk, for comparison (its own latency histogram)
            report = wrk.run(url, replace(settings, threads=min(2, s.connections)), lg_cpuset)
            b.run.save_raw(f"wrk-{tag}", command=report.command, stdout=report.stdout, stderr=report.stderr)
            after = after_load(b.run, rt, instance, wrk, url, settings, lg_cpuset, f"wrk-{tag}")
            _add_load(b.run, report, dict(row, operation="wrk", load_tool="wrk", tool="wrk", duration_s=s.seconds),
                      after)
    finally:
        rt.stop(instance)


def _add_load(run: Run, report, row: dict, after: AfterLoad) -> None:
    """The run's rows: failed, with what it measured kept, where its service died or stopped."""
    if report.nothing_answered():
        run.failed(metric="requests_per_second", unit="req/s", error=after.nothing_answered(report), **row)
        return
    if report.stopped_early:  # the throughput counts the stall; the note says so
        row = dict(row, note="; ".join(x for x in (row.get("note"), report.stopped_early) if x))
    judged = dict(row, **after.status(report))
    run.add(metric="requests_per_second", value=report.requests_per_second, unit="req/s", **judged)
    for metric, key in AB_METRICS:
        value = report.latency_us.get(key)
        if value is None:
            run.failed(metric=metric, unit="ms", error=report.stopped_early or f"{row['load_tool']} reports no {key}",
                       **row)
        else:
            run.add(metric=metric, value=value / 1000, unit="ms", **judged)
    run.add(metric="errors", value=report.error_count, unit="count", **judged)


def package_tools(b: Bench, apps: list) -> dict:
    """Every artifact before any clock starts (a failure becomes the rows' reason via raw/)."""
    return package_all(b.run, b.target, b.runtimes, apps, "offline")
