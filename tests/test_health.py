"""Device health during a run (edgebench.tools.health): the parsers on recorded outputs
(tests/data/health/), the probe and sampler on sysfs trees planted under tmp_path and read by
the real LocalTarget's shell (a fake `vcgencmd` script stands in for the Raspberry Pi's), on this
machine's own /sys and /proc, the row rule, the hook into every run, and the marks in tables
and figures."""

from __future__ import annotations

import csv
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import plant_tree
from edgebench.experiments import common, static_footprint
from edgebench.experiments.sweep import sweep
from edgebench.plotting import style
from edgebench.plotting.tables import cell_health, mark_health, run_notes
from edgebench.results import Run, load_meta, load_results
from edgebench.targets import LocalTarget
from edgebench.tools import health
from edgebench.tools.health import monitor as health_monitor
from edgebench.tools.health import quiet as health_quiet
from edgebench.tools.health import (BUSY, THROTTLED, UNKNOWN, CpuTimes, HealthMonitor, QuietCheck, Sample,
                                    busy_fraction, describe_throttled, judge, parse_cpu_times, parse_loadavg,
                                    parse_probe, parse_quiet, parse_sample, parse_throttled, window_health)
from edgebench.waiting import wait_until

DATA = Path(__file__).parent / "data" / "health"
VCGENCMD = dict(line.split(" = ", 1) for line in (DATA / "vcgencmd-get_throttled.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#"))


# -- recorded outputs ------------------------------------------------------------------------

def test_get_throttled_bits_decode_as_the_firmware_documents():
    assert parse_throttled(VCGENCMD["fine"]) == 0
    assert parse_throttled(VCGENCMD["under_voltage_now"]) == 0x50005
    text = describe_throttled(0x50005)
    assert text.startswith("0x50005: under-voltage, currently throttled;")
    assert "has occurred: under-voltage, throttling" in text
    assert describe_throttled(0xE0000) == ("0xe0000: fine now; has occurred: arm frequency capping, throttling, "
                                           "soft temperature limit")
    with pytest.raises(ValueError, match="VCHI initialization failed"):
        parse_throttled(VCGENCMD["no_vchiq_access"])


@pytest.mark.parametrize("state, now, since_previous", [
    ("fine", False, False), ("under_voltage_now", True, True),     # bit 2: the under-voltage throttles it
    ("under_voltage_earlier", False, True), ("soft_limit_now", True, True),
    ("hot_capped_and_throttled", True, True), ("cooled_down", False, True)])
def test_throttled_now_and_between_samples(state, now, since_previous):
    probe = parse_probe("cpus\t4\nmodel\tRaspberry Pi 4 Model B Rev 1.4\n"
                        f"vcgencmd\t/usr/bin/vcgencmd\t0\t{VCGENCMD['fine']}\n", "pi")
    assert probe.throttle_sources == ["/usr/bin/vcgencmd get_throttled"] and probe.throttle_unknown is None
    prev = judge(Sample("start", throttled_bits=0), None, probe)
    s = judge(parse_sample(f"stat\tcpu 1 0 1 8 0 0 0 0\nloadavg\t0.1 0.1 0.1 1/90 7\n"
                           f"throttled\t{VCGENCMD[state]}\n", probe), prev, probe)
    assert s.throttled is now and s.throttled_between is since_previous
    # Under-voltage that has occurred is recorded, but it is not a throttle by itself.
    assert not judge(Sample("p", throttled_bits=0x10000), prev, probe).throttled_between


def test_cpu_times_and_loadavg_from_recorded_proc_files():
    t = parse_cpu_times((DATA / "rpi4.proc" / "stat").read_text().splitlines()[0])
    assert t == CpuTimes(busy=208372 + 1240 + 61527 + 3127, total=208372 + 1240 + 61527 + 12690325 + 5732 + 3127)
    assert busy_fraction(CpuTimes(100, 1000), CpuTimes(150, 1100)) == pytest.approx(0.5)
    assert busy_fraction(t, t) is None  # no time passed: no fraction, not zero
    assert parse_loadavg((DATA / "rpi4.proc" / "loadavg").read_text()) == {
        "1m": 0.52, "5m": 0.31, "15m": 0.18, "running": 1, "tasks": 187}
    with pytest.raises(ValueError):
        parse_cpu_times("intr 1 2 3")


def test_quiet_check_recorded_on_a_busy_vm_names_who_used_the_cpu():
    text = (DATA / "quiet-debian12-vm.txt").read_text()
    probe = parse_probe("cpus\t2\nclk_tck\t100\n", "vm")
    qc = parse_quiet(text, probe, threshold=0.5)
    # q0 -> q1: 33 + 24 busy ticks of 58 over 2 CPUs.
    assert qc.busy_cpus == pytest.approx(57 / 58 * 2) and qc.busy is True
    assert qc.window_s == pytest.approx(0.29)
    assert qc.top[0][0] == "python" and qc.top[0][2] > 1.0
    assert all(pid != 16773 for _, pid, _ in qc.top)  # the check's own shell is not "another process"
    assert "python (16470)" in qc.describe()
    assert parse_quiet(text, probe, threshold=4).busy is False
    assert parse_quiet("q0\tcpu 1 0 1 8\n", probe).busy is None  # a broken read: unknown, never "not busy"


def test_a_process_rate_is_taken_over_the_scans_span_not_the_shorter_window():
    """On debian-v2 the device's sshd was named at 1.71 CPUs of 0.46 busy: its ticks ran from the
    first process scan to the second (slow under emulation), divided by the 0.17 s window."""
    probe = parse_probe("cpus\t2\nclk_tck\t100\n", "vm")
    text = ("self\t900\nq0\tcpu 100 0 0 900 0 0 0 0 0 0\nq1\tcpu 110 0 0 910 0 0 0 0 0 0\n"
            "u0\t5000.00\nu1\t5001.00\np0\t546\t1000\tsshd\np1\t546\t1050\tsshd\n")
    qc = parse_quiet(text, probe)
    assert qc.window_s == pytest.approx(0.1) and qc.busy_cpus == pytest.approx(1.0)
    assert qc.top == [("sshd", 546, pytest.approx(0.5))]  # 50 ticks over the scans' 1 s, not over 0.1 s
    older = text.replace("u0\t5000.00\nu1\t5001.00\n", "")  # a check recorded before u0/u1
    assert parse_quiet(older, probe).top[0][2] == pytest.approx(5.0)


def test_the_checks_own_cpu_in_its_window_is_left_out():
    """Its shell forks and execs `sleep` inside the window: under emulation that alone read as
    0.4-0.5 CPUs busy before every point on debian-v2, with no process to name."""
    probe = parse_probe("cpus\t2\nclk_tck\t100\n", "vm")
    text = "self\t900\nq0\tcpu 100 0 0 900 0 0 0 0 0 0\nq1\tcpu 110 0 0 910 0 0 0 0 0 0\n"
    assert parse_quiet(text, probe).busy_cpus == pytest.approx(1.0)
    qc = parse_quiet(text + "o0\t3\no1\t9\n", probe)
    assert qc.busy_cpus == pytest.approx(0.4) and qc.busy is False and qc.own_cpus == pytest.approx(0.6)
    assert "the check's own 0.60 left out" in qc.describe()
    assert parse_quiet(text + "o0\t\no1\t9\n", probe).busy_cpus == pytest.approx(1.0)  # unread: nothing left out


def test_the_quiet_check_prints_nothing_until_its_window_has_closed_and_skips_its_own_scans():
    """Output on its way kept the device's sshd busy inside the window; the scans run in
    subshells of the check, which are not other processes (the second scan's would be new)."""
    import select
    import subprocess
    from edgebench.tools.health import quiet_script
    # In a PID namespace of its own, the scans see only the check's processes: a machine busy beside
    # the test (CI's) starts shells of its own between the scans.
    isolated = ["unshare", "--pid", "--fork", "--mount-proc"] if os.geteuid() == 0 and shutil.which("unshare") else []
    p = subprocess.Popen([*isolated, "sh", "-c", quiet_script(parse_probe("cpus\t2\nclk_tck\t100\n", "vm"), 0.5)],
                         stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([p.stdout], [], [], 0.3)  # inside the 0.5 s window
    out, _ = p.communicate(timeout=60)
    assert not ready, "the check printed while its window was open"
    scans = {ph: {tuple(line.split("\t")[1:4:2]) for line in out.splitlines() if line.startswith(ph)}
             for ph in ("p0", "p1")}
    new = scans["p1"] - scans["p0"]
    assert scans["p0"] and not [pid for pid, comm in new if comm == "sh"], new
    assert float(dict(line.split("\t", 1) for line in out.splitlines() if line[:2] in ("u0", "u1"))["u1"]) > 0


def test_the_docs_give_the_window_and_thresholds_the_code_uses():
    """The module doc once said the quiet window was 0.3 s while the check slept 0.1 s."""
    quiet_doc, monitor_doc = (" ".join(m.__doc__.split()) for m in (health_quiet, health_monitor))
    assert f"(QUIET_S, {health.QUIET_S:g} s)" in quiet_doc and f"(QUIET_S, {health.QUIET_S:g} s)" in monitor_doc
    assert f"(BUSY_CPUS, {health.BUSY_CPUS:g} CPU)" in quiet_doc
    assert f"(INTERVAL_S, {health.INTERVAL_S:g} s)" in monitor_doc
    assert HealthMonitor(LocalTarget(), ".").quiet_s == health.QUIET_S


# -- sysfs trees planted under tmp_path, read by the real shell ----------------------------------

def fake_vcgencmd(tmp_path: Path, state: str = "fine") -> Path:
    """An executable that answers `get_throttled` as a Pi in `state` does (set_state changes it)."""
    script = tmp_path / "bin" / "vcgencmd"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f'#!/bin/sh\n[ "$1" = get_throttled ] || exit 2\nout=$(cat {tmp_path}/vc.state)\n'
                      'echo "$out"\ncase "$out" in throttled=*) exit 0;; *) exit 255;; esac\n')
    script.chmod(0o755)
    set_state(tmp_path, state)
    return script


def set_state(tmp_path: Path, state: str) -> None:
    (tmp_path / "vc.state").write_text(VCGENCMD[state] + "\n")


def plant(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """(sysfs, procfs) of the recorded board `name` under tmp_path."""
    root = plant_tree(tmp_path / "root", DATA / f"{name}.tree")
    shutil.copytree(DATA / f"{name}.proc", root / "proc")
    return root / "sys", root / "proc"


def write(path: Path, value) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(f"{value}\n")
    tmp.replace(path)


def test_probe_finds_a_raspberry_pis_sensors_and_why_temperature_alone_cannot_say(local, tmp_path):
    sysfs, procfs = plant(tmp_path, "rpi4")
    vc = fake_vcgencmd(tmp_path, "under_voltage_earlier")
    p = health.probe(local, sysfs=str(sysfs), procfs=str(procfs), vcgencmd=str(vc))
    assert p.is_raspberry_pi and p.model == "Raspberry Pi 4 Model B Rev 1.4"
    assert p.cpus == 4 and p.clk_tck > 0
    assert [(z.label, z.trips, z.passive_c) for z in p.zones] == [
        ("thermal_zone0 (cpu-thermal)", [("critical", 110.0)], None)]
    assert [(c.cpu, c.max_mhz, c.governor, c.scaling_max_mhz) for c in p.cpufreq] == \
        [(f"cpu{i}", 1800.0, "ondemand", 1800.0) for i in range(4)]
    assert p.vcgencmd == str(vc) and p.throttled_at_start == 0x50000
    assert "passive trip point" in p.missing["passive_trip"] and "critical 110 C" in p.missing["passive_trip"]
    assert set(p.missing) == {"passive_trip"} and p.throttle_unknown is None

    s = judge(parse_sample(local.run(["sh", "-c", health.sample_script(p)]).stdout, p), None, p)
    assert s.errors == [] and s.temps == {"thermal_zone0": 61.341}
    assert s.freqs["cpu0"] == (600.0, "ondemand", 1800.0)  # ondemand at idle: not a throttle
    assert s.throttled is False


def test_a_raspberry_pi_without_vcgencmd_cannot_say_whether_it_throttled(local, tmp_path):
    sysfs, procfs = plant(tmp_path, "rpi4")
    p = health.probe(local, sysfs=str(sysfs), procfs=str(procfs), vcgencmd=str(tmp_path / "no-such-vcgencmd"))
    assert "not found on this Raspberry Pi" in p.missing["vcgencmd"] and "libraspberrypi-bin" in p.missing["vcgencmd"]
    assert "firmware" in p.throttle_unknown
    s = judge(parse_sample(local.run(["sh", "-c", health.sample_script(p)]).stdout, p), None, p)
    assert s.throttled is None and s.temps  # temperature still recorded


def test_vcgencmd_without_access_to_vchiq_is_missing_with_the_fix(local, tmp_path):
    sysfs, procfs = plant(tmp_path, "rpi4")
    vc = fake_vcgencmd(tmp_path, "no_vchiq_access")
    p = health.probe(local, sysfs=str(sysfs), procfs=str(procfs), vcgencmd=str(vc))
    assert p.vcgencmd is None
    assert "VCHI initialization failed" in p.missing["vcgencmd"] and "video group" in p.missing["vcgencmd"]
    assert p.throttle_unknown


def test_a_board_called_pi_that_is_no_raspberry_pi(local, tmp_path):
    sysfs, procfs = plant(tmp_path, "rk3399")
    p = health.probe(local, sysfs=str(sysfs), procfs=str(procfs), vcgencmd=str(tmp_path / "none"))
    assert not p.is_raspberry_pi and p.missing["vcgencmd"] == "not a Raspberry Pi (Radxa ROCK Pi 4B)"
    assert [(z.type, z.passive_c) for z in p.zones] == [("cpu-thermal", 70.0), ("gpu-thermal", 75.0)]
    assert [(c.cpu, c.max_mhz) for c in p.cpufreq] == [(f"cpu{i}", 1416.0) for i in range(4)] + \
        [("cpu4", 1800.0), ("cpu5", 1800.0)]
    assert p.throttle_unknown is None and len(p.throttle_sources) == 3


def test_passive_trip_point_and_a_frequency_cap_mark_rows_end_to_end(local, tmp_path):
    """The RK3399 tree: rows are fine while it is cool, throttled from the sample that sees the CPU
    zone at its passive trip point, and again when the cooling device caps scaling_max_freq."""
    sysfs, _ = plant(tmp_path, "rk3399")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The real /proc: the planted one never changes, and the quiet check needs time to pass.
    m = HealthMonitor(local, run_dir, interval_s=3600, busy_cpus=1000, sysfs=str(sysfs),
                      vcgencmd=str(tmp_path / "none")).start()
    try:
        zone = sysfs / "class/thermal/thermal_zone0/temp"
        m.begin_point()
        assert m.row_health() == ""
        write(zone, 71250)
        m.sample()
        assert m.row_health() == THROTTLED
        m.begin_point()  # still hot as the next point starts
        assert m.row_health() == THROTTLED
        write(zone, 60000)
        m.begin_point()
        assert m.row_health() == ""
        write(sysfs / "devices/system/cpu/cpufreq/policy4/scaling_max_freq", 1200000)
        m.sample()
        assert m.row_health() == THROTTLED
        m.end_point()
    finally:
        assert m.stop()
    rows = list(csv.DictReader(open(run_dir / health.HEALTH_CSV)))
    temps = [float(r["value"]) for r in rows if r["sensor"] == "temperature" and r["item"].startswith("thermal_zone0")]
    assert 71.25 in temps and 48.125 in temps
    verdicts = [r for r in rows if r["sensor"] == "verdict" and r["item"] == THROTTLED and r["value"] == "1"]
    assert any("passive trip point 70 C" in r["text"] for r in verdicts)
    assert any("scaling_max_freq 1200 MHz, below 1800 MHz" in r["text"] for r in verdicts)


def test_a_throttle_between_samples_marks_the_point_it_happened_in(local, tmp_path):
    """vcgencmd's sticky bits: set while a point runs -> that point's rows; found new at the
    start of the next point -> it happened before that point, which is fine if it is not throttled now."""
    sysfs, _ = plant(tmp_path, "rpi4")
    vc = fake_vcgencmd(tmp_path, "fine")
    m = HealthMonitor(local, tmp_path, interval_s=3600, busy_cpus=1000, sysfs=str(sysfs), vcgencmd=str(vc)).start()
    try:
        m.begin_point()
        set_state(tmp_path, "cooled_down")  # capped, throttled and cooled again between two samples
        m.sample()
        assert m.row_health() == THROTTLED
        m.end_point()
        m.begin_point()  # its own sample sees nothing new and nothing now
        assert m.row_health() == ""
        m.end_point()
    finally:
        m.stop()
    m2 = HealthMonitor(local, tmp_path / "b", interval_s=3600, busy_cpus=1000, sysfs=str(sysfs), vcgencmd=str(vc))
    (tmp_path / "b").mkdir()
    set_state(tmp_path, "fine")
    m2.start()
    try:
        set_state(tmp_path, "cooled_down")
        m2.begin_point()  # new sticky bits at the point's start: before the point
        assert m2.row_health() == ""
        set_state(tmp_path, "soft_limit_now")
        m2.sample()
        assert m2.row_health() == THROTTLED
    finally:
        m2.stop()


# -- the row rule --------------------------------------------------------------------------------

def at(t: float, throttled, between: bool = False) -> Sample:
    return Sample("periodic", t=t, throttled=throttled, throttled_between=between)


def test_row_rule_takes_the_samples_of_its_window():
    samples = [at(1, False), at(3, True), at(5, False), at(7, None), at(9, False, between=True)]
    fine, busy, failed = QuietCheck(0.1, 0.3), QuietCheck(2.0, 0.3), QuietCheck(error="timed out")
    assert window_health(samples, 0.5, 2) == ""                    # since the previous row: t=1 only
    assert window_health(samples, 2, 4) == THROTTLED
    assert window_health(samples, 5.5, 6) == ""                    # none in (5.5, 6]: the state last seen (t=5)
    assert window_health(samples, 3.5, 4) == THROTTLED             # ... here t=3's
    assert window_health(samples, 6, 8) == UNKNOWN                 # a failed read in the window
    assert window_health(samples, 8, 10) == THROTTLED              # sticky bits set between 7 and 9
    # In a point: its own sample counts with its state at that moment (sticky bits it found new
    # were set before the point started); the busy verdict is its quiet check's.
    start = at(8.5, False, between=True)
    assert window_health(sorted(samples + [start], key=lambda s: s.t), 8.4, 8.6, start, fine) == ""
    assert window_health(samples, 8.4, 9.5, start, fine) == THROTTLED  # t=9: set during the point
    assert window_health([at(4.1, False)], 4, 6, at(4.1, False), busy) == BUSY
    assert window_health([at(4.1, True)], 4, 6, at(4.1, True), busy) == f"{THROTTLED},{BUSY}"
    assert window_health([at(4.1, False)], 4, 6, at(4.1, False), failed) == UNKNOWN
    assert window_health([at(4.1, None)], 4, 6, at(4.1, None), busy) == f"{BUSY},{UNKNOWN}"
    assert window_health([], 0, 1) == UNKNOWN                      # nothing sampled at all


# -- this machine ----------------------------------------------------------------------------------

def test_probe_on_this_machine_names_every_missing_sensor(local):
    p = health.probe(local)
    assert p.cpus and p.cpus >= 1
    has = {"thermal": bool(p.zones), "cpufreq": bool(p.cpufreq), "vcgencmd": bool(p.vcgencmd)}
    for sensor, present in has.items():
        assert present or p.missing.get(sensor), f"{sensor} neither found nor explained"
    if not p.zones:
        assert "/sys/class/thermal" in p.missing["thermal"]
    if not p.cpufreq:
        assert p.missing["cpufreq"].startswith("no /sys/devices/system/cpu/cpu0/cpufreq on local")
    if not p.vcgencmd and not p.is_raspberry_pi:
        assert p.missing["vcgencmd"].startswith("not a Raspberry Pi")


def test_a_real_run_on_this_machine(tmp_path):
    target = LocalTarget()
    run = Run("health_test", {}, target.facts(), data_dir=tmp_path, run_id="real")
    run.health = HealthMonitor(target, run.dir, interval_s=0.2)
    with run:
        run.add(metric="before", value=1.0, unit="s")
        for rep in (1, 2):
            run.begin_point()
            time.sleep(0.5)
            run.add(metric="m", value=float(rep), unit="s", rep=rep)
            run.end_point()
        # The thread's own sample, waited for: on a busy machine its 0.2 s may come late.
        wait_until(lambda: run.health.counts["samples"] >= 4, 30, 0.01)
    probe = run.health.probe
    df = load_results(run.dir)
    notes = load_meta(run.dir)["notes"]["health"]
    assert notes["missing"] == probe.missing and notes["counts"]["points"] == 2
    assert notes["counts"]["samples"] >= 4  # start, two points, the thread's
    rows = list(csv.DictReader(open(run.dir / health.HEALTH_CSV)))
    sensors = {r["sensor"] for r in rows}
    assert {"loadavg", "cpu_busy", "quiet_busy_cpus", "verdict"} <= sensors
    # A sensor the machine lacks has no rows at all, never a zero.
    for sensor, present in (("temperature", probe.zones), ("cpu_freq", probe.cpufreq),
                            ("vcgencmd_throttled", probe.vcgencmd)):
        assert bool(present) == (sensor in sensors)
    quiet = [float(r["value"]) for r in rows if r["sensor"] == "quiet_busy_cpus"]
    assert len(quiet) == 2 and all(0 <= q <= probe.cpus + 0.5 for q in quiet)
    if probe.throttle_unknown:
        assert all(UNKNOWN in health.flags(h) for h in df["health"])
        assert notes["throttle_unknown"].startswith("no throttling sensor on local") or probe.is_raspberry_pi
        unjudged = [r for r in rows if r["sensor"] == "verdict" and r["item"] == THROTTLED]
        assert unjudged and all(r["value"] == "" for r in unjudged)
    assert "- Throttling " in run_notes(run.dir, df)


def test_ctrl_c_in_the_body_stops_the_sampler_thread(tmp_path):
    target = LocalTarget()
    run = Run("health_test", {}, target.facts(), data_dir=tmp_path, run_id="ctrl-c")
    run.health = HealthMonitor(target, run.dir, interval_s=0.1)
    with pytest.raises(KeyboardInterrupt):
        with run:
            thread = run.health.thread
            assert thread.is_alive()
            run.begin_point()
            run.add(metric="m", value=1.0, unit="s")
            raise KeyboardInterrupt
    assert not thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("edgebench-health")]
    meta = load_meta(run.dir)
    assert meta["status"] == "interrupted" and meta["notes"]["health"]["counts"]["samples"] >= 2
    lines = (run.dir / health.HEALTH_CSV).read_text().splitlines()
    assert lines[0].split(",") == health.CSV_COLUMNS and len(lines) > 2


def test_every_run_opened_on_a_target_is_monitored_and_the_sweep_brackets_points(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "tool_versions", lambda target: {})  # not what is tested: seconds of commands
    record = static_footprint.Params(runtimes="native", run_id="open-run")  # any experiment's record opens one
    run = common.open_run(record, LocalTarget(), data_dir=tmp_path)
    assert isinstance(run.health, HealthMonitor)
    a, b = (type("R", (), {"name": n})() for n in "ab")
    with run:
        sweep(run, [a, b], reps=2, row_for=lambda p: dict(runtime=p.runtime.name, rep=p.rep),
              measure=lambda p, row: run.add(metric="m", value=1.0, unit="ms", **row), failed=("m", "ms"),
              desc="t", progress=False)
    notes = load_meta(run.dir)["notes"]["health"]
    assert notes["counts"]["points"] == 4 and sum(notes["counts"]["rows"].values()) == 4
    assert (run.dir / health.HEALTH_CSV).exists()


def test_a_run_without_a_monitor_says_unknown_not_fine(tmp_path):
    with Run("health_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="bare") as run:
        run.add(metric="m", value=1.0, unit="s")
        run.add(metric="m", value=2.0, unit="s", health="throttled")
    assert list(load_results(run.dir)["health"]) == [UNKNOWN, THROTTLED]


# -- tables and figures ------------------------------------------------------------------------

def test_cell_marks_count_repetitions():
    rows = pd.DataFrame({"rep": [1, 1, 2, 3], "health": ["", "throttled", "busy,unknown", np.nan]})
    assert cell_health(rows) == "\u2020 throttled 1/3, busy 1/3"
    assert cell_health(rows.assign(health=["", "", "unknown", ""])) == "unknown 1/3"
    assert cell_health(rows.assign(health="")) == ""


def test_tables_mark_a_cell_measured_while_throttled_and_say_why(tmp_path):
    from edgebench.plotting.time_to_ready import ttr_table
    from edgebench.reference import load_reference
    from test_plotting import ttr_results

    df = ttr_results().assign(health="")
    hot = (df["runtime"] == "docker") & (df["protocol"] == "fair") & (df["app"] == "go-http") & (df["rep"] <= 2)
    df.loc[hot, "health"] = "throttled"
    table = ttr_table(df, load_reference("time_to_ready"))
    marked = table[table["health"] != ""]
    assert list(marked[["app", "runtime", "protocol", "health"]].itertuples(index=False, name=None)) == [
        ("go-http", "docker", "fair", "\u2020 throttled 2/5")]
    assert list(table.columns[:4]) == ["app", "runtime", "protocol", "health"]  # beside its keys
    table.round(1)  # the notebooks' display still works
    # Results from before health was sampled: no column, nothing claimed.
    assert "health" not in ttr_table(df.drop(columns="health"), load_reference("time_to_ready"))
    # The footnote under the run's notes.
    with Run("health_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="notes") as run:
        pass
    notes = run_notes(run.dir, df)
    assert "\u2020 measured while the device throttled or was busy" in notes and "6 of" in notes


def test_mark_health_keeps_tables_without_matching_keys():
    table = pd.DataFrame({"x": [1]})
    assert mark_health(table, pd.DataFrame({"health": ["busy"], "y": [1]}), ["x"]).equals(table)


@pytest.mark.parametrize("name", ["time_to_ready", "http_load", "iomt", "page_faults", "lxd_appendix",
                                  "microbenchmarks"])
def test_figures_put_a_dagger_on_what_was_measured_while_throttled(name):
    from test_plotting import EXPERIMENTS, figures_of

    make, _ = EXPERIMENTS[name]
    df = make().assign(health="")
    clean = figures_of(name, df)
    assert not any(t.get_gid() == style.HEALTH_GID for f in clean for ax in f.axes for t in ax.texts)
    # One runtime's first repetition ran hot everywhere (native: microbenchmarks' network has no lxd).
    rt = "docker" if name in ("microbenchmarks", "lxd_appendix") else "lxd"
    df.loc[(df["runtime"] == rt) & (df["rep"] == 1), "health"] = "throttled"
    figs = figures_of(name, df)
    daggers = [t for f in figs for ax in f.axes for t in ax.texts if t.get_gid() == style.HEALTH_GID]
    assert daggers and all(t.get_text() == style.HEALTH_MARK for t in daggers)
    legends = [t.get_text() for f in figs for leg in f.legends for t in leg.get_texts()]
    assert style.HEALTH_LABEL in legends


def test_lines_that_meet_put_their_daggers_side_by_side_in_their_colours():
    # The emulated debian-v2's appendix: native and Docker 6 ms apart at 8 files, both busy; the two
    # daggers above their points printed as one blot.
    from test_plotting import EXPERIMENTS, figures_of

    make, _ = EXPERIMENTS["lxd_appendix"]
    df = make().assign(health="busy")
    fig = figures_of("lxd_appendix", df)[0]
    for ax in fig.axes:
        daggers = [t for t in ax.texts if t.get_gid() == style.HEALTH_GID]
        if not daggers:
            continue
        at = {(t.xy, t.xyann) for t in daggers}
        assert len(at) == len(daggers)  # no two at the same point and offset
        for x in {t.xy[0] for t in daggers}:
            offsets = sorted(t.xyann[0] for t in daggers if t.xy[0] == x)
            assert len(set(offsets)) == len(offsets) and offsets[0] > 0  # beside the point, each its own step
        assert len({t.get_color() for t in daggers}) > 1


def test_a_written_value_keeps_its_dagger_beside_it_and_log_axes_read_as_numbers():
    # debian-v2's network figure: host mode's dagger printed over its "0.863" and "9.48".
    from test_plotting import EXPERIMENTS, figures_of

    make, _ = EXPERIMENTS["microbenchmarks"]
    df = make().assign(health="")
    df.loc[(df["runtime"] == "docker") & (df["rep"] == 1), "health"] = "busy"
    sysbench, network = figures_of("microbenchmarks", df)
    for ax in network.axes:
        daggers = [t for t in ax.texts if t.get_gid() == style.HEALTH_GID]
        values = [t for t in ax.texts if t.get_gid() != style.HEALTH_GID]
        assert daggers and values
        for d in daggers:
            written = next(t for t in values if t.xy == d.xy)
            assert d.xyann[0] >= 2.3 * len(written.get_text())  # right of the written value
    logs = [ax for f in (sysbench, network) for ax in f.axes if ax.get_yscale() == "log"]
    assert logs
    for ax in logs:
        f = ax.yaxis.get_major_formatter()
        assert not any("times" in f(v, 0) for v in ax.get_yticks())
