"""What every reader of a device's sensors shares (edgebench.tools.energy's power meters,
edgebench.tools.health's sampler): a read is one command on the Target, a failure becomes a sentence
naming the host, the file or command and why, and periodic reads run on a daemon thread that is
stopped on the way out, whatever ends the run."""

from __future__ import annotations

import threading
from typing import Callable

from edgebench.errors import EdgebenchError
from edgebench.targets import CommandResult, Target


class SensorReadError(EdgebenchError):
    """A sensor could not be read; the message names the host, the file or command and why."""


def run_read(target: Target, command, timeout: float,
             error: type[SensorReadError] = SensorReadError) -> CommandResult:
    """`target.run(command)` without raising on a non-zero exit; a connection that fails raises
    `error` with the host's name (an SSH target that went away, a fork that failed)."""
    try:
        return target.run(command, check=False, timeout=timeout)
    except (EdgebenchError, OSError) as e:
        raise error(f"cannot run a read on {target.name}: {e}") from e


def failure(target: Target, what: str, r: CommandResult, hint: str = "") -> str:
    """Why reading `what` failed, from the command's result: its last line of stderr (else
    stdout) and exit code; `hint` is added where the read was refused (permission denied)."""
    if r.exit_code is None:
        return f"reading {what} on {target.name} timed out"
    tail = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["no output"])[-1]
    why = f"cannot read {what} on {target.name}: {tail} (exit {r.exit_code})"
    return f"{why}; {hint}" if hint and "permission denied" in r.stderr.lower() else why


def message(e: BaseException) -> str:
    return str(e) or type(e).__name__


class Periodic(threading.Thread):
    """Calls `tick` every `interval_s` from a daemon thread until `stop`; a tick that returns
    False ends it. The caller stops it in `finally` (or `__exit__`), so an exception or Ctrl-C in
    the measured body cannot leave it reading."""

    def __init__(self, tick: Callable[[], bool], interval_s: float, name: str):
        super().__init__(daemon=True, name=name)
        self._tick = tick
        self.interval_s = interval_s
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(self.interval_s):
            if self._tick() is False:
                return

    def stop(self, timeout: float) -> bool:
        """Ask it to stop and wait up to `timeout` s for a read under way; True if it ended."""
        self._stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
        return not self.is_alive()


__all__ = ["SensorReadError", "run_read", "failure", "message", "Periodic"]
