"""Stopping cleanly, however a run is stopped.

Two sides: the library, whose cleanup (stopping containers, VMs, cgroups) must not itself be cut
short by a second signal, and the `make figures` driver, which receives the user's SIGINT,
SIGTERM or SIGHUP and must pass it on to the notebook kernel doing the measuring (papermill
starts the kernel in a session of its own, so a signal to the driver's process group never
reaches it)."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# The stop signals that reached this process, in order (`asked_to_stop`). The KeyboardInterrupt a
# signal raises can be hidden: a cleanup that fails while it unwinds raises its own error in its
# place (LXD refusing to delete a container it was still creating did), and a signal deferred
# while an error unwinds is not raised again. The run still has to stop: each run asks for the
# stops since it began (`stops_so_far`, `stop_since`), so an old one never stops a new run.
_asked: list[int] = []


def asked_to_stop(signum, frame) -> None:
    """A run's SIGINT/SIGTERM handler: remember the stop, then unwind as Ctrl-C does."""
    _asked.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def stops_so_far() -> int:
    return len(_asked)


def stop_since(mark: int) -> str:
    """The name of the first stop signal after `mark` (a stops_so_far()), or "" if none arrived."""
    return signal.Signals(_asked[mark]).name if len(_asked) > mark else ""


@contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP off for the duration of a cleanup: a second Ctrl-C while
    containers are being removed would otherwise leave them running. A signal that arrived is
    raised as KeyboardInterrupt afterwards, unless the block is already unwinding from one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def catch(signum, frame) -> None:
        caught.append(signum)
        _asked.append(signum)  # dropped below if an error unwinds; the run's next point still stops

    previous = {s: signal.signal(s, catch) for s in STOP_SIGNALS}
    unwinding = False
    try:
        yield
    except BaseException:
        unwinding = True
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if caught and not unwinding:
            raise KeyboardInterrupt(f"signal {caught[0]} during cleanup")


def say(message: str) -> None:
    """Write to stderr from a signal handler (print() there can hit a reentrant buffer)."""
    try:
        os.write(2, (message.rstrip("\n") + "\n").encode())
    except OSError:  # a hung-up terminal: nobody to tell
        pass


def child_kernels(parent: int | None = None) -> list[int]:
    """PIDs of the Jupyter kernels this process started (papermill's ipykernel_launcher)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"ipykernel" in f.read():
                    found.append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    return found


def signal_kernels(signum: int, parent: int | None = None) -> list[int]:
    """Send signum to each kernel's process group (what Jupyter's own interrupt does)."""
    sent = []
    for pid in child_kernels(parent):
        try:
            os.killpg(os.getpgid(pid), signum)
            sent.append(pid)
        except ProcessLookupError:
            pass
    return sent


class RunStopped(Exception):
    """Raised in place of the next cell once the driver was asked to stop. An Exception, not a
    KeyboardInterrupt: it travels through nbclient's event loop like any cell failure, and the
    kernel is shut down the usual way."""


class Stopper:
    """The driver's side. The first SIGINT, SIGTERM or SIGHUP interrupts the running kernel
    (KeyboardInterrupt in the experiment, which stops what it started and marks its run
    interrupted) and stops the driver before its next cell or notebook; further signals only
    say that it is still cleaning up. If the kernel has not finished after grace_s, it gets
    SIGTERM, which the library turns into a second KeyboardInterrupt."""

    def __init__(self, grace_s: float = 300.0):
        self.grace_s = grace_s
        self.signum: int | None = None
        self._timer: threading.Timer | None = None

    def install(self) -> "Stopper":
        # Installed whatever the inherited disposition: a job started with `&` from a script
        # inherits SIGINT ignored, which is why `kill -INT` used to be ignored.
        for s in STOP_SIGNALS:
            signal.signal(s, self._on_signal)
        return self

    @property
    def stopped(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or 0)

    def _on_signal(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None:
            say(f"== {name}: still stopping; the experiment is removing what it started "
                "(SIGKILL abandons that and can leave containers or VMs running)")
            return
        self.signum = signum
        kernels = signal_kernels(signal.SIGINT)
        say(f"== {name}: stopping{' the running notebook' if kernels else ''}; what it started is stopped "
            "and the rows it measured are kept")
        if kernels:
            self._timer = threading.Timer(self.grace_s, self._overdue)
            self._timer.daemon = True
            self._timer.start()

    def _overdue(self) -> None:
        if signal_kernels(signal.SIGTERM):
            say(f"== the notebook kernel did not stop within {self.grace_s:.0f} s of the interrupt; sent SIGTERM")

    def before_cell(self, **_) -> None:
        """nbclient's on_cell_start hook: no further cell runs once a stop was asked for."""
        if self.signum is not None:
            raise RunStopped(f"stopped by {self.name}")

    def done(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
