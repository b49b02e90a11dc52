"""Why something is not drawn, said in plain words for a figure: a failed row's reason without the
paths and variables a panel has no room for (they are in the run's notes), and the reasons
edgebench.tools.sanity rules a bar out for, once each."""

from __future__ import annotations

import re

import pandas as pd

from edgebench.paths import DATA_DIR
from edgebench.results import load_meta


def run_meta(df: pd.DataFrame) -> dict:
    """The meta.json of the run the rows come from, or {} (synthetic rows, a run kept elsewhere)."""
    if not {"experiment", "run_id"} <= set(df.columns) or df.empty:
        return {}
    try:
        return load_meta(DATA_DIR / str(df["experiment"].iloc[0]) / str(df["run_id"].iloc[0]))
    except (OSError, ValueError):
        return {}


def short_reason(why: str) -> str:
    """sanity's reason without its verdict word and its parenthesised detail: 'docker 41% ahead of
    native on hpc work on the same kernel'."""
    text = why.split("implausible: ", 1)[-1]
    return text.split(" (")[0].strip()


def ruled_out_note(reasons) -> str:
    """A panel's reasons, once each: one runtime's across its operations as one range ('docker
    24-32% ahead of native on memory work on the same kernel'), not a sentence per operation."""
    groups: dict[str, list[int]] = {}
    for text in (short_reason(part) for why in reasons for part in why.split("; implausible: ")):
        number = re.search(r"(\d+)%", text)
        groups.setdefault(re.sub(r"\d+%", "{}%", text, count=1) if number else text, []).append(
            int(number.group(1)) if number else -1)
    parts = [key.format(f"{min(n)}" if min(n) == max(n) else f"{min(n)}-{max(n)}") if "{}" in key else key
             for key, n in groups.items()]
    return "Ruled out, not drawn: " + "; ".join(parts) + " (see the findings)."


# Said in plain words where a reason names what the reader acts on: the step that fixes it, not
# the directory it looked in or the variable that overrides it.
PLAIN = ((re.compile(r"NPB (binary|binaries)|no NPB|NPB.*not built"),
          "NPB is not built on this device: make provision builds it"),)
PATH_OR_VARIABLE = re.compile(r"(~|\$HOME)?/[\w.@+-]+(/[\w.@*+-]*)+|\bEDGEBENCH_[A-Z_]+\b")


def plain_reason(why: str) -> str:
    """A failed row's reason fit for a figure: the plain sentence for a known one, else its text
    up to the first file path or environment variable (those are in the run's notes)."""
    for pattern, sentence in PLAIN:
        if pattern.search(why):
            return sentence
    hit = PATH_OR_VARIABLE.search(why)
    if not hit:
        return why if len(why) <= 160 else why[:157] + "..."
    head = why[:hit.start()]
    if "; " in head and len(head.rsplit("; ", 1)[1]) < 20:  # a clause cut short by the path: left out
        head = head.rsplit("; ", 1)[0]
    head = re.sub(r"[\s(:,;=]*\b(in|on|at|under|from|with|set|or|and|see)?[\s(:,;=]*$", "", head)
    return (f"{head} (details in the run's notes)" if len(head) >= 12 else "see the run's notes")[:160]
