"""`make settle` (edgebench.drivers.settle): an inconclusive claim is measured again at its own points
only, as new repetitions of the same run, judged at the stricter interval of a look, and given up
with the reason where more repetitions cannot or may not decide it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pytest
from edgebench import claims
from edgebench.claims import CONFIDENCE, HOLDS, INCONCLUSIVE, Claim, Verdict, parse_conditions
from edgebench.drivers import settle as st
from edgebench.drivers import verdicts as drv
from edgebench.errors import ConfigError
from edgebench.experiments import time_to_ready
from edgebench.experiments.sweep import sweep
from edgebench.results import Run, load_meta, load_results, time_in_points

FACTS = {"target": "local", "hostname": "h", "arch": "x86_64", "cores": 2, "memory_mb": 1000, "kernel": "6.1"}
APPS = ["fast", "even"]  # not edgebench apps: no runtime is asked whether it runs them
# native/docker per repetition at "fast": three that leave "native is faster" open, then about 0.98
# (Docker 2% slower); at "even" they spread around equal.
FIRST_RATIOS = {1: 0.97, 2: 1.004, 3: 0.985}
EVEN_RATIOS = {1: 0.99, 2: 1.0, 3: 1.01}


@dataclass(frozen=True)
class Named:
    name: str


def sweep_into(run: Run, reps: int) -> list:
    seen = []

    def measure(p, row):
        moment = 100 + p.rep  # each repetition's own moment, shared by its pair
        ratio = FIRST_RATIOS.get(p.rep, 0.98 + 0.003 * np.sin(p.rep)) if p.inner == "fast" else EVEN_RATIOS[p.rep]
        run.add(metric="time_to_ready", value=moment * (ratio if p.runtime.name == "native" else 1.0),
                unit="ms", **row)
        seen.append((p.runtime.name, p.inner, p.rep))
    sweep(run, [Named("native"), Named("docker")], reps=reps, inner=APPS, row_for=lambda p: dict(
        runtime=p.runtime.name, rep=p.rep, app=p.inner, protocol="fair"), measure=measure,
        failed=("time_to_ready", "ms"), desc="ttr", progress=False)
    return seen


def first_run(tmp_path, reps: int = 3):
    with Run("time_to_ready", {"reps": reps, "target": "local", "profile": "quick"}, FACTS,
             data_dir=tmp_path) as run:
        run.meta["record"] = {"repetitions": 0}
        sweep_into(run, reps)
    return run.dir


class Measuring:
    """settle's `measure`, through the real resume machinery: the run reopened, its focus set, the
    sweep grown to `reps` (only the values are made here, not by a runtime)."""

    def __init__(self):
        self.calls, self.seen = [], []

    def __call__(self, experiment, run_dir, reps, focus, anyway):
        self.calls.append((run_dir.name, reps, focus))
        params = dict(load_meta(run_dir)["parameters"], reps=reps, focus=[list(f) for f in focus])
        with Run(experiment, params, FACTS, data_dir=run_dir.parent.parent, run_id=run_dir.name,
                 resume=True) as run:
            run.focus = focus
            self.seen += sweep_into(run, reps)
        return run_dir


def slower(app="fast") -> Claim:
    return Claim("P000-90", "000", "w", "q", "s", "time_to_ready", "time_to_ready", "native", "docker",
                 parse_conditions(f"app={app};protocol=fair"), "direction", better="lower")


def settling(tmp_path, **given) -> st.Settling:
    said = []
    s = st.Settling(data_dir=tmp_path, measure=given.pop("measure", Measuring()), say=said.append, **given)
    s.said = said
    return s


def test_an_inconclusive_claim_is_measured_again_at_its_points_only_until_it_holds(tmp_path):
    run_dir = first_run(tmp_path)
    s = settling(tmp_path)
    looks, given_up, before, after = st.settle([slower()], s)
    assert before.verdict.iloc[0] == INCONCLUSIVE and after.verdict.iloc[0] == HOLDS, (looks, given_up)
    # Only native and docker at "fast" were measured again, as repetitions 4 and on; "even" kept 3.
    assert {(rt, app) for rt, app, _ in s.measure.seen} == {("native", "fast"), ("docker", "fast")}
    assert min(rep for *_, rep in s.measure.seen) == 4
    rows = load_results(run_dir)
    assert rows[rows.app == "even"].rep.max() == 3 and rows[rows.app == "fast"].rep.max() == looks[-1].reps_after
    assert rows.groupby(["runtime", "app", "rep"]).size().max() == 1  # no point measured twice
    # Each look is judged at the stricter interval, and the run remembers the looks for make verdicts.
    assert looks and all(lk.confidence == claims.CONFIDENCE_OF_A_LOOK > CONFIDENCE for lk in looks)
    meta = load_meta(run_dir)
    assert meta["notes"][claims.LOOKS_NOTE] == {"P000-90": len(looks)}
    assert claims.confidence_for(meta, "P000-90") == claims.CONFIDENCE_OF_A_LOOK
    assert claims.confidence_for(meta, "x") == CONFIDENCE
    again = drv.verdicts([slower()], data_dir=tmp_path, figures_dir=tmp_path)  # make verdicts, after settle
    assert again.verdict.iloc[0] == HOLDS and "at a 98.75% interval" in again.reason.iloc[0]
    page = st.save(looks, given_up, before, after, 60, tmp_path / "out").read_text()
    assert "holds after" in page and "- none" in page


def test_a_claim_on_its_edge_is_not_measured_again_and_says_why(tmp_path):
    first_run(tmp_path)
    s = settling(tmp_path)
    looks, given_up, _, after = st.settle([slower("even")], s)  # a median ratio of exactly 1: on the edge
    assert after.verdict.iloc[0] == INCONCLUSIVE and looks == [] and s.measure.calls == []
    assert given_up["P000-90"].startswith("no difference to find")


def test_the_cap_and_the_budget_give_up_with_their_reasons(tmp_path):
    first_run(tmp_path)
    capped = settling(tmp_path, cap=4)
    _, given_up, _, after = st.settle([slower()], capped)  # 5 repetitions would be needed
    assert after.verdict.iloc[0] == INCONCLUSIVE and capped.measure.calls == []
    assert given_up["P000-90"] == ("no difference to find at this spread: the effect lies too near the claim's "
                                   "edge; about 5 repetitions would be needed, more than the cap of 4 (MAX_REPS)")
    wide = Verdict("P", "0", INCONCLUSIVE, effect=15, ci_low=11, ci_high=20, n=3, repetitions_to_settle=40)
    assert st.why_not_settled(wide, (13, 18), 3, 20).startswith("a spread wider than the band; about 40")
    broke = settling(tmp_path / "x", budget_s=0.0)
    first_run(tmp_path / "x")
    _, given_up, _, after = st.settle([slower()], broke)
    assert after.verdict.iloc[0] == INCONCLUSIVE and given_up["P000-90"].startswith("the time budget ran out")
    assert broke.measure.calls == []


def test_a_run_that_cannot_be_continued_is_given_up_not_crashed_on(tmp_path):
    first_run(tmp_path)

    def refuse(*_):
        raise ConfigError("cannot resume time_to_ready run r: the experiment's code changed")
    _, given_up, _, after = st.settle([slower()], settling(tmp_path, measure=refuse))
    assert after.verdict.iloc[0] == INCONCLUSIVE and "the experiment's code changed" in given_up["P000-90"]


def test_the_repetitions_wanted_follow_values_per_repetition():
    assert st.repetitions_wanted(3, 6, 20) == 10  # two values a repetition (two network modes)
    assert st.repetitions_wanted(3, 3, 4) == 4
    assert st.repetitions_wanted(5, 5, 2) == 6  # always at least one more


@pytest.mark.parametrize("text,seconds", [("2h", 7200), ("90m", 5400), ("1h30m", 5400), ("45s", 45), ("600", 600)])
def test_a_budget_reads_as_a_time(text, seconds):
    assert st.seconds_of(text) == seconds


def test_a_budget_or_cap_it_cannot_read_is_refused_before_anything_runs(capsys):
    assert st.main(["--budget", "2 hours"]) == 2 and "BUDGET='2 hours'" in capsys.readouterr().err
    assert st.main(["--max-reps", "2"]) == 2 and "MAX_REPS=2" in capsys.readouterr().err
    assert st.main(["--papers", "999"]) == 2


def test_a_look_noted_in_meta_counts_up(tmp_path):
    run_dir = first_run(tmp_path)
    st.note_looks(run_dir, ["A", "B"])
    st.note_looks(run_dir, ["A"])
    assert json.loads((run_dir / "meta.json").read_text())["notes"][claims.LOOKS_NOTE] == {"A": 2, "B": 1}


def test_the_points_a_repetition_adds_are_counted_from_the_first(tmp_path):
    run_dir = first_run(tmp_path)
    focus = st.focus_of([slower(), slower()])  # two claims on the same points: each point once
    assert focus == (("native", {"app": "fast", "protocol": "fair"}), ("docker", {"app": "fast",
                                                                                     "protocol": "fair"}))
    assert st.points_per_repetition(run_dir, focus) == 2
    n, seconds = time_in_points(run_dir)
    assert n == 12 and st.seconds_per_point(run_dir) == pytest.approx(seconds / 12)


def test_a_look_is_timed_by_the_points_it_measures_not_the_run_s_mean(tmp_path):
    """NPB's LU.A takes minutes a point where EP.S takes a second: the budget is checked against
    the focused points' own times."""
    run_dir = first_run(tmp_path)
    rows = load_results(run_dir)
    fast = set(rows[rows.app == "fast"].point_id)
    lines = []
    for line in (run_dir / "points.jsonl").read_text().splitlines():
        record = json.loads(line)
        took = 60 if record["point_id"] in fast else 1
        record["ended_at"] = (datetime.fromisoformat(record["started_at"]) + timedelta(seconds=took)).isoformat()
        lines.append(json.dumps(record))
    (run_dir / "points.jsonl").write_text("\n".join(lines) + "\n")
    assert st.seconds_per_point(run_dir, st.focus_of([slower()])) == pytest.approx(60)
    assert st.seconds_per_point(run_dir, st.focus_of([slower("even")])) == pytest.approx(1)
    assert st.seconds_per_point(run_dir) == pytest.approx(30.5)  # no focus: the run's mean
    # Two more repetitions of two points at 60 s each: 4 min, more than a 3 min budget holds.
    _, given_up, _, _ = st.settle([slower()], settling(tmp_path, budget_s=180.0))
    assert given_up["P000-90"].startswith("the time budget ran out: about 4 min more were needed")


def test_a_real_run_grows_its_focused_points_by_new_repetitions(cgroups_ready, no_leftovers):
    """time_to_ready on native and Docker, measured for real: settle's measure_again continues the
    completed run with two more repetitions of native's fair points only (only native is started),
    and the run's record takes the new count."""
    run_dir = time_to_ready.run(time_to_ready.Params(
        runtimes="native,docker", apps="go-http", repetitions=2, protocols="fair,published", caches="warm",
        profile="quick", progress=False, run_id=f"settle-{uuid.uuid4().hex[:8]}"))
    focus = (("native", {"app": "go-http", "protocol": "fair"}),)
    assert st.measure_again("time_to_ready", run_dir, 4, focus) == run_dir
    rows = load_results(run_dir)
    ready = rows[(rows.metric == "time_to_ready") & (rows.status == "ok")]
    assert sorted(ready[ready.protocol == "fair"].rep.unique()) == [1, 2, 3, 4]
    assert sorted(ready[ready.protocol == "published"].rep.unique()) == [1, 2]
    meta = load_meta(run_dir)
    assert meta["status"] == "completed" and meta["record"]["repetitions"] == 4
    assert meta["record"]["runtimes"] == "native,docker"  # the run's own, not the look's narrower choice
    assert sorted(ready[ready.runtime == "docker"].rep.unique()) == [1, 2]  # not a point it named
    assert meta["sittings"][-1]["more_repetitions"]["repetitions"] == 4


def test_ctrl_c_keeps_and_judges_what_was_measured_and_starts_nothing_more(tmp_path):
    run_dir = first_run(tmp_path)
    measuring = Measuring()

    def stopped_after_measuring(*args):
        measuring(*args)
        raise KeyboardInterrupt
    s = settling(tmp_path, measure=stopped_after_measuring)
    looks, given_up, _, after = st.settle([slower()], s)
    assert s.stopped and len(measuring.calls) == 1 and [lk.look for lk in looks] == [1]
    assert load_meta(run_dir)["notes"][claims.LOOKS_NOTE] == {"P000-90": 1}  # the look it took is counted
    assert after.verdict.iloc[0] == INCONCLUSIVE  # five repetitions do not settle it yet
    assert given_up["P000-90"] == "settle was stopped (Ctrl-C) before it was decided"


def test_the_looks_of_an_earlier_settle_count_so_a_claim_gets_three_in_all(tmp_path):
    """settle stopped and started again (a budget spread over sittings) does not start the count
    afresh: the correction allows LOOKS looks at a claim on a run in all."""
    run_dir = first_run(tmp_path)
    measuring = Measuring()

    def stopped_at_once(*args):  # Ctrl-C before a repetition was added: still inconclusive
        measuring.calls.append(args)
        raise KeyboardInterrupt
    for look in range(1, claims.LOOKS + 1):
        looks, *_ = st.settle([slower()], settling(tmp_path, measure=stopped_at_once))
        assert [lk.look for lk in looks] == [look]
    looks, given_up, _, after = st.settle([slower()], settling(tmp_path, measure=measuring))
    assert looks == [] and len(measuring.calls) == claims.LOOKS and after.verdict.iloc[0] == INCONCLUSIVE
    assert given_up["P000-90"].startswith(f"has had its {claims.LOOKS} looks on run {run_dir.name}")
    assert load_meta(run_dir)["notes"][claims.LOOKS_NOTE] == {"P000-90": claims.LOOKS}


def test_the_repetitions_of_a_run_from_its_record_or_its_rows(tmp_path):
    run_dir = first_run(tmp_path)
    assert st.repetitions_of(run_dir) == 3
    meta = json.loads((run_dir / "meta.json").read_text())
    for older in ({"repetitions": 3}, {}):  # a run before `reps` was recorded; one that recorded neither
        (run_dir / "meta.json").write_text(json.dumps(dict(meta, parameters=older)))
        assert st.repetitions_of(run_dir) == 3
