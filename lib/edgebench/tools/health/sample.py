"""One sample of a device's health: one command (scripts/health_sample.sh) that reads every
sensor the probe found and prints `key<TAB>value` lines, and their parser. Over SSH every
command is a round trip, so a sample is one script, and it forks nothing but vcgencmd: the
device runs it every `interval_s` while a run measures."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgebench.scripts import shell_script, with_args
from edgebench.tools.health.device import Probe
from edgebench.tools.health.parse import (CpuTimes, finite_number, parse_cpu_times, parse_loadavg, parse_throttled,
                                          tab_lines)

SAMPLE_SCRIPT = shell_script("health_sample.sh")


@dataclass
class Sample:
    """One read of every sensor the probe found. `throttled`: True, False, or None when it could
    not be judged; `throttled_between`: sticky bits newly set since the previous sample (both set
    by rule.judge)."""
    kind: str                                   # start, periodic, point
    t: float = 0.0                              # host monotonic time, the middle of the read
    time_utc: str = ""
    cpu: CpuTimes | None = None
    loadavg: dict | None = None
    temps: dict[str, float] = field(default_factory=dict)                      # zone -> C
    freqs: dict[str, tuple[float | None, str, float | None]] = field(default_factory=dict)  # cur MHz, gov, max
    throttled_bits: int | None = None
    errors: list[str] = field(default_factory=list)
    throttled: bool | None = None
    throttled_between: bool = False
    reasons: list[str] = field(default_factory=list)


def sample_args(p: Probe) -> list[str]:
    """health_sample.sh's arguments for what the probe found (quiet.py passes them too)."""
    return [p.procfs, p.sysfs, p.vcgencmd or "", " ".join(z.name for z in p.zones if z.readable),
            " ".join(c.cpu for c in p.cpufreq)]


def sample_script(p: Probe) -> str:
    """The `sh -c` text of one sample of everything the probe found."""
    return with_args(SAMPLE_SCRIPT, *sample_args(p))


def parse_sample(text: str, p: Probe, kind: str = "periodic") -> Sample:
    """A sample script's output -> Sample; a sensor that gave nothing is an error, not a zero."""
    s = Sample(kind)
    seen = {"stat": False, "loadavg": False}
    for parts in tab_lines(text):
        key, rest = parts[0], parts[1:] + [""] * 4
        try:
            if key == "stat":
                seen["stat"] = True
                s.cpu = parse_cpu_times(rest[0])
            elif key == "loadavg":
                seen["loadavg"] = True
                s.loadavg = parse_loadavg(rest[0])
            elif key == "temp":
                c = finite_number(rest[1])
                if c is None:
                    raise ValueError(f"{rest[0]}/temp gave {rest[1]!r}")
                s.temps[rest[0]] = c / 1000
            elif key == "freq":
                cur, smax = finite_number(rest[1]), finite_number(rest[3])
                if cur is None:
                    raise ValueError(f"{rest[0]}/cpufreq/scaling_cur_freq gave {rest[1]!r}")
                s.freqs[rest[0]] = (cur / 1000, rest[2].strip(), smax / 1000 if smax is not None else None)
            elif key == "throttled":
                s.throttled_bits = parse_throttled(rest[0])
        except ValueError as e:
            s.errors.append(str(e))
    for key, got in seen.items():
        if not got and not (key == "stat" and p.cpus is None):
            s.errors.append(f"no {p.procfs}/{key} in the sample")
    return s


__all__ = ["Sample", "sample_args", "sample_script", "parse_sample"]
