"""Tables and figures the notebooks show, one module per experiment, with the papers' values
beside the measured ones. `style` holds the look they share (runtime order and colour from the
runtime registry, protocols, the papers' markers, saving); `tables` the table helpers."""

from edgebench.plotting.style import save_figure
from edgebench.plotting.tables import NoData, mark_emulated, run_notes

__all__ = ["NoData", "mark_emulated", "run_notes", "save_figure"]
