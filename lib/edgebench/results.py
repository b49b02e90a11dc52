"""Where a run's data goes: data/<experiment>/<run_id>/ with meta.json, raw/ and results.csv.

A row is appended and flushed per repetition, so an interrupted run keeps what it measured.
Nothing is averaged here; aggregation happens in the notebook.

A run opened on a target (experiments.common.open_run) carries a HealthMonitor (edgebench.tools.health):
it samples the device into health.csv from the run's start to its end, and each row's `health`
column says whether the device throttled or was busy while that row was measured ("" when it was
fine, "unknown" where that cannot be told; the rule is in edgebench.tools.health).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import secrets
import signal
import subprocess
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from edgebench.errors import ConfigError, TargetUnreachable
from edgebench.paths import DATA_DIR, PROJECT_ROOT
from edgebench.signals import asked_to_stop, stop_since, stops_so_far
from edgebench.tools.health import UNKNOWN

CORE_COLUMNS = ["experiment", "run_id", "target", "platform", "app", "runtime", "protocol", "cpus", "memory_mb",
                "rep", "metric", "value", "unit", "status", "error", "health", "point_id"]
# A row's status: measured; something went wrong (the reason in `error`); or what this device or
# runtime cannot measure (no power meter, an app's clock in a VM), the reason in `error`.
NOT_MEASURABLE = "not measurable"
STATUSES = ("ok", "failed", NOT_MEASURABLE)
# One line per measured point that ended (edgebench.resume): what a resumed run does not measure again.
POINTS_FILE = "points.jsonl"
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def seconds_since(when: str) -> float:
    """Wall-clock seconds from `when` (an ISO time, as utc_now writes them) to now."""
    return (datetime.now(timezone.utc) - datetime.fromisoformat(when)).total_seconds()


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def platform_of(facts: dict) -> str:
    """The row's `platform`: the device's architecture, and "emulated device" where it is one
    (make device): under TCG its numbers measure QEMU's emulator, not a board."""
    arch = facts.get("arch") or ""
    return f"{arch} (emulated device)" if facts.get("emulated_device") else arch


def git_state(root: Path = PROJECT_ROOT) -> dict:
    def git(*args):
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20)
        return r.stdout.strip() if r.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def _jsonable(value: Any) -> Any:
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)


class Run:
    """One execution of one experiment. Use as a context manager: the meta file records how
    it ended (completed, failed, interrupted) even when the body raises.

    `resume=True` opens an existing run again (edgebench.resume has checked it may be, and kept in
    results.csv only the rows of points that ended): rows are appended, raw files numbered on,
    and `meta.json` gets a new sitting."""

    def __init__(self, experiment: str, params: dict, target_facts: dict, *,
                 extra_columns: list[str] = (), run_id: str | None = None, data_dir: Path = DATA_DIR,
                 tool_versions: dict | None = None, resume: bool = False, sitting: dict | None = None):
        if run_id is not None and not _RUN_ID_RE.match(run_id):
            raise ConfigError(f"run_id={run_id!r} may only hold letters, digits, '.', '_' and '-'")
        self.experiment = experiment
        self._stop_mark = stops_so_far()  # set again when the run is entered
        self.run_id = run_id or new_run_id()
        self.dir = Path(data_dir) / experiment / self.run_id
        if (self.dir / "results.csv").exists() != resume:
            raise ConfigError(f"{self.dir} already holds results; choose another run_id "
                              "(raw data is never overwritten)" if not resume else
                              f"{self.dir} holds no run to resume")
        self.raw_dir = self.dir / "raw"
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        self.columns = self.columns_for(extra_columns)
        self.target = target_facts.get("target", "local")
        self.platform = platform_of(target_facts)
        self.counts = dict.fromkeys(STATUSES, 0)
        self._raw_seq = max((int(p.name[:5]) for p in self.raw_dir.glob("[0-9]" * 5 + "-*")), default=0)
        self._lock = threading.Lock()
        # The device's health (edgebench.tools.health.HealthMonitor), set before `with`: sampled from
        # __enter__ to the end of the run. Without one, every row's health is "unknown".
        self.health = None
        # Only the points these name are measured (make settle's; experiments.sweep.in_focus).
        self.focus: tuple = ()
        # The point being measured (experiments.sweep), written into each row, and those that ended.
        self.point = ""
        self._point_started = ""
        self.ended_points = ended_points(self.dir) if resume else {}
        now = utc_now()
        this_sitting = {"started_at": now, "ended_at": None, "status": "running", **(sitting or {})}
        if resume:
            self.meta = load_meta(self.dir)
            if self.meta.get("columns") != self.columns:
                raise ConfigError(f"{self.dir} was written with other columns; it cannot be resumed")
            self.meta.update(status="running", ended_at=None, parameters=params, target=target_facts)
            self.meta.setdefault("sittings", []).append(this_sitting)
        else:
            self.meta = {
                "experiment": experiment, "run_id": self.run_id, "status": "running",
                "started_at": now, "ended_at": None, "parameters": params,
                "project": git_state(), "target": target_facts,
                # The device's name in a fleet (make figures TARGET=a,b or FLEET=file), which a fleet
                # file may choose apart from the address; None for a single target.
                "device": os.environ.get("EDGEBENCH_DEVICE") or None,
                # Every declared program's version on the target (edgebench.provisioning.parts), None where missing.
                "tool_versions": dict(tool_versions or {}),
                "columns": self.columns,
                "sittings": [this_sitting],
            }
        self._write_meta()
        self._csv = open(self.dir / "results.csv", "a" if resume else "w", newline="")
        self._writer = csv.DictWriter(self._csv, fieldnames=self.columns, extrasaction="raise")
        if not resume:
            self._writer.writeheader()
        self._flush()

    @staticmethod
    def columns_for(extra_columns) -> list[str]:
        return CORE_COLUMNS + [c for c in extra_columns if c not in CORE_COLUMNS]

    # -- rows ---------------------------------------------------------------------
    def add(self, *, metric: str, value: float | None, unit: str, status: str = "ok",
            error: str = "", **context) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        row = {c: "" for c in self.columns}
        row.update(experiment=self.experiment, run_id=self.run_id, target=self.target, platform=self.platform,
                   point_id=self.point)
        unknown = set(context) - set(self.columns)
        if unknown:
            raise ValueError(f"columns {sorted(unknown)} not declared for {self.experiment}")
        row.update({k: ("" if v is None else v) for k, v in context.items()})
        if "health" not in context:
            row["health"] = self.health.row_health() if self.health is not None else UNKNOWN
        row.update(metric=metric, unit=unit, status=status,
                   value="" if value is None or (isinstance(value, float) and math.isnan(value)) else value,
                   error=" ".join(str(error).split())[:500])
        with self._lock:
            self._writer.writerow(row)
            self._flush()
            self.counts[status] += 1

    def failed(self, *, metric: str, unit: str, error: str, **context) -> None:
        self.add(metric=metric, value=None, unit=unit, status="failed", error=error, **context)

    def not_measurable(self, *, metric: str, unit: str, why: str, **context) -> None:
        self.add(metric=metric, value=None, unit=unit, status=NOT_MEASURABLE, error=why, **context)

    def _flush(self) -> None:
        self._csv.flush()
        os.fsync(self._csv.fileno())

    # -- raw output ---------------------------------------------------------------
    def save_raw(self, name: str, *, command: str, stdout: str = "", stderr: str = "",
                 exit_code: int | None = None, **extra) -> Path:
        """Tool output exactly as captured, with the command that produced it."""
        with self._lock:
            self._raw_seq += 1
            seq = self._raw_seq
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120]
        path = self.raw_dir / f"{seq:05d}-{safe}.json"
        record = {"command": command, "exit_code": exit_code, "stdout": stdout, "stderr": stderr,
                  "captured_at": utc_now(), **extra}
        path.write_text(json.dumps(record, indent=1, default=_jsonable))
        return path

    # -- lifecycle ----------------------------------------------------------------
    def _write_meta(self) -> None:
        write_meta(self.dir, self.meta)

    def note(self, key: str, value: Any) -> None:
        self.meta.setdefault("notes", {})[key] = value
        self._write_meta()

    # -- measured points (experiments.sweep): the health monitor judges "busy" at their start ----
    def stop_asked(self) -> str:
        """The stop signal that arrived since the run began ("" if none): one an error hid on
        its way up still stops the run (signals.asked_to_stop)."""
        return stop_since(self._stop_mark)

    def begin_point(self, point_id: str = "") -> None:
        if self.stop_asked():  # no further point starts
            raise KeyboardInterrupt(f"stopped by {self.stop_asked()}")
        self.point, self._point_started = point_id, utc_now()
        if self.health is not None:
            self.health.begin_point()

    def end_point(self, ended: bool = False) -> None:
        """`ended`: the point ran to its end (ok or failed rows), so a resumed run skips it; a
        point cut by a stop is not journaled and is measured again whole."""
        try:
            if self.health is not None:
                self.health.end_point()
        finally:
            if ended and self.point:
                record = {"point_id": self.point, "started_at": self._point_started, "ended_at": utc_now()}
                with self._lock, open(self.dir / POINTS_FILE, "a") as f:
                    f.write(json.dumps(record) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
                self.ended_points[self.point] = record
            self.point = ""

    def _stop_health(self) -> None:
        if self.health is not None:
            try:
                self.health.stop()
            finally:
                self.meta.setdefault("notes", {})["health"] = self.health.summary()

    def finish(self, status: str = "completed", error: str | None = None) -> None:
        try:
            self._stop_health()
        finally:
            self._close(status, error)

    def _close(self, status: str, error: str | None) -> None:
        if not self._csv.closed:
            self._csv.close()
        # Counted from the file: a signal between a row's write and its tally cannot skew it.
        self.counts = row_counts(self.dir)
        now = utc_now()
        self.meta.update(status=status, ended_at=now, rows=dict(self.counts))
        if error:
            self.meta["error"] = error
        else:
            self.meta.pop("error", None)  # a resumed run that completed has no error left
        _end_sitting(self.meta, status, now, error)
        self._write_meta()

    def __enter__(self) -> "Run":
        self._old_handlers, self._stop_mark = {}, stops_so_far()
        if threading.current_thread() is threading.main_thread():
            # Ctrl-C, and `kill`/timeouts' SIGTERM, unwind the same way, and are remembered so
            # that a stop a failing cleanup hid still stops the run (signals.asked_to_stop).
            self._old_handlers = {s: signal.signal(s, asked_to_stop) for s in (signal.SIGINT, signal.SIGTERM)}
        if self.health is not None:
            try:
                self.health.start()
                self.note("health", self.health.summary())
            except BaseException as e:  # Ctrl-C while probing: the run still says how it ended
                self.__exit__(type(e), e, e.__traceback__)
                raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        for s, handler in self._old_handlers.items():
            signal.signal(s, handler)
        if exc_type is None:
            self.finish("completed")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.finish("interrupted", "interrupted by the user (Ctrl-C or SIGTERM)")
        elif issubclass(exc_type, TargetUnreachable):
            self.finish("interrupted", f"stopped: a host stopped answering ({exc}); once it answers, "
                                       "go on with make figures RESUME=latest")
        else:
            self.finish("failed", f"{exc_type.__name__}: {exc}")


# -- reading back -------------------------------------------------------------------

def run_dirs(experiment: str, data_dir: Path = DATA_DIR) -> list[Path]:
    base = Path(data_dir) / experiment
    if not base.is_dir():
        return []
    dirs = [d for d in base.iterdir() if (d / "results.csv").exists() and (d / "meta.json").exists()]
    return sorted(dirs, key=lambda d: json.loads((d / "meta.json").read_text()).get("started_at") or "")


# A run that has not ended whole: still measuring, stopped (it resumes) or failed.
UNFINISHED = ("running", "interrupted", "failed")


def latest_run(experiment: str, target: str | None, profile: str = "any", data_dir: Path = DATA_DIR,
               finished_first: bool = False) -> Path | None:
    """The newest run of the experiment on the target (any target: None), made with that profile;
    with `finished_first`, the newest that ended whole where there is one, so a reading is not made
    from part of a run a device is still measuring (or was stopped in) while a whole one exists."""
    dirs = [d for d in run_dirs(experiment, data_dir)
            if (target is None or run_target(load_meta(d)) == target)
            and (profile == "any" or (load_meta(d).get("parameters") or {}).get("profile") == profile)]
    if finished_first:
        dirs = [d for d in dirs if load_meta(d).get("status") not in UNFINISHED] or dirs
    return dirs[-1] if dirs else None


def find_run(experiment: str, run_id: str = "latest", data_dir: Path = DATA_DIR, target: str | None = None) -> Path:
    """'latest' -> the most recent run of the experiment (on `target`, if given: a device measuring
    beside this one in the same data/ may have started a newer one); otherwise that run's directory."""
    if run_id in ("latest", "", None):
        dirs = [d for d in run_dirs(experiment, data_dir) if target is None or run_target(load_meta(d)) == target]
        if not dirs:
            raise ConfigError(f"no data for {experiment}{f' on {target}' if target else ''} under "
                              f"{Path(data_dir) / experiment}; run the experiment first (make figures) "
                              "instead of replotting")
        return dirs[-1]
    path = Path(data_dir) / experiment / run_id
    if not (path / "results.csv").exists():
        raise ConfigError(f"no run {run_id!r} for {experiment} in {path.parent}")
    return path


def load_results(run_dir: Path) -> pd.DataFrame:
    df = pd.read_csv(Path(run_dir) / "results.csv", keep_default_na=False, na_values=[""],
                     dtype={"error": str, "status": str, "health": str, "cpuset_applied": str,
                            "loadgen_cpuset": str})
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    df["error"] = df["error"].fillna("")
    if "health" in df:  # runs recorded before health was sampled have no such column
        df["health"] = df["health"].fillna("")
    return df


def run_target(meta: dict) -> str | None:
    """The target a run measured, as its notebook was given it ("local", "debian-v2", "pi@host")."""
    return (meta.get("parameters") or {}).get("target") or (meta.get("target") or {}).get("target")


def row_counts(run_dir: Path) -> dict[str, int]:
    """Rows of a run by status, counted from its results.csv (what meta.json's `rows` holds once
    the run ends; readers take them from there)."""
    with open(Path(run_dir) / "results.csv", newline="") as f:
        statuses = [row.get("status") for row in csv.DictReader(f)]
    return {s: statuses.count(s) for s in STATUSES}


def close_unfinished(experiment: str, since: str, status: str, error: str,
                     data_dir: Path = DATA_DIR, target: str | None = None) -> list[Path]:
    """Runs of `experiment` on `target` (any, if None) started at or after `since` whose
    meta.json still says running: the process measuring them ended before it could say how (a
    kernel killed mid-run). Record `status` with the rows counted from results.csv, which keeps
    every row written. Another device's run of the same experiment, going on beside this one in
    the same data/, is not this invocation's to close."""
    closed = []
    for run_dir in run_dirs(experiment, data_dir):
        try:
            meta = load_meta(run_dir)
        except (OSError, ValueError):
            continue
        if meta.get("status") != "running" or sitting_started(meta) < since:
            continue
        if target is not None and run_target(meta) != target:
            continue
        now = utc_now()
        meta.update(status=status, ended_at=now, error=error, rows=row_counts(run_dir))
        _end_sitting(meta, status, now, error)
        write_meta(run_dir, meta)
        closed.append(run_dir)
    return closed


def load_meta(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "meta.json").read_text())


def write_meta(run_dir: Path, meta: dict) -> None:
    """meta.json replaced whole (written beside it, then renamed): a reader never sees half of it."""
    tmp = Path(run_dir) / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1, default=_jsonable))
    tmp.replace(Path(run_dir) / "meta.json")


def sitting_started(meta: dict) -> str:
    """When the run's last sitting started (a resumed run's first started earlier)."""
    sittings = meta.get("sittings") or [{}]
    return sittings[-1].get("started_at") or meta.get("started_at") or ""


def _end_sitting(meta: dict, status: str, when: str, error: str | None) -> None:
    for sitting in (meta.get("sittings") or [])[-1:]:
        sitting.update(status=status, ended_at=when, **({"error": error} if error else {}))


def time_in_points(run_dir: Path, since: str = "") -> tuple[int, float]:
    """The points of the run that ended at or after `since` (an ISO time, as utc_now writes
    them) and the seconds they took, start to end: the time spent measuring (starting and
    stopping the app for the point included); the rest of a notebook's wall time is the harness's."""
    n, seconds = 0, 0.0
    for record in ended_points(run_dir).values():
        if (record.get("started_at") or "") >= since:
            n += 1
            seconds += point_seconds(record)
    return n, seconds


def point_seconds(record: dict) -> float:
    """A point's time in points.jsonl, start to end."""
    return (datetime.fromisoformat(record["ended_at"]) - datetime.fromisoformat(record["started_at"])).total_seconds()


def ended_points(run_dir: Path) -> dict[str, dict]:
    """point_id -> its line in points.jsonl, for every point of the run that ended."""
    path = Path(run_dir) / POINTS_FILE
    if not path.exists():
        return {}
    ended = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line cut by the stop: that point did not end
            continue
        ended[record["point_id"]] = record
    return ended
