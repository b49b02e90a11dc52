"""I/O-bound HTTP load (paper 000, Figs. 4-8): notebook 03's page, drawn by edgebench.plotting.http_load
(which notebook 04, CPU-bound, shares)."""

from __future__ import annotations

from pathlib import Path

from edgebench.experiments.io_bound import Params
from edgebench.plotting.http_load import HttpLoadPage, show_http_load


def show(run_dir: Path, params: Params) -> HttpLoadPage:
    """Notebook 03: the run's notes, the table beside the paper's, the figure and its findings,
    then the open-loop curves."""
    return show_http_load(run_dir, params)
