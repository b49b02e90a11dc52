"""A real `make figures` stopped mid-measurement by SIGINT, SIGTERM or SIGHUP, sent to its whole
process group (a terminal's Ctrl-C or hangup, `timeout`) or to one process alone (`kill` of the
driver; make itself, which passes SIGTERM on): the run ends non-zero, its run is marked
interrupted with the rows measured before the signal kept, and nothing it started is left:
no container, cgroup, app process or notebook kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from edgebench.paths import PROJECT_ROOT
from edgebench.waiting import wait_until

ROWS_BEFORE_SIGNAL = 2
START_TIMEOUT_S = 240
EXIT_TIMEOUT_S = 120


def data_lines(path) -> list[str]:
    try:
        return path.read_text().split("\n")[1:-1]  # no header, nothing after the last newline
    except FileNotFoundError:
        return []


def processes_with_env(marker: str) -> list[str]:
    """Live processes (a kernel, an app) that inherited this run's environment."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                if any(line.startswith("State:") and "Z" in line for line in f):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid}: {args[:160]}")
        except OSError:
            continue
    return found


def driver_of(make_pid: int) -> int:
    """The edgebench.drivers.figures process make runs (its child, or a shell's child)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in out.splitlines() if len(line.split(None, 2)) == 3]
    family = {make_pid}
    for _ in range(3):
        family |= {int(pid) for pid, ppid, _ in rows if int(ppid) in family}
    return next(int(pid) for pid, _, args in rows if int(pid) in family and "edgebench.drivers.figures" in args)


STOPS = [(to, sig) for to in ("group", "driver") for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
# GNU make passes SIGTERM on to its job, but only waits on SIGINT/SIGHUP sent to make alone.
STOPS.append(("make", signal.SIGTERM))


@pytest.mark.parametrize("to,sig", STOPS, ids=[f"{sig.name}-to-{to}" for to, sig in STOPS])
@pytest.mark.slow
def test_make_figures_stops_cleanly(to, sig, tmp_path, docker_ready, cgroups_ready, no_leftovers):
    data = tmp_path / f"data-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(data), EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"))
    make = subprocess.Popen(
        ["make", "--no-print-directory", "figures", "PROVISION=no", "PROFILE=quick", "ONLY=time_to_ready",
         "RUNTIMES=native,docker", "APPS=go-http", "REPS=40"],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)  # its own process group, as in a terminal
    try:
        def measuring() -> list[Path]:
            runs = list((data / "time_to_ready").glob("*/results.csv"))
            if runs and len(data_lines(runs[0])) >= ROWS_BEFORE_SIGNAL:
                return runs
            if make.poll() is not None:
                out, err = make.communicate()
                pytest.fail(f"make figures ended (exit {make.returncode}) before measuring:\n{out[-2000:]}"
                            f"\n{err[-3000:]}")
            return []

        runs = wait_until(measuring, START_TIMEOUT_S, 0.05)
        assert runs, f"no rows after {START_TIMEOUT_S} s"
        before = data_lines(runs[0])
        if to == "group":
            os.killpg(make.pid, sig)
        else:
            os.kill(make.pid if to == "make" else driver_of(make.pid), sig)
        try:
            out, err = make.communicate(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"make figures still running {EXIT_TIMEOUT_S} s after {sig.name} to the {to}")

        assert make.returncode != 0, out[-2000:]
        assert f"== {sig.name}: stopping" in err, err[-3000:]
        assert "Traceback" not in err and "ZMQError" not in err, err[-4000:]
        assert "stopped by" in out
        meta = json.loads((runs[0].parent / "meta.json").read_text())
        assert meta["status"] == "interrupted", meta
        after = data_lines(runs[0])
        assert after[:len(before)] == before and len(after) < 40 * 2 * 2
        assert sum(meta["rows"].values()) == len(after)
        assert not processes_with_env(str(data)), "left running"
        assert not list((tmp_path / "figures").rglob("time_to_ready/02_time_to_ready.ipynb"))
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
