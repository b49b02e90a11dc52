"""Integration: a time-to-ready run interrupted by SIGINT (Ctrl-C) or SIGTERM (kill, timeouts)
stops everything it started, keeps the rows it measured and records that it was interrupted."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import sigint_default
from edgebench.paths import PROJECT_ROOT
from edgebench.results import load_meta, load_results
from edgebench.waiting import wait_until

CHILD = """
import faulthandler, signal, sys
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for stacks if the run hangs
from edgebench.experiments import time_to_ready
time_to_ready.run(time_to_ready.Params(runtimes=sys.argv[1], repetitions=50, profile="quick", protocols="fair",
                                       caches="warm", run_id=sys.argv[2], progress=False))
print("completed")
"""
ROWS_BEFORE_SIGNAL = 2
START_TIMEOUT_S = 90
EXIT_TIMEOUT_S = 60


def complete_rows(path) -> list[str]:
    """Data lines of results.csv that were completely written (no partial last line)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    lines = text.split("\n")[:-1]  # whatever follows the last newline may still be in flight
    return lines[1:]  # without the header


def stacks_of(proc: subprocess.Popen) -> str:
    """Every thread's stack of a hung child (its faulthandler writes them on SIGUSR1), then it is killed:
    a rare hang must say where it waited the one time it happens."""
    proc.send_signal(signal.SIGUSR1)
    time.sleep(1)
    proc.kill()
    _, err = proc.communicate()
    return err[-6000:]


def interrupt_run(runtime: str, sig: int, data_dir) -> None:
    run_id = f"interrupt-test-{runtime}-{signal.Signals(sig).name.lower()}-{uuid.uuid4().hex[:8]}"
    run_dir = data_dir / "time_to_ready" / run_id
    results = run_dir / "results.csv"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, runtime, run_id], cwd=PROJECT_ROOT,
                            env=dict(os.environ, EDGEBENCH_DATA_DIR=str(data_dir)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        def rows_written() -> bool:
            if len(complete_rows(results)) >= ROWS_BEFORE_SIGNAL:
                return True
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"the run ended (exit {proc.returncode}) before {ROWS_BEFORE_SIGNAL} rows:\n"
                            f"{out}\n{err[-3000:]}")
            return False

        if not wait_until(rows_written, START_TIMEOUT_S, 0.02):
            pytest.fail(f"fewer than {ROWS_BEFORE_SIGNAL} rows in {results} after {START_TIMEOUT_S} s")
        before = complete_rows(results)
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run did not exit within {EXIT_TIMEOUT_S} s of {signal.Signals(sig).name}; "
                        f"where its threads were:\n{stacks_of(proc)}")

        # It unwound through KeyboardInterrupt (which Python ends with SIGINT: exit -2), rather than
        # dying of SIGTERM itself (-15), failing (1) or finishing (0).
        assert proc.returncode == -signal.SIGINT, f"exit {proc.returncode}\n{err[-3000:]}"
        assert "completed" not in out
        assert "KeyboardInterrupt" in err

        meta = load_meta(run_dir)
        assert meta["status"] == "interrupted"
        assert meta["ended_at"] and "interrupted" in meta["error"]
        after = complete_rows(results)
        assert after[:len(before)] == before, "rows written before the signal changed"
        assert len(after) < 50 * 2 * 5  # far from a finished run
        df = load_results(run_dir)
        assert len(df) == len(after)
        # meta's counts are taken from the file itself when the run ends.
        assert sum(meta["rows"].values()) == len(after)
        assert list(df.columns) == meta["columns"]
        parsed_before = list(csv.DictReader(io.StringIO("\n".join([",".join(meta["columns"])] + before))))
        assert all(r["run_id"] == run_id and r["runtime"] == runtime for r in parsed_before)
        assert (df.loc[df.status == "ok", "value"].notna()).all()
        assert (df.status == "ok").any()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_native(sig, tmp_path, cgroups_ready, no_leftovers):
    interrupt_run("native", sig, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_docker(sig, tmp_path, docker_ready, cgroups_ready, no_leftovers):
    interrupt_run("docker", sig, tmp_path)


INTERRUPTED_COMMAND = """
import os, signal, sys, threading
from edgebench.targets import LocalTarget
threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    LocalTarget().run(["sh", "-c", 'sleep "$1"; : "$0"', sys.argv[1], sys.argv[2]])
except BaseException as e:
    print(type(e).__name__, e)
else:
    print("returned")
"""


@pytest.mark.parametrize("duration", ["0.4", "30"])
def test_ctrl_c_during_a_local_command_raises_keyboard_interrupt(duration):
    """Ctrl-C while LocalTarget waits for a command must surface as KeyboardInterrupt (what Run
    records as 'interrupted') and leave no command running, whether the command ends shortly after
    the signal (0.4 s: Python's communicate() reaps it while handling the Ctrl-C) or not (30 s)."""
    marker = f"eb-interrupt-{uuid.uuid4().hex}"
    r = subprocess.run([sys.executable, "-c", INTERRUPTED_COMMAND, marker, duration],
                       capture_output=True, text=True, timeout=30, cwd=PROJECT_ROOT, preexec_fn=sigint_default)
    assert r.stdout.split(" ")[0].strip() == "KeyboardInterrupt", r.stdout + r.stderr
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert marker not in ps


def test_signal_while_a_row_is_flushed_keeps_meta_counts_consistent(tmp_path, monkeypatch):
    """A Ctrl-C that lands while a row is being fsynced: the row is in results.csv already, so
    meta.json's row counts must include it (a signal during the fsync is likely: it is slow)."""
    import edgebench.results as results

    with pytest.raises(KeyboardInterrupt):
        with results.Run("interrupt_test", {}, {"target": "local"}, data_dir=tmp_path, run_id="r1") as run:
            run.add(metric="m", value=1.0, unit="ms")

            real_fsync = os.fsync

            def fsync_then_ctrl_c(fd):
                real_fsync(fd)
                monkeypatch.setattr(results.os, "fsync", real_fsync)  # once
                raise KeyboardInterrupt

            monkeypatch.setattr(results.os, "fsync", fsync_then_ctrl_c)
            run.add(metric="m", value=2.0, unit="ms")
    meta = load_meta(run.dir)
    rows = load_results(run.dir)
    assert meta["status"] == "interrupted"
    assert list(rows.value) == [1.0, 2.0]  # the second row made it to the file
    assert sum(meta["rows"].values()) == len(rows)
