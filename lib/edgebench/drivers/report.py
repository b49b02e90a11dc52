"""`make report`: a static HTML site of every experiment that has data, under figures/report/.

One page per executed notebook (`make figures` writes them to figures/<experiment>/, and for a
fleet to figures/devices/<device>/<experiment>/; `make compare` to figures/compare/), rendered
without code (nbconvert), with a header naming the device, the run and links to its raw data. A
page from a smoke or quick run starts with what its numbers are worth, and its tables read as a
reader reads them (readable_tables). An index explains the papers' numbers and the runtimes'
labels and lists every experiment of the registry: its pages, or "no data yet" with the command
that makes some. Everything is relative and self-contained (figures embedded, no scripts, no CDN), so
the site opens from the file system, copied anywhere along with data/.

This module gathers what the pages say; the HTML is in the Jinja2 templates beside it
(drivers/templates/), which escape every value they are given.

    python -m edgebench.drivers.report [--figures DIR] [--data DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from bs4 import BeautifulSoup
from jinja2 import Environment, PackageLoader, StrictUndefined

from edgebench.answer import profile_caveats as answer_caveats
from edgebench.answer import sentences as answer_sentences
from edgebench.claims import MIN_N
from edgebench.drivers.verdicts import BY_DEVICE_COLUMNS, VERDICTS, VERDICTS_DIR_NAME, device_file
from edgebench.drivers.verdicts import counts as verdict_counts
from edgebench.experiments import EXPERIMENTS
from edgebench.papers import Paper, papers_of
from edgebench.paths import DATA_DIR, FIGURES_DIR
from edgebench.plotting.style import FIGURE_NAME_KEY, HEALTH_MARK
from edgebench.plotting.tables import PROFILE_CAVEATS, counted
from edgebench.tools.health import BUSY_CPUS

REPORT_DIR_NAME = "report"
DEVICES_DIR_NAME = "devices"  # as edgebench.drivers.fleet writes them
THIS_MACHINE = "this machine"

# Autoescape on for every template (they are all HTML, and their names end in .j2, which
# select_autoescape would not recognise); a name a template misspells fails instead of printing "".
TEMPLATES = Environment(loader=PackageLoader("edgebench.drivers", "templates"), autoescape=True,
                        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)

# A notebook's outputs a reader does not read: progress bars (tqdm writes each update to stderr,
# which papermill keeps as its own output), and the run directory the notebook prints for
# `run_of` (the page's header names the run).
_PROGRESS = re.compile(r"\r|\u2588|it/s\]|s/it\]|\d+%\|")
_RUN_DIR_LINE = re.compile(r"^\S*/data/[\w.-]+/[\w.-]+/?$")


@dataclass
class Page:
    """One executed notebook and what the report says about it."""
    experiment: str
    device: str                 # THIS_MACHINE, a fleet device's name, or "all devices" for compare
    notebook: Path
    href: str                   # the page, relative to the report's folder
    run_dir: Path | None = None
    meta: dict = field(default_factory=dict)

    @property
    def profile(self) -> str:
        return str((self.meta.get("parameters") or {}).get("profile") or "")


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
        measured_on = (page.meta.get("target") or {}).get("target")
        if device == THIS_MACHINE and measured_on and measured_on != "local":
            page.device = measured_on  # make figures TARGET=pi@pi4 without a fleet: the page names it
        judged_on = str(((doc.get("metadata") or {}).get("papermill") or {}).get("parameters", {}).get("target", ""))
        if experiment == "verdicts" and "," in judged_on:  # make verdicts TARGET=a,b: the devices it judged
            page.device = judged_on.replace(",", ", ")
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


def accelerators(run_dir: Path | None) -> set[str]:
    """How the run's VM rows ran ('kvm', 'tcg'), from its results."""
    try:
        with open(Path(run_dir) / "results.csv", newline="") as f:
            return {row["accelerator"] for row in csv.DictReader(f) if row.get("accelerator")}
    except (OSError, TypeError, KeyError):
        return set()


def vm_text(facts: dict, accels: set[str]) -> str:
    """What the VMs ran on, from the rows: /dev/kvm can exist where it runs no guest (a VM
    inside a VM), so the device's `kvm` fact alone would say KVM where every row says tcg."""
    if "tcg" in accels and "kvm" not in accels:
        kvm_there = str(facts.get("kvm")).lower() in ("yes", "true", "no-guests")
        why = " (/dev/kvm is there, but runs no guest)" if kvm_there else ""
        return f"every VM ran under TCG, software emulation{why}: not comparable with the papers' KVM numbers"
    if "kvm" in accels:
        return "VMs ran under KVM" + (", some under TCG" if "tcg" in accels else "")
    return f"no VM in this run (/dev/kvm: {facts.get('kvm', '?')})"


def hardware(t: dict) -> str:
    emulated = f"; {t['emulated_device']}" if t.get("emulated_device") else ""
    return (f"{t.get('cpu_model') or t.get('arch', '?')}, {t.get('cores', '?')} cores, "
            f"{t.get('memory_mb', '?')} MiB, swap {t.get('swap_mb', '?')} MiB{emulated}")


def readable_value(value) -> str:
    """A parameter's value as a reader writes it: 'go-http, node-http', not "['go-http', 'node-http']"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(readable_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {readable_value(v)}" for k, v in value.items())
    return re.sub(r",(?=\S)", ", ", str(value))  # "native,docker" as the lists read


def parameters_text(parameters: dict) -> str:
    """'apps: go-http, node-http; repetitions: 3; not set: cpus': the run's parameters, unset ones named last."""
    unset = [k for k, v in parameters.items() if v is None or v == "" or v == [] or v == {}]
    shown = [f"{k}: {readable_value(v)}" for k, v in parameters.items() if k not in unset]
    return "; ".join(shown + ([f"not set: {', '.join(unset)}"] if unset else []))


def rows_text(rows: dict) -> str:
    """'710 ok, 8 failed, 24 not measurable (742 rows)' from the run's row counts."""
    if not rows:
        return "?"
    total = sum(int(n) for n in rows.values())
    return ", ".join(f"{n} {status}" for status, n in rows.items()) + f" ({counted(total, 'row')})"


# A card's word on its page's profile (the page itself starts with the whole caveat).
PROFILE_TAGS = {"smoke": "smoke test, numbers mean nothing", "quick": "quick profile, indicative only"}


def repetitions_of(parameters: dict):
    """The repetitions a run made: the parsed count (`reps`) every record keeps; runs made before
    kept the count itself as `repetitions` (today that is the cell's, 0 for the profile's)."""
    return parameters.get("reps") or parameters.get("repetitions")


def caveat(profile: str, repetitions=None) -> str:
    """What a page from a smoke or quick run says first, in its caveat box: what its numbers are
    worth ("" for another profile)."""
    text = PROFILE_CAVEATS.get(profile)
    if not text:
        return ""
    if repetitions:
        text += f" This run: {counted(int(repetitions), 'repetition')} per point."
    return text


# Pages of notebooks that measure nothing, and what they read instead.
READERS = {"compare": "This page measures nothing: it puts the runs under data/ side by side (make compare).",
           "verdicts": "This page measures nothing: it judges the papers' claims on the latest runs under data/ "
                       "(make verdicts)."}


@dataclass
class Link:
    name: str
    href: str


@dataclass
class MetaRow:
    """A line of a page's header: its text, or the links it holds (the raw data)."""
    name: str
    text: str = ""
    links: list[Link] = field(default_factory=list)


@dataclass
class MetaBox:
    """A page's header (meta.html.j2): its run's rows, or what it reads instead of a run (READERS);
    neither says that no run was found."""
    rows: list[MetaRow] = field(default_factory=list)
    reads: str = ""


def meta_box(page: Page, page_dir: Path, keys: dict[str, str] | None = None) -> MetaBox:
    """Device facts and run metadata, with links to the raw data, and `keys` to what the page's
    tables show (table_keys)."""
    m = page.meta
    if not page.run_dir:
        # make compare, make verdicts: they read every run, they make none
        return MetaBox(reads=READERS.get(page.experiment, ""))
    t = m.get("target") or {}
    project = m.get("project") or {}
    texts = {
        "device": ((f"{m['device']}: " if m.get("device") else "")
                   + f"{t.get('target', '?')} ({t.get('hostname') or ''})".replace(" ()", "")),
        "hardware": hardware(t),
        "VMs": vm_text(t, accelerators(page.run_dir)),
        "system": f"{t.get('os') or '?'}, kernel {t.get('kernel') or '?'}, cgroup v{t.get('cgroup_version') or '?'}, "
                  f"governor {t.get('governor') or '?'}",
        "run": f"{m.get('run_id')}: {m.get('status')}, {m.get('started_at')} to {m.get('ended_at')}",
        "rows": rows_text(m.get("rows") or {}),
        "parameters": parameters_text(m.get("parameters") or {}),
        "edgebench": f"{(project.get('commit') or '?')[:12]}{' (uncommitted changes)' if project.get('dirty') else ''}",
    }
    if m.get("error"):
        texts["error"] = str(m["error"])
    texts["raw data"] = ""  # its links, below: the row keeps its place before the keys
    texts.update(keys or {})
    links = [Link(name, _rel(page.run_dir / name, page_dir)) for name in ("results.csv", "meta.json", "raw")
             if (page.run_dir / name).exists()]
    return MetaBox(rows=[MetaRow(name, text, links if name == "raw data" else []) for name, text in texts.items()])


def meta_table(page: Page, page_dir: Path, keys: dict[str, str] | None = None) -> str:
    """The page's header (meta_box) as HTML."""
    return TEMPLATES.get_template("meta.html.j2").render(meta=meta_box(page, page_dir, keys))


NO_VALUE = "\u2014"
MISSING = {"NaN", "nan", "None", "<NA>", "NaT"}  # how pandas prints a missing value
SIGNIFICANT = 4
# A plain decimal as pandas prints one; an id with leading zeros ("000") or an exponent is left alone.
_DECIMAL = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?$")


def readable_number(text: str) -> str:
    """A number as pandas printed it, as a reader reads it: '381.0' -> '381', '16.857097' ->
    '16.86' (SIGNIFICANT digits, but none of the integer part dropped); anything else as it is."""
    if not _DECIMAL.match(text):
        return text
    value = float(text)
    if value.is_integer():
        return str(int(value))
    if len(text.lstrip("-").replace(".", "").lstrip("0")) <= SIGNIFICANT:
        return text
    return f"{value:.0f}" if abs(value) >= 10 ** (SIGNIFICANT - 1) else f"{value:.{SIGNIFICANT}g}"


def no_value_key(columns: list[str]) -> str:
    """What an em dash means in each of these columns: an interval's end needs MIN_N repetitions,
    a paper's value may not exist, anything else was not measured or does not apply."""
    interval = [c for c in columns if re.search(r"(^|_)ci|_low$|_high$", c)]
    published = [c for c in columns if c not in interval and re.search(r"published|paper", c)]
    other = [c for c in columns if c not in interval and c not in published]
    said = [f"{', '.join(interval)}: no interval (fewer than {MIN_N} repetitions)" if interval else "",
            f"{', '.join(published)}: the paper gives no value there" if published else "",
            f"{', '.join(other)}: not measured for that row, or not part of it" if other else ""]
    return f"{NO_VALUE} no value. " + "; ".join(x for x in said if x) + "."


def _counting_index(head_rows: list, body_rows: list) -> bool:
    """Whether the table's first column is pandas' unnamed row index (0, 1, 2...): it counts rows
    and means nothing to a reader; a named or labelled index stays."""
    if len(head_rows) != 1 or not body_rows:
        return False
    corner = head_rows[0].find(["th", "td"])
    labels = [row.find_all("th", recursive=False) for row in body_rows]
    return (corner is not None and not corner.get_text(strip=True)
            and all(len(ths) == 1 and ths[0].get_text(strip=True).isdigit() for ths in labels))


def readable_tables(markup: str) -> str:
    """The DataFrames a notebook showed (pandas' HTML), as a reader reads them: no row index that
    only counts rows, numbers to SIGNIFICANT digits and counts as integers, an em dash for a
    missing value with a key under its table saying what it means there."""
    soup = BeautifulSoup(markup, "html.parser")
    for table in soup.select("table.dataframe"):
        head_rows = table.thead.find_all("tr") if table.thead else []
        body_rows = table.tbody.find_all("tr") if table.tbody else []
        if _counting_index(head_rows, body_rows):
            for row in head_rows + body_rows:
                row.find(["th", "td"]).decompose()
        names = [th.get_text(strip=True) for th in head_rows[0].find_all(["th", "td"])] if len(head_rows) == 1 else []
        dashed: dict[str, None] = {}
        for row in body_rows:
            for at, cell in enumerate(row.find_all(["th", "td"], recursive=False)):
                if cell.name != "td":
                    continue
                text = cell.get_text(strip=True)
                if text in MISSING:
                    cell.string = NO_VALUE
                    dashed[names[at] if at < len(names) else ""] = None
                elif text != (readable := readable_number(text)):
                    cell.string = readable
        if dashed:
            key = soup.new_tag("p", attrs={"class": "table-key"})
            key.string = (no_value_key([c for c in names if c in dashed]) if all(dashed)
                          else f"{NO_VALUE} no value.")
            table.insert_after(key)
    return str(soup)


def _markdown_outputs(outputs) -> list:
    return [o for o in outputs if "text/markdown" in (o.get("data") or {})]


def _first_line(out) -> str:
    text = "".join((out.get("data") or {}).get("text/markdown", "")).strip()
    first = next((x for x in text.splitlines() if x.strip()), "")
    return re.sub(r"\*\*|`", "", first).lstrip("- ").strip()


def figures(cells: list) -> list[tuple[int, int, str]]:
    """Every figure (PNG output) of a notebook's cells as (cell, output, caption). The caption is
    the first line of the Markdown that follows the figure in its cell, else of what its cell
    printed before it (a figure drawn inline appears at the end of its cell, after the findings
    the cell printed), else of the first Markdown output of a later cell."""
    found = []
    for at_cell, cell in enumerate(cells):
        outputs = cell.get("outputs", [])
        for at, out in enumerate(outputs):
            if "image/png" not in (out.get("data") or {}):
                continue
            same_cell = _markdown_outputs(outputs[at + 1:]) or _markdown_outputs(outputs[:at])
            later = (o for c in cells[at_cell + 1:] for o in _markdown_outputs(c.get("outputs", [])))
            first = same_cell[0] if same_cell else next(later, None)
            found.append((at_cell, at, _first_line(first) if first else ""))
    return found


_SAVED_AS = re.compile(r"""save_figure\(\s*[^,]+,\s*[^,]+,\s*["']([\w.-]+)["']""")


def alt_text(cells: list, at_cell: int, at: int, caption: str) -> str:
    """The alt text of the figure at output `at` of cell `at_cell`: the heading of its section, the
    name it is saved under (what show_figure put in its output's metadata, else its cell's
    save_figure calls, in order, where each figure has one) and its caption. Its title is drawn
    inside the image, where a screen reader cannot read it."""
    headings = [line.lstrip("#").strip() for cell in cells[:at_cell + 1] if cell.get("cell_type") == "markdown"
                for line in "".join(cell.get("source", "")).splitlines() if line.startswith("#")]
    outputs = cells[at_cell].get("outputs", [])
    name = str((outputs[at].get("metadata") or {}).get(FIGURE_NAME_KEY) or "") if at < len(outputs) else ""
    if not name:  # a notebook that saves its figures in its own cell (older notebooks, coursework copies)
        saved = _SAVED_AS.findall("".join(cells[at_cell].get("source", "")))
        images = [i for i, o in enumerate(outputs) if "image/png" in (o.get("data") or {})]
        name = saved[images.index(at)] if len(saved) == len(images) and at in images else ""
    what = "Figure" + (f" '{name.replace('_', ' ')}'" if name else "") + (f" ({headings[-1]})" if headings else "")
    return what + (f". {caption}" if caption else "")


def reader_outputs(doc):
    """The notebook (nbformat node) with only what a reader reads: no stderr (progress bars,
    warnings for whoever runs it), no progress or run-directory lines on stdout, and no stray
    return values (an execute_result that is only text/plain, such as the paths save_figure
    returns); tables (readable_tables), figures (with an alt text), Markdown and errors stay."""
    for cell in doc.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                if out.name == "stderr":
                    continue
                lines = [line for line in out.text.splitlines()
                         if line.strip() and not _PROGRESS.search(line) and not _RUN_DIR_LINE.match(line.strip())]
                if not lines:
                    continue
                out.text = "\n".join(lines) + "\n"
            elif out.output_type == "execute_result" and set(out.get("data", {})) <= {"text/plain"}:
                continue
            elif "dataframe" in "".join(out.get("data", {}).get("text/html", "")):
                out.data["text/html"] = readable_tables("".join(out.data["text/html"]))
            kept.append(out)
        cell.outputs = kept
    for at_cell, at, caption in figures(doc.cells):
        image_meta = doc.cells[at_cell].outputs[at].setdefault("metadata", {}).setdefault("image/png", {})
        image_meta.setdefault("alt", alt_text(doc.cells, at_cell, at, caption))
    return doc


def table_keys(body: str, meta: dict) -> dict[str, str]:
    """What a page's tables need said once, for the page's header: what the health column counts,
    where the page shows one (`meta`: its run's, which says why throttling could not be checked)."""
    if not re.search(r"<th[^>]*>health</th>", body):
        return {}
    health = (meta.get("notes") or {}).get("health") or {}
    unchecked = str(health.get("throttle_unknown") or "").split(":")[0]  # "no throttling sensor on local: ..."
    blank = f"not busy; throttling could not be checked ({unchecked})" if unchecked else "neither was seen"
    busy = health.get("busy_threshold_cpus") or BUSY_CPUS
    text = (f"how many of a cell's n repetitions ran while the device throttled ({HEALTH_MARK} throttled k/n: a "
            f"sensor said so) or was busy ({HEALTH_MARK} busy k/n: other processes used {busy:g} CPU or more "
            f"just before the point). Blank: {blank}.")
    if re.search(r"<td>unknown \d+/\d+", body):
        text += (" unknown k/n: for k of them throttling could not be read (no sensor, or a failed read), so they "
                 "may have run throttled.")
    return {"health column": text}


def render_notebook(nb: Path) -> str:
    """The notebook's outputs a reader reads (reader_outputs) as HTML, without code or scripts."""
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(reader_outputs(nbformat.read(str(nb), as_version=4)))
    return body


def headline(nb: Path) -> tuple[str | None, str, str]:
    """The notebook's main figure (its first image, base64 PNG), one line of its findings (the
    figure's caption, see figures) and its alt text."""
    try:
        cells = json.loads(nb.read_text()).get("cells", [])
    except (OSError, json.JSONDecodeError):
        return None, "", ""
    shown = figures(cells)
    if not shown:
        return None, "", ""
    at_cell, at, caption = shown[0]
    image = "".join(cells[at_cell]["outputs"][at]["data"]["image/png"]).replace("\n", "")
    return image, caption, alt_text(cells, at_cell, at, caption)


@dataclass
class Device:
    """A row of the front page's "Measured on": a device, how its VMs ran, the profiles and repetitions run there."""
    name: str
    hardware: str
    system: str
    vms: str
    profiles: str
    repetitions: str


def devices(pages: list[Page]) -> list[Device]:
    """One row per device that has a run (compare reads runs, it makes none)."""
    by_device: dict[str, list[Page]] = {}
    for p in pages:
        if p.meta and p.experiment != "compare":
            by_device.setdefault(p.device, []).append(p)
    rows = []
    for device, mine in by_device.items():
        t = mine[0].meta.get("target") or {}
        accels = set().union(*(accelerators(p.run_dir) for p in mine))
        params = [p.meta.get("parameters") or {} for p in mine]
        rows.append(Device(
            name=device if device == t.get("target") else f"{device}: {t.get('target', '?')}",
            hardware=hardware(t),
            system=f"{t.get('os') or '?'}, kernel {t.get('kernel') or '?'}, cgroup v{t.get('cgroup_version') or '?'}",
            vms=vm_text(t, accels),
            profiles=", ".join(sorted({str(x.get("profile")) for x in params if x.get("profile")})) or "?",
            repetitions=", ".join(sorted({str(repetitions_of(x)) for x in params if repetitions_of(x)})) or "1"))
    return rows


def papers_shown(papers: dict[str, list]) -> list[tuple[Paper, list[str]]]:
    """The papers behind the experiments shown, by number, each with the experiments that reproduce it."""
    by_paper: dict[str, tuple[Paper, list[str]]] = {}
    for exp, mine in papers.items():
        for paper in mine:
            by_paper.setdefault(paper.number, (paper, []))[1].append(exp)
    return sorted(by_paper.values(), key=lambda pe: pe[0].number)


# What the labels in tables and figures add to a runtime's name, and the marks beside values.
LABELS = (
    ("(TCG)", "after a VM runtime (nanos, unikraft, linux-vm): the VM ran under TCG, QEMU's software emulation, "
              "because KVM could not run it on this device. Its times are the emulator's, not comparable with "
              "the papers' KVM numbers."),
    ("pc, microvm", "after a VM runtime: the QEMU machine type it booted. pc is QEMU's standard PC (PCI bus, "
                    "SeaBIOS firmware); microvm its minimal machine (no PCI bus, qboot firmware)."),
    ("(cold), (first)", "a start after the page cache was dropped; a start whose image was first pulled from a "
                        "registry. A runtime without either ran a warm start."),
    ("fair, published", "the protocol: fair measures every runtime the same way; published repeats the paper's "
                        "own method."),
    (HEALTH_MARK, "measured while the device throttled or was busy; each page's header says how it is counted."),
    ("000-004", "the papers, by the numbers in the table above."),
)


def front_caveats(pages: list[Page]) -> list[str]:
    """The boxes the front page starts with: which pages come from smoke or quick runs, and what
    their numbers are worth."""
    measured = [p for p in pages if p.profile]
    boxes = []
    for profile, text in PROFILE_CAVEATS.items():
        mine = list(dict.fromkeys(p.experiment for p in measured if p.profile == profile))
        if mine:
            which = ("Every page here comes" if len(mine) == len({p.experiment for p in measured})
                     else f"The page {mine[0]} comes" if len(mine) == 1 else f"The pages {', '.join(mine)} come")
            boxes.append(f"{which} from a {profile}-profile run. {text}")
    return boxes


@dataclass
class VerdictCounts:
    """How many claims hold, are contradicted, inconclusive or not measurable here: per paper for
    one device, per device for several (make verdicts TARGET=a,b)."""
    claims: str                         # "146 claims", "146 claims on 3 devices"
    columns: list[str]                  # the verdicts some claim got
    rows: list[tuple[str, list[int]]]   # ("paper 000" or a device, a count per column)


def _summary(counts: pd.DataFrame, claims: str, label) -> VerdictCounts:
    counts = counts.loc[:, (counts != 0).any()]  # a verdict no claim got takes no column
    return VerdictCounts(claims, [str(v) for v in counts.columns],
                         [(label(row), [int(n) for n in counts.loc[row]]) for row in counts.index])


def verdict_summary(table: pd.DataFrame | None, by_device: pd.DataFrame | None = None) -> VerdictCounts | None:
    """What the front page starts with (make verdicts): the counts per paper, or with several
    devices (by_device.csv: a verdict column per device) per device; None before there are verdicts."""
    if by_device is not None and not by_device.empty:
        devices = [c for c in by_device.columns if c not in BY_DEVICE_COLUMNS]
        counts = pd.DataFrame({d: by_device[d].value_counts() for d in devices}).T.fillna(0)
        counts = counts.reindex(columns=list(VERDICTS), fill_value=0)
        return _summary(counts, f"{counted(len(by_device), 'claim')} on {counted(len(devices), 'device')}", str)
    if table is None or table.empty:
        return None
    return _summary(verdict_counts(table), counted(len(table), "claim"), lambda paper: f"paper {paper}")


@dataclass
class Answer:
    """edgebench's own answer for a device (make verdicts writes it): one line per app and memory
    level; `device` '' for the only one."""
    caveats: list[str]
    lines: list[str]
    device: str = ""


def answer_summary(table: pd.DataFrame | None, device: str = "") -> Answer | None:
    """Below the verdicts (make verdicts writes it; its page has the table with every interval)."""
    if table is None or table.empty:
        return None
    return Answer(list(answer_caveats(table)), list(answer_sentences(table)), device)


def _read_answer(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    return pd.read_csv(path, dtype={"why": str, "accelerator": str}).fillna({"why": "", "accelerator": ""})


def read_verdicts(figures_dir: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None, dict[str, pd.DataFrame]]:
    """What make verdicts left in figures/verdicts/: the verdicts of one device, or the claims by
    device, and each device's answer ('' for the only one)."""
    folder = Path(figures_dir) / VERDICTS_DIR_NAME
    by_device_csv, verdicts_csv = folder / "by_device.csv", folder / "verdicts.csv"
    if by_device_csv.exists():
        wide = pd.read_csv(by_device_csv, dtype={"paper": str})
        devices = [c for c in wide.columns if c not in BY_DEVICE_COLUMNS]
        answers = {d: _read_answer(folder / f"{device_file('answer', d)}.csv") for d in devices}
        return None, wide, {d: a for d, a in answers.items() if a is not None}
    table = pd.read_csv(verdicts_csv, dtype={"paper": str}) if verdicts_csv.exists() else None
    answer = _read_answer(folder / "answer.csv")
    return table, None, ({"": answer} if answer is not None else {})


@dataclass
class Card:
    """An experiment on the front page: one of its pages, with its main figure and the first line
    of its findings, or (href "") that it has no data yet and the command that makes some."""
    experiment: str
    href: str = ""
    hint: str = ""
    device: str = ""
    image: str | None = None    # base64 PNG
    alt: str = ""
    line: str = ""              # the first line of its findings
    tag: str = ""               # PROFILE_TAGS
    status: str = ""
    started_at: str = ""
    rows: str = ""


def cards(pages: list[Page], experiments: list[str]) -> list[Card]:
    """The registry's experiments in order, then any other page found (but verdicts: the front page
    starts with them)."""
    by_exp: dict[str, list[Page]] = {}
    for p in pages:
        by_exp.setdefault(p.experiment, []).append(p)
    out = []
    for exp in [*experiments, *[e for e in by_exp if e not in experiments and e != "verdicts"]]:
        mine = by_exp.get(exp)
        if not mine:
            out.append(Card(exp, hint="make compare" if exp == "compare" else f"make figures ONLY={exp}"))
            continue
        for p in mine:
            m = p.meta
            image, line, alt = headline(p.notebook)
            out.append(Card(exp, p.href, device=p.device, image=image, alt=alt, line=line,
                            tag=PROFILE_TAGS.get(p.profile, ""), status=str(m.get("status") or ""),
                            started_at=str(m.get("started_at") or ""), rows=rows_text(m.get("rows") or {})))
    return out


VERDICTS_HREF = "verdicts.html"  # the verdicts notebook's page, beside the index


def index_html(pages: list[Page], experiments: list[str], papers: dict[str, list] | None = None,
               verdicts: pd.DataFrame | None = None, answer: pd.DataFrame | None = None,
               by_device: pd.DataFrame | None = None, answers: dict[str, pd.DataFrame] | None = None) -> str:
    """The front page: the verdicts on the papers' claims (per paper, or per device for several:
    `by_device`) and edgebench's answer (`answer`, or one per device: `answers`), the device(s) and
    how their VMs ran, the profiles, the papers, and one card per experiment page with its main
    figure and the first line of its findings."""
    answers = answers if answers is not None else {"": answer}
    shown = [a for a in (answer_summary(table, device) for device, table in answers.items()) if a]
    return TEMPLATES.get_template("index.html.j2").render(
        title="edgebench report", index_href=None, caveats=front_caveats(pages),
        verdicts=verdict_summary(verdicts, by_device), answers=shown, verdicts_href=VERDICTS_HREF, min_n=MIN_N,
        devices=devices(pages), papers=papers_shown(papers or {}), labels=LABELS, cards=cards(pages, experiments))


def page_html(page: Page, page_dir: Path, index_href: str, caveats: list[str]) -> str:
    """An experiment's page: `caveats` (what its numbers are worth), its header and its notebook."""
    notebook = render_notebook(page.notebook)
    return TEMPLATES.get_template("page.html.j2").render(
        title=f"{page.experiment} ({page.device})", index_href=index_href, experiment=page.experiment,
        device=page.device, caveats=caveats, meta=meta_box(page, page_dir, table_keys(notebook, page.meta)),
        notebook=notebook)


def build(figures_dir: Path = FIGURES_DIR, data_dir: Path = DATA_DIR, out_dir: Path | None = None,
          experiments: list[str] | None = None) -> Path:
    """Write the site; returns its index.html."""
    figures_dir, data_dir = Path(figures_dir), Path(data_dir)
    out_dir = Path(out_dir or figures_dir / REPORT_DIR_NAME)
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = find_pages(figures_dir, data_dir)
    # The pages that read other runs (verdicts, compare) carry the caveats of the runs they read.
    read = {p.profile for p in pages if p.profile}
    for p in pages:
        path = out_dir / p.href
        path.parent.mkdir(parents=True, exist_ok=True)
        caveats = ([caveat(p.profile, repetitions_of(p.meta.get("parameters") or {}))] if p.run_dir
                   else [caveat(profile) for profile in PROFILE_CAVEATS if profile in read])
        path.write_text(page_html(p, path.parent, _rel(out_dir / "index.html", path.parent), [c for c in caveats if c]))
    names = experiments if experiments is not None else [*EXPERIMENTS, "compare"]
    index = out_dir / "index.html"
    papers = {name: papers_of(EXPERIMENTS[name].references) for name in names if name in EXPERIMENTS}
    verdicts, by_device, answers = read_verdicts(figures_dir)
    index.write_text(index_html(pages, names, papers, verdicts, by_device=by_device, answers=answers))
    return index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--figures", default=str(FIGURES_DIR), help="where make figures wrote the notebooks")
    ap.add_argument("--data", default=str(DATA_DIR), help="the runs' data (linked from the pages)")
    ap.add_argument("--out", default=None, help="where the site goes (default: <figures>/report)")
    args = ap.parse_args(argv)
    index = build(Path(args.figures), Path(args.data), Path(args.out) if args.out else None)
    pages = len(find_pages(Path(args.figures), Path(args.data)))
    print(f"report: {counted(pages, 'page')}; open {index}"
          + ("" if pages else " (no data yet: run make figures first)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
