"""Busy: the load from other processes, judged by a quiet check right before each measured point.

During a measurement the benchmark's own load is expected, so CPU use then says nothing about
others. Busy is judged when nothing of the run's measurement runs: right before each measured
point (`HealthMonitor.begin_point`, called by experiments.sweep), one command
(scripts/health_quiet.sh) reads /proc/stat, sleeps `quiet_s` (QUIET_S, 0.1 s) on the device and
reads it again. The CPU time used in that window, in CPUs (user + nice + system + irq + softirq +
steal over the elapsed ticks, times the number of CPUs; steal counts: the hypervisor gave the CPU
to another guest), is the load of everything else; the point is busy at `busy_cpus` (BUSY_CPUS,
0.5 CPU) or more. The same command lists /proc/[pid]/stat before and after, so the reason names
the processes that used the CPU. edgebench's own work is not load from others: the check's CPU
in the window (its shell and its `sleep`, from /proc/$$/stat) is left out, it prints nothing until
the window has closed (sshd relaying output would be busy in it), and no periodic sample runs
during it. Whatever a previous point left behind (a container still being removed) counts too:
the point competes with it. A process that starts in the middle of a point is not seen. Load
averages and the CPU busy fraction between samples are recorded in health.csv for reading, not
judged: they include the benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgebench.scripts import shell_script, with_args
from edgebench.tools.health.device import Probe
from edgebench.tools.health.parse import busy_fraction, parse_cpu_times, tab_lines
from edgebench.tools.health.sample import SAMPLE_SCRIPT, sample_args

QUIET_S = 0.1
BUSY_CPUS = 0.5
QUIET_SCRIPT = shell_script("health_quiet.sh")


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


def quiet_script(p: Probe, quiet_s: float) -> str:
    """The `sh -c` text of the quiet check over `quiet_s` s, then one sample (the sample script
    follows in the same command, with the same arguments)."""
    return with_args(QUIET_SCRIPT + SAMPLE_SCRIPT, *sample_args(p), f"{quiet_s:g}")


def _own_ticks(got: dict) -> int:
    o0, o1 = got.get("o0", ""), got.get("o1", "")
    return max(0, int(o1) - int(o0)) if o0.isdigit() and o1.isdigit() else 0


def parse_quiet(text: str, p: Probe, threshold: float = BUSY_CPUS, top: int = 3) -> QuietCheck:
    """The quiet script's output -> QuietCheck (its sample lines are parse_sample's)."""
    qc = QuietCheck(threshold=threshold)
    lines = tab_lines(text)
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


__all__ = ["QUIET_S", "BUSY_CPUS", "QuietCheck", "quiet_script", "parse_quiet"]
