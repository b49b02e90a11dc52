"""What `make figures` is about to do, and for how long.

Before measuring, the driver prints one line per notebook: runtimes, apps, what it sweeps,
repetitions, how many measurements, and an estimate of the time. The estimate comes from the
experiment's own model of its settings (each experiment's `plan_*` function: how many points,
seconds per point from its durations, packaging per runtime), or, once this device has run the
notebook, from that run's wall time scaled by the number of points: a device's own history beats
any model made on another machine. A notebook the device has not run yet gets the model times the
device's pace: the median of wall time over model time of the notebooks it has run (an emulated
Raspberry Pi is some 20 times slower than the machine the models were made on, which a plain
model would hide). Every finished notebook appends its wall time to data/history/timings.jsonl for
the next estimate.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.devices.spec import DEVICES
from edgebench.experiments.windows import MAX_SCALE
from edgebench.experiments import experiment_of, for_notebook
from edgebench.experiments import estimate
from edgebench.errors import ConfigError
from edgebench.experiments.estimate import Work
from edgebench.paths import DATA_DIR
from edgebench.results import ended_points, find_run, utc_now
from edgebench.runtimes import RUNTIMES, requested_runtimes
from edgebench.runtimes.contract import Availability

HISTORY_FILE = "history/timings.jsonl"

__all__ = ["Work", "NotebookPlan", "make_plan", "table", "record", "history", "history_path", "read_history",
           "from_history", "pace", "same_board", "duration", "harness_share", "HISTORY_FILE",
           "runtime_availability", "available_runtimes", "left_out", "Progress", "reps_text", "resumed_points"]


@dataclass
class NotebookPlan:
    notebook: str
    experiment: str
    target: str
    profile: str
    runtimes: list[str]
    work: Work
    estimate_s: float
    basis: str                   # "model", "model x<pace> ..." or "history: ..."
    params: dict = field(default_factory=dict)  # what the notebook was given (re-planning a past run)
    measured_before: int = 0     # points the run it resumes measured in earlier sittings

    @property
    def points_left(self) -> int:
        return max(0, self.work.points - self.measured_before)

    @property
    def left_s(self) -> float:
        """The estimate for the points left: a resumed run measures only those."""
        if not self.measured_before or not self.work.points:
            return self.estimate_s
        return self.estimate_s * self.points_left / self.work.points

    def line(self) -> str:
        w = self.work
        what = ", ".join(x for x in (
            "runtimes " + ",".join(self.runtimes) if self.runtimes else "",
            "apps " + ",".join(w.apps) if w.apps else "", w.levels,
            reps_text(w)) if x)
        line = f"{self.notebook:<30} {w.points:>5} points  ~{duration(self.left_s):>8}  {what}  [{self.basis}]"
        if w.not_run:
            line += (f"\n{'':<30} {w.not_run} of them not run, in no time: the device's kernel has no memory "
                     "controller, so a limit below its own memory would not apply (their rows say so)")
        if self.measured_before:
            line += (f"\n{'':<30} resumed: {min(self.measured_before, w.points)} of {w.points} points measured in "
                     f"earlier sittings; the time is for the {self.points_left} left")
        left_out = {}
        for rt in self.runtimes:
            for app in w.apps or []:
                if app not in estimate.runnable(rt, [app]):
                    left_out.setdefault(app, []).append(rt)
        return line + "".join(f"\n{'':<30} left out, as it cannot run there: {app} on {', '.join(rts)}"
                              for app, rts in left_out.items())


def reps_text(w: Work) -> str:
    """'20 reps', or each protocol's where they differ ('reps fair 1, published 3'); '' for none."""
    if len(set(w.protocol_reps.values())) > 1:
        return "reps " + ", ".join(f"{p} {n}" for p, n in w.protocol_reps.items())
    return f"{w.repetitions} reps" if w.repetitions else ""


def duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


# -- history ------------------------------------------------------------------------------

def history_path(data_dir: Path | None = None) -> Path:
    return Path(data_dir or DATA_DIR) / HISTORY_FILE


def record(plan: NotebookPlan, seconds: float, status: str, data_dir: Path | None = None,
           in_points: tuple[int, float] | None = None) -> None:
    """Append one notebook's wall time (what the next estimate on this device starts from) and,
    given `in_points` (points measured, their seconds), the share of it spent outside them."""
    path = history_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"experiment": plan.experiment, "target": plan.target, "profile": plan.profile,
             "runtimes": plan.runtimes, "points": plan.work.points, "model_s": round(plan.work.seconds, 1),
             "model_window_s": round(plan.work.window_s, 1),
             "windows_follow_pace": plan.work.windows_follow_pace,
             "seconds": round(seconds, 1), "status": status, "finished_at": utc_now(),
             "params": {k: v for k, v in plan.params.items() if isinstance(v, (str, int, float, bool, type(None)))}}
    if in_points is not None:
        entry.update(points_measured=in_points[0], in_points_s=round(in_points[1], 1),
                     harness_share=round(harness_share(seconds, in_points[1]), 3))
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def harness_share(wall_s: float, in_points_s: float) -> float:
    """The share of a notebook's wall time spent outside its measured points: connecting,
    building and packaging, image imports, VM kits, waits, teardown, the kernel and the figures."""
    return max(0.0, 1 - in_points_s / wall_s) if wall_s > 0 else float("nan")


def history(data_dir: Path | None = None) -> list[dict]:
    return read_history(history_path(data_dir))


def read_history(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a crash: the others still count
    return out


def from_history(experiment: str, target: str, profile: str, runtimes: list[str], points: int,
                 entries: list[dict]) -> tuple[float, str] | None:
    """The newest completed run of this notebook on this device with this profile, scaled by
    points (and preferring one with the same runtimes)."""
    same = [e for e in entries if e.get("experiment") == experiment and e.get("target") == target
            and e.get("profile") == profile and e.get("status") == "completed" and e.get("points")
            and not (e.get("params") or {}).get("resume")]  # a resumed sitting measured only some points
    if not same:
        return None
    best = ([e for e in same if e.get("runtimes") == runtimes] or same)[-1]
    seconds = best["seconds"] * points / best["points"]
    return seconds, f"history: {duration(best['seconds'])} for {best['points']} points on {best['finished_at'][:10]}"


def pace(target: str, entries: list[dict], newest: int = 10) -> tuple[float, int] | None:
    """How many times slower than the models `target` ran its newest completed notebooks (the
    median of wall time over model time, both without the model's fixed windows, which no
    device stretches), and over how many; None when it has run none."""
    ratios = [work_pace(e) for e in entries
              if e.get("target") == target and e.get("status") == "completed"
              and not (e.get("params") or {}).get("resume")]
    ratios = [r for r in ratios if r is not None][-newest:]
    return (statistics.median(ratios), len(ratios)) if ratios else None


def work_pace(entry: dict) -> float | None:
    """One history entry's wall time over its model's, fixed windows taken out of both (entries
    written before the model had windows count whole). Windows that followed the device's pace
    (quick's load windows) stretched with it, as Work.paced has them: the pace solved from that."""
    window = entry.get("model_window_s") or 0.0
    total, wall = entry.get("model_s") or 0.0, entry.get("seconds", 0.0)
    if entry.get("windows_follow_pace") and total > 0 and wall > 0:
        whole = wall / total  # a pace between 1 and MAX_SCALE stretches windows and work alike
        if 1 <= whole <= MAX_SCALE:
            return whole
        stretch = MAX_SCALE if whole > MAX_SCALE else 1.0
        rest = total - window
        return (wall - window * stretch) / rest if rest > 0 and wall > window * stretch else None
    model, seconds = total - window, wall - window
    return seconds / model if model > 0 and seconds > 0 else None


def same_board(target: str) -> str | None:
    """The emulated device whose board (disk and CPU) `target` boots with another kernel command
    line (pi-arm64-nomemcg: pi-arm64), whose pace is its own until it has one; None otherwise."""
    spec = DEVICES.get(target)
    return spec.board if spec is not None and spec.board and spec.board != target else None


# -- the plan -------------------------------------------------------------------------------

def make_plan(nb: Path, params: dict, available: list[str], data_dir: Path | None = None,
              facts: dict | None = None) -> NotebookPlan:
    """The plan of one notebook run with `params` (what make figures passes), on a target whose
    available runtimes are `available` and whose `facts` say what it cannot run (memory limits
    without a memory controller): those points are counted, in no time."""
    experiment = for_notebook(nb)
    record = experiment.params(params)  # the notebook's defaults with these over them, checked
    names, named = requested_runtimes(record.runtimes or "auto")
    runtimes = [n for n in names if n in named or n in available]
    work = experiment.plan_work(record, runtimes, facts)
    target, profile = str(record.target or "local"), record.profile
    runtimes = work.runtimes if work.runtimes is not None else runtimes
    entries = history(data_dir)
    found = from_history(experiment_of(nb), target, profile, runtimes, work.points, entries)
    paced, whose = pace(target, entries), "this device's"
    board = same_board(target)
    if not paced and board:
        paced, whose = pace(board, entries), f"{board}'s (the same board)"
    typical = DEVICES[target].typical_pace if target in DEVICES else 1.0
    if found:
        estimate, basis = found
    elif paced:
        estimate, basis = work.paced(paced[0]), (f"model x{paced[0]:.1f}, {whose} pace over "
                                                 f"{paced[1]} notebook{'s' if paced[1] != 1 else ''}")
    elif typical != 1.0:  # an emulated device's first run: what such a device's pace usually is
        estimate, basis = work.paced(typical), f"model x{typical:g}, typical of {target} under TCG"
    else:
        estimate, basis = work.seconds, "model"
    return NotebookPlan(nb.name, experiment_of(nb), target, profile, runtimes, work, estimate, basis, dict(params))


def table(plans: list[NotebookPlan]) -> str:
    total = sum(p.left_s for p in plans)
    lines = [p.line() for p in plans]
    before = sum(min(p.measured_before, p.work.points) for p in plans)
    lines.append(f"{'total':<30} {sum(p.work.points for p in plans):>5} points  ~{duration(total):>8}"
                 + (f"  for the {sum(p.points_left for p in plans)} left ({before} measured in earlier sittings)"
                    if before else ""))
    return "\n".join(lines)


def resumed_points(experiment: str, run_id: str, data_dir: Path | None = None) -> int:
    """How many points the run `run_id` has measured to their end (0 when there is no such run)."""
    try:
        return len(ended_points(find_run(experiment, run_id, Path(data_dir or DATA_DIR))))
    except ConfigError:
        return 0


def runtime_availability(target) -> dict[str, Availability]:
    """Each runtime's availability check on this target."""
    return {name: cls(target, "plan").availability() for name, cls in RUNTIMES.items()}


def available_runtimes(target, found: dict | None = None) -> list[str]:
    """The runtimes "auto" chooses from on this target (runtimes available only when named are not)."""
    found = runtime_availability(target) if found is None else found
    return [name for name, a in found.items() if a and not a.named_only]


def left_out(found: dict) -> str:
    """The runtimes "auto" leaves out, each with why, for the plan: a runtime missing from the
    plan without a word (LXD's daemon still starting) reads as edgebench not knowing it."""
    lines = [f"  {name}: {'only when named in RUNTIMES; ' if a.named_only else ''}{a.reason}"
             for name, a in found.items() if RUNTIMES[name].in_auto and (not a or a.named_only)]
    return "left out by RUNTIMES=auto:\n" + "\n".join(lines) if lines else ""


class Progress:
    """One overall bar for the whole `make figures`, in estimated seconds of work: it moves with
    the clock inside a notebook (never past that notebook's estimate) and jumps to the sum of
    finished notebooks' estimates as each ends, so its ETA reflects a run going slower or faster
    than planned. Given `points_done` (a plan -> how many of its points have ended), the clock
    never moves the bar past the point being measured: on a device many times slower than the
    plan the bar keeps to the points measured, not stuck at 99% with an ETA of seconds.
    Printed as a whole line every `every_s` and at each notebook's start and end: notebook
    output streams to the same terminal, so a bar that redraws itself would tear."""

    def __init__(self, plans: list[NotebookPlan], every_s: float = 30.0, write=None, points_done=None):
        import sys
        import threading
        import time
        self._time = time.monotonic
        self.plans, self.every_s = plans, every_s
        self.total = sum(p.left_s for p in plans) or 1.0
        self.done_estimate, self.current, self.current_start = 0.0, None, None
        self.start = self._time()
        self.finished = 0
        self.points_done = points_done
        self._write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True, name="edgebench-progress")
        self._thread.start()

    def position(self) -> float:
        if self.current is None:
            return self.done_estimate
        plan, ceiling = self.current, 0.99
        try:
            ended = self.points_done(plan) if self.points_done and plan.points_left else None
        except Exception:  # a run folder being written: the clock alone this once
            ended = None
        if ended is not None:
            ceiling = min(ceiling, (ended + 1) / plan.points_left)
        return self.done_estimate + min(self._time() - self.current_start, plan.left_s * ceiling)

    # The plan counts as this many seconds of evidence that the pace is 1.0: one fast notebook
    # (footprint took 12 s of a planned 67 s here) must not divide the whole ETA by five.
    PRIOR_SHARE = 0.25

    def pace(self, pos: float, elapsed: float) -> float:
        """Estimated work per second: what was seen so far, blended with the plan's own pace."""
        prior = self.PRIOR_SHARE * self.total
        return (pos + prior) / (elapsed + prior)

    def line(self) -> str:
        from tqdm import tqdm
        elapsed = self._time() - self.start
        pos = self.position()
        left = (self.total - pos) / self.pace(pos, elapsed)
        bar = tqdm.format_meter(pos, self.total, elapsed, ncols=40, bar_format="{bar}")
        return (f"== overall [{bar}] {100 * pos / self.total:3.0f}%  {self.finished}/{len(self.plans)} notebooks, "
                f"{duration(elapsed)} elapsed, ETA {duration(left)}")

    def begin(self, plan: NotebookPlan) -> None:
        self.current, self.current_start = plan, self._time()
        self._write(self.line() + f"  (now {plan.notebook}, ~{duration(plan.left_s)})")

    def end(self, plan: NotebookPlan) -> None:
        self.done_estimate += plan.left_s
        self.current = None
        self.finished += 1
        self._write(self.line())

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            if self.current is not None:
                self._write(self.line())

    def close(self) -> None:
        self._stop.set()
