"""Energy of one benchmark run and its Energy-Delay Product (EDP), for paper 003.

EDP = E x t (J*s): the energy a run used times the time it took. It weighs speed and frugality
together: a runtime that finishes sooner at the same energy, or uses less energy in the same time,
has the lower EDP. Paper 003 reports it per benchmark, native against containers.

Idle is subtracted. A board draws power doing nothing (regulators, RAM refresh, fans, the OS),
and a meter reads the whole board: `energy_total` is what the meter saw, `energy` what the run
added on top of the idle power measured before the sweep (`idle_power`), E = energy_total -
idle_w x duration_s. The idle part is the board's, not the workload's, and it would otherwise make
every slower run look worse twice (once in t, once in E). The rows keep both. `energy` may come out
negative for a run that draws less than the idle baseline (noise, a throttled board): it is
recorded as measured, never clipped.

Meters live in one registry (`METERS`, name -> class); `find_meter(target, spec)` returns
(meter, None) or (None, the reason there is none). Spec strings:

    auto                         the first of the sysfs meters that the target has (powercap, then
                                 hwmon); `command` is never guessed
    none                         no meter: every energy row is missing with that reason
    powercap[:ZONE,...]          RAPL and other powercap zones: /sys/class/powercap/*:*/energy_uj
                                 (cumulative uJ, wraps at max_energy_range_uj). Default: every
                                 top-level package zone plus its `dram` subzone; `core`/`uncore`
                                 subzones are parts of the package and `psys` (the platform)
                                 contains it, so adding them would count energy twice; an
                                 intel-rapl-mmio zone is the same package counter again. ZONE is a
                                 zone name (package-0, dram, psys) or id (intel-rapl:0:1).
    hwmon[:DEVICE[/SENSOR,...]]  /sys/class/hwmon/hwmon*/: energy*_input (cumulative uJ) preferred,
                                 else power*_input, else power*_average (uW, integrated over the
                                 samples by the trapezoid rule). Default: one sensor, the energy
                                 counter or power sensor whose label names a whole (total, socket,
                                 package, board...) first. DEVICE is the hwmon `name` (ina219,
                                 corsairpsu) or directory (hwmon3); SENSOR a file (power1_input), a
                                 channel (power1) or a label (Esocket0); several are added up.
    command:joules:CMD           CMD, a shell command run on the target, prints the meter's
                                 cumulative energy (a bare number is joules; units J, kJ, mJ, uJ,
                                 Wh, mWh are converted)
    command:watts:CMD            CMD prints the instantaneous power (bare number: watts; W, mW, uW)
    command:CMD                  the unit each reading prints says which of the two it is

One reading per invocation; the last non-empty line of stdout counts. This is how a USB power
meter, a smart plug or an INA219 read from user space (smbus) on a Raspberry Pi is read, e.g.
`command:watts:ina219-read` or `command:joules:cat /run/meter/total`. (An INA219 bound to the
kernel's ina2xx driver is an hwmon device already: `hwmon:ina219`.)

Every read goes through the Target (`run`), so an SSH target is metered the same way as this
machine; `root` points the sysfs meters at another tree (the tests build one). A read is a command
on the device under test (a `cat`, five times a second for a power sensor): the meter's own cost is
part of what it measures, the same for every runtime.

A read that fails during a run makes that run's energy missing with the reason, never zero; so
does a counter that goes backwards where no wrap is possible.

The module holds the meter interface (PowerMeter), its three kinds (powercap, hwmon, a command),
the sampler that reads any of them around one run, and the arithmetic and rows made of what it saw.
It is one module because the meters differ only in how they find and read a sensor (about 50 lines
each): what they share (sampling, integration, counter wraps, idle power, the rows) is written once
beside them, in the order a measurement goes through it, and a reader compares the three side by
side. The sensor listings they run on the device are lib/edgebench/scripts/energy_*.sh.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from edgebench.errors import ConfigError
from edgebench.scripts import shell_script, with_args
from edgebench.targets import CommandResult, Target
from edgebench.tools.sensors import Periodic, SensorReadError, run_read
from edgebench.tools.sensors import failure as _failed
from edgebench.tools.sensors import message as _message

DEFAULT_ROOT = "/sys"
READ_TIMEOUT_S = 10.0
ENERGY_INTERVAL_S = 1.0   # cumulative counters that can wrap: read often enough to see every wrap
POWER_INTERVAL_S = 0.2    # instantaneous power: the integration step
# The sensor listings, one command each (lib/edgebench/scripts/).
POWERCAP_LIST_SCRIPT = shell_script("energy_powercap_list.sh")
HWMON_LIST_SCRIPT = shell_script("energy_hwmon_list.sh")
HOW_TO_ADD = ("pass power_meter='command:watts:<cmd>' (or 'command:joules:<cmd>') to read an external "
              "meter (a USB meter, a smart plug, an INA219)")

# (metric, unit) of every energy row, in the order they are written.
METRICS = (("energy", "J"), ("energy_total", "J"), ("average_power", "W"), ("edp", "J*s"))


class PowerMeterError(SensorReadError):
    """A meter could not be read; the message names the file or command and why."""


# -- arithmetic ------------------------------------------------------------------------

def edp(energy_j: float, duration_s: float) -> float:
    """Energy-Delay Product in J*s."""
    return energy_j * duration_s


def energy_above_idle(measurement: "Measurement", idle_w: float) -> float:
    """The run's energy less what the board would have drawn idle over the same time."""
    if not measurement.ok:
        raise PowerMeterError(f"no energy to subtract idle from: {measurement.error}")
    return measurement.energy_j - idle_w * measurement.duration_s


def integrate(samples: list[tuple[float, float]]) -> float:
    """Joules from (t seconds, watts) samples, trapezoid rule."""
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(samples, samples[1:]))


# -- one measurement ---------------------------------------------------------------------

@dataclass
class Measurement:
    """What a meter saw over one run. `samples` are (host monotonic time, value): for an energy
    counter the joules since the first reading, for a power sensor the watts. `duration_s` is the
    time the energy covers (first reading to last). Missing (`energy_j` None) with `error` when a
    read failed or the run was interrupted."""
    meter: str
    kind: str                       # "energy" (cumulative counter) or "power" (instantaneous)
    samples: list[tuple[float, float]] = field(default_factory=list)
    energy_j: float | None = None
    duration_s: float | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.energy_j is not None and not self.error

    @property
    def average_w(self) -> float | None:
        if not self.ok or not self.duration_s:
            return None
        return self.energy_j / self.duration_s

    def as_dict(self) -> dict:
        return {"meter": self.meter, "kind": self.kind, "energy_j": self.energy_j,
                "duration_s": self.duration_s, "average_w": self.average_w, "error": self.error,
                "samples": [list(s) for s in self.samples]}


class Sampler:
    """`with meter.measure() as m:` reads at entry and exit and, for power sensors and counters
    that wrap, every `interval_s` in between from a daemon thread; the thread is stopped on the
    way out, whatever ends the body (an exception, Ctrl-C)."""

    def __init__(self, meter: "PowerMeter", interval_s: float):
        self.meter = meter
        self.interval_s = interval_s
        self.measurement = Measurement(meter.describe(), meter.kind)
        self.thread: Periodic | None = None
        self._last: list[float] | None = None
        self._joules = 0.0
        self._error = ""

    def _take(self) -> None:
        before = time.monotonic()
        values = self.meter.read()
        t = (before + time.monotonic()) / 2  # the read took time; its middle is the best estimate
        if self.meter.kind == "power":
            self.measurement.samples.append((t, sum(values)))
            return
        if self._last is not None:
            self._joules += self.meter.increment(self._last, values)
        self._last = values
        self.measurement.samples.append((t, self._joules))

    def _tick(self) -> bool:
        try:
            self._take()
            return True
        except Exception as e:  # any failure makes the run's energy missing
            self._error = _message(e)
            return False

    def __enter__(self) -> Measurement:
        try:
            self._take()
        except Exception as e:  # the same: the run's energy is missing with the reason
            self.measurement.error = f"the power meter failed before the run: {_message(e)}"
            return self.measurement
        if self.meter.periodic:
            self.thread = Periodic(self._tick, self.interval_s, name=f"edgebench-power-{self.meter.name}")
            self.thread.start()
        return self.measurement

    def __exit__(self, exc_type, exc, tb) -> bool:
        m = self.measurement
        try:
            if self.thread is not None and not self.thread.stop(self.meter.read_timeout_s + self.interval_s + 5):
                self._error = self._error or "the sampling thread did not stop (a read hung)"
        finally:
            if m.error:
                pass
            elif exc_type is not None:
                what = ("interrupted" if issubclass(exc_type, KeyboardInterrupt)
                        else f"raised {exc_type.__name__}")
                m.error = f"the measured run {what}"
            elif self._error:
                m.error = f"the power meter failed during the run: {self._error}"
            else:
                try:
                    self._take()
                    self._finish()
                except Exception as e:  # the same: the run's energy is missing with the reason
                    m.error = f"the power meter failed at the end of the run: {_message(e)}"
        return False

    def _finish(self) -> None:
        m = self.measurement
        (t0, _), (t1, last) = m.samples[0], m.samples[-1]
        m.duration_s = t1 - t0
        m.energy_j = integrate(m.samples) if self.meter.kind == "power" else last


# -- meters ------------------------------------------------------------------------------

class PowerMeter(ABC):
    """One way of reading a device's energy. A backend supplies `probe` (find it on a target, or
    say why not) and `read` (one value per sensor: joules for kind "energy", watts for "power");
    sampling, integration, wraps and idle power are done here."""

    name: ClassVar[str]
    syntax: ClassVar[str]           # how a spec names it, for error messages
    auto: ClassVar[bool] = True     # whether spec "auto" tries it

    def __init__(self, target: Target, kind: str, sensors: list[str], *, wrap_j: list[float | None] | None = None,
                 interval_s: float | None = None, read_timeout_s: float = READ_TIMEOUT_S):
        if kind not in ("energy", "power"):
            raise ValueError(f"kind must be energy or power, not {kind!r}")
        if interval_s is not None and not interval_s > 0:
            raise ConfigError(f"interval_s={interval_s!r}: the sampling interval must be > 0 seconds")
        self.target = target
        self.kind = kind
        self.sensors = sensors
        self.wrap_j = wrap_j if wrap_j is not None else [None] * len(sensors)
        self.interval_s = interval_s or (POWER_INTERVAL_S if kind == "power" else ENERGY_INTERVAL_S)
        self.read_timeout_s = read_timeout_s

    # -- what a backend supplies ------------------------------------------------------
    @classmethod
    def check_arg(cls, arg: str) -> None:
        """Raise ConfigError if the part of the spec after the name is malformed."""
        if arg:
            raise ConfigError(f"power meter {cls.name!r} takes no argument (got {arg!r}); use {cls.syntax}")

    @classmethod
    @abstractmethod
    def probe(cls, target: Target, arg: str = "", *, root: str = DEFAULT_ROOT,
              interval_s: float | None = None) -> "PowerMeter | str":
        """The meter on this target, or why there is none (a sentence)."""

    @abstractmethod
    def read(self) -> list[float]:
        """One value per sensor (J or W); raises PowerMeterError."""

    # -- shared ---------------------------------------------------------------------------
    @property
    def periodic(self) -> bool:
        """Read during the run too: always for power, for counters only where they can wrap."""
        return self.kind == "power" or any(w for w in self.wrap_j)

    def increment(self, before: list[float], after: list[float]) -> float:
        """Joules between two readings of the counters, across at most one wrap of each."""
        total = 0.0
        for sensor, b, a, wrap in zip(self.sensors, before, after, self.wrap_j):
            if a >= b:
                total += a - b
            elif wrap:
                total += wrap - b + a
            else:
                raise PowerMeterError(f"{sensor} went backwards ({b:.6g} J -> {a:.6g} J) and has no known "
                                      "wrap-around: the meter was reset?")
        return total

    def describe(self) -> str:
        return f"{self.name} on {self.target.name}: {' + '.join(self.sensors)} ({self.kind})"

    def measure(self, interval_s: float | None = None) -> Sampler:
        return Sampler(self, interval_s or self.interval_s)

    def idle_power(self, seconds: float) -> float:
        """The device's power (W) while nothing runs, averaged over `seconds`."""
        if not seconds > 0:
            raise ConfigError(f"idle_power(seconds={seconds!r}): measure idle for more than 0 seconds")
        with self.measure() as m:
            time.sleep(seconds)
        if not m.ok:
            raise PowerMeterError(f"idle power from {self.describe()}: {m.error}")
        return m.average_w

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


def _run(target: Target, command, timeout: float) -> CommandResult:
    return run_read(target, command, timeout, PowerMeterError)


def _read_numbers(target: Target, paths: list[str], timeout: float, hint: str = "") -> list[int]:
    r = _run(target, ["cat", *paths], timeout)
    if not r.ok:
        raise PowerMeterError(_failed(target, ", ".join(paths), r, hint))
    words, shown = r.stdout.split(), repr(r.stdout.strip()[:200])
    try:
        values = [int(w) for w in words]
    except ValueError:
        raise PowerMeterError(f"{', '.join(paths)} on {target.name}: not integers: {shown}") from None
    if len(values) != len(paths):
        raise PowerMeterError(f"{len(paths)} files on {target.name} gave {len(values)} values: {shown}")
    return values


def _listing(target: Target, script: str, timeout: float) -> list[list[str]]:
    r = _run(target, ["sh", "-c", script], timeout)
    if not r.ok:
        raise PowerMeterError(_failed(target, "the sensor listing", r))
    return [line.split("\t") for line in r.stdout.splitlines() if line]


# -- powercap (RAPL) ---------------------------------------------------------------------

RAPL_ROOT_HINT = ("since Linux 5.10 energy_uj is readable only by root (CVE-2020-8694): run as root or "
                  "grant read access to the energy_uj files (a udev rule or chmod)")


@dataclass(frozen=True)
class Zone:
    id: str               # intel-rapl:0:1
    name: str             # package-0, core, dram, psys
    max_range_uj: int | None

    @property
    def control_type(self) -> str:
        return self.id.split(":")[0]

    @property
    def depth(self) -> int:
        return self.id.count(":")


def select_zones(zones: list[Zone], wanted: list[str] | None = None) -> list[Zone]:
    """The zones whose energies add up without counting anything twice (see the module doc),
    or the ones `wanted` names (by name or id)."""
    # The same package through another interface (intel-rapl-mmio:0 next to intel-rapl:0).
    names = {(z.name, z.depth) for z in zones if not z.control_type.endswith("-mmio")}
    zones = [z for z in zones if not (z.control_type.endswith("-mmio") and (z.name, z.depth) in names)]
    if wanted:
        return [z for z in zones if z.name in wanted or z.id in wanted]
    tops = [z for z in zones if z.depth == 1 and z.name != "psys"]
    chosen = [z for z in zones if z in tops or (z.depth == 2 and z.name == "dram"
                                                and any(z.id.startswith(t.id + ":") for t in tops))]
    return chosen or [z for z in zones if z.depth == 1]  # psys alone where it is all there is


class PowercapMeter(PowerMeter):
    name = "powercap"
    syntax = "'powercap' or 'powercap:ZONE,...' (a zone name such as package-0 or dram, or an id such as intel-rapl:0)"

    def __init__(self, target: Target, zones: list[Zone], root: str = DEFAULT_ROOT, **kw):
        super().__init__(target, "energy", [f"{z.name} ({z.id})" for z in zones],
                         wrap_j=[z.max_range_uj / 1e6 if z.max_range_uj else None for z in zones], **kw)
        self.zones = zones
        self.paths = [f"{root}/class/powercap/{z.id}/energy_uj" for z in zones]

    @classmethod
    def check_arg(cls, arg: str) -> None:
        if arg and not all(w.strip() for w in arg.split(",")):
            raise ConfigError(f"power_meter='powercap:{arg}': an empty zone name; use {cls.syntax}")

    @classmethod
    def probe(cls, target, arg="", *, root=DEFAULT_ROOT, interval_s=None):
        where = f"{root}/class/powercap"
        try:
            lines = _listing(target, with_args(POWERCAP_LIST_SCRIPT, root), READ_TIMEOUT_S)
        except PowerMeterError as e:
            return str(e)
        if lines[:1] == [["nodir"]]:
            return (f"no {where} on {target.name} (no powercap driver: a CPU without RAPL, or a VM "
                    "that does not expose it)")
        rows = [(line + ["", "", ""])[:4] for line in lines]
        zones = [Zone(zid, name or zid, int(rng) if rng.isdigit() else None)
                 for zid, name, has_energy, rng in rows if has_energy == "yes"]
        if not zones:
            seen = ", ".join(f"{zid} ({name})" for zid, name, *_ in rows) or "none"
            return f"no zone with an energy_uj counter under {where} on {target.name} (zones: {seen})"
        wanted = [w.strip() for w in arg.split(",") if w.strip()] or None
        chosen = select_zones(zones, wanted)
        if not chosen:
            return (f"no powercap zone named {', '.join(wanted)} under {where} on {target.name} "
                    f"(there: {', '.join(f'{z.id} ({z.name})' for z in zones)})")
        meter = cls(target, chosen, root, interval_s=interval_s)
        try:
            meter.read()
        except PowerMeterError as e:
            return f"no readable zone under {where}: {e}"
        return meter

    def read(self) -> list[float]:
        return [v / 1e6 for v in _read_numbers(self.target, self.paths, self.read_timeout_s, RAPL_ROOT_HINT)]


# -- hwmon -------------------------------------------------------------------------------

_SENSOR_RE = re.compile(r"^(?P<kind>energy|power)(?P<channel>\d+)_(?P<attr>input|average)$")
_WHOLE_RE = re.compile(r"total|socket|package|pkg|board|system|card|ppt", re.I)


@dataclass(frozen=True)
class HwmonSensor:
    hwmon: str        # hwmon3
    device: str       # the `name` file: ina219, amd_energy, corsairpsu
    file: str         # power1_input (device/power1_average for a driver of the older kind)
    label: str        # the *_label file, or ""

    @property
    def attribute(self) -> str:
        return self.file.rsplit("/", 1)[-1]

    @property
    def kind(self) -> str:
        return "energy" if self.attribute.startswith("energy") else "power"

    @property
    def channel(self) -> str:
        return self.attribute.rsplit("_", 1)[0]

    def rank(self) -> tuple:
        """Energy counters first, then power*_input, then power*_average; a label naming a whole
        before the rest; then by hwmon and channel number."""
        m = _SENSOR_RE.match(self.attribute)
        order = 0 if self.kind == "energy" else 1 if m.group("attr") == "input" else 2
        return (order, 0 if _WHOLE_RE.search(self.label) else 1, int(re.sub(r"\D", "", self.hwmon) or 0),
                int(m.group("channel")))

    def describe(self) -> str:
        label = f" '{self.label}'" if self.label else ""
        return f"{self.device} {self.hwmon}/{self.file}{label}"


def parse_hwmon_listing(lines: list[list[str]]) -> tuple[list[tuple[str, str]], list[HwmonSensor]]:
    devices, sensors, names = [], [], {}
    for parts in lines:
        parts = parts + ["", "", ""]
        if parts[0] == "device":
            names[parts[1]] = parts[2] or parts[1]
            devices.append((parts[1], parts[2]))
        elif parts[0] == "sensor" and _SENSOR_RE.match(parts[2].rsplit("/", 1)[-1]):
            sensors.append(HwmonSensor(parts[1], names.get(parts[1], parts[1]), parts[2], parts[3].strip()))
    return devices, sensors


def select_sensors(sensors: list[HwmonSensor], arg: str = "") -> list[HwmonSensor] | str:
    """The best single sensor, or those `arg` (DEVICE[/SENSOR,...]) names; a str says why none."""
    device, _, wanted = arg.partition("/")
    if device:
        sensors = [s for s in sensors if device in (s.device, s.hwmon)]
        if not sensors:
            return f"no power or energy sensor on an hwmon device named {device!r}"
    if wanted:
        names = [w.strip() for w in wanted.split(",") if w.strip()]
        picked = []
        for name in names:
            match = sorted((s for s in sensors if name in (s.file, s.attribute, s.channel, s.label)),
                           key=HwmonSensor.rank)
            if not match:
                return f"no sensor {name!r} on {device} (there: {', '.join(s.describe() for s in sensors)})"
            picked.append(match[0])
        if len({s.kind for s in picked}) > 1:
            return "the sensors named mix energy counters and power sensors; name one kind"
        return picked
    return [min(sensors, key=HwmonSensor.rank)]


class HwmonMeter(PowerMeter):
    name = "hwmon"
    syntax = "'hwmon' or 'hwmon:DEVICE[/SENSOR,...]' (e.g. hwmon:ina219, hwmon:amd_energy/Esocket0,Esocket1)"

    def __init__(self, target: Target, sensors: list[HwmonSensor], root: str = DEFAULT_ROOT, **kw):
        super().__init__(target, sensors[0].kind, [s.describe() for s in sensors], **kw)
        self.paths = [f"{root}/class/hwmon/{s.hwmon}/{s.file}" for s in sensors]

    @classmethod
    def check_arg(cls, arg: str) -> None:
        device, slash, wanted = arg.partition("/")
        if (arg and not device) or (slash and not wanted.strip(", ")):
            raise ConfigError(f"power_meter='hwmon:{arg}' names no device or sensor; use {cls.syntax}")

    @classmethod
    def probe(cls, target, arg="", *, root=DEFAULT_ROOT, interval_s=None):
        where = f"{root}/class/hwmon"
        try:
            lines = _listing(target, with_args(HWMON_LIST_SCRIPT, root), READ_TIMEOUT_S)
        except PowerMeterError as e:
            return str(e)
        if lines[:1] == [["nodir"]]:
            return f"no {where} on {target.name}"
        devices, sensors = parse_hwmon_listing(lines)
        if not sensors:
            seen = ", ".join(f"{h} ({n})" for h, n in devices) or "no devices"
            return (f"no energy*_input, power*_input or power*_average sensor under {where} on "
                    f"{target.name} ({seen})")
        chosen = select_sensors(sensors, arg)
        if isinstance(chosen, str):
            return f"{chosen} under {where} on {target.name}"
        meter = cls(target, chosen, root, interval_s=interval_s)
        try:
            meter.read()
        except PowerMeterError as e:
            return f"no readable sensor under {where}: {e}"
        return meter

    def read(self) -> list[float]:
        return [v / 1e6 for v in _read_numbers(self.target, self.paths, self.read_timeout_s)]


# -- an external meter, read by a command --------------------------------------------------

_KINDS = {"joules": "energy", "watts": "power"}
_UNITS = {  # lower-case unit -> (kind, factor to J or W)
    "j": ("energy", 1.0), "joule": ("energy", 1.0), "joules": ("energy", 1.0), "kj": ("energy", 1e3),
    "mj": ("energy", 1e-3), "uj": ("energy", 1e-6), "µj": ("energy", 1e-6), "wh": ("energy", 3600.0),
    "mwh": ("energy", 3.6), "kwh": ("energy", 3.6e6),
    "w": ("power", 1.0), "watt": ("power", 1.0), "watts": ("power", 1.0), "mw": ("power", 1e-3),
    "uw": ("power", 1e-6), "µw": ("power", 1e-6), "kw": ("power", 1e3),
}
_READING_RE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ]*)\s*$")


def parse_reading(text: str, kind: str | None) -> tuple[str, float]:
    """(kind, value in J or W) from a command's output: its last non-empty line, a number and an
    optional unit. A bare number is what `kind` says it is."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise PowerMeterError("the meter command printed nothing")
    m = _READING_RE.match(lines[-1])
    if not m:
        raise PowerMeterError(f"the meter command printed {lines[-1].strip()[:100]!r}, not a number with an "
                              "optional unit (J, Wh, W, mW...)")
    value, unit = float(m.group(1)), m.group(2).lower()
    if not unit:
        if kind is None:
            raise PowerMeterError(f"the meter command printed a bare number ({m.group(1)}); say what it is: "
                                  "'command:joules:CMD' or 'command:watts:CMD'")
        return kind, value
    if unit not in _UNITS:
        raise PowerMeterError(f"the meter command printed an unknown unit {m.group(2)!r} (J, kJ, mJ, uJ, Wh, "
                              "mWh, W, mW, uW)")
    unit_kind, factor = _UNITS[unit]
    if kind is not None and unit_kind != kind:
        raise PowerMeterError(f"the meter command printed {lines[-1].strip()!r} ({unit_kind}) but the spec says "
                              f"{'joules' if kind == 'energy' else 'watts'}")
    return unit_kind, value * factor


def split_command_arg(arg: str) -> tuple[str | None, str]:
    """'joules:CMD' -> ('energy', CMD); 'watts:CMD' -> ('power', CMD); 'CMD' -> (None, CMD)."""
    head, sep, rest = arg.partition(":")
    if head.strip().lower() in _KINDS:
        return _KINDS[head.strip().lower()], rest.strip() if sep else ""
    return None, arg.strip()


class CommandMeter(PowerMeter):
    name = "command"
    syntax = "'command:joules:CMD', 'command:watts:CMD' or 'command:CMD' (CMD prints one reading with its unit)"
    auto = False

    def __init__(self, target: Target, command: str, kind: str, **kw):
        super().__init__(target, kind, [f"`{command}`"], **kw)
        self.command = command

    @classmethod
    def check_arg(cls, arg: str) -> None:
        if not split_command_arg(arg)[1]:
            raise ConfigError(f"power_meter='command:{arg}' gives no command; use {cls.syntax}")

    @classmethod
    def probe(cls, target, arg="", *, root=DEFAULT_ROOT, interval_s=None):
        kind, command = split_command_arg(arg)
        try:
            kind, _ = parse_reading(cls._output(target, command, READ_TIMEOUT_S), kind)
        except PowerMeterError as e:
            return f"the meter command `{command}` on {target.name}: {e}"
        return cls(target, command, kind, interval_s=interval_s)

    @staticmethod
    def _output(target: Target, command: str, timeout: float) -> str:
        r = _run(target, command, timeout)
        if not r.ok:
            raise PowerMeterError(_failed(target, f"`{command}`", r))
        return r.stdout

    def read(self) -> list[float]:
        return [parse_reading(self._output(self.target, self.command, self.read_timeout_s), self.kind)[1]]


# -- registry ----------------------------------------------------------------------------

METERS: dict[str, type[PowerMeter]] = {
    "powercap": PowercapMeter,
    "hwmon": HwmonMeter,
    "command": CommandMeter,
}
NO_METER = ("none", "off")


def _choices() -> str:
    auto = ", ".join(name for name, cls in METERS.items() if cls.auto)
    return "; ".join([f"'auto' (the first of {auto} that the target has)", "'none'",
                      *(cls.syntax for cls in METERS.values())])


def check_spec(spec: str | None) -> str:
    """The spec, checked before anything starts; ConfigError naming the choices otherwise."""
    text = "none" if spec is None else str(spec).strip()
    name, sep, arg = text.partition(":")
    name = name.strip().lower()
    if name in ("auto", *NO_METER) and not sep:
        return name
    if name not in METERS:
        raise ConfigError(f"unknown power meter {spec!r}; choose {_choices()}")
    if sep and not arg.strip():
        raise ConfigError(f"power_meter={spec!r} names nothing after ':'; use {METERS[name].syntax}")
    METERS[name].check_arg(arg.strip())
    return f"{name}:{arg.strip()}" if arg.strip() else name


def find_meter(target: Target, spec: str | None = "auto", *, root: str = DEFAULT_ROOT,
               interval_s: float | None = None) -> tuple[PowerMeter | None, str | None]:
    """(meter, None), or (None, a sentence saying what was looked for and how to add a meter)."""
    text = check_spec(spec)
    name, _, arg = text.partition(":")
    if name in NO_METER:
        return None, f"no power meter: power_meter={spec!r} was given"
    if name != "auto":
        found = METERS[name].probe(target, arg, root=root, interval_s=interval_s)
        if isinstance(found, PowerMeter):
            return found, None
        return None, f"power meter {text!r} unavailable on {target.name}: {found}" + (
            "" if name == "command" else f"; {HOW_TO_ADD}")
    reasons = []
    for meter_name, cls in METERS.items():
        if not cls.auto:
            continue
        found = cls.probe(target, "", root=root, interval_s=interval_s)
        if isinstance(found, PowerMeter):
            return found, None
        reasons.append(f"{meter_name}: {found}")
    return None, f"no power meter on {target.name}: {'; '.join(reasons)}; {HOW_TO_ADD}"


# -- result rows ---------------------------------------------------------------------------

def missing_rows(reason: str) -> list[dict]:
    """Every energy metric, missing with the reason (the caller writes them as not measurable)."""
    return [{"metric": metric, "value": None, "unit": unit, "note": "", "error": reason}
            for metric, unit in METRICS]


def measurement_rows(measurement: Measurement, idle_w: float | None,
                     duration_s: float | None = None) -> list[dict]:
    """Rows (metric, value, unit, note, error) of one run: energy above idle, energy as measured,
    average power and EDP. `duration_s` is the delay in the EDP (the run's own time, if the caller
    timed it; else the span the energy covers). A value that cannot be had is None with the reason."""
    m = measurement
    if not m.ok:
        return missing_rows(m.error or "the power meter gave no energy for this run")
    delay = m.duration_s if duration_s is None else duration_s
    delay_note = "the run's time" if duration_s is not None else "the measured span"
    rows = {
        "energy_total": (m.energy_j, f"{m.meter}; as measured, idle included", ""),
        "average_power": (m.average_w, f"{m.meter}; energy_total / {m.duration_s:.4g} s",
                          "" if m.average_w is not None else "the measurement spans no time"),
    }
    if idle_w is None:
        why = "no idle power baseline was measured, so the energy above idle is unknown"
        rows["energy"] = (None, "", why)
        rows["edp"] = (None, "", why)
    else:
        above = energy_above_idle(m, idle_w)
        rows["energy"] = (above, f"{m.meter}; idle {idle_w:.4g} W x {m.duration_s:.4g} s subtracted", "")
        rows["edp"] = (edp(above, delay), f"{m.meter}; energy above idle x {delay:.4g} s ({delay_note})", "")
    return [{"metric": metric, "value": rows[metric][0], "unit": unit, "note": rows[metric][1],
             "error": rows[metric][2]} for metric, unit in METRICS]


__all__ = ["PowerMeter", "PowercapMeter", "HwmonMeter", "CommandMeter", "METERS", "Measurement", "Sampler",
           "PowerMeterError", "find_meter", "check_spec", "edp", "energy_above_idle", "integrate",
           "missing_rows", "measurement_rows", "METRICS"]
