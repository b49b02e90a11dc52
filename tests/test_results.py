"""edgebench.results: the data directory of one run, written as it goes."""

import csv
import json
import math
import os
import signal
import time
import warnings

import pytest

from edgebench.errors import ConfigError
from edgebench.results import CORE_COLUMNS, Run, find_run, load_meta, load_results

FACTS = {"target": "pi4", "arch": "aarch64", "cores": 4, "memory_mb": 3794}
VERSIONS = {"docker": "24.0.5", "ops": None}
PARAMS = {"apps": ["go-http"], "memory": "64m", "repetitions": 3}


def new_run(tmp_path, run_id="r1", **kw):
    return Run("exp", PARAMS, FACTS, extra_columns=["build"], run_id=run_id, data_dir=tmp_path,
               tool_versions=VERSIONS, **kw)


def disk_rows(run):
    with open(run.dir / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_layout_and_meta_while_running(tmp_path):
    run = new_run(tmp_path)
    assert run.dir == tmp_path / "exp" / "r1"
    assert (run.dir / "raw").is_dir()
    header = (run.dir / "results.csv").read_text().splitlines()[0].split(",")
    assert header == CORE_COLUMNS + ["build"]
    meta = load_meta(run.dir)
    assert meta["status"] == "running" and meta["ended_at"] is None and meta["started_at"]
    assert meta["parameters"] == PARAMS
    assert set(meta["project"]) == {"commit", "dirty"}
    assert meta["target"] == FACTS
    assert meta["tool_versions"] == VERSIONS
    run.finish()


def test_completed_run(tmp_path):
    with new_run(tmp_path) as run:
        run.add(metric="m", value=1.5, unit="ms", app="go-http", rep=1, build="offline")
    meta = load_meta(run.dir)
    assert meta["status"] == "completed"
    assert meta["ended_at"] >= meta["started_at"]
    assert meta["rows"] == {"ok": 1, "failed": 0, "not measurable": 0}
    df = load_results(run.dir)
    assert df.loc[0, "target"] == "pi4" and df.loc[0, "build"] == "offline" and df.loc[0, "value"] == 1.5


def test_rows_are_on_disk_before_finish(tmp_path):
    with new_run(tmp_path) as run:
        run.add(metric="m", value=7, unit="ms", rep=1)
        rows = disk_rows(run)
        assert [(r["metric"], r["value"], r["status"]) for r in rows] == [("m", "7", "ok")]
        assert json.loads((run.dir / "meta.json").read_text())["status"] == "running"


def test_failed_run_records_the_error(tmp_path):
    with pytest.raises(RuntimeError):
        with new_run(tmp_path) as run:
            raise RuntimeError("probe exploded")
    meta = load_meta(run.dir)
    assert meta["status"] == "failed" and "probe exploded" in meta["error"] and meta["ended_at"]


def test_interrupted_run_keeps_its_rows(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with new_run(tmp_path) as run:
            run.add(metric="m", value=1, unit="ms", rep=1)
            run.add(metric="m", value=2, unit="ms", rep=2)
            raise KeyboardInterrupt
    assert load_meta(run.dir)["status"] == "interrupted"
    assert load_results(run.dir)["value"].tolist() == [1, 2]


def test_sigterm_is_an_interrupt(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with new_run(tmp_path) as run:
            run.add(metric="m", value=1, unit="ms", rep=1)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the signal arrives first
    assert load_meta(run.dir)["status"] == "interrupted"
    assert signal.getsignal(signal.SIGTERM) == before


def test_undeclared_column_is_refused(tmp_path):
    with new_run(tmp_path) as run:
        with pytest.raises(ValueError, match="colour"):
            run.add(metric="m", value=1, unit="ms", colour="red")
    assert disk_rows(run) == []


def test_failed_rows_load_as_nan_not_zero(tmp_path):
    with new_run(tmp_path) as run:
        run.failed(metric="time_to_ready", unit="ms", error="OOM-killed\n  in cgroup", rep=1)
        run.add(metric="time_to_ready", value=0, unit="ms", rep=2)
        run.add(metric="time_to_ready", value=float("nan"), unit="ms", rep=3)
    df = load_results(run.dir)
    assert math.isnan(df.loc[0, "value"]) and df.loc[0, "status"] == "failed"
    assert df.loc[0, "error"] == "OOM-killed in cgroup"
    assert df.loc[1, "value"] == 0 and df.loc[1, "error"] == ""
    assert math.isnan(df.loc[2, "value"])
    assert load_meta(run.dir)["rows"] == {"ok": 2, "failed": 1, "not measurable": 0}


def test_load_results_without_errors_gives_empty_strings_without_warnings(tmp_path):
    with new_run(tmp_path) as run:
        run.add(metric="m", value=1, unit="ms")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas warns that this fillna will raise in a future version
        df = load_results(run.dir)
    assert df["error"].tolist() == [""]


def test_raw_output_is_saved_with_its_command(tmp_path):
    with new_run(tmp_path) as run:
        path = run.save_raw("probe go/http rep 1", command="probe -url x -- ./app", stdout="{}\n",
                            stderr="warn", exit_code=0, pid=42)
    assert path == run.dir / "raw" / "00001-probe_go_http_rep_1.json"
    record = json.loads(path.read_text())
    assert record["command"] == "probe -url x -- ./app"
    assert (record["stdout"], record["stderr"], record["exit_code"], record["pid"]) == ("{}\n", "warn", 0, 42)


def test_existing_run_id_is_refused(tmp_path):
    with new_run(tmp_path) as run:
        run.add(metric="m", value=1, unit="ms")
    with pytest.raises(ConfigError, match="r1"):
        new_run(tmp_path)
    assert len(load_results(run.dir)) == 1


@pytest.mark.parametrize("run_id", ["../escape", "a b", "", ".hidden", "x/y", "semi;colon"])
def test_bad_run_id_is_refused(tmp_path, run_id):
    with pytest.raises(ConfigError):
        new_run(tmp_path, run_id=run_id)
    assert not (tmp_path / "exp").exists() and not (tmp_path / "escape").exists()


def test_find_run_latest_is_the_newest(tmp_path):
    with new_run(tmp_path, run_id="zz-older"):
        pass
    time.sleep(0.01)
    with new_run(tmp_path, run_id="aa-newer"):
        pass
    (tmp_path / "exp" / "incomplete").mkdir()  # no results: not a run
    assert find_run("exp", "latest", data_dir=tmp_path).name == "aa-newer"
    assert find_run("exp", "zz-older", data_dir=tmp_path).name == "zz-older"


def test_find_run_without_data_says_what_to_do(tmp_path):
    with pytest.raises(ConfigError) as e:
        find_run("time_to_ready", "latest", data_dir=tmp_path)
    assert "time_to_ready" in str(e.value) and "run the experiment" in str(e.value)
    with pytest.raises(ConfigError, match="nope"):
        find_run("time_to_ready", "nope", data_dir=tmp_path)


def test_an_interrupt_closes_only_its_own_devices_runs(tmp_path):
    """Two devices measuring the same experiment into one data/ (the debian-v2 device beside this
    machine): Ctrl-C on one `make figures` marks its own running run interrupted, not the other's,
    and its summary reports its own run, not the other device's newer one."""
    from edgebench.results import close_unfinished
    local = Run("exp", {"target": "local"}, {"target": "local"}, run_id="r1", data_dir=tmp_path)
    device = Run("exp", {"target": "debian-v2"}, {"target": "debian-v2"}, run_id="r2", data_dir=tmp_path)
    closed = close_unfinished("exp", "", "interrupted", "stopped", data_dir=tmp_path, target="local")
    assert closed == [local.dir]
    assert load_meta(local.dir)["status"] == "interrupted" and load_meta(device.dir)["status"] == "running"
    assert find_run("exp", "latest", tmp_path, target="local") == local.dir
    assert find_run("exp", "latest", tmp_path) == device.dir
    device.finish()
