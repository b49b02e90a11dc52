"""`make report`: a static HTML site of every experiment that has data, under figures/report/.

One page per executed notebook (`make figures` writes them to figures/<experiment>/, and for a
fleet to figures/devices/<device>/<experiment>/; `make compare` to figures/compare/), rendered
without code (nbconvert), with a header naming the device, the run and links to its raw data. An
index lists every experiment of the registry: its pages, or "no data yet" with the command that
makes some. Everything is relative and self-contained (figures embedded, no scripts, no CDN), so
the site opens from the file system, copied anywhere along with data/.

    python -m edgebench.report [--figures DIR] [--data DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.paths import DATA_DIR, FIGURES_DIR

REPORT_DIR_NAME = "report"
DEVICES_DIR_NAME = "devices"  # as edgebench.fleet writes them
THIS_MACHINE = "this machine"

_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
img { max-width: 100%; height: auto; }
.meta { background: #f8f8f8; border: 1px solid #ddd; padding: 0.5em 1em; margin-bottom: 1.5em; }
.missing { color: #888; }
pre { white-space: pre-wrap; background: #f8f8f8; padding: 0.5em; }
"""


@dataclass
class Page:
    """One executed notebook and what the report says about it."""
    experiment: str
    device: str                 # THIS_MACHINE, a fleet device's name, or "all devices" for compare
    notebook: Path
    href: str                   # the page, relative to the report's folder
    run_dir: Path | None = None
    meta: dict = field(default_factory=dict)


def run_of(notebook: dict, data_dir: Path, experiment: str) -> Path | None:
    """The run a notebook drew: the notebooks print their run directory."""
    pattern = re.compile(re.escape(experiment) + r"/([A-Za-z0-9][A-Za-z0-9._-]*)")
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []):
            text = out.get("text") or "".join((out.get("data") or {}).get("text/plain", ""))
            for run_id in pattern.findall("".join(text) if isinstance(text, list) else str(text)):
                if (data_dir / experiment / run_id / "meta.json").exists():
                    return data_dir / experiment / run_id
    return None


def find_pages(figures_dir: Path, data_dir: Path) -> list[Page]:
    """Every executed notebook under figures_dir (failed or partial ones are not products)."""
    pages = []

    def add(nb: Path, device: str, href: str):
        if nb.name.endswith((".failed.ipynb", ".partial.ipynb")):
            return
        experiment = nb.parent.name
        try:
            doc = json.loads(nb.read_text())
        except (OSError, json.JSONDecodeError):
            return
        page = Page(experiment, device, nb, href)
        page.run_dir = run_of(doc, data_dir, experiment)
        if page.run_dir:
            try:
                page.meta = json.loads((page.run_dir / "meta.json").read_text())
            except (OSError, json.JSONDecodeError):
                page.meta = {}
        pages.append(page)

    for nb in sorted(figures_dir.glob("*/*.ipynb")):
        if nb.parent.name in (REPORT_DIR_NAME, DEVICES_DIR_NAME):
            continue
        device = "all devices" if nb.parent.name == "compare" else THIS_MACHINE
        add(nb, device, f"{nb.parent.name}.html")
    for nb in sorted(figures_dir.glob(f"{DEVICES_DIR_NAME}/*/*/*.ipynb")):
        device = nb.parent.parent.name
        add(nb, device, f"{DEVICES_DIR_NAME}/{device}/{nb.parent.name}.html")
    return pages


def _rel(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def meta_table(page: Page, page_dir: Path) -> str:
    """Device facts and run metadata, with links to the raw data."""
    m = page.meta
    if not page.run_dir:
        return '<div class="meta missing">No run directory found for this notebook under data/.</div>'
    t = m.get("target") or {}
    project = m.get("project") or {}
    rows = {
        "device": ((f"{m['device']}: " if m.get("device") else "")
                   + f"{t.get('target', '?')} ({t.get('hostname') or ''})".replace(" ()", "")),
        "hardware": f"{t.get('cpu_model') or t.get('arch', '?')}, {t.get('cores', '?')} cores, "
                    f"{t.get('memory_mb', '?')} MiB, swap {t.get('swap_mb', '?')} MiB, KVM {t.get('kvm', '?')}",
        "system": f"{t.get('os') or '?'}, kernel {t.get('kernel') or '?'}, cgroup v{t.get('cgroup_version') or '?'}, "
                  f"governor {t.get('governor') or '?'}",
        "run": f"{m.get('run_id')}: {m.get('status')}, {m.get('started_at')} to {m.get('ended_at')}",
        "rows": ", ".join(f"{k} {v}" for k, v in (m.get("rows") or {}).items()) or "?",
        "parameters": ", ".join(f"{k}={v}" for k, v in (m.get("parameters") or {}).items()),
        "edgebench": f"{(project.get('commit') or '?')[:12]}{' (uncommitted changes)' if project.get('dirty') else ''}",
    }
    if m.get("error"):
        rows["error"] = m["error"]
    links = [(name, page.run_dir / name) for name in ("results.csv", "meta.json", "raw")]
    rows["raw data"] = " · ".join(f'<a href="{html.escape(_rel(p, page_dir))}">{name}</a>'
                                  for name, p in links if p.exists())
    body = "".join(f"<tr><th>{k}</th><td>{v if k == 'raw data' else html.escape(str(v))}</td></tr>"
                   for k, v in rows.items())
    return f'<div class="meta"><table>{body}</table></div>'


def render_notebook(nb: Path) -> str:
    """The notebook's outputs as HTML, without code and without scripts."""
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nbformat.read(str(nb), as_version=4))
    return body


def _document(title: str, body: str, index_href: str | None) -> str:
    back = f'<p><a href="{html.escape(index_href)}">&larr; all experiments</a></p>' if index_href else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_CSS}</style></head><body>{back}{body}</body></html>\n")


def index_html(pages: list[Page], experiments: list[str]) -> str:
    rows = []
    by_exp: dict[str, list[Page]] = {}
    for p in pages:
        by_exp.setdefault(p.experiment, []).append(p)
    for exp in [*experiments, *[e for e in by_exp if e not in experiments]]:
        mine = by_exp.get(exp)
        if not mine:
            hint = ("make compare" if exp == "compare" else f"make figures ONLY={exp}")
            rows.append(f'<tr><td>{html.escape(exp)}</td><td colspan="4" class="missing">no data yet: '
                        f"run <code>{html.escape(hint)}</code></td></tr>")
            continue
        for p in mine:
            m = p.meta
            counts = ", ".join(f"{k} {v}" for k, v in (m.get("rows") or {}).items())
            rows.append(f'<tr><td><a href="{html.escape(p.href)}">{html.escape(exp)}</a></td>'
                        f"<td>{html.escape(p.device)}</td><td>{html.escape(str(m.get('started_at') or ''))}</td>"
                        f"<td>{html.escape(str(m.get('status') or ''))}</td><td>{html.escape(counts)}</td></tr>")
    table = ("<table><tr><th>experiment</th><th>device</th><th>measured</th><th>status</th><th>rows</th></tr>"
             + "".join(rows) + "</table>")
    intro = ("<h1>edgebench report</h1><p>Each experiment's notebook as <code>make figures</code> ran it, without "
             "code: its tables (measured beside published), its figures, the device and run, and links to the "
             "raw data.</p>")
    return _document("edgebench report", intro + table, None)


def build(figures_dir: Path = FIGURES_DIR, data_dir: Path = DATA_DIR, out_dir: Path | None = None,
          experiments: list[str] | None = None) -> Path:
    """Write the site; returns its index.html."""
    from edgebench.experiments import EXPERIMENTS
    figures_dir, data_dir = Path(figures_dir), Path(data_dir)
    out_dir = Path(out_dir or figures_dir / REPORT_DIR_NAME)
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = find_pages(figures_dir, data_dir)
    for p in pages:
        path = out_dir / p.href
        path.parent.mkdir(parents=True, exist_ok=True)
        header = f"<h1>{html.escape(p.experiment)} <small>on {html.escape(p.device)}</small></h1>"
        body = header + meta_table(p, path.parent) + render_notebook(p.notebook)
        path.write_text(_document(f"{p.experiment} ({p.device})", body, _rel(out_dir / "index.html", path.parent)))
    names = experiments if experiments is not None else [*EXPERIMENTS, "compare"]
    index = out_dir / "index.html"
    index.write_text(index_html(pages, names))
    return index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--figures", default=str(FIGURES_DIR), help="where make figures wrote the notebooks")
    ap.add_argument("--data", default=str(DATA_DIR), help="the runs' data (linked from the pages)")
    ap.add_argument("--out", default=None, help="where the site goes (default: <figures>/report)")
    args = ap.parse_args(argv)
    index = build(Path(args.figures), Path(args.data), Path(args.out) if args.out else None)
    pages = len(find_pages(Path(args.figures), Path(args.data)))
    print(f"report: {pages} page(s); open {index}" + ("" if pages else " (no data yet: run make figures first)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
