"""The overall progress line of `make figures`: its position follows the clock inside a notebook
but never passes that notebook's estimate, and its ETA follows the pace seen so far."""

from __future__ import annotations

from edgebench import plan


def _plan(name: str, seconds: float) -> plan.NotebookPlan:
    return plan.NotebookPlan(name, name, "local", "quick", ["native"], plan.Work(points=10, seconds=seconds),
                             seconds, "model")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_position_and_eta_follow_the_plan_and_the_pace():
    lines: list[str] = []
    a, b = _plan("a", 100), _plan("b", 300)
    progress = plan.Progress([a, b], every_s=3600, write=lines.append)
    clock = Clock()
    progress._time, progress.start = clock, clock.now
    try:
        progress.begin(a)
        clock.now += 50
        assert progress.position() == 50 and "12%" in progress.line()
        clock.now += 500  # a overruns: the bar waits at its estimate instead of eating into b's
        assert progress.position() == 99
        progress.end(a)
        assert progress.position() == 100 and "1/2 notebooks" in lines[-1]
        # 100 s of planned work took 550 s: the 300 s left will take about 1650 s at that pace.
        assert "ETA 27m30s" in lines[-1]
        progress.begin(b)
        clock.now += 300
        progress.end(b)
        assert "100%" in lines[-1] and "2/2 notebooks" in lines[-1] and "ETA 0s" in lines[-1]
    finally:
        progress.close()


def test_durations_read_like_a_person_writes_them():
    assert [plan.duration(s) for s in (9.6, 75, 3600 + 125)] == ["10s", "1m15s", "1h02m"]
