"""Power meters and EDP (edgebench.tools.energy) on sysfs trees recorded from real machines
(tests/data/energy/*.tree, built under tmp_path), on shell commands run by the real LocalTarget,
and on this machine's own /sys where it has a meter."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import need, plant_tree
from edgebench.errors import ConfigError
from edgebench.targets import LocalTarget
from edgebench.tools import energy
from edgebench.tools.energy import (CommandMeter, HwmonMeter, Measurement, PowercapMeter, check_spec, edp,
                                    energy_above_idle, find_meter, integrate, measurement_rows, missing_rows)
from edgebench.waiting import wait_until

DATA = Path(__file__).parent / "data" / "energy"
RAPL_MAX_UJ = 262143328850


def build_tree(root: Path, name: str) -> Path:
    """The recorded tree `name` under root (conftest.plant_tree)."""
    return plant_tree(root, DATA / f"{name}.tree")


def write(path: Path, value: int | str) -> None:
    """Replace a sensor file at once, as the kernel answers a read: never half-written."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


def zone(root: Path, zone_id: str) -> Path:
    return root / "class/powercap" / zone_id / "energy_uj"


def add_uj(path: Path, uj: int) -> None:
    write(path, int(path.read_text()) + uj)


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("edgebench-power")]


def until(condition, what: str, timeout_s: float = 30.0) -> None:
    """Wait for what the sampler thread does (not for a time it is expected to take): on a busy
    machine a read every 20 ms may come seconds apart, and a test that slept 0.1 s saw none."""
    assert wait_until(condition, timeout_s, 0.005), f"no {what} within {timeout_s:g} s"


def joules_seen(m: Measurement) -> list[float]:
    return [j for _, j in list(m.samples)]


# -- powercap ------------------------------------------------------------------------------

def test_client_package_counted_once_not_its_core_and_uncore(local, tmp_path):
    root = build_tree(tmp_path, "powercap-i5-13500")
    meter, reason = find_meter(local, "auto", root=str(root), interval_s=30)
    assert isinstance(meter, PowercapMeter), reason
    assert [z.id for z in meter.zones] == ["intel-rapl:0"]
    assert "package-0 (intel-rapl:0)" in meter.describe()
    with meter.measure() as m:
        add_uj(zone(root, "intel-rapl:0"), 7_250_000)
        add_uj(zone(root, "intel-rapl:0:0"), 5_000_000)  # core: part of the package's 7.25 J
        add_uj(zone(root, "intel-rapl:0:1"), 300_000)
    assert m.ok, m.error
    assert m.energy_j == pytest.approx(7.25)
    assert m.duration_s > 0 and m.average_w == pytest.approx(7.25 / m.duration_s)


def test_server_sockets_and_their_dram_added_up(local, tmp_path):
    root = build_tree(tmp_path, "powercap-xeon-2s")
    meter, reason = find_meter(local, "powercap", root=str(root), interval_s=30)
    assert meter, reason
    assert [z.name for z in meter.zones] == ["package-0", "dram", "package-1", "dram"]
    assert meter.wrap_j == pytest.approx([RAPL_MAX_UJ / 1e6, 65712.999613] * 2)
    with meter.measure() as m:
        for zone_id, uj in (("intel-rapl:0", 10_000_000), ("intel-rapl:0:0", 2_000_000),
                            ("intel-rapl:1", 8_000_000), ("intel-rapl:1:0", 1_500_000)):
            add_uj(zone(root, zone_id), uj)
    assert m.energy_j == pytest.approx(21.5)


def test_laptop_psys_and_mmio_copy_not_added_to_the_package(local, tmp_path):
    root = build_tree(tmp_path, "powercap-laptop-psys-mmio")
    meter, reason = find_meter(local, "auto", root=str(root), interval_s=30)
    assert [z.id for z in meter.zones] == ["intel-rapl:0"], reason
    with meter.measure() as m:
        for zone_id in ("intel-rapl:0", "intel-rapl-mmio:0"):  # one counter, two interfaces
            add_uj(zone(root, zone_id), 4_000_000)
        add_uj(zone(root, "intel-rapl:1"), 9_000_000)        # psys: the package and the rest
        add_uj(zone(root, "intel-rapl:0:0"), 3_000_000)
    assert m.energy_j == pytest.approx(4.0)
    # Asked for by name or id, a zone the default leaves out is read.
    psys, _ = find_meter(local, "powercap:psys", root=str(root))
    assert [z.id for z in psys.zones] == ["intel-rapl:1"]
    core, _ = find_meter(local, "powercap:intel-rapl:0:0", root=str(root))
    assert [z.name for z in core.zones] == ["core"]
    none, why = find_meter(local, "powercap:gpu", root=str(root))
    assert none is None and "gpu" in why and "intel-rapl:1 (psys)" in why


def test_amd_package_not_its_core(local, tmp_path):
    root = build_tree(tmp_path, "powercap-amd-epyc")
    meter, _ = find_meter(local, "auto", root=str(root))
    assert [z.name for z in meter.zones] == ["package-0"]
    assert meter.wrap_j == [pytest.approx(65532.610987)]


def test_counter_wrap_between_two_readings(local, tmp_path):
    """Start and end readings only (interval longer than the run): one wrap is still seen."""
    root = build_tree(tmp_path, "powercap-i5-13500")
    pkg = zone(root, "intel-rapl:0")
    write(pkg, RAPL_MAX_UJ - 1_000_000)          # 1 J before the wrap
    meter, _ = find_meter(local, "powercap", root=str(root), interval_s=30)
    with meter.measure() as m:
        write(pkg, 2_500_000)                    # past the wrap: 1 J + 2.5 J
    assert meter.periodic
    assert m.energy_j == pytest.approx(3.5, abs=1e-5)


def test_counter_wrap_during_periodic_sampling(local, tmp_path):
    root = build_tree(tmp_path, "powercap-i5-13500")
    pkg = zone(root, "intel-rapl:0")
    write(pkg, RAPL_MAX_UJ - 1_000_000)
    meter, _ = find_meter(local, "powercap", root=str(root), interval_s=0.02)
    sampler = meter.measure()
    with sampler as m:
        assert sampler.thread is not None and sampler.thread.is_alive()
        write(pkg, RAPL_MAX_UJ - 200_000)        # +0.8 J
        until(lambda: pytest.approx(0.8, abs=1e-5) in joules_seen(m), "periodic reading of the +0.8 J")
        write(pkg, 1_500_000)                    # +0.2 J to the wrap, +1.5 J after it
        # A periodic read, not the one at the end, sees the counter past its wrap.
        until(lambda: pytest.approx(2.5, abs=1e-5) in joules_seen(m), "periodic reading past the wrap")
    assert not sampler.thread.is_alive()
    assert len(m.samples) >= 4                   # start, 0.8 J, 2.5 J (the thread's), end
    assert m.energy_j == pytest.approx(2.5, abs=1e-5)
    assert joules_seen(m) == sorted(joules_seen(m))  # cumulative joules


def test_unreadable_counter_mid_run_makes_the_run_missing(local, tmp_path):
    root = build_tree(tmp_path, "powercap-i5-13500")
    meter, _ = find_meter(local, "powercap", root=str(root), interval_s=0.02)
    real = zone(root, "intel-rapl:0").resolve()
    sampler = meter.measure()
    with sampler as m:
        real.unlink()
        real.mkdir()                             # any reader, root too, now fails: EISDIR
        # The thread's failed read ends it; the run's energy is missing from then on.
        until(lambda: not sampler.thread.is_alive(), "failed periodic read")
    assert not m.ok and m.energy_j is None
    assert "energy_uj" in m.error and "during the run" in m.error
    rows = measurement_rows(m, idle_w=1.0)
    assert [r["value"] for r in rows] == [None] * 4
    assert all("energy_uj" in r["error"] for r in rows)


class Unprivileged(LocalTarget):
    """This machine, commands run as nobody: how RAPL looks to a user without root."""

    def _exec(self, cmd, timeout, stdin):
        return super()._exec(f"setpriv --reuid=65534 --regid=65534 --clear-groups sh -c {shlex.quote(cmd)}",
                             timeout, stdin)


def test_rapl_readable_only_by_root_is_missing_with_that_reason():
    if os.geteuid() == 0:
        need("setpriv", None if shutil.which("setpriv") else "no setpriv to read as an unprivileged user")
        target = Unprivileged()
    else:
        target = LocalTarget()
    root = Path(tempfile.mkdtemp(prefix="edgebench-rapl-"))  # nobody can enter it; tmp_path is 0700
    try:
        root.chmod(0o755)
        build_tree(root, "powercap-i5-13500")
        for f in root.rglob("energy_uj"):
            f.chmod(0o400 if os.geteuid() == 0 else 0)  # as the kernel has it since 5.10
        meter, reason = find_meter(target, "auto", root=str(root))
    finally:
        shutil.rmtree(root)
    assert meter is None
    assert "Permission denied" in reason and "root" in reason and "CVE-2020-8694" in reason
    assert "hwmon" in reason and "command:watts:" in reason


# -- hwmon -----------------------------------------------------------------------------------

def test_power_sensor_integrated_over_a_change_from_2_to_4_watts(local, tmp_path):
    """The energy is the trapezoid over the readings the meter took, and it says when the power
    changed as closely as those readings can: the change fell between the last 2 W reading and
    the first 4 W one. How close that is comes from the sample times the meter recorded, not from
    a scheduler that kept to the 20 ms interval (a busy machine spaces the reads much wider)."""
    root = build_tree(tmp_path, "hwmon-ina219-rpi4")
    power = root / "class/hwmon/hwmon2/power1_input"
    write(power, 2_000_000)
    meter, reason = find_meter(local, "auto", root=str(root), interval_s=0.02)
    assert isinstance(meter, HwmonMeter) and meter.kind == "power", reason
    assert meter.sensors == ["ina219 hwmon2/power1_input"]
    with meter.measure() as m:
        until(lambda: len(m.samples) >= 3, "periodic readings at 2 W")
        wrote_from = time.monotonic()
        write(power, 4_000_000)
        wrote_to = time.monotonic()
        until(lambda: 4.0 in [w for _, w in list(m.samples)], "periodic reading at 4 W")
    times, watts = [t for t, _ in m.samples], [w for _, w in m.samples]
    assert times == sorted(times) and len(m.samples) >= 5
    changed = watts.index(4.0)
    assert watts == [2.0] * changed + [4.0] * (len(watts) - changed)  # in the order they were read
    t0, t1, last_2w, first_4w = times[0], times[-1], times[changed - 1], times[changed]
    # The trapezoid rule over what was read: 2 W, then 3 W on average between the two readings
    # around the change, then 4 W.
    trapezoid = 2.0 * (last_2w - t0) + 3.0 * (first_4w - last_2w) + 4.0 * (t1 - first_4w)
    assert m.energy_j == pytest.approx(trapezoid, rel=1e-9)
    assert m.duration_s == pytest.approx(t1 - t0)
    assert 2.0 < m.average_w < 4.0
    # Against the power the sensor really gave: 2 W until the write, 4 W after. A sample's time is
    # the middle of its read, and one read ends before the next begins, so the reading that saw
    # 2 W began at most `gap` before the write ended and the one that saw 4 W ended at most `gap`
    # after it began: the write lies within a gap of the two; the energy is then off by at most
    # 2 W x (1.5 gaps + the write's own time / 2).
    gap = first_4w - last_2w
    assert last_2w - gap <= wrote_to and wrote_from <= first_4w + gap
    wrote = (wrote_from + wrote_to) / 2
    expected = 2.0 * (wrote - t0) + 4.0 * (t1 - wrote)
    assert m.energy_j == pytest.approx(expected, abs=2.0 * (1.5 * gap + (wrote_to - wrote_from) / 2) + 1e-9)


def test_energy_counter_preferred_and_the_socket_not_its_cores(local, tmp_path):
    root = build_tree(tmp_path, "hwmon-amd_energy")
    meter, reason = find_meter(local, "hwmon", root=str(root))
    assert meter.kind == "energy", reason
    assert meter.sensors == ["amd_energy hwmon3/energy5_input 'Esocket0'"]
    assert not meter.periodic  # a 64-bit accumulator: start and end readings are enough
    h = root / "class/hwmon/hwmon3"
    with meter.measure() as m:
        add_uj(h / "energy5_input", 5_000_000)
        add_uj(h / "energy1_input", 1_000_000)
    assert m.energy_j == pytest.approx(5.0)
    assert len(m.samples) == 2

    cores, reason = find_meter(local, "hwmon:amd_energy/Ecore000,energy2_input", root=str(root))
    assert len(cores.sensors) == 2, reason
    with cores.measure() as m:
        add_uj(h / "energy1_input", 1_000_000)
        add_uj(h / "energy2_input", 750_000)
    assert m.energy_j == pytest.approx(1.75)


def test_labelled_total_of_a_power_supply(local, tmp_path):
    root = build_tree(tmp_path, "hwmon-corsairpsu")
    meter, _ = find_meter(local, "hwmon:corsairpsu", root=str(root), interval_s=0.02)
    assert meter.sensors == ["corsairpsu hwmon5/power1_input 'power total'"]
    with meter.measure() as m:
        time.sleep(0.1)
    assert m.average_w == pytest.approx(62.0)
    none, why = find_meter(local, "hwmon:ina219", root=str(root))
    assert none is None and "ina219" in why


# -- command ---------------------------------------------------------------------------------

def test_command_printing_cumulative_joules(local, tmp_path):
    script = tmp_path / "meter.sh"
    script.write_text('#!/bin/sh\nf="$(dirname "$0")/count"\nn=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 ))\n'
                      'echo "$n" > "$f"\necho "USB meter ready"\necho "$((n * 2)).25 J"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    meter, reason = find_meter(local, f"command:joules:{script}")
    assert isinstance(meter, CommandMeter) and meter.kind == "energy", reason
    assert not meter.periodic
    with meter.measure() as m:
        pass
    assert m.energy_j == pytest.approx(2.0)  # two invocations, 2 J apart
    assert (tmp_path / "count").read_text().strip() == "3"  # probe, start, end


def test_command_printing_watts_and_idle_power(local):
    meter, reason = find_meter(local, "command:watts:echo 3.5", interval_s=0.05)
    assert meter.kind == "power", reason
    with meter.measure() as m:
        until(lambda: len(m.samples) >= 2, "periodic reading")
    assert len(m.samples) >= 3  # start, the thread's, end
    assert m.energy_j == pytest.approx(3.5 * m.duration_s)
    assert m.average_w == pytest.approx(3.5)
    milliwatts, _ = find_meter(local, "command:echo 3500 mW")  # the unit says it is power
    assert milliwatts.idle_power(0.1) == pytest.approx(3.5)


def test_command_reasons(local, tmp_path):
    for spec, words in (("command:echo 42", "bare number"),
                        ("command:watts:echo 5 J", "spec says watts"),
                        ("command:watts:echo meter offline; exit 3", "exit 3"),
                        ("command:joules:echo 12 furlongs", "unknown unit")):
        meter, reason = find_meter(local, spec)
        assert meter is None and words in reason, (spec, reason)
    counter = tmp_path / "joules"
    write(counter, "100 J")
    meter, _ = find_meter(local, f"command:joules:cat {counter}")
    with meter.measure() as m:
        write(counter, "40 J")  # the meter was reset: no zero, no guess
    assert m.energy_j is None and "went backwards" in m.error


def test_sampler_thread_stopped_when_the_run_is_interrupted(local):
    meter, _ = find_meter(local, "command:watts:echo 2", interval_s=0.01)
    sampler = meter.measure()
    with pytest.raises(KeyboardInterrupt):
        with sampler as m:
            time.sleep(0.05)
            assert sampler.thread.is_alive()
            raise KeyboardInterrupt
    assert not sampler.thread.is_alive()
    assert not sampler_threads()
    assert m.energy_j is None and "interrupted" in m.error


# -- EDP and rows ----------------------------------------------------------------------------

def test_edp_and_idle_subtraction():
    m = Measurement("command on local: `meter` (energy)", "energy", [(0.0, 0.0), (2.0, 10.0)], 10.0, 2.0)
    assert edp(10.0, 2.0) == 20.0
    assert energy_above_idle(m, 1.5) == pytest.approx(7.0)
    assert integrate([(0.0, 2.0), (1.0, 4.0), (3.0, 4.0)]) == pytest.approx(3.0 + 8.0)
    rows = {r["metric"]: r for r in measurement_rows(m, idle_w=1.5)}
    assert list(rows) == ["energy", "energy_total", "average_power", "edp"]
    assert (rows["energy"]["value"], rows["energy"]["unit"]) == (pytest.approx(7.0), "J")
    assert rows["energy_total"]["value"] == 10.0
    assert (rows["average_power"]["value"], rows["average_power"]["unit"]) == (5.0, "W")
    assert (rows["edp"]["value"], rows["edp"]["unit"]) == (pytest.approx(14.0), "J*s")
    assert all("command on local" in r["note"] and not r["error"] for r in rows.values())
    assert "1.5 W" in rows["energy"]["note"]
    # The delay in the EDP may be the run's own time, as the caller measured it.
    timed = {r["metric"]: r for r in measurement_rows(m, idle_w=1.5, duration_s=1.8)}
    assert timed["edp"]["value"] == pytest.approx(7.0 * 1.8)
    # Without an idle baseline, what depends on it is missing, with the reason.
    no_idle = {r["metric"]: r for r in measurement_rows(m, idle_w=None)}
    assert no_idle["energy"]["value"] is None and no_idle["edp"]["value"] is None
    assert "idle" in no_idle["edp"]["error"] and no_idle["energy_total"]["value"] == 10.0


def test_missing_rows_carry_the_reason_never_a_value():
    rows = missing_rows("no power meter on pi4: ...")
    assert [(r["metric"], r["unit"]) for r in rows] == list(energy.METRICS)
    assert all(r["value"] is None and r["error"] == "no power meter on pi4: ..." for r in rows)


# -- specs and this machine ------------------------------------------------------------------

def test_unknown_or_malformed_spec_names_the_choices(local):
    with pytest.raises(ConfigError) as e:
        find_meter(local, "rapl")
    for choice in ("'auto'", "'none'", "'powercap'", "'hwmon'", "'command:joules:CMD'", "'command:watts:CMD'"):
        assert choice in str(e.value)
    for bad in ("command:", "command:watts:", "hwmon:", "hwmon:ina219/", "powercap:package-0,,dram", "auto:x"):
        with pytest.raises(ConfigError):
            check_spec(bad)
    assert check_spec(" Hwmon:ina219 ") == "hwmon:ina219"
    assert find_meter(local, "none") == (None, "no power meter: power_meter='none' was given")


def sysfs_meters() -> list[str]:
    """What this machine's /sys offers a meter: powercap zones with energy_uj, hwmon sensors."""
    zones = [str(p) for p in Path("/sys/class/powercap").glob("*:*/energy_uj")]
    sensors = [str(p) for p in Path("/sys/class/hwmon").glob("hwmon*/*")
               if re.fullmatch(r"energy\d+_input|power\d+_(input|average)", p.name)]
    return zones + sensors


def test_auto_on_this_machine(local):
    meter, reason = find_meter(local, "auto")
    if not sysfs_meters():
        assert meter is None
        assert "no power meter on local" in reason
        assert "/sys/class/powercap" in reason and "/sys/class/hwmon" in reason
        assert "command:watts:<cmd>" in reason
    else:
        assert meter is not None or "cannot read" in reason, reason


def test_real_powercap(local):
    meter, reason = find_meter(local, "powercap")
    need("powercap", reason)
    with meter.measure() as m:
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass
    assert m.ok, m.error
    assert m.energy_j > 0 and 0.1 < m.average_w < 2000
