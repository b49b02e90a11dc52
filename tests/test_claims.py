"""The rule of each kind of claim, on rows made for it: holds, contradicted, inconclusive (with
the repetitions that would settle it) and not measurable here, each from the interval."""

from __future__ import annotations

import dataclasses
import math

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


def test_conditions_choose_the_rows_and_rows_that_share_no_repetition_do_not_pair():
    df = pd.concat([rows("native", [10, 11, 12], memory_mb=64), rows("native", [50, 51, 52], memory_mb=512),
                    rows("docker", [20, 21, 22], memory_mb=64)])
    c = claim("direction", a="native", b="docker", better="lower", conditions=parse_conditions("memory_mb=64"))
    v = judge(c, df)
    assert v.verdict == HOLDS and v.effect == pytest.approx(11 / 21, rel=0.05) and "3 paired ratios" in v.reason
    apart = pd.concat([df[df.runtime == "native"], rows("docker", [20, 21, 22], memory_mb=64).assign(rep=[7, 8, 9])])
    v = judge(c, apart)  # measured in other repetitions: pooling their medians would compare other moments
    assert v.verdict == NOT_MEASURABLE and v.reason.startswith("no paired rows")


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
    assert judge(c, unmeasurable).reason == "this device cannot measure it for nanos (OOM-killed)"
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
    assert judge(big, df).reason == "this run did not measure docker at input_size=100MB; only at input_size=1MB"
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


def test_the_95_percent_intervals_cover_a_known_slowdown_in_200_simulated_runs():
    """Docker 10% slower than native, 10 repetitions a run, 200 runs: the interval holds the true
    0.9 in at least 90% of them, and the verdicts of a 5% band and a 20% band follow it."""
    rng = np.random.default_rng(36)
    within_5, within_20 = claim("within", a="docker", b="native", high=0.05), claim("within", a="docker",
                                                                                     b="native", high=0.2)
    covered, verdicts_5, verdicts_20 = 0, [], []
    for _ in range(200):
        native = 100 + rng.normal(0, 5, 10)
        # each repetition's pair shares its moment's noise; the ratio's own noise is symmetric
        docker = native * 0.9 * (1 + rng.normal(0, 0.03, 10))
        v = judge(within_5, pd.concat([rows("native", native), rows("docker", docker)]))
        covered += v.ci_low <= 0.9 <= v.ci_high
        verdicts_5.append(v.verdict)
        verdicts_20.append(decide(v.ci_low, v.ci_high, v.effect, v.n, claims.band(within_20))[0])
    assert covered >= 180, f"{covered} of 200 intervals hold the true 0.9"
    assert HOLDS not in verdicts_5 and CONTRADICTED not in verdicts_20
    assert verdicts_5.count(CONTRADICTED) >= 180
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


# -- the engine's edges (issue 55): each failed before ----------------------------------------------

def test_an_effect_on_a_directions_edge_asks_for_no_number_of_repetitions():
    lower = claim("direction", better="lower")
    assert decide(0.9, 1.1, 1.0, 5, claims.band(lower)) == (INCONCLUSIVE, None)  # was about 4e30


def test_zero_is_no_edge_and_the_crossed_edge_is_the_one_to_clear():
    lower = claim("direction", better="lower")
    # Only 1 is an edge of "lower": the upper end must come down from 1.2 to below 1.
    assert decide(0.02, 1.2, 0.1, 5, claims.band(lower)) == (INCONCLUSIVE, 8)  # was 174, counting 0
    # 14 inside [13, 18]: the interval crosses 18 only, 5 above the effect and 4 to go: 5 * (5/4)^2.
    assert decide(13.5, 19, 14, 5, (13, 18)) == (INCONCLUSIVE, 8)  # was 38, from the nearer 13
    # Outside the band and crossing both edges, the one to clear is the one beside the effect.
    assert decide(12, 21, 20, 4, (13, 18)) == (INCONCLUSIVE, math.ceil(4 * (8 / 2) ** 2))


def test_zeros_over_zeros_are_equal_and_a_value_over_zero_is_infinite():
    counts = pd.concat([rows("docker", [0, 0, 0, 0], metric="errors_timeout", unit="count"),
                        rows("nanos", [0, 0, 0, 0], metric="errors_timeout", unit="count")])
    fewer = dataclasses.replace(claim("direction", better="lower"), metric="errors_timeout")
    v = judge(fewer, counts)  # was NaN, "too few for an interval" at any n
    assert (v.verdict, v.effect, v.ci_low, v.ci_high, v.n) == (CONTRADICTED, 1, 1, 1, 4)
    some = counts.assign(value=[0, 0, 0, 0, 3, 0, 5, 4])
    v = judge(fewer, some)  # pairs over a zero are kept, not dropped
    assert v.n == 4 and v.verdict in (HOLDS, INCONCLUSIVE) and v.effect == 0
    more = counts.assign(value=[3, 2, 4, 5, 0, 0, 1, 0])
    v = judge(fewer, more)  # an infinite end decides or asks for nothing, and raises nothing
    assert v.ci_high == math.inf and v.verdict in (CONTRADICTED, INCONCLUSIVE)


def test_a_band_the_rules_cannot_read_is_refused_when_the_catalogue_loads(tmp_path):
    header = ("claim_id,paper,where,quote,statement,experiment,metric,a,b,conditions,kind,low,high,better,unit,"
              "published\n")
    path = tmp_path / "claims.csv"
    path.write_text(header + "P000-01,000,w,q,s,io_bound,requests_per_second,docker,native,,within,,,higher,req/s,\n")
    with pytest.raises(ConfigError, match="within claim needs `high`"):
        load_claims(path)
    path.write_text(header + "P000-01,000,w,q,s,io_bound,requests_per_second,docker,native,,direction,,,hihger,,\n")
    with pytest.raises(ConfigError, match="better='hihger'; write lower or higher"):
        load_claims(path)
    path.write_text(header + "P000-01,000,w,q,s,io_bound,requests_per_second,docker,native,,direction,,,,,\n")
    with pytest.raises(ConfigError, match="write lower or higher"):
        load_claims(path)
    path.write_text(header + "P000-01,000,w,q,s,io_bound,x,docker,nanos,,ratio_range,13,18,lower,ms,13.2|18.3\n")
    assert load_claims(path)[0].published == (13.2, 18.3)


def test_a_label_only_one_side_has_pairs_each_of_its_values_and_pools_no_scales():
    """Docker's rows carry a network mode, Unikraft's none: each mode pairs with Unikraft's row of the
    same repetition and test, and the effect is the median of those ratios, never a median over
    Redis GET, SET and nginx together (which pooled before)."""
    scales = {"redis-get": 100_000, "redis-set": 90_000, "nginx": 8_000}
    parts = []
    for test, scale in scales.items():
        noise = 1 + RNG.normal(0, 0.01, 5)
        parts.append(rows("unikraft", scale * 1.5 * noise, metric="throughput", unit="req/s", test=test))
        for mode in ("bridge", "host"):
            parts.append(rows("docker", scale * noise, metric="throughput", unit="req/s", test=test,
                              network_mode=mode))
    df = pd.concat(parts)
    faster = Claim("P002-99", "002", "", "", "", "services", "throughput", "unikraft", "docker",
                   kind="ratio_range", low=1.3, high=1.8)
    v = judge(faster, df)
    assert v.verdict == HOLDS and v.effect == pytest.approx(1.5, rel=0.01) and v.n == 30


def test_a_stricter_confidence_widens_the_interval():
    df = pd.concat([rows("native", 10 + RNG.normal(0, 0.5, 10)), rows("docker", 11 + RNG.normal(0, 0.5, 10))])
    c = claim("direction", a="native", b="docker", better="lower")
    usual, strict = judge(c, df), judge(c, df, confidence=0.99)
    assert strict.ci_low <= usual.ci_low and strict.ci_high >= usual.ci_high
    assert (strict.ci_high - strict.ci_low) > (usual.ci_high - usual.ci_low)


def test_sizes_under_tcg_are_judged_and_energy_without_a_meter_says_so():
    floors = pd.concat([rows("unikraft", [5, 5, 6], metric="min_memory", unit="MiB", accelerator="tcg")])
    c = Claim("P002-11", "002", "", "", "", "min_memory", "min_memory", "unikraft", "", kind="below", high=7)
    assert judge(c, floors).verdict == HOLDS  # a memory floor is no time: emulation does not change it
    meterless = pd.concat([rows(rt, [np.nan] * 3, metric="edp", unit="J*s", status="not measurable",
                                protocol="fair").assign(error="no power meter on local: powercap: none")
                           for rt in ("docker", "native")])
    edp = Claim("P003-04", "003", "", "", "", "container_overhead", "edp", "docker", "native",
                conditions=parse_conditions("protocol=published"), kind="direction", better="lower")
    assert judge(edp, meterless).reason == "this device cannot measure edp (no power meter on local: powercap: none)"


def npb(runtime: str, operation: str, npb_class: str, seconds: float, reps: int = 10) -> pd.DataFrame:
    """NPB's time as it prints it: to 0.01 s, around `seconds` (a 1% spread)."""
    values = np.round(seconds * (1 + RNG.normal(0, 0.01, reps)), 2)
    return rows(runtime, values, metric="time", unit="s", experiment="container_overhead", benchmark="hpc",
                operation=operation, npb_class=npb_class, protocol="published")


def test_npb_times_are_read_only_where_their_hundredths_cannot_decide():
    """Paper 003 (P003-05): native is faster than the container on NPB. Docker 5% slower reads as
    'equal' in class S, printed as 0.02 s either way; the claim is read on the points long enough
    for 0.01 s to move a ratio by 1% at most, and says how many it left out."""
    npb_claim = Claim("P003-05", "003", "", "", "", "container_overhead", "time", "native", "docker",
                      conditions=parse_conditions("benchmark=hpc;protocol=published"), kind="direction",
                      better="lower", unit="s")
    short = pd.concat([npb(rt, op, "S", 0.02 * (1.05 if rt == "docker" else 1))
                       for op in ("is", "ep", "cg", "mg", "ft", "bt", "sp", "ua") for rt in ("native", "docker")])
    long = pd.concat([npb(rt, op, "A", 10 * (1.05 if rt == "docker" else 1))
                      for op in ("lu", "sp") for rt in ("native", "docker")])
    v = judge(npb_claim, pd.concat([short, long]))
    assert v.verdict == HOLDS and v.n == 20 and v.effect == pytest.approx(1 / 1.05, rel=0.01)
    assert "8 of 10 points left out as too coarse" in v.reason and "printed to 0.01 s" in v.reason
    v = judge(npb_claim, short)
    assert v.verdict == NOT_MEASURABLE and v.reason.startswith("8 of 8 points left out as too coarse")
    # The rule is NPB's: times edgebench measures itself are read at any length.
    own = dataclasses.replace(npb_claim, metric="step_time")
    assert judge(own, pd.concat([short, long]).assign(metric="step_time")).n == 100


# -- a claim at every value of a column ------------------------------------------------------------

def levels(runtime: str, per_level: dict[int, list[float]], status: dict[int, str] | None = None) -> pd.DataFrame:
    """One runtime's rows at several memory levels, the same repetitions at each."""
    return pd.concat([rows(runtime, values, metric="requests_per_second", unit="req/s", memory_mb=level,
                           status=(status or {}).get(level, "ok")) for level, values in per_level.items()])


def every_level(**fields) -> Claim:
    c = Claim("P000-98", "000", "Fig. 5", "quote", "statement", "io_bound", "requests_per_second", "nanos",
              "docker", conditions=parse_conditions("memory_mb=512|256|128|64;each=memory_mb"),
              kind="ratio_range", low=3.16, high=31.6, better="higher", unit="req/s")
    return dataclasses.replace(c, **fields)


def test_a_claim_at_every_level_is_contradicted_by_one_level_that_pooling_would_hide():
    """Ten times at three levels and twice at 64 MB: the pooled median of all pairs would hold."""
    docker = levels("docker", {m: list(1000 + RNG.normal(0, 5, 6)) for m in (512, 256, 128, 64)})
    nanos = levels("nanos", {512: list(10_000 + RNG.normal(0, 50, 6)), 256: list(10_100 + RNG.normal(0, 50, 6)),
                             128: list(9_900 + RNG.normal(0, 50, 6)), 64: list(2_000 + RNG.normal(0, 20, 6))})
    df = pd.concat([docker, nanos])
    v = judge(every_level(), df)
    assert v.verdict == CONTRADICTED and v.effect == pytest.approx(2, rel=0.05), v
    assert "Shown: memory_mb=64" in v.reason and "512 holds" in v.reason and "64 contradicted" in v.reason
    assert v.n == 24  # every level's pairs, none pooled across levels
    pooled = judge(dataclasses.replace(every_level(), conditions=parse_conditions("memory_mb=512|256|128|64")), df)
    assert pooled.verdict == HOLDS  # what one interval over all levels said


def test_a_claim_at_every_level_holds_where_each_holds_at_a_stricter_interval():
    docker = levels("docker", {m: list(1000 + RNG.normal(0, 5, 6)) for m in (512, 256)})
    nanos = levels("nanos", {m: list(10_000 + RNG.normal(0, 50, 6)) for m in (512, 256)})
    v = judge(every_level(), pd.concat([docker, nanos]))
    assert v.verdict == HOLDS and v.n == 12
    assert "each at a 97.50% interval (2 values)" in v.reason  # 1 - 0.05/2: two chances to contradict it


def test_a_level_nothing_measured_is_named_and_the_measured_levels_decide():
    docker = levels("docker", {512: list(1000 + RNG.normal(0, 5, 6)), 64: [np.nan] * 6}, status={64: "failed"})
    nanos = levels("nanos", {m: list(10_000 + RNG.normal(0, 50, 6)) for m in (512, 64)})
    v = judge(every_level(), pd.concat([docker, nanos]))
    assert v.verdict == HOLDS and "not measurable at memory_mb=64" in v.reason
    gone = levels("docker", {64: [np.nan] * 6}, status={64: "failed"})
    v = judge(every_level(), pd.concat([gone, levels("nanos", {64: [1.0] * 6})]))
    assert v.verdict == NOT_MEASURABLE and v.reason.startswith("at memory_mb=64:")


def test_a_claim_at_every_level_asks_for_what_its_least_settled_level_needs():
    docker = levels("docker", {512: list(1000 + RNG.normal(0, 5, 6)), 256: [1000.0] * 6})
    nanos = levels("nanos", {512: list(10_000 + RNG.normal(0, 50, 6)), 256: [2800, 3500, 3000, 3400, 2900, 3300]})
    v = judge(every_level(), pd.concat([docker, nanos]))
    assert v.verdict == INCONCLUSIVE and "Shown: memory_mb=256" in v.reason
    assert v.repetitions_to_settle and v.repetitions_to_settle > 6
    # Counted as n is (both levels' values): the level's own need at its share of them, which make
    # settle turns back into the run's repetitions that level needs.
    from edgebench.drivers.settle import repetitions_wanted
    level = judge(dataclasses.replace(every_level(), conditions=parse_conditions("memory_mb=256")),
                  pd.concat([docker, nanos]), confidence=1 - 0.05 / 2)
    assert v.n == 12 and v.repetitions_to_settle == 2 * level.repetitions_to_settle
    assert repetitions_wanted(6, v.n, v.repetitions_to_settle) == max(7, level.repetitions_to_settle)


def test_each_names_one_column():
    for bad in ("", "memory_mb|threads", "a.memory_mb"):
        c = dataclasses.replace(every_level(), conditions={"each": bad})
        with pytest.raises(ConfigError, match="name one column whose every value the claim covers"):
            claims.check_claim(c)


# -- a minimum found at a runtime's floor is "at most" ---------------------------------------------

def floor_rows(runtime: str, app: str, values, bound: str) -> pd.DataFrame:
    return rows(runtime, values, metric="min_memory", unit="MiB", app=app).assign(bound=bound)


def test_a_minimum_at_the_floor_is_an_upper_bound_not_a_need():
    below = Claim("P002-98", "002", "Fig. 4", "", "", "min_memory", "min_memory", "unikraft", "",
                  conditions=parse_conditions("app=nginx|redis;each=app"), kind="below", high=6.2, better="lower",
                  unit="MiB")
    at_floor = pd.concat([floor_rows("unikraft", "nginx", [12] * 3, "runtime floor"),
                          floor_rows("unikraft", "redis", [92, 96, 92], "bisected")])
    v = judge(below, at_floor)
    # nginx at most 12 MiB says nothing about 6.2; Redis's 92 MiB contradicts the claim alone.
    assert v.verdict == CONTRADICTED and "not measurable at app=nginx" in v.reason
    assert "unikraft at its floor: at most 12 MiB" in v.reason
    low_floor = floor_rows("unikraft", "nginx", [4] * 3, "runtime floor")  # at most 4: under 6.2 whatever it is
    assert judge(dataclasses.replace(below, conditions={"app": "nginx"}), low_floor).verdict == HOLDS
    # Two runtimes: a floor is the runtime's, not the app's; those pairs are left out.
    native_less = Claim("P001-98", "001", "", "", "", "min_memory", "min_memory", "native", "docker",
                        kind="direction", better="lower", unit="MiB")
    both = pd.concat([floor_rows("native", "nginx", [4] * 3, "runtime floor"),
                      floor_rows("docker", "nginx", [6] * 3, "runtime floor")])
    v = judge(native_less, both)
    assert v.verdict == NOT_MEASURABLE and "native at its floor: at most 4 MiB" in v.reason
    bisected = pd.concat([both, floor_rows("native", "go-http", [10, 11, 10], "bisected"),
                          floor_rows("docker", "go-http", [14, 15, 14], "bisected")])
    v = judge(native_less, bisected)
    assert v.verdict == HOLDS and v.n == 3  # go-http's pairs alone


def test_a_verdict_on_rows_measured_while_the_device_was_busy_says_how_many():
    docker, nanos = rows("docker", 1500 + RNG.normal(0, 10, 6)), rows("nanos", 100 + RNG.normal(0, 1, 6))
    quiet = judge(claim("ratio_range", low=13, high=18), pd.concat([docker, nanos]))
    busy = pd.concat([docker.assign(health=["busy,unknown", "", "busy", "", "throttled", ""]),
                      nanos.assign(health=["busy", "", "unknown", "", "", ""])])
    v = judge(claim("ratio_range", low=13, high=18), busy)
    assert v.verdict == quiet.verdict == HOLDS and (v.effect, v.ci_low) == (quiet.effect, quiet.ci_low)
    assert v.reason.endswith("; 33% of its rows were measured while the device was busy or throttled "
                             "(their health column)")  # 4 of 12 ("unknown" is not a mark)
    sizes = pd.concat([rows("native", [4.6e6], unit="bytes"), rows("docker", [7e6], unit="bytes")])
    sizes["health"] = "busy"  # a size read from a file: the device's load does not change it
    assert "busy" not in judge(claim("direction", a="native", b="docker", better="lower"), sizes).reason
