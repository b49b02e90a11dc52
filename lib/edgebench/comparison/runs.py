"""The runs under data/, one row each (the runs index), the ones a comparison selects, and their rows.

A run is what edgebench.results finds (results.run_dirs: a folder with meta.json and results.csv
under data/<experiment>/), and its rows are counted as results counted them when the run ended
(meta.json's `rows`); a run still going has no count yet.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS
from edgebench.paths import DATA_DIR
from edgebench.results import load_meta, load_results, run_dirs

COMPLETED = "completed"
# Folders under data/ that hold no runs.
NOT_EXPERIMENTS = ("reference", "history")
INDEX_COLUMNS = ["experiment", "run_id", "device", "target", "hostname", "started_at", "ended_at", "status",
                 "profile", "commit", "dirty", "version", "rows_ok", "rows_failed", "path", "emulated"]


def version_of(project: dict) -> str:
    """'abcdef0+dirty': the edgebench commit a run was made with."""
    commit = (project or {}).get("commit") or ""
    dirty = (project or {}).get("dirty")
    return (commit[:7] or "unknown") + ("+dirty" if dirty else "")


def device_name(facts: dict, named: str | None = None) -> str:
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


def _index_row(meta: dict, experiment: str, run_dir: Path) -> dict:
    facts = meta.get("target") if isinstance(meta.get("target"), dict) else {}
    project = meta.get("project") if isinstance(meta.get("project"), dict) else {}
    rows = meta.get("rows") if isinstance(meta.get("rows"), dict) else {}
    return dict(experiment=meta.get("experiment") or experiment, run_id=meta.get("run_id") or run_dir.name,
                device=device_name(facts, meta.get("device")), target=str(facts.get("target") or "local"),
                hostname=facts.get("hostname"), started_at=meta.get("started_at"), ended_at=meta.get("ended_at"),
                status=meta.get("status"), profile=(meta.get("parameters") or {}).get("profile"),
                commit=project.get("commit"), dirty=project.get("dirty"), version=version_of(project),
                rows_ok=rows.get("ok"), rows_failed=rows.get("failed"), path=str(run_dir),
                emulated=bool(facts.get("emulated_device")))


def runs_index(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Every run under data_dir/<experiment>/<run_id>/, one row each. A run whose meta.json
    cannot be read is left out with a note in `index.attrs["skipped"]`."""
    data_dir = Path(data_dir)
    folders = sorted(p.name for p in data_dir.iterdir() if p.is_dir() and p.name not in NOT_EXPERIMENTS) \
        if data_dir.is_dir() else []
    rows, skipped = [], []
    for experiment in folders:
        try:
            found = run_dirs(experiment, data_dir)
        except (OSError, ValueError, AttributeError) as e:  # run_dirs orders them by what each meta.json says
            skipped.append(f"{experiment}: its runs cannot be listed: {type(e).__name__}: {e}")
            continue
        for run_dir in found:
            try:
                meta = load_meta(run_dir)
                if not isinstance(meta, dict):
                    raise ValueError("meta.json holds no object")
            except (OSError, ValueError) as e:
                skipped.append(f"{experiment}/{run_dir.name}: {type(e).__name__}: {e}")
                continue
            rows.append(_index_row(meta, experiment, run_dir))
    index = pd.DataFrame(rows, columns=INDEX_COLUMNS)
    for col in ("started_at", "ended_at"):
        index[col] = pd.to_datetime(index[col], utc=True, errors="coerce", format="ISO8601")
    for col in ("rows_ok", "rows_failed"):
        index[col] = index[col].astype("Int64")
    index = index.sort_values(["experiment", "device", "started_at"], key=_experiment_order).reset_index(drop=True)
    index.attrs["skipped"] = skipped
    return index


def _experiment_order(col: pd.Series) -> pd.Series:
    """Experiments in the registry's order (the notebooks'), others after them by name."""
    if col.name != "experiment":
        return col
    known = list(EXPERIMENTS)
    return col.map(lambda e: f"{known.index(e):03d}" if e in known else f"999{e}")


def chosen_names(value, what: str) -> list[str] | None:
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
    wanted = chosen_names(experiments, "experiments")
    if wanted:
        unknown = sorted(set(wanted) - set(index["experiment"]))
        if unknown:
            raise ConfigError(f"no runs of {', '.join(unknown)} under data/; runs exist of: "
                              f"{', '.join(dict.fromkeys(index['experiment'])) or 'nothing yet'}")
        sel = sel[sel["experiment"].isin(wanted)]
    devices = chosen_names(targets, "targets")
    if devices:
        unknown = sorted(d for d in devices if not (index["device"].eq(d) | index["target"].eq(d)).any())
        if unknown:
            raise ConfigError(f"no runs on {', '.join(unknown)}; devices with runs: "
                              f"{', '.join(dict.fromkeys(index['device'])) or 'none yet'}")
        sel = sel[sel["device"].isin(devices) | sel["target"].isin(devices)]
    profiles = chosen_names(profile, "profile")
    if profiles:
        sel = sel[sel["profile"].isin(profiles)]
    mode = (runs or "latest").strip() if isinstance(runs, str) else runs
    if mode in ("latest", "all"):
        sel = sel[sel["status"] == COMPLETED]
        if mode == "latest":
            sel = (sel.sort_values("started_at", na_position="first")
                   .groupby(["experiment", "device"], sort=False).tail(1))
    else:
        ids = chosen_names(mode, "runs") or []
        unknown = sorted(set(ids) - set(index["run_id"]))
        if unknown:
            raise ConfigError(f"no run {', '.join(unknown)} under data/ (run ids are the folder names "
                              "under data/<experiment>/); or use 'latest' or 'all'")
        sel = sel[sel["run_id"].isin(ids)]
    # Devices in the order TARGET names them (its first column the first), else by name.
    named = {d: i for i, d in enumerate(devices or [])}
    rank = sel["device"].map(named).fillna(sel["target"].map(named))
    by_name = {d: len(named) + i for i, d in enumerate(sorted(set(sel["device"])))}
    sel = sel.assign(device_rank=rank.fillna(sel["device"].map(by_name)).astype(int))
    sel = sel.sort_values(["experiment", "device_rank", "started_at"], key=_experiment_order).reset_index(drop=True)
    return sel.assign(label=_column_labels(sel))


def _column_labels(sel: pd.DataFrame) -> pd.Series:
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
