"""What a device prints, read into values: vcgencmd's throttling bits, the CPU time of
/proc/stat and the load averages of /proc/loadavg. Nothing here knows which device printed it;
the probe (device.py) and the samples (sample.py, quiet.py) use these on their scripts' output.
A value that is not what it should be raises ValueError, which the callers turn into a reason."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# vcgencmd get_throttled: bit -> meaning (Raspberry Pi firmware).
THROTTLE_BITS = {0: "under-voltage", 1: "arm frequency capped", 2: "currently throttled",
                 3: "soft temperature limit active", 16: "under-voltage has occurred",
                 17: "arm frequency capping has occurred", 18: "throttling has occurred",
                 19: "soft temperature limit has occurred"}
THROTTLED_NOW = (1 << 1) | (1 << 2) | (1 << 3)
THROTTLED_SINCE_BOOT = (1 << 17) | (1 << 18) | (1 << 19)


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


def finite_number(text: str) -> float | None:
    """A sysfs value as a number; None for an empty read, a word, inf or nan."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def tab_lines(text: str) -> list[list[str]]:
    """The scripts' `key<TAB>value...` lines, each split into its fields; empty lines dropped."""
    return [line.split("\t") for line in (text or "").splitlines() if line]


__all__ = ["THROTTLE_BITS", "THROTTLED_NOW", "THROTTLED_SINCE_BOOT", "parse_throttled", "describe_throttled",
           "CpuTimes", "parse_cpu_times", "busy_fraction", "parse_loadavg", "finite_number", "tab_lines"]
