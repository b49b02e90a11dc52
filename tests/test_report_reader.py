"""What a reader sees on the report's pages (edgebench.drivers.report), from notebooks written
without a kernel: what a smoke or quick run's numbers are worth, tables without pandas' index,
NaN, float counts or long decimals, readable parameters, a key to the health column and the
labels, numbered papers, and figures with an alt text."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from edgebench.drivers import report
from edgebench.plotting.style import FIGURE_NAME_KEY

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _run(data: Path, experiment: str, profile: str, repetitions: int = 1, **notes) -> Path:
    run_dir = data / experiment / f"r-{profile}"
    run_dir.mkdir(parents=True)
    (run_dir / "results.csv").write_text("experiment,runtime,metric,value\nx,native,m,1.0\n")
    (run_dir / "meta.json").write_text(json.dumps({
        "run_id": run_dir.name, "status": "completed", "rows": {"ok": 381, "failed": 1},
        "parameters": {"target": "local", "runtimes": "native,docker", "apps": ["go-http"], "cpus": None,
                       "repetitions": repetitions, "profile": profile, "load": {"threads": 2, "connections": 16}},
        "target": {"target": "local", "cores": 2}, "notes": notes}))
    return run_dir


def _notebook(path: Path, run_dir: Path, table: pd.DataFrame) -> None:
    """An executed notebook as make figures leaves one: its run directory printed, a table, a figure
    saved under a name, and the findings after it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Boot time, split\n\nPaper 002, Fig. 3."),
        nbformat.v4.new_code_cell("print(run_dir)", outputs=[nbformat.v4.new_output("stream", text=f"{run_dir}\n")]),
        nbformat.v4.new_code_cell("table", outputs=[nbformat.v4.new_output(
            "execute_result", data={"text/html": table._repr_html_(), "text/plain": "table"}, execution_count=1)]),
        nbformat.v4.new_code_cell('fig = split_figure(split)\nsave_figure(fig, params.EXPERIMENT, "vmm_guest_split", '
                                  "run_dir)", outputs=[nbformat.v4.new_output("display_data", data={
                                      "image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"})]),
        nbformat.v4.new_code_cell("display(Markdown(findings))", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/markdown": "- **nanos (TCG)**: 310 ms to ready", "text/plain": ""})]),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


BOOT_TABLE = pd.DataFrame({"runtime": ["native", "unikraft (TCG) pc", "linux-vm (TCG) microvm"],
                           "health": ["\u2020 busy 1/1", "", "unknown 1/1"],
                           "starts": [381.0, 2.0, math.nan], "ready_ms": [16.857097, 1234.5678, 0.5],
                           "ready_ci95_low": [math.nan, 1000.0, math.nan], "published_ms": [math.nan, 3.1, 3.0],
                           "guest_ms": [math.nan, 12.0, 40.25],
                           "note": ["the app's clock is the VM's, set from the emulated RTC at boot (whole seconds), "
                                    "not the target's", "", ""]})


@pytest.fixture
def site(tmp_path):
    data, figures = tmp_path / "data", tmp_path / "figures"
    smoke = _run(data, "boot_time", "smoke", health={"throttle_unknown": "no throttling sensor on local: thermal: none",
                                                      "busy_threshold_cpus": 0.5})
    _notebook(figures / "boot_time" / "11_boot_time.ipynb", smoke, BOOT_TABLE)
    _notebook(figures / "iomt" / "05_iomt.ipynb", _run(data, "iomt", "quick", repetitions=3), BOOT_TABLE.head(1))
    index = report.build(figures, data, experiments=["boot_time", "iomt", "services"])
    return index


def _cells(page: str) -> list[str]:
    from bs4 import BeautifulSoup
    table = BeautifulSoup(page, "html.parser").select_one("table.dataframe")
    return [[c.get_text() for c in row.find_all(["th", "td"])] for row in table.find_all("tr")]


def test_a_smoke_page_says_at_its_top_that_its_numbers_mean_nothing(site):
    page = (site.parent / "boot_time.html").read_text()
    first = page.index('<div class="caveat">')
    assert first < page.index('class="meta"') and first < page.index("<table")
    assert "Smoke test" in page[first:first + 400] and "mean nothing as measurements" in page[first:first + 400]
    assert "This run: 1 repetition per point." in page
    quick = (site.parent / "iomt.html").read_text()
    assert "Smoke test" not in quick and "indicative only" in quick and "This run: 3 repetitions per point." in quick


def test_the_front_page_says_which_pages_are_smoke_and_which_quick_before_anything_else(site):
    page = site.read_text()
    boxes = page[:page.index("Verdicts on the papers")]
    assert "The page boot_time comes from a smoke-profile run" in boxes and "mean nothing as measurements" in boxes
    assert "The page iomt comes from a quick-profile run" in boxes and "indicative only" in boxes
    assert "smoke test, numbers mean nothing" in page and "quick profile, indicative only" in page  # on the cards
    assert "rows 381 ok, 1 failed (382 rows)" in page


def test_a_table_shows_counts_as_integers_short_decimals_dashes_with_their_meaning_and_no_index(site):
    page = (site.parent / "boot_time.html").read_text()
    rows = _cells(page)
    assert rows[0] == ["runtime", "health", "starts", "ready_ms", "ready_ci95_low", "published_ms", "guest_ms", "note"]
    assert rows[1][:6] == ["native", "\u2020 busy 1/1", "381", "16.86", "\u2014", "\u2014"]
    assert rows[2][2:7] == ["2", "1235", "1000", "3.1", "12"]
    assert rows[3][2:7] == ["\u2014", "0.5", "\u2014", "3", "40.25"]
    assert "NaN" not in page and "381.0" not in page and "16.857097" not in page
    assert "(whole seconds), not the target's" in page and "..." not in page.split("<table")[2]  # the note whole
    key = page[page.index('class="table-key"'):]
    assert key.index("ready_ci95_low: no interval (fewer than 3 repetitions)") < key.index("</p>")
    assert "published_ms: the paper gives no value there" in key
    assert "starts, guest_ms: not measured for that row" in key


def test_readable_numbers_keep_ids_and_short_values_as_they_are():
    assert [report.readable_number(x) for x in ("381.0", "16.857097", "10332.4", "0.123456", "-2.000000")] == \
        ["381", "16.86", "10332", "0.1235", "-2"]
    assert [report.readable_number(x) for x in ("000", "3.10", "0.5", "0.000012", "go-http", "1e5")] == \
        ["000", "3.10", "0.5", "0.000012", "go-http", "1e5"]


def test_a_named_or_labelled_index_stays():
    counts = pd.DataFrame({"holds": [1.0]}, index=pd.Index(["000"], name="paper"))
    assert "<th>000</th>" in report.readable_tables(counts._repr_html_())
    plain = pd.DataFrame({"holds": [1.0, 2.0]})
    assert ">0</th>" not in report.readable_tables(plain._repr_html_())


def test_parameters_read_as_a_reader_writes_them(site):
    text = report.parameters_text({"apps": ["go-http", "node-http"], "cpus": None, "runtimes": "native,docker",
                                   "load": {"threads": 2}, "require_kvm": False})
    assert text == "apps: go-http, node-http; runtimes: native, docker; load: threads 2; require_kvm: no; not set: cpus"
    page = (site.parent / "boot_time.html").read_text()
    assert "apps: go-http;" in page and "['" not in page and "=None" not in page and "not set: cpus" in page
    assert "381 ok, 1 failed (382 rows)" in page


def test_the_health_column_and_unknown_are_explained_where_a_page_shows_them(site):
    page = (site.parent / "boot_time.html").read_text()
    key = page[page.index("health column"):]
    assert "busy k/n: other processes used 0.5 CPU or more just before the point" in key
    assert "throttling could not be checked (no throttling sensor on local)" in key
    assert "unknown k/n: for k of them throttling could not be read" in key
    assert report.table_keys("<table><tr><th>runtime</th></tr></table>", {}) == {}


def test_every_figure_has_an_alt_text_from_its_caption(site):
    page = (site.parent / "boot_time.html").read_text()
    assert "No description has been provided" not in page
    assert 'alt="Figure \'vmm guest split\' (Boot time, split). nanos (TCG): 310 ms to ready"' in page
    front = html.unescape(site.read_text())
    assert 'alt="Figure \'vmm guest split\' (Boot time, split). nanos (TCG): 310 ms to ready"' in front


def test_a_figure_a_page_shows_is_named_from_its_output_not_its_cells_source():
    """Notebooks call one show(): the figure's file name travels in its output's metadata."""
    cells = [{"cell_type": "markdown", "source": "## Boot time"},
             {"cell_type": "code", "source": "page = plots.show(collect(params), params)", "outputs": [
                 {"output_type": "stream", "text": "run dir"},
                 {"output_type": "display_data", "data": {"image/png": ""},
                  "metadata": {FIGURE_NAME_KEY: "boot_phases"}}]}]
    assert report.alt_text(cells, 1, 1, "3 runtimes") == "Figure 'boot phases' (Boot time). 3 runtimes"


def test_the_front_page_numbers_the_papers_and_explains_the_labels(site):
    page = html.unescape(site.read_text())
    papers = page[page.index('id="papers"'):page.index('id="labels"')]
    assert '<tr id="paper-002"><td>002</td><td>' in papers and "Unikraft: Performance" in papers
    assert '<tr id="paper-001"><td>001</td>' in papers and '<tr id="paper-004"><td>004</td>' in papers
    labels = page[page.index('id="labels"'):]
    assert "<th>(TCG)</th>" in labels and "software emulation" in labels and "emulator's" in labels
    assert "<th>pc, microvm</th>" in labels and "QEMU machine type" in labels
    assert 'href="index.html#labels"' in (site.parent / "boot_time.html").read_text()
