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
