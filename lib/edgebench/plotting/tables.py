"""What every experiment's tables share: the rows that can be plotted, the spread of repeated
runs, emulated VMs kept apart, and the papers' values beside the measured ones."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from edgebench.errors import EdgebenchError
from edgebench.plotting.style import EMULATED, base_runtime, in_runtime_order


class NoData(EdgebenchError):
    """The results hold nothing to plot for this selection."""


def ok_rows(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Successful rows of one metric; none raises with why the failed ones failed, because a
    figure drawn from no data is a defect, not an empty plot."""
    sel = df[(df["metric"] == metric) & (df["status"] == "ok") & df["value"].notna()]
    if sel.empty:
        failed = df[(df["metric"] == metric) & (df["status"] == "failed")]
        why = "; ".join(sorted(set(failed["error"].astype(str))))[:500] if not failed.empty else "no rows"
        raise NoData(f"no successful '{metric}' measurements to plot ({why})")
    return sel


def spread(values: pd.Series) -> dict:
    """Median and quartiles of repeated runs: robust to the one slow run, never below the data."""
    v = values.dropna()
    q1, q3 = v.quantile(0.25), v.quantile(0.75)
    return {"n": len(v), "median": v.median(), "q1": q1, "q3": q3, "iqr": q3 - q1, "min": v.min(), "max": v.max()}


def sort_by_runtime(table: pd.DataFrame, by: list[str], ascending=True) -> pd.DataFrame:
    """Sort on `by`, the runtime column in the registry's order rather than alphabetically."""
    rank = {r: i for i, r in enumerate(in_runtime_order(table["runtime"]))}
    return table.sort_values(by, ascending=ascending, key=lambda c: c.map(rank) if c.name == "runtime" else c) \
        .reset_index(drop=True)


def mark_emulated(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of a VM that ran under software emulation get their own runtime label, "nanos (TCG)":
    they measure QEMU's emulator, not the unikernel on hardware virtualisation, and every table
    and figure keeps them apart."""
    if "accelerator" not in df.columns or df.empty:
        return df
    tcg = df["accelerator"].astype(str).str.lower().eq("tcg") & ~df["runtime"].str.endswith(EMULATED)
    if not tcg.any():
        return df
    df = df.copy()
    df.loc[tcg, "runtime"] = df.loc[tcg, "runtime"] + EMULATED
    return df


def reference_for(reference: pd.DataFrame, runtimes) -> pd.DataFrame:
    """The papers' values also under each emulated label, so "nanos (TCG)" shows the paper's
    Nanos number beside it (the paper ran on KVM: the gap is the emulator's)."""
    extra = [reference[reference["runtime"] == base_runtime(r)].assign(runtime=r)
             for r in dict.fromkeys(runtimes) if r != base_runtime(r)]
    return pd.concat([reference, *extra], ignore_index=True) if extra else reference


def beside_published(table: pd.DataFrame, reference: pd.DataFrame, metric: str, on: dict[str, str],
                     column: str, value: str = "value", scale: float = 1.0) -> pd.DataFrame:
    """`table` with the papers' `metric` as `column`, matched on `on` (reference column -> table
    column). One paper value per key: a repeated key would duplicate the measured rows."""
    reference = reference_for(reference, table["runtime"])
    ref = reference[reference["metric"] == metric][[*on, value]].rename(columns={**on, value: column})
    ref[column] = ref[column] * scale
    keys = list(on.values())
    for k in keys:  # the reference CSVs leave some keys empty; match like with like
        if k in table and pd.api.types.is_numeric_dtype(table[k]):
            ref[k] = pd.to_numeric(ref[k], errors="coerce")
    return table.merge(ref.drop_duplicates(keys), on=keys, how="left")


def run_notes(run_dir, df: pd.DataFrame | None = None) -> str:
    """What a reader needs before the numbers: runtimes that were not measured and why, and
    which VM rows ran under software emulation."""
    from edgebench.results import load_meta
    lines = []
    skipped = (load_meta(Path(run_dir)).get("notes") or {}).get("skipped_runtimes") or {}
    for name, why in skipped.items():
        lines.append(f"- **{name}** not measured: {why}")
    if df is not None and "accelerator" in df.columns:
        for rt, accels in df.dropna(subset=["accelerator"]).groupby("runtime")["accelerator"]:
            kinds = ", ".join(sorted(set(accels.astype(str))))
            emulated = " (labelled *" + rt + EMULATED + "*: software emulation, not comparable with the " \
                "paper's KVM numbers)" if "tcg" in kinds else ""
            lines.append(f"- **{rt}** ran with accelerator: {kinds}{emulated}")
    return "\n".join(lines) or "- Every runtime was measured."
