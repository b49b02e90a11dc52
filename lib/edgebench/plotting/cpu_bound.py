"""CPU-bound HTTP load (paper 000, Figs. 9-13): notebook 04's page, drawn by edgebench.plotting.http_load
(which notebook 03, I/O-bound, shares)."""

from __future__ import annotations

from pathlib import Path

from edgebench.experiments.cpu_bound import Params
from edgebench.plotting.http_load import HttpLoadPage, show_http_load


def show(run_dir: Path, params: Params) -> HttpLoadPage:
    """Notebook 04: the run's notes, the table beside the paper's, the figure and its findings,
    then the open-loop curves."""
    return show_http_load(run_dir, params)
