"""The papers' published numbers (data/reference/*.csv), in the results' column names."""

from __future__ import annotations

import pandas as pd

from edgebench.paths import REFERENCE_DIR

# To bytes/ms, so published and measured values share an axis. The papers print "MB" without
# saying decimal or binary; sizes are compared in decimal MB, as `docker images` prints them.
_TO_BASE = {"MB": ("bytes", 1e6), "KB": ("bytes", 1e3), "GB": ("bytes", 1e9), "bytes": ("bytes", 1),
            "ms": ("ms", 1.0), "s": ("ms", 1000.0), "us": ("ms", 1e-3)}


# Beside the published values, not among them: the papers' conclusions (edgebench.claims).
NOT_VALUES = {"claims.csv"}


def load_reference(experiment: str | None = None) -> pd.DataFrame:
    """Every published value for an experiment, with `value_base`/`unit_base` normalised."""
    frames = [pd.read_csv(p) for p in sorted(REFERENCE_DIR.glob("*.csv")) if p.name not in NOT_VALUES]
    df = pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame()
    if experiment is not None and not df.empty:
        df = df[df["experiment"] == experiment].copy()
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    conv = df["unit"].map(lambda u: _TO_BASE.get(u, (u, 1.0)))
    df["unit_base"] = conv.map(lambda c: c[0])
    df["value_base"] = df["value"] * conv.map(lambda c: c[1])
    return df.reset_index(drop=True)
