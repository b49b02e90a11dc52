"""Boot time, split (paper 002, Unikraft's Fig. 3): each runtime's start as consecutive phases on
the host's clock, and a VM's boot as the paper splits it (the VMM's part, the guest's part)
beside the page's numbers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edgebench.experiments.boot_time import EVENTS, Params
from edgebench.plotting.page import Page, open_page, said_if_nothing_measured, show_figure, show_findings, show_table
from edgebench.plotting.style import part_colours, plt
from edgebench.plotting.tables import (NoData, counted, draw_whiskers, interval, mark_emulated, ok_rows,
                                       sort_by_runtime, spread)
from edgebench.reference import load_reference
from edgebench.runtimes import RUNTIMES
from edgebench.runtimes.vm import VmRuntime

# What the time up to each event is spent on (a phase is named after the event it ends at).
PHASE_LABELS = {
    "firmware_start": "VMM start-up (to the firmware's first line)",
    "firmware_handover": "firmware (SeaBIOS, to its jump to the kernel)",
    "kernel_first_output": "kernel decompression and early set-up",
    "guest_init": "kernel boot (to /init)",
    "app_exec": "guest userspace (/init: modules, network)",
    "listen": "to listening (the app's start; a container's creation included)",
    "merged": "VMM, firmware and kernel early set-up (no firmware output to tell them apart)",
    "ready": "until the probe's first HTTP 200",
}
PHASE_COLOURS = dict(zip(PHASE_LABELS, part_colours(len(PHASE_LABELS))))
VM_RUNTIMES = {name for name, cls in RUNTIMES.items() if issubclass(cls, VmRuntime)}


def shown_as(phase: str, start: str) -> str:
    """A VM's first phase that runs from launch past the firmware (microvm: qboot prints
    nothing) is its own colour, not the kernel's."""
    return "merged" if start == "launch" and phase not in ("firmware_start", "listen", "ready") else phase


def variant(df: pd.DataFrame) -> pd.Series:
    """'linux-vm (TCG) microvm': the runtime label with the machine type where it has one."""
    machine = df["machine"].fillna("").astype(str) if "machine" in df else pd.Series("", index=df.index)
    return (df["runtime"] + " " + machine).str.strip()


START = ["app", "variant", "rep"]  # one start: its phases share these


def complete_starts(rows: pd.DataFrame) -> pd.DataFrame:
    """The phase rows of the starts that show their variant's usual chain of events, and only
    those: a start that missed an event (a go-http on Nanos without its listening line) has a
    phase from launch to ready where the others have two, and stacking medians over both kinds
    counts that time twice. The usual chain is the one most starts show (the longer on a tie).
    Adds `left_out`: how many starts of the variant showed another chain."""
    order = {name: i for i, name in enumerate(EVENTS)}
    chains = {key: tuple(sorted(zip(g["phase"], g["phase_from"]), key=lambda pf: order.get(pf[0], 99)))
              for key, g in rows.groupby(START)}
    by_variant: dict[tuple, list] = {}
    for key in chains:
        by_variant.setdefault(key[:2], []).append(key)
    keep, left_out = set(), {}
    for app_variant, keys in by_variant.items():
        counts = Counter(chains[k] for k in keys)
        usual = max(counts, key=lambda c: (counts[c], len(c)))
        kept = [k for k in keys if chains[k] == usual]
        keep.update(kept)
        left_out[app_variant] = len(keys) - len(kept)
    mask = [k in keep for k in zip(*(rows[c] for c in START))]
    out = rows[mask]
    return out.assign(left_out=[left_out[(a, v)] for a, v in zip(out["app"], out["variant"])])


def phase_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median ms per (app, runtime variant, phase), phases in boot order, with the phase each
    starts from, over the starts that show the variant's usual chain of events; beside them the
    median time to ready of the same starts (what the stacked bar should add up to), the median
    of those starts' totals (their phases' sum) with its interval (total_low_ms, total_high_ms:
    home_automation.interval()), and how many starts were left out for showing another chain."""
    rows = mark_emulated(df[df["metric"].str.startswith("phase_") & (df["status"] == "ok")])
    if rows.empty:
        ok_rows(df, "time_to_ready")  # raises with why the starts failed
        raise NoData("no boot phases to plot")
    rows = rows.assign(variant=variant(rows), phase=rows["metric"].str.removeprefix("phase_"))
    rows = complete_starts(rows)
    ready = mark_emulated(ok_rows(df, "time_to_ready"))
    ready = ready.assign(variant=variant(ready))
    kept = set(zip(*(rows[c] for c in START)))
    ready = ready[[k in kept for k in zip(*(ready[c] for c in START))]]
    ready = ready.groupby(["app", "variant"])["value"].median()
    totals = {key: (g.median(), *interval(g)) for key, g in
              rows.groupby(START)["value"].sum().groupby(level=["app", "variant"])}
    order = {name: i for i, name in enumerate(EVENTS)}
    out = []
    for (app, var, phase, start), g in rows.groupby(["app", "variant", "phase", "phase_from"]):
        s = spread(g["value"].astype(float))
        out.append({"app": app, "runtime": g["runtime"].iloc[0], "variant": var, "phase": phase, "phase_from": start,
                    "median_ms": s["median"], "ci95_low_ms": s["ci_low"], "ci95_high_ms": s["ci_high"],
                    "q1_ms": s["q1"], "q3_ms": s["q3"], "starts": s["n"],
                    "left_out": int(g["left_out"].iloc[0]),
                    "time_to_ready_ms": ready.get((app, var), np.nan),
                    **dict(zip(("total_ms", "total_low_ms", "total_high_ms"), totals[(app, var)])),
                    "order": order.get(phase, 99)})
    table = sort_by_runtime(pd.DataFrame(out), ["app", "runtime", "variant", "order"])
    return table.drop(columns="order")


def split_table(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Paper 002's split per VM variant (median ms of vmm_part, guest_part and total_boot with
    its interval over the starts, low_ms and high_ms: home_automation.interval(); or why
    missing), the page's numbers beside it (single published values: no interval)."""
    rows = mark_emulated(df[df["metric"].isin(["vmm_part", "guest_part", "total_boot"])])
    out = []
    if not rows.empty:
        rows = rows.assign(variant=variant(rows))
        for (app, var, metric), g in rows.groupby(["app", "variant", "metric"]):
            ok = g[g["status"] == "ok"]["value"].astype(float)
            why = "; ".join(sorted(set(g[g["status"] != "ok"]["error"].astype(str))))
            low, high = interval(ok)
            out.append({"source": "measured", "app": app, "variant": var, "metric": metric,
                        "median_ms": ok.median() if len(ok) else np.nan, "low_ms": low, "high_ms": high,
                        "starts": len(ok), "note": why})
    # A VM whose every start failed has no split rows: its reason, so the figure says it was tried.
    starts = df[df["metric"] == "time_to_ready"]
    for rt, g in starts.groupby("runtime"):
        if rt in VM_RUNTIMES and not (g["status"] == "ok").any() and not (rows["runtime"] == rt).any():
            out.append({"source": "measured", "app": g["app"].iloc[0], "variant": rt, "metric": "total_boot",
                        "median_ms": np.nan, "low_ms": np.nan, "high_ms": np.nan, "starts": 0,
                        "note": str(g["error"].dropna().iloc[0]) if g["error"].notna().any() else "every start failed"})
    ref = (reference[reference["metric"].isin(["vmm_part", "guest_part", "total_boot"])] if not reference.empty
           else reference)
    for r in ref.itertuples():
        out.append({"source": "paper 002", "app": r.app, "variant": r.runtime,
                    "metric": r.metric, "median_ms": r.value, "low_ms": np.nan, "high_ms": np.nan,
                    "starts": np.nan, "note": r.qualifier})
    return pd.DataFrame(out, columns=["source", "app", "variant", "metric", "median_ms", "low_ms", "high_ms", "starts",
                                      "note"])


def boot_phases_figure(table: pd.DataFrame):
    """One horizontal bar per runtime variant, its phases stacked in boot order (linear ms: a
    VM's seconds under TCG beside a process's milliseconds is the finding, not a scale problem;
    each bar's total is written beside it), the starts' total's interval as a whisker."""
    if table.empty:
        raise NoData("boot phase table is empty")
    apps = list(dict.fromkeys(table["app"]))
    n = sum(table[table["app"] == a]["variant"].nunique() for a in apps)
    fig, axes = plt.subplots(len(apps), 1, figsize=(9, 1.2 + 0.55 * n), squeeze=False)
    for ax, app in zip(axes[:, 0], apps):
        t = table[table["app"] == app]
        variants = list(dict.fromkeys(t["variant"]))
        for y, var in enumerate(variants):
            left = 0.0
            for r in t[t["variant"] == var].itertuples():
                ax.barh(y, r.median_ms, left=left, color=PHASE_COLOURS.get(shown_as(r.phase, r.phase_from), "grey"),
                        edgecolor="white", linewidth=0.5)
                left += r.median_ms
            first = t[t["variant"] == var].iloc[0]
            draw_whiskers(ax, [y], [first.total_ms], [first.total_low_ms], [first.total_high_ms], horizontal=True)
            end = np.nanmax([left, first.total_high_ms])  # the total is written past the whisker
            ax.text(end, y, f"  {left:,.0f} ms" if left >= 10 else f"  {left:.1f} ms", va="center", fontsize=8)
        left_out = t.groupby("variant", sort=False)["left_out"].first()
        ax.set_yticks(range(len(variants)), [f"{v}\n({counted(int(left_out[v]), 'start')} left out)"
                                             if left_out[v] else v for v in variants])
        ax.invert_yaxis()
        ax.set_xlim(0, ax.get_xlim()[1] * 1.15)
        ax.set_xlabel("ms since launch (median per phase; whisker: the starts' total, 95% CI of its median;\n"
                      "lowest to highest for 2 starts, none for 1)")
        ax.set_title(app)
    used = {shown_as(p, f) for p, f in zip(table["phase"], table["phase_from"])}
    shown = [p for p in PHASE_LABELS if p in used]
    handles = [plt.Rectangle((0, 0), 1, 1, color=PHASE_COLOURS[p]) for p in shown]
    fig.legend(handles, [PHASE_LABELS[p] for p in shown], loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("Boot time, split: where each start's time goes (host clock)")
    fig.tight_layout(rect=(0, 0.06 + 0.035 * len(shown) / 2, 1, 1))
    return fig


def split_figure(split: pd.DataFrame):
    """The VMM's part and the guest's part per VM variant, measured and published (log ms)."""
    have = split.dropna(subset=["median_ms"])
    if have.empty:
        raise NoData("no VM boot measured and no published numbers to show")
    labels = list(dict.fromkeys(have["source"] + ": " + have["variant"]))
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(labels)))
    y = np.arange(len(labels))
    for offset, metric, colour in zip((-0.2, 0.0, 0.2), ("vmm_part", "guest_part", "total_boot"), part_colours(3)):
        m = have[have["metric"] == metric]
        at = [labels.index(f"{s}: {v}") for s, v in zip(m["source"], m["variant"])]
        hatch = ["//" if s != "measured" else None for s in m["source"]]
        for yi, value, h in zip(at, m["median_ms"], hatch):
            ax.barh(yi + offset, value, 0.2, color=colour, hatch=h, edgecolor="white" if h is None else "black",
                    linewidth=0.3, label=metric)
        measured = m["source"] == "measured"  # the page's rows are single published values
        draw_whiskers(ax, np.array(at)[measured.to_numpy()] + offset, m["median_ms"][measured], m["low_ms"][measured],
                      m["high_ms"][measured], horizontal=True, capsize=2)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms (log; measured: median of the starts;\n"
                  "whiskers: 95% CI of the median; lowest to highest for 2 starts, none for 1)")
    handles, names = ax.get_legend_handles_labels()
    keep = dict(zip(names, handles))
    fig.legend(keep.values(), [{"vmm_part": "VMM (to the firmware's hand-over)",
                                "guest_part": "guest (hand-over to the app)",
                                "total_boot": "total (to the app's start)"}[k] for k in keep], fontsize=8,
               loc="lower center", ncol=3, frameon=False)
    title = "A VM's boot, split as paper 002 does (hatched: the page's numbers, KVM)"
    if not (have["source"] == "measured").any():
        tried = split[split["source"] == "measured"].drop_duplicates("variant")
        title += ("\nno VM was measured in this run (add linux-vm, nanos to RUNTIMES): the page's numbers alone"
                  if tried.empty else f"\nno VM start succeeded in this run ({', '.join(tried['variant'])}; the boot "
                  "phases figure says why):\nthe page's numbers alone")
    ax.set_title(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def boot_time_findings(table: pd.DataFrame, split: pd.DataFrame) -> str:
    lines = []
    for (app, var), g in table.groupby(["app", "variant"], sort=False):
        total = g["median_ms"].sum()
        ready = g["time_to_ready_ms"].iloc[0]
        top = g.sort_values("median_ms", ascending=False).iloc[0]
        largest = shown_as(top.phase, top.phase_from)
        starts = int(g["starts"].max())
        of_starts = "one start" if starts == 1 else f"median of {starts} starts"
        line = (f"- **{var}** ({app}): {ready:,.1f} ms to ready ({of_starts}; its phases' medians "
                f"add up to {total:,.1f} ms); the largest phase is "
                f"{PHASE_LABELS.get(largest, largest)} ({top.median_ms:,.1f} ms, {100 * top.median_ms / total:.0f} %).")
        if g["left_out"].iloc[0]:
            n = int(g["left_out"].iloc[0])
            line += (f" {counted(n, 'start')} showed another chain of events (one missed, such as the listening "
                     f"line) and {'is' if n == 1 else 'are'} left out of the bar.")
        lines.append(line)
    missing = split[(split["source"] == "measured") & split["median_ms"].isna()]
    for r in missing.drop_duplicates(["variant"]).itertuples():
        lines.append(f"- {r.variant}: no VMM/guest split: {r.note}.")
    if any("(TCG)" in v for v in table["variant"]):
        lines.append("- Rows marked (TCG) ran under software emulation: the guest's kernel is emulated instruction by "
                     "instruction, so its phases are seconds; the page's numbers are KVM's.")
    return "\n".join(lines)


# -- the notebook's page (edgebench.plotting.page) ---------------------------------------------

@dataclass
class BootTimePage(Page):
    """`table`: each boot's phases per runtime and variant."""
    split: pd.DataFrame  # the VMM's part against the guest's, beside the paper's


@said_if_nothing_measured
def show(run_dir: Path, params: Params) -> BootTimePage:
    """Notebook 11: the run's notes, the boot's phases and their figure, the VMM/guest split
    beside the paper's and its figure, then the findings."""
    df = open_page(run_dir)
    table = phase_table(df)
    show_table(table)
    show_figure(boot_phases_figure(table), params.EXPERIMENT, "boot_phases", run_dir)
    split = split_table(df, load_reference(params.EXPERIMENT))
    show_table(split)
    show_figure(split_figure(split), params.EXPERIMENT, "vmm_guest_split", run_dir)
    show_findings(boot_time_findings(table, split))
    return BootTimePage(run_dir, df, table, split)
