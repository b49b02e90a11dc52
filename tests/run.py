"""`make test`: this machine's tests and the emulated devices' tests, side by side.

    python tests/run.py [pytest arguments]

The devices' tests (test_device_*.py) take about 20 minutes under TCG, over half of it their
device's set-up (apt inside an emulated machine), and reach this machine only through SSH. This
machine's integration tests share its Docker, LXD, cgroups and cores, so they run one at a time.
So two pytest sessions: the devices' in the background, its output kept in a file and printed
when this machine's session has ended. Either failing fails `make test`. Ctrl-C reaches both (one
process group) and each tears down what it started; a SIGTERM to this script is passed on as
Ctrl-C. Arguments that name test files or tests run as one session, as `pytest` would.

(pytest-xdist's `--dist loadgroup` would do this in one session, but its groups have no effect on
pytest 9.2: it renames items through `item._nodeid`, which pytest no longer reads.)"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
DEVICE_TESTS = sorted(str(p.relative_to(TESTS.parent)) for p in TESTS.glob("test_device_*.py"))
NO_TESTS_COLLECTED = 5


def names_tests(args: list[str]) -> bool:
    return any(not a.startswith("-") and Path(a.split("::")[0]).exists() for a in args)


def main(args: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest", *args]
    if names_tests(args) or not DEVICE_TESTS:
        return subprocess.call(pytest)
    terminated = False

    def on_term(signum, frame):
        nonlocal terminated
        terminated = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    with tempfile.NamedTemporaryFile("w+", prefix="edgebench-device-tests-", suffix=".log") as log:
        sessions = []
        try:
            sessions.append(subprocess.Popen([*pytest, *DEVICE_TESTS], stdout=log, stderr=subprocess.STDOUT))
            print(f"[tests] the emulated devices' tests ({', '.join(DEVICE_TESTS)}) run beside these; "
                  f"their output follows at the end (meanwhile: tail -f {log.name})", flush=True)
            sessions.append(subprocess.Popen([*pytest, *(f"--ignore={t}" for t in DEVICE_TESTS)]))
            codes = [s.wait() for s in reversed(sessions)][::-1]
        except KeyboardInterrupt:
            for s in sessions:
                if terminated and s.poll() is None:
                    s.send_signal(signal.SIGINT)  # a Ctrl-C from the terminal reached them already
            for s in sessions:
                s.wait()
            return 130
        finally:
            log.seek(0)
            print(f"\n[tests] the emulated devices' tests, run beside the others:\n{log.read()}", flush=True)
    device, here = codes
    return here or (0 if device == NO_TESTS_COLLECTED else device)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
