"""What a device has to read its health from, found once per run by `probe` (one command:
scripts/health_probe.sh), and why the rest is missing.

What the samples then read (sample.py, quiet.py):

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
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from edgebench.scripts import shell_script, with_args
from edgebench.targets import Target
from edgebench.tools.health.parse import describe_throttled, finite_number, parse_throttled, tab_lines
from edgebench.tools.sensors import SensorReadError, failure, run_read

DEFAULT_SYSFS = "/sys"
DEFAULT_PROCFS = "/proc"
READ_TIMEOUT_S = 10.0
VCGENCMD_HINT = ("install the package that provides vcgencmd (libraspberrypi-bin; raspi-utils on newer "
                 "Raspberry Pi OS)")
PROBE_SCRIPT = shell_script("health_probe.sh")


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


def parse_probe(text: str, target: str, sysfs: str = DEFAULT_SYSFS, procfs: str = DEFAULT_PROCFS) -> Probe:
    """The probe script's output -> Probe, with a reason for every sensor that is missing."""
    p = Probe(target, sysfs, procfs)
    zones: dict[str, Zone] = {}
    thermal_dir = cpu_dir = False
    vc = None
    for parts in tab_lines(text):
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
            zones[rest[0]] = Zone(rest[0], rest[1].strip(), finite_number(rest[2]) is not None)
        elif key == "trip" and rest[0] in zones:
            c = finite_number(rest[3])
            if c is not None:
                zones[rest[0]].trips.append((rest[2].strip(), c / 1000))
        elif key == "cpu_dir":
            cpu_dir = True
        elif key == "cpufreq":
            mx, smx = finite_number(rest[1]), finite_number(rest[3])
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
    r = run_read(target, ["sh", "-c", with_args(PROBE_SCRIPT, sysfs, procfs, vcgencmd)], timeout)
    if not r.ok:
        raise SensorReadError(failure(target, "the health sensors' listing", r))
    return parse_probe(r.stdout, target.name, sysfs, procfs)


__all__ = ["DEFAULT_SYSFS", "DEFAULT_PROCFS", "READ_TIMEOUT_S", "VCGENCMD_HINT", "Zone", "CpuFreq", "Probe",
           "parse_probe", "probe"]
