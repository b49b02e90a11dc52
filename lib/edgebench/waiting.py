"""Waiting for something on a target or this machine: one polling loop instead of one per caller.

`wait_until(check, timeout_s, interval_s)` calls `check` until it returns something truthy and
returns that, or returns None once `timeout_s` has passed. The caller says what the timeout means
in its own words (its own error, or going on without), so a wait keeps the message it always had.
`check` may raise to stop the wait early (a process that died while it was awaited).
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout_s: float, interval_s: float) -> T | None:
    """What `check` returned the first time it was truthy, or None when it was not within
    `timeout_s`. `check` runs at least once, and once more at the end of the last interval: a
    wait never gives up on something that became true while it slept."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(interval_s, left))
