"""edgebench's own answer (edgebench.answer) from synthetic runs with known effects: a runtime as
fast as native, one 20% slower, one whose p99 doubles, one that fails, one below its minimum,
one too noisy to settle; and the sentences and tables a reader acts on."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from edgebench import answer
from edgebench.drivers import report, verdicts

LEVEL = dict(app="go-http", scenario="constrained", cpus=1.0, memory_mb=128.0, endpoint="/io", protocol="fair")


def load_rows(runtime: str, rps, p99, status: str = "ok", error: str = "", accelerator: str = "") -> pd.DataFrame:
    out = []
    for rep, (r, p) in enumerate(zip(rps, p99), 1):
        for metric, value, unit in (("requests_per_second", r, "req/s"), ("latency_p99", p, "ms")):
            out.append(dict(LEVEL, runtime=runtime, rep=rep, metric=metric, unit=unit, status=status,
                            value=value if status == "ok" else np.nan, error=error, accelerator=accelerator))
    return pd.DataFrame(out)


def write_run(data_dir, experiment: str, run_id: str, df: pd.DataFrame, target: str = "local", emulated: str = "",
              profile: str = "standard"):
    d = data_dir / experiment / run_id
    d.mkdir(parents=True)
    df.to_csv(d / "results.csv", index=False)
    (d / "meta.json").write_text(json.dumps({"started_at": run_id, "parameters": {"target": target, "profile": profile},
                                             "target": {"emulated_device": emulated}}))


@pytest.fixture
def data_dir(tmp_path):
    data = tmp_path / "data"
    rng = np.random.default_rng(7)  # the same draws whichever test runs first

    def noisy(centre: float, sd: float) -> np.ndarray:
        return centre + rng.normal(0, sd, 8)

    load = pd.concat([
        load_rows("native", noisy(10000, 30), noisy(5.0, 0.02)),
        load_rows("docker", noisy(9990, 30), noisy(5.01, 0.02)),           # the same: within
        load_rows("lxd", noisy(8000, 30), noisy(5.0, 0.02)),               # 20% slower: costs more
        load_rows("linux-vm", noisy(9990, 30), noisy(10.0, 0.05), accelerator="tcg"),  # p99 doubles
        load_rows("nanos", [np.nan] * 8, [np.nan] * 8, status="failed", error="not ready after 1m0s"),
        load_rows("unikraft", [np.nan], [np.nan], status="not measurable",
                  error="memory 128 MiB is below what unikraft can start go-http with"),
        load_rows("lxc", noisy(9500, 900), noisy(5.0, 0.3)),               # too noisy to say
    ])
    write_run(data, "io_bound", "20261126T1000Z-aaaa", load)
    ready = pd.DataFrame([dict(app="go-http", runtime=rt, protocol="fair", cache="warm", rep=i, metric="time_to_ready",
                               unit="ms", status="ok", error="", value=v + i)
                          for rt, v in (("native", 50), ("docker", 800))
                          for i in range(5)])
    write_run(data, "time_to_ready", "20261126T0900Z-bbbb", ready)
    floor = pd.DataFrame([dict(app="go-http", runtime="docker", protocol="fair", rep=1, metric="min_memory", unit="MiB",
                               status="ok", error="", value=6.0)])
    write_run(data, "min_memory", "20261126T0800Z-cccc", floor)
    return data


def test_each_runtime_gets_the_verdict_its_known_effect_calls_for(data_dir):
    table = answer.answer("local", data_dir).set_index("runtime")
    assert table.loc["native", "serves"] == "baseline"
    assert table.loc["docker", "serves"] == answer.WITHIN
    assert table.loc["lxd", "serves"] == answer.COSTS_MORE
    assert table.loc["lxd", "rps_ci_low"] < 0.8 < table.loc["lxd", "rps_ci_high"]  # the interval holds the truth
    # An emulated VM's ratios are the emulator's: kept in the table, but no finding (the claims engine's words).
    assert table.loc["linux-vm", "serves"] == answer.NOT_MEASURABLE_HERE
    assert table.loc["linux-vm", "p99_vs_native"] > 1.9
    assert table.loc["linux-vm", "why"] == answer.TCG_WHY
    assert table.loc["nanos", "serves"] == answer.FAILS and table.loc["nanos", "why"] == "not ready after 1m0s"
    assert table.loc["unikraft", "serves"] == answer.NOT_MEASURABLE_HERE
    assert table.loc["lxc", "serves"] == answer.INCONCLUSIVE
    # Each runtime's time to ready and memory floor come from their own runs, and say which.
    assert table.loc["docker", "ready_ms"] == 802 and table.loc["docker", "ready_run"] == "20261126T0900Z-bbbb"
    assert table.loc["docker", "floor_mb"] == 6 and table.loc["docker", "floor_run"] == "20261126T0800Z-cccc"
    assert np.isnan(table.loc["lxd", "ready_ms"]) and table.loc["lxd", "load_run"] == "20261126T1000Z-aaaa"
    # A looser tolerance takes the noisy runtime in only when its interval fits.
    loose = answer.answer("local", data_dir, tolerance=0.5).set_index("runtime")
    assert loose.loc["lxd", "serves"] == answer.WITHIN and loose.loc["lxc", "serves"] == answer.WITHIN


def test_the_reader_gets_one_line_per_level_and_a_table_with_intervals(data_dir):
    table = answer.answer("local", data_dir)
    (line,) = answer.sentences(table)
    assert line.startswith("go-http at 128 MiB, 1 CPU (/io): native serves ") and "req/s, p99 5" in line
    assert "within 5% of native: docker" in line and "fails: nanos" in line
    assert "not measurable here: linux-vm (TCG), unikraft" in line and "x2" not in line  # no number from TCG
    assert "costs more: lxd" in line and "decided" not in line
    text = answer.markdown(table, 0.05)
    assert text.startswith("A finding is a verdict on what this device measured")
    assert "| go-http | docker | 802 [800, 804] | 6 |" in text and "| go-http | lxd |" not in text
    header, row = (next(x for x in text.splitlines() if x.startswith(start)) for start in ("| app,", "| go-http at"))
    cells = dict(zip(header.strip("| ").split(" | "), row.strip("| ").split(" | ")))
    assert cells["linux-vm (TCG)"] == "not measurable" and cells["unikraft"] == "not measurable"
    said = text.split("Not findings (not measurable here), and why:\n")[1]
    assert f"- linux-vm (TCG): {answer.TCG_WHY}" in said and "- unikraft: memory 128 MiB is below" in said
    assert "io_bound: 20261126T1000Z-aaaa" in text and "min_memory: 20261126T0800Z-cccc" in text


def test_one_repetition_decides_nothing_and_says_so_in_repetitions(tmp_path):
    data = tmp_path / "data"
    write_run(data, "io_bound", "r1", pd.concat([load_rows("native", [100.0], [5.0]),
                                                 load_rows("docker", [99.0], [5.1]),
                                                 load_rows("lxd", [50.0], [9.0])]), profile="quick")
    table = answer.answer("local", data)
    docker = table.set_index("runtime").loc["docker"]
    assert docker["serves"] == answer.WITHIN and np.isnan(docker["rps_ci_low"]) and docker["profile"] == "quick"
    said, line = answer.sentences(table)
    assert said == ("1 repetition at every level, no interval (one needs 3 repetitions): nothing below is decided; "
                    "its verdicts are point estimates.")
    assert "within 5% of native by point estimate: docker" in line and "costs more by point estimate: lxd" in line
    # Beside a level with intervals, a level without one says so itself.
    decided = table.assign(rps_ci_low=0.9, app="node-http")
    assert "1 repetition, no interval (one needs 3 repetitions), so nothing here is decided: native" in \
        answer.sentences(pd.concat([table, decided]))[0]
    text = answer.markdown(table)
    assert text.startswith("**Quick profile:")
    assert "[95% CI]" not in text and "every cell is from fewer than 3 repetitions: no interval" in text
    assert "1 repetition, undecided: req/s x0.99" in text and "yes:" not in text and "no:" not in text
    assert "n=1" not in text and "(s)" not in text


def test_a_smoke_run_gives_no_finding_and_says_why(tmp_path):
    data = tmp_path / "data"
    write_run(data, "io_bound", "r1", pd.concat([load_rows("native", [100.0], [5.0]),
                                                 load_rows("docker", [99.0], [5.1])]), profile="smoke")
    ready = pd.DataFrame([dict(app="go-http", runtime="docker", protocol="fair", cache="warm", rep=1,
                               metric="time_to_ready", unit="ms", status="ok", error="", value=800.0)])
    write_run(data, "time_to_ready", "r2", ready, profile="smoke")
    table = answer.answer("local", data)
    assert set(table["serves"]) == {answer.NOT_MEASURABLE_HERE} and set(table["why"]) == {answer.SMOKE_WHY}
    assert table["ready_ms"].isna().all()  # a smoke run's times are not read
    assert answer.sentences(table) == [f"io_bound, every level: no finding, not measurable here: {answer.SMOKE_WHY}"]
    notes = answer.runs_not_read("local", data)
    assert notes == [f"time_to_ready run r2: {answer.SMOKE_WHY}"]
    text = answer.markdown(table, 0.05, notes)
    assert text.startswith("**Smoke test:") and f"**Not a finding: time_to_ready run r2: {answer.SMOKE_WHY}.**" in text
    assert "req/s x" not in text and "| app, level |" not in text  # no number and no table of nothing


def test_an_emulated_device_gives_no_finding_from_its_times_but_keeps_its_memory_floor(data_dir):
    for meta in data_dir.glob("*/*/meta.json"):  # the same runs, made on an emulated device
        facts = json.loads(meta.read_text())
        facts["target"]["emulated_device"] = "emulated device (aarch64)"
        meta.write_text(json.dumps(facts))
    table = answer.answer("local", data_dir).set_index("runtime")
    why = answer.emulated_why("emulated device (aarch64)")
    assert set(table["serves"]) == {answer.NOT_MEASURABLE_HERE} and set(table["why"]) == {why}
    assert np.isnan(table.loc["docker", "ready_ms"]) and table.loc["docker", "floor_mb"] == 6  # a size is read
    assert answer.runs_not_read("local", data_dir) == [f"time_to_ready run 20261126T0900Z-bbbb: {why}"]
    assert answer.sentences(table.reset_index()) == [f"io_bound, every level: no finding, not measurable here: {why}"]


def test_a_quick_run_is_indicative_and_intervals_are_named_only_where_they_exist(data_dir, tmp_path):
    table = answer.answer("local", data_dir)
    assert answer.markdown(table).count("[95% CI]") == 2 and "Smoke" not in answer.markdown(table)
    quick = table.assign(profile="quick")
    assert answer.markdown(quick).startswith("**Quick profile:") and "indicative only" in answer.markdown(quick)


def test_no_run_yet_says_what_to_run(tmp_path):
    table = answer.answer("local", tmp_path / "data")
    assert table.empty and "make figures ONLY=io_bound" in answer.markdown(table)
    with pytest.raises(ValueError, match="tolerance"):
        answer.answer("local", tmp_path / "data", tolerance=5)


def test_make_verdicts_writes_the_answer_and_the_front_page_shows_it(data_dir, tmp_path):
    table = answer.answer("local", data_dir)
    out = tmp_path / "figures" / "verdicts"
    verdicts.save(pd.DataFrame(columns=verdicts.COLUMNS), out, table, answer.markdown(table))
    saved = pd.read_csv(out / "answer.csv")
    assert len(saved) == len(table) and (out / "answer.md").read_text().startswith("# edgebench's answer")
    index = report.build(tmp_path / "figures", data_dir, tmp_path / "site", experiments=[])
    page = index.read_text()
    assert "edgebench's answer for this device" in page and "within 5% of native: docker" in page
