"""Which tests `make test-fast` leaves out: those that reach need() for a real part, read from their
code at collection (tests/conftest.py), and those marked slow. One way each, so that none can be
forgotten or written twice."""

from __future__ import annotations

import re
from pathlib import Path

import conftest
from conftest import TESTS_DIR, reaches_need

TESTS = Path(__file__).parent

# A test module as the reading sees one: its functions defined in a file of the tests.
SAMPLE = '''
def needs_docker():
    need("docker", None)


def through_a_helper():
    return needs_docker()


def in_a_lambda():
    return [lambda: need("lxd", None)]


def passes_it_on():
    return sorted([1], key=lambda _: needs_docker)


def recursive(n):
    return recursive(n - 1) if n else 0


def pure():
    return len("need")
'''


def sample() -> dict:
    # Through the module: a test naming need() would be read as reaching it, and be one.
    namespace = {"need": conftest.need}
    exec(compile(SAMPLE, f"{TESTS_DIR}sample_test_module.py", "exec"), namespace)
    return namespace


def test_a_test_reaching_need_at_any_depth_is_read_as_using_a_real_part():
    functions = sample()
    for name in ("needs_docker", "through_a_helper", "in_a_lambda", "passes_it_on"):
        assert reaches_need(functions[name], {}), name
    for name in ("recursive", "pure"):
        assert not reaches_need(functions[name], {}), name


def test_the_library_and_pytest_are_not_read():
    assert not reaches_need(re.compile, {}) and not reaches_need(Path.exists, {})


def test_no_test_writes_the_integration_marker_or_a_module_wide_marker_by_hand():
    by_hand = re.compile(r"^\s*@pytest\.mark\.integration\b|^pytestmark\b|=\s*pytest\.mark\.integration\b")
    written = [f"{path.name}:{n}: {line.strip()}" for path in sorted(TESTS.glob("*.py"))
               for n, line in enumerate(path.read_text().splitlines(), 1) if by_hand.search(line)]
    assert not written, ("`integration` comes from the need() a test reaches (tests/conftest.py); "
                         "`slow` is written on each test:\n" + "\n".join(written))
