"""Going on with an unfinished run: `make figures RESUME=latest` or a notebook's `resume` parameter.

A run measures points (experiments.sweep: a runtime, a repetition and the experiment's
coordinates). Every row carries the `point_id` of the point that wrote it, and `points.jsonl` in
the run's folder gets one line when a point has ended, with its start and end times. Resuming
opens the same run folder again: a point with its line is not measured again; the rows of a point
that has none (cut by the stop) move to `discarded.csv`, kept for reading, and that point is
measured again whole, as is what an experiment measures outside its points (footprint's sizes,
microbenchmarks' Docker networking). `meta.json` lists each sitting (start, end, how it ended),
and figures come from results.csv, the union of the sittings.

`make settle` resumes a completed run to add repetitions to the points a claim uses (a record's
`focus`): only `repetitions` and `runtimes` (those the points need) may differ then, the new
repetitions are new points, and the run's record takes the new count (and keeps its runtimes) so
a later resume compares with it.

A run is only continued with what measured it: the same parameters (`meta.json`'s `record`), the
same experiment code (a digest of the experiment's module and every edgebench module it imports,
plotting and drivers aside) and the same device (its facts). Anything else is refused with what
differs, unless `resume_anyway` (RESUME_ANYWAY=yes) says to go on, which the sitting records.

Which run: "latest" is the newest run of the experiment on the target. If it is unfinished, it
is continued; if it completed with these parameters, nothing is left to measure; if there is
none, or it completed with other parameters (an earlier, unrelated run), the experiment measures
from the start and says why. A run that completed with these parameters but other code is
measured anew too, unless `resume_anyway` keeps it (a long run carried across sittings while the
code moves on must not lose its finished notebooks). A run id names one run, which must match.
"""

from __future__ import annotations

import ast
import csv
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.errors import ConfigError
from edgebench.paths import DATA_DIR, PROJECT_ROOT
from edgebench.results import ended_points, find_run, load_meta

LIB_DIR = PROJECT_ROOT / "lib"
# What does not change what a run measures: plotting its data, and driving notebooks.
NOT_MEASURING = ("edgebench.plotting", "edgebench.drivers")
# How to run, not what: never compared.
NOT_COMPARED = ("resume", "resume_anyway", "run_id")
CODE_CHANGED = "the experiment's code changed since it was measured"
# The facts that make a device the same device.
DEVICE_FACTS = ("target", "hostname", "arch", "cpu_model", "cores", "memory_mb", "kernel", "cgroup_version",
                "memory_controller", "emulated_device")


@dataclass(frozen=True)
class Resumption:
    """The run a record continues, and what was found different and overridden."""
    run_dir: Path
    completed: bool                      # nothing left to measure
    differences: tuple[str, ...] = ()    # went on anyway (resume_anyway) despite these
    more_repetitions: bool = False       # make settle adds repetitions to some of its points

    @property
    def run_id(self) -> str:
        return self.run_dir.name


def resolve(experiment: str, which: str, target: str, given: dict[str, Any], module: str,
            anyway: bool = False, data_dir: Path = DATA_DIR, more_repetitions: bool = False) -> Resumption | None:
    """The run to continue for `which` ("latest" or a run id), None to measure from the start (the
    reason printed); a ConfigError when the run differs and `anyway` is not set.
    `more_repetitions`: the run goes on to more repetitions than it has (make settle): it is
    continued even when it completed, and its repetitions may differ."""
    named = which not in ("latest",)
    try:
        run_dir = find_run(experiment, which, data_dir, target=None if named else target)
    except ConfigError:
        if named:
            raise
        print(f"[edgebench] resume: no run of {experiment} on {target} yet; measuring from the start")
        return None
    meta = load_meta(run_dir)
    completed = meta.get("status") == "completed" and not more_repetitions
    found = differences(meta, given, code_digest(module))
    if more_repetitions:  # more of the same points, of the runtimes they need
        found = [f for f in found if not f.startswith(("repetitions was ", "runtimes was "))]
    if found and completed and not named:
        if anyway and all(f.startswith(CODE_CHANGED) for f in found):
            # Its settings are these: a run to keep, not an earlier, unrelated one.
            print(f"[edgebench] resume: the latest run of {experiment}, {run_dir.name}, completed with these "
                  f"settings and other code ({'; '.join(found)}); kept (resume_anyway), nothing measured")
            return Resumption(run_dir, completed, tuple(found), more_repetitions)
        print(f"[edgebench] resume: the latest run of {experiment}, {run_dir.name}, completed with other "
              f"settings ({'; '.join(found)}); measuring from the start")
        return None
    if found and not anyway:
        raise ConfigError(f"cannot resume {experiment} run {run_dir.name}: {'; '.join(found)}. Measure anew "
                          "(leave RESUME / resume empty) or go on anyway with RESUME_ANYWAY=yes "
                          "(resume_anyway=True), which the run records")
    return Resumption(run_dir, completed, tuple(found), more_repetitions)


def differences(meta: dict, given: dict[str, Any], digest: str) -> list[str]:
    """What differs between a run's record and code and these, in words."""
    old = meta.get("record")
    if old is None:
        return ["it was measured before runs recorded what resuming compares"]
    found = []
    for name in sorted((set(old) | set(given)) - set(NOT_COMPARED)):
        if old.get(name) != given.get(name):
            found.append(f"{name} was {old.get(name)!r}, now {given.get(name)!r}")
    if meta.get("code_digest") != digest:
        commit = ((meta.get("project") or {}).get("commit") or "?")[:10]
        found.append(f"{CODE_CHANGED} (at commit {commit})")
    return found


def device_differences(old: dict, now: dict) -> list[str]:
    return [f"the device's {key} was {old.get(key)!r}, now {now.get(key)!r}"
            for key in DEVICE_FACTS if old.get(key) != now.get(key)]


def plain_given(given: dict[str, Any]) -> dict[str, Any]:
    """The record's cell values as JSON keeps them (a connected Target by its name)."""
    return {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(getattr(v, "name", v))
            for k, v in given.items()}


# -- the experiment's code ---------------------------------------------------------------------

def code_digest(module: str) -> str:
    """sha256 over the source of `module` and every edgebench module it imports, transitively,
    plotting and drivers aside."""
    h = hashlib.sha256()
    for name in sorted(_closure(module)):
        h.update(name.encode() + b"\0" + _source(name) + b"\0")
    return h.hexdigest()[:16]


def _path(module: str) -> Path | None:
    base = LIB_DIR.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _source(module: str) -> bytes:
    path = _path(module)
    return path.read_bytes() if path else b""


def _closure(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen or name.startswith(NOT_MEASURING) or _path(name) is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:n]) for n in range(2, len(parts)))  # its packages' __init__
        for node in ast.walk(ast.parse(_source(name))):
            if isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names if a.name.startswith("edgebench"))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("edgebench"):
                todo.append(node.module)
                todo.extend(f"{node.module}.{a.name}" for a in node.names)
    return seen


# -- the points a run has measured -------------------------------------------------------------

DISCARDED_FILE = "discarded.csv"


def point_id(sweep: str, runtime: str, rep: int, protocol, outer, inner) -> str:
    """A point's identity, the same in every sitting: its sweep's name (an experiment may run
    several) and its coordinates, as JSON text."""
    return json.dumps([sweep, runtime, rep, protocol, _plain(outer), _plain(inner)], sort_keys=True, default=str)


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}
    return str(value)


def keep_ended_rows(run_dir: Path, columns: list[str]) -> tuple[int, int, int]:
    """Rewrite results.csv with the rows of ended points only, moving the others to
    discarded.csv; (rows kept, rows of points cut by the stop, rows measured outside points)."""
    run_dir = Path(run_dir)
    ended = ended_points(run_dir)
    with open(run_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    kept = [r for r in rows if r.get("point_id") and r["point_id"] in ended]
    dropped = [r for r in rows if not (r.get("point_id") and r["point_id"] in ended)]
    if dropped:
        discarded = run_dir / DISCARDED_FILE
        new = not discarded.exists()
        with open(discarded, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerows(dropped)
    tmp = run_dir / "results.csv.tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(kept)
    tmp.replace(run_dir / "results.csv")
    outside = sum(1 for r in dropped if not r.get("point_id"))
    return len(kept), len(dropped) - outside, outside


def discarded_words(cut: int, outside: int) -> str:
    """What resuming set aside, for its line: a stop's cut points, and what the run measures
    outside its points (sizes, a cross-check), which each sitting measures again."""
    moved = [f"{cut} rows of points cut by the stop" if cut else "",
             f"{outside} rows measured outside its points (sizes, cross-checks)" if outside else ""]
    if not cut and not outside:
        return ""
    return f", {' and '.join(filter(None, moved))} moved to {DISCARDED_FILE} and measured again"
