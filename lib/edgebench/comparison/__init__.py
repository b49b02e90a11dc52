"""Runs side by side: devices, dates and edgebench versions, each as ratios to the same device's
native runtime, beside the papers' ratios.

Absolute numbers do not compare across devices (a Raspberry Pi is not a 2-core server), but what a
runtime costs against native on the same device, in the same run, at the same point of the sweep
does. So every value here is a ratio: the median over repetitions of a runtime, divided by the
median of native at the same coordinates (the experiment's `key_columns`) in the same run. A point
native has no value for gives NaN, never a made-up 1.0. Read in this order:

    runs.runs_index() -> runs.select_runs(...) -> runs.load_runs(...)
        -> ratios.ratios_to_native(...) + paper_ratios.paper_ratios(...)

side_by_side.compare_runs() does all of it for notebooks/compare.ipynb, which `make compare`
(edgebench.drivers.compare) runs headless; edgebench.plotting.compare draws its table and figure.
What each experiment is compared on is on its record (edgebench.experiments.reading).
"""
