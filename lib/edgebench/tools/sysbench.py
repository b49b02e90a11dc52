"""sysbench 1.0 command lines and output parsing, shared by the microbenchmark and LXD
appendix experiments. Every command is a list of words for `tools/steps`, which runs a
benchmark's phases (prepare ::: run ::: cleanup) in one runtime instance."""

from __future__ import annotations

import json
import re

from edgebench.errors import EdgebenchError

SEP = ":::"


def cpu(threads: int, *, events: int = 0, seconds: float = 0, max_prime: int = 10000) -> list[str]:
    """events > 0: a fixed amount of work (the paper's 0.4 default was 10,000 requests), timed;
    otherwise run for `seconds` and count events."""
    return ["sysbench", "cpu", f"--threads={threads}", f"--cpu-max-prime={max_prime}",
            f"--events={events}", f"--time={0 if events else int(seconds)}", "run"]


def memory(threads: int, total: str, *, seconds: float = 0, block: str = "1K") -> list[str]:
    return ["sysbench", "memory", f"--threads={threads}", f"--memory-block-size={block}",
            f"--memory-total-size={total}", f"--time={int(seconds)}", "run"]


def fileio(files: int, file_mb: int, seconds: float, mode: str = "rndrw") -> list[str]:
    """prepare (creates the files: the file-creation panel), run, cleanup, in one instance."""
    common = ["sysbench", "fileio", f"--file-num={files}", f"--file-total-size={files * file_mb}M"]
    return [*common, "prepare", SEP, *common, f"--file-test-mode={mode}", f"--time={int(seconds)}",
            "--file-fsync-freq=0", "run", SEP, *common, "cleanup"]


_NUM = r"([\d.]+)"
_PATTERNS = {
    "total_time_s": rf"total time:\s+{_NUM}s",
    "events": rf"total number of events:\s+{_NUM}",
    "events_per_s": rf"events per second:\s+{_NUM}",
    "latency_min_ms": rf"Latency \(ms\):\s+min:\s+{_NUM}",
    "latency_avg_ms": rf"avg:\s+{_NUM}",
    "latency_max_ms": rf"max:\s+{_NUM}",
    "latency_p95_ms": rf"95th percentile:\s+{_NUM}",
    "mib_per_s": rf"MiB transferred \({_NUM} MiB/sec\)",
    "read_mib_per_s": rf"read, MiB/s:\s+{_NUM}",
    "written_mib_per_s": rf"written, MiB/s:\s+{_NUM}",
    "prepare_bytes": r"(\d+) bytes written in",
}


def parse(text: str) -> dict[str, float]:
    """The numbers sysbench printed; absent ones are absent, not zero."""
    out = {}
    for key, pattern in _PATTERNS.items():
        m = re.search(pattern, text, re.S if key.startswith("latency") else 0)
        if m:
            out[key] = float(m.group(1))
    return out


def steps_record(stdout: str) -> list[dict]:
    """tools/steps' JSON line: each phase's argv, elapsed_ns, exit_code, stdout, stderr."""
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{") and '"steps"' in line:
            return json.loads(line)["steps"]
    raise EdgebenchError(f"no steps record in the output: {stdout[-300:]!r}")
