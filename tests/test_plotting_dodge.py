"""Every runtime shows where several share one x: a review of a run with all seven runtimes found
the HTTP figures' throughput, mean and jitter rows drawing every runtime at a level's x (Nanos
behind linux-vm, Docker nowhere), the LXD appendix's memory and CPU panels native and Docker under
LXD, and the papers' crosses for native and Docker on one spot in the page-fault and IoMT figures.
Also: one unit per quantity across the IoMT panels, and findings that read right for one size."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from test_plotting import appendix_results, http_results, iomt_results, row_label

from edgebench.experiments.iomt import parse_size
from edgebench.plotting import http_load, iomt, lxd_appendix, page_faults, style
from edgebench.reference import load_reference
from edgebench.runtimes import runtime_order

SEVEN = runtime_order()


@pytest.fixture(autouse=True)
def close_figures():
    yield
    style.plt.close("all")


def xs_by_runtime(ax) -> dict[str, set[float]]:
    """runtime (an artist's gid) -> every x its lines and markers are drawn at, in data coordinates
    (not a failure's triangle at the panel's foot, nor a dagger)."""
    out = defaultdict(set)
    for line in ax.lines:
        if line.get_gid():
            out[line.get_gid()] |= {round(float(x), 9) for x in np.asarray(line.get_xdata(), dtype=float)
                                    if np.isfinite(x)}
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_gid() and coll.get_offset_transform() == ax.transData:
            out[coll.get_gid()] |= {round(float(x), 9) for x in np.asarray(coll.get_offsets())[:, 0]}
    return out


def paper_crosses(ax) -> list[tuple[str, float, float]]:
    """(runtime, x, y) of each paper's cross on a panel."""
    return [(c.get_gid(), float(x), float(y)) for c in ax.collections
            if isinstance(c, PathCollection) and "(paper" in c.get_label() for x, y in np.asarray(c.get_offsets())]


# -- the helpers ----------------------------------------------------------------------------

def test_dodge_centres_the_runtimes_on_their_x_and_keeps_them_inside_its_width():
    assert style.dodge(0, 1) == 0.0
    offsets = [style.dodge(k, 7, 0.6) for k in range(7)]
    assert offsets == sorted(offsets) and len(set(offsets)) == 7
    assert sum(offsets) == pytest.approx(0) and max(offsets) - min(offsets) < 0.6
    factors = [style.log_dodge([8, 32], k, 3) for k in range(3)]
    assert factors[1] == pytest.approx(1.0) and factors[0] < 1 < factors[2]
    # Within a share of the gap between the swept values: no runtime reaches the next value's group.
    assert 8 * factors[2] < np.sqrt(8 * 32) and 32 * factors[0] > np.sqrt(8 * 32)
    assert style.log_dodge([100_000], 0, 7) < 1 < style.log_dodge([100_000], 6, 7)  # one size: still apart


# -- defect 1: the HTTP figures ---------------------------------------------------------------

def same_everywhere() -> pd.DataFrame:
    """All seven runtimes measured the same values at every level: nothing but the drawing can
    tell them apart."""
    df = http_results(runtimes=SEVEN)
    df.loc[df["metric"] == "requests_per_second", "value"] = 1000.0
    return df


def test_http_runtimes_at_one_level_are_drawn_side_by_side_in_every_row():
    table = http_load.http_table(same_everywhere(), load_reference("io_bound"))
    fig = http_load.http_figure(table, "I/O-bound HTTP load")
    rows = set()
    for ax in fig.axes:
        rows.add(row_label(fig, ax).split(" ")[0])
        drawn = xs_by_runtime(ax)
        assert set(SEVEN) <= set(drawn), f"{row_label(fig, ax)}: {sorted(drawn)}"
        # At each level, one x per runtime, all apart, in the registry's order, inside the level's slot.
        for level in range(4):
            at = {rt: sorted(x for x in drawn[rt] if round(x) == level) for rt in SEVEN}
            at = {rt: xs for rt, xs in at.items() if xs}  # nanos never started at 64 MB
            assert all(len(xs) == 1 for xs in at.values()), at
            places = [at[rt][0] for rt in SEVEN if rt in at]
            assert places == sorted(places) and len(set(places)) == len(places), places
            assert all(abs(x - level) < 0.5 for x in places)
        # A paper's cross sits at its own runtime's place.
        for rt, x, _ in paper_crosses(ax):
            assert round(x, 9) in drawn[rt] and not [o for o in SEVEN if o != rt and round(x, 9) in drawn[o]]
    assert {"requests/s", "mean", "jitter:", "latency"} <= rows


def test_a_runtime_keeps_its_place_in_every_http_panel():
    """node-http cannot run on every runtime: a runtime's place must not shift from go-http's."""
    df = same_everywhere()
    df = df[~((df["app"] == "node-http") & df["runtime"].isin(["unikraft", "linux-vm"]))]
    fig = http_load.http_figure(http_load.http_table(df, load_reference("io_bound")), "I/O-bound HTTP load")
    places = defaultdict(set)
    for ax in fig.axes:
        for rt, xs in xs_by_runtime(ax).items():
            places[rt] |= {round(x - round(x), 6) for x in xs}
    assert all(len(p) == 1 for p in places.values()), dict(places)


# -- defect 2: the LXD appendix -----------------------------------------------------------------

def test_lxd_appendix_draws_native_and_docker_beside_lxd_where_they_measured_the_same():
    df = appendix_results()
    df.loc[df["metric"].isin(["latency_avg", "total_time", "file_creation_latency"]), "value"] = 1.0
    fig = lxd_appendix.appendix_figure(lxd_appendix.appendix_table(df))
    for ax in fig.axes:
        swept = [float(t) for t in ax.get_xticks()]
        drawn = xs_by_runtime(ax)
        assert set(drawn) == {"native", "docker", "lxd"}, ax.get_title()
        for value in swept:
            # Each runtime nearest this swept value, at its own x: native, docker, lxd from left to right.
            near = {rt: [x for x in xs if min(swept, key=lambda v: abs(np.log(x / v))) == value]
                    for rt, xs in drawn.items()}
            assert all(len(v) == 1 for v in near.values()), (ax.get_title(), near)
            places = [near[rt][0] for rt in ("native", "docker", "lxd")]
            assert places == sorted(places) and len(set(places)) == 3, (ax.get_title(), places)


# -- defect 3: the papers' crosses ----------------------------------------------------------------

def equal_paper_values(experiment: str, size: str) -> pd.DataFrame:
    """The reference with native's value at `size` set to docker's, as Table 5's 6,200 and 6,150."""
    ref = load_reference(experiment)
    at = ref["input_size"] == size
    docker = ref[at & (ref["runtime"] == "docker")].iloc[0]
    ref.loc[at & (ref["runtime"] == "native"), ["value", "value_base"]] = [docker["value"], docker["value_base"]]
    return ref


@pytest.mark.parametrize("name", ["page_faults", "iomt"])
def test_papers_crosses_at_equal_values_are_drawn_apart_with_one_legend_entry(name):
    if name == "page_faults":
        df = iomt_results(runtimes=SEVEN, experiment="page_faults")
        fig = page_faults.faults_figure(page_faults.faults_table(df, equal_paper_values("page_faults", "100KB")))
    else:
        df = iomt_results(runtimes=SEVEN)
        fig = iomt.latency_figure(iomt.latency_table(df, equal_paper_values("iomt", "100KB")))
    seen = 0
    for ax in fig.axes:
        crosses = paper_crosses(ax)
        for y in {y for _, _, y in crosses}:
            at = [(rt, x) for rt, x, cy in crosses if cy == y]
            assert len({x for _, x in at}) == len(at), f"{ax.get_title()}: crosses on one spot {at}"
            seen += len(at) > 1
        drawn = xs_by_runtime(ax)
        for rt, x, _ in crosses:  # beside the size, at its runtime's own place
            assert round(x, 9) in drawn[rt]
    assert seen, "no two equal values drawn: the test proves nothing"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [t for t in legend if "paper 001" in t] == [style.paper_key(
        page_faults.PAPER_TABLE_5 if name == "page_faults" else iomt.PAPER_TABLE_4).get_label()], legend
    assert [t for t in legend if t in SEVEN] == SEVEN, legend


# -- defect 4: IoMT units and findings ---------------------------------------------------------

def test_iomt_draws_every_time_in_seconds():
    df = iomt_results(runtimes=["native", "docker"])
    table = iomt.latency_table(df, load_reference("iomt"))
    fig = iomt.latency_figure(table)
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels and all("(s, log)" in lab for lab in labels), labels
    assert not [lab for lab in labels if "ms" in lab.split("\n")[0]]
    # The start-up row draws the table's seconds, not a thousand times them.
    startup = [ax for ax in fig.axes if row_label(fig, ax).startswith("start-up")]
    drawn = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for ax in startup for line in ax.lines
                            if line.get_gid() and line.get_linestyle() != "None"])
    assert drawn.max() == pytest.approx(table["startup_overhead"].max())


def one_size_table() -> pd.DataFrame:
    df = iomt_results(runtimes=["native", "docker"])
    df = df[(df["workload"] == "aes") & (df["input_size"] == "100KB")]
    docker = (df["runtime"] == "docker") & (df["metric"] == "startup_overhead")
    df.loc[docker, "value"] = 0.417 + 0.002  # native's is 0.002 s
    return iomt.latency_table(df, load_reference("iomt"))


def test_iomt_findings_at_one_size_say_it_once():
    text = iomt.latency_findings(one_size_table())
    for line in text.splitlines():
        assert line.count("100KB:") == 1, line
        assert "every size" not in line and "0.417 s (at 100KB)" in line, line


def test_iomt_findings_over_sizes_give_the_range_of_the_extra_start_up():
    df = iomt_results(runtimes=["native", "docker"])
    docker = (df["runtime"] == "docker") & (df["metric"] == "startup_overhead") & (df["workload"] == "aes")
    df.loc[docker, "value"] += np.where(df.loc[docker, "input_size"] == "1MB", 0.5, 0.4)
    text = iomt.latency_findings(iomt.latency_table(df, load_reference("iomt")))
    aes = [line for line in text.splitlines() if "AES" in line]
    assert aes and all("over the 2 sizes" in line and "every size" not in line for line in aes), aes
    for line in aes:
        sizes = [s for s in ("100KB:", "1MB:") if s in line]
        assert sizes == ["100KB:", "1MB:"] and parse_size("1MB") > parse_size("100KB")


def test_lxd_findings_at_one_swept_value_read_as_one_value():
    df = appendix_results()
    df = df[df["files"].isna() | (df["files"] == 8)]
    text = lxd_appendix.appendix_findings(lxd_appendix.appendix_table(df), load_reference("lxd_appendix"), df)
    creation = next(line for line in text.splitlines() if "file creation" in line)
    assert "docker 2.00x of native (at 8 files)" in creation and "8-8" not in creation, creation
    assert "2.00x-2.00x" not in text
    memory = next(line for line in text.splitlines() if "(c) memory" in line)
    assert "(at 1 threads)" not in memory and "over 1-16 threads" in memory, memory


# -- daggers stay inside their panel -----------------------------------------------------------

@pytest.mark.parametrize("name", ["http_load", "iomt", "page_faults"])
def test_a_dagger_above_a_panels_highest_point_stays_inside_the_panel(name):
    """The quick run's IoMT figure: linux-vm's daggers, above the highest points, printed over the
    frame and into the title above."""
    if name == "http_load":
        df = http_results(runtimes=SEVEN).assign(health="busy")
        fig = http_load.http_figure(http_load.http_table(df, load_reference("io_bound")), "I/O-bound")
    elif name == "iomt":
        df = iomt_results(runtimes=SEVEN).assign(health="busy")
        fig = iomt.latency_figure(iomt.latency_table(df, load_reference("iomt")))
    else:
        df = iomt_results(runtimes=SEVEN, experiment="page_faults").assign(health="busy")
        fig = page_faults.faults_figure(page_faults.faults_table(df, load_reference("page_faults")))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    daggers = 0
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        for t in ax.texts:
            if t.get_gid() == style.HEALTH_GID:
                daggers += 1
                box = t.get_window_extent(renderer)
                assert box.y1 <= frame.y1 + 1, f"{ax.get_title()}: a dagger at {t.xy} above the frame"
    assert daggers
