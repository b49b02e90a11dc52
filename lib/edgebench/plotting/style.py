"""The one look every figure shares: each runtime's place and colour (the runtime registry's),
how the two protocols and the papers' own numbers are drawn, and how a figure is saved."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import matplotlib

if "ipykernel" not in sys.modules:
    # Scripts and tests draw headless; in a kernel (JupyterLab, papermill) the inline backend
    # stays, so every figure shows in the notebook as well as in its saved files.
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from edgebench.experiments.protocols import LIMIT_NOT_APPLIED
from edgebench.paths import FIGURES_DIR
from edgebench.results import NOT_MEASURABLE
from edgebench.runtimes import runtime_colours
from edgebench.runtimes import runtime_order as registry_order
from edgebench.tools.health import is_marked

# -- runtimes ---------------------------------------------------------------------------

# A VM that ran under software emulation is labelled "nanos (TCG)": its own row in every table,
# but the colour and place of its runtime, so the reader sees which runtime it is.
EMULATED = " (TCG)"
UNKNOWN_RUNTIME_COLOUR = "grey"


# A start right after the page cache was dropped: "docker (cold)", beside the warm "docker".
COLD = " (cold)"
FIRST = " (first)"  # a start whose image was pulled just before


def times(ratio: float) -> str:
    """A ratio as a bar's label: two decimals, or one significant digit below 0.1 (a VM under
    TCG serves 0.004x native, which two decimals print as 0.00x; two digits overlap the next bar's)."""
    return f"{ratio:.2f}x" if abs(ratio) >= 0.1 else f"{ratio:.1g}x"


def base_runtime(label: str) -> str:
    """'nanos (TCG)' -> 'nanos'; 'docker (cold)', 'docker (first)' and a network point such as
    'docker (bridge)' -> 'docker'; 'linux-vm (TCG) microvm' -> 'linux-vm': the runtime a label
    shows, whose colour and place it takes."""
    return str(label).split(" (")[0].split(" ")[0]


# Parts of a time (boot phases, a start's pull and run, a request's handler and network) are
# not runtimes: they take shades of one sequential palette, light to dark in the order they
# happen, and never a runtime's colour (tab10, from the runtime registry).
PART_PALETTE = "YlOrBr"


def part_colours(n: int) -> list[tuple]:
    """n shades for n ordered parts, from light (first) to dark (last)."""
    cmap = plt.get_cmap(PART_PALETTE)
    return [cmap(0.2 + 0.7 * i / max(1, n - 1)) for i in range(n)]


def runtime_colour(label: str) -> str:
    return runtime_colours().get(base_runtime(label), UNKNOWN_RUNTIME_COLOUR)


def runtime_rank(label: str) -> int:
    """Place in the registry's order; runtimes it does not know go last."""
    order = registry_order()
    base = base_runtime(label)
    return order.index(base) if base in order else len(order)


def in_runtime_order(labels) -> list[str]:
    """The distinct labels, in the registry's order (an emulated label right after its runtime)."""
    return sorted(dict.fromkeys(labels), key=lambda r: (runtime_rank(r), r))


def runtime_artist(label: str) -> dict:
    """Keyword arguments for anything drawn for one runtime. The gid names the runtime on the
    artist itself, so a test (or an SVG reader) can tell which runtime an artist shows."""
    return dict(color=runtime_colour(label), gid=label)


# -- side by side at one x ----------------------------------------------------------------

def dodge(k: int, n: int, width: float = 0.5) -> float:
    """How far the k-th of n runtimes sits from an x they share: evenly over `width` (in x's
    units), centred on it. Runtimes that measured the same value at one x (seven runtimes at one
    memory level, three at one thread count) then show side by side, not the last one drawn alone."""
    return (k - (n - 1) / 2) * width / n if n > 1 else 0.0


def log_dodge(xs, k: int, n: int, share: float = 0.6, most: float = 0.6) -> float:
    """dodge on a log x axis, as a factor on x: the k-th of n runtimes spread over `share` of
    the narrowest gap between the swept values `xs` (in decades; at most `most` decades, and
    `most` with one value), so no runtime reaches a neighbouring value's group."""
    values = np.unique(np.log10([float(v) for v in xs if np.isfinite(float(v)) and float(v) > 0]))
    gap = float(np.diff(values).min()) if len(values) > 1 else np.inf
    return float(10 ** dodge(k, n, min(share * gap, most)))


# -- protocols --------------------------------------------------------------------------

# Figures facet by protocol (one column each, this order): a panel then holds one line per
# runtime, and fair and published sit side by side on the same y axis.
PROTOCOLS = ("fair", "published")
PROTOCOL_TITLE = {"fair": "fair protocol", "published": "published protocol (the paper's method)"}
# Each protocol's lines keep their own style too (solid, dashed), so a panel read alone, or
# copied out of its grid, still says which protocol it shows; the colour is the runtime's.
PROTOCOL_STYLE = {"fair": dict(linestyle="-", marker="o"), "published": dict(linestyle="--", marker="s")}


def protocols_in(values) -> list[str]:
    present = set(values)
    return [p for p in PROTOCOLS if p in present] + sorted(present - set(PROTOCOLS))


def protocol_line(label: str, protocol: str) -> dict:
    return dict(runtime_artist(label), **PROTOCOL_STYLE.get(protocol, dict(linestyle=":", marker="^")))


# -- the papers' numbers ----------------------------------------------------------------

# The papers' own values (data/reference) are crosses in the runtime's colour, in every figure;
# not to be confused with the published *protocol*, which is our measurement by the paper's method.
# Filled, with a black edge: a cross in the runtime's colour would vanish on that runtime's bar.
PAPER_VALUE_STYLE = dict(marker="X", s=80, edgecolors="black", linewidths=0.8, zorder=5)
# A level where the runtime failed (OOM, never ready) is a triangle on the axis, not a gap.
FAILED_STYLE = dict(marker="v", s=45, zorder=5, clip_on=False)


def mark_paper_values(ax, x, y, label: str, source: str, legend: bool = True) -> None:
    """The paper's values for one runtime, where it printed one (NaN elsewhere). `legend=False`
    leaves them out of the legend, for a figure that names all papers' crosses once (paper_key)."""
    x, y = pd.Series(list(x), dtype=float), pd.Series(list(y), dtype=float)
    keep = y.notna()
    if keep.any():
        # The papers ran KVM: their marker names the runtime without "(TCG)".
        name = f"{label.replace(EMULATED, '')} ({source})"
        ax.scatter(x[keep], y[keep], label=name if legend else f"_{name}", **runtime_artist(label),
                   **PAPER_VALUE_STYLE)


def paper_key(source: str):
    """One legend entry for the crosses of every runtime: the colour already names the runtime,
    so seven "runtime (paper ...)" entries beside the runtimes' own would only repeat it."""
    from matplotlib.lines import Line2D
    return Line2D([], [], linestyle="", marker=PAPER_VALUE_STYLE["marker"], markersize=9,
                  markerfacecolor="lightgrey", markeredgecolor="black", markeredgewidth=0.8,
                  label=f"{source}, in the runtime's colour")


# -- device health ------------------------------------------------------------------------

# A value measured while the device throttled or was busy (edgebench.tools.health) carries a dagger:
# after its cell in a table (tables.mark_health), above its point or bar in a figure.
HEALTH_MARK = "\u2020"
HEALTH_GID = "health-mark"
HEALTH_LABEL = "measured while the device throttled or was busy"  # the legend shows the dagger beside it


def health_marked(health) -> np.ndarray:
    """Per value: whether a table cell's health ('† throttled 2/5') or a row's ('throttled,busy')
    marks it; NaN and '' do not."""
    return np.array([isinstance(h, str) and (h.startswith(HEALTH_MARK) or is_marked(h))
                     for h in (health if health is not None else [])], dtype=bool)


def mark_health(ax, x, y, health, beside: tuple[float, float] | None = None, colour: str = "black") -> None:
    """A dagger above each point or bar (below a negative bar) whose value was measured while the
    device throttled or was busy. `health`: the table's or the rows' column, aligned with x and y;
    None (results recorded before health was sampled) draws nothing. `beside`, an offset in
    points, puts the dagger to the right of the point instead (left-aligned, centred on it): for
    lines of several runtimes that meet at one x (a step per line, in the line's `colour`) or a
    value written above a bar, which a dagger above would print over."""
    if health is None:
        return
    for xi, yi, on in zip(np.asarray(x, dtype=float), np.asarray(y, dtype=float), health_marked(health)):
        if not (on and np.isfinite(xi) and np.isfinite(yi)):
            continue
        if beside is not None:
            ax.annotate(HEALTH_MARK, (xi, yi), xytext=beside, textcoords="offset points", ha="left", va="center",
                        fontsize=11, fontweight="bold", color=colour, gid=HEALTH_GID)
            continue
        below = yi < 0 and ax.get_yscale() != "log"
        ax.annotate(HEALTH_MARK, (xi, yi), xytext=(0, -4 if below else 4), textcoords="offset points",
                    ha="center", va="top" if below else "bottom", fontsize=11, fontweight="bold",
                    gid=HEALTH_GID)


def room_for_health_marks(axes, share: float = 0.15) -> None:
    """Widen y above the highest points of each panel that draws a dagger (mark_health), by `share`
    of its range (in decades on a log axis): a dagger above a panel's highest point otherwise
    prints over the frame and the title. Panels that share y are widened once, together."""
    axes = list(np.ravel(axes))
    done = []
    for ax in axes:
        if any(ax.get_shared_y_axes().joined(ax, d) for d in done):
            continue
        done.append(ax)
        group = [a for a in axes if a.get_shared_y_axes().joined(a, ax)]
        if not any(t.get_gid() == HEALTH_GID for a in group for t in a.texts):
            continue
        lo, hi = ax.get_ylim()
        if ax.get_yscale() == "log" and 0 < lo < hi:
            ax.set_ylim(lo, hi * (hi / lo) ** share)
        elif ax.get_yscale() != "log":
            ax.set_ylim(lo, hi + (hi - lo) * share)


def _health_key(fig) -> list:
    """The legend's key to the dagger, if the figure shows one."""
    from matplotlib.lines import Line2D
    if any(t.get_gid() == HEALTH_GID for ax in fig.axes for t in ax.texts):
        return [Line2D([], [], marker=f"${HEALTH_MARK}$", markersize=9, linestyle="", color="black",
                       label=HEALTH_LABEL)]
    return []


# -- layout and saving ------------------------------------------------------------------

def protocol_grid(n_rows: int, protocols: list[str], panel_size=(5.0, 3.4), sharey: str | bool = "row"):
    """Rows chosen by the caller, one column per protocol; y shared along a row unless the
    protocols' panels show different quantities."""
    w, h = panel_size
    fig, axes = plt.subplots(n_rows, len(protocols), figsize=(w * len(protocols), h * n_rows),
                             squeeze=False, sharey=sharey)
    return fig, axes


def keep_in_view(axes, pad: float = 0.05) -> None:
    """Widen each panel's y range to everything drawn on it, the papers' values included. A row
    that shares y keeps the range it had when a limit was fixed (`set_ylim(bottom=0)` after the
    first column), so a value drawn later (the next column, a paper's value far above the
    measured ones) would fall outside it; widening one panel widens its whole row."""
    for ax in np.ravel(axes):
        log = ax.get_yscale() == "log"
        d0, d1 = ax.dataLim.intervaly
        if log:
            d0 = max(d0, ax.dataLim.minposy)
        lo, hi = ax.get_ylim()
        if not (np.isfinite(d0) and np.isfinite(d1)) or (lo <= d0 and d1 <= hi):
            continue
        f, inv = (np.log10, lambda v: 10 ** v) if log else (lambda v: v, lambda v: v)
        new_lo, new_hi = f(min(lo, d0)), f(max(hi, d1))
        margin = pad * (new_hi - new_lo)
        ax.set_ylim(inv(new_lo - margin) if d0 < lo else lo, inv(new_hi + margin) if d1 > hi else hi)


def readable_log_ticks(ax, which: str = "y") -> None:
    """Labels on a log axis that do not print over each other in a short panel: 1-2-5 within a
    decade or so, 1-3 up to three decades, every decade beyond (once the limits are final)."""
    lo, hi = ax.get_ylim() if which == "y" else ax.get_xlim()
    axis = ax.yaxis if which == "y" else ax.xaxis
    decades = np.log10(hi / lo) if lo > 0 and hi > lo else 0.0
    subs = (1.0, 2.0, 5.0) if decades <= 1.5 else (1.0, 3.0) if decades <= 3 else (1.0,)
    axis.set_major_locator(LogLocator(subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    axis.set_minor_formatter(NullFormatter())


def figure_legend(fig, extra=(), ncol: int = 6) -> None:
    """One legend under the figure, runtimes in the registry's order (one per panel would
    repeat itself in every panel of a grid); `extra` handles (a key to marker shapes) last."""
    extra = [*extra, *_health_key(fig)]
    entries = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    # Room for the suptitle above the panels and for the legend below them.
    top = 1 - 0.45 / fig.get_figheight() if fig.get_suptitle() else 1
    if not entries and not extra:
        fig.tight_layout(rect=(0, 0, 1, top))
        return
    labels = sorted(entries, key=lambda lab: (runtime_rank(lab.split(" (")[0]), lab))
    handles = [entries[lab] for lab in labels] + list(extra)
    labels += [h.get_label() for h in extra]
    fig.legend(handles, labels, loc="lower center", ncol=min(ncol, len(labels)), fontsize=8,
               bbox_to_anchor=(0.5, 0), frameon=False)
    rows = -(-len(labels) // ncol)
    fig.tight_layout(rect=(0, min(0.3, (0.25 * rows + 0.15) / fig.get_figheight()), 1, top))


FIGURE_NOTES_MARK = "eb-figure-notes"


def failed_runtimes(df: pd.DataFrame) -> dict[str, tuple[int, str, str]]:
    """Runtimes without an ok row (no figure can draw them): how many rows, their most frequent
    reason, and what happened to them: "failed", or "not measurable here" when none failed (no
    power meter, no NPB binaries), which is not a failure and must not read like one."""
    out = {}
    for runtime, g in df.groupby("runtime", sort=False):
        if not (g["status"] == "ok").any():
            failed = g[g["status"] != NOT_MEASURABLE]
            errors = (failed if not failed.empty else g)["error"].dropna().astype(str).value_counts()
            out[str(runtime)] = (len(g), errors.index[0] if not errors.empty else "no reason recorded",
                                 "failed" if not failed.empty else "not measurable here")
    return out


def left_out_runtimes(df: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """failed_runtimes of a run's results: what happened, and the reason shortened for a figure's note."""
    return {rt: (what, why if len(why) <= 90 else why[:87] + "...")
            for rt, (_, why, what) in failed_runtimes(df).items()}


def memory_limits_not_run(df: pd.DataFrame) -> str:
    """The note for a run's points that asked a cgroup for a memory limit the device's kernel
    cannot apply (experiments.protocols.memory_not_applicable): not run, so absent from every
    figure, which without it shows fewer levels with no word why. '' when there are none."""
    not_applied = df["error"].astype(str).str.contains(LIMIT_NOT_APPLIED, regex=False)
    skipped = df[(df["status"] == NOT_MEASURABLE) & not_applied]
    if skipped.empty:
        return ""
    memory = skipped["memory_mb"] if "memory_mb" in skipped else pd.Series(dtype=float)
    levels = ", ".join(f"{m:g} MiB" for m in sorted(memory.dropna().unique(), reverse=True))
    runtimes = ", ".join(in_runtime_order(skipped["runtime"].astype(str)))
    return (f"Not drawn: {runtimes} at {levels or 'its memory limits'} (not run: the device's kernel has no "
            "memory controller, so a cgroup's limit would not apply).")


def figure_notes(run_dir: Path) -> list[str]:
    """What a reader of a figure must know first, from the run it came from: an emulated
    device's numbers measure QEMU, not a device; a runtime without an ok row is missing; memory
    levels the device could not limit were not run."""
    try:
        facts = json.loads((Path(run_dir) / "meta.json").read_text()).get("target") or {}
    except (OSError, ValueError):
        return []
    notes = []
    if facts.get("emulated_device"):
        notes.append(f"{facts.get('target')}: {facts['emulated_device']}. Its numbers measure QEMU's emulator, "
                     "not a device.")
    try:  # once, for both notes below (a run's results can be megabytes)
        df = pd.read_csv(Path(run_dir) / "results.csv", low_memory=False,
                         usecols=lambda c: c in ("runtime", "status", "error", "memory_mb"))
    except (OSError, ValueError):
        return notes
    if not {"runtime", "status", "error"} <= set(df.columns):
        return notes
    for runtime, (what, why) in left_out_runtimes(df).items():
        notes.append(f"{runtime} is not drawn: every row {'failed' if what == 'failed' else 'is ' + what} ({why})")
    return notes + [note for note in [memory_limits_not_run(df)] if note]


def mark_figure_notes(fig, run_dir: Path) -> None:
    """figure_notes above the figure's title, once."""
    notes = figure_notes(run_dir)
    if not notes or any(t.get_gid() == FIGURE_NOTES_MARK for t in fig.texts):
        return
    # Above everything already drawn (the suptitle), where a reader looks first. Not below: a legend
    # placed at "lower center" moves with the bottom edge that bbox_inches="tight" extends.
    top = fig.get_tightbbox(fig.canvas.get_renderer()).y1 / fig.get_figheight()
    # Wrapped to the figure's width by hand (an 8 pt character is about 0.06 in): matplotlib's own
    # wrapping is measured before bbox_inches="tight" and left a blank band above the figure.
    width = max(40, int(fig.get_figwidth() / 0.06))
    text = "\n".join(textwrap.fill(n, width) for n in notes)
    fig.text(0.5, max(1.0, top) + 0.01, text, ha="center", va="bottom", fontsize=8, color="#a00000",
             gid=FIGURE_NOTES_MARK)


# PNG for notebooks and the README, PDF (vector) for papers.
FIGURE_FORMATS = ("png", "pdf")
# The key in a shown figure's output metadata that names the file it was saved as (the report's alt text).
FIGURE_NAME_KEY = "edgebench_figure"


def save_figure(fig, experiment: str, name: str, run_dir: Path | None = None) -> list[Path]:
    """figures/<experiment>/<name>.png and .pdf, and both again next to the data they came from
    (<run_dir>/figures/)."""
    folders = [FIGURES_DIR / experiment]
    if run_dir is not None:
        folders.append(Path(run_dir) / "figures")
        mark_figure_notes(fig, run_dir)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FIGURE_FORMATS:
        first, *copies = [folder / f"{name}.{fmt}" for folder in folders]
        fig.savefig(first, dpi=130, bbox_inches="tight")
        # Rendered once: a copy is the same bytes for a fraction of savefig's second or two.
        for copy in copies:
            shutil.copyfile(first, copy)
        paths += [first, *copies]
    return paths
