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

The effect is a ratio a/b (or a's median for a bound): the median of the ratios of rows measured
as a pair, sharing `rep` and every coordinate of the experiment both sides have a value in (a
coordinate only one side has, Docker's network mode, pairs each of its values with the other
side's row: cells of different scale are never pooled into one median). Where no rows pair, the
claim is not measurable here. A zero over a zero is 1 (equal), a value over zero is infinite. A
metric its tool prints in coarse steps (NPB's time, to 0.01 s) is read only at points where both
sides' medians are at least 100 steps (tools.sanity.below_resolution), the rest left out and said.
The interval is a 95% percentile bootstrap of that median (2000 resamples, a fixed seed). The
verdict compares the interval, not the point, with the claim:
`holds` when all of it satisfies the claim, `contradicted` when none of it does, `inconclusive`
when it straddles the claim's edge (with the repetitions that would likely settle it, from the
observed spread: an interval narrows as 1/sqrt(n)), and `not measurable here` with the reason
when the rows cannot say (none, all failed, VMs under TCG, an emulated device's clock).
"""

from __future__ import annotations

import csv
import math
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from edgebench.errors import ConfigError
from edgebench.experiments.min_memory import AT_THE_FLOOR
from edgebench.experiments.reading import READING, printed_of
from edgebench.paths import REFERENCE_DIR
from edgebench.results import NOT_MEASURABLE as ROW_NOT_MEASURABLE
from edgebench.tools.health import is_marked
from edgebench.tools.sanity import below_resolution, resolution_rule

CLAIMS_FILE = REFERENCE_DIR / "claims.csv"
KINDS = ("ratio_range", "direction", "within", "below", "above", "failure")
HOLDS, CONTRADICTED, INCONCLUSIVE, NOT_MEASURABLE = "holds", "contradicted", "inconclusive", "not measurable here"
# What an emulated device still measures: sizes and counts (not times, rates or energy).
UNTIMED_UNITS = {"bytes", "MB", "MiB", "count", "faults"}
# What is read, not timed: one value is the value (static footprint measures each size once).
EXACT_UNITS = {"bytes"}
CONFIDENCE = 0.95
# make settle looks at a claim again as its data grows; each look is judged at a stricter interval,
# Bonferroni over its looks and make verdicts' own (docs/verdicts.md), and a run notes the claims
# settle looked at (meta.json notes, LOOKS_NOTE) so every later judgement uses the same interval.
LOOKS = 3
CONFIDENCE_OF_A_LOOK = 1 - (1 - CONFIDENCE) / (LOOKS + 1)
LOOKS_NOTE = "settle_looks"
BETTER = ("lower", "higher")
TCG_WHY = "its VM ran under TCG (software emulation): its times measure the emulator"
MIN_N = 3  # fewer values give no interval worth the name (two values' bootstrap is just their range)
RESAMPLES = 2000
SEED = 35  # the same rows give the same interval
# The conditions' key that makes a claim universal: `each=memory_mb` holds only where it holds at
# every value of that column, each judged apart (never pooled into one interval).
EACH = "each"
# Not coordinates though every experiment's key columns name them: what a pair compares.
NOT_PAIRED_ON = ("metric", "unit")
# An experiment without a record pairs on every experiment's coordinates it has.
ALL_KEY_COLUMNS = tuple(dict.fromkeys(k for r in READING.values() for k in r.get("key_columns", ())))


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
    published: tuple[float, ...] = ()  # the effect the paper's own numbers give, per cell it spans


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


def _published(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in (text or "").split("|") if v.strip())


def load_claims(path: Path = CLAIMS_FILE) -> list[Claim]:
    if not Path(path).exists():
        raise ConfigError(f"no claims catalogue at {path}")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    claims = []
    for r in rows:
        claim = Claim(r["claim_id"], r["paper"], r["where"], r["quote"], r["statement"], r["experiment"],
                      r["metric"], r["a"].strip(), r["b"].strip(), parse_conditions(r["conditions"]),
                      r["kind"].strip(), _number(r["low"]), _number(r["high"]), r["better"].strip(),
                      r["unit"].strip(), _published(r.get("published", "")))
        check_claim(claim, Path(path).name)
        claims.append(claim)
    return claims


def check_claim(claim: Claim, where: str = "claims") -> None:
    """A claim the rules can read, or a ConfigError naming what to write."""
    name = f"{where} {claim.claim_id}"
    if claim.kind not in KINDS:
        raise ConfigError(f"{name}: kind {claim.kind!r} unknown; use one of {', '.join(KINDS)}")
    if claim.better not in ("", *BETTER) or (claim.kind == "direction" and claim.better not in BETTER):
        raise ConfigError(f"{name}: better={claim.better!r}; write lower or higher (which values are better)")
    each = claim.conditions.get(EACH)
    if each is not None and (not each or "|" in each or each.startswith(("a.", "b.")) or each == EACH):
        raise ConfigError(f"{name}: each={each!r}; name one column whose every value the claim covers "
                          "(each=memory_mb)")
    needs = {"ratio_range": ("low", "high"), "within": ("high",), "below": ("high",), "above": ("low",)}
    for end in needs.get(claim.kind, ()):
        if getattr(claim, end) is None:
            raise ConfigError(f"{name}: a {claim.kind} claim needs `{end}` (its band); without one no rows can "
                              "satisfy it: give the band, or leave experiment and metric empty")


def confidence_for(meta: dict, claim_id: str) -> float:
    """The interval a claim is judged at on a run: stricter once make settle has looked at it there."""
    looked = ((meta.get("notes") or {}).get(LOOKS_NOTE) or {}).get(claim_id, 0)
    return CONFIDENCE_OF_A_LOOK if looked else CONFIDENCE


# -- the rows a claim is about ---------------------------------------------------------------

def conditions_for(claim: Claim, side: str) -> dict[str, str]:
    """The claim's conditions for side 'a' or 'b': the shared ones, with `a.key=...` / `b.key=...`
    (a runtime against itself: 256 MB against 512 MB) over them for that side only."""
    out = {k: v for k, v in claim.conditions.items() if not k.startswith(("a.", "b.")) and k != EACH}
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
    return rows_where(df[(df["metric"] == claim.metric) & (df["runtime"] == runtime)], conditions_for(claim, side))


def rows_where(rows: pd.DataFrame, conditions: dict[str, str]) -> pd.DataFrame:
    """The rows that hold every condition (`key=v1|v2`: any of the values); none where a condition
    names a column the rows do not have."""
    for key, value in conditions.items():
        if key not in rows.columns:
            return rows.iloc[0:0]
        rows = rows[_any_of(rows, key, value)]
    return rows


# Conditions a reader meets most, in words (others read key=value).
PLAIN_CONDITIONS = {("protocol", "published"): "with the paper's own settings (protocol=published)",
                    ("protocol", "fair"): "with edgebench's fair limits, the same for every runtime (protocol=fair)"}


def _plain_condition(key: str, value: str) -> str:
    return PLAIN_CONDITIONS.get((key, value), f"at {key}={value}")


def _not_measurable_everywhere(df: pd.DataFrame, metric: str) -> str:
    """The reason every row of the metric, of every runtime, gives when none could be measured on
    this device (no power meter): the real cause, whatever the claim's own rows lack."""
    rows = df[df["metric"] == metric]
    if rows.empty or not (rows["status"] == ROW_NOT_MEASURABLE).all():
        return ""
    return _common_error(rows)


def _common_error(rows: pd.DataFrame) -> str:
    errors = rows.loc[rows["status"] != "ok", "error"].dropna().astype(str)
    errors = errors[errors != ""]
    return errors.value_counts().index[0] if not errors.empty else ""


def _not_in_run(df: pd.DataFrame, claim: Claim, runtime: str, side: str) -> str:
    """Why a run has no rows for a claim's side: the runtime, the metric or the condition it left out
    (a quick profile's smaller sizes), named with what the run has instead."""
    everywhere = _not_measurable_everywhere(df, claim.metric)
    if everywhere:
        return f"this device cannot measure {claim.metric} ({everywhere})"
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
            seen = sorted({str(v) for v in rows[key].dropna()})
            has = " or ".join(_plain_condition(key, v) for v in seen) or "nowhere"
            return f"this run did not measure {runtime} {_plain_condition(key, value)}; only {has}"
        rows = rows[keep]
    return f"no {runtime} rows for it in this run"


def _why_missing(rows: pd.DataFrame, runtime: str, df: pd.DataFrame, claim: Claim, side: str) -> str:
    if rows.empty:
        return _not_in_run(df, claim, runtime, side)
    if (rows["status"] == "ok").any():
        return f"{runtime}'s rows for it hold no value"
    common = _common_error(rows) or "no ok row"
    # A device without a power meter did not fail: its rows say "not measurable", and so does this.
    if (rows["status"] == ROW_NOT_MEASURABLE).all():
        return f"this device cannot measure it for {runtime} ({common})"
    return f"every {runtime} row failed ({common})"


def _emulated(rows: pd.DataFrame) -> str:
    """Why these rows time nothing real, or '' (sizes and counts are real under emulation too)."""
    if set(rows["unit"].astype(str)) <= UNTIMED_UNITS:
        return ""
    if "accelerator" in rows.columns and (rows["accelerator"].astype(str) == "tcg").any():
        return TCG_WHY
    return ""


# -- the effect and its interval -----------------------------------------------------------------

def median_bootstrap(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The percentile bootstrap interval of the median of `values` (NaN for fewer than MIN_N;
    the point where they do not spread). Its quantiles are order statistics, not interpolated, so
    an infinite ratio (a value over zero) gives an infinite end rather than NaN."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < MIN_N:
        return math.nan, math.nan
    if np.all(v == v[0]):
        return float(v[0]), float(v[0])
    rng = np.random.default_rng(SEED)
    medians = np.median(v[rng.integers(0, len(v), size=(RESAMPLES, len(v)))], axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(medians, [tail, 1 - tail], method="inverted_cdf")
    return float(low), float(high)


def _interval(samples: tuple[np.ndarray, ...], statistic, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The unpaired interval of statistic(*samples) (a ratio of two medians, for the tables)."""
    if any(len(s) < MIN_N for s in samples):
        return math.nan, math.nan
    if all(np.all(s == s[0]) for s in samples):  # no spread: the interval is the point
        value = statistic(*samples)
        return value, value
    with warnings.catch_warnings():  # a resample without spread is expected, and harmless
        warnings.simplefilter("ignore")
        result = stats.bootstrap(samples, statistic, paired=False, vectorized=False, n_resamples=RESAMPLES,
                                 confidence_level=confidence, method="percentile", random_state=SEED)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def ratios(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a/b, where 0/0 is 1 (the two are equal) and x/0 is infinite: no pair is dropped."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = a / b
    out[(a == 0) & (b == 0)] = 1.0
    return out


def pair_columns(experiment: str, a: pd.DataFrame, b: pd.DataFrame, apart: set[str] = frozenset()) -> list[str]:
    """What a pair shares: `rep`, and each coordinate of the experiment (its key columns) that both
    sides have values in, and values in common, but those the claim sets apart for each side. A
    coordinate only one side has is left out: each of its values pairs with the other side's row."""
    known = READING.get(experiment, {}).get("key_columns") or ALL_KEY_COLUMNS
    out = ["rep"] if "rep" in a.columns and "rep" in b.columns else []
    for key in dict.fromkeys(known):
        if key in NOT_PAIRED_ON or key in apart or key not in a.columns or key not in b.columns:
            continue
        ours, theirs = set(a[key].dropna().astype(str)), set(b[key].dropna().astype(str))
        if ours & theirs:
            out.append(key)
    return out


def paired_ratios(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """a/b of every pair of rows equal on `keys` (none when `rep` is not among them)."""
    if "rep" not in keys:
        return np.array([])
    left, right = (side[keys + ["value"]].assign(**{k: side[k].astype(str) for k in keys}) for side in (a, b))
    joined = left.merge(right, on=keys, suffixes=("_a", "_b"))
    return ratios(joined["value_a"], joined["value_b"])


def ratio_effect(a: pd.DataFrame, b: pd.DataFrame, keys: list[str],
                 confidence: float = CONFIDENCE) -> tuple[float, float, float, int]:
    """(effect, low, high, n): the median of the paired ratios a/b and its interval (n=0: none pair)."""
    values = paired_ratios(a, b, keys)
    if not len(values):
        return math.nan, math.nan, math.nan, 0
    low, high = median_bootstrap(values, confidence)
    return float(np.median(values)), low, high, len(values)


def median_interval(values) -> tuple[float, float]:
    """The 95% bootstrap interval of the median of repeated measurements (NaN for fewer than
    MIN_N): what every table beside a median gives, by the verdicts' rule."""
    v = np.asarray(values, dtype=float)
    return median_bootstrap(v[np.isfinite(v)])


def ratio_interval(a, b) -> tuple[float, float]:
    """The 95% bootstrap interval of median(a) / median(b), unpaired (NaN below MIN_N values on
    either side): what a table's ratio to native gives beside it."""
    va, vb = (np.asarray(x, dtype=float) for x in (a, b))
    va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
    if len(vb) and np.median(vb) == 0:
        return math.nan, math.nan
    return _interval((va, vb), lambda x, y: np.median(x) / np.median(y))


def median_effect(a: pd.DataFrame, confidence: float = CONFIDENCE) -> tuple[float, float, float, int]:
    va = a["value"].to_numpy(float)
    low, high = median_bootstrap(va, confidence)
    return float(np.median(va)), low, high, len(va)


# -- the rule of each kind -----------------------------------------------------------------------

def band(claim: Claim) -> tuple[float, float]:
    """The values of the effect that satisfy the claim, as [low, high] (inf where open)."""
    if claim.kind == "ratio_range":
        return claim.low, claim.high
    if claim.kind == "within":
        return 1 - claim.high, 1 + claim.high
    if claim.kind == "direction":  # strictly: equal is not better
        below_one, above_one = math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0)
        return (-math.inf, below_one) if claim.better == "lower" else (above_one, math.inf)
    if claim.kind == "below":
        return -math.inf, claim.high
    if claim.kind == "above":
        return claim.low, math.inf
    raise ConfigError(f"{claim.claim_id}: no band for kind {claim.kind}")


def _edge(e: float) -> float:
    """The edge as the claim reads it: a direction's strict edge next to 1 is 1."""
    return 1.0 if e in (math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0)) else e


def decide(low: float, high: float, effect: float, n: int, satisfying: tuple[float, float]) -> tuple[str, int | None]:
    """holds / contradicted / inconclusive from the interval against the band that satisfies the
    claim, and for inconclusive the repetitions that would likely settle it (None: the effect sits
    on an edge, or the interval is unbounded, so no number of repetitions can be promised)."""
    lo_ok, hi_ok = satisfying
    if lo_ok <= low and high <= hi_ok:
        return HOLDS, None
    if high < lo_ok or low > hi_ok:
        return CONTRADICTED, None
    return INCONCLUSIVE, repetitions_to_settle(low, high, effect, n, satisfying)


def repetitions_to_settle(low: float, high: float, effect: float, n: int,
                          satisfying: tuple[float, float]) -> int | None:
    """An interval narrows as 1/sqrt(n): the repetitions after which its side that crosses an edge
    would end short of it. Inside the band both crossed edges must be cleared; outside, the one
    between the effect and the band."""
    if not all(math.isfinite(x) for x in (low, high, effect)) or n < 1:
        return None
    lo_ok, hi_ok = satisfying
    crossed = [e for e in (_edge(lo_ok), _edge(hi_ok)) if math.isfinite(e) and low <= e <= high]
    if lo_ok <= effect <= hi_ok:
        to_clear = crossed
    else:
        to_clear = [min(crossed, key=lambda e: abs(effect - e))] if crossed else []
    factor = 0.0
    for e in to_clear:
        if e == effect:
            return None
        reach = high - effect if e > effect else effect - low
        factor = max(factor, reach / abs(effect - e))
    if factor == 0:
        return None
    return max(n + 1, math.ceil(n * factor ** 2))


def judge(claim: Claim, df: pd.DataFrame | None, emulated_device: str = "",
          confidence: float = CONFIDENCE, *, one_of_every: bool = False) -> Verdict:
    """The verdict on one claim from one run's rows (None: the experiment has no run), its interval
    at `confidence` (make settle's looks judge at a stricter one; `one_of_every`: one level of a
    claim at every level, whose reason says why its interval is stricter)."""
    base = dict(claim_id=claim.claim_id, paper=claim.paper)
    if not claim.experiment or not claim.metric:
        return Verdict(**base, verdict=NOT_MEASURABLE, reason="no edgebench experiment measures it")
    if df is None:
        return Verdict(**base, verdict=NOT_MEASURABLE, reason=f"no run of {claim.experiment} yet")
    if EACH in claim.conditions:
        return _judge_every(claim, df, emulated_device, confidence)
    a_all = matching(df, claim, claim.a, "a")
    b_all = matching(df, claim, claim.b, "b") if claim.b else None
    if claim.kind == "failure":
        return _judge_failure(claim, a_all, b_all, base, df)
    a = a_all[(a_all["status"] == "ok") & a_all["value"].notna()]
    b = b_all[(b_all["status"] == "ok") & b_all["value"].notna()] if b_all is not None else None
    a, b, floored = _without_floors(claim, a, b)
    a, b, coarse = _above_resolution(claim, a, b)
    for rows, every, name, side in ((a, a_all, claim.a, "a"), (b, b_all, claim.b, "b")):
        if rows is not None and rows.empty:
            return Verdict(**base, verdict=NOT_MEASURABLE,
                           reason=floored or coarse or _why_missing(every, name, df, claim, side))
    rows = pd.concat([a, b]) if b is not None else a
    emulated = _emulated(rows)
    if emulated_device and not set(rows["unit"].astype(str)) <= UNTIMED_UNITS:
        emulated = f"measured on an {emulated_device}: its times and rates are the emulator's"
    if emulated:
        return Verdict(**base, verdict=NOT_MEASURABLE, reason=emulated)
    if b is not None:
        keys = pair_columns(claim.experiment, a, b, {k[2:] for k in claim.conditions if k.startswith(("a.", "b."))})
        effect, low, high, n = ratio_effect(a, b, keys, confidence)
        if n == 0:
            return Verdict(**base, verdict=NOT_MEASURABLE,
                           reason=f"no paired rows: no {claim.a} and {claim.b} rows share a repetition at the same "
                                  f"{', '.join(k for k in keys if k != 'rep') or 'coordinates'}")
        how = f"median of {n} paired ratio{'s' if n != 1 else ''} {claim.a}/{claim.b}"
    else:
        effect, low, high, n = median_effect(a, confidence)
        how = f"median of {n} {claim.a} value{'s' if n != 1 else ''} ({claim.unit or 'its unit'})"
    if confidence != CONFIDENCE and not one_of_every:
        how += f", at a {confidence:.2%} interval (make settle's looks)"
    how += _marked_share(rows) + (f"; {coarse}" if coarse else "")
    if math.isnan(low) and set(rows["unit"].astype(str)) <= EXACT_UNITS:
        low = high = effect  # a size read from a file or an image: measured once, exactly
    if math.isnan(low):
        return Verdict(**base, verdict=INCONCLUSIVE, effect=effect, n=n, repetitions_to_settle=MIN_N,
                       reason=f"{how}: {MIN_N} are needed for an interval")
    verdict, settle = decide(low, high, effect, n, band(claim))
    return Verdict(**base, verdict=verdict, effect=effect, ci_low=low, ci_high=high, n=n, reason=how,
                   repetitions_to_settle=settle)


def _marked_share(rows: pd.DataFrame) -> str:
    """What share of a claim's timed rows the device was busy or throttled for (their `health`):
    said beside the verdict, which stands (the runtimes were interleaved, so they shared it)."""
    if "health" not in rows.columns or set(rows["unit"].astype(str)) <= UNTIMED_UNITS:
        return ""
    marked = rows["health"].map(is_marked)
    if not marked.any():
        return ""
    return (f"; {marked.mean():.0%} of its rows were measured while the device was busy or throttled "
            "(their health column)")


def _without_floors(claim: Claim, a: pd.DataFrame, b: pd.DataFrame | None) -> tuple:
    """The rows a claim can use, where some are minima found at the least a runtime accepts
    (min_memory's bound "runtime floor": the app needs at most that): a bound `below` the claim's
    limit still shows it; any other use would compare the runtime's floor, not the app's need.
    Returns (a, b, why rows were left out: '' when none)."""
    def floors(rows):
        if rows is None or "bound" not in rows.columns:
            return pd.Series(False, index=rows.index if rows is not None else [])
        return rows["bound"].astype(str) == AT_THE_FLOOR

    at_a, at_b = floors(a), floors(b)
    if not at_a.any() and not at_b.any():
        return a, b, ""
    if claim.kind == "below" and b is None:
        unusable = at_a & (a["value"] > claim.high)
    else:
        unusable = at_a
    left = [f"{claim.a} at its floor: at most {_shown(v)} {claim.unit}" for v in a.loc[unusable, "value"].unique()]
    if b is not None:
        left += [f"{claim.b} at its floor: at most {_shown(v)} {claim.unit}" for v in b.loc[at_b, "value"].unique()]
        b = b[~at_b]
    why = ("the runtime accepts no smaller limit, so the app's own need is not known here ("
           + "; ".join(left) + ")") if left else ""
    return a[~unusable], b, why


def _above_resolution(claim: Claim, a: pd.DataFrame, b: pd.DataFrame | None) -> tuple:
    """The rows a claim can use where its tool printed the metric in coarse steps (NPB's time to
    0.01 s): only points (a pair's coordinates but `rep`) where a's and b's medians are many steps
    long (tools.sanity.below_resolution). Returns (a, b, which points were left out: '' when none)."""
    printed = printed_of(claim.experiment, a).dropna()
    if printed.empty:
        return a, b, ""
    rule = printed.iloc[0]
    apart = {k[2:] for k in claim.conditions if k.startswith(("a.", "b."))}
    point = [k for k in (pair_columns(claim.experiment, a, b, apart) if b is not None else
                         [c for c in READING.get(claim.experiment, {}).get("key_columns", ()) if c in a.columns])
             if k != "rep"] or ["metric"]  # no coordinate: the claim's rows are one point

    def medians(rows):
        return rows.assign(**{k: rows[k].astype(str) for k in point}).groupby(point)["value"].median()

    both = pd.concat([medians(a), medians(b) if b is not None else medians(a)], axis=1)
    coarse = both.index[[bool(below_resolution(m, rule)) for m in both.to_numpy()]]
    if coarse.empty:
        return a, b, ""

    def kept(rows):
        at = pd.MultiIndex.from_frame(rows[point].astype(str)) if len(point) > 1 else rows[point[0]].astype(str)
        return rows[~pd.Index(at).isin(coarse)]

    why = f"{len(coarse)} of {len(both)} points left out as too coarse: {resolution_rule(rule)}"
    return kept(a), kept(b) if b is not None else None, why


def _shown(value) -> str:
    """A column's value as a reader writes it: 512 rather than 512.0, 10KB as it is."""
    try:
        return f"{float(value):g}"
    except ValueError:
        return str(value)


def _judge_every(claim: Claim, df: pd.DataFrame, emulated_device: str, confidence: float) -> Verdict:
    """A claim at every value of its `each` column: each value judged apart, at an interval made
    stricter for their number (Bonferroni: k values at 1 - (1 - confidence)/k), so that k chances
    to contradict it do not add up. Contradicted where any value contradicts it, holds where every
    value it could be judged at holds, inconclusive otherwise; the values nothing measured are
    named. The effect shown is the deciding value's (the contradicting one, the one nearest its
    band's edge, or the one needing the most repetitions)."""
    base = dict(claim_id=claim.claim_id, paper=claim.paper)
    column = claim.conditions[EACH]
    rows = matching(df, claim, claim.a, "a")
    if column not in rows.columns or rows[column].dropna().empty:
        return Verdict(**base, verdict=NOT_MEASURABLE,
                       reason=f"the claim holds at every {column}, and no {claim.a} row has a {column}: "
                              + (_why_missing(rows, claim.a, df, claim, "a") if rows.empty else "none to judge"))
    values = list(dict.fromkeys(rows[column].dropna().astype(str)))
    strict = 1 - (1 - confidence) / len(values)
    rest = {k: v for k, v in claim.conditions.items() if k != EACH}
    per = {v: judge(replace(claim, conditions={**rest, column: v}), df, emulated_device, strict, one_of_every=True)
           for v in values}
    judged = {v: x for v, x in per.items() if x.verdict != NOT_MEASURABLE}
    missing = [v for v in per if v not in judged]
    if not judged:
        first = per[missing[0]]
        return Verdict(**base, verdict=NOT_MEASURABLE, reason=f"at {column}={_shown(missing[0])}: {first.reason}")
    satisfying = band(claim)

    def margin(x: Verdict) -> float:
        ends = [x.ci_low - satisfying[0], satisfying[1] - x.ci_high]
        return min((e for e in ends if math.isfinite(e)), default=math.inf)

    verdicts = {x.verdict for x in judged.values()}
    if CONTRADICTED in verdicts:
        verdict, pick = CONTRADICTED, next(v for v, x in judged.items() if x.verdict == CONTRADICTED)
    elif verdicts == {HOLDS}:
        verdict, pick = HOLDS, min(judged, key=lambda v: margin(judged[v]))
    else:
        verdict = INCONCLUSIVE
        open_ = {v: x for v, x in judged.items() if x.verdict == INCONCLUSIVE}
        pick = max(open_, key=lambda v: math.inf if open_[v].repetitions_to_settle is None
                   else open_[v].repetitions_to_settle)
    settle = None
    total = sum(x.n for x in judged.values())
    if verdict == INCONCLUSIVE:
        # In the terms of `n` (every level's values together), as make settle reads it: the level
        # that needs the most, at the share of the values it has.
        needs = [math.ceil(x.repetitions_to_settle * total / x.n) if x.repetitions_to_settle and x.n else None
                 for x in judged.values() if x.verdict == INCONCLUSIVE]
        settle = None if None in needs else max(needs)

    def said(v: str, x: Verdict) -> str:
        interval = (f" {x.effect:.3g} [{x.ci_low:.3g}, {x.ci_high:.3g}]"
                    if x.ci_low is not None and math.isfinite(x.ci_low) else "")
        return f"{_shown(v)} {x.verdict}{interval}"

    settle_looks = " and make settle's looks" if confidence != CONFIDENCE else ""
    reason = (f"at every {column}, each at a {strict:.2%} interval ({len(values)} values{settle_looks}): "
              + "; ".join(said(v, x) for v, x in judged.items())
              + f". Shown: {column}={_shown(pick)}, {judged[pick].reason}")
    if missing:
        reason += (f"; not measurable at {column}={', '.join(_shown(v) for v in missing)}: "
                   f"{per[missing[0]].reason}")
    chosen = judged[pick]
    return Verdict(**base, verdict=verdict, effect=chosen.effect, ci_low=chosen.ci_low, ci_high=chosen.ci_high,
                   n=total, reason=reason, repetitions_to_settle=settle)


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


__all__ = ["Claim", "Verdict", "load_claims", "check_claim", "judge", "decide", "band", "ratio_effect",
           "paired_ratios", "pair_columns", "ratios", "median_bootstrap", "repetitions_to_settle", "matching",
           "rows_where", "parse_conditions", "confidence_for", "KINDS", "HOLDS", "CONTRADICTED", "INCONCLUSIVE",
           "NOT_MEASURABLE"]
