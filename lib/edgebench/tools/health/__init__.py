"""Device health during a run: CPU frequency and governor, temperature and throttling, and load
from other processes, sampled on the target while a run measures, so that every result row says
whether it was measured on a device that throttled or was busy. None of the papers logged this,
and a Raspberry Pi throttles at 80-85 C.

A row's `health` is "throttled", "busy" or "unknown" (comma-joined), "" when the device was fine;
rule.py has the rule. One module per step, in the order a run meets them, each with its own part
of the story:

    device.py   the probe, once per run: which sensors the device has, and why the rest are missing
    sample.py   one sample: the script that reads every sensor the probe found, and its parser
    quiet.py    the quiet check before each measured point: the CPU others used, and who
    rule.py     the verdicts: whether a sample throttled, and a row's health from its window
    monitor.py  HealthMonitor: the sampling thread, health.csv, what meta.json says
    parse.py    the parsers of what the device prints (/proc/stat, /proc/loadavg, vcgencmd)

The shell they send to the device is in lib/edgebench/scripts/health_*.sh. Callers import from
here: `from edgebench.tools.health import HealthMonitor, UNKNOWN`.
"""

from edgebench.tools.health.device import (DEFAULT_PROCFS, DEFAULT_SYSFS, READ_TIMEOUT_S, VCGENCMD_HINT, CpuFreq,
                                           Probe, Zone, parse_probe, probe)
from edgebench.tools.health.monitor import CSV_COLUMNS, HEALTH_CSV, INTERVAL_S, HealthMonitor
from edgebench.tools.health.parse import (THROTTLE_BITS, CpuTimes, busy_fraction, describe_throttled, parse_cpu_times,
                                          parse_loadavg, parse_throttled)
from edgebench.tools.health.quiet import BUSY_CPUS, QUIET_S, QuietCheck, parse_quiet, quiet_script
from edgebench.tools.health.rule import (BUSY, FLAGS, MARKED, THROTTLED, UNKNOWN, flags, is_marked, judge,
                                         window_health)
from edgebench.tools.health.sample import Sample, parse_sample, sample_script

__all__ = ["HealthMonitor", "Probe", "Zone", "CpuFreq", "Sample", "QuietCheck", "CpuTimes", "probe", "parse_probe",
           "parse_sample", "parse_quiet", "parse_throttled", "describe_throttled", "parse_cpu_times",
           "parse_loadavg", "busy_fraction", "judge", "window_health", "sample_script", "quiet_script", "flags",
           "is_marked", "THROTTLED", "BUSY", "UNKNOWN", "FLAGS", "MARKED", "THROTTLE_BITS", "HEALTH_CSV",
           "CSV_COLUMNS", "INTERVAL_S", "QUIET_S", "BUSY_CPUS", "READ_TIMEOUT_S", "DEFAULT_SYSFS", "DEFAULT_PROCFS",
           "VCGENCMD_HINT"]
