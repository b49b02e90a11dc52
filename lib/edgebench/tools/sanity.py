"""Results physics or a tool's printing rules out, flagged instead of reported.

A container runs native's own machine code on native's kernel: on CPU- and memory-bound work it
can match native, not beat it by much. When it does, native's baseline is what broke (its
pinning, its threads, a noisy neighbour during its turn), and a ratio against it is no finding.
Likewise apps/stream's native rate far below an independent tool's (stress-ng) on the same
machine in the same run says our native run did not reach the memory it should have. And a ratio
of two times a tool printed to 0.01 s, each a few hundredths long, measures its rounding.

The rules are written here once; tables add a `sanity` column, findings print the reason in
place of the number, and `make compare` carries the column.
"""

from __future__ import annotations

import math

# Runtimes that share the host's kernel and run the same binary (no emulation, no second kernel).
SAME_KERNEL = ("docker", "docker-crun", "lxd")
# Benchmarks whose work is the program's own CPU and memory (no file system, network or start-up
# path that a container could legitimately shorten).
COMPUTE_BENCHMARKS = ("memory", "hpc", "cpu")
# How far ahead of native such a container may be before the result is ruled out: beyond the
# run-to-run spread of a shared 2-core machine (a few percent), short of a real effect.
AHEAD_LIMIT = 0.10
# apps/stream's native rate against stress-ng's: below this, native did not reach memory's rate.
CROSSCHECK_LIMIT = 0.8


def same_kernel(runtime_label: str) -> bool:
    """'docker', 'docker (bridge)', 'docker-crun', 'lxd': containers on native's kernel."""
    return str(runtime_label).split(" ")[0] in SAME_KERNEL


def container_ahead(runtime_label: str, benchmark: str, gain: float) -> str:
    """Why a container's `gain` over native (0.4: 40% better, in the metric's own direction)
    cannot be true, or '' when it can."""
    if not same_kernel(runtime_label) or benchmark not in COMPUTE_BENCHMARKS:
        return ""
    if gain is None or not math.isfinite(gain) or gain <= AHEAD_LIMIT:
        return ""
    return (f"implausible: {runtime_label} {100 * gain:.0f}% ahead of native on {benchmark} work on the same kernel "
            "(a container runs native's code; native's baseline is suspect: its pinning, threads or a busy turn)")


# A value its tool prints in steps (NPB's time in 0.01 s) is known to half a step: a ratio of two
# is the rounding's unless both are this many steps long (rounding then moves it by 1% at most).
RESOLUTION_STEPS = 100


def resolution_rule(printed) -> str:
    """The rule below_resolution applies to a metric printed in steps (a reading.Printed), in words."""
    floor = RESOLUTION_STEPS * printed.step
    return (f"{printed.by} is printed to {printed.step:g} {printed.unit}, so a ratio is read where both medians "
            f"are at least {floor:g} {printed.unit} ({RESOLUTION_STEPS} steps); under it, it is the rounding's")


def below_resolution(medians, printed) -> str:
    """Why a ratio of these medians would read the printing's rounding, not the runtimes, or ''.
    `printed`: the metric's edgebench.experiments.reading.Printed, None where it has none."""
    if printed is None:
        return ""
    known = [m for m in medians if m == m]  # a side without a median is another reason's
    shortest = min(known, default=math.inf)
    if shortest >= RESOLUTION_STEPS * printed.step:
        return ""
    return f"too coarse: a median here is {shortest:g} {printed.unit}; {resolution_rule(printed)}"


def below_crosscheck(ratio: float, tool: str) -> str:
    """Why native's STREAM rate at `ratio` of an independent tool's is suspect, or ''."""
    if ratio is None or not math.isfinite(ratio) or ratio >= CROSSCHECK_LIMIT:
        return ""
    return (f"implausible: native's STREAM rate is {ratio:.2f}x what {tool} measured on the same machine in the "
            f"same run (below {CROSSCHECK_LIMIT:g}x): native's baseline did not reach memory's rate")


# STREAM's own rule: each array at least four times the last-level cache, or the rate is partly
# the cache's (a VM may report its host's 480 MiB L3, under which 76 MiB arrays measure cache).
STREAM_CACHE_FACTOR = 4


def below_stream_rule(array_mib: float, llc_kib: int | None) -> str:
    """Why arrays of `array_mib` measure cache on a machine whose last-level cache is llc_kib, or ''."""
    if not llc_kib or array_mib * 1024 >= STREAM_CACHE_FACTOR * llc_kib:
        return ""
    return (f"STREAM arrays of {array_mib:g} MiB are under {STREAM_CACHE_FACTOR}x the last-level cache "
            f"({llc_kib / 1024:g} MiB): STREAM's rule is unmet, so the rates are partly the cache's "
            f"(give stream_mib={STREAM_CACHE_FACTOR * llc_kib / 1024:g} or more)")
