"""The verdicts: whether a sample throttled (`judge`), and a result row's health from the samples
of its window (`window_health`); with the words they are written in ("throttled", "busy",
"unknown") and how tables and figures read them back (`flags`, `is_marked`).

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

Busy: the point's quiet check found the device busy (quiet.py says how it is measured).

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
"""

from __future__ import annotations

import bisect

from edgebench.tools.health.device import Probe
from edgebench.tools.health.parse import THROTTLED_NOW, THROTTLED_SINCE_BOOT, describe_throttled
from edgebench.tools.health.quiet import QuietCheck
from edgebench.tools.health.sample import Sample

THROTTLED, BUSY, UNKNOWN = "throttled", "busy", "unknown"
FLAGS = (THROTTLED, BUSY, UNKNOWN)   # the order they are joined in
MARKED = (THROTTLED, BUSY)           # what tables and figures mark


def flags(value) -> list[str]:
    """'throttled,busy' -> ['throttled', 'busy']; '' or NaN -> []."""
    if not isinstance(value, str):
        return []
    return [f.strip() for f in value.split(",") if f.strip()]


def is_marked(value) -> bool:
    """Whether a row's health says it was measured while the device throttled or was busy."""
    return any(f in MARKED for f in flags(value))


def judge(s: Sample, prev: Sample | None, p: Probe) -> Sample:
    """Set `throttled`, `throttled_between` and `reasons` from the explicit signals (above)."""
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


def window_health(samples: list[Sample], start: float, now: float, first: Sample | None = None,
                  quiet: QuietCheck | None = None, times: list[float] | None = None) -> str:
    """A row's health (the row rule above) from `samples` (sorted by `t`): those in (start, now];
    inside a point `first` is the point's own sample, which counts with its state at that moment
    only (sticky bits it found new were set before the point), and `quiet` its quiet check.
    Outside a point (`quiet` None) a window without samples takes the latest before."""
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


__all__ = ["THROTTLED", "BUSY", "UNKNOWN", "FLAGS", "MARKED", "flags", "is_marked", "judge", "window_health"]
