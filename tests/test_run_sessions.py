"""tests/run.py, `make test`'s two sessions: together they are the whole suite, each test once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import run

ROOT = Path(__file__).resolve().parents[1]


def collected(*args: str) -> set[str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return {line for line in r.stdout.splitlines() if "::" in line}


@pytest.mark.slow
def test_the_two_sessions_are_the_whole_suite_each_test_once():
    everything = collected()
    device = collected(*run.DEVICE_TESTS)
    here = collected(*(f"--ignore={t}" for t in run.DEVICE_TESTS))
    assert "tests/test_device_v2.py::test_native_limits_are_applied_and_read_back" in device
    assert not device & here
    assert device | here == everything
    # Every test file that boots an emulated device is in the device's session: a test asking for
    # conftest's debian_v2, or a module booting one itself (the arm64 boards).
    booting = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py") if p.name != Path(__file__).name
               and (re.search(r"^def test_\w+\([^)]*\bdebian_v2\b", p.read_text(), re.M)
               or "machine.start(spec, device_log)" in p.read_text())}
    assert booting == {"tests/test_device_arm64.py", "tests/test_device_v2.py"} <= set(run.DEVICE_TESTS)


@pytest.mark.parametrize("args,named", [
    (["-ra", "-p", "no:cacheprovider", "--durations=15"], False),
    (["-k", "units", "-m", "not integration"], False),
    (["tests/test_units.py"], True),
    (["-q", "tests/test_units.py::test_memory_must_be_positive"], True),
])
def test_arguments_that_name_tests_run_as_one_session(monkeypatch, args, named):
    monkeypatch.chdir(ROOT)
    assert run.names_tests(args) is named
