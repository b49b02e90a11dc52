"""The papers' conclusions as measurable statements, and the one rule per kind of statement that
turns a run's rows into a verdict with its 95% interval.

data/reference/claims.csv holds one row per conclusion (its README says how they were chosen):
the runtimes compared (`a`, and `b` unless it is a bound on `a` alone), the rows it is about
(`experiment`, `metric`, `conditions` as key=value filters) and its kind:

- ratio_range: median(a) / median(b) lies in [low, high] ("13x-18x").
- direction: a is better than b, `better` saying whether lower or higher values are.
- within: a within the fraction `high` of b (5% -> 0.05): the ratio lies in [1 - high, 1 + high].
- below / above: a's median is below `high` / above `low`, in `unit`.
- failure: a keeps working where b fails (rows ok against rows failed).

The effect is a ratio a/b (or a's median for a bound), paired by repetition where the runtimes
interleave (rows sharing `rep` and every coordinate), with a 95% bootstrap interval
(scipy.stats.bootstrap). The verdict compares the interval, not the point, with the claim:
`holds` when all of it satisfies the claim, `contradicted` when none of it does, `inconclusive`
when it straddles the claim's edge (with the repetitions that would likely settle it, from the
observed spread: an interval narrows as 1/sqrt(n)), and `not measurable here` with the reason
when the rows cannot say (none, all failed, VMs under TCG, an emulated device's clock).
"""

from __future__ import annotations

import csv
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from edgebench.errors import ConfigError
from edgebench.paths import REFERENCE_DIR
from edgebench.results import NOT_MEASURABLE as ROW_NOT_MEASURABLE

CLAIMS_FILE = REFERENCE_DIR / "claims.csv"
KINDS = ("ratio_range", "direction", "within", "below", "above", "failure")
HOLDS, CONTRADICTED, INCONCLUSIVE, NOT_MEASURABLE = "holds", "contradicted", "inconclusive", "not measurable here"
# What an emulated device still measures: sizes and counts (not times, rates or energy).
UNTIMED_UNITS = {"bytes", "MB", "MiB", "count", "faults"}
# What is read, not timed: one value is the value (static footprint measures each size once).
EXACT_UNITS = {"bytes"}
CONFIDENCE = 0.95
MIN_N = 3  # fewer values give no interval worth the name (two values' bootstrap is just their range)
RESAMPLES = 2000
SEED = 35  # the same rows give the same interval
# Coordinates two runtimes' rows share when they were measured as a pair (the sweep interleaves
# runtimes within a repetition); whichever of them a run has.
PAIR_KEYS = ("rep", "app", "protocol", "scenario", "cpus", "memory_mb", "endpoint", "workload", "size", "input_size",
             "cache", "service", "machine", "benchmark", "operation", "test", "point", "network_mode", "array_mib",
             "total", "npb_class", "threads", "files")


@dataclass(frozen=True)
class Claim:
    claim_id: str
    paper: str
    where: str
    quote: str
    statement: str
    experiment: str
    metric: str
    a: str
    b: str
    conditions: dict = field(default_factory=dict)
    kind: str = "direction"
    low: float | None = None
    high: float | None = None
    better: str = ""
    unit: str = ""


@dataclass(frozen=True)
class Verdict:
    claim_id: str
    paper: str
    verdict: str
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    reason: str = ""
    repetitions_to_settle: int | None = None


def _number(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def parse_conditions(text: str) -> dict[str, str]:
    """'app=go-http;memory_mb=64' -> {'app': 'go-http', 'memory_mb': '64'}."""
    out = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise ConfigError(f"condition {part!r}: write key=value")
        out[key.strip()] = value.strip()
    return out


def load_claims(path: Path = CLAIMS_FILE) -> list[Claim]:
    if not Path(path).exists():
        raise ConfigError(f"no claims catalogue at {path}")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    claims = []
    for r in rows:
        kind = r["kind"].strip()
        if kind not in KINDS:
            raise ConfigError(f"{path.name} {r['claim_id']}: kind {kind!r} unknown; use one of {', '.join(KINDS)}")
        claims.append(Claim(r["claim_id"], r["paper"], r["where"], r["quote"], r["statement"], r["experiment"],
                            r["metric"], r["a"].strip(), r["b"].strip(), parse_conditions(r["conditions"]), kind,
                            _number(r["low"]), _number(r["high"]), r["better"].strip(), r["unit"].strip()))
    return claims


# -- the rows a claim is about ---------------------------------------------------------------

def conditions_for(claim: Claim, side: str) -> dict[str, str]:
    """The claim's conditions for side 'a' or 'b': the shared ones, with `a.key=...` / `b.key=...`
    (a runtime against itself: 256 MB against 512 MB) over them for that side only."""
    out = {k: v for k, v in claim.conditions.items() if not k.startswith(("a.", "b."))}
    out.update({k[2:]: v for k, v in claim.conditions.items() if k.startswith(f"{side}.")})
    return out


def _equal(column: pd.Series, value: str) -> pd.Series:
    try:
        return pd.to_numeric(column, errors="coerce") == float(value)
    except ValueError:
        return column.astype(str) == value


def _any_of(rows: pd.DataFrame, key: str, value: str) -> pd.Series:
    """Rows whose `key` is one of `value`'s `|`-separated values."""
    keep = pd.Series(False, index=rows.index)
    for one in value.split("|"):
        keep |= _equal(rows[key], one.strip())
    return keep


def matching(df: pd.DataFrame, claim: Claim, runtime: str, side: str = "a") -> pd.DataFrame:
    """The claim's rows of one runtime (every status): its metric under its conditions for that
    side; `key=v1|v2` takes rows with any of the values."""
    rows = df[(df["metric"] == claim.metric) & (df["runtime"] == runtime)]
    for key, value in conditions_for(claim, side).items():
        if key not in rows.columns:
            return rows.iloc[0:0]
        rows = rows[_any_of(rows, key, value)]
    return rows


def _not_in_run(df: pd.DataFrame, claim: Claim, runtime: str, side: str) -> str:
    """Why a run has no rows for a claim's side: the runtime, the metric or the condition it left out
    (a quick profile's smaller sizes), named with what the run has instead."""
    rows = df[df["runtime"] == runtime]
    if rows.empty:
        return f"this run has no {runtime} rows (left out of its runtimes, or not reached)"
    rows = rows[rows["metric"] == claim.metric]
    if rows.empty:
        return f"this run has no {claim.metric} rows of {runtime}"
    for key, value in conditions_for(claim, side).items():
        if key not in rows.columns:
            return f"this run's rows have no {key}"
        keep = _any_of(rows, key, value)
        if not keep.any():
            seen = ", ".join(sorted({str(v) for v in rows[key].dropna()}))
            return f"this run did not measure {runtime} at {key}={value} (it has {seen or 'none'})"
        rows = rows[keep]
    return f"no {runtime} rows for it in this run"


def _why_missing(rows: pd.DataFrame, runtime: str, df: pd.DataFrame, claim: Claim, side: str) -> str:
    if rows.empty:
        return _not_in_run(df, claim, runtime, side)
    if (rows["status"] == "ok").any():
        return f"{runtime}'s rows for it hold no value"
    errors = rows.loc[rows["status"] != "ok", "error"].dropna()
    errors = errors[errors.astype(str) != ""]
    common = errors.value_counts().index[0] if not errors.empty else "no ok row"
    # A device without a power meter did not fail: its rows say "not measurable", and so does this.
    unmeasurable = (rows["status"] == ROW_NOT_MEASURABLE).all()
    return f"every {runtime} row {'is not measurable here' if unmeasurable else 'failed'} ({common})"


def _emulated(rows: pd.DataFrame) -> str:
    """Why these rows time nothing real, or ''."""
    if "accelerator" in rows.columns and (rows["accelerator"].astype(str) == "tcg").any():
        return "its VM ran under TCG (software emulation): its times measure the emulator"
    return ""


# -- the effect and its interval -----------------------------------------------------------------

def _interval(samples: tuple[np.ndarray, ...], statistic, paired: bool) -> tuple[float, float]:
    if any(len(s) < MIN_N for s in samples):
        return math.nan, math.nan
    if all(np.all(s == s[0]) for s in samples):  # no spread: the interval is the point
        value = statistic(*samples)
        return value, value
    with warnings.catch_warnings():  # a resample without spread is expected, and harmless
        warnings.simplefilter("ignore")
        result = stats.bootstrap(samples, statistic, paired=paired, vectorized=False, n_resamples=RESAMPLES,
                                 confidence_level=CONFIDENCE, method="percentile", random_state=SEED)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_ratios(a: pd.DataFrame, b: pd.DataFrame, apart: set[str] = frozenset()) -> np.ndarray | None:
    """a/b per pair of rows that share a repetition and every coordinate but those the claim sets
    apart for each side (`apart`); None if they do not pair."""
    keys = [k for k in PAIR_KEYS if k in a.columns and k in b.columns and k not in apart]
    if "rep" not in keys:
        return None
    joined = a[keys + ["value"]].merge(b[keys + ["value"]], on=keys, suffixes=("_a", "_b"))
    joined = joined[(joined["value_b"] != 0) & np.isfinite(joined["value_a"]) & np.isfinite(joined["value_b"])]
    if len(joined) < 2 or len(joined) < min(len(a), len(b)) / 2:
        return None
    return (joined["value_a"] / joined["value_b"]).to_numpy(float)


def ratio_effect(a: pd.DataFrame, b: pd.DataFrame,
                 apart: set[str] = frozenset()) -> tuple[float, float, float, int, bool]:
    """(effect, low, high, n, paired): the median of paired ratios a/b, else median(a)/median(b)."""
    ratios = paired_ratios(a, b, apart)
    if ratios is not None:
        effect = float(np.median(ratios))
        low, high = _interval((ratios,), np.median, paired=False)
        return effect, low, high, len(ratios), True
    va, vb = a["value"].to_numpy(float), b["value"].to_numpy(float)
    effect = float(np.median(va) / np.median(vb))
    low, high = _interval((va, vb), lambda x, y: np.median(x) / np.median(y), paired=False)
    return effect, low, high, min(len(va), len(vb)), False


def median_interval(values) -> tuple[float, float]:
    """The 95% bootstrap interval of the median of repeated measurements (NaN for fewer than
    MIN_N): what every table beside a median gives, by the verdicts' rule."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < MIN_N:
        return math.nan, math.nan
    if np.all(v == v[0]):
        return float(v[0]), float(v[0])
    result = stats.bootstrap((v,), np.median, vectorized=True, n_resamples=RESAMPLES, confidence_level=CONFIDENCE,
                             method="percentile", random_state=SEED)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def ratio_interval(a, b) -> tuple[float, float]:
    """The 95% bootstrap interval of median(a) / median(b), unpaired (NaN below MIN_N values on
    either side): what a table's ratio to native gives beside it."""
    va, vb = (np.asarray(x, dtype=float) for x in (a, b))
    va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
    if len(vb) and np.median(vb) == 0:
        return math.nan, math.nan
    return _interval((va, vb), lambda x, y: np.median(x) / np.median(y), paired=False)


def median_effect(a: pd.DataFrame) -> tuple[float, float, float, int]:
    va = a["value"].to_numpy(float)
    low, high = _interval((va,), np.median, paired=False)
    return float(np.median(va)), low, high, len(va)


# -- the rule of each kind -----------------------------------------------------------------------

def band(claim: Claim) -> tuple[float, float]:
    """The values of the effect that satisfy the claim, as [low, high] (inf where open)."""
    if claim.kind == "ratio_range":
        return claim.low, claim.high
    if claim.kind == "within":
        return 1 - claim.high, 1 + claim.high
    if claim.kind == "direction":  # strictly: equal is not better
        return (0.0, math.nextafter(1.0, 0.0)) if claim.better == "lower" else (math.nextafter(1.0, 2.0), math.inf)
    if claim.kind == "below":
        return -math.inf, claim.high
    if claim.kind == "above":
        return claim.low, math.inf
    raise ConfigError(f"{claim.claim_id}: no band for kind {claim.kind}")


def decide(low: float, high: float, effect: float, n: int, satisfying: tuple[float, float]) -> tuple[str, int | None]:
    """holds / contradicted / inconclusive from the interval against the band that satisfies the
    claim, and for inconclusive the repetitions that would likely settle it (None: it sits on the edge)."""
    lo_ok, hi_ok = satisfying
    if lo_ok <= low and high <= hi_ok:
        return HOLDS, None
    if high < lo_ok or low > hi_ok:
        return CONTRADICTED, None
    edges = [e for e in (lo_ok, hi_ok) if math.isfinite(e)]
    distance = min(abs(effect - e) for e in edges)
    half = (high - low) / 2
    if distance == 0 or half == 0:
        return INCONCLUSIVE, None
    return INCONCLUSIVE, max(n + 1, math.ceil(n * (half / distance) ** 2))


def judge(claim: Claim, df: pd.DataFrame | None, emulated_device: str = "") -> Verdict:
    """The verdict on one claim from one run's rows (None: the experiment has no run)."""
    base = dict(claim_id=claim.claim_id, paper=claim.paper)
    if not claim.experiment or not claim.metric:
        return Verdict(**base, verdict=NOT_MEASURABLE, reason="no edgebench experiment measures it")
    if df is None:
        return Verdict(**base, verdict=NOT_MEASURABLE, reason=f"no run of {claim.experiment} yet")
    a_all = matching(df, claim, claim.a, "a")
    b_all = matching(df, claim, claim.b, "b") if claim.b else None
    if claim.kind == "failure":
        return _judge_failure(claim, a_all, b_all, base, df)
    a = a_all[(a_all["status"] == "ok") & a_all["value"].notna()]
    b = b_all[(b_all["status"] == "ok") & b_all["value"].notna()] if b_all is not None else None
    for rows, every, name, side in ((a, a_all, claim.a, "a"), (b, b_all, claim.b, "b")):
        if rows is not None and rows.empty:
            return Verdict(**base, verdict=NOT_MEASURABLE, reason=_why_missing(every, name, df, claim, side))
    rows = pd.concat([a, b]) if b is not None else a
    emulated = _emulated(rows)
    if emulated_device and not set(rows["unit"].astype(str)) <= UNTIMED_UNITS:
        emulated = f"measured on an {emulated_device}: its times and rates are the emulator's"
    if emulated:
        return Verdict(**base, verdict=NOT_MEASURABLE, reason=emulated)
    if b is not None:
        apart = {k[2:] for k in claim.conditions if k.startswith(("a.", "b."))}
        effect, low, high, n, paired = ratio_effect(a, b, apart)
        how = f"{'paired' if paired else 'unpaired'} ratio {claim.a}/{claim.b}"
    else:
        effect, low, high, n = median_effect(a)
        how = f"median of {claim.a}"
    if math.isnan(low) and set(rows["unit"].astype(str)) <= EXACT_UNITS:
        low = high = effect  # a size read from a file or an image: measured once, exactly
    if math.isnan(low):
        return Verdict(**base, verdict=INCONCLUSIVE, effect=effect, n=n,
                       reason=f"{how} from n={n}: too few for an interval", repetitions_to_settle=MIN_N)
    verdict, settle = decide(low, high, effect, n, band(claim))
    return Verdict(**base, verdict=verdict, effect=effect, ci_low=low, ci_high=high, n=n, reason=how,
                   repetitions_to_settle=settle)


def _judge_failure(claim: Claim, a: pd.DataFrame, b: pd.DataFrame | None, base: dict, df: pd.DataFrame) -> Verdict:
    if a.empty or b is None or b.empty:
        missing, side = (claim.a, "a") if a.empty else (claim.b, "b")
        return Verdict(**base, verdict=NOT_MEASURABLE, reason=_not_in_run(df, claim, missing, side))
    a_ok, b_failed = (a["status"] == "ok").mean(), (b["status"] != "ok").mean()
    n = min(len(a), len(b))
    said = f"{claim.a} ok in {a_ok:.0%} of {len(a)}, {claim.b} failed in {b_failed:.0%} of {len(b)}"
    if a_ok == 1 and b_failed == 1:
        return Verdict(**base, verdict=HOLDS, effect=a_ok - (1 - b_failed), n=n, reason=said)
    if a_ok == 0 or b_failed == 0:
        return Verdict(**base, verdict=CONTRADICTED, effect=a_ok - (1 - b_failed), n=n, reason=said)
    return Verdict(**base, verdict=INCONCLUSIVE, effect=a_ok - (1 - b_failed), n=n, reason=said)


__all__ = ["Claim", "Verdict", "load_claims", "judge", "decide", "band", "ratio_effect", "paired_ratios",
           "matching", "parse_conditions", "KINDS", "HOLDS", "CONTRADICTED", "INCONCLUSIVE", "NOT_MEASURABLE"]
