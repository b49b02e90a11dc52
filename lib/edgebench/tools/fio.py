"""Disk benchmark command lines and output parsing for the container overhead experiment
(paper 003): IOZone in throughput mode as the paper ran it (published protocol), and fio running
the same four operations (fair protocol). Every command is a list of words for `tools/steps`,
which runs no shell: a container built FROM scratch holds only the tool and steps, so even the
cleanup is done by fio itself, and fio, not a shell, expands $jobnum in file names."""

from __future__ import annotations

import json
import re

from edgebench.errors import EdgebenchError
from edgebench.tools.sysbench import SEP

OPERATIONS = ("write", "rewrite", "read", "reread")

# No $jobname in it: every operation has its own --name, yet job N of each must use the same file,
# so that re-write and both reads find what the write left.
FIO_FILENAME_FORMAT = "edgebench-fio.$jobnum"
IOZONE_FILE_PREFIX = "edgebench-iozone"

_FIO_WRITE = (
    "--rw=write",
    # The flush of the dirty pages is timed, as IOZone's -e times it (iozone_command): both tools
    # then measure writes that reached the storage, not the page cache, which the memory limit of
    # each runtime would otherwise decide. It also leaves the pages clean, and only clean pages can
    # be dropped before the cold read.
    "--end_fsync=1",
    # A missing file is created without preallocating it, so the first write allocates its blocks
    # while timed, as IOZone's initial write does; files already there at full size are
    # overwritten in place, which is the re-write.
    "--fallocate=none",
)
_FIO_FLAGS = {
    "write": _FIO_WRITE,
    "rewrite": _FIO_WRITE,
    # fio drops the files' cached pages first (posix_fadvise, no root needed, so it works the same
    # in every runtime): the read comes from the storage.
    "read": ("--rw=read", "--invalidate=1"),
    # Straight after the read, its pages still cached: the warm re-read.
    "reread": ("--rw=read", "--invalidate=0"),
}


# The operations that can go round their files for as long as asked and stay what they are (a
# re-write, a warm re-read); the first write and the cold read happen once per file, so their
# window is the files' size over the rate (`file_mb_for` sizes it).
LOOPABLE = ("rewrite", "reread")
ONE_PASS = ("write", "read")
# The most a fair run writes per thread's file when sizing it for a window: 1 GiB, 4 GiB in all.
MAX_FILE_MB = 1024
GROWTH_MARGIN = 1.5  # sized for 1.5x the window, so the next run's own spread stays above it


def operations(directory: str, file_mb: int, record_kib: int, threads: int,
               window_s: float = 0) -> list[tuple[str, list[str]]]:
    """(operation, fio argv) for write, re-write, read, re-read, to run in this order: each relies
    on the files the one before left. `threads` jobs, each with its own file of file_mb MiB.
    window_s > 0: the re-write and re-read go round their files for that long (fio --time_based)."""
    common = ["--output-format=json", f"--directory={directory}", f"--numjobs={threads}",
              f"--size={file_mb}M", f"--bs={record_kib}k", "--ioengine=psync", "--group_reporting",
              f"--filename_format={FIO_FILENAME_FORMAT}"]
    timed = ["--time_based", f"--runtime={window_s:g}s"] if window_s > 0 else []
    return [(op, ["fio", f"--name={op}", *common, *_FIO_FLAGS[op], *(timed if op in LOOPABLE else [])])
            for op in OPERATIONS]


def file_mb_for(window_s: float, file_mb: int, shortest_s: float) -> int:
    """Each thread's file size that makes the one-pass operations (write, cold read) last
    `window_s`, from the shortest of them at `file_mb` (never smaller, at most MAX_FILE_MB)."""
    if shortest_s >= window_s:
        return file_mb
    wanted = file_mb * window_s * GROWTH_MARGIN / max(shortest_s, 1e-3)
    return int(min(MAX_FILE_MB, max(file_mb, -(-wanted // 1))))


def cleanup_argv(directory: str, threads: int) -> list[str]:
    """fio removing the operations' files: a FROM-scratch container has no `rm`. Like `rm -f` it
    succeeds whether the files are there or not; it only creates (sparse, nothing written) the
    missing ones, then unlinks them all."""
    return ["fio", "--name=cleanup", f"--directory={directory}", f"--numjobs={threads}", "--size=1M",
            f"--filename_format={FIO_FILENAME_FORMAT}", "--rw=write", "--fallocate=none",
            "--ioengine=psync", "--create_only=1", "--unlink=1"]


def steps_words(directory: str, file_mb: int, record_kib: int, threads: int, window_s: float = 0) -> list[str]:
    """Every operation as one step, in order, then the cleanup: step i is operations()[i]."""
    words: list[str] = []
    for _, argv in operations(directory, file_mb, record_kib, threads, window_s):
        words += [*argv, SEP]
    return [*words, *cleanup_argv(directory, threads)]


def _fio_report(text: str) -> dict:
    """fio's JSON report, skipping whatever fio printed before it (warnings, notes)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"^\{", text, re.M):
        try:
            report, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(report, dict) and "jobs" in report:
            return report
    raise EdgebenchError(f"no JSON report in fio's output (is --output-format=json given?): {text[-300:]!r}")


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000


def parse_fio(json_text: str) -> dict:
    """The group's throughput in the direction that did the I/O. Bandwidth from bw_bytes, since
    fio's "bw" is rounded to whole KiB/s. Latency percentiles only from one (group-reported) job:
    those of several jobs cannot be combined."""
    jobs = _fio_report(json_text)["jobs"]
    failed = [j for j in jobs if j.get("error")]
    if failed:
        raise EdgebenchError(f"fio job {failed[0].get('jobname')!r} failed with error {failed[0]['error']}")
    directions = [d for d in ("read", "write") if sum(j.get(d, {}).get("io_bytes", 0) for j in jobs) > 0]
    if not directions:
        raise EdgebenchError(f"fio did no I/O ({len(jobs)} job(s) in its report)")
    if len(directions) > 1:
        raise EdgebenchError("fio both read and wrote; each of these operations does only one")
    direction = directions[0]
    sides = [j[direction] for j in jobs]
    runtime_ms = max(s["runtime"] for s in sides)
    if runtime_ms <= 0:
        raise EdgebenchError("fio's runtime is 0 ms, too short to give a bandwidth: use bigger files")
    percentiles = sides[0].get("clat_ns", {}).get("percentile", {}) if len(sides) == 1 else {}
    return {
        "direction": direction,
        "bw_mib_s": sum(s["bw_bytes"] for s in sides) / 2**20,
        "iops": float(sum(s["iops"] for s in sides)),
        "runtime_s": runtime_ms / 1000,
        "io_mib": sum(s["io_bytes"] for s in sides) / 2**20,
        "clat_p50_us": _us(percentiles.get("50.000000")),
        "clat_p99_us": _us(percentiles.get("99.000000")),
    }


def iozone_command(directory: str, file_mb: int, record_kib: int, threads: int,
                   include_flush: bool = True) -> list[str]:
    """The paper's `iozone -i 0 -i 1 -r 32k -s 100m -t 4`, one named file per process in
    `directory`. IOZone removes its files when done. include_flush adds -e (fsync timed with
    the writes), which the paper's command line does not show: without it a write measures
    how much the runtime's memory limit lets the page cache absorb, and fio's writes time their
    fsync too (end_fsync)."""
    files = [f"{directory}/{IOZONE_FILE_PREFIX}.{i}" for i in range(threads)]
    return ["iozone", "-i", "0", "-i", "1", "-r", f"{record_kib}k", "-s", f"{file_mb}m", "-t", str(threads),
            *(["-e"] if include_flush else []), "-F", *files]


_IOZONE_TESTS = {"initial writers": "write", "rewriters": "rewrite", "readers": "read", "re-readers": "reread"}
_IOZONE_LINE = re.compile(r"^\s*(Children see|Parent sees) throughput for\s+(\d+)\s+(\S.*?)\s*=\s*"
                          r"([\d.]+)\s*(\S+)/sec", re.M)


def parse_iozone(text: str) -> dict[str, dict]:
    """Per operation (write, rewrite, read, reread): the sum over processes of each one's
    throughput (children_kib_s) and, when printed, the total over the parent's wall time
    (parent_kib_s), in KiB/s (IOZone's kB is 1024 bytes), with the number of processes."""
    out: dict[str, dict] = {}
    for who, processes, test, value, unit in _IOZONE_LINE.findall(text):
        op = _IOZONE_TESTS.get(test)
        if op is None:
            continue  # random readers and the other tests this experiment does not run
        if unit.lower() != "kb":
            raise EdgebenchError(f"IOZone reported {test} in {unit}/sec, not kB/sec (was -O or another unit "
                                 "option given?)")
        row = out.setdefault(op, {"processes": int(processes)})
        row["children_kib_s" if who == "Children see" else "parent_kib_s"] = float(value)
    if not any("children_kib_s" in row for row in out.values()):
        raise EdgebenchError(f"no 'Children see throughput' lines in IOZone's output: {text[-300:]!r}")
    return {op: row for op, row in out.items() if "children_kib_s" in row}
