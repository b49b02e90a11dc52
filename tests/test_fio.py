"""The disk benchmark's commands and parsers (edgebench.tools.fio): recorded fio and IOZone outputs,
and the four fio operations run for real, directly and through tools/steps."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import need, need_tool
from edgebench.apps import go_build
from edgebench.errors import EdgebenchError
from edgebench.paths import TOOLS_DIR
from edgebench.tools import fio
from edgebench.tools.sysbench import SEP, steps_record

DATA = Path(__file__).parent / "data" / "disk"
RECORDED_JOBS, RECORDED_FILE_MB = 2, 4   # how tests/data/disk/fio-*.json were recorded (README.md)


def recorded(op: str) -> str:
    return (DATA / f"fio-{op}.json").read_text()


def flags(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].partition("=")[::2] for a in argv[1:])


# -- command lines -----------------------------------------------------------------------

def test_operations_are_the_four_iozone_tests_in_order_on_the_same_files():
    ops = fio.operations("/scratch", 100, 32, 4)
    assert [op for op, _ in ops] == list(fio.OPERATIONS) == ["write", "rewrite", "read", "reread"]
    for op, argv in ops:
        f = flags(argv)
        assert argv[0] == "fio" and f["name"] == op and f["output-format"] == "json"
        assert (f["directory"], f["numjobs"], f["size"], f["bs"]) == ("/scratch", "4", "100M", "32k")
        assert f["ioengine"] == "psync" and "group_reporting" in f
        assert f["filename_format"] == "edgebench-fio.$jobnum"   # the same file per job in every step
    by_op = {op: flags(argv) for op, argv in ops}
    assert [by_op[op]["rw"] for op in fio.OPERATIONS] == ["write", "write", "read", "read"]
    assert by_op["write"]["end_fsync"] == by_op["rewrite"]["end_fsync"] == "1"
    assert by_op["read"]["invalidate"] == "1" and by_op["reread"]["invalidate"] == "0"   # cold, then warm


def test_steps_words_are_the_operations_then_the_cleanup():
    words = fio.steps_words("/scratch", 100, 32, 4)
    steps, current = [], []
    for w in [*words, SEP]:   # tools/steps' split: steps separated by `:::`
        if w == SEP:
            steps.append(current)
            current = []
        else:
            current.append(w)
    ops = fio.operations("/scratch", 100, 32, 4)
    assert steps == [argv for _, argv in ops] + [fio.cleanup_argv("/scratch", 4)]


def test_iozone_command_is_the_papers_with_one_file_per_process():
    argv = fio.iozone_command("/scratch", 100, 32, 4)
    assert argv[:11] == ["iozone", "-i", "0", "-i", "1", "-r", "32k", "-s", "100m", "-t", "4"]
    assert "-e" in argv
    assert argv[argv.index("-F") + 1:] == [f"/scratch/edgebench-iozone.{i}" for i in range(4)]
    assert "-e" not in fio.iozone_command("/scratch", 100, 32, 4, include_flush=False)


def test_a_window_makes_the_rewrite_and_reread_go_round_their_files():
    ops = dict(fio.operations("/scratch", 100, 32, 4, window_s=3))
    for op in fio.OPERATIONS:
        timed = "--time_based" in ops[op] and "--runtime=3s" in ops[op]
        assert timed == (op in ("rewrite", "reread")), op  # a first write or a cold read happens once
    assert "--time_based" not in fio.steps_words("/scratch", 100, 32, 4)


def test_files_are_grown_for_the_window_never_shrunk_and_capped():
    assert fio.file_mb_for(2, 16, 0.1) == 480          # 16 MB in 0.1 s: 2 s x 1.5 margin
    assert fio.file_mb_for(2, 16, 3.0) == 16           # already long enough
    assert fio.file_mb_for(10, 100, 0.05) == fio.MAX_FILE_MB
    assert fio.file_mb_for(2, 16, 0.0) == fio.MAX_FILE_MB  # a run fio timed at 0 ms


# -- fio's output ------------------------------------------------------------------------

@pytest.mark.parametrize("op", fio.OPERATIONS)
def test_parse_recorded_fio(op):
    raw = json.loads(recorded(op))
    (job,) = raw["jobs"]
    direction = "write" if "write" in op else "read"
    side = job[direction]
    parsed = fio.parse_fio(recorded(op))
    assert parsed["direction"] == direction
    assert job["read" if direction == "write" else "write"]["io_bytes"] == 0
    assert parsed["bw_mib_s"] == side["bw_bytes"] / 2**20
    # bw_bytes is fio's io_bytes over its runtime (ms), and "bw" the same in whole KiB/s.
    assert parsed["bw_mib_s"] == pytest.approx(side["io_bytes"] / (side["runtime"] / 1000) / 2**20, rel=1e-6)
    assert abs(parsed["bw_mib_s"] * 1024 - side["bw"]) < 1
    assert parsed["iops"] == side["iops"] and parsed["runtime_s"] == side["runtime"] / 1000
    assert parsed["io_mib"] == RECORDED_JOBS * RECORDED_FILE_MB
    assert parsed["clat_p50_us"] == side["clat_ns"]["percentile"]["50.000000"] / 1000
    assert parsed["clat_p99_us"] == side["clat_ns"]["percentile"]["99.000000"] / 1000
    assert parsed["clat_p50_us"] <= parsed["clat_p99_us"]


def test_parse_fio_skips_what_fio_printed_before_its_report():
    text = ("fio: this platform does not support process shared mutexes, forcing use of threads\n"
            "note: a { brace in a warning\n" + recorded("read"))
    assert fio.parse_fio(text) == fio.parse_fio(recorded("read"))


def test_parse_fio_without_percentiles():
    raw = json.loads(recorded("write"))
    del raw["jobs"][0]["write"]["clat_ns"]["percentile"]
    parsed = fio.parse_fio(json.dumps(raw))
    assert parsed["clat_p50_us"] is None and parsed["clat_p99_us"] is None and parsed["bw_mib_s"] > 0


@pytest.mark.parametrize("text", ["", "fio: failed parsing size=lots\n", "{not json", "[1, 2]",
                                  '{"fio version": "fio-3.33"}'])
def test_parse_fio_without_a_report(text):
    with pytest.raises(EdgebenchError, match="no JSON report"):
        fio.parse_fio(text)


def test_parse_fio_without_io():
    raw = json.loads(recorded("read"))
    raw["jobs"][0]["read"]["io_bytes"] = 0
    with pytest.raises(EdgebenchError, match="no I/O"):
        fio.parse_fio(json.dumps(raw))
    with pytest.raises(EdgebenchError, match="no I/O"):
        fio.parse_fio(json.dumps(dict(raw, jobs=[])))


def test_parse_fio_reports_a_failed_job():
    raw = json.loads(recorded("write"))
    raw["jobs"][0]["error"] = 28
    with pytest.raises(EdgebenchError, match="failed with error 28"):
        fio.parse_fio(json.dumps(raw))


# -- IOZone's output ---------------------------------------------------------------------

def test_parse_recorded_iozone():
    parsed = fio.parse_iozone((DATA / "iozone-t4-i0-i1.txt").read_text())
    assert list(parsed) == list(fio.OPERATIONS)
    assert parsed["write"] == {"processes": 4, "children_kib_s": 138676.27, "parent_kib_s": 132773.25}
    assert parsed["rewrite"] == {"processes": 4, "children_kib_s": 142730.68, "parent_kib_s": 141265.11}
    assert parsed["read"] == {"processes": 4, "children_kib_s": 157483.26, "parent_kib_s": 156489.71}
    assert parsed["reread"] == {"processes": 4, "children_kib_s": 138993.81, "parent_kib_s": 138467.29}


def test_parse_iozone_with_cpu_lines_and_two_digit_process_counts():
    parsed = fio.parse_iozone((DATA / "iozone-t12-cpu-excerpt.txt").read_text())
    assert {op: (p["processes"], p["children_kib_s"]) for op, p in parsed.items()} == {
        "write": (12, 4732581.09), "rewrite": (12, 4837741.94), "read": (12, 5921370.94),
        "reread": (12, 5947985.69)}


def test_parse_iozone_ignores_other_tests_and_needs_no_parent_line():
    text = ("\tChildren see throughput for 4 random readers \t=   12.00 kB/sec\n"
            "\tChildren see throughput for  4 initial writers \t=  100.50 kB/sec\n")
    assert fio.parse_iozone(text) == {"write": {"processes": 4, "children_kib_s": 100.5}}


@pytest.mark.parametrize("text", ["", "iozone: command not found\n",
                                  "\tParent sees throughput for  4 initial writers \t=  1.00 kB/sec\n"])
def test_parse_iozone_without_results(text):
    with pytest.raises(EdgebenchError, match="Children see throughput"):
        fio.parse_iozone(text)


def test_parse_iozone_refuses_operations_per_second():
    with pytest.raises(EdgebenchError, match="ops/sec"):
        fio.parse_iozone("\tChildren see throughput for  4 initial writers  =    8857.66 ops/sec\n")


# -- real fio ----------------------------------------------------------------------------

FILE_MB, THREADS = 2, 2


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_the_four_operations_with_real_fio(local, tmp_path):
    need_tool(local, "fio")
    for op, argv in fio.operations(str(tmp_path), FILE_MB, 32, THREADS):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{op}: {r.stderr[-1000:]}"
        parsed = fio.parse_fio(r.stdout)
        assert parsed["direction"] == ("write" if "write" in op else "read"), op
        assert parsed["bw_mib_s"] > 0 and parsed["iops"] > 0, op
        assert parsed["io_mib"] == THREADS * FILE_MB, op
    assert files_in(tmp_path) == [f"edgebench-fio.{i}" for i in range(THREADS)]
    assert all((tmp_path / f"edgebench-fio.{i}").stat().st_size == FILE_MB * 2**20 for i in range(THREADS))
    for _ in range(2):   # like rm -f: a second cleanup finds nothing and still succeeds
        r = subprocess.run(fio.cleanup_argv(str(tmp_path), THREADS), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr[-1000:]
        assert files_in(tmp_path) == []


def test_a_windowed_rewrite_and_reread_last_the_window_with_real_fio(local, tmp_path):
    need_tool(local, "fio")
    for op, argv in fio.operations(str(tmp_path), FILE_MB, 32, THREADS, window_s=1):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{op}: {r.stderr[-1000:]}"
        parsed = fio.parse_fio(r.stdout)
        if op in ("rewrite", "reread"):
            assert parsed["runtime_s"] >= 0.99 and parsed["io_mib"] >= THREADS * FILE_MB, (op, parsed)
        else:
            assert parsed["io_mib"] == THREADS * FILE_MB, op
    subprocess.run(fio.cleanup_argv(str(tmp_path), THREADS), capture_output=True, timeout=60, check=True)


def test_steps_words_through_the_real_tools_steps(local, tmp_path):
    need_tool(local, "fio")
    need("go", None if shutil.which("go") else "no `go` on PATH (tools/steps is built with it)")
    steps_binary = go_build(TOOLS_DIR / "steps", "steps", local.facts()["arch"])
    scratch = tmp_path / "scratch"   # tools/steps creates it, as in a runtime
    words = fio.steps_words(str(scratch), FILE_MB, 32, THREADS)
    r = subprocess.run([str(steps_binary), "-dir", str(scratch), *words], capture_output=True, text=True,
                       timeout=300)
    steps = steps_record(r.stdout)
    assert r.returncode == 0, [s["stderr"][-500:] for s in steps]
    ops = fio.operations(str(scratch), FILE_MB, 32, THREADS)
    assert [s["argv"] for s in steps] == [argv for _, argv in ops] + [fio.cleanup_argv(str(scratch), THREADS)]
    for (op, _), step in zip(ops, steps):
        parsed = fio.parse_fio(step["stdout"])
        assert parsed["direction"] == ("write" if "write" in op else "read") and parsed["bw_mib_s"] > 0, op
        assert parsed["io_mib"] == THREADS * FILE_MB, op
    assert files_in(scratch) == []
