"""Names vulture cannot see used (`make lint`'s dead-code check reads this file beside lib/ and
tests/): what notebooks call, what frameworks call by name, and fields a record keeps for readers
of its raw data. Each line names the thing and why."""

# Notebooks call each plotting module's show() and the records' from_cell; nothing in Python does.
show  # edgebench.plotting.<experiment>.show, from every notebook
from_cell  # edgebench.experiments.parameters.Parameters.from_cell, from every notebook
collect  # edgebench.experiments.collect, from every notebook
runs_table  # edgebench.comparison.side_by_side.Comparison.runs_table, from notebooks/compare.ipynb
claims_on  # edgebench.drivers.verdicts.claims_on, from notebooks/compare.ipynb
first_starts  # edgebench.plotting.time_to_ready.TimeToReadyPage: what notebook 02 leaves to explore
# jupyter_client's traitlets call a `_<name>_default` method for a trait's default.
_ip_default  # edgebench.drivers.figures.IpcKernelManager
# BeautifulSoup: assigning .string replaces a tag's text.
string  # edgebench.drivers.report
# Kept in the record and in raw/ for whoever reads a start back, read by no code today.
limits_requested  # edgebench.runtimes.contract.Instance
# A context manager's __exit__ takes the traceback whether it reads it or not.
tb
# A look's columns in settle.csv (asdict), for the reader of the file.
reps_before  # edgebench.drivers.settle.Look
