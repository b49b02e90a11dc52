"""The claims catalogue against itself: every claim a metric can judge holds on rows made at the
paper's own printed numbers (its `published` column), and each of those numbers lies inside the
claim's band, not on its edge. A claim whose paper prints no number for one side is exempt, and
named so here (EXEMPT), never silently."""

from __future__ import annotations

import csv
import functools
import math
import re

import numpy as np
import pandas as pd
import pytest
from edgebench import claims
from conftest import need
from edgebench.claims import HOLDS, Claim
from edgebench.provisioning.shared_fixtures import SHARED_DIR

BAND_KINDS = ("ratio_range", "within", "below", "above")
# Claims with an experiment and a metric whose paper prints no number for one side (or none at
# all): no `published`, and their statement says "not printed".
EXEMPT = {
    "P000-11",  # Docker's timeouts
    "P000-14", "P000-23",  # Figs. 6 and 8's standard deviations
    "P000-19",  # Node.js /io Docker at 256 MB
    "P000-25", "P000-35", "P000-37",  # Node.js Docker or Nanos at 64/128 MB
    "P000-29", "P000-30", "P000-31", "P000-32",  # Figs. 10-11's Go Nanos values
    "P000-38",  # Fig. 13
    "P001-02",  # the sharp drop at 1000T (Table 2 shows none)
    "P001-22",  # native's time per device I/O
    "P001-27",  # OOM kills' memory
    "P002-01", "P002-02",  # Unikraft's image sizes (Figs. 1-2's bars)
    "P003-05", "P003-06", "P003-11",  # NPB times
    "P003-15",  # STREAM's EDPs
    "P000-46", "P000-53",  # Docker's latencies in Figs. 8 and 13
    "P000-47", "P000-51",  # Figs. 8 and 13's standard deviations
    "P000-52", "P000-54",  # Fig. 12's Docker values
    "P002-25",  # a Linux VM's total boot
    "P003-36", "P003-37",  # average power (no power is printed)
}
REPS = 5


@functools.cache
def _published_column() -> dict[str, tuple[float, ...]]:
    """claims.csv's `published`, read apart from load_claims: each value a float, `|` between cells."""
    with open(claims.CLAIMS_FILE, newline="") as f:
        return {r["claim_id"]: tuple(float(v) for v in r["published"].split("|")) if r["published"].strip() else ()
                for r in csv.DictReader(f)}


def published(claim: Claim) -> tuple[float, ...]:
    """The claim's `published` values, as load_claims reads them (the first test checks that
    against the file)."""
    return tuple(claim.published)


def judged(c: Claim) -> bool:
    return bool(c.experiment and c.metric and c.kind != "failure")


CATALOGUE = claims.load_claims()
WITH_PUBLISHED = [c for c in CATALOGUE if judged(c) and published(c)]


def _margin(value: float, band: tuple[float, float]) -> float:
    """Distance from value to the band's nearest finite edge."""
    return min(abs(value - e) for e in band if math.isfinite(e))


def _spread(value: float, band: tuple[float, float]) -> float:
    """A relative spread the claim tolerates: 1%, or a tenth of the way to the band's nearest edge."""
    return min(0.01, 0.1 * _margin(value, band) / abs(value))


def _one_value(conditions: dict[str, str]) -> dict[str, str]:
    """Conditions as row cells: `k=v1|v2` takes its first value."""
    return {k: v.split("|")[0].strip() for k, v in conditions.items()}


def _cell_conditions(c: Claim, side: str, cell: int) -> dict[str, str]:
    """A cell's row cells: the claim's conditions at their first value, and for a claim at every
    value of a column (`each=`) the cell's own value of it (the i-th listed, else the cell's number)."""
    cells = _one_value(claims.conditions_for(c, side))
    column = c.conditions.get(claims.EACH)
    if column:
        listed = [v.strip() for v in c.conditions.get(column, "").split("|") if v.strip()]
        cells[column] = listed[cell] if cell < len(listed) else str(cell)
    return cells


def rows_at_published(c: Claim) -> pd.DataFrame:
    """Rows at the paper's values: per published value (a cell), REPS repetitions of b at a base
    value and a at base x value (or a alone at the value for a bound), each cell with its own rep
    numbers so cells never pair, with a small spread; a claim at every value of a column has each
    cell at its own value of it."""
    band = claims.band(c)
    frames = []
    for cell, value in enumerate(published(c)):
        s = _spread(value, band)
        reps = [100 * (cell + 1) + k for k in range(REPS)]
        a_factors = 1 + s * np.array([-1, -0.5, 0, 0.5, 1])
        b_factors = 1 + s * np.array([0.5, -1, 0, 1, -0.5])
        sides = [("a", c.a, (100.0 * value if c.b else value) * a_factors)]
        if c.b:
            sides.append(("b", c.b, 100.0 * b_factors))
        for side, runtime, values in sides:
            frames.append(pd.DataFrame({"metric": c.metric, "runtime": runtime, "value": values, "unit": c.unit,
                                        "status": "ok", "error": None, "rep": reps,
                                        **_cell_conditions(c, side, cell)}))
    return pd.concat(frames, ignore_index=True)


def test_the_catalogue_loads_with_its_published_column():
    with open(claims.CLAIMS_FILE, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames[-1] == "published"
        ids = [r["claim_id"] for r in reader]
    assert [c.claim_id for c in CATALOGUE] == ids
    assert {c.claim_id: tuple(c.published) for c in CATALOGUE} == _published_column()


def test_each_kind_has_what_its_rule_needs():
    """What load_claims will refuse (a `within` without `high`, a direction without `better`), and
    each band kind's ends."""
    for c in CATALOGUE:
        assert c.better in ("", "lower", "higher"), c.claim_id
        if c.kind == "direction":
            assert c.better, c.claim_id
        if c.kind in ("within", "below"):
            assert c.high is not None and c.high > 0, c.claim_id
        if c.kind == "above":
            assert c.low is not None, c.claim_id
        if c.kind == "ratio_range":
            assert c.low is not None and c.high is not None and c.low < c.high, c.claim_id
        if c.metric:
            assert c.experiment and c.better and c.unit, c.claim_id


def test_published_is_given_where_a_metric_judges_and_the_exempt_are_named():
    assert all(not published(c) for c in CATALOGUE if not judged(c))
    exempt = {c.claim_id for c in CATALOGUE if judged(c) and not published(c)}
    assert exempt == EXEMPT
    for c in CATALOGUE:
        if c.claim_id in EXEMPT:
            assert "not printed" in c.statement, c.claim_id


def test_a_band_says_its_tolerance_and_where_published_comes_from():
    for c in CATALOGUE:
        if c.kind in BAND_KINDS:
            assert "Tolerance:" in c.statement, c.claim_id
            if published(c):
                assert "Published:" in c.statement, c.claim_id


@pytest.mark.parametrize("c", WITH_PUBLISHED, ids=lambda c: c.claim_id)
def test_the_papers_values_lie_strictly_inside_the_band(c):
    low, high = claims.band(c)
    for value in published(c):
        assert low < value < high, f"{c.claim_id}: published {value} not strictly inside [{low}, {high}]"


@pytest.mark.parametrize("c", WITH_PUBLISHED, ids=lambda c: c.claim_id)
def test_rows_at_the_papers_values_hold(c):
    df = rows_at_published(c)
    v = claims.judge(c, df)
    assert v.verdict == HOLDS, f"{c.claim_id}: {v}"
    assert v.n == REPS * len(published(c))


# -- every quote is the paper's own words ---------------------------------------------------------

def _as_read(text: str) -> str:
    """A paper's text as a quote is compared with it: typographic quotes and dashes as plain ones,
    words split over a line joined, every run of white space one space, lower case."""
    for fancy, plain in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u2013", "-"),
                         ("\u2014", "-")):
        text = text.replace(fancy, plain)
    text = re.sub(r"-\s*\n\s*", "", text)
    return re.sub(r"\s+", " ", text).strip().lower()


def test_every_quote_is_verbatim_in_its_paper():
    papers_dir = SHARED_DIR / "papers"
    texts = {p.name[:3]: _as_read(p.read_text()) for p in sorted(papers_dir.glob("0*.txt"))}
    need("papers", None if texts else f"no paper texts in {papers_dir} (the shared folder beside the project)")
    assert set(texts) == {"000", "001", "002", "003", "004"}
    # Paper 001's long version (004) holds its short version's words too.
    where = {paper: [texts[paper]] + ([texts["004"]] if paper == "001" else []) for paper in texts}
    not_found = [(c.claim_id, c.quote) for c in CATALOGUE
                 if not any(_as_read(c.quote) in text for text in where[c.paper])]
    assert not not_found, f"quotes that are not their paper's words: {not_found}"
    assert _as_read("a made-up sentence no paper prints") not in texts["000"]
