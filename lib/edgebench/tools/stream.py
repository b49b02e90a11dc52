"""STREAM: the project's kernels (apps/stream, Copy, Scale, Add, Triad) and an independent tool to
check them against (stress-ng's stream stressor), command lines and output parsing.

apps/stream prints STREAM's own report layout, so `parse` reads McCalpin's stream.c too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from edgebench.errors import EdgebenchError

KERNELS = ("copy", "scale", "add", "triad")
# Paper 003's array sizes (STREAM's "Memory per array") and repetitions.
PAPER_ARRAY_MIB = (25.4, 76.3, 228.9)
PAPER_NTIMES = 50
BYTES_PER_ELEMENT = 8


def elements_for_mib(mib: float) -> int:
    """Array length in doubles for `mib` MiB per array (STREAM sizes by elements)."""
    return max(1, round(mib * 2**20 / BYTES_PER_ELEMENT))


def command(elements: int, ntimes: int) -> list[str]:
    if elements < 1 or ntimes < 2:
        raise EdgebenchError(f"stream needs at least 1 element and 2 passes (got {elements}, {ntimes})")
    return ["stream", str(int(elements)), str(int(ntimes))]


_KERNEL_LINE = re.compile(r"^(Copy|Scale|Add|Triad):\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)


def parse(text: str) -> dict:
    """STREAM's report: per kernel the best rate (MB/s, 10^6 bytes) and the average, minimum and
    maximum time; whether the solution validates (and the failure lines if not); threads counted."""
    kernels = {}
    for m in _KERNEL_LINE.finditer(text):
        kernels[m.group(1).lower()] = {"best_rate_mb_s": float(m.group(2)), "avg_time_s": float(m.group(3)),
                                       "min_time_s": float(m.group(4)), "max_time_s": float(m.group(5))}
    if set(kernels) != set(KERNELS):
        raise EdgebenchError(f"STREAM's report lacks kernels {sorted(set(KERNELS) - set(kernels))}: "
                             f"{text.strip()[-300:]!r}")
    out = {"kernels": kernels, "validates": "Solution Validates" in text}
    failures = [line.strip() for line in text.splitlines() if "Failed Validation" in line or "AvgRelAbsErr" in line]
    out["validation"] = "; ".join(failures) if failures else ("validates" if out["validates"] else "no validation line")
    for key, pattern in (("threads_counted", r"Number of Threads counted = (\d+)"),
                         ("threads_requested", r"Number of Threads requested = (\d+)"),
                         ("elements", r"Array size = (\d+)"),
                         ("ntimes", r"Each kernel will be executed (\d+) times")):
        m = re.search(pattern, text)
        out[key] = int(m.group(1)) if m else None
    m = re.search(r"Memory per array = ([\d.]+) MiB", text)
    out["array_mib"] = float(m.group(1)) if m else None
    return out


def stress_ng_l3_kib(array_mib: float) -> int:
    """The cache size to tell stress-ng's stream stressor so that its arrays, split over its
    instances as apps/stream's are over its threads, add up to `array_mib` each (it makes them 4x
    the cache, STREAM's rule; 25.4 MiB gave 41 MB resident per instance of two). Left to itself it
    sizes them from the L3 the CPU reports, and a VM may report its host's: with 480 MiB it
    allocated 2.9 GB per instance and finished too few passes in 6 s to print a rate."""
    return max(4, round(array_mib * 1024 / 4))  # 4 KiB: the smallest stress-ng accepts


def stress_ng_command(instances: int, seconds: int, array_mib: float) -> list[str]:
    """stress-ng's stream stressor, one instance per core, with arrays of about `array_mib` MiB
    (main memory's rate, as STREAM's rules ask, at the size apps/stream measured)."""
    return ["stress-ng", "--stream", str(instances), "--stream-l3-size", f"{stress_ng_l3_kib(array_mib)}K",
            "--timeout", f"{int(seconds)}s", "--metrics"]


_STRESS_RATE = re.compile(r"stream\s+([\d.]+) memory (read|write) rate \(MB per sec\)(?: \((?:geometic|geometric) "
                          r"mean of (\d+) instances\))?")


def parse_stress_ng_stream(text: str) -> dict:
    """stress-ng's metrics: read and write rates per instance (its geometric mean over instances),
    and `rate_mb_s`, the machine's total (read + write, times the instances)."""
    found = {}
    instances = 1
    for m in _STRESS_RATE.finditer(text):
        found[m.group(2)] = float(m.group(1))
        if m.group(3):
            instances = int(m.group(3))
    if set(found) != {"read", "write"}:
        why = re.search(r"stream: (run duration too short[^\n]*)", text)
        if why:
            raise StressNgTooShort(f"stress-ng printed no stream memory rate: {why.group(1)} (run it longer, "
                                   "at least 5 s)")
        errors = re.findall(r"stress-ng: error: \[\d+\] (.*)", text)
        raise EdgebenchError("stress-ng printed no stream memory rate: "
                             + ("; ".join(errors[:2]) if errors else f"{text.strip()[-200:]!r}"))
    return {"read_mb_s": found["read"], "write_mb_s": found["write"], "instances": instances,
            "rate_mb_s": (found["read"] + found["write"]) * instances}


class StressNgTooShort(EdgebenchError):
    """stress-ng's stream stressor timed too little of its kernels to print a rate (it needs about
    4.5 s of them): a slow or busy device spends a short run filling its arrays."""


# How much longer the second try runs: an emulated arm64 board finished 2 passes in a 6 s run.
STRESS_NG_LONGER = 4


@dataclass
class StressNgStream:
    """What measure_with_stress_ng ran (each try's command line and result) and what it read."""
    tries: list = field(default_factory=list)   # (argv, CommandResult)
    rates: dict | None = None                   # parse_stress_ng_stream's, and "seconds" it ran
    error: str | None = None


def measure_with_stress_ng(target, instances: int, seconds: int, array_mib: float) -> StressNgStream:
    """stress-ng's stream stressor on the target; where the run was too short for a rate on this
    device, once more STRESS_NG_LONGER times as long, as stress-ng asks."""
    got = StressNgStream()
    for secs in (seconds, seconds * STRESS_NG_LONGER):
        argv = stress_ng_command(instances, secs, array_mib)
        r = target.run(argv, timeout=120 + 2 * secs, check=False)
        got.tries.append((argv, r))
        try:
            got.rates, got.error = dict(parse_stress_ng_stream(r.stdout + r.stderr), seconds=secs), None
            break
        except StressNgTooShort as e:
            got.error = str(e)
        except EdgebenchError as e:
            got.error = str(e)
            break
    return got
