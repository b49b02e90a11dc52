"""The standard profile measures every point a claim reads often enough for an interval, and the
plan's estimate follows the repetitions the profile makes.

A claim (data/reference/claims.csv) gets a 95% interval only from claims.MIN_N values per side;
a point measured fewer times can never be judged on it, whatever it measured. The repetitions are
read from each experiment's own record as `make figures` makes it (`Params(profile="standard")`,
which connects to nothing): its parsed `reps`, or `reps_at(conditions)` where the record repeats
some points more than others (io_bound and cpu_bound: each protocol its own count).
"""

from __future__ import annotations

import pytest

from edgebench import claims
from edgebench.drivers import plan
from edgebench.experiments import EXPERIMENTS, http_load

STANDARD = {"profile": "standard"}


@pytest.fixture(scope="module")
def judged() -> list[claims.Claim]:
    """The claims the engine judges on rows: those naming an experiment and a metric."""
    return [c for c in claims.load_claims() if c.experiment and c.metric]


@pytest.fixture(scope="module")
def repeated(judged) -> list[claims.Claim]:
    """Of those, the ones that need an interval: sizes are read once and exactly (static
    footprint), where one value is the value."""
    return [c for c in judged if c.unit not in claims.EXACT_UNITS]


def standard_record(experiment: str):
    """The experiment's record with the standard profile's settings, as make figures makes it."""
    return EXPERIMENTS[experiment].params(STANDARD)


def repetitions_at(record, conditions: dict[str, str]) -> int | None:
    """How many times the record measures the points matching `conditions`; None when it does
    not repeat its points at all (no `reps`)."""
    reps_at = getattr(record, "reps_at", None)
    if reps_at is not None:
        return reps_at(conditions)
    return getattr(record, "reps", None)


def sides(claim: claims.Claim) -> list[tuple[str, str, dict[str, str]]]:
    """(side, runtime, conditions) of each side the claim reads."""
    return [(side, runtime, claims.conditions_for(claim, side))
            for side, runtime in (("a", claim.a), ("b", claim.b)) if runtime]


def test_the_catalogue_has_claims_to_check(judged, repeated):
    assert {c.experiment for c in repeated} >= {"io_bound", "cpu_bound", "container_overhead"}
    assert all(c.experiment in EXPERIMENTS for c in judged), sorted({c.experiment for c in judged} - set(EXPERIMENTS))


def test_every_point_a_claim_reads_gets_enough_repetitions_for_an_interval_in_standard(repeated):
    short = []
    for c in repeated:
        record = standard_record(c.experiment)
        for side, runtime, conditions in sides(c):
            n = repetitions_at(record, conditions)
            if n is None or n < claims.MIN_N:
                where = ";".join(f"{k}={v}" for k, v in conditions.items()) or "every point"
                short.append(f"{c.claim_id} ({c.experiment} {c.metric}, {side}={runtime} at {where}): "
                             + ("measured once, no repetitions" if n is None else f"{n} repetitions"))
    assert not short, (f"the standard profile gives these claims' points fewer than {claims.MIN_N} repetitions, "
                       "so they never get an interval:\n" + "\n".join(short))


def test_the_repetitions_come_from_the_experiments_settings(monkeypatch):
    """Not restated here: lower a profile's setting and the derivation sees it."""
    io = standard_record("io_bound")
    assert io.reps_at({"protocol": "published"}) == http_load.REPETITIONS["standard"]["published"]
    monkeypatch.setitem(http_load.REPETITIONS, "standard", {"fair": 1, "published": 1})
    assert repetitions_at(standard_record("io_bound"), {"protocol": "published"}) == 1
    # A count given to the notebook is every protocol's; a protocol not run has none.
    assert EXPERIMENTS["io_bound"].params({**STANDARD, "repetitions": 4}).reps_at({}) == 4
    assert EXPERIMENTS["io_bound"].params({**STANDARD, "protocols": "fair"}).reps_at({"protocol": "published"}) == 0
    assert repetitions_at(standard_record("iomt"), {"workload": "lzw"}) == standard_record("iomt").reps


def test_http_load_repeats_no_protocol_more_than_the_one_the_claims_read(judged):
    """Only what the claims read is raised: no claim reads fair's rows (each cell of which also runs
    five open-loop rates), so it keeps its one run per cell."""
    read = {conditions.get("protocol") for c in judged if c.experiment in ("io_bound", "cpu_bound")
            for _, _, conditions in sides(c)}
    for name in ("io_bound", "cpu_bound"):
        record = standard_record(name)
        assert record.reps == max(record.protocol_reps.values())
        for protocol in record.protocol_names:
            if protocol not in read:
                assert record.protocol_reps[protocol] <= record.protocol_reps["published"], (name, protocol)


# -- the plan follows the repetitions -----------------------------------------------------------

RUNTIMES = ["native", "docker"]


def test_the_http_load_plan_counts_each_protocols_own_repetitions():
    for name in ("io_bound", "cpu_bound"):
        record = standard_record(name)
        work = EXPERIMENTS[name].plan_work(record, RUNTIMES)
        cells = len(record.asked) * len(record.app_names)
        assert work.points == cells * sum(record.protocol_reps.values()) * len(RUNTIMES)
        once = EXPERIMENTS[name].plan_work({**STANDARD, "repetitions": 1}, RUNTIMES)
        extra_runs = cells * (sum(record.protocol_reps.values()) - len(record.protocol_names))
        assert work.points - once.points == extra_runs * len(RUNTIMES)
        # each extra run: a start, the warm-up, the measured seconds and the second after it that
        # checks the service still answers, in each runtime; no open loop
        load = record.load
        window_s = load.warmup_s + load.duration_s
        assert work.seconds - once.seconds >= extra_runs * len(RUNTIMES) * (window_s + http_load.AFTER_RUN_S)
        assert work.window_s - once.window_s == pytest.approx(extra_runs * len(RUNTIMES) * window_s)
        assert work.repetitions == record.reps and work.protocol_reps == record.protocol_reps


def test_the_plan_counts_no_point_for_a_pair_the_sweep_leaves_out():
    """The standard plan said 240 points for cpu_bound where the run measured 200: node-http on
    Unikraft and on the Linux VM is left out before the sweep counts, and so in the plan."""
    record = standard_record("cpu_bound")
    per_pair = len(record.asked) * sum(record.protocol_reps.values())
    work = EXPERIMENTS["cpu_bound"].plan_work(record, ["native", "unikraft", "linux-vm"])
    assert work.points == per_pair * (2 + 1 + 1)  # native both apps; unikraft and linux-vm go-http only
    iomt = EXPERIMENTS["iomt"]
    assert iomt.plan_work(STANDARD, ["native", "unikraft"]).points == iomt.plan_work(STANDARD, ["native"]).points


@pytest.mark.parametrize("name", [n for n, e in EXPERIMENTS.items() if "repetitions" in e.parameters.cell_fields()])
def test_every_experiments_standard_plan_grows_with_its_repetitions(name):
    exp = EXPERIMENTS[name]
    few = exp.plan_work({**STANDARD, "repetitions": 3}, RUNTIMES)
    more = exp.plan_work({**STANDARD, "repetitions": 6}, RUNTIMES)
    assert more.points == 2 * few.points and more.seconds > few.seconds and more.repetitions == 6


def test_make_plan_prints_each_notebooks_estimate_with_its_repetitions_and_a_total(tmp_path):
    plans = [plan.make_plan(e.notebook_path, dict(STANDARD), RUNTIMES, data_dir=tmp_path) for e in EXPERIMENTS.values()]
    text = plan.table(plans)
    lines = text.splitlines()
    for p in plans:
        assert p.basis == "model" and p.estimate_s == pytest.approx(p.work.seconds)  # no history in tmp_path
        line = next(x for x in lines if x.startswith(p.notebook))
        assert f"~{plan.duration(p.estimate_s):>8}" in line, line
    io = next(p for p in plans if p.experiment == "io_bound")
    record = standard_record("io_bound")
    assert "reps " + ", ".join(f"{k} {n}" for k, n in record.protocol_reps.items()) in io.line()
    assert lines[-1].startswith("total") and plan.duration(sum(p.estimate_s for p in plans)) in lines[-1]
