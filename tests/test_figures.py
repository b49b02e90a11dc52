"""`make figures PROFILE=smoke` end to end: every notebook runs headless through papermill,
writes its executed copy and figures, and the summary names each experiment's data."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest
from edgebench.drivers.figures import experiment_of, notebooks


# The smoke profile (one point per runtime: one repetition, go-http, the fair protocol, the smallest
# sizes) still measures, tabulates and draws every runtime in every notebook (the experiments' own
# tests cover their apps, repetitions, sweeps and the published protocol). Through `--set` (make
# figures SET=...), as a user changes a run: another memory level and a shorter open loop, which
# must reach the notebooks that declare them, typed as their defaults.
SETTINGS = ["--set", "memory_levels=64m", "--set", "open_loop_duration_s=1", "--set", "file_mb=4"]


def smoke_figures(tmp_path, runtimes: str, only: str, settings: list[str] = ()):
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path / "data"),
               EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"))
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--profile", "smoke", "--quiet",
                        "--runtimes", runtimes, "--only", only, *settings],
                       env=env, capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "without encryption" not in r.stderr  # the kernel talks over a Unix socket, not TCP
    return r


# Rows an experiment may fail on a machine without the part, each with its reason in the row.
MISSING_PARTS = {"container_overhead": r"no power meter|no `iozone`|no NPB binary"}


def check_rendered(tmp_path, nb, summary: str, runtimes: set[str]):
    import pandas as pd
    exp = experiment_of(nb)
    executed = tmp_path / "figures" / exp / nb.name
    assert executed.exists(), f"{executed} missing"
    cells = json.loads(executed.read_text())["cells"]
    errors = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    assert list((tmp_path / "figures" / exp).glob("*.png")), f"no figure for {exp}"
    runs = list((tmp_path / "data" / exp).iterdir())
    assert len(runs) == 1
    df = pd.read_csv(runs[0] / "results.csv")
    # Every runtime measured, no row failed; what cannot be measured here says why.
    assert runtimes <= set(df["runtime"]), df["runtime"].unique()
    assert (df.loc[df["status"] == "not measurable", "error"].astype(str).str.len() > 10).all()
    failed = df[df["status"] == "failed"]
    if exp in MISSING_PARTS:
        failed = failed[~failed["error"].astype(str).str.contains(MISSING_PARTS[exp])]
        assert (df["status"] == "ok").any()
    assert failed.empty, failed[["runtime", "error"]]
    assert exp in summary
    # Nothing from the partial/failed write-then-move is left as a product.
    assert not list((tmp_path / "figures").rglob("*.partial.ipynb"))
    assert not list((tmp_path / "figures").rglob("*.failed.ipynb"))


# The LXD appendix needs LXD; the others run with native and Docker, which keeps CI's time down
# (LXD joins them under RUNTIMES=auto, and tests/test_lxd_runtime.py covers its starts).
WITH_LXD = "lxd_appendix"


@pytest.mark.slow
def test_smoke_figures_render_every_notebook(tmp_path, docker_ready, cgroups_ready, wrk_ready, no_leftovers):
    others = [experiment_of(nb) for nb in notebooks() if WITH_LXD not in nb.stem]
    r = smoke_figures(tmp_path, "native,docker", ",".join(others), SETTINGS)
    for nb in notebooks():
        if WITH_LXD not in nb.stem:
            check_rendered(tmp_path, nb, r.stdout, {"native", "docker"})
    # What was set reached the notebooks that declare it, typed as their defaults, and only those.
    import pandas as pd
    passed = {m[1]: ast.literal_eval(m[2]) for m in re.finditer(r"^== \d+_(\w+)\.ipynb (\{.*\})$", r.stderr, re.M)}
    assert {k: passed["io_bound"][k] for k in ("memory_levels", "open_loop_duration_s")} == \
        {"memory_levels": "64m", "open_loop_duration_s": 1}
    assert passed["container_overhead"]["file_mb"] == 4 and "memory_levels" not in passed["time_to_ready"]
    (io_run,) = (tmp_path / "data" / "io_bound").iterdir()
    io = pd.read_csv(io_run / "results.csv")
    assert set(io.loc[io["scenario"] == "constrained", "memory_mb"]) == {64}


@pytest.mark.slow
def test_smoke_lxd_appendix_has_host_lxd_and_docker_rows(tmp_path, docker_ready, cgroups_ready, lxd_ready,
                                                         no_leftovers):
    # Two thread counts, to draw a line per runtime (the sweeps have their own tests).
    r = smoke_figures(tmp_path, "native,docker,lxd", WITH_LXD, ["--set", "thread_counts=1,16"])
    (nb,) = notebooks(WITH_LXD)
    check_rendered(tmp_path, nb, r.stdout, {"native", "docker", "lxd"})


@pytest.mark.slow
def test_replot_measures_nothing(tmp_path):
    """Replot without data fails with a message saying to measure first, and creates no run."""
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path / "data"),
               EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"))
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--replot", "--quiet",
                        "--only", "static_footprint"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "run the experiment first" in (tmp_path / "figures" / "static_footprint" /
                                          "01_static_footprint.failed.ipynb").read_text()
    assert not (tmp_path / "data" / "static_footprint").exists()
