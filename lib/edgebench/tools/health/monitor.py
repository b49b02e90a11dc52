"""HealthMonitor: samples a target's health for one run, from the run's start to its end, on a
daemon thread, and says for each result row whether it was measured while the device throttled
or was busy (rule.py has the rule).

Samples go to data/<experiment>/<run_id>/health.csv, long format (one row per sample and
sensor), appended and flushed per sample, so an interrupted run keeps them. Reading costs the
device a shell (and over SSH a session) every `interval_s` (INTERVAL_S, 2 s) and a `quiet_s`
(QUIET_S, 0.1 s) pause per point: part of what every runtime's measurement sees, the same for all
of them.
"""

from __future__ import annotations

import bisect
import csv
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from edgebench.errors import ConfigError
from edgebench.targets import Target
from edgebench.tools.health.device import DEFAULT_PROCFS, DEFAULT_SYSFS, READ_TIMEOUT_S, Probe, probe
from edgebench.tools.health.parse import busy_fraction, describe_throttled
from edgebench.tools.health.quiet import BUSY_CPUS, QUIET_S, QuietCheck, parse_quiet, quiet_script
from edgebench.tools.health.rule import BUSY, THROTTLED, UNKNOWN, judge, window_health
from edgebench.tools.health.sample import Sample, parse_sample, sample_script
from edgebench.tools.sensors import Periodic, SensorReadError, failure, message, run_read

INTERVAL_S = 2.0
HEALTH_CSV = "health.csv"
CSV_COLUMNS = ["sample", "elapsed_s", "time_utc", "kind", "sensor", "item", "value", "unit", "text"]


@dataclass
class _Point:
    start: float
    sample: Sample | None
    quiet: QuietCheck


class HealthMonitor:
    """Samples a target's health for one run (see edgebench.tools.health). `start` probes and takes the
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
        except Exception as e:  # a failed sample is recorded; the next one is tried
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
        """The health of a row written now (rule.window_health has the rule)."""
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


__all__ = ["INTERVAL_S", "HEALTH_CSV", "CSV_COLUMNS", "HealthMonitor"]
