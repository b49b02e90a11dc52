"""The README is a front door: short, every notebook on one line, nothing outside the repository."""

from __future__ import annotations

from edgebench.experiments import EXPERIMENTS
from edgebench.papers import PAPERS
from edgebench.paths import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text()


def test_the_readme_stays_a_front_door():
    assert len(README.encode()) < 12 * 1024, "move detail to docs/manual.md"
    assert "../shared" not in README  # a reader's clone has no such folder
    assert (PROJECT_ROOT / "docs" / "manual.md").exists() and "docs/manual.md" in README


def test_every_notebook_has_one_line_and_every_paper_its_title():
    for e in EXPERIMENTS.values():
        stem = e.notebook.removesuffix(".ipynb")
        assert README.count(f"| `{stem}` |") == 1, stem
    for paper in PAPERS.values():
        assert paper.title.split(" (")[0].split(":")[0] in README or paper.number == "003", paper.number
