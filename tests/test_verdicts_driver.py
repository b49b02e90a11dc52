"""`make verdicts`' driver: each claim judged on the latest run of its experiment on a target, and
the figure each verdict links."""

from __future__ import annotations

import json
import re
from pathlib import Path

import edgebench.plotting
import numpy as np
import pandas as pd
import pytest
from edgebench.claims import HOLDS, NOT_MEASURABLE, Claim, load_claims
from edgebench.drivers import verdicts as drv
from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS

RNG = np.random.default_rng(1)


def rows(runtime: str, values, metric="time_to_ready", unit="ms", status="ok", **coords) -> pd.DataFrame:
    return pd.DataFrame({"metric": metric, "runtime": runtime, "value": list(values), "unit": unit, "status": status,
                         "error": None if status == "ok" else "OOM-killed", "rep": range(1, len(values) + 1),
                         "app": "go-http", **coords})


def claim(kind: str, a="docker", b="nanos", **fields) -> Claim:
    return Claim("P000-99", "000", "Fig. 3", "quote", "statement", "time_to_ready", "time_to_ready", a, b,
                 kind=kind, **fields)


def test_make_verdicts_judges_each_claim_on_the_latest_run_of_its_experiment(tmp_path):
    def write_run(run_id: str, target: str, df: pd.DataFrame, emulated: str = ""):
        d = tmp_path / "data" / "time_to_ready" / run_id
        d.mkdir(parents=True)
        df.to_csv(d / "results.csv", index=False)
        (d / "meta.json").write_text(json.dumps({"started_at": run_id, "parameters": {"target": target},
                                                 "target": {"emulated_device": emulated}}))
    fast = pd.concat([rows("docker", 1500 + RNG.normal(0, 10, 6)), rows("nanos", 100 + RNG.normal(0, 1, 6))])
    write_run("20261126T1000Z", "local", fast)
    write_run("20261126T1100Z", "pi", fast, emulated="emulated device (aarch64)")
    claims = [claim("ratio_range", low=13, high=18),
              Claim("P004-01", "004", "Sec. 5", "", "energy", "", "", "docker", "native", kind="direction")]
    local = drv.verdicts(claims, target="local", data_dir=tmp_path / "data")
    assert list(local.verdict) == [HOLDS, NOT_MEASURABLE] and local.run.iloc[0] == "20261126T1000Z"
    assert local.reason.iloc[1] == "no edgebench experiment measures it"
    latest = drv.verdicts(claims, data_dir=tmp_path / "data")  # the newest of any device: the emulated one
    assert latest.verdict.iloc[0] == NOT_MEASURABLE and "emulated device" in latest.reason.iloc[0]
    assert "| P000-99 (Fig. 3) | statement | [holds](../time_to_ready/time_to_ready.png) |" in drv.markdown(local)
    with pytest.raises(ConfigError, match="leave run_id at 'latest'"):  # refused, not ignored
        drv.judge_claims("local", run_id="20261126T1000Z", data_dir=tmp_path / "data")


def test_each_verdict_links_a_figure_its_experiments_notebook_saves():
    # The name its page saves a figure under: show_figure(fig, params.EXPERIMENT, "name", run_dir) in
    # the experiment's plotting module, which its notebook's show() is.
    plotting = Path(edgebench.plotting.__file__).parent
    saved = {exp.name: set(re.findall(r'EXPERIMENT, "(\w+)"', (plotting / f"{exp.name}.py").read_text()))
             for exp in EXPERIMENTS.values()}
    for name in ("io_bound", "cpu_bound"):  # show_http_load saves them under the experiment's name
        saved[name] |= {name, f"{name}_open_loop"}
    for c in load_claims():
        link = drv.figure_of(c)
        if c.experiment:
            name = link.rsplit("/", 1)[1].removesuffix(".png")
            assert name in saved[c.experiment], (c.claim_id, link, saved[c.experiment])
