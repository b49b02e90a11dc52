"""`make report`: pages of executed notebooks without code, an index of every experiment, links
to the raw data; checked in a real headless Chromium from the file system."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest
from conftest import need
from edgebench.drivers import report


def _executed_notebook(path: Path, run_dir: Path) -> None:
    """A small notebook executed for real (nbclient): prints its run directory like the
    experiment notebooks, shows a table and draws a matplotlib figure."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Tiny experiment\n\nMeasured beside published."),
        nbformat.v4.new_code_cell(f"print({str(run_dir)!r})"),
        # What a sweep prints while it measures: a tqdm bar, one output per update.
        nbformat.v4.new_code_cell("from tqdm import tqdm\nimport time\nfor _ in tqdm(range(30), desc='boot time', "
                                  "mininterval=0):\n    time.sleep(0.002)\nprint('measured 30 points')"),
        nbformat.v4.new_code_cell("from IPython.display import Markdown, display\n"
                                  "display(Markdown('- **native** measured: every runtime was measured.'))"),
        nbformat.v4.new_code_cell("import edgebench.plotting\nimport pandas as pd\n"
                                  "display(pd.DataFrame({'runtime': ['native', 'docker'] * 36, 'point': range(72), "
                                  "'measured': [1.0, 1.2] * 36, 'published': [1.0, 1.5] * 36}))"),
        nbformat.v4.new_code_cell("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                                  "%matplotlib inline\nplt.bar(['native', 'docker'], [1, 1.2]); plt.show()\n"
                                  "['figures/x/y.png', 'figures/x/y.pdf']  # a stray return value"),
        nbformat.v4.new_code_cell("display(Markdown('- **docker** (go-http): 1.2x the time of native, "
                                  "the paper 1.5x.'))"),
    ]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def _run(data: Path, experiment: str, run_id: str, target: str = "local") -> Path:
    run_dir = data / experiment / run_id
    (run_dir / "raw").mkdir(parents=True)
    (run_dir / "results.csv").write_text("experiment,runtime,metric,value,accelerator\n"
                                         "x,native,time_to_ready,3.0,\nx,linux-vm,time_to_ready,9000.0,tcg\n")
    (run_dir / "meta.json").write_text(json.dumps({
        "run_id": run_id, "status": "completed", "started_at": "2026-11-24T10:00:00", "ended_at": "2026-11-24T10:01:00",
        "rows": {"ok": 2, "failed": 1}, "parameters": {"profile": "quick"},
        "project": {"commit": "0123456789abcdef", "dirty": False},
        "target": {"target": target, "arch": "aarch64", "cores": 4, "memory_mb": 3792, "os": "Debian", "kernel": "6.1",
                   "cgroup_version": 2, "kvm": "yes"}}))
    return run_dir


@pytest.fixture
def site(tmp_path):
    data, figures = tmp_path / "data", tmp_path / "figures"
    _executed_notebook(figures / "time_to_ready" / "02_time_to_ready.ipynb", _run(data, "time_to_ready", "r1"))
    _executed_notebook(figures / "devices" / "pi2" / "time_to_ready" / "02_time_to_ready.ipynb",
                       _run(data, "time_to_ready", "r2", target="pi@pi2"))
    (figures / "time_to_ready" / "02_time_to_ready.failed.ipynb").write_text("{}")  # never a product
    index = report.build(figures, data, experiments=["time_to_ready", "iomt"])
    return index, data


@pytest.mark.slow  # its site executes a notebook in a kernel
def test_index_lists_pages_per_device_and_says_what_has_no_data(site):
    index, _ = site
    text = index.read_text()
    assert 'href="time_to_ready.html"' in text and 'href="devices/pi2/time_to_ready.html"' in text
    assert "this machine" in text and "pi2" in text
    assert "no data yet" in text and "make figures ONLY=iomt" in text
    assert "failed.ipynb" not in text


@pytest.mark.slow  # its site executes a notebook in a kernel
def test_a_page_has_no_code_its_run_and_relative_links_to_raw_data(site):
    index, data = site
    page = (index.parent / "devices" / "pi2" / "time_to_ready.html").read_text()
    assert "plt.bar" not in page and "print(" not in page  # code hidden
    assert "pi@pi2" in page and "aarch64" in page and "0123456789ab" in page and "2 ok, 1 failed (3 rows)" in page
    assert 'src="data:image/png;base64,' in page  # the figure travels with the page
    assert "<script" not in page  # nothing to fetch: it opens offline
    links = [part.split('"')[0].split("#")[0] for part in page.split('href="')[1:] if not part.startswith("#")]
    for link in links:
        assert not link.startswith(("/", "http")), link
        assert (index.parent / "devices" / "pi2" / link).resolve().exists(), link
    assert any(link.endswith("r2/results.csv") for link in links)


@pytest.mark.slow  # its site executes a notebook in a kernel
def test_the_front_page_says_on_what_how_and_from_which_papers_with_each_headline(site):
    index, _ = site
    text = index.read_text()
    assert "aarch64, 4 cores, 3792 MiB" in text and "cgroup v2" in text and "quick" in text
    assert "every VM ran under TCG" in text and "/dev/kvm is there, but runs no guest" in text
    assert "Unikernels vs. Containers: A Runtime-Level Performance Comparison" in text  # time_to_ready's paper
    assert text.count('src="data:image/png;base64,') == 2  # each page's main figure
    assert "docker (go-http): 1.2x the time of native, the paper 1.5x." in text  # findings, not the run notes


@pytest.mark.slow  # its site executes a notebook in a kernel
def test_a_page_shows_no_progress_no_stray_values_and_whole_tables(site):
    index, _ = site
    page = (index.parent / "time_to_ready.html").read_text()
    assert "it/s" not in page and "\u2588" not in page and "boot time:" not in page
    assert "measured 30 points" in page  # what the notebook printed for a reader stays
    assert "figures/x/y.png" not in page and "/r1" not in page.split("<table")[-1]
    assert page.count("<td>docker</td>") == 36 and "..." not in page
    assert "KVM yes" not in page and "every VM ran under TCG" in page


def test_report_in_a_real_headless_browser(site, tmp_path):
    index, _ = site
    chromium = shutil.which("chromium")
    need("chromium", None if chromium else "no `chromium` on this machine (`apt-get install chromium`; "
                                           "`make test` provisions it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        need("chromium", f"the playwright Python package is missing ({e}); `make setup` installs it")
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.goto(index.as_uri())
            assert page.title() == "edgebench report"
            hrefs = page.eval_on_selector_all("a", "els => els.map(e => e.href)")
            pages = sorted({h for h in hrefs if h.endswith(".html")})  # thumbnail and name link alike
            assert len(pages) == 2
            for url in pages:
                response = page.goto(url)
                assert response is None or response.ok, url
                images = page.evaluate("Array.from(document.images).map(i => i.complete && i.naturalWidth)")
                assert images and all(images), (url, images)
                shown = page.inner_text("body")
                assert "it/s" not in shown and "\u2588" not in shown, url  # no progress bar
                rows = page.eval_on_selector_all("table.dataframe", "ts => ts.map(t => t.tBodies[0].rows.length)")
                assert rows == [72], (url, rows)  # the whole table, scrolling in its box
                for raw in page.eval_on_selector_all("a", "els => els.map(e => e.href)"):
                    parts = urlsplit(raw)
                    if parts.scheme == "file":
                        assert Path(unquote(parts.path)).exists(), raw
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
    assert not problems, problems


def test_the_headline_is_the_findings_its_figures_cell_printed(tmp_path):
    """A figure drawn inline lands after the findings its cell printed (container overhead):
    the front page took the next cell's 'No EDP figure' for the finding."""
    def md(text):
        return {"output_type": "display_data", "data": {"text/markdown": text}, "metadata": {}}

    png = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=\n"}, "metadata": {}}
    cells = [{"cell_type": "code", "outputs": [md("- Every runtime was measured.")]},
             {"cell_type": "code", "outputs": [md("- **memory**, fair: docker +1.0%"), png]},
             {"cell_type": "code", "outputs": [md("**No EDP figure:** no power meter")]}]
    nb = tmp_path / "09.ipynb"
    nb.write_text(json.dumps({"cells": cells}))
    assert report.headline(nb) == ("iVBORw0KGgo=", "memory, fair: docker +1.0%", "Figure. memory, fair: docker +1.0%")
    cells[1]["outputs"] = [png]
    nb.write_text(json.dumps({"cells": cells}))
    assert report.headline(nb)[1] == "No EDP figure: no power meter"
    # A page shown by one call (notebooks 03-04): run notes, the figure, then its findings.
    cells[1]["outputs"] = [md("- Every runtime was measured."), png, md("- **go-http**: native ahead")]
    nb.write_text(json.dumps({"cells": cells}))
    assert report.headline(nb)[1] == "go-http: native ahead"


def test_the_front_page_starts_with_the_verdicts_on_the_papers_claims(tmp_path):
    table = pd.DataFrame({"paper": ["000", "000", "002"], "verdict": ["holds", "inconclusive", "not measurable here"]})
    page = report.index_html([], ["static_footprint"], None, table)
    first = page.index("Verdicts on the papers")
    assert first < page.index("Experiments")
    assert "<td>paper 000</td><td>1</td><td>1</td><td>0</td>" in page and 'href="verdicts.html"' in page
    assert "run <code>make verdicts" in report.index_html([], ["static_footprint"], None, None)


def test_a_page_that_measures_nothing_says_so_instead_of_a_missing_run(tmp_path):
    verdicts = report.Page("verdicts", "this machine", tmp_path / "00_verdicts.ipynb", "verdicts.html")
    assert report.meta_box(verdicts, tmp_path).reads == report.READERS["verdicts"]
    assert "measures nothing" in report.meta_table(verdicts, tmp_path)
    other = report.Page("time_to_ready", "this machine", tmp_path / "02_time_to_ready.ipynb", "time_to_ready.html")
    assert "No run directory found" in report.meta_table(other, tmp_path)
