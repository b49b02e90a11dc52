"""Device health during a run: CPU frequency and governor, temperature and throttling, and load
from other processes, sampled on the target while a run measures, so that every result row says
whether it was measured on a device that throttled or was busy. None of the papers logged this,
and a Raspberry Pi throttles at 80-85 C.

What is read (`probe` once, then one shell command per sample: over SSH every command is a
round trip, so a sample is one script that prints `key<TAB>value` lines and forks nothing but
vcgencmd):

    /proc/stat              the CPU time of all CPUs together (user ... steal, in clock ticks)
    /proc/loadavg           load averages and runnable/total tasks
    /sys/class/thermal/thermal_zone*/temp       each zone's temperature; the probe reads each
                            zone's `type` and trip points (`trip_point_N_type`, `_temp`)
    /sys/devices/system/cpu/cpuN/cpufreq/       scaling_cur_freq, scaling_governor and
                            scaling_max_freq per CPU; the probe reads cpuinfo_max_freq
    vcgencmd get_throttled  on a Raspberry Pi (the firmware's throttling; Linux cannot see it)

A sensor the device does not have is missing with the reason (`Probe.missing`, in meta.json
under notes.health), never written as zero: "no /sys/class/thermal on ...", "no
/sys/devices/system/cpu/cpu0/cpufreq (a VM without frequency scaling)", "vcgencmd: not a
Raspberry Pi". `sysfs`, `procfs` and `vcgencmd` point the reads elsewhere (the tests build a
tree under a temporary directory), as edgebench.tools.energy's `root` does.

Throttled (per sample), from explicit signals only:
  - vcgencmd: bit 1 (arm frequency capped), 2 (currently throttled) or 3 (soft temperature
    limit active) set now; or one of the sticky bits 17-19 (capping / throttling / soft limit
    "has occurred") newly set since the previous sample: it throttled between the two reads.
    Under-voltage (bits 0 and 16) is recorded; the throttling it causes shows in bit 2.
  - a thermal zone at or above one of its passive trip points (from there the kernel's thermal
    governor slows the CPU down); active (fan) and critical trips are not throttling.
  - a CPU's scaling_max_freq below its value when the run started: a cooling device or a power
    limit capped it during the run (a cap set before the run is the baseline, not a throttle).
  A frequency below the maximum is not throttling: the ondemand, schedutil, conservative and
  powersave governors lower it whenever the CPU has little to do. A throttle no sensor reports
  is not seen (firmware throttling on a board with neither vcgencmd nor a passive trip point).
  On a Raspberry Pi without a working vcgencmd throttling is unknown: its firmware throttles
  while scaling_cur_freq still shows the frequency Linux asked for.

Busy (load from other processes): during a measurement the benchmark's own load is expected, so
CPU use then says nothing about others. Busy is judged when nothing of the run's measurement
runs: right before each measured point (`begin_point`, called by experiments.sweep), one command
reads /proc/stat, sleeps `quiet_s` (0.3 s) on the device and reads it again. The CPU time used
in that window, in CPUs (user + nice + system + irq + softirq + steal over the elapsed ticks,
times the number of CPUs; steal counts: the hypervisor gave the CPU to another guest), is the
load of everything else; the point is busy at `busy_cpus` (0.5 CPU) or more. The same command
lists /proc/[pid]/stat before and after, so the reason names the processes that used the CPU.
edgebench's own work is not load from others: the check's CPU in the window (its shell and its
`sleep`, from /proc/$$/stat) is left out, it prints nothing until the window has closed (sshd
relaying output would be busy in it), and no periodic sample runs during it.
Whatever a previous point left behind (a container still being removed) counts too: the point
competes with it. A process that starts in the middle of a point is not seen. Load averages and
the CPU busy fraction between samples are recorded in health.csv for reading, not judged: they
include the benchmark.

Row rule (`window_health`, applied by `HealthMonitor.row_health`): a row is judged when it is
written, from the samples in its window: the current point (from its start, whose own sample
counts with its "now" state only, to the moment the row is written), or, outside a point, the
time since the previous row of the run (or the run's start; the latest earlier sample when none
fell in that time). Its `health` is
  "throttled"  some sample in the window throttled
  "busy"       the point's quiet check found the device busy
  "unknown"    throttling could not be judged in the window (no sensor, a failed read) and no
               sample in it throttled, or the point's quiet check failed
comma-joined in that order ("throttled,busy"), "" when the device was fine. Rows written outside
a point (sizes, run-level rows) have no quiet window, so they are not judged busy. A throttle
that began and ended in the last `interval_s` (2 s) before a row was written is seen only by the
next sample, after the row: if that is the next point's own sample, it is counted for neither
point (its sticky bits say it happened before that point began).

Samples go to data/<experiment>/<run_id>/health.csv, long format (one row per sample and
sensor), appended and flushed per sample, so an interrupted run keeps them. Reading costs the
device a shell (and over SSH a session) every `interval_s` and a 0.3 s pause per point: part of
what every runtime's measurement sees, the same for all of them.

One module, over 400 lines: the probe of what a device has, the sampling scripts, their parsers, the
rule that marks a row and the monitor thread share one data model (Probe, Sample); its sections
follow that order.
"""

from __future__ import annotations

import bisect
import csv
import math
import os
import re
import shlex
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from edgebench.errors import ConfigError
from edgebench.targets import Target
from edgebench.tools.sensors import Periodic, SensorReadError, failure, message, run_read

DEFAULT_SYSFS = "/sys"
DEFAULT_PROCFS = "/proc"
INTERVAL_S = 2.0
QUIET_S = 0.1
BUSY_CPUS = 0.5
READ_TIMEOUT_S = 10.0
HEALTH_CSV = "health.csv"
CSV_COLUMNS = ["sample", "elapsed_s", "time_utc", "kind", "sensor", "item", "value", "unit", "text"]

THROTTLED, BUSY, UNKNOWN = "throttled", "busy", "unknown"
FLAGS = (THROTTLED, BUSY, UNKNOWN)   # the order they are joined in
MARKED = (THROTTLED, BUSY)           # what tables and figures mark

# vcgencmd get_throttled: bit -> meaning (Raspberry Pi firmware).
THROTTLE_BITS = {0: "under-voltage", 1: "arm frequency capped", 2: "currently throttled",
                 3: "soft temperature limit active", 16: "under-voltage has occurred",
                 17: "arm frequency capping has occurred", 18: "throttling has occurred",
                 19: "soft temperature limit has occurred"}
THROTTLED_NOW = (1 << 1) | (1 << 2) | (1 << 3)
THROTTLED_SINCE_BOOT = (1 << 17) | (1 << 18) | (1 << 19)
VCGENCMD_HINT = ("install the package that provides vcgencmd (libraspberrypi-bin; raspi-utils on newer "
                 "Raspberry Pi OS)")


def flags(value) -> list[str]:
    """'throttled,busy' -> ['throttled', 'busy']; '' or NaN -> []."""
    if not isinstance(value, str):
        return []
    return [f.strip() for f in value.split(",") if f.strip()]


def is_marked(value) -> bool:
    """Whether a row's health says it was measured while the device throttled or was busy."""
    return any(f in MARKED for f in flags(value))


# -- parsers ---------------------------------------------------------------------------------

def parse_throttled(text: str) -> int:
    """'throttled=0x50005' (vcgencmd get_throttled) -> 0x50005; ValueError for anything else."""
    m = re.search(r"throttled=(0x[0-9a-fA-F]+)\b", text or "")
    if not m:
        line = (text or "").strip().splitlines()[:1] or ["no output"]
        raise ValueError(f"not vcgencmd get_throttled output: {line[0][:120]!r}")
    return int(m.group(1), 16)


def describe_throttled(bits: int) -> str:
    """0x50005 -> '0x50005: under-voltage, currently throttled; has occurred: under-voltage, throttling'."""
    now = [THROTTLE_BITS[b] for b in range(4) if bits >> b & 1]
    past = [THROTTLE_BITS[b].removesuffix(" has occurred") for b in range(16, 20) if bits >> b & 1]
    parts = [", ".join(now) or "fine now"]
    if past:
        parts.append("has occurred: " + ", ".join(past))
    return f"{bits:#x}: " + "; ".join(parts)


@dataclass(frozen=True)
class CpuTimes:
    """The first line of /proc/stat in clock ticks: `busy` (user + nice + system + irq +
    softirq + steal) and `total` (busy + idle + iowait). guest time is part of user already."""
    busy: int
    total: int


def parse_cpu_times(line: str) -> CpuTimes:
    words = (line or "").split()
    if not words or words[0] != "cpu" or len(words) < 5:
        raise ValueError(f"not the cpu line of /proc/stat: {(line or '')[:80]!r}")
    ticks = [int(w) for w in words[1:9]]
    ticks += [0] * (8 - len(ticks))
    idle = ticks[3] + ticks[4]
    total = sum(ticks)
    return CpuTimes(total - idle, total)


def busy_fraction(before: CpuTimes, after: CpuTimes) -> float | None:
    """Share of all CPUs' time that was busy between two readings (None if no time passed)."""
    dt = after.total - before.total
    return (after.busy - before.busy) / dt if dt > 0 else None


def parse_loadavg(line: str) -> dict:
    """'0.52 0.31 0.18 1/187 2451' -> {'1m': 0.52, '5m': 0.31, '15m': 0.18, 'running': 1, 'tasks': 187}."""
    words = (line or "").split()
    if len(words) < 4 or "/" not in words[3]:
        raise ValueError(f"not /proc/loadavg: {(line or '')[:80]!r}")
    running, tasks = words[3].split("/", 1)
    return {"1m": float(words[0]), "5m": float(words[1]), "15m": float(words[2]),
            "running": int(running), "tasks": int(tasks)}


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _lines(text: str) -> list[list[str]]:
    return [line.split("\t") for line in (text or "").splitlines() if line]


# -- what the device has ---------------------------------------------------------------------

@dataclass
class Zone:
    name: str                     # thermal_zone0
    type: str                     # cpu-thermal, x86_pkg_temp, soc-thermal
    readable: bool                # its temp could be read at the probe
    trips: list[tuple[str, float]] = field(default_factory=list)  # (type, C), as the kernel lists them

    @property
    def label(self) -> str:
        return f"{self.name} ({self.type})" if self.type else self.name

    @property
    def passive_c(self) -> float | None:
        """The lowest passive trip point (C); trips at 0 or below are disabled ones."""
        passive = [c for kind, c in self.trips if kind == "passive" and c > 0]
        return min(passive) if passive else None


@dataclass
class CpuFreq:
    cpu: str                      # cpu0
    max_mhz: float | None         # cpuinfo_max_freq: what the hardware can do
    governor: str                 # scaling_governor at the start
    scaling_max_mhz: float | None  # scaling_max_freq at the start: the baseline for a cap


@dataclass
class Probe:
    """What the target has, and why the rest is missing (`missing`: sensor -> reason)."""
    target: str
    sysfs: str
    procfs: str
    cpus: int | None = None
    clk_tck: int = 100
    model: str = ""
    zones: list[Zone] = field(default_factory=list)
    cpufreq: list[CpuFreq] = field(default_factory=list)
    vcgencmd: str | None = None
    throttled_at_start: int | None = None
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def is_raspberry_pi(self) -> bool:
        return "raspberry pi" in self.model.lower()

    @property
    def passive_zones(self) -> list[Zone]:
        return [z for z in self.zones if z.readable and z.passive_c is not None]

    @property
    def throttle_sources(self) -> list[str]:
        sources = []
        if self.vcgencmd:
            sources.append(f"{self.vcgencmd} get_throttled")
        sources += [f"{z.label} passive trip at {z.passive_c:g} C" for z in self.passive_zones]
        if any(c.scaling_max_mhz for c in self.cpufreq):
            sources.append("cpufreq scaling_max_freq below its value at the start")
        return sources

    @property
    def throttle_unknown(self) -> str | None:
        """Why throttling cannot be judged on this device, or None."""
        if self.is_raspberry_pi and not self.vcgencmd:
            return (f"the firmware of this Raspberry Pi throttles without Linux seeing it, and "
                    f"vcgencmd cannot be read: {self.missing.get('vcgencmd', 'not found')}")
        if not self.throttle_sources:
            why = "; ".join(f"{k}: {v}" for k, v in self.missing.items() if k != "cpu_load")
            return f"no throttling sensor on {self.target}: {why or 'none found'}"
        return None

    def as_dict(self) -> dict:
        d = asdict(self)
        d["zones"] = [dict(asdict(z), passive_c=z.passive_c) for z in self.zones]
        d["throttled_at_start"] = (describe_throttled(self.throttled_at_start)
                                   if self.throttled_at_start is not None else None)
        d["throttle_sources"] = self.throttle_sources
        d["throttle_unknown"] = self.throttle_unknown
        return d


_PROBE_SCRIPT = r"""
S=$1 P=$2 V=$3
rd() { v=; { read -r v < "$1"; } 2>/dev/null; }
printf 'cpus\t%s\n' "$(grep -c '^cpu[0-9]' "$P/stat" 2>/dev/null)"
printf 'clk_tck\t%s\n' "$(getconf CLK_TCK 2>/dev/null)"
printf 'model\t%s\n' "$({ tr -d '\000\t\n' < "$S/firmware/devicetree/base/model"; } 2>/dev/null)"
if [ -d "$S/class/thermal" ]; then
  printf 'thermal_dir\n'
  for z in "$S"/class/thermal/thermal_zone*; do
    [ -e "$z" ] || continue
    rd "$z/type"; ty=$v; rd "$z/temp"
    printf 'zone\t%s\t%s\t%s\n' "${z##*/}" "$ty" "$v"
    for tp in "$z"/trip_point_*_type; do
      [ -e "$tp" ] || continue
      rd "$tp"; k=$v; rd "${tp%_type}_temp"; n=${tp##*/trip_point_}
      printf 'trip\t%s\t%s\t%s\t%s\n' "${z##*/}" "${n%_type}" "$k" "$v"
    done
  done
fi
[ -d "$S/devices/system/cpu" ] && printf 'cpu_dir\n'
for c in "$S"/devices/system/cpu/cpu[0-9]*; do
  [ -d "$c/cpufreq" ] || continue
  f=$c/cpufreq
  rd "$f/cpuinfo_max_freq"; mx=$v; rd "$f/scaling_governor"; g=$v; rd "$f/scaling_max_freq"
  printf 'cpufreq\t%s\t%s\t%s\t%s\n' "${c##*/}" "$mx" "$g" "$v"
done
if p=$(command -v "$V" 2>/dev/null); then
  out=$("$V" get_throttled 2>&1); rc=$?
  printf 'vcgencmd\t%s\t%s\t%s\n' "$p" "$rc" "$(printf '%s' "$out" | tr '\t\n' '  ')"
fi
"""


def parse_probe(text: str, target: str, sysfs: str = DEFAULT_SYSFS, procfs: str = DEFAULT_PROCFS) -> Probe:
    """The probe script's output -> Probe, with a reason for every sensor that is missing."""
    p = Probe(target, sysfs, procfs)
    zones: dict[str, Zone] = {}
    thermal_dir = cpu_dir = False
    vc = None
    for parts in _lines(text):
        key, rest = parts[0], parts[1:] + [""] * 5
        if key == "cpus":
            p.cpus = int(rest[0]) if rest[0].isdigit() and int(rest[0]) > 0 else None
        elif key == "clk_tck" and rest[0].isdigit():
            p.clk_tck = int(rest[0])
        elif key == "model":
            p.model = rest[0].strip()
        elif key == "thermal_dir":
            thermal_dir = True
        elif key == "zone":
            zones[rest[0]] = Zone(rest[0], rest[1].strip(), _number(rest[2]) is not None)
        elif key == "trip" and rest[0] in zones:
            c = _number(rest[3])
            if c is not None:
                zones[rest[0]].trips.append((rest[2].strip(), c / 1000))
        elif key == "cpu_dir":
            cpu_dir = True
        elif key == "cpufreq":
            mx, smx = _number(rest[1]), _number(rest[3])
            p.cpufreq.append(CpuFreq(rest[0], mx / 1000 if mx else None, rest[2].strip(),
                                     smx / 1000 if smx else None))
        elif key == "vcgencmd":
            vc = rest[:3]
    p.zones = sorted(zones.values(), key=lambda z: _index(z.name))
    p.cpufreq.sort(key=lambda c: _index(c.cpu))
    _explain_missing(p, thermal_dir, cpu_dir, vc)
    return p


def _index(name: str) -> int:
    digits = re.sub(r"\D", "", name)
    return int(digits) if digits else -1


def _explain_missing(p: Probe, thermal_dir: bool, cpu_dir: bool, vc: list[str] | None) -> None:
    where, on = f"{p.sysfs}/class/thermal", f"on {p.target}"
    if p.cpus is None:
        p.missing["cpu_load"] = (f"no readable {p.procfs}/stat {on}: the load from other processes "
                                 "cannot be judged")
    if not thermal_dir:
        p.missing["thermal"] = f"no {where} {on} (no thermal driver: a VM, or a kernel without thermal support)"
    elif not p.zones:
        p.missing["thermal"] = (f"no thermal zone under {where} {on} (a VM, or no driver for the "
                                "board's temperature sensors)")
    elif not any(z.readable for z in p.zones):
        p.missing["thermal"] = f"no thermal zone's temp under {where} is readable {on}"
    elif not p.passive_zones:
        trips = "; ".join(f"{z.label}: " + (", ".join(f"{k} {c:g} C" for k, c in z.trips) or "no trip points")
                          for z in p.zones)
        p.missing["passive_trip"] = (f"no thermal zone {on} has a passive trip point ({trips}): temperatures "
                                     "are recorded, but they cannot say when the kernel throttles")
    if not p.cpufreq:
        p.missing["cpufreq"] = (f"no {p.sysfs}/devices/system/cpu/cpu0/cpufreq {on} (no frequency scaling "
                                "driver: a VM without frequency scaling, or cpufreq disabled)" if cpu_dir
                                else f"no {p.sysfs}/devices/system/cpu {on}")
    pi = f"this Raspberry Pi ({p.model})"
    if vc is None:
        p.missing["vcgencmd"] = (f"not found on {pi}: its firmware's throttling (80-85 C, under-voltage) "
                                 f"cannot be seen; {VCGENCMD_HINT}" if p.is_raspberry_pi
                                 else "not a Raspberry Pi" + (f" ({p.model})" if p.model else ""))
        return
    path, rc, out = vc
    try:
        if rc != "0":
            raise ValueError(f"exit {rc}")
        p.throttled_at_start = parse_throttled(out)
        p.vcgencmd = path
    except ValueError as e:
        hint = ("; the user needs /dev/vchiq (the video group)" if re.search(r"vchi|permission|denied", out, re.I)
                else "")
        p.missing["vcgencmd"] = f"`{path} get_throttled` failed {on}: {out.strip()[:160] or e}{hint}"


def probe(target: Target, *, sysfs: str = DEFAULT_SYSFS, procfs: str = DEFAULT_PROCFS,
          vcgencmd: str = "vcgencmd", timeout: float = READ_TIMEOUT_S) -> Probe:
    """Find the target's sensors in one command; raises SensorReadError if it cannot run."""
    script = f"set -- {shlex.quote(sysfs)} {shlex.quote(procfs)} {shlex.quote(vcgencmd)}\n{_PROBE_SCRIPT}"
    r = run_read(target, ["sh", "-c", script], timeout)
    if not r.ok:
        raise SensorReadError(failure(target, "the health sensors' listing", r))
    return parse_probe(r.stdout, target.name, sysfs, procfs)


# -- one sample --------------------------------------------------------------------------------

@dataclass
class Sample:
    """One read of every sensor the probe found. `throttled`: True, False, or None when it could
    not be judged; `throttled_between`: sticky bits newly set since the previous sample."""
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


def sample_script(p: Probe) -> str:
    """One read of everything the probe found: `read` builtins, no fork but vcgencmd."""
    q = shlex.quote
    lines = ['rd() { v=; { read -r v < "$1"; } 2>/dev/null; }']
    lines.append(f"rd {q(p.procfs + '/stat')}; printf 'stat\\t%s\\n' \"$v\"")
    lines.append(f"rd {q(p.procfs + '/loadavg')}; printf 'loadavg\\t%s\\n' \"$v\"")
    for z in p.zones:
        if z.readable:
            lines.append(f"rd {q(f'{p.sysfs}/class/thermal/{z.name}/temp')}; "
                         f"printf 'temp\\t%s\\t%s\\n' {q(z.name)} \"$v\"")
    for c in p.cpufreq:
        d = f"{p.sysfs}/devices/system/cpu/{c.cpu}/cpufreq"
        lines.append(f"rd {q(d + '/scaling_cur_freq')}; a=$v; rd {q(d + '/scaling_governor')}; b=$v; "
                     f"rd {q(d + '/scaling_max_freq')}; "
                     f"printf 'freq\\t%s\\t%s\\t%s\\t%s\\n' {q(c.cpu)} \"$a\" \"$b\" \"$v\"")
    if p.vcgencmd:
        lines.append(f"t=$({q(p.vcgencmd)} get_throttled 2>&1) || t=\"exit $?: $t\"; printf 'throttled\\t%s\\n' \"$t\"")
    return "\n".join(lines) + "\n"


def quiet_script(p: Probe, quiet_s: float) -> str:
    """CPU time over `quiet_s` s from /proc/stat, the processes' CPU time before and after (with
    /proc/uptime around both scans: `u0`, `u1`), then one sample. Nothing is printed until the
    window has closed: output on its way would keep the device's sshd busy in it, and under
    emulation that alone marked most points busy."""
    q = shlex.quote
    procs = q(p.procfs) + "/[0-9]*/stat"
    return "\n".join([
        'rd() { v=; { read -r v < "$1"; } 2>/dev/null; }',
        # pid, utime + stime (fields 14, 15) and comm of every process; comm may hold spaces and ')'.
        f'scan() {{ for f in {procs}; do {{ read -r l < "$f"; }} 2>/dev/null || continue; '
        'c=${l#*\\(}; c=${c%) *}; set -f; set -- ${l##*) }; set +f; [ $# -ge 13 ] || continue; '
        # the check's own children (its scans' subshells) are not "other processes"
        '[ "$2" = "$$" ] && continue; '
        'p=${f%/stat}; printf \'p%s\\t%s\\t%s\\t%s\\n\' "$ph" "${p##*/}" "$((${12}+${13}))" "$c"; done; }',
        # The check's own CPU ticks, its waited-for children's (`sleep`) included: inside the window.
        f'own() {{ o=; {{ read -r l < {q(p.procfs)}/$$/stat; }} 2>/dev/null || return 0; set -f; set -- ${{l##*) }}; '
        'set +f; [ $# -ge 15 ] && o=$((${12}+${13}+${14}+${15})); }',
        f"rd {q(p.procfs + '/uptime')}; u0=${{v%% *}}",
        f"s0=$(ph=0; scan); rd {q(p.procfs + '/stat')}; q0=$v; own; o0=$o",
        f"sleep {quiet_s:g}; rd {q(p.procfs + '/stat')}; q1=$v; own; o1=$o",
        f"s1=$(ph=1; scan); rd {q(p.procfs + '/uptime')}; u1=${{v%% *}}",
        "printf 'self\\t%s\\nq0\\t%s\\nq1\\t%s\\no0\\t%s\\no1\\t%s\\nu0\\t%s\\nu1\\t%s\\n%s\\n%s\\n' "
        '"$$" "$q0" "$q1" "$o0" "$o1" "$u0" "$u1" "$s0" "$s1"',
    ]) + "\n" + sample_script(p)


def parse_sample(text: str, p: Probe, kind: str = "periodic") -> Sample:
    """A sample script's output -> Sample; a sensor that gave nothing is an error, not a zero."""
    s = Sample(kind)
    seen = {"stat": False, "loadavg": False}
    for parts in _lines(text):
        key, rest = parts[0], parts[1:] + [""] * 4
        try:
            if key == "stat":
                seen["stat"] = True
                s.cpu = parse_cpu_times(rest[0])
            elif key == "loadavg":
                seen["loadavg"] = True
                s.loadavg = parse_loadavg(rest[0])
            elif key == "temp":
                c = _number(rest[1])
                if c is None:
                    raise ValueError(f"{rest[0]}/temp gave {rest[1]!r}")
                s.temps[rest[0]] = c / 1000
            elif key == "freq":
                cur, smax = _number(rest[1]), _number(rest[3])
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


def judge(s: Sample, prev: Sample | None, p: Probe) -> Sample:
    """Set `throttled`, `throttled_between` and `reasons` from the explicit signals (module doc)."""
    reasons, unread = [], []
    if p.vcgencmd:
        bits = s.throttled_bits
        if bits is None:
            unread.append("vcgencmd")
        else:
            if bits & THROTTLED_NOW:
                reasons.append(f"vcgencmd: {describe_throttled(bits)}")
            before = prev.throttled_bits if prev is not None else None
            if before is not None and (bits & ~before) & THROTTLED_SINCE_BOOT:
                s.throttled_between = True
                s.reasons.append(f"vcgencmd: newly set since the previous sample: {describe_throttled(bits & ~before)}")
    for z in p.passive_zones:
        c = s.temps.get(z.name)
        if c is None:
            unread.append(z.label)
        elif c >= z.passive_c:
            reasons.append(f"{z.label} at {c:g} C, at or above its passive trip point {z.passive_c:g} C")
    for cpu in p.cpufreq:
        got = s.freqs.get(cpu.cpu)
        if got is None or got[2] is None:
            unread.append(f"{cpu.cpu} cpufreq")
        elif cpu.scaling_max_mhz and got[2] < cpu.scaling_max_mhz:
            reasons.append(f"{cpu.cpu} scaling_max_freq {got[2]:g} MHz, below {cpu.scaling_max_mhz:g} MHz at the start")
    s.reasons = reasons + s.reasons
    if reasons:
        s.throttled = True
    elif p.throttle_unknown or unread:
        s.throttled = None
        s.reasons.append("no throttling sensor (meta.json notes.health.throttle_unknown says why)"
                         if p.throttle_unknown else f"not read: {', '.join(unread)}")
    else:
        s.throttled = False
    return s


@dataclass
class QuietCheck:
    """The CPU use of everything on the device over the quiet window before a point."""
    busy_cpus: float | None = None
    window_s: float | None = None
    top: list[tuple[str, int, float]] = field(default_factory=list)  # (comm, pid, CPUs)
    threshold: float = BUSY_CPUS
    error: str = ""
    own_cpus: float = 0.0  # the check's own use of the window, left out of busy_cpus

    @property
    def busy(self) -> bool | None:
        return None if self.busy_cpus is None else self.busy_cpus >= self.threshold

    def describe(self) -> str:
        if self.busy_cpus is None:
            return f"the quiet check failed: {self.error}"
        who = ", ".join(f"{c} ({pid}) {cpus:.2f}" for c, pid, cpus in self.top) or "no process named"
        own = f", the check's own {self.own_cpus:.2f} left out" if self.own_cpus else ""
        return (f"{self.busy_cpus:.2f} CPUs busy over {self.window_s:.2f} s before the point{own} "
                f"({'at or above' if self.busy else 'below'} {self.threshold:g}); top: {who}")


def _own_ticks(got: dict) -> int:
    o0, o1 = got.get("o0", ""), got.get("o1", "")
    return max(0, int(o1) - int(o0)) if o0.isdigit() and o1.isdigit() else 0


def parse_quiet(text: str, p: Probe, threshold: float = BUSY_CPUS, top: int = 3) -> QuietCheck:
    """The quiet script's output -> QuietCheck (its sample lines are parse_sample's)."""
    qc = QuietCheck(threshold=threshold)
    lines = _lines(text)
    got = {parts[0]: parts[1] for parts in lines
           if parts[0] in ("q0", "q1", "o0", "o1", "u0", "u1", "self") and len(parts) > 1}
    try:
        if p.cpus is None:
            raise ValueError(p.missing.get("cpu_load", "no CPU count"))
        a, b = parse_cpu_times(got.get("q0", "")), parse_cpu_times(got.get("q1", ""))
    except ValueError as e:
        qc.error = str(e)
        return qc
    frac = busy_fraction(a, b)
    if frac is None:
        qc.error = "no time passed between the two reads of /proc/stat"
        return qc
    own = _own_ticks(got)
    if own:  # the check's shell and its `sleep`: a fork and an exec cost ticks under emulation
        frac = max(0.0, frac - own / (b.total - a.total))
        qc.own_cpus = own / (b.total - a.total) * p.cpus
    qc.busy_cpus = frac * p.cpus
    qc.window_s = (b.total - a.total) / p.cpus / p.clk_tck
    ticks: dict[int, list] = {}
    for parts in lines:
        if parts[0] in ("p0", "p1") and len(parts) >= 4 and parts[1].isdigit() and parts[2].isdigit():
            entry = ticks.setdefault(int(parts[1]), [None, None, "\t".join(parts[3:])])
            entry[0 if parts[0] == "p0" else 1] = int(parts[2])
    me = int(got["self"]) if got.get("self", "").isdigit() else None
    # A process's ticks run from the first scan to the second, a longer span than the window
    # (the scans are slow under emulation): over that span, a rate no process can exceed.
    span = qc.window_s
    try:
        span = max(span, float(got["u1"]) - float(got["u0"]))
    except (KeyError, ValueError):
        pass
    used = [(name, pid, (after - (before or 0)) / p.clk_tck / max(span, 1e-9))
            for pid, (before, after, name) in ticks.items() if after is not None and pid != me
            and after - (before or 0) > 0]
    qc.top = sorted(used, key=lambda u: -u[2])[:top]
    return qc


# -- the row rule ----------------------------------------------------------------------------

def window_health(samples: list[Sample], start: float, now: float, first: Sample | None = None,
                  quiet: QuietCheck | None = None, times: list[float] | None = None) -> str:
    """A row's health (the rule in the module doc) from `samples` (sorted by `t`): those in
    (start, now]; inside a point `first` is the point's own sample, which counts with its state
    at that moment only (sticky bits it found new were set before the point), and `quiet` its
    quiet check. Outside a point (`quiet` None) a window without samples takes the latest before."""
    times = [s.t for s in samples] if times is None else times
    states = [first.throttled] if first is not None else []
    lo, hi = bisect.bisect_right(times, start), bisect.bisect_right(times, now)
    states += [True if s.throttled_between else s.throttled for s in samples[lo:hi] if s is not first]
    if not states and quiet is None and hi > 0:
        states = [samples[hi - 1].throttled]  # nothing in the window: the state last seen
    throttled = any(st is True for st in states)
    unknown = not throttled and (not states or any(st is None for st in states))
    busy = quiet is not None and quiet.busy is True
    unknown = unknown or (quiet is not None and quiet.busy is None)
    return ",".join(f for f, on in ((THROTTLED, throttled), (BUSY, busy), (UNKNOWN, unknown)) if on)


# -- the monitor -----------------------------------------------------------------------------

@dataclass
class _Point:
    start: float
    sample: Sample | None
    quiet: QuietCheck


class HealthMonitor:
    """Samples a target's health for one run (see the module doc). `start` probes and takes the
    first sample, then a daemon thread samples every `interval_s`; `stop` ends it, whatever ended
    the run. Nothing here raises for a missing or failing sensor: that becomes a reason."""

    def __init__(self, target: Target, run_dir: Path | str, *, interval_s: float = INTERVAL_S,
                 quiet_s: float = QUIET_S, busy_cpus: float = BUSY_CPUS, sysfs: str = DEFAULT_SYSFS,
                 procfs: str = DEFAULT_PROCFS, vcgencmd: str = "vcgencmd", read_timeout_s: float = READ_TIMEOUT_S):
        for name, value in (("interval_s", interval_s), ("quiet_s", quiet_s), ("busy_cpus", busy_cpus)):
            if not (isinstance(value, (int, float)) and value > 0):
                raise ConfigError(f"health {name}={value!r}: must be a number above 0")
        self.target = target
        self.path = Path(run_dir) / HEALTH_CSV
        self.interval_s, self.quiet_s, self.busy_cpus = float(interval_s), float(quiet_s), float(busy_cpus)
        self.sysfs, self.procfs, self.vcgencmd = sysfs, procfs, vcgencmd
        self.read_timeout_s = read_timeout_s
        self.probe: Probe | None = None
        self.error = ""                 # why nothing could be sampled
        self.thread: Periodic | None = None
        self._lock = threading.RLock()
        self._reading = threading.Lock()  # one read on the device at a time (_read)
        self._samples: list[Sample] = []
        self._times: list[float] = []
        self._last: Sample | None = None
        self._point: _Point | None = None
        self._t0 = time.monotonic()
        self._last_row = self._t0
        self._script = self._quiet_script = ""   # built from the probe
        self._file = None
        self._writer = None
        self._seq = 0
        self.counts = {"samples": 0, "failed_reads": 0, "throttled_samples": 0, "points": 0, "busy_points": 0,
                       "rows": {}}

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "HealthMonitor":
        self._t0 = self._last_row = time.monotonic()
        try:
            self.probe = probe(self.target, sysfs=self.sysfs, procfs=self.procfs, vcgencmd=self.vcgencmd,
                               timeout=self.read_timeout_s)
        except SensorReadError as e:
            self.error = f"the health probe failed: {e}"
            return self
        self._script = sample_script(self.probe)
        self._quiet_script = quiet_script(self.probe, self.quiet_s)
        self._file = open(self.path, "a", newline="")
        self._writer = csv.writer(self._file)
        if self._file.tell() == 0:
            self._writer.writerow(CSV_COLUMNS)
        self._take("start")
        self.thread = Periodic(self._tick, self.interval_s, name=f"edgebench-health-{self.target.name}")
        self.thread.start()
        return self

    def stop(self) -> bool:
        """Stop sampling (waiting for a read under way); True if the thread ended."""
        ended = self.thread.stop(self.read_timeout_s + self.interval_s + 5) if self.thread is not None else True
        if not ended:
            self.error = self.error or "the health sampling thread did not stop (a read hung)"
        with self._lock:
            if self._file is not None and not self._file.closed:
                self._file.close()
        return ended

    def sample(self) -> Sample | None:
        """Take one sample now (the thread does so every `interval_s`); None if not started."""
        return self._take("periodic") if self.probe is not None and self._file is not None else None

    def _tick(self) -> bool:
        try:
            self._take("periodic")
        except Exception as e:  # noqa: BLE001 - a failed sample is recorded; the next one is tried
            self.error = self.error or f"a health sample raised {message(e)}"
        return True

    # -- reads -------------------------------------------------------------------------
    def _read(self, script: str, what: str) -> tuple[str, float, str]:
        """(stdout, host time of the read's middle, error). One read at a time: a periodic sample
        running during a point's quiet check was its own load there (its shell, and sshd)."""
        # Bounded: a read is never held up longer than one read can take, whatever the other does.
        turn = self._reading.acquire(timeout=self.read_timeout_s + 1)
        try:
            before = time.monotonic()
            try:
                r = run_read(self.target, ["sh", "-c", script], self.read_timeout_s)
            except SensorReadError as e:
                return "", (before + time.monotonic()) / 2, str(e)
            t = (before + time.monotonic()) / 2
        finally:
            if turn:
                self._reading.release()
        return r.stdout, t, "" if r.ok else failure(self.target, what, r)

    def _take(self, kind: str) -> Sample:
        out, t, error = self._read(self._script, "the health sample")
        return self._record(parse_sample(out, self.probe, kind) if not error else Sample(kind, errors=[error]), t)

    def _record(self, s: Sample, t: float, quiet: QuietCheck | None = None) -> Sample:
        s.t, s.time_utc = t, datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with self._lock:
            prev = self._last
            judge(s, prev, self.probe)
            at = bisect.bisect_right(self._times, t)
            self._times.insert(at, t)
            self._samples.insert(at, s)
            self._last = s
            self.counts["samples"] += 1
            self.counts["failed_reads"] += bool(s.errors)
            self.counts["throttled_samples"] += bool(s.throttled or s.throttled_between)
            self._write(s, prev, quiet)
        return s

    def _write(self, s: Sample, prev: Sample | None, quiet: QuietCheck | None) -> None:
        if self._file is None or self._file.closed:
            return
        self._seq += 1
        rows = []

        def row(sensor, item, value, unit="", text=""):
            rows.append([self._seq, f"{s.t - self._t0:.3f}", s.time_utc, s.kind, sensor, item,
                         "" if value is None else value, unit, text])

        if s.cpu is not None and prev is not None and prev.cpu is not None:
            frac = busy_fraction(prev.cpu, s.cpu)
            row("cpu_busy", "all", None if frac is None else round(frac, 4), "fraction",
                "all CPUs since the previous sample, benchmark included")
        if s.loadavg:
            for k in ("1m", "5m", "15m"):
                row("loadavg", k, s.loadavg[k])
            row("tasks_running", "", s.loadavg["running"], "count", f"of {s.loadavg['tasks']}")
        zones = {z.name: z for z in self.probe.zones}
        for name, c in s.temps.items():
            row("temperature", zones[name].label if name in zones else name, c, "C")
        for cpu, (cur, gov, smax) in s.freqs.items():
            row("cpu_freq", cpu, cur, "MHz", gov)
            if smax is not None:
                row("scaling_max_freq", cpu, smax, "MHz")
        if s.throttled_bits is not None:
            row("vcgencmd_throttled", "bits", s.throttled_bits, "", describe_throttled(s.throttled_bits))
        if quiet is not None:
            row("quiet_busy_cpus", "all", None if quiet.busy_cpus is None else round(quiet.busy_cpus, 3), "CPUs",
                quiet.describe())
            row("verdict", BUSY, None if quiet.busy is None else int(quiet.busy), "", quiet.describe())
        verdict = None if s.throttled is None else int(s.throttled or s.throttled_between)
        row("verdict", THROTTLED, verdict, "", "; ".join(s.reasons))
        for e in s.errors:
            row("error", "", None, "", e)
        self._writer.writerows(rows)
        self._file.flush()
        os.fsync(self._file.fileno())

    # -- points and rows ---------------------------------------------------------------
    def begin_point(self) -> None:
        """A measured point starts: the quiet check (and a sample) now, while nothing of it runs."""
        self.end_point()
        start = time.monotonic()
        if self.probe is None:
            self._point = _Point(start, None, QuietCheck(error=self.error or "not started"))
            return
        out, t, error = self._read(self._quiet_script, "the quiet check")
        quiet = (QuietCheck(threshold=self.busy_cpus, error=error) if error
                 else parse_quiet(out, self.probe, self.busy_cpus))
        s = self._record(parse_sample(out, self.probe, "point") if not error else Sample("point", errors=[error]),
                         t, quiet)
        with self._lock:
            self._point = _Point(start, s, quiet)
            self.counts["points"] += 1
            self.counts["busy_points"] += bool(quiet.busy)

    def end_point(self) -> None:
        with self._lock:
            if self._point is not None:
                self._point = None
                self._last_row = time.monotonic()

    def row_health(self, now: float | None = None) -> str:
        """The health of a row written now (the rule is in the module doc)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            point = self._point
            if self.probe is None:
                value = UNKNOWN + (f",{BUSY}" if point is not None and point.quiet.busy else "")
            elif point is not None:
                value = window_health(self._samples, point.start, now, point.sample, point.quiet, self._times)
            else:
                value = window_health(self._samples, self._last_row, now, times=self._times)
                self._last_row = now
            rows = self.counts["rows"]
            rows[value or "fine"] = rows.get(value or "fine", 0) + 1
        return value

    # -- what meta.json says -------------------------------------------------------------
    def summary(self) -> dict:
        p = self.probe
        out = {
            "file": HEALTH_CSV, "interval_s": self.interval_s, "quiet_s": self.quiet_s,
            "busy_threshold_cpus": self.busy_cpus, "error": self.error or None,
            "rule": ("a row is 'throttled' if a sample in its window (its sweep point, else since the previous "
                     "row) throttled by vcgencmd bits 1-3 (or 17-19 newly set), a thermal zone at a passive trip "
                     "point, or scaling_max_freq below its start value; 'busy' if the quiet check before its point "
                     f"saw >= {self.busy_cpus:g} CPUs used over {self.quiet_s:g} s; 'unknown' where that could "
                     "not be judged"),
            "counts": dict(self.counts, rows=dict(self.counts["rows"])),
        }
        if p is None:
            out["missing"] = {"all": self.error or "the monitor was not started"}
            out["throttle_unknown"] = out["missing"]["all"]
            return out
        out.update(p.as_dict())
        return out


__all__ = ["HealthMonitor", "Probe", "Zone", "CpuFreq", "Sample", "QuietCheck", "CpuTimes", "probe", "parse_probe",
           "parse_sample", "parse_quiet", "parse_throttled", "describe_throttled", "parse_cpu_times",
           "parse_loadavg", "busy_fraction", "judge", "window_health", "sample_script", "quiet_script", "flags",
           "is_marked",
           "THROTTLED", "BUSY", "UNKNOWN", "FLAGS", "MARKED", "HEALTH_CSV"]
