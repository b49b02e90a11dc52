"""The papers' runtime/native ratios, in the measured rows' terms, and each measured ratio's
paper ratio beside it. Which published rows give one, and how they read, is each experiment's
`paper_rules` (edgebench.experiments.reading)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from edgebench.comparison.ratios import BASELINE, canonical_series, headline, key_columns_of
from edgebench.experiments import EXPERIMENTS
from edgebench.plotting.style import base_runtime
from edgebench.reference import load_reference

PAPER_COLUMNS = ["experiment", "runtime", "metric", "paper_ratio", "paper_low", "paper_high", "qualifier",
                 "source", "how"]


def _paper_label(row) -> str:
    return f"paper {str(row['paper'])[:3]}, {row['source']}"


def _number(v: float) -> str:
    return f"{v:g}"


def paper_ratios(experiment: str, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The papers' runtime/native ratios for `experiment`, in the measured rows' terms (its
    paper_rules): one row per runtime, metric and the coordinates the paper fixes (others ''; they
    match any).

    - Where a paper prints both native's value and another runtime's for the same keys: their
      ratio (qualifier `exact` only when both are).
    - A printed ratio against native (`slowdown_vs_native`) is taken as printed, and preferred to
      one computed from the same statement's rounded values.
    - `latency_increase_vs_native_pct` p: 1 + p/100; a printed range (10-20%) gives `paper_low`
      and `paper_high`, with `paper_ratio` the middle.
    - paper 003's `overhead_pct` p, "the container's performance loss (positive = slower or less
      throughput)" (data/reference/README.md), on the benchmark's headline metric: 1 - p/100 for a
      rate (throughput, best_rate, requests/s), 1 + p/100 for a time: the convention of
      plotting/container_overhead. For ab's 23.9% that reads requests/s x 0.761; the other reading,
      time per request x 1.239, would be requests/s x 0.807 (below 1% apart for the other rows).
    - Ratios against another runtime (`_vs_docker`), between memory levels (`throughput_drop_pct`)
      or without a native number on the same keys (paper 000: Docker and Nanos only) give none.
    """
    ref = load_reference(experiment) if reference is None else reference[reference["experiment"] == experiment]
    rules = EXPERIMENTS[experiment].paper_rules if experiment in EXPERIMENTS else ()
    found = []
    for rule in rules:
        sel = ref
        for col, value in rule.where.items():
            sel = sel[canonical_series(sel[col]) == value] if col in sel.columns else sel.iloc[0:0]
        sel = sel[sel["value"].notna() & sel["runtime"].notna()]
        if sel.empty:
            continue
        coords = {**{k: canonical_series(sel[p]) for p, k in rule.keys.items()}, **rule.to}
        rows = pd.DataFrame({"runtime": sel["runtime"].astype(str), **coords, "value": sel["value"].astype(float),
                             "qualifier": sel["qualifier"].fillna("exact").astype(str),
                             "source": sel.apply(_paper_label, axis=1)}, index=sel.index)
        cols = list(coords)
        if rule.kind == "value":
            base = rows[rows["runtime"] == BASELINE].groupby(cols)
            native = base["value"].agg(["first", "nunique"]).rename(columns={"first": "native"})
            native["native_q"] = base["qualifier"].first()
            native = native[native["nunique"] == 1].drop(columns="nunique").reset_index()
            rows = rows[rows["runtime"] != BASELINE].merge(native, on=cols, how="inner")
            rows["ratio"] = rows["value"] / rows["native"]
            rows["how"] = [f"{r.runtime} {_number(r.value)} / native {_number(r.native)}" for r in rows.itertuples()]
            rows["qualifier"] = np.where((rows["qualifier"] == "exact") & (rows["native_q"] == "exact"),
                                         "exact", "approximate")
        elif rule.kind == "ratio":
            rows["ratio"] = rows["value"]
            rows["how"] = [f"printed: {_number(v)}x native" for v in rows["value"]]
        elif rule.kind == "increase_pct":
            rows["ratio"] = 1 + rows["value"] / 100
            rows["how"] = [f"printed: {_number(v)}% above native" for v in rows["value"]]
        elif rule.kind == "overhead_pct":
            higher = headline(experiment, rule.to["metric"]).higher_is_better
            rows["ratio"] = 1 - rows["value"] / 100 if higher else 1 + rows["value"] / 100
            rows["how"] = [f"printed: overhead {_number(v)}% -> {'1 - p' if higher else '1 + p'}"
                           for v in rows["value"]]
        else:
            raise ValueError(f"unknown PaperRule kind {rule.kind!r}")
        rows["printed"] = rule.kind != "value"
        found.append(rows[["runtime", *cols, "ratio", "qualifier", "source", "how", "printed"]])
    if not found:
        return pd.DataFrame(columns=PAPER_COLUMNS)
    allr = pd.concat(found, ignore_index=True, sort=False)
    keys = [c for c in key_columns_of(experiment) if c in allr.columns]
    allr[keys] = allr[keys].fillna("")
    # A printed ratio wins over one computed from the same statement's rounded values.
    allr = allr[allr["printed"] | ~allr.groupby(["runtime", *keys])["printed"].transform("any")]
    out = []
    for (runtime, *values), g in allr.groupby(["runtime", *keys], sort=False):
        low, high = g["ratio"].min(), g["ratio"].max()
        ranged = len(g) > 1 and high > low
        out.append(dict(zip(["runtime", *keys], [runtime, *values]), experiment=experiment,
                        paper_ratio=(low + high) / 2 if ranged else low, paper_low=low, paper_high=high,
                        qualifier="range" if ranged else g["qualifier"].iloc[0],
                        source="; ".join(dict.fromkeys(g["source"])), how="; ".join(g["how"])))
    return pd.DataFrame(out).reindex(columns=PAPER_COLUMNS + [k for k in keys if k != "metric"])


def with_paper(ratios: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """`ratios` with the most specific paper ratio whose coordinates match each row (paper_ratio,
    paper_low, paper_high, paper_qualifier, paper_source); an emulated VM's label ("nanos (TCG)")
    gets its runtime's."""
    out = ratios.copy()
    for col in ("paper_ratio", "paper_low", "paper_high"):
        out[col] = np.nan
    out["paper_qualifier"] = out["paper_source"] = ""
    if out.empty or paper.empty:
        return out
    runtimes = out["runtime"].map(base_runtime)
    best = np.full(len(out), -1)
    for p in paper.itertuples(index=False):
        p = p._asdict()
        mask = ((out["experiment"] == p["experiment"]) & (out["metric"] == p["metric"])
                & (runtimes == p["runtime"])).to_numpy()
        fixed = [k for k in key_columns_of(p["experiment"])
                 if k != "metric" and isinstance(p.get(k), str) and p[k] != ""]
        for k in fixed:
            mask = mask & ((out[k] == p[k]).to_numpy() if k in out.columns else False)
        mask = mask & (len(fixed) > best)
        if mask.any():
            best[mask] = len(fixed)
            out.loc[mask, ["paper_ratio", "paper_low", "paper_high"]] = [p["paper_ratio"], p["paper_low"],
                                                                        p["paper_high"]]
            out.loc[mask, "paper_qualifier"] = p["qualifier"]
            out.loc[mask, "paper_source"] = p["source"]
    return out
