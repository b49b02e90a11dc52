"""perf stat's CSV output and command lines, without running anything."""

from __future__ import annotations

from edgebench.tools.counters import COLUMNS, EVENTS, parse_perf_csv, perf_stat_argv

# `perf stat -x, -a -G g,g,g,g -e page-faults,...` as perf 6.1 writes it on a VM without a PMU.
CGROUP_OUTPUT = """# started on Sat Nov 21 09:28:44 2026

58271,,page-faults,edgebench/eb-1,231045381,100.00,,
58270,,minor-faults,edgebench/eb-1,231045381,100.00,,
1,,major-faults,edgebench/eb-1,231045381,100.00,,
<not supported>,,cache-misses,edgebench/eb-1,0,100.00,,
<not counted>,,cycles,edgebench/eb-1,0,0.00,,
"""


def test_values_and_missing_counters_with_reasons():
    parsed = parse_perf_csv(CGROUP_OUTPUT)
    assert parsed["page-faults"].value == 58271
    assert parsed["minor-faults"].value == 58270 and parsed["major-faults"].value == 1
    assert parsed["cache-misses"].value is None
    assert parsed["cache-misses"].note.startswith("not supported")
    assert parsed["cycles"].value is None and parsed["cycles"].note.startswith("not counted")
    assert "instructions" not in parsed  # absent stays absent: the caller says why


def test_command_mode_output_and_modifiers():
    text = "1935,,page-faults:u,4211,100.00,,\nabc,,minor-faults,1,100.00,,\n"
    parsed = parse_perf_csv(text)
    assert parsed["page-faults"].value == 1935
    assert parsed["minor-faults"].value is None and "unparseable" in parsed["minor-faults"].note


def test_argv_pairs_one_cgroup_per_event():
    argv = perf_stat_argv(EVENTS, "/tmp/out", cgroup="edgebench/x")
    assert argv[-1] == "--"
    assert "-a" in argv
    g = argv[argv.index("-G") + 1].split(",")
    assert g == ["edgebench/x"] * len(EVENTS)
    assert argv.index("-e") < argv.index("-G")  # perf refuses -G before the events
    assert "-a" not in perf_stat_argv(EVENTS, "/tmp/out")


def test_every_event_has_a_column():
    assert set(COLUMNS) == set(EVENTS)
    assert COLUMNS["page-faults"] == "perf_page_faults"
