"""What the shared table helpers (edgebench.plotting.tables) put in front of a reader: counts in
the number their noun takes, notes shown whole, and a health column that says something."""

from __future__ import annotations

import json

import pandas as pd

from edgebench.plotting import run_notes
from edgebench.plotting.tables import counted, mark_health


def test_a_count_takes_its_nouns_number():
    assert counted(1, "row") == "1 row" and counted(0, "row") == "0 rows" and counted(3, "start") == "3 starts"
    assert counted(2, "repetition") == "2 repetitions" and counted(2, "child", "children") == "2 children"


def test_one_failed_row_does_not_read_all_1_of_its_rows(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"notes": {}}))
    rows = pd.DataFrame({"runtime": ["lxd", "nanos", "nanos", "docker"], "status": ["failed"] * 3 + ["not measurable"],
                         "error": ["timed out", "no ops", "no ops", "no power meter"]})
    text = run_notes(tmp_path, rows)
    assert "**lxd** is in no figure: its one row failed: timed out" in text
    assert "**nanos** is in no figure: all 2 of its rows failed, most often: no ops" in text
    assert "**docker** is in no figure: its one row is not measurable here: no power meter" in text
    assert "**1 row not measurable here**" in text and "all 1 of" not in text


def test_a_long_note_is_shown_whole_in_the_notebooks_table():
    note = "the app's clock is the VM's, set from the emulated RTC at boot (whole seconds), not the target's"
    shown = pd.DataFrame({"runtime": ["nanos"], "note": [note]})._repr_html_()
    assert note.replace("'", "&#39;") in shown or note in shown
    assert "..." not in shown


def test_unknown_health_is_left_out_where_no_row_could_tell_and_kept_where_some_could():
    table = pd.DataFrame({"runtime": ["native", "docker"]})
    blind = pd.DataFrame({"runtime": ["native", "docker", "docker"], "rep": [1, 1, 2],
                          "health": ["unknown", "busy,unknown", "unknown"]})
    # A device without a throttling sensor: 'unknown 1/1' in every cell would tell nothing.
    assert list(mark_health(table, blind, ["runtime"])["health"]) == ["", "\u2020 busy 1/2"]
    seeing = blind.assign(health=["", "busy", "unknown"])
    assert list(mark_health(table, seeing, ["runtime"])["health"]) == ["", "\u2020 busy 1/2"]
    partly = blind.assign(health=["unknown", "", ""])
    assert list(mark_health(table, partly, ["runtime"])["health"]) == ["unknown 1/1", ""]
