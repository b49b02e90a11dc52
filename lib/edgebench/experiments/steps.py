"""One batch through `tools/steps`, the small program that runs a list of commands in one runtime
start and times each (sysbench's phases, fio's operations, STREAM, NPB): what microbenchmarks,
lxd_appendix and container_overhead share."""

from __future__ import annotations

from edgebench.errors import EdgebenchError
from edgebench.experiments.protocols import with_applied
from edgebench.results import Run
from edgebench.runtimes.base import Runtime
from edgebench.runtimes.contract import Artifact, Limits
from edgebench.tools.sysbench import steps_record


def run_steps(run: Run, rt: Runtime, artifact: Artifact, words: list[str], limits: Limits, row: dict, tag: str,
              timeout_s: float, events: tuple[str, ...] = ()) -> tuple[list[dict], dict]:
    """Run `words` (tools/steps' arguments) under `limits` in the runtime's scratch folder; raw
    output kept under raw/<tag>. Returns each step's record and the row with the limits read back;
    raises EdgebenchError naming the step that failed (the sweep makes it the point's failed row)."""
    result = rt.run_batch(artifact, ["-dir", rt.scratch_dir(), *words], limits, timeout_s=timeout_s, events=events)
    run.save_raw(tag, command=result.command, stdout=result.stdout, stderr=result.stderr,
                 exit_code=result.exit_code, limits_applied=result.limits_applied)
    row = with_applied(row, limits, result.limits_applied)
    try:
        steps = steps_record(result.stdout)
    except EdgebenchError as e:
        raise EdgebenchError(f"exit {result.exit_code}: {e} {result.stderr[-300:]}") from None
    bad = [s for s in steps if s["exit_code"] != 0]
    if bad or not result.ok:
        why = (bad[0]["stderr"] or bad[0]["stdout"])[-400:] if bad else f"exit {result.exit_code}"
        raise EdgebenchError(f"{steps[-1]['argv'][0] if steps else 'the program'} failed: {why}")
    return steps, row
