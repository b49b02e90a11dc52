"""One colour and one place in the order per runtime, in every figure: the runtime registry's."""

from __future__ import annotations

import re

from edgebench.paths import PROJECT_ROOT
from edgebench.plots import runtime_colour, runtime_order
from edgebench.runtimes import RUNTIMES, runtime_colours

PLOTTING = sorted((PROJECT_ROOT / "lib" / "edgebench").glob("*plots.py"))


def test_each_runtime_has_its_own_colour_and_emulated_rows_keep_it():
    colours = runtime_colours()
    assert set(colours) == set(RUNTIMES) and len(set(colours.values())) == len(colours)
    for name, cls in RUNTIMES.items():
        assert runtime_colour(name) == cls.colour != "grey"
    assert runtime_colour("nanos (TCG)") == runtime_colour("nanos")


def test_figures_follow_the_registrys_order():
    assert runtime_order(["nanos (TCG)", "lxd", "docker", "native"]) == ["native", "docker", "lxd", "nanos (TCG)"]
    assert runtime_order(["docker", "unknown", "native"]) == ["native", "docker", "unknown"]


def test_no_plotting_module_keeps_colours_or_an_order_of_its_own():
    assert PLOTTING
    for path in PLOTTING:
        text = path.read_text()
        assert not re.search(r'["\'](native|docker|lxd|nanos)["\']\s*:\s*["\']#', text), path.name
        assert not re.search(r'=\s*\[\s*"native",\s*"docker"', text), path.name


def test_latency_panels_never_reach_below_zero():
    """Paper 000's jitter (stdev) is larger than the mean under memory pressure: drawn as mean +-
    stdev it went below zero. It is a panel of its own; the latency panels hold no error bars."""
    import numpy as np
    import pandas as pd

    from edgebench.plots import http_figure
    rows = []
    for rt, colour_level in (("native", 1.0), ("docker", 2.0)):
        for scenario, mem, level in (("rich", 2048, "rich"), ("constrained", 64, "1 CPU / 64 MB")):
            rows.append(dict(app="go-http", runtime=rt, protocol="fair", scenario=scenario, memory_mb=mem,
                             level=level, rps_median=1000 / colour_level, rps_iqr=50.0, latency_mean_ms=5.0,
                             latency_stdev_ms=40.0, latency_p99_ms=150.0, latency_p50_ms=2.0, failed=0,
                             published_rps=np.nan))
    fig = http_figure(pd.DataFrame(rows), "io_bound")
    axes = fig.axes
    assert [ax.get_ylabel() for ax in axes[:4]] == ["requests/s (median, IQR)", "mean latency (ms)",
                                                    "jitter: stdev of latency (ms)",
                                                    "p99 (o) and p50 (.) latency (ms, log)"]
    for ax in axes[1:4]:
        assert not ax.containers, f"{ax.get_ylabel()}: error bars"
        assert ax.get_ylim()[0] >= 0 and all((line.get_ydata() >= 0).all() for line in ax.lines)
    assert {line.get_color() for line in axes[1].lines} == {runtime_colour("native"), runtime_colour("docker")}
