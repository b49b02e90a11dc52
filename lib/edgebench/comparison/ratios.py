"""Each runtime's median as a ratio to native's at the same point of the same run, and how to
read a ratio: which way is better for its metric, and in words ("12% slower").

What a point is, per experiment, is its record's `key_columns` (edgebench.experiments.reading).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from edgebench.experiments import EXPERIMENTS
from edgebench.experiments.reading import Headline
from edgebench.plotting.tables import mark_emulated, too_coarse
from edgebench.tools import sanity

BASELINE = "native"
# Every experiment's coordinates, for rows of an experiment without a record (a folder under data/
# from an older name): each column once, in the registry's order.
ALL_KEY_COLUMNS = tuple(dict.fromkeys(c for e in EXPERIMENTS.values() for c in e.key_columns))
# Of the key columns, the ones that may name the runtime's own variant rather than a point native
# shares: the network path (Docker's bridge, native's loopback), a network benchmark's point, which
# is the runtime and its mode ("docker (bridge)", "host"), and Docker's network mode (services,
# home automation, face recognition: native has none). A runtime's row is compared with native's
# at the same values where native was measured there (a failed native row counts: then there is no
# ratio); where native never was, and native has exactly one variant at the other coordinates,
# with that one (`native_variant` says which).
VARIANT_COLUMNS = ("network", "point", "network_mode")
# What a point's label names bare besides metric and unit; the rest of a key reads `name=value`.
_BARE_KEYS = ("app", "protocol")
RUN_KEYS = ["experiment", "target", "run_id"]
RESULT_COLUMNS = ["n", "median", "native_n", "native_median", "ratio", "native_variant", "why"]
# For a metric no headline names (metrics="all"): rates are better higher; times, latencies,
# sizes, faults and counts lower.
_HIGHER_IS_BETTER = re.compile(r"per_s|per_second|throughput|rate|mops|iops|rps", re.IGNORECASE)
# A level bigger than the device (the papers' rich 8 CPUs / 2048 MB on a 2-core, 1 GiB board) runs
# at the device's size, and the row's limits_note says so (experiments.common.resolve_limits). Its
# point is named by the level asked for, so the same level lines up across devices.
_CLIPPED = {"cpus": re.compile(r"\bcpus ([\d.]+) clipped to the target's"),
            "memory_mb": re.compile(r"\bmemory ([\d.]+) MiB clipped to the target's")}


def key_columns_of(experiment: str) -> tuple[str, ...]:
    known = EXPERIMENTS.get(experiment)
    return known.key_columns if known and known.key_columns else ALL_KEY_COLUMNS


def headline(experiment: str, metric: str) -> Headline:
    """The experiment's word on its metric, or the direction its name implies."""
    known = EXPERIMENTS.get(experiment)
    return (known.headline_metrics.get(metric) if known else None) or Headline(bool(_HIGHER_IS_BETTER.search(metric)))


def verdict(ratio: float, how: Headline) -> str:
    """'12% slower', '3.1x faster', 'as native': the ratio read in the metric's direction. For a
    rate, 0.8 is 20% slower; for a time, 1.25 is 25% slower (the convention of
    plotting/container_overhead's overhead_pct)."""
    if ratio is None or not np.isfinite(ratio) or ratio <= 0:
        return ""
    worse = ratio < 1 if how.higher_is_better else ratio > 1
    factor = max(ratio, 1 / ratio)
    word = how.worse if worse else how.better
    if factor >= 2:
        return f"{factor:.1f}x {word}"
    pct = abs(ratio - 1) * 100
    return "as native" if pct < 0.5 else f"{pct:.0f}% {word}"


def canonical(value) -> str:
    """One spelling per coordinate value, so 2, 2.0 and '2' match and missing is ''."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        f = float(value)
    else:
        text = str(value).strip()
        try:
            f = float(text)
        except ValueError:
            return text
    if math.isnan(f):
        return ""
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else f"{f:g}"


def canonical_series(values: pd.Series) -> pd.Series:
    """canonical() of every value, computed once per distinct value."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    canon = np.array([canonical(u) for u in uniques] + [""], dtype=object)  # code -1 (missing) -> ""
    return pd.Series(canon[codes], index=values.index, dtype=object)


def key_labels(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """'go-http, fair, scenario=rich, cpus=2': the coordinates besides metric and unit."""
    labels = pd.Series("", index=df.index, dtype=object)
    for k in keys:
        if k in ("metric", "unit"):
            continue
        v = df[k].astype(str)
        part = (v if k in _BARE_KEYS else k + "=" + v).where(v != "", "")
        labels = labels.where(part == "", labels.where(labels == "", labels + ", ") + part)
    return labels


def ratios_to_native(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (experiment, run, runtime, coordinates) besides native: the runtime's median
    over its ok repetitions (`n` of them), native's at the same coordinates in the same run, and
    their ratio. Where native has no value there, `ratio` is NaN and `why` says why."""
    run = [c for c in RUN_KEYS if c in df.columns]
    if df.empty:
        return pd.DataFrame(columns=run + ["runtime", *[c for c in ALL_KEY_COLUMNS if c in df.columns], "key",
                                           *RESULT_COLUMNS])
    df = mark_emulated(df)
    groups = df.groupby("experiment", sort=False, dropna=False) if "experiment" in df.columns else [("", df)]
    parts, keys = [], []
    for experiment, rows in groups:
        its_keys = [c for c in key_columns_of(experiment) if c in df.columns]
        parts.append(_experiment_ratios(rows, run, its_keys, experiment))
        keys += [c for c in its_keys if c not in keys]
    out = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True, sort=False)
    out = out.reindex(columns=run + ["runtime", *keys, "key", *RESULT_COLUMNS])
    out[keys] = out[keys].fillna("")  # a coordinate of another experiment: none on this one's rows
    return out


def _experiment_ratios(df: pd.DataFrame, run: list[str], keys: list[str], experiment: str) -> pd.DataFrame:
    """ratios_to_native of one experiment's rows, on its coordinates."""
    work = df[run + ["runtime", "status", "value"]].copy()
    for c in run + ["runtime"]:
        work[c] = work[c].astype(str)
    for c in keys:
        work[c] = canonical_series(df[c])
    for c, asked in asked_levels(df).items():
        if c in keys:
            work[c] = asked.where(asked != "", work[c])
    if "network" in keys:  # a VM's forwarded port differs at every launch: not a coordinate
        work["network"] = work["network"].str.replace(r"(?<=tcp::)\d+", "<port>", regex=True)
    known = EXPERIMENTS.get(experiment)
    for metric, columns in (known.results_in_keys.items() if known else ()):
        for c in (c for c in columns if c in keys):
            work.loc[(df["metric"] == metric).to_numpy(), c] = ""
    ok = work[(work["status"] == "ok") & work["value"].notna()]
    at = run + keys
    med = ok.groupby(at + ["runtime"], sort=False)["value"].agg(median="median", n="count").reset_index()
    native = (med[med["runtime"] == BASELINE].drop(columns="runtime")
              .rename(columns={"median": "native_median", "n": "native_n"}))
    out = med[med["runtime"] != BASELINE].merge(native, on=at, how="left")
    out["native_variant"] = ""
    measured = work[work["runtime"] == BASELINE][at].drop_duplicates()  # failed rows too
    there = np.array(out[at].merge(measured.assign(_there=True), on=at, how="left")["_there"].notna())
    variants = [c for c in VARIANT_COLUMNS if c in keys]
    if variants and not there.all():
        fixed = [c for c in at if c not in variants]
        renamed = {v: f"_native_{v}" for v in variants}
        # Native's coordinates where it has exactly one variant at the others.
        single = measured[measured.groupby(fixed)[variants[0]].transform("size") == 1].rename(columns=renamed)
        todo = (out[~there].drop(columns=["native_median", "native_n"]).reset_index()
                .merge(single, on=fixed, how="inner")
                .merge(native.rename(columns=renamed), on=fixed + list(renamed.values()), how="left"))
        if not todo.empty:
            idx = todo["index"].to_numpy()
            out.loc[idx, "native_median"] = todo["native_median"].to_numpy()
            out.loc[idx, "native_n"] = todo["native_n"].to_numpy()
            natives_at = todo.drop(columns=variants).rename(columns={v: k for k, v in renamed.items()})
            out.loc[idx, "native_variant"] = key_labels(natives_at, variants).to_numpy()
            there[idx] = True
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = out["median"] / out["native_median"]
    out["ratio"] = ratio.where(np.isfinite(ratio))
    out["why"] = np.select([out["ratio"].notna(), ~there, out["native_median"].isna()],
                           ["", "native has no row at this point", "native failed at this point"],
                           "native median is 0")
    # A time printed in hundredths, a few hundredths long: the ratio would be the rounding's.
    coarse = [why if pd.notna(n) else "" for why, n in zip(too_coarse(out, experiment), out["native_median"])]
    out["why"] = out["why"].where([not c for c in coarse], coarse)
    out["ratio"] = out["ratio"].where(out["why"] == "")
    out["key"] = key_labels(out, keys)
    return out[run + ["runtime", *keys, "key", *RESULT_COLUMNS]]


def asked_levels(df: pd.DataFrame) -> dict[str, pd.Series]:
    """Per limit column, the level each row asked for where the device's size clipped it ('' where
    it did not)."""
    if "limits_note" not in df.columns:
        return {}
    notes = df["limits_note"].fillna("").astype(str)
    return {c: canonical_series(notes.str.extract(rx, expand=False)) for c, rx in _CLIPPED.items()}


def ruled_out(ratios: pd.DataFrame) -> pd.DataFrame:
    """Ratios physics rules out (edgebench.tools.sanity: a container far ahead of native on compute
    work, same kernel) are blanked, with the reason in `why`, instead of passed on as findings."""
    if ratios.empty or "benchmark" not in ratios.columns:
        return ratios
    out = ratios.copy()
    for i, r in out[out["ratio"].notna()].iterrows():
        higher = headline(r["experiment"], r["metric"]).higher_is_better
        # A time of 0 against native's is no gain sanity can weigh (infinite): no rule applies.
        gain = r["ratio"] - 1 if higher else (1 / r["ratio"] - 1 if r["ratio"] > 0 else math.inf)
        why = sanity.container_ahead(str(r["runtime"]), str(r["benchmark"]), gain)
        if why:
            out.at[i, "ratio"] = np.nan
            out.at[i, "why"] = why
    return out


def headline_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Only each experiment's headline metrics (its record's headline_metrics), where they mean something."""
    if df.empty:
        return df
    keep = pd.Series(False, index=df.index)
    for exp in EXPERIMENTS.values():
        for metric, how in exp.headline_metrics.items():
            mask = (df["experiment"] == exp.name) & (df["metric"] == metric)
            for col, value in how.where:
                mask &= (canonical_series(df[col]) == value) if col in df.columns else False
            keep |= mask
    return df[keep]
