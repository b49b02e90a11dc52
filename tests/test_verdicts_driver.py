"""`make verdicts`' driver: each claim judged on the latest run of its experiment on a target (or
several, side by side), the page a student reads, the figure each verdict links, and the folders
the notebook is given."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import edgebench.plotting
import numpy as np
import pandas as pd
import pytest
from edgebench import answer
from edgebench.claims import CONTRADICTED, HOLDS, NOT_MEASURABLE, Claim, load_claims
from edgebench.drivers import report
from edgebench.drivers import verdicts as drv
from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS

from test_claims import claim, rows

RNG = np.random.default_rng(1)
EMULATED = "emulated device (aarch64)"


def write_run(data: Path, experiment: str, run_id: str, target: str, df: pd.DataFrame, emulated: str = "",
              profile: str = "standard", status: str = "completed") -> None:
    d = data / experiment / run_id
    d.mkdir(parents=True)
    df.to_csv(d / "results.csv", index=False)
    meta = {"started_at": run_id.split("-")[0], "parameters": {"target": target, "profile": profile},
            "target": {"emulated_device": emulated}, "status": status}
    (d / "meta.json").write_text(json.dumps(meta))


# A small catalogue: a ratio, a bound in ms, a size, and a claim no experiment measures.
CLAIMS = [
    dict(claim_id="P000-01", paper="000", where="Fig. 3", statement="Docker starts 13x-18x slower than Nanos",
         experiment="time_to_ready", metric="time_to_ready", a="docker", b="nanos", kind="ratio_range", low="13",
         high="18", better="lower", unit="ms"),
    dict(claim_id="P000-02", paper="000", where="Fig. 3", statement="Nanos is ready within 200 ms",
         experiment="time_to_ready", metric="time_to_ready", a="nanos", kind="below", high="200", unit="ms"),
    dict(claim_id="P000-03", paper="000", where="Fig. 2", statement="The raw binary is smaller than the image",
         experiment="static_footprint", metric="image_size", a="native", b="docker", kind="direction",
         better="lower", unit="bytes"),
    dict(claim_id="P004-01", paper="004", where="Sec. 5", statement="energy", kind="direction", a="docker",
         b="native", better="lower"),
]
FIELDS = ["claim_id", "paper", "where", "quote", "statement", "experiment", "metric", "a", "b", "conditions", "kind",
          "low", "high", "better", "unit"]


@pytest.fixture
def claims_file(tmp_path) -> Path:
    path = tmp_path / "claims.csv"
    with open(path, "w", newline="") as f:
        out = csv.DictWriter(f, FIELDS, restval="")
        out.writeheader()
        out.writerows(CLAIMS)
    return path


def device_runs(data: Path, target: str, emulated: str = "", profile: str = "standard") -> None:
    """time_to_ready (Docker about 15x Nanos, six repetitions) and static_footprint (one size each)."""
    ready = pd.concat([rows("docker", 1500 + RNG.normal(0, 10, 6)), rows("nanos", 100 + RNG.normal(0, 1, 6))])
    sizes = pd.concat([rows("native", [4.6e6], "image_size", "bytes"), rows("docker", [7.0e6], "image_size", "bytes")])
    write_run(data, "time_to_ready", f"20261126T1000Z-{target}", target, ready, emulated, profile)
    write_run(data, "static_footprint", f"20261126T0900Z-{target}", target, sizes, emulated, profile)


def load_rows(runtime: str, rps, p99) -> pd.DataFrame:
    level = dict(app="go-http", scenario="constrained", cpus=1.0, memory_mb=128.0, endpoint="/io", protocol="fair")
    return pd.DataFrame([dict(level, runtime=runtime, rep=rep, metric=metric, unit=unit, status="ok", value=value,
                              error="", accelerator="")
                         for rep, (r, p) in enumerate(zip(rps, p99), 1)
                         for metric, value, unit in (("requests_per_second", r, "req/s"), ("latency_p99", p, "ms"))])


def test_make_verdicts_judges_each_claim_on_the_latest_run_of_its_experiment(tmp_path):
    fast = pd.concat([rows("docker", 1500 + RNG.normal(0, 10, 6)), rows("nanos", 100 + RNG.normal(0, 1, 6))])
    write_run(tmp_path / "data", "time_to_ready", "20261126T1000Z", "local", fast)
    write_run(tmp_path / "data", "time_to_ready", "20261126T1100Z", "pi", fast, emulated=EMULATED)
    (tmp_path / "figures" / "time_to_ready").mkdir(parents=True)
    (tmp_path / "figures" / "time_to_ready" / "time_to_ready.png").write_bytes(b"png")
    claims = [claim("ratio_range", low=13, high=18),
              Claim("P004-01", "004", "Sec. 5", "", "energy", "", "", "docker", "native", kind="direction")]
    local = drv.verdicts(claims, target="local", data_dir=tmp_path / "data", figures_dir=tmp_path / "figures")
    assert list(local.verdict) == [HOLDS, NOT_MEASURABLE] and local.run.iloc[0] == "20261126T1000Z"
    assert local.reason.iloc[1] == "no edgebench experiment measures it" and local.run.iloc[1] == ""
    latest = drv.verdicts(claims, data_dir=tmp_path / "data")  # the newest of any device: the emulated one
    assert latest.verdict.iloc[0] == NOT_MEASURABLE and "emulated device" in latest.reason.iloc[0]
    assert "| P000-99 (Fig. 3) | statement | [holds](../time_to_ready/time_to_ready.png) |" in drv.markdown(local)
    with pytest.raises(ConfigError, match="leave run_id at 'latest'"):  # refused, not ignored
        drv.judge_claims("local", run_id="20261126T1000Z", data_dir=tmp_path / "data")


def test_a_run_a_device_is_still_measuring_is_not_judged_while_a_whole_one_exists(tmp_path):
    """make verdicts beside a board's make figures judged the container_overhead run it had just
    begun (a few points) instead of none; a run judged before it ended whole says so."""
    data, rng = tmp_path / "data", np.random.default_rng(7)  # its own draws: the other tests' stay as they were
    fast = pd.concat([rows("docker", 1500 + rng.normal(0, 10, 6)), rows("nanos", 100 + rng.normal(0, 1, 6))])
    write_run(data, "time_to_ready", "20261126T1000Z", "local", fast)
    write_run(data, "time_to_ready", "20261126T1100Z", "local", fast.head(2), status="running")
    claims = [claim("ratio_range", low=13, high=18)]
    judged = drv.verdicts(claims, target="local", data_dir=data)
    assert judged.verdict.iloc[0] == HOLDS and judged.run.iloc[0] == "20261126T1000Z"
    write_run(data, "time_to_ready", "20261126T0900Z-pi", "pi", fast, status="interrupted")
    alone = drv.verdicts(claims, target="pi", data_dir=data)  # the only run there: judged, and said to be part
    assert alone.verdict.iloc[0] == HOLDS and alone.run.iloc[0] == "20261126T0900Z-pi (interrupted)"
    assert "| time_to_ready | 20261126T0900Z-pi (interrupted) | standard |" in "\n".join(drv.runs_markdown(alone))


def test_each_verdict_links_a_figure_its_experiments_notebook_saves():
    # The name its page saves a figure under: show_figure(fig, params.EXPERIMENT, "name", run_dir) in
    # the experiment's plotting module, which its notebook's show() is.
    plotting = Path(edgebench.plotting.__file__).parent
    saved = {exp.name: set(re.findall(r'EXPERIMENT, "(\w+)"', (plotting / f"{exp.name}.py").read_text()))
             for exp in EXPERIMENTS.values()}
    for name in ("io_bound", "cpu_bound"):  # show_http_load saves them under the experiment's name
        saved[name] |= {name, f"{name}_open_loop"}
    for c in load_claims():
        name = drv.figure_name(c)
        if c.experiment:
            assert name.removesuffix(".png").split("/")[1] in saved[c.experiment], (c.claim_id, name)


def test_the_page_says_what_each_verdict_means_which_runs_it_judged_and_each_effects_unit(tmp_path, claims_file):
    data, figures = tmp_path / "data", tmp_path / "figures"
    device_runs(data, "local")
    (figures / "time_to_ready").mkdir(parents=True)
    (figures / "time_to_ready" / "time_to_ready.png").write_bytes(b"png")  # static_footprint drew none
    shown = drv.write_page("local", data_dir=data, figures_dir=figures, claims_file=claims_file)
    text = (figures / "verdicts" / "verdicts.md").read_text()
    assert text.index("What the verdicts mean") < text.index("Runs judged") < text.index("## Paper 000")
    for verdict in (HOLDS, CONTRADICTED, "inconclusive", NOT_MEASURABLE):
        assert f"- **{verdict}**: " in text
    assert "| time_to_ready | 20261126T1000Z-local | standard | 2026-11-26 10:00 UTC | local |" in text
    table = pd.read_csv(figures / "verdicts" / "verdicts.csv", dtype={"paper": str}).set_index("claim_id")
    assert table.loc["P000-01", "effect_unit"] == "x (docker over nanos)"
    assert table.loc["P000-02", "effect_unit"] == "ms"
    assert table.loc["P000-01", "profile"] == "standard" and table.loc["P000-01", "device"] == "local"
    assert re.search(r"\| \[holds\]\(\.\./time_to_ready/time_to_ready\.png\) \| 1\dx \(docker over nanos\) "
                     r"\| 1\d\.?\d* to 1\d\.?\d* \| 6 repetitions \|", text)
    assert re.search(r"holds\]\([^)]*\) \| (99|100|101)(\.\d+)? ms \| ", text)  # a bound: the claim's unit
    # A size is read once, exactly: 1 repetition, no interval to speak of, and no figure was drawn for it.
    assert "| P000-03 (Fig. 2) | The raw binary is smaller than the image | holds | 0.657x (native over docker) " \
           "| none needed: no spread | 1 repetition |" in text
    assert "static_footprint/" not in text and not re.search(r"\[\w[^]]*\]\(\)", text)
    for wrong in ("[95% CI]", "(s)", "reps", "~", "n=0"):
        assert wrong not in text, wrong
    assert shown.intro in text and "| P000-01 " in shown.claims and int(shown.counts.loc["000", HOLDS]) == 3


def test_a_smoke_run_or_an_emulated_device_is_no_finding_on_the_page(tmp_path, claims_file):
    data = tmp_path / "data"
    device_runs(data, "debian-v2", profile="smoke")
    device_runs(data, "pi-arm64", emulated=EMULATED)
    smoke = drv.judge_claims("debian-v2", claims_file=claims_file, data_dir=data).set_index("claim_id")
    assert set(smoke.loc[["P000-01", "P000-02", "P000-03"], "verdict"]) == {NOT_MEASURABLE}
    assert smoke.loc["P000-01", "reason"] == answer.SMOKE_WHY and pd.isna(smoke.loc["P000-01", "effect"])
    assert "Every run judged is a smoke run" in drv.markdown(smoke.reset_index())
    emulated = drv.judge_claims("pi-arm64", claims_file=claims_file, data_dir=data).set_index("claim_id")
    # A time keeps the engine's reason; a size is still judged (the engine's rule).
    assert emulated.loc["P000-01", "verdict"] == NOT_MEASURABLE and EMULATED in emulated.loc["P000-01", "reason"]
    assert emulated.loc["P000-03", "verdict"] == HOLDS
    text = drv.markdown(emulated.reset_index())
    assert "Every run judged is a run on an emulated device" in text and f"| pi-arm64, {EMULATED} |" in text


def test_several_targets_give_one_table_of_claims_by_device(tmp_path, claims_file):
    data, figures = tmp_path / "data", tmp_path / "figures"
    device_runs(data, "local")
    device_runs(data, "debian-v2", profile="smoke")
    device_runs(data, "pi-arm64", emulated=EMULATED)
    out = figures / "verdicts"
    out.mkdir(parents=True)
    (out / "verdicts.csv").write_text("claim_id\n")  # an earlier make verdicts on one device
    shown = drv.write_page("local,debian-v2,pi-arm64", data_dir=data, figures_dir=figures, claims_file=claims_file)
    wide = pd.read_csv(out / "by_device.csv", dtype={"paper": str}).set_index("claim_id")
    assert list(wide.columns) == ["paper", "statement", "effect_unit", "local", "debian-v2", "pi-arm64",
                                  "measurable_on"]
    assert list(wide.loc["P000-01", ["local", "debian-v2", "pi-arm64"]]) == [HOLDS, NOT_MEASURABLE, NOT_MEASURABLE]
    assert wide.loc["P000-01", "measurable_on"] == "local" and wide.loc["P000-03", "measurable_on"] == "local, pi-arm64"
    assert wide.loc["P004-01", "measurable_on"] == "none"
    for device in ("local", "debian-v2", "pi-arm64"):
        assert (out / f"verdicts-{device}.md").exists() and (out / f"answer-{device}.csv").exists()
    assert not (out / "verdicts.csv").exists()  # the folder holds this invocation's files only
    text = (out / "by_device.md").read_text()
    assert "| claim | statement | local | debian-v2 | pi-arm64 | measurable on |" in text
    # A cell that cannot judge says why in a few words; the device's page has the whole reason.
    row = next(line for line in text.splitlines() if line.startswith("| P000-01 |"))
    assert "| not measurable here (a smoke run) | not measurable here (the emulator's times) |" in row, row
    assert "| not measurable here (no experiment measures it) |" in text
    # pi-arm64-nomemcg's min_memory: every search below its memory, not run (its page has the fix).
    from edgebench.experiments.protocols import memory_not_applicable
    from edgebench.runtimes import RUNTIMES
    why = memory_not_applicable(RUNTIMES["native"], 4, {"memory_controller": "no", "memory_mb": 977})
    assert drv.short_reason(f"this device cannot measure it for native ({why})") == "no memory controller"
    assert "Smoke runs (every run on debian-v2)" in text
    assert "| time_to_ready | 20261126T1000Z-debian-v2 | smoke |" in text
    runs = [line for line in text.splitlines() if line.startswith("| time_to_ready | ")]
    # The runs judged in the columns' order (TARGET's), not the alphabet's (debian-v2 before local).
    assert [next(d for d in ("local", "debian-v2", "pi-arm64") if f"Z-{d} |" in line) for line in runs] \
        == ["local", "debian-v2", "pi-arm64"], runs
    assert "| local | debian-v2 | pi-arm64 |" in shown.claims and list(shown.counts.index) == list(wide.columns[3:6])
    # One target again: today's files, and the devices' ones gone.
    drv.write_page("local", data_dir=data, figures_dir=figures, claims_file=claims_file)
    assert (out / "verdicts.csv").exists() and not list(out.glob("by_device.*")) and not list(out.glob("*-local.*"))


def test_make_compares_page_gets_the_claims_by_device_and_writes_nothing(tmp_path, claims_file):
    data = tmp_path / "data"
    device_runs(data, "local")
    device_runs(data, "pi-arm64", emulated=EMULATED)
    counts, text = drv.claims_on(["local", "pi-arm64"], data_dir=data, claims_file=claims_file)
    assert list(counts.index) == ["local", "pi-arm64"] and counts.loc["local", HOLDS] == 3
    assert "| claim | statement | local | pi-arm64 | measurable on |" in text and "figures/verdicts" not in text
    assert "| P000-03 |" in text and "| P004-01 |" not in text  # no device could judge the energy claim
    assert text.endswith("1 more claims are not measurable on any of these devices (`make verdicts` says why).")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.csv", "data"]


def test_the_front_page_counts_each_devices_verdicts_and_gives_each_devices_answer(tmp_path, claims_file):
    data, figures = tmp_path / "data", tmp_path / "figures"
    load = pd.concat([load_rows("native", [10000, 10010, 9990], [5.0, 5.01, 4.99]),
                      load_rows("docker", [9995, 10005, 9990], [5.0, 5.02, 5.0])])
    for target, emulated in (("local", ""), ("pi-arm64", EMULATED)):
        device_runs(data, target, emulated=emulated)
        write_run(data, "io_bound", f"20261126T1100Z-{target}", target, load, emulated)
    drv.write_page("local,pi-arm64", data_dir=data, figures_dir=figures, claims_file=claims_file)
    page = report.build(figures, data, tmp_path / "site", experiments=[]).read_text()
    assert "4 claims on 2 devices" in page and "<tr><td>local</td><td>3</td>" in page
    assert "<tr><td>pi-arm64</td><td>1</td>" in page  # only the size holds on the emulated device
    local, pi = page.index("answer for local"), page.index("answer for pi-arm64")
    assert "within 5% of native: docker" in page[local:pi]
    assert f"io_bound, every level: no finding, not measurable here: measured on an {EMULATED}" in page[pi:]
    # The verdicts page names the devices it judged, not "this machine" (its notebook as papermill leaves it).
    executed = {"cells": [], "metadata": {"papermill": {"parameters": {"target": "local,pi-arm64"}}},
                "nbformat": 4, "nbformat_minor": 5}
    (figures / "verdicts" / "00_verdicts.ipynb").write_text(json.dumps(executed))
    report.build(figures, data, tmp_path / "site", experiments=[])
    assert "<small>on local, pi-arm64</small>" in (tmp_path / "site" / "verdicts.html").read_text()


def test_a_relative_data_folder_reaches_the_notebook_as_an_absolute_one(tmp_path, claims_file, monkeypatch):
    # The bug: with EDGEBENCH_DATA_DIR=copy/data the driver found the runs, but the notebook's kernel runs
    # in notebooks/, where copy/data is another, empty folder: every claim read "no run of ... yet".
    copy = tmp_path / "copy"
    device_runs(copy / "data", "local")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(drv, "DATA_DIR", Path("copy/data"))
    monkeypatch.setattr(drv, "FIGURES_DIR", Path("copy/figures"))
    monkeypatch.setattr(drv, "CLAIMS_FILE", claims_file)
    given = {}
    monkeypatch.setattr(drv, "run_headless", lambda goal, nb, params, quiet: given.update(params) or 0)
    assert drv.main(["--quiet"]) == 0
    assert given["data_dir"] == str(copy / "data") and given["figures_dir"] == str(copy / "figures")
    (tmp_path / "notebooks").mkdir()
    os.chdir(tmp_path / "notebooks")  # where the kernel runs
    drv.write_page(given["target"], data_dir=given["data_dir"], figures_dir=given["figures_dir"])
    text = (copy / "figures" / "verdicts" / "verdicts.md").read_text()
    assert "no run of" not in text and "| static_footprint | 20261126T0900Z-local |" in text
    assert not (tmp_path / "notebooks" / "copy").exists()
