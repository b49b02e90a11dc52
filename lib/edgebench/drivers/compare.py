"""Runs side by side: devices, dates and edgebench versions, each as ratios to the same device's
native runtime, beside the papers' ratios.

Absolute numbers do not compare across devices (a Raspberry Pi is not a 2-core server), but what a
runtime costs against native on the same device, in the same run, at the same point of the sweep
does. So every value here is a ratio: the median over repetitions of a runtime, divided by the
median of native at the same coordinates (KEY_COLUMNS) in the same run. A point native has no
value for gives NaN, never a made-up 1.0.

    runs_index() -> select_runs(...) -> load_runs(...) -> ratios_to_native(...) + paper_ratios(...)

`collect()` does all of it for the notebook (notebooks/compare.ipynb). `make compare`, which is

    python -m edgebench.drivers.compare [--experiments io_bound,iomt] [--targets pi1,pi2] [--runs latest|all|IDS]

runs that notebook headless into figures/compare/compare.ipynb, with its figure beside it.

One module, over 400 lines: the pipeline above (runs, ratios, the papers' rules, the notebook's
Comparison) is read top to bottom in that order by whoever checks a ratio; its sections are marked.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.drivers.figures import FIGURES_DIR, experiment_of, run_headless
from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS, NOTEBOOKS_DIR
from edgebench.paths import DATA_DIR
from edgebench.plotting.style import base_runtime
from edgebench.plotting.tables import NoData, mark_emulated
from edgebench.reference import load_reference
from edgebench.results import load_results
from edgebench.runtimes import check_runtime_names
from edgebench.tools import sanity

NOTEBOOK = NOTEBOOKS_DIR / "compare.ipynb"
BASELINE = "native"
COMPLETED = "completed"
# Folders under data/ that hold no runs.
NOT_EXPERIMENTS = ("reference", "history")

# -- what a value is compared on ---------------------------------------------------------

# The coordinates of a measurement: a runtime's median is divided by native's at the same values
# of these (those a result has). Each names a point of an experiment's sweep or what was measured;
# none is a reading of the run (`*_applied`, `littles_law`, `duration_s`, `offered_rps`,
# `storage`, `checksum`), a build detail (`build`, `artifact`, `tool`, `accelerator`: an emulated
# VM is its own runtime label instead) or a note. From each experiment's EXTRA_COLUMNS:
KEY_COLUMNS = (
    "app", "protocol", "metric", "unit",                                # every experiment
    "scenario", "endpoint", "iter", "load_tool", "offered_share",       # io_bound, cpu_bound
    "workload", "input_size", "entropy",                                 # iomt, page_faults
    "benchmark", "operation", "point", "npb_class", "array_mib",        # microbenchmarks, lxd_appendix,
    "files", "total", "threads", "network", "cpus", "memory_mb",        # container_overhead, ...
    "cache", "machine", "test", "network_mode",                          # time_to_ready, boot_time, services
)
# Of those, the ones that may name the runtime's own variant rather than a point native shares:
# the network path (Docker's bridge, native's loopback), a network benchmark's point, which is
# the runtime and its mode ("docker (bridge)", "host"), and Docker's network mode (services, home
# automation, face recognition: native has none). A runtime's row is compared with native's
# at the same values where native was measured there (a failed native row counts: then there is no
# ratio); where native never was, and native has exactly one variant at the other coordinates,
# with that one (`native_variant` says which).
VARIANT_COLUMNS = ("network", "point", "network_mode")
# Key columns that, on these metrics' rows, hold the result or a reading rather than a point
# (runs before the rows left them blank): min_memory's row carried the minimum it found as its
# memory_mb, so no two runtimes ever met at the same coordinates.
RESULT_NOT_KEY = {"memory_mb": ("min_memory",)}
# What the ratio table names besides metric and unit; the rest of a key reads `name=value`.
_BARE_KEYS = ("app", "protocol")


@dataclass(frozen=True)
class Headline:
    """A metric the comparison shows by default, which way is better, and the words for it."""
    higher_is_better: bool
    where: tuple[tuple[str, str], ...] = ()  # only rows with these (column, value): where it means something
    worse: str = "slower"
    better: str = "faster"


_SIZE = dict(worse="larger", better="smaller")
_FAULTS = dict(worse="more faults", better="fewer faults")

# Each experiment's metrics the comparison shows by default (metric names as the experiments write
# them). Fixed-duration runs make their total time meaningless, so those show a rate instead.
HEADLINE_METRICS: dict[str, dict[str, Headline]] = {
    "static_footprint": {"image_size": Headline(False, **_SIZE)},
    "time_to_ready": {"time_to_ready": Headline(False)},
    "io_bound": {"requests_per_second": Headline(True)},
    "cpu_bound": {"requests_per_second": Headline(True)},
    "iomt": {"end_to_end_latency": Headline(False)},
    # published: perf counted the launch command, as the paper did (the docker client for Docker);
    # fair: the workload's own faults, from its cgroup.
    "page_faults": {"perf_page_faults": Headline(False, (("protocol", "published"),), **_FAULTS),
                    "faults_cgroup": Headline(False, (("protocol", "fair"),), **_FAULTS)},
    "lxd_appendix": {"file_creation_latency": Headline(False, (("benchmark", "fileio"),)),
                     "latency_avg": Headline(False, (("benchmark", "memory"),)),
                     "total_time": Headline(False, (("benchmark", "cpu"),))},
    "microbenchmarks": {"total_time": Headline(False, (("protocol", "published"),)),
                        "events_per_second": Headline(True, (("benchmark", "cpu"), ("protocol", "fair"))),
                        "throughput": Headline(True, (("benchmark", "memory"), ("protocol", "fair"))),
                        "network_throughput": Headline(True)},
    "container_overhead": {"throughput": Headline(True, (("benchmark", "disk"),)),
                           "best_rate": Headline(True, (("benchmark", "memory"),)),
                           "time": Headline(False, (("benchmark", "hpc"),)),
                           "requests_per_second": Headline(True, (("benchmark", "network"),))},
    "min_memory": {"min_memory": Headline(False, worse="more memory", better="less memory")},
    "boot_time": {"time_to_ready": Headline(False)},
    "services": {"throughput": Headline(True)},
    "home_automation": {"request_time": Headline(False)},
    "face_recognition": {"inference_time": Headline(False)},
}
# For a metric no headline names (metrics="all"): rates are better higher; times, latencies,
# sizes, faults and counts lower.
_HIGHER_IS_BETTER = re.compile(r"per_s|per_second|throughput|rate|mops|iops|rps", re.IGNORECASE)


def headline(experiment: str, metric: str) -> Headline:
    known = HEADLINE_METRICS.get(experiment, {}).get(metric)
    return known or Headline(bool(_HIGHER_IS_BETTER.search(metric)))


def verdict(ratio: float, how: Headline) -> str:
    """'12% slower', '3.1x faster', 'as native': the ratio read in the metric's direction. For a
    rate, 0.8 is 20% slower; for a time, 1.25 is 25% slower (the convention of
    plotting/container_overhead's overhead_pct)."""
    if ratio is None or not np.isfinite(ratio) or ratio <= 0:
        return ""
    worse = ratio < 1 if how.higher_is_better else ratio > 1
    factor = max(ratio, 1 / ratio)
    word = how.worse if worse else how.better
    if factor >= 2:
        return f"{factor:.1f}x {word}"
    pct = abs(ratio - 1) * 100
    return "as native" if pct < 0.5 else f"{pct:.0f}% {word}"


# -- the runs ----------------------------------------------------------------------------

def _version(project: dict) -> str:
    commit = (project or {}).get("commit") or ""
    dirty = (project or {}).get("dirty")
    return (commit[:7] or "unknown") + ("+dirty" if dirty else "")


def _device(facts: dict, named: str | None = None) -> str:
    """The device's fleet name where the run had one; else the target spec it measured, `local`
    with its host name, so two machines' local runs stay apart, and an emulated device (make
    device) with "emulated" and its architecture."""
    if named:
        return str(named)
    spec = str((facts or {}).get("target") or "local")
    host = (facts or {}).get("hostname")
    if (facts or {}).get("emulated_device"):  # its numbers are the emulator's: every column says so
        return f"{spec} (emulated {facts.get('arch') or 'device'})"
    return f"{spec} ({host})" if spec == "local" and host else spec


def _row_counts(path: Path) -> dict:
    with open(path, newline="") as f:
        statuses = [row.get("status") for row in csv.DictReader(f)]
    return {"rows_ok": statuses.count("ok"), "rows_failed": statuses.count("failed")}


INDEX_COLUMNS = ["experiment", "run_id", "device", "target", "hostname", "started_at", "ended_at", "status",
                 "profile", "commit", "dirty", "version", "rows_ok", "rows_failed", "path"]


def runs_index(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Every run under data_dir/<experiment>/<run_id>/, one row each. A run whose meta.json or
    results.csv cannot be read is left out with a note in `index.attrs["skipped"]`."""
    data_dir = Path(data_dir)
    rows, skipped = [], []
    folders = sorted(p for p in data_dir.iterdir() if p.is_dir() and p.name not in NOT_EXPERIMENTS) \
        if data_dir.is_dir() else []
    for exp_dir in folders:
        for run_dir in sorted(p for p in exp_dir.iterdir() if p.is_dir()):
            try:
                meta = json.loads((run_dir / "meta.json").read_text())
                counts = _row_counts(run_dir / "results.csv")
                if not isinstance(meta, dict):
                    raise ValueError("meta.json holds no object")
            except (OSError, ValueError, csv.Error) as e:
                skipped.append(f"{exp_dir.name}/{run_dir.name}: {type(e).__name__}: {e}")
                continue
            facts = meta.get("target") if isinstance(meta.get("target"), dict) else {}
            project = meta.get("project") if isinstance(meta.get("project"), dict) else {}
            rows.append(dict(
                experiment=meta.get("experiment") or exp_dir.name, run_id=meta.get("run_id") or run_dir.name,
                device=_device(facts, meta.get("device")), target=str(facts.get("target") or "local"), hostname=facts.get("hostname"),
                started_at=meta.get("started_at"), ended_at=meta.get("ended_at"), status=meta.get("status"),
                profile=(meta.get("parameters") or {}).get("profile"), commit=project.get("commit"),
                dirty=project.get("dirty"), version=_version(project), path=str(run_dir), **counts))
    index = pd.DataFrame(rows, columns=INDEX_COLUMNS)
    for col in ("started_at", "ended_at"):
        index[col] = pd.to_datetime(index[col], utc=True, errors="coerce", format="ISO8601")
    index = index.sort_values(["experiment", "device", "started_at"], key=_experiment_order).reset_index(drop=True)
    index.attrs["skipped"] = skipped
    return index


def _experiment_order(col: pd.Series) -> pd.Series:
    """Experiments in the registry's order (the notebooks'), others after them by name."""
    if col.name != "experiment":
        return col
    known = list(EXPERIMENTS)
    return col.map(lambda e: f"{known.index(e):03d}" if e in known else f"999{e}")


def _names(value, what: str) -> list[str] | None:
    """'all' (or empty) -> None; 'a,b' or a list -> ['a', 'b']."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "all", "auto", "any")):
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    names = [str(v).strip() for v in items if str(v).strip()]
    if not names:
        raise ConfigError(f"{what}={value!r} names nothing; use 'all' or a comma-separated list")
    return names


def select_runs(index: pd.DataFrame, experiments="all", targets="all", runs="latest",
                profile: str = "any") -> pd.DataFrame:
    """The runs to compare. `runs`: "latest" = each device's newest completed run per experiment;
    "all" = every completed run (so dates and versions line up); or run ids (any status).
    `targets` matches a run's device or its target spec. Each run gets a `label`, its column in
    the table: the device, with its date and version where a device has several runs of one
    experiment."""
    sel = index
    wanted = _names(experiments, "experiments")
    if wanted:
        unknown = sorted(set(wanted) - set(index["experiment"]))
        if unknown:
            raise ConfigError(f"no runs of {', '.join(unknown)} under data/; runs exist of: "
                              f"{', '.join(dict.fromkeys(index['experiment'])) or 'nothing yet'}")
        sel = sel[sel["experiment"].isin(wanted)]
    devices = _names(targets, "targets")
    if devices:
        unknown = sorted(d for d in devices if not (index["device"].eq(d) | index["target"].eq(d)).any())
        if unknown:
            raise ConfigError(f"no runs on {', '.join(unknown)}; devices with runs: "
                              f"{', '.join(dict.fromkeys(index['device'])) or 'none yet'}")
        sel = sel[sel["device"].isin(devices) | sel["target"].isin(devices)]
    profiles = _names(profile, "profile")
    if profiles:
        sel = sel[sel["profile"].isin(profiles)]
    mode = (runs or "latest").strip() if isinstance(runs, str) else runs
    if mode in ("latest", "all"):
        sel = sel[sel["status"] == COMPLETED]
        if mode == "latest":
            sel = sel.sort_values("started_at", na_position="first").groupby(["experiment", "device"], sort=False).tail(1)
    else:
        ids = _names(mode, "runs") or []
        unknown = sorted(set(ids) - set(index["run_id"]))
        if unknown:
            raise ConfigError(f"no run {', '.join(unknown)} under data/ (run ids are the folder names "
                              "under data/<experiment>/); or use 'latest' or 'all'")
        sel = sel[sel["run_id"].isin(ids)]
    sel = sel.sort_values(["experiment", "device", "started_at"], key=_experiment_order).reset_index(drop=True)
    return sel.assign(label=_labels(sel))


def _labels(sel: pd.DataFrame) -> pd.Series:
    if sel.empty:
        return pd.Series([], dtype=str, index=sel.index)
    several = sel.duplicated(["experiment", "device"], keep=False).any()
    if not several:
        return sel["device"]
    dates = sel["started_at"].dt.strftime("%Y-%m-%d %H:%M").fillna("?")
    labels = sel["device"] + " " + dates + " " + sel["version"]
    clash = labels.duplicated(keep=False) & sel.duplicated(["experiment", "device"], keep=False)
    return labels.where(~clash, labels + " " + sel["run_id"])


def load_runs(selected: pd.DataFrame) -> pd.DataFrame:
    """Every row of the selected runs, each with its run's device and label. A results.csv that
    cannot be parsed is left out with a note in `.attrs["skipped"]`."""
    frames, skipped = [], []
    for run in selected.itertuples():
        try:
            df = load_results(Path(run.path))
        except (OSError, ValueError, pd.errors.ParserError) as e:
            skipped.append(f"{run.experiment}/{run.run_id}: {type(e).__name__}: {e}")
            continue
        frames.append(df.assign(experiment=run.experiment, run_id=run.run_id, device=run.device, label=run.label))
    out = pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame(columns=["experiment"])
    out.attrs["skipped"] = skipped
    return out


# -- ratios to native --------------------------------------------------------------------

def _canon(value) -> str:
    """One spelling per coordinate value, so 2, 2.0 and '2' match and missing is ''."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        f = float(value)
    else:
        text = str(value).strip()
        try:
            f = float(text)
        except ValueError:
            return text
    if math.isnan(f):
        return ""
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else f"{f:g}"


def _canon_series(values: pd.Series) -> pd.Series:
    """_canon of every value, computed once per distinct value."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    canon = np.array([_canon(u) for u in uniques] + [""], dtype=object)  # code -1 (missing) -> ""
    return pd.Series(canon[codes], index=values.index, dtype=object)


def key_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in KEY_COLUMNS if c in df.columns]


def key_labels(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """'go-http, fair, scenario=rich, cpus=2': the coordinates besides metric and unit."""
    labels = pd.Series("", index=df.index, dtype=object)
    for k in keys:
        if k in ("metric", "unit"):
            continue
        v = df[k].astype(str)
        part = (v if k in _BARE_KEYS else k + "=" + v).where(v != "", "")
        labels = labels.where(part == "", labels.where(labels == "", labels + ", ") + part)
    return labels


RUN_KEYS = ["experiment", "target", "run_id"]
RESULT_COLUMNS = ["n", "median", "native_n", "native_median", "ratio", "native_variant", "why"]


def ratios_to_native(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (experiment, run, runtime, coordinates) besides native: the runtime's median
    over its ok repetitions (`n` of them), native's at the same coordinates in the same run, and
    their ratio. Where native has no value there, `ratio` is NaN and `why` says why."""
    keys = key_columns(df)
    run = [c for c in RUN_KEYS if c in df.columns]
    columns = run + ["runtime", *keys, "key", *RESULT_COLUMNS]
    if df.empty:
        return pd.DataFrame(columns=columns)
    df = mark_emulated(df)
    work = df[run + ["runtime", "status", "value"]].copy()
    for c in run + ["runtime"]:
        work[c] = work[c].astype(str)
    for c in keys:
        work[c] = _canon_series(df[c])
    if "network" in keys:  # a VM's forwarded port differs at every launch: not a coordinate
        work["network"] = work["network"].str.replace(r"(?<=tcp::)\d+", "<port>", regex=True)
    for c, metrics in RESULT_NOT_KEY.items():
        if c in keys:
            work.loc[df["metric"].isin(metrics).to_numpy(), c] = ""
    ok = work[(work["status"] == "ok") & work["value"].notna()]
    at = run + keys
    med = ok.groupby(at + ["runtime"], sort=False)["value"].agg(median="median", n="count").reset_index()
    native = (med[med["runtime"] == BASELINE].drop(columns="runtime")
              .rename(columns={"median": "native_median", "n": "native_n"}))
    out = med[med["runtime"] != BASELINE].merge(native, on=at, how="left")
    out["native_variant"] = ""
    measured = work[work["runtime"] == BASELINE][at].drop_duplicates()  # failed rows too
    there = np.array(out[at].merge(measured.assign(_there=True), on=at, how="left")["_there"].notna())
    variants = [c for c in VARIANT_COLUMNS if c in keys]
    if variants and not there.all():
        fixed = [c for c in at if c not in variants]
        renamed = {v: f"_native_{v}" for v in variants}
        # Native's coordinates where it has exactly one variant at the others.
        single = measured[measured.groupby(fixed)[variants[0]].transform("size") == 1].rename(columns=renamed)
        todo = (out[~there].drop(columns=["native_median", "native_n"]).reset_index()
                .merge(single, on=fixed, how="inner")
                .merge(native.rename(columns=renamed), on=fixed + list(renamed.values()), how="left"))
        if not todo.empty:
            idx = todo["index"].to_numpy()
            out.loc[idx, "native_median"] = todo["native_median"].to_numpy()
            out.loc[idx, "native_n"] = todo["native_n"].to_numpy()
            natives_at = todo.drop(columns=variants).rename(columns={v: k for k, v in renamed.items()})
            out.loc[idx, "native_variant"] = key_labels(natives_at, variants).to_numpy()
            there[idx] = True
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = out["median"] / out["native_median"]
    out["ratio"] = ratio.where(np.isfinite(ratio))
    out["why"] = np.select([out["ratio"].notna(), ~there, out["native_median"].isna()],
                           ["", "native has no row at this point", "native failed at this point"],
                           "native median is 0")
    out["key"] = key_labels(out, keys)
    return out[columns]


def ruled_out(ratios: pd.DataFrame) -> pd.DataFrame:
    """Ratios physics rules out (edgebench.tools.sanity: a container far ahead of native on compute
    work, same kernel) are blanked, with the reason in `why`, instead of passed on as findings."""
    if ratios.empty or "benchmark" not in ratios.columns:
        return ratios
    out = ratios.copy()
    for i, r in out[out["ratio"].notna()].iterrows():
        higher = headline(r["experiment"], r["metric"]).higher_is_better
        gain = r["ratio"] - 1 if higher else 1 / r["ratio"] - 1
        why = sanity.container_ahead(str(r["runtime"]), str(r["benchmark"]), gain)
        if why:
            out.at[i, "ratio"] = np.nan
            out.at[i, "why"] = why
    return out


def headline_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Only each experiment's headline metrics (HEADLINE_METRICS), where they mean something."""
    if df.empty:
        return df
    keep = pd.Series(False, index=df.index)
    for exp, metrics in HEADLINE_METRICS.items():
        for metric, how in metrics.items():
            mask = (df["experiment"] == exp) & (df["metric"] == metric)
            for col, value in how.where:
                mask &= (_canon_series(df[col]) == value) if col in df.columns else False
            keep |= mask
    return df[keep]


# -- the papers' ratios ------------------------------------------------------------------

@dataclass(frozen=True)
class PaperRule:
    """Which of an experiment's published rows to read (`where`), what they are in the measured
    rows' terms (`to`: the metric and coordinates it fixes; `keys`: paper column -> measured
    column, carried per row; a coordinate not given matches any value), and how to read them:
    `value` (an absolute number, divided by native's for the same keys), `ratio` (a printed
    runtime/native ratio), `increase_pct` (ratio = 1 + p/100) or `overhead_pct` (see
    paper_ratios)."""
    where: dict
    to: dict
    keys: dict = field(default_factory=dict)
    kind: str = "value"


PAPER_RULES: dict[str, list[PaperRule]] = {
    "static_footprint": [PaperRule({"metric": "image_size"}, {"metric": "image_size"}, {"app": "app"})],
    # Paper 000 prints no native number for these (Docker and Nanos only): the rules find no pair.
    "time_to_ready": [PaperRule({"metric": "time_to_ready_median"}, {"metric": "time_to_ready"}, {"app": "app"})],
    **{exp: [PaperRule({"metric": m}, {"metric": m}, {"app": "app", "endpoint": "endpoint", "cpus": "cpus",
                                                      "memory_mb": "memory_mb"})
             for m in ("requests_per_second", "latency_mean")] for exp in ("io_bound", "cpu_bound")},
    "iomt": [PaperRule({"metric": "end_to_end_latency"}, {"metric": "end_to_end_latency"},
                       {"app": "workload", "input_size": "input_size"})],
    # perf stat of the launch command: our published protocol's perf count (the docker client).
    "page_faults": [PaperRule({"metric": "page_faults"}, {"metric": "perf_page_faults", "protocol": "published"},
                              {"app": "workload", "input_size": "input_size"})],
    # Table 2's "latency" is the run's total time at the published points ("1MB / 10T").
    "microbenchmarks": [PaperRule({"metric": "latency"}, {"metric": "total_time", "protocol": "published"},
                                  {"workload": "benchmark", "column_label": "point"})],
    # The appendix's statements. Left out: (b) "plateau at 100 MB/s" vs "up to 10,000 MB/s",
    # one curve's plateau against the other's maximum, at no common point.
    "lxd_appendix": [
        PaperRule({"workload": "disk", "metric": "file_creation_latency"},
                  {"benchmark": "fileio", "metric": "file_creation_latency"}),
        PaperRule({"workload": "disk", "metric": "slowdown_vs_native"},
                  {"benchmark": "fileio", "metric": "file_creation_latency"}, kind="ratio"),
        PaperRule({"workload": "cpu", "metric": "latency"}, {"benchmark": "cpu", "metric": "total_time"},
                  {"threads": "threads"}),
        PaperRule({"workload": "cpu", "metric": "slowdown_vs_native"}, {"benchmark": "cpu", "metric": "total_time"},
                  {"threads": "threads"}, kind="ratio"),
        PaperRule({"workload": "memory", "metric": "latency_increase_vs_native_pct"},
                  {"benchmark": "memory", "metric": "latency_avg"}, kind="increase_pct"),
    ],
    # Paper 003 prints only overhead_pct, on each benchmark's headline metric. Disk: 1.53% "on all
    # the executed operations", so beside every operation. Left out: read and re-read (2.36%, which
    # the reference's own note reads as an order of magnitude), EP (no number) and every
    # edp_change_pct (EDP is no headline metric; DC's 8.53% may be its time).
    # Table 3 (004): Docker against native per network mode, as printed (seconds). Face-KNN's time
    # over the images is ours over the probe images; its OpenCV row is detection alone, which has
    # no run-level metric here.
    "face_recognition": [PaperRule({"metric": "inference_latency", "method": "Face-KNN"}, {"metric": "inference_time"},
                                   {"network_mode": "network_mode"})],
    "home_automation": [PaperRule({"metric": "latency"}, {"metric": "request_time"}, {"network_mode": "network_mode"})],
    "container_overhead": [
        PaperRule({"benchmark": "disk", "operation": "all", "metric": "overhead_pct"},
                  {"benchmark": "disk", "metric": "throughput"}, kind="overhead_pct"),
        PaperRule({"benchmark": "memory", "metric": "overhead_pct"}, {"benchmark": "memory", "metric": "best_rate"},
                  {"operation": "operation"}, kind="overhead_pct"),
        PaperRule({"benchmark": "hpc", "metric": "overhead_pct"}, {"benchmark": "hpc", "metric": "time"},
                  {"operation": "operation"}, kind="overhead_pct"),
        # ab against Docker's default network: our bridge rows.
        PaperRule({"benchmark": "network", "operation": "ab", "metric": "overhead_pct"},
                  {"benchmark": "network", "operation": "ab", "point": "docker (bridge)",
                   "metric": "requests_per_second"}, kind="overhead_pct"),
    ],
}
PAPER_COLUMNS = ["experiment", "runtime", "metric", "paper_ratio", "paper_low", "paper_high", "qualifier",
                 "source", "how"]


def _paper_label(row) -> str:
    return f"paper {str(row['paper'])[:3]}, {row['source']}"


def _fmt(v: float) -> str:
    return f"{v:g}"


def paper_ratios(experiment: str, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The papers' runtime/native ratios for `experiment`, in the measured rows' terms (PAPER_RULES):
    one row per runtime, metric and the coordinates the paper fixes (others ''; they match any).

    - Where a paper prints both native's value and another runtime's for the same keys: their
      ratio (qualifier `exact` only when both are).
    - A printed ratio against native (`slowdown_vs_native`) is taken as printed, and preferred to
      one computed from the same statement's rounded values.
    - `latency_increase_vs_native_pct` p: 1 + p/100; a printed range (10-20%) gives `paper_low`
      and `paper_high`, with `paper_ratio` the middle.
    - paper 003's `overhead_pct` p, "the container's performance loss (positive = slower or less
      throughput)" (data/reference/README.md), on the benchmark's headline metric: 1 - p/100 for a
      rate (throughput, best_rate, requests/s), 1 + p/100 for a time: the convention of
      plotting/container_overhead. For ab's 23.9% that reads requests/s x 0.761; the other reading,
      time per request x 1.239, would be requests/s x 0.807 (below 1% apart for the other rows).
    - Ratios against another runtime (`_vs_docker`), between memory levels (`throughput_drop_pct`)
      or without a native number on the same keys (paper 000: Docker and Nanos only) give none.
    """
    ref = load_reference(experiment) if reference is None else reference[reference["experiment"] == experiment]
    found = []
    for rule in PAPER_RULES.get(experiment, []):
        sel = ref
        for col, value in rule.where.items():
            sel = sel[_canon_series(sel[col]) == value] if col in sel.columns else sel.iloc[0:0]
        sel = sel[sel["value"].notna() & sel["runtime"].notna()]
        if sel.empty:
            continue
        coords = {**{k: _canon_series(sel[p]) for p, k in rule.keys.items()}, **rule.to}
        rows = pd.DataFrame({"runtime": sel["runtime"].astype(str), **coords, "value": sel["value"].astype(float),
                             "qualifier": sel["qualifier"].fillna("exact").astype(str),
                             "source": sel.apply(_paper_label, axis=1)}, index=sel.index)
        cols = list(coords)
        if rule.kind == "value":
            base = rows[rows["runtime"] == BASELINE].groupby(cols)
            native = base["value"].agg(["first", "nunique"]).rename(columns={"first": "native"})
            native["native_q"] = base["qualifier"].first()
            native = native[native["nunique"] == 1].drop(columns="nunique").reset_index()
            rows = rows[rows["runtime"] != BASELINE].merge(native, on=cols, how="inner")
            rows["ratio"] = rows["value"] / rows["native"]
            rows["how"] = [f"{r.runtime} {_fmt(r.value)} / native {_fmt(r.native)}" for r in rows.itertuples()]
            rows["qualifier"] = np.where((rows["qualifier"] == "exact") & (rows["native_q"] == "exact"),
                                         "exact", "approximate")
        elif rule.kind == "ratio":
            rows["ratio"] = rows["value"]
            rows["how"] = [f"printed: {_fmt(v)}x native" for v in rows["value"]]
        elif rule.kind == "increase_pct":
            rows["ratio"] = 1 + rows["value"] / 100
            rows["how"] = [f"printed: {_fmt(v)}% above native" for v in rows["value"]]
        elif rule.kind == "overhead_pct":
            higher = headline(experiment, rule.to["metric"]).higher_is_better
            rows["ratio"] = 1 - rows["value"] / 100 if higher else 1 + rows["value"] / 100
            rows["how"] = [f"printed: overhead {_fmt(v)}% -> {'1 - p' if higher else '1 + p'}" for v in rows["value"]]
        else:
            raise ValueError(f"unknown PaperRule kind {rule.kind!r}")
        rows["printed"] = rule.kind != "value"
        found.append(rows[["runtime", *cols, "ratio", "qualifier", "source", "how", "printed"]])
    if not found:
        return pd.DataFrame(columns=PAPER_COLUMNS)
    allr = pd.concat(found, ignore_index=True, sort=False)
    keys = [c for c in KEY_COLUMNS if c in allr.columns]
    allr[keys] = allr[keys].fillna("")
    # A printed ratio wins over one computed from the same statement's rounded values.
    allr = allr[allr["printed"] | ~allr.groupby(["runtime", *keys])["printed"].transform("any")]
    out = []
    for (runtime, *values), g in allr.groupby(["runtime", *keys], sort=False):
        low, high = g["ratio"].min(), g["ratio"].max()
        ranged = len(g) > 1 and high > low
        out.append(dict(zip(["runtime", *keys], [runtime, *values]), experiment=experiment,
                        paper_ratio=(low + high) / 2 if ranged else low, paper_low=low, paper_high=high,
                        qualifier="range" if ranged else g["qualifier"].iloc[0],
                        source="; ".join(dict.fromkeys(g["source"])), how="; ".join(g["how"])))
    return pd.DataFrame(out).reindex(columns=PAPER_COLUMNS + [k for k in keys if k != "metric"])


def with_paper(ratios: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """`ratios` with the most specific paper ratio whose coordinates match each row (paper_ratio,
    paper_low, paper_high, paper_qualifier, paper_source); an emulated VM's label ("nanos (TCG)")
    gets its runtime's."""
    out = ratios.copy()
    for col in ("paper_ratio", "paper_low", "paper_high"):
        out[col] = np.nan
    out["paper_qualifier"] = out["paper_source"] = ""
    if out.empty or paper.empty:
        return out
    runtimes = out["runtime"].map(base_runtime)
    best = np.full(len(out), -1)
    for p in paper.itertuples(index=False):
        p = p._asdict()
        mask = ((out["experiment"] == p["experiment"]) & (out["metric"] == p["metric"])
                & (runtimes == p["runtime"])).to_numpy()
        fixed = [k for k in KEY_COLUMNS if k not in ("metric",) and isinstance(p.get(k), str) and p[k] != ""]
        for k in fixed:
            mask = mask & ((out[k] == p[k]).to_numpy() if k in out.columns else False)
        mask = mask & (len(fixed) > best)
        if mask.any():
            best[mask] = len(fixed)
            out.loc[mask, ["paper_ratio", "paper_low", "paper_high"]] = [p["paper_ratio"], p["paper_low"],
                                                                        p["paper_high"]]
            out.loc[mask, "paper_qualifier"] = p["qualifier"]
            out.loc[mask, "paper_source"] = p["source"]
    return out


# -- everything the notebook shows -------------------------------------------------------

@dataclass
class Comparison:
    index: pd.DataFrame    # every run found under data/
    runs: pd.DataFrame     # those compared, each with its column label
    ratios: pd.DataFrame   # ratios_to_native of their rows, with the papers' beside
    paper: pd.DataFrame    # the papers' ratios for these experiments
    notes: list[str]       # what a reader should know first

    def runs_table(self) -> pd.DataFrame:
        cols = ["experiment", "label", "run_id", "started_at", "status", "profile", "version", "rows_ok",
                "rows_failed"]
        return self.runs[cols].rename(columns={"label": "column"}).reset_index(drop=True)

    def summary(self) -> str:
        """Markdown: what is compared, and what cannot be."""
        devices = list(dict.fromkeys(self.runs["device"]))
        one_each = not self.runs.duplicated(["experiment"], keep=False).any()
        lines = [f"Comparing {len(self.runs)} run(s) of {self.runs['experiment'].nunique()} experiment(s) "
                 f"on {len(devices)} device(s): {', '.join(devices)}."]
        if one_each:
            lines.append("**Nothing to compare side by side yet:** every experiment here has one run "
                         f"({', '.join(devices)}), so the table and the figure show that run's ratios to native "
                         "alone. Measure another device (`make figures TARGET=...`) or this one again, then "
                         "`run_id = \"all\"` puts dates and versions side by side.")
        return "\n".join(lines + [f"- {n}" for n in self.notes])


def collect(experiments="all", targets="all", runs="latest", runtimes="all", profile="any",
            metrics="headline", data_dir: Path = DATA_DIR) -> Comparison:
    """Find, select and load the runs, and compute their ratios to native beside the papers'.
    Raises NoData, saying what exists, when there is nothing to show."""
    index = runs_index(data_dir)
    notes = [f"left out (unreadable): {s}" for s in index.attrs.get("skipped", [])]
    if index.empty:
        raise NoData(f"no runs under {data_dir}: measure first (`make figures`), then compare")
    selected = select_runs(index, experiments, targets, runs, profile)
    if selected.empty:
        statuses = ", ".join(f"{n} {s}" for s, n in index["status"].value_counts().items())
        raise NoData(f"no {'completed ' if runs in ('latest', 'all') else ''}run matches experiments={experiments!r}, "
                     f"targets={targets!r}, runs={runs!r}, profile={profile!r} among {len(index)} run(s) "
                     f"({statuses})")
    df = load_runs(selected)
    notes += [f"left out (unreadable results): {s}" for s in df.attrs.get("skipped", [])]
    wanted = _names(runtimes, "runtimes")
    if wanted and not df.empty:
        check_runtime_names(wanted)
        df = df[df["runtime"].map(lambda r: base_runtime(str(r))).isin([BASELINE, *wanted])]
    metric_names = _names(metrics, "metrics")
    headline_only = metric_names == ["headline"]
    if headline_only:
        df = headline_rows(df)
    elif metric_names:
        df = df[df["metric"].isin(metric_names)]
    ratios = ruled_out(ratios_to_native(df))
    with_ratio = set(ratios.loc[ratios["ratio"].notna(), "experiment"])
    for exp in selected["experiment"].unique():
        if headline_only and exp not in HEADLINE_METRICS:
            notes.append(f"**{exp}**: no headline metric named for it (edgebench.drivers.compare.HEADLINE_METRICS); "
                         "`metrics = \"all\"` shows every metric it records")
        elif exp not in set(ratios["experiment"]):
            notes.append(f"**{exp}**: no runtime besides native has a value for "
                         f"{', '.join(HEADLINE_METRICS.get(exp, {})) if headline_only else metrics} in the selected runs")
        elif exp not in with_ratio:
            notes.append(f"**{exp}**: native has no value at any point, so no ratio (did its runs include native?)")
    blank = ratios[ratios["ratio"].isna() & ratios["experiment"].isin(with_ratio)]
    if not blank.empty:
        first = blank.iloc[0]
        notes.append(f"{len(blank)} point(s) have no ratio (left blank: {'; '.join(dict.fromkeys(blank['why']))}), "
                     f"e.g. {first['experiment']} {first['runtime']} {first['metric']} at {first['key']}")
    if not ratios["ratio"].notna().any():
        raise NoData("no ratio to native in the selected runs: " + " ".join(n.replace("**", "") for n in notes)
                     if notes else "no ratio to native in the selected runs")
    paper = pd.concat([paper_ratios(e) for e in selected["experiment"].unique()], ignore_index=True)
    labels = selected[["experiment", "run_id", "device", "label", "started_at", "version"]]
    ratios = with_paper(ratios.merge(labels, on=["experiment", "run_id"], how="left"), paper)
    return Comparison(index, selected, ratios, paper, notes)


# -- make compare ------------------------------------------------------------------------

def main(argv=None) -> int:
    """Run notebooks/compare.ipynb headless into figures/compare/ (edgebench.drivers.figures' runner)."""

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", default="all", help="'all' or e.g. time_to_ready,io_bound")
    ap.add_argument("--targets", default="all", help="'all' or devices, as their runs name them")
    ap.add_argument("--runs", default="latest", help="'latest', 'all' or run ids")
    ap.add_argument("--runtimes", default="all", help="'all' or those to show against native")
    ap.add_argument("--profile", default="any", help="'any', 'quick' or 'standard'")
    ap.add_argument("--metrics", default="headline", help="'headline', 'all' or metric names")
    ap.add_argument("--quiet", action="store_true", help="do not stream the notebook's output")
    args = ap.parse_args(argv)
    try:  # refuse a selection that matches nothing before a kernel starts
        index = runs_index()
        if index.empty:
            raise NoData(f"no runs under {DATA_DIR}: measure first (`make figures`), then compare")
        if select_runs(index, args.experiments, args.targets, args.runs, args.profile).empty:
            raise NoData("no completed run matches that selection (see `python -m edgebench.drivers.compare --help`)")
    except (ConfigError, NoData) as e:
        print(f"make compare: {e}", file=sys.stderr)
        return 2
    # The notebook's names for them: `target` and `run_id`, as in every notebook.
    params = dict(experiments=args.experiments, target=args.targets, run_id=args.runs, runtimes=args.runtimes,
                  profile=args.profile, metrics=args.metrics)
    return run_headless("compare", NOTEBOOK, params, args.quiet)


def out_dir() -> Path:
    return FIGURES_DIR / experiment_of(NOTEBOOK)


if __name__ == "__main__":
    sys.exit(main())
