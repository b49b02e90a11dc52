"""Open-loop load: latency at fixed offered rates, timed from when each request was due.

A closed-loop tool (edgebench.tools.load: wrk, ab) waits for each answer before sending the next
request, so a stalled server also stalls the load (coordinated omission) and the latency misses
exactly the stall. An open-loop tool sends on a schedule: wrk2 (`-R`, HdrHistogram) where the load
host has it, else oha (`-q` with `--latency-correction`), else the project's tools/openloop (Go,
built for the host like the probe: oha takes about 20 min to compile on a 2-core machine, too long
for a first `make test`). Each fills the same LoadReport as the closed-loop tools.
"""

from __future__ import annotations

import json
import re
import shlex
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import ClassVar

from edgebench.apps import place_openloop
from edgebench.cgroups import taskset
from edgebench.errors import ConfigError, EdgebenchError, MissingTool
from edgebench.targets import Target
from edgebench.tools.load import LoadReport


@dataclass(frozen=True)
class OpenLoopSettings:
    rates: tuple[str, ...]     # "50%" of the closed-loop (saturation) throughput, or req/s ("1500")
    duration_s: int            # per rate; wrk2 wants 10-20 s to calibrate
    connections: int
    threads: int = 2
    timeout_s: int = 2

    def as_dict(self) -> dict:
        return asdict(self)


OPEN_LOOP_PROFILES = {
    "smoke": OpenLoopSettings(("100%",), duration_s=1, connections=16),
    "quick": OpenLoopSettings(("50%", "100%"), duration_s=3, connections=16),
    "standard": OpenLoopSettings(("25%", "50%", "75%", "90%", "100%"), duration_s=20, connections=100, threads=4),
}


def parse_rates(text: str) -> tuple[str, ...]:
    """'25%,50%' (fractions of saturation) or '1000,2000' (req/s); refused with the bad item named."""
    items = tuple(x.strip() for x in str(text).split(",") if x.strip())
    for item in items:
        number = item[:-1] if item.endswith("%") else item
        try:
            ok = float(number) > 0 and (not item.endswith("%") or float(number) <= 200)
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(f"open-loop rate {item!r}: give a share of the saturation throughput "
                              "('50%', up to 200%) or requests per second ('1500'), comma-separated")
    if not items:
        raise ConfigError("no open-loop rates: give e.g. '25%,50%,75%,90%,100%', or open_loop='none'")
    return items


def offered_rates(rates: tuple[str, ...], saturation_rps: float | None) -> list[tuple[float, float | None]]:
    """[(offered req/s, share of saturation or None)]; shares need a saturation throughput."""
    out = []
    for item in rates:
        if item.endswith("%"):
            if saturation_rps:
                share = float(item[:-1]) / 100
                out.append((max(1.0, round(saturation_rps * share, 1)), share))
        else:
            rate = float(item)
            out.append((rate, rate / saturation_rps if saturation_rps else None))
    return out


_UNITS_US = {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7, "h": 3.6e9}


def _duration_us(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * _UNITS_US[m.group(2)]


def parse_wrk2(stdout: str, command: str = "", stderr: str = "", offered_rps: float | None = None) -> LoadReport:
    """wrk2's text report with --latency: the HdrHistogram percentiles (corrected for
    coordinated omission), Requests/sec, socket errors and non-2xx responses."""
    pct = {float(p): _duration_us(v) for p, v in re.findall(r"^\s*([\d.]+)%\s+([\d.]+[mun]?s|[\d.]+[mh])\s*$",
                                                             stdout, re.M)}
    done = re.search(r"(\d+) requests in ([\d.]+\w+), ([\d.]+\w+) read", stdout)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", stdout)
    if not (pct and done and rps):
        raise EdgebenchError(f"wrk2 printed no report: {(stderr or stdout).strip()[-300:]}")
    mean = re.search(r"Latency\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+\w+)", stdout)
    errors = dict(zip(("connect", "read", "write", "timeout"),
                      map(int, re.search(r"connect (\d+), read (\d+), write (\d+), timeout (\d+)", stdout).groups())
                      if "Socket errors" in stdout else (0, 0, 0, 0)))
    status = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", stdout)
    errors["status"] = int(status.group(1)) if status else 0
    latency = {"p50": pct.get(50.0), "p90": pct.get(90.0), "p99": pct.get(99.0), "p99_9": pct.get(99.9),
               "max": pct.get(100.0), "mean": _duration_us(mean.group(1)) if mean else None,
               "stdev": _duration_us(mean.group(2)) if mean else None}
    return LoadReport(int(done.group(1)), int(_duration_us(done.group(2))), 0, float(rps.group(1)), latency,
                      errors, command, stdout, stderr, offered_rps=offered_rps)


def parse_oha(stdout: str, command: str = "", stderr: str = "", offered_rps: float | None = None) -> LoadReport:
    """oha's JSON report (seconds): percentiles as corrected by --latency-correction, the status
    code and error distributions."""
    try:
        d = json.loads(stdout[stdout.index("{"):])
    except ValueError:
        raise EdgebenchError(f"oha printed no JSON report: {(stderr or stdout).strip()[-300:]}") from None
    s, p = d["summary"], d.get("latencyPercentiles") or {}
    def us(v):
        return None if v is None else v * 1e6

    codes = {int(k): v for k, v in (d.get("statusCodeDistribution") or {}).items()}
    # Requests still in flight when -z ended are "aborted due to deadline": cut off by the tool,
    # not failed by the server; they are neither errors nor requests.
    failed = {k: v for k, v in (d.get("errorDistribution") or {}).items() if "aborted due to deadline" not in k}
    errors = {"status": sum(v for k, v in codes.items() if not 200 <= k < 400), "timeout": 0, "connect": 0,
              "other": 0}
    for message, count in failed.items():
        kind = ("timeout" if re.search("timeout|timed out", message, re.I) else
                "connect" if re.search("connect", message, re.I) else "other")
        errors[kind] += count
    requests = sum(codes.values()) + sum(failed.values())
    latency = {"p50": us(p.get("p50")), "p90": us(p.get("p90")), "p99": us(p.get("p99")),
               "p99_9": us(p.get("p99.9")), "max": us(s.get("slowest")), "mean": us(s.get("average")),
               "stdev": None}
    total = s.get("total") or 0
    return LoadReport(requests, int(total * 1e6), int(s.get("totalData") or 0), float(s.get("requestsPerSec") or 0),
                      latency, errors, command, stdout, stderr, offered_rps=offered_rps)


class OpenLoopGenerator(ABC):
    """A tool on a host that offers a fixed request rate and reports latency from each request's
    due time, in the same LoadReport as the closed-loop generators."""
    name: ClassVar[str]
    install_hint: ClassVar[str]

    def __init__(self, host: Target, program: str):
        self.host = host
        self.program = program

    @classmethod
    def find(cls, host: Target) -> str | None:
        return host.which(cls.name)

    @abstractmethod
    def command(self, url: str, rate: float, settings: OpenLoopSettings) -> list[str]:
        """argv for one run at `rate` req/s."""

    @abstractmethod
    def parse(self, stdout: str, command: str, stderr: str, rate: float) -> LoadReport:
        """Its output as a LoadReport."""

    def run_at_rate(self, url: str, rate: float, settings: OpenLoopSettings, cpuset: str | None = None) -> LoadReport:
        argv = [*taskset(cpuset), *self.command(url, rate, settings)]
        r = self.host.run(argv, timeout=settings.duration_s + settings.timeout_s + 60, check=False)
        if not r.ok:
            raise EdgebenchError(f"{self.name} on {self.host.name} exited {r.exit_code}: "
                                 f"{(r.stderr or r.stdout).strip()[-300:]}")
        return self.parse(r.stdout, r.command, r.stderr, rate)


class Wrk2(OpenLoopGenerator):
    name = "wrk2"
    install_hint = "build wrk2 (github.com/giltene/wrk2) and put it on PATH as wrk2"

    def command(self, url, rate, settings):
        return [self.program, f"-t{settings.threads}", f"-c{max(settings.connections, settings.threads)}",
                f"-d{settings.duration_s}s", f"-R{rate:g}", "--latency", f"--timeout={settings.timeout_s}s", url]

    def parse(self, stdout, command, stderr, rate):
        return parse_wrk2(stdout, command, stderr, offered_rps=rate)


def find_cargo_program(host: Target, program: str) -> str | None:
    """`program` on PATH or where rustup and `cargo install` put it, which a non-login SSH shell's
    PATH often lacks."""
    r = host.run(["sh", "-c", 'export PATH="$PATH:/usr/local/bin:$HOME/.local/bin:$HOME/.cargo/bin"; '
                  f"command -v {shlex.quote(program)}"], check=False)
    return r.stdout.strip() or None if r.ok else None


class Oha(OpenLoopGenerator):
    name = "oha"
    install_hint = "cargo install oha (Rust from rustup; about 6 min to build on 2 cores)"
    @classmethod
    def find(cls, host):
        return find_cargo_program(host, "oha")

    @classmethod
    def install(cls, prep) -> None:
        """`cargo install oha` where the target has cargo (rustup's ~/.cargo/bin too): into
        /usr/local as root, so every user's PATH has it; else into the user's ~/.cargo/bin."""
        if "oha" in prep.commands:
            return
        cargo = find_cargo_program(prep.target, "cargo")
        if not cargo:
            prep.missing["oha"] = ("not installed: no cargo on the target (install Rust with rustup, then "
                                   "`cargo install oha`); the built-in openloop tool is used instead")
            return
        root = ["--root", "/usr/local"] if prep.survey.get("privilege") == "root" else []
        argv = [cargo, "install", "oha", "--locked", *root]
        if prep.check:
            prep.would(f"build oha: {' '.join(argv)} (about 6 min on 2 cores)", "oha",
                       "not installed; would build it with cargo")
            return
        prep.log("building oha with cargo (crates.io; about 6 min on 2 cores, once)")
        built = prep.target.run(argv, timeout=3600, check=False)
        prep.did("built oha (cargo install oha)")
        prep.rescan()
        if not built.ok or not cls.find(prep.target):
            output = (built.stderr or built.stdout)[-300:]
            prep.fail("oha", f"cargo install oha failed (exit {built.exit_code}): {output}")

    def command(self, url, rate, settings):
        return [self.program, "-z", f"{settings.duration_s}s", "-q", f"{rate:g}", "--latency-correction",
                "-c", str(settings.connections), "-t", f"{settings.timeout_s}s", "--no-tui",
                "--output-format", "json", url]

    def parse(self, stdout, command, stderr, rate):
        return parse_oha(stdout, command, stderr, offered_rps=rate)


def parse_openloop(stdout: str, command: str = "", stderr: str = "", offered_rps: float | None = None) -> LoadReport:
    """tools/openloop's JSON line (microseconds; `latency_us` corrected from each due time)."""
    try:
        d = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise EdgebenchError(f"openloop printed no report: {(stderr or stdout).strip()[-300:]}") from None
    latency = d.get("latency_us") or {k: None for k in ("mean", "stdev", "p50", "p90", "p99", "p99_9", "max")}
    return LoadReport(d["requests"], d["duration_us"], d["bytes"], d["achieved_rps"], latency, d["errors"],
                      command, stdout, stderr, offered_rps=offered_rps if offered_rps is not None else d["offered_rps"])


class BuiltinOpenLoop(OpenLoopGenerator):
    """tools/openloop, built from the project for the host: always there, offline too."""
    name = "openloop"
    install_hint = "Go on the controlling machine (it builds tools/openloop)"

    @classmethod
    def find(cls, host):
        return place_openloop(host)

    def command(self, url, rate, settings):
        return [self.program, "-url", url, "-rate", f"{rate:g}", "-duration", f"{settings.duration_s}s",
                "-connections", str(settings.connections), "-timeout", f"{settings.timeout_s}s"]

    def parse(self, stdout, command, stderr, rate):
        return parse_openloop(stdout, command, stderr, offered_rps=rate)


# 'auto' takes the first the host has: the established tools first (wrk2, then oha), then the
# project's own, which every host has.
OPEN_LOOP_GENERATORS: dict[str, type[OpenLoopGenerator]] = {"wrk2": Wrk2, "oha": Oha, "openloop": BuiltinOpenLoop}
OPEN_LOOP_CHOICES = ("auto", *OPEN_LOOP_GENERATORS, "none")


def open_loop_generator(host: Target, name: str = "auto") -> OpenLoopGenerator | None:
    """The named open-loop tool on `host` ('auto': the first there); None for 'none'. A missing
    tool raises MissingTool naming how to install it."""
    if name not in OPEN_LOOP_CHOICES:
        raise ConfigError(f"open_loop={name!r} unknown; choose from {', '.join(OPEN_LOOP_CHOICES)}")
    if name == "none":
        return None
    for cls in ([OPEN_LOOP_GENERATORS[name]] if name != "auto" else OPEN_LOOP_GENERATORS.values()):
        program = cls.find(host)
        if program:
            return cls(host, program)
    wanted = [OPEN_LOOP_GENERATORS[name]] if name != "auto" else list(OPEN_LOOP_GENERATORS.values())
    names = ", ".join(c.name for c in wanted)
    raise MissingTool(wanted[-1].name, f"no open-loop load generator on {host.name} ({names}): "
                      + "; or ".join(c.install_hint for c in wanted) + ". open_loop='none' skips the open-loop curves")
