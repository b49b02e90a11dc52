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
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import ClassVar

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

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

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
    # Pinned apart from the target's cores when both share a machine (fair protocol).
    return ["taskset", "-c", cpuset, *argv] if cpuset else argv


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


LOAD_GENERATORS: dict[str, type[LoadGenerator]] = {"wrk": Wrk}


def load_generator(host: Target, name: str = "wrk") -> LoadGenerator:
    if name not in LOAD_GENERATORS:
        raise ConfigError(f"unknown load generator {name!r}; choose from {', '.join(LOAD_GENERATORS)}")
    return LOAD_GENERATORS[name](host)
