"""Load generators: one interface (`LoadGenerator`), one report (`LoadReport`) whatever the tool.

wrk is the first: on a load-generator host, reported as JSON by a Lua done() hook. Closed loop
like the paper (`wrk -t4 -c100 -d30s`), but keeping every percentile wrk tracks, every error
class, and the raw output. An optional warm-up run precedes each measurement and is kept apart
(its raw output is stored, its numbers are not rows). A generator for another protocol
(redis-benchmark, ab) subclasses LoadGenerator, fills the same LoadReport, and is added to
LOAD_GENERATORS.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import ClassVar

from edgebench.cgroups import taskset
from edgebench.errors import ConfigError, EdgebenchError, MissingTool
from edgebench.paths import TOOLS_DIR
from edgebench.targets import Target

REPORT_MARKER = "EDGEBENCH_WRK_JSON "
REPORTER = TOOLS_DIR / "wrk" / "report.lua"


@dataclass(frozen=True)
class LoadSettings:
    threads: int = 4
    connections: int = 100
    # wrk takes whole seconds only.
    duration_s: int = 30
    timeout_s: int = 2            # wrk's default; timed-out requests leave its latency statistics
    warmup_s: int = 0

    def check(self) -> "LoadSettings":
        if self.threads < 1 or self.connections < self.threads:
            raise ConfigError(f"wrk needs threads >= 1 and connections >= threads "
                              f"(got threads={self.threads}, connections={self.connections})")
        for name in ("duration_s", "timeout_s", "warmup_s"):
            value = getattr(self, name)
            if not float(value).is_integer() or value < (0 if name == "warmup_s" else 1):
                raise ConfigError(f"{name}={value!r}: wrk takes whole seconds (at least 1; warm-up may be 0)")
        return self

    def as_dict(self) -> dict:
        return asdict(self)


# `standard` is the paper's -t4 -c100 -d30s; `quick` is for tests and a first look.
LOAD_PROFILES = {
    "smoke": LoadSettings(threads=2, connections=16, duration_s=1, warmup_s=0),
    "quick": LoadSettings(threads=2, connections=16, duration_s=1, warmup_s=1),
    "standard": LoadSettings(threads=4, connections=100, duration_s=30, warmup_s=5),
}


@dataclass
class LoadReport:
    """What every load generator reports; rows are made from this alone."""
    requests: int
    duration_us: int
    bytes: int
    requests_per_second: float
    latency_us: dict          # mean, stdev, min, max, p50, p90, p99, p99_9
    errors: dict              # connect, read, write, status, timeout
    command: str
    stdout: str
    stderr: str
    offered_rps: float | None = None   # open loop: the rate it was asked to send
    # Why the tool stopped before its end with what it had counted (ab at its timeout); the
    # latency it then reports none of is missing with this reason.
    stopped_early: str = ""

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def nothing_answered(self, longer: str = "", stopped: str = "") -> str | None:
        """Why the run has no throughput, or None when some request was answered. No answer and
        no error is a stall: every connection open and waiting when the run ended; `longer` says
        how the caller's experiment runs longer, `stopped` how the caller found the service gone
        for good (then a longer run is no advice)."""
        if self.requests and self.requests != self.error_count:
            return None
        if self.error_count:
            return f"every request failed ({self.errors})" + (f"; {stopped}" if stopped else "")
        stall = (f"no request was answered in the {self.duration_us / 1e6:.0f} s run and none failed: every "
                 "connection stalled (open, unanswered)")
        if stopped:
            return f"{stall}; {stopped}"
        # Seen on an emulated device: node's /compute under quick's 1 s run on one vCPU.
        return (f"{stall}; if the app is only slow on this device, a longer run measures it"
                + (f" ({longer})" if longer else ""))

    def littles_law_ratio(self, connections: int) -> float | None:
        """In-flight requests implied by throughput x mean latency, over the connection count.
        Close to 1 for a sound closed-loop run; far from it, the numbers cannot all be right."""
        if not self.requests_per_second or not self.latency_us.get("mean"):
            return None
        return self.requests_per_second * self.latency_us["mean"] / 1e6 / connections


def parse_report(stdout: str, command: str = "", stderr: str = "") -> LoadReport:
    for line in stdout.splitlines():
        if line.startswith(REPORT_MARKER):
            d = json.loads(line[len(REPORT_MARKER):])
            return LoadReport(d["requests"], d["duration_us"], d["bytes"], d["requests_per_second"],
                             d["latency_us"], d["errors"], command, stdout, stderr)
    raise EdgebenchError(f"wrk printed no report (is {REPORTER.name} in use?): "
                         f"{(stderr or stdout).strip()[-300:]}")


def wrk_command(url: str, settings: LoadSettings, reporter: str, duration_s: int | None = None,
                cpuset: str | None = None) -> list[str]:
    argv = ["wrk", f"-t{settings.threads}", f"-c{settings.connections}",
            f"-d{int(duration_s if duration_s is not None else settings.duration_s)}s",
            f"--timeout={int(settings.timeout_s)}s", "-s", reporter, url]
    return [*taskset(cpuset), *argv]


class LoadGenerator(ABC):
    """A tool on a host (the local machine by default) that loads a service and reports it."""
    name: ClassVar[str]

    def __init__(self, host: Target):
        self.host = host

    @abstractmethod
    def run(self, url: str, settings: LoadSettings, cpuset: str | None = None,
            duration_s: int | None = None) -> LoadReport:
        """One measured run against url (pinned to cpuset when given)."""

    def warm_up(self, url: str, settings: LoadSettings, cpuset: str | None = None) -> LoadReport | None:
        """A run before the measured one, settings.warmup_s long (none when 0)."""
        if settings.warmup_s <= 0:
            return None
        return self.run(url, settings, cpuset, duration_s=settings.warmup_s)


class Wrk(LoadGenerator):
    """wrk, closed loop, with the Lua reporter uploaded to the host."""
    name = "wrk"

    def __init__(self, host: Target):
        super().__init__(host)
        if not host.which("wrk"):
            raise MissingTool("wrk", f"{host.name} has no `wrk`; install it there (apt-get install wrk, "
                              "or `make provision`) or choose another load-generator host")
        self.reporter = host.upload_if_changed(REPORTER, f"{host.workspace}/bin/report.lua")

    def run(self, url: str, settings: LoadSettings, cpuset: str | None = None,
            duration_s: int | None = None) -> LoadReport:
        settings.check()
        argv = wrk_command(url, settings, self.reporter, duration_s, cpuset)
        d = duration_s if duration_s is not None else settings.duration_s
        r = self.host.run(argv, timeout=d + settings.timeout_s + 60, check=False)
        if not r.ok:
            raise EdgebenchError(f"wrk on {self.host.name} exited {r.exit_code}: "
                                 f"{(r.stderr or r.stdout).strip()[-300:]}")
        return parse_report(r.stdout, r.command, r.stderr)


# -- ApacheBench (paper 003's tool) ---------------------------------------------------------------

AB_MAX_REQUESTS = 10_000_000   # with -t, ab stops at the time limit (without -n it caps at 50,000)
_AB_NUMBERS = {
    "requests": r"Complete requests:\s+(\d+)",
    "seconds": r"Time taken for tests:\s+([\d.]+) seconds",
    "bytes": r"Total transferred:\s+(\d+) bytes",
    "requests_per_second": r"Requests per second:\s+([\d.]+)",
    "time_per_request_ms": r"Time per request:\s+([\d.]+) \[ms\] \(mean\)",
    "failed": r"Failed requests:\s+(\d+)",
    "non_2xx": r"Non-2xx responses:\s+(\d+)",
}
_AB_FAILED = re.compile(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)")
_AB_CSV = re.compile(r"^(\d{1,3}),([\d.]+)$", re.M)
_AB_TOTAL = re.compile(r"^Total:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)", re.M)


def ab_command(url: str, connections: int, *, requests: int = 0, duration_s: int = 0, timeout_s: int = 30,
               cpuset: str | None = None) -> list[str]:
    """ab as the paper ran it (new connection per request, HTTP/1.0), a fixed number of requests
    or (-t) a fixed time; `-e /dev/stdout` prints every percentile with microsecond resolution
    (its table rounds to whole milliseconds)."""
    if (requests > 0) == (duration_s > 0):
        raise ConfigError("ab takes either a number of requests or a duration")
    if connections < 1 or (requests and requests < connections):
        raise ConfigError(f"ab needs connections >= 1 and requests >= connections (got {connections}, {requests})")
    count = ["-n", str(requests)] if requests else ["-t", str(int(duration_s)), "-n", str(AB_MAX_REQUESTS)]
    return [*taskset(cpuset), "ab", "-q", "-c", str(connections), *count, "-s", str(int(timeout_s)),
            "-e", "/dev/stdout", url]


def parse_ab(stdout: str, command: str = "", stderr: str = "") -> LoadReport:
    """ab's report as a LoadReport: latency in microseconds from its percentile CSV (the mean from
    'Time per request (mean)'); errors by ab's classes (connect, receive as read, length, exceptions)
    and non-2xx answers as status."""
    values = {}
    for key, pattern in _AB_NUMBERS.items():
        m = re.search(pattern, stdout)
        values[key] = float(m.group(1)) if m else None
    if values["requests"] is None or values["seconds"] is None:
        raise EdgebenchError(f"ab printed no report: {(stderr or stdout).strip()[-300:]}")
    percentiles = {int(p): float(ms) * 1000 for p, ms in _AB_CSV.findall(stdout)}
    latency = {"mean": (values["time_per_request_ms"] or 0) * 1000 if values["time_per_request_ms"] else None}
    for key, pct in (("min", 0), ("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)):
        latency[key] = percentiles.get(pct)
    total = _AB_TOTAL.search(stdout)
    latency["stdev"] = float(total.group(3)) * 1000 if total else None
    failed = _AB_FAILED.search(stdout)
    connect, receive, length, exceptions = (int(x) for x in failed.groups()) if failed else (0, 0, 0, 0)
    errors = {"connect": connect, "read": receive, "length": length, "exceptions": exceptions,
              "status": int(values["non_2xx"] or 0)}
    requests = int(values["requests"])
    return LoadReport(requests, int(values["seconds"] * 1e6), int(values["bytes"] or 0),
                      values["requests_per_second"] or 0.0, latency, errors, command, stdout, stderr)


_AB_STALL = re.compile(r"apr_pollset_poll: The timeout specified has expired")
_AB_COMPLETED = re.compile(r"Total of (\d+) requests completed")


def ab_stalled(result, connections: int, timeout_s: float) -> LoadReport | None:
    """ab that gave up because no connection moved for its timeout (-s): it exits (APR's
    70007, exit 119) with only the count it completed, no report. As wrk counts its timeouts, this
    is a run with errors: the requests completed over the whole run (the stall included) and every
    connection then waiting counted as a timeout. None when ab failed otherwise."""
    if not _AB_STALL.search(result.stderr or ""):
        return None
    m = _AB_COMPLETED.search(result.stdout or "")
    done = int(m.group(1)) if m else 0
    seconds = max(result.duration_s, 1e-6)
    why = (f"ab stopped after {done} requests: no connection answered for its {timeout_s:g} s timeout "
           f"({connections} counted as timeouts); it reports no latency then")
    return LoadReport(done, int(seconds * 1e6), 0, done / seconds, {}, {"timeout": connections},
                      result.command, result.stdout, result.stderr, stopped_early=why)


class Ab(LoadGenerator):
    """ApacheBench (Debian: apache2-utils), closed loop without keep-alive, as paper 003 used it."""
    name = "ab"

    def __init__(self, host: Target):
        super().__init__(host)
        if not host.which("ab"):
            raise MissingTool("ab", f"{host.name} has no `ab`; install it there (apt-get install apache2-utils, "
                              "or `make provision`) or choose another load-generator host")

    def _run(self, argv: list[str], limit_s: float, connections: int, timeout_s: float) -> LoadReport:
        r = self.host.run(argv, timeout=limit_s + 60, check=False)
        if not r.ok:
            stalled = ab_stalled(r, connections, timeout_s)
            if stalled:
                return stalled
            raise EdgebenchError(f"ab on {self.host.name} exited {r.exit_code}: "
                                 f"{(r.stderr or r.stdout).strip()[-300:]}")
        return parse_ab(r.stdout, r.command, r.stderr)

    def run(self, url: str, settings: LoadSettings, cpuset: str | None = None,
            duration_s: int | None = None) -> LoadReport:
        settings.check()
        d = int(duration_s if duration_s is not None else settings.duration_s)
        argv = ab_command(url, settings.connections, duration_s=d, timeout_s=settings.timeout_s, cpuset=cpuset)
        return self._run(argv, d + settings.timeout_s, settings.connections, settings.timeout_s)

    def run_requests(self, url: str, requests: int, connections: int, timeout_s: int = 30,
                     cpuset: str | None = None) -> LoadReport:
        """The paper's form: a fixed number of requests (`ab -n N -c C`)."""
        argv = ab_command(url, connections, requests=requests, timeout_s=timeout_s, cpuset=cpuset)
        return self._run(argv, 3600, connections, timeout_s)


LOAD_GENERATORS: dict[str, type[LoadGenerator]] = {"wrk": Wrk, "ab": Ab}


def load_generator(host: Target, name: str = "wrk") -> LoadGenerator:
    if name not in LOAD_GENERATORS:
        raise ConfigError(f"unknown load generator {name!r}; choose from {', '.join(LOAD_GENERATORS)}")
    return LOAD_GENERATORS[name](host)


# -- Redis: redis-benchmark -------------------------------------------------------------------

REDIS_TESTS = ("get", "set")


def redis_benchmark_command(host: str, port: int, *, connections: int, requests: int, pipeline: int,
                            tests: tuple[str, ...] = REDIS_TESTS, cpuset: str | None = None) -> list[str]:
    """redis-benchmark as paper 002 ran it (`-c 30 -n 100000 -P 16 -t get,set`), CSV out: one
    line per test with its rate and latency percentiles (Redis 7)."""
    if connections < 1 or requests < connections or pipeline < 1:
        raise ConfigError(f"redis-benchmark needs connections >= 1, requests >= connections and pipeline >= 1 "
                          f"(got {connections}, {requests}, {pipeline})")
    return [*taskset(cpuset), "redis-benchmark", "-h", host, "-p", str(port), "-c", str(connections),
            "-n", str(requests), "-P", str(pipeline), "-t", ",".join(tests), "--csv"]


def parse_redis_benchmark(stdout: str, requests: int, command: str = "", stderr: str = "") -> dict[str, LoadReport]:
    """{test: LoadReport} from redis-benchmark's CSV (`"test","rps","avg_latency_ms",...`); a
    report without the CSV header (Redis < 7 prints no percentiles) raises with its output."""
    import csv
    lines = [x for x in stdout.splitlines() if x.startswith('"')]
    rows = list(csv.DictReader(lines))
    if not rows or "p99_latency_ms" not in rows[0]:
        raise EdgebenchError(f"redis-benchmark printed no CSV report with percentiles (Redis 7 or later prints "
                             f"one): {(stderr or stdout).strip()[-300:]}")
    out = {}
    for row in rows:
        rps = float(row["rps"])
        ms = {k: float(row[f"{k}_latency_ms"]) for k in ("avg", "min", "p50", "p95", "p99", "max")}
        latency = {"mean": ms["avg"] * 1000, "min": ms["min"] * 1000, "p50": ms["p50"] * 1000,
                   "p95": ms["p95"] * 1000, "p99": ms["p99"] * 1000, "max": ms["max"] * 1000}
        out[row["test"].lower()] = LoadReport(requests, int(requests / rps * 1e6) if rps else 0, 0, rps, latency,
                                              {}, command, stdout, stderr)
    return out


class RedisBenchmark:
    """redis-benchmark on the load-generator host (Debian: redis-tools). It has no time limit
    of its own and waits for ever on a server that stopped answering, so it runs under
    `timeout`: a stall is a failure that says so, never a hang."""
    name = "redis-benchmark"

    def __init__(self, host: Target):
        self.host = host
        if not host.which("redis-benchmark"):
            raise MissingTool("redis-benchmark", f"{host.name} has no `redis-benchmark`; install it there "
                              "(apt-get install redis-tools, or `make provision`) or choose another "
                              "load-generator host")

    def run(self, address: str, port: int, *, connections: int, requests: int, pipeline: int,
            limit_s: float, cpuset: str | None = None) -> dict[str, LoadReport]:
        argv = redis_benchmark_command(address, port, connections=connections, requests=requests,
                                       pipeline=pipeline, cpuset=cpuset)
        r = self.host.run(["timeout", f"{limit_s:g}", *argv], timeout=limit_s + 30, check=False)
        if r.exit_code == 124:
            raise EdgebenchError(f"redis-benchmark did not finish {requests} requests per test in {limit_s:g} s "
                                 f"(the server stalled or is far slower): {r.stdout.strip()[-200:]}")
        if not r.ok:
            raise EdgebenchError(f"redis-benchmark on {self.host.name} exited {r.exit_code}: "
                                 f"{(r.stderr or r.stdout).strip()[-300:]}")
        return parse_redis_benchmark(r.stdout, requests, r.command, r.stderr)
