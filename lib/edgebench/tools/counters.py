"""`perf stat` on the target: which events it can count there, the command line, and its
CSV output parsed into values, with a reason wherever a value is missing (never a zero).

Two ways of counting, one per protocol:
- fair: `perf stat -a -G CGROUP`: every process in the run's own cgroup (the workload, and for
  a container the runtime's in-container init), whoever started it;
- published: `perf stat -- COMMAND`: the command and its children, as the paper did; for
  `docker run` that is the docker client, because runc starts the container, not the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgebench.targets import Target

EVENTS = ("page-faults", "minor-faults", "major-faults", "cache-misses", "cycles", "instructions")
# perf's spelling in -x output -> the column name in results
COLUMNS = {e: "perf_" + e.replace("-", "_") for e in EVENTS}


@dataclass
class PerfSupport:
    ok: bool                       # perf can count at least software events here
    system_wide: bool              # -a -G CGROUP allowed (root, or perf_event_paranoid <= 0)
    unsupported: dict[str, str] = field(default_factory=dict)  # event -> why it cannot be counted
    reason: str = ""               # why perf is not usable at all / not system-wide


def perf_support(target: Target, events=EVENTS) -> PerfSupport:
    """Ask perf itself: count every event once around `true`, and see what comes back."""
    if not target.which("perf"):
        return PerfSupport(False, False, reason=f"no `perf` on {target.name}; install linux-perf "
                           "(Debian) or linux-tools (Ubuntu)")
    r = target.run(["perf", "stat", "-x,", "-e", ",".join(events), "--", "true"], check=False, timeout=30)
    values = parse_perf_csv(r.stderr)
    if not r.ok or not values:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return PerfSupport(False, False, reason=f"`perf stat` fails on {target.name}: {tail}")
    unsupported = {e: v.note for e, v in values.items() if v.value is None}
    for e in events:
        if e not in values:
            unsupported[e] = "perf did not report this event"
    facts = target.facts()
    paranoid = facts.get("perf_event_paranoid")
    system_wide = bool(target.is_root or (paranoid is not None and paranoid <= 0))
    reason = "" if system_wide else (f"counting a cgroup needs root or perf_event_paranoid <= 0 on "
                                     f"{target.name} (it is {paranoid})")
    return PerfSupport(True, system_wide, unsupported, reason)


def perf_stat_argv(events, output: str, cgroup: str | None = None) -> list[str]:
    """-x, for machine-readable output; -o keeps it apart from the program's own stderr."""
    argv = ["perf", "stat", "-x,", "-o", output, "-e", ",".join(events)]
    if cgroup:
        # -G pairs one cgroup with each event given before it; -a because a cgroup is
        # counted per CPU, system-wide.
        argv += ["-a", "-G", ",".join([cgroup] * len(events))]
    return argv + ["--"]


@dataclass
class Count:
    value: float | None
    note: str = ""


def parse_perf_csv(text: str) -> dict[str, Count]:
    """perf stat -x, lines: value,unit,event[,cgroup],run-time,percent,... ; '#' lines are comments.
    '<not supported>' and '<not counted>' become missing values with that reason."""
    out: dict[str, Count] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 3 or not f[2]:
            continue
        raw, event = f[0].strip(), f[2].strip()
        event = event.split(":")[0]  # 'page-faults:u' -> 'page-faults'
        if raw.startswith("<"):
            why = raw.strip("<>")
            note = ("the CPU/hypervisor exposes no hardware counter for it" if why == "not supported"
                    else "perf could not schedule the counter" if why == "not counted" else why)
            out[event] = Count(None, f"{why}: {note}")
            continue
        try:
            out[event] = Count(float(raw))
        except ValueError:
            out[event] = Count(None, f"unparseable perf value {raw!r}")
    return out
