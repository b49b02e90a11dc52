"""What an experiment's notebook shows once its run is collected, in the same order on every page:
the run's notes (runtimes not measured, an emulated device, throttling), then tables beside the
papers' values, figures (each saved under the name `make figures`, the report and the verdicts
look for) and findings. Each plotting module's `show(run_dir, params)` is a few of these calls
and returns a `Page` (or its own subclass, for more tables) for the reader to explore."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display
from matplotlib import pyplot as plt

from edgebench.plotting.style import FIGURE_NAME_KEY, save_figure
from edgebench.plotting.tables import NoData, run_notes
from edgebench.results import NOT_MEASURABLE, load_results


@dataclass
class Page:
    """What a notebook showed, kept for a reader to explore further."""
    run_dir: Path          # the run the page comes from (data/<experiment>/<run_id>/)
    df: pd.DataFrame       # every row of the run
    table: pd.DataFrame    # the page's main table, beside the paper's values where it has them


def open_page(run_dir: Path) -> pd.DataFrame:
    """The run's rows, after its directory and its notes: the report finds the run by the printed
    path, and a reader needs the notes (what was not measured, an emulated device, throttling)
    before any number."""
    df = load_results(run_dir)
    print(run_dir)
    display(Markdown(run_notes(run_dir, df)))
    return df


def show_table(table: pd.DataFrame, decimals: int | None = None) -> None:
    display(table if decimals is None else table.round(decimals))


def show_figure(fig, experiment: str, name: str, run_dir: Path) -> None:
    """Saved, then shown where it comes in the page (not gathered at the end of the cell)."""
    save_figure(fig, experiment, name, run_dir)
    display(fig, metadata={FIGURE_NAME_KEY: name})  # the report names the figure from it (alt text)
    plt.close(fig)


def show_findings(*texts: str) -> None:
    for text in texts:
        if text:  # a finding with nothing to say leaves no empty block
            display(Markdown(text))


def show_absent(what: str, why: NoData) -> None:
    """Said where a table or figure would be: a run without it is a finding, not a failed page."""
    display(Markdown(f"**No {what}:** {why}"))


def said_if_nothing_measured(show):
    """A plotting module's `show(run_dir, params)` that, on a run with nothing measured because the
    device cannot measure it (every row not measurable, none failed: a kernel without a memory
    controller asked for limits below its memory), says so under the run's notes (which give why)
    instead of failing on a figure it has no value for. A run with a failed row and nothing ok still fails its page."""
    @functools.wraps(show)
    def shown(run_dir: Path, params) -> Page:
        try:
            return show(run_dir, params)
        except NoData:
            df = load_results(run_dir)
            if df.empty or not (df["status"] == NOT_MEASURABLE).all():
                raise
            display(Markdown(nothing_measured(df)))
            return Page(run_dir, df, pd.DataFrame())
    return shown


def nothing_measured(df: pd.DataFrame) -> str:
    """What a page with nothing measured says in place of its tables (the notes above give why)."""
    points = df["point_id"].nunique() if "point_id" in df else len(df)
    return (f"**Nothing measured on this device:** all {points} of its points are not measurable here "
            "(why, and what to change, in the notes above), so this page has no table or figure.")
