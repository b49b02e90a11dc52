"""The rule of each kind of claim, on rows made for it: holds, contradicted, inconclusive (with
the repetitions that would settle it) and not measurable here, each from the interval."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from edgebench import claims
from edgebench.claims import (CONTRADICTED, HOLDS, INCONCLUSIVE, NOT_MEASURABLE, Claim, decide, judge, load_claims,
                              parse_conditions)
from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS
from edgebench.plotting.tables import spread
from edgebench.reference import load_reference


def rows(runtime: str, values, metric="time_to_ready", unit="ms", status="ok", **coords) -> pd.DataFrame:
    return pd.DataFrame({"metric": metric, "runtime": runtime, "value": list(values), "unit": unit, "status": status,
                         "error": None if status == "ok" else "OOM-killed", "rep": range(1, len(values) + 1),
                         "app": "go-http", **coords})


def claim(kind: str, a="docker", b="nanos", **fields) -> Claim:
    return Claim("P000-99", "000", "Fig. 3", "quote", "statement", "time_to_ready", "time_to_ready", a, b,
                 kind=kind, **fields)


RNG = np.random.default_rng(1)


def test_a_ratio_range_holds_is_contradicted_or_asks_for_more_repetitions():
    nanos = rows("nanos", 100 + RNG.normal(0, 1, 10))
    tight = pd.concat([rows("docker", 1500 + RNG.normal(0, 10, 10)), nanos])
    v = judge(claim("ratio_range", low=13, high=18), tight)
    assert v.verdict == HOLDS and 14 < v.effect < 16 and 13 <= v.ci_low <= v.ci_high <= 18 and v.n == 10
    assert "paired" in v.reason  # the same reps: measured as pairs
    slow = pd.concat([rows("docker", 500 + RNG.normal(0, 5, 10)), nanos])
    assert judge(claim("ratio_range", low=13, high=18), slow).verdict == CONTRADICTED
    wide = pd.concat([rows("docker", [900, 1500, 1300, 1700, 1100, 1250]), rows("nanos", [100] * 6)])
    v = judge(claim("ratio_range", low=13, high=18), wide)
    assert v.verdict == INCONCLUSIVE and v.ci_low < 13 < v.ci_high and v.repetitions_to_settle > 6


def test_direction_within_and_bounds():
    native, docker = rows("native", 10 + RNG.normal(0, 0.1, 8)), rows("docker", 10.3 + RNG.normal(0, 0.1, 8))
    both = pd.concat([native, docker])
    assert judge(claim("direction", a="native", b="docker", better="lower"), both).verdict == HOLDS
    assert judge(claim("direction", a="native", b="docker", better="higher"), both).verdict == CONTRADICTED
    assert judge(claim("within", a="docker", b="native", high=0.05), both).verdict == HOLDS
    assert judge(claim("within", a="docker", b="native", high=0.001), both).verdict == CONTRADICTED
    assert judge(claim("below", a="native", b="", high=12), both).verdict == HOLDS
    assert judge(claim("above", a="native", b="", low=12), both).verdict == CONTRADICTED


def test_an_equal_size_is_not_smaller():
    same = pd.concat([rows("native", [7_000_000], unit="bytes"), rows("docker", [7_000_000], unit="bytes")])
    v = judge(claim("direction", a="native", b="docker", better="lower"), same)
    assert v.verdict == CONTRADICTED and (v.ci_low, v.ci_high) == (1, 1) and v.n == 1  # read once, exactly


def test_conditions_choose_the_rows_and_unpaired_rows_still_compare():
    df = pd.concat([rows("native", [10, 11, 12], memory_mb=64), rows("native", [50, 51, 52], memory_mb=512),
                    rows("docker", [20, 21, 22], memory_mb=64).assign(rep=[7, 8, 9])])
    c = claim("direction", a="native", b="docker", better="lower", conditions=parse_conditions("memory_mb=64"))
    v = judge(c, df)
    assert v.verdict == HOLDS and v.effect == pytest.approx(11 / 21) and "unpaired" in v.reason


def test_failure_pattern():
    df = pd.concat([rows("nanos", [1, 1, 1], metric="requests_per_second", unit="req/s"),
                    rows("docker", [np.nan] * 3, metric="requests_per_second", unit="req/s", status="failed")])
    c = Claim("P002-9", "002", "", "", "", "io_bound", "requests_per_second", "nanos", "docker", kind="failure")
    assert judge(c, df).verdict == HOLDS
    mixed = df.copy()
    mixed.loc[mixed.index[-1], "status"] = "ok"
    assert judge(c, mixed).verdict == INCONCLUSIVE


def test_what_cannot_be_measured_says_why():
    c = claim("ratio_range", low=13, high=18)
    assert judge(c, None).reason == "no run of time_to_ready yet"
    failed = pd.concat([rows("docker", [1, 2, 3]), rows("nanos", [np.nan] * 3, status="failed")])
    v = judge(c, failed)
    assert v.verdict == NOT_MEASURABLE and v.reason == "every nanos row failed (OOM-killed)"
    # Rows the device cannot measure (no power meter) did not fail, and the reason does not say so.
    unmeasurable = pd.concat([rows("docker", [1, 2, 3]), rows("nanos", [np.nan] * 3, status="not measurable")])
    assert judge(c, unmeasurable).reason == "every nanos row is not measurable here (OOM-killed)"
    tcg = pd.concat([rows("docker", [1500] * 3), rows("nanos", [100] * 3, accelerator="tcg")])
    assert "TCG" in judge(c, tcg).reason
    ok = pd.concat([rows("docker", [1500, 1510, 1490]), rows("nanos", [100, 101, 99])])
    assert "emulated device" in judge(c, ok, emulated_device="emulated device (aarch64)").reason
    sizes = claim("direction", better="lower")
    sized = pd.concat([rows("docker", [9, 9, 9], unit="bytes"), rows("nanos", [5, 5, 5], unit="bytes")])
    assert judge(sizes, sized, emulated_device="emulated device (aarch64)").verdict == CONTRADICTED


def test_a_run_without_the_claims_rows_says_what_it_left_out():
    """A quick run measures smaller sizes than a claim's: the reason names the condition and what
    the run has instead, not only that rows are missing (read on debian-v2's quick runs)."""
    df = pd.concat([rows("docker", [1, 2, 3], input_size="1MB"), rows("native", [1, 2, 3], input_size="10KB"),
                    rows("native", [1, 2, 3], input_size="1MB")])
    big = claim("direction", a="docker", b="native", better="lower", conditions=parse_conditions("input_size=100MB"))
    assert judge(big, df).reason == "this run did not measure docker at input_size=100MB (it has 1MB)"
    assert judge(claim("direction", a="docker", b="nanos", better="lower"), df).reason == \
        "this run has no nanos rows (left out of its runtimes, or not reached)"
    other_metric = dataclasses.replace(claim("direction", a="docker", b="native", better="lower"), metric="startup")
    assert judge(other_metric, df).reason == \
        "this run has no startup rows of docker"
    gone = Claim("P002-9", "002", "", "", "", "io_bound", "time_to_ready", "docker", "nanos", kind="failure")
    assert judge(gone, df).reason == "this run has no nanos rows (left out of its runtimes, or not reached)"


def test_the_repetitions_that_would_settle_an_interval_grow_as_its_square():
    # Half-width 2 around 14 against the edge at 13: four times the repetitions halve it to 1.
    assert decide(12, 16, 14, 5, (13, 18)) == (INCONCLUSIVE, 20)
    assert decide(13.5, 17, 15, 5, (13, 18)) == (HOLDS, None)


def test_the_catalogue_parses(tmp_path):
    path = tmp_path / "claims.csv"
    header = "claim_id,paper,where,quote,statement,experiment,metric,a,b,conditions,kind,low,high,better,unit\n"
    path.write_text(header + 'P000-01,000,Fig. 3,"q","s",time_to_ready,time_to_ready,docker,nanos,'
                    '"app=go-http;protocol=fair",ratio_range,13,18,,\n')
    (c,) = load_claims(path)
    assert c.conditions == {"app": "go-http", "protocol": "fair"} and (c.low, c.high) == (13, 18)
    path.write_text(header + "P000-02,000,,,,x,y,a,b,,guess,,,,\n")
    with pytest.raises(ConfigError, match="kind 'guess' unknown"):
        load_claims(path)


def test_a_runtime_against_itself_and_a_choice_of_values():
    df = pd.concat([rows("docker", [10, 11, 12], memory_mb=64, operation="read"),
                    rows("docker", [20, 21, 22], memory_mb=512, operation="read"),
                    rows("docker", [30, 31, 32], memory_mb=512, operation="write")])
    c = claim("ratio_range", a="docker", b="docker", low=0.4, high=0.6,
              conditions=parse_conditions("operation=read;a.memory_mb=64;b.memory_mb=512"))
    v = judge(c, df)
    assert v.verdict == HOLDS and v.effect == pytest.approx(11 / 21, rel=0.02) and "paired" in v.reason and v.n == 3
    both = claim("below", a="docker", b="", high=40, conditions=parse_conditions("operation=read|write"))
    assert judge(both, df).n == 9


def test_the_catalogue_is_not_among_the_published_values():
    assert not load_reference()["experiment"].isna().any()


def test_the_papers_claims_are_catalogued_each_with_an_experiment_that_exists():
    claims = load_claims()
    assert len(claims) >= 40 and len({c.claim_id for c in claims}) == len(claims)
    assert {c.paper for c in claims} == {"000", "001", "002", "003", "004"}
    assert {c.experiment for c in claims if c.experiment} <= set(EXPERIMENTS)
    assert all(c.quote and c.where and c.statement for c in claims)


def test_the_median_interval_of_the_tables_covers_the_median_and_needs_three_runs():
    rng = np.random.default_rng(1)
    values = rng.normal(100, 10, 20)
    low, high = claims.median_interval(values)
    assert low < np.median(values) < high and high - low < 20
    assert all(np.isnan(claims.median_interval([1.0, 2.0])))
    assert claims.median_interval([5.0, 5.0, 5.0]) == (5.0, 5.0)
    # What the tables take it from: spread() beside the median and quartiles.
    s = spread(pd.Series(values))
    assert (s["ci_low"], s["ci_high"]) == (low, high) and s["q1"] < s["median"] < s["q3"]


def test_the_ratio_interval_beside_a_ratio_to_native_holds_it():
    rng = np.random.default_rng(2)
    a, b = rng.normal(90, 5, 10), rng.normal(100, 5, 10)
    low, high = claims.ratio_interval(a, b)
    assert low < np.median(a) / np.median(b) < high and 0.7 < low and high < 1.1
    assert all(np.isnan(claims.ratio_interval(a, [100.0, 101.0])))


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_the_95_percent_intervals_cover_a_known_slowdown_in_200_simulated_runs(paired):
    """Docker 10% slower than native, 10 repetitions a run, 200 runs: the interval holds the true
    0.9 in at least 90% of them, and the verdicts of a 5% band and a 20% band follow it."""
    rng = np.random.default_rng(36)
    within_5, within_20 = claim("within", a="docker", b="native", high=0.05), claim("within", a="docker",
                                                                                     b="native", high=0.2)
    covered, verdicts_5, verdicts_20 = 0, [], []
    for _ in range(200):
        native = 100 + rng.normal(0, 5, 10)
        if paired:  # each repetition's pair shares its moment's noise; the ratio's own noise is symmetric
            docker = native * 0.9 * (1 + rng.normal(0, 0.03, 10))
        else:
            docker = 90 + rng.normal(0, 4.5, 10)
        both = pd.concat([rows("native", native), rows("docker", docker).assign(rep=range(11, 21) if not paired
                                                                                    else range(1, 11))])
        v = judge(within_5, both)
        assert ("unpaired" not in v.reason) == paired
        covered += v.ci_low <= 0.9 <= v.ci_high
        verdicts_5.append(v.verdict)
        verdicts_20.append(decide(v.ci_low, v.ci_high, v.effect, v.n, claims.band(within_20))[0])
    assert covered >= 180, f"{covered} of 200 intervals hold the true 0.9"
    assert HOLDS not in verdicts_5 and CONTRADICTED not in verdicts_20
    # Unpaired, the two runtimes' own spreads widen the interval: a 5% band is more often unsettled.
    assert verdicts_5.count(CONTRADICTED) >= (180 if paired else 80)
    assert verdicts_20.count(HOLDS) >= 180


def test_no_difference_is_seldom_called_one_in_200_simulated_runs():
    """About 5% of 95% intervals miss the truth: a direction is then "shown" either way."""
    rng = np.random.default_rng(37)
    faster = claim("direction", a="docker", b="native", better="higher")
    within_10 = claim("within", a="docker", b="native", high=0.1)
    directions, bands, covered = [], [], 0
    for _ in range(200):
        native = 100 + rng.normal(0, 5, 10)
        both = pd.concat([rows("native", native), rows("docker", native * (1 + rng.normal(0, 0.03, 10)))])
        d = judge(faster, both)
        covered += d.ci_low <= 1 <= d.ci_high
        directions.append(d.verdict)
        bands.append(decide(d.ci_low, d.ci_high, d.effect, d.n, claims.band(within_10))[0])
    assert covered >= 180, f"{covered} of 200 intervals hold the true 1"
    assert directions.count(INCONCLUSIVE) >= 180  # "docker is faster" is neither shown nor refuted
    assert bands.count(HOLDS) >= 180 and CONTRADICTED not in bands
