"""`make verdicts`: every claim of data/reference/claims.csv judged on the latest run of its
experiment on TARGET, with its 95% interval (edgebench.claims has the rules), and edgebench's own
answer (edgebench.answer).

    python -m edgebench.drivers.verdicts [--target NAME[,NAME...]] [--profile any|quick|standard] [--papers 000,002]

runs notebooks/00_verdicts.ipynb headless into figures/verdicts/ (edgebench.drivers.figures'
runner). For one target it writes verdicts.csv (claim_id, paper, verdict, effect, effect_unit,
ci_low, ci_high, n, reason, ..., run, profile, run_date, device) and verdicts.md (what each verdict
means, the runs judged, a table per paper), answer.csv and answer.md beside it. For several
(TARGET=local,debian-v2) it writes by_device.csv and by_device.md (a row per claim, a column per
device) beside each device's verdicts-<device>.csv/.md and answer-<device>.csv/.md. `make report`
starts its front page with them.

The notebook is given absolute data and figures folders: its kernel runs in notebooks/, where a
relative EDGEBENCH_DATA_DIR would name another folder (and every claim would read "no run yet").
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from edgebench import answer
from edgebench.claims import (CLAIMS_FILE, CONFIDENCE, CONTRADICTED, HOLDS, INCONCLUSIVE, MIN_N, NOT_MEASURABLE, Claim,
                              Verdict, confidence_for, judge, load_claims)
from edgebench.drivers.figures import run_headless
from edgebench.drivers.fleet import device_name
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import EXPERIMENTS, NOTEBOOKS_DIR
from edgebench.paths import DATA_DIR, FIGURES_DIR
from edgebench.plotting.tables import PROFILE_CAVEATS, counted
from edgebench.results import UNFINISHED, latest_run, load_meta, load_results, run_target
from edgebench.units import as_list

COLUMNS = ["claim_id", "paper", "verdict", "effect", "effect_unit", "ci_low", "ci_high", "n", "reason",
           "repetitions_to_settle", "statement", "where", "experiment", "run", "profile", "run_date", "device",
           "emulated_device", "figures"]
RUN_COLUMNS = ["experiment", "run", "profile", "run_date", "device", "emulated_device"]
VERDICTS = [HOLDS, CONTRADICTED, INCONCLUSIVE, NOT_MEASURABLE]
# by_device.csv's columns but the one per device between them.
BY_DEVICE_COLUMNS = ("claim_id", "paper", "statement", "effect_unit", "measurable_on")
VERDICTS_DIR_NAME = "verdicts"
NOTEBOOK = NOTEBOOKS_DIR / "00_verdicts.ipynb"

# What a student reads first: each verdict in plain words.
MEANINGS = {
    HOLDS: "this device's numbers agree with the paper: the whole range the effect likely lies in (its 95% "
           "interval) is where the claim says it is.",
    CONTRADICTED: "this device's numbers disagree with the paper: none of that range is where the claim says.",
    INCONCLUSIVE: "the numbers cannot tell yet: the range lies partly on each side of what the claim says, or "
                  f"there are fewer than {MIN_N} repetitions to draw a range from. More repetitions would settle it.",
    NOT_MEASURABLE: "this device or run cannot test the claim, and the reason says why: no run yet, a runtime it "
                    "lacks, no power meter, a VM under software emulation, a smoke run. It says nothing for or "
                    "against the paper.",
}


# -- the runs judged ----------------------------------------------------------------------------

@dataclass(frozen=True)
class JudgedRun:
    """The latest run of an experiment on a target, as the verdicts read it."""
    path: Path
    meta: dict
    rows: pd.DataFrame

    @property
    def profile(self) -> str:
        return str((self.meta.get("parameters") or {}).get("profile") or "")

    @property
    def emulated_device(self) -> str:
        return str((self.meta.get("target") or {}).get("emulated_device") or "")

    def facts(self) -> dict[str, str]:
        """What the page's table of runs says of it: its id, profile, date and device."""
        status = self.meta.get("status")  # a run judged before it ended whole says so
        return dict(run=self.path.name + (f" ({status})" if status in UNFINISHED else ""),
                    profile=self.profile or "?", run_date=readable_date(self.meta),
                    device=str(self.meta.get("device") or run_target(self.meta) or "?"),
                    emulated_device=self.emulated_device)


def readable_date(meta: dict) -> str:
    """'2026-11-29 01:42 UTC' from the run's start (as it is written when it does not parse)."""
    started = str(meta.get("started_at") or "")
    try:
        return datetime.fromisoformat(started).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return started


def read_run(experiment: str, target: str | None, profile: str, data_dir: Path) -> JudgedRun | None:
    run_dir = latest_run(experiment, target, profile, data_dir, finished_first=True)
    return JudgedRun(run_dir, load_meta(run_dir), load_results(run_dir)) if run_dir else None


# -- one claim ----------------------------------------------------------------------------------

def _side(claim: Claim, side: str) -> str:
    """A side of a ratio: its runtime, with the conditions only that side has (256 MB against 512 MB)."""
    own = [f"{k[2:]}={v}" for k, v in claim.conditions.items() if k.startswith(f"{side}.")]
    runtime = claim.a if side == "a" else claim.b
    return f"{runtime} at {', '.join(own)}" if own else runtime


def effect_unit(claim: Claim) -> str:
    """What the effect's number is: a ratio of which runtime over which ("x (docker over nanos)"),
    a share of ok rows for a failure claim, else the claim's own unit (a bound on one runtime)."""
    if claim.kind == "failure":
        return f"share of ok rows ({claim.a} minus {claim.b})"
    if claim.b:
        return f"x ({_side(claim, 'a')} over {_side(claim, 'b')})"
    return claim.unit


def figure_name(claim: Claim) -> str:
    """The figure that shows the claim, as its experiment's notebook saves it ("exp/name.png"): the
    metric's own where the notebook draws several, else the experiment's main figure; '' if none."""
    experiment = EXPERIMENTS.get(claim.experiment)
    name = (experiment.metric_figures.get(claim.metric) or experiment.main_figure) if experiment else ""
    return f"{claim.experiment}/{name}.png" if name else ""


def figure_link(claim: Claim, figures_dir: Path, device: str = "") -> str:
    """The claim's figure relative to the verdicts folder, only if it was drawn: the fleet device's
    own (figures/devices/<device>/), else the one in figures/; '' when neither exists."""
    name = figure_name(claim)
    candidates = ([f"devices/{device}/{name}"] if device else []) + [name]
    found = next((c for c in candidates if name and (Path(figures_dir) / c).is_file()), "")
    return f"../{found}" if found else ""


def judged(claim: Claim, run: JudgedRun | None) -> Verdict:
    """The engine's verdict, except that a smoke run's numbers are no finding: a claim judged on
    one reads not measurable here, with why (the engine's own not-measurable reasons stay)."""
    verdict = judge(claim, run.rows if run else None, run.emulated_device if run else "",
                    confidence_for(run.meta, claim.claim_id) if run else CONFIDENCE)
    if run and run.profile == "smoke" and verdict.verdict != NOT_MEASURABLE:
        return Verdict(claim_id=claim.claim_id, paper=claim.paper, verdict=NOT_MEASURABLE, reason=answer.SMOKE_WHY)
    return verdict


def verdicts(claims: list[Claim], target: str | None = None, data_dir: Path = DATA_DIR,
             profile: str = "any", figures_dir: Path = FIGURES_DIR) -> pd.DataFrame:
    """One row per claim, judged on the latest run of its experiment (each run read once), with the
    effect's unit, the run's profile, date and device, and its figure where one was drawn."""
    runs: dict[str, JudgedRun | None] = {}
    out = []
    for claim in claims:
        if claim.experiment and claim.experiment not in runs:
            runs[claim.experiment] = read_run(claim.experiment, target, profile, data_dir)
        run = runs.get(claim.experiment) if claim.metric else None  # no metric: no run is judged for it
        device = str(run.meta.get("device") or "") if run else ""
        out.append({**asdict(judged(claim, run)), "effect_unit": effect_unit(claim), "statement": claim.statement,
                    "where": claim.where, "experiment": claim.experiment,
                    **(run.facts() if run else dict.fromkeys(RUN_COLUMNS[1:], "")),
                    "figures": figure_link(claim, figures_dir, device) if claim.metric else ""})
    return pd.DataFrame(out, columns=COLUMNS)


# -- what a student reads -----------------------------------------------------------------------

def _number(v) -> str:
    return "" if v is None or pd.isna(v) else f"{v:.3g}"


def effect_text(r) -> str:
    """'0.676x (docker over nanos)', '9.8 ms', '+100% share of ok rows (...)'; '' without an effect."""
    if pd.isna(r.effect):
        return ""
    unit = str(r.effect_unit) if pd.notna(r.effect_unit) else ""
    if unit.startswith("share"):
        return f"{r.effect:+.0%} {unit}"
    return f"{_number(r.effect)}{unit}" if unit.startswith("x") else f"{_number(r.effect)} {unit}".strip()


def interval_text(r) -> str:
    """The 95% interval, only where there is one; a value read exactly (or without spread) says so."""
    if pd.isna(r.ci_low):
        return ""
    if r.ci_low == r.ci_high:
        return "none needed: no spread"
    return f"{_number(r.ci_low)} to {_number(r.ci_high)}"


def why_text(r) -> str:
    """The reason, and for an inconclusive verdict what would settle it."""
    why = str(r.reason) if pd.notna(r.reason) else ""
    # Below MIN_N the reason already says an interval needs more.
    if r.verdict != INCONCLUSIVE or pd.isna(r.repetitions_to_settle) or r.n < MIN_N:
        return why
    # In values (pairs), as n counts them: a repetition of a run may give a claim several (one per
    # app, network mode or level), which make settle turns into the run's repetitions.
    return (f"{why}; about {counted(int(r.repetitions_to_settle), 'value')} (it has {int(r.n)}) would likely "
            "settle it: `make settle` measures them")


def legend() -> list[str]:
    return (["What the verdicts mean:", ""] + [f"- **{v}**: {text}" for v, text in MEANINGS.items()]
            + ["", "The effect is a ratio of two runtimes (\"1.5x (docker over native)\": docker's value is 1.5 "
               "times native's) or one runtime's value in the claim's unit. The 95% interval is the range the "
               "effect likely lies in, drawn from the repetitions; there is none below "
               f"{counted(MIN_N, 'repetition')}.", ""])


def run_caveats(table: pd.DataFrame) -> list[str]:
    """What the runs' profiles and devices make of the verdicts, naming the runs concerned."""
    runs = table[table["run"].astype(str) != ""].drop_duplicates(["device", "experiment", "run"])
    runs = runs.reset_index(drop=True)
    lines = []
    for profile, text in PROFILE_CAVEATS.items():
        text = text.split(": ", 1)[-1]  # "Quick profile: small sizes...": the line names the profile itself
        said = f"claims judged on one read not measurable here: {answer.SMOKE_WHY}." if profile == "smoke" else text
        lines += _caveat(f"a {profile} run", f"{profile.capitalize()} runs", runs, runs["profile"] == profile, said)
    emulated = runs["emulated_device"].fillna("").astype(str) != ""
    return lines + _caveat("a run on an emulated device", "Runs on an emulated device", runs, emulated,
                           "its times and rates are the emulator's, so claims about them read not measurable "
                           "here; its sizes and counts are still judged.")


def _caveat(one: str, many: str, runs: pd.DataFrame, mine: pd.Series, said: str) -> list[str]:
    """'**Every run judged is a quick run: ...**', or naming the runs that are, by device."""
    if not mine.any():
        return []
    if mine.all():
        return [f"**Every run judged is {one}: {said}**", ""]
    by_device = []
    for device, rows in runs.assign(mine=mine.to_numpy()).groupby("device", sort=True):
        chosen = sorted(rows.loc[rows["mine"], "experiment"])
        which = "every run" if len(chosen) == len(rows) else ", ".join(chosen)
        by_device += [f"{which} on {device}"] if chosen else []
    names = "; ".join(by_device) if runs["device"].nunique() > 1 else ", ".join(sorted(runs[mine]["experiment"]))
    return [f"**{many} ({names}): {said}**", ""]


def runs_markdown(table: pd.DataFrame) -> list[str]:
    """Which runs were judged: experiment, run id, profile, date, device; the devices in the order
    the table gives them (TARGET's, the by-device columns'), not the alphabet's."""
    runs = table[table["run"].astype(str) != ""].drop_duplicates(["experiment", "run"])
    order = {device: i for i, device in enumerate(dict.fromkeys(runs["device"]))}
    runs = runs.sort_values(["device", "experiment"], key=lambda c: c.map(order) if c.name == "device" else c)
    if runs.empty:
        return ["No run judged yet: `make figures` measures, then `make verdicts` judges.", ""]
    lines = ["Runs judged:", "", "| experiment | run | profile | date | device |", "|---|---|---|---|---|"]
    lines += [f"| {r.experiment} | {r.run} | {r.profile} | {r.run_date} | {r.device}"
              + (f", {r.emulated_device}" if isinstance(r.emulated_device, str) and r.emulated_device else "") + " |"
              for r in runs.itertuples()]
    return lines + [""]


def claims_markdown(table: pd.DataFrame) -> list[str]:
    """A table per paper: claim, verdict (linking its figure where one was drawn), effect, interval,
    repetitions, why."""
    lines = []
    for paper, rows in table.groupby("paper", sort=True):
        lines += [f"## Paper {paper}", "",
                  "| claim | statement | verdict | effect | 95% interval | repetitions | why |",
                  "|---|---|---|---|---|---|---|"]
        for r in rows.itertuples():
            verdict = f"[{r.verdict}]({r.figures})" if isinstance(r.figures, str) and r.figures else r.verdict
            repetitions = counted(int(r.n), "repetition") if pd.notna(r.n) and r.n > 0 else ""
            lines.append(f"| {r.claim_id} ({r.where}) | {r.statement} | {verdict} | {effect_text(r)} "
                         f"| {interval_text(r)} | {repetitions} | {why_text(r)} |")
        lines.append("")
    return lines


def intro(table: pd.DataFrame) -> str:
    """What a page of verdicts starts with: what they mean, what the runs make of them, which runs
    were judged."""
    return "\n".join(legend() + run_caveats(table) + runs_markdown(table))


def markdown(table: pd.DataFrame) -> str:
    """verdicts.md: the intro, then the claims by paper."""
    return intro(table) + "\n" + "\n".join(claims_markdown(table))


def counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims per paper and verdict, every verdict a column (0 where none)."""
    out = table.groupby(["paper", "verdict"]).size().unstack(fill_value=0)
    return out.reindex(columns=VERDICTS, fill_value=0)


# -- several devices ----------------------------------------------------------------------------

def by_device(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per claim, a column per device with its verdict, and the devices that can measure it."""
    first = next(iter(tables.values()))
    out = first[list(BY_DEVICE_COLUMNS[:-1])].reset_index(drop=True)
    for device, table in tables.items():
        out[device] = table.set_index("claim_id").loc[out["claim_id"], "verdict"].to_numpy()
    out["measurable_on"] = [", ".join(d for d in tables if out.at[i, d] != NOT_MEASURABLE) or "none"
                            for i in out.index]
    return out


def device_counts(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Claims per device and verdict, every verdict a column (0 where none)."""
    out = pd.DataFrame({device: table["verdict"].value_counts() for device, table in tables.items()}).T
    return out.reindex(columns=VERDICTS).fillna(0).astype(int)


# A not-measurable cell of the by-device table in a few words (the device's page has the reason
# whole), so a reader tells "the emulator's times" from "not at quick's sizes" without leaving it.
SHORT_REASONS = [
    (r"emulated device", "the emulator's times"),
    (r"ran under TCG", "a VM under TCG"),
    (r"no memory controller", "no memory controller"),
    (r"no power meter", "no power meter"),
    (r"hardware counter", "no hardware counter"),
    (r"no edgebench experiment", "no experiment measures it"),
    (r"smoke run", "a smoke run"),
    (r"this run has no (\S+) rows", "no {0} rows"),
    (r"did not measure \S+ at ([^;]+);", "not at {0}"),
    (r"no run of \S+ yet", "no run yet"),
]


def short_reason(reason) -> str:
    """The first of SHORT_REASONS the reason matches, in its words ('' when none does)."""
    for pattern, words in SHORT_REASONS:
        found = re.search(pattern, str(reason)) if isinstance(reason, str) else None
        if found:
            return words.format(*found.groups())
    return ""


def _device_cell(verdict: str, effect: str, reason=None) -> str:
    if verdict == NOT_MEASURABLE:
        short = short_reason(reason)
        return f"{verdict} ({short})" if short else verdict
    return f"{verdict}: {effect}" if effect else verdict


def by_device_claims(wide: pd.DataFrame, tables: dict[str, pd.DataFrame], files: bool = True) -> str:
    """Per paper, a row per claim with each device's verdict (and effect), and where it is measurable;
    `files`: first, which file holds each device's reasons (the files make verdicts writes)."""
    devices = list(tables)
    effects = {d: {r.claim_id: effect_text(r) for r in t.itertuples()} for d, t in tables.items()}
    reasons = {d: dict(zip(t["claim_id"], t["reason"])) for d, t in tables.items()}
    lines = ["Each device's reasons and intervals: " + ", ".join(f"{device_file('verdicts', d)}.md" for d in devices)
             + " in figures/verdicts/.", ""] if files else []
    for paper, rows in wide.groupby("paper", sort=True):
        lines += [f"## Paper {paper}", "", "| claim | statement | " + " | ".join(devices) + " | measurable on |",
                  "|---" * (len(devices) + 3) + "|"]
        lines += [f"| {r['claim_id']} | {r['statement']} | "
                  + " | ".join(_device_cell(r[d], effects[d][r['claim_id']], reasons[d][r['claim_id']])
                               for d in devices)
                  + f" | {r['measurable_on']} |" for _, r in rows.iterrows()]
        lines.append("")
    return "\n".join(lines)


def by_device_markdown(wide: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    """by_device.md: the intro over every device's runs, then the claims by device."""
    return intro(pd.concat(tables.values(), ignore_index=True)) + "\n" + by_device_claims(wide, tables)


def device_file(stem: str, device: str) -> str:
    """'verdicts-debian-v2': a device's own file in the verdicts folder, named as a folder can be."""
    return f"{stem}-{device_name(device)}"


# -- the notebook's work ------------------------------------------------------------------------

def targets_of(target: str) -> list[str]:
    """'local,debian-v2' -> ['local', 'debian-v2']; '' -> [''] (the newest run of any device)."""
    return as_list(target, []) or [""]


def judge_claims(target: str = "local", runtimes: str = "all", profile: str = "any", papers: str = "all",
                 run_id: str = "latest", claims_file: Path | None = None, data_dir: Path = DATA_DIR,
                 figures_dir: Path = FIGURES_DIR) -> pd.DataFrame:
    """What the notebook shows for one target: the claims (of those papers, about those runtimes)
    judged on the target's latest runs. Claims span experiments, so one run id cannot name their
    runs: `run_id` other than 'latest' is refused rather than ignored."""
    if run_id not in ("latest", ""):
        raise ConfigError(f"run_id={run_id!r}: verdicts judge each experiment's latest run on the target; "
                          "leave run_id at 'latest' (choose runs with target and profile)")
    claims = load_claims(claims_file or CLAIMS_FILE)
    wanted_papers = as_list(papers, sorted({c.paper for c in claims}))
    wanted_runtimes = None if runtimes in ("all", "") else set(as_list(runtimes, []))
    chosen = [c for c in claims if c.paper in wanted_papers
              and (wanted_runtimes is None or {c.a, c.b} - {""} <= wanted_runtimes)]
    if not chosen:
        raise ConfigError(f"no claim of papers {papers} about runtimes {runtimes}; widen `papers` or `runtimes`")
    return verdicts(chosen, target or None, data_dir, profile, figures_dir)


def claims_on(targets: list[str], profile: str = "any", data_dir: Path | str = "",
              claims_file: Path | None = None) -> tuple[pd.DataFrame, str]:
    """The claims by device for `make compare`'s page, writing nothing: the counts per device, and
    per paper the claims some device could judge (those none could are counted, not listed)."""
    data_dir = Path(data_dir or DATA_DIR)
    tables = {t: judge_claims(t, profile=profile, data_dir=data_dir, claims_file=claims_file) for t in targets}
    wide = by_device(tables)
    judged_somewhere = wide[wide["measurable_on"] != "none"]
    nowhere = len(wide) - len(judged_somewhere)
    text = by_device_claims(judged_somewhere, {d: t[t["claim_id"].isin(judged_somewhere["claim_id"])]
                                               for d, t in tables.items()}, files=False)
    if nowhere:
        text += f"\n{nowhere} more claims are not measurable on any of these devices (`make verdicts` says why)."
    return device_counts(tables), text


@dataclass
class Shown:
    """What the notebook displays: the intro (what verdicts mean, the runs judged), the counts, the
    claims' tables and edgebench's answer."""
    intro: str
    counts: pd.DataFrame
    claims: str
    answer: str


def write_page(target: str = "local", runtimes: str = "all", profile: str = "any", papers: str = "all",
               run_id: str = "latest", tolerance: float = 0.05, data_dir: Path | str = "",
               figures_dir: Path | str = "", claims_file: Path | None = None) -> Shown:
    """Everything 00_verdicts.ipynb does: judge the claims and answer edgebench's question on each
    target's runs under `data_dir`, write the files into `figures_dir`/verdicts/ (save or
    save_devices), and return what to display. '' for a folder: edgebench's own."""
    data_dir, figures_dir = Path(data_dir or DATA_DIR), Path(figures_dir or FIGURES_DIR)
    out = figures_dir / VERDICTS_DIR_NAME
    tables, answers = {}, {}
    for target_ in targets_of(target):
        tables[target_] = judge_claims(target_, runtimes, profile, papers, run_id, claims_file, data_dir, figures_dir)
        mine = answer.answer(target_ or None, data_dir, profile, tolerance)
        answers[target_] = (mine, answer.markdown(mine, tolerance, answer.runs_not_read(target_ or None, data_dir,
                                                                                         profile)))
    if len(tables) == 1:
        (table,), ((mine, said),) = tables.values(), answers.values()
        save(table, out, mine, said)
        return Shown(intro(table), counts(table), "\n".join(claims_markdown(table)), said)
    save_devices(tables, answers, out)
    said = "\n\n".join(f"### {device}\n\n{text}" for device, (_, text) in answers.items())
    return Shown(intro(pd.concat(tables.values(), ignore_index=True)), device_counts(tables),
                 by_device_claims(by_device(tables), tables), said)


# -- the files ----------------------------------------------------------------------------------

SINGLE_FILES = ("verdicts.csv", "verdicts.md", "answer.csv", "answer.md")
SEVERAL_FILES = ("by_device.csv", "by_device.md", "verdicts-*.csv", "verdicts-*.md", "answer-*.csv", "answer-*.md")


def _clear(out: Path, patterns: tuple[str, ...]) -> None:
    """The other form's files of an earlier make verdicts: the folder holds one invocation's, so the
    report never shows one device's old verdicts beside several devices' new ones."""
    for pattern in patterns:
        for path in out.glob(pattern):
            path.unlink()


def save(table: pd.DataFrame, out: Path | None = None, answer_table: pd.DataFrame | None = None,
         answer_text: str = "") -> Path:
    """verdicts.csv and verdicts.md in figures/verdicts/ (or `out`), and edgebench's own answer
    (answer.csv, answer.md) when given."""
    out = Path(out or FIGURES_DIR / VERDICTS_DIR_NAME)
    out.mkdir(parents=True, exist_ok=True)
    _clear(out, SEVERAL_FILES)
    _write(out, "", table, answer_table, answer_text)
    return out / "verdicts.csv"


def _write(out: Path, device: str, table: pd.DataFrame, answer_table: pd.DataFrame | None, answer_text: str) -> None:
    """One device's verdicts and answer ('': the only device, under the plain names)."""
    stem = (lambda s: device_file(s, device)) if device else (lambda s: s)
    on = f" on {device}" if device else ""
    table.to_csv(out / f"{stem('verdicts')}.csv", index=False)
    (out / f"{stem('verdicts')}.md").write_text(f"# Verdicts on the papers' claims{on}\n\n" + markdown(table))
    if answer_table is not None:
        answer_table.to_csv(out / f"{stem('answer')}.csv", index=False)
        (out / f"{stem('answer')}.md").write_text(f"# edgebench's answer for {device or 'this device'}\n\n"
                                                  + answer_text + "\n")


def save_devices(tables: dict[str, pd.DataFrame], answers: dict[str, tuple[pd.DataFrame, str]],
                 out: Path | None = None) -> Path:
    """by_device.csv and .md, beside each device's verdicts-<device>.csv/.md and answer-<device>.csv/.md."""
    out = Path(out or FIGURES_DIR / VERDICTS_DIR_NAME)
    out.mkdir(parents=True, exist_ok=True)
    _clear(out, SINGLE_FILES + SEVERAL_FILES)
    wide = by_device(tables)
    wide.to_csv(out / "by_device.csv", index=False)
    (out / "by_device.md").write_text("# Verdicts on the papers' claims, by device\n\n"
                                      + by_device_markdown(wide, tables))
    for device, table in tables.items():
        mine, said = answers.get(device, (None, ""))
        _write(out, device, table, mine, said)
    return out / "by_device.csv"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="local",
                    help="the device whose runs are judged, as its runs name it; several: local,debian-v2")
    ap.add_argument("--runtimes", default="all", help="'all' or the runtimes whose claims to judge")
    ap.add_argument("--profile", default="any", help="'any', or only runs made with 'quick' or 'standard'")
    ap.add_argument("--papers", default="all", help="'all' or papers such as 000,002")
    ap.add_argument("--tolerance", type=float, default=0.05,
                    help="edgebench's answer: the share of native's throughput and p99 a runtime may lose (0.05)")
    ap.add_argument("--quiet", action="store_true", help="do not stream the notebook's output")
    args = ap.parse_args(argv)
    try:  # a catalogue that does not load, or a selection of no claim, is refused before a kernel starts
        for target in targets_of(args.target):
            judge_claims(target, args.runtimes, args.profile, args.papers)
    except EdgebenchError as e:
        print(f"make verdicts: {e}", file=sys.stderr)
        return 2
    if not 0 < args.tolerance < 1:
        print(f"make verdicts: tolerance {args.tolerance:g} is not a share of native; give one such as 0.05",
              file=sys.stderr)
        return 2
    # Absolute: the kernel runs in notebooks/, where a relative folder would name another one.
    params = dict(target=args.target, runtimes=args.runtimes, profile=args.profile, papers=args.papers,
                  tolerance=args.tolerance, data_dir=str(Path(DATA_DIR).resolve()),
                  figures_dir=str(Path(FIGURES_DIR).resolve()))
    return run_headless("verdicts", NOTEBOOK, params, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
