"""Tables and figures the notebooks show, one module per experiment, with the papers' values
beside the measured ones. `style` holds the look they share (runtime order and colour from the
runtime registry, protocols, the papers' markers, saving); `tables` the table helpers."""

import pandas as pd

from edgebench.plotting.style import save_figure
from edgebench.plotting.tables import NoData, mark_emulated, run_notes

__all__ = ["NoData", "mark_emulated", "run_notes", "save_figure"]

# A notebook shows every row and column of its tables (pandas would cut a 72-row table to ten
# rows and "..."); the report puts long ones in a box that scrolls.
pd.set_option("display.max_rows", None)
pd.set_option("display.max_columns", None)
pd.set_option("display.width", None)
