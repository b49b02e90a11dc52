"""STREAM: the parser on recorded outputs (apps/stream, a failing validation, stress-ng), and the
real program built and run here with its thread count checked."""

from pathlib import Path

import pytest
from conftest import need, need_tool
from edgebench.apps import APPS, c_build
from edgebench.errors import EdgebenchError
from edgebench.tools import stream

DATA = Path(__file__).parent / "data" / "stream"


def test_parse_recorded_report():
    text = (DATA / "stream-2threads.out").read_text()
    parsed = stream.parse(text)
    assert parsed["validates"] and parsed["validation"] == "validates"
    assert parsed["threads_counted"] == 2 and parsed["elements"] == 200000 and parsed["ntimes"] == 5
    line = next(row for row in text.splitlines() if row.startswith("Triad:"))
    assert parsed["kernels"]["triad"]["best_rate_mb_s"] == float(line.split()[1])
    for k in stream.KERNELS:
        kern = parsed["kernels"][k]
        assert kern["min_time_s"] <= kern["avg_time_s"] <= kern["max_time_s"]


def test_best_rate_is_bytes_over_min_time():
    """STREAM counts 2 arrays for Copy/Scale and 3 for Add/Triad, in 10^6 bytes per second."""
    parsed = stream.parse((DATA / "stream-2threads.out").read_text())
    n = parsed["elements"]
    for kernel, arrays in (("copy", 2), ("scale", 2), ("add", 3), ("triad", 3)):
        k = parsed["kernels"][kernel]
        expected = arrays * 8 * n / k["min_time_s"] / 1e6
        assert k["best_rate_mb_s"] == pytest.approx(expected, rel=0.02)  # times are printed to 1 us


def test_failed_validation_is_reported():
    parsed = stream.parse((DATA / "stream-fails-validation.out").read_text())
    assert not parsed["validates"]
    assert "Failed Validation on array a[]" in parsed["validation"]


def test_parse_rejects_truncated_output():
    text = (DATA / "stream-2threads.out").read_text()
    with pytest.raises(EdgebenchError, match="lacks kernels"):
        stream.parse(text.split("Add:")[0])


def test_sizes_and_command():
    assert stream.elements_for_mib(25.4) == round(25.4 * 2**20 / 8)
    assert stream.command(100, 10) == ["stream", "100", "10"]
    with pytest.raises(EdgebenchError):
        stream.command(100, 1)


def test_stress_ng_rate_is_read_plus_write_times_instances():
    parsed = stream.parse_stress_ng_stream((DATA / "stress-ng-stream.out").read_text())
    assert parsed["instances"] == 2
    assert parsed["rate_mb_s"] == pytest.approx((parsed["read_mb_s"] + parsed["write_mb_s"]) * 2)
    assert parsed["read_mb_s"] > parsed["write_mb_s"] > 0  # its kernel reads more than it writes


def test_stress_ng_too_short_says_why():
    with pytest.raises(stream.StressNgTooShort, match="too short"):
        stream.parse_stress_ng_stream((DATA / "stress-ng-stream-short.out").read_text())


def test_stress_ng_arrays_follow_streams_not_the_reported_cache(local):
    """The cross-check sizes stress-ng's arrays from apps/stream's, whatever L3 the CPU reports (a
    VM here reported its host's 480 MiB, and stress-ng then printed no rate in 6 s)."""
    need_tool(local, "stress-ng")
    argv = stream.stress_ng_command(2, 6, 25.4)
    assert argv[argv.index("--stream-l3-size") + 1] == "6502K"  # 25.4 MiB / 4
    r = local.run(argv, timeout=60)
    assert "Using CPU cache size of 6502K" in r.stdout + r.stderr
    parsed = stream.parse_stress_ng_stream(r.stdout + r.stderr)
    assert parsed["instances"] == 2 and parsed["read_mb_s"] > 0 and parsed["write_mb_s"] > 0


def test_stress_ng_too_short_for_a_rate_runs_once_more_longer(local):
    """A slow or busy device spends a short run filling the arrays: an emulated arm64 board
    finished 2 passes in the cross-check's 6 s, and the row failed. 2 s is too short anywhere
    (stress-ng needs about 4.5 s of its kernels); the second try, 4 times as long, gives a rate."""
    need_tool(local, "stress-ng")
    got = stream.measure_with_stress_ng(local, 2, 2, 25.4)
    first, second = (r.stdout + r.stderr for _, r in got.tries)
    assert "run duration too short" in first
    assert got.tries[1][0][got.tries[1][0].index("--timeout") + 1] == f"{2 * stream.STRESS_NG_LONGER}s"
    assert got.error is None and got.rates["seconds"] == 2 * stream.STRESS_NG_LONGER
    assert got.rates == dict(stream.parse_stress_ng_stream(second), seconds=8) and got.rates["rate_mb_s"] > 0


def test_stress_ng_other_failures_are_not_tried_again(local):
    """Only "too short" asks for a longer run: arrays it cannot allocate fail once, in stress-ng's words."""
    need_tool(local, "stress-ng")
    # 1 PB arrays: beyond any 48-bit address space, so the allocation fails whatever overcommit allows
    got = stream.measure_with_stress_ng(local, 1, 2, 1e9)
    assert len(got.tries) == 1 and got.rates is None
    assert "no stream memory rate: stream: cannot allocate" in got.error


def test_built_on_the_target_and_counts_its_threads(local, tmp_path):
    """apps/stream compiled here with the target's compiler, once per source; OMP_NUM_THREADS reaches it."""
    need_tool(local, "cc")
    binary = APPS["stream"].locate(local)
    assert binary == c_build(local, APPS["stream"].source_dir, "stream")  # cached: same path, no rebuild
    r = local.run(["env", "OMP_NUM_THREADS=2", binary, "100000", "3"])
    parsed = stream.parse(r.stdout)
    assert parsed["validates"] and parsed["threads_counted"] == 2
    assert not local.run([binary, "10"], check=False).ok  # usage error, not a silent run


def test_arrays_under_four_times_the_last_level_cache_are_said_to_measure_cache():
    """A VM reporting its host's 480 MiB L3 made 76 MiB arrays measure cache; here 32 MiB."""
    from edgebench.tools import sanity
    assert "under 4x the last-level cache (480 MiB)" in sanity.below_stream_rule(76.3, 480 * 1024)
    assert "stream_mib=1920 or more" in sanity.below_stream_rule(76.3, 480 * 1024)
    assert sanity.below_stream_rule(128, 32 * 1024) == "" and sanity.below_stream_rule(76.3, None) == ""


def test_the_target_reports_its_last_level_cache(local):
    import glob
    need("cpu-cache-sysfs", None if glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size") else
         "this kernel exposes no cache sizes in /sys/devices/system/cpu/cpu0/cache")
    levels = {}
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        size = open(f"{d}/size").read().strip()
        levels[int(open(f"{d}/level").read())] = int(size[:-1]) * (1024 if size.endswith("M") else 1)
    assert local.facts(refresh=True)["llc_kib"] == levels[max(levels)]
